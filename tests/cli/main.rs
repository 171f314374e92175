//! The built `osbench` binary as a user meets it, one module per command or
//! habit (runs, `time`, system logs, the command line's conventions, a first
//! day's walk-through, the warden). One test binary, so the crate is linked once.

#[path = "../common/mod.rs"]
mod common;

mod command_line;
mod first_day;
mod general;
mod system_logs;
mod time;
mod warden;
