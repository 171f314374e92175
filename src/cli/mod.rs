//! The command line (clap, derive): the subcommands, the argument groups
//! several of them share ([`VerdictArgs`]), the small value parsers they
//! share, and the dispatch from a parsed command to its glue. Errors print as
//! one line, `osbench: error: …` (followed by `tip:` lines: for a refused
//! flag what this subcommand takes instead, from `suggest`; clap's for other
//! errors), and exit with status 2 (130 when interrupted; every status:
//! docs/guide/exit-status.md); progress and warnings go to stderr, tables to
//! stdout ([`Console`]: to stderr when an output file is `-`, with coloured
//! verdicts on a terminal).
//! Each subcommand's arguments and glue live in its own file (`run`, `time`,
//! `compare`, `list`, `env`, `plot`, `report`, `history`, `regressions`, `export`, `import`,
//! `rm` and `relabel` in `remove`;
//! the store and export-file options in `save`, the tips for refused flags in `suggest`,
//! a case's history in `history_changes`,
//! the regression sweep's webhook in `webhook`, fleet runs in `fleet`, a VM guest's initramfs
//! in `guest_image`, progress in `progress`, completions and the man page in `generate`, the
//! OpenMetrics/JUnit/BMF files in `ingest`, `osbench bisect` in `bisect`, the job queue's
//! `submit` and `jobs` in `submit` and `worker` in `worker`); the work itself is the library's.
//! `OSBENCH_PARSE_ONLY=1` ([`PARSE_ONLY`]) stops after parsing: status 0 or 2, nothing run.

mod agent;
mod bisect;
mod compare;
mod env;
mod export;
mod fleet;
mod generate;
mod guest_image;
mod history;
mod history_changes;
mod import;
mod ingest;
mod lava;
mod list;
mod load;
mod plot;
mod progress;
mod regressions;
mod remove;
mod report;
mod run;
mod sandbox;
mod save;
mod submit;
mod suggest;
mod syscall_loop;
mod tasks;
mod time;
mod time_hyperfine;
mod webhook;
mod worker;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "osbench",
    version = env!("OSBENCH_VERSION_LINE"),
    about = "Measure operating-system primitives and tell whether a change made them faster",
    max_term_width = 100
)]
struct Cli {
    /// Colour the verdicts (faster green, slower red): auto (on a terminal, unless NO_COLOR
    /// is set), always, never
    #[arg(long, value_name = "WHEN", default_value = "auto", global = true)]
    color: ColorWhen,
    #[command(subcommand)]
    command: Command,
}

/// `--color`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ColorWhen {
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    /// Whether to colour text for a destination that is (or is not) a terminal:
    /// `auto` colours a terminal unless `NO_COLOR` is set to something
    /// (no-color.org) or `TERM` is `dumb`.
    fn enabled(self, terminal: bool) -> bool {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => terminal && !no_color && !dumb,
        }
    }
}

/// Where a command's tables go: standard output, or standard error when an
/// output file is `-` (standard output then holds that file alone); whether
/// they are coloured; and the width they fit (the terminal's, as `--help`
/// wraps to it; none off a terminal, so pipes and files get one stable line
/// per row).
#[derive(Clone, Copy)]
pub struct Console {
    to_stderr: bool,
    pub colour: bool,
    pub width: Option<usize>,
}

impl Console {
    fn new(when: ColorWhen, stdout_taken: bool) -> Self {
        let (terminal, width) = if stdout_taken {
            let e = std::io::stderr();
            (e.is_terminal(), terminal_columns(e))
        } else {
            let o = std::io::stdout();
            (o.is_terminal(), terminal_columns(o))
        };
        Self {
            to_stderr: stdout_taken,
            colour: when.enabled(terminal),
            width,
        }
    }

    /// This console with the width `layout` asks for.
    fn laid_out(self, layout: &LayoutArgs) -> Self {
        Self {
            width: layout.width(self.width),
            ..self
        }
    }

    /// Prints `text` (tables, results) where the tables go, escaped as
    /// [`osbench::text::terminal_text`] does; with a width,
    /// any line still longer than it wrapped at words (tables are fitted
    /// before they get here).
    pub fn print(&self, text: &str) {
        // Labels, host names and errors from a store or an import are in
        // these tables: their control characters are shown, not obeyed.
        let text = osbench::text::terminal_text(text);
        let text = osbench::report::fit::wrap_prose(&text, self.width);
        if self.to_stderr {
            eprint!("{text}");
        } else {
            print!("{text}");
            std::io::stdout().flush().ok();
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// List every benchmark (or the ones named): its cases, parameters (defaults, allowed
    /// values) and what one op is
    List(list::ListArgs),
    /// Run benchmarks: the quick default suite, `all`, or the ones selected; the run is
    /// saved in the results store
    Run(Box<run::RunArgs>),
    /// Show the environment recorded with every result
    Env(env::EnvArgs),
    /// Compare runs (files, stored run ids or labels): the first is the baseline
    Compare(compare::CompareArgs),
    /// Where a change went: compare runs as `compare --explain` does, each case with the
    /// functions that account for its change by the sides' profiles (`run --profile`)
    Explain(compare::CompareArgs),
    /// List the runs in the results store, or one case's runs in time order and where its
    /// level changed (BENCH:CASE --changes)
    History(history::HistoryArgs),
    /// The nightly sweep: change points of every stored case, host and configuration in a
    /// recent window (--since 24h, --last N), with the revisions and environment around
    /// them; exits 1 on a slowdown; --ack ID / --expect ID dismiss one
    Regressions(regressions::RegressionsArgs),
    /// Write a stored run to files (JSON document, Markdown, CSV)
    Export(export::ExportCmd),
    /// Remove stored runs (ids or labels), after a confirmation or with --yes
    Rm(remove::RmArgs),
    /// Give a stored run (an id, or every run with a label) a new label, after a
    /// confirmation or with --yes
    Relabel(remove::RelabelArgs),
    /// Add result documents (e.g. from another machine) to the results store
    Import(import::ImportCmd),
    /// Draw a result document's plots, and cases' histories (--history), each as SVG and PNG
    Plot(plot::PlotArgs),
    /// Write one self-contained HTML page with the tables, plots, comparison and environment,
    /// and cases' histories (--history)
    Report(report::ReportArgs),
    /// Time whole commands (builds, scripts) like hyperfine: interleaved runs, real/user/sys,
    /// peak RSS per run, and a comparison when there are several
    Time(Box<time::TimeArgs>),
    /// Serve the agent protocol on stdin/stdout: osbench inside a guest (User-Mode Linux, a
    /// container, an SSH host) measuring what the host's `run` asks (docs/agent-protocol.md)
    Agent(agent::AgentArgs),
    /// Write an initramfs that boots a virtual machine (QEMU) into `osbench agent` on its
    /// serial console, and print the --guest option that runs it
    GuestImage(guest_image::GuestImageArgs),
    /// Run on several hosts over ssh at once (`fleet run`): the same cases, each host's run
    /// stored under its name; compare them with `compare BEFORE AFTER --by host`
    #[command(subcommand)]
    Fleet(fleet::FleetCommand),
    /// Queue a plan (a plan file, or selectors) as jobs for hosts' workers, one per host, in
    /// a PostgreSQL store; each `osbench worker` runs its own and stores the run under its name
    Submit(submit::SubmitArgs),
    /// List the queued, running and finished jobs (or --workers), or --cancel one
    Jobs(submit::JobsArgs),
    /// Write a plan (a plan file) as a LAVA job definition: each boot of its kernels, in
    /// boot rounds, deployed to a QEMU device with osbench's initramfs; `import --lava`
    /// reads the results back from the job's log
    Lava(lava::LavaArgs),
    /// Run this host's jobs from the queue of a PostgreSQL store: claim, run, store, repeat
    Worker(worker::WorkerArgs),
    /// Find the commit that made something slower: `git bisect` in a work tree, each
    /// candidate built and A/B-timed against the good build (--command) or run against it as
    /// configurations (--case)
    Bisect(bisect::BisectArgs),
    /// Make N getpid() system calls and exit: seed 000's program, to time whole with `time`
    /// natively or as a UML guest's init (`init=OSBENCH -- loop N`)
    Loop(syscall_loop::LoopArgs),
    /// Run a command under a seccomp filter of N instructions that allows every system call:
    /// a configuration that measures a sandbox's cost (`--guest 'seccomp=command:{osbench}
    /// sandbox --seccomp 300 -- {osbench} agent'`)
    Sandbox(sandbox::SandboxArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell), e.g.
    /// `osbench completions bash > /etc/bash_completion.d/osbench`
    Completions(generate::CompletionsArgs),
    /// Print the man page (roff) of osbench or of one subcommand, e.g. `osbench man | man -l -`
    Man(generate::ManArgs),
}

/// The command line as parsed: the derive definitions, with hyperfine's
/// option names added to `time` as aliases. Completions and the man page are
/// generated from this too.
pub(crate) fn command() -> clap::Command {
    Cli::command().mut_subcommand("time", |time| {
        time.mut_arg("csv", |a| a.visible_alias("export-csv"))
            .mut_arg("markdown", |a| a.visible_alias("export-markdown"))
    })
}

/// How wide tables are laid out.
#[derive(Args)]
pub struct LayoutArgs {
    /// One line per table row however wide (the layout of pipes and files), not fitted to
    /// the terminal
    #[arg(long, conflicts_with = "width")]
    wide: bool,
    /// Fit tables to COLS columns (wrapping text cells, the op texts moved under the table
    /// when they have too little room) [default: the terminal's width; off a terminal, one
    /// line per row]
    #[arg(long, value_name = "COLS", value_parser = clap::value_parser!(u16).range(40..))]
    width: Option<u16>,
}

impl LayoutArgs {
    /// The width to fit, given the terminal's (`None`: one line per row).
    fn width(&self, terminal: Option<usize>) -> Option<usize> {
        match (self.wide, self.width) {
            (true, _) => None,
            (false, Some(cols)) => Some(usize::from(cols)),
            (false, None) => terminal,
        }
    }
}

/// How comparisons (of configurations, or of saved documents) are judged.
#[derive(Args)]
struct VerdictArgs {
    /// Comparisons: call a change "equivalent" when its 90% interval lies within ±PCT %, and
    /// a significant change within it "slower/faster …, within ±PCT%" [default: 1]
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    equivalence: Option<f64>,
    /// Comparisons: exit with status 1 when any case is significantly slower than the
    /// baseline by more than PCT %, else 3 when a case cannot be judged (too few
    /// invocations, runs or rounds for a test) or nothing was compared
    /// (docs/guide/exit-status.md)
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    gate: Option<f64>,
    /// With --gate: exit 0, not 3, when a case cannot be judged (the gate's line still
    /// names it); a case judged slower still trips the gate
    #[arg(long, requires = "gate", conflicts_with = "bisect_exit")]
    allow_undecided: bool,
    /// Exit as `git bisect run` expects: 1 when a case is slower beyond the margin (and
    /// beyond --gate when given), 0 when every case is faster, equivalent or within the
    /// margin, 125 (skip) when the comparison cannot decide (too few, inconclusive) or fails
    #[arg(long)]
    bisect_exit: bool,
}

impl VerdictArgs {
    fn options(&self, seed: u64) -> osbench::compare::Options {
        osbench::compare::Options {
            equivalence: self.equivalence.unwrap_or(1.0) / 100.0,
            seed,
            ..Default::default()
        }
    }

    /// An error when the gate lies inside the equivalence margin: a
    /// significant slowdown between the two would be called "slower …,
    /// within ±E%" and would not be a regression the gate stops on.
    fn refuse_gate_inside_margin(&self) -> anyhow::Result<()> {
        let equivalence = self.equivalence.unwrap_or(1.0);
        match self.gate {
            Some(gate) if gate < equivalence => anyhow::bail!(
                "--gate {gate} lies inside the equivalence margin ±{equivalence}%: a slowdown                  between {gate}% and {equivalence}% would be judged \"slower, within                  ±{equivalence}%\" and pass the gate; give --equivalence {gate} or less, or                  --gate {equivalence} or more"
            ),
            _ => Ok(()),
        }
    }

    /// An error when `--equivalence` or `--gate` was given where nothing is
    /// compared (`why` says what makes it so): they would do nothing.
    fn refuse_without_comparison(&self, why: &str) -> anyhow::Result<()> {
        let given: Vec<&str> = [
            ("--equivalence", self.equivalence.is_some()),
            ("--gate", self.gate.is_some()),
            ("--bisect-exit", self.bisect_exit),
        ]
        .into_iter()
        .filter_map(|(flag, set)| set.then_some(flag))
        .collect();
        if given.is_empty() {
            return Ok(());
        }
        anyhow::bail!(
            "{} judge{} comparisons, and {why}: nothing is compared",
            given.join(" and "),
            if given.len() == 1 { "s" } else { "" }
        )
    }

    /// The gate these options set (`--gate`, `--allow-undecided`, `--bisect-exit`).
    fn gate(&self) -> osbench::compare::gate::Gate {
        osbench::compare::gate::Gate {
            pct: self.gate,
            allow_undecided: self.allow_undecided,
            bisect: self.bisect_exit,
        }
    }

    /// The gate's decision on `comparison` as an exit status, said on
    /// stderr: 1 when the gate trips, 3 when it cannot judge a case (0
    /// with `--allow-undecided`); with `--bisect-exit`, `git bisect run`'s
    /// status (0 good, 1 bad, 125 skip) instead.
    fn exit_code(&self, comparison: Option<&osbench::compare::Comparison>) -> ExitCode {
        self.judge(comparison).code
    }

    /// As [`VerdictArgs::exit_code`], with the gate's line too.
    fn judge(&self, comparison: Option<&osbench::compare::Comparison>) -> Gated {
        gate_exit(self.gate().decide(comparison), "than the baseline")
    }

    /// The gate's decision on comparisons by host (the fleet's verdicts),
    /// as [`VerdictArgs::exit_code`].
    fn fleet_exit_code(&self, fleets: &[osbench::compare::fleet::FleetComparison]) -> ExitCode {
        gate_exit(self.gate().decide_fleet(fleets), "over the fleet").code
    }
}

/// What a command's gate decided: its exit status, and its line (without
/// the "osbench: " it is said with) when it did not simply pass, which a
/// worker notes on the job.
pub struct Gated {
    pub code: ExitCode,
    pub line: Option<String>,
}

/// A gate's decision said on stderr (`compared`: "than the baseline",
/// "over the fleet"), with its exit status.
fn gate_exit(decision: osbench::compare::gate::GateDecision, compared: &str) -> Gated {
    use osbench::compare::gate::GateDecision;
    let line = match &decision {
        GateDecision::Pass => None,
        GateDecision::Fail { pct } => Some(format!(
            "regression gate: a case is significantly slower {compared} by more than {pct}%"
        )),
        GateDecision::Undecided(undecided) => Some(undecided.words()),
        GateDecision::Bisect(step) => {
            eprintln!("osbench: bisect: {}", step.words());
            Some(format!("bisect: {}", step.words()))
        }
    };
    if let (Some(line), false) = (&line, matches!(decision, GateDecision::Bisect(_))) {
        note(&format!("osbench: {line}"));
    }
    Gated {
        code: ExitCode::from(decision.exit_status()),
        line,
    }
}

/// The status of a command that failed: 130 when interrupted, else 2, or
/// 125 (`git bisect run`'s skip) under `--bisect-exit`.
fn failure_code(e: &anyhow::Error, bisect_exit: bool) -> ExitCode {
    let interrupted = e
        .chain()
        .any(|c| matches!(c.downcast_ref(), Some(osbench::Error::Interrupted)));
    // 128 + SIGINT, as shells report a process stopped by Ctrl-C.
    ExitCode::from(match (interrupted, bisect_exit) {
        (true, _) => 130,
        (false, true) => BISECT_SKIP,
        (false, false) => 2,
    })
}

/// `git bisect run`'s status for "this commit cannot be tested".
const BISECT_SKIP: u8 = osbench::compare::BisectStep::Skip.exit_status();

/// Whether the command line asks for `--bisect-exit` (for errors met before
/// or while it is parsed).
fn bisect_exit_asked() -> bool {
    std::env::args_os().any(|a| a == "--bisect-exit")
}

/// Selectors (`run`'s, `fleet run`'s) as any text, checked later.
fn selector_parser() -> impl clap::builder::TypedValueParser<Value = String> {
    with_bench_names(clap::builder::StringValueParser::new())
}

/// `parser`, with the benchmark names and `all` as its possible values, so
/// shell completion offers them rather than file names (they are not the
/// only values it accepts: `syscall:null` is one too).
fn with_bench_names<P: clap::builder::TypedValueParser>(parser: P) -> BenchNames<P> {
    BenchNames(parser)
}

#[derive(Clone)]
struct BenchNames<P>(P);

impl<P: clap::builder::TypedValueParser> clap::builder::TypedValueParser for BenchNames<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<P::Value, clap::Error> {
        self.0.parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let names = osbench::bench::REGISTRY.iter().map(|d| d.name);
        let all = std::iter::once(osbench::bench::util::select::ALL);
        Some(Box::new(
            names.chain(all).map(clap::builder::PossibleValue::new),
        ))
    }
}

/// `--pin`: one of the placements, which completion offers.
fn pin_parser() -> impl clap::builder::TypedValueParser<Value = osbench::measure::placement::Pin> {
    use clap::builder::TypedValueParser;
    use osbench::measure::placement::Pin;
    clap::builder::PossibleValuesParser::new(Pin::ALL.map(|p| p.as_str())).map(|name| {
        name.parse::<Pin>()
            .expect("a possible value is a placement")
    })
}

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "'{s}' is not a number of seconds above 0 and at most 86400"
        )),
    }
}

/// The line on stderr that says how a `--target-mde` run went, if it had one.
fn print_target_mde(doc: &osbench::document::Document) {
    if let Some(target) = &doc.run.target_mde {
        eprintln!("{}", osbench::report::compare::target_mde_line(target));
    }
}

/// `--budget` when not given: ten minutes.
const DEFAULT_BUDGET: std::time::Duration = std::time::Duration::from_secs(600);

/// A duration as a number and a unit, or several (`90s`, `10min`, `1h30m`,
/// `500ms`, `2.5m`); a bare number is seconds. Above 0, at most a day.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let bad = || {
        format!(
            "'{s}' is not a duration: give a number with a unit, e.g. 90s, 10min, 1h30m \
             (ms, s, m or min, h), above 0 and at most 24h"
        )
    };
    let text = s.trim();
    let mut secs = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(split);
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let scale = match unit.trim() {
            "" if next.is_empty() && rest.len() == text.len() => 1.0,
            "ms" => 0.001,
            "s" | "sec" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        secs += value * scale;
        rest = next;
    }
    if secs > 0.0 && secs <= 86_400.0 {
        Ok(std::time::Duration::from_secs_f64(secs))
    } else {
        Err(bad())
    }
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1000.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a percentage from 0 to 1000")),
    }
}

/// The environment variable that makes osbench only parse its command line:
/// `OSBENCH_PARSE_ONLY=1 osbench …` exits 0 when the command line parses and
/// 2 (with clap's message) when it does not, and does nothing else — no
/// store, no files, no benchmark. tests/docs.rs checks every command line in
/// README.md and docs/guide/ with it; it is not in `--help`.
const PARSE_ONLY: &str = "OSBENCH_PARSE_ONLY";

pub fn main() -> ExitCode {
    osbench::measure::limits::fit_address_space_limit();
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    let console = |stdout_taken: bool| Console::new(cli.color, stdout_taken);
    let bisect_exit = match &cli.command {
        Command::Run(args) => args.verdict.bisect_exit,
        Command::Time(args) => args.verdict.bisect_exit,
        Command::Compare(args) | Command::Explain(args) => args.verdict.bisect_exit,
        _ => false,
    };
    let result = match cli.command {
        Command::List(args) => list::list(&args, console(false).laid_out(&args.layout)),
        Command::Run(args) => {
            let console = console(args.stdout_taken()).laid_out(&args.layout);
            run::run(*args, console)
        }
        Command::Env(args) => env::show_env(&args, console(false).laid_out(&args.layout)),
        Command::Compare(args) => {
            let console = console(args.stdout_taken()).laid_out(&args.layout);
            compare::compare(args, console)
        }
        Command::Explain(mut args) => {
            let console = console(args.stdout_taken()).laid_out(&args.layout);
            args.explain = true;
            compare::compare(args, console)
        }
        Command::History(args) => {
            let console = console(false).laid_out(&args.layout);
            history::history(args, console)
        }
        Command::Regressions(args) => {
            let console = console(args.exports.stdout_taken()).laid_out(&args.layout);
            regressions::regressions(args, console)
        }
        Command::Export(args) => export::export(args),
        Command::Rm(args) => remove::rm(args),
        Command::Relabel(args) => remove::relabel(args),
        Command::Import(args) => import::import(args),
        Command::Plot(args) => plot::plot(args),
        Command::Report(args) => report::html_report(args),
        Command::Time(args) => {
            let console = console(args.stdout_taken()).laid_out(&args.layout);
            time::time(*args, console)
        }
        Command::Agent(args) => agent::agent(&args),
        Command::GuestImage(args) => guest_image::guest_image(&args),
        Command::Loop(args) => syscall_loop::run(&args),
        Command::Sandbox(args) => sandbox::run(&args),
        Command::Bisect(args) => bisect::bisect(&args, console(false).laid_out(&args.layout)),
        Command::Fleet(command) => fleet::fleet(command, console(false)),
        Command::Submit(args) => submit::submit(args),
        Command::Lava(args) => lava::lava(args),
        Command::Jobs(args) => {
            let console = console(false).laid_out(&args.layout);
            submit::jobs(args, console)
        }
        Command::Worker(args) => worker::worker(args),
        Command::Completions(args) => generate::completions(&args),
        Command::Man(args) => generate::man(&args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("osbench: error: {}", safe_line(&format!("{e:#}")));
        failure_code(&e, bisect_exit)
    })
}

/// The parsed command line, or the exit status when there is nothing to run:
/// help, version, a usage error, or a command line that parses under
/// [`PARSE_ONLY`]`=1` (status 0).
fn parse() -> Result<Cli, ExitCode> {
    let args = arguments();
    let cli = command()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| clap_exit(e, &args))?;
    if std::env::var_os(PARSE_ONLY).is_some_and(|v| v == "1") {
        return Err(ExitCode::SUCCESS);
    }
    Ok(cli)
}

/// The command line. As a guest's init the kernel puts the words of its
/// command line that it did not take for itself first (`osbench nosysemu
/// agent --init root=98:0` from UML's `init=osbench nosysemu -- agent
/// --init`), and as the `/init` of a guest's initramfs (`osbench
/// guest-image`) it passes no arguments of ours: either way this is
/// `osbench agent --init -- WORDS…`, every word the kernel passed kept.
fn arguments() -> Vec<std::ffi::OsString> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let at_init = args
        .windows(2)
        .position(|w| w[0] == "agent" && w[1] == "--init");
    let words: Vec<std::ffi::OsString> = match at_init {
        _ if args.first().is_some_and(|a| a == "/init") => args[1..].to_vec(),
        Some(at) if osbench::guest::init::is_pid1() => [&args[1..at], &args[at + 2..]].concat(),
        _ => return args,
    };
    let mut init = vec![
        args[0].clone(),
        "agent".into(),
        "--init".into(),
        "--".into(),
    ];
    init.extend(words.into_iter().filter(|w| w != "--"));
    init
}

/// Help and version go to stdout with status 0; usage errors become one
/// line and status 2, with their tips (`args`: the command line).
fn clap_exit(e: clap::Error, args: &[std::ffi::OsString]) -> ExitCode {
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
            let help = help_command(std::env::args_os());
            let code = ExitCode::from(if bisect_exit_asked() { BISECT_SKIP } else { 2 });
            if let Some(line) = control_characters_escaped(&e) {
                eprintln!("osbench: {line} (see {help})");
                return code;
            }
            let words: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
            let (first, tips) = usage_error(&e, &words);
            let first = osbench::text::mask_secrets(&first);
            let first = osbench::text::capped(&first, osbench::text::MESSAGE_CAP);
            eprintln!("osbench: {first} (see {help})");
            for tip in tips {
                eprintln!("  {tip}");
            }
            code
        }
    }
}

/// The error's first line, with the indented lines that continue it (the
/// names of missing arguments), and clap's suggestions (`tip: a similar
/// argument exists: '--samples'`), each one line.
fn error_lines(text: &str) -> (String, Vec<String>) {
    let mut lines = text.lines().peekable();
    let mut first = lines
        .next()
        .unwrap_or("invalid command line")
        .trim()
        .to_string();
    while let Some(more) = lines.next_if(|l| l.starts_with("  ") && !is_tip(l)) {
        first.push(' ');
        first.push_str(more.trim());
    }
    let tips = lines.filter(|l| is_tip(l)).map(|l| l.trim().to_string());
    (first, tips.collect())
}

/// The first line of a usage error of the command line `words` and its
/// tips: for a flag refused ([`suggest::tips`]: what this subcommand takes
/// for what the flag means, never clap's `-- FLAG` for a word that is no
/// value), those in place of clap's; clap's own for other errors.
fn usage_error(e: &clap::Error, words: &[String]) -> (String, Vec<String>) {
    use clap::error::{ContextKind, ContextValue};
    let (first, clap_tips) = error_lines(&e.render().to_string());
    let string = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let Some(refused) = string(ContextKind::InvalidArg) else {
        return (first, clap_tips);
    };
    let similar = string(ContextKind::SuggestedArg);
    let tips = suggest::tips(&command(), words, refused, similar);
    let tips = tips.into_iter().map(|t| t.line).collect();
    match e.kind() {
        ErrorKind::UnknownArgument => (first, tips),
        ErrorKind::TooManyValues if !tips.is_empty() => (first, tips),
        _ => (first, clap_tips),
    }
}

/// A clap error of the command line `words` as one line: its first line
/// and its tips, without the usage.
fn clap_words(e: &clap::Error, words: &[String]) -> String {
    let (first, tips) = usage_error(e, words);
    let first = first.strip_prefix("error: ").unwrap_or(&first).to_string();
    std::iter::once(first)
        .chain(tips)
        .collect::<Vec<_>>()
        .join("; ")
}

fn is_tip(line: &str) -> bool {
    line.trim_start().starts_with("tip:")
}

/// The help to point to after a usage error: the subcommand's (`osbench run
/// --help`, `osbench fleet run --help`) when the command line names one,
/// else osbench's.
fn help_command(args: impl Iterator<Item = std::ffi::OsString>) -> String {
    let cli = command();
    let mut cmd = &cli;
    let mut path = vec!["osbench".to_string()];
    for a in args.skip(1) {
        if let Some(sub) = a.to_str().and_then(|a| cmd.find_subcommand(a)) {
            path.push(sub.get_name().to_string());
            cmd = sub;
        }
    }
    format!("{} --help", path.join(" "))
}

/// A refused value with control characters in it (`--label $'a\nb'`), as one
/// line with them escaped; `None` for every other error.
fn control_characters_escaped(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let (Some(ContextValue::String(value)), Some(ContextValue::String(arg))) = (
        e.get(ContextKind::InvalidValue),
        e.get(ContextKind::InvalidArg),
    ) else {
        return None;
    };
    if !value.contains(char::is_control) {
        return None;
    }
    let why = std::error::Error::source(e).map_or(String::new(), |s| format!(": {s}"));
    Some(format!(
        "error: invalid value '{}' for '{arg}'{why}",
        value.escape_debug()
    ))
}

/// Set by `-q` on commands that print results only through their tables
/// and files (compare, history, export, plot, report): [`note`] is then silent.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `-q`, `--quiet` of compare, history, export, plot and report.
#[derive(Args)]
struct QuietArg {
    /// No messages on stderr (warnings, files written, the gate's line; the exit status
    /// still says it): the results only
    #[arg(long, short)]
    quiet: bool,
}

impl QuietArg {
    /// Makes [`note`] silent for the rest of the command when `-q` was given.
    fn apply(&self) {
        QUIET.store(self.quiet, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A message on stderr (`osbench: wrote …`, a warning), unless `-q` was given.
fn note(line: &str) {
    if !QUIET.load(std::sync::atomic::Ordering::Relaxed) {
        eprint_wrapped(line);
    }
}

/// The columns of the terminal `stream` is on (none off a terminal): its
/// window's, also when the terminal reports no rows (`terminal_size` then
/// gives none: `script` without `stty rows`, some serial consoles), else
/// `$COLUMNS` when the window has no size at all.
fn terminal_columns(stream: impl std::os::fd::AsFd) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let fd = stream.as_fd();
    if !fd.is_terminal() {
        return None;
    }
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into `size`, which outlives the
    // call; `fd` is borrowed from `stream`, so it stays open during it.
    let got = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut size) } == 0;
    let from_env = || std::env::var("COLUMNS").ok()?.trim().parse::<usize>().ok();
    match terminal_size::terminal_size_of(fd) {
        Some((w, _)) => Some(usize::from(w.0)),
        None if got && size.ws_col > 0 => Some(usize::from(size.ws_col)),
        None => from_env(),
    }
    .filter(|&w| w > 0)
}

/// The width of the terminal standard error is on (none off a terminal).
fn stderr_width() -> Option<usize> {
    static WIDTH: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *WIDTH.get_or_init(|| terminal_columns(std::io::stderr()))
}

/// `osbench: warning: WHAT` on standard error, wrapped as [`eprint_wrapped`] does.
fn warn(what: &str) {
    eprint_wrapped(&format!("osbench: warning: {what}"));
}

/// `text` on standard error, its long lines wrapped at words to the
/// terminal's width (as they are, one line each, off a terminal).
fn eprint_wrapped(text: &str) {
    let text: Vec<String> = text.split('\n').map(safe_text).collect();
    let wrapped = osbench::report::fit::wrap_prose(&text.join("\n"), stderr_width());
    eprintln!("{}", wrapped.trim_end_matches('\n'));
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A message as osbench prints it: on one line, control characters
/// escaped, secrets in URLs masked, at most [`osbench::text::MESSAGE_CAP`] bytes.
fn safe_line(s: &str) -> String {
    safe_text(&one_line(s))
}

/// One line of a message: control characters escaped, secrets in URLs
/// masked, capped (`osbench::text`).
fn safe_text(s: &str) -> String {
    use osbench::text::{MESSAGE_CAP, capped, mask_secrets, printable};
    capped(&mask_secrets(&printable(s)), MESSAGE_CAP).into_owned()
}

/// A seed that differs between runs; 53 bits so JSON readers keep it exact.
fn seed_from_clock() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)) & ((1 << 53) - 1)
}

#[cfg(test)]
mod duration_tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_take_units_and_bare_seconds() {
        let secs = |s: &str| parse_duration(s).map(|d| d.as_secs_f64());
        assert_eq!(secs("90"), Ok(90.0));
        assert_eq!(secs("2s"), Ok(2.0));
        assert_eq!(secs("10min"), Ok(600.0));
        assert_eq!(secs("1h30m"), Ok(5400.0));
        assert_eq!(secs("2.5m"), Ok(150.0));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["", "0", "5 parsecs", "1h30", "25h", "-3s", "s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
