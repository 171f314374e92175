//! The built `osbench` binary as a user meets it, one module per command or
//! habit (list and env, runs, interrupts, compare, configurations, errors,
//! width on a terminal, `time`, system logs, the command line's conventions, a first
//! day's walk-through). One test binary, so the crate is linked once; the
//! warden test stays in tests/warden.rs, a binary of its own, since it makes
//! the whole test process a child subreaper.

#[path = "../common/mod.rs"]
mod common;

mod command_line;
mod compare;
mod configs;
mod errors;
mod first_day;
mod interrupts;
mod kit;
mod knobs;
mod list_env;
mod loads;
mod newer;
mod profile;
mod quoting;
mod run;
mod sandbox;
mod schbench;
mod system_logs;
mod tasks;
mod time;
mod width;
