//! `osbench bisect`: finds the commit that made something slower. The good
//! revision is built once in a work tree of its own; `git bisect` checks out
//! each candidate in another, which is built and judged by an interleaved
//! A/B against the good build — this very binary's `time --bisect-exit`
//! (`--command`) or `run --bisect-exit` with one configuration per side
//! (`--case`, each side's `--switch` its set-up, or each side a `--guest`
//! booted from its tree) — never against stored
//! history. BAD is confirmed slower first. The report lists every step's
//! verdict and names the first bad commit. The work trees are
//! `osbench::experiment::bisect`'s; the statistics the child's.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{Context, bail};
use clap::Args;

use osbench::compare::BisectStep;
use osbench::experiment::bisect::{Bisection, Progress, Step};
use osbench::fleet::quote;

use super::parse_pct;

/// Runs (or rounds) of an A/B without --runs: what `time` and `run` take at least.
const DEFAULT_RUNS: u32 = 10;

/// How long a build may take without --build-timeout: an hour (a kernel
/// builds in less on any machine worth bisecting on).
const DEFAULT_BUILD_TIMEOUT: f64 = 3600.0;

#[derive(Args)]
pub struct BisectArgs {
    /// A revision that is fast (the baseline every candidate is timed against)
    #[arg(long, value_name = "REV")]
    good: String,
    /// A later revision that is slow
    #[arg(long, value_name = "REV")]
    bad: String,
    /// Shell command (sh -c) that builds a work tree, run in it; a candidate whose build
    /// fails is skipped
    #[arg(long, value_name = "CMD")]
    build: String,
    /// A build still running after SECS seconds is killed (the good one's ends the bisection,
    /// a candidate's is skipped) [default: 3600]
    #[arg(long = "build-timeout", value_name = "SECS", value_parser = super::parse_secs)]
    build_timeout: Option<f64>,
    /// Shell command to time in each side's work tree (as `osbench time --shell` would)
    #[arg(
        long,
        value_name = "CMD",
        required_unless_present = "case",
        conflicts_with = "case"
    )]
    command: Option<String>,
    /// A benchmark case (BENCH or BENCH:key=value,…) run with one configuration per side:
    /// its --switch makes that side's build the one in use, or its --guest boots it
    #[arg(long, value_name = "SELECTOR")]
    case: Option<String>,
    /// With --case: shell command run in a side's work tree before its block in every round
    /// (install its module, point a link at its build)
    #[arg(long, value_name = "CMD", requires = "case", required_unless_present_any = ["command", "guest"])]
    switch: Option<String>,
    /// With --case: shell command, run in a side's work tree, that boots its build as a guest
    /// running `osbench agent` on its stdin/stdout (`{osbench}`: this binary), as `run --guest
    /// NAME=command:CMD`; e.g. a UML kernel built in the tree
    #[arg(long, value_name = "CMD", requires = "case", conflicts_with = "switch")]
    guest: Option<String>,
    /// The git repository [default: the current directory]
    #[arg(long, value_name = "DIR", default_value = ".")]
    repo: PathBuf,
    /// Runs (--command) or rounds (--case) of every A/B [default: 10]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..=100_000))]
    runs: Option<u32>,
    /// An A/B that cannot decide (inconclusive, too few) is repeated with twice the runs,
    /// up to N times, before the candidate is skipped
    #[arg(long, value_name = "N", default_value_t = 1)]
    retries: u32,
    /// A candidate is bad when slower beyond this margin (and good when within it) [default: 1]
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    equivalence: Option<f64>,
    /// A candidate is bad only when slower by more than PCT %
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    gate: Option<f64>,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
}

pub fn bisect(args: &BisectArgs, console: super::Console) -> anyhow::Result<ExitCode> {
    // Ctrl-C or SIGTERM stops a build (its process group killed), the A/B
    // (told with SIGINT) and this loop, and the work trees are removed on
    // the way out (status 130).
    let interrupt = osbench::measure::Interrupt::install()?;
    let build = |tree: &Path| build(args, tree, &interrupt);
    let work = tempfile::Builder::new()
        .prefix("osbench-bisect-")
        .tempdir()
        .context("creating a directory for the bisection's work trees")?;
    let mut bisection = Bisection::start(&args.repo, work.path(), &args.good, &args.bad)?;
    eprintln!(
        "osbench: bisecting {:.12} (good) .. {:.12} (bad) in {}",
        bisection.good,
        bisection.bad,
        work.path().display()
    );
    if let Err(why) = build(bisection.good_tree())? {
        bail!(
            "the good revision {:.12} does not build: {why}",
            bisection.good
        );
    }
    let confirmed = step(args, &bisection, work.path(), 0, &build)?;
    if confirmed.outcome != BisectStep::Bad {
        bail!(
            "--bad {:.12} is not slower than --good: {}; nothing to bisect",
            bisection.bad,
            confirmed.verdict
        );
    }
    eprintln!(
        "osbench: {:.12} bad (--bad confirmed): {}",
        confirmed.commit, confirmed.verdict
    );
    bisection.steps.push(confirmed);
    let mut progress = bisection.begin()?;
    while progress == Progress::Next {
        let next = step(args, &bisection, work.path(), bisection.steps.len(), &build)?;
        eprintln!(
            "osbench: {:.12} {}: {}",
            next.commit,
            next.outcome.as_str(),
            next.verdict
        );
        progress = bisection.mark(next)?;
    }
    console.print(&report(&bisection, &progress));
    match progress {
        Progress::FirstBad(_) => Ok(ExitCode::SUCCESS),
        _ => {
            bail!("the bisection could not name one first bad commit (only skipped ones are left)")
        }
    }
}

/// What a build ended as: `Ok(Err(why))` when it failed or timed out,
/// `Err` when a stop signal ended it.
type Built = anyhow::Result<Result<(), String>>;

/// Runs `--build` (sh -c) in `tree`, in a process group of its own killed
/// at a stop signal or at `--build-timeout`.
fn build(args: &BisectArgs, tree: &Path, stop: &osbench::measure::Interrupt) -> Built {
    let timeout = args.build_timeout.unwrap_or(DEFAULT_BUILD_TIMEOUT);
    let watch = osbench::measure::hook::Watch {
        stop: Some(stop),
        timeout: Some(std::time::Duration::from_secs_f64(timeout)),
    };
    let command = format!("cd {} && {}", quote(&tree.to_string_lossy()), args.build);
    match osbench::measure::hook::sh("the build", &Default::default(), &command, watch) {
        Ok(()) => Ok(Ok(())),
        Err(e @ osbench::Error::Interrupted) => Err(e).context("bisection stopped"),
        Err(e) => Ok(Err(e.to_string())),
    }
}

fn last_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    text.lines().last().unwrap_or("").to_string()
}

/// The candidate checked out, built and judged against the good build.
fn step(
    args: &BisectArgs,
    b: &Bisection,
    work: &Path,
    n: usize,
    build: &dyn Fn(&Path) -> Built,
) -> anyhow::Result<Step> {
    let (commit, subject) = b.candidate()?;
    let skipped = |verdict: String| Step {
        commit: commit.clone(),
        subject: subject.clone(),
        outcome: BisectStep::Skip,
        verdict,
    };
    let built = build(b.candidate_tree())?;
    stop_if_interrupted()?;
    if let Err(why) = built {
        return Ok(skipped(format!("build failed: {why}")));
    }
    // An A/B that cannot decide is repeated with twice the runs, --retries times.
    let mut runs = args.runs.unwrap_or(DEFAULT_RUNS);
    let mut attempt = 0;
    loop {
        let json = work.join(format!("step-{n}-{attempt}.json"));
        let (outcome, verdict) = ab(args, b, &json, runs)?;
        if outcome != BisectStep::Skip || attempt == args.retries {
            let tries = if attempt > 0 {
                format!(
                    " (after {attempt} repeat{} with more runs)",
                    plural(attempt)
                )
            } else {
                String::new()
            };
            return Ok(Step {
                outcome,
                verdict: verdict + &tries,
                ..skipped(String::new())
            });
        }
        attempt += 1;
        runs = runs.saturating_mul(2);
        eprintln!("osbench: {commit:.12}: {verdict}; again with {runs} runs");
    }
}

fn plural(n: u32) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// One A/B of `runs` runs (rounds): the outcome and the verdict in words.
fn ab(
    args: &BisectArgs,
    b: &Bisection,
    json: &Path,
    runs: u32,
) -> anyhow::Result<(BisectStep, String)> {
    let out = judged(judge(args, b, json, runs))?;
    stop_if_interrupted()?;
    let outcome = match out.status.code() {
        Some(0) => BisectStep::Good,
        Some(1) => BisectStep::Bad,
        Some(125) => BisectStep::Skip,
        _ => bail!(
            "the A/B stopped ({}): {}",
            out.status,
            last_line(&out.stderr)
        ),
    };
    let verdict = verdicts(json).unwrap_or_else(|| last_line(&out.stderr));
    Ok((outcome, verdict))
}

/// Runs the A/B `cmd` to its end, its stderr kept; a stop signal is
/// passed on to it as SIGINT (it keeps what it measured and exits 130).
fn judged(mut cmd: Command) -> anyhow::Result<std::process::Output> {
    // A group of its own: a terminal's Ctrl-C reaches it once, from here.
    let mut child = std::os::unix::process::CommandExt::process_group(&mut cmd, 0)
        .stderr(Stdio::piped())
        .spawn()
        .context("running this osbench for the A/B")?;
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(mut e) = stderr {
            let _ = std::io::Read::read_to_end(&mut e, &mut text);
        }
        text
    });
    let mut told = false;
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for the A/B")? {
            break status;
        }
        if !told && osbench::measure::interrupt::requested() {
            told = true;
            // SAFETY: kill has no memory-safety preconditions; the pid is
            // our child's, not reaped yet.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap_or_default();
    Ok(std::process::Output {
        status,
        stdout: Vec::new(),
        stderr,
    })
}

/// `Interrupted` once a stop signal came.
fn stop_if_interrupted() -> anyhow::Result<()> {
    if osbench::measure::interrupt::requested() {
        return Err(osbench::Error::Interrupted).context("bisection stopped");
    }
    Ok(())
}

/// This binary's A/B of the good tree against the candidate tree, unsaved,
/// its document written to `json`.
fn judge(args: &BisectArgs, b: &Bisection, json: &Path, runs: u32) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| "osbench".into());
    let mut cmd = Command::new(exe);
    let in_tree =
        |tree: &Path, what: &str| format!("cd {} && {what}", quote(&tree.to_string_lossy()));
    let (good, candidate) = (b.good_tree(), b.candidate_tree());
    match (&args.command, &args.case, &args.switch) {
        (Some(command), _, _) => {
            cmd.args(["time", "--shell", "-n", "good", "-n", "candidate"])
                .arg(in_tree(good, command))
                .arg(in_tree(candidate, command));
            cmd.arg("--runs").arg(runs.to_string());
        }
        (None, Some(case), Some(switch)) => {
            cmd.args(["run", case, "--config"])
                .arg(format!("good={}", in_tree(good, switch)))
                .arg("--config")
                .arg(format!("candidate={}", in_tree(candidate, switch)));
            cmd.arg("--rounds").arg(runs.to_string());
        }
        (None, Some(case), None) => {
            let boot = args
                .guest
                .as_deref()
                .expect("clap requires --switch or --guest");
            cmd.args(["run", case, "--guest"])
                .arg(format!("good=command:{}", in_tree(good, boot)))
                .arg("--guest")
                .arg(format!("candidate=command:{}", in_tree(candidate, boot)));
            cmd.arg("--rounds").arg(runs.to_string());
        }
        _ => unreachable!("clap requires --command or --case"),
    }
    cmd.args(["--bisect-exit", "--no-store", "--quiet", "--json"])
        .arg(json);
    for (flag, value) in [("--equivalence", args.equivalence), ("--gate", args.gate)] {
        if let Some(v) = value {
            cmd.arg(flag).arg(v.to_string());
        }
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null());
    cmd
}

/// The verdicts the A/B's document records, in words, joined.
fn verdicts(json: &Path) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(json).ok()?).ok()?;
    let words: Vec<String> = doc["comparisons"]
        .as_array()?
        .iter()
        .map(|c| {
            let case = c["case"].as_str().unwrap_or_default();
            let words = c["verdict_words"].as_str().unwrap_or_default();
            format!("{case}: {words}")
        })
        .collect();
    (!words.is_empty()).then(|| words.join("; "))
}

/// Every step, then the first bad commit (or why there is none).
fn report(b: &Bisection, progress: &Progress) -> String {
    let mut out = format!(
        "Bisection of {:.12} (good) .. {:.12} (bad), each candidate A/B against the good build\n\n",
        b.good, b.bad
    );
    out.push_str("step  commit        outcome  verdict\n");
    for (i, s) in b.steps.iter().enumerate() {
        let note = if i == 0 { " (--bad confirmed)" } else { "" };
        out.push_str(&format!(
            "{i:<4}  {:.12}  {:<7}  {}{note}  [{}]\n",
            s.commit,
            s.outcome.as_str(),
            s.verdict,
            s.subject
        ));
    }
    out.push('\n');
    match progress {
        Progress::FirstBad(hash) => {
            out.push_str(&format!("first bad commit: {hash} {}\n", b.subject(hash)));
        }
        Progress::Undecidable(words) => out.push_str(&format!("no first bad commit: {words}\n")),
        Progress::Next => {}
    }
    out
}
