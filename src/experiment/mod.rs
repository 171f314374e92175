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
pub mod rounds;
mod series_meters;
pub mod time;

use std::time::Duration;

use crate::bench::util::select::Case;
use crate::document::{DEFAULT_CONFIG, Document, RunInfo, Series, utc_now};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::guest::Guest;
use crate::guest::protocol::RunRequest;
use crate::measure::placement::Pin;
use crate::measure::{Clock, Harness, Interrupt, Meters, Policy, Target};
use crate::stats::SplitMix64;
use crate::stats::paired::paired_log_ratio_ci;
use case::CaseEnd;
pub use case::NOISY_CV;
use config::Applied;
pub use config::Config;
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
                let cut = s.noise.iter().any(|n| n == "interrupted" || n == "failed");
                taken - usize::from(cut)
            })
            .sum()
    }

    /// The run's length if every case took its warm-up and samples' target time.
    pub fn expected_duration(&self) -> std::time::Duration {
        self.expected_per_case() * self.steps() as u32
    }

    /// One case's warm-up and samples' target time (in one invocation).
    fn expected_per_case(&self) -> std::time::Duration {
        let p = &self.policy;
        let samples = invocations::samples_per_invocation(p.samples, self.invocations) as u64;
        std::time::Duration::from_nanos(p.warmup_ns + samples * p.sample_time_ns)
    }
}

/// The document of a run, and the error that stopped it early, if any.
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
    let local_perf = plan.perf && plan.remote.is_none();
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
    if plan.remote.is_none() && outcome.error.is_none() && !stop.is_set() {
        outcome.document.run.invocations = vec![invocations::this_process(plan.seed)];
    }
    if local_perf {
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
    // A remote host that never answered has no environment here to audit: the local one is not its.
    let unreached = plan.remote.is_some() && ready.is_err();
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
        rounds.error = body.count_perf().err();
    } else {
        body.not_counted("not counted: the run stopped before its perf counting pass");
    }
    body.record_end(&mut env);
    // After an error or a stop a guest may be busy measuring: it is killed at once.
    let guests = body.shut_down_guests(rounds.error.is_none());
    for finding in crate::env::audit::after_run(&env)
        .into_iter()
        .filter(|_| !unreached)
    {
        observer.audit(&finding);
        audit.push(finding);
    }
    let config_env_diff = body.config_env_diff();
    let run = RunInfo {
        started,
        finished: utc_now(),
        seed: plan.seed,
        policy: *harness.policy(),
        order: std::mem::take(&mut body.order),
        complete: rounds.error.is_none(),
        stopped_because: rounds.error.as_ref().map(|e| e.to_string()),
        time: None,
        configs: plan.configs.clone(),
        stopped_by: rounds.stopped_by,
        schedule: if plan.configs.is_empty() {
            Vec::new()
        } else {
            rounds.schedule
        },
        audit,
        config_env_diff,
        guests,
        label: None,
        host: plan.remote.as_ref().map(|r| r.name.clone()),
        invocations: Vec::new(),
        perf_hooks_wait_ms: None,
        meta: Default::default(),
    };
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
    /// The started guests (one per configuration that runs in a guest of
    /// its own, one per shared guest), until they are shut down.
    guests: Vec<Guest>,
    /// Which of `guests` each configuration runs in.
    guest_of: Vec<Option<usize>>,
    /// When the rounds began, on the harness's clock.
    started_ns: u64,
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
            guests: Vec::new(),
            guest_of: vec![None; configs.len()],
            started_ns: harness.clock().now_ns(),
        }
    }

    /// Starts every configuration's guest, once, before the first round: a
    /// guest of its own, or the one it shares (`in`), booted for the first
    /// configuration that names it. Returns warnings: boot parameters
    /// nothing recognised, with `allow_unknown_boot_parameters` (else an error).
    /// Checks the plan and starts the guests (a remote guest's environment
    /// replaces `env`); whether all is ready, and the audit findings so far.
    fn get_ready(&mut self, env: &mut Environment) -> (Result<()>, Vec<String>) {
        let ready = self.check().and_then(|()| self.start_guests());
        if let (Ok(_), Some(guest)) = (&ready, self.remote_guest()) {
            *env = guest.info().env.clone();
        }
        let unpinned = runs_unpinned(self.plan, self.configs);
        let mut audit = match (&self.plan.remote, &ready) {
            (Some(_), Err(_)) => Vec::new(),
            _ => crate::env::audit::before_run(env, unpinned),
        };
        audit.extend(self.emulated_guests());
        let ready = ready.map(|warnings| audit.extend(warnings));
        (ready, audit)
    }

    fn start_guests(&mut self) -> Result<Vec<String>> {
        let mut shared: Vec<(&str, usize)> = Vec::new();
        let mut warnings = Vec::new();
        for (ci, config) in self.configs.iter().enumerate() {
            let Some(spec) = &config.guest else {
                continue;
            };
            let name = config.in_guest.as_deref();
            if let Some(&(_, gi)) = shared.iter().find(|(n, _)| Some(*n) == name) {
                self.guest_of[ci] = Some(gi);
                self.guests[gi].add_config(&config.name);
                self.config_envs[ci] = Some(self.guests[gi].info().env.clone());
                continue;
            }
            let label = name.map_or_else(|| config.name.clone(), str::to_string);
            let who = match name {
                Some(name) if self.plan.remote.is_none() => format!("guest '{name}'"),
                _ => self.who(config),
            };
            let interrupt = self.harness.interrupt();
            let mut guest = Guest::start(&label, &who, spec, self.plan.logs, interrupt)?;
            if let Some(name) = name {
                shared.push((name, self.guests.len()));
                guest.add_config(&config.name);
            }
            let unknown = guest.unrecognised_parameters();
            if !unknown.is_empty() {
                let message = unrecognised(&unknown, self.plan.allow_unknown_boot_parameters);
                if !self.plan.allow_unknown_boot_parameters {
                    return Err(Error::Guest { who, message });
                }
                warnings.push(format!("{who}: {message}"));
            }
            self.config_envs[ci] = Some(guest.info().env.clone());
            self.guest_of[ci] = Some(self.guests.len());
            self.guests.push(guest);
        }
        Ok(warnings)
    }

    /// The guest configuration `ci` runs in, if any.
    fn guest(&mut self, ci: usize) -> Option<&mut Guest> {
        self.guest_of[ci].map(|gi| &mut self.guests[gi])
    }

    /// How errors and findings name `config`'s guest.
    fn who(&self, config: &Config) -> String {
        match &self.plan.remote {
            Some(remote) => format!("host '{}'", remote.name),
            None => format!("configuration '{}'", config.name),
        }
    }

    /// The audit's findings for guests that run emulated.
    fn emulated_guests(&self) -> Vec<String> {
        let started = self.configs.iter().zip(&self.guest_of);
        let mut findings: Vec<String> = started
            .filter_map(|(config, gi)| {
                let env = &self.guests[(*gi)?].info().env;
                crate::env::audit::emulated_guest(&self.who(config), env)
            })
            .collect();
        findings.dedup(); // a remote system's configurations share its one finding
        findings
    }

    /// The guest that runs the whole plan, once started.
    fn remote_guest(&self) -> Option<&Guest> {
        self.plan.remote.as_ref().and(self.guests.first())
    }

    /// Reads the load at the end of the run: here, or on the remote system
    /// (if it still answers; else the end stays unrecorded).
    fn record_end(&mut self, env: &mut Environment) {
        if self.plan.remote.is_none() {
            return crate::env::record_end(env);
        }
        let interrupt = Interrupt::none();
        let end = self.guests.first_mut().and_then(|g| g.env(&interrupt).ok());
        if let (Some(load), Some(end)) = (env.load.as_mut(), end.and_then(|e| e.load)) {
            load.end = Some(end.start);
        }
    }

    /// Ends every guest — asked to shut down when `gracefully`, killed if
    /// it does not go or otherwise — and returns what the document records
    /// of them (nothing of a remote system: its environment is the run's).
    fn shut_down_guests(&mut self, gracefully: bool) -> Vec<crate::document::GuestInfo> {
        let mut infos = Vec::new();
        for guest in std::mem::take(&mut self.guests) {
            if self.plan.remote.is_none() {
                infos.push(guest.info().clone());
            }
            if gracefully {
                guest.shutdown();
            } // else dropped: its process group is killed and reaped
        }
        infos
    }

    /// Measures `case` under configuration `ci`: here, or in its guest.
    fn measure(&mut self, ci: usize, case: &Case, pin: Option<Pin>) -> Result<(Series, CaseEnd)> {
        let (plan, harness) = (self.plan, self.harness);
        let Some(guest) = self.guest(ci) else {
            return case::run_case(case, pin, harness);
        };
        // Perf is counted once, after the rounds ([`Self::count_perf`]).
        let request = RunRequest {
            selector: case.selector(),
            policy: plan.policy,
            pin,
            perf: false,
        };
        let asked = (case.def.name, case.name());
        let series = guest.run(
            request,
            (asked.0, &asked.1),
            guest_timeout(plan),
            harness.interrupt(),
        )?;
        Ok((series, CaseEnd::Done))
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
        let counted = match self.guest(ci) {
            Some(guest) => {
                let request = RunRequest {
                    selector: case.selector(),
                    policy: plan.policy,
                    pin,
                    perf: true,
                };
                let asked = (case.def.name, case.name());
                let timeout = guest_timeout(plan);
                let in_guest =
                    guest.run(request, (asked.0, &asked.1), timeout, harness.interrupt())?;
                series_meters::take_perf(self.series_mut((ci, idx)), &in_guest);
                return Ok(());
            }
            None => case::count_case(&case, pin, self.harness)?,
        };
        let meters = self.harness.meters();
        let series = self.series_mut((ci, idx));
        let ops = series.ops_per_iter;
        series_meters::attach_perf(series, meters, ops, &counted);
        Ok(())
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

    /// Runs `block` with configuration `ci` applied: its set-up first, its
    /// tear-down after, whatever `block` returns — here, or inside its guest.
    /// A set-up that fails (or is stopped) is torn down too, and is the error.
    fn in_config<R>(&mut self, ci: usize, block: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        let configs = self.configs;
        let config = &configs[ci];
        if self.guest_of[ci].is_none() {
            // On an error in `block`, `applied` drops: the tear-down runs.
            let applied = Applied::apply(config, self.harness.interrupt())?;
            let out = block(self)?;
            applied.finish()?;
            return Ok(out);
        }
        let who = self.who(config);
        if let Some(setup) = &config.setup {
            let interrupt = self.harness.interrupt().clone();
            let guest = self.guest(ci).expect("a guest configuration has its guest");
            guest.set_who(&who);
            let what = format!("the set-up of configuration '{}'", config.name);
            if let Err(e) = guest.sh(&what, setup, &config.env, &interrupt) {
                // The set-up's failure is the error; the tear-down's would hide it.
                let _ = self.guest_teardown(ci);
                return Err(e);
            }
        } else if let Some(guest) = self.guest(ci) {
            guest.set_who(&who);
        }
        let out = block(self);
        let torn = self.guest_teardown(ci);
        let out = out?;
        torn.map(|()| out)
    }

    /// Runs configuration `ci`'s tear-down inside its guest, if it has one
    /// and the guest can take it: after an interrupt, once the request the
    /// guest was busy with has ended (within [`SETTLE`]); a guest that has
    /// ended or does not finish in time is killed with whatever it had applied.
    fn guest_teardown(&mut self, ci: usize) -> Result<()> {
        let config = &self.configs[ci];
        let Some(teardown) = &config.teardown else {
            return Ok(());
        };
        let what = format!("the tear-down of configuration '{}'", config.name);
        let guest = self.guest(ci).expect("a guest configuration has its guest");
        if !guest.settle(SETTLE) {
            return Ok(());
        }
        // Not stopped by an interrupt: it is what undoes the set-up.
        guest.sh(&what, teardown, &config.env, &Interrupt::none())
    }

    /// The environment configuration `ci` measures in now: here, or its guest's.
    fn env_of(&mut self, ci: usize) -> Result<Environment> {
        let interrupt = self.harness.interrupt().clone();
        match self.guest(ci) {
            None => Ok(crate::env::capture_from(&crate::env::probe::Sys::real())),
            Some(guest) => guest.env(&interrupt),
        }
    }

    fn series_mut(&mut self, key: (usize, usize)) -> &mut Series {
        let (_, series) = self
            .done
            .iter_mut()
            .find(|(k, _)| *k == key)
            .expect("a series for every case measured");
        series
    }

    /// Privileges and devices, checked for every case under every
    /// configuration (its parameters may differ) before anything is measured.
    fn check(&self) -> Result<()> {
        if self.plan.remote.is_some() {
            return check_remote_configs(&self.plan.configs); // its agent checks the cases
        }
        self.configs
            .iter()
            .flat_map(|config| {
                self.plan
                    .cases
                    .iter()
                    .map(move |c| with_overrides(c, config))
            })
            .try_for_each(|c| (c.def.check)(&c.params))
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
        let (mut series, end) = self
            .measure(ci, case, pin)
            .inspect_err(|e| observer.case_failed(e))?;
        series.config = config.name.clone();
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
            let config_has_setup = self.configs[ci].setup.is_some();
            self.in_config(ci, |body| {
                // Each configuration's environment as its first set-up left it
                // (a guest's, without one, is the one it reported when it started).
                let has_guest = body.guest_of[ci].is_some();
                if round == 0 && !body.plan.configs.is_empty() && (!has_guest || config_has_setup) {
                    body.config_envs[ci] = Some(body.env_of(ci)?);
                }
                let mut case_order: Vec<usize> = (0..body.plan.cases.len()).collect();
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
        for slot in 0..self.plan.cases.len() {
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
}

/// A remote plan's configurations run on the remote system, their set-ups
/// and tear-downs by its agent: none may name a guest of its own.
pub fn check_remote_configs(configs: &[Config]) -> Result<()> {
    match configs.iter().find(|c| c.guest.is_some()) {
        Some(c) => Err(Error::Usage(format!(
            "configuration '{}' names a guest, but a fleet host runs every configuration \
             itself (its set-up and tear-down by the host's agent); drop its guest (or `in`), \
             or run it with `osbench run` on that host",
            c.name
        ))),
        None => Ok(()),
    }
}

/// The configurations a run applies: the plan's, or one implicit
/// [`DEFAULT_CONFIG`]; on a remote system, every one in its guest (one
/// session, shared), so each set-up and tear-down runs there, by its agent.
fn configs_to_run(plan: &Plan) -> Vec<Config> {
    let mut configs = if plan.configs.is_empty() {
        vec![Config {
            name: DEFAULT_CONFIG.into(),
            ..Config::default()
        }]
    } else {
        plan.configs.clone()
    };
    if let Some(remote) = &plan.remote {
        for config in &mut configs {
            config.guest = Some(remote.guest.clone());
            config.in_guest = Some(remote.name.clone());
        }
    }
    configs
}

/// How long a guest left busy by an interrupt has to finish its request
/// before a tear-down is sent to it.
const SETTLE: Duration = Duration::from_secs(5);

/// Why a guest's unrecognised boot parameters stop the run (or, `allowed`, do not).
fn unrecognised(words: &[String], allowed: bool) -> String {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let what = if allowed {
        "ran anyway (--allow-unknown-boot-parameters)"
    } else {
        "check the spelling, or pass --allow-unknown-boot-parameters to run anyway"
    };
    format!(
        "no part of the guest's kernel recognised the boot parameter{} {}: {} reached its \
         init as an argument or environment variable, as words that no kernel option names \
         do; {what}",
        if words.len() == 1 { "" } else { "s" },
        quoted.join(", "),
        if words.len() == 1 { "it" } else { "they" },
    )
}

/// How long a guest may take for one case: guests can be hundreds of times
/// slower than the host (UML's system calls).
fn guest_timeout(plan: &Plan) -> std::time::Duration {
    std::time::Duration::from_secs(600).max(plan.expected_per_case() * 200)
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
            s.noise = noise.iter().map(|n| n.to_string()).collect();
            s
        };
        // Six cases without rounds, every one complete: all six.
        let done: Vec<Series> = (0..6).map(|_| series(0, &[])).collect();
        assert_eq!(Plan::steps_done(&done), 6);
        // The sixth interrupted while sampling: five.
        let mut cut = done.clone();
        cut[5].noise.push("interrupted".into());
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
            policy: Policy {
                samples: 3,
                sample_time_ns: 1_000_000,
                warmup_ns: 0,
            },
            perf: false,
            remote: None,
            logs: false,
            allow_unknown_boot_parameters: false,
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
            .map(|s| (s.config.as_str(), s.case.as_str()))
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
        assert!(out.document.series.iter().all(|s| s.config == "a"));
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
