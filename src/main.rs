//! The `osbench` command: parses the command line and hands over to `cli`.
//! Exit status: 0 ok, 1 a regression gate tripped (`--gate` on
//! `run`, `compare` and `time`), 2 error (130 when interrupted by Ctrl-C).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = cli::main();
    // Reaped here, not left a zombie for init (1-3 s on some machines).
    osbench::measure::warden::stop();
    code
}
