//! The schema of the results store and its versioned migrations, applied
//! in one transaction while other processes wait.

use serde_json::Value;

use crate::error::{Error, Result};

use super::index::{experiment_key, fingerprint, index_meta, index_series};
use super::sql::{Conn, Param, bad_row, transaction};

/// A data step some migrations need after their SQL.
#[derive(Debug, Clone, Copy)]
enum Backfill {
    /// Fill `series` from the stored documents.
    IndexSeries,
    /// Recompute every run's fingerprint (SHA-256 of the canonical JSON).
    Refingerprint,
    /// Fill `runs.experiment` from the stored documents' configurations.
    Experiments,
    /// Fill `run_meta` from the stored documents' `run.meta`.
    IndexMeta,
}

/// One schema step: `before`, then the data step, then `after`.
pub(super) struct Migration {
    pub(super) before: &'static str,
    backfill: Option<Backfill>,
    pub(super) after: &'static str,
}

/// Every migration in order; the schema version is `MIGRATIONS.len()`.
pub(super) const MIGRATIONS: &[Migration] = &[
    // Version 1: one row per run with the document and what history lists.
    Migration {
        before: "CREATE TABLE runs (
             id {id},  -- never reused
             label TEXT,
             started TEXT NOT NULL,                 -- UTC, RFC 3339
             finished TEXT NOT NULL,
             complete {bool} NOT NULL,
             kernel TEXT NOT NULL,
             hostname TEXT NOT NULL,
             osbench_version TEXT NOT NULL,
             origin TEXT NOT NULL,                  -- 'run' or 'import'
             stored TEXT NOT NULL,                  -- UTC, when it was stored
             fingerprint TEXT NOT NULL,             -- of the canonical JSON, to find duplicates
             document TEXT NOT NULL                 -- the result document, as written
         );
         CREATE INDEX runs_label ON runs(label);
         CREATE INDEX runs_fingerprint ON runs(fingerprint);",
        backfill: None,
        after: "",
    },
    // Version 2: one row per series (bench, case, config, unit, n, median).
    Migration {
        before: "CREATE TABLE series (
             run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
             position {int} NOT NULL,
             bench TEXT NOT NULL,
             case_name TEXT NOT NULL,
             config TEXT NOT NULL,
             unit TEXT NOT NULL,
             n {int} NOT NULL,
             median {float} NOT NULL,
             PRIMARY KEY (run_id, position)
         );
         CREATE INDEX series_bench ON series(bench);",
        backfill: Some(Backfill::IndexSeries),
        after: "",
    },
    // Version 3: fingerprints become SHA-256 and unique (concurrent writers
    // of one document store it once); hosts and series over time are indexed.
    Migration {
        before: "DROP INDEX runs_fingerprint;",
        backfill: Some(Backfill::Refingerprint),
        after: "CREATE UNIQUE INDEX runs_fingerprint ON runs(fingerprint);
         CREATE INDEX runs_hostname ON runs(hostname);
         CREATE INDEX series_case ON series(bench, case_name, config);",
    },
    // Version 4: the experiment a run's configurations belong to, so that a
    // configuration `a` of two unrelated experiments is two histories.
    Migration {
        before: "ALTER TABLE runs ADD COLUMN experiment TEXT NOT NULL DEFAULT '';",
        backfill: Some(Backfill::Experiments),
        after: "",
    },
    // Version 5: each run's --meta pairs (the revision under test), one row each.
    Migration {
        before: "CREATE TABLE run_meta (
             run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
             name TEXT NOT NULL,
             value TEXT NOT NULL,
             PRIMARY KEY (run_id, name)
         );
         CREATE INDEX run_meta_pair ON run_meta(name, value);",
        backfill: Some(Backfill::IndexMeta),
        after: "",
    },
    // Version 6: the change points `osbench regressions` found, and what
    // people said of them (new, acknowledged, expected, fixed).
    Migration {
        before: "CREATE TABLE change_points (
             id {id},
             bench TEXT NOT NULL,
             case_name TEXT NOT NULL,
             config TEXT NOT NULL,
             host TEXT NOT NULL,
             unit TEXT NOT NULL,
             run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,  -- first run of the new level
             before_run_id {int} NOT NULL,         -- last run of the old level
             before_median {float} NOT NULL,
             after_median {float} NOT NULL,
             relative {float} NOT NULL,            -- after / before - 1
             p_value {float} NOT NULL,
             direction TEXT NOT NULL,              -- 'slower' or 'faster'
             state TEXT NOT NULL DEFAULT 'new'
                 CHECK (state IN ('new', 'acknowledged', 'expected', 'fixed')),
             found TEXT NOT NULL,                  -- UTC, RFC 3339: the sweep that found it
             state_changed TEXT,                   -- UTC, RFC 3339: when the state was last set
             UNIQUE (bench, case_name, config, host, run_id)
         );
         CREATE INDEX change_points_state ON change_points(state);",
        backfill: None,
        after: "",
    },
    // Version 7: the stable view dashboards read (docs/guide/nightly-regressions.md, "Dashboards").
    Migration {
        before: "CREATE VIEW osbench_results AS
         SELECT {started_time} AS started,
                runs.hostname AS host,
                runs.label AS label,
                runs.kernel AS kernel,
                COALESCE((SELECT {object_agg}(run_meta.name, run_meta.value) FROM run_meta
                          WHERE run_meta.run_id = runs.id), {empty_object}) AS meta,
                series.bench AS bench,
                series.case_name AS \"case\",
                series.config AS config,
                series.unit AS unit,
                series.median AS median,
                {summary:ci_low} AS ci_low,
                {summary:ci_high} AS ci_high,
                runs.id AS run_id
         FROM series JOIN runs ON runs.id = series.run_id;",
        backfill: None,
        after: "",
    },
    // Version 8: the job queue (`osbench submit`, `jobs`, `worker`; used in
    // PostgreSQL only, see `super::jobs`): the workers that registered, and
    // one row per job with its plan, lease and outcome.
    Migration {
        before: "CREATE TABLE workers (
             name TEXT PRIMARY KEY,                 -- the host name its runs are filed under
             tags TEXT NOT NULL,                    -- comma-separated
             machine TEXT NOT NULL,                 -- the machine's own host name
             pid {int} NOT NULL,
             osbench_version TEXT NOT NULL,
             token TEXT,                            -- the running worker's; NULL once it stopped
             started {timestamp} NOT NULL,
             last_seen {timestamp} NOT NULL,
             lease_expires {timestamp}              -- the name is taken until then
         );
         CREATE TABLE jobs (
             id {id},
             host TEXT NOT NULL,                    -- the worker name that runs it
             label TEXT,
             meta TEXT NOT NULL,                    -- JSON object of --meta pairs
             plan TEXT NOT NULL,                    -- JSON: what to run (queue::JobPlan)
             kernel TEXT,                           -- JSON: the kernel a boot job asks for
             osbench_version TEXT NOT NULL,         -- the osbench that must run it
             not_before {timestamp},
             state TEXT NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'claimed', 'running', 'rebooting', 'done',
                                  'failed', 'lost', 'cancelled')),
             submitted {timestamp} NOT NULL,
             lease_owner TEXT,                      -- worker name and pid of the last claim
             lease_token TEXT,                      -- the claiming worker's; NULL when released
             lease_expires {timestamp},
             attempts {int} NOT NULL DEFAULT 0,
             max_attempts {int} NOT NULL,
             started {timestamp},
             finished {timestamp},
             error TEXT,
             run_id {int}                           -- the stored run (a removed run keeps the id here)
         );
         CREATE INDEX jobs_next ON jobs(host, state, id);",
        backfill: None,
        after: "",
    },
    // Version 9: a job `rebooting` waits for its host until a deadline (its
    // plan's boot_timeout), past which it is lost (`super::jobs`).
    Migration {
        before: "ALTER TABLE jobs ADD COLUMN boot_into TEXT;  -- the kernel it boots, in words
         ALTER TABLE jobs ADD COLUMN boot_started {timestamp};
         ALTER TABLE jobs ADD COLUMN boot_deadline {timestamp};",
        backfill: None,
        after: "",
    },
];

/// The schema version this osbench writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the store to [`SCHEMA_VERSION`]; the version is read and the steps
/// applied inside one transaction, while other processes wait to migrate.
pub(super) fn migrate<C: Conn + ?Sized>(conn: &mut C) -> Result<()> {
    if conn.schema_version()? == SCHEMA_VERSION {
        return Ok(());
    }
    conn.lock_migrations()?;
    let done = migrate_locked(conn);
    conn.unlock_migrations();
    done
}

fn migrate_locked<C: Conn + ?Sized>(conn: &mut C) -> Result<()> {
    transaction(conn, |conn| {
        let from = conn.schema_version()?;
        if from > SCHEMA_VERSION {
            return Err(Error::Store {
                path: conn.name(),
                message: format!(
                    "schema version {from} was written by a newer osbench (this one knows up to \
                     {SCHEMA_VERSION}); use that osbench or another --store"
                ),
            });
        }
        let dialect = conn.dialect();
        for step in &MIGRATIONS[from.max(0) as usize..] {
            conn.batch(&dialect.sql(step.before))?;
            match step.backfill {
                Some(Backfill::IndexSeries) => index_stored_series(conn)?,
                Some(Backfill::Refingerprint) => refingerprint(conn)?,
                Some(Backfill::Experiments) => fill_experiments(conn)?,
                Some(Backfill::IndexMeta) => index_stored_meta(conn)?,
                None => {}
            }
            if !step.after.is_empty() {
                conn.batch(&dialect.sql(step.after))?;
            }
        }
        conn.set_schema_version(SCHEMA_VERSION)
    })
}

/// Every stored run's id and document text.
fn stored_documents<C: Conn + ?Sized>(conn: &mut C) -> Result<Vec<(i64, String)>> {
    let name = conn.name();
    conn.query("SELECT id, document FROM runs ORDER BY id", &[])?
        .iter()
        .map(|r| Ok((r.int(0)?, r.text(1)?)))
        .collect::<std::result::Result<_, String>>()
        .map_err(|m| bad_row(&name, m))
}

fn index_stored_series<C: Conn + ?Sized>(conn: &mut C) -> Result<()> {
    for (id, text) in stored_documents(conn)? {
        // Stored documents were valid when stored; read them as plain JSON so
        // this step keeps working whatever the document type becomes.
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        index_series(conn, id, &value)?;
    }
    Ok(())
}

fn index_stored_meta<C: Conn + ?Sized>(conn: &mut C) -> Result<()> {
    for (id, text) in stored_documents(conn)? {
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        index_meta(conn, id, &value)?;
    }
    Ok(())
}

fn refingerprint<C: Conn + ?Sized>(conn: &mut C) -> Result<()> {
    for (id, text) in stored_documents(conn)? {
        conn.execute(
            "UPDATE runs SET fingerprint = $1 WHERE id = $2",
            &[Param::Text(Some(fingerprint(&text))), Param::Int(id)],
        )?;
    }
    Ok(())
}

fn fill_experiments<C: Conn + ?Sized>(conn: &mut C) -> Result<()> {
    for (id, text) in stored_documents(conn)? {
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        conn.execute(
            "UPDATE runs SET experiment = $1 WHERE id = $2",
            &[Param::Text(Some(experiment_key(&value))), Param::Int(id)],
        )?;
    }
    Ok(())
}
