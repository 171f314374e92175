//! `osbench worker`: its arguments, and the command line's end of a job.
//! The loop (spool, claiming, leases, kernel boots, ending jobs) is the
//! library's, `osbench::queue::serve::Worker`; this file builds one from the
//! arguments, gives it [`CliRunner`] — a job's stored command line read by
//! the same command line as `osbench run` / `osbench time` and run by their
//! glue (jobs already queued must still run) — and says what it says on
//! stderr. It works in its spool directory, so a run whose store fails
//! lands there as a file.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow};
use clap::{Args, FromArgMatches};

use osbench::measure::Interrupt;
use osbench::queue::JobPlan;
use osbench::queue::boot::BootSettings;
use osbench::queue::hook::{JobHook, JobRun};
use osbench::queue::policy::{Given, Policy};
use osbench::queue::serve::{JobRunner, Worker};
use osbench::queue::worker::{self as queue_worker, Limits};
use osbench::store::{self, Location};

use super::save::StoreArgs;
use super::submit::{given, parse_name};
use super::{Cli, ColorWhen, Command, Console, parse_secs};

#[derive(Args)]
pub struct WorkerArgs {
    /// The name this host's runs are filed under, and jobs are submitted to (`submit --hosts`)
    #[arg(long, value_name = "NAME", value_parser = parse_name)]
    name: String,
    /// A tag `submit --tag` selects this worker by (repeat)
    #[arg(long = "tag", value_name = "TAG", value_parser = parse_name)]
    tags: Vec<String>,
    /// Run at most one job, then exit (none queued: exit at once)
    #[arg(long)]
    once: bool,
    /// Seconds between asking for a job when there is none [default: 30]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    poll: Option<f64>,
    /// Seconds a claim (and this worker's name) is held without renewal; the lease is
    /// renewed between cases, so a case must take less [default: 300]
    #[arg(long, value_name = "SECS", value_parser = parse_secs)]
    lease: Option<f64>,
    /// Refuse (fail) jobs planned to take longer than SECS seconds on this host, and stop
    /// (fail) a job, `time` ones too, still running after SECS seconds (what it measured is kept)
    #[arg(long = "max-job-time", value_name = "SECS", value_parser = parse_secs)]
    max_job_time: Option<f64>,
    /// Where runs that could not be stored wait, and where jobs run [default:
    /// $STATE_DIRECTORY, else $XDG_STATE_HOME/osbench/worker-NAME, else
    /// ~/.local/state/osbench/worker-NAME]
    #[arg(long, value_name = "DIR")]
    spool: Option<PathBuf>,
    /// Kernel jobs: a shell command that boots the job's kernel once and reboots (a one-shot
    /// boot entry), told what to boot in OSBENCH_BOOT_* variables; used where kexec is not on
    /// PATH, or the job names only a release (docs/kernel-boot-jobs.md)
    #[arg(long = "reboot-command", value_name = "CMD")]
    reboot_command: Option<String>,
    /// Kernel jobs: what boots back into the default kernel after a job that asks to
    /// [default: systemctl reboot]
    #[arg(long = "boot-back-command", value_name = "CMD")]
    boot_back_command: Option<String>,
    /// Kernel jobs: boot a kexec-loaded kernel with `kexec -e` at once (no clean shutdown)
    /// instead of `systemctl kexec`
    #[arg(long = "kexec-direct")]
    kexec_direct: bool,
    /// What jobs' plans may make this host do (knobs, named set-up scripts, `time` commands,
    /// guests, kernel boots), a TOML file this host's admin owns; none there: nothing of the
    /// kind (docs/running-workers-safely.md) [default: $OSBENCH_WORKER_POLICY, else
    /// /etc/osbench/worker-policy.toml]
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    #[command(flatten)]
    store: StoreArgs,
}

/// The command line's end of a job: its arguments read by the same
/// command line as `osbench run` and `osbench time`, and run by their glue.
struct CliRunner;

impl JobRunner for CliRunner {
    type Command = Command;

    fn read(&self, argv: &[String]) -> Result<Command, String> {
        super::command()
            .try_get_matches_from(argv)
            .and_then(|m| Cli::from_arg_matches(&m))
            .map(|cli| cli.command)
            .map_err(|e| super::clap_words(&e, argv))
    }

    fn run(&self, command: Command, hook: &mut JobHook) -> JobRun {
        let console = Console::new(ColorWhen::Never, false);
        let (result, saved) = match command {
            Command::Run(args) => super::run::run_hooked(*args, console, Some(hook)),
            Command::Time(args) => super::time::time_hooked(*args, console, Some(hook)),
            _ => unreachable!("a job's plan is `run` or `time`"),
        };
        let gate = result.as_ref().ok().and_then(|g| g.line.clone());
        JobRun {
            result: result
                .map(drop)
                .map_err(|e| super::one_line(&format!("{e:#}"))),
            saved,
            gate,
        }
    }

    fn check(&self, plan: &JobPlan) -> Result<Given, String> {
        super::submit::check(plan).map_err(|e| super::one_line(&format!("{e:#}")))?;
        let mut argv = vec!["osbench".to_string()];
        argv.extend(plan.argv(None));
        given(&argv).map_err(|e| super::clap_words(&e, &argv))
    }
}

/// A line of the worker's, on stderr (escaped, masked, capped).
fn say(line: &str) {
    eprintln!("{}", super::safe_text(line));
}

pub fn worker(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let interrupt = Interrupt::install()?;
    let location = store::location(args.store.store.as_deref())?;
    if let Location::File(path) = &location {
        return Err(store::queue_needs_postgres("worker", &path.display().to_string()).into());
    }
    let policy_file = args
        .policy
        .clone()
        .or_else(|| std::env::var_os("OSBENCH_WORKER_POLICY").map(PathBuf::from));
    let policy = Policy::load(policy_file.as_deref())?;
    let spool = queue_worker::spool_dir(args.spool.as_deref(), &args.name)?;
    // Absolute: the worker works in it.
    let spool = std::fs::create_dir_all(&spool)
        .and_then(|()| std::fs::canonicalize(&spool))
        .with_context(|| format!("cannot use the spool directory {}", spool.display()))?;
    if let Some(warning) = queue_worker::check_spool(&spool)? {
        super::warn(&warning);
    }
    let w = Worker {
        id: queue_worker::identity(&args.name, &args.tags),
        spool,
        lease: args
            .lease
            .map_or(queue_worker::DEFAULT_LEASE, Duration::from_secs_f64),
        poll: args
            .poll
            .map_or(queue_worker::DEFAULT_POLL, Duration::from_secs_f64),
        policy,
        limits: Limits {
            max_job_time: args.max_job_time.map(Duration::from_secs_f64),
        },
        boot: BootSettings {
            reboot_command: args.reboot_command.clone(),
            kexec_direct: args.kexec_direct,
            boot_back_command: args.boot_back_command.clone(),
        },
        location,
        store_arg: args.store.store.clone(),
        interrupt,
        runner: CliRunner,
        say,
        say_warning: super::warn,
        stranded: Default::default(),
    };
    w.register()?;
    let run = w
        .serve(args.once)
        .map(|()| ExitCode::SUCCESS)
        .map_err(|e| match e {
            osbench::Error::Interrupted => anyhow!(e).context("worker stopped"),
            e => anyhow!(e),
        });
    w.unregister();
    run
}

#[cfg(test)]
mod tests {
    use super::*;
    use osbench::queue::policy::{FREE, POLICED, REFUSED};

    #[test]
    fn every_option_of_run_and_time_is_placed_by_the_policy() {
        let command = crate::cli::command();
        let mut missing = Vec::new();
        for name in ["run", "time"] {
            let sub = command.find_subcommand(name).unwrap();
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str();
                let placed = [FREE, POLICED, REFUSED].iter().any(|l| l.contains(&id));
                if !placed && id != "help" {
                    missing.push(format!("{name} {id}"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "options in none of the policy's lists (queue::policy): {missing:?}"
        );
    }

    #[test]
    fn a_plans_options_are_seen_as_the_parser_reads_them() {
        let argv = |words: &str| -> Vec<String> {
            let mut v = vec!["osbench".to_string()];
            v.extend(words.split(' ').map(String::from));
            v
        };
        let given = given(&argv("time --export-json=/tmp/x -p true make")).unwrap();
        let ids: Vec<&str> = given.iter().map(|(id, _, _)| id.as_str()).collect();
        assert_eq!(ids, ["commands", "prepare", "export_hyperfine"]);
        assert_eq!(given[2].1, "--export-hyperfine");
        assert_eq!(given[2].2, ["/tmp/x"]);
        let given = given_ids(&argv("run syscall:null --samples 3 --json=/etc/x"));
        assert_eq!(given, ["selectors", "json", "samples"]);
    }

    fn given_ids(argv: &[String]) -> Vec<String> {
        given(argv)
            .unwrap()
            .into_iter()
            .map(|(id, _, _)| id)
            .collect()
    }
}
