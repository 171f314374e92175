//! The job queue in a throwaway PostgreSQL cluster: workers that claim and
//! run jobs ([`workers`]) and boot rounds with the boot faked ([`boot`]).
//! Skipped unless a cluster can be started (`OSBENCH_REQUIRE_PG=1` requires it).

#[path = "../common/mod.rs"]
mod common;

mod boot;
mod hangs;
mod policy;
mod workers;
