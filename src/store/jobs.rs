//! The job queue's rows in the results store (`osbench submit`, `jobs`,
//! `worker`; the plan inside a job is [`crate::queue`]'s): the workers that
//! registered ([`WorkerRow`]) and the jobs ([`JobRow`]), each claimed with
//! `SELECT … FOR UPDATE SKIP LOCKED` under a lease that its worker renews;
//! a lease that expired makes the job `lost` (claimable again) or, after
//! its last attempt, `failed`. Every time is the server's (`now()`), so the
//! hosts' clocks do not matter. PostgreSQL only: an SQLite store has the
//! tables (one schema for both) but refuses every call here.
//! Left out: notifications (workers poll), priorities, job dependencies.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};

use super::location::Location;
use super::queries::Store;
use super::sql::{Conn, Param, Row, bad_row, transaction};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting for its host's worker.
    Queued,
    /// Taken by a worker, not started yet.
    Claimed,
    Running,
    /// Its worker is booting the kernel the job asks for (`queue::boot`).
    Rebooting,
    Done,
    Failed,
    /// Its worker's lease expired; claimable again.
    Lost,
    Cancelled,
}

impl JobState {
    pub const ALL: [JobState; 8] = [
        JobState::Queued,
        JobState::Claimed,
        JobState::Running,
        JobState::Rebooting,
        JobState::Done,
        JobState::Failed,
        JobState::Lost,
        JobState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Claimed => "claimed",
            JobState::Running => "running",
            JobState::Rebooting => "rebooting",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Lost => "lost",
            JobState::Cancelled => "cancelled",
        }
    }

    /// Whether nothing happens to the job any more.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for JobState {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| {
                let all: Vec<&str> = JobState::ALL.iter().map(|s| s.as_str()).collect();
                format!("'{s}' is not a job state; one of {}", all.join(", "))
            })
    }
}

/// A job to queue.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub host: String,
    pub label: Option<String>,
    pub meta: BTreeMap<String, String>,
    /// JSON: what to run.
    pub plan: String,
    /// JSON: the kernel a boot job asks for.
    pub kernel: Option<String>,
    /// The osbench version that must run it.
    pub osbench_version: String,
    /// UTC, RFC 3339 ([`Store::server_time`]): not claimed before then.
    pub not_before: Option<String>,
    pub max_attempts: i64,
}

/// A job as stored. Times are UTC, RFC 3339.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub id: i64,
    pub host: String,
    pub label: Option<String>,
    pub meta: BTreeMap<String, String>,
    pub plan: String,
    pub kernel: Option<String>,
    pub osbench_version: String,
    pub not_before: Option<String>,
    pub state: JobState,
    pub submitted: String,
    /// The worker (`NAME pid N`) that claimed it last.
    pub lease_owner: Option<String>,
    pub lease_expires: Option<String>,
    pub attempts: i64,
    pub max_attempts: i64,
    pub started: Option<String>,
    pub finished: Option<String>,
    pub error: Option<String>,
    pub run_id: Option<i64>,
    /// While `rebooting`: the kernel its host boots into, in words, and
    /// when the job is lost unless the host is back (its boot_timeout).
    pub boot_into: Option<String>,
    pub boot_deadline: Option<String>,
    /// Why its meta column could not be read (a row written by other
    /// means than `submit`): `meta` is then empty, and the job is shown as
    /// such and failed by a worker, rather than failing every listing.
    pub meta_unreadable: Option<String>,
}

/// A registered worker. Times are UTC, RFC 3339.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerRow {
    pub name: String,
    pub tags: Vec<String>,
    pub machine: String,
    pub pid: i64,
    pub osbench_version: String,
    /// Whether its name is taken now (a live lease).
    pub live: bool,
    pub started: String,
    pub last_seen: String,
    pub lease_expires: Option<String>,
}

/// A worker registering: who it is, and the token that proves it later.
#[derive(Debug, Clone)]
pub struct WorkerId {
    pub name: String,
    pub tags: Vec<String>,
    pub machine: String,
    pub pid: i64,
    pub osbench_version: String,
    pub token: String,
}

impl WorkerId {
    /// How jobs name the worker that claimed them.
    pub fn owner(&self) -> String {
        format!("{} pid {} on {}", self.name, self.pid, self.machine)
    }
}

/// How a claimed job ends.
#[derive(Debug, Clone)]
pub enum Finish {
    /// Measured and stored as this run (`note`: e.g. what stopped it early).
    Done { run_id: i64, note: Option<String> },
    /// Not run, or not to be retried: the error says why.
    Failed { error: String },
    /// Given back (a stopped worker): queued again, this attempt not counted.
    Released { note: String },
}

/// A column of times as RFC 3339 text in UTC.
fn time(column: &str) -> String {
    format!("to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
}

/// A lease of `$N` seconds from now.
fn lease_until(param: usize) -> String {
    format!("now() + CAST(${param} AS DOUBLE PRECISION) * interval '1 second'")
}

/// The columns [`job_row`] reads.
fn job_columns() -> String {
    format!(
        "id, host, label, meta, plan, kernel, osbench_version, {}, state, {}, lease_owner, {},
         attempts, max_attempts, {}, {}, error, run_id, boot_into, {}",
        time("not_before"),
        time("submitted"),
        time("lease_expires"),
        time("started"),
        time("finished"),
        time("boot_deadline"),
    )
}

fn job_row(r: &Row) -> std::result::Result<JobRow, String> {
    let (meta, meta_unreadable) = match serde_json::from_str(&r.text(3)?) {
        Ok(meta) => (meta, None),
        Err(e) => (
            BTreeMap::new(),
            Some(format!("its meta is not a JSON map of strings: {e}")),
        ),
    };
    let opt_int = |i: usize| match r.cell(i) {
        super::sql::Cell::Null => Ok(None),
        _ => r.int(i).map(Some),
    };
    Ok(JobRow {
        id: r.int(0)?,
        host: r.text(1)?,
        label: r.opt_text(2)?,
        meta,
        plan: r.text(4)?,
        kernel: r.opt_text(5)?,
        osbench_version: r.text(6)?,
        not_before: r.opt_text(7)?,
        state: r.text(8)?.parse()?,
        submitted: r.text(9)?,
        lease_owner: r.opt_text(10)?,
        lease_expires: r.opt_text(11)?,
        attempts: r.int(12)?,
        max_attempts: r.int(13)?,
        started: r.opt_text(14)?,
        finished: r.opt_text(15)?,
        error: r.opt_text(16)?,
        run_id: opt_int(17)?,
        boot_into: r.opt_text(18)?,
        boot_deadline: r.opt_text(19)?,
        meta_unreadable,
    })
}

fn worker_columns() -> String {
    format!(
        "name, tags, machine, pid, osbench_version,
         token IS NOT NULL AND lease_expires > now(), {}, {}, {}",
        time("started"),
        time("last_seen"),
        time("lease_expires")
    )
}

fn worker_row(r: &Row) -> std::result::Result<WorkerRow, String> {
    Ok(WorkerRow {
        name: r.text(0)?,
        tags: split_tags(&r.text(1)?),
        machine: r.text(2)?,
        pid: r.int(3)?,
        osbench_version: r.text(4)?,
        live: r.bool(5)?,
        started: r.text(6)?,
        last_seen: r.text(7)?,
        lease_expires: r.opt_text(8)?,
    })
}

fn split_tags(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// Expired leases, then boots past their deadline: the job is `lost`
/// (claimable again) or, once its attempts are used up, `failed`; the error
/// says whose lease it was, or which host did not come back from which
/// boot and how long it waited. A boot's record is dropped from the job's
/// progress (its `kernel` column), so that the next claim boots again.
fn sweep(conn: &mut (dyn Conn + Send)) -> Result<()> {
    let ended = "state = CASE WHEN attempts >= max_attempts THEN 'failed' ELSE 'lost' END,
        finished = CASE WHEN attempts >= max_attempts THEN now() ELSE NULL END,
        lease_token = NULL";
    let tries = "' after attempt ' || attempts || ' of ' || max_attempts
        || CASE WHEN attempts >= max_attempts THEN '; not retried: resubmit it'
                ELSE '; queued again' END";
    conn.execute(
        &format!(
            "UPDATE jobs SET {ended},
                 error = 'the lease of worker ' || COALESCE(lease_owner, '?') || ' expired at '
                     || {} || ' (the worker died, hung or lost the store)' || {tries}
             WHERE state IN ('claimed', 'running') AND lease_expires < now()",
            time("lease_expires")
        ),
        &[],
    )?;
    conn.execute(
        &format!(
            "UPDATE jobs SET {ended},
                 error = 'host ' || host || ' did not come back from its boot into '
                     || COALESCE(boot_into, 'its kernel') || ': it waited '
                     || CAST(date_trunc('second', now() - boot_started) AS TEXT) || ' from '
                     || {} || ', past its boot_timeout of '
                     || CAST(date_trunc('second', boot_deadline - boot_started) AS TEXT)
                     || ' (the kernel hung, panicked or fell back, or the worker did not start)'
                     || {tries},
                 kernel = CAST(CAST(kernel AS jsonb) #- '{{progress,boot}}' AS TEXT),
                 boot_deadline = NULL
             WHERE state = 'rebooting' AND boot_deadline < now()",
            time("boot_started")
        ),
        &[],
    )
    .map(drop)
}

impl Store {
    /// An error unless this store can hold a queue (PostgreSQL); `what`
    /// names the command asking.
    pub fn require_queue(&self, what: &str) -> Result<()> {
        match self.location() {
            Location::Postgres(_) => Ok(()),
            Location::File(path) => Err(queue_needs_postgres(what, &path.display().to_string())),
        }
    }

    /// `given` as the server reads a time: RFC 3339 (or anything
    /// PostgreSQL takes for a `timestamptz`), or `+INTERVAL` from now
    /// (`+2 hours`, `+30 min`); returned as UTC RFC 3339.
    pub fn server_time(&self, given: &str) -> Result<String> {
        self.require_queue("submit")?;
        let mut conn = self.conn();
        let sql = format!(
            "SELECT {} FROM (SELECT CASE WHEN left(CAST($1 AS TEXT), 1) = '+'
                 THEN now() + CAST(substr(CAST($1 AS TEXT), 2) AS interval)
                 ELSE CAST(CAST($1 AS TEXT) AS timestamptz) END AS t) AS given",
            time("t")
        );
        let rows = conn.query(&sql, &[given.into()]).map_err(|e| {
            Error::Usage(format!(
                "'{given}' is not a time the store can read ({e}); give RFC 3339 \
             (2026-12-03T02:00:00Z) or +INTERVAL from now (+2 hours)"
            ))
        })?;
        let name = conn.name();
        rows.first()
            .ok_or_else(|| bad_row(&name, "no time".into()))?
            .text(0)
            .map_err(|m| bad_row(&name, m))
    }

    /// Queues `jobs` in one transaction; their ids in order.
    pub fn submit(&mut self, jobs: &[NewJob]) -> Result<Vec<i64>> {
        self.require_queue("submit")?;
        let mut conn = self.conn();
        transaction(conn.as_mut(), |conn| {
            let name = conn.name();
            jobs.iter()
                .map(|j| {
                    let meta = serde_json::to_string(&j.meta).expect("a map of strings");
                    let rows = conn.query(
                        "INSERT INTO jobs (host, label, meta, plan, kernel, osbench_version,
                             not_before, submitted, max_attempts)
                         VALUES ($1, $2, $3, $4, $5, $6, CAST(CAST($7 AS TEXT) AS timestamptz),
                             now(), $8)
                         RETURNING id",
                        &[
                            j.host.as_str().into(),
                            (&j.label).into(),
                            meta.as_str().into(),
                            j.plan.as_str().into(),
                            (&j.kernel).into(),
                            j.osbench_version.as_str().into(),
                            (&j.not_before).into(),
                            Param::Int(j.max_attempts),
                        ],
                    )?;
                    rows.first()
                        .ok_or_else(|| bad_row(&name, "no id returned".into()))?
                        .int(0)
                        .map_err(|m| bad_row(&name, m))
                })
                .collect()
        })
    }

    /// The jobs (of `host`, in `state` when given), oldest first; expired
    /// leases are judged first, so a dead worker's job shows as lost.
    pub fn jobs(&self, host: Option<&str>, state: Option<JobState>) -> Result<Vec<JobRow>> {
        self.require_queue("jobs")?;
        let mut conn = self.conn();
        sweep(&mut **conn)?;
        let rows = conn.query(
            &format!(
                "SELECT {} FROM jobs
                 WHERE (CAST($1 AS TEXT) IS NULL OR host = $1)
                   AND (CAST($2 AS TEXT) IS NULL OR state = $2)
                 ORDER BY id",
                job_columns()
            ),
            &[host.into(), state.map(JobState::as_str).into()],
        )?;
        let name = conn.name();
        rows.iter()
            .map(job_row)
            .collect::<std::result::Result<_, _>>()
            .map_err(|m| bad_row(&name, m))
    }

    /// Job `id`, if there is one (expired leases judged first).
    pub fn job(&self, id: i64) -> Result<Option<JobRow>> {
        self.require_queue("jobs")?;
        let mut conn = self.conn();
        sweep(&mut **conn)?;
        let rows = conn.query(
            &format!("SELECT {} FROM jobs WHERE id = $1", job_columns()),
            &[Param::Int(id)],
        )?;
        let name = conn.name();
        rows.first()
            .map(job_row)
            .transpose()
            .map_err(|m| bad_row(&name, m))
    }

    /// Cancels job `id` unless it has ended; returns the state it was in. A
    /// running job's worker finishes the case it is in, stops the run there,
    /// stores what it measured ([`Store::note_cancelled_run`]) and goes on
    /// to its next job; the job stays cancelled.
    pub fn cancel_job(&mut self, id: i64) -> Result<JobState> {
        self.require_queue("jobs --cancel")?;
        let before = self.job(id)?.ok_or_else(|| {
            Error::Usage(format!("there is no job {id}; `osbench jobs` lists them"))
        })?;
        if before.state.is_final() {
            return Err(Error::Usage(format!(
                "job {id} is {} already; only a job that has not ended can be cancelled",
                before.state
            )));
        }
        let mut conn = self.conn();
        let changed = conn.execute(
            "UPDATE jobs SET state = 'cancelled', finished = now(),
                 error = COALESCE(error || '; ', '') || 'cancelled (was ' || state || ')'
             WHERE id = $1 AND state NOT IN ('done', 'failed', 'cancelled')",
            &[Param::Int(id)],
        )?;
        if changed == 0 {
            return Err(Error::Usage(format!(
                "job {id} ended while it was being cancelled; `osbench jobs` shows how"
            )));
        }
        Ok(before.state)
    }

    /// Notes on cancelled job `id` the run that kept what its worker had
    /// measured when it stopped; false when the job is not cancelled or has
    /// a run already.
    pub fn note_cancelled_run(&mut self, id: i64, run_id: i64) -> Result<bool> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let n = conn.execute(
            "UPDATE jobs SET run_id = $2,
                 error = COALESCE(error || '; ', '') || 'what was measured before it stopped is run '
                     || $3
             WHERE id = $1 AND state = 'cancelled' AND run_id IS NULL",
            &[
                Param::Int(id),
                Param::Int(run_id),
                run_id.to_string().as_str().into(),
            ],
        )?;
        Ok(n == 1)
    }

    /// Registers (or re-registers) a worker with a lease of `lease` seconds
    /// on its name; `Some(row)` when another worker holds the name now.
    pub fn register_worker(&mut self, w: &WorkerId, lease: f64) -> Result<Option<WorkerRow>> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let taken = conn.query(
            &format!(
                "INSERT INTO workers (name, tags, machine, pid, osbench_version, token, started,
                     last_seen, lease_expires)
                 VALUES ($1, $2, $3, $4, $5, $6, now(), now(), {})
                 ON CONFLICT (name) DO UPDATE SET tags = EXCLUDED.tags,
                     machine = EXCLUDED.machine, pid = EXCLUDED.pid,
                     osbench_version = EXCLUDED.osbench_version, token = EXCLUDED.token,
                     started = EXCLUDED.started, last_seen = EXCLUDED.last_seen,
                     lease_expires = EXCLUDED.lease_expires
                 WHERE workers.token IS NULL OR workers.lease_expires < now()
                     OR workers.token = EXCLUDED.token
                 RETURNING name",
                lease_until(7)
            ),
            &[
                w.name.as_str().into(),
                w.tags.join(",").as_str().into(),
                w.machine.as_str().into(),
                Param::Int(w.pid),
                w.osbench_version.as_str().into(),
                w.token.as_str().into(),
                Param::Float(lease),
            ],
        )?;
        if !taken.is_empty() {
            return Ok(None);
        }
        let rows = conn.query(
            &format!("SELECT {} FROM workers WHERE name = $1", worker_columns()),
            &[w.name.as_str().into()],
        )?;
        let name = conn.name();
        rows.first()
            .map(worker_row)
            .transpose()
            .map_err(|m| bad_row(&name, m))
    }

    /// Renews the worker's lease on its name (and any job it holds); false
    /// when the name is no longer its own.
    pub fn heartbeat(&mut self, w: &WorkerId, lease: f64) -> Result<bool> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let renewed = conn.execute(
            &format!(
                "UPDATE workers SET last_seen = now(), lease_expires = {}
                 WHERE name = $1 AND token = $2",
                lease_until(3)
            ),
            &[
                w.name.as_str().into(),
                w.token.as_str().into(),
                Param::Float(lease),
            ],
        )?;
        conn.execute(
            &format!(
                "UPDATE jobs SET lease_expires = {}
                 WHERE lease_token = $1 AND state IN ('claimed', 'running')",
                lease_until(2)
            ),
            &[w.token.as_str().into(), Param::Float(lease)],
        )?;
        Ok(renewed == 1)
    }

    /// Frees the worker's name (it stopped).
    pub fn unregister_worker(&mut self, w: &WorkerId) -> Result<()> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        conn.execute(
            "UPDATE workers SET token = NULL, lease_expires = NULL, last_seen = now()
             WHERE name = $1 AND token = $2",
            &[w.name.as_str().into(), w.token.as_str().into()],
        )
        .map(drop)
    }

    /// The registered workers (with `tag`, when given), by name.
    pub fn workers(&self, tag: Option<&str>) -> Result<Vec<WorkerRow>> {
        self.require_queue("submit")?;
        let mut conn = self.conn();
        let rows = conn.query(
            &format!(
                "SELECT {} FROM workers
                 WHERE CAST($1 AS TEXT) IS NULL OR strpos(',' || tags || ',', ',' || $1 || ',') > 0
                 ORDER BY name",
                worker_columns()
            ),
            &[tag.into()],
        )?;
        let name = conn.name();
        rows.iter()
            .map(worker_row)
            .collect::<std::result::Result<_, _>>()
            .map_err(|m| bad_row(&name, m))
    }

    /// Claims the next job for worker `w` (queued or lost, its not-before
    /// passed, oldest first) under a lease of `lease` seconds; none when
    /// there is none. Concurrent claimers skip each other's rows.
    pub fn claim(&mut self, w: &WorkerId, lease: f64) -> Result<Option<JobRow>> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        sweep(&mut **conn)?;
        drop(conn);
        self.take_one(
            w,
            lease,
            ", attempts = attempts + 1, started = now()",
            "state IN ('queued', 'lost') AND (not_before IS NULL OR not_before <= now())",
        )
    }

    /// The oldest job of `w`'s host matching `which` (SQL), taken under a
    /// lease of `lease` seconds with `set` (more assignments) applied;
    /// concurrent callers skip each other's rows. Used by [`Store::claim`]
    /// and by the worker taking back the job it rebooted for.
    pub(super) fn take_one(
        &mut self,
        w: &WorkerId,
        lease: f64,
        set: &str,
        which: &str,
    ) -> Result<Option<JobRow>> {
        let mut conn = self.conn();
        let rows = conn.query(
            &format!(
                "UPDATE jobs SET state = 'claimed', lease_owner = $2, lease_token = $3,
                     lease_expires = {}{set}
                 WHERE id = (SELECT id FROM jobs WHERE host = $1 AND {which}
                             ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
                 RETURNING {}",
                lease_until(4),
                job_columns()
            ),
            &[
                w.name.as_str().into(),
                w.owner().as_str().into(),
                w.token.as_str().into(),
                Param::Float(lease),
            ],
        )?;
        let name = conn.name();
        rows.first()
            .map(job_row)
            .transpose()
            .map_err(|m| bad_row(&name, m))
    }

    /// Marks job `id`, claimed by `w`, as running; false when it is no
    /// longer `w`'s (cancelled, or its lease expired).
    pub fn start_job(&mut self, id: i64, w: &WorkerId) -> Result<bool> {
        self.require_queue("worker")?;
        let mut conn = self.conn();
        let n = conn.execute(
            "UPDATE jobs SET state = 'running'
             WHERE id = $1 AND lease_token = $2 AND state IN ('claimed', 'running')",
            &[Param::Int(id), w.token.as_str().into()],
        )?;
        Ok(n == 1)
    }

    /// Ends job `id` as `how` says, if it is still `w`'s or nobody's (lost,
    /// queued: a document sent after the store came back); false when the
    /// job went elsewhere (cancelled, or claimed by another worker).
    pub fn finish_job(&mut self, id: i64, w: &WorkerId, how: &Finish) -> Result<bool> {
        self.require_queue("worker")?;
        let mine = "id = $1 AND ((lease_token = $2 AND state IN ('claimed', 'running'))
                    OR (state IN ('lost', 'queued') AND split_part(lease_owner, ' ', 1) = $3))";
        let (sql, extra): (String, Vec<Param>) = match how {
            Finish::Done { run_id, note } => (
                format!(
                    "UPDATE jobs SET state = 'done', run_id = $4,
                         error = COALESCE(CAST($5 AS TEXT), error), finished = now(),
                         lease_token = NULL WHERE {mine}"
                ),
                vec![
                    Param::Int(*run_id),
                    note.as_deref().map(crate::text::storable).as_deref().into(),
                ],
            ),
            Finish::Failed { error } => (
                format!(
                    "UPDATE jobs SET state = 'failed', error = $4, finished = now(),
                         lease_token = NULL WHERE {mine}"
                ),
                vec![crate::text::storable(error).as_str().into()],
            ),
            Finish::Released { note } => (
                format!(
                    "UPDATE jobs SET state = 'queued', error = $4, lease_token = NULL,
                         lease_expires = NULL, attempts = GREATEST(attempts - 1, 0)
                     WHERE {mine}"
                ),
                vec![crate::text::storable(note).as_str().into()],
            ),
        };
        let mut params = vec![
            Param::Int(id),
            w.token.as_str().into(),
            w.name.as_str().into(),
        ];
        params.extend(extra);
        let mut conn = self.conn();
        Ok(conn.execute(&sql, &params)? == 1)
    }
}

/// The error for a queue command given an SQLite store.
pub fn queue_needs_postgres(what: &str, store: &str) -> Error {
    Error::Usage(format!(
        "`osbench {what}` needs a PostgreSQL store and {store} is an SQLite file: jobs are rows \
         that every host's worker reads, and an SQLite file is one machine's; give --store \
         postgresql://USER@HOST/DB (or set OSBENCH_STORE to it)"
    ))
}
