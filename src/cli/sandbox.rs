//! `osbench sandbox --seccomp N -- COMMAND…`: runs a command under a
//! seccomp filter of N instructions that allows every call, so that a
//! configuration (a command guest running `osbench agent` through it)
//! measures what such a sandbox adds. It measures nothing itself.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct SandboxArgs {
    /// Instructions of the filter (2 to 4096): one load, N − 2 comparisons, one allow
    #[arg(long, value_name = "N", default_value_t = 300,
          value_parser = clap::value_parser!(u16).range(2..=4096))]
    seccomp: u16,
    /// The command and its arguments
    #[arg(required = true, num_args = 1.., last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

pub fn run(args: &SandboxArgs) -> anyhow::Result<ExitCode> {
    let failed = osbench::measure::sandbox::exec_filtered(args.seccomp as usize, &args.command);
    Err(failed.into())
}
