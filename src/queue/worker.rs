//! The parts of `osbench worker` that are not the command line: who the
//! worker is ([`identity`]), its spool directory (where a run that could not
//! be stored waits, [`send_pending`]), the lease it renews between cases
//! ([`Lease`]), and the checks a job passes before it runs (its osbench
//! version, [`refuse_version`]; the host's limits, [`Limits`]). Running the
//! job is the CLI's `run` / `time` glue, the same code as on the command
//! line. Left out: booting kernels (`queue::boot`, another part of the
//! queue) and any scheduling beyond "oldest claimable job first".

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::measure::Interrupt;
use crate::store::{Finish, JobRow, JobState, Location, Store, WorkerId};

/// How long a claim or a worker's name is held without renewal, unless
/// `--lease` says otherwise.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(300);

/// How often an idle worker asks for a job, unless `--poll` says otherwise.
pub const DEFAULT_POLL: Duration = Duration::from_secs(30);

/// Attempts of a job before an expired lease fails it.
pub const MAX_ATTEMPTS: i64 = 3;

/// The meta key a job's runs carry its id under.
pub const JOB_META: &str = "job";

/// This worker, named `name`, with `tags`: the machine's host name, the
/// process id, this osbench's version and a token no other process has.
pub fn identity(name: &str, tags: &[String]) -> WorkerId {
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let pid = std::process::id();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    WorkerId {
        name: name.to_string(),
        tags: tags.to_vec(),
        machine: machine.clone(),
        pid: i64::from(pid),
        osbench_version: env!("CARGO_PKG_VERSION").to_string(),
        token: format!("{machine}/{pid}/{nanos:x}"),
    }
}

/// The refusal of a worker name that another live worker holds.
pub fn name_taken(w: &WorkerId, other: &crate::store::WorkerRow) -> Error {
    Error::Usage(format!(
        "worker name '{}' is in use by the worker on {} (pid {}, osbench {}, last seen {}), \
         whose lease is live until {}: give this worker another --name, or stop that one (a \
         worker that died frees its name when its lease ends)",
        w.name,
        other.machine,
        other.pid,
        other.osbench_version,
        other.last_seen,
        other.lease_expires.as_deref().unwrap_or("?")
    ))
}

/// The refusal of a job that another osbench version must run, or `None`.
pub fn refuse_version(needed: &str, w: &WorkerId) -> Option<String> {
    (needed != w.osbench_version).then(|| {
        format!(
            "the job needs osbench {needed} and worker '{}' runs osbench {}: install osbench \
             {needed} on {} (or resubmit the job from osbench {})",
            w.name, w.osbench_version, w.machine, w.osbench_version
        )
    })
}

/// What this host takes on: `--max-job-time`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// The longest a job may be planned to take (warm-up and samples' target time).
    pub max_job_time: Option<Duration>,
}

impl Limits {
    /// An error when a plan expected to take `expected` is beyond them.
    pub fn check(&self, expected: Duration) -> Result<()> {
        match self.max_job_time {
            Some(most) if expected > most => Err(Error::Usage(format!(
                "the plan would take about {:.0} s, beyond this host's --max-job-time of {:.0} s: \
                 submit fewer cases, samples or rounds, or run the worker with a longer \
                 --max-job-time",
                expected.as_secs_f64(),
                most.as_secs_f64()
            ))),
            _ => Ok(()),
        }
    }
}

/// The spool directory of worker `name`: `--spool`, else systemd's
/// `$STATE_DIRECTORY`, else `$XDG_STATE_HOME/osbench/worker-NAME`, else
/// `~/.local/state/osbench/worker-NAME`.
pub fn spool_dir(given: Option<&Path>, name: &str) -> Result<PathBuf> {
    if let Some(dir) = given {
        return Ok(dir.to_path_buf());
    }
    if let Some(dir) = std::env::var_os("STATE_DIRECTORY").filter(|d| !d.is_empty()) {
        // systemd gives several, colon-separated, when the unit names several.
        let first = dir
            .to_string_lossy()
            .split(':')
            .next()
            .unwrap_or("")
            .to_string();
        return Ok(PathBuf::from(first));
    }
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home).join(".local/state"),
            None => {
                return Err(Error::Usage(
                    "no spool directory: give --spool DIR (HOME is not set)".into(),
                ));
            }
        },
    };
    Ok(base.join("osbench").join(format!("worker-{name}")))
}

/// The least room a spool should have: a few runs' documents.
pub const SPOOL_ROOM: u64 = 64 << 20;

/// Refuses a spool directory this worker cannot write (a run kept there
/// would land elsewhere, never sent); a warning when it has less than
/// [`SPOOL_ROOM`] free.
pub fn check_spool(spool: &Path) -> Result<Option<String>> {
    let probe = spool.join(format!(".osbench-probe-{}", std::process::id()));
    if let Err(e) = std::fs::write(&probe, b"probe") {
        let _ = std::fs::remove_file(&probe);
        return Err(Error::Usage(format!(
            "the spool directory {} cannot be written ({e}): runs that cannot be stored wait \
             there; make it writable for this worker, or give another with --spool",
            spool.display()
        )));
    }
    let _ = std::fs::remove_file(&probe);
    Ok(free_bytes(spool)
        .filter(|free| *free < SPOOL_ROOM)
        .map(|free| {
            format!(
                "the spool directory {} has {} MiB free: a run that cannot be stored may not fit \
             there; free some space, or give another with --spool",
                spool.display(),
                free >> 20
            )
        }))
}

/// The bytes free for this user on the filesystem of `dir`, if it says.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain data filled in by the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    let ok = unsafe { libc::statvfs(path.as_ptr(), &mut st) } == 0;
    ok.then(|| st.f_bavail * st.f_frsize.max(1))
}

/// The documents waiting in `spool` (runs that could not be stored:
/// `osbench-*.json`, as a run writes them when its store fails), oldest first.
pub fn pending(spool: &Path) -> Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(spool).map_err(|e| {
        Error::io(
            format!("reading the spool directory {}", spool.display()),
            e,
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("osbench-") && name.ends_with(".json")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// What [`send_pending`] did with one file of the spool.
#[derive(Debug)]
pub enum Sent {
    /// Stored as this run (and this job, if it names one, marked done).
    Stored { run_id: i64, job: Option<i64> },
    /// Not a result document (renamed to `*.unreadable`), or one the store
    /// refused (moved to the [`REJECTED`] folder): where it is, and why.
    SetAside { to: PathBuf, why: String },
}

/// Stores every pending document of `spool`, marks its job done (gives a
/// boot-rounds job back, for one boot's run: `queue::kernel_jobs`), and
/// removes it (a file that is no document is renamed `*.unreadable`, one
/// the store refuses while it answers is moved to the [`REJECTED`] folder
/// and its job failed; neither is retried); what happened to each. The
/// first error of a store that does not answer stops it (the rest wait
/// for the next try).
pub fn send_pending(store: &mut Store, spool: &Path, w: &WorkerId) -> Result<Vec<(PathBuf, Sent)>> {
    send_files(store, pending(spool)?, w)
}

/// [`send_pending`] of `files`, wherever they are (runs that could not be
/// written to the spool wait elsewhere).
pub fn send_files(
    store: &mut Store,
    files: Vec<PathBuf>,
    w: &WorkerId,
) -> Result<Vec<(PathBuf, Sent)>> {
    let mut sent = Vec::new();
    for file in files {
        let (text, doc) = match crate::store::read_document_text(&file) {
            Ok(read) => read,
            Err(e) => {
                let to = file.with_extension("unreadable");
                std::fs::rename(&file, &to)
                    .map_err(|e| Error::io(format!("renaming {}", file.display()), e))?;
                sent.push((
                    file,
                    Sent::SetAside {
                        to,
                        why: e.to_string(),
                    },
                ));
                continue;
            }
        };
        let job = doc
            .run
            .meta
            .get(JOB_META)
            .and_then(|j| j.parse::<i64>().ok());
        let run_id = match store.import(&doc, &text) {
            Ok(inserted) => inserted.id(),
            // The store answers, and refuses this document: it would refuse
            // it at every try, and stop the rest (and every claim) behind it.
            Err(e) if store.job(job.unwrap_or(0)).is_ok() => {
                sent.push(reject(store, &file, job, w, &e)?);
                continue;
            }
            Err(e) => return Err(e),
        };
        // One boot of a boot-rounds job is not the job's run: the job is
        // given back, and its step runs again when it is claimed.
        let step = doc.run.meta.get(super::kernel_jobs::STEP_META);
        let end = match step {
            Some(step) => Finish::Released {
                note: format!("boot step {step} was kept in the spool (run {run_id}); run again"),
            },
            None => Finish::Done { run_id, note: None },
        };
        if let Some(id) = job {
            store.finish_job(id, w, &end)?;
        }
        let job = job.filter(|_| step.is_none());
        std::fs::remove_file(&file)
            .map_err(|e| Error::io(format!("removing {} once stored", file.display()), e))?;
        sent.push((file, Sent::Stored { run_id, job }));
    }
    Ok(sent)
}

/// The folder of `spool` that documents the store refused are moved to.
pub const REJECTED: &str = "rejected";

/// Sets `file`, which the store refused with `e`, aside in the spool's
/// [`REJECTED`] folder, and fails its job (if it names one) saying where
/// the run is.
fn reject(
    store: &mut Store,
    file: &Path,
    job: Option<i64>,
    w: &WorkerId,
    e: &Error,
) -> Result<(PathBuf, Sent)> {
    let dir = file.with_file_name(REJECTED);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("making the folder {}", dir.display()), e))?;
    let to = dir.join(file.file_name().unwrap_or_default());
    std::fs::rename(file, &to)
        .map_err(|e| Error::io(format!("moving {} to {}", file.display(), dir.display()), e))?;
    let why = format!(
        "the store refused {} ({e}); it was moved to {} and is not sent again: fix it and \
         `osbench import` it, or remove it",
        file.display(),
        to.display()
    );
    if let Some(id) = job {
        let error = format!("its run could not be stored: {why}");
        store.finish_job(id, w, &Finish::Failed { error })?;
    }
    Ok((file.to_path_buf(), Sent::SetAside { to, why }))
}

/// The lease a running job holds, renewed between cases (never inside a
/// timed region: the run's observer calls [`Lease::renew`] before each case
/// and after each round), at most every quarter of its length. A store that
/// cannot be reached is said once; the run goes on, and what it measures
/// goes to the spool when it cannot be stored. A job taken away from the
/// worker (cancelled, or claimed by another worker after its lease expired)
/// sets the run's stop flag, so the run stops before its next case as it
/// does on SIGTERM.
pub struct Lease {
    location: Location,
    worker: WorkerId,
    length: Duration,
    renewed: Instant,
    warned: bool,
    /// Whether an expired lease nobody took was said.
    said_expired: bool,
    /// The run's stop flag (nested in the worker's: a signal sets it too).
    stop: Interrupt,
    /// Why the job was taken away, once it was.
    pub taken: Option<String>,
}

impl Lease {
    pub fn new(location: Location, worker: WorkerId, length: Duration, stop: Interrupt) -> Self {
        Self {
            location,
            worker,
            length,
            renewed: Instant::now(),
            warned: false,
            said_expired: false,
            stop,
            taken: None,
        }
    }

    /// Renews the worker's name and its job if a quarter of the lease has
    /// passed, and stops the run if the job was taken away; returns a
    /// warning to show, if any.
    pub fn renew(&mut self, job: i64) -> Option<String> {
        if self.taken.is_some() || self.renewed.elapsed() < self.length / 4 {
            return None;
        }
        let now = Store::open_existing(&self.location).and_then(|mut s| {
            s.heartbeat(&self.worker, self.length.as_secs_f64())?;
            s.job(job)
        });
        match now.map(|row| still_ours(row.as_ref(), &self.worker)) {
            Ok(Ok(expired)) => {
                self.renewed = Instant::now();
                self.warned = false;
                expired.filter(|_| !std::mem::replace(&mut self.said_expired, true))
            }
            Ok(Err(why)) => {
                self.stop.set();
                let said = format!(
                    "job {job} is no longer this worker's: {why}; its run stops here, between \
                     cases; what it measured is stored (meta {JOB_META}={job}), and the job is \
                     left as it is"
                );
                self.taken = Some(why);
                Some(said)
            }
            Err(e) if !self.warned => {
                self.warned = true;
                Some(format!(
                    "cannot renew the lease of job {job} ({e}); the run goes on, and is kept \
                     in the spool if the store is still away at its end"
                ))
            }
            Err(_) => None,
        }
    }
}

/// Whether `job` (as the store has it now) is still worker `w`'s to run:
/// `Ok(None)` while `w` holds it, `Ok(Some(warning))` when its lease expired
/// and nobody took it (the run goes on and ends it), `Err(why)` when it was
/// taken away (cancelled, claimed by another worker, ended).
pub fn still_ours(
    job: Option<&JobRow>,
    w: &WorkerId,
) -> std::result::Result<Option<String>, String> {
    let Some(j) = job else {
        return Err("it is no longer in the store".into());
    };
    let owner = j.lease_owner.as_deref().unwrap_or("nobody");
    match j.state {
        JobState::Claimed | JobState::Running if owner == w.owner() => Ok(None),
        JobState::Lost | JobState::Queued if owner.split(' ').next() == Some(&w.name) => {
            Ok(Some(format!(
                "the lease of job {} expired (a case took longer than --lease?); no other \
                 worker took it, so the run goes on",
                j.id
            )))
        }
        JobState::Cancelled => Err("it was cancelled".into()),
        JobState::Claimed | JobState::Running | JobState::Rebooting => Err(format!(
            "after its lease expired it was claimed again, by {owner}"
        )),
        state => Err(format!("it is {state} already")),
    }
}
