//! `osbench time`: whole commands timed in interleaved, randomized rounds.
//!
//! Each round runs every command once (after its `--prepare`) in a fresh
//! seeded order, together with an empty command — osbench's tiny static
//! program — that measures the floor of starting any process, so drift of the
//! machine hits all of them alike and the comparison can pair them round by
//! round. `--setup` runs once before everything and `--cleanup` once after,
//! whatever happens (error, Ctrl-C — which also stops a hung `--setup` or
//! `--prepare`); `--timeout` bounds each `--prepare` as it bounds each run.
//! Warm-up rounds are run the same way and not recorded. The rounds are `experiment::rounds`, shared with `osbench run`.
//!
//! How many rounds: `--runs N`; otherwise hyperfine's rule adapted to rounds
//! (at least 10, and at least 3 s of the slowest command); or, with a
//! precision target, until the target is reached; or, with a change to
//! detect (`--target-mde`), until every comparison would detect it with 80 %
//! power, or its time budget ends. Parameter scans are
//! expanded into commands before (`experiment::time::command::build`). Left out:
//! hyperfine's shell spawning-time subtraction (we report the floor instead of
//! subtracting it) and its randomized environment size.

pub mod command;
mod profile;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::Outcome;
use super::config::{Applied, Watch};
use super::rounds::{self, DETECT_POWER, DetectTarget, Observer, RoundBody, StopRule};
use crate::document::{
    self, COMMAND_BENCH, Document, ReferenceSeries, RunInfo, Series, TimeInfo, Unit,
};
use crate::env::Environment;
use crate::env::probe::Sys;
use crate::error::{Error, Result};
use crate::measure::energy::{EnergyDomain, Rapl};
use crate::measure::spawn::{CommandRun, SpawnOptions, own_max_rss_kb, run_once};
use crate::measure::{Interrupt, Monotonic, Policy, RawSample};
use crate::rng::SplitMix64;
use crate::stats::paired::{block_medians, paired_log_ratio_ci};
use crate::stats::power::paired_detectable;
use crate::stats::summary::{median, summarize};
use command::CommandSpec;

/// How many rounds to run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunCount {
    /// Exactly this many.
    Fixed(usize),
    /// hyperfine's rule: at least `min_runs`, and enough for `min_time` of the
    /// slowest command (judged from the first round), at most `max_runs`.
    Auto {
        min_runs: usize,
        max_runs: usize,
        min_time: Duration,
    },
}

/// Everything `osbench time` was asked to do.
#[derive(Debug, Clone)]
pub struct TimePlan {
    pub commands: Vec<CommandSpec>,
    pub count: RunCount,
    /// Unrecorded rounds first.
    pub warmup: usize,
    /// Shell commands: before every run, once before all, once after all.
    pub prepare: Option<String>,
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    pub spawn: SpawnOptions,
    /// Keep timing commands that fail (they are still recorded as failed).
    pub ignore_failure: bool,
    pub seed: u64,
    /// Stop once the 95 % interval of every comparison (or, for one command,
    /// of its median) is within ± this fraction — from `min_runs` rounds on,
    /// at most `max_runs`.
    pub target_ci: Option<f64>,
    pub max_time: Option<Duration>,
    /// Keep adding rounds (from `min_runs`, at most `max_runs`) until the
    /// paired comparison of every command with the first would detect this
    /// change, or its budget ends.
    pub target_mde: Option<DetectTarget>,
    /// `--profile`: each command profiled after the rounds, one run per pass.
    pub profile: Option<crate::experiment::profiling::ProfilePlan>,
}

/// One member of a round: a command, or the empty command.
struct Member {
    program: PathBuf,
    argv: Vec<String>,
    runs: Vec<CommandRun>,
    /// Joules per RAPL zone of each recorded run (empty without RAPL).
    joules: Vec<Vec<f64>>,
}

/// Checks every command (programs exist, directory exists) before anything runs.
pub fn check(plan: &TimePlan) -> Result<Vec<PathBuf>> {
    if let Some(dir) = &plan.spawn.cwd
        && !dir.is_dir()
    {
        return Err(Error::Measure(format!(
            "--cwd {} is not a directory",
            dir.display()
        )));
    }
    let path_var: Option<OsString> = plan
        .spawn
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.into())
        .or_else(|| std::env::var_os("PATH"));
    plan.commands
        .iter()
        .map(|c| c.resolve(path_var.as_ref(), plan.spawn.cwd.as_deref()))
        .collect()
}

/// Runs the plan; `programs` are its commands' programs as [`check`]
/// resolved them. `Err` only when nothing could start (the empty command, a
/// failing `--setup`); later failures come back in [`Outcome::error`]
/// with everything measured until then.
pub fn run(
    plan: &TimePlan,
    programs: Vec<PathBuf>,
    interrupt: &Interrupt,
    mut env: Environment,
    observer: &mut dyn Observer,
) -> Result<Outcome> {
    let mut audit = crate::env::audit::before_run(&env, false);
    audit.iter().for_each(|f| observer.audit(f));
    let rapl = Rapl::open(&Sys::real());
    let started = document::utc_now();
    let tiny = crate::bench::proc::write_tiny()?;
    let tiny_path = std::ffi::OsStr::from_bytes(tiny.path.as_bytes());
    let mut body = TimeRounds::new(plan, programs, tiny_path, rapl.as_ref().ok(), interrupt)?;
    let hook_env: BTreeMap<String, String> = plan.spawn.env.iter().cloned().collect();
    let hooks = Applied::hooks(
        &hook_env,
        plan.setup.as_deref().map(|c| ("--setup".to_string(), c)),
        plan.cleanup
            .as_deref()
            .map(|c| ("--cleanup".to_string(), c)),
        interrupt,
    )?;
    let rounds = rounds::run(
        &mut body,
        &plan.stop_rule(),
        plan.seed,
        &Monotonic,
        observer,
    );
    let mut error = rounds.error;
    if let (None, Some(profile)) = (&error, plan.profile) {
        error = body.profile_passes(profile.passes).err();
    }
    if let Err(e) = hooks.finish()
        && error.is_none()
    {
        error = Some(e);
    }
    crate::env::record_end(&mut env);
    for finding in crate::env::audit::after_run(&env) {
        observer.audit(&finding);
        audit.push(finding);
    }
    let (series, floor) = body.into_series(&rapl);
    let policy = Policy {
        samples: rounds.schedule.len(),
        sample_time_ns: 0,
        warmup_ns: 0,
    };
    let mut run = RunInfo::new(started, plan.seed, policy)
        .ended_by(error.as_ref().map(|e| e as &dyn std::fmt::Display));
    run.order = plan
        .commands
        .iter()
        .map(|c| c.label().to_string())
        .collect();
    run.stopped_by = rounds.stopped_by;
    run.target_mde = rounds.target_mde;
    run.schedule = rounds.schedule;
    run.audit = audit;
    run.time = Some(plan.time_info(hook_env, floor));
    let document = Document::new(env, run, series);
    Ok(Outcome { document, error })
}

impl TimePlan {
    /// Rounds: the fixed count; or from `min_runs`, with hyperfine's rule
    /// after the first round; or, with a target, up to `max_runs`, looked at
    /// from `min_runs` on.
    fn stop_rule(&self) -> StopRule {
        let (min_runs, max_runs) = match self.count {
            RunCount::Fixed(n) => (n, n),
            RunCount::Auto {
                min_runs, max_runs, ..
            } => (min_runs, max_runs),
        };
        StopRule {
            warmup: self.warmup,
            planned: if self.target_ci.is_some() || self.target_mde.is_some() {
                max_runs
            } else {
                min_runs
            },
            target_ci: self.target_ci,
            first_look: min_runs,
            max_time: self.max_time,
            detect: self.target_mde,
        }
    }

    /// Whether the commands run through `sh -c` (the empty command then does too).
    fn shell(&self) -> bool {
        self.commands.iter().any(|c| c.shell)
    }

    /// The settings recorded in `run.time`.
    fn time_info(&self, env: BTreeMap<String, String>, floor: Option<ReferenceSeries>) -> TimeInfo {
        TimeInfo {
            warmup: self.warmup,
            prepare: self.prepare.clone(),
            setup: self.setup.clone(),
            cleanup: self.cleanup.clone(),
            timeout_s: self.spawn.timeout.map(|t| t.as_secs_f64()),
            cwd: self.spawn.cwd.as_ref().map(|d| d.display().to_string()),
            env,
            floor,
            rss_floor_kb: own_max_rss_kb(),
        }
    }
}

/// The rounds of a `time` run: the commands and the empty command.
struct TimeRounds<'a> {
    plan: &'a TimePlan,
    /// The commands in plan order, then the empty command.
    members: Vec<Member>,
    /// Spawn options of the empty command (its output is never shown).
    quiet: SpawnOptions,
    rapl: Option<&'a Rapl>,
    interrupt: &'a Interrupt,
    /// Each command's profile (`--profile`), filled after the rounds.
    profiles: Vec<Option<crate::document::ProfileOutcome>>,
}

impl<'a> TimeRounds<'a> {
    /// The members, after one untimed run of the empty command with the
    /// commands' directory and environment (`write_tiny` has already waited
    /// out a stray write descriptor, ETXTBSY).
    fn new(
        plan: &'a TimePlan,
        programs: Vec<PathBuf>,
        tiny: &std::ffi::OsStr,
        rapl: Option<&'a Rapl>,
        interrupt: &'a Interrupt,
    ) -> Result<Self> {
        let member = |program, argv| Member {
            program,
            argv,
            runs: Vec::new(),
            joules: Vec::new(),
        };
        let mut members: Vec<Member> = plan
            .commands
            .iter()
            .zip(programs)
            .map(|(c, program)| member(program, c.argv.clone()))
            .collect();
        let line = tiny.to_string_lossy().into_owned();
        members.push(if plan.shell() {
            let argv = vec!["sh".into(), "-c".into(), line];
            member(PathBuf::from("/bin/sh"), argv)
        } else {
            member(PathBuf::from(tiny), vec![line])
        });
        let quiet = SpawnOptions {
            show_output: false,
            ..plan.spawn.clone()
        };
        let floor = members.last().expect("the empty command is a member");
        run_once(&floor.program, &floor.argv, &quiet)?;
        Ok(Self {
            plan,
            members,
            quiet,
            rapl,
            interrupt,
            profiles: vec![None; plan.commands.len()],
        })
    }

    /// Runs member `i` once (a command after `--prepare`, or the empty
    /// command with the quiet options), recording it unless `warm`.
    fn run_member(&mut self, i: usize, warm: bool) -> Result<()> {
        let plan = self.plan;
        self.interrupt.check()?;
        let is_floor = i == plan.commands.len();
        if !is_floor {
            self.prepare()?;
        }
        let m = &mut self.members[i];
        let opts = if is_floor { &self.quiet } else { &plan.spawn };
        // Energy is read just outside the run (RAPL counts the whole machine).
        let rapl = self.rapl;
        let before = rapl.and_then(Rapl::read);
        let run = run_once(&m.program, &m.argv, opts)?;
        let joules = match (rapl, before, rapl.and_then(Rapl::read)) {
            (Some(r), Some(b), Some(a)) => r.joules(&b, &a),
            _ => Vec::new(),
        };
        if !run.succeeded() && !plan.ignore_failure && !is_floor {
            return Err(Error::Measure(format!(
                "command '{}' {}{}; fix it, or time it anyway with --ignore-failure",
                plan.commands[i].line,
                run.outcome(),
                if warm { " during warm-up" } else { "" }
            )));
        }
        if !warm {
            m.runs.push(run);
            m.joules.push(joules);
        }
        Ok(())
    }

    /// Runs `--prepare`, if given, as before each run of a command.
    fn prepare(&self) -> Result<()> {
        let Some(prepare) = &self.plan.prepare else {
            return Ok(());
        };
        let env = self.plan.spawn.env.iter().cloned().collect();
        let watch = Watch {
            stop: Some(self.interrupt),
            timeout: self.plan.spawn.timeout,
        };
        crate::experiment::config::sh("--prepare", &env, prepare, watch)
    }

    /// The commands' series (those that ran) and the empty command's.
    fn into_series(
        mut self,
        rapl: &std::result::Result<Rapl, String>,
    ) -> (Vec<Series>, Option<ReferenceSeries>) {
        let floor_runs = self.members.pop().map(|m| m.runs).unwrap_or_default();
        let floor_op = if self.plan.shell() {
            "sh -c of a 165-byte static program that exits at once, spawn to reaped"
        } else {
            "spawn + exit + reap of a 165-byte static program (osbench's empty command)"
        };
        let rss_floor_kb = own_max_rss_kb();
        let series = self
            .plan
            .commands
            .iter()
            .zip(self.members)
            .enumerate()
            .filter(|(_, (_, m))| !m.runs.is_empty())
            .map(|(slot, (spec, m))| {
                let mut s = command_series(spec, slot, m.runs, rss_floor_kb);
                set_energy(&mut s, rapl, &m.joules);
                s.profile = self.profiles[slot].take();
                s
            })
            .collect();
        (series, reference_of(floor_op, &floor_runs))
    }
}

impl RoundBody for TimeRounds<'_> {
    fn members(&self) -> Vec<String> {
        let n = self.members.len();
        (0..n).map(|i| label_of(self.plan, i, n)).collect()
    }

    fn run_round(
        &mut self,
        _round: usize,
        order: &[usize],
        warm: bool,
        _rng: &mut SplitMix64,
        _observer: &mut dyn Observer,
    ) -> Result<()> {
        order.iter().try_for_each(|&i| self.run_member(i, warm))
    }

    fn precision(&self) -> Option<f64> {
        precision(&self.members[..self.plan.commands.len()])
    }

    fn detectable(&self, alpha: f64) -> Option<f64> {
        detectable(&self.members[..self.plan.commands.len()], alpha)
    }

    fn replan(&self, planned: usize) -> usize {
        let targeted = self.plan.target_ci.is_some() || self.plan.target_mde.is_some();
        match (self.plan.count, targeted) {
            (
                RunCount::Auto {
                    min_runs,
                    max_runs,
                    min_time,
                },
                false,
            ) => auto_rounds(&self.members, min_runs, max_runs, min_time),
            _ => planned,
        }
    }
}

fn label_of(plan: &TimePlan, i: usize, members: usize) -> String {
    if i + 1 == members {
        "(empty command)".into()
    } else {
        plan.commands[i].label().to_string()
    }
}

/// Rounds for `min_time` of the slowest member, from its first run.
fn auto_rounds(members: &[Member], min_runs: usize, max_runs: usize, min_time: Duration) -> usize {
    let slowest = members
        .iter()
        .filter_map(|m| m.runs.first())
        .map(|r| r.wall_s)
        .fold(0.0, f64::max);
    let wanted = if slowest > 0.0 {
        (min_time.as_secs_f64() / slowest).ceil() as usize
    } else {
        min_runs
    };
    wanted.clamp(min_runs, max_runs.max(min_runs))
}

/// The widest relative 95 % half-width: of the paired ratio of each command
/// to the first, or of the one command's median.
fn precision(commands: &[Member]) -> Option<f64> {
    let walls: Vec<Vec<f64>> = commands.iter().map(|m| walls(&m.runs)).collect();
    if let [only] = walls.as_slice() {
        let s = summarize(only)?;
        return Some((s.ci_high - s.ci_low) / 2.0 / s.median);
    }
    let base = block_medians(&walls[0]);
    walls[1..]
        .iter()
        .map(|w| {
            let cand = block_medians(w);
            (base.len().min(cand.len()) >= 2)
                .then(|| paired_log_ratio_ci(&base, &cand).relative_half_width())
        })
        .try_fold(0.0, |acc: f64, w| w.map(|w| acc.max(w)))
}

/// The largest change detectable with 80 % power at level `alpha` by the
/// paired comparison of each command to the first, over the same blocks of
/// rounds as that comparison ([`block_medians`]); `None` with one command or
/// fewer than two rounds.
fn detectable(commands: &[Member], alpha: f64) -> Option<f64> {
    let walls: Vec<Vec<f64>> = commands.iter().map(|m| walls(&m.runs)).collect();
    let rounds = walls.iter().map(Vec::len).min()?;
    if walls.len() < 2 || rounds < 2 {
        return None;
    }
    let base = block_medians(&walls[0][..rounds]);
    walls[1..]
        .iter()
        .map(|w| paired_detectable(&base, &block_medians(&w[..rounds]), alpha, DETECT_POWER))
        .try_fold(0.0, |acc: f64, d| d.map(|d| acc.max(d)))
}

fn walls(runs: &[CommandRun]) -> Vec<f64> {
    runs.iter().map(|r| r.wall_s).collect()
}

/// The empty command's series, or `None` before its first run.
fn reference_of(op: &str, runs: &[CommandRun]) -> Option<ReferenceSeries> {
    let samples = walls(runs);
    Some(ReferenceSeries {
        op: op.into(),
        summary: summarize(&samples)?,
        raw: runs.iter().map(raw_of).collect(),
        samples,
    })
}

fn raw_of(r: &CommandRun) -> RawSample {
    RawSample {
        iters: 1,
        elapsed_ns: (r.wall_s * 1e9).round() as u64,
    }
}

/// A command's series: samples are wall seconds of every recorded run.
fn command_series(
    spec: &CommandSpec,
    slot: usize,
    runs: Vec<CommandRun>,
    rss_floor_kb: u64,
) -> Series {
    let samples = walls(&runs);
    let summary = summarize(&samples).expect("only commands with runs get a series");
    let label = spec.label().to_string();
    let mut s = Series::new(COMMAND_BENCH, label, Unit::S, samples, summary);
    s.params
        .insert("command".into(), Value::String(spec.line.clone()));
    s.params.insert("shell".into(), Value::Bool(spec.shell));
    if !spec.parameters.is_empty() {
        let values = spec
            .parameters
            .iter()
            .map(|(name, value)| (name.clone(), Value::String(value.clone())))
            .collect();
        s.params.insert("parameters".into(), Value::Object(values));
    }
    s.op = if spec.shell {
        "one run of the command through sh -c, spawn to exit".into()
    } else {
        "one run of the command (no shell), spawn to exit".into()
    };
    let no_shell = if spec.shell { "" } else { "-N " };
    s.anchor = format!("hyperfine {no_shell}'{}'", spec.line);
    s.raw = runs.iter().map(raw_of).collect();
    s.slot = Some(slot);
    // Each round runs every command once.
    s.round_samples = vec![1; runs.len()];
    s.counter_samples = run_counters(&runs);
    s.counters = s
        .counter_samples
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), summarize(v)?)))
        .collect();
    let why = "not counted for whole commands: their counters come from wait4's rusage";
    s.counters_unavailable = PERF_COUNTERS
        .iter()
        .map(|c| (c.to_string(), why.to_string()))
        .collect();
    s.warnings = run_warnings(&runs, rss_floor_kb);
    s.runs = runs;
    s
}

/// The perf counters a whole command is not counted with.
const PERF_COUNTERS: [&str; 5] = [
    "context_switches",
    "cpu_migrations",
    "page_faults",
    "cycles",
    "instructions",
];

/// Failed runs (timed with --ignore-failure), and a peak RSS that is only osbench's own.
fn run_warnings(runs: &[CommandRun], rss_floor_kb: u64) -> Vec<String> {
    let mut warnings = Vec::new();
    let failed = runs.iter().filter(|r| !r.succeeded()).count();
    if failed > 0 {
        warnings.push(format!(
            "{failed} of {} runs failed (timed anyway, --ignore-failure)",
            runs.len()
        ));
    }
    let rss: Vec<f64> = runs.iter().map(|r| r.max_rss_kb as f64).collect();
    if median(&rss) <= rss_floor_kb as f64 * 1.05 {
        warnings.push(format!(
            "max RSS ({:.0} KiB) is at osbench's own size ({rss_floor_kb} KiB), which Linux counts \
             in every child before its execve; the command's own peak is at most this",
            median(&rss)
        ));
    }
    warnings
}

/// What `wait4` tells of each run, as counters per operation (one op = one run).
fn run_counters(runs: &[CommandRun]) -> BTreeMap<String, Vec<f64>> {
    type Field = fn(&CommandRun) -> f64;
    let fields: [(&str, Field); 7] = [
        ("user_ns", |r| r.user_s * 1e9),
        ("sys_ns", |r| r.sys_s * 1e9),
        ("max_rss_kb", |r| r.max_rss_kb as f64),
        ("voluntary_switches", |r| r.voluntary_switches as f64),
        ("involuntary_switches", |r| r.involuntary_switches as f64),
        ("minor_faults", |r| r.minor_faults as f64),
        ("major_faults", |r| r.major_faults as f64),
    ];
    fields
        .iter()
        .map(|(name, get)| (name.to_string(), runs.iter().map(get).collect()))
        .collect()
}

/// Joules per run and average watts per RAPL zone, or why there are none.
fn set_energy(series: &mut Series, rapl: &Result<Rapl, String>, joules: &[Vec<f64>]) {
    let rapl = match rapl {
        Ok(r) => r,
        Err(why) => {
            series.energy_unavailable = Some(why.clone());
            return;
        }
    };
    if joules.iter().any(Vec::is_empty) {
        series.energy_unavailable =
            Some("unavailable: a RAPL zone could not be read during a run".into());
        return;
    }
    for (z, zone) in rapl.domains().into_iter().enumerate() {
        let per_run: Vec<f64> = joules.iter().map(|j| j[z]).collect();
        let watts: Vec<f64> = per_run
            .iter()
            .zip(&series.samples)
            .map(|(j, s)| j / s)
            .collect();
        if let (Some(j), Some(w)) = (summarize(&per_run), summarize(&watts)) {
            let domain = EnergyDomain {
                joules_per_op: j,
                watts: w,
                samples_joules_per_op: per_run,
                samples_watts: watts,
            };
            series.energy.insert(zone, domain);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(lines: &[&str], runs: usize) -> TimePlan {
        TimePlan {
            commands: lines
                .iter()
                .map(|l| CommandSpec::parse(l, false).unwrap())
                .collect(),
            count: RunCount::Fixed(runs),
            warmup: 1,
            prepare: None,
            setup: None,
            cleanup: None,
            spawn: SpawnOptions::default(),
            ignore_failure: false,
            seed: 7,
            target_ci: None,
            max_time: None,
            target_mde: None,
            profile: None,
        }
    }

    fn go(p: &TimePlan) -> Outcome {
        let programs = check(p).unwrap();
        run(
            p,
            programs,
            &Interrupt::none(),
            crate::env::capture(),
            &mut crate::experiment::Silent,
        )
        .unwrap()
    }

    #[test]
    fn every_command_runs_once_per_round_in_a_recorded_order() {
        let p = plan(&["true", "sh -c 'exit 0'"], 5);
        let out = go(&p);
        assert!(out.error.is_none());
        let doc = out.document;
        assert_eq!(doc.series.len(), 2);
        for s in &doc.series {
            assert_eq!((s.samples.len(), s.runs.len(), s.raw.len()), (5, 5, 5));
            assert_eq!(s.unit, "s");
            assert!(s.runs.iter().all(CommandRun::succeeded));
        }
        assert_eq!(doc.run.schedule.len(), 5);
        for order in &doc.run.schedule {
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, ["(empty command)", "sh -c 'exit 0'", "true"]);
        }
        let time = doc.run.time.unwrap();
        assert_eq!(time.floor.unwrap().samples.len(), 5);
        assert!(time.rss_floor_kb > 0);
    }

    #[test]
    fn a_failing_command_stops_the_run_unless_failures_are_ignored() {
        let p = plan(&["false"], 3);
        let out = go(&p);
        let e = out.error.unwrap().to_string();
        assert!(
            e.contains("'false' exited with status 1 during warm-up"),
            "{e}"
        );
        assert!(out.document.series.is_empty());

        let p = TimePlan {
            ignore_failure: true,
            ..plan(&["false"], 3)
        };
        let out = go(&p);
        assert!(out.error.is_none());
        let s = &out.document.series[0];
        assert!(s.runs.iter().all(|r| r.exit_status == 1));
        assert!(s.warnings[0].contains("3 of 3 runs failed"));
    }

    #[test]
    fn missing_programs_fail_before_anything_runs() {
        let mut p = plan(&["true", "no-such-program-osbench"], 3);
        let marker = tempfile::tempdir().unwrap();
        let touched = marker.path().join("setup-ran");
        p.setup = Some(format!("touch {}", touched.display()));
        // What the CLI does: resolve every program, then run.
        let e = check(&p)
            .and_then(|programs| {
                run(
                    &p,
                    programs,
                    &Interrupt::none(),
                    crate::env::capture(),
                    &mut crate::experiment::Silent,
                )
            })
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("'no-such-program-osbench' was not found"), "{e}");
        assert!(!touched.exists());
    }

    #[test]
    fn setup_prepare_and_cleanup_run_as_documented() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let mut p = plan(&["true"], 3);
        p.setup = Some(format!("echo setup >> {}", log.display()));
        p.prepare = Some(format!("echo prepare >> {}", log.display()));
        p.cleanup = Some(format!("echo cleanup >> {}", log.display()));
        assert!(go(&p).error.is_none());
        let text = std::fs::read_to_string(&log).unwrap();
        // One set-up, a prepare before each of 1 warm-up + 3 runs, one clean-up.
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [
                "setup", "prepare", "prepare", "prepare", "prepare", "cleanup"
            ]
        );
    }

    #[test]
    fn cleanup_runs_after_a_failure() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let mut p = plan(&["false"], 3);
        p.cleanup = Some(format!("echo cleanup >> {}", log.display()));
        assert!(go(&p).error.is_some());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "cleanup\n");
    }

    #[test]
    fn a_precision_target_stops_adding_rounds() {
        let mut p = plan(&["true"], 3);
        p.count = RunCount::Auto {
            min_runs: 6,
            max_runs: 500,
            min_time: Duration::from_secs(60),
        };
        // Any interval of 6 runs is within ±10000 %: the run stops at once.
        p.target_ci = Some(100.0);
        let doc = go(&p).document;
        assert_eq!(doc.series[0].samples.len(), 6);
        assert!(doc.run.stopped_by.unwrap().contains("after 6 rounds"));
    }

    #[test]
    fn auto_count_follows_the_slowest_command() {
        let m = |wall_s| Member {
            program: PathBuf::new(),
            argv: Vec::new(),
            joules: Vec::new(),
            runs: vec![CommandRun {
                wall_s,
                user_s: 0.0,
                sys_s: 0.0,
                max_rss_kb: 0,
                voluntary_switches: 0,
                involuntary_switches: 0,
                minor_faults: 0,
                major_faults: 0,
                exit_status: 0,
                signal: None,
                timed_out: false,
            }],
        };
        let three = Duration::from_secs(3);
        assert_eq!(auto_rounds(&[m(0.001), m(0.1)], 10, 1000, three), 30);
        assert_eq!(auto_rounds(&[m(1.0)], 10, 1000, three), 10);
        assert_eq!(auto_rounds(&[m(0.000_1)], 10, 1000, three), 1000);
    }
}
