//! The interface between the harness and what it measures: a [`Workload`]
//! (one set-up benchmark case) and the [`SampleMethod`] method the harness uses
//! for it. Benchmark families implement `Workload`; only the harness calls it.
//! Left out: how a workload is set up or named (that is `bench`'s registry).

use crate::error::Result;

/// One set-up case, ready to run. Dropping it tears it down (temporary files
/// removed, children reaped); `teardown` does the same but reports errors.
pub trait Workload {
    /// Performs `iters` iterations of the operation. Called only by the harness,
    /// between its clock reads: no allocation, no printing, no clock reads.
    fn run(&mut self, iters: u64) -> Result<()>;

    /// For [`SampleMethod::Batched`]: the iterations the last `run(asked)`
    /// had completed when it returned. Called right after the clock read
    /// that ends the sample. Only copies counted by other tasks differ from
    /// `asked` (the default): they go on counting while the timing thread
    /// waits to be woken once `asked` is reached, and the sample is credited
    /// what they counted, not what was asked.
    fn completed(&self, asked: u64) -> u64 {
        asked
    }

    /// For [`SampleMethod::Batched`]: how many states the workload's
    /// batches take in turn (memlat's buffers, one a batch), so the harness
    /// asks for samples in whole turns and each state weighs the same in
    /// the median. 1 (the default): every batch is alike.
    fn batches_in_turn(&self) -> usize {
        1
    }

    /// For [`SampleMethod::WholeRuns`]: gets the next run ready (e.g. starts and
    /// synchronises its workers); called untimed before each timed `run(1)`.
    fn prepare(&mut self) -> Result<()> {
        Ok(())
    }

    /// For [`SampleMethod::WholeRuns`]: how many runs, each prepared
    /// untimed, one sample averages (fault's file case: each run draws a
    /// new random order, and orders differ in what they cost). 1 (the
    /// default): a sample is one run. A workload that reports its own runs
    /// ([`Workload::run_report`]) takes one run a sample.
    fn runs_per_sample(&self) -> u64 {
        1
    }

    /// For [`SampleMethod::Events`]: the latencies (ns) recorded since the last
    /// call. Such workloads timestamp each event themselves with
    /// [`super::clock::monotonic_ns`], since an event is shorter than a batch.
    fn take_events(&mut self) -> Vec<u64> {
        Vec::new()
    }

    /// For [`SampleMethod::WholeRuns`]: what the run just timed measured about
    /// itself, for a run whose sample is a statistic of its own events (schbench's
    /// percentiles) rather than its wall time. Called right after each timed
    /// `run(1)`; `None` (the default): the wall time is the sample.
    fn run_report(&mut self) -> Option<RunReport> {
        None
    }

    /// CPU time (ns) the case's tasks have used so far, where the workload tracks it.
    fn cpu_time_ns(&mut self) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Releases what set-up acquired, reporting failures.
    fn teardown(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// What a whole run measured about itself ([`Workload::run_report`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunReport {
    /// The sample's value (ns), used instead of the run's wall time (no
    /// overhead is subtracted from it: the workload read its own clocks).
    pub value_ns: u64,
    /// The run's other statistics, kept as the series' counters (per sample).
    pub counters: Vec<(&'static str, f64)>,
    /// Something the user should know about the run, kept (once) in the
    /// series' warnings.
    pub warning: Option<String>,
}

/// How the harness samples a workload.
pub enum SampleMethod<'a> {
    /// Calibrated batches of many iterations, each sample near the target
    /// time. With `stand_in`, that workload (the operation without the part
    /// being measured, lmbench's `ovr`) is sampled alternately with the case.
    Batched {
        stand_in: Option<&'a mut dyn Workload>,
        /// Operations per iteration (for a precision target's interval).
        ops_per_iter: f64,
        /// The case's `run` loops in its own instructions, counted as its
        /// anchor counts them: no empty loop's cost is subtracted per iteration.
        own_loop: bool,
    },
    /// Every sample is one whole run: `prepare()` untimed, then `run(1)` timed;
    /// `samples` of them instead of the policy's when given.
    WholeRuns { samples: Option<usize> },
    /// Single-event latencies: batches of events until this many are recorded.
    Events(u64),
}
