//! rusage counters of every task of a case: `getrusage(RUSAGE_SELF)`,
//! `getrusage(RUSAGE_CHILDREN)` and the live children's /proc files, summed
//! (the module doc of `counters` says how).

use std::collections::BTreeSet;
use std::sync::Mutex;

use super::Edge;
use crate::env::activity::clock_ticks_per_second;
use crate::env::probe::{Sys, status_switches};

/// rusage of this process, its reaped children and its live children,
/// summed; this process's own read nearest the timed region (`edge`).
pub(super) fn rusage_reading(edge: Edge) -> Vec<(&'static str, u64)> {
    let (own, reaped, live) = match edge {
        Edge::After => {
            let own = getrusage(libc::RUSAGE_SELF);
            (own, getrusage(libc::RUSAGE_CHILDREN), live_children())
        }
        Edge::Before => {
            let live = live_children();
            let reaped = getrusage(libc::RUSAGE_CHILDREN);
            (getrusage(libc::RUSAGE_SELF), reaped, live)
        }
    };
    let sum = |f: fn(&Usage) -> u64| f(&own) + f(&reaped) + f(&live);
    vec![
        ("user_ns", sum(|u| u.user_ns)),
        ("sys_ns", sum(|u| u.sys_ns)),
        ("voluntary_switches", sum(|u| u.voluntary)),
        ("involuntary_switches", sum(|u| u.involuntary)),
        ("minor_faults", sum(|u| u.minor_faults)),
        ("major_faults", sum(|u| u.major_faults)),
    ]
}

/// What `getrusage`/`wait4` report, in whole units (ns, counts, KiB).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Usage {
    pub user_ns: u64,
    pub sys_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// Peak resident set (not summed by [`rusage_reading`]).
    pub max_rss_kb: u64,
}

impl Usage {
    pub(crate) fn of(r: &libc::rusage) -> Self {
        let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
        let count = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
        Usage {
            user_ns: ns(r.ru_utime),
            sys_ns: ns(r.ru_stime),
            voluntary: count(r.ru_nvcsw),
            involuntary: count(r.ru_nivcsw),
            minor_faults: count(r.ru_minflt),
            major_faults: count(r.ru_majflt),
            max_rss_kb: count(r.ru_maxrss),
        }
    }
}

/// `getrusage(who)`; all zero if it fails (it cannot for these `who`).
pub(crate) fn getrusage(who: libc::c_int) -> Usage {
    // SAFETY: rusage is plain C data; all-zero is a valid value.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a valid, writable rusage; `who` is RUSAGE_SELF or RUSAGE_CHILDREN.
    if unsafe { libc::getrusage(who, &mut r) } != 0 {
        return Usage::default();
    }
    Usage::of(&r)
}

/// The pids of the loads' tasks that are osbench's own children: a case's
/// rusage counters leave them out ([`is_load_task`]), the loads (`measure::load`) list them.
/// A set: rusage asks for each of osbench's children at every sample, and a
/// `hackbench:64` load is 2,560 of them.
static LOAD_TASKS: Mutex<BTreeSet<libc::pid_t>> = Mutex::new(BTreeSet::new());

/// Whether `pid` is a task of a running load (not of the case beside it).
pub fn is_load_task(pid: libc::pid_t) -> bool {
    LOAD_TASKS.lock().is_ok_and(|t| t.contains(&pid))
}

/// Lists (`true`) or unlists `pids` as load tasks.
pub fn list_load_tasks(pids: &[libc::pid_t], listed: bool) {
    if let Ok(mut tasks) = LOAD_TASKS.lock() {
        for pid in pids {
            match listed {
                true => tasks.insert(*pid),
                false => tasks.remove(pid),
            };
        }
    }
}

/// The summed usage of this process's live (not yet reaped) children.
pub(super) fn live_children() -> Usage {
    let sys = Sys::real();
    let tick_ns = 1e9 / clock_ticks_per_second();
    let mut total = Usage::default();
    for tid in sys.list("/proc/self/task").unwrap_or_default() {
        let Ok(list) = sys.read(&format!("/proc/self/task/{tid}/children")) else {
            continue;
        };
        for pid in list.split_whitespace() {
            // A background load's task is not the case's.
            if pid.parse().is_ok_and(is_load_task) {
                continue;
            }
            // A child may exit between listing and reading: it is then counted when reaped.
            let Some(stat) = sys.proc_stat(pid) else {
                continue;
            };
            let (vol, invol) = sys
                .read(&format!("/proc/{pid}/status"))
                .ok()
                .and_then(|t| status_switches(&t))
                .unwrap_or((0, 0));
            let ticks = stat.utime_ticks + stat.stime_ticks;
            // On-CPU time in ns (schedstat), split by the lifetime ratio of the
            // tick-sampled user and system times, as the kernel's own cputime_adjust does.
            let runtime_ns = sys
                .read(&format!("/proc/{pid}/schedstat"))
                .ok()
                .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
                .unwrap_or((ticks as f64 * tick_ns) as u64);
            let user_share = if ticks > 0 {
                stat.utime_ticks as f64 / ticks as f64
            } else {
                0.5
            };
            let user_ns = (runtime_ns as f64 * user_share) as u64;
            total.user_ns += user_ns;
            total.sys_ns += runtime_ns - user_ns.min(runtime_ns);
            total.minor_faults += stat.minflt;
            total.major_faults += stat.majflt;
            total.voluntary += vol;
            total.involuntary += invol;
        }
    }
    total
}
