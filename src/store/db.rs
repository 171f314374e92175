//! The results store as the rest of osbench sees it: [`Store`] (open, insert,
//! import, list, documents, labels, per-run medians), wherever it lives — an
//! SQLite file ([`super::sqlite`], the embedded default) or a PostgreSQL
//! database ([`super::postgres`], shared by many hosts). Which one is decided
//! by the [`Location`] alone; nothing outside `store/` knows.
//!
//! The schema, its versioned migrations and every query are written once
//! here, in one SQL spelling (`$N` parameters, dialect words in braces that
//! [`Dialect::sql`] fills in), and run by both back ends through the small
//! [`Conn`] interface. Each stored run keeps its whole result document as
//! text plus the columns `history` filters on and one row per series.
//! Importing the same document twice stores it once: runs carry the SHA-256 of
//! the canonical JSON under a unique constraint, so two writers racing to
//! store it cannot both succeed.
//! Left out: deleting or editing runs (SQL on the store does that).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::document::{DEFAULT_CONFIG, Document, utc_now};
use crate::error::{Error, Result};

use super::postgres::{self, PgUrl};
use super::sqlite;

/// The environment variable naming the store when `--store` is not given.
pub const STORE_ENV: &str = "OSBENCH_STORE";

/// Where a store lives: an SQLite file, or a PostgreSQL database named by a
/// `postgresql://` (or `postgres://`) URL. Shown, the URL has no password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Postgres(PgUrl),
}

impl Location {
    /// A store path or URL as given on the command line or in `OSBENCH_STORE`.
    pub fn new(given: &Path) -> Self {
        match given.to_str().and_then(PgUrl::recognise) {
            Some(url) => Location::Postgres(url),
            None => Location::File(given.to_path_buf()),
        }
    }

    /// Whether there may be runs stored here: the file exists, or (a
    /// server) always — connecting tells.
    pub fn exists(&self) -> bool {
        match self {
            Location::File(path) => path.exists(),
            Location::Postgres(_) => true,
        }
    }

    /// For messages: the path, or the URL without its password.
    pub fn display(&self) -> &Self {
        self
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Location::new(path)
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Self {
        Location::new(path)
    }
}

impl From<PathBuf> for Location {
    fn from(path: PathBuf) -> Self {
        Location::new(&path)
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Self {
        location.clone()
    }
}

/// Where the store is: `explicit` (`--store`), else `$OSBENCH_STORE`, else
/// `$XDG_DATA_HOME/osbench/results.sqlite`, else
/// `~/.local/share/osbench/results.sqlite`. A `postgresql://` URL in either
/// of the first two names a PostgreSQL database.
pub fn location(explicit: Option<&Path>) -> Result<Location> {
    if let Some(p) = explicit {
        return Ok(Location::new(p));
    }
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = var(STORE_ENV) {
        return Ok(Location::new(Path::new(&p)));
    }
    // The XDG base directory spec ignores relative values.
    let data_home = var("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    match data_home {
        Some(dir) => Ok(Location::File(dir.join("osbench").join("results.sqlite"))),
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
    /// Runs measured on exactly this host name.
    pub host: Option<String>,
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

/// A query parameter, as both back ends bind it.
#[derive(Debug, Clone)]
pub(super) enum Param {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(Option<String>),
}

impl From<&str> for Param {
    fn from(s: &str) -> Self {
        Param::Text(Some(s.to_string()))
    }
}

impl From<&Option<String>> for Param {
    fn from(s: &Option<String>) -> Self {
        Param::Text(s.clone())
    }
}

impl From<Option<&str>> for Param {
    fn from(s: Option<&str>) -> Self {
        Param::Text(s.map(str::to_string))
    }
}

/// A value read from a row.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

/// One row of a result, its cells in column order.
pub(super) struct Row(pub Vec<Cell>);

impl Row {
    fn cell(&self, i: usize) -> &Cell {
        self.0.get(i).unwrap_or(&Cell::Null)
    }
    fn int(&self, i: usize) -> std::result::Result<i64, String> {
        match self.cell(i) {
            Cell::Int(v) => Ok(*v),
            other => Err(format!("column {i}: expected an integer, found {other:?}")),
        }
    }
    fn float(&self, i: usize) -> std::result::Result<f64, String> {
        match self.cell(i) {
            Cell::Float(v) => Ok(*v),
            Cell::Int(v) => Ok(*v as f64),
            // SQLite stores NaN as NULL.
            Cell::Null => Ok(f64::NAN),
            other => Err(format!("column {i}: expected a number, found {other:?}")),
        }
    }
    fn bool(&self, i: usize) -> std::result::Result<bool, String> {
        match self.cell(i) {
            Cell::Bool(v) => Ok(*v),
            Cell::Int(v) => Ok(*v != 0),
            other => Err(format!("column {i}: expected a boolean, found {other:?}")),
        }
    }
    fn opt_text(&self, i: usize) -> std::result::Result<Option<String>, String> {
        match self.cell(i) {
            Cell::Text(v) => Ok(Some(v.clone())),
            Cell::Null => Ok(None),
            other => Err(format!("column {i}: expected text, found {other:?}")),
        }
    }
    fn text(&self, i: usize) -> std::result::Result<String, String> {
        self.opt_text(i)?
            .ok_or_else(|| format!("column {i}: expected text, found NULL"))
    }
}

/// The SQL spelling of a back end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// `shared` SQL in this dialect: `{id}` (an identity primary key), `{int}`
    /// (64-bit), `{float}` (double), `{bool}` and `{instr}` (the 1-based
    /// position of a substring) are replaced; SQLite gets `?N` for `$N`.
    pub(super) fn sql(self, shared: &str) -> String {
        let words: [(&str, &str); 5] = match self {
            Dialect::Sqlite => [
                ("{id}", "INTEGER PRIMARY KEY AUTOINCREMENT"),
                ("{int}", "INTEGER"),
                ("{float}", "REAL"),
                ("{bool}", "INTEGER"),
                ("{instr}", "instr"),
            ],
            Dialect::Postgres => [
                (
                    "{id}",
                    "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
                ),
                ("{int}", "BIGINT"),
                ("{float}", "DOUBLE PRECISION"),
                ("{bool}", "BOOLEAN"),
                ("{instr}", "strpos"),
            ],
        };
        let mut sql = shared.to_string();
        for (word, spelled) in words {
            sql = sql.replace(word, spelled);
        }
        // {summary:FIELD}: the stored document's `series[position].summary.FIELD`
        // (SQLite's JSON path is built with char(36), '$', which would be
        // taken for a parameter below).
        while let Some(start) = sql.find("{summary:") {
            let end = start + sql[start..].find('}').expect("a closed {summary:FIELD}");
            let field = sql[start + "{summary:".len()..end].to_string();
            let spelled = match self {
                Dialect::Sqlite => format!(
                    "json_extract(runs.document, char(36) || '.series[' || series.position || \
                     '].summary.{field}')"
                ),
                Dialect::Postgres => format!(
                    "((runs.document::jsonb) #>> ARRAY['series', series.position::text, \
                     'summary', '{field}'])::float8"
                ),
            };
            sql.replace_range(start..=end, &spelled);
        }
        if self == Dialect::Sqlite {
            sql = sql.replace('$', "?");
        }
        sql
    }
}

/// A connection to one back end, speaking the shared SQL.
pub(super) trait Conn {
    fn dialect(&self) -> Dialect;
    /// The store's name for messages (path, or URL without password).
    fn name(&self) -> String;
    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>>;
    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64>;
    /// Several statements, no parameters.
    fn batch(&mut self, sql: &str) -> Result<()>;
    /// Starts a write transaction; SQLite takes its write lock at once.
    fn begin(&mut self) -> Result<()>;
    /// Waits until no other process migrates this store (before the
    /// migration's transaction begins, so that it sees what they did).
    fn lock_migrations(&mut self) -> Result<()>;
    fn unlock_migrations(&mut self);
    fn commit(&mut self) -> Result<()>;
    fn rollback(&mut self);
    /// The schema version stored (0: a new, empty store).
    fn schema_version(&mut self) -> Result<i64>;
    fn set_schema_version(&mut self, version: i64) -> Result<()>;
}

/// Runs `work` inside a transaction; rolls back on error.
fn transaction<C: Conn + ?Sized, T>(
    conn: &mut C,
    work: impl FnOnce(&mut C) -> Result<T>,
) -> Result<T> {
    conn.begin()?;
    match work(conn) {
        Ok(value) => {
            conn.commit()?;
            Ok(value)
        }
        Err(e) => {
            conn.rollback();
            Err(e)
        }
    }
}

/// A data step some migrations need after their SQL.
#[derive(Debug, Clone, Copy)]
enum Backfill {
    /// Fill `series` from the stored documents.
    IndexSeries,
    /// Recompute every run's fingerprint (SHA-256 of the canonical JSON).
    Refingerprint,
}

/// One schema step: `before`, then the data step, then `after`.
struct Migration {
    before: &'static str,
    backfill: Option<Backfill>,
    after: &'static str,
}

/// Every migration in order; the schema version is `MIGRATIONS.len()`.
const MIGRATIONS: &[Migration] = &[
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

fn refingerprint<C: Conn + ?Sized>(conn: &mut C) -> Result<()> {
    for (id, text) in stored_documents(conn)? {
        conn.execute(
            "UPDATE runs SET fingerprint = $1 WHERE id = $2",
            &[Param::Text(Some(fingerprint(&text))), Param::Int(id)],
        )?;
    }
    Ok(())
}

/// Most series rows one statement inserts (8 parameters each, far below
/// either back end's limit).
const SERIES_PER_INSERT: usize = 100;

/// Adds the `series` rows of run `id` from its document (several rows per
/// statement: one round trip to a server for a document's series).
fn index_series<C: Conn + ?Sized>(conn: &mut C, id: i64, doc: &Value) -> Result<()> {
    let series = doc["series"].as_array().map_or(&[][..], Vec::as_slice);
    let rows: Vec<[Param; 8]> = series
        .iter()
        .enumerate()
        .map(|(position, s)| {
            let text = |key: &str| Param::Text(Some(s[key].as_str().unwrap_or("").to_string()));
            [
                Param::Int(id),
                Param::Int(position as i64),
                text("bench"),
                text("case"),
                s["config"].as_str().unwrap_or(DEFAULT_CONFIG).into(),
                text("unit"),
                Param::Int(s["summary"]["n"].as_i64().unwrap_or(0)),
                Param::Float(s["summary"]["median"].as_f64().unwrap_or(f64::NAN)),
            ]
        })
        .collect();
    for chunk in rows.chunks(SERIES_PER_INSERT) {
        let values: Vec<String> = (0..chunk.len())
            .map(|r| {
                let n: Vec<String> = (1..=8).map(|c| format!("${}", r * 8 + c)).collect();
                format!("({})", n.join(", "))
            })
            .collect();
        conn.execute(
            &format!(
                "INSERT INTO series (run_id, position, bench, case_name, config, unit, n, median)
                 VALUES {}",
                values.join(", ")
            ),
            &chunk.concat(),
        )?;
    }
    Ok(())
}

fn bad_row(name: &str, message: String) -> Error {
    Error::Store {
        path: name.to_string(),
        message: format!("unexpected data ({message}); is this an osbench store?"),
    }
}

/// The runs a [`Filter`] selects (`$1` label, `$2` kernel text, `$3` bench, `$4` host).
const FILTER: &str = "(CAST($1 AS TEXT) IS NULL OR label = $1)
       AND (CAST($2 AS TEXT) IS NULL OR {instr}(kernel, $2) > 0)
       AND (CAST($3 AS TEXT) IS NULL OR EXISTS
             (SELECT 1 FROM series WHERE run_id = runs.id AND bench = $3))
       AND (CAST($4 AS TEXT) IS NULL OR hostname = $4)";

/// An open results store.
pub struct Store {
    /// Behind a lock so that reading needs only `&self` (a PostgreSQL
    /// client needs `&mut` even to read).
    conn: Mutex<Box<dyn Conn + Send>>,
    location: Location,
}

impl Store {
    /// Opens the store at `location`, creating it (an SQLite file and its
    /// directory, or the tables in a PostgreSQL database) if missing, and
    /// migrates it to [`SCHEMA_VERSION`].
    pub fn open(location: impl Into<Location>) -> Result<Self> {
        Self::connect(location.into(), true)
    }

    /// Opens an existing store; a missing SQLite file is an error that says so.
    pub fn open_existing(location: impl Into<Location>) -> Result<Self> {
        Self::connect(location.into(), false)
    }

    fn connect(location: Location, create: bool) -> Result<Self> {
        let mut conn: Box<dyn Conn + Send> = match &location {
            Location::File(path) => Box::new(sqlite::SqliteConn::open(path, create)?),
            Location::Postgres(url) => Box::new(postgres::PgConn::connect(url)?),
        };
        migrate(conn.as_mut())?;
        Ok(Self {
            conn: Mutex::new(conn),
            location,
        })
    }

    /// The connection (a panic elsewhere while it was held leaves it usable:
    /// every write is a transaction the server rolls back).
    fn conn(&self) -> MutexGuard<'_, Box<dyn Conn + Send>> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where this store is.
    pub fn location(&self) -> &Location {
        &self.location
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

    /// Stores documents read from files (as [`Store::import`] does) in one
    /// transaction: all of them, or (on an error) none.
    pub fn import_all<'a>(
        &mut self,
        docs: impl IntoIterator<Item = (&'a Document, &'a str)>,
    ) -> Result<Vec<Inserted>> {
        let mut conn = self.conn();
        transaction(conn.as_mut(), |conn| {
            docs.into_iter()
                .map(|(doc, text)| store_one(conn, doc, text, "import"))
                .collect()
        })
    }

    fn insert_text(&mut self, doc: &Document, text: &str, origin: &str) -> Result<Inserted> {
        let mut conn = self.conn();
        transaction(conn.as_mut(), |conn| store_one(conn, doc, text, origin))
    }

    /// The runs matching `filter`, oldest id first.
    pub fn list(&self, filter: &Filter) -> Result<Vec<RunRow>> {
        let params = [
            (&filter.label).into(),
            (&filter.kernel).into(),
            (&filter.bench).into(),
            (&filter.host).into(),
        ];
        let mut conn = self.conn();
        let runs = conn.query(
            &format!(
                "SELECT id, label, started, finished, complete, kernel, hostname,
                        osbench_version, origin
                 FROM runs WHERE {FILTER} ORDER BY id"
            ),
            &params,
        )?;
        let cases = conn.query(
            &format!(
                "SELECT run_id, bench, case_name, config FROM series
                 WHERE run_id IN (SELECT id FROM runs WHERE {FILTER})
                 ORDER BY run_id, position"
            ),
            &params,
        )?;
        let name = conn.name();
        run_rows(&runs, &cases).map_err(|m| bad_row(&name, m))
    }

    /// The document of run `id` as stored (JSON text), if there is such a run.
    pub fn document_text(&self, id: i64) -> Result<Option<String>> {
        let mut conn = self.conn();
        let rows = conn.query("SELECT document FROM runs WHERE id = $1", &[Param::Int(id)])?;
        let name = conn.name();
        rows.first()
            .map(|r| r.text(0))
            .transpose()
            .map_err(|m| bad_row(&name, m))
    }

    /// The document of run `id`, if there is such a run.
    pub fn document(&self, id: i64) -> Result<Option<Document>> {
        let Some(text) = self.document_text(id)? else {
            return Ok(None);
        };
        let origin = format!("{} run {id}", self.location);
        super::parse_document(&text, &origin).map(Some)
    }

    /// The latest run (by start time) with `label`.
    pub fn latest_with_label(&self, label: &str) -> Result<Option<i64>> {
        let mut conn = self.conn();
        let rows = conn.query(
            "SELECT id FROM runs WHERE label = $1 ORDER BY started DESC, id DESC LIMIT 1",
            &[label.into()],
        )?;
        let name = conn.name();
        rows.first()
            .map(|r| r.int(0))
            .transpose()
            .map_err(|m| bad_row(&name, m))
    }

    /// The series of `bench` `case` in every stored run (of `config` and on
    /// `host` when given), oldest start first, with each median's interval
    /// read from the stored document.
    pub fn case_history(
        &self,
        bench: &str,
        case: &str,
        config: Option<&str>,
        host: Option<&str>,
    ) -> Result<Vec<CaseRun>> {
        let mut conn = self.conn();
        let rows = conn.query(
            "SELECT runs.id, runs.started, runs.label, runs.hostname, runs.kernel, series.config,
                    series.unit, series.n, series.median, {summary:ci_low}, {summary:ci_high}
             FROM series JOIN runs ON runs.id = series.run_id
             WHERE series.bench = $1 AND series.case_name = $2
               AND (CAST($3 AS TEXT) IS NULL OR series.config = $3)
               AND (CAST($4 AS TEXT) IS NULL OR runs.hostname = $4)
             ORDER BY runs.started, runs.id, series.position",
            &[bench.into(), case.into(), config.into(), host.into()],
        )?;
        let name = conn.name();
        rows.iter()
            .map(|r| {
                let (low, high) = (r.float(9)?, r.float(10)?);
                Ok(CaseRun {
                    run_id: r.int(0)?,
                    started: r.text(1)?,
                    label: r.opt_text(2)?,
                    hostname: r.text(3)?,
                    kernel: r.text(4)?,
                    config: r.text(5)?,
                    unit: r.text(6)?,
                    n: r.int(7)?,
                    median: r.float(8)?,
                    ci: (low.is_finite() && high.is_finite()).then_some((low, high)),
                })
            })
            .collect::<std::result::Result<_, String>>()
            .map_err(|m| bad_row(&name, m))
    }
}

/// Stores one document inside the caller's transaction; the same document
/// already stored (or being stored by a concurrent writer) is not stored again.
fn store_one(
    conn: &mut (dyn Conn + Send),
    doc: &Document,
    text: &str,
    origin: &str,
) -> Result<Inserted> {
    let print = fingerprint(text);
    let params = [
        (&doc.run.label).into(),
        doc.run.started.as_str().into(),
        doc.run.finished.as_str().into(),
        Param::Bool(doc.run.complete),
        doc.env.kernel.as_str().into(),
        doc.host().into(),
        doc.tool.version.as_str().into(),
        origin.into(),
        utc_now().as_str().into(),
        print.as_str().into(),
        text.into(),
    ];
    let name = conn.name();
    let stored = |conn: &mut (dyn Conn + Send)| -> Result<Option<i64>> {
        let rows = conn.query(
            "SELECT id FROM runs WHERE fingerprint = $1",
            &[print.as_str().into()],
        )?;
        rows.first()
            .map(|r| r.int(0))
            .transpose()
            .map_err(|m| bad_row(&name, m))
    };
    // Looked up first so that a duplicate uses up no id.
    if let Some(id) = stored(conn)? {
        return Ok(Inserted::Existing(id));
    }
    // A concurrent writer of the same document makes this insert
    // nothing (the unique fingerprint), never a second copy.
    let new = conn.query(
        "INSERT INTO runs (label, started, finished, complete, kernel, hostname,
                               osbench_version, origin, stored, fingerprint, document)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
             ON CONFLICT (fingerprint) DO NOTHING RETURNING id",
        &params,
    )?;
    if let Some(row) = new.first() {
        let id = row.int(0).map_err(|m| bad_row(&name, m))?;
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        index_series(conn, id, &value)?;
        return Ok(Inserted::New(id));
    }
    match stored(conn)? {
        Some(id) => Ok(Inserted::Existing(id)),
        None => Err(Error::Store {
            path: name.clone(),
            message: "the document was neither stored nor found stored; try again".into(),
        }),
    }
}

/// Runs (id, label, started, finished, complete, kernel, hostname, version,
/// origin) and their series (run id, bench, case, config; ordered by run id)
/// as [`RunRow`]s.
fn run_rows(runs: &[Row], cases: &[Row]) -> std::result::Result<Vec<RunRow>, String> {
    let mut cases = cases.iter().peekable();
    let mut out = Vec::with_capacity(runs.len());
    for r in runs {
        let mut row = RunRow {
            id: r.int(0)?,
            label: r.opt_text(1)?,
            started: r.text(2)?,
            finished: r.text(3)?,
            complete: r.bool(4)?,
            kernel: r.text(5)?,
            hostname: r.text(6)?,
            osbench_version: r.text(7)?,
            origin: r.text(8)?,
            cases: Vec::new(),
        };
        while let Some(c) = cases.next_if(|c| c.int(0).is_ok_and(|id| id <= row.id)) {
            if c.int(0)? < row.id {
                continue;
            }
            let (bench, case, config) = (c.text(1)?, c.text(2)?, c.text(3)?);
            row.cases.push(if config == DEFAULT_CONFIG {
                format!("{bench} {case}")
            } else {
                format!("{bench} {case} [{config}]")
            });
        }
        out.push(row);
    }
    Ok(out)
}

/// The SHA-256 (hex) of the JSON `text` with keys sorted and no spaces, so
/// equal documents have equal fingerprints however they were written.
pub(super) fn fingerprint(text: &str) -> String {
    let canonical =
        serde_json::from_str::<Value>(text).map_or_else(|_| text.to_string(), |v| v.to_string());
    Sha256::digest(canonical.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_sql_is_spelled_per_dialect() {
        let shared = "CREATE TABLE t (id {id}, n {int}, x {float}, b {bool});
                      SELECT {instr}(a, $1) FROM t WHERE n = $2";
        let lite = Dialect::Sqlite.sql(shared);
        assert!(lite.contains("id INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER, x REAL"));
        assert!(
            lite.contains("SELECT instr(a, ?1) FROM t WHERE n = ?2"),
            "{lite}"
        );
        let pg = Dialect::Postgres.sql(shared);
        assert!(
            pg.contains("n BIGINT, x DOUBLE PRECISION, b BOOLEAN"),
            "{pg}"
        );
        assert!(
            pg.contains("SELECT strpos(a, $1) FROM t WHERE n = $2"),
            "{pg}"
        );
        for step in MIGRATIONS {
            for sql in [step.before, step.after] {
                for d in [Dialect::Sqlite, Dialect::Postgres] {
                    assert!(!d.sql(sql).contains('{'), "unspelled word in {sql}");
                }
            }
        }
    }

    #[test]
    fn fingerprints_ignore_whitespace_and_key_order() {
        let a = fingerprint(r#"{"b": 1, "a": [1, 2]}"#);
        assert_eq!(a, fingerprint(r#"{"a":[1,2],"b":1}"#));
        assert_ne!(a, fingerprint(r#"{"a":[2,1],"b":1}"#));
        // SHA-256 of the empty string (FIPS 180-2 test vector), for non-JSON text.
        assert_eq!(
            fingerprint(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn locations_tell_urls_from_paths_and_hide_passwords() {
        let file = Location::new(Path::new("results.sqlite"));
        assert_eq!(file, Location::File("results.sqlite".into()));
        let pg = Location::new(Path::new("postgresql://me:s3cret@db.example:5433/osbench"));
        assert!(matches!(pg, Location::Postgres(_)));
        assert_eq!(pg.to_string(), "postgresql://me@db.example:5433/osbench");
        assert!(Location::new(Path::new("POSTGRES://h/db")).exists());
        let typo = Location::new(Path::new("postgresql:/h/db"));
        assert!(matches!(typo, Location::Postgres(_)), "{typo:?}");
        // A relative directory that happens to be called postgres is a path.
        assert!(matches!(
            Location::new(Path::new("postgres/results.sqlite")),
            Location::File(_)
        ));
    }
}
