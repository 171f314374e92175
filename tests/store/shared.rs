//! The store tests written once and run against both back ends: each is a
//! function of the store's location (a SQLite path or a PostgreSQL URL),
//! called by a test in [`crate::sqlite`] (always) and in [`crate::postgres`]
//! (when a cluster can be started).

use std::fs;
use std::path::PathBuf;

use crate::common::pg::PASSWORD;
use crate::common::{ok, osbench};
use osbench::store::Store;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/small-run.json");

/// A quick run: few short samples, no warm-up.
const QUICK: [&str; 6] = ["--samples", "3", "--sample-time", "1", "--warmup", "0"];

/// A run, a timed command and another run go through the store at `store`
/// (shown in messages as `shown`): history, filters, compare by label, the
/// HTML report; the run exported from it is the bytes written, as from a
/// SQLite store it was imported into.
pub fn a_run_goes_through(store: &str, shown: &str) {
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before.json");
    let (_, stderr) = ok(osbench(store)
        .args(["run", "syscall:case=null", "--label", "before", "--json"])
        .arg(&before)
        .args(QUICK)
        .output()
        .unwrap());
    assert!(
        stderr.contains(&format!("saved as run 1 in {}", shown)),
        "{stderr}"
    );
    assert!(!stderr.contains(PASSWORD), "{stderr}");
    // `time` saves there too.
    ok(osbench(store)
        .args([
            "time", "--label", "timed", "-q", "--runs", "3", "--warmup", "0", "true",
        ])
        .output()
        .unwrap());
    ok(osbench(store)
        .args(["run", "syscall:case=null", "--label", "after", "-q"])
        .args(QUICK)
        .output()
        .unwrap());

    let (history, _) = ok(osbench(store).arg("history").output().unwrap());
    assert_eq!(history.lines().count(), 4, "{history}");
    let host = osbench::env::capture().hostname;
    let (mine, _) = ok(osbench(store)
        .args(["history", "--bench", "syscall", "--host", &host])
        .output()
        .unwrap());
    assert_eq!(mine.lines().count(), 3, "{mine}");
    let (none, _) = ok(osbench(store)
        .args(["history", "--host", "elsewhere"])
        .output()
        .unwrap());
    assert!(none.contains("No stored run matches"), "{none}");

    let (compared, _) = ok(osbench(store)
        .args(["compare", "before", "after"])
        .output()
        .unwrap());
    assert!(
        compared.contains("A = before (run 1) (baseline)")
            && compared.contains("B = after (run 3)")
            && compared.contains("syscall null"),
        "{compared}"
    );
    let html = dir.path().join("r.html");
    ok(osbench(store)
        .args(["report", "before", "3", "--html"])
        .arg(&html)
        .output()
        .unwrap());
    assert!(
        fs::read_to_string(&html)
            .unwrap()
            .contains("before (run 1)")
    );

    // Exported from PostgreSQL and from SQLite (after an import): the same bytes.
    let from_pg = dir.path().join("pg.json");
    ok(osbench(store)
        .args(["export", "before", "--json"])
        .arg(&from_pg)
        .output()
        .unwrap());
    let lite = dir.path().join("results.sqlite");
    let lite = lite.to_str().unwrap();
    ok(osbench(lite).arg("import").arg(&before).output().unwrap());
    let from_lite = dir.path().join("lite.json");
    ok(osbench(lite)
        .args(["export", "before", "--json"])
        .arg(&from_lite)
        .output()
        .unwrap());
    let bytes = fs::read(&from_pg).unwrap();
    assert_eq!(bytes, fs::read(&from_lite).unwrap());
    assert_eq!(bytes, fs::read(&before).unwrap());
}

/// The same document imported twice (also written another way, also twice
/// in one import) is stored once, as written, in the store at `store`.
pub fn the_same_document_imported_twice_is_stored_once(store: &str) {
    let dir = tempfile::tempdir().unwrap();
    // The same document, written compactly.
    let compact = dir.path().join("compact.json");
    let value: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(FIXTURE).unwrap()).unwrap();
    fs::write(&compact, value.to_string()).unwrap();
    let (first, _) = ok(osbench(store).arg("import").arg(FIXTURE).output().unwrap());
    assert!(first.contains("stored as run 1"), "{first}");
    let (again, _) = ok(osbench(store)
        .arg("import")
        .arg(FIXTURE)
        .arg(&compact)
        .output()
        .unwrap());
    assert_eq!(
        again.matches("already stored as run 1").count(),
        2,
        "{again}"
    );
    // One import: one transaction; the same document twice in it is stored once.
    let other = dir.path().join("other.json");
    let mut relabelled = value.clone();
    relabelled["run"]["label"] = "other".into();
    fs::write(&other, relabelled.to_string()).unwrap();
    let (both, _) = ok(osbench(store)
        .arg("import")
        .arg(&other)
        .arg(&other)
        .output()
        .unwrap());
    assert!(
        both.contains("stored as run 2 'other'")
            && both.contains("already stored as run 2 'other'"),
        "{both}"
    );
    let (history, _) = ok(osbench(store).arg("history").output().unwrap());
    assert_eq!(history.lines().count(), 3, "{history}");
    // Stored as written.
    let text = Store::open(PathBuf::from(store))
        .unwrap()
        .document_text(1)
        .unwrap();
    assert_eq!(text.unwrap(), fs::read_to_string(FIXTURE).unwrap());
}
