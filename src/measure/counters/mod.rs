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

use std::collections::BTreeMap;
use std::io;

mod perf_event;
mod rusage;

pub use rusage::{is_load_task, list_load_tasks};

pub(crate) use perf_event::{
    AttrLayout, FLAG_DISABLED, FLAG_EXCLUDE_HV, PERF_COUNT_HW_CPU_CYCLES, PERF_EVENT_IOC_DISABLE,
    PERF_EVENT_IOC_ENABLE, PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PerfEventAttr, errno_name,
    perf_event_open, perf_ioctl, tree_tasks,
};
pub use perf_event::{
    PerfCount, PerfDelta, PerfEvents, PerfReading, PerfSource, TreePerf, perf_delta,
};
pub(crate) use rusage::{Usage, getrusage};

use perf_event::PERF_EVENTS;
use rusage::rusage_reading;

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

/// Which counters can be read, and why the others cannot.
#[derive(Debug)]
pub struct Counters {
    rusage: bool,
    /// Where the perf events of each counting pass come from.
    perf: Box<dyn PerfSource>,
    unavailable: BTreeMap<String, String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use perf_event::{PerfEventAttr, open_error};

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
