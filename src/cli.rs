//! The command line (clap, derive) and the glue between it and the library.
//! Errors print as one line, `osbench: error: …`, and exit with status 2;
//! progress and warnings go to stderr, tables to stdout. Saving and exporting
//! (the results store, --json/--markdown/--csv) are in `save`, progress in
//! `progress`.

mod progress;
mod save;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use osbench::bench::select::{Selector, resolve};
use osbench::env;
use osbench::experiment::{self, Plan};
use osbench::measure::placement::Pin;
use osbench::measure::{Interrupt, Policy};
use osbench::report;
use osbench::store::PendingFile;
use progress::Progress;
use save::{ExportArgs, SaveArgs, StoreArgs};

const DEBUG_WARNING: &str = "osbench: warning: this is a debug build; its timings are not representative \
                             (build with --release: cargo run --release -- ...)";

#[derive(Parser)]
#[command(
    name = "osbench",
    version,
    about = "Measure operating-system primitives and tell whether a change made them faster",
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List every benchmark: its cases, parameters (defaults, allowed values) and what one op is
    List,
    /// Run benchmarks: the quick default suite, `all`, or the ones selected; the run is
    /// saved in the results store
    Run(RunArgs),
    /// Show the environment recorded with every result
    Env(EnvArgs),
    /// Compare runs (files, stored run ids or labels): the first is the baseline
    Compare(CompareArgs),
    /// List the runs in the results store
    History(save::HistoryArgs),
    /// Write a stored run to files (JSON document, Markdown, CSV)
    Export(save::ExportCmd),
    /// Add result documents (e.g. from another machine) to the results store
    Import(save::ImportCmd),
    /// Draw a result document's plots, each as SVG and PNG
    Plot(PlotArgs),
    /// Write one self-contained HTML page with the tables, plots, comparison and environment
    Report(ReportArgs),
    /// Time whole commands (builds, scripts) like hyperfine: interleaved runs, real/user/sys,
    /// peak RSS per run, and a comparison when there are several
    Time(TimeArgs),
}

#[derive(Args)]
struct PlotArgs {
    /// A stored run (id or label) or a result document file
    #[arg(value_name = "RUN")]
    run: String,
    /// Directory for the NAME.svg and NAME.png files (created if missing)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Args)]
struct ReportArgs {
    /// Stored runs (ids or labels) or result document files; given several, they are also
    /// compared, the first being the baseline
    #[arg(value_name = "RUN", num_args = 1.., required = true)]
    runs: Vec<String>,
    /// Write the report to FILE, atomically
    #[arg(long, value_name = "FILE")]
    html: PathBuf,
    /// Several documents: call a change "equivalent" when its 90% interval lies within ±PCT %
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = parse_pct)]
    equivalence: f64,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Args)]
struct TimeArgs {
    /// Commands to time, one string each, split into words like a shell does (quotes
    /// respected) and executed directly; the first is the baseline of the comparison
    #[arg(value_name = "COMMAND", required = true)]
    commands: Vec<String>,
    /// Run each command through `sh -c` (for pipes, redirections, variables, built-ins)
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
    /// Timed runs of each command (default: at least 10 and at least 3 s of the slowest)
    #[arg(long, short = 'r', value_name = "N",
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    runs: Option<u32>,
    /// With the default run count: at least this many runs
    #[arg(long, value_name = "N", default_value_t = 10, conflicts_with = "runs",
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    min_runs: u32,
    /// With the default run count or --target-ci: at most this many runs
    #[arg(long, value_name = "N", default_value_t = 10_000, conflicts_with = "runs",
          value_parser = clap::value_parser!(u32).range(2..=1_000_000))]
    max_runs: u32,
    /// Unrecorded runs of each command first
    #[arg(long, short = 'w', value_name = "N", default_value_t = 1)]
    warmup: u32,
    /// Shell command run before every run of every command (untimed)
    #[arg(long, value_name = "CMD")]
    prepare: Option<String>,
    /// Shell command run once before all runs
    #[arg(long, value_name = "CMD")]
    setup: Option<String>,
    /// Shell command run once after all runs, whatever happened
    #[arg(long, value_name = "CMD")]
    cleanup: Option<String>,
    /// Kill a run (its whole process group) after SECS seconds; it then counts as failed
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
    /// Seed of the random run order (default: taken from the clock; always recorded)
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Also write FILE in hyperfine's --export-json layout (results[].command, mean,
    /// stddev, median, user, system, min, max, times, exit_codes, parameters)
    #[arg(long = "export-hyperfine", value_name = "FILE")]
    export_hyperfine: Option<PathBuf>,
    /// Where the runs go besides the terminal (the document has every run's wall, user,
    /// sys, RSS, …)
    #[command(flatten)]
    save: SaveArgs,
    #[command(flatten)]
    verdict: VerdictArgs,
    /// Print only the results: no progress, no warnings
    #[arg(long, short)]
    quiet: bool,
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(format!("'{s}' is not KEY=VALUE")),
    }
}

#[derive(Args)]
struct EnvArgs {
    /// Print the JSON object stored as `env` in result documents
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CompareArgs {
    /// Runs to compare, the first being the baseline: each a result document file, a
    /// stored run id, or a label (the latest stored run with it)
    #[arg(value_name = "RUN", num_args = 2.., required = true)]
    runs: Vec<String>,
    #[command(flatten)]
    verdict: VerdictArgs,
    /// Seed of the bootstrap resampling
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    exports: ExportArgs,
    #[command(flatten)]
    store: StoreArgs,
    /// The environment key that is the change being tested (e.g. `cmdline`, `kernel`,
    /// `vulnerabilities`, `cpuidle.haltpoll.guest_halt_poll_ns`; a key covers its nested keys;
    /// repeat for several). Other differing keys are flagged as possible confounders
    #[arg(long = "factor", value_name = "KEY")]
    factors: Vec<String>,
}

/// How comparisons (of configurations, or of saved documents) are judged.
#[derive(Args)]
struct VerdictArgs {
    /// Comparisons: call a change "equivalent" when its 90% interval lies within ±PCT %
    #[arg(long, value_name = "PCT", default_value_t = 1.0, value_parser = parse_pct)]
    equivalence: f64,
    /// Comparisons: exit with status 1 when any case is significantly slower than the
    /// baseline by more than PCT %
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    gate: Option<f64>,
}

impl VerdictArgs {
    fn options(&self, seed: u64) -> osbench::compare::Options {
        osbench::compare::Options {
            equivalence: self.equivalence / 100.0,
            seed,
            ..Default::default()
        }
    }

    /// Status 1, said on stderr, when the gate is set and `comparison` trips it.
    fn exit_code(&self, comparison: Option<&osbench::compare::Comparison>) -> ExitCode {
        match (self.gate, comparison) {
            (Some(pct), Some(c)) if c.gate_tripped(pct) => {
                eprintln!(
                    "osbench: regression gate: a case is significantly slower than the baseline by more than {pct}%"
                );
                ExitCode::from(1)
            }
            _ => ExitCode::SUCCESS,
        }
    }
}

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a number of seconds above 0 and at most 86400"
        )),
    }
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a percentage from 0 to 1000")),
    }
}

#[derive(Args)]
struct RunArgs {
    /// BENCH or BENCH:key=value[,key=value...], e.g. `syscall` or `syscall:case=null`;
    /// none: the quick default suite; `all`: every default case of every benchmark
    #[arg(value_name = "SELECTOR")]
    selectors: Vec<String>,
    #[command(flatten)]
    save: SaveArgs,
    /// Accepted samples per case (lmbench takes 11)
    #[arg(long, value_name = "N", default_value_t = 11,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    samples: u32,
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
    #[arg(long, value_name = "PLACEMENT", value_parser = parse_pin)]
    pin: Option<Pin>,
    /// A configuration to compare, NAME=COMMAND: COMMAND (run with sh -c) is its set-up,
    /// run before its block in every round, e.g. --config off='echo 0 > /sys/…' (repeat;
    /// the first is the baseline; NAME= with no command runs nothing)
    #[arg(long = "config", value_name = "NAME=COMMAND")]
    configs: Vec<String>,
    /// Tear-down of a configuration, NAME=COMMAND, run after its block whatever happens
    #[arg(long = "teardown", value_name = "NAME=COMMAND")]
    teardowns: Vec<String>,
    /// Configurations (and selectors) from a TOML experiment file: name, setup, teardown,
    /// env, params ("bench.key" = value), pin; see docs/design-notes.md
    #[arg(long, value_name = "FILE", conflicts_with_all = ["configs", "teardowns"])]
    experiment: Option<PathBuf>,
    /// Rounds when comparing configurations (each runs every configuration once per case)
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(2..=osbench::stats::compare::MAX_ROUNDS as i64))]
    rounds: u32,
    /// With configurations: add rounds (up to 20) until every ratio's 95% interval is within
    /// ±PCT %, instead of running --rounds
    #[arg(long = "target-ci", value_name = "PCT", value_parser = parse_pct)]
    target_ci: Option<f64>,
    /// With --target-ci: stop adding rounds after SECS seconds
    #[arg(long = "max-time", value_name = "SECS", value_parser = parse_secs)]
    max_time: Option<f64>,
    #[command(flatten)]
    verdict: VerdictArgs,
    /// Print only the results: no progress, no warnings
    #[arg(long, short)]
    quiet: bool,
    /// Do not open perf_event counters (context_switches, cpu_migrations, page_faults,
    /// cycles, instructions; counted in a short pass after each case's timed samples);
    /// rusage counters are still read
    #[arg(long = "no-perf")]
    no_perf: bool,
}

fn parse_pin(s: &str) -> Result<Pin, String> {
    Pin::parse(s).ok_or_else(|| format!("'{s}' is not one of none, same, spread"))
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
    if s.parse::<f64>() == Ok(0.0) {
        Ok(0.0)
    } else {
        parse_ms(s)
    }
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let result = match cli.command {
        Command::List => {
            print!("{}", report::list_benchmarks());
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => run(args),
        Command::Env(args) => show_env(&args),
        Command::Compare(args) => compare(args),
        Command::History(args) => save::history(args),
        Command::Export(args) => save::export(args),
        Command::Import(args) => save::import(args),
        Command::Plot(args) => plot(args),
        Command::Report(args) => html_report(args),
        Command::Time(args) => time(args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("osbench: error: {}", one_line(&format!("{e:#}")));
        let interrupted = e
            .chain()
            .any(|c| matches!(c.downcast_ref(), Some(osbench::Error::Interrupted)));
        // 128 + SIGINT, as shells report a process stopped by Ctrl-C.
        ExitCode::from(if interrupted { 130 } else { 2 })
    })
}

/// Help and version go to stdout with status 0; usage errors become one line and status 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            ExitCode::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            ExitCode::from(2)
        }
        _ => {
            let text = e.render().to_string();
            // The first line, with the indented lines that continue it (the
            // names of missing arguments).
            let mut lines = text.lines();
            let mut first = lines
                .next()
                .unwrap_or("invalid command line")
                .trim()
                .to_string();
            for more in lines.take_while(|l| l.starts_with("  ")) {
                first.push(' ');
                first.push_str(more.trim());
            }
            eprintln!("osbench: {first} (see osbench --help)");
            ExitCode::from(2)
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let selectors: Vec<Selector> = args
        .selectors
        .iter()
        .map(|s| s.parse())
        .collect::<Result<_, _>>()?;
    let (configs, selectors) = match &args.experiment {
        Some(path) => {
            let (select, configs) = osbench::experiment::file::load(path)?;
            check_configs(&configs)?;
            // Selectors on the command line take precedence over the file's.
            let selectors = if selectors.is_empty() {
                select
                    .iter()
                    .map(|s| s.parse())
                    .collect::<Result<Vec<Selector>, _>>()?
            } else {
                selectors
            };
            (configs, selectors)
        }
        None => (configs_of(&args.configs, &args.teardowns)?, selectors),
    };
    let cases = resolve(&selectors)?;
    // Before measuring: a bad output path must fail now, not after the run.
    let saving = args.save.prepare(args.quiet)?;
    let policy = Policy {
        samples: args.samples as usize,
        sample_time_ns: (args.sample_time * 1e6).round() as u64,
        warmup_ns: (args.warmup * 1e6).round() as u64,
    };
    if policy.samples < 6 && !args.quiet {
        eprintln!(
            "osbench: warning: with fewer than 6 samples no interval covers the median with 95% \
             probability; the CI shown is min–max with its true coverage"
        );
    }
    let interrupt = Interrupt::install()?;
    let plan = Plan {
        cases,
        seed: args.seed.unwrap_or_else(seed_from_clock),
        pin: args.pin,
        configs,
        rounds: if args.target_ci.is_some() {
            osbench::stats::compare::MAX_ROUNDS
        } else {
            args.rounds as usize
        },
        target_ci: args.target_ci.map(|pct| pct / 100.0),
        max_time: args.max_time.map(std::time::Duration::from_secs_f64),
        policy,
        // Probed at the start; each case's counting pass opens them on its tasks.
        perf: !args.no_perf,
    };
    let mut progress = Progress::new(args.quiet, plan.steps(), plan.expected_duration());
    let mut outcome = experiment::run(&plan, interrupt, env::capture(), &mut progress);
    progress.finish();
    outcome.document.run.label = args.save.label.clone();

    // With configurations, the paired comparison goes to the table and the document.
    let comparison = attach_comparison(&mut outcome.document, plan.configs.len() >= 2, |doc| {
        osbench::compare::paired(doc, args.verdict.options(plan.seed))
    });
    let doc = &outcome.document;
    if !doc.series.is_empty() {
        print!("{}", report::render_run(doc));
    }
    if let Some(c) = &comparison {
        println!();
        print!("{}", report::compare::render(c));
        if let Some(why) = &doc.run.stopped_by {
            println!("Stopped: {why}.");
            println!(
                "Smallest change each comparison could show (half-width of its 95% interval):"
            );
            for row in &c.rows {
                for (label, ch) in c.labels[1..].iter().zip(&row.changes) {
                    let half = ch.ci.relative_half_width() * 100.0;
                    println!("  {} {} {label}: ±{half:.2}%", row.bench, row.case);
                }
            }
        }
    }
    std::io::stdout().flush().ok();
    // A run that stopped before measuring anything (a failed privilege check,
    // an early interrupt) leaves no file and no stored run behind.
    let keep = !doc.series.is_empty() || outcome.error.is_none();
    let saved = saving.finish(doc, keep)?;
    let code = args.verdict.exit_code(comparison.as_ref());
    match outcome.error {
        None => Ok(code),
        Some(e) => Err(anyhow!(e)).context(format!(
            "run stopped early after {} of {} cases{}",
            doc.series.len(),
            plan.cases.len(),
            match (saved.run_id, saved.documents.first()) {
                (Some(id), _) => format!(" (stored run {id} keeps what was measured)"),
                (None, Some(_)) => " (the document keeps what was measured)".into(),
                (None, None) => String::new(),
            }
        )),
    }
}

/// When `wanted` and something was measured: `compare(doc)`, its records
/// written into `doc`; a comparison that cannot be made is a warning.
fn attach_comparison(
    doc: &mut osbench::document::Document,
    wanted: bool,
    compare: impl FnOnce(&osbench::document::Document) -> osbench::Result<osbench::compare::Comparison>,
) -> Option<osbench::compare::Comparison> {
    if !wanted || doc.series.is_empty() {
        return None;
    }
    let comparison = compare(doc)
        .inspect_err(|e| eprintln!("osbench: warning: no comparison: {e}"))
        .ok()?;
    doc.comparisons = comparison.records();
    Some(comparison)
}

/// The configurations from `--config NAME=COMMAND` and `--teardown NAME=COMMAND`.
fn configs_of(
    configs: &[String],
    teardowns: &[String],
) -> anyhow::Result<Vec<osbench::experiment::Config>> {
    let mut out: Vec<osbench::experiment::Config> = Vec::new();
    for spec in configs {
        let (name, setup) = osbench::experiment::config::parse_assignment(spec)?;
        out.push(osbench::experiment::Config {
            name,
            setup,
            ..Default::default()
        });
    }
    check_configs(&out)?; // unique names before tear-downs are attached by name
    for spec in teardowns {
        let (name, command) = osbench::experiment::config::parse_assignment(spec)?;
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
fn check_configs(configs: &[osbench::experiment::Config]) -> anyhow::Result<()> {
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
        if let Some(pin) = c.pin.as_deref().filter(|p| Pin::parse(p).is_none()) {
            anyhow::bail!(
                "configuration '{}': pin '{pin}' is not one of none, same, spread",
                c.name
            );
        }
    }
    Ok(())
}

/// A seed that differs between runs; 53 bits so JSON readers keep it exact.
fn seed_from_clock() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)) & ((1 << 53) - 1)
}

/// The documents the arguments name (files, stored run ids or labels), each
/// with the name it is shown under.
fn load_documents(
    runs: &[String],
    store: &StoreArgs,
) -> anyhow::Result<Vec<(String, osbench::document::Document)>> {
    save::resolve_all(runs, store)
}

fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let pending = args.exports.prepare()?;
    let docs = save::resolve_all(&args.runs, &args.store)?;
    let options = args.verdict.options(args.seed);
    let mut comparison = osbench::compare::compare(&docs, options)?;
    comparison.factors = args.factors.clone();
    print!("{}", report::compare::render(&comparison));
    std::io::stdout().flush().ok();
    pending.commit(
        || {
            let record = serde_json::json!({
                "schema": osbench::document::SCHEMA,
                "tool": osbench::document::Tool::this(),
                "documents": comparison.labels,
                "method": comparison.method,
                "comparisons": comparison.records(),
            });
            let mut bytes =
                serde_json::to_vec_pretty(&record).expect("a comparison always serialises");
            bytes.push(b'\n');
            bytes
        },
        || report::markdown::comparison(&comparison),
        || report::csv::comparison(&comparison),
    )?;
    Ok(args.verdict.exit_code(Some(&comparison)))
}

fn show_env(args: &EnvArgs) -> anyhow::Result<ExitCode> {
    let env = env::capture();
    if args.json {
        let text = serde_json::to_string_pretty(&env).context("serialising the environment")?;
        println!("{text}");
    } else {
        print!("{}", report::env_text(&env));
    }
    if cfg!(debug_assertions) {
        eprintln!("{DEBUG_WARNING}");
    }
    Ok(ExitCode::SUCCESS)
}

fn plot(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let (name, doc) = load_documents(std::slice::from_ref(&args.run), &args.store)?
        .pop()
        .expect("one document per argument");
    let plots = report::plot::document_plots(&doc)?;
    if plots.is_empty() {
        anyhow::bail!("{name} has no series to plot");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create the directory {}", args.out.display()))?;
    for p in &plots {
        let png = report::plot::png(p)?;
        for (ext, bytes) in [("svg", p.svg.as_bytes()), ("png", &png[..])] {
            let path = args.out.join(format!("{}.{ext}", p.name));
            PendingFile::create(&path)?.commit(bytes)?;
            println!("{}", path.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn html_report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let docs = load_documents(&args.runs, &args.store)?;
    let pending = PendingFile::create(&args.html)?;
    // Documents that cannot be compared are still reported, each on its own.
    let comparison = (docs.len() >= 2)
        .then(|| {
            let options = osbench::compare::Options {
                equivalence: args.equivalence / 100.0,
                ..Default::default()
            };
            osbench::compare::compare(&docs, options)
                .inspect_err(|e| eprintln!("osbench: warning: no comparison in the report: {e}"))
                .ok()
        })
        .flatten();
    let html = report::html::render(&docs, comparison.as_ref())?;
    pending.commit(html.as_bytes())?;
    eprintln!("osbench: wrote {}", args.html.display());
    Ok(ExitCode::SUCCESS)
}

fn time(args: TimeArgs) -> anyhow::Result<ExitCode> {
    use osbench::bench::command::{Parameter, build};
    use osbench::experiment::time::{self as timing, RunCount, TimePlan};
    let mut parameters = Vec::new();
    if let Some([name, min, max]) = args.parameter_scan.as_deref() {
        parameters.push(Parameter::scan(
            name,
            min,
            max,
            args.parameter_step.as_deref(),
        )?);
    }
    for pair in args.parameter_list.chunks_exact(2) {
        parameters.push(Parameter::list(&pair[0], &pair[1])?);
    }
    let commands = build(&args.commands, &args.command_names, &parameters, args.shell)?;
    if !args.quiet {
        for c in &commands {
            if let Some(ch) = c.shell_syntax() {
                eprintln!(
                    "osbench: warning: '{}' contains '{ch}', which only a shell understands; it is \
                     passed to the program as is (use --shell to run it with sh -c)",
                    c.line
                );
            }
        }
    }
    let plan = TimePlan {
        commands,
        count: match args.runs {
            Some(n) => RunCount::Fixed(n as usize),
            None => RunCount::Auto {
                min_runs: args.min_runs as usize,
                max_runs: args.max_runs as usize,
                min_time: std::time::Duration::from_secs(3),
            },
        },
        warmup: args.warmup as usize,
        prepare: args.prepare,
        setup: args.setup,
        cleanup: args.cleanup,
        spawn: osbench::measure::command::SpawnOptions {
            cwd: args.cwd,
            env: args.env,
            timeout: args.timeout.map(std::time::Duration::from_secs_f64),
            show_output: args.show_output,
        },
        ignore_failure: args.ignore_failure,
        seed: args.seed.unwrap_or_else(seed_from_clock),
        target_ci: args.target_ci.map(|pct| pct / 100.0),
        max_time: args.max_time.map(std::time::Duration::from_secs_f64),
    };
    let programs = timing::check(&plan)?;
    let saving = args.save.prepare(args.quiet)?;
    let hyperfine_file = args
        .export_hyperfine
        .as_deref()
        .map(osbench::store::PendingFile::create)
        .transpose()?;
    let interrupt = Interrupt::install()?;
    // The length is not known yet (it follows the first round or a precision
    // target): the bar appears after a second and learns it as rounds end.
    let mut progress = Progress::new(args.quiet, 0, std::time::Duration::ZERO);
    let outcome = timing::run(&plan, programs, &interrupt, env::capture(), &mut progress);
    progress.finish();
    let mut outcome = outcome?;
    outcome.document.run.label = args.save.label.clone();
    let commands = outcome.document.series.len();
    let comparison = attach_comparison(&mut outcome.document, commands >= 2, |doc| {
        osbench::compare::commands(doc, args.verdict.options(plan.seed))
    });
    let doc = &outcome.document;
    if !doc.series.is_empty() {
        print!("{}", report::time::render(doc));
    }
    if let Some(c) = &comparison {
        println!();
        print!("{}", report::compare::render(c));
        println!();
        print!("{}", report::time::verdict_lines(c));
    }
    if let Some(why) = &doc.run.stopped_by {
        println!("Stopped: {why}.");
    }
    std::io::stdout().flush().ok();
    if let (Some(file), false) = (hyperfine_file, doc.series.is_empty()) {
        file.commit(&report::hyperfine::render(doc))?;
    }
    saving.finish(doc, !doc.series.is_empty())?;
    let code = args.verdict.exit_code(comparison.as_ref());
    match outcome.error {
        None => Ok(code),
        Some(e) => Err(anyhow!(e)),
    }
}
