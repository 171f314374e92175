//! A profiling pass: a case, set up and warmed up, run untimed for a set
//! time with a sampling profiler on, so that where its time goes is known
//! without perturbing a timed sample (perf's hooks slow the next second of
//! context switches; the pass is followed by the same wait for them to go
//! off as the counting pass). The profiler is reached through
//! [`SamplingSource`], the seam through which tests sample with a fake; the
//! real one is [`SystemSampling`] (`perf_event_open` on every CPU,
//! [`super::profile`]). Left out: which passes run when (the run's, in
//! interleaved rounds of their own) and what a difference of profiles means.

use std::io;
use std::time::Duration;

use super::clock::Clock;
use super::harness::{EVENT_BATCH, Harness};
use super::profile::PROFILE_SCOPE;
use super::profile::{ProfileOptions, Profiler};
use super::sampler::rescale;
use super::workload::{SampleMethod, Workload};
use crate::document::{Profile, ProfileOutcome, ProfilePass};
use crate::error::{Error, Result};

/// A sampling profiler, opened and disabled.
pub trait Sampling {
    fn enable(&mut self) -> io::Result<()>;
    fn disable(&mut self) -> io::Result<()>;
    /// Moves what was sampled so far out of the kernel's buffers.
    fn drain(&mut self);
    /// Closes the profiler; the pass (`ops` done in `wall_ns`) and notes.
    fn finish(self: Box<Self>, ops: f64, wall_ns: u64) -> (ProfilePass, Vec<String>);
    /// `cycles` or `cpu-clock`.
    fn event(&self) -> &'static str;
    /// One sample every `period` events (ns of `cpu-clock`).
    fn period(&self) -> u64;
}

/// Opens a [`Sampling`] profiler, or says why it cannot be.
pub trait SamplingSource {
    fn open(&self) -> std::result::Result<Box<dyn Sampling>, String>;
}

/// The real profiler: every online CPU sampled by `perf_event_open`.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemSampling(pub ProfileOptions);

impl SamplingSource for SystemSampling {
    fn open(&self) -> std::result::Result<Box<dyn Sampling>, String> {
        Ok(Box::new(Profiler::open(&self.0)?))
    }
}

impl Sampling for Profiler {
    fn enable(&mut self) -> io::Result<()> {
        Profiler::enable(self)
    }
    fn disable(&mut self) -> io::Result<()> {
        Profiler::disable(self)
    }
    fn drain(&mut self) {
        Profiler::drain(self)
    }
    fn finish(self: Box<Self>, ops: f64, wall_ns: u64) -> (ProfilePass, Vec<String>) {
        Profiler::finish(*self, ops, wall_ns)
    }
    fn event(&self) -> &'static str {
        Profiler::event(self)
    }
    fn period(&self) -> u64 {
        Profiler::period(self)
    }
}

/// Closes `sampler` after a pass of `ops` operations sampled for
/// `wall_ns`: the pass as a one-pass profile of the series.
pub fn finish(sampler: Box<dyn Sampling>, ops: f64, wall_ns: u64) -> ProfileOutcome {
    let (event, period) = (sampler.event().to_string(), sampler.period());
    let (pass, notes) = sampler.finish(ops, wall_ns);
    ProfileOutcome::Profiled(Profile {
        event,
        period,
        scope: PROFILE_SCOPE.into(),
        passes: vec![pass],
        notes,
    })
}

impl<C: Clock> Harness<C> {
    /// One profiling pass of `workload` (set up; a batched one's stand-in is
    /// not profiled): calibrated and warmed up as for the counting pass,
    /// then run for about `length` with `source`'s profiler on, drained
    /// after every batch. An interrupt stops it with `Err(Interrupted)`
    /// and the profiler closed; so does a failing workload, with its error.
    pub fn profile(
        &self,
        workload: &mut dyn Workload,
        how: SampleMethod,
        length: Duration,
        source: &dyn SamplingSource,
    ) -> Result<ProfileOutcome> {
        let mut step = self.profile_step(workload, &how)?;
        let mut sampler = match source.open() {
            Ok(s) => s,
            Err(why) => {
                self.meters().note_perf_closed();
                return Ok(ProfileOutcome::Unavailable(why));
            }
        };
        let ran = self.sample_for(&mut *sampler, &mut step, length);
        let outcome = ran.map(|(ops, wall_ns)| finish(sampler, ops, wall_ns));
        self.meters().note_perf_closed();
        outcome
    }

    /// Runs `step` (one batch: the operations it did) with `sampler` on
    /// until `length` has passed; the operations and the time sampled.
    fn sample_for(
        &self,
        sampler: &mut dyn Sampling,
        step: &mut ProfileStep<'_>,
        length: Duration,
    ) -> Result<(f64, u64)> {
        let enabled = |e: io::Error| Error::io("enabling the profiler", e);
        let length_ns = u64::try_from(length.as_nanos()).unwrap_or(u64::MAX);
        let mut ops = 0.0;
        let mut wall_ns = 0;
        while wall_ns < length_ns {
            self.interrupt().check()?;
            step.prepare()?;
            sampler.enable().map_err(enabled)?;
            let t0 = self.clock().now_ns();
            let done = step.run();
            wall_ns += self.clock().now_ns().saturating_sub(t0);
            sampler
                .disable()
                .map_err(|e| Error::io("disabling the profiler", e))?;
            ops += done?;
            sampler.drain();
        }
        Ok((ops, wall_ns))
    }

    /// How one step of a pass runs `workload`: a calibrated batch, a whole
    /// run (prepared while sampling is off), or a batch of events.
    fn profile_step<'w>(
        &self,
        workload: &'w mut dyn Workload,
        how: &SampleMethod,
    ) -> Result<ProfileStep<'w>> {
        match how {
            SampleMethod::Batched { ops_per_iter, .. } => {
                let target = self.policy().sample_time_ns as f64;
                let mut iters = self.calibrate(workload, target)?;
                self.warm_up_until(
                    || {
                        let elapsed = self.time(workload, iters)?;
                        iters = rescale(iters, elapsed, target);
                        Ok(())
                    },
                    || false,
                )?;
                Ok(ProfileStep::Batch {
                    workload,
                    iters,
                    ops_per_iter: *ops_per_iter,
                })
            }
            SampleMethod::WholeRuns { .. } => Ok(ProfileStep::WholeRun(workload)),
            SampleMethod::Events(_) => {
                self.warm_up_until(|| workload.run(EVENT_BATCH), || false)?;
                workload.take_events();
                Ok(ProfileStep::Events(workload))
            }
        }
    }
}

/// One step of a profiling pass.
enum ProfileStep<'w> {
    Batch {
        workload: &'w mut dyn Workload,
        iters: u64,
        ops_per_iter: f64,
    },
    WholeRun(&'w mut dyn Workload),
    Events(&'w mut dyn Workload),
}

impl ProfileStep<'_> {
    /// What must happen, unsampled, before the step.
    fn prepare(&mut self) -> Result<()> {
        match self {
            Self::WholeRun(w) => w.prepare(),
            _ => Ok(()),
        }
    }

    /// Runs the step; the operations it did.
    fn run(&mut self) -> Result<f64> {
        match self {
            Self::Batch {
                workload,
                iters,
                ops_per_iter,
            } => workload.run(*iters).map(|()| *iters as f64 * *ops_per_iter),
            Self::WholeRun(w) => w.run(1).map(|()| 1.0),
            Self::Events(w) => {
                w.run(EVENT_BATCH)?;
                Ok(w.take_events().len() as f64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::measure::fake::FakeClock;
    use crate::measure::{Interrupt, Meters, Overhead, Policy};

    /// A profiler that logs what the harness asks of it.
    struct FakeSampling(Rc<RefCell<Vec<String>>>);

    impl Sampling for FakeSampling {
        fn enable(&mut self) -> io::Result<()> {
            self.0.borrow_mut().push("enable".into());
            Ok(())
        }
        fn disable(&mut self) -> io::Result<()> {
            self.0.borrow_mut().push("disable".into());
            Ok(())
        }
        fn drain(&mut self) {
            self.0.borrow_mut().push("drain".into());
        }
        fn finish(self: Box<Self>, ops: f64, wall_ns: u64) -> (ProfilePass, Vec<String>) {
            self.0.borrow_mut().push("finish".into());
            let pass = ProfilePass {
                ops,
                wall_ns,
                samples: 1,
                stacks: [("main;work".to_string(), 1)].into(),
                ..Default::default()
            };
            (pass, vec!["a note".into()])
        }
        fn event(&self) -> &'static str {
            "cpu-clock"
        }
        fn period(&self) -> u64 {
            250_000
        }
    }

    struct FakeSource(Rc<RefCell<Vec<String>>>, Option<&'static str>);

    impl SamplingSource for FakeSource {
        fn open(&self) -> std::result::Result<Box<dyn Sampling>, String> {
            match self.1 {
                Some(why) => Err(why.into()),
                None => Ok(Box::new(FakeSampling(self.0.clone()))),
            }
        }
    }

    /// A workload that advances the fake clock by 1 ms per iteration and
    /// logs each run; it fails on run number `fail_at`.
    struct Work {
        clock: FakeClock,
        log: Rc<RefCell<Vec<String>>>,
        runs: usize,
        fail_at: Option<usize>,
    }

    impl Workload for Work {
        fn run(&mut self, iters: u64) -> Result<()> {
            self.runs += 1;
            if Some(self.runs) == self.fail_at {
                return Err(Error::Measure("the peer died".into()));
            }
            self.clock.advance(iters * 1_000_000);
            self.log.borrow_mut().push(format!("run {iters}"));
            Ok(())
        }
    }

    fn harness(clock: &FakeClock) -> Harness<FakeClock> {
        let policy = Policy {
            samples: 3,
            sample_time_ns: 10_000_000,
            warmup_ns: 0,
        };
        Harness::with_clock(clock.clone(), policy, Overhead::ZERO, Interrupt::none())
            .with_meters(Meters::none())
    }

    fn batched() -> SampleMethod<'static> {
        SampleMethod::Batched {
            stand_in: None,
            ops_per_iter: 2.0,
            own_loop: false,
        }
    }

    #[test]
    fn a_pass_samples_calibrated_batches_only_while_they_run_and_closes_the_profiler() {
        let clock = FakeClock::default();
        let log = Rc::new(RefCell::new(Vec::new()));
        let (source, h) = (FakeSource(log.clone(), None), harness(&clock));
        let mut work = Work {
            clock: clock.clone(),
            log: log.clone(),
            runs: 0,
            fail_at: None,
        };
        let got = h.profile(&mut work, batched(), Duration::from_millis(50), &source);
        let Ok(ProfileOutcome::Profiled(Profile {
            mut passes,
            notes,
            event,
            ..
        })) = got
        else {
            panic!("{got:?}");
        };
        let pass = passes.remove(0);
        let log = log.borrow();
        let first = log.iter().position(|e| e == "enable").unwrap();
        // Calibration ran unsampled; then each batch of 10 iterations (10 ms)
        // between enable and disable, drained after, until 50 ms were sampled.
        assert!(first > 0, "{log:?}");
        let pass_log = &log[first..];
        let batch = ["enable", "run 10", "disable", "drain"].map(String::from);
        assert_eq!(pass_log.len(), 5 * 4 + 1, "{pass_log:?}");
        assert!(
            pass_log.chunks(4).take(5).all(|c| c == batch),
            "{pass_log:?}"
        );
        assert_eq!(pass_log.last().unwrap(), "finish");
        assert_eq!((pass.ops, pass.wall_ns), (5.0 * 10.0 * 2.0, 50_000_000));
        assert_eq!(
            (notes, event.as_str()),
            (vec!["a note".to_string()], "cpu-clock")
        );
        assert!(
            h.meters().perf_hooks_on(),
            "the timed samples after it wait"
        );
    }

    #[test]
    fn a_profiler_that_cannot_open_says_why_and_a_failing_case_closes_it() {
        let clock = FakeClock::default();
        let log = Rc::new(RefCell::new(Vec::new()));
        let h = harness(&clock);
        let mut work = Work {
            clock: clock.clone(),
            log: log.clone(),
            runs: 0,
            fail_at: None,
        };
        let no = FakeSource(log.clone(), Some("needs root"));
        let got = h.profile(&mut work, batched(), Duration::from_millis(50), &no);
        assert_eq!(
            got.unwrap(),
            ProfileOutcome::Unavailable("needs root".into())
        );

        work.runs = 0;
        work.fail_at = Some(8);
        log.borrow_mut().clear();
        let yes = FakeSource(log.clone(), None);
        let got = h.profile(&mut work, batched(), Duration::from_millis(500), &yes);
        assert!(
            matches!(got, Err(Error::Measure(ref m)) if m == "the peer died"),
            "{got:?}"
        );
        let log = log.borrow();
        assert_eq!(log.last().unwrap(), "disable", "{log:?}");
        assert!(!log.iter().any(|e| e == "finish"), "{log:?}");
    }

    #[test]
    fn an_interrupt_stops_a_pass() {
        let clock = FakeClock::default();
        let log = Rc::new(RefCell::new(Vec::new()));
        let stop = Interrupt::none();
        stop.set();
        let h = Harness::with_clock(
            clock.clone(),
            *harness(&clock).policy(),
            Overhead::ZERO,
            stop,
        )
        .with_meters(Meters::none());
        let mut work = Work {
            clock,
            log: log.clone(),
            runs: 0,
            fail_at: None,
        };
        let source = FakeSource(log.clone(), None);
        let got = h.profile(&mut work, batched(), Duration::from_millis(50), &source);
        assert!(matches!(got, Err(Error::Interrupted)), "{got:?}");
        assert!(!log.borrow().iter().any(|e| e == "enable"));
    }
}
