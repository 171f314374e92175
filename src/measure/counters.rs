//! Operating-system counters read around each timed sample: rusage and
//! perf_event software (and, where the CPU exposes them, hardware) events.
//!
//! rusage counters (`user_ns`, `sys_ns`, `voluntary_switches`,
//! `involuntary_switches`, `minor_faults`, `major_faults`) are the sum of
//! three sources, so that every task of a case is attributed while it runs:
//! - `getrusage(RUSAGE_SELF)`: every thread of osbench (thread-mode helpers included);
//! - `getrusage(RUSAGE_CHILDREN)`: children already reaped (and their reaped descendants);
//! - live children, found in `/proc/self/task/*/children`: on-CPU time of
//!   the main thread from `/proc/PID/schedstat` (ns), split into user and
//!   system by the lifetime ratio of the tick-sampled times in `/proc/PID/stat`
//!   (half and half before the first tick); faults of the whole process from
//!   `/proc/PID/stat`; switches of the main thread from `/proc/PID/status`.
//!
//! A child reaped between two readings moves from the third source to the
//! second with its whole lifetime, so the delta stays right. Not attributed:
//! grandchildren that are still running (only direct children are listed),
//! threads of a child other than its main thread for switches, and work done
//! by processes outside osbench's tree on its behalf (kernel threads, other
//! daemons).
//!
//! perf_event counters are not open while the harness times samples: an
//! open event, even disabled, costs every context switch and fork of the
//! tasks it is on (measured: ~0.6 µs per pipe round trip, ~9 % per fork).
//! [`Counters::open`] only probes them (open once, close); for the counting
//! pass after a case's timed samples, [`Counters::open_perf`] opens each one,
//! disabled, on every task of osbench's tree (its threads, its live
//! descendants and their threads) with `inherit`, so tasks forked during the
//! pass are counted too; kernel mode is included (without it software events
//! read 0). Enabling or disabling an event by ioctl applies to its inherited
//! children as well (the kernel's `perf_event_for_each_child`), children
//! forked while it was disabled included. Reading sums the tasks and their
//! inherited children. Errors become reasons: ENOENT/EOPNOTSUPP → no PMU,
//! EACCES/EPERM → not permitted. The harness opens and reads them through
//! the [`PerfSource`] and [`PerfEvents`] traits (its tests pass a fake);
//! [`TreePerf`] is the real, `perf_event_open` implementation.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd};

use crate::env::activity::clock_ticks_per_second;
use crate::env::probe::{Sys, status_switches};

/// The counters the perf counting pass reads (the others are rusage's).
pub const PERF_NAMES: [&str; 5] = [
    "context_switches",
    "cpu_migrations",
    "page_faults",
    "cycles",
    "instructions",
];

/// Every counter, in the order they are reported (`tlb_shootdowns` only for
/// the families that ask for it, see [`tlb_shootdowns`]).
pub const NAMES: [&str; 12] = [
    "user_ns",
    "sys_ns",
    "voluntary_switches",
    "involuntary_switches",
    "minor_faults",
    "major_faults",
    "context_switches",
    "cpu_migrations",
    "page_faults",
    "cycles",
    "instructions",
    "tlb_shootdowns",
];

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;
/// perf_event_attr.flags bits (include/uapi/linux/perf_event.h).
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// perf_event_attr.read_format bits: a read returns the count, then the time
/// the event was enabled, then the time it was actually counting.
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// `_IO('$', 0)` and `_IO('$', 1)` (include/uapi/linux/perf_event.h).
const PERF_EVENT_IOC_ENABLE: libc::Ioctl = 0x2400;
const PERF_EVENT_IOC_DISABLE: libc::Ioctl = 0x2401;

/// The perf events osbench opens: name, type, config.
const PERF_EVENTS: [(&str, u32, u64); 5] = [
    (
        "context_switches",
        PERF_TYPE_SOFTWARE,
        PERF_COUNT_SW_CONTEXT_SWITCHES,
    ),
    (
        "cpu_migrations",
        PERF_TYPE_SOFTWARE,
        PERF_COUNT_SW_CPU_MIGRATIONS,
    ),
    ("page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS),
    ("cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
    (
        "instructions",
        PERF_TYPE_HARDWARE,
        PERF_COUNT_HW_INSTRUCTIONS,
    ),
];

/// The first 64 bytes of `struct perf_event_attr` (PERF_ATTR_SIZE_VER0),
/// which every kernel since 2.6.31 accepts.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

/// Which counters can be read, and why the others cannot.
#[derive(Debug)]
pub struct Counters {
    rusage: bool,
    /// Where the perf events of each counting pass come from.
    perf: Box<dyn PerfSource>,
    unavailable: BTreeMap<String, String>,
}

/// The perf events counting passes open: the seam, like
/// [`super::clock::Clock`], through which the harness opens them, so that
/// its tests can count with a fake instead of the kernel. The real source is
/// [`TreePerf`].
pub trait PerfSource: fmt::Debug {
    /// The events each pass opens, in report order (none: no pass).
    fn names(&self) -> Vec<&'static str>;

    /// Opens every event, disabled, on every task of the case (osbench's
    /// tree), for one counting pass.
    fn open(&self) -> io::Result<Box<dyn PerfEvents>>;

    /// Event name → why it cannot be opened.
    fn unavailable(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// Whether the events were probed yet (probing opens and closes them,
    /// which leaves the kernel's perf hooks on for a while).
    fn probed(&self) -> bool {
        true
    }

    /// Whether any event is to be tried (false: perf is off; no probe).
    fn wanted(&self) -> bool {
        !self.names().is_empty()
    }
}

/// The perf events of one counting pass, open and disabled until enabled.
/// Dropping them closes them, so timed samples run with no perf event open.
pub trait PerfEvents {
    /// Each event on each task now (with its inherited children), in an
    /// order that stays the same between reads of these events.
    fn read(&self) -> PerfReading;

    /// Enables (`true`) or disables every event, with the inherited events
    /// of the tasks forked since it was opened.
    fn set_enabled(&self, enabled: bool) -> io::Result<()>;
}

/// The real [`PerfSource`]: the perf events that open (name, type,
/// config), opened by `perf_event_open` on every task of osbench's tree.
/// Which ones open is learnt when first asked — not before, because probing
/// leaves the kernel's perf hooks on for a second, and a run's timed samples
/// should not pay for them: a run asks at its counting pass, after them.
#[derive(Debug, Default)]
pub struct TreePerf {
    /// The events to try (none: perf is off).
    wanted: Vec<(&'static str, u32, u64)>,
    /// The events that opened, and why the others did not.
    probe: OnceCell<Probe>,
}

/// What probing the perf events found.
#[derive(Debug)]
struct Probe {
    events: Vec<(&'static str, u32, u64)>,
    unavailable: BTreeMap<String, String>,
}

impl TreePerf {
    /// Each wanted event opened once on this thread to learn whether it can
    /// be (and why not), then closed. (Probing on a short-lived thread
    /// instead made every later fork slower: see docs/design-notes.md,
    /// "Counters per operation".)
    fn probe(&self) -> &Probe {
        self.probe.get_or_init(|| {
            let paranoid = Sys::real()
                .read("/proc/sys/kernel/perf_event_paranoid")
                .unwrap_or_else(|_| "unknown".into());
            let mut probe = Probe {
                events: Vec::new(),
                unavailable: BTreeMap::new(),
            };
            for &(name, type_, config) in &self.wanted {
                match perf_open(type_, config, 0) {
                    Ok(_closed_on_drop) => probe.events.push((name, type_, config)),
                    Err(e) => {
                        let why = open_error(&e, type_ == PERF_TYPE_HARDWARE, &paranoid);
                        probe.unavailable.insert(name.into(), why);
                    }
                }
            }
            probe
        })
    }
}

/// The real [`PerfEvents`]: every event open, disabled, on every task of
/// osbench's tree (its threads, its children and theirs, with their
/// threads), each with `inherit` so tasks they fork are counted too. The
/// files close when dropped.
#[derive(Debug)]
struct TreeEvents {
    events: Vec<(&'static str, File)>,
}

/// Cumulative counter values at one moment, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading(pub Vec<(&'static str, u64)>);

impl Reading {
    /// Adds counter `name` at `value`.
    pub fn push(&mut self, name: &'static str, value: u64) {
        self.0.push((name, value));
    }
}

/// One perf event's cumulative count on one task, with the time it was
/// enabled and the time it was counting (less when the kernel multiplexed
/// more events than the PMU has counters).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PerfCount {
    pub value: u64,
    pub enabled_ns: u64,
    pub running_ns: u64,
}

/// Every open perf event at one moment: (name, count), one entry per event and task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerfReading(pub Vec<(&'static str, PerfCount)>);

/// What the perf events counted between two readings, scaled.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerfDelta {
    /// Each event's increment, summed over the tasks, each task's scaled by
    /// enabled ÷ running time as `perf stat` does. An event that was enabled
    /// but never counted is left out (its count is unknown).
    pub counters: Vec<(&'static str, f64)>,
    /// The events that did not count the whole time they were enabled:
    /// running ÷ enabled time over all tasks (0: never counted).
    pub running: Vec<(&'static str, f64)>,
}

/// `after − before` of each perf event, scaled for multiplexing: per task
/// Δcount × Δenabled ÷ Δrunning (perf stat's `avg_running` scaling), then
/// summed by name. The readings must come from the same open events.
pub fn perf_delta(before: &PerfReading, after: &PerfReading) -> PerfDelta {
    // name → (scaled sum, Σ Δenabled, Σ Δrunning)
    let mut sums: Vec<(&'static str, f64, u64, u64)> = Vec::new();
    for ((name, b), (_, a)) in before.0.iter().zip(&after.0) {
        let value = a.value.saturating_sub(b.value);
        let enabled = a.enabled_ns.saturating_sub(b.enabled_ns);
        let running = a.running_ns.saturating_sub(b.running_ns);
        let scaled = if running == 0 || running >= enabled {
            value as f64
        } else {
            value as f64 * enabled as f64 / running as f64
        };
        match sums.iter_mut().find(|(n, ..)| n == name) {
            Some(entry) => {
                entry.1 += scaled;
                entry.2 += enabled;
                entry.3 += running;
            }
            None => sums.push((*name, scaled, enabled, running)),
        }
    }
    let mut delta = PerfDelta::default();
    for (name, scaled, enabled, running) in sums {
        if running < enabled {
            delta.running.push((name, running as f64 / enabled as f64));
        }
        if running > 0 || enabled == 0 {
            delta.counters.push((name, scaled));
        }
    }
    delta
}

/// Whether a reading starts a sample (read the measuring process last) or ends it (first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    Before,
    After,
}

impl Counters {
    /// No counters at all (tests with a fake clock).
    pub fn none() -> Self {
        Self::with_perf(Box::new(TreePerf::default()))
    }

    /// No rusage; the perf events of counting passes from `perf` (the
    /// harness tests pass a fake).
    pub fn with_perf(perf: Box<dyn PerfSource>) -> Self {
        Self {
            rusage: false,
            perf,
            unavailable: BTreeMap::new(),
        }
    }

    /// rusage, and the perf events when `perf` is true, probed when first
    /// asked about ([`TreePerf`]); [`Self::open_perf`] opens them for a counting pass.
    pub fn open(perf: bool) -> Self {
        let mut unavailable = BTreeMap::new();
        let mut tree = TreePerf::default();
        for event @ (name, _, _) in PERF_EVENTS {
            if perf {
                tree.wanted.push(event);
            } else {
                unavailable.insert(name.into(), "not opened (--no-perf)".into());
            }
        }
        Self {
            rusage: true,
            perf: Box::new(tree),
            unavailable,
        }
    }

    /// Counter name → why it cannot be read (probes the perf events).
    pub fn unavailable(&self) -> BTreeMap<String, String> {
        let mut all = self.unavailable.clone();
        all.extend(self.perf.unavailable());
        all
    }

    /// Whether perf events are wanted at all (no probe needed to tell).
    pub fn perf_wanted(&self) -> bool {
        self.perf.wanted()
    }

    /// Whether the perf events were probed yet.
    pub fn perf_probed(&self) -> bool {
        self.perf.probed()
    }

    /// The rusage counters now (perf events are read through
    /// [`Self::open_perf`], in the counting pass). Around a sample, the
    /// measuring process's own rusage is read closest to the timed region
    /// (`edge`: last before it, first after it), so the cost of the /proc
    /// reads of live children falls outside the delta.
    pub fn read(&self, edge: Edge) -> Reading {
        if !self.rusage {
            return Reading::default();
        }
        Reading(rusage_reading(edge))
    }

    /// The names of the perf events that are open, in report order.
    pub fn perf_names(&self) -> Vec<&'static str> {
        self.perf.names()
    }

    /// Opens every perf event, disabled, on every task of the case, for one
    /// counting pass.
    pub fn open_perf(&self) -> io::Result<Box<dyn PerfEvents>> {
        self.perf.open()
    }
}

impl PerfSource for TreePerf {
    fn names(&self) -> Vec<&'static str> {
        if self.wanted.is_empty() {
            return Vec::new();
        }
        self.probe()
            .events
            .iter()
            .map(|(name, _, _)| *name)
            .collect()
    }

    fn unavailable(&self) -> BTreeMap<String, String> {
        if self.wanted.is_empty() {
            return BTreeMap::new();
        }
        self.probe().unavailable.clone()
    }

    fn probed(&self) -> bool {
        self.wanted.is_empty() || self.probe.get().is_some()
    }

    fn wanted(&self) -> bool {
        !self.wanted.is_empty()
    }

    /// A task that exits meanwhile is skipped; any other failure is returned
    /// (the events already opened are then closed).
    fn open(&self) -> io::Result<Box<dyn PerfEvents>> {
        if self.wanted.is_empty() {
            return Ok(Box::new(TreeEvents { events: Vec::new() }));
        }
        let probed = &self.probe().events;
        let tasks = if probed.is_empty() {
            Vec::new()
        } else {
            tree_tasks()
        };
        let mut events = Vec::new();
        for &(name, type_, config) in probed {
            for &tid in &tasks {
                match perf_open(type_, config, tid) {
                    Ok(file) => events.push((name, file)),
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(Box::new(TreeEvents { events }))
    }
}

impl PerfEvents for TreeEvents {
    fn read(&self) -> PerfReading {
        let counts = self.events.iter().map(|(name, file)| {
            // value, time enabled, time running (read_format); a failed read
            // (never seen) counts nothing, so the entries stay aligned.
            let mut buf = [0u8; 24];
            let count = match (&*file).read_exact(&mut buf) {
                Ok(()) => {
                    let word = |i: usize| {
                        u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
                    };
                    PerfCount {
                        value: word(0),
                        enabled_ns: word(1),
                        running_ns: word(2),
                    }
                }
                Err(_) => PerfCount::default(),
            };
            (*name, count)
        });
        PerfReading(counts.collect())
    }

    fn set_enabled(&self, enabled: bool) -> io::Result<()> {
        let request = if enabled {
            PERF_EVENT_IOC_ENABLE
        } else {
            PERF_EVENT_IOC_DISABLE
        };
        for (_, file) in &self.events {
            perf_ioctl(file, request)?;
        }
        Ok(())
    }
}

/// Every task (thread id) of this process and of its descendants, read from
/// `/proc/*/task/*/children`. A task that exits meanwhile may still be listed.
fn tree_tasks() -> Vec<libc::pid_t> {
    let sys = Sys::real();
    let mut tasks = Vec::new();
    let mut processes = vec!["self".to_string()];
    while let Some(pid) = processes.pop() {
        for tid in sys.list(&format!("/proc/{pid}/task")).unwrap_or_default() {
            if let Ok(children) = sys.read(&format!("/proc/{pid}/task/{tid}/children")) {
                processes.extend(children.split_whitespace().map(str::to_string));
            }
            if let Ok(tid) = tid.parse() {
                tasks.push(tid);
            }
        }
    }
    tasks
}

/// The TLB shootdown interrupts all CPUs have taken so far: the sum of the
/// `TLB:` line of /proc/interrupts (x86; machine-wide, not only osbench's),
/// or why it cannot be read.
pub fn tlb_shootdowns() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/interrupts")
        .map_err(|e| format!("cannot read /proc/interrupts: {e}"))?;
    tlb_line_total(&text).ok_or_else(|| {
        "no TLB line in /proc/interrupts (this architecture or kernel does not count TLB \
         shootdown interrupts there)"
            .to_string()
    })
}

/// The per-CPU counts of the `TLB:` line of /proc/interrupts text, summed.
fn tlb_line_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.trim_start().starts_with("TLB:"))?;
    let counts = line.trim_start()["TLB:".len()..]
        .split_whitespace()
        .map_while(|w| w.parse::<u64>().ok());
    Some(counts.sum())
}

/// `after − before` for each counter present in both (never negative).
pub fn delta(before: &Reading, after: &Reading) -> Vec<(&'static str, f64)> {
    NAMES
        .iter()
        .filter_map(|name| {
            let get = |r: &Reading| r.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
            Some((*name, get(after)?.saturating_sub(get(before)?) as f64))
        })
        .collect()
}

/// rusage of this process, its reaped children and its live children,
/// summed; this process's own read nearest the timed region (`edge`).
fn rusage_reading(edge: Edge) -> Vec<(&'static str, u64)> {
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

/// The summed usage of this process's live (not yet reaped) children.
fn live_children() -> Usage {
    let sys = Sys::real();
    let tick_ns = 1e9 / clock_ticks_per_second();
    let mut total = Usage::default();
    for tid in sys.list("/proc/self/task").unwrap_or_default() {
        let Ok(list) = sys.read(&format!("/proc/self/task/{tid}/children")) else {
            continue;
        };
        for pid in list.split_whitespace() {
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

/// Opens one counting (not sampling) event, disabled, on task `tid` (0:
/// this thread) and the tasks it forks from now on.
fn perf_open(type_: u32, config: u64, tid: libc::pid_t) -> io::Result<File> {
    let attr = PerfEventAttr {
        type_,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        flags: FLAG_DISABLED | FLAG_INHERIT | FLAG_EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: `attr` is an initialised perf_event_attr whose `size` is its real
    // size; pid / cpu −1 / group −1 are plain integers; the kernel only reads `attr`.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            tid,
            -1 as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `fd` as a new descriptor nothing else owns.
    Ok(File::from(unsafe {
        OwnedFd::from_raw_fd(fd as libc::c_int)
    }))
}

/// `PERF_EVENT_IOC_ENABLE` or `_DISABLE` on one event (and its inherited children).
fn perf_ioctl(file: &File, request: libc::Ioctl) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `file` is an open perf event descriptor; both requests take an
    // integer argument (0: this event, not its group) and touch no memory of ours.
    if unsafe { libc::ioctl(file.as_raw_fd(), request, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Why a perf event could not be opened, in words.
fn open_error(e: &io::Error, hardware: bool, paranoid: &str) -> String {
    let code = e.raw_os_error().unwrap_or(0);
    let name = errno_name(code);
    match code {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV if hardware => {
            format!("no hardware PMU ({name})")
        }
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            format!("not supported by this kernel ({name})")
        }
        libc::EACCES | libc::EPERM => format!(
            "not permitted ({name}): counting kernel mode needs root, CAP_PERFMON or \
             kernel.perf_event_paranoid <= 1 (it is {paranoid})"
        ),
        libc::ENOSYS => format!("perf_event_open is not available ({name})"),
        _ => format!("perf_event_open failed: {e}"),
    }
}

fn errno_name(code: i32) -> String {
    match code {
        libc::ENOENT => "ENOENT".into(),
        libc::EOPNOTSUPP => "EOPNOTSUPP".into(),
        libc::ENODEV => "ENODEV".into(),
        libc::EACCES => "EACCES".into(),
        libc::EPERM => "EPERM".into(),
        libc::ENOSYS => "ENOSYS".into(),
        libc::EINVAL => "EINVAL".into(),
        other => format!("errno {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tlb_line_is_summed_over_the_cpus_and_its_absence_is_none() {
        let text = "           CPU0       CPU1\n CAL:    3075048    2845186   Function call interrupts\n \
                    TLB:     255967     251381   TLB shootdowns\n TRM:          0          0   Thermal\n";
        assert_eq!(tlb_line_total(text), Some(255_967 + 251_381));
        assert_eq!(tlb_line_total(" CAL: 1 2 Function call interrupts\n"), None);
        // This machine: a count, or the reason there is none.
        match tlb_shootdowns() {
            Ok(_) => assert!(
                std::fs::read_to_string("/proc/interrupts")
                    .unwrap()
                    .contains("TLB:")
            ),
            Err(why) => assert!(why.contains("/proc/interrupts"), "{why}"),
        }
    }

    #[test]
    fn attr_has_the_version_0_size() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 64);
    }

    #[test]
    fn deltas_take_the_counters_present_in_both() {
        let a = Reading(vec![
            ("user_ns", 100),
            ("context_switches", 5),
            ("cycles", 9),
        ]);
        let b = Reading(vec![("user_ns", 350), ("context_switches", 7)]);
        assert_eq!(
            delta(&a, &b),
            [("user_ns", 250.0), ("context_switches", 2.0)]
        );
    }

    #[test]
    fn the_perf_names_are_the_events_opened() {
        assert_eq!(PERF_EVENTS.map(|e| e.0), PERF_NAMES);
    }

    #[test]
    fn multiplexed_counts_are_scaled_as_perf_stat_does() {
        let count = |value, enabled_ns, running_ns| PerfCount {
            value,
            enabled_ns,
            running_ns,
        };
        let before = PerfReading(vec![
            ("cycles", count(0, 0, 0)),
            ("cycles", count(100, 10, 10)),
            ("context_switches", count(5, 10, 10)),
            ("instructions", count(0, 0, 0)),
        ]);
        // Task 1 counted 1000 cycles in a quarter of 400 ns enabled: 4000
        // scaled; task 2, 100 in all its 100 ns; switches never multiplexed;
        // instructions enabled 50 ns and never counting.
        let after = PerfReading(vec![
            ("cycles", count(1000, 400, 100)),
            ("cycles", count(200, 110, 110)),
            ("context_switches", count(8, 30, 30)),
            ("instructions", count(0, 50, 0)),
        ]);
        let d = perf_delta(&before, &after);
        assert_eq!(d.counters, [("cycles", 4100.0), ("context_switches", 3.0)]);
        // Running ÷ enabled over both tasks: 200 of 500 ns.
        assert_eq!(d.running, [("cycles", 0.4), ("instructions", 0.0)]);
    }

    #[test]
    fn errors_are_worded_by_cause() {
        let e = |c| io::Error::from_raw_os_error(c);
        assert_eq!(
            open_error(&e(libc::ENOENT), true, "2"),
            "no hardware PMU (ENOENT)"
        );
        assert!(
            open_error(&e(libc::EACCES), false, "2").contains("perf_event_paranoid <= 1 (it is 2)")
        );
        assert!(open_error(&e(libc::ENOSYS), false, "2").contains("ENOSYS"));
    }

    #[test]
    fn rusage_counts_this_process_and_a_reaped_child() {
        let c = Counters::open(false);
        assert_eq!(c.unavailable()["cycles"], "not opened (--no-perf)");
        let before = c.read(Edge::Before);
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        let status = std::process::Command::new("true").status().unwrap();
        assert!(status.success());
        let after = c.read(Edge::After);
        let d: BTreeMap<&str, f64> = delta(&before, &after).into_iter().collect();
        assert_eq!(d.len(), 6, "{d:?}");
        assert!(d["user_ns"] + d["sys_ns"] > 0.0, "{d:?}");
        // Forking and exec'ing `true` faults pages in, in the child if not here.
        assert!(d["minor_faults"] > 0.0, "{d:?}");
    }

    /// 20 sleeps of 1 ms: at least 20 context switches.
    fn sleep_20_times() {
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn switches(a: &PerfReading, b: &PerfReading) -> f64 {
        let d: BTreeMap<&str, f64> = perf_delta(a, b).counters.into_iter().collect();
        d["context_switches"]
    }

    #[test]
    fn perf_counters_count_switches_only_while_enabled_or_say_why_not() {
        let c = Counters::open(true);
        for name in ["context_switches", "cycles"] {
            let opened = c.perf_names().contains(&name);
            assert!(
                opened != c.unavailable().contains_key(name),
                "{name}: either read or explained"
            );
        }
        if !c.perf_names().contains(&"context_switches") {
            return;
        }
        // Opened disabled: nothing counts until enabled.
        let perf = c.open_perf().unwrap();
        let before = perf.read();
        sleep_20_times();
        let after = perf.read();
        assert_eq!(switches(&before, &after), 0.0);
        perf.set_enabled(true).unwrap();
        sleep_20_times();
        perf.set_enabled(false).unwrap();
        assert!(switches(&after, &perf.read()) >= 20.0);
        // rusage readings carry no perf counter.
        assert!(
            c.read(Edge::After)
                .0
                .iter()
                .all(|(n, _)| *n != "context_switches")
        );
    }

    /// The counting pass relies on both: events opened on a task that
    /// already exists (a helper set up before the pass), and enabling an
    /// event reaching the events inherited by a task forked while it was
    /// disabled (the kernel's perf_event_for_each_child).
    #[test]
    fn a_pass_counts_tasks_forked_before_it_and_during_it() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Arc, Barrier};
        let c = Counters::open(true);
        if !c.perf_names().contains(&"context_switches") {
            return;
        }
        let go = Arc::new(Barrier::new(3));
        let done = Arc::new(AtomicUsize::new(0));
        let sleeper = |go: Arc<Barrier>, done: Arc<AtomicUsize>| {
            move || {
                go.wait();
                for _ in 0..3 {
                    sleep_20_times();
                }
                done.fetch_add(1, Ordering::SeqCst);
            }
        };
        let existing = std::thread::spawn(sleeper(Arc::clone(&go), Arc::clone(&done)));
        let perf = c.open_perf().unwrap();
        let forked = std::thread::spawn(sleeper(Arc::clone(&go), Arc::clone(&done)));
        let before = perf.read();
        perf.set_enabled(true).unwrap();
        go.wait();
        // Spin rather than block, so this thread adds few switches of its own
        // (only preemptions, far fewer than 60 in this time).
        while done.load(Ordering::SeqCst) < 2 {
            std::hint::spin_loop();
        }
        perf.set_enabled(false).unwrap();
        let after = perf.read();
        existing.join().unwrap();
        forked.join().unwrap();
        // 60 sleeps each: both threads were counted.
        assert!(switches(&before, &after) >= 120.0, "{after:?}");
    }
}
