//! `osbench time --profile`: after the timed rounds, each command run
//! again in passes of its own with the sampling profiler on (one run per
//! pass, the commands taking turns, reversed every other pass), so that a
//! comparison of two commands can say where their time went. The runs of
//! a pass are not timed results. Left out: the empty command (the floor).

use super::TimeRounds;
use crate::document::ProfileOutcome;
use crate::error::{Error, Result};
use crate::experiment::profiling::{merge, sampling};
use crate::measure::Monotonic;
use crate::measure::clock::Clock;
use crate::measure::profile_pass::{Sampling, SamplingSource, finish};
use crate::measure::spawn::run_once;

impl TimeRounds<'_> {
    /// `passes` passes over the commands; each command's profile is kept
    /// for its series. A command whose profiler cannot open is not tried again.
    pub(super) fn profile_passes(&mut self, passes: usize) -> Result<()> {
        let commands = self.plan.commands.len();
        for pass in 0..passes {
            let order: Vec<usize> = if pass % 2 == 0 {
                (0..commands).collect()
            } else {
                (0..commands).rev().collect()
            };
            for i in order {
                if matches!(self.profiles[i], Some(ProfileOutcome::Unavailable(_))) {
                    continue;
                }
                let got = self.profile_run(i)?;
                merge(&mut self.profiles[i], got);
            }
        }
        Ok(())
    }

    /// One run of command `i` (after `--prepare`) with the profiler on.
    fn profile_run(&mut self, i: usize) -> Result<ProfileOutcome> {
        self.interrupt.check()?;
        self.prepare()?;
        let mut sampler: Box<dyn Sampling> = match sampling().open() {
            Ok(s) => s,
            Err(why) => return Ok(ProfileOutcome::Unavailable(why)),
        };
        let m = &self.members[i];
        sampler
            .enable()
            .map_err(|e| Error::io("enabling the profiler", e))?;
        let t0 = Monotonic.now_ns();
        let run = run_once(&m.program, &m.argv, &self.quiet);
        let wall_ns = Monotonic.now_ns().saturating_sub(t0);
        sampler
            .disable()
            .map_err(|e| Error::io("disabling the profiler", e))?;
        run?;
        Ok(finish(sampler, 1.0, wall_ns))
    }
}
