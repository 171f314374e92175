//! The round loop that `osbench run` (configurations, each running every
//! case) and `osbench time` (commands and the empty command) share: every
//! round runs each member once, in a fresh order drawn from the seed, so slow
//! drift of the machine hits all members alike and comparisons can pair them
//! round by round. Unrecorded warm-up rounds come first. Rounds stop at the
//! planned count, at the first error, when every 95 % interval is within the
//! precision target, when a change of a target size has become detectable
//! ([`DetectTarget`]), or at the time limit — by one rule, worded once.
//!
//! What a round does is the caller's ([`RoundBody`]); the loop owns the
//! order, the schedule and the stop. It reads time only through a
//! [`Clock`], so tests drive it with a fake one.

use std::time::Duration;

use crate::bench::util::select::Case;
use crate::document::{Series, TargetMde};
use crate::error::{Error, Result};
use crate::measure::Clock;
use crate::rng::SplitMix64;

/// Receives progress; the CLI prints it, tests ignore it.
pub trait Observer {
    /// A case of a run is about to be measured (`index` of `total`).
    fn case_started(&mut self, _index: usize, _total: usize, _case: &Case) {}
    /// Runs with configurations, before [`Observer::case_started`]: the
    /// round (from 0) of the `rounds` planned and the configuration.
    fn step(&mut self, _round: usize, _rounds: usize, _config: &str) {}
    fn case_finished(&mut self, _series: &Series) {}
    fn case_failed(&mut self, _error: &Error) {}
    /// After each recorded round; `planned` is the current estimate of rounds.
    fn round_finished(&mut self, _done: usize, _planned: usize) {}
    /// A noise-audit finding (before or after the run).
    fn audit(&mut self, _finding: &str) {}
}

/// Observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// What one round does.
pub trait RoundBody {
    /// The members every round runs once each, by name.
    fn members(&self) -> Vec<String>;

    /// Runs every member once, in `order` (indices into [`Self::members`]).
    /// `warm` rounds are not recorded. `rng` continues the seeded sequence for
    /// any further random choice (the case order inside a configuration).
    fn run_round(
        &mut self,
        round: usize,
        order: &[usize],
        warm: bool,
        rng: &mut SplitMix64,
        observer: &mut dyn Observer,
    ) -> Result<()>;

    /// The widest relative half-width of the 95 % intervals the precision
    /// target is about, once every one of them can be computed.
    fn precision(&self) -> Option<f64>;

    /// The largest, over the paired comparisons, of the smallest change
    /// (a fraction) each detects with 80 % power at level `alpha`, once every
    /// one of them can be computed; `None` for bodies with no comparison.
    fn detectable(&self, _alpha: f64) -> Option<f64> {
        None
    }

    /// After the first recorded round: how many rounds to run in all, given
    /// the `planned` count (hyperfine's rule judges from the first runs).
    fn replan(&self, planned: usize) -> usize {
        planned
    }
}

/// When to stop adding rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopRule {
    /// Unrecorded rounds first.
    pub warmup: usize,
    /// Rounds to run; with a precision target, the most.
    pub planned: usize,
    /// Stop once every 95 % interval is within ± this fraction…
    pub target_ci: Option<f64>,
    /// …looked at after this many rounds, then after every fifth more
    /// (each look is a chance to stop on noise; fewer looks, fewer such stops).
    pub first_look: usize,
    /// Stop adding rounds once this much time has passed (after two rounds at least).
    pub max_time: Option<Duration>,
    /// Stop once a change of this size is detectable, or its budget ends;
    /// looked at after every round from `first_look` on.
    pub detect: Option<DetectTarget>,
}

/// Add rounds until every comparison would detect a change of `change`
/// with 80 % power at level `alpha`, or `budget` has passed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DetectTarget {
    /// The change, a fraction (0.02: ±2 %).
    pub change: f64,
    /// The level of each comparison (α ÷ comparisons).
    pub alpha: f64,
    pub budget: Duration,
}

/// The power a detectable change is detected with.
pub const DETECT_POWER: f64 = 0.8;

impl DetectTarget {
    /// The record of this target after `n` rounds (or invocations, `unit`)
    /// in `elapsed`, the smallest change then detectable `detectable`.
    pub fn outcome(
        &self,
        n: usize,
        unit: &str,
        detectable: Option<f64>,
        elapsed: Duration,
    ) -> TargetMde {
        TargetMde {
            target: self.change,
            budget_s: self.budget.as_secs_f64(),
            reached: detectable.is_some_and(|d| d <= self.change),
            // Infinite while the test cannot reach the level: too few to tell.
            detectable: detectable.filter(|d| d.is_finite()),
            n,
            unit: unit.into(),
            elapsed_s: elapsed.as_secs_f64(),
            alpha: self.alpha,
        }
    }
}

/// What the rounds did.
#[derive(Debug, Default)]
pub struct Rounds {
    /// The member order of each recorded round, started or finished.
    pub schedule: Vec<Vec<String>>,
    /// Why no more rounds were run, when a target or a time limit decided it.
    pub stopped_by: Option<String>,
    /// The error that stopped the rounds early, if any.
    pub error: Option<Error>,
    /// With a [`DetectTarget`]: what was targeted and how it went.
    pub target_mde: Option<TargetMde>,
}

/// Runs `body`'s rounds under `rule`, in orders drawn from `seed`.
pub fn run(
    body: &mut dyn RoundBody,
    rule: &StopRule,
    seed: u64,
    clock: &dyn Clock,
    observer: &mut dyn Observer,
) -> Rounds {
    let names = body.members();
    let mut rng = SplitMix64::new(seed);
    let start = clock.now_ns();
    let mut planned = rule.planned;
    let mut next_look = rule.first_look.max(1);
    let mut out = Rounds::default();
    let mut next_detect_look = rule.first_look.max(2);
    let mut elapsed = Duration::ZERO;
    for round in 0.. {
        let warm = round < rule.warmup;
        if !warm && out.schedule.len() >= planned {
            break;
        }
        let mut order: Vec<usize> = (0..names.len()).collect();
        rng.shuffle(&mut order);
        if !warm {
            out.schedule
                .push(order.iter().map(|&i| names[i].clone()).collect());
        }
        if let Err(e) = body.run_round(round, &order, warm, &mut rng, observer) {
            out.error = Some(e);
            break;
        }
        if warm {
            continue;
        }
        let done = out.schedule.len();
        if done == 1 {
            planned = body.replan(planned);
        }
        elapsed = Duration::from_nanos(clock.now_ns().saturating_sub(start));
        if let Some(why) = rule.stop(done, planned, &mut next_look, &*body, elapsed) {
            out.stopped_by = Some(why);
            planned = done;
        }
        if rule.detect_stop(done, planned, &*body, elapsed, &mut next_detect_look) {
            planned = done;
        }
        observer.round_finished(done, planned);
    }
    if out.stopped_by.is_none() && out.error.is_none() && rule.target_ci.is_some() {
        out.stopped_by = Some(format!(
            "all {} rounds ran without reaching the target interval",
            out.schedule.len()
        ));
    }
    out.target_mde = (rule.detect).map(|t| {
        let detectable = body.detectable(t.alpha);
        t.outcome(out.schedule.len(), "rounds", detectable, elapsed)
    });
    out
}

impl StopRule {
    /// Why to stop after `done` of `planned` rounds, if the target is reached
    /// (looked at when `done` reaches `next_look`, which then moves on) or
    /// time is up before the last round.
    fn stop(
        &self,
        done: usize,
        planned: usize,
        next_look: &mut usize,
        body: &dyn RoundBody,
        elapsed: Duration,
    ) -> Option<String> {
        if let Some(target) = self.target_ci
            && done >= *next_look
        {
            *next_look = done + done.div_ceil(5);
            if body.precision().is_some_and(|width| width <= target) {
                return Some(format!(
                    "every 95% interval within ±{:.2}% after {done} rounds",
                    target * 100.0
                ));
            }
        }
        if self.max_time.is_some_and(|max| elapsed >= max) && done >= 2 && done < planned {
            return Some(format!("--max-time reached after {done} rounds"));
        }
        None
    }

    /// With a [`DetectTarget`], from `first_look` rounds (two at least)
    /// on: whether to stop — its budget spent, or the target reached when
    /// `done` reaches `next_look` (every round up to 20, then every 5 %
    /// more rounds: each look costs a few root searches).
    fn detect_stop(
        &self,
        done: usize,
        planned: usize,
        body: &dyn RoundBody,
        elapsed: Duration,
        next_look: &mut usize,
    ) -> bool {
        let Some(target) = self.detect else {
            return false;
        };
        if done < self.first_look.max(2) {
            return false;
        }
        if elapsed >= target.budget && done < planned {
            return true;
        }
        if done < *next_look {
            return false;
        }
        *next_look = done + done.div_ceil(20);
        body.detectable(target.alpha)
            .is_some_and(|d| d <= target.change)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    use crate::measure::fake::FakeClock;

    /// Three members; each round takes 1 s of fake time; the precision
    /// after n rounds is 1/n; round `fail_at` fails.
    struct Body<'a> {
        now: &'a Cell<u64>,
        rounds: usize,
        warm: usize,
        fail_at: Option<usize>,
    }

    impl RoundBody for Body<'_> {
        fn members(&self) -> Vec<String> {
            vec!["a".into(), "b".into(), "c".into()]
        }
        fn run_round(
            &mut self,
            round: usize,
            _: &[usize],
            warm: bool,
            _: &mut SplitMix64,
            _: &mut dyn Observer,
        ) -> Result<()> {
            if self.fail_at == Some(round) {
                return Err(Error::Measure("broken".into()));
            }
            self.now.set(self.now.get() + 1_000_000_000);
            if warm {
                self.warm += 1;
            } else {
                self.rounds += 1;
            }
            Ok(())
        }
        fn precision(&self) -> Option<f64> {
            (self.rounds >= 2).then(|| 1.0 / self.rounds as f64)
        }
        fn detectable(&self, alpha: f64) -> Option<f64> {
            assert_eq!(alpha, 0.025);
            self.precision()
        }
    }

    fn rule() -> StopRule {
        StopRule {
            warmup: 1,
            planned: 20,
            target_ci: None,
            first_look: 3,
            max_time: None,
            detect: None,
        }
    }

    fn go(rule: StopRule, fail_at: Option<usize>) -> (Rounds, usize, usize) {
        let clock = FakeClock::default();
        let mut body = Body {
            now: &clock.0,
            rounds: 0,
            warm: 0,
            fail_at,
        };
        let out = run(&mut body, &rule, 7, &clock, &mut Silent);
        (out, body.warm, body.rounds)
    }

    #[test]
    fn warm_up_then_the_planned_rounds_in_seeded_orders() {
        let (out, warm, rounds) = go(rule(), None);
        assert_eq!((warm, rounds, out.schedule.len()), (1, 20, 20));
        assert!(out.stopped_by.is_none() && out.error.is_none());
        assert!(
            out.schedule.iter().any(|o| o != &out.schedule[0]),
            "shuffled"
        );
        let (again, _, _) = go(rule(), None);
        assert_eq!(out.schedule, again.schedule, "reproducible from the seed");
    }

    #[test]
    fn the_target_is_looked_at_from_the_first_look_on() {
        // Precision 1/n ≤ 0.25 from 4 rounds; looks at 3, 4, …
        let target = StopRule {
            target_ci: Some(0.25),
            ..rule()
        };
        let (out, _, rounds) = go(target, None);
        assert_eq!(rounds, 4);
        assert_eq!(
            out.stopped_by.unwrap(),
            "every 95% interval within ±25.00% after 4 rounds"
        );
        // 1/n ≤ 0.115 from 9 rounds, but the looks are at 3, 4, 5, 6, 8, 10.
        let target = StopRule {
            target_ci: Some(0.115),
            ..rule()
        };
        assert_eq!(go(target, None).2, 10);
        // Never reached: every planned round runs, and the document says so.
        let never = StopRule {
            target_ci: Some(0.0),
            ..rule()
        };
        let (out, _, rounds) = go(never, None);
        assert_eq!(rounds, 20);
        assert!(out.stopped_by.unwrap().contains("all 20 rounds ran"));
    }

    #[test]
    fn the_time_limit_stops_after_two_rounds_at_least() {
        let limited = StopRule {
            max_time: Some(Duration::from_millis(1)),
            ..rule()
        };
        let (out, _, rounds) = go(limited, None);
        assert_eq!(rounds, 2);
        assert_eq!(out.stopped_by.unwrap(), "--max-time reached after 2 rounds");
        let limited = StopRule {
            max_time: Some(Duration::from_secs(5)),
            ..rule()
        };
        // The warm-up round's second counts too: 1 + 4 rounds = 5 s.
        assert_eq!(go(limited, None).2, 4);
    }

    #[test]
    fn a_change_to_detect_stops_the_rounds_when_detectable_or_at_its_budget() {
        let detect = |change: f64, secs: u64| StopRule {
            detect: Some(DetectTarget {
                change,
                alpha: 0.025,
                budget: Duration::from_secs(secs),
            }),
            ..rule()
        };
        // Detectable 1/n ≤ 0.25 from 4 rounds, looked at from 3 on, every round.
        let (out, _, rounds) = go(detect(0.25, 600), None);
        assert_eq!(rounds, 4);
        let t = out.target_mde.unwrap();
        assert!(t.reached && t.n == 4 && t.detectable == Some(0.25), "{t:?}");
        assert_eq!((t.unit.as_str(), t.elapsed_s), ("rounds", 5.0));
        assert!(
            out.stopped_by.is_none(),
            "the record says it, not stopped_by"
        );
        // Never detectable: the budget (5 s, the warm-up's second counted) ends it.
        let (out, _, rounds) = go(detect(0.0, 5), None);
        assert_eq!(rounds, 4);
        let t = out.target_mde.unwrap();
        assert!(!t.reached && t.detectable == Some(0.25) && t.budget_s == 5.0);
        // Nor within the planned rounds: all of them, not reached.
        let (out, _, rounds) = go(detect(0.0, 600), None);
        assert_eq!((rounds, out.target_mde.unwrap().reached), (20, false));
        // Without a target, no record.
        assert!(go(rule(), None).0.target_mde.is_none());
    }

    #[test]
    fn an_error_stops_the_rounds_and_keeps_the_schedule_so_far() {
        let (out, _, rounds) = go(rule(), Some(3));
        assert_eq!(rounds, 2);
        assert_eq!(out.schedule.len(), 3, "the failed round was started");
        assert!(matches!(out.error, Some(Error::Measure(_))));
        assert!(out.stopped_by.is_none());
    }
}
