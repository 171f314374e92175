//! `osbench run`: the selected cases (or an experiment file's) turned into a
//! [`Plan`], run by `osbench::experiment::run` with progress on stderr, the
//! tables (and, with configurations, the paired comparison) printed, the run
//! saved, the gate's status (1 tripped, 3 undecided). Scheduling, measuring,
//! comparing and rendering are the library's; this only reads the arguments
//! and reports.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::Args;

use osbench::bench::util::select::{Selector, resolve};
use osbench::compare::Comparison;
use osbench::document::{Document, RunIdentity};
use osbench::envelope;
use osbench::experiment::profiling::ProfilePlan;
use osbench::experiment::rounds::DetectTarget;
use osbench::experiment::{self, Config, Plan};
use osbench::measure::Policy;
use osbench::measure::placement::Pin;
use osbench::report;

use super::ingest::{IngestArgs, Source};
use super::progress::Progress;
use super::save::{SaveArgs, Saved};
use super::{
    Console, DEFAULT_BUDGET, Gated, LayoutArgs, VerdictArgs, parse_duration, parse_pct, parse_secs,
    seed_from_clock,
};
use osbench::queue::hook::{self, Hooked, JobHook};

/// Invocations of a run without configurations unless `--invocations` says
/// otherwise: one, so that a run stays one process (its Ctrl-C, limits and
/// event counts as ever); `compare` then takes the spread of one invocation
/// from the store, or says too few.
pub const DEFAULT_INVOCATIONS: usize = 1;

/// The most rounds `--target-ci` adds with configurations unless `--rounds` says.
const TARGET_CI_ROUNDS: usize = 60;

/// Invocations a run without configurations starts with for `--target-mde`
/// unless `--invocations` says (two at least: their spread is the test's).
const TARGET_MDE_INVOCATIONS: usize = 3;

#[derive(Args)]
pub struct RunArgs {
    /// BENCH or BENCH:key=value[,key=value...], e.g. `syscall` or `syscall:case=null`, or a
    /// case as the tables print it (`syscall:null`, `ctx:2p/0K`); none: the quick default
    /// suite; `all`: every default case of every benchmark
    #[arg(value_name = "SELECTOR", value_parser = super::selector_parser(), hide_possible_values = true)]
    selectors: Vec<String>,
    #[command(flatten)]
    save: SaveArgs,
    #[command(flatten)]
    measure: MeasureArgs,
    /// A configuration to compare, NAME=COMMAND: COMMAND (run with sh -c) is its set-up,
    /// run before its block in every round, e.g. --config off='echo 0 > /sys/…' (repeat;
    /// the first is the baseline; NAME= with no command runs nothing). NAME@GUEST=COMMAND
    /// runs in the guest of --guest GUEST, booted once and shared, COMMAND inside it.
    /// NAME:KNOB=VALUE sets a file's value for the configuration's blocks and restores
    /// the value found after the run: KNOB is a path (/sys/…), sysctl.NAME, sched_feature,
    /// thp, thp_defrag, cpufreq_governor, clocksource or smt (repeat to add knobs to NAME)
    #[arg(long = "config", value_name = "NAME=COMMAND|NAME:KNOB=VALUE")]
    configs: Vec<String>,
    /// Tear-down of a configuration, NAME=COMMAND, run after its block whatever happens
    #[arg(long = "teardown", value_name = "NAME=COMMAND")]
    teardowns: Vec<String>,
    /// A configuration whose cases run in a guest, NAME=uml[:KERNEL-PARAMETERS] (User-Mode
    /// Linux with this osbench as its init, e.g. --guest nosysemu=uml:nosysemu) or
    /// NAME=command:COMMAND (anything that ends up running `osbench agent` on its stdin/stdout;
    /// {osbench} is this binary's path). Repeat; they follow the --config ones
    #[arg(long = "guest", value_name = "NAME=GUEST")]
    guests: Vec<String>,
    /// Configurations (and selectors) from a TOML experiment file: name, setup, teardown,
    /// env, params ("bench.key" = value), pin, load, knobs (set, sysctl, sched_feature, thp…);
    /// see docs/guide/configurations-and-guests.md
    #[arg(long, value_name = "FILE", conflicts_with_all = ["configs", "teardowns", "guests"])]
    experiment: Option<PathBuf>,
    /// Rounds when comparing configurations (each runs every configuration once per case),
    /// 2 to 1000; with --target-ci the most rounds [default: 10; with --target-ci 60]. The
    /// sign-flip test is exact up to 20 rounds; beyond, its p-value comes from 20000 random
    /// sign patterns (fixed seed)
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(2..=osbench::stats::paired::MOST_ROUNDS as i64))]
    rounds: Option<u32>,
    /// Precision on demand. Without configurations: each case takes more samples (past
    /// --samples) until the 95% interval of its median is within ±PCT %, or its time is up
    /// (10 s, or its share of --max-time); the output says which cases reached it. With
    /// configurations: add rounds until every ratio's 95% interval is within ±PCT %
    #[arg(long = "target-ci", value_name = "PCT", value_parser = parse_pct)]
    target_ci: Option<f64>,
    /// Time limit of the whole run, in seconds: for --target-ci without configurations,
    /// shared out among the cases left; with configurations, no round starts after it
    #[arg(long = "max-time", value_name = "SECS", value_parser = parse_secs)]
    max_time: Option<f64>,
    /// Measure until a change of ±PCT % would be detected with 80% power, or --budget ends.
    /// With configurations: add rounds (at most --rounds, default 1000) until every case's
    /// paired comparison with the first configuration would detect it. Without: add
    /// invocations after the --invocations asked for (default 3) until a comparison of this
    /// run with another like it would
    #[arg(long = "target-mde", value_name = "PCT", value_parser = parse_pct,
          conflicts_with_all = ["target_ci", "max_time"])]
    target_mde: Option<f64>,
    /// The time budget of --target-mde, e.g. 90s, 10min, 1h30m [default: 10min]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "target_mde")]
    budget: Option<std::time::Duration>,
    /// Fresh osbench processes to measure every case in, one after another, each with its
    /// own case order and its layout varied (environment size, heap offset); --samples is
    /// shared out among them. Separate runs are compared invocation by invocation, so give
    /// 3 or more to make a saved run comparable on its own [default: 1]
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    invocations: Option<u32>,
    #[command(flatten)]
    pub(super) verdict: VerdictArgs,
    #[command(flatten)]
    ingest: IngestArgs,
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// Print only the results: no progress, no warnings
    #[arg(long, short)]
    quiet: bool,
    /// Say each case's warnings as they come (otherwise each distinct warning is said once,
    /// after the results, with the cases it concerns)
    #[arg(long, short, conflicts_with = "quiet")]
    verbose: bool,
}

/// Samples per case when `--samples` is not given (lmbench's 11).
const DEFAULT_SAMPLES: u32 = 11;

/// How each case is measured: `run`'s and `fleet run`'s options.
#[derive(Args)]
pub struct MeasureArgs {
    /// Accepted samples per case [default: 11, as lmbench takes; the quick suite's hackbench 6]
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u32).range(1..=Policy::MAX_SAMPLES as i64))]
    samples: Option<u32>,
    /// Target duration of one sample, in milliseconds
    #[arg(long = "sample-time", value_name = "MS", default_value_t = 10.0, value_parser = parse_ms,
          allow_negative_numbers = true)]
    sample_time: f64,
    /// Unrecorded run time before sampling each case, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 50.0, value_parser = parse_ms_or_zero,
          allow_negative_numbers = true)]
    warmup: f64,
    /// Seed of the random case order (default: taken from the clock; always recorded)
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Placement of each case's tasks: none (the scheduler's choice), same (all on one CPU),
    /// spread (round robin over the allowed CPUs). Default: one-task benchmarks on one CPU,
    /// others unpinned
    #[arg(long, value_name = "PLACEMENT", value_parser = super::pin_parser())]
    pin: Option<Pin>,
    /// Do not open perf_event counters (context_switches, cpu_migrations, page_faults,
    /// cycles, instructions; counted in a short pass per case and configuration after all
    /// rounds); rusage counters are still read
    #[arg(long = "no-perf")]
    no_perf: bool,
    /// Run a guest even when it was asked to boot with a parameter that nothing in it recognised
    /// (the parameter reached its init): a warning then, not an error
    #[arg(long = "allow-unknown-boot-parameters")]
    allow_unknown_boot_parameters: bool,
    /// After the timed samples, sample where each case's time goes (every CPU, kernel and user
    /// stacks) in passes of its own, interleaved between configurations, for `compare` and
    /// `explain` to say where a change went; about a quarter of the timed time
    #[arg(long)]
    profile: bool,
    /// Profiling passes per case and configuration (default 5)
    #[arg(long = "profile-passes", value_name = "N", requires = "profile",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    profile_passes: Option<u32>,
    /// Length of each profiling pass in milliseconds (default: a quarter of the case's timed
    /// time over the passes, at least 50)
    #[arg(long = "profile-time", value_name = "MS", requires = "profile", value_parser = parse_ms)]
    profile_time: Option<f64>,
    #[command(flatten)]
    load: super::load::LoadArgs,
    #[command(flatten)]
    tasks: super::tasks::TasksArgs,
}

impl MeasureArgs {
    /// The plan of `cases`, measured as these options say, with no
    /// configurations (callers add them); guests and a remote host asked for
    /// their system logs when `logs`.
    pub fn plan(&self, cases: Vec<osbench::bench::util::select::Case>, logs: bool) -> Plan {
        let mut cases = self.tasks.apply(cases);
        if self.samples.is_some() {
            // Samples asked for are what every case takes.
            cases.iter_mut().for_each(|c| c.samples = None);
        }
        let policy = Policy {
            samples: self.samples.unwrap_or(DEFAULT_SAMPLES) as usize,
            sample_time_ns: (self.sample_time * 1e6).round() as u64,
            warmup_ns: (self.warmup * 1e6).round() as u64,
        };
        let mut plan = Plan::new(cases, self.seed.unwrap_or_else(seed_from_clock), policy);
        plan.pin = self.pin;
        // Probed at the start; each case's counting pass opens them on its tasks.
        plan.perf = !self.no_perf;
        plan.logs = logs;
        plan.allow_unknown_boot_parameters = self.allow_unknown_boot_parameters;
        plan.profile = self.profile.then(|| {
            ProfilePlan::new(
                self.profile_passes.map(|n| n as usize),
                self.profile_time
                    .map(|ms| std::time::Duration::from_secs_f64(ms / 1e3)),
            )
        });
        self.load.apply(&mut plan);
        plan
    }
}

fn parse_ms(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 600_000.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a duration in milliseconds above 0 and at most 600000"
        )),
    }
}

fn parse_ms_or_zero(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=600_000.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a duration in milliseconds from 0 to 600000"
        )),
    }
}

impl RunArgs {
    /// Whether an output file is standard output (the tables then go to stderr).
    pub fn stdout_taken(&self) -> bool {
        self.outputs_to_stdout().unwrap_or(true)
    }

    /// Whether an output file is `-`; an error when several are.
    fn outputs_to_stdout(&self) -> anyhow::Result<bool> {
        let exports = self.save.exports.paths();
        super::save::one_stdout(exports.into_iter().chain(self.ingest.paths()))
    }
}

pub fn run(args: RunArgs, console: Console) -> anyhow::Result<ExitCode> {
    run_hooked(args, console, None).0.map(|g| g.code)
}

/// `run`, as a job of `osbench worker` when `hook` is given: the plan is
/// checked against the host's limits, the lease renewed between cases, the
/// run filed under the worker's name; what was saved is returned too.
pub fn run_hooked(
    args: RunArgs,
    console: Console,
    hook: Option<&mut JobHook>,
) -> (anyhow::Result<Gated>, Option<Saved>) {
    let mut saved = None;
    let result = run_body(args, console, hook, &mut saved);
    (result, saved)
}

fn run_body(
    args: RunArgs,
    console: Console,
    mut hook: Option<&mut JobHook>,
    saved_out: &mut Option<Saved>,
) -> anyhow::Result<Gated> {
    // First: a signal while the store opens (it may wait for a lock held by
    // another run) stops the run before it measures, never kills it outright.
    let interrupt = hook::run_stop(hook.as_deref())?;
    args.outputs_to_stdout()?;
    let mut plan = plan(&args)?;
    let skipped = skip_unavailable(&mut plan, args.quiet)?;
    if let Some(h) = &hook {
        h.limits.check(plan.expected_duration())?;
    }
    // Before measuring: a bad output path must fail now, not after the run.
    let meta = args.save.meta.map()?;
    let saving = args.save.prepare(args.quiet)?;
    let ingest = args.ingest.prepare()?;
    if plan.policy.samples == 1 && !args.quiet {
        super::eprint_wrapped(
            "osbench: warning: with one sample a case has no spread and no interval; take 6 or \
             more --samples for a 95% interval of the median",
        );
    } else if plan.policy.samples < 6 && !args.quiet {
        super::eprint_wrapped(
            "osbench: warning: with fewer than 6 samples no interval covers the median with 95% \
             probability; the CI shown is min–max with its true coverage",
        );
    }
    if let (Some(profile), false) = (plan.profile, args.quiet) {
        super::eprint_wrapped(&format!("osbench: {}", profile.describe(&plan)));
    }
    let mut progress = Progress::new(
        args.quiet,
        args.verbose,
        plan.steps(),
        plan.expected_duration(),
    );
    let mut outcome = {
        let mut observer = Hooked::new(&mut progress, hook.as_deref_mut());
        experiment::run(&plan, interrupt, args.save.environment(), &mut observer)
    };
    add_skipped(&mut outcome.document.run.skipped, skipped, args.quiet);
    progress.finish();
    let identity = RunIdentity {
        label: args.save.label.clone(),
        host: hook.as_ref().map(|h| h.host.clone()),
        meta,
    };
    // With configurations, the paired comparison goes to the table and the document.
    let paired = |doc: &Document| osbench::compare::paired(doc, args.verdict.options(plan.seed));
    let compare: envelope::Compare = (plan.configs.len() >= 2).then_some(&paired);
    let show = |doc: &Document, comparison: Option<&Comparison>| {
        print_results(doc, comparison, console);
        progress.digest();
        super::print_target_mde(doc);
        Ok::<(), anyhow::Error>(())
    };
    let kept = saving.keep(outcome, &identity, compare, show)?;
    let saved = kept.saved.map_err(super::save::kept_error)?;
    *saved_out = Some(saved.clone());
    let (doc, comparison) = (&kept.document, kept.comparison.as_ref());
    // A run that stopped before measuring anything (a failed privilege check,
    // an early interrupt) leaves no file and no stored run behind.
    if kept.kept {
        let source = Source::Run(doc, comparison);
        ingest.commit(source, args.verdict.gate.unwrap_or(0.0), args.quiet)?;
    }
    if let Some(h) = hook {
        h.measured_all = saved.run_id.is_some() && Plan::steps_done(&doc.series) >= plan.steps();
    }
    let gated = args.verdict.judge(comparison);
    match kept.error {
        None => Ok(gated),
        Some(e) => Err(stopped_early(e, doc, &plan, &saved)),
    }
}

/// The cases skipped here before the run, then those the run skipped (a
/// guest's kernel lacks what they need), which are said now.
fn add_skipped(by_run: &mut Vec<String>, before: Vec<String>, quiet: bool) {
    if !quiet {
        for line in by_run.iter() {
            super::eprint_wrapped(&format!("osbench: skipped {line}"));
        }
    }
    by_run.splice(0..0, before);
}

/// Drops the cases this machine's kernel cannot run (io_uring disabled, a
/// missing system call), saying each with its reason; a run left with
/// nothing is an error. Not when a configuration runs in a guest, whose
/// kernel is another. Returns what was skipped, for the document.
fn skip_unavailable(plan: &mut Plan, quiet: bool) -> anyhow::Result<Vec<String>> {
    if plan.configs.iter().any(|c| c.guest.is_some()) {
        return Ok(Vec::new());
    }
    let (runnable, skipped) =
        osbench::bench::util::select::split_unavailable(std::mem::take(&mut plan.cases));
    plan.cases = runnable;
    if plan.cases.is_empty() && !skipped.is_empty() {
        anyhow::bail!(
            "nothing left to run: every case asked for was skipped ({})",
            skipped.join("; ")
        );
    }
    if !quiet {
        for line in &skipped {
            super::eprint_wrapped(&format!("osbench: skipped {line}"));
        }
    }
    Ok(skipped)
}

/// The checks `run` makes before measuring (selectors, configurations,
/// options that would do nothing), for a job being submitted.
pub fn check(args: &RunArgs) -> anyhow::Result<()> {
    args.outputs_to_stdout()?;
    plan(args).map(drop)
}

/// What the arguments ask to run. The selectors and configurations are
/// checked here, before anything is prepared or measured.
fn plan(args: &RunArgs) -> anyhow::Result<Plan> {
    let asked = Configs {
        configs: &args.configs,
        teardowns: &args.teardowns,
        guests: &args.guests,
        experiment: args.experiment.as_deref(),
    };
    let (configs, selectors) = asked.with_selectors(&args.selectors)?;
    refuse_idle_flags(args, configs.len())?;
    let single = !configs.is_empty() || args.target_ci.is_some();
    let invocations = match args.invocations {
        Some(n) if n > 1 && single => anyhow::bail!(
            "--invocations measures a run without configurations in several processes; \
             configurations are compared round by round in one run, and --target-ci samples \
             each case in one process: drop --invocations, or the configurations and --target-ci"
        ),
        // A change to detect between runs needs a spread between invocations.
        Some(n) if args.target_mde.is_some() && !single => (n as usize).max(2),
        Some(n) => n as usize,
        None if single => 1,
        None if args.target_mde.is_some() => TARGET_MDE_INVOCATIONS,
        None => DEFAULT_INVOCATIONS,
    };
    let rounds = match (args.rounds, args.target_ci, args.target_mde) {
        (Some(n), _, _) => n as usize,
        (None, Some(_), _) => TARGET_CI_ROUNDS,
        (None, None, Some(_)) => osbench::stats::paired::MOST_ROUNDS,
        (None, None, None) => 10,
    };
    let mut plan = args
        .measure
        .plan(resolve(&selectors)?, args.save.logs.wanted())
        .with_configs(configs, rounds);
    plan.invocations = invocations;
    plan.target_ci = args.target_ci.map(|pct| pct / 100.0);
    plan.max_time = args.max_time.map(std::time::Duration::from_secs_f64);
    plan.target_mde = args.target_mde.map(|pct| {
        // Holm's strictest step: α ÷ every comparison (each case against each
        // candidate configuration, or against another run).
        let candidates = plan.configs.len().saturating_sub(1).max(1);
        let comparisons = (plan.cases.len() * candidates).max(1);
        DetectTarget {
            change: pct / 100.0,
            alpha: args.verdict.options(plan.seed).alpha / comparisons as f64,
            budget: args.budget.unwrap_or(DEFAULT_BUDGET),
        }
    });
    Ok(plan)
}

/// Refuses flags that would do nothing with `configs` configurations,
/// rather than accept them silently.
fn refuse_idle_flags(args: &RunArgs, configs: usize) -> anyhow::Result<()> {
    args.verdict.refuse_gate_inside_margin()?;
    if configs >= 2 {
        return Ok(());
    }
    let why = if configs == 1 {
        "one configuration has nothing to be compared with"
    } else {
        "a run without configurations measures each case once"
    };
    if args.rounds.is_some() {
        anyhow::bail!(
            "--rounds repeats configurations (--config, --guest, --experiment) to compare them, \
             and {why}; for more precision use --samples N or --target-ci PCT"
        );
    }
    if configs == 1 {
        if args.target_ci.is_some() || args.max_time.is_some() || args.target_mde.is_some() {
            anyhow::bail!(
                "--target-ci, --target-mde and --max-time work on the rounds of two or more \
                 configurations, or on a run without configurations; {why}"
            );
        }
    } else if args.max_time.is_some() && args.target_ci.is_none() {
        anyhow::bail!(
            "--max-time limits the sampling for --target-ci, and {why}: give --target-ci PCT too"
        );
    }
    args.ingest.refuse_without_comparison(why)?;
    args.verdict.refuse_without_comparison(why)
}

/// The configurations a command line asks for (`run`'s, `fleet run`'s).
pub struct Configs<'a> {
    pub configs: &'a [String],
    pub teardowns: &'a [String],
    pub guests: &'a [String],
    pub experiment: Option<&'a std::path::Path>,
}

impl Configs<'_> {
    /// The configurations and selectors: from the experiment file, or
    /// from `--config`/`--teardown`/`--guest`, with `selectors` (the command
    /// line's, which take precedence over the file's).
    pub fn with_selectors(
        &self,
        selectors: &[String],
    ) -> anyhow::Result<(Vec<Config>, Vec<Selector>)> {
        let parse = |texts: &[String]| -> anyhow::Result<Vec<Selector>> {
            Ok(texts.iter().map(|s| s.parse()).collect::<Result<_, _>>()?)
        };
        let Some(path) = self.experiment else {
            let configs = configs_of(self.configs, self.teardowns, self.guests)?;
            return Ok((configs, parse(selectors)?));
        };
        let (select, configs) = experiment::file::load(path)?;
        check_configs(&configs)?;
        let selectors = parse(if selectors.is_empty() {
            &select
        } else {
            selectors
        })?;
        Ok((configs, selectors))
    }
}

/// The tables on stdout; with a comparison, the comparison too, and after a
/// precision target what stopped the rounds and how precise each comparison got.
fn print_results(doc: &Document, comparison: Option<&Comparison>, console: Console) {
    let mut out = String::new();
    if !doc.series.is_empty() {
        out.push_str(&report::render_run_within(doc, console.width));
    }
    if let Some(c) = comparison {
        out.push('\n');
        out.push_str(&report::compare::render(c, console.colour));
    }
    if let Some(why) = &doc.run.stopped_by {
        out.push_str(&report::compare::precision_lines(comparison, why));
    }
    out.push_str(&report::compare::target_lines(doc));
    out.push_str(&report::compare::knob_text(doc));
    console.print(&out);
}

/// The run's error, saying how far it got and where what it measured was kept.
fn stopped_early(e: osbench::Error, doc: &Document, plan: &Plan, saved: &Saved) -> anyhow::Error {
    // The case an interrupt cut short is not counted as measured.
    let measured = Plan::steps_done(&doc.series);
    let progress = if measured < plan.steps() {
        format!(
            "run stopped early after {measured} of {} cases",
            plan.steps()
        )
    } else {
        format!("run stopped after all {measured} cases were measured")
    };
    anyhow!(e).context(format!(
        "{progress}{}",
        match (saved.run_id, saved.documents.first()) {
            (Some(id), _) => format!(" (stored run {id} keeps what was measured)"),
            (None, Some(_)) => " (the document keeps what was measured)".into(),
            (None, None) => String::new(),
        }
    ))
}

/// The configurations from `--config NAME=COMMAND` and `--teardown NAME=COMMAND`.
fn configs_of(
    configs: &[String],
    teardowns: &[String],
    guests: &[String],
) -> anyhow::Result<Vec<Config>> {
    let mut out: Vec<Config> = Vec::new();
    // Configurations a knob (NAME:KNOB=VALUE) made; a set-up may still name them once.
    let mut by_knob: Vec<String> = Vec::new();
    for spec in configs {
        let (name, knob, setup) = match experiment::knob::parse_config_knob(spec)? {
            Some((name, knob)) => (name, Some(knob), None),
            None => {
                let (name, setup) = experiment::config::parse_assignment(spec)?;
                (name, None, setup)
            }
        };
        let (name, in_guest) = match name.split_once('@') {
            Some((name, guest)) => (name.to_string(), Some(guest.to_string())),
            None => (name, None),
        };
        let known = out.iter().position(|c| c.name == name);
        let config = match known {
            Some(i) if knob.is_some() || by_knob.contains(&name) => &mut out[i],
            _ => {
                out.push(Config {
                    name: name.clone(),
                    ..Default::default()
                });
                out.last_mut().expect("just pushed")
            }
        };
        if knob.is_none() {
            by_knob.retain(|n| *n != name); // a second NAME=COMMAND is refused as a duplicate
            config.setup = setup;
        } else if known.is_none() {
            by_knob.push(name);
        }
        config.knobs.extend(knob);
        config.in_guest = in_guest.or(config.in_guest.take());
    }
    for spec in guests {
        let (name, guest) = experiment::config::parse_guest(spec)?;
        // A configuration only knobs made so far (--config NAME:KNOB=VALUE) runs in it.
        match out
            .iter_mut()
            .find(|c| c.name == name && by_knob.contains(&name))
        {
            Some(config) if config.in_guest.is_none() => config.guest = Some(guest),
            _ => out.push(Config {
                name,
                guest: Some(guest),
                ..Default::default()
            }),
        }
    }
    experiment::config::share_guests(&mut out)?;
    check_configs(&out)?; // unique names before tear-downs are attached by name
    for spec in teardowns {
        let (name, command) = experiment::config::parse_assignment(spec)?;
        let config = out
            .iter_mut()
            .find(|c| c.name == name)
            .ok_or_else(|| anyhow!("--teardown names '{name}', which no --config defines"))?;
        config.teardown = command;
    }
    Ok(out)
}

/// Every configuration set is usable: unique names, at least two, known
/// parameters with allowed values, known placements.
fn check_configs(configs: &[Config]) -> anyhow::Result<()> {
    if configs.len() == 1 {
        anyhow::bail!("one configuration has nothing to be compared with; give two or more");
    }
    for (i, c) in configs.iter().enumerate() {
        if configs[..i].iter().any(|d| d.name == c.name) {
            anyhow::bail!(
                "configuration '{}' is given twice; names must be unique",
                c.name
            );
        }
        for o in &c.params {
            // The selector machinery validates and words the error.
            resolve(&[Selector {
                bench: o.bench.clone(),
                fixed: vec![(o.key.clone(), o.value.clone())],
            }])
            .with_context(|| format!("configuration '{}'", c.name))?;
        }
    }
    Ok(())
}
