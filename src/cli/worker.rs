//! `osbench worker`: one host's end of the job queue (`osbench::queue`).
//! It registers its name (refused while another live worker holds it),
//! then loops: send the runs its spool holds (stored when the store was
//! away), claim the next job for its name, check it (osbench version,
//! host limits), run it with the ordinary `run` / `time` glue — parsed
//! from the job's arguments by the same command line — under a lease
//! renewed between cases ([`Hooked`]), and end the job (done with its run
//! id, failed with the error, or released on SIGTERM). A job cancelled (or
//! claimed by another worker) while it runs stops the run before its next
//! case, through the run's stop flag nested in the worker's; what it
//! measured is kept and the worker goes on to its next job. It works in its
//! spool directory, so a run whose store fails lands there as a file.
//! A job that asks for a kernel is booted into it first (`queue::kernel_jobs`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use clap::{Args, FromArgMatches};

use osbench::bench::util::select::Case;
use osbench::document::Series;
use osbench::experiment::Observer;
use osbench::measure::Interrupt;
use osbench::queue::boot::{self, BootSettings};
use osbench::queue::kernel_jobs::{self, After, Next};
use osbench::queue::worker::{self as queue_worker, JOB_META, Lease, Limits, Sent};
use osbench::queue::{JobCommand, JobPlan};
use osbench::store::{self, Finish, JobRow, Location, Store, WorkerId};

use super::save::{Saved, StoreArgs};
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
    /// Refuse (fail) jobs planned to take longer than SECS seconds on this host
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
    #[command(flatten)]
    store: StoreArgs,
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

/// What a job's run is given by the worker: its host name, its lease, the
/// host's limits, and the stop flag it runs under (the worker's, nested: set
/// by a stop signal, or by the lease when the job is taken away).
pub struct JobHook {
    pub host: String,
    pub job: i64,
    pub lease: Lease,
    pub limits: Limits,
    pub stop: Interrupt,
}

/// The stop flag a run measures under: stop signals' (their handlers
/// installed now), or as a job of the worker the job's own ([`JobHook::stop`]).
pub fn run_stop(hook: Option<&JobHook>) -> anyhow::Result<Interrupt> {
    let signals = Interrupt::install()?;
    Ok(hook.map_or(signals, |h| h.stop.clone()))
}

/// A run's result, and what it saved (none when it stopped before saving).
pub struct JobRun {
    pub result: anyhow::Result<ExitCode>,
    pub saved: Option<Saved>,
}

/// An observer that renews a job's lease between cases (before each case,
/// after each round: never while one is measured), then tells `inner`.
pub struct Hooked<'a> {
    inner: &'a mut dyn Observer,
    hook: Option<&'a mut JobHook>,
}

impl<'a> Hooked<'a> {
    pub fn new(inner: &'a mut dyn Observer, hook: Option<&'a mut JobHook>) -> Self {
        Self { inner, hook }
    }

    fn renew(&mut self) {
        if let Some(h) = self.hook.as_deref_mut()
            && let Some(warning) = h.lease.renew(h.job)
        {
            super::warn(&warning);
        }
    }
}

impl Observer for Hooked<'_> {
    fn case_started(&mut self, index: usize, total: usize, case: &Case) {
        self.renew();
        self.inner.case_started(index, total, case);
    }
    fn step(&mut self, round: usize, rounds: usize, config: &str) {
        self.inner.step(round, rounds, config);
    }
    fn case_finished(&mut self, series: &Series) {
        self.inner.case_finished(series);
    }
    fn case_failed(&mut self, error: &osbench::Error) {
        self.inner.case_failed(error);
    }
    fn round_finished(&mut self, done: usize, planned: usize) {
        self.inner.round_finished(done, planned);
        self.renew();
    }
    fn audit(&mut self, finding: &str) {
        self.inner.audit(finding);
    }
}

/// Why a job's run did not end the job here.
enum NotEnded {
    /// The host is rebooting for it.
    Rebooting,
    /// Its run waits in the spool, and is ended when it is sent.
    Spooled,
    /// It was taken away while it ran (cancelled, or claimed by another
    /// worker): why, and the run that kept what was measured, if any.
    TakenAway { why: String, run_id: Option<i64> },
}

/// The worker as it runs: who it is, where, and how.
struct Worker {
    id: WorkerId,
    location: Location,
    /// `--store` as given (with any password), for the runs.
    store_arg: Option<PathBuf>,
    spool: PathBuf,
    lease: Duration,
    poll: Duration,
    limits: Limits,
    /// How kernel jobs are booted here.
    boot: BootSettings,
    interrupt: Interrupt,
}

pub fn worker(args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let interrupt = Interrupt::install()?;
    let location = store::location(args.store.store.as_deref())?;
    if let Location::File(path) = &location {
        return Err(store::queue_needs_postgres("worker", &path.display().to_string()).into());
    }
    let spool = queue_worker::spool_dir(args.spool.as_deref(), &args.name)?;
    // Absolute: the worker works in it.
    let spool = std::fs::create_dir_all(&spool)
        .and_then(|()| std::fs::canonicalize(&spool))
        .with_context(|| format!("cannot use the spool directory {}", spool.display()))?;
    let w = Worker {
        id: queue_worker::identity(&args.name, &args.tags),
        spool,
        lease: args
            .lease
            .map_or(queue_worker::DEFAULT_LEASE, Duration::from_secs_f64),
        poll: args
            .poll
            .map_or(queue_worker::DEFAULT_POLL, Duration::from_secs_f64),
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
    };
    let mut store = Store::open(&w.location)?;
    store.require_queue("worker")?;
    if let Some(other) = store.register_worker(&w.id, w.lease.as_secs_f64())? {
        return Err(queue_worker::name_taken(&w.id, &other).into());
    }
    drop(store);
    let run = w.serve(args.once);
    // Whatever happened, the name is freed (a store that is away lets it expire).
    if let Ok(mut s) = Store::open_existing(&w.location) {
        let _ = s.unregister_worker(&w.id);
    }
    run
}

impl Worker {
    /// The loop: pending runs sent, then one job claimed and run, until
    /// stopped (or, with `once`, after one claim).
    fn serve(&self, once: bool) -> anyhow::Result<ExitCode> {
        std::env::set_current_dir(&self.spool)
            .with_context(|| format!("cannot use the spool directory {}", self.spool.display()))?;
        eprintln!(
            "osbench: worker '{}' ({}) waiting for jobs in {} (spool {})",
            self.id.name,
            self.id.owner(),
            self.location,
            self.spool.display()
        );
        let mut warned = false;
        while !self.interrupt.is_set() {
            match self.next() {
                Ok(Some(job)) => {
                    warned = false;
                    let going_down = self.run_job(job);
                    if once {
                        break;
                    }
                    if going_down {
                        self.await_shutdown();
                    }
                    continue;
                }
                Ok(None) if once => break,
                Ok(None) => warned = false,
                // Its name taken by another worker: this one stops.
                Err(e) if matches!(e.downcast_ref(), Some(osbench::Error::Usage(_))) => {
                    return Err(e);
                }
                Err(e) if !warned => {
                    warned = true;
                    eprintln!(
                        "osbench: warning: {e:#}; asking again every {:?}",
                        self.poll
                    );
                }
                Err(_) => {}
            }
            self.sleep(self.poll);
        }
        match self.interrupt.is_set() {
            true => Err(anyhow!(osbench::Error::Interrupted).context("worker stopped")),
            false => Ok(ExitCode::SUCCESS),
        }
    }

    /// Sends what the spool holds, renews the name, claims the next job.
    fn next(&self) -> anyhow::Result<Option<JobRow>> {
        let mut store = Store::open_existing(&self.location)?;
        for (file, sent) in queue_worker::send_pending(&mut store, &self.spool, &self.id)? {
            match sent {
                Sent::Stored { run_id, job } => eprintln!(
                    "osbench: stored {} as run {run_id}{}, now that the store is back",
                    file.display(),
                    job.map_or(String::new(), |j| format!(" (job {j} done)"))
                ),
                Sent::SetAside { to, why } => eprintln!(
                    "osbench: warning: {why}; it is not sent again (renamed {})",
                    to.display()
                ),
            }
        }
        if !store.heartbeat(&self.id, self.lease.as_secs_f64())? {
            // Taken over while the store was away: register again, or refuse.
            if let Some(other) = store.register_worker(&self.id, self.lease.as_secs_f64())? {
                return Err(queue_worker::name_taken(&self.id, &other).into());
            }
        }
        // The job this worker's name rebooted for comes first.
        if let Some(job) = store.take_rebooted(&self.id, self.lease.as_secs_f64())? {
            eprintln!("osbench: job {}: back after the boot made for it", job.id);
            return Ok(Some(job));
        }
        Ok(store.claim(&self.id, self.lease.as_secs_f64())?)
    }

    /// Waits for the host to go down after a reboot for a job; if it has
    /// not within [`boot::REBOOT_TIMEOUT`], says so and goes on (the check
    /// after the "boot" then fails the job).
    fn await_shutdown(&self) {
        self.sleep(boot::REBOOT_TIMEOUT);
        if !self.interrupt.is_set() {
            eprintln!(
                "osbench: warning: the host did not go down within {:?} of the reboot; going on",
                boot::REBOOT_TIMEOUT
            );
        }
    }

    /// A kernel job's boot before its run: `Ok(Some(extra arguments))` to
    /// run it now, `Ok(None)` when the host is rebooting for it.
    fn kernel_first(&self, job: &JobRow) -> Result<Option<Vec<String>>, String> {
        if job.kernel.is_none() {
            return Ok(Some(Vec::new()));
        }
        let next = Store::open_existing(&self.location)
            .and_then(|mut s| kernel_jobs::before_run(&mut s, job, &self.id, &self.boot));
        match next {
            Ok(Next::Run(extra)) => Ok(Some(extra)),
            Ok(Next::Rebooting) => {
                eprintln!("osbench: job {}: rebooting into its kernel", job.id);
                Ok(None)
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// How a kernel job goes on after its run ended as `end` (`None`: the
    /// host is rebooting for its next boot).
    fn kernel_after(&self, job: &JobRow, end: Finish) -> Option<Finish> {
        let run_id = match &end {
            Finish::Done { run_id, .. } if job.kernel.is_some() => *run_id,
            _ => return Some(end),
        };
        let after = Store::open_existing(&self.location)
            .and_then(|mut s| kernel_jobs::after_run(&mut s, job, &self.id, &self.boot, run_id));
        match after {
            Ok(After::Done { run_id, note }) => Some(Finish::Done { run_id, note }),
            Ok(After::Rebooting) => {
                eprintln!(
                    "osbench: job {}: boot stored as run {run_id}; rebooting for the next",
                    job.id
                );
                None
            }
            Err(e) => Some(Finish::Failed {
                error: format!("{e}; what this boot measured is run {run_id}"),
            }),
        }
    }

    /// After kernel job `job` is done: boots back when it asks to; whether
    /// the host is going down.
    fn boot_back(&self, job: &JobRow) -> bool {
        if job.kernel.is_none() {
            return false;
        }
        kernel_jobs::boot_back(job, &self.boot)
            .inspect_err(|e| eprintln!("osbench: warning: job {}: {e}", job.id))
            .unwrap_or(false)
    }

    /// Sleeps `d`, waking at a stop signal.
    fn sleep(&self, d: Duration) {
        let until = Instant::now() + d;
        while !self.interrupt.is_set() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
        }
    }

    /// Runs one claimed job and ends it in the store (or, when the store is
    /// away, leaves its run in the spool for [`Worker::next`] to send), a
    /// kernel job booted first; whether the host is going down (rebooting).
    fn run_job(&self, job: JobRow) -> bool {
        eprintln!(
            "osbench: job {} (attempt {} of {}): starting",
            job.id, job.attempts, job.max_attempts
        );
        let end = match self.outcome(&job) {
            Ok(end) => end,
            Err(NotEnded::Rebooting) => return true,
            Err(NotEnded::Spooled) => return false,
            Err(NotEnded::TakenAway { why, run_id }) => {
                self.taken_away(&job, &why, run_id);
                return false;
            }
        };
        let said = match &end {
            Finish::Done { run_id, .. } => format!("done, run {run_id}"),
            Finish::Failed { error } => format!("failed: {error}"),
            Finish::Released { note } => format!("released: {note}"),
        };
        let ended = Store::open_existing(&self.location)
            .and_then(|mut s| s.finish_job(job.id, &self.id, &end));
        match ended {
            Ok(true) => {
                eprintln!("osbench: job {}: {said}", job.id);
                return matches!(end, Finish::Done { .. }) && self.boot_back(&job);
            }
            Ok(false) => {
                let stored = match &end {
                    Finish::Done { run_id, .. } => {
                        let _ = self.note_run(&job, *run_id);
                        format!("its run {run_id} is stored, but ")
                    }
                    _ => format!("{said}, but "),
                };
                eprintln!(
                    "osbench: job {}: {stored}the job is no longer this worker's (cancelled, \
                     or claimed again after its lease expired) and was left as it is",
                    job.id
                )
            }
            Err(e) => eprintln!(
                "osbench: warning: job {}: {said}, and the store could not be told ({e}); its \
                 lease will expire",
                job.id
            ),
        }
        false
    }

    /// After `job` was taken away mid-run: says so, and notes the run that
    /// kept what was measured on the job when it was cancelled.
    fn taken_away(&self, job: &JobRow, why: &str, run_id: Option<i64>) {
        let Some(run_id) = run_id else {
            eprintln!(
                "osbench: job {}: stopped, as {why}; nothing was measured",
                job.id
            );
            return;
        };
        let noted = self.note_run(job, run_id);
        eprintln!(
            "osbench: job {}: stopped, as {why}; what it measured is run {run_id} (meta \
             {JOB_META}={}){}",
            job.id,
            job.id,
            match noted {
                Ok(true) => ", noted on the job".to_string(),
                Ok(false) => String::new(),
                Err(e) => format!(" (not noted on the job: {e})"),
            }
        );
    }

    /// Notes `run_id` on `job`, taken away from this worker, when it was
    /// cancelled ([`Store::note_cancelled_run`]).
    fn note_run(&self, job: &JobRow, run_id: i64) -> osbench::Result<bool> {
        Store::open_existing(&self.location).and_then(|mut s| s.note_cancelled_run(job.id, run_id))
    }

    /// How `job` ends now (refused, booted and run, or failed), or why it
    /// is not ended here.
    fn outcome(&self, job: &JobRow) -> Result<Finish, NotEnded> {
        if let Some(error) = self.refusal(job) {
            return Ok(Finish::Failed { error });
        }
        let extra = match self.kernel_first(job) {
            Ok(Some(extra)) => extra,
            Ok(None) => return Err(NotEnded::Rebooting),
            Err(error) => return Ok(Finish::Failed { error }),
        };
        let end = self.measure(job, &extra);
        if let Err(NotEnded::Spooled) = end {
            eprintln!(
                "osbench: job {}: its run could not be stored; it waits in {} and is sent, and \
                 the job marked done, when the store is back",
                job.id,
                self.spool.display()
            );
        }
        self.kernel_after(job, end?).ok_or(NotEnded::Rebooting)
    }

    /// Why this worker will not run `job`, if it will not.
    fn refusal(&self, job: &JobRow) -> Option<String> {
        if let Some(why) = queue_worker::refuse_version(&job.osbench_version, &self.id) {
            return Some(why);
        }
        None
    }

    /// Runs the job's plan; how the job ends, or why it is not ended here.
    fn measure(&self, job: &JobRow, extra: &[String]) -> Result<Finish, NotEnded> {
        let failed = |error: String| Ok(Finish::Failed { error });
        let plan = match JobPlan::from_json(&job.plan) {
            Ok(plan) => plan,
            Err(e) => return failed(format!("this osbench cannot read the job's plan: {e}")),
        };
        let dir = match tempfile::tempdir() {
            Ok(dir) => dir,
            Err(e) => return failed(format!("no temporary directory for the plan: {e}")),
        };
        let experiment = dir.path().join("experiment.toml");
        if let Some(text) = &plan.experiment
            && let Err(e) = std::fs::write(&experiment, text)
        {
            return failed(format!("cannot write {}: {e}", experiment.display()));
        }
        let argv = self.argv(
            job,
            &plan,
            plan.experiment.as_ref().map(|_| experiment.as_path()),
            extra,
        );
        let command = match super::command()
            .try_get_matches_from(&argv)
            .and_then(|m| Cli::from_arg_matches(&m))
        {
            Ok(cli) => cli.command,
            Err(e) => {
                return failed(format!(
                    "this osbench cannot run the job's plan ({}): {}",
                    plan.argv(None).join(" "),
                    super::clap_words(&e)
                ));
            }
        };
        let stop = self.interrupt.nested();
        let mut hook = JobHook {
            host: self.id.name.clone(),
            job: job.id,
            lease: Lease::new(
                self.location.clone(),
                self.id.clone(),
                self.lease,
                stop.clone(),
            ),
            limits: self.limits,
            stop,
        };
        if let Ok(mut s) = Store::open_existing(&self.location) {
            let _ = s.start_job(job.id, &self.id);
        }
        let console = Console::new(ColorWhen::Never, false);
        let run = match command {
            Command::Run(args) => super::run::run_hooked(args, console, Some(&mut hook)),
            Command::Time(args) => super::time::time_hooked(*args, console, Some(&mut hook)),
            _ => unreachable!("a job's plan is `run` or `time`"),
        };
        self.ending(run, hook.lease.taken)
    }

    /// The command line of a job: `osbench run|time ARGS…`, its
    /// experiment file, this store, the job's label and meta, its id, and
    /// `extra` (a boot-rounds step's, whose label replaces the job's).
    fn argv(
        &self,
        job: &JobRow,
        plan: &JobPlan,
        experiment: Option<&std::path::Path>,
        extra: &[String],
    ) -> Vec<String> {
        let mut argv = vec!["osbench".to_string()];
        argv.extend(plan.argv(experiment));
        if let Some(given) = &self.store_arg {
            argv.extend(["--store".into(), given.display().to_string()]);
        }
        // A boot-rounds step brings a label of its own (queue::kernel_jobs).
        if let Some(label) = job
            .label
            .as_ref()
            .filter(|_| !extra.iter().any(|a| a == "--label"))
        {
            argv.extend(["--label".into(), label.clone()]);
        }
        for (k, v) in &job.meta {
            argv.extend(["--meta".into(), format!("{k}={v}")]);
        }
        argv.extend(["--meta".into(), format!("{JOB_META}={}", job.id)]);
        if plan.command == JobCommand::Time {
            argv.push("--quiet".into());
        }
        argv.extend(extra.iter().cloned());
        argv
    }

    /// How a job ends after its run (`taken`: why the job was taken away
    /// while it ran, if it was), or why it is not ended here.
    fn ending(&self, run: JobRun, taken: Option<String>) -> Result<Finish, NotEnded> {
        let run_id = run.saved.as_ref().and_then(|s| s.run_id);
        let in_spool = run
            .saved
            .as_ref()
            .is_some_and(|s| s.run_id.is_none() && !s.documents.is_empty());
        if in_spool {
            return Err(NotEnded::Spooled);
        }
        if let Some(why) = taken {
            return Err(NotEnded::TakenAway { why, run_id });
        }
        Ok(match (run.result, run_id) {
            (Ok(_), Some(run_id)) => Finish::Done { run_id, note: None },
            (Err(e), _) if self.interrupt.is_set() => Finish::Released {
                note: format!(
                    "worker {} stopped ({}){}; the job is queued again",
                    self.id.name,
                    super::one_line(&format!("{e:#}")),
                    run_id.map_or(String::new(), |id| format!(
                        "; what it measured is run {id}"
                    ))
                ),
            },
            (Err(e), _) => Finish::Failed {
                error: format!(
                    "{}{}",
                    super::one_line(&format!("{e:#}")),
                    run_id.map_or(String::new(), |id| format!(
                        "; what was measured is run {id}"
                    ))
                ),
            },
            (Ok(_), None) => Finish::Failed {
                error: "the run saved nothing (nothing was measured)".into(),
            },
        })
    }
}
