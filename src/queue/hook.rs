//! What a job's run is given by the worker ([`JobHook`]: its host name, its
//! lease, the host's limits, the stop flag it runs under), the observer
//! that renews the lease between cases ([`Hooked`]), and what the run gives
//! back ([`JobRun`]). Reading the job's plan and running it are the
//! caller's (`run` and `time` in the CLI); the worker's loop is
//! [`super::serve`].

use crate::bench::util::select::Case;
use crate::document::Series;
use crate::error::Result;
use crate::experiment::Observer;
use crate::measure::Interrupt;
use crate::store::keep::Saved;

use super::worker::{Lease, Limits};

/// What a job's run is given by the worker: its host name, its lease, the
/// host's limits, and the stop flag it runs under (the worker's, nested: set
/// by a stop signal, or by the lease when the job is taken away).
pub struct JobHook {
    pub host: String,
    pub job: i64,
    pub lease: Lease,
    pub limits: Limits,
    pub stop: Interrupt,
    /// How a warning of the lease's renewal is said.
    pub warn: fn(&str),
    /// Set by the run when every case it planned was measured and kept,
    /// even if a stop signal came after the last (in its tear-down, say):
    /// the job is then done, not queued to be measured again.
    pub measured_all: bool,
}

/// The stop flag a run measures under: stop signals' (their handlers
/// installed now), or as a job of the worker the job's own ([`JobHook::stop`]).
pub fn run_stop(hook: Option<&JobHook>) -> Result<Interrupt> {
    let signals = Interrupt::install()?;
    Ok(hook.map_or(signals, |h| h.stop.clone()))
}

/// A job's run as the worker sees it: whether it ended well (else its
/// error, on one line), what it saved (none when it stopped before
/// saving), and what its regression gate said.
pub struct JobRun {
    pub result: std::result::Result<(), String>,
    pub saved: Option<Saved>,
    /// The line of the job's `--gate` when it did not simply pass (tripped,
    /// or a case it could not judge): noted on the job, which is done all
    /// the same (it measured and stored its run).
    pub gate: Option<String>,
}

/// An observer that renews a job's lease between cases (before each case,
/// after each round: never while one is measured), then tells `inner`.
pub struct Hooked<'a> {
    inner: &'a mut dyn Observer,
    hook: Option<&'a mut JobHook>,
}

impl<'a> Hooked<'a> {
    pub fn new(inner: &'a mut dyn Observer, hook: Option<&'a mut JobHook>) -> Self {
        Self { inner, hook }
    }

    fn renew(&mut self) {
        if let Some(h) = self.hook.as_deref_mut()
            && let Some(warning) = h.lease.renew(h.job)
        {
            (h.warn)(&warning);
        }
    }
}

impl Observer for Hooked<'_> {
    fn case_started(&mut self, index: usize, total: usize, case: &Case) {
        self.renew();
        self.inner.case_started(index, total, case);
    }
    fn step(&mut self, round: usize, rounds: usize, config: &str) {
        self.inner.step(round, rounds, config);
    }
    fn case_finished(&mut self, series: &Series) {
        self.inner.case_finished(series);
    }
    fn case_failed(&mut self, error: &crate::Error) {
        self.inner.case_failed(error);
    }
    fn round_finished(&mut self, done: usize, planned: usize) {
        self.inner.round_finished(done, planned);
        self.renew();
    }
    fn audit(&mut self, finding: &str) {
        self.inner.audit(finding);
    }
}

/// `--max-job-time` while a job runs: sets the run's stop flag when the
/// job has run that long (a `time` job's length is not known before it
/// runs, and a `run` job may take longer than its plan said), so the run
/// stops at its next check as on a stop signal, keeping what it measured.
pub struct JobClock {
    /// Tells the watching thread the run ended (dropped: the same).
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<bool>,
}

impl JobClock {
    /// Watches a run under `stop` for `most`.
    pub fn start(most: std::time::Duration, stop: Interrupt) -> Self {
        let (done, ended) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let over = matches!(
                ended.recv_timeout(most),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            );
            if over {
                stop.set();
            }
            over
        });
        Self { done, thread }
    }

    /// Ends the watch: whether the run was stopped for running too long.
    pub fn stopped(self) -> bool {
        let _ = self.done.send(());
        self.thread.join().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_job_clock_stops_a_run_that_runs_too_long_and_only_that() {
        let stop = Interrupt::none();
        let clock = JobClock::start(Duration::from_millis(100), stop.clone());
        std::thread::sleep(Duration::from_millis(300));
        assert!(stop.is_set());
        assert!(clock.stopped());
        let stop = Interrupt::none();
        let clock = JobClock::start(Duration::from_secs(60), stop.clone());
        assert!(!clock.stopped());
        assert!(!stop.is_set());
    }
}
