//! The results store through both back ends: the embedded SQLite file
//! ([`sqlite`]) and a throwaway PostgreSQL cluster ([`postgres`], skipped
//! unless one can be started; `OSBENCH_REQUIRE_PG=1` makes it required); the
//! tests both back ends share are written once, in [`shared`].

#[path = "../common/mod.rs"]
mod common;

mod postgres;
mod shared;
mod sqlite;
