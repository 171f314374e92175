//! Before N copies start: what they need (tasks, descriptors, memory) set
//! against the limits that would stop them half-way — RLIMIT_NPROC
//! (`ulimit -u`, counted per user over processes and threads),
//! kernel.threads-max, RLIMIT_NOFILE (`ulimit -n`, one table for all
//! threads) and MemAvailable — refused with a message naming the limit, its
//! value and how to raise it (`measure::limits`'s wording). The judgement
//! is a pure function ([`refusal`]) so that it is tested at 512 tasks
//! without starting any. Left out: `ulimit -v` (`limits::check_address_space`).

use super::{Copies, Mode};
use crate::env::probe::meminfo_kib;
use crate::error::{Error, Result};

/// What one copy takes, probed by setting one up in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// Processes or threads one copy runs (the family's `tasks`).
    pub tasks: usize,
    /// Descriptors one copy holds open.
    pub fds: usize,
    /// Resident memory one copy adds, bytes.
    pub bytes: u64,
}

/// The limits in force, `None` where unlimited or unreadable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    pub nproc: Option<u64>,
    pub threads_max: Option<u64>,
    /// Threads the system runs now (/proc/loadavg's total).
    pub threads_now: u64,
    pub nofile: Option<u64>,
    /// Descriptors this process holds now.
    pub fds_now: u64,
    pub mem_available: Option<u64>,
}

impl Limits {
    /// This machine's and this process's limits now.
    pub fn read() -> Self {
        let soft = |r| {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: `lim` is a valid out-pointer.
            let ok = unsafe { libc::getrlimit(r, &mut lim) } == 0;
            (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
        };
        let file = |p| std::fs::read_to_string(p).unwrap_or_default();
        let threads_now = file("/proc/loadavg")
            .split_whitespace()
            .nth(3)
            .and_then(|f| f.split_once('/'))
            .and_then(|(_, t)| t.parse().ok())
            .unwrap_or(0);
        let mem_available = meminfo_kib("MemAvailable:").map(|kib| kib << 10);
        Self {
            nproc: soft(libc::RLIMIT_NPROC),
            threads_max: file("/proc/sys/kernel/threads-max").trim().parse().ok(),
            threads_now,
            nofile: soft(libc::RLIMIT_NOFILE),
            fds_now: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64),
            mem_available,
        }
    }
}

/// Why `copies` of a case needing `needs` cannot run under `limits`, or `None`.
pub fn refusal(copies: &Copies, needs: &Needs, limits: &Limits) -> Option<String> {
    let n = copies.n as u64;
    let tasks = n * needs.tasks.max(1) as u64;
    let head = format!("--tasks {} ({})", copies.n, copies.mode.as_str());
    if let Some(max) = limits.nproc
        && tasks + limits.threads_now.min(max) > max
    {
        return Some(format!(
            "{head} needs {tasks} more processes or threads but the per-user limit RLIMIT_NPROC \
             (`ulimit -u`) is {max}: raise it (`ulimit -u {}`, or nproc in \
             /etc/security/limits.conf) or run fewer tasks",
            (tasks * 2).next_power_of_two()
        ));
    }
    if let Some(max) = limits.threads_max
        && tasks + limits.threads_now > max
    {
        return Some(format!(
            "{head} needs {tasks} more threads but kernel.threads-max is {max} with {} running: \
             raise it (`sysctl kernel.threads-max={}`) or run fewer tasks",
            limits.threads_now,
            (tasks + limits.threads_now) * 2
        ));
    }
    let fds = match copies.mode {
        // Threads share this process's descriptor table.
        Mode::Threads => limits.fds_now + n * needs.fds as u64,
        // Each process closes what it inherited but stdin, stdout and stderr.
        Mode::Processes => 3 + needs.fds as u64,
    };
    if let Some(max) = limits.nofile
        && fds > max
    {
        return Some(format!(
            "{head} needs {fds} open descriptors ({} per task) but RLIMIT_NOFILE (`ulimit -n`) \
             is {max}: raise it (`ulimit -n {}`) or run fewer tasks",
            needs.fds,
            fds.next_power_of_two()
        ));
    }
    let bytes = n * needs.bytes;
    if let Some(free) = limits.mem_available
        && bytes > free
    {
        return Some(format!(
            "{head} needs about {} MiB of memory ({} KiB per task) but MemAvailable is {} MiB: \
             free memory, or run fewer tasks or a smaller working set",
            bytes >> 20,
            needs.bytes >> 10,
            free >> 20
        ));
    }
    None
}

/// Refuses `copies` of `what` when this machine's limits cannot hold them.
pub fn check_limits(what: &str, copies: &Copies, needs: &Needs) -> Result<()> {
    if copies.mode == Mode::Threads {
        // Each copy thread's stack is twice what the check counts a thread for.
        let threads = copies.n * (needs.tasks.max(1) + 1);
        crate::measure::limits::check_address_space(what, threads)?;
    }
    match refusal(copies, needs, &Limits::read()) {
        Some(why) => Err(Error::Measure(format!("{what}: {why}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::copies::Place;

    fn copies(n: usize, mode: Mode) -> Copies {
        Copies {
            n,
            mode,
            place: Place::Spread,
        }
    }

    const ROOMY: Limits = Limits {
        nproc: Some(100_000),
        threads_max: Some(200_000),
        threads_now: 300,
        nofile: Some(65_536),
        fds_now: 10,
        mem_available: Some(64 << 30),
    };

    #[test]
    fn every_count_up_to_512_fits_a_roomy_machine() {
        let needs = Needs {
            tasks: 2,
            fds: 4,
            bytes: 8 << 20,
        };
        for n in 1..=512 {
            for mode in [Mode::Processes, Mode::Threads] {
                assert_eq!(refusal(&copies(n, mode), &needs, &ROOMY), None, "{n}");
            }
        }
    }

    #[test]
    fn each_refusal_names_its_limit_its_value_and_how_to_raise_it() {
        let needs = Needs {
            tasks: 1,
            fds: 2,
            bytes: 1 << 20,
        };
        let low = |l: Limits, mode| refusal(&copies(512, mode), &needs, &l).unwrap();
        let nproc = low(
            Limits {
                nproc: Some(256),
                ..ROOMY
            },
            Mode::Processes,
        );
        assert!(
            nproc.contains("RLIMIT_NPROC") && nproc.contains("is 256"),
            "{nproc}"
        );
        assert!(nproc.contains("ulimit -u 1024"), "{nproc}");
        let tmax = low(
            Limits {
                threads_max: Some(600),
                ..ROOMY
            },
            Mode::Threads,
        );
        assert!(tmax.contains("kernel.threads-max is 600"), "{tmax}");
        let nofile = low(
            Limits {
                nofile: Some(1024),
                ..ROOMY
            },
            Mode::Threads,
        );
        assert!(
            nofile.contains("RLIMIT_NOFILE") && nofile.contains("1034"),
            "{nofile}"
        );
        // Processes each have a table of their own: 1024 is plenty.
        let per_process = Limits {
            nofile: Some(1024),
            ..ROOMY
        };
        assert_eq!(
            refusal(&copies(512, Mode::Processes), &needs, &per_process),
            None
        );
        let mem = low(
            Limits {
                mem_available: Some(256 << 20),
                ..ROOMY
            },
            Mode::Processes,
        );
        assert!(
            mem.contains("512 MiB") && mem.contains("MemAvailable is 256 MiB"),
            "{mem}"
        );
    }
}
