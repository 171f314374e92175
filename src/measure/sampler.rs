//! The sampling state of one batched workload: which timed batches are
//! accepted (within [`ACCEPT_LOW`]–[`ACCEPT_HIGH`] × the target time), which
//! are set aside, how the batch is re-sized, and what is said about it
//! ([`Measurement`]). Pure bookkeeping: it reads no clock.

use std::collections::BTreeMap;

use super::meters::{MeterDelta, PerfPass};
use super::overhead::per_op_ns;
use crate::document::{Overhead, RawSample};
use crate::error::{Error, Result};

/// A sample is accepted when its duration is at least this fraction of the target…
pub const ACCEPT_LOW: f64 = 0.9;
/// …and at most this multiple of it.
pub const ACCEPT_HIGH: f64 = 1.5;
/// Never run more than this many iterations in one batch.
pub(super) const MAX_ITERS: u64 = 1 << 40;
/// When no sample of a workload lands in the window, the harness samples it
/// again with a target this many times longer (what the "too noisy" advice
/// says to do by hand): a preemption of a few ms then fits in the window.
pub(super) const RAISE_FACTOR: u64 = 4;
/// …at most this many times.
pub(super) const MAX_RAISES: u32 = 2;

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
    /// The error (a full disk, a lost peer) that stopped sampling after some
    /// samples were in: `accepted` holds them, and the run stops with it.
    pub failed: Option<String>,
    /// What each accepted sample used (rusage, energy), same order as `accepted`.
    pub meters: Vec<MeterDelta>,
    /// The perf counting pass (only the case gets one, not its stand-in).
    pub perf: PerfPass,
    /// With a precision target: what ended the sampling ("reached ±0.41%
    /// with 37 samples", "stopped on the time limit …").
    pub target_stop: Option<String>,
    /// Whole runs that measured themselves ([`super::workload::RunReport`]):
    /// each statistic they reported, one value per accepted sample.
    pub run_counters: BTreeMap<String, Vec<f64>>,
}

impl Measurement {
    /// Nanoseconds per operation of each accepted sample, overheads subtracted.
    /// `ops_per_iter` converts iterations to the workload's operations.
    pub fn per_op_ns(&self, ops_per_iter: f64) -> Vec<f64> {
        self.accepted
            .iter()
            .map(|s| per_op_ns(*s, self.overhead, ops_per_iter))
            .collect()
    }
}

/// How sampling ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SamplingEnd {
    /// The planned samples (or the precision target's) are in.
    Planned,
    /// A signal asked to stop.
    Interrupted,
    /// The workload failed after some samples were in.
    Failed,
}

/// The sampling state of one batched workload.
pub(super) struct Sampler {
    pub(super) iters: u64,
    /// The sample time aimed at (ns).
    target: f64,
    pub(super) accepted: Vec<RawSample>,
    rejected: Vec<RawSample>,
    /// What each accepted sample used, same order.
    pub(super) meters: Vec<MeterDelta>,
    long_in_a_row: u32,
    /// Attempts spent before the last raise of the target (not counted
    /// against the budget since).
    spent_before: usize,
    wanted: usize,
    /// Samples come in whole turns of this many (1: any number).
    turn: usize,
    /// What raising the target said (it goes first in the warnings).
    raised: Vec<String>,
}

impl Sampler {
    /// A sampler wanting `wanted` samples, rounded up to whole turns of
    /// `turn` (a workload's [`super::workload::Workload::batches_in_turn`]).
    pub(super) fn new(iters: u64, wanted: usize, target: f64, turn: usize) -> Self {
        let turn = turn.max(1);
        let wanted = wanted.next_multiple_of(turn);
        Self {
            iters,
            target,
            accepted: Vec::with_capacity(wanted),
            rejected: Vec::new(),
            meters: Vec::with_capacity(wanted),
            long_in_a_row: 0,
            spent_before: 0,
            wanted,
            turn,
            raised: Vec::new(),
        }
    }

    /// True when the attempts are spent and none landed in the window.
    pub(super) fn none_landed(&self) -> bool {
        self.done() && self.accepted.is_empty()
    }

    /// Starts over with a target [`RAISE_FACTOR`] times longer: a batch that
    /// many times longer and a fresh attempt budget; the samples set aside
    /// so far stay set aside.
    pub(super) fn raise_target(&mut self) {
        let old = self.target;
        self.target *= RAISE_FACTOR as f64;
        self.raised.push(format!(
            "none of {} samples landed within {ACCEPT_LOW}–{ACCEPT_HIGH} × the {:.1} ms target; \
             sampled again with a {:.1} ms target",
            self.rejected.len(),
            old / 1e6,
            self.target / 1e6
        ));
        self.iters = (self.iters.saturating_mul(RAISE_FACTOR)).min(MAX_ITERS);
        self.long_in_a_row = 0;
        self.spent_before = self.rejected.len();
    }

    /// Asks for `extra` more accepted samples (a precision target not yet
    /// reached), rounded up to whole turns.
    pub(super) fn want_more(&mut self, extra: usize) {
        self.wanted += extra.next_multiple_of(self.turn);
    }

    /// Attempts allowed: three per sample wanted and ten more, since the
    /// last raise of the target.
    fn max_attempts(&self) -> usize {
        self.spent_before + self.wanted * 3 + 10
    }

    pub(super) fn done(&self) -> bool {
        self.accepted.len() >= self.wanted
            || self.accepted.len() + self.rejected.len() >= self.max_attempts()
    }

    /// Files one timed batch of `completed` iterations (the `iters` asked,
    /// or more for copies that went on counting) as accepted or rejected,
    /// and re-sizes the batch: at once after a short one, after two long
    /// ones in a row (one long sample is usually an interruption, not a
    /// wrong count).
    pub(super) fn record(&mut self, elapsed: u64, completed: u64, used: MeterDelta) {
        let target = self.target;
        let sample = RawSample {
            iters: completed,
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

    pub(super) fn finish(self, end: SamplingEnd, overhead: Overhead) -> Result<Measurement> {
        let wanted = self.wanted;
        let mut warnings = self.raised;
        let (taken, tried) = (
            self.accepted.len(),
            self.accepted.len() + self.rejected.len(),
        );
        match end {
            SamplingEnd::Interrupted => {
                warnings.push(format!("interrupted after {taken} of {wanted} samples"))
            }
            SamplingEnd::Failed => warnings.push(format!(
                "stopped by an error after {taken} of {wanted} samples"
            )),
            SamplingEnd::Planned if taken < wanted => warnings.push(format!(
                "only {taken} of {wanted} samples landed within {ACCEPT_LOW}–{ACCEPT_HIGH} × the {:.1} ms \
                 target after {tried} attempts; the system is too noisy for this sample time (try a \
                 longer --sample-time)",
                self.target / 1e6
            )),
            SamplingEnd::Planned => {}
        }
        if taken == 0 {
            return Err(if end == SamplingEnd::Planned {
                Error::Measure(warnings.join("; "))
            } else {
                Error::Interrupted
            });
        }
        if !self.rejected.is_empty() && self.rejected.len() * 4 >= taken {
            warnings.push(format!(
                "{} of {tried} samples set aside: outside {ACCEPT_LOW}–{ACCEPT_HIGH} × the target time \
                 (kept in the document as \"rejected\")",
                self.rejected.len()
            ));
        }
        Ok(Measurement {
            accepted: self.accepted,
            rejected: self.rejected,
            overhead,
            warnings,
            interrupted: end == SamplingEnd::Interrupted,
            failed: None,
            meters: self.meters,
            perf: PerfPass::NotRun,
            target_stop: None,
            run_counters: BTreeMap::new(),
        })
    }
}

/// The iteration count that would make a batch of `iters` that took `elapsed` last `target`.
pub(super) fn rescale(iters: u64, elapsed: u64, target: f64) -> u64 {
    let per_iter = elapsed.max(1) as f64 / iters as f64;
    ((target / per_iter).round() as u64).clamp(1, MAX_ITERS)
}
