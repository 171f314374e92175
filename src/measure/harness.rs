//! The harness: runs a [`Workload`] between clock reads, with the meters
//! read around them. [`Harness::sample`] takes a workload and its
//! [`SampleMethod`] method ([`Harness::count`] runs the counting pass alone); the
//! module doc of `measure` describes the method. Left out: the bookkeeping of accepted and rejected samples
//! ([`super::sampler`]) and the overheads ([`super::overhead`]).

use std::cell::Cell;

use super::clock::{Clock, Monotonic};
use super::counters::{self, Edge, PerfEvents};
use super::interrupt::Interrupt;
use super::meters::{MeterDelta, Meters, PerfPass};
use super::sampler::{
    ACCEPT_LOW, MAX_ITERS, MAX_RAISES, Measurement, Sampler, SamplingEnd, rescale,
};
use super::workload::{RunReport, SampleMethod, Workload};
use crate::document::{Overhead, Policy, RawSample};
use crate::error::{Error, Result};

/// Batches in the perf counting pass of a sampled case.
pub const PERF_PASS_BATCHES: usize = 3;
/// Events per batch of a latency workload (and in its counting pass).
pub(super) const EVENT_BATCH: u64 = 64;

/// What a latency workload recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Events {
    /// One latency per event, in the order recorded.
    pub latencies_ns: Vec<u64>,
    /// CPU time all tasks of the case used while recording, if tracked.
    pub cpu_ns: Option<u64>,
    pub wall_ns: u64,
    /// How many events were asked for.
    pub wanted: u64,
    pub interrupted: bool,
    /// What the whole recording used (rusage, energy).
    pub meters: MeterDelta,
    /// The perf counting pass: one more batch of events.
    pub perf: PerfPass,
}

/// What [`Harness::sample`] measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    /// Batched or whole-run samples of the case, and of its stand-in if it had one.
    Samples {
        case: Measurement,
        stand_in: Option<Box<Measurement>>,
    },
    /// Single-event latencies.
    Events(Events),
}

/// Runs workloads under a [`Policy`] and a [`Clock`].
pub struct Harness<C: Clock = Monotonic> {
    clock: C,
    policy: Policy,
    overhead: Overhead,
    interrupt: Interrupt,
    meters: Meters,
    /// The counting pass is left to [`Harness::count`] (a run's, after its rounds).
    count_later: bool,
    /// Sample each case until its median's interval is this narrow (`--target-ci`).
    target: Option<Target>,
    /// How long the next case may sample for the target (set per case by the run).
    case_limit_ns: Cell<u64>,
}

/// A precision target for every case of a run without configurations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// The relative half-width of the median's 95 % interval to reach (0.01: ±1 %).
    pub ci: f64,
    /// The most samples one case takes.
    pub max_samples: usize,
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
            count_later: false,
            target: None,
            case_limit_ns: Cell::new(u64::MAX),
        }
    }

    /// This harness taking more samples of each batched or whole-run case,
    /// past the policy's count, until the 95 % interval of its median is
    /// within `target` or the case's time limit ([`Self::set_case_limit`]).
    pub fn with_target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }

    /// How long the next cases may sample (calibration and warm-up included) to reach the target.
    pub fn set_case_limit(&self, limit: std::time::Duration) {
        let ns = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
        self.case_limit_ns.set(ns);
    }

    pub fn target(&self) -> Option<Target> {
        self.target
    }

    /// This harness leaving the perf counting pass out of [`Self::sample`]
    /// (its measurements say [`PerfPass::Later`]): the caller counts each
    /// case once with [`Self::count`] when nothing more is timed, so the
    /// kernel's perf hooks, on for a second after a pass, slow no timed sample.
    pub fn counting_later(mut self) -> Self {
        self.count_later = true;
        self
    }

    /// This harness reading `meters` around every recorded sample.
    pub fn with_meters(mut self, meters: Meters) -> Self {
        self.meters = meters;
        self
    }

    pub fn meters(&self) -> &Meters {
        &self.meters
    }

    pub fn clock(&self) -> &C {
        &self.clock
    }

    pub fn interrupt(&self) -> &Interrupt {
        &self.interrupt
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    pub fn overhead(&self) -> Overhead {
        self.overhead
    }

    pub(super) fn time(&self, bench: &mut dyn Workload, iters: u64) -> Result<u64> {
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
    fn time_metered(&self, bench: &mut dyn Workload, iters: u64) -> Result<(u64, MeterDelta)> {
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
        perf: &dyn PerfEvents,
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
        let counted = counters::perf_delta(&before, &after);
        let used = MeterDelta {
            counters: counted.counters,
            energy_j: None,
            perf_running: counted.running,
        };
        Ok((sample, used))
    }

    /// The counting pass when an interrupt came before it.
    fn pass_interrupted(&self) -> PerfPass {
        self.pass_cut_short("the case was interrupted")
    }

    /// The perf pass of a case cut short (`why`) before it.
    fn pass_cut_short(&self, why: &str) -> PerfPass {
        if self.meters.perf_names().is_empty() {
            return PerfPass::NotRun;
        }
        PerfPass::Skipped(format!("not counted: {why} before its perf counting pass"))
    }

    /// The counting pass: opens the perf events on the case's tasks, makes
    /// up to `batches` calls of `batch` (each one [`Self::counted`] call),
    /// stopping early on an interrupt, and closes them. After an interrupt
    /// it opens nothing and says the case was not counted.
    fn perf_pass(
        &self,
        batches: usize,
        mut batch: impl FnMut(&dyn PerfEvents) -> Result<(RawSample, MeterDelta)>,
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
            match batch(&*perf) {
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

    /// Measures `workload` (already set up) by the `how` method: calibrated
    /// batches (with the stand-in sampled alternately), whole runs, or events.
    pub fn sample(&self, workload: &mut dyn Workload, how: SampleMethod) -> Result<Measured> {
        match how {
            SampleMethod::Batched {
                stand_in,
                ops_per_iter,
                own_loop,
            } => {
                let overhead = self.overhead.for_loop(own_loop);
                // The case first; a failed case's stand-in may be missing.
                let mut all = match stand_in {
                    None => self.batched(&mut [workload], ops_per_iter, overhead)?,
                    Some(s) => self.batched(&mut [workload, s], ops_per_iter, overhead)?,
                };
                let stand_in = (all.len() > 1).then(|| Box::new(all.remove(1)));
                Ok(Measured::Samples {
                    case: all.remove(0),
                    stand_in,
                })
            }
            SampleMethod::WholeRuns { samples } => Ok(Measured::Samples {
                case: self.whole_runs(workload, samples.unwrap_or(self.policy.samples))?,
                stand_in: None,
            }),
            SampleMethod::Events(count) => Ok(Measured::Events(self.events(workload, count)?)),
        }
    }

    /// Calibrates and warms up each workload in turn, then samples them
    /// alternately — one attempt each per round — so slow drift of the machine
    /// affects all of them alike (a case, then its stand-in). On an
    /// interrupt, each keeps the samples taken so far; if the first has none
    /// yet, the result is `Err(Interrupted)`. With a precision target, all
    /// take more samples until the case's interval (`ops_per_iter`
    /// operations per iteration, less its stand-in) is narrow enough.
    /// `overhead` is what each sample has subtracted.
    fn batched(
        &self,
        benches: &mut [&mut dyn Workload],
        ops_per_iter: f64,
        overhead: Overhead,
    ) -> Result<Vec<Measurement>> {
        let started = self.clock.now_ns();
        let target = self.policy.sample_time_ns as f64;
        let mut raises = 0;
        let mut samplers = Vec::with_capacity(benches.len());
        for bench in benches.iter_mut() {
            let mut iters = self.calibrate(*bench, target)?;
            self.warm_up(|| {
                let elapsed = self.time(*bench, iters)?;
                iters = rescale(iters, elapsed, target);
                Ok(())
            })?;
            samplers.push(Sampler::new(
                iters,
                self.policy.samples,
                target,
                bench.batches_in_turn(),
            ));
        }
        let (end, failure, stopped_by) = loop {
            match self.sample_alternately(benches, &mut samplers) {
                Ok(true) => break (SamplingEnd::Interrupted, None, None),
                // None landed in the window: try again with longer samples.
                Ok(false) if raises < MAX_RAISES && samplers.iter().any(Sampler::none_landed) => {
                    samplers
                        .iter_mut()
                        .filter(|s| s.none_landed())
                        .for_each(Sampler::raise_target);
                    raises += 1;
                    continue;
                }
                Ok(false) => {}
                // Failed after some samples: keep them, and stop the run with the error.
                Err(e) if !samplers[0].accepted.is_empty() && !matches!(e, Error::Interrupted) => {
                    break (SamplingEnd::Failed, Some(e), None);
                }
                Err(e) => return Err(e),
            }
            let values = self.target_values(&samplers, ops_per_iter, overhead);
            match self.more_wanted(&values, started) {
                Some(Ok(extra)) => samplers.iter_mut().for_each(|s| s.want_more(extra)),
                Some(Err(why)) => break (SamplingEnd::Planned, None, Some(why)),
                None => break (SamplingEnd::Planned, None, None),
            }
        };
        if end == SamplingEnd::Interrupted && samplers[0].accepted.is_empty() {
            return Err(Error::Interrupted);
        }
        if failure.is_some() {
            // A stand-in without samples is dropped rather than lose the case's.
            samplers.retain(|s| !s.accepted.is_empty());
        }
        let iters = samplers[0].iters;
        let mut measured = samplers
            .into_iter()
            .map(|s| s.finish(end, overhead))
            .collect::<Result<Vec<_>>>()?;
        measured[0].target_stop = stopped_by;
        measured[0].perf = if let Some(e) = failure {
            measured[0].failed = Some(e.to_string());
            self.pass_cut_short("the case failed")
        } else if self.count_later && self.meters.perf_wanted() {
            PerfPass::Later
        } else {
            self.batch_pass(&mut *benches[0], iters)?
        };
        Ok(measured)
    }

    /// Times one attempt of each workload whose sampler is not done, in
    /// turn, until all are; true when an interrupt stopped it (the samples
    /// taken are kept).
    fn sample_alternately(
        &self,
        benches: &mut [&mut dyn Workload],
        samplers: &mut [Sampler],
    ) -> Result<bool> {
        while samplers.iter().any(|s| !s.done()) {
            if self.interrupt.is_set() {
                return Ok(true);
            }
            for (bench, sampler) in benches.iter_mut().zip(samplers.iter_mut()) {
                if !sampler.done() {
                    match self.time_metered(*bench, sampler.iters) {
                        Ok((elapsed, used)) => {
                            sampler.record(elapsed, bench.completed(sampler.iters), used);
                        }
                        // A workload that noticed the signal while blocked: keep what we have.
                        Err(Error::Interrupted) => return Ok(true),
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(false)
    }

    /// The case's per-operation times so far (ns), `overhead` and its
    /// stand-in's median subtracted, as the series will hold them; empty
    /// without a precision target.
    fn target_values(
        &self,
        samplers: &[Sampler],
        ops_per_iter: f64,
        overhead: Overhead,
    ) -> Vec<f64> {
        if self.target.is_none() {
            return Vec::new();
        }
        let per_op = |s: &Sampler, ops: f64| -> Vec<f64> {
            s.accepted
                .iter()
                .map(|r| super::per_op_ns(*r, overhead, ops))
                .collect()
        };
        let subtract = match samplers.get(1) {
            Some(stand_in) if !stand_in.accepted.is_empty() => {
                crate::stats::summary::median(&per_op(stand_in, 1.0))
            }
            _ => 0.0,
        };
        per_op(&samplers[0], ops_per_iter)
            .into_iter()
            .map(|v| v - subtract)
            .collect()
    }

    /// With a precision target: `None` without one; `Ok(n)` to take n more
    /// samples (the interval narrows as 1/√n: up to what that predicts,
    /// between a fifth more and twice as many, and no more than fit in the
    /// case's time left); `Err(why)` when the target is reached or the
    /// case's time or sample limit stops it.
    fn more_wanted(
        &self,
        values: &[f64],
        started: u64,
    ) -> Option<std::result::Result<usize, String>> {
        let target = self.target?;
        let n = values.len();
        let half = relative_half_width(values);
        let pct = |x: f64| format!("±{:.2}%", x * 100.0);
        if half <= target.ci {
            return Some(Err(format!("reached {} with {n} samples", pct(half))));
        }
        let elapsed = self.clock.now_ns().saturating_sub(started);
        if elapsed >= self.case_limit_ns.get() {
            return Some(Err(format!(
                "stopped on the time limit ({:.1} s) at {} with {n} samples",
                self.case_limit_ns.get() as f64 / 1e9,
                pct(half)
            )));
        }
        if n >= target.max_samples {
            return Some(Err(format!(
                "stopped on the sample limit ({}) at {}",
                target.max_samples,
                pct(half)
            )));
        }
        let predicted = (n as f64 * (half / target.ci).powi(2)).ceil() as usize;
        let extra = predicted.saturating_sub(n).clamp((n / 5).max(5), n.max(5));
        // No more than fit in the time left at the pace so far (a stand-in's turns included).
        let left = self.case_limit_ns.get() - elapsed;
        let fit = (left as f64 / (elapsed as f64 / n.max(1) as f64)).ceil() as usize;
        Some(Ok(extra.min(fit.max(1)).min(target.max_samples - n)))
    }

    /// One sample of whole runs: `runs` runs, each prepared untimed and
    /// then timed, their times and meters summed; or one run's own report
    /// (a workload that times its own runs takes one run a sample).
    fn prepared_runs(
        &self,
        bench: &mut dyn Workload,
        runs: u64,
    ) -> Result<(RawSample, MeterDelta, Option<RunReport>)> {
        let mut sample = RawSample {
            iters: runs,
            elapsed_ns: 0,
        };
        let mut used = MeterDelta::default();
        for _ in 0..runs {
            self.interrupt.check()?;
            self.unless_stopped(bench.prepare())?;
            let (elapsed, run_used) = self.time_metered(bench, 1)?;
            if let Some(report) = bench.run_report() {
                if runs > 1 {
                    return Err(Error::Measure(format!(
                        "a workload that reports its own runs takes one run a sample, not {runs}"
                    )));
                }
                sample.elapsed_ns = report.value_ns;
                return Ok((sample, run_used, Some(report)));
            }
            sample.elapsed_ns += elapsed;
            used.accumulate(run_used);
        }
        Ok((sample, used, None))
    }

    /// Samples a workload whose every sample is whole runs
    /// ([`Workload::runs_per_sample`], one unless the workload says):
    /// `prepare()` untimed, then `run(1)` timed. Warm-up: untimed runs until
    /// the warm-up time has passed (so one run when a run is longer). No
    /// calibration and no acceptance window: a run lasts what it lasts.
    fn whole_runs(&self, bench: &mut dyn Workload, samples: usize) -> Result<Measurement> {
        let started = self.clock.now_ns();
        self.warm_up(|| {
            bench.prepare()?;
            bench.run(1)
        })?;
        let runs = bench.runs_per_sample().max(1);
        let mut sampler = Sampler::new(runs, samples, self.policy.sample_time_ns as f64, 1);
        let (mut end, mut failure) = (SamplingEnd::Planned, None);
        let mut wanted = samples;
        let mut stopped_by = None;
        let mut reports = Vec::new();
        loop {
            if sampler.accepted.len() >= wanted {
                let values = self.target_values(std::slice::from_ref(&sampler), 1.0, self.overhead);
                match self.more_wanted(&values, started) {
                    Some(Ok(extra)) => wanted += extra,
                    Some(Err(why)) => {
                        stopped_by = Some(why);
                        break;
                    }
                    None => break,
                }
            }
            match self.prepared_runs(bench, runs) {
                Ok((sample, used, report)) => {
                    reports.extend(report);
                    sampler.accepted.push(sample);
                    sampler.meters.push(used);
                }
                Err(Error::Interrupted) => {
                    end = SamplingEnd::Interrupted;
                    break;
                }
                // Failed after some runs: keep them, and stop the run with the error.
                Err(e) if !sampler.accepted.is_empty() => {
                    end = SamplingEnd::Failed;
                    failure = Some(e);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
        sampler.want_more(wanted - samples);
        let overhead = if reports.is_empty() {
            // Each run was timed by its own pair of clock reads.
            Overhead {
                timer_ns: self.overhead.timer_ns * runs as f64,
                ..self.overhead
            }
        } else {
            // The runs read their own clocks: nothing of ours to subtract.
            Overhead::ZERO
        };
        let mut measured = sampler.finish(end, overhead)?;
        measured.target_stop = stopped_by;
        add_run_reports(&mut measured, reports);
        measured.perf = if let Some(e) = failure {
            measured.failed = Some(e.to_string());
            self.pass_cut_short("the case failed")
        } else if self.count_later && self.meters.perf_wanted() {
            PerfPass::Later
        } else {
            self.whole_run_pass(bench)?
        };
        Ok(measured)
    }

    /// Records the single-event latencies of a latency workload: warm-up
    /// batches (discarded) for the warm-up time, then batches until `events`
    /// events are in, checking for an interrupt between batches. The
    /// workload timestamps each event itself with [`super::clock::monotonic_ns`];
    /// the harness adds the wall time and the CPU time the tasks used.
    fn events(&self, bench: &mut dyn Workload, events: u64) -> Result<Events> {
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
        let perf = if self.count_later && self.meters.perf_wanted() {
            PerfPass::Later
        } else {
            self.event_pass(bench)?
        };
        Ok(Events {
            latencies_ns,
            cpu_ns,
            wall_ns,
            wanted: events,
            interrupted,
            meters,
            perf,
        })
    }

    /// Repeats `step`, unrecorded, until the warm-up time has passed (at least
    /// once unless the warm-up time is zero) and the kernel's perf hooks,
    /// left on for a while after the last counting pass, are off again
    /// ([`Meters::perf_hooks_on`]), stopping on an interrupt.
    fn warm_up(&self, step: impl FnMut() -> Result<()>) -> Result<()> {
        self.warm_up_until(step, || self.meters.perf_hooks_on())
    }

    /// [`Self::warm_up`] going on while `hooks_on()` says the perf hooks are on.
    pub(super) fn warm_up_until(
        &self,
        mut step: impl FnMut() -> Result<()>,
        hooks_on: impl Fn() -> bool,
    ) -> Result<()> {
        if self.policy.warmup_ns == 0 && !hooks_on() {
            return Ok(());
        }
        let start = self.clock.now_ns();
        loop {
            self.interrupt.check()?;
            self.unless_stopped(step())?;
            if self.clock.now_ns().saturating_sub(start) >= self.policy.warmup_ns && !hooks_on() {
                return Ok(());
            }
        }
    }

    /// The counting pass of a batched case: [`PERF_PASS_BATCHES`] batches of
    /// `iters`, each credited what the workload completed.
    fn batch_pass(&self, case: &mut dyn Workload, iters: u64) -> Result<PerfPass> {
        self.perf_pass(PERF_PASS_BATCHES, |perf| {
            self.counted(perf, || case.run(iters).map(|()| case.completed(iters)))
        })
    }

    /// The counting pass of a whole-run case: one whole run (a run is long,
    /// and counts per run vary little), prepared uncounted.
    fn whole_run_pass(&self, bench: &mut dyn Workload) -> Result<PerfPass> {
        self.perf_pass(1, |perf| {
            self.interrupt.check()?;
            bench.prepare()?;
            self.counted(perf, || bench.run(1).map(|()| 1))
        })
    }

    /// The counting pass of a latency case: one batch of events, not recorded
    /// as latencies (at tens of µs per event it is over in milliseconds; one
    /// batch takes 64 × interval_us for timers).
    fn event_pass(&self, bench: &mut dyn Workload) -> Result<PerfPass> {
        self.perf_pass(1, |perf| {
            self.counted(perf, || {
                bench.run(EVENT_BATCH)?;
                Ok(bench.take_events().len() as u64)
            })
        })
    }

    /// The counting pass alone, for a run that counts each case once after
    /// its rounds ([`Self::counting_later`]): `workload` (set up; a batched
    /// one's stand-in is not counted) is calibrated if batched and warmed up
    /// for the warm-up time — not waiting for the perf hooks to go off, since
    /// nothing timed here is kept — then counted as [`Self::sample`] would.
    /// An interrupt before or during it gives [`PerfPass::Skipped`].
    pub fn count(&self, workload: &mut dyn Workload, how: SampleMethod) -> Result<PerfPass> {
        if self.meters.perf_names().is_empty() {
            return Ok(PerfPass::NotRun);
        }
        let counted = match how {
            SampleMethod::Batched { .. } => {
                let target = self.policy.sample_time_ns as f64;
                let mut iters = self.calibrate(workload, target)?;
                let warm = || -> Result<()> {
                    let elapsed = self.time(workload, iters)?;
                    iters = rescale(iters, elapsed, target);
                    Ok(())
                };
                self.warm_up_until(warm, || false)
                    .and_then(|()| self.batch_pass(workload, iters))
            }
            SampleMethod::WholeRuns { .. } => self
                .warm_up_until(
                    || workload.prepare().and_then(|()| workload.run(1)),
                    || false,
                )
                .and_then(|()| self.whole_run_pass(workload)),
            SampleMethod::Events(_) => self
                .warm_up_until(|| workload.run(EVENT_BATCH), || false)
                .and_then(|()| {
                    workload.take_events();
                    self.event_pass(workload)
                }),
        };
        match counted {
            Err(Error::Interrupted) => Ok(self.pass_interrupted()),
            other => other,
        }
    }

    /// Grows the iteration count from 1 until a batch takes at least
    /// `ACCEPT_LOW × target`, then scales it to the target.
    pub(super) fn calibrate(&self, bench: &mut dyn Workload, target: f64) -> Result<u64> {
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

/// Half the width of the 95 % interval of the median of `values`, relative
/// to the median (infinite with no values or a zero median).
fn relative_half_width(values: &[f64]) -> f64 {
    match crate::stats::summarize(values) {
        Some(s) if s.median != 0.0 => (s.ci_high - s.ci_low) / 2.0 / s.median.abs(),
        _ => f64::INFINITY,
    }
}

/// Keeps what self-measuring whole runs reported: each statistic as a
/// counter (one value per sample, kept only when every run reported it) and
/// each distinct warning once.
fn add_run_reports(measured: &mut Measurement, reports: Vec<RunReport>) {
    let runs = reports.len();
    for report in reports {
        for (name, value) in report.counters {
            measured
                .run_counters
                .entry(name.to_string())
                .or_default()
                .push(value);
        }
        if let Some(w) = report.warning
            && !measured.warnings.contains(&w)
        {
            measured.warnings.push(w);
        }
    }
    measured
        .run_counters
        .retain(|_, values| values.len() == runs);
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::measure::fake::{FakeClock, FakePerf, FakeSource};

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
        /// Each call's iterations cost `cost_ns` plus 0..=jitter ns more, in a
        /// cycle (7 × call mod (jitter + 1)): noise inside the acceptance window.
        jitter: u64,
        /// The calls in this range take `stall_ns` longer (a preemption).
        stalled: std::ops::Range<usize>,
        stall_ns: u64,
        /// What `batches_in_turn` says.
        turn: usize,
    }

    impl Workload for FakeBench {
        fn batches_in_turn(&self) -> usize {
            self.turn
        }

        fn run(&mut self, iters: u64) -> Result<()> {
            let extra = (self.calls as u64 * 7) % (self.jitter + 1);
            let mut t = iters * (self.cost_ns + extra);
            if self.spikes.contains(&self.calls) {
                t *= self.spike_factor;
            }
            if self.stalled.contains(&self.calls) {
                t += self.stall_ns;
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

    /// `b`'s measurement, batched alone with the harness's overheads.
    fn sample_one(h: &Harness<FakeClock>, b: &mut dyn Workload) -> Measurement {
        h.batched(&mut [b], 1.0, h.overhead()).unwrap().remove(0)
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
            jitter: 0,
            stalled: 0..0,
            stall_ns: 0,
            turn: 1,
        };
        (
            Harness::with_clock(clock, policy, overhead, Interrupt::none()),
            bench,
        )
    }

    #[test]
    fn a_workload_taking_batches_in_turn_is_sampled_in_whole_turns() {
        let (h, mut b) = setup(100, vec![]);
        b.turn = 4;
        // 11 samples asked, rounded up to three turns of four.
        assert_eq!(sample_one(&h, &mut b).accepted.len(), 12);
        let (h, mut b) = setup(100, vec![]);
        b.turn = 16;
        assert_eq!(sample_one(&h, &mut b).accepted.len(), 16);
    }

    #[test]
    fn calibrates_to_the_target_and_subtracts_overheads() {
        let (h, mut b) = setup(100, vec![]);
        let m = sample_one(&h, &mut b);
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
    fn a_sample_is_credited_the_iterations_the_workload_completed() {
        /// Copies that count a tenth past what was asked before the
        /// timing thread sees the window complete.
        struct CountsOn(FakeBench);
        impl Workload for CountsOn {
            fn run(&mut self, iters: u64) -> Result<()> {
                self.0.run(iters)
            }
            fn completed(&self, asked: u64) -> u64 {
                asked + asked / 10
            }
        }
        let (h, b) = setup(100, vec![]);
        let mut b = CountsOn(b);
        let m = sample_one(&h, &mut b);
        assert_eq!(m.accepted.len(), 11);
        assert!(
            m.accepted.iter().all(|s| s.iters == 11_000),
            "{:?}",
            m.accepted
        );
        // (1e6 − 20 − 11 000 × 0.5) / 11 000: the time over what was counted.
        for v in m.per_op_ns(1.0) {
            assert!((v - 994_480.0 / 11_000.0).abs() < 1e-9, "{v}");
        }
    }

    #[test]
    fn a_case_with_its_own_loop_has_only_the_clock_read_subtracted() {
        let (h, mut b) = setup(100, vec![]);
        let how = SampleMethod::Batched {
            stand_in: None,
            ops_per_iter: 1.0,
            own_loop: true,
        };
        let Measured::Samples { case: m, .. } = h.sample(&mut b, how).unwrap() else {
            panic!("batched sampling gives samples");
        };
        assert_eq!(m.overhead.loop_ns_per_iter, 0.0);
        assert_eq!(m.overhead.timer_ns, 20.0);
        // (1e6 − 20) / 10 000 = 99.998: the loop's 0.5 ns stays in.
        for v in m.per_op_ns(1.0) {
            assert!((v - 99.998).abs() < 1e-9, "{v}");
        }
    }

    #[test]
    fn long_samples_are_rejected_and_kept() {
        // Calls 0–4 calibrate (1, 8, 64, 512, 10 000 iterations), 5–7 warm up
        // (3 ms), sampling starts at call 8: spike two of the sampling batches.
        let (h, mut b) = setup(100, vec![10, 14]);
        let m = sample_one(&h, &mut b);
        assert_eq!(m.accepted.len(), 11);
        assert_eq!(m.rejected.len(), 2);
        assert_eq!(m.meters.len(), 11, "one meter reading per accepted sample");
        assert!(m.rejected.iter().all(|s| s.elapsed_ns == 3_000_000));
    }

    #[test]
    fn when_no_sample_lands_the_target_is_raised_and_said() {
        // Calls 8–26, the whole first budget of 19 attempts for 3 samples,
        // each stall 2 ms: none lands near 1 ms; at 4 ms all do.
        let (mut h, mut b) = setup(100, vec![]);
        h.policy.samples = 3;
        (b.stalled, b.stall_ns) = (8..27, 2_000_000);
        let m = sample_one(&h, &mut b);
        assert_eq!(
            m.rejected.len(),
            20,
            "19 stalled, one short after the raise"
        );
        assert_eq!(m.accepted.len(), 3);
        assert!(m.accepted.iter().all(|s| s.elapsed_ns == 4_000_000));
        assert!(
            m.warnings[0].starts_with(
                "none of 19 samples landed within 0.9–1.5 × the 1.0 ms target; sampled again \
                 with a 4.0 ms target"
            ),
            "{:?}",
            m.warnings
        );
        // Without a stall nothing is raised.
        let (h, mut b) = setup(100, vec![]);
        let m = h
            .batched(&mut [&mut b], 1.0, h.overhead())
            .unwrap()
            .remove(0);
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    }

    #[test]
    fn one_iteration_longer_than_the_target_is_accepted() {
        let (h, mut b) = setup(5_000_000, vec![]);
        let m = sample_one(&h, &mut b);
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
        h.batched(&mut [&mut b], 1.0, h.overhead())
            .map(|mut m| m.remove(0))
            .unwrap();
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
        let m = sample_one(&h, &mut b);
        assert!(!m.rejected.is_empty());
        assert!(!m.warnings.is_empty(), "noise this heavy must be reported");
    }

    #[test]
    fn interrupt_stops_measuring() {
        let (h, mut b) = setup(100, vec![]);
        h.interrupt.set();
        assert!(matches!(
            h.batched(&mut [&mut b], 1.0, h.overhead())
                .map(|mut m| m.remove(0)),
            Err(Error::Interrupted)
        ));
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
        let ms = h.batched(&mut [&mut a, &mut b], 1.0, h.overhead()).unwrap();
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
        let m = sample_one(&h, &mut b);
        assert!(m.interrupted);
        assert_eq!(m.accepted.len(), 5);
        assert!(m.warnings[0].contains("interrupted after 5 of 11"));
    }

    /// A fake bench whose run fails from call `fail_at` on (a disk filling up).
    struct FailsAt(FakeBench, usize);

    impl Workload for FailsAt {
        fn run(&mut self, iters: u64) -> Result<()> {
            if self.0.calls >= self.1 {
                return Err(Error::Measure("fs: the filesystem is full".into()));
            }
            self.0.run(iters)
        }
    }

    #[test]
    fn a_case_failing_after_some_samples_keeps_them_and_names_the_error() {
        let (h, b) = setup(100, vec![]);
        let mut failing = FailsAt(b, 12);
        let m = h
            .batched(&mut [&mut failing], 1.0, h.overhead())
            .map(|mut m| m.remove(0))
            .unwrap();
        assert!(!m.interrupted);
        assert_eq!(m.failed.as_deref(), Some("fs: the filesystem is full"));
        assert!(!m.accepted.is_empty() && m.accepted.len() < 11);
        assert!(
            m.warnings[0].contains("stopped by an error after"),
            "{:?}",
            m.warnings
        );
        // Before any sample, the error is the result.
        let (h, b) = setup(100, vec![]);
        let e = h
            .batched(&mut [&mut FailsAt(b, 3)], 1.0, h.overhead())
            .unwrap_err();
        assert!(e.to_string().contains("full"), "{e}");
    }

    #[test]
    fn whole_runs_failing_after_some_keep_them() {
        let (mut h, b) = setup(100, vec![]);
        h.policy.warmup_ns = 0;
        let mut failing = FailsAt(b, 5);
        let m = h.whole_runs(&mut failing, h.policy.samples).unwrap();
        assert_eq!(m.failed.as_deref(), Some("fs: the filesystem is full"));
        assert!(!m.accepted.is_empty() && m.accepted.len() < 11);
    }

    /// Whole runs costing `costs_ns` in turn (5 ms each by [`FakeRuns::new`];
    /// 3 and 7 ms are two kinds of run, as fault's random orders), counting
    /// prepare() calls, `per_sample` of them a sample, optionally reporting
    /// their own values.
    struct FakeRuns {
        clock: FakeClock,
        prepared: u32,
        runs: u32,
        costs_ns: &'static [u64],
        per_sample: u64,
        reports: bool,
    }

    impl FakeRuns {
        fn new(clock: &FakeClock) -> Self {
            Self {
                clock: clock.clone(),
                prepared: 0,
                runs: 0,
                costs_ns: &[5_000_000],
                per_sample: 1,
                reports: false,
            }
        }
    }

    impl Workload for FakeRuns {
        fn prepare(&mut self) -> Result<()> {
            self.prepared += 1;
            self.clock.0.set(self.clock.0.get() + 1_000_000_000); // untimed: must not count
            Ok(())
        }
        fn run(&mut self, iters: u64) -> Result<()> {
            assert_eq!(iters, 1);
            assert_eq!(self.prepared, self.runs + 1, "every run is prepared first");
            let cost = self.costs_ns[self.runs as usize % self.costs_ns.len()];
            self.runs += 1;
            self.clock.0.set(self.clock.0.get() + cost);
            Ok(())
        }
        fn runs_per_sample(&self) -> u64 {
            self.per_sample
        }
        fn run_report(&mut self) -> Option<RunReport> {
            self.reports.then(RunReport::default)
        }
    }

    /// A whole run that reports its own value: the run's number × 1000 ns,
    /// a counter, and a warning every run repeats.
    struct SelfMeasured {
        clock: FakeClock,
        runs: u32,
    }

    impl Workload for SelfMeasured {
        fn run(&mut self, _iters: u64) -> Result<()> {
            self.runs += 1;
            self.clock.0.set(self.clock.0.get() + 5_000_000);
            Ok(())
        }
        fn run_report(&mut self) -> Option<RunReport> {
            Some(RunReport {
                value_ns: u64::from(self.runs) * 1000,
                counters: vec![("events", f64::from(self.runs) * 10.0)],
                warning: Some("ran at the best rate".into()),
            })
        }
    }

    #[test]
    fn whole_runs_reporting_themselves_give_their_values_counters_and_one_warning() {
        let (h, _) = setup(100, vec![]);
        let mut b = SelfMeasured {
            clock: h.clock.clone(),
            runs: 0,
        };
        let m = h.whole_runs(&mut b, 3).unwrap();
        // One warm-up run (not reported), then runs 2, 3 and 4.
        let values: Vec<u64> = m.accepted.iter().map(|s| s.elapsed_ns).collect();
        assert_eq!(values, [2000, 3000, 4000]);
        assert_eq!(
            m.per_op_ns(1.0),
            [2000.0, 3000.0, 4000.0],
            "nothing subtracted"
        );
        assert_eq!(m.run_counters["events"], [20.0, 30.0, 40.0]);
        let said = m.warnings.iter().filter(|w| *w == "ran at the best rate");
        assert_eq!(said.count(), 1);
    }

    #[test]
    fn whole_runs_are_prepared_untimed_and_timed_one_by_one() {
        let (h, _) = setup(100, vec![]);
        let mut b = FakeRuns::new(&h.clock);
        let m = h.whole_runs(&mut b, 11).unwrap();
        assert_eq!(m.accepted.len(), 11);
        assert!(m.accepted.iter().all(|s| *s
            == RawSample {
                iters: 1,
                elapsed_ns: 5_000_000
            }));
        // One warm-up run: the 3 ms warm-up is shorter than a run (prepare time is not counted
        // as warm-up either way, since the fake clock jumps a second per prepare).
        assert_eq!(b.runs, 12);
        // A case's own sample count (the quick suite's hackbench) instead of the policy's.
        (b.runs, b.prepared) = (0, 0);
        let m = h
            .sample(&mut b, SampleMethod::WholeRuns { samples: Some(6) })
            .unwrap();
        let Measured::Samples { case, .. } = m else {
            panic!("whole runs give samples")
        };
        assert_eq!((case.accepted.len(), b.runs), (6, 7));
    }

    #[test]
    fn a_sample_of_several_whole_runs_prepares_each_and_averages_them() {
        let (h, _) = setup(100, vec![]);
        let mut b = FakeRuns {
            costs_ns: &[3_000_000, 7_000_000],
            per_sample: 2,
            ..FakeRuns::new(&h.clock)
        };
        let m = h.whole_runs(&mut b, 5).unwrap();
        // Each sample holds one run of each kind, whichever came first.
        assert!(
            m.accepted.iter().all(|s| *s
                == RawSample {
                    iters: 2,
                    elapsed_ns: 10_000_000
                }),
            "{:?}",
            m.accepted
        );
        // One warm-up run, then five samples of two.
        assert_eq!((b.runs, b.prepared), (11, 11));
        // Each run was timed by its own clock reads.
        assert_eq!(m.overhead.timer_ns, 2.0 * h.overhead.timer_ns);
        let per_run = (10e6 - m.overhead.timer_ns) / 2.0 - m.overhead.loop_ns_per_iter;
        assert!(m.per_op_ns(1.0).iter().all(|&v| (v - per_run).abs() < 1e-6));

        // A workload that times its own runs takes one run a sample.
        b.reports = true;
        let err = h.whole_runs(&mut b, 5).unwrap_err();
        assert!(err.to_string().contains("one run a sample"), "{err}");
    }

    /// A harness whose only meter is a fake perf event, and a bench that drives it.
    fn setup_perf(cost_ns: u64) -> (Harness<FakeClock>, FakeBench, Arc<FakePerf>) {
        let (h, mut b) = setup(cost_ns, vec![]);
        let perf = Arc::new(FakePerf::default());
        b.perf = Some(Arc::clone(&perf));
        (
            h.with_meters(Meters::with_perf(Box::new(FakeSource(Arc::clone(&perf))))),
            b,
            perf,
        )
    }

    #[test]
    fn timed_samples_run_with_no_perf_event_open_and_a_counting_pass_follows() {
        let (h, mut b, perf) = setup_perf(100);
        let m = sample_one(&h, &mut b);
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
        let ms = h.batched(&mut [&mut a, &mut b], 1.0, h.overhead()).unwrap();
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
        let m = sample_one(&h, &mut b);
        assert!(m.interrupted);
        assert!(matches!(&m.perf, PerfPass::Skipped(why) if why.contains("interrupted")));
        assert!(!perf.log.lock().unwrap().iter().any(|e| e == "open"));
    }

    #[test]
    fn warm_up_lasts_until_the_perf_hooks_of_a_previous_pass_are_off() {
        let (mut h, mut b, _perf) = setup_perf(100);
        h.policy.warmup_ns = 0;
        h.meters.perf_closed_ago(
            crate::measure::meters::PERF_HOOKS_LINGER - std::time::Duration::from_millis(20),
        );
        assert!(h.meters.perf_hooks_on());
        let m = sample_one(&h, &mut b);
        // Calibration (5 batches), then warm-up batches although no warm-up time
        // was asked for, then 11 samples and the 3 batches of the pass.
        assert!(b.calls > 5 + 11 + PERF_PASS_BATCHES, "{}", b.calls);
        assert_eq!(m.accepted.len(), 11);
    }

    #[test]
    fn without_perf_events_there_is_no_pass() {
        let (h, mut b) = setup(100, vec![]);
        assert_eq!(
            h.batched(&mut [&mut b], 1.0, h.overhead())
                .map(|mut m| m.remove(0))
                .unwrap()
                .perf,
            PerfPass::NotRun
        );
    }

    #[test]
    fn a_whole_run_is_counted_once_prepared_quietly() {
        let (h, _, perf) = setup_perf(100);
        struct Runs {
            clock: FakeClock,
            perf: Arc<FakePerf>,
        }
        impl Workload for Runs {
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
        let m = h.whole_runs(&mut b, h.policy.samples).unwrap();
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
    fn a_run_counting_later_times_quietly_and_counts_once_when_asked() {
        let (h, mut b, perf) = setup_perf(100);
        let h = h.counting_later();
        let m = sample_one(&h, &mut b);
        assert_eq!(m.perf, PerfPass::Later);
        assert!(!perf.log.lock().unwrap().iter().any(|e| e == "open"));
        let how = SampleMethod::Batched {
            stand_in: None,
            ops_per_iter: 1.0,
            own_loop: false,
        };
        let PerfPass::Counted { raw, deltas } = h.count(&mut b, how).unwrap() else {
            panic!("not counted");
        };
        assert_eq!(raw.len(), PERF_PASS_BATCHES);
        assert!(raw.iter().all(|s| s.iters == 10_000), "{raw:?}");
        assert!(deltas.iter().all(|d| d.perf_running.is_empty()));
        let log = perf.log.lock().unwrap();
        assert_eq!(log.iter().filter(|e| *e == "open").count(), 1);
        let counted = log.iter().filter(|e| *e == "counted run").count();
        assert_eq!(counted, PERF_PASS_BATCHES);
    }

    #[test]
    fn multiplexed_counts_are_scaled_and_say_so() {
        let (h, mut b, perf) = setup_perf(100);
        // On the PMU a quarter of the time: 2 500 of 10 000 events seen, scaled back.
        perf.multiplexed.store(4, Ordering::SeqCst);
        let m = sample_one(&h, &mut b);
        let PerfPass::Counted { deltas, .. } = &m.perf else {
            panic!("no counting pass: {:?}", m.perf);
        };
        for d in deltas {
            assert_eq!(d.counters, [("context_switches", 10_000.0)]);
            assert_eq!(d.perf_running, [("context_switches", 0.25)]);
        }
    }

    #[test]
    fn a_precision_target_takes_samples_until_the_interval_is_narrow() {
        let (h, mut b) = setup(100, vec![]);
        b.jitter = 10;
        let h = h.with_target(Target {
            ci: 0.01,
            max_samples: 10_000,
        });
        let m = sample_one(&h, &mut b);
        let why = m.target_stop.clone().unwrap();
        assert!(why.starts_with("reached ±"), "{why}");
        assert!(m.accepted.len() > 11, "{}", m.accepted.len());
        let values = m.per_op_ns(1.0);
        assert!(relative_half_width(&values) <= 0.01);
        assert!(
            why.ends_with(&format!("with {} samples", values.len())),
            "{why}"
        );
    }

    #[test]
    fn a_precision_target_stops_on_the_case_time_limit() {
        let (h, mut b) = setup(100, vec![]);
        b.jitter = 10;
        let h = h.with_target(Target {
            ci: 0.0001,
            max_samples: 10_000,
        });
        h.set_case_limit(std::time::Duration::from_millis(40));
        let m = sample_one(&h, &mut b);
        let why = m.target_stop.unwrap();
        assert!(
            why.starts_with("stopped on the time limit (0.0 s)"),
            "{why}"
        );
        // Calibration and warm-up (about 4 ms) and samples of about 1 ms, looked at in steps.
        assert!((30..60).contains(&m.accepted.len()), "{}", m.accepted.len());
        // The same for whole runs: 5 ms each, so about 8 in the limit.
        let mut runs = FakeRuns::new(&h.clock);
        h.set_case_limit(std::time::Duration::from_secs(3));
        let m = h.whole_runs(&mut runs, h.policy.samples).unwrap();
        // Every run takes exactly 5 ms: the interval has no width at the first look.
        assert_eq!(m.accepted.len(), 11);
        assert!(m.target_stop.unwrap().starts_with("reached ±0.00%"));
    }
}
