//! Running a plan: every selected case, in a seeded random order, each placed,
//! set up, measured by the harness and torn down, into one [`Document`].
//!
//! The order is shuffled so that slow drift of the machine (minutes-long
//! fast/slow phases, docs/design-notes.md "Precision of a hackbench run")
//! does not always favour the same case; the
//! seed is recorded so the order can be reproduced. A failure or an interrupt
//! stops the run but keeps every case already completed (and the samples of an
//! interrupted one). With configurations, the run is organised in rounds
//! ([`rounds`], shared with `osbench time`): each round applies every
//! configuration once (set-up, every case, tear-down) in a fresh seeded order,
//! so drift between rounds affects all alike.

pub mod agent;
pub mod bisect;
mod case;
pub mod config;
pub mod file;
pub mod invocations;
pub mod knob;
mod observe;
mod place;
mod plan;
pub mod profiling;
pub mod rounds;
mod series_meters;
mod sweep;
pub mod time;

use std::time::Duration;

use crate::bench::util::select::Case;
use crate::document::{DEFAULT_CONFIG, Document, NoiseFlag, RunInfo, Series, utc_now};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::measure::placement::Pin;
use crate::measure::{Clock, Harness, Interrupt, Meters, Policy, Target};
use crate::rng::SplitMix64;
use crate::stats::paired::paired_log_ratio_ci;
use case::CaseEnd;
pub use case::NOISY_CV;
pub use config::Config;
use place::Places;
pub use place::check_remote_configs;
pub use rounds::{Observer, Silent};
use rounds::{RoundBody, StopRule};

/// How long one case of a run without configurations may sample for
/// `--target-ci` when no `--max-time` shares out the run's time.
pub const DEFAULT_CASE_LIMIT: Duration = Duration::from_secs(10);
/// The most samples one case takes for `--target-ci`.
pub const MAX_TARGET_SAMPLES: usize = 10_000;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Plan {
    pub cases: Vec<Case>,
    pub seed: u64,
    /// `--pin`; `None` takes each family's default placement, else pins
    /// one-task benchmarks to one CPU and leaves the rest alone.
    pub pin: Option<Pin>,
    /// Configurations to compare; empty means one implicit [`DEFAULT_CONFIG`].
    pub configs: Vec<Config>,
    /// Rounds; each runs every configuration once per case, in a fresh random order.
    /// With `target_ci`, the most rounds to run.
    pub rounds: usize,
    /// Fresh processes the cases are measured in, one after another
    /// ([`invocations`]); 1: this process. Only without configurations.
    pub invocations: usize,
    /// Stop adding rounds once every paired ratio's 95 % interval is narrower
    /// than ± this fraction (at least 3 rounds), or at `max_time`.
    pub target_ci: Option<f64>,
    pub max_time: Option<std::time::Duration>,
    /// With configurations: keep adding rounds (at most `rounds`) until every
    /// case's paired comparison of each configuration with the first would
    /// detect this change, or its budget ends.
    pub target_mde: Option<rounds::DetectTarget>,
    /// How much to measure per case.
    pub policy: Policy,
    /// Count perf events in a short pass per configuration × case, after
    /// all rounds (false: `--no-perf`; rusage is read either way).
    pub perf: bool,
    /// A system that runs the whole plan in place of this one (a fleet
    /// host): its agent measures every case and runs every configuration's
    /// set-up and tear-down, and its environment is the run's. The
    /// configurations must not name guests of their own.
    pub remote: Option<Remote>,
    /// Ask each guest's (and a remote system's) agent for its system logs
    /// with the environment it reports when it starts (`--logs`, the
    /// default): its own kernel's, read where it runs.
    pub logs: bool,
    /// A boot parameter that nothing in a guest recognised (it reached the
    /// guest's init) is a warning, not an error that stops the run.
    pub allow_unknown_boot_parameters: bool,
    /// `--profile`: where each case's time goes, sampled in passes of its
    /// own after the rounds and the counting pass ([`profiling`]).
    pub profile: Option<profiling::ProfilePlan>,
    /// `run --load`: loads run beside every case of every configuration
    /// that names none of its own ([`Plan::loads_of`]).
    pub loads: Vec<crate::document::LoadSpec>,
}

/// Another system the plan runs on, through its agent.
#[derive(Debug, Clone)]
pub struct Remote {
    /// Its name, in errors and as the document's `run.host`.
    pub name: String,
    pub guest: crate::document::GuestSpec,
}

impl Plan {
    /// How many cases the run measures: every case once, or once per
    /// configuration and round.
    pub fn steps(&self) -> usize {
        match self.configs.len() {
            0 => self.cases.len() * self.invocations.max(1),
            n => self.cases.len() * n * self.rounds,
        }
    }

    /// How many of [`Plan::steps`] `series` (a run's, perhaps interrupted)
    /// hold complete: each case's rounds or invocations, less the one that
    /// an interrupt or an error cut short.
    pub fn steps_done(series: &[Series]) -> usize {
        series
            .iter()
            .map(|s| {
                let taken = s.rounds.len().max(s.invocations.len()).max(1);
                let cut = s.noise.iter().any(NoiseFlag::cut_short);
                taken - usize::from(cut)
            })
            .sum()
    }

    /// The run's length if every case took its warm-up and samples' target
    /// time; with a change to detect, at most its budget and the round (or
    /// invocation) under way when it ends, or at least the budget without
    /// configurations (whose invocations go on until it).
    pub fn expected_duration(&self) -> std::time::Duration {
        let profiled = self.profile.map_or(Duration::ZERO, |p| {
            let cases = (self.cases.len() * self.configs.len().max(1)) as u32;
            p.pass_length(self) * (p.passes as u32) * cases
        });
        let planned = self.expected_per_case() * self.steps() as u32 + profiled;
        let Some(target) = self.target_mde else {
            return planned;
        };
        let one = self.expected_per_case() * (self.cases.len() * self.configs.len().max(1)) as u32;
        if self.configs.is_empty() {
            planned.max(target.budget + one)
        } else {
            planned.min(target.budget + one)
        }
    }

    /// One case's warm-up and samples' target time (in one invocation).
    pub(crate) fn expected_per_case(&self) -> std::time::Duration {
        let p = &self.policy;
        let samples = invocations::samples_per_invocation(p.samples, self.invocations) as u64;
        std::time::Duration::from_nanos(p.warmup_ns + samples * p.sample_time_ns)
    }
}

/// What a run produced — `run`'s, `time`'s, a fleet host's, a boot's: the
/// document with everything measured, and the error that stopped it early
/// (a failing case or command, an interrupt), if any.
#[derive(Debug)]
pub struct Outcome {
    pub document: Document,
    pub error: Option<Error>,
}

/// Runs `plan` on CLOCK_MONOTONIC, with the meters it asks for; `interrupt`
/// stops it between samples, keeping what was measured.
pub fn run(
    plan: &Plan,
    interrupt: Interrupt,
    env: Environment,
    observer: &mut dyn Observer,
) -> Outcome {
    if plan.invocations > 1 {
        return invocations::run(plan, interrupt, env, observer);
    }
    // A remote plan is measured there, with the remote's counters.
    let here = place::measured_here(plan);
    let local_perf = plan.perf && here;
    let stop = interrupt.clone();
    let mut harness = Harness::new(plan.policy, interrupt)
        .with_meters(Meters::open(local_perf))
        .counting_later();
    if let (Some(ci), true) = (plan.target_ci, plan.configs.is_empty()) {
        harness = harness.with_target(Target {
            ci,
            max_samples: MAX_TARGET_SAMPLES,
        });
    }
    let mut outcome = run_with(plan, &harness, env, observer);
    // The drift sentinels of this one process, read once its cases are done
    // (so nothing delays the first case), and only after a run that ended
    // well (so nothing delays a stop).
    if here && outcome.error.is_none() && !stop.is_set() {
        outcome.document.run.invocations = vec![invocations::this_process(plan.seed)];
    }
    if local_perf || (here && plan.profile.is_some()) {
        // Whatever is timed next (another osbench, say) must not run with the hooks on.
        let waited = invocations::wait_for_perf_hooks(harness.meters(), &stop);
        outcome.document.run.perf_hooks_wait_ms = Some(waited);
    }
    // A stop after the last sample still counts as one: the samples are
    // kept, and the exit status says the run was interrupted.
    if outcome.error.is_none() && stop.is_set() {
        outcome.error = Some(Error::Interrupted);
    }
    outcome
}

/// Runs `plan` with `harness` (tests give it a fake clock).
pub fn run_with<C: Clock>(
    plan: &Plan,
    harness: &Harness<C>,
    mut env: Environment,
    observer: &mut dyn Observer,
) -> Outcome {
    let started = utc_now();
    let configs = configs_to_run(plan);
    let mut body = RunRounds::new(plan, &configs, harness);
    let (ready, mut audit) = body.get_ready(&mut env);
    // A remote system that never answered has no environment here to audit.
    let auditable = body.places.auditable(ready.is_ok());
    audit.iter().for_each(|f| observer.audit(f));
    let mut rounds = match ready {
        Err(e) => rounds::Rounds {
            error: Some(e),
            ..Default::default()
        },
        Ok(()) => rounds::run(
            &mut body,
            &plan.stop_rule(),
            plan.seed,
            harness.clock(),
            observer,
        ),
    };
    if rounds.error.is_none() {
        rounds.error = body.count_perf().and_then(|()| body.profile_passes()).err();
    } else {
        body.not_counted("not counted: the run stopped before its perf counting pass");
    }
    // The values found go back before the guests that hold them end.
    let (knobs, restored) = body.places.restore_knobs();
    if rounds.error.is_none() {
        rounds.error = restored.err();
    }
    body.places.record_end(&mut env);
    // After an error or a stop a guest may be busy measuring: it is killed at once.
    let guests = body.places.shut_down(rounds.error.is_none());
    for finding in crate::env::audit::after_run(&env)
        .into_iter()
        .filter(|_| auditable)
    {
        observer.audit(&finding);
        audit.push(finding);
    }
    let config_env_diff = body.config_env_diff();
    let mut run = RunInfo::new(started, plan.seed, *harness.policy())
        .ended_by(rounds.error.as_ref().map(|e| e as &dyn std::fmt::Display));
    run.order = std::mem::take(&mut body.order);
    run.skipped = body.skipped();
    run.configs = plan.configs.clone();
    run.stopped_by = rounds.stopped_by;
    run.target_mde = rounds.target_mde;
    if !plan.configs.is_empty() {
        run.schedule = rounds.schedule;
    }
    run.audit = audit;
    run.config_env_diff = config_env_diff;
    run.guests = guests;
    run.knobs = knobs;
    run.host = body.places.host();
    Outcome {
        document: Document::new(env, run, body.into_series()),
        error: rounds.error,
    }
}

impl Plan {
    /// When the rounds stop: one round without configurations; with them,
    /// `rounds`, or fewer when the precision target or the time limit is met.
    /// (Without configurations the target and the time limit are each
    /// case's, in the harness: see [`RunRounds::run_case`].)
    fn stop_rule(&self) -> StopRule {
        let plain = self.configs.is_empty();
        StopRule {
            warmup: 0,
            planned: if plain { 1 } else { self.rounds.max(1) },
            target_ci: self.target_ci.filter(|_| !plain),
            first_look: 3,
            max_time: self.max_time.filter(|_| !plain),
            detect: self.target_mde.filter(|_| !plain),
        }
    }
}

/// The rounds of a run: every configuration applied in turn, running every case.
struct RunRounds<'a, C: Clock> {
    plan: &'a Plan,
    configs: &'a [Config],
    harness: &'a Harness<C>,
    /// Series by (configuration, case) index, merged over rounds.
    done: Vec<((usize, usize), Series)>,
    /// Every case as it was started, "bench case" (with round and configuration).
    order: Vec<String>,
    /// With configurations: the environment after each one's first set-up
    /// (a guest's, as its agent reported it), to show what the set-up or the
    /// guest (the declared factor) changed.
    config_envs: Vec<Option<Environment>>,
    /// Where each configuration runs, and the guests started for them.
    places: Places,
    /// When the rounds began, on the harness's clock.
    started_ns: u64,
    /// By case index: why some configuration's place cannot run it (it is
    /// skipped in every configuration, so each is compared on the same cases).
    unavailable: Vec<Option<String>>,
}

impl<'a, C: Clock> RunRounds<'a, C> {
    fn new(plan: &'a Plan, configs: &'a [Config], harness: &'a Harness<C>) -> Self {
        Self {
            plan,
            configs,
            harness,
            done: Vec::new(),
            order: Vec::new(),
            config_envs: vec![None; configs.len()],
            places: Places::new(plan, configs),
            started_ns: harness.clock().now_ns(),
            unavailable: vec![None; plan.cases.len()],
        }
    }

    /// Checks the plan and starts every configuration's guest (a remote
    /// system's environment replaces `env`); whether all is ready, and the
    /// audit findings so far (with the warnings of starting the guests).
    fn get_ready(&mut self, env: &mut Environment) -> (Result<()>, Vec<String>) {
        let (plan, configs) = (self.plan, self.configs);
        let places = &mut self.places;
        let interrupt = self.harness.interrupt();
        let ready = (places.check(plan, configs))
            .and_then(|()| places.start(plan, configs, interrupt))
            .and_then(|warnings| places.prepare_knobs(configs).map(|()| warnings));
        let ready = ready.and_then(|warnings| {
            self.unavailable = self.places.unavailable(plan, configs, interrupt)?;
            if !plan.cases.is_empty() && self.runnable_slots().next().is_none() {
                return Err(Error::Usage(format!(
                    "nothing left to run: every case asked for was skipped ({})",
                    self.skipped().join("; ")
                )));
            }
            Ok(warnings)
        });
        for (ci, known) in self.config_envs.iter_mut().enumerate() {
            *known = self.places.reported_env(ci).cloned();
        }
        if ready.is_ok() {
            self.places.run_env(env);
        }
        let unpinned = runs_unpinned(self.plan, self.configs);
        let mut audit = if self.places.auditable(ready.is_ok()) {
            crate::env::audit::before_run(env, unpinned)
        } else {
            Vec::new()
        };
        audit.extend(self.places.emulated_guests(self.configs));
        let ready = ready.map(|warnings| audit.extend(warnings));
        (ready, audit)
    }

    /// The perf counting pass of every configuration × case measured, once,
    /// after the rounds (so the kernel's perf hooks, on for a second after
    /// each pass, slow no timed sample): each configuration applied once
    /// more, each of its cases set up and counted ([`case::count_case`]) —
    /// or, in a guest, measured once more with perf on and its counters
    /// taken. A failure leaves the cases not yet counted saying why.
    fn count_perf(&mut self) -> Result<()> {
        if !self.plan.perf {
            return Ok(());
        }
        let mut keys: Vec<(usize, usize)> = self.done.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        let mut configs: Vec<usize> = keys.iter().map(|k| k.0).collect();
        configs.dedup();
        for ci in configs {
            let counted = self.in_config(ci, |body| {
                for &(_, idx) in keys.iter().filter(|k| k.0 == ci) {
                    body.count_one(ci, idx)?;
                }
                Ok(())
            });
            if let Err(e) = counted {
                self.not_counted(&format!("not counted: the perf counting pass failed: {e}"));
                return Err(e);
            }
        }
        Ok(())
    }

    /// Counts case `idx` under configuration `ci` (applied), into its series.
    fn count_one(&mut self, ci: usize, idx: usize) -> Result<()> {
        let config = &self.configs[ci];
        let case = with_overrides(&self.plan.cases[idx], config);
        let pin = config.pin.or(self.plan.pin);
        let (plan, harness) = (self.plan, self.harness);
        let series = series_in(&mut self.done, (ci, idx));
        self.places
            .of(ci)
            .count((&case, pin), plan, harness, series)
    }

    /// Says why every series not counted yet has no perf counters.
    fn not_counted(&mut self, why: &str) {
        if !self.plan.perf {
            return;
        }
        for (_, series) in &mut self.done {
            if series.perf_pass.is_empty() {
                for name in crate::measure::counters::PERF_NAMES {
                    series.counter_samples.remove(name);
                    series.counters_unavailable.insert(name.into(), why.into());
                }
                series_meters::summarize_counters(series);
            }
        }
    }

    /// Runs `block` with configuration `ci` applied in its place: its knobs,
    /// then its audit rules and probes, then its set-up; its tear-down
    /// after, then the rules and probes removed, whatever `block` returns. A set-up that
    /// fails (or is stopped) is torn down too, and is the error; so is a
    /// tear-down that fails after `block` went well.
    fn in_config<R>(&mut self, ci: usize, block: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        let (configs, harness) = (self.configs, self.harness);
        let config = &configs[ci];
        let who = self.places.who(config);
        self.places.set_knobs(ci)?;
        let _observing = observe::install(&config.observers)?;
        let applied = self
            .places
            .of(ci)
            .apply(config, &who, harness.interrupt())?;
        let out = block(self);
        let torn = self.places.of(ci).tear_down(applied);
        let out = out?;
        torn.map(|()| out)
    }

    /// Runs case `idx` under configuration `ci` once, merging its series.
    fn run_case(
        &mut self,
        round: usize,
        ci: usize,
        idx: usize,
        observer: &mut dyn Observer,
    ) -> Result<()> {
        let (plan, config) = (self.plan, &self.configs[ci]);
        let case = &with_overrides(&plan.cases[idx], config);
        self.order.push(if plan.configs.is_empty() {
            format!("{} {}", case.def.name, case.name())
        } else {
            let (bench, name) = (case.def.name, case.name());
            format!("{} {}: {bench} {name}", round + 1, config.name)
        });
        if !plan.configs.is_empty() {
            observer.step(round, plan.rounds, &config.name);
        }
        observer.case_started(self.order.len() - 1, plan.steps(), case);
        if plan.configs.is_empty() {
            self.harness.set_case_limit(self.case_limit());
        }
        let pin = config.pin.or(plan.pin);
        let harness = self.harness;
        let loads = plan.loads_of(config);
        let (mut series, end) = (self.places.of(ci))
            .measure(case, (pin, loads), plan, harness)
            .inspect_err(|e| observer.case_failed(e))?;
        series.key.config = config.name.clone();
        series.slot = (!plan.configs.is_empty()).then_some(idx);
        observer.case_finished(&series);
        case::merge(&mut self.done, (ci, idx), series);
        match end {
            CaseEnd::Done => Ok(()),
            CaseEnd::Interrupted => Err(Error::Interrupted),
            CaseEnd::Failed(e) => Err(e),
        }
    }

    /// How long the next case of a run without configurations may sample for
    /// the precision target: an equal share of what is left of `--max-time`
    /// among the cases not yet run, or [`DEFAULT_CASE_LIMIT`].
    fn case_limit(&self) -> Duration {
        let Some(max) = self.plan.max_time else {
            return DEFAULT_CASE_LIMIT;
        };
        let elapsed = self
            .harness
            .clock()
            .now_ns()
            .saturating_sub(self.started_ns);
        let left = max.saturating_sub(Duration::from_nanos(elapsed));
        let cases_left = (self.plan.steps() + 1)
            .saturating_sub(self.order.len())
            .max(1);
        left / cases_left as u32
    }

    /// What was skipped, "BENCH CASE: why", for the document.
    fn skipped(&self) -> Vec<String> {
        self.unavailable.iter().flatten().cloned().collect()
    }

    /// The cases measured (none of their places lacks what they need).
    fn runnable_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.plan.cases.len()).filter(|&slot| self.unavailable[slot].is_none())
    }

    /// The environment keys the configurations' set-ups changed.
    fn config_env_diff(&self) -> Vec<(String, Vec<String>)> {
        let envs: Option<Vec<&Environment>> = self.config_envs.iter().map(Option::as_ref).collect();
        match envs {
            Some(envs) if envs.len() >= 2 => crate::env::diff(&envs),
            _ => Vec::new(),
        }
    }

    /// The series, by configuration then case, each summarized over its rounds.
    fn into_series(self) -> Vec<Series> {
        summarized(self.done)
    }
}

/// Series measured one round at a time outside a run (the boots of a
/// kernel-boot job, `queue::boot_rounds`), merged as a run merges its
/// rounds: `measured` in round order, each keyed (configuration, case
/// slot), with its configuration and slot set; returned by configuration
/// then case, each summarized over its rounds.
pub fn merge_rounds(measured: Vec<((usize, usize), Series)>) -> Vec<Series> {
    let mut done = Vec::new();
    for (key, series) in measured {
        case::merge(&mut done, key, series);
    }
    summarized(done)
}

/// `done` by configuration then case, each series summarized over its rounds.
fn summarized(mut done: Vec<((usize, usize), Series)>) -> Vec<Series> {
    done.sort_by_key(|(key, _)| *key);
    done.into_iter()
        .map(|(_, s)| case::resummarize(s))
        .collect()
}

impl<C: Clock> RoundBody for RunRounds<'_, C> {
    fn members(&self) -> Vec<String> {
        self.configs.iter().map(|c| c.name.clone()).collect()
    }

    fn run_round(
        &mut self,
        round: usize,
        order: &[usize],
        _warm: bool,
        rng: &mut SplitMix64,
        observer: &mut dyn Observer,
    ) -> Result<()> {
        for &ci in order {
            let config = &self.configs[ci];
            let config_has_setup = config.setup.is_some() || !config.knobs.is_empty();
            self.in_config(ci, |body| {
                // Each configuration's environment as its first set-up left it
                // (without a set-up, a place that reported one when it started,
                // a guest, keeps that one).
                let known = body.config_envs[ci].is_some() && !config_has_setup;
                if round == 0 && !body.plan.configs.is_empty() && !known {
                    let interrupt = body.harness.interrupt();
                    body.config_envs[ci] = Some(body.places.of(ci).environment(interrupt)?);
                }
                let mut case_order: Vec<usize> = body.runnable_slots().collect();
                rng.shuffle(&mut case_order);
                for idx in case_order {
                    body.run_case(round, ci, idx, observer)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    /// The widest relative half-width of the paired ratios of every candidate
    /// configuration's per-round medians to the first's, case by case.
    fn precision(&self) -> Option<f64> {
        let rounds_of = |c: usize, slot: usize| {
            self.done
                .iter()
                .find(|(k, _)| *k == (c, slot))
                .map(|(_, s)| &s.rounds)
        };
        let mut widest: f64 = 0.0;
        for slot in self.runnable_slots() {
            let base = rounds_of(0, slot)?;
            for c in 1..self.configs.len() {
                let cand = rounds_of(c, slot)?;
                let n = base.len().min(cand.len());
                if n < 3 {
                    return None;
                }
                // The interval alone: the sign-flip test is 2^n sums a look.
                let ratio = paired_log_ratio_ci(&base[..n], &cand[..n]);
                widest = widest.max(ratio.relative_half_width());
            }
        }
        Some(widest)
    }

    /// The largest change detectable with 80 % power at `alpha` by the
    /// paired comparison of a candidate configuration's per-round medians
    /// with the first's, case by case.
    fn detectable(&self, alpha: f64) -> Option<f64> {
        let rounds_of = |c: usize, slot: usize| {
            self.done
                .iter()
                .find(|(k, _)| *k == (c, slot))
                .map(|(_, s)| &s.rounds)
        };
        let mut largest: f64 = 0.0;
        for slot in self.runnable_slots() {
            let base = rounds_of(0, slot)?;
            for c in 1..self.configs.len() {
                let cand = rounds_of(c, slot)?;
                let power = rounds::DETECT_POWER;
                let d = crate::stats::power::paired_detectable(base, cand, alpha, power)?;
                largest = largest.max(d);
            }
        }
        (self.configs.len() >= 2).then_some(largest)
    }
}

/// The configurations a run applies: the plan's, or one implicit
/// [`DEFAULT_CONFIG`] (where each runs is [`Places::new`]'s to say).
fn configs_to_run(plan: &Plan) -> Vec<Config> {
    if plan.configs.is_empty() {
        vec![Config {
            name: DEFAULT_CONFIG.into(),
            ..Config::default()
        }]
    } else {
        plan.configs.clone()
    }
}

/// The series of `(configuration, case)` in `done`.
fn series_in(done: &mut [((usize, usize), Series)], key: (usize, usize)) -> &mut Series {
    let (_, series) = done
        .iter_mut()
        .find(|(k, _)| *k == key)
        .expect("a series for every case measured");
    series
}

/// Whether some case runs several tasks with no pinning (the scheduler places them).
fn runs_unpinned(plan: &Plan, configs: &[Config]) -> bool {
    configs.iter().any(|config| {
        let pin = config.pin.or(plan.pin);
        plan.cases.iter().any(|c| {
            let case = with_overrides(c, config);
            (case.def.tasks)(&case.params) > 1
                && matches!(pin.or(case.def.default_pin), None | Some(Pin::None))
        })
    })
}

/// The case with the configuration's parameter overrides for its benchmark
/// (validated when the plan was made).
fn with_overrides(case: &Case, config: &Config) -> Case {
    let mut case = case.clone();
    for o in config.params.iter().filter(|o| o.bench == case.def.name) {
        case.params.set(&o.key, &o.value);
    }
    case
}

#[cfg(test)]
mod tests {

    #[test]
    fn steps_done_leaves_out_the_step_an_interrupt_cut_short() {
        let summary = crate::stats::summarize(&[1.0]).unwrap();
        let series = |rounds: usize, noise: &[&str]| {
            let mut s = Series::new(
                "b",
                "c".into(),
                crate::document::Unit::Ns,
                vec![1.0],
                summary.clone(),
            );
            s.rounds = vec![1.0; rounds];
            s.noise = noise.iter().map(|&n| NoiseFlag::from(n)).collect();
            s
        };
        // Six cases without rounds, every one complete: all six.
        let done: Vec<Series> = (0..6).map(|_| series(0, &[])).collect();
        assert_eq!(Plan::steps_done(&done), 6);
        // The sixth interrupted while sampling: five.
        let mut cut = done.clone();
        cut[5].noise.push(NoiseFlag::Interrupted);
        assert_eq!(Plan::steps_done(&cut), 5);
        // Rounds: 3 + 3 complete, the third round of the second cut short.
        assert_eq!(
            Plan::steps_done(&[series(3, &[]), series(3, &["interrupted"])]),
            5
        );
    }

    use super::*;
    use crate::bench::{BenchDef, ParamKind, ParamSpec, Params, Workload};
    use crate::document::{Overhead, Override};
    use crate::measure::fake::FakeClock;
    use crate::measure::placement::Placement;

    thread_local! {
        /// The fake clock of this test thread: it moves only when a fake workload runs.
        static NOW: FakeClock = FakeClock::default();
    }

    /// Each iteration costs `cost` ns of fake time.
    struct Fake(u64);
    impl Workload for Fake {
        fn run(&mut self, iters: u64) -> Result<()> {
            NOW.with(|now| now.advance(iters * self.0));
            Ok(())
        }
    }

    fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
        match p.int("fail") {
            0 => Ok(Box::new(Fake(p.int("cost") as u64))),
            _ => Err(Error::Measure("set-up failed on purpose".into())),
        }
    }

    static FAKE: BenchDef = BenchDef {
        name: "fake",
        summary: "a workload that advances a fake clock",
        params: &[
            ParamSpec {
                name: "cost",
                help: "ns per iteration",
                kind: ParamKind::Int { min: 1, max: 1000 },
                default: "100",
            },
            ParamSpec {
                name: "fail",
                help: "1: the set-up fails",
                kind: ParamKind::Int { min: 0, max: 1 },
                default: "0",
            },
        ],
        case_name: |p| format!("c{}", p.int("cost")),
        op: |_| "one fake iteration".into(),
        anchor: |_| "none".into(),
        setup,
        ..BenchDef::DEFAULTS
    };

    fn case(cost: &str) -> Case {
        Case {
            def: &FAKE,
            params: Params::new(&FAKE, &[("cost", cost)]),
            samples: None,
            copies: None,
        }
    }

    fn config(name: &str, bench_params: &[(&str, &str)], teardown: Option<String>) -> Config {
        let params = bench_params
            .iter()
            .map(|(key, value)| Override {
                bench: "fake".into(),
                key: key.to_string(),
                value: value.to_string(),
            })
            .collect();
        Config {
            name: name.into(),
            params,
            teardown,
            ..Config::default()
        }
    }

    #[test]
    fn a_change_to_detect_bounds_the_expected_duration_by_its_budget() {
        // 2 cases × 3 samples of 1 ms: a round of two configurations is 12 ms.
        let mut p = plan(1, vec![config("a", &[], None), config("b", &[], None)]);
        p.rounds = 1000;
        assert_eq!(p.expected_duration(), Duration::from_secs(12));
        p.target_mde = Some(rounds::DetectTarget {
            change: 0.02,
            alpha: 0.05,
            budget: Duration::from_secs(5),
        });
        assert_eq!(p.expected_duration(), Duration::from_millis(5012));
        // Without configurations, invocations go on until the budget.
        p.configs.clear();
        assert_eq!(p.expected_duration(), Duration::from_millis(5006));
    }

    fn plan(seed: u64, configs: Vec<Config>) -> Plan {
        Plan {
            cases: vec![case("100"), case("300")],
            seed,
            pin: None,
            configs,
            rounds: 10,
            invocations: 1,
            target_ci: None,
            max_time: None,
            target_mde: None,
            policy: Policy {
                samples: 3,
                sample_time_ns: 1_000_000,
                warmup_ns: 0,
            },
            perf: false,
            remote: None,
            logs: false,
            allow_unknown_boot_parameters: false,
            profile: None,
            loads: Vec::new(),
        }
    }

    fn go(plan: &Plan) -> Outcome {
        let harness = Harness::with_clock(
            NOW.with(FakeClock::clone),
            plan.policy,
            Overhead::ZERO,
            Interrupt::none(),
        );
        run_with(plan, &harness, crate::env::capture(), &mut Silent)
    }

    fn two_configs() -> Vec<Config> {
        vec![
            config("a", &[], None),
            config("b", &[("cost", "200")], None),
        ]
    }

    #[test]
    fn rounds_stop_on_the_precision_target_from_the_third() {
        // Fake time is exact: every interval has zero width at the first look.
        let p = Plan {
            target_ci: Some(0.01),
            ..plan(7, two_configs())
        };
        let out = go(&p);
        assert!(out.error.is_none(), "{:?}", out.error);
        let run = &out.document.run;
        assert_eq!(run.schedule.len(), 3);
        assert_eq!(
            run.stopped_by.as_deref(),
            Some("every 95% interval within ±1.00% after 3 rounds")
        );
        assert_eq!(out.document.series.len(), 4);
        assert!(out.document.series.iter().all(|s| s.rounds.len() == 3));
    }

    #[test]
    fn rounds_stop_at_the_time_limit_after_two() {
        let p = Plan {
            target_ci: Some(0.0),
            max_time: Some(std::time::Duration::from_nanos(1)),
            ..plan(7, two_configs())
        };
        let run = go(&p).document.run;
        assert_eq!(run.schedule.len(), 2);
        assert_eq!(
            run.stopped_by.as_deref(),
            Some("--max-time reached after 2 rounds")
        );
    }

    #[test]
    fn the_order_is_reproducible_from_the_seed() {
        let order = |seed| {
            let run = go(&plan(seed, two_configs())).document.run;
            (run.order, run.schedule)
        };
        let first = order(7);
        assert_eq!(first.0.len(), 10 * 2 * 2);
        assert_eq!(first, order(7));
        assert_ne!(first, order(8));
        // The series come in configuration then case order, whatever the run order.
        let doc = go(&plan(8, two_configs())).document;
        let names: Vec<(&str, &str)> = doc
            .series
            .iter()
            .map(|s| (s.key.config.as_str(), s.key.case.as_str()))
            .collect();
        assert_eq!(
            names,
            [("a", "c100"), ("a", "c300"), ("b", "c200"), ("b", "c200")]
        );
    }

    #[test]
    fn a_failing_case_still_runs_the_tear_down_and_keeps_what_was_measured() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("torn-down");
        let teardown = format!("echo b >> {}", mark.display());
        let configs = vec![
            config("a", &[], None),
            config("b", &[("fail", "1")], Some(teardown)),
        ];
        let out = go(&plan(7, configs));
        let e = out.error.expect("the set-up failure stops the run");
        assert!(e.to_string().contains("set-up failed on purpose"), "{e}");
        assert!(!out.document.run.complete);
        assert_eq!(std::fs::read_to_string(&mark).unwrap(), "b\n");
        // Whatever configuration "a" measured before "b" failed is kept.
        assert!(out.document.series.iter().all(|s| s.key.config == "a"));
    }

    #[test]
    fn perf_is_counted_once_per_configuration_and_case_after_the_rounds() {
        use crate::measure::fake::{FakePerf, FakeSource};
        let perf = std::sync::Arc::new(FakePerf::default());
        let p = Plan {
            perf: true,
            ..plan(7, two_configs())
        };
        let source = FakeSource(std::sync::Arc::clone(&perf));
        let harness = Harness::with_clock(
            NOW.with(FakeClock::clone),
            p.policy,
            Overhead::ZERO,
            Interrupt::none(),
        )
        .with_meters(Meters::with_perf(Box::new(source)))
        .counting_later();
        let out = run_with(&p, &harness, crate::env::capture(), &mut Silent);
        assert!(out.error.is_none(), "{:?}", out.error);
        // 10 rounds of 2 configurations × 2 cases timed; 4 passes in all.
        assert_eq!(out.document.run.order.len(), 40);
        let log = perf.log.lock().unwrap();
        assert_eq!(log.iter().filter(|e| *e == "open").count(), 4, "{log:?}");
        for s in &out.document.series {
            assert_eq!(
                s.perf_pass.len(),
                crate::measure::PERF_PASS_BATCHES,
                "{s:?}"
            );
            assert_eq!(s.counter_samples["context_switches"].len(), 3);
            assert!(s.counters.contains_key("context_switches"));
            assert!(s.counters_unavailable.is_empty(), "{s:?}");
        }
    }

    #[test]
    fn each_case_of_a_plain_run_says_whether_it_reached_the_target() {
        let p = Plan {
            target_ci: Some(0.01),
            ..plan(7, Vec::new())
        };
        let harness = Harness::with_clock(
            NOW.with(FakeClock::clone),
            p.policy,
            Overhead::ZERO,
            Interrupt::none(),
        )
        .with_target(Target {
            ci: 0.01,
            max_samples: 100,
        });
        let out = run_with(&p, &harness, crate::env::capture(), &mut Silent);
        assert!(out.error.is_none(), "{:?}", out.error);
        assert!(out.document.run.stopped_by.is_none());
        for s in &out.document.series {
            // Fake time is exact: no width at the first look.
            let t = s.target.as_ref().unwrap();
            assert!(t.reached, "{t:?}");
            assert_eq!(t.stopped_by, "reached ±0.00% with 3 samples");
        }
    }
}
