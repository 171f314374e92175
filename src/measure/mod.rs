//! The harness: the only code that reads clocks around benchmark code.
//!
//! Method (lmbench's `benchmp`, anchors-methodology.md §1.2, with changes):
//! 1. measure the overheads once: one clock read (median of back-to-back
//!    reads) and one iteration of an empty loop (median of 5 timed loops);
//! 2. calibrate: run 1, 8, 64, … iterations until a batch is long enough to
//!    estimate, then scale the count so one sample lasts the target time;
//! 3. warm up: keep running calibrated batches for the warm-up time,
//!    re-estimating the count after each (nothing is recorded);
//! 4. sample: time batches until `samples` of them land inside
//!    [`ACCEPT_LOW`, `ACCEPT_HIGH`] × target. Samples outside are kept as
//!    `rejected` (never silently dropped); a short one re-sizes the count at
//!    once, two long ones in a row re-size it (one long sample is usually an
//!    interruption, not a wrong count). An iteration longer than the target
//!    cannot be split, so with one iteration per sample every sample counts.
//!    Several benchmarks (a case and the overhead subtracted from it) can be
//!    sampled alternately, so drift hits them alike.
//!
//! Differences from lmbench: CLOCK_MONOTONIC in ns instead of gettimeofday in
//! µs; an upper bound on accepted samples; overheads recorded in the result
//! instead of only subtracted; no forked measuring child (benchmarks fork
//! their own peers); a warm-up by default.
//! Around every recorded sample (not during calibration or warm-up) the
//! [`meters::Meters`] — rusage counters and RAPL energy — are read outside
//! the two clock reads, so they never fall inside the timed region.
//! No perf event is open meanwhile: an open event, even disabled, slows every
//! context switch and fork of the tasks it is on. After the timed samples a
//! short counting pass ([`meters::PerfPass`]) opens them on every task of the
//! case and runs it again with them enabled: [`PERF_PASS_BATCHES`] batches of
//! the last timed size, one whole run for whole-run benchmarks, one batch of
//! events for latency benchmarks; then closes them.

pub mod clock;
pub mod command;
pub mod counters;
pub mod energy;
pub mod interrupt;
pub mod meters;
pub mod placement;
pub mod supervise;

use std::hint::black_box;

use serde::{Deserialize, Serialize};

use crate::bench::Benchmark;
use crate::error::{Error, Result};
pub use clock::{Clock, Monotonic};
use counters::{Edge, PerfEvents};
pub use interrupt::Interrupt;
pub use meters::{MeterDelta, Meters, PerfPass};

/// A sample is accepted when its duration is at least this fraction of the target…
pub const ACCEPT_LOW: f64 = 0.9;
/// …and at most this multiple of it.
pub const ACCEPT_HIGH: f64 = 1.5;
/// Never run more than this many iterations in one batch.
const MAX_ITERS: u64 = 1 << 40;
/// Batches in the perf counting pass of a sampled case.
pub const PERF_PASS_BATCHES: usize = 3;
/// Events per batch of a latency benchmark (and in its counting pass).
const EVENT_BATCH: u64 = 64;

/// How much to measure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Accepted samples wanted per case.
    pub samples: usize,
    /// Target duration of one sample.
    pub sample_time_ns: u64,
    /// Time spent running the benchmark unrecorded before sampling.
    pub warmup_ns: u64,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            samples: 11,
            sample_time_ns: 10_000_000,
            warmup_ns: 50_000_000,
        }
    }
}

/// One timed batch: `iters` iterations took `elapsed_ns` (clock difference, nothing subtracted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawSample {
    pub iters: u64,
    pub elapsed_ns: u64,
}

/// Measured costs of the measurement itself, subtracted from every sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// One clock read (subtracted once per sample).
    pub timer_ns: f64,
    /// One iteration of an empty loop (subtracted once per iteration).
    pub loop_ns_per_iter: f64,
}

impl Overhead {
    pub const ZERO: Overhead = Overhead {
        timer_ns: 0.0,
        loop_ns_per_iter: 0.0,
    };

    /// Measures both overheads with `clock`.
    pub fn measure(clock: &impl Clock) -> Self {
        let mut reads: Vec<f64> = (0..1001)
            .map(|_| {
                let t0 = clock.now_ns();
                let t1 = clock.now_ns();
                t1.saturating_sub(t0) as f64
            })
            .collect();
        reads.sort_by(f64::total_cmp);
        let timer_ns = reads[reads.len() / 2];

        const LOOP_ITERS: u64 = 1_000_000;
        let mut per_iter: Vec<f64> = (0..5)
            .map(|_| {
                let t0 = clock.now_ns();
                empty_loop(LOOP_ITERS);
                let t1 = clock.now_ns();
                (t1.saturating_sub(t0) as f64 - timer_ns).max(0.0) / LOOP_ITERS as f64
            })
            .collect();
        per_iter.sort_by(f64::total_cmp);
        Self {
            timer_ns,
            loop_ns_per_iter: per_iter[per_iter.len() / 2],
        }
    }
}

/// The loop every benchmark's `run` has around its operation, with nothing in it.
#[inline(never)]
fn empty_loop(iters: u64) {
    for i in 0..iters {
        black_box(i);
    }
}

/// Everything the harness measured for one case.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Accepted samples, in the order they were taken.
    pub accepted: Vec<RawSample>,
    /// Samples outside the acceptance window, in order.
    pub rejected: Vec<RawSample>,
    pub overhead: Overhead,
    /// Problems worth telling the user (too many rejections, …).
    pub warnings: Vec<String>,
    /// True when a signal stopped sampling early; `accepted` holds what was taken.
    pub interrupted: bool,
    /// What each accepted sample used (rusage, energy), same order as `accepted`.
    pub meters: Vec<MeterDelta>,
    /// The perf counting pass (only the first benchmark of an interleaved
    /// measurement, the case, gets one).
    pub perf: PerfPass,
}

impl Measurement {
    /// Nanoseconds per operation of each accepted sample, overheads subtracted.
    /// `ops_per_iter` converts iterations to the benchmark's operations.
    pub fn per_op_ns(&self, ops_per_iter: f64) -> Vec<f64> {
        self.accepted
            .iter()
            .map(|s| per_op_ns(*s, self.overhead, ops_per_iter))
            .collect()
    }
}

/// `(elapsed − timer − iters × loop) / iters / ops_per_iter`.
pub fn per_op_ns(s: RawSample, o: Overhead, ops_per_iter: f64) -> f64 {
    let n = s.iters as f64;
    (s.elapsed_ns as f64 - o.timer_ns - n * o.loop_ns_per_iter) / n / ops_per_iter
}

/// What a latency benchmark recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Events {
    /// One latency per event, in the order recorded.
    pub latencies_ns: Vec<u64>,
    /// CPU time all tasks of the case used while recording, if tracked.
    pub cpu_ns: Option<u64>,
    pub wall_ns: u64,
    pub interrupted: bool,
    /// What the whole recording used (rusage, energy).
    pub meters: MeterDelta,
    /// The perf counting pass: one more batch of events.
    pub perf: PerfPass,
}

/// Runs benchmarks under a [`Policy`] and a [`Clock`].
pub struct Harness<C: Clock = Monotonic> {
    clock: C,
    policy: Policy,
    overhead: Overhead,
    interrupt: Interrupt,
    meters: Meters,
}

impl Harness<Monotonic> {
    /// A harness on CLOCK_MONOTONIC; measures the overheads now.
    pub fn new(policy: Policy, interrupt: Interrupt) -> Self {
        let overhead = Overhead::measure(&Monotonic);
        Self::with_clock(Monotonic, policy, overhead, interrupt)
    }
}

impl<C: Clock> Harness<C> {
    pub fn with_clock(clock: C, policy: Policy, overhead: Overhead, interrupt: Interrupt) -> Self {
        Self {
            clock,
            policy,
            overhead,
            interrupt,
            meters: Meters::none(),
        }
    }

    /// This harness reading `meters` around every recorded sample.
    pub fn with_meters(mut self, meters: Meters) -> Self {
        self.meters = meters;
        self
    }

    pub fn meters(&self) -> &Meters {
        &self.meters
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn overhead(&self) -> Overhead {
        self.overhead
    }

    fn time(&self, bench: &mut dyn Benchmark, iters: u64) -> Result<u64> {
        let t0 = self.clock.now_ns();
        let ran = bench.run(iters);
        let t1 = self.clock.now_ns();
        self.unless_stopped(ran)?;
        Ok(t1.saturating_sub(t0))
    }

    /// An error after a stop was requested is the stop's doing (the signal
    /// handler kills helper processes, and their peers then fail): it is
    /// reported as `Interrupted`, so the samples taken so far are kept.
    fn unless_stopped<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(e) if !matches!(e, Error::Interrupted) && self.interrupt.is_set() => {
                Err(Error::Interrupted)
            }
            other => other,
        }
    }

    /// [`Self::time`] with the meters read just outside the two clock reads.
    /// The interrupt flag is checked after the first reading (which can take
    /// milliseconds with many live helpers), so a signal that arrived meanwhile
    /// is not left waiting behind a long blocking run.
    fn time_metered(&self, bench: &mut dyn Benchmark, iters: u64) -> Result<(u64, MeterDelta)> {
        let before = self.meters.snapshot(Edge::Before);
        self.interrupt.check()?;
        let elapsed = self.time(bench, iters)?;
        let after = self.meters.snapshot(Edge::After);
        Ok((elapsed, self.meters.delta(&before, &after)))
    }

    /// Runs `run` (which returns the iterations it ran) timed, with `perf`
    /// enabled just outside the clock reads and read outside that; disabled
    /// again even when `run` fails.
    fn counted(
        &self,
        perf: &PerfEvents,
        run: impl FnOnce() -> Result<u64>,
    ) -> Result<(RawSample, MeterDelta)> {
        let switch = |on: bool| {
            perf.set_enabled(on).map_err(|e| {
                let what = if on { "enabling" } else { "disabling" };
                Error::io(format!("{what} the perf counters of the counting pass"), e)
            })
        };
        let before = perf.read();
        switch(true)?;
        let t0 = self.clock.now_ns();
        let ran = run();
        let t1 = self.clock.now_ns();
        switch(false)?;
        let after = perf.read();
        let sample = RawSample {
            iters: ran?,
            elapsed_ns: t1.saturating_sub(t0),
        };
        let used = MeterDelta {
            counters: counters::delta(&before, &after),
            energy_j: None,
        };
        Ok((sample, used))
    }

    /// The counting pass when an interrupt came before it.
    fn pass_interrupted(&self) -> PerfPass {
        if self.meters.perf_names().is_empty() {
            return PerfPass::NotRun;
        }
        PerfPass::Skipped(
            "not counted: the case was interrupted before its perf counting pass".into(),
        )
    }

    /// The counting pass: opens the perf events on the case's tasks, makes
    /// up to `batches` calls of `batch` (each one [`Self::counted`] call),
    /// stopping early on an interrupt, and closes them. After an interrupt
    /// it opens nothing and says the case was not counted.
    fn perf_pass(
        &self,
        batches: usize,
        mut batch: impl FnMut(&PerfEvents) -> Result<(RawSample, MeterDelta)>,
    ) -> Result<PerfPass> {
        if self.meters.perf_names().is_empty() {
            return Ok(PerfPass::NotRun);
        }
        if self.interrupt.is_set() {
            return Ok(self.pass_interrupted());
        }
        let perf = match self.meters.open_perf() {
            Ok(perf) => perf,
            Err(e) => {
                return Ok(PerfPass::Skipped(format!(
                    "not counted: opening the perf events on the case's tasks failed: {e}"
                )));
            }
        };
        let (mut raw, mut deltas) = (Vec::new(), Vec::new());
        let mut failed = None;
        for _ in 0..batches {
            if self.interrupt.is_set() {
                break;
            }
            match batch(&perf) {
                // A batch of no events (never seen) has nothing to divide by.
                Ok((sample, _)) if sample.iters == 0 => {}
                Ok((sample, used)) => {
                    raw.push(sample);
                    deltas.push(used);
                }
                Err(Error::Interrupted) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.meters.close_perf(perf);
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(if raw.is_empty() {
            self.pass_interrupted()
        } else {
            PerfPass::Counted { raw, deltas }
        })
    }

    /// Calibrates, warms up and samples `bench` (already set up).
    pub fn measure(&self, bench: &mut dyn Benchmark) -> Result<Measurement> {
        let mut all = self.measure_interleaved(&mut [bench])?;
        Ok(all.remove(0))
    }

    /// Calibrates and warms up each benchmark in turn, then samples them
    /// alternately — one attempt each per round — so slow drift of the machine
    /// affects all of them alike (used for a case and the overhead subtracted
    /// from it). On an interrupt, each keeps the samples taken so far; if the
    /// first has none yet, the result is `Err(Interrupted)`.
    pub fn measure_interleaved(
        &self,
        benches: &mut [&mut dyn Benchmark],
    ) -> Result<Vec<Measurement>> {
        let target = self.policy.sample_time_ns as f64;
        let mut samplers = Vec::with_capacity(benches.len());
        for bench in benches.iter_mut() {
            let mut iters = self.calibrate(*bench, target)?;
            self.warm_up(|| {
                let elapsed = self.time(*bench, iters)?;
                iters = rescale(iters, elapsed, target);
                Ok(())
            })?;
            samplers.push(Sampler::new(iters, self.policy.samples));
        }

        let mut interrupted = false;
        'rounds: while samplers.iter().any(|s| !s.done()) {
            if self.interrupt.is_set() {
                interrupted = true;
                break;
            }
            for (bench, sampler) in benches.iter_mut().zip(samplers.iter_mut()) {
                if !sampler.done() {
                    match self.time_metered(*bench, sampler.iters) {
                        Ok((elapsed, used)) => sampler.record(elapsed, target, used),
                        // A benchmark that noticed the signal while blocked: keep what we have.
                        Err(Error::Interrupted) => {
                            interrupted = true;
                            break 'rounds;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        if interrupted && samplers[0].accepted.is_empty() {
            return Err(Error::Interrupted);
        }
        let iters = samplers[0].iters;
        let mut measured = samplers
            .into_iter()
            .map(|s| s.finish(target, interrupted, self.overhead))
            .collect::<Result<Vec<_>>>()?;
        let case = &mut *benches[0];
        measured[0].perf = self.perf_pass(PERF_PASS_BATCHES, |perf| {
            self.counted(perf, || case.run(iters).map(|()| iters))
        })?;
        Ok(measured)
    }

    /// Samples a benchmark whose every sample is one whole run (hackbench):
    /// `prepare()` untimed, then `run(1)` timed. Warm-up: untimed runs until
    /// the warm-up time has passed (so one run when a run is longer). No
    /// calibration and no acceptance window: a run lasts what it lasts.
    pub fn measure_runs(&self, bench: &mut dyn Benchmark) -> Result<Measurement> {
        self.warm_up(|| {
            bench.prepare()?;
            bench.run(1)
        })?;
        let mut sampler = Sampler::new(1, self.policy.samples);
        let mut interrupted = false;
        while sampler.accepted.len() < self.policy.samples {
            let outcome = self
                .interrupt
                .check()
                .and_then(|()| self.unless_stopped(bench.prepare()))
                .and_then(|()| self.time_metered(bench, 1));
            match outcome {
                Ok((elapsed, used)) => {
                    sampler.accepted.push(RawSample {
                        iters: 1,
                        elapsed_ns: elapsed,
                    });
                    sampler.meters.push(used);
                }
                Err(Error::Interrupted) => {
                    interrupted = true;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        let mut measured = sampler.finish(
            self.policy.sample_time_ns as f64,
            interrupted,
            self.overhead,
        )?;
        // One whole run: a run is long, and counts per run vary little.
        measured.perf = self.perf_pass(1, |perf| {
            self.interrupt.check()?;
            bench.prepare()?;
            self.counted(perf, || bench.run(1).map(|()| 1))
        })?;
        Ok(measured)
    }

    /// Records the single-event latencies of a latency benchmark: warm-up
    /// batches (discarded) for the warm-up time, then batches until `events`
    /// events are in, checking for an interrupt between batches. The
    /// benchmark timestamps each event itself with [`clock::monotonic_ns`];
    /// the harness adds the wall time and the CPU time the tasks used.
    pub fn measure_events(&self, bench: &mut dyn Benchmark, events: u64) -> Result<Events> {
        const BATCH: u64 = EVENT_BATCH;
        self.warm_up(|| bench.run(BATCH))?;
        bench.take_events();
        let cpu_before = bench.cpu_time_ns()?;
        let meters_before = self.meters.snapshot(Edge::Before);
        let t0 = self.clock.now_ns();
        let mut latencies_ns = Vec::with_capacity(events as usize);
        let mut interrupted = false;
        while (latencies_ns.len() as u64) < events {
            if self.interrupt.is_set() {
                interrupted = true;
                break;
            }
            match self
                .unless_stopped(bench.run(BATCH.min(events - latencies_ns.len() as u64).max(1)))
            {
                Ok(()) => latencies_ns.extend(bench.take_events()),
                Err(Error::Interrupted) => {
                    interrupted = true;
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        let wall_ns = self.clock.now_ns().saturating_sub(t0);
        let meters_after = self.meters.snapshot(Edge::After);
        latencies_ns.truncate(events as usize);
        let cpu_ns = match (cpu_before, bench.cpu_time_ns()?) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        if latencies_ns.is_empty() {
            return Err(if interrupted {
                Error::Interrupted
            } else {
                Error::Measure("no event was recorded".into())
            });
        }
        let meters = self.meters.delta(&meters_before, &meters_after);
        // One batch of events, not recorded as latencies: at tens of µs per
        // event it is over in milliseconds (one batch takes 64 × interval_us
        // for timers).
        let perf = self.perf_pass(1, |perf| {
            self.counted(perf, || {
                bench.run(BATCH)?;
                Ok(bench.take_events().len() as u64)
            })
        })?;
        Ok(Events {
            latencies_ns,
            cpu_ns,
            wall_ns,
            interrupted,
            meters,
            perf,
        })
    }

    /// Repeats `step`, unrecorded, until the warm-up time has passed (at least
    /// once unless the warm-up time is zero) and the kernel's perf hooks,
    /// left on for a while after the last counting pass, are off again
    /// ([`Meters::perf_hooks_on`]), stopping on an interrupt.
    fn warm_up(&self, mut step: impl FnMut() -> Result<()>) -> Result<()> {
        if self.policy.warmup_ns == 0 && !self.meters.perf_hooks_on() {
            return Ok(());
        }
        let start = self.clock.now_ns();
        loop {
            self.interrupt.check()?;
            self.unless_stopped(step())?;
            if self.clock.now_ns().saturating_sub(start) >= self.policy.warmup_ns
                && !self.meters.perf_hooks_on()
            {
                return Ok(());
            }
        }
    }

    /// Grows the iteration count from 1 until a batch takes at least
    /// `ACCEPT_LOW × target`, then scales it to the target.
    fn calibrate(&self, bench: &mut dyn Benchmark, target: f64) -> Result<u64> {
        let mut iters = 1u64;
        loop {
            self.interrupt.check()?;
            let elapsed = self.time(bench, iters)?;
            if elapsed as f64 >= ACCEPT_LOW * target {
                return Ok(rescale(iters, elapsed, target));
            }
            // Below 1/64 of the target a batch is too short to extrapolate from.
            iters = if (elapsed as f64) < target / 64.0 {
                iters * 8
            } else {
                rescale(iters, elapsed, target).max(iters + 1)
            };
            if iters > MAX_ITERS {
                return Err(Error::Measure(format!(
                    "{MAX_ITERS} iterations took under {:.1} ms; the operation is too cheap to time",
                    target / 1e6
                )));
            }
        }
    }
}

/// The sampling state of one benchmark.
struct Sampler {
    iters: u64,
    accepted: Vec<RawSample>,
    rejected: Vec<RawSample>,
    /// What each accepted sample used, same order.
    meters: Vec<MeterDelta>,
    long_in_a_row: u32,
    max_attempts: usize,
    wanted: usize,
}

impl Sampler {
    fn new(iters: u64, wanted: usize) -> Self {
        Self {
            iters,
            accepted: Vec::with_capacity(wanted),
            rejected: Vec::new(),
            meters: Vec::with_capacity(wanted),
            long_in_a_row: 0,
            max_attempts: wanted * 3 + 10,
            wanted,
        }
    }

    fn done(&self) -> bool {
        self.accepted.len() >= self.wanted
            || self.accepted.len() + self.rejected.len() >= self.max_attempts
    }

    /// Files one timed batch as accepted or rejected and re-sizes the batch:
    /// at once after a short one, after two long ones in a row (one long
    /// sample is usually an interruption, not a wrong count).
    fn record(&mut self, elapsed: u64, target: f64, used: MeterDelta) {
        let sample = RawSample {
            iters: self.iters,
            elapsed_ns: elapsed,
        };
        let ratio = elapsed as f64 / target;
        if (ACCEPT_LOW..=ACCEPT_HIGH).contains(&ratio) || (self.iters == 1 && ratio > ACCEPT_HIGH) {
            self.accepted.push(sample);
            self.meters.push(used);
            self.long_in_a_row = 0;
            return;
        }
        self.rejected.push(sample);
        if ratio < ACCEPT_LOW {
            self.iters = rescale(self.iters, elapsed, target);
        } else {
            self.long_in_a_row += 1;
            if self.long_in_a_row >= 2 {
                self.iters = rescale(self.iters, elapsed, target);
                self.long_in_a_row = 0;
            }
        }
    }

    fn finish(self, target: f64, interrupted: bool, overhead: Overhead) -> Result<Measurement> {
        let wanted = self.wanted;
        let mut warnings = Vec::new();
        let (taken, tried) = (
            self.accepted.len(),
            self.accepted.len() + self.rejected.len(),
        );
        if interrupted {
            warnings.push(format!("interrupted after {taken} of {wanted} samples"));
        } else if taken < wanted {
            warnings.push(format!(
                "only {taken} of {wanted} samples landed within {ACCEPT_LOW}–{ACCEPT_HIGH} × the {:.1} ms \
                 target after {tried} attempts; the system is too noisy for this sample time (try a \
                 longer --sample-time)",
                target / 1e6
            ));
        }
        if taken == 0 {
            return Err(if interrupted {
                Error::Interrupted
            } else {
                Error::Measure(warnings.join("; "))
            });
        }
        if !self.rejected.is_empty() && self.rejected.len() * 4 >= taken {
            warnings.push(format!(
                "{} of {tried} samples fell outside {ACCEPT_LOW}–{ACCEPT_HIGH} × the target time and \
                 were set aside (kept in the document as \"rejected\")",
                self.rejected.len()
            ));
        }
        Ok(Measurement {
            accepted: self.accepted,
            rejected: self.rejected,
            overhead,
            warnings,
            interrupted,
            meters: self.meters,
            perf: PerfPass::NotRun,
        })
    }
}

/// The iteration count that would make a batch of `iters` that took `elapsed` last `target`.
fn rescale(iters: u64, elapsed: u64, target: f64) -> u64 {
    let per_iter = elapsed.max(1) as f64 / iters as f64;
    ((target / per_iter).round() as u64).clamp(1, MAX_ITERS)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use super::counters::FakePerf;
    use super::*;

    /// A clock that only moves when the fake benchmark says so.
    #[derive(Clone, Default)]
    struct FakeClock(Rc<Cell<u64>>);

    impl Clock for FakeClock {
        fn now_ns(&self) -> u64 {
            self.0.get()
        }
    }

    /// Each iteration costs `cost_ns`; the batches listed in `spikes` (0-based
    /// count of run() calls) take `spike_factor` times longer.
    struct FakeBench {
        clock: FakeClock,
        cost_ns: u64,
        calls: usize,
        spikes: Vec<usize>,
        spike_factor: u64,
        iterations_run: u64,
        /// Shared record of which bench ran, in order.
        log: Rc<std::cell::RefCell<Vec<u64>>>,
        /// Sets this interrupt at this call.
        interrupt_at: Option<(usize, Interrupt)>,
        /// Causes one perf event per iteration and logs whether counting was on.
        perf: Option<Arc<FakePerf>>,
    }

    impl Benchmark for FakeBench {
        fn run(&mut self, iters: u64) -> Result<()> {
            let mut t = iters * self.cost_ns;
            if self.spikes.contains(&self.calls) {
                t *= self.spike_factor;
            }
            if let Some((_, flag)) = self
                .interrupt_at
                .as_ref()
                .filter(|(at, _)| *at == self.calls)
            {
                flag.set();
            }
            self.log.borrow_mut().push(self.cost_ns);
            if let Some(perf) = &self.perf {
                perf.add(iters);
                let on = perf.enabled.load(Ordering::SeqCst);
                let what = if on { "counted run" } else { "quiet run" };
                perf.log.lock().unwrap().push(what.into());
            }
            self.calls += 1;
            self.iterations_run += iters;
            self.clock.0.set(self.clock.0.get() + t);
            Ok(())
        }
    }

    fn setup(cost_ns: u64, spikes: Vec<usize>) -> (Harness<FakeClock>, FakeBench) {
        let clock = FakeClock::default();
        let policy = Policy {
            samples: 11,
            sample_time_ns: 1_000_000,
            warmup_ns: 3_000_000,
        };
        let overhead = Overhead {
            timer_ns: 20.0,
            loop_ns_per_iter: 0.5,
        };
        let bench = FakeBench {
            clock: clock.clone(),
            cost_ns,
            calls: 0,
            spikes,
            spike_factor: 3,
            iterations_run: 0,
            log: Rc::default(),
            interrupt_at: None,
            perf: None,
        };
        (
            Harness::with_clock(clock, policy, overhead, Interrupt::none()),
            bench,
        )
    }

    #[test]
    fn calibrates_to_the_target_and_subtracts_overheads() {
        let (h, mut b) = setup(100, vec![]);
        let m = h.measure(&mut b).unwrap();
        assert_eq!(m.accepted.len(), 11);
        assert!(m.rejected.is_empty());
        for s in &m.accepted {
            assert_eq!(s.iters, 10_000, "1 ms / 100 ns");
            assert_eq!(s.elapsed_ns, 1_000_000);
        }
        // (1e6 − 20 − 10 000 × 0.5) / 10 000 = 99.498
        for v in m.per_op_ns(1.0) {
            assert!((v - 99.498).abs() < 1e-9, "{v}");
        }
        // Per-op conversion for benchmarks with several operations per iteration.
        assert!((m.per_op_ns(2.0)[0] - 49.749).abs() < 1e-9);
    }

    #[test]
    fn long_samples_are_rejected_and_kept() {
        // Calls 0–4 calibrate (1, 8, 64, 512, 10 000 iterations), 5–7 warm up
        // (3 ms), sampling starts at call 8: spike two of the sampling batches.
        let (h, mut b) = setup(100, vec![10, 14]);
        let m = h.measure(&mut b).unwrap();
        assert_eq!(m.accepted.len(), 11);
        assert_eq!(m.rejected.len(), 2);
        assert_eq!(m.meters.len(), 11, "one meter reading per accepted sample");
        assert!(m.rejected.iter().all(|s| s.elapsed_ns == 3_000_000));
    }

    #[test]
    fn one_iteration_longer_than_the_target_is_accepted() {
        let (h, mut b) = setup(5_000_000, vec![]);
        let m = h.measure(&mut b).unwrap();
        assert_eq!(m.accepted.len(), 11);
        assert!(
            m.accepted
                .iter()
                .all(|s| s.iters == 1 && s.elapsed_ns == 5_000_000)
        );
    }

    #[test]
    fn warms_up_before_sampling() {
        let (h, mut b) = setup(100, vec![]);
        h.measure(&mut b).unwrap();
        // 11 samples of 10 000 plus at least 3 ms of warm-up (30 000 iterations).
        assert!(
            b.iterations_run >= 11 * 10_000 + 30_000,
            "{}",
            b.iterations_run
        );
    }

    #[test]
    fn persistent_noise_gives_up_with_a_warning() {
        let (h, mut b) = setup(100, (0..10_000).filter(|i| i % 2 == 0).collect());
        let m = h.measure(&mut b).unwrap();
        assert!(!m.rejected.is_empty());
        assert!(!m.warnings.is_empty(), "noise this heavy must be reported");
    }

    #[test]
    fn interrupt_stops_measuring() {
        let (h, mut b) = setup(100, vec![]);
        h.interrupt.set();
        assert!(matches!(h.measure(&mut b), Err(Error::Interrupted)));
    }

    #[test]
    fn interleaved_benches_alternate_once_sampling_starts() {
        let (h, mut a) = setup(100, vec![]);
        let mut b = FakeBench {
            cost_ns: 300,
            log: Rc::clone(&a.log),
            ..setup(300, vec![]).1
        };
        b.clock = a.clock.clone();
        let ms = h.measure_interleaved(&mut [&mut a, &mut b]).unwrap();
        assert_eq!(ms.len(), 2);
        assert!(ms.iter().all(|m| m.accepted.len() == 11));
        assert_eq!(ms[1].accepted[0].iters, 3_333, "1 ms / 300 ns");
        let log = a.log.borrow();
        let tail: Vec<u64> = log[log.len() - 22..].to_vec();
        assert_eq!(tail, [100, 300].repeat(11));
    }

    #[test]
    fn an_interrupt_keeps_the_samples_taken() {
        let (h, mut b) = setup(100, vec![]);
        // Calls 0–7 calibrate and warm up; sampling starts at call 8.
        b.interrupt_at = Some((12, h.interrupt.clone()));
        let m = h.measure(&mut b).unwrap();
        assert!(m.interrupted);
        assert_eq!(m.accepted.len(), 5);
        assert!(m.warnings[0].contains("interrupted after 5 of 11"));
    }

    /// Counts prepare() calls and costs 5 ms per run.
    struct FakeRuns {
        clock: FakeClock,
        prepared: u32,
        runs: u32,
    }

    impl Benchmark for FakeRuns {
        fn prepare(&mut self) -> Result<()> {
            self.prepared += 1;
            self.clock.0.set(self.clock.0.get() + 1_000_000_000); // untimed: must not count
            Ok(())
        }
        fn run(&mut self, iters: u64) -> Result<()> {
            assert_eq!(iters, 1);
            assert_eq!(self.prepared, self.runs + 1, "every run is prepared first");
            self.runs += 1;
            self.clock.0.set(self.clock.0.get() + 5_000_000);
            Ok(())
        }
    }

    #[test]
    fn whole_runs_are_prepared_untimed_and_timed_one_by_one() {
        let (h, _) = setup(100, vec![]);
        let clock = h.clock.clone();
        let mut b = FakeRuns {
            clock,
            prepared: 0,
            runs: 0,
        };
        let m = h.measure_runs(&mut b).unwrap();
        assert_eq!(m.accepted.len(), 11);
        assert!(m.accepted.iter().all(|s| *s
            == RawSample {
                iters: 1,
                elapsed_ns: 5_000_000
            }));
        // One warm-up run: the 3 ms warm-up is shorter than a run (prepare time is not counted
        // as warm-up either way, since the fake clock jumps a second per prepare).
        assert_eq!(b.runs, 12);
    }

    /// A harness whose only meter is a fake perf event, and a bench that drives it.
    fn setup_perf(cost_ns: u64) -> (Harness<FakeClock>, FakeBench, Arc<FakePerf>) {
        let (h, mut b) = setup(cost_ns, vec![]);
        let perf = Arc::new(FakePerf::default());
        b.perf = Some(Arc::clone(&perf));
        (
            h.with_meters(Meters::with_fake_perf(Arc::clone(&perf))),
            b,
            perf,
        )
    }

    #[test]
    fn timed_samples_run_with_no_perf_event_open_and_a_counting_pass_follows() {
        let (h, mut b, perf) = setup_perf(100);
        let m = h.measure(&mut b).unwrap();
        let log = perf.log.lock().unwrap().clone();
        // Calibration, warm-up and every timed sample: no perf event open.
        let open = log.iter().position(|e| e == "open").unwrap();
        assert!(log[..open].iter().all(|e| e == "quiet run"), "{log:?}");
        assert_eq!(open, b.calls - PERF_PASS_BATCHES);
        // Then the pass: opened once, each batch alone between enable and disable, closed.
        let pass = ["enable", "counted run", "disable"].repeat(PERF_PASS_BATCHES);
        assert_eq!(log[open + 1..log.len() - 1], pass);
        assert_eq!(log.last().unwrap(), "close");
        let PerfPass::Counted { raw, deltas } = &m.perf else {
            panic!("no counting pass: {:?}", m.perf);
        };
        assert_eq!(raw.len(), PERF_PASS_BATCHES);
        assert!(
            raw.iter()
                .all(|s| s.iters == 10_000 && s.elapsed_ns == 1_000_000)
        );
        assert!(
            deltas
                .iter()
                .all(|d| d.counters == [("context_switches", 10_000.0)])
        );
        // The timed samples read no perf counter.
        assert!(m.meters.iter().all(|d| d.counters.is_empty()));
    }

    #[test]
    fn an_interleaved_baseline_is_timed_quietly_and_not_counted() {
        let (h, mut a, perf) = setup_perf(100);
        let mut b = FakeBench {
            cost_ns: 300,
            log: Rc::clone(&a.log),
            perf: Some(Arc::clone(&perf)),
            ..setup(300, vec![]).1
        };
        b.clock = a.clock.clone();
        let ms = h.measure_interleaved(&mut [&mut a, &mut b]).unwrap();
        assert!(matches!(ms[0].perf, PerfPass::Counted { .. }));
        assert_eq!(ms[1].perf, PerfPass::NotRun);
        // The pass runs the case only, after both were sampled.
        let log = a.log.borrow();
        assert_eq!(
            log[log.len() - PERF_PASS_BATCHES..],
            [100; PERF_PASS_BATCHES]
        );
        let perf_log = perf.log.lock().unwrap();
        let counted = perf_log.iter().filter(|e| *e == "counted run").count();
        assert_eq!(counted, PERF_PASS_BATCHES);
    }

    #[test]
    fn an_interrupted_case_says_it_was_not_counted() {
        let (h, mut b, perf) = setup_perf(100);
        b.interrupt_at = Some((12, h.interrupt.clone()));
        let m = h.measure(&mut b).unwrap();
        assert!(m.interrupted);
        assert!(matches!(&m.perf, PerfPass::Skipped(why) if why.contains("interrupted")));
        assert!(!perf.log.lock().unwrap().iter().any(|e| e == "open"));
    }

    #[test]
    fn warm_up_lasts_until_the_perf_hooks_of_a_previous_pass_are_off() {
        let (mut h, mut b, _perf) = setup_perf(100);
        h.policy.warmup_ns = 0;
        h.meters
            .perf_closed_ago(meters::PERF_HOOKS_LINGER - std::time::Duration::from_millis(20));
        assert!(h.meters.perf_hooks_on());
        let m = h.measure(&mut b).unwrap();
        // Calibration (5 batches), then warm-up batches although no warm-up time
        // was asked for, then 11 samples and the 3 batches of the pass.
        assert!(b.calls > 5 + 11 + PERF_PASS_BATCHES, "{}", b.calls);
        assert_eq!(m.accepted.len(), 11);
    }

    #[test]
    fn without_perf_events_there_is_no_pass() {
        let (h, mut b) = setup(100, vec![]);
        assert_eq!(h.measure(&mut b).unwrap().perf, PerfPass::NotRun);
    }

    #[test]
    fn a_whole_run_is_counted_once_prepared_quietly() {
        let (h, _, perf) = setup_perf(100);
        struct Runs {
            clock: FakeClock,
            perf: Arc<FakePerf>,
        }
        impl Benchmark for Runs {
            fn prepare(&mut self) -> Result<()> {
                let on = self.perf.enabled.load(Ordering::SeqCst);
                assert!(!on, "prepare is never counted");
                Ok(())
            }
            fn run(&mut self, _: u64) -> Result<()> {
                self.perf.add(7);
                self.clock.0.set(self.clock.0.get() + 5_000_000);
                Ok(())
            }
        }
        let mut b = Runs {
            clock: h.clock.clone(),
            perf: Arc::clone(&perf),
        };
        let m = h.measure_runs(&mut b).unwrap();
        let PerfPass::Counted { raw, deltas } = &m.perf else {
            panic!("no counting pass: {:?}", m.perf);
        };
        assert_eq!(
            raw,
            &[RawSample {
                iters: 1,
                elapsed_ns: 5_000_000
            }]
        );
        assert_eq!(deltas[0].counters, [("context_switches", 7.0)]);
        assert_eq!(
            perf.count.load(Ordering::SeqCst),
            7,
            "timed runs were not counted"
        );
        let log = perf.log.lock().unwrap();
        assert_eq!(*log, ["open", "enable", "disable", "close"]);
    }

    #[test]
    fn real_overhead_is_small_and_non_negative() {
        let o = Overhead::measure(&Monotonic);
        assert!(o.timer_ns >= 0.0 && o.loop_ns_per_iter >= 0.0);
    }
}
