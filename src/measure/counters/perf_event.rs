//! The perf_event ABI and the real [`PerfSource`]: `perf_event_open` of the
//! software and hardware events on every task of osbench's tree, with
//! `inherit`, enabled and disabled by ioctl, read as sums; open errors become
//! reasons (ENOENT/EOPNOTSUPP → no PMU, EACCES/EPERM → not permitted). The
//! module doc of `counters` says when they are open.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{FromRawFd, OwnedFd};

use crate::env::probe::Sys;

pub(crate) const PERF_TYPE_HARDWARE: u32 = 0;

pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;

pub(crate) const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;

pub(super) const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;

pub(super) const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;

pub(super) const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;

pub(super) const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;

/// perf_event_attr.flags bits (include/uapi/linux/perf_event.h).
pub(crate) const FLAG_DISABLED: u64 = 1 << 0;

pub(super) const FLAG_INHERIT: u64 = 1 << 1;

pub(crate) const FLAG_EXCLUDE_HV: u64 = 1 << 6;

pub(super) const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// perf_event_attr.read_format bits: a read returns the count, then the time
/// the event was enabled, then the time it was actually counting.
pub(super) const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;

pub(super) const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;

/// `_IO('$', 0)` and `_IO('$', 1)` (include/uapi/linux/perf_event.h).
pub(crate) const PERF_EVENT_IOC_ENABLE: libc::Ioctl = 0x2400;

pub(crate) const PERF_EVENT_IOC_DISABLE: libc::Ioctl = 0x2401;

/// The perf events osbench opens: name, type, config.
pub(super) const PERF_EVENTS: [(&str, u32, u64); 5] = [
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
/// which every kernel since 2.6.31 accepts: the counting pass's whole
/// attribute, and the head of a sampling one (`measure::profile`).
#[repr(C)]
#[derive(Default)]
pub(crate) struct PerfEventAttr {
    pub(crate) type_: u32,
    /// How many bytes of the attribute the kernel reads.
    pub(crate) size: u32,
    pub(crate) config: u64,
    pub(crate) sample_period: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    pub(crate) wakeup_events: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
}

/// A `struct perf_event_attr` as the kernel reads it.
///
/// # Safety
/// An implementor is `#[repr(C)]`, starts with a [`PerfEventAttr`], and
/// holds at least as many initialised bytes as that head's `size` says.
pub(crate) unsafe trait AttrLayout {}

// SAFETY: it is its own head, and its `size` is set to its 64 bytes.
unsafe impl AttrLayout for PerfEventAttr {}

/// `perf_event_open(attr, pid, cpu, -1, CLOEXEC)`: one event, as `attr`
/// says, on task `pid` (−1: every task) and `cpu` (−1: any).
pub(crate) fn perf_event_open<A: AttrLayout>(
    attr: &A,
    pid: libc::pid_t,
    cpu: libc::c_int,
) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a perf_event_attr of at least its `size` initialised
    // bytes (`AttrLayout`); pid, cpu and group −1 are plain integers; the
    // kernel only reads `attr`.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const A,
            pid,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned `fd` as a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// The perf events counting passes open: the seam, like
/// [`crate::measure::clock::Clock`], through which the harness opens them, so that
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
    pub(super) wanted: Vec<(&'static str, u32, u64)>,
    /// The events that opened, and why the others did not.
    probe: OnceCell<Probe>,
}

/// What probing the perf events found.
#[derive(Debug)]
pub(super) struct Probe {
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
pub(super) struct TreeEvents {
    events: Vec<(&'static str, File)>,
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
pub(crate) fn tree_tasks() -> Vec<libc::pid_t> {
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

/// Opens one counting (not sampling) event, disabled, on task `tid` (0:
/// this thread) and the tasks it forks from now on.
pub(super) fn perf_open(type_: u32, config: u64, tid: libc::pid_t) -> io::Result<File> {
    let attr = PerfEventAttr {
        type_,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        flags: FLAG_DISABLED | FLAG_INHERIT | FLAG_EXCLUDE_HV,
        ..Default::default()
    };
    perf_event_open(&attr, tid, -1).map(File::from)
}

/// `PERF_EVENT_IOC_ENABLE` or `_DISABLE` on one event (and its inherited children).
pub(crate) fn perf_ioctl(
    event: &impl std::os::fd::AsRawFd,
    request: libc::Ioctl,
) -> io::Result<()> {
    // SAFETY: `event` is an open perf event descriptor; both requests take an
    // integer argument (0: this event, not its group) and touch no memory of ours.
    if unsafe { libc::ioctl(event.as_raw_fd(), request, 0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Why a perf event could not be opened, in words.
pub(super) fn open_error(e: &io::Error, hardware: bool, paranoid: &str) -> String {
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

pub(crate) fn errno_name(code: i32) -> String {
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
