//! A run measured in several invocations (`run --invocations N`): N fresh
//! osbench processes, one after another, each measuring every selected case
//! in its own seeded order, merged into one document whose series keep each
//! invocation's samples and median.
//!
//! Samples inside one process share what is fixed for it — the memory
//! layout, the pages it got, the host's phase — so only separate processes
//! show how far the next run will land (Kalibera & Jones, ISMM 2013;
//! Mytkowicz et al., ASPLOS 2009). Each invocation's layout is varied on
//! purpose, as Stabilizer (Curtsinger & Berger, ASPLOS 2013) and hyperfine's
//! environment offset do: a random environment size (which moves the initial
//! stack) and a random heap offset. Each invocation is this osbench's own
//! agent (`osbench agent`, a command guest), so it is measured exactly as a
//! guest's cases are. The drift sentinels (`measure::sentinel`) are read
//! here, between invocations, outside every case. Perf is counted once per
//! case, here, after the last invocation, and the run then waits for the
//! kernel's perf hooks to switch off, so they slow nothing timed next.
//!
//! With a change to detect (`run --target-mde`), invocations are added
//! after the ones asked for until a comparison of this run with another run
//! like it (as many invocations, the same spread) would detect the change
//! with 80 % power, or the time budget ends.
//!
//! Left out: configurations (their rounds are paired already), guests,
//! fleets and `--target-ci`, which the command line refuses with several
//! invocations.

use super::{Observer, Outcome, Plan, Remote, case, profiling, series_meters};
use crate::bench::util::select::Case;
use crate::document::{
    DEFAULT_CONFIG, Document, GuestSpec, Invocation, InvocationSpread, RunInfo, Series, utc_now,
};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::measure::sentinel::Sentinels;
use crate::measure::{Harness, Interrupt, Meters};
use crate::rng::SplitMix64;
use crate::stats::power::unpaired_detectable;
use crate::stats::replicates::{replicate_interval, spread_parts};

/// The environment variable that carries an invocation's heap offset to its agent.
pub const HEAP_OFFSET_ENV: &str = "OSBENCH_HEAP_OFFSET";
/// The environment variable whose length pads an invocation's environment.
pub const ENV_PAD_ENV: &str = "OSBENCH_ENV_PAD";
/// The most bytes an invocation's environment is padded by (a page).
pub const MAX_ENV_PAD: usize = 4096;
/// The largest heap offset (64 KiB), in steps of 16 bytes.
pub const MAX_HEAP_OFFSET: usize = 64 << 10;

/// The most invocations a run takes (`--invocations`, and `--target-mde`'s additions).
pub const MOST_INVOCATIONS: usize = 1000;

/// Accepted samples of each case per invocation: `total` shared out, rounded up.
pub fn samples_per_invocation(total: usize, invocations: usize) -> usize {
    total.div_ceil(invocations.max(1)).max(1)
}

/// Runs `plan` in `plan.invocations` fresh processes and merges them.
pub fn run(
    plan: &Plan,
    interrupt: Interrupt,
    env: Environment,
    observer: &mut dyn Observer,
) -> Outcome {
    let started = utc_now();
    let n = plan.invocations.max(1);
    if let Err(e) = plan.cases.iter().try_for_each(|c| (c.def.check)(&c.params)) {
        let run = run_info(plan, started, Vec::new(), Vec::new(), Some(&e));
        return Outcome {
            document: Document::new(env, run, Vec::new()),
            error: Some(e),
        };
    }
    let mut done = Invocations::new(plan.seed);
    let mut error = None;
    let clock = std::time::Instant::now();
    let most = match plan.target_mde {
        Some(_) => MOST_INVOCATIONS.max(n),
        None => n,
    };
    for k in 0..most {
        error = done.invoke(plan, (k, n), &interrupt, &env, observer);
        if error.is_some() || (k + 1 >= n && enough(plan, &done.merged, clock.elapsed())) {
            break;
        }
    }
    let target_mde = plan.target_mde.map(|t| {
        let detectable = detectable(&done.merged, t.alpha);
        t.outcome(
            done.records.len(),
            "invocations",
            detectable,
            clock.elapsed(),
        )
    });
    let mut series: Vec<Series> = done.merged.into_iter().map(summarize_invocations).collect();
    let mut wait_ms = None;
    if (plan.perf || plan.profile.is_some()) && error.is_none() {
        match count_and_profile(plan, &mut series, &interrupt) {
            Ok(waited) => wait_ms = Some(waited),
            Err(e) => error = Some(e),
        }
    }
    let mut run = run_info(plan, started, done.records, done.audit, error.as_ref());
    run.perf_hooks_wait_ms = wait_ms;
    run.target_mde = target_mde;
    Outcome {
        document: Document::new(done.first_env.unwrap_or(env), run, series),
        error,
    }
}

/// The invocations run so far, merged.
struct Invocations {
    sentinels: Option<Sentinels>,
    /// Draws each invocation's layout.
    layouts: SplitMix64,
    merged: Vec<Series>,
    records: Vec<Invocation>,
    /// Audit findings, each once.
    audit: Vec<String>,
    /// The first invocation's environment, the run's.
    first_env: Option<Environment>,
}

impl Invocations {
    fn new(seed: u64) -> Self {
        Self {
            sentinels: Sentinels::new(),
            layouts: SplitMix64::new(seed ^ 0x1a70_07e5),
            merged: Vec::new(),
            records: Vec::new(),
            audit: Vec::new(),
            first_env: None,
        }
    }

    fn read(&self) -> Vec<crate::document::SentinelReading> {
        self.sentinels
            .as_ref()
            .map(Sentinels::read)
            .unwrap_or_default()
    }

    /// Runs invocation `k` (from 0) of the `n` asked for and merges it; the
    /// error that stopped it, if any.
    fn invoke(
        &mut self,
        plan: &Plan,
        (k, n): (usize, usize),
        interrupt: &Interrupt,
        env: &Environment,
        observer: &mut dyn Observer,
    ) -> Option<Error> {
        let mut record = Invocation {
            index: k + 1,
            env_pad: self.layouts.below(MAX_ENV_PAD),
            heap_offset: 16 * self.layouts.below(MAX_HEAP_OFFSET / 16),
            seed: plan.seed.wrapping_add(k as u64),
            sentinels_before: self.read(),
            sentinels_after: Vec::new(),
        };
        let sub = plan.for_invocation(
            record.seed,
            samples_per_invocation(plan.policy.samples, n),
            Remote {
                name: format!("invocation {}", k + 1),
                guest: agent_spec(&record),
            },
        );
        let mut offset = Offset {
            inner: observer,
            done: k * plan.cases.len(),
            total: n.max(k + 1) * plan.cases.len(),
            seen: &mut self.audit,
        };
        let outcome = super::run(&sub, interrupt.clone(), env.clone(), &mut offset);
        record.sentinels_after = self.read();
        self.records.push(record);
        self.first_env.get_or_insert(outcome.document.env);
        for series in outcome.document.series {
            add_invocation(&mut self.merged, series);
        }
        outcome.error
    }
}

/// Whether to stop adding invocations after those asked for: always without
/// a change to detect; with one, once it is detectable or its budget spent.
fn enough(plan: &Plan, merged: &[Series], elapsed: std::time::Duration) -> bool {
    let Some(target) = plan.target_mde else {
        return true;
    };
    elapsed >= target.budget || detectable(merged, target.alpha).is_some_and(|d| d <= target.change)
}

/// The largest change, over the cases, that a comparison of this run with
/// another like it (as many invocations, each case's spread between them)
/// detects with 80 % power at `alpha`; `None` before every case has two
/// invocations.
fn detectable(merged: &[Series], alpha: f64) -> Option<f64> {
    if merged.is_empty() {
        return None;
    }
    let power = super::rounds::DETECT_POWER;
    merged
        .iter()
        .map(|s| unpaired_detectable(&s.invocations, alpha, power))
        .try_fold(0.0, |acc: f64, d| d.map(|d| acc.max(d)))
}

/// The command guest of one invocation: this osbench's agent, its
/// environment padded and its heap offset given.
fn agent_spec(record: &Invocation) -> GuestSpec {
    GuestSpec::Command {
        command: format!(
            "{ENV_PAD_ENV}={} {HEAP_OFFSET_ENV}={} exec {{osbench}} agent",
            "x".repeat(record.env_pad),
            record.heap_offset
        ),
    }
}

/// Adds one invocation's series to the series of the same case (a new
/// case: the first invocation that measured it).
fn add_invocation(merged: &mut Vec<Series>, mut new: Series) {
    new.invocations = vec![new.summary.median];
    new.invocation_samples = vec![new.samples.len()];
    let found = merged.iter_mut().find(|s| {
        (
            s.key.bench.as_str(),
            s.key.case.as_str(),
            s.key.config.as_str(),
        ) == (
            new.key.bench.as_str(),
            new.key.case.as_str(),
            new.key.config.as_str(),
        )
    });
    let Some(s) = found else {
        merged.push(new);
        return;
    };
    s.invocations.push(new.summary.median);
    s.invocation_samples.push(new.samples.len());
    let label = format!("invocation {}", s.invocations.len());
    s.rounds.extend(std::mem::take(&mut new.rounds));
    s.round_samples
        .extend(std::mem::take(&mut new.round_samples));
    case::append(s, new, &label);
}

/// The series summarised over its invocations: every sample pooled for the
/// summary, its 95 % interval from the invocations' medians (both levels),
/// and the spread between and within invocations.
fn summarize_invocations(s: Series) -> Series {
    let mut s = case::resummarize(s);
    if s.invocations.len() < 2 {
        return s;
    }
    if let Some((lo, hi)) = replicate_interval(s.summary.median, &s.invocations) {
        (s.summary.ci_low, s.summary.ci_high) = (lo, hi);
        s.summary.ci_coverage = s.summary.ci_level;
    }
    let mut groups = Vec::new();
    let mut at = 0;
    for &n in &s.invocation_samples {
        groups.push(&s.samples[at..at + n]);
        at += n;
    }
    s.invocation_spread = spread_parts(&groups).map(|(between_cv, within_cv)| InvocationSpread {
        between_cv,
        within_cv,
    });
    s
}

/// The perf counting pass of every case (with `perf`) and its profiling
/// passes (with `--profile`), here, after the last invocation; then the
/// wait for the kernel's perf hooks to switch off (ms).
fn count_and_profile(plan: &Plan, series: &mut [Series], interrupt: &Interrupt) -> Result<f64> {
    let harness = Harness::new(plan.policy, interrupt.clone())
        .with_meters(Meters::open(plan.perf))
        .counting_later();
    for case in plan.cases.iter().filter(|_| plan.perf) {
        let Some(s) = series.iter_mut().find(|s| is_case(s, case)) else {
            continue;
        };
        let counted = case::count_case(case, plan.pin, &harness)?;
        let is_perf = |name: &str| crate::measure::counters::PERF_NAMES.contains(&name);
        s.counters_unavailable.retain(|name, _| !is_perf(name));
        let ops = s.ops_per_iter;
        series_meters::attach_perf(s, harness.meters(), ops, &counted);
    }
    if let Some(profile) = plan.profile {
        profiling::profile_here(plan, profile, series, is_case, &harness)?;
    }
    Ok(wait_for_perf_hooks(harness.meters(), interrupt))
}

/// The record of a run measured in this one process: its seed and the
/// drift sentinels read now, after it (none when their memory cannot be had).
pub(super) fn this_process(seed: u64) -> Invocation {
    Invocation {
        index: 1,
        env_pad: 0,
        heap_offset: 0,
        seed,
        sentinels_before: Vec::new(),
        sentinels_after: Sentinels::new()
            .as_ref()
            .map(Sentinels::read)
            .unwrap_or_default(),
    }
}

/// Sleeps until the perf hooks of `meters`' last counting pass are off, or
/// a stop is requested; the ms waited.
pub(super) fn wait_for_perf_hooks(meters: &Meters, interrupt: &Interrupt) -> f64 {
    let start = std::time::Instant::now();
    while meters.perf_hooks_on() && !interrupt.is_set() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    start.elapsed().as_secs_f64() * 1e3
}

fn is_case(s: &Series, case: &Case) -> bool {
    s.key.bench == case.def.name && s.key.case == case.name() && s.key.config == DEFAULT_CONFIG
}

/// The run's record: the plan as it ran, its invocations and their findings.
fn run_info(
    plan: &Plan,
    started: String,
    invocations: Vec<Invocation>,
    audit: Vec<String>,
    error: Option<&Error>,
) -> RunInfo {
    let mut run = RunInfo::new(started, plan.seed, plan.policy)
        .ended_by(error.map(|e| e as &dyn std::fmt::Display));
    run.order = (1..=invocations.len())
        .flat_map(|k| {
            plan.cases
                .iter()
                .map(move |c| format!("{k}: {} {}", c.def.name, c.name()))
        })
        .collect();
    run.audit = audit;
    run.invocations = invocations;
    run
}

/// An observer that numbers cases across invocations and says each audit
/// finding once.
struct Offset<'a> {
    inner: &'a mut dyn Observer,
    done: usize,
    total: usize,
    seen: &'a mut Vec<String>,
}

impl Observer for Offset<'_> {
    fn case_started(&mut self, index: usize, _total: usize, case: &Case) {
        self.inner.case_started(self.done + index, self.total, case);
    }
    fn step(&mut self, round: usize, rounds: usize, config: &str) {
        self.inner.step(round, rounds, config);
    }
    fn case_finished(&mut self, series: &Series) {
        self.inner.case_finished(series);
    }
    fn case_failed(&mut self, error: &Error) {
        self.inner.case_failed(error);
    }
    fn audit(&mut self, finding: &str) {
        if !self.seen.iter().any(|f| f == finding) {
            self.seen.push(finding.to_string());
            self.inner.audit(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_shared_out_rounded_up() {
        assert_eq!(samples_per_invocation(11, 3), 4);
        assert_eq!(samples_per_invocation(11, 1), 11);
        assert_eq!(samples_per_invocation(2, 5), 1);
    }

    #[test]
    fn invocations_merge_into_one_series_with_each_median() {
        let one = |v: &[f64]| {
            let mut s = Series::new(
                "spin",
                "work=10".into(),
                crate::document::Unit::Ns,
                v.to_vec(),
                crate::stats::summarize(v).unwrap(),
            );
            s.rounds = vec![crate::stats::summary::median(v)];
            s.round_samples = vec![v.len()];
            s
        };
        let mut merged = Vec::new();
        add_invocation(&mut merged, one(&[10.0, 10.2, 10.1]));
        add_invocation(&mut merged, one(&[11.0, 11.1, 11.2, 10.9]));
        add_invocation(&mut merged, one(&[10.5, 10.6]));
        let s = summarize_invocations(merged.remove(0));
        assert_eq!(s.invocations, [10.1, 11.05, 10.55]);
        assert_eq!(s.invocation_samples, [3, 4, 2]);
        assert_eq!((s.samples.len(), s.summary.n), (9, 9));
        let (lo, hi) = replicate_interval(s.summary.median, &s.invocations).unwrap();
        assert_eq!((s.summary.ci_low, s.summary.ci_high), (lo, hi));
        let spread = s.invocation_spread.unwrap();
        assert!(spread.between_cv > spread.within_cv, "{spread:?}");
        crate::document::validate::validate(&Document::new(
            crate::env::capture(),
            run_info(
                &Plan {
                    cases: Vec::new(),
                    seed: 1,
                    pin: None,
                    configs: Vec::new(),
                    rounds: 1,
                    invocations: 3,
                    target_ci: None,
                    max_time: None,
                    target_mde: None,
                    policy: crate::document::Policy {
                        samples: 9,
                        sample_time_ns: 1,
                        warmup_ns: 0,
                    },
                    perf: false,
                    remote: None,
                    logs: false,
                    allow_unknown_boot_parameters: false,
                    profile: None,
                    loads: Vec::new(),
                },
                utc_now(),
                Vec::new(),
                Vec::new(),
                None,
            ),
            vec![s],
        ))
        .unwrap();
    }
}
