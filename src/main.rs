//! The `osbench` command: parses the command line and hands over to `cli`.
//! Exit statuses: docs/guide/exit-status.md (0 ok, 1 a regression gate
//! tripped, 2 error, 3 a gate that could not judge, 125 bisect skip, 130).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = cli::main();
    // Reaped here, not left a zombie for init (1-3 s on some machines).
    osbench::measure::warden::stop();
    code
}
