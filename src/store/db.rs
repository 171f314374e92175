//! The results history: an SQLite database (rusqlite with its bundled SQLite)
//! that keeps every stored run's whole result document as JSON text, plus
//! indexed columns to list and find runs (label, times, kernel, host, and one
//! row per series in `series`).
//!
//! Keeping the document whole means new document fields need no schema
//! change; the schema version (`PRAGMA user_version`) moves only when the
//! indexed columns do, through [`MIGRATIONS`], each applied in one transaction.
//! Every write is one transaction; the journal is WAL and connections wait up
//! to [`BUSY_TIMEOUT`] for a lock, so concurrent osbench processes all succeed
//! and a process killed mid-write leaves the earlier runs intact.
//! Left out: deleting or editing runs (SQL on the file does that).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;

use crate::document::{DEFAULT_CONFIG, Document, utc_now};
use crate::error::{Error, Result};

/// How long a connection waits for another process's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The environment variable naming the store when `--store` is not given.
pub const STORE_ENV: &str = "OSBENCH_STORE";

/// One schema step: from version `i` (its index) to `i + 1`.
type Migration = fn(&Transaction) -> rusqlite::Result<()>;

/// Every migration in order; the schema version is `MIGRATIONS.len()`.
const MIGRATIONS: &[Migration] = &[create_runs, add_series_index];

/// The schema version this osbench writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Version 1: one row per run with the document and what history lists.
fn create_runs(tx: &Transaction) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE runs (
             id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused
             label TEXT,
             started TEXT NOT NULL,                 -- UTC, RFC 3339
             finished TEXT NOT NULL,
             complete INTEGER NOT NULL,
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
    )
}

/// Version 2: one row per series (bench, case, config, unit, n, median),
/// filled from the documents already stored.
fn add_series_index(tx: &Transaction) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE series (
             run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
             position INTEGER NOT NULL,
             bench TEXT NOT NULL,
             case_name TEXT NOT NULL,
             config TEXT NOT NULL,
             unit TEXT NOT NULL,
             n INTEGER NOT NULL,
             median REAL NOT NULL,
             PRIMARY KEY (run_id, position)
         );
         CREATE INDEX series_bench ON series(bench);",
    )?;
    let stored: Vec<(i64, String)> = tx
        .prepare("SELECT id, document FROM runs")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, text) in stored {
        // Stored documents were valid when stored; read them as plain JSON so
        // this step keeps working whatever the document type becomes.
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        index_series(tx, id, &value)?;
    }
    Ok(())
}

/// Adds the `series` rows of run `id` from its document.
fn index_series(tx: &Transaction, id: i64, doc: &Value) -> rusqlite::Result<()> {
    let mut insert = tx.prepare(
        "INSERT INTO series (run_id, position, bench, case_name, config, unit, n, median)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let series = doc["series"].as_array().map_or(&[][..], Vec::as_slice);
    for (position, s) in series.iter().enumerate() {
        let text = |key: &str| s[key].as_str().unwrap_or("").to_string();
        insert.execute(params![
            id,
            position as i64,
            text("bench"),
            text("case"),
            s["config"].as_str().unwrap_or(DEFAULT_CONFIG),
            text("unit"),
            s["summary"]["n"].as_i64().unwrap_or(0),
            s["summary"]["median"].as_f64().unwrap_or(f64::NAN),
        ])?;
    }
    Ok(())
}

/// Where the store is: `explicit` (`--store`), else `$OSBENCH_STORE`, else
/// `$XDG_DATA_HOME/osbench/results.sqlite`, else
/// `~/.local/share/osbench/results.sqlite`.
pub fn location(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = var(STORE_ENV) {
        return Ok(PathBuf::from(p));
    }
    // The XDG base directory spec ignores relative values.
    let data_home = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    match data_home {
        Some(dir) => Ok(dir.join("osbench").join("results.sqlite")),
        None => Err(Error::Store {
            path: "(none)".into(),
            message: format!(
                "neither HOME nor XDG_DATA_HOME is set; give --store PATH, set {STORE_ENV}, or use --no-store"
            ),
        }),
    }
}

/// A stored run as history lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub label: Option<String>,
    pub started: String,
    pub finished: String,
    pub complete: bool,
    pub kernel: String,
    pub hostname: String,
    pub osbench_version: String,
    /// "run" or "import".
    pub origin: String,
    /// Each series as "bench case" (with " [config]" when not "default"), in document order.
    pub cases: Vec<String>,
}

/// One stored run's result for one case (one series), as a case's history
/// reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseRun {
    pub run_id: i64,
    /// UTC, RFC 3339: the run's start.
    pub started: String,
    pub label: Option<String>,
    pub hostname: String,
    pub kernel: String,
    pub config: String,
    /// The series' unit as documents name it ("ns", "us", "s").
    pub unit: String,
    /// Samples behind the median.
    pub n: i64,
    pub median: f64,
    /// The 95 % interval of the median, from the stored document's summary
    /// (`None` where the document has none).
    pub ci: Option<(f64, f64)>,
}

/// Which runs to list; every given field must match.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Runs with at least one series of this benchmark.
    pub bench: Option<String>,
    /// Runs with exactly this label.
    pub label: Option<String>,
    /// Runs whose kernel release contains this text.
    pub kernel: Option<String>,
}

/// What [`Store::insert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// Stored as a new run with this id.
    New(i64),
    /// The same document was already stored as this run; nothing was added.
    Existing(i64),
}

impl Inserted {
    pub fn id(self) -> i64 {
        match self {
            Inserted::New(id) | Inserted::Existing(id) => id,
        }
    }
}

/// An open results store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens the store at `path`, creating it (and its directory) if missing,
    /// and migrates it to [`SCHEMA_VERSION`].
    pub fn open(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::Store {
                path: path.display().to_string(),
                message: format!("cannot create directory {}: {e}", dir.display()),
            })?;
        }
        Self::connect(path)
    }

    /// Opens an existing store; a missing file is an error that says so.
    pub fn open_existing(path: &Path) -> Result<Self> {
        if !path.exists() {
            return Err(Error::Store {
                path: path.display().to_string(),
                message: "no results store here yet (osbench run saves every run to it; \
                          --store PATH or OSBENCH_STORE chooses another)"
                    .into(),
            });
        }
        Self::connect(path)
    }

    fn connect(path: &Path) -> Result<Self> {
        let fail = store_error(path);
        let mut conn = Connection::open(path).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // WAL: readers never wait for a writer, and a killed writer's
        // uncommitted pages are ignored on the next open. Where WAL is not
        // possible (a read-only file, some network file systems) the store
        // keeps its rollback journal, which is as safe, only less concurrent.
        let _journal: rusqlite::Result<String> =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0));
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(fail)?;
        migrate(&mut conn, path)?;
        Ok(Self {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stores a run measured here (as compact JSON).
    pub fn insert(&mut self, doc: &Document) -> Result<Inserted> {
        let text = serde_json::to_string(doc).expect("a Document always serialises");
        self.insert_text(doc, &text, "run")
    }

    /// Stores a document read from a file (`text`, kept as written, so fields a
    /// newer osbench added survive); the same document twice is stored once.
    pub fn import(&mut self, doc: &Document, text: &str) -> Result<Inserted> {
        self.insert_text(doc, text, "import")
    }

    fn insert_text(&mut self, doc: &Document, text: &str, origin: &str) -> Result<Inserted> {
        let fail = store_error(&self.path);
        let canonical = canonical_json(text);
        let fingerprint = format!("{:016x}", fnv1a64(canonical.as_bytes()));
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(fail)?;
        let candidates: Vec<(i64, String)> = tx
            .prepare("SELECT id, document FROM runs WHERE fingerprint = ?1")
            .and_then(|mut st| {
                st.query_map([&fingerprint], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            })
            .map_err(fail)?;
        if let Some((id, _)) = candidates
            .iter()
            .find(|(_, stored)| canonical_json(stored) == canonical)
        {
            return Ok(Inserted::Existing(*id));
        }
        tx.execute(
            "INSERT INTO runs (label, started, finished, complete, kernel, hostname,
                               osbench_version, origin, stored, fingerprint, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                doc.run.label,
                doc.run.started,
                doc.run.finished,
                doc.run.complete,
                doc.env.kernel,
                doc.host(),
                doc.tool.version,
                origin,
                utc_now(),
                fingerprint,
                text,
            ],
        )
        .map_err(fail)?;
        let id = tx.last_insert_rowid();
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        index_series(&tx, id, &value).map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(Inserted::New(id))
    }

    /// The runs matching `filter`, oldest id first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunRow>> {
        let fail = store_error(&self.path);
        let mut st = self
            .conn
            .prepare(
                "SELECT id, label, started, finished, complete, kernel, hostname,
                        osbench_version, origin
                 FROM runs
                 WHERE (?1 IS NULL OR label = ?1)
                   AND (?2 IS NULL OR instr(kernel, ?2) > 0)
                   AND (?3 IS NULL OR EXISTS
                         (SELECT 1 FROM series WHERE run_id = runs.id AND bench = ?3))
                 ORDER BY id",
            )
            .map_err(fail)?;
        let mut rows: Vec<RunRow> = st
            .query_map(params![filter.label, filter.kernel, filter.bench], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    label: r.get(1)?,
                    started: r.get(2)?,
                    finished: r.get(3)?,
                    complete: r.get(4)?,
                    kernel: r.get(5)?,
                    hostname: r.get(6)?,
                    osbench_version: r.get(7)?,
                    origin: r.get(8)?,
                    cases: Vec::new(),
                })
            })
            .and_then(|it| it.collect())
            .map_err(fail)?;
        let mut cases = self
            .conn
            .prepare(
                "SELECT bench, case_name, config FROM series WHERE run_id = ?1 ORDER BY position",
            )
            .map_err(fail)?;
        for row in &mut rows {
            row.cases = cases
                .query_map([row.id], |r| {
                    let (bench, case, config): (String, String, String) =
                        (r.get(0)?, r.get(1)?, r.get(2)?);
                    Ok(if config == DEFAULT_CONFIG {
                        format!("{bench} {case}")
                    } else {
                        format!("{bench} {case} [{config}]")
                    })
                })
                .and_then(|it| it.collect())
                .map_err(fail)?;
        }
        Ok(rows)
    }

    /// The document of run `id` as stored (JSON text), if there is such a run.
    pub fn document_text(&self, id: i64) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT document FROM runs WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(store_error(&self.path))
    }

    /// The document of run `id`, if there is such a run.
    pub fn document(&self, id: i64) -> Result<Option<Document>> {
        let Some(text) = self.document_text(id)? else {
            return Ok(None);
        };
        let origin = format!("{} run {id}", self.path.display());
        super::parse_document(&text, &origin).map(Some)
    }

    /// The series of `bench` `case` in every stored run (of `config` and on
    /// `host` when given), oldest start first.
    pub fn case_history(
        &self,
        bench: &str,
        case: &str,
        config: Option<&str>,
        host: Option<&str>,
    ) -> Result<Vec<CaseRun>> {
        let summary = |field: &str| {
            format!(
                "json_extract(runs.document, '$.series[' || series.position || '].summary.{field}')"
            )
        };
        let sql = format!(
            "SELECT runs.id, runs.started, runs.label, runs.hostname, runs.kernel, series.config,
                    series.unit, series.n, series.median, {}, {}
             FROM series JOIN runs ON runs.id = series.run_id
             WHERE series.bench = ?1 AND series.case_name = ?2
               AND (?3 IS NULL OR series.config = ?3)
               AND (?4 IS NULL OR runs.hostname = ?4)
             ORDER BY runs.started, runs.id, series.position",
            summary("ci_low"),
            summary("ci_high")
        );
        let fail = store_error(&self.path);
        let mut st = self.conn.prepare(&sql).map_err(fail)?;
        st.query_map(params![bench, case, config, host], |r| {
            let (low, high): (Option<f64>, Option<f64>) = (r.get(9)?, r.get(10)?);
            Ok(CaseRun {
                run_id: r.get(0)?,
                started: r.get(1)?,
                label: r.get(2)?,
                hostname: r.get(3)?,
                kernel: r.get(4)?,
                config: r.get(5)?,
                unit: r.get(6)?,
                n: r.get(7)?,
                median: r.get(8)?,
                ci: low.zip(high),
            })
        })
        .and_then(|it| it.collect())
        .map_err(fail)
    }

    /// The latest run (by start time) with `label`.
    pub fn latest_with_label(&self, label: &str) -> Result<Option<i64>> {
        self.conn
            .query_row(
                "SELECT id FROM runs WHERE label = ?1 ORDER BY started DESC, id DESC LIMIT 1",
                [label],
                |r| r.get(0),
            )
            .optional()
            .map_err(store_error(&self.path))
    }
}

/// Brings the store to [`SCHEMA_VERSION`]; the version is read and the steps
/// applied inside one write transaction, so concurrent openers migrate once.
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let fail = store_error(path);
    let version =
        |c: &Connection| c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0));
    if version(conn).map_err(fail)? == SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    let from = version(&tx).map_err(fail)?;
    if from > SCHEMA_VERSION {
        return Err(Error::Store {
            path: path.display().to_string(),
            message: format!(
                "schema version {from} was written by a newer osbench (this one knows up to \
                 {SCHEMA_VERSION}); use that osbench or another --store"
            ),
        });
    }
    for step in &MIGRATIONS[from.max(0) as usize..] {
        step(&tx).map_err(fail)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(fail)?;
    tx.commit().map_err(fail)
}

/// Turns an SQLite error into one naming the store.
fn store_error(path: &Path) -> impl Fn(rusqlite::Error) -> Error + Copy + '_ {
    move |e| Error::Store {
        path: path.display().to_string(),
        message: match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase) => {
                "not an SQLite database (give another --store)".into()
            }
            // SQLite does not say why it could not open; a descriptor limit is one cause.
            Some(rusqlite::ErrorCode::CannotOpen) => match descriptor_shortage() {
                Some(hint) => format!("{e}: {hint}"),
                None => e.to_string(),
            },
            _ => e.to_string(),
        },
    }
}

/// Why no file can be opened now, if that is the open-file limit.
fn descriptor_shortage() -> Option<String> {
    match std::fs::File::open("/dev/null") {
        Ok(_) => None,
        Err(e) => crate::measure::supervise::limit_hint(&e),
    }
}

/// The JSON `text` with keys sorted and no spaces, so equal documents compare equal.
fn canonical_json(text: &str) -> String {
    serde_json::from_str::<Value>(text).map_or_else(|_| text.to_string(), |v| v.to_string())
}

/// 64-bit FNV-1a: a stable fingerprint to find candidate duplicates (equality is then checked).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("results.sqlite");
        (dir, path)
    }

    /// The fixture with another start time and label (a different run).
    fn variant(i: usize) -> Document {
        let mut doc = super::super::fixture().1;
        doc.run.started = format!("2026-11-30T09:00:{:02}Z", i % 60);
        doc.run.label = Some(format!("v{i}"));
        doc
    }

    #[test]
    fn a_stored_run_reads_back_identical_and_is_listed() {
        let (_dir, path) = temp_store();
        let (_, doc) = super::super::fixture();
        let mut store = Store::open(&path).unwrap();
        let id = store.insert(&doc).unwrap();
        assert_eq!(id, Inserted::New(1));
        assert_eq!(store.document(1).unwrap().unwrap(), doc);
        assert_eq!(store.document(2).unwrap(), None);
        let rows = store.list(&Filter::default()).unwrap();
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.label.as_deref(), Some("fixture | <b>run</b>"));
        assert_eq!(
            (row.kernel.as_str(), row.hostname.as_str(), row.complete),
            ("6.18.44-test", "testhost", true)
        );
        assert_eq!(
            row.cases,
            [
                "syscall null [base]",
                "wakeup futex/threads [base]",
                "syscall null [patched, \"v2\"]",
                "wakeup futex/threads [patched, \"v2\"]"
            ]
        );
        // The file is SQLite, at the schema version.
        drop(store);
        let head = std::fs::read(&path).unwrap();
        assert!(head.starts_with(b"SQLite format 3\0"));
        let conn = Connection::open(&path).unwrap();
        let v: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
    }

    #[test]
    fn the_same_document_is_stored_once_whatever_its_whitespace() {
        let (_dir, path) = temp_store();
        let (text, doc) = super::super::fixture();
        let mut store = Store::open(&path).unwrap();
        assert_eq!(store.import(&doc, text).unwrap(), Inserted::New(1));
        assert_eq!(store.import(&doc, text).unwrap(), Inserted::Existing(1));
        let compact = serde_json::to_string(&serde_json::from_str::<Value>(text).unwrap()).unwrap();
        assert_eq!(store.import(&doc, &compact).unwrap(), Inserted::Existing(1));
        // The run measured here serialises the same document: also a duplicate.
        assert_eq!(store.insert(&doc).unwrap(), Inserted::Existing(1));
        // Another label is another document.
        let mut relabelled = doc.clone();
        relabelled.run.label = Some("other".into());
        assert_eq!(store.insert(&relabelled).unwrap(), Inserted::New(2));
        // Imported text is kept as written.
        assert_eq!(store.document_text(1).unwrap().unwrap(), text);
    }

    #[test]
    fn filters_select_by_bench_label_and_kernel() {
        let (_dir, path) = temp_store();
        let mut store = Store::open(&path).unwrap();
        let mut a = variant(1);
        a.env.kernel = "6.1.0-old".into();
        a.series.retain(|s| s.bench == "syscall");
        store.insert(&a).unwrap();
        store.insert(&variant(2)).unwrap();
        store.insert(&variant(3)).unwrap();
        let ids =
            |f: Filter| -> Vec<i64> { store.list(&f).unwrap().iter().map(|r| r.id).collect() };
        assert_eq!(ids(Filter::default()), [1, 2, 3]);
        let bench = |b: &str| Filter {
            bench: Some(b.into()),
            ..Filter::default()
        };
        assert_eq!(ids(bench("wakeup")), [2, 3]);
        assert_eq!(ids(bench("syscall")), [1, 2, 3]);
        assert_eq!(ids(bench("ctx")), Vec::<i64>::new());
        let label = Filter {
            label: Some("v2".into()),
            ..Filter::default()
        };
        assert_eq!(ids(label), [2]);
        let kernel = Filter {
            kernel: Some("6.1.".into()),
            ..Filter::default()
        };
        assert_eq!(ids(kernel), [1]);
    }

    #[test]
    fn the_latest_run_of_a_label_wins() {
        let (_dir, path) = temp_store();
        let mut store = Store::open(&path).unwrap();
        let mut later = variant(5);
        later.run.label = Some("x".into());
        let mut earlier = variant(4);
        earlier.run.label = Some("x".into());
        store.insert(&later).unwrap();
        store.insert(&earlier).unwrap(); // stored second, measured first
        assert_eq!(store.latest_with_label("x").unwrap(), Some(1));
        assert_eq!(store.latest_with_label("y").unwrap(), None);
    }

    #[test]
    fn a_case_history_is_in_time_order_with_each_runs_interval() {
        let (_dir, path) = temp_store();
        let mut store = Store::open(&path).unwrap();
        // Stored out of order: run 1 started last.
        let mut late = variant(9);
        late.env.hostname = "other".into();
        store.insert(&late).unwrap();
        store.insert(&variant(3)).unwrap();
        store.insert(&variant(5)).unwrap();
        let (_, fixture) = super::super::fixture();
        let base = fixture
            .series
            .iter()
            .find(|s| s.case == "null" && s.config == "base")
            .unwrap();
        let all = store.case_history("syscall", "null", None, None).unwrap();
        let ids: Vec<(i64, &str)> = all.iter().map(|r| (r.run_id, r.config.as_str())).collect();
        assert_eq!(
            ids,
            [
                (2, "base"),
                (2, "patched, \"v2\""),
                (3, "base"),
                (3, "patched, \"v2\""),
                (1, "base"),
                (1, "patched, \"v2\"")
            ]
        );
        let first = &all[0];
        assert_eq!(first.label.as_deref(), Some("v3"));
        assert_eq!(first.unit, "ns");
        assert_eq!(first.n, base.summary.n as i64);
        assert_eq!(first.median, base.summary.median);
        assert_eq!(first.ci, Some((base.summary.ci_low, base.summary.ci_high)));
        let base_only = store
            .case_history("syscall", "null", Some("base"), Some("testhost"))
            .unwrap();
        let ids: Vec<i64> = base_only.iter().map(|r| r.run_id).collect();
        assert_eq!(ids, [2, 3]);
        assert!(
            store
                .case_history("syscall", "nope", None, None)
                .unwrap()
                .is_empty()
        );
        assert!(
            store
                .case_history("ctx", "null", None, None)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_version_1_store_is_migrated_and_its_series_indexed() {
        let (_dir, path) = temp_store();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let (text, _) = super::super::fixture();
        {
            // A version 1 store as osbench 0.1 wrote it, made by hand.
            let mut conn = Connection::open(&path).unwrap();
            let tx = conn.transaction().unwrap();
            create_runs(&tx).unwrap();
            tx.execute(
                "INSERT INTO runs (label, started, finished, complete, kernel, hostname,
                    osbench_version, origin, stored, fingerprint, document)
                 VALUES ('old', '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', 1, 'k', 'h',
                    '0.1.0', 'run', '2026-01-01T00:00:02Z', 'x', ?1)",
                [text],
            )
            .unwrap();
            tx.pragma_update(None, "user_version", 1).unwrap();
            tx.commit().unwrap();
        }
        let store = Store::open(&path).unwrap();
        let v: i64 = store
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let rows = store.list(&Filter::default()).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].label.as_deref(), Some("old"));
        assert_eq!(
            rows[0].cases.len(),
            4,
            "series indexed from the stored document"
        );
        let median: f64 = store
            .conn
            .query_row(
                "SELECT median FROM series WHERE run_id = 1 AND position = 2",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(median, 90.25);
        let wakeup = Filter {
            bench: Some("wakeup".into()),
            ..Filter::default()
        };
        assert_eq!(store.list(&wakeup).unwrap().len(), 1);
    }

    #[test]
    fn a_newer_schema_or_another_file_is_refused_with_a_reason() {
        let (_dir, path) = temp_store();
        drop(Store::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        let e = Store::open(&path).err().unwrap().to_string();
        assert!(e.contains("newer osbench"), "{e}");

        let text = path.with_file_name("notes.txt");
        std::fs::write(
            &text,
            "not a database, just some text that is long enough ".repeat(20),
        )
        .unwrap();
        let e = Store::open(&text).err().unwrap().to_string();
        assert!(e.contains("not an SQLite database"), "{e}");
        let e = Store::open_existing(&path.with_file_name("none.sqlite"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("no results store here yet"), "{e}");
    }

    #[test]
    fn concurrent_writers_all_succeed() {
        let (_dir, path) = temp_store();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let path = path.clone();
                std::thread::spawn(move || {
                    // Each thread opens its own connection, as separate processes would,
                    // including the first open that creates and migrates the store.
                    let mut store = Store::open(&path).unwrap();
                    for i in 0..10 {
                        store.insert(&variant(t * 10 + i)).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(store.list(&Filter::default()).unwrap().len(), 40);
    }

    #[test]
    fn fingerprints_are_stable() {
        // FNV-1a 64 reference values (draft-eastlake-fnv).
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
