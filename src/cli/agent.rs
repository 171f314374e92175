//! `osbench agent`: serve the agent protocol on stdin/stdout, for a guest
//! (a User-Mode Linux init with `--init`, a container, an SSH session) whose
//! configuration the host osbench interleaves with its own. The work is
//! `osbench::experiment::agent::serve`; this sets the channel up.

use std::process::ExitCode;

use clap::Args;

use osbench::guest::init;
use osbench::measure::Interrupt;

#[derive(Args)]
pub struct AgentArgs {
    /// Be the init (PID 1) of a guest (User-Mode Linux, a VM booted from `guest-image`): mount
    /// /proc, /sys, /dev and a tmpfs on /tmp first, and power the guest off at the end
    #[arg(long)]
    init: bool,
    /// What a kernel passes its init besides (e.g. root=98:0 console=tty0): ignored
    #[arg(hide = true, num_args = 0.., allow_hyphen_values = true)]
    _kernel_args: Vec<String>,
}

pub fn agent(args: &AgentArgs) -> anyhow::Result<ExitCode> {
    let served = serve(args.init);
    // Not PID 1 (`agent --init` run by hand on a host): the error is all;
    // powering off would stop the host.
    if args.init && init::is_pid1() {
        // PID 1 must not exit (the guest's kernel would panic): say why on
        // the console, which the host quotes, and power off.
        if let Err(e) = &served {
            eprintln!("osbench: error: {e:#}");
        }
        init::power_off();
    }
    served
}

fn serve(init: bool) -> anyhow::Result<ExitCode> {
    if init {
        init::become_init()?;
    }
    offset_heap();
    init::raw_if_terminal(0);
    init::raw_if_terminal(1);
    let interrupt = Interrupt::install()?;
    osbench::experiment::agent::serve(
        std::io::stdin().lock(),
        std::io::stdout().lock(),
        &interrupt,
    )?;
    Ok(ExitCode::SUCCESS)
}

/// An invocation of `run --invocations` moves its heap by the bytes its
/// parent chose (`OSBENCH_HEAP_OFFSET`): allocated, touched and kept before
/// anything else, so every later allocation lands elsewhere.
fn offset_heap() {
    let bytes = std::env::var(osbench::experiment::invocations::HEAP_OFFSET_ENV)
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n <= osbench::experiment::invocations::MAX_HEAP_OFFSET);
    if let Some(n) = bytes.filter(|&n| n > 0) {
        std::mem::forget(std::hint::black_box(vec![1u8; n]));
    }
}
