//! A queued job that boots its kernel, as the worker runs it (issue 30,
//! item 3; the boot itself is [`super::boot`], rounds of boots
//! [`super::boot_rounds`]). The job's `kernel` column holds a [`KernelJob`]
//! as JSON: the `[kernel]` or `[boot_rounds]` table it asks for, typed and
//! checked at submit ([`KernelJob::from_tables`]), and how far it got
//! ([`Progress`]: the record of the boot made for it, the boots done).
//! Before a claimed job runs, [`before_run`] runs it at once when the kernel
//! is already the one asked for, else stages the kernel, records the job
//! `rebooting` (committed) and reboots; the worker that starts after the boot
//! takes the job again (`Store::take_rebooted`) and [`before_run`] checks the
//! running kernel: a mismatch fails the job, named. Boot rounds boot for
//! every step and, after each boot's run, [`after_run`] keeps that run's id
//! and boots the next, or merges the boots into the job's one document.
//! A host that never comes back: the job's `boot_timeout` ([`BootTimeout`],
//! default [`DEFAULT_BOOT_TIMEOUT`]) is recorded as its deadline when it is
//! marked `rebooting`, and past it the queue's sweep makes the job `lost`
//! (re-queued to boot again) or, after its last attempt, `failed`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::boot::{self, BootRecord, BootSettings, KernelRequirement, Running};
use super::boot_rounds::{self, BootRounds, BootRun};
use crate::error::{Error, Result};
use crate::store::{BootWait, JobRow, Store, WorkerId};

/// The plan file's keys a kernel job is made of: its tables, and how long
/// a boot may take.
pub const KEYS: [&str; 3] = ["kernel", "boot_rounds", "boot_timeout"];

/// How long a host may take to come back from a boot unless the plan says.
pub const DEFAULT_BOOT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The longest `boot_timeout` a plan may give.
pub const MOST_BOOT_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// A plan's `boot_timeout`: how long the host may take to come back from
/// a boot made for the job ("20m", "90s", "1h"; 1 s to a day), kept as
/// written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "serde_json::Value", into = "String")]
pub struct BootTimeout {
    written: String,
    pub duration: Duration,
}

impl TryFrom<serde_json::Value> for BootTimeout {
    type Error = String;
    fn try_from(value: serde_json::Value) -> std::result::Result<Self, String> {
        let secs = value.as_str().and_then(crate::document::span_secs);
        match secs.map(Duration::from_secs) {
            Some(d) if !d.is_zero() && d <= MOST_BOOT_TIMEOUT => Ok(Self {
                written: value.as_str().unwrap_or_default().to_string(),
                duration: d,
            }),
            _ => Err(format!(
                "boot_timeout = {value} is not a time a boot may take: give a number and a \
                 unit, s, m, h or d, as text (\"20m\", \"90s\"), from 1 s to 1 day"
            )),
        }
    }
}

impl From<BootTimeout> for String {
    fn from(t: BootTimeout) -> String {
        t.written
    }
}

/// The meta key each boot's run of a boot-rounds job carries its step under.
pub const STEP_META: &str = "boot_step";

/// What a job's `kernel` column holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelJob {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelRequirement>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_rounds: Option<BootRounds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_timeout: Option<BootTimeout>,
    #[serde(default)]
    pub progress: Progress,
}

/// How far a kernel job got.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The boot made for the job (or its current step), to check after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<BootRecord>,
    /// Boot rounds: the next step of the schedule, the job's seed, and the
    /// runs of the boots done (round, kernel index, run id).
    #[serde(default)]
    pub step: usize,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub boots: Vec<(usize, usize, i64)>,
}

impl KernelJob {
    /// A plan file's `[kernel]` / `[boot_rounds]` tables and `boot_timeout`
    /// (JSON, keyed by [`KEYS`]), typed and checked as far as the submitter
    /// can: files are checked on the worker's host, which has them.
    pub fn from_tables(tables: serde_json::Value) -> Result<Self> {
        let job: Self = serde_json::from_value(tables).map_err(|e| {
            Error::Boot(format!(
                "the plan's kernel job ([kernel], [boot_rounds], boot_timeout): {e}"
            ))
        })?;
        match (&job.kernel, &job.boot_rounds) {
            (Some(k), None) => check_kernel(k),
            (None, Some(r)) => check_rounds(r),
            (None, None) => Err(Error::Boot(
                "boot_timeout is for a job that boots a kernel: add a [kernel] or [boot_rounds] \
                 table, or leave it out"
                    .into(),
            )),
            _ => Err(Error::Boot(
                "give a job [kernel] (one kernel) or [boot_rounds] (kernels compared over boots), \
                 not both"
                    .into(),
            )),
        }?;
        Ok(job)
    }

    /// The job's column as stored.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| {
            Error::Boot(format!(
                "this osbench cannot read the job's kernel table ({e}): resubmit it"
            ))
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a kernel job always serialises")
    }

    /// How long a boot made for the job may take.
    pub fn boot_timeout(&self) -> Duration {
        self.boot_timeout
            .as_ref()
            .map_or(DEFAULT_BOOT_TIMEOUT, |t| t.duration)
    }
}

/// The submitter's checks of one kernel: something to boot or match, absolute paths.
fn check_kernel(k: &KernelRequirement) -> Result<()> {
    if k.kernel.is_none() && k.release.is_none() {
        return Err(Error::Boot(
            "a [kernel] table needs `kernel = \"/boot/vmlinuz-…\"`, `release = \"…\"`, or both"
                .into(),
        ));
    }
    for path in [&k.kernel, &k.initrd].into_iter().flatten() {
        if !path.is_absolute() {
            return Err(Error::Boot(format!(
                "'{}' is not an absolute path: name the file on the worker's host from /",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The submitter's checks of boot rounds: each kernel, their number and the rounds.
fn check_rounds(r: &BootRounds) -> Result<()> {
    r.kernels.iter().try_for_each(check_kernel)?;
    let names = r.names();
    let distinct: std::collections::BTreeSet<&String> = names.iter().collect();
    if r.kernels.len() < 2 || distinct.len() != names.len() {
        return Err(Error::Boot(format!(
            "boot rounds compare two kernels or more, each with its own name (these are: {})",
            names.join(", ")
        )));
    }
    if !(2..=crate::stats::paired::MOST_ROUNDS).contains(&r.rounds) {
        return Err(Error::Boot(format!(
            "boot rounds: rounds = {}; the paired comparison needs from 2 to {}",
            r.rounds,
            crate::stats::paired::MOST_ROUNDS
        )));
    }
    Ok(())
}

/// What the worker does with a kernel job now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Run the plan here, with these extra arguments (a boot's seed and step).
    Run(Vec<String>),
    /// The job is recorded `rebooting` and the host is going down: wait.
    Rebooting,
}

/// Before claimed `job` (with a kernel column) runs on worker `w`: after a
/// boot made for it, the running kernel checked (a mismatch is the error);
/// else run at once when the kernel already is the one asked for (one
/// kernel; boot rounds boot for every step), or stage, record and reboot.
pub fn before_run(
    store: &mut Store,
    job: &JobRow,
    w: &WorkerId,
    settings: &BootSettings,
) -> Result<Next> {
    let mut kj = KernelJob::from_json(job.kernel.as_deref().unwrap_or("{}"))?;
    if let Some(record) = &kj.progress.boot {
        record.expectation.check_running()?;
        return Ok(Next::Run(step_args(job, &kj)));
    }
    if let Some(req) = kj.kernel.clone() {
        if req.expectation()?.check(&Running::read()?).is_ok() {
            return Ok(Next::Run(Vec::new()));
        }
        return reboot(store, job, w, settings, &req, kj);
    }
    let rounds = kj
        .boot_rounds
        .clone()
        .expect("a kernel job has one or the other");
    rounds.validate()?;
    // A job lost in a boot (its host late) boots that step again, on its schedule.
    if kj.progress.step == 0 {
        kj.progress.seed = fresh_seed(job.id);
    }
    let (_, kernel) = rounds.schedule(kj.progress.seed)[kj.progress.step];
    reboot(store, job, w, settings, &rounds.kernels[kernel], kj)
}

/// A boot-rounds step's extra arguments: its seed, its step in the run's
/// meta, and a label of its own ([`step_label`]), so that the job's label
/// names only the merged document.
fn step_args(job: &JobRow, kj: &KernelJob) -> Vec<String> {
    if kj.boot_rounds.is_none() {
        return Vec::new();
    }
    let p = &kj.progress;
    vec![
        "--seed".into(),
        boot_rounds::boot_seed(p.seed, p.step).to_string(),
        "--meta".into(),
        format!("{STEP_META}={}", p.step),
        "--label".into(),
        step_label(job, p.step),
    ]
}

/// The label of one boot's run of a boot-rounds job: the job's label (or
/// "job ID") and the step, e.g. "nightly boot 3".
pub fn step_label(job: &JobRow, step: usize) -> String {
    let base = job
        .label
        .clone()
        .unwrap_or_else(|| format!("job {}", job.id));
    format!("{base} boot {step}")
}

/// A seed for a boot-rounds job's schedule, from the clock and its id.
fn fresh_seed(id: i64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    nanos ^ (id as u64).rotate_left(32)
}

/// Stages `req`, records the job `rebooting` with the boot's record
/// (committed), then reboots. A failed reboot puts the job back to
/// `running` so that the worker can fail it with the error.
fn reboot(
    store: &mut Store,
    job: &JobRow,
    w: &WorkerId,
    settings: &BootSettings,
    req: &KernelRequirement,
    mut kj: KernelJob,
) -> Result<Next> {
    let name = job.id.to_string();
    let (method, record) = boot::stage_boot(req, settings, &name)?;
    let wait = BootWait {
        into: booting_into(req, &record, &kj),
        timeout: kj.boot_timeout(),
    };
    kj.progress.boot = Some(record);
    if !store.mark_rebooting(job.id, w, &kj.to_json(), &wait)? {
        return Err(Error::Boot(format!(
            "job {} is no longer this worker's (cancelled, or its lease expired): not rebooting",
            job.id
        )));
    }
    if let Err(e) = method.reboot(req, &name) {
        store.unmark_rebooting(job.id, w, job.kernel.as_deref())?;
        return Err(e);
    }
    Ok(Next::Rebooting)
}

/// The kernel a boot is made into, in words: its file and the release
/// expected, and for boot rounds its name and step ("'patched':
/// /boot/vmlinuz-6.18 (release 6.18.0), boot 3 of 4").
fn booting_into(req: &KernelRequirement, record: &BootRecord, kj: &KernelJob) -> String {
    let release = &record.expectation.release;
    let kernel = match &req.kernel {
        Some(file) => format!("{} (release {release})", file.display()),
        None => format!("release {release}"),
    };
    match &kj.boot_rounds {
        Some(rounds) => format!(
            "'{}': {kernel}, boot {} of {}",
            req.label(),
            kj.progress.step + 1,
            rounds.rounds * rounds.kernels.len()
        ),
        None => kernel,
    }
}

/// How a kernel job goes on after a run of its plan stored as `run_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// The job is done with this run (one kernel's, or the boots' merged).
    Done { run_id: i64, note: Option<String> },
    /// The next boot of the rounds is under way.
    Rebooting,
}

/// After a run of `job`'s plan (stored as `run_id`): one kernel's job is
/// done; boot rounds keep the run and boot the next step, or after the last
/// merge every boot's run into one document with the paired comparison
/// attached, stored as the job's run.
pub fn after_run(
    store: &mut Store,
    job: &JobRow,
    w: &WorkerId,
    settings: &BootSettings,
    run_id: i64,
) -> Result<After> {
    let mut kj = KernelJob::from_json(job.kernel.as_deref().unwrap_or("{}"))?;
    let Some(rounds) = kj.boot_rounds.clone() else {
        return Ok(After::Done { run_id, note: None });
    };
    let schedule = rounds.schedule(kj.progress.seed);
    let (round, kernel) = schedule[kj.progress.step];
    kj.progress.boots.push((round, kernel, run_id));
    kj.progress.step += 1;
    kj.progress.boot = None;
    if let Some(&(_, next)) = schedule.get(kj.progress.step) {
        reboot(store, job, w, settings, &rounds.kernels[next], kj)?;
        return Ok(After::Rebooting);
    }
    let run_id = store_merged(store, job, &rounds, &kj.progress)?;
    let runs: Vec<String> = kj.progress.boots.iter().map(|b| b.2.to_string()).collect();
    Ok(After::Done {
        run_id,
        note: Some(format!(
            "merged from the runs of {} boots ({})",
            runs.len(),
            runs.join(", ")
        )),
    })
}

/// The boots' runs merged ([`boot_rounds::merge`]) with the paired
/// comparison attached, stored under the job's label; its run id.
fn store_merged(store: &mut Store, job: &JobRow, rounds: &BootRounds, p: &Progress) -> Result<i64> {
    let mut boots = Vec::new();
    for &(round, kernel, run_id) in &p.boots {
        let document = store.document(run_id)?.ok_or_else(|| {
            Error::Boot(format!(
                "run {run_id} (round {} of the boots) is no longer in the store: the rounds \
                 cannot be merged; resubmit the job",
                round + 1
            ))
        })?;
        boots.push(BootRun {
            round,
            kernel,
            document,
        });
    }
    let first = boots[0].document.run.clone();
    let mut doc = boot_rounds::merge(&rounds.names(), boots, p.seed)?;
    let mut meta = first.meta;
    meta.remove(STEP_META);
    // The merged run is the job's: its label, the boots' host and meta.
    doc.run.stamp(&crate::document::RunIdentity {
        label: job.label.clone(),
        host: first.host,
        meta,
    });
    let options = crate::compare::Options {
        seed: p.seed,
        ..Default::default()
    };
    crate::envelope::attach_comparison(&mut doc, &|d| crate::compare::paired(d, options))?;
    let text = serde_json::to_string_pretty(&doc).expect("a document always serialises");
    Ok(store.import(&doc, &text)?.id())
}

/// Whether kernel job `job` asks to boot back when it ends (`boot_back`).
pub fn wants_boot_back(job: &JobRow) -> Result<bool> {
    let kj = KernelJob::from_json(job.kernel.as_deref().unwrap_or("{}"))?;
    Ok(kj.kernel.as_ref().is_some_and(|k| k.boot_back)
        || kj.boot_rounds.as_ref().is_some_and(|r| r.boot_back))
}

/// The kernel the host ran before the boot made for `job` (its record's
/// `from`), when one was made: the job's run, if any, was on a kernel booted
/// for it.
pub fn booted_from(job: &JobRow) -> Option<String> {
    let kj = KernelJob::from_json(job.kernel.as_deref()?).ok()?;
    kj.progress.boot.map(|b| b.from.release)
}

/// After `job` ended: boot back into the host's default kernel when it
/// asks to; whether the host is going down.
pub fn boot_back(job: &JobRow, settings: &BootSettings) -> Result<bool> {
    let wanted = wants_boot_back(job)?;
    if wanted {
        boot::boot_back(settings, &job.id.to_string())?;
    }
    Ok(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_typed_and_checked_at_submit() {
        let ok = KernelJob::from_tables(serde_json::json!({
            "kernel": {"kernel": "/boot/vmlinuz-x", "append": "nosmt"}
        }))
        .unwrap();
        assert_eq!(ok.kernel.unwrap().append.as_deref(), Some("nosmt"));
        let e = |v: serde_json::Value| KernelJob::from_tables(v).unwrap_err().to_string();
        assert!(e(serde_json::json!({"kernel": {"kernel": "vmlinuz"}})).contains("absolute"));
        assert!(e(serde_json::json!({"kernel": {}})).contains("needs"));
        assert!(e(serde_json::json!({"kernel": {"kernal": "/x"}})).contains("kernal"));
        let rounds = |n: usize, names: [&str; 2]| {
            serde_json::json!({"boot_rounds": {"rounds": n, "kernel": [
                {"name": names[0], "release": "1"}, {"name": names[1], "release": "2"}]}})
        };
        assert!(KernelJob::from_tables(rounds(2, ["a", "b"])).is_ok());
        assert!(e(rounds(1, ["a", "b"])).contains("rounds = 1"));
        assert!(e(rounds(2, ["a", "a"])).contains("own name"));
    }

    #[test]
    fn a_boot_timeout_is_a_span_from_a_second_to_a_day() {
        let job = |t: serde_json::Value| {
            KernelJob::from_tables(serde_json::json!({
                "kernel": {"release": "6.18"}, "boot_timeout": t
            }))
        };
        let ok = job("20m".into()).unwrap();
        assert_eq!(ok.boot_timeout(), Duration::from_secs(1200));
        // Kept as written.
        assert!(ok.to_json().contains(r#""boot_timeout":"20m""#));
        assert_eq!(KernelJob::from_json(&ok.to_json()).unwrap(), ok);
        for bad in [
            "20".into(),
            serde_json::json!(20),
            "0s".into(),
            "2d".into(),
            "soon".into(),
        ] {
            let e = job(bad.clone()).unwrap_err().to_string();
            assert!(
                e.contains("not a time a boot may take") && e.contains("\"20m\""),
                "{bad}: {e}"
            );
        }
        let plain = KernelJob::from_tables(serde_json::json!({"kernel": {"release": "6.18"}}));
        assert_eq!(plain.unwrap().boot_timeout(), DEFAULT_BOOT_TIMEOUT);
        let alone = KernelJob::from_tables(serde_json::json!({"boot_timeout": "5m"}));
        assert!(
            alone
                .unwrap_err()
                .to_string()
                .contains("for a job that boots a kernel")
        );
    }
}
