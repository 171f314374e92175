//! `osbench loop N`: seed 000's own program — N getpid() system calls (raw,
//! no libc caching), then exit — to be timed whole with `osbench time`,
//! natively or as the init of a User-Mode Linux guest (then it powers the
//! guest off instead of exiting, which would panic the guest's kernel).
//! It measures nothing itself.

use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct LoopArgs {
    /// How many getpid() calls
    #[arg(value_name = "N")]
    count: u64,
    /// What a kernel passes its init besides (e.g. root=98:0 console=tty0): ignored
    #[arg(hide = true, num_args = 0.., allow_hyphen_values = true)]
    _kernel_args: Vec<String>,
}

pub fn run(args: &LoopArgs) -> anyhow::Result<ExitCode> {
    osbench::bench::syscall::getpid_calls(args.count);
    if std::process::id() == 1 {
        osbench::guest::init::power_off();
    }
    Ok(ExitCode::SUCCESS)
}
