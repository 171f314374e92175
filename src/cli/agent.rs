//! `osbench agent`: serve the agent protocol on stdin/stdout, for a guest
//! (a User-Mode Linux init with `--init`, a container, an SSH session) whose
//! configuration the host osbench interleaves with its own. The work is
//! `osbench::experiment::agent::serve`; this sets the channel up.

use std::process::ExitCode;

use clap::Args;

use osbench::guest::init;
use osbench::guest::protocol::InitHandOff;
use osbench::measure::Interrupt;

#[derive(Args)]
pub struct AgentArgs {
    /// Be the init (PID 1) of a guest (User-Mode Linux, a VM booted from `guest-image`): mount
    /// /proc, /sys, /dev and a tmpfs on /tmp first, and power the guest off at the end
    #[arg(long)]
    init: bool,
    /// What a kernel passes its init besides (words of its command line it did not take, e.g.
    /// nosysemu, root=98:0): recorded with --init, reported to the host
    #[arg(hide = true, num_args = 0.., allow_hyphen_values = true)]
    kernel_args: Vec<String>,
}

pub fn agent(args: &AgentArgs) -> anyhow::Result<ExitCode> {
    let served = serve(args);
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

fn serve(args: &AgentArgs) -> anyhow::Result<ExitCode> {
    // The kernel's hand-off is read before anything can change the environment.
    let handed = args.init.then(|| InitHandOff {
        args: args.kernel_args.clone(),
        env: std::env::vars().collect(),
    });
    if args.init {
        init::become_init()?;
        if let Some(word) = std::env::var(osbench::lab::console::ENV)
            .ok()
            .filter(|w| !w.is_empty())
        {
            return lab_boot(&word);
        }
    }
    offset_heap();
    init::raw_if_terminal(0);
    init::raw_if_terminal(1);
    let interrupt = Interrupt::install()?;
    osbench::experiment::agent::serve(
        std::io::stdin().lock(),
        std::io::stdout().lock(),
        &interrupt,
        handed,
        &super::save::logs_tree(),
    )?;
    Ok(ExitCode::SUCCESS)
}

/// A lab's boot (`osbench lava`): runs the boot's plan as a child
/// `osbench`, its document kept in /tmp, and prints the document between
/// markers on the console for `import --lava` (or the error, so that the
/// boot is missing with its reason rather than silent).
fn lab_boot(word: &str) -> anyhow::Result<ExitCode> {
    use osbench::lab::console;
    let boot = console::LabBoot::decode(word)?;
    let out = std::path::Path::new("/tmp/osbench-lab.json");
    let has = |w: &str| boot.argv.iter().any(|a| a == w);
    // No progress bar on the console (unless the plan asks to be verbose); no store in the guest.
    let quiet = !["-q", "--quiet", "-v", "--verbose"].iter().any(|w| has(w));
    let status = std::process::Command::new(std::env::current_exe()?)
        .args(&boot.argv)
        .args(quiet.then_some("-q"))
        .args((!has("--no-store")).then_some("--no-store"))
        .arg("--json")
        .arg(out)
        .env("OSBENCH_STORE", "/tmp/osbench-lab.sqlite")
        .stdout(std::process::Stdio::null())
        .status();
    let document = match status {
        Ok(s) if s.success() => std::fs::read_to_string(out).map_err(|e| format!("{e}")),
        Ok(s) => Err(format!("`osbench {}` ended with {s}", boot.argv.join(" "))),
        Err(e) => Err(format!("cannot start osbench: {e}")),
    };
    // The kernel's own console messages (a clocksource marked unstable on a
    // loaded TCG host, say) could land inside a chunk line: hush them while
    // the document is printed.
    let hushed = hush_console();
    for line in console::lines(&boot, document.as_deref().map_err(Clone::clone)) {
        println!("{line}");
    }
    if let Some(levels) = hushed {
        let _ = std::fs::write(PRINTK, levels);
    }
    Ok(ExitCode::SUCCESS)
}

/// The kernel's console log levels (the first is the console's).
const PRINTK: &str = "/proc/sys/kernel/printk";

/// Sets the console's log level to 1 (emergencies only); the levels found,
/// to write back, or `None` when they cannot be changed (not root).
fn hush_console() -> Option<String> {
    let levels = std::fs::read_to_string(PRINTK).ok()?;
    let rest: Vec<&str> = levels.split_whitespace().skip(1).collect();
    std::fs::write(PRINTK, format!("1 {}", rest.join(" "))).ok()?;
    Some(levels)
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
