//! `osbench worker`'s loop, the library's part of it: send the runs the
//! spool holds (stored when the store was away), claim the next job for
//! the worker's name, check it (osbench version, host limits), boot a
//! kernel job into its kernel first (`kernel_jobs`), run it under a lease
//! renewed between cases ([`super::hook::Hooked`]), and end the job (done
//! with its run id, failed with the error, released on a stop signal). A
//! job cancelled (or claimed by another worker) while it runs stops the
//! run before its next case, through the run's stop flag nested in the
//! worker's; what it measured is kept. Left out: reading the job's command
//! line and running it ([`JobRunner`], the command line's `run` and
//! `time`), registering the worker's name, and the words of its messages'
//! destination ([`Worker::say`]).

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::measure::Interrupt;
use crate::store::{Finish, JobRow, JobState, Location, Store, WorkerId};

use super::boot::{self, BootSettings};
use super::hook::{JobClock, JobHook, JobRun};
use super::kernel_jobs::{self, After, Next};
use super::policy::{Given, Policy};
use super::worker::{
    JOB_META, Lease, Limits, Sent, name_taken, refuse_version, send_files, send_pending,
};
use super::{JobCommand, JobPlan};

/// The spool's file naming the job the host reboots for ([`Worker::boot_marker`]).
const BOOT_MARKER: &str = "rebooting-for.json";

/// Says a line of the worker's through its `say`.
macro_rules! say {
    ($w:expr, $($arg:tt)*) => {
        ($w.say)(&format!($($arg)*))
    };
}

/// Reads a job's command line and runs it: the command line's `run` and
/// `time` (a job is stored as their arguments).
pub trait JobRunner {
    /// A job's command, read.
    type Command;
    /// Reads `argv` (`osbench run|time …`), or says why it cannot.
    fn read(&self, argv: &[String]) -> std::result::Result<Self::Command, String>;
    /// Runs `command` as a job of the worker, under `hook`.
    fn run(&self, command: Self::Command, hook: &mut JobHook) -> JobRun;
    /// Checks `plan` with the code `submit` checks it with, and gives the
    /// options it sets as the parser reads them (for [`Policy::admit`]).
    fn check(&self, plan: &JobPlan) -> std::result::Result<Given, String>;
}

/// Why a job's run did not end the job here.
enum NotEnded {
    /// The host is rebooting for it.
    Rebooting,
    /// Its run waits in this file (in the spool, or where the run could
    /// write it when the spool could not be written), and the job is ended
    /// when it is sent.
    Spooled(PathBuf),
    /// It was taken away while it ran (cancelled, or claimed by another
    /// worker): why, and the run that kept what was measured, if any.
    TakenAway { why: String, run_id: Option<i64> },
}

/// The worker as it runs: who it is, where, and how.
pub struct Worker<R: JobRunner> {
    pub id: WorkerId,
    pub location: Location,
    /// `--store` as given (with any password), for the runs.
    pub store_arg: Option<PathBuf>,
    pub spool: PathBuf,
    pub lease: Duration,
    pub poll: Duration,
    pub limits: Limits,
    /// What plans may make this host do (`super::policy`).
    pub policy: Policy,
    /// How kernel jobs are booted here.
    pub boot: BootSettings,
    pub interrupt: Interrupt,
    /// Turns a job's command line into its run, and runs it.
    pub runner: R,
    /// How a line of the worker's is said.
    pub say: fn(&str),
    /// How a warning (the lease's renewal) is said.
    pub say_warning: fn(&str),
    /// Runs that could not be stored nor written to the spool, kept
    /// elsewhere (the temporary directory): sent with the spool's.
    pub stranded: RefCell<Vec<PathBuf>>,
}

impl<R: JobRunner> Worker<R> {
    /// Registers the worker's name in the store's queue (refused while
    /// another live worker holds it).
    pub fn register(&self) -> Result<()> {
        let mut store = Store::open(&self.location)?;
        store.require_queue("worker")?;
        match store.register_worker(&self.id, self.lease.as_secs_f64())? {
            Some(other) => Err(name_taken(&self.id, &other)),
            None => Ok(()),
        }
    }

    /// Frees the worker's name, whatever happened (a store that is away
    /// lets it expire).
    pub fn unregister(&self) {
        if let Ok(mut s) = Store::open_existing(&self.location) {
            let _ = s.unregister_worker(&self.id);
        }
    }

    /// The loop: pending runs sent, then one job claimed and run, until
    /// stopped (or, with `once`, after one claim).
    pub fn serve(&self, once: bool) -> Result<()> {
        std::env::set_current_dir(&self.spool).map_err(|cause| Error::Io {
            context: format!("cannot use the spool directory {}", self.spool.display()),
            cause,
        })?;
        say!(
            self,
            "osbench: worker '{}' ({}) waiting for jobs in {} (spool {})",
            self.id.name,
            self.id.owner(),
            self.location,
            self.spool.display()
        );
        say!(self, "osbench: {}", self.policy.summary());
        let mut warned = false;
        while !self.interrupt.is_set() {
            // Back after a boot for a job cancelled meanwhile (a store away
            // is said by `next`).
            if self.boot_left_over().unwrap_or(false) {
                if once {
                    break;
                }
                self.await_shutdown();
                continue;
            }
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
                Err(e @ Error::Usage(_)) => return Err(e),
                Err(e) if !warned => {
                    warned = true;
                    say!(
                        self,
                        "osbench: warning: {e}; asking again every {:?}",
                        self.poll
                    );
                }
                Err(_) => {}
            }
            self.sleep(self.poll);
        }
        match self.interrupt.is_set() {
            true => Err(Error::Interrupted),
            false => Ok(()),
        }
    }

    /// Sends what the spool holds, renews the name, claims the next job.
    fn next(&self) -> Result<Option<JobRow>> {
        let mut store = Store::open_existing(&self.location)?;
        let stranded = self.stranded.borrow().clone();
        let sent = send_files(&mut store, stranded, &self.id);
        // What was sent (or set aside) is gone from where it was.
        self.stranded.borrow_mut().retain(|f| f.exists());
        let mut sent = sent?;
        sent.extend(send_pending(&mut store, &self.spool, &self.id)?);
        for (file, sent) in sent {
            match sent {
                Sent::Stored { run_id, job } => say!(
                    self,
                    "osbench: stored {} as run {run_id}{}, now that the store is back",
                    file.display(),
                    job.map_or(String::new(), |j| format!(" (job {j} done)"))
                ),
                Sent::SetAside { to, why } if to.with_extension("") == file.with_extension("") => {
                    say!(
                        self,
                        "osbench: warning: {why}; it is not sent again (renamed {})",
                        to.display()
                    )
                }
                Sent::SetAside { why, .. } => say!(self, "osbench: warning: {why}"),
            }
        }
        if !store.heartbeat(&self.id, self.lease.as_secs_f64())? {
            // Taken over while the store was away: register again, or refuse.
            if let Some(other) = store.register_worker(&self.id, self.lease.as_secs_f64())? {
                return Err(name_taken(&self.id, &other));
            }
        }
        // The job this worker's name rebooted for comes first.
        if let Some(job) = store.take_rebooted(&self.id, self.lease.as_secs_f64())? {
            say!(
                self,
                "osbench: job {}: back after the boot made for it",
                job.id
            );
            return Ok(Some(job));
        }
        store.claim(&self.id, self.lease.as_secs_f64())
    }

    /// Waits for the host to go down after a reboot for a job; if it has
    /// not within [`boot::reboot_timeout`], says so and goes on (the check
    /// after the "boot" then fails the job).
    fn await_shutdown(&self) {
        self.sleep(boot::reboot_timeout());
        if !self.interrupt.is_set() {
            say!(
                self,
                "osbench: warning: the host did not go down within {:?} of the reboot; going on",
                boot::reboot_timeout()
            );
        }
    }

    /// A kernel job's boot before its run: `Ok(Some(extra arguments))` to
    /// run it now, `Ok(None)` when the host is rebooting for it.
    fn kernel_first(&self, job: &JobRow) -> Result<Option<Vec<String>>, String> {
        if job.kernel.is_none() {
            return Ok(Some(Vec::new()));
        }
        // What runs before the boot (the reboot command may change it at once).
        let running = boot::Running::read().map_or(String::new(), |r| r.release);
        let next = Store::open_existing(&self.location)
            .and_then(|mut s| kernel_jobs::before_run(&mut s, job, &self.id, &self.boot));
        match next {
            Ok(Next::Run(extra)) => Ok(Some(extra)),
            Ok(Next::Rebooting) => {
                self.remember_boot(job, running);
                say!(self, "osbench: job {}: rebooting into its kernel", job.id);
                Ok(None)
            }
            Err(e) => {
                // A boot that failed puts the job back to `running`; when a
                // stop signal ended it, that connection is given up, so a
                // fresh one does (a job left `rebooting` waits for its
                // deadline).
                let _ = Store::open_existing(&self.location)
                    .and_then(|mut s| s.unmark_rebooting(job.id, &self.id, job.kernel.as_deref()));
                Err(e.to_string())
            }
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
                say!(
                    self,
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

    /// The file of the spool naming the job the host is rebooting for, and
    /// the kernel it ran before: read when the worker is back, to boot back
    /// after a job cancelled while its host rebooted.
    fn boot_marker(&self) -> PathBuf {
        self.spool.join(BOOT_MARKER)
    }

    /// Notes that the host, which ran release `running`, reboots for `job`
    /// ([`Self::boot_marker`]).
    fn remember_boot(&self, job: &JobRow, running: String) {
        // The host's own kernel is the one before the first of several boots.
        let from = self.noted_boot().map_or(running, |(_, from)| from);
        let text = serde_json::json!({ "job": job.id, "from": from }).to_string();
        if let Err(e) = std::fs::write(self.boot_marker(), text) {
            say!(
                self,
                "osbench: warning: cannot note the boot for job {} in the spool ({e}); if the job \
                 is cancelled while the host reboots, the host stays on its kernel",
                job.id
            );
        }
    }

    /// The boot noted by [`Self::remember_boot`]: the job, and the kernel
    /// (release) the host ran before.
    fn noted_boot(&self) -> Option<(i64, String)> {
        let text = std::fs::read_to_string(self.boot_marker()).ok()?;
        let noted: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some((noted["job"].as_i64()?, noted["from"].as_str()?.to_string()))
    }

    /// Whether the host runs release `from` (its own kernel) again.
    fn on_own_kernel(&self, from: &str) -> bool {
        boot::Running::read().is_ok_and(|r| r.release == from)
    }

    /// Warns that `job`, which asks for no kernel, runs on one booted for
    /// another job (that did not ask to boot back), not the host's own.
    fn warn_of_kernel(&self, job: &JobRow) {
        let Some((booted_for, from)) = self.noted_boot().filter(|_| job.kernel.is_none()) else {
            return;
        };
        if self.on_own_kernel(&from) {
            self.forget_boot();
            return;
        }
        let now = boot::Running::read().map_or_else(|_| "?".to_string(), |r| r.release);
        say!(
            self,
            "osbench: warning: job {}: the host runs {now}, the kernel booted for job {booted_for}, \
             not its own {from}; boot it back (or give kernel jobs boot_back = true) to measure \
             on its own kernel",
            job.id
        );
    }

    /// Forgets the boot noted by [`Self::remember_boot`].
    fn forget_boot(&self) {
        let _ = std::fs::remove_file(self.boot_marker());
    }

    /// Back after a boot made for a job that is no longer this worker's to
    /// run (cancelled while the host rebooted): boots back when it asks to,
    /// else warns that the host runs another kernel than before; whether
    /// the host is going down.
    fn boot_left_over(&self) -> Result<bool> {
        let Some((id, from)) = self.noted_boot() else {
            return Ok(false);
        };
        if self.on_own_kernel(&from) {
            self.forget_boot();
            return Ok(false);
        }
        let store = Store::open_existing(&self.location)?;
        let Some(job) = store.job(id)? else {
            self.forget_boot();
            return Ok(false);
        };
        let over = [JobState::Done, JobState::Failed, JobState::Cancelled];
        if !over.contains(&job.state) || !kernel_jobs::wants_boot_back(&job).unwrap_or(false) {
            return Ok(false);
        }
        say!(
            self,
            "osbench: warning: job {} is {} and the host runs the kernel booted for it (it ran {from} \
             before)",
            job.id,
            job.state
        );
        self.forget_boot();
        Ok(self.boot_back(&job))
    }

    /// After kernel job `job` is done: boots back when it asks to; whether
    /// the host is going down.
    fn boot_back(&self, job: &JobRow) -> bool {
        if job.kernel.is_none() {
            return false;
        }
        kernel_jobs::boot_back(job, &self.boot)
            .inspect_err(|e| say!(self, "osbench: warning: job {}: {e}", job.id))
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
        say!(
            self,
            "osbench: job {} (attempt {} of {}): starting",
            job.id,
            job.attempts,
            job.max_attempts
        );
        self.warn_of_kernel(&job);
        let end = match self.outcome(&job) {
            Ok(end) => end,
            Err(NotEnded::Rebooting) => return true,
            Err(NotEnded::Spooled(_)) => return self.after_boot(&job, false),
            Err(NotEnded::TakenAway { why, run_id }) => {
                self.taken_away(&job, &why, run_id);
                return self.after_boot(&job, false);
            }
        };
        let said = match &end {
            Finish::Done { run_id, note } => format!(
                "done, run {run_id}{}",
                note.as_ref().map_or(String::new(), |n| format!("; {n}"))
            ),
            Finish::Failed { error } => format!("failed: {error}"),
            Finish::Released { note } => format!("released: {note}"),
        };
        let ended = Store::open_existing(&self.location)
            .and_then(|mut s| s.finish_job(job.id, &self.id, &end));
        match ended {
            Ok(true) => say!(self, "osbench: job {}: {said}", job.id),
            Ok(false) => {
                let stored = match &end {
                    Finish::Done { run_id, .. } => {
                        let _ = self.note_run(&job, *run_id);
                        format!("its run {run_id} is stored, but ")
                    }
                    _ => format!("{said}, but "),
                };
                say!(
                    self,
                    "osbench: job {}: {stored}the job is no longer this worker's (cancelled, \
                     or claimed again after its lease expired) and was left as it is",
                    job.id
                )
            }
            Err(e) => say!(
                self,
                "osbench: warning: job {}: {said}, and the store could not be told ({e}); its \
                 lease will expire",
                job.id
            ),
        }
        self.after_boot(&job, matches!(end, Finish::Done { .. }))
    }

    /// After kernel job `job` ended (`done`: with its run): boots back when
    /// it asks to and it is done, or a boot was made for it, whatever ended
    /// it (a failed set-up, a cancel): the next jobs must not run on its
    /// kernel. Not while the worker stops: then it says so. Whether the
    /// host is going down.
    fn after_boot(&self, job: &JobRow, done: bool) -> bool {
        let booted = kernel_jobs::booted_from(job);
        if job.kernel.is_none() || !(done || booted.is_some()) {
            return false;
        }
        // Without boot_back the host stays on the job's kernel, by its
        // choice: the note stays, and the next jobs are warned of it.
        if kernel_jobs::wants_boot_back(job).unwrap_or(false) {
            self.forget_boot();
        }
        if self.interrupt.is_set() {
            say!(
                self,
                "osbench: warning: job {}: the host stays on the kernel booted for it, as the \
                 worker stops{}",
                job.id,
                booted.map_or(String::new(), |from| format!(
                    "; its own kernel was {from}: boot back into it by hand"
                ))
            );
            return false;
        }
        self.boot_back(job)
    }

    /// After `job` was taken away mid-run: says so, and notes the run that
    /// kept what was measured on the job when it was cancelled.
    fn taken_away(&self, job: &JobRow, why: &str, run_id: Option<i64>) {
        let Some(run_id) = run_id else {
            say!(
                self,
                "osbench: job {}: stopped, as {why}; nothing was measured",
                job.id
            );
            return;
        };
        let noted = self.note_run(job, run_id);
        say!(
            self,
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
    fn note_run(&self, job: &JobRow, run_id: i64) -> Result<bool> {
        Store::open_existing(&self.location).and_then(|mut s| s.note_cancelled_run(job.id, run_id))
    }

    /// How `job` ends now (refused, booted and run, or failed), or why it
    /// is not ended here.
    fn outcome(&self, job: &JobRow) -> Result<Finish, NotEnded> {
        if let Some(error) = self.refusal(job) {
            return Ok(Finish::Failed { error });
        }
        let plan = match self.admitted(job) {
            Ok(plan) => plan,
            Err(error) => return Ok(Finish::Failed { error }),
        };
        let extra = match self.kernel_first(job) {
            Ok(Some(extra)) => extra,
            Ok(None) => return Err(NotEnded::Rebooting),
            // A stop signal ended its boot (a reboot command that hung, say):
            // not the job's fault.
            Err(error) if self.interrupt.is_set() => {
                return Ok(Finish::Released {
                    note: format!(
                        "worker {} stopped before the job's kernel was booted ({error}); the \
                         job is queued again",
                        self.id.name
                    ),
                });
            }
            Err(error) => return Ok(Finish::Failed { error }),
        };
        let end = self.measure(job, &plan, &extra);
        if let Err(NotEnded::Spooled(file)) = &end {
            self.spooled(job, file);
        }
        self.kernel_after(job, end?).ok_or(NotEnded::Rebooting)
    }

    /// Says where the run of `job`, which could not be stored, waits: in
    /// the spool, or (the spool could not be written) in `file` elsewhere,
    /// which this worker remembers and sends with the spool's.
    fn spooled(&self, job: &JobRow, file: &Path) {
        let in_spool = file
            .canonicalize()
            .is_ok_and(|f| f.parent() == Some(self.spool.as_path()));
        if in_spool {
            say!(
                self,
                "osbench: job {}: its run could not be stored; it waits in {} and is sent, and \
                 the job marked done, when the store is back",
                job.id,
                file.display()
            );
            return;
        }
        let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        say!(
            self,
            "osbench: warning: job {}: its run could not be stored, nor written to the spool {} \
             (full, read-only or gone?); it is in {}, which this worker sends, and then marks \
             the job done, when the store is back, unless it is stopped first: then `osbench \
             import` that file and mark the job by hand. Free or fix the spool.",
            job.id,
            self.spool.display(),
            file.display()
        );
        self.stranded.borrow_mut().push(file);
    }

    /// Why this worker will not run `job`, if it will not.
    fn refusal(&self, job: &JobRow) -> Option<String> {
        if let Some(why) = refuse_version(&job.osbench_version, &self.id) {
            return Some(why);
        }
        if let Some(why) = &job.meta_unreadable {
            return Some(format!("the job cannot be run: {why}; submit it again"));
        }
        None
    }

    /// The job's plan, checked again here as `submit` checks it (a row may
    /// have been written by anyone with INSERT on `jobs`) and against the
    /// policy, set-up names resolved to the policy's scripts; it is said
    /// before it runs. Or why the job is refused.
    fn admitted(&self, job: &JobRow) -> std::result::Result<JobPlan, String> {
        let plan = JobPlan::from_json(&job.plan)
            .map_err(|e| format!("this osbench cannot read the job's plan: {e}"))?;
        let shown = crate::text::printable(&plan.argv(None).join(" ")).into_owned();
        let refused = |why: String| format!("the job's plan `osbench {shown}` is refused: {why}");
        super::job::refuse_worker_options(&plan.args).map_err(|e| refused(e.to_string()))?;
        let given = self.runner.check(&plan).map_err(|why| {
            format!("this osbench cannot run the job's plan (`osbench {shown}`): {why}")
        })?;
        let plan = self
            .policy
            .admit(&plan, &given, job.kernel.is_some())
            .map_err(refused)?;
        say!(self, "osbench: job {}: runs `osbench {shown}`", job.id);
        if let Some(text) = &plan.experiment {
            for line in text.lines() {
                say!(
                    self,
                    "osbench: job {}:   {}",
                    job.id,
                    crate::text::printable(line)
                );
            }
        }
        Ok(plan)
    }

    /// Runs the job's plan; how the job ends, or why it is not ended here.
    fn measure(&self, job: &JobRow, plan: &JobPlan, extra: &[String]) -> Result<Finish, NotEnded> {
        let failed = |error: String| Ok(Finish::Failed { error });
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
            plan,
            plan.experiment.as_ref().map(|_| experiment.as_path()),
            extra,
        );
        // The stored job is a command line (jobs already queued must still
        // run): the runner reads it, at the command line's edge.
        let command = match self.runner.read(&argv) {
            Ok(command) => command,
            Err(why) => {
                return failed(format!(
                    "this osbench cannot run the job's plan ({}): {why}",
                    plan.argv(None).join(" ")
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
            warn: self.say_warning,
            measured_all: false,
        };
        if let Ok(mut s) = Store::open_existing(&self.location) {
            let _ = s.start_job(job.id, &self.id);
        }
        let clock = (self.limits.max_job_time).map(|most| JobClock::start(most, hook.stop.clone()));
        let run = self.runner.run(command, &mut hook);
        let over = clock.is_some_and(JobClock::stopped);
        let whole = hook.measured_all;
        self.ending(run, hook.lease.taken, over, whole)
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
    /// while it ran, if it was; `over`: whether it was stopped at
    /// `--max-job-time`; `whole`: whether every planned case was measured),
    /// or why it is not ended here.
    fn ending(
        &self,
        run: JobRun,
        taken: Option<String>,
        over: bool,
        whole: bool,
    ) -> Result<Finish, NotEnded> {
        let run_id = run.saved.as_ref().and_then(|s| s.run_id);
        let kept = run
            .saved
            .as_ref()
            .filter(|s| s.run_id.is_none())
            .and_then(|s| s.documents.first());
        if let Some(file) = kept {
            return Err(NotEnded::Spooled(file.clone()));
        }
        if let Some(why) = taken {
            return Err(NotEnded::TakenAway { why, run_id });
        }
        if let (true, Some(most)) = (
            over && run.result.is_err() && !self.interrupt.is_set(),
            self.limits.max_job_time,
        ) {
            return Ok(Finish::Failed {
                error: format!(
                    "the job ran beyond this host's --max-job-time of {:.0} s and was stopped{}: \
                     submit a shorter plan (fewer commands or --runs), or run the worker with a \
                     longer --max-job-time",
                    most.as_secs_f64(),
                    run_id.map_or(String::new(), |id| format!(
                        "; what it measured is run {id}"
                    ))
                ),
            });
        }
        Ok(match (run.result, run_id) {
            (Ok(_), Some(run_id)) => Finish::Done {
                run_id,
                note: run.gate,
            },
            // A stop signal after the last case: the stored run is whole,
            // and the job must not be queued again to be measured twice.
            (Err(_), Some(run_id)) if whole && self.interrupt.is_set() => Finish::Done {
                run_id,
                note: Some(
                    "a stop signal came after its last case was measured; its run is stored".into(),
                ),
            },
            (Err(e), _) if self.interrupt.is_set() => Finish::Released {
                note: format!(
                    "worker {} stopped ({}){}; the job is queued again",
                    self.id.name,
                    e,
                    run_id.map_or(String::new(), |id| format!(
                        "; what it measured is run {id}"
                    ))
                ),
            },
            (Err(e), _) => Finish::Failed {
                error: format!(
                    "{}{}",
                    e,
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
