//! The `osbench` command: parses the command line and hands over to `cli`.
//! Exit status: 0 ok, 1 a regression gate tripped (not yet used), 2 error.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
