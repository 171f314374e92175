//! The results store as the rest of osbench sees it: [`Store`] (open, insert,
//! import, list, documents, labels, per-run medians), wherever it lives — an
//! SQLite file ([`super::sqlite`], the embedded default) or a PostgreSQL
//! database ([`super::postgres`], shared by many hosts). Which one is decided
//! by the [`Location`] alone; nothing outside `store/` knows.
//!
//! Each stored run keeps its whole result document as text plus the columns
//! `history` filters on and one row per series (the schema is
//! `super::migrations`', the SQL layer `super::sql`). Importing the same
//! document twice stores it once: runs carry the SHA-256 of the canonical
//! JSON under a unique constraint, so two writers racing to store it cannot
//! both succeed.
//! Runs can be removed ([`Store::remove`]) and relabelled
//! ([`Store::relabel`]); nothing else of a stored run changes.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use crate::document::{CaseKey, Document, utc_now};
use crate::error::{Error, Result};

use super::index::{experiment_key, fingerprint, index_meta, index_series};
use super::location::Location;
use super::migrations::migrate;
use super::postgres;
use super::sql::{Conn, Param, Row, bad_row, transaction};
use super::sqlite;

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
    /// Each series as "bench case" (with " \[config\]" when not "default"), in document order.
    pub cases: Vec<String>,
    /// The run's `--meta` pairs.
    pub meta: BTreeMap<String, String>,
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
    /// The experiment the configuration belongs to (its configurations'
    /// names and a digest, `a,b #1f0c3a9e`; empty in a run without them).
    pub experiment: String,
    /// The series' unit as documents name it ("ns", "us", "s").
    pub unit: String,
    /// Samples behind the median.
    pub n: i64,
    pub median: f64,
    /// The 95 % interval of the median, from the stored document's summary
    /// (`None` where the document has none).
    pub ci: Option<(f64, f64)>,
    /// Whether the case's samples in this run fell in two clusters (the
    /// document's "bimodal" noise flag).
    pub bimodal: bool,
    /// The run's `--meta` pairs.
    pub meta: BTreeMap<String, String>,
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
    /// Runs with a series of at least this many samples (`history --min-samples`).
    pub min_samples: Option<i64>,
    /// Runs with every one of these `--meta` pairs.
    pub meta: Vec<(String, String)>,
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

/// The runs a [`Filter`] selects (`$1` label, `$2` kernel text, `$3` bench,
/// `$4` host, `$5` fewest samples, 0 for any).
const FILTER: &str = "(CAST($1 AS TEXT) IS NULL OR label = $1)
       AND (CAST($2 AS TEXT) IS NULL OR {instr}(kernel, $2) > 0)
       AND (CAST($3 AS TEXT) IS NULL OR EXISTS
             (SELECT 1 FROM series WHERE run_id = runs.id AND bench = $3))
       AND (CAST($4 AS TEXT) IS NULL OR hostname = $4)
       AND (CAST($5 AS {int}) = 0 OR EXISTS
             (SELECT 1 FROM series WHERE run_id = runs.id AND n >= $5))";

/// [`FILTER`] and its parameters, with one condition per `--meta` pair
/// (parameters from `$6` on).
fn filter_sql(filter: &Filter) -> (String, Vec<Param>) {
    let mut sql = FILTER.to_string();
    let mut params: Vec<Param> = vec![
        (&filter.label).into(),
        (&filter.kernel).into(),
        (&filter.bench).into(),
        (&filter.host).into(),
        Param::Int(filter.min_samples.unwrap_or(0)),
    ];
    for (name, value) in &filter.meta {
        let n = params.len();
        sql.push_str(&format!(
            "\n       AND EXISTS (SELECT 1 FROM run_meta WHERE run_meta.run_id = runs.id
                         AND run_meta.name = ${} AND run_meta.value = ${})",
            n + 1,
            n + 2
        ));
        params.push(name.as_str().into());
        params.push(value.as_str().into());
    }
    (sql, params)
}

/// The `--meta` pairs of the runs `runs_sql` (a query of run ids) selects, by run id.
fn meta_of(
    conn: &mut (dyn Conn + Send),
    runs_sql: &str,
    params: &[Param],
) -> Result<BTreeMap<i64, BTreeMap<String, String>>> {
    let rows = conn.query(
        &format!(
            "SELECT run_id, name, value FROM run_meta WHERE run_id IN ({runs_sql})
             ORDER BY run_id, name"
        ),
        params,
    )?;
    let name = conn.name();
    let mut out: BTreeMap<i64, BTreeMap<String, String>> = BTreeMap::new();
    for r in &rows {
        let (id, key, value) = (|| Ok((r.int(0)?, r.text(1)?, r.text(2)?)))()
            .map_err(|m: String| bad_row(&name, m))?;
        out.entry(id).or_default().insert(key, value);
    }
    Ok(out)
}

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
    /// migrates it to [`SCHEMA_VERSION`](super::SCHEMA_VERSION).
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
    pub(super) fn conn(&self) -> MutexGuard<'_, Box<dyn Conn + Send>> {
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
        let (filter, params) = filter_sql(filter);
        let mut conn = self.conn();
        let runs = conn.query(
            &format!(
                "SELECT id, label, started, finished, complete, kernel, hostname,
                        osbench_version, origin
                 FROM runs WHERE {filter} ORDER BY id"
            ),
            &params,
        )?;
        let cases = conn.query(
            &format!(
                "SELECT run_id, bench, case_name, config FROM series
                 WHERE run_id IN (SELECT id FROM runs WHERE {filter})
                 ORDER BY run_id, position"
            ),
            &params,
        )?;
        let mut meta = meta_of(
            conn.as_mut(),
            &format!("SELECT id FROM runs WHERE {filter}"),
            &params,
        )?;
        let name = conn.name();
        let mut rows = run_rows(&runs, &cases).map_err(|m| bad_row(&name, m))?;
        for row in &mut rows {
            row.meta = meta.remove(&row.id).unwrap_or_default();
        }
        Ok(rows)
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

    /// Removes the runs `ids` (their series too) in one transaction: all of
    /// them, or none when one is not stored (an error that names it).
    pub fn remove(&mut self, ids: &[i64]) -> Result<()> {
        let mut conn = self.conn();
        transaction(conn.as_mut(), |conn| {
            for &id in ids {
                conn.execute("DELETE FROM series WHERE run_id = $1", &[Param::Int(id)])?;
                if conn.execute("DELETE FROM runs WHERE id = $1", &[Param::Int(id)])? == 0 {
                    return Err(no_such_run(conn.name(), id));
                }
            }
            Ok(())
        })
    }

    /// Gives run `id` the label `label` (none: no label), in the stored
    /// document too; its fingerprint follows the document.
    pub fn relabel(&mut self, id: i64, label: Option<&str>) -> Result<()> {
        let Some(text) = self.document_text(id)? else {
            return Err(no_such_run(self.location.to_string(), id));
        };
        let mut value: Value = serde_json::from_str(&text).map_err(|e| Error::Store {
            path: self.location.to_string(),
            message: format!("run {id}'s document is not JSON: {e}"),
        })?;
        value["run"]["label"] = label.map_or(Value::Null, |l| Value::String(l.to_string()));
        let text = value.to_string();
        let mut conn = self.conn();
        transaction(conn.as_mut(), |conn| {
            conn.execute(
                "UPDATE runs SET label = $1, document = $2, fingerprint = $3 WHERE id = $4",
                &[
                    label.into(),
                    text.as_str().into(),
                    fingerprint(&text).as_str().into(),
                    Param::Int(id),
                ],
            )
            .map(drop)
        })
    }

    /// The series of `bench` `case` in every stored run (of `config`, on
    /// `host` and of `min_samples` samples or more when given), oldest start first, with each median's interval
    /// read from the stored document.
    pub fn case_history(
        &self,
        bench: &str,
        case: &str,
        config: Option<&str>,
        host: Option<&str>,
        min_samples: Option<i64>,
    ) -> Result<Vec<CaseRun>> {
        let runs = self.series_runs(Some(bench), Some(case), config, host, min_samples)?;
        Ok(runs.into_iter().map(|(_, _, run)| run).collect())
    }

    /// Every stored series (of `bench` and on `host` when given) as
    /// (bench, case, run), oldest start first: all cases' histories at once.
    pub fn all_case_runs(
        &self,
        bench: Option<&str>,
        host: Option<&str>,
    ) -> Result<Vec<(String, String, CaseRun)>> {
        self.series_runs(bench, None, None, host, None)
    }

    fn series_runs(
        &self,
        bench: Option<&str>,
        case: Option<&str>,
        config: Option<&str>,
        host: Option<&str>,
        min_samples: Option<i64>,
    ) -> Result<Vec<(String, String, CaseRun)>> {
        const WHERE: &str = "(CAST($1 AS TEXT) IS NULL OR series.bench = $1)
               AND (CAST($2 AS TEXT) IS NULL OR series.case_name = $2)
               AND (CAST($3 AS TEXT) IS NULL OR series.config = $3)
               AND (CAST($4 AS TEXT) IS NULL OR runs.hostname = $4)
               AND series.n >= $5";
        let params = [
            bench.into(),
            case.into(),
            config.into(),
            host.into(),
            Param::Int(min_samples.unwrap_or(0)),
        ];
        let mut conn = self.conn();
        let rows = conn.query(
            &format!(
                "SELECT runs.id, runs.started, runs.label, runs.hostname, runs.kernel,
                    series.config, series.unit, series.n, series.median, {{summary:ci_low}},
                    {{summary:ci_high}}, runs.experiment, series.bench, series.case_name,
                    {{bimodal}}
                 FROM series JOIN runs ON runs.id = series.run_id WHERE {WHERE}
                 ORDER BY runs.started, runs.id, series.position"
            ),
            &params,
        )?;
        let meta = meta_of(
            conn.as_mut(),
            &format!(
                "SELECT series.run_id FROM series JOIN runs ON runs.id = series.run_id WHERE {WHERE}"
            ),
            &params,
        )?;
        let name = conn.name();
        rows.iter()
            .map(|r| {
                let (low, high) = (r.float(9)?, r.float(10)?);
                let run_id = r.int(0)?;
                let run = CaseRun {
                    run_id,
                    started: r.text(1)?,
                    label: r.opt_text(2)?,
                    hostname: r.text(3)?,
                    kernel: r.text(4)?,
                    config: r.text(5)?,
                    experiment: r.text(11)?,
                    unit: r.text(6)?,
                    n: r.int(7)?,
                    median: r.float(8)?,
                    ci: (low.is_finite() && high.is_finite()).then_some((low, high)),
                    bimodal: r.int(14)? != 0,
                    meta: meta.get(&run_id).cloned().unwrap_or_default(),
                };
                Ok((r.text(12)?, r.text(13)?, run))
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
    let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
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
        experiment_key(&value).as_str().into(),
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
                               osbench_version, origin, stored, fingerprint, document, experiment)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             ON CONFLICT (fingerprint) DO NOTHING RETURNING id",
        &params,
    )?;
    if let Some(row) = new.first() {
        let id = row.int(0).map_err(|m| bad_row(&name, m))?;
        index_series(conn, id, &value)?;
        index_meta(conn, id, &value)?;
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

/// The error for a run id the store does not hold.
fn no_such_run(store: String, id: i64) -> Error {
    Error::Store {
        path: store,
        message: format!("no run {id} is stored; `osbench history` lists the runs"),
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
            meta: BTreeMap::new(),
        };
        while let Some(c) = cases.next_if(|c| c.int(0).is_ok_and(|id| id <= row.id)) {
            if c.int(0)? < row.id {
                continue;
            }
            let key = CaseKey::new(c.text(1)?, c.text(2)?, c.text(3)?);
            row.cases.push(key.to_string());
        }
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_experiment_is_its_configurations_names_and_definitions() {
        let doc = |configs: Value| serde_json::json!({ "run": { "configs": configs } });
        assert_eq!(experiment_key(&doc(serde_json::json!([]))), "");
        assert_eq!(experiment_key(&serde_json::json!({ "run": {} })), "");
        let aa = experiment_key(&doc(serde_json::json!([{ "name": "a" }, { "name": "b" }])));
        assert!(
            aa.starts_with("a,b #") && aa.len() == "a,b #".len() + 8,
            "{aa}"
        );
        let other = experiment_key(&doc(
            serde_json::json!([{ "name": "a" }, { "name": "b", "setup": "echo 0 > /x" }]),
        ));
        assert!(other.starts_with("a,b #") && other != aa, "{other} {aa}");
    }
}
