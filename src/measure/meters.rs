//! Everything the harness reads around a timed sample besides the clock:
//! the OS counters ([`super::counters`]; the machine's TLB shootdown
//! interrupts for the families that ask) and RAPL energy ([`super::energy`]),
//! and the perf events it enables only for the counting pass ([`PerfPass`]).
//!
//! A snapshot (rusage and energy) is taken just before the first clock read
//! of a sample and just after the second, so the reads never fall inside the
//! timed region; the per-sample deltas are then divided by the operations in
//! the sample. No perf event is open during timed samples (an open event
//! slows context switches and forks, even disabled); they are opened for the
//! counting pass and read around its batches instead.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::RawSample;
use super::counters::{self, Counters, Edge, PerfEvents, PerfSource, Reading};
use super::energy::Rapl;
use crate::env::probe::Sys;

/// How long the kernel keeps its perf hooks in every context switch on after
/// the last task-bound perf event closed: it turns them off from a work item
/// queued HZ jiffies (one second) later (kernel/events/core.c,
/// `perf_sched_work`); with margin.
pub const PERF_HOOKS_LINGER: Duration = Duration::from_millis(1200);

/// The counters and energy zones one run reads.
#[derive(Debug)]
pub struct Meters {
    counters: Counters,
    /// `None`: energy not looked at (tests); `Some(Err)`: unavailable, and why.
    energy: Option<Result<Rapl, String>>,
    /// When a perf event was last closed (the probe, a counting pass).
    perf_closed_at: Cell<Option<Instant>>,
    /// Whether this machine's /proc/interrupts may be read (not in tests with a fake clock).
    interrupts: bool,
    /// Whether the current case reads the TLB shootdown interrupts.
    tlb: Cell<bool>,
}

/// Counter and energy readings at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    counters: Reading,
    energy_uj: Option<Vec<u64>>,
}

/// What one sample used: counter increments, and joules per energy zone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeterDelta {
    pub counters: Vec<(&'static str, f64)>,
    pub energy_j: Option<Vec<f64>>,
    /// Counting pass only: the perf events that were multiplexed, with the
    /// fraction of their enabled time they counted (their counts are scaled).
    pub perf_running: Vec<(&'static str, f64)>,
}

impl MeterDelta {
    /// Adds what `other` used (a later stretch of the same sample): counters
    /// by name, joules by zone.
    pub fn accumulate(&mut self, other: MeterDelta) {
        for (name, value) in other.counters {
            match self.counters.iter_mut().find(|(n, _)| *n == name) {
                Some((_, sum)) => *sum += value,
                None => self.counters.push((name, value)),
            }
        }
        self.energy_j = match (self.energy_j.take(), other.energy_j) {
            (Some(mut sum), Some(more)) if sum.len() == more.len() => {
                sum.iter_mut().zip(more).for_each(|(s, m)| *s += m);
                Some(sum)
            }
            (None, more) => more,
            // Zones that differ between stretches: no total to give.
            _ => None,
        };
    }
}

/// The perf counting pass of a case: a few batches of the timed size, run
/// after its timed samples with the perf events enabled.
#[derive(Debug, Clone, PartialEq)]
pub enum PerfPass {
    /// No perf event is open (`--no-perf`, not permitted, a harness without
    /// meters), or a baseline, whose counters are not kept.
    NotRun,
    /// Each batch as run (iterations; elapsed ns, with counting on) and the
    /// perf counters' increments in it, same order.
    Counted {
        raw: Vec<RawSample>,
        deltas: Vec<MeterDelta>,
    },
    /// Why the pass did not run although perf events are open.
    Skipped(String),
    /// Not run with the samples: the run counts every configuration × case
    /// once, after its rounds ([`super::Harness::count`]).
    Later,
}

/// Per-operation values of a series' samples: counter name → one value per
/// sample; energy zone → (joules per op, watts), one value per sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PerOp {
    pub counters: BTreeMap<String, Vec<f64>>,
    pub energy: BTreeMap<String, (Vec<f64>, Vec<f64>)>,
}

impl Meters {
    /// Nothing is read (harnesses with a fake clock).
    pub fn none() -> Self {
        Self {
            counters: Counters::none(),
            energy: None,
            perf_closed_at: Cell::new(None),
            interrupts: false,
            tlb: Cell::new(false),
        }
    }

    /// rusage, perf events (unless `perf` is false; probed when first asked
    /// about, opened for each counting pass) and RAPL.
    pub fn open(perf: bool) -> Self {
        Self {
            counters: Counters::open(perf),
            energy: Some(Rapl::open(&Sys::real())),
            perf_closed_at: Cell::new(None),
            interrupts: true,
            tlb: Cell::new(false),
        }
    }

    /// Whether the snapshots of the next case read the machine's TLB
    /// shootdown interrupts (the counter `tlb_shootdowns`; families that ask).
    pub fn count_tlb_shootdowns(&self, on: bool) {
        self.tlb.set(on);
    }

    /// The TLB shootdown interrupts so far, when the current case counts them.
    fn tlb_reading(&self) -> Option<u64> {
        (self.interrupts && self.tlb.get())
            .then(counters::tlb_shootdowns)?
            .ok()
    }

    /// Why the current case's TLB shootdowns cannot be counted, when it asks for them.
    pub fn tlb_unavailable(&self) -> Option<String> {
        (self.interrupts && self.tlb.get())
            .then(counters::tlb_shootdowns)?
            .err()
    }

    /// Notes when the perf events were first probed (which closes them),
    /// for [`Self::perf_hooks_on`].
    fn note_probe(&self) {
        if self.perf_closed_at.get().is_none()
            && self.counters.perf_wanted()
            && self.counters.perf_probed()
        {
            self.perf_closed_at.set(Some(Instant::now()));
        }
    }

    /// Whether perf events are wanted (`--no-perf` not given); asks no probe.
    pub fn perf_wanted(&self) -> bool {
        self.counters.perf_wanted()
    }

    /// rusage and energy now (not perf: it is read by the counting pass).
    pub fn snapshot(&self, edge: Edge) -> Snapshot {
        let energy = || match &self.energy {
            Some(Ok(rapl)) => rapl.read(),
            _ => None,
        };
        // The energy files and interrupts are read farthest from the timed
        // region, the measuring process's rusage nearest (inside `Counters::read`).
        let with_tlb = |mut counters: Reading, tlb: Option<u64>| {
            if let Some(n) = tlb {
                counters.push("tlb_shootdowns", n);
            }
            counters
        };
        match edge {
            Edge::Before => {
                let energy_uj = energy();
                let tlb = self.tlb_reading();
                Snapshot {
                    counters: with_tlb(self.counters.read(edge), tlb),
                    energy_uj,
                }
            }
            Edge::After => {
                let counters = self.counters.read(edge);
                let tlb = self.tlb_reading();
                Snapshot {
                    counters: with_tlb(counters, tlb),
                    energy_uj: energy(),
                }
            }
        }
    }

    /// What the sample between `before` and `after` used.
    pub fn delta(&self, before: &Snapshot, after: &Snapshot) -> MeterDelta {
        let energy_j = match (&self.energy, &before.energy_uj, &after.energy_uj) {
            (Some(Ok(rapl)), Some(b), Some(a)) => Some(rapl.joules(b, a)),
            _ => None,
        };
        MeterDelta {
            counters: counters::delta(&before.counters, &after.counters),
            energy_j,
            perf_running: Vec::new(),
        }
    }

    /// No rusage or energy; the perf events of counting passes from `perf`
    /// (the harness tests pass a fake).
    pub fn with_perf(perf: Box<dyn PerfSource>) -> Self {
        Self {
            counters: Counters::with_perf(perf),
            energy: None,
            perf_closed_at: Cell::new(None),
            interrupts: false,
            tlb: Cell::new(false),
        }
    }

    /// The perf events that open (none: no counting pass); probes them.
    pub fn perf_names(&self) -> Vec<&'static str> {
        let names = self.counters.perf_names();
        self.note_probe();
        names
    }

    /// The perf events, open (disabled) on every task of osbench's tree, for one counting pass.
    pub fn open_perf(&self) -> std::io::Result<Box<dyn PerfEvents>> {
        // On an error the events already opened were closed again.
        self.counters
            .open_perf()
            .inspect_err(|_| self.perf_closed_at.set(Some(Instant::now())))
    }

    /// Closes the events of a counting pass, noting when.
    pub fn close_perf(&self, events: Box<dyn PerfEvents>) {
        drop(events);
        self.note_perf_closed();
    }

    /// Notes that a perf event other than the counting pass's (a profiling
    /// pass's) closed now, so the next timed samples wait for the hooks.
    pub fn note_perf_closed(&self) {
        self.perf_closed_at.set(Some(Instant::now()));
    }

    /// Whether a perf event closed less than [`PERF_HOOKS_LINGER`] ago, so
    /// that the kernel's perf hooks may still slow every context switch
    /// (measured: ~3–6 % on pipe and socket round trips). The harness keeps warming up
    /// until they are off, rather than sleeping: an idle CPU would have to
    /// warm up again.
    pub fn perf_hooks_on(&self) -> bool {
        self.perf_closed_at
            .get()
            .is_some_and(|closed| closed.elapsed() < PERF_HOOKS_LINGER)
    }

    /// Pretends the last perf event closed `ago` (harness tests).
    #[cfg(test)]
    pub(crate) fn perf_closed_ago(&self, ago: Duration) {
        self.perf_closed_at.set(Some(Instant::now() - ago));
    }

    /// Counter name → why it cannot be read (probes the perf events).
    pub fn counters_unavailable(&self) -> BTreeMap<String, String> {
        let unavailable = self.counters.unavailable();
        self.note_probe();
        unavailable
    }

    /// Why energy cannot be read (`None` when it can, or was not looked at).
    pub fn energy_unavailable(&self) -> Option<&str> {
        match &self.energy {
            Some(Err(why)) => Some(why),
            _ => None,
        }
    }

    /// The energy zones read, in the order of [`MeterDelta::energy_j`].
    pub fn energy_domains(&self) -> Vec<String> {
        match &self.energy {
            Some(Ok(rapl)) => rapl.domains(),
            _ => Vec::new(),
        }
    }
}

/// Divides each sample's deltas by its operations (`iters × ops_per_iter`);
/// watts are joules over the sample's elapsed time. A counter (or energy) is
/// kept only when every sample has it, so the values stay aligned with the samples.
pub fn per_op(
    deltas: &[MeterDelta],
    raw: &[RawSample],
    ops_per_iter: f64,
    domains: &[String],
) -> PerOp {
    let mut out = PerOp::default();
    if deltas.is_empty() || deltas.len() != raw.len() {
        return out;
    }
    let ops = |s: &RawSample| s.iters as f64 * ops_per_iter;
    for name in counters::NAMES {
        let values: Option<Vec<f64>> = deltas
            .iter()
            .zip(raw)
            .map(|(d, s)| {
                let (_, v) = d.counters.iter().find(|(n, _)| *n == name)?;
                Some(v / ops(s))
            })
            .collect();
        if let Some(values) = values {
            out.counters.insert(name.to_string(), values);
        }
    }
    for (i, domain) in domains.iter().enumerate() {
        let values: Option<Vec<(f64, f64)>> = deltas
            .iter()
            .zip(raw)
            .map(|(d, s)| {
                let joules = *d.energy_j.as_ref()?.get(i)?;
                let secs = s.elapsed_ns as f64 / 1e9;
                Some((
                    joules / ops(s),
                    if secs > 0.0 { joules / secs } else { 0.0 },
                ))
            })
            .collect();
        if let Some(values) = values {
            out.energy
                .insert(domain.clone(), values.into_iter().unzip());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::fake::FakeSource;

    #[test]
    fn per_op_divides_by_the_operations_of_each_sample() {
        let raw = [
            RawSample {
                iters: 100,
                elapsed_ns: 500_000_000,
            },
            RawSample {
                iters: 200,
                elapsed_ns: 1_000_000_000,
            },
        ];
        let deltas = [
            MeterDelta {
                counters: vec![("voluntary_switches", 200.0), ("cycles", 1.0)],
                energy_j: Some(vec![10.0, 2.0]),
                perf_running: Vec::new(),
            },
            MeterDelta {
                counters: vec![("voluntary_switches", 400.0)],
                energy_j: Some(vec![20.0, 4.0]),
                perf_running: Vec::new(),
            },
        ];
        let domains = ["package-0".to_string(), "package-0/core".to_string()];
        let p = per_op(&deltas, &raw, 2.0, &domains);
        // 200 switches over 100 iterations of 2 ops: 1 per op.
        assert_eq!(p.counters["voluntary_switches"], [1.0, 1.0]);
        assert!(
            !p.counters.contains_key("cycles"),
            "only in one sample: dropped"
        );
        // 10 J over 200 ops = 0.05 J/op; 10 J in 0.5 s = 20 W.
        assert_eq!(p.energy["package-0"], (vec![0.05, 0.05], vec![20.0, 20.0]));
        assert_eq!(
            p.energy["package-0/core"],
            (vec![0.01, 0.01], vec![4.0, 4.0])
        );
    }

    #[test]
    fn the_perf_hooks_count_as_on_for_a_while_after_a_pass() {
        let m = Meters::with_perf(Box::new(FakeSource::default()));
        assert!(!m.perf_hooks_on(), "nothing closed yet");
        m.close_perf(m.open_perf().unwrap());
        assert!(m.perf_hooks_on());
        m.perf_closed_ago(PERF_HOOKS_LINGER + Duration::from_millis(1));
        assert!(!m.perf_hooks_on());
    }

    #[test]
    fn nothing_measured_gives_nothing() {
        let m = Meters::none();
        let (a, b) = (m.snapshot(Edge::Before), m.snapshot(Edge::After));
        assert_eq!(m.delta(&a, &b), MeterDelta::default());
        assert!(m.energy_unavailable().is_none() && m.counters_unavailable().is_empty());
        let raw = [RawSample {
            iters: 1,
            elapsed_ns: 1,
        }];
        assert_eq!(
            per_op(&[MeterDelta::default()], &raw, 1.0, &[]),
            PerOp::default()
        );
    }
}
