//! `osbench submit` and `osbench jobs`: jobs into the queue of a PostgreSQL
//! store (`osbench::queue`), one per host (and per `--repeat`), each with the
//! whole plan — a plan file's, or selectors (or `--time` commands) with
//! the options after `--` — checked here by the same command line the
//! worker will parse it with; and the list of jobs (or workers) with their
//! states, hosts, times, errors and result run ids, or one job cancelled.
//! Left out: editing a queued job (cancel it and submit again).

use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use clap::{Args, FromArgMatches};
use serde_json::json;

use osbench::queue::policy::Given;
use osbench::queue::worker::{JOB_META, MAX_ATTEMPTS};
use osbench::queue::{JobCommand, JobPlan, PlanFile, parse_plan_file};
use osbench::report;
use osbench::store::{JobRow, JobState, NewJob, Store, WorkerRow};

use super::save::{MetaArgs, StoreArgs, parse_label};
use super::{Cli, Command};

#[derive(Args)]
pub struct SubmitArgs {
    /// A plan file (TOML: select or time, options, [[config]]; see
    /// docs/guide/worker-queue.md), or selectors as `run` takes them, or with --time the commands to time
    #[arg(value_name = "PLAN.toml|SELECTOR", required = true)]
    items: Vec<String>,
    /// The items are commands for `osbench time`, not selectors
    #[arg(long)]
    time: bool,
    /// The hosts (worker names) to queue a job for, comma-separated
    #[arg(long, value_name = "NAME,...", value_delimiter = ',', value_parser = parse_name,
          required_unless_present = "tag", conflicts_with = "tag")]
    hosts: Vec<String>,
    /// Queue a job for every registered worker with this tag
    #[arg(long, value_name = "TAG")]
    tag: Option<String>,
    /// Name the runs; compare and history accept the name
    #[arg(long, value_name = "NAME", value_parser = parse_label)]
    label: Option<String>,
    #[command(flatten)]
    meta: MetaArgs,
    /// Not claimed before TIME: RFC 3339 (2026-12-03T02:00:00Z) or +INTERVAL from now
    /// (+2 hours), as the store's clock reads it
    #[arg(long = "not-before", value_name = "TIME")]
    not_before: Option<String>,
    /// Queue N jobs per host (run one after another)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
    /// Attempts of each job before a lost lease fails it
    #[arg(long, value_name = "N", default_value_t = MAX_ATTEMPTS as u32,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    attempts: u32,
    #[command(flatten)]
    store: StoreArgs,
    /// Options of `osbench run` (or `time`) for the job, after `--`: e.g. -- --samples 5
    #[arg(last = true, value_name = "OPTIONS")]
    options: Vec<String>,
}

#[derive(Args)]
pub struct JobsArgs {
    /// Only the jobs of this host
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Only the jobs in this state (queued, claimed, running, rebooting, done, failed, lost,
    /// cancelled)
    #[arg(long, value_name = "STATE", value_parser = |s: &str| s.parse::<JobState>())]
    state: Option<JobState>,
    /// Print JSON (one object per job, or per worker with --workers)
    #[arg(long)]
    json: bool,
    /// Cancel job ID (a running one stops at its next case and stores what it measured; the
    /// job stays cancelled)
    #[arg(long, value_name = "ID", conflicts_with_all = ["host", "state", "workers"])]
    cancel: Option<i64>,
    /// List the registered workers (name, tags, machine, version, last seen) instead
    #[arg(long)]
    workers: bool,
    #[command(flatten)]
    store: StoreArgs,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
}

/// Opens the store for a queue command, refusing an SQLite file.
fn queue_store(store: &StoreArgs, what: &str) -> anyhow::Result<Store> {
    let location = osbench::store::location(store.store.as_deref())?;
    if let osbench::store::Location::File(path) = &location {
        return Err(osbench::store::queue_needs_postgres(what, &path.display().to_string()).into());
    }
    Ok(Store::open(&location)?)
}

pub fn submit(args: SubmitArgs) -> anyhow::Result<ExitCode> {
    let file = plan(&args)?;
    check(&file.plan)?;
    say_what_needs_a_policy(&file);
    let meta = args.meta.map()?;
    if meta.contains_key(JOB_META) {
        bail!("--meta {JOB_META}=… is set by the worker to the job's id; use another key");
    }
    let mut store = queue_store(&args.store, "submit")?;
    let hosts = hosts(&args, &store)?;
    let not_before = args
        .not_before
        .as_deref()
        .map(|t| store.server_time(t))
        .transpose()?;
    let kernel = file
        .kernel
        .clone()
        .map(osbench::queue::kernel_jobs::KernelJob::from_tables)
        .transpose()?
        .map(|k| k.to_json());
    let mut jobs = Vec::new();
    for _ in 0..args.repeat {
        for host in &hosts {
            jobs.push(NewJob {
                host: host.clone(),
                label: args.label.clone(),
                meta: meta.clone(),
                plan: file.plan.to_json(),
                kernel: kernel.clone(),
                osbench_version: env!("CARGO_PKG_VERSION").to_string(),
                not_before: not_before.clone(),
                max_attempts: i64::from(args.attempts),
            });
        }
    }
    let ids = store.submit(&jobs)?;
    for (id, job) in ids.iter().zip(&jobs) {
        println!("queued job {id} for {}", job.host);
    }
    if let Some(t) = &not_before {
        eprintln!("osbench: not claimed before {t}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The plan the items and options make.
fn plan(args: &SubmitArgs) -> anyhow::Result<PlanFile> {
    let file = match &args.items[..] {
        [one] if !args.time && one.ends_with(".toml") => {
            let text = std::fs::read_to_string(one)
                .with_context(|| format!("cannot read the plan file {one}"))?;
            let mut file = parse_plan_file(&text, one)?;
            file.plan.args.extend(args.options.iter().cloned());
            file
        }
        items => PlanFile {
            plan: JobPlan {
                command: if args.time {
                    JobCommand::Time
                } else {
                    JobCommand::Run
                },
                args: items.iter().chain(&args.options).cloned().collect(),
                experiment: None,
            },
            kernel: None,
        },
    };
    osbench::queue::job::refuse_worker_options(&file.plan.args)?;
    Ok(file)
}

/// Checks the plan as the worker will read it: the same parser, and the
/// same checks `run` / `time` make before measuring (selectors,
/// configurations, options that would do nothing).
pub(super) fn check(plan: &JobPlan) -> anyhow::Result<()> {
    let dir = tempfile::tempdir().context("no temporary directory to check the plan in")?;
    let experiment = dir.path().join("experiment.toml");
    if let Some(text) = &plan.experiment {
        std::fs::write(&experiment, text)
            .with_context(|| format!("cannot write {}", experiment.display()))?;
    }
    let mut argv = vec!["osbench".to_string()];
    argv.extend(plan.argv(plan.experiment.as_ref().map(|_| experiment.as_path())));
    let shown = plan.argv(None).join(" ");
    let cli = super::command()
        .try_get_matches_from(&argv)
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| {
            anyhow!(
                "the job would run `osbench {shown}`, which is refused: {}",
                super::clap_words(&e, &argv)
            )
        })?;
    let checked = match cli.command {
        Command::Run(args) => super::run::check(&args),
        Command::Time(args) => super::time::check(*args),
        _ => unreachable!("a job's plan is `run` or `time`"),
    };
    checked.with_context(|| format!("the job would run `osbench {shown}`"))
}

/// Says when the plan asks for more than a worker with no policy file runs
/// (shell set-ups, knobs, `time` commands, guests, a kernel): such a job
/// fails on a worker whose policy does not allow it.
fn say_what_needs_a_policy(file: &PlanFile) {
    let mut argv = vec!["osbench".to_string()];
    argv.extend(file.plan.argv(None));
    let Ok(given) = given(&argv) else {
        return;
    };
    let default = osbench::queue::policy::Policy {
        origin: "a worker's default policy".into(),
        ..Default::default()
    };
    if let Err(why) = default.admit(&file.plan, &given, file.kernel.is_some()) {
        eprintln!(
            "osbench: note: {}; the job runs only on workers whose policy allows it \
             (docs/running-workers-safely.md)",
            osbench::text::printable(&why)
        );
    }
}

/// The hosts to queue for: `--hosts`, or the workers with `--tag`.
fn hosts(args: &SubmitArgs, store: &Store) -> anyhow::Result<Vec<String>> {
    let registered = store.workers(args.tag.as_deref())?;
    if let Some(tag) = &args.tag {
        if registered.is_empty() {
            bail!(
                "no registered worker has tag '{tag}'; workers register when they start \
                 (`osbench worker --name NAME --tag {tag}`), and `osbench jobs --workers` lists them"
            );
        }
        return Ok(registered.into_iter().map(|w| w.name).collect());
    }
    let mut hosts: Vec<String> = Vec::new();
    for h in &args.hosts {
        if hosts.contains(h) {
            bail!("host '{h}' is given twice in --hosts");
        }
        if !registered.iter().any(|w| &w.name == h) {
            eprintln!(
                "osbench: warning: no worker named '{h}' has registered yet; its job waits until \
                 `osbench worker --name {h}` starts"
            );
        }
        hosts.push(h.clone());
    }
    Ok(hosts)
}

pub fn jobs(args: JobsArgs, console: super::Console) -> anyhow::Result<ExitCode> {
    let what = if args.cancel.is_some() {
        "jobs --cancel"
    } else {
        "jobs"
    };
    let mut store = queue_store(&args.store, what)?;
    if let Some(id) = args.cancel {
        let was = store.cancel_job(id)?;
        println!("cancelled job {id} (it was {was})");
        return Ok(ExitCode::SUCCESS);
    }
    if args.workers {
        let workers = store.workers(None)?;
        match args.json {
            true => println!(
                "{}",
                json!(workers.iter().map(worker_json).collect::<Vec<_>>())
            ),
            false => console.print(&report::jobs::workers(&workers, console.width)),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let jobs = store.jobs(args.host.as_deref(), args.state)?;
    match args.json {
        true => println!("{}", json!(jobs.iter().map(job_json).collect::<Vec<_>>())),
        false => console.print(&report::jobs::jobs(&jobs, console.width)),
    }
    Ok(ExitCode::SUCCESS)
}

fn job_json(j: &JobRow) -> serde_json::Value {
    let plan: serde_json::Value = serde_json::from_str(&j.plan).unwrap_or(json!(j.plan));
    let kernel: Option<serde_json::Value> = j
        .kernel
        .as_deref()
        .and_then(|k| serde_json::from_str(k).ok());
    json!({
        "id": j.id, "host": j.host, "state": j.state.as_str(), "label": j.label,
        "meta": j.meta, "plan": plan, "kernel": kernel, "osbench_version": j.osbench_version,
        "not_before": j.not_before, "submitted": j.submitted, "lease_owner": j.lease_owner,
        "lease_expires": j.lease_expires, "attempts": j.attempts,
        "max_attempts": j.max_attempts, "started": j.started, "finished": j.finished,
        "error": j.error, "run_id": j.run_id, "boot_into": j.boot_into,
        "boot_deadline": j.boot_deadline, "meta_unreadable": j.meta_unreadable,
    })
}

fn worker_json(w: &WorkerRow) -> serde_json::Value {
    json!({
        "name": w.name, "tags": w.tags, "machine": w.machine, "pid": w.pid,
        "osbench_version": w.osbench_version, "live": w.live, "started": w.started,
        "last_seen": w.last_seen, "lease_expires": w.lease_expires,
    })
}

/// Worker and host names: what runs are filed under.
pub(super) fn parse_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && !s.starts_with('.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    match ok {
        true => Ok(s.to_string()),
        false => Err(format!(
            "'{s}' is not a name: letters, digits, '-', '_' and '.', not starting with '.'"
        )),
    }
}

/// The options `argv` (`osbench run|time …`) gives, as the parser reads
/// them: each one's id, its name as written, and its values.
pub(super) fn given(argv: &[String]) -> Result<Given, clap::Error> {
    let command = super::command();
    let matches = command.clone().try_get_matches_from(argv)?;
    let Some((name, sub)) = matches.subcommand() else {
        return Ok(Given::new());
    };
    let Some(subcommand) = command.find_subcommand(name) else {
        return Ok(Given::new());
    };
    let mut given = Given::new();
    for arg in subcommand.get_arguments() {
        let id = arg.get_id().as_str();
        if sub.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let shown = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => id.to_string(),
        };
        let values = sub.get_raw(id).map_or(Vec::new(), |values| {
            values.map(|v| v.to_string_lossy().into_owned()).collect()
        });
        given.push((id.to_string(), shown, values));
    }
    Ok(given)
}
