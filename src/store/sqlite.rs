//! The SQLite back end of the results store (rusqlite with its bundled
//! SQLite): the embedded default, one file. It only connects and runs the
//! shared SQL of [`super::sql`]; the schema version is `PRAGMA user_version`.
//!
//! The journal is WAL and connections wait up to [`BUSY_TIMEOUT`] for a lock,
//! so concurrent osbench processes all succeed; every write is one
//! transaction that takes the write lock at once (`BEGIN IMMEDIATE`), so a
//! process killed mid-write leaves the earlier runs intact.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OpenFlags};

use super::sql::{Cell, Conn, Dialect, Param, Row};
use crate::error::{Error, Result};

/// How long a connection waits for another process's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open SQLite store.
pub(super) struct SqliteConn {
    conn: Connection,
    name: String,
}

impl SqliteConn {
    /// Opens the file at `path`; with `create`, creates it and its directory
    /// if missing, else a missing file is an error that says so.
    pub(super) fn open(path: &Path, create: bool) -> Result<Self> {
        let name = path.display().to_string();
        let refuse = |message: String| Error::Store {
            path: name.clone(),
            message,
        };
        if create {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| {
                    refuse(format!("cannot create directory {}: {e}", dir.display()))
                })?;
            }
        } else if !path.exists() {
            return Err(refuse(
                "no results store here yet (osbench run saves every run to it; \
                 --store PATH or OSBENCH_STORE chooses another)"
                    .into(),
            ));
        }
        let fail = store_error(&name);
        let conn = Connection::open(path).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        if !create && let Some(conn) = read_only_fallback(&conn, path) {
            return Ok(Self { conn, name });
        }
        // WAL: readers never wait for a writer, and a killed writer's
        // uncommitted pages are ignored on the next open. Where WAL is not
        // possible (a read-only file, some network file systems) the store
        // keeps its rollback journal, which is as safe, only less concurrent.
        let _journal: rusqlite::Result<String> =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0));
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(fail)?;
        Ok(Self { conn, name })
    }
}

/// An existing store that cannot be read the usual way — a full disk where
/// the WAL's shared-memory file cannot be made, a read-only directory —
/// opened read-only as an immutable file, so that reading needs no free
/// space and no write access (`None` when the usual way works). Only for
/// reading: an immutable file is not locked, so a writer at the same time
/// could make this reader see a half-written page.
fn read_only_fallback(conn: &Connection, path: &Path) -> Option<Connection> {
    let probe: rusqlite::Result<i64> = conn.pragma_query_value(None, "user_version", |r| r.get(0));
    let code = probe.err()?.sqlite_error_code();
    if !matches!(
        code,
        Some(
            rusqlite::ErrorCode::SystemIoFailure
                | rusqlite::ErrorCode::DiskFull
                | rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::CannotOpen
        )
    ) {
        return None;
    }
    let absolute = std::path::absolute(path).ok()?;
    const PATH: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'/')
        .remove(b'.')
        .remove(b'-')
        .remove(b'_');
    let encoded = percent_encoding::utf8_percent_encode(absolute.to_str()?, PATH);
    Connection::open_with_flags(
        format!("file:{encoded}?immutable=1"),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .ok()
}

fn bind(params: &[Param]) -> Vec<SqlValue> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(v) => SqlValue::Integer(*v),
            Param::Float(v) => SqlValue::Real(*v),
            Param::Bool(v) => SqlValue::Integer(i64::from(*v)),
            Param::Text(Some(v)) => SqlValue::Text(v.clone()),
            Param::Text(None) => SqlValue::Null,
        })
        .collect()
}

fn cell(value: ValueRef<'_>) -> Cell {
    match value {
        ValueRef::Null => Cell::Null,
        ValueRef::Integer(v) => Cell::Int(v),
        ValueRef::Real(v) => Cell::Float(v),
        ValueRef::Text(t) | ValueRef::Blob(t) => Cell::Text(String::from_utf8_lossy(t).into()),
    }
}

impl Conn for SqliteConn {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>> {
        let fail = store_error(&self.name);
        let mut st = self
            .conn
            .prepare_cached(&Dialect::Sqlite.sql(sql))
            .map_err(fail)?;
        let columns = st.column_count();
        let mut rows = st
            .query(rusqlite::params_from_iter(bind(params)))
            .map_err(fail)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(fail)? {
            let cells = (0..columns)
                .map(|i| r.get_ref(i).map(cell))
                .collect::<rusqlite::Result<_>>()
                .map_err(fail)?;
            out.push(Row(cells));
        }
        Ok(out)
    }

    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64> {
        let fail = store_error(&self.name);
        let mut st = self
            .conn
            .prepare_cached(&Dialect::Sqlite.sql(sql))
            .map_err(fail)?;
        st.execute(rusqlite::params_from_iter(bind(params)))
            .map(|n| n as u64)
            .map_err(fail)
    }

    fn batch(&mut self, sql: &str) -> Result<()> {
        self.conn
            .execute_batch(sql)
            .map_err(store_error(&self.name))
    }

    fn begin(&mut self) -> Result<()> {
        self.batch("BEGIN IMMEDIATE")
    }

    fn lock_migrations(&mut self) -> Result<()> {
        // The migration's transaction takes the write lock: that serialises it.
        Ok(())
    }

    fn unlock_migrations(&mut self) {}

    fn commit(&mut self) -> Result<()> {
        self.batch("COMMIT")
    }

    fn rollback(&mut self) {
        // Fails only when there is no transaction left to roll back.
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    fn schema_version(&mut self) -> Result<i64> {
        let fail = store_error(&self.name);
        let user_version = |conn: &Connection| {
            conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))
                .map_err(fail)
        };
        let version = user_version(&self.conn)?;
        if version != 0 {
            return Ok(version);
        }
        // No osbench schema: an empty file is a new store, one with tables
        // is someone else's database, never taken over.
        let mut st = self
            .conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
            )
            .map_err(fail)?;
        let tables = st
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(fail)?;
        if tables.is_empty() {
            return Ok(0);
        }
        // Outside a transaction the two reads above are two snapshots: another
        // process may have committed a new store's schema (tables and version
        // together) between them. Its version is then visible too.
        let version = user_version(&self.conn)?;
        if version != 0 {
            return Ok(version);
        }
        let shown: Vec<String> = tables.iter().take(5).map(|t| format!("'{t}'")).collect();
        let more = tables.len().saturating_sub(5);
        Err(Error::Store {
            path: self.name.clone(),
            message: format!(
                "an SQLite database with {} table{} ({}{}) and no osbench schema \
                 (PRAGMA user_version is 0): not a results store, and osbench leaves it \
                 alone; give another --store",
                tables.len(),
                if tables.len() == 1 { "" } else { "s" },
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ),
        })
    }

    fn set_schema_version(&mut self, version: i64) -> Result<()> {
        self.conn
            .pragma_update(None, "user_version", version)
            .map_err(store_error(&self.name))
    }
}

/// Turns an SQLite error into one line naming the store: SQLite's message,
/// never the statement it came from.
fn store_error(name: &str) -> impl Fn(rusqlite::Error) -> Error + Copy + '_ {
    move |e| Error::Store {
        path: name.to_string(),
        message: match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase) => {
                "not an SQLite database (give another --store)".into()
            }
            // SQLite does not say why it could not open; a descriptor limit is one cause.
            Some(rusqlite::ErrorCode::CannotOpen) => match descriptor_shortage() {
                Some(hint) => format!("{}: {hint}", cause(&e)),
                None => cause(&e),
            },
            _ => cause(&e),
        },
    }
}

/// SQLite's message for `e`, one line (a syntax error's text otherwise
/// quotes the whole statement).
fn cause(e: &rusqlite::Error) -> String {
    let text = match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    };
    text.lines().next().unwrap_or_default().trim().to_string()
}

/// Why no file can be opened now, if that is the open-file limit.
fn descriptor_shortage() -> Option<String> {
    match std::fs::File::open("/dev/null") {
        Ok(_) => None,
        Err(e) => crate::env::process::limit_hint(&e),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rusqlite::Connection;
    use serde_json::Value;

    use crate::document::Document;
    use crate::store::{Filter, Inserted, SCHEMA_VERSION, Store};

    fn user_version(path: &std::path::Path) -> i64 {
        Connection::open(path)
            .unwrap()
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap()
    }

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
        assert_eq!(user_version(&path), SCHEMA_VERSION);
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
        a.series.retain(|s| s.key.bench == "syscall");
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
    fn a_version_1_store_is_migrated_and_its_series_indexed() {
        let (_dir, path) = temp_store();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let (text, _) = super::super::fixture();
        {
            // A version 1 store as osbench 0.1 wrote it, made by hand.
            let mut conn = Connection::open(&path).unwrap();
            let tx = conn.transaction().unwrap();
            tx.execute_batch(
                "CREATE TABLE runs (
                     id INTEGER PRIMARY KEY AUTOINCREMENT, label TEXT, started TEXT NOT NULL,
                     finished TEXT NOT NULL, complete INTEGER NOT NULL, kernel TEXT NOT NULL,
                     hostname TEXT NOT NULL, osbench_version TEXT NOT NULL, origin TEXT NOT NULL,
                     stored TEXT NOT NULL, fingerprint TEXT NOT NULL, document TEXT NOT NULL);
                 CREATE INDEX runs_label ON runs(label);
                 CREATE INDEX runs_fingerprint ON runs(fingerprint);",
            )
            .unwrap();
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
        assert_eq!(user_version(&path), SCHEMA_VERSION);
        let rows = store.list(&Filter::default()).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].label.as_deref(), Some("old"));
        assert_eq!(
            rows[0].cases.len(),
            4,
            "series indexed from the stored document"
        );
        let medians = store
            .case_history("syscall", "null", Some("patched, \"v2\""), None, None)
            .unwrap();
        assert_eq!(medians.len(), 1);
        assert_eq!(medians[0].median, 90.25);
        // Version 4 filled in the experiment from the stored configurations.
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            medians[0].experiment,
            crate::store::index::experiment_key(&value)
        );
        assert!(medians[0].experiment.starts_with("base,patched, \"v2\" #"));
        // The old fingerprint ('x') became the document's SHA-256: a unique key.
        let print: String = Connection::open(&path)
            .unwrap()
            .query_row("SELECT fingerprint FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(print, crate::store::index::fingerprint(text));
        let wakeup = Filter {
            bench: Some("wakeup".into()),
            ..Filter::default()
        };
        assert_eq!(store.list(&wakeup).unwrap().len(), 1);
    }

    #[test]
    fn a_version_4_store_gains_meta_change_points_and_the_view() {
        let (_dir, path) = temp_store();
        let mut doc = variant(1);
        doc.run.meta.insert("commit".into(), "ab12cd".into());
        {
            // A version 4 store (osbench before --meta): stored, then the new
            // tables and the view taken away as if they had never been made.
            let mut store = Store::open(&path).unwrap();
            store.insert(&doc).unwrap();
            store.insert(&variant(2)).unwrap();
            drop(store);
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "DROP VIEW osbench_results; DROP TABLE change_points; DROP TABLE run_meta;
                 DROP TABLE jobs; DROP TABLE workers; PRAGMA user_version = 4;",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        assert_eq!(user_version(&path), SCHEMA_VERSION);
        let rows = store.list(&Filter::default()).unwrap();
        assert_eq!(
            rows[0].meta.get("commit").map(String::as_str),
            Some("ab12cd")
        );
        assert!(rows[1].meta.is_empty());
        let tagged = Filter {
            meta: vec![("commit".into(), "ab12cd".into())],
            ..Filter::default()
        };
        let ids: Vec<i64> = store.list(&tagged).unwrap().iter().map(|r| r.id).collect();
        assert_eq!(ids, [1]);
        let history = store
            .case_history("syscall", "null", None, None, None)
            .unwrap();
        assert_eq!(
            history[0].meta.get("commit").map(String::as_str),
            Some("ab12cd")
        );
        // The view: one row per series, meta as JSON, the interval from the document.
        let conn = Connection::open(&path).unwrap();
        let (started, meta, median, low): (String, String, f64, f64) = conn
            .query_row(
                "SELECT started, meta, median, ci_low FROM osbench_results
                 WHERE run_id = 1 AND bench = 'syscall' AND \"case\" = 'null'
                 AND config = 'base'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(started, doc.run.started);
        assert_eq!(meta, r#"{"commit":"ab12cd"}"#);
        let series = &doc.series[0];
        assert_eq!(
            (median, low),
            (series.summary.median, series.summary.ci_low)
        );
        let empty: String = conn
            .query_row(
                "SELECT meta FROM osbench_results WHERE run_id = 2",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(empty, "{}");
    }

    #[test]
    fn change_points_are_recorded_once_and_dismissed() {
        use crate::store::{FoundPoint, PointState};
        let (_dir, path) = temp_store();
        let mut store = Store::open(&path).unwrap();
        store.insert(&variant(1)).unwrap();
        store.insert(&variant(2)).unwrap();
        let point = FoundPoint {
            key: crate::document::CaseKey::new("syscall", "null", "default"),
            host: "testhost".into(),
            unit: "ns".into(),
            run_id: 2,
            before_run_id: 1,
            before_median: 100.0,
            after_median: 110.0,
            relative: 0.1,
            p_value: 0.01,
            direction: crate::document::Direction::Slower,
        };
        let first = store.record_change_point(&point).unwrap();
        assert_eq!((first.id, first.state), (1, PointState::New));
        let again = store.record_change_point(&point).unwrap();
        assert_eq!(again, first);
        store
            .set_change_point_state(1, PointState::Acknowledged)
            .unwrap();
        let later = store.record_change_point(&point).unwrap();
        assert_eq!(later.state, PointState::Acknowledged);
        assert_eq!(store.change_points().unwrap().len(), 1);
        let e = store
            .set_change_point_state(9, PointState::Expected)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no change point 9"), "{e}");
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
        let e = Store::open_existing(path.with_file_name("none.sqlite"))
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
}
