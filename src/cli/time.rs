//! `osbench time`: whole commands timed like hyperfine. The arguments become
//! a [`TimePlan`] (parameter scans and lists expanded by
//! `experiment::time::command::build`), `osbench::experiment::time::run` runs it with
//! progress on stderr, and the tables, the comparison of several commands and
//! its verdicts are printed; the document is saved (and, on request, a
//! hyperfine-layout file written), the gate's status (1 tripped, 3 undecided). Spawning,
//! timing and statistics are the library's.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::anyhow;
use clap::Args;

use osbench::compare::Comparison;
use osbench::document::{Document, RunIdentity};
use osbench::envelope;
use osbench::experiment::rounds::DetectTarget;
use osbench::experiment::time::command::{CommandSpec, Parameter, build, undefined, unused};
use osbench::experiment::time::{self as timing, RunCount, TimePlan};
use osbench::measure::spawn::SpawnOptions;
use osbench::report;
use osbench::store::PendingFile;

use super::ingest::{IngestArgs, Source};
use super::progress::Progress;
use super::save::{self, SaveArgs};
use super::time_hyperfine::HyperfineArgs;
use super::{
    Console, DEFAULT_BUDGET, Gated, VerdictArgs, parse_duration, parse_pct, parse_secs,
    seed_from_clock,
};
use osbench::queue::hook::{self, Hooked, JobHook};

#[derive(Args)]
pub struct TimeArgs {
    /// Commands to time, one string each, split into words like a shell does (quotes
    /// respected) and executed directly; the first is the baseline of the comparison
    #[arg(value_name = "COMMAND", required = true)]
    commands: Vec<String>,
    /// Run each command through `sh -c` (for pipes, redirections, variables, built-ins);
    /// hyperfine's -S sh
    #[arg(long)]
    shell: bool,
    /// A name for the command at the same position (repeat; hyperfine -n): tables, documents
    /// and comparisons across runs use it instead of the command line; `{PARAM}` allowed
    #[arg(long = "command-name", short = 'n', value_name = "NAME")]
    command_names: Vec<String>,
    /// No shell: the default, accepted for hyperfine's -N
    #[arg(short = 'N', hide = true, conflicts_with = "shell")]
    _no_shell: bool,
    /// Time every command for each value of NAME from MIN to MAX (hyperfine -P): `{NAME}`
    /// in a command is replaced by the value; step 1 or --parameter-step-size
    #[arg(long = "parameter-scan", short = 'P', num_args = 3,
          value_names = ["NAME", "MIN", "MAX"], allow_hyphen_values = true)]
    parameter_scan: Option<Vec<String>>,
    /// The step of --parameter-scan (decimals allowed: -P t 0.1 0.3 -D 0.1)
    #[arg(
        long = "parameter-step-size",
        short = 'D',
        value_name = "STEP",
        requires = "parameter_scan",
        allow_hyphen_values = true
    )]
    parameter_step: Option<String>,
    /// Time every command for each of the comma-separated VALUES of NAME (hyperfine -L);
    /// repeat for every combination of several parameters
    #[arg(long = "parameter-list", short = 'L', num_args = 2,
          value_names = ["NAME", "VALUES"], action = clap::ArgAction::Append)]
    parameter_list: Vec<String>,
    /// Timed runs of each command (default: at least 10 and at least 3 s of the slowest;
    /// with 1 run there is no interval and no comparison)
    #[arg(long, short = 'r', value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    runs: Option<u32>,
    /// With the default run count: at least this many runs
    #[arg(long, short = 'm', value_name = "N", default_value_t = 10, conflicts_with = "runs",
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    min_runs: u32,
    /// With the default run count or --target-ci: at most this many runs
    #[arg(long, short = 'M', value_name = "N", default_value_t = 10_000, conflicts_with = "runs",
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    max_runs: u32,
    /// Unrecorded runs of each command first
    #[arg(long, short = 'w', value_name = "N", default_value_t = 1)]
    warmup: u32,
    /// Shell command run before every run of every command (untimed)
    #[arg(long, short = 'p', value_name = "CMD")]
    prepare: Option<String>,
    /// Shell command run once before all runs
    #[arg(long, short = 's', value_name = "CMD")]
    setup: Option<String>,
    /// Shell command run once after all runs, whatever happened
    #[arg(long, short = 'c', value_name = "CMD")]
    cleanup: Option<String>,
    /// Kill a run (its whole process group) after SECS seconds; it then counts as failed.
    /// A --prepare that takes longer is killed too, and stops the run
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    timeout: Option<f64>,
    /// Working directory of the commands
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Environment variable for the commands and hooks, KEY=VALUE (repeat)
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// Keep timing commands that exit non-zero (their runs are marked failed)
    #[arg(long, short = 'i')]
    ignore_failure: bool,
    /// After the timed rounds, run each command again with a sampling profiler on (every CPU,
    /// kernel and user stacks), one run per pass, for `compare`/`explain` to say where a
    /// difference went
    #[arg(long)]
    profile: bool,
    /// Profiling passes (runs) per command (default 5)
    #[arg(long = "profile-passes", value_name = "N", requires = "profile",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    profile_passes: Option<u32>,
    /// Let the commands write to the terminal (default: their output goes to /dev/null)
    #[arg(long)]
    show_output: bool,
    /// Add runs until every 95% interval (the comparison's, or the one command's median) is
    /// within ±PCT %, from --min-runs up to --max-runs
    #[arg(long = "target-ci", value_name = "PCT", value_parser = parse_pct, conflicts_with = "runs")]
    target_ci: Option<f64>,
    /// Stop adding runs after SECS seconds
    #[arg(long = "max-time", value_name = "SECS", value_parser = parse_secs)]
    max_time: Option<f64>,
    /// After the first runs (--runs, or --min-runs), keep adding rounds until the comparison
    /// of every command with the first would detect a change of ±PCT % with 80% power
    /// (paired t over its blocks, α ÷ the comparisons), or --budget ends; at most --max-runs
    #[arg(long = "target-mde", value_name = "PCT", value_parser = parse_pct,
          conflicts_with_all = ["target_ci", "max_time"])]
    target_mde: Option<f64>,
    /// The time budget of --target-mde, e.g. 90s, 10min, 1h30m [default: 10min]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, requires = "target_mde")]
    budget: Option<Duration>,
    /// Seed of the random run order (default: taken from the clock; always recorded)
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Also write FILE in hyperfine's --export-json layout (results[].command, mean,
    /// stddev, median, user, system, min, max, times, exit_codes, parameters), which
    /// hyperfine's scripts read; `-`: standard output
    #[arg(
        long = "export-hyperfine",
        visible_alias = "export-json",
        value_name = "FILE"
    )]
    export_hyperfine: Option<PathBuf>,
    /// Where the runs go besides the terminal (the document has every run's wall, user,
    /// sys, RSS, …)
    #[command(flatten)]
    save: SaveArgs,
    #[command(flatten)]
    pub(super) verdict: VerdictArgs,
    #[command(flatten)]
    ingest: IngestArgs,
    #[command(flatten)]
    hyperfine: HyperfineArgs,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
    /// Print only the results: no progress, no warnings
    #[arg(long, short)]
    quiet: bool,
    /// Say each case's warnings as they come (otherwise each distinct warning is said once,
    /// after the results, with the cases it concerns)
    #[arg(long, short, conflicts_with = "quiet")]
    verbose: bool,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!("'{s}' is not KEY=VALUE")),
    }
}

impl TimeArgs {
    /// These arguments with hyperfine's options turned into osbench's (a
    /// `--reference` command first), and the colour `--style` asks for.
    fn with_hyperfine_options(mut self) -> anyhow::Result<(Self, Option<bool>)> {
        let taken = self.hyperfine.take()?;
        self.shell |= taken.shell;
        self.quiet |= taken.quiet;
        self.show_output |= taken.show_output;
        if let Some(reference) = taken.reference {
            if !self.command_names.is_empty() {
                self.command_names.insert(0, reference.clone());
            }
            self.commands.insert(0, reference);
        }
        Ok((self, taken.colour))
    }

    /// Whether an output file is standard output (the tables then go to stderr).
    pub fn stdout_taken(&self) -> bool {
        self.outputs_to_stdout().unwrap_or(true)
    }

    /// Whether an output file is `-`; an error when several are.
    fn outputs_to_stdout(&self) -> anyhow::Result<bool> {
        let exports = self.save.exports.paths();
        save::one_stdout(
            exports
                .into_iter()
                .chain(self.ingest.paths())
                .chain([self.export_hyperfine.as_deref()]),
        )
    }
}

pub fn time(args: TimeArgs, console: Console) -> anyhow::Result<ExitCode> {
    time_hooked(args, console, None).0.map(|g| g.code)
}

/// `time`, as a job of `osbench worker` when `hook` is given (as
/// `run::run_hooked`: the lease renewed after each round, the run filed
/// under the worker's name, what was saved returned).
pub fn time_hooked(
    args: TimeArgs,
    console: Console,
    hook: Option<&mut JobHook>,
) -> (anyhow::Result<Gated>, Option<save::Saved>) {
    let mut saved = None;
    let result = time_body(args, console, hook, &mut saved);
    (result, saved)
}

fn time_body(
    args: TimeArgs,
    console: Console,
    mut hook: Option<&mut JobHook>,
    saved_out: &mut Option<save::Saved>,
) -> anyhow::Result<Gated> {
    // First, as in `run`: a signal during the set-up stops, never kills.
    let interrupt = hook::run_stop(hook.as_deref())?;
    let (args, colour) = args.with_hyperfine_options()?;
    let console = Console {
        colour: colour.unwrap_or(console.colour),
        ..console
    };
    args.outputs_to_stdout()?;
    let plan = plan(&args)?;
    let programs = timing::check(&plan)?;
    let meta = args.save.meta.map()?;
    let saving = args.save.prepare(args.quiet)?;
    let hyperfine_file = args
        .export_hyperfine
        .as_deref()
        .map(PendingFile::create)
        .transpose()?;
    let ingest = args.ingest.prepare()?;
    // The length is not known yet (it follows the first round or a precision
    // target): the bar appears after a second and learns it as rounds end.
    let mut progress = Progress::new(args.quiet, args.verbose, 0, Duration::ZERO);
    let outcome = timing::run(
        &plan,
        programs,
        &interrupt,
        args.save.environment(),
        &mut Hooked::new(&mut progress, hook.as_deref_mut()),
    );
    progress.finish();
    let outcome = outcome?;
    let identity = RunIdentity {
        label: args.save.label.clone(),
        host: hook.as_ref().map(|h| h.host.clone()),
        meta,
    };
    let commands =
        |doc: &Document| osbench::compare::commands(doc, args.verdict.options(plan.seed));
    let compare: envelope::Compare = (outcome.document.series.len() >= 2).then_some(&commands);
    let show = |doc: &Document, comparison: Option<&Comparison>| {
        print_results(doc, comparison, console);
        progress.digest();
        if let (Some(file), false) = (hyperfine_file, doc.series.is_empty()) {
            let dest = save::shown(file.dest());
            file.commit(&report::hyperfine::render(doc))?;
            if !args.quiet {
                eprintln!("osbench: wrote {dest} (hyperfine's JSON layout)");
            }
        }
        Ok::<(), anyhow::Error>(())
    };
    let kept = saving.keep(outcome, &identity, compare, show)?;
    *saved_out = Some(kept.saved.map_err(save::kept_error)?);
    let (doc, comparison) = (&kept.document, kept.comparison.as_ref());
    super::print_target_mde(doc);
    if !doc.series.is_empty() {
        let source = Source::Run(doc, comparison);
        ingest.commit(source, args.verdict.gate.unwrap_or(0.0), args.quiet)?;
    }
    let gated = args.verdict.judge(comparison);
    match kept.error {
        None => Ok(gated),
        Some(e) => Err(anyhow!(e)),
    }
}

/// The checks `time` makes before timing (its options, parameters), for a
/// job being submitted; the commands are looked for on the host.
pub fn check(args: TimeArgs) -> anyhow::Result<()> {
    let (args, _) = args.with_hyperfine_options()?;
    args.outputs_to_stdout()?;
    plan(&args).map(drop)
}

/// What the arguments ask to time: every command for every parameter value,
/// with the run count, hooks and spawn options given. Warns (unless quiet)
/// about commands with shell syntax that will run without a shell.
fn plan(args: &TimeArgs) -> anyhow::Result<TimePlan> {
    // -L lists in the order given, then the -P scan; the first varies fastest.
    let mut parameters = Vec::new();
    for pair in args.parameter_list.chunks_exact(2) {
        parameters.push(Parameter::list(&pair[0], &pair[1])?);
    }
    if let Some([name, min, max]) = args.parameter_scan.as_deref() {
        parameters.push(Parameter::scan(
            name,
            min,
            max,
            args.parameter_step.as_deref(),
        )?);
    }
    if let Some(name) = undefined(&args.commands, &args.command_names, &parameters).first() {
        anyhow::bail!(
            "{{{name}}} is in a command or name, but no parameter {name} is defined: give \
             -P/--parameter-scan {name} MIN MAX or -L/--parameter-list {name} VALUES"
        );
    }
    let commands = build(&args.commands, &args.command_names, &parameters, args.shell)?;
    args.verdict.refuse_gate_inside_margin()?;
    if commands.len() < 2 {
        let why = "one command is timed alone";
        if args.target_mde.is_some() {
            anyhow::bail!(
                "--target-mde adds runs until the comparison of the commands could detect the \
                 change, and {why}: give two or more commands (or use --target-ci PCT)"
            );
        }
        args.ingest.refuse_without_comparison(why)?;
        args.verdict.refuse_without_comparison(why)?;
    }
    if !args.quiet {
        warn_of_syntax(args, &parameters, &commands);
    }
    let seed = args.seed.unwrap_or_else(seed_from_clock);
    Ok(TimePlan {
        target_mde: detect_target(args, seed, commands.len()),
        commands,
        count: run_count(args),
        warmup: args.warmup as usize,
        prepare: args.prepare.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
        spawn: SpawnOptions {
            cwd: args.cwd.clone(),
            env: args.env.clone(),
            timeout: args.timeout.map(Duration::from_secs_f64),
            show_output: args.show_output,
        },
        ignore_failure: args.ignore_failure,
        seed,
        target_ci: args.target_ci.map(|pct| pct / 100.0),
        max_time: args.max_time.map(Duration::from_secs_f64),
        profile: args.profile.then(|| {
            osbench::experiment::profiling::ProfilePlan::new(
                args.profile_passes.map(|n| n as usize),
                None,
            )
        }),
    })
}

/// Warns of parameters no command uses and of shell syntax in commands
/// that run without a shell.
fn warn_of_syntax(args: &TimeArgs, parameters: &[Parameter], commands: &[CommandSpec]) {
    for name in unused(&args.commands, &args.command_names, parameters) {
        eprintln!(
            "osbench: warning: no command uses {{{name}}}: each is timed once, not once per \
             value of {name} as hyperfine would (the runs would be the same measurement)"
        );
    }
    for c in commands {
        if let Some(ch) = c.shell_syntax() {
            eprintln!(
                "osbench: warning: '{}' contains '{ch}', which only a shell understands; it is \
                 passed to the program as is (use --shell to run it with sh -c)",
                c.line
            );
        }
    }
}

/// `--target-mde` and `--budget` for `commands` commands: each comparison
/// with the first judged at the verdicts' α ÷ the comparisons.
fn detect_target(args: &TimeArgs, seed: u64, commands: usize) -> Option<DetectTarget> {
    args.target_mde.map(|pct| DetectTarget {
        change: pct / 100.0,
        alpha: args.verdict.options(seed).alpha / commands.saturating_sub(1).max(1) as f64,
        budget: args.budget.unwrap_or(DEFAULT_BUDGET),
    })
}

/// How many rounds the arguments ask for: `--runs`, or hyperfine's rule
/// between `--min-runs` and `--max-runs`; with `--target-mde`, the runs
/// asked for first, then more up to `--max-runs`.
fn run_count(args: &TimeArgs) -> RunCount {
    match (args.runs, args.target_mde) {
        (Some(n), None) => RunCount::Fixed(n as usize),
        (Some(n), Some(_)) => RunCount::Auto {
            min_runs: n as usize,
            max_runs: n.max(args.max_runs) as usize,
            min_time: Duration::ZERO,
        },
        (None, _) => RunCount::Auto {
            min_runs: args.min_runs as usize,
            max_runs: args.max_runs as usize,
            min_time: Duration::from_secs(3),
        },
    }
}

/// The per-command table, the comparison and its verdicts when there are
/// several commands, and what stopped the runs early.
fn print_results(doc: &Document, comparison: Option<&Comparison>, console: Console) {
    let mut out = String::new();
    if !doc.series.is_empty() {
        out.push_str(&report::time::render(doc));
    }
    if let Some(c) = comparison {
        out.push('\n');
        out.push_str(&report::compare::render(c, console.colour));
        out.push('\n');
        out.push_str(&report::time::verdict_lines(c, console.colour));
    }
    if let Some(why) = &doc.run.stopped_by {
        out.push_str(&report::compare::precision_lines(comparison, why));
    }
    console.print(&out);
}
