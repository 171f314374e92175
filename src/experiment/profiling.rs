//! The profiling phase of a run (`--profile`): after the rounds and the
//! counting pass, every configuration × case profiled in passes of its own,
//! the configurations taking turns within each pass (reversed every other
//! pass) so that both sides of a comparison see the same phases of the
//! host; each pass appended to the case's series. How long a pass lasts is
//! chosen here (about a quarter of the case's timed time over the passes);
//! what a pass does is the harness's ([`crate::measure::profile_pass`]).
//! Left out: what the profiles mean next to each other (`compare`).

use std::time::Duration;

use super::{Plan, RunRounds, case, series_in};
use crate::bench::util::select::Case;
use crate::document::{Pin, ProfileOutcome, Series};
use crate::error::Result;
use crate::measure::profile::ProfileOptions;
use crate::measure::profile_pass::SystemSampling;
use crate::measure::{Clock, Harness};

/// Passes per configuration × case unless `--profile-passes` says.
pub const DEFAULT_PROFILE_PASSES: usize = 5;

/// The share of a case's timed time its profiling passes take together,
/// unless `--profile-time` sets each pass's length.
pub const PROFILE_SHARE: f64 = 0.25;

/// No pass is shorter: below this a pass holds too few samples to tell
/// functions apart (at 10 kHz, 500 per CPU).
pub const SHORTEST_PASS: Duration = Duration::from_millis(50);

/// One sample every this many ns of each CPU's time (10 kHz).
pub const PROFILE_PERIOD_NS: u64 = 100_000;

/// What `--profile` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProfilePlan {
    pub passes: usize,
    /// Each pass's length; `None`: [`PROFILE_SHARE`] of the case's timed
    /// time over the passes, at least [`SHORTEST_PASS`].
    pub length: Option<Duration>,
}

impl ProfilePlan {
    /// `--profile` with `passes` (default [`DEFAULT_PROFILE_PASSES`]).
    pub fn new(passes: Option<usize>, length: Option<Duration>) -> Self {
        Self {
            passes: passes.unwrap_or(DEFAULT_PROFILE_PASSES).max(1),
            length,
        }
    }

    /// How long each pass of a case lasts in `plan`.
    pub fn pass_length(&self, plan: &Plan) -> Duration {
        self.length.unwrap_or_else(|| {
            let timed = plan.expected_per_case().as_secs_f64()
                * plan.rounds.max(1) as f64
                * plan.invocations.max(1) as f64;
            Duration::from_secs_f64(timed * PROFILE_SHARE / self.passes as f64).max(SHORTEST_PASS)
        })
    }

    /// What the run says it chose, in words.
    pub fn describe(&self, plan: &Plan) -> String {
        format!(
            "profiling: {} passes of {} ms per case{}, after the timed samples, sampling \
             each CPU every {} µs",
            self.passes,
            self.pass_length(plan).as_millis(),
            if plan.configs.is_empty() {
                ""
            } else {
                " and configuration, interleaved"
            },
            PROFILE_PERIOD_NS / 1000
        )
    }
}

/// The real profiler, at [`PROFILE_PERIOD_NS`].
pub(super) fn sampling() -> SystemSampling {
    SystemSampling(ProfileOptions {
        period_ns: PROFILE_PERIOD_NS,
    })
}

/// The profiling pass of `case` alone ([`Harness::profile`]): placed and
/// set up as for its samples, profiled for `length`, torn down.
pub(super) fn profile_case<C: Clock>(
    case: &Case,
    pin: Option<Pin>,
    harness: &Harness<C>,
    length: Duration,
) -> Result<ProfileOutcome> {
    let (placement, _timing_thread) = case::place(case, pin)?;
    let mut workload = case::set_up(case, &placement)?;
    let how = case::sampling(case, None, (case.def.ops_per_iter)(&case.params));
    let profiled = harness.profile(workload.as_mut(), how, length, &sampling());
    let torn_down = workload.teardown();
    let profiled = profiled?;
    torn_down?;
    Ok(profiled)
}

/// Merges one pass's outcome (here, or a guest's) into a series' `profile`;
/// a reason there is none is kept only while no pass is in.
pub(super) fn merge(profile: &mut Option<ProfileOutcome>, got: ProfileOutcome) {
    match (profile, got) {
        (Some(ProfileOutcome::Profiled(into)), ProfileOutcome::Profiled(from)) => {
            into.passes.extend(from.passes);
            for note in from.notes {
                if !into.notes.contains(&note) {
                    into.notes.push(note);
                }
            }
        }
        (Some(ProfileOutcome::Profiled(_)), ProfileOutcome::Unavailable(_)) => {}
        (slot, got) => *slot = Some(got),
    }
}

/// The profiling phase of a run in several invocations, here after the
/// last one: each case of `plan` (no configurations) profiled in
/// [`ProfilePlan::passes`] passes into its series (found by `is_case`).
pub(super) fn profile_here(
    plan: &Plan,
    profile: ProfilePlan,
    series: &mut [Series],
    is_case: impl Fn(&Series, &Case) -> bool,
    harness: &Harness,
) -> Result<()> {
    let length = profile.pass_length(plan);
    for _ in 0..profile.passes {
        for case in &plan.cases {
            let Some(s) = series.iter_mut().find(|s| is_case(s, case)) else {
                continue;
            };
            if matches!(s.profile, Some(ProfileOutcome::Unavailable(_))) {
                continue;
            }
            let profiled = profile_case(case, plan.pin, harness, length)?;
            merge(&mut s.profile, profiled);
        }
    }
    Ok(())
}

impl<C: Clock> RunRounds<'_, C> {
    /// The profiling phase: [`ProfilePlan::passes`] passes, each applying
    /// every configuration in turn (reversed every other pass) and
    /// profiling each of its cases once. A series whose profile is
    /// unavailable is not tried again.
    pub(super) fn profile_passes(&mut self) -> Result<()> {
        let Some(profile) = self.plan.profile else {
            return Ok(());
        };
        let length = profile.pass_length(self.plan);
        let mut keys: Vec<(usize, usize)> = self.done.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        let mut configs: Vec<usize> = keys.iter().map(|k| k.0).collect();
        configs.dedup();
        for pass in 0..profile.passes {
            let order: Vec<usize> = if pass % 2 == 0 {
                configs.clone()
            } else {
                configs.iter().rev().copied().collect()
            };
            for ci in order {
                self.in_config(ci, |body| {
                    for &(_, idx) in keys.iter().filter(|k| k.0 == ci) {
                        body.profile_one(ci, idx, length)?;
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    /// One pass of case `idx` under configuration `ci` (applied), into its series.
    fn profile_one(&mut self, ci: usize, idx: usize, length: Duration) -> Result<()> {
        if matches!(
            series_in(&mut self.done, (ci, idx)).profile,
            Some(ProfileOutcome::Unavailable(_))
        ) {
            return Ok(());
        }
        let config = &self.configs[ci];
        let case = super::with_overrides(&self.plan.cases[idx], config);
        let pin = config.pin.or(self.plan.pin);
        let (plan, harness) = (self.plan, self.harness);
        let got = self
            .places
            .of(ci)
            .profile((&case, pin), plan, harness, length)?;
        merge(&mut series_in(&mut self.done, (ci, idx)).profile, got);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{Profile, ProfilePass, Unit};
    use crate::measure::profile::PROFILE_SCOPE;

    fn series() -> Series {
        let summary = crate::stats::summarize(&[1.0]).unwrap();
        Series::new("syscall", "null".into(), Unit::Ns, vec![1.0], summary)
    }

    fn pass(stack: &str) -> ProfileOutcome {
        ProfileOutcome::Profiled(Profile {
            event: "cpu-clock".into(),
            period: PROFILE_PERIOD_NS,
            scope: PROFILE_SCOPE.into(),
            passes: vec![ProfilePass {
                samples: 1,
                stacks: [(stack.to_string(), 1)].into(),
                ..Default::default()
            }],
            notes: vec!["kernel symbols hidden".into()],
        })
    }

    #[test]
    fn passes_accumulate_and_a_reason_is_kept_only_without_a_pass() {
        let mut s = series();
        let add = |s: &mut Series, p: ProfileOutcome| merge(&mut s.profile, p);
        add(&mut s, ProfileOutcome::Unavailable("needs root".into()));
        assert_eq!(
            s.profile,
            Some(ProfileOutcome::Unavailable("needs root".into()))
        );
        add(&mut s, pass("a;b"));
        add(&mut s, pass("a;c"));
        add(&mut s, ProfileOutcome::Unavailable("gone".into()));
        let Some(ProfileOutcome::Profiled(p)) = &s.profile else {
            panic!("{:?}", s.profile);
        };
        assert_eq!(p.passes.len(), 2);
        assert_eq!(p.notes, vec!["kernel symbols hidden".to_string()]);
        assert_eq!(
            (p.event.as_str(), p.scope.as_str()),
            ("cpu-clock", PROFILE_SCOPE)
        );
    }

    #[test]
    fn a_pass_takes_a_quarter_of_the_timed_time_over_the_passes_or_the_shortest() {
        let policy = crate::document::Policy {
            samples: 20,
            sample_time_ns: 10_000_000,
            warmup_ns: 50_000_000,
        };
        let mut plan = Plan::new(Vec::new(), 1, policy);
        plan.rounds = 10;
        let p = ProfilePlan::new(None, None);
        // 10 rounds × 250 ms × 0.25 ÷ 5 passes.
        assert_eq!(p.pass_length(&plan), Duration::from_millis(125));
        plan.rounds = 1;
        assert_eq!(p.pass_length(&plan), SHORTEST_PASS);
        let fixed = ProfilePlan::new(Some(3), Some(Duration::from_millis(300)));
        assert_eq!(fixed.pass_length(&plan), Duration::from_millis(300));
        assert!(
            fixed
                .describe(&plan)
                .contains("3 passes of 300 ms per case")
        );
    }
}
