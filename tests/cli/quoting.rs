//! Untrusted text is data (issue 44, S3 and S4): osbench's own path handed
//! to `sh -c` stays one word (a directory with a space, one named
//! `$(touch X)`), control characters from an imported document never reach
//! the terminal raw, and an import refuses the labels `--label` refuses.

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{ok, osbench};

/// The built binary, hard-linked (or copied) into `dir` as `osbench`.
fn binary_in(dir: &Path) -> std::path::PathBuf {
    fs::create_dir_all(dir).unwrap();
    let exe = dir.join("osbench");
    let built = assert_cmd::cargo::cargo_bin("osbench");
    if fs::hard_link(&built, &exe).is_err() {
        fs::copy(&built, &exe).unwrap();
    }
    exe
}

#[test]
fn invocations_run_from_a_directory_named_like_shell_code() {
    let top = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let exe = binary_in(&top.path().join("a b").join("$(touch PWNED)"));
    let json = top.path().join("run.json");
    let out = Command::new(&exe)
        .current_dir(top.path())
        .env("OSBENCH_STORE", top.path().join("store.sqlite"))
        .args(["run", "syscall:null", "-q", "--no-perf", "--no-store"])
        .args(["--invocations", "2", "--samples", "3"])
        .args(["--sample-time", "1", "--warmup", "0", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    ok(out);
    assert!(
        !top.path().join("PWNED").exists(),
        "the directory's name ran as a command"
    );
    let doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        doc["series"][0]["invocations"].as_array().map(Vec::len),
        Some(2)
    );
}

/// The small fixture with `label` as its run's label, written to `dir`.
fn labelled(dir: &Path, label: &str) -> (std::path::PathBuf, String) {
    let text = fs::read_to_string(crate::common::fixture("small-run.json")).unwrap();
    let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    doc["run"]["label"] = label.into();
    doc["run"]["started"] = "2026-12-01T00:00:00Z".into();
    let text = serde_json::to_string(&doc).unwrap();
    let path = dir.join("hostile.json");
    fs::write(&path, &text).unwrap();
    (path, text)
}

/// ESC ] 52 (set the clipboard), BEL, then a forged line.
const HOSTILE: &str = "ok\u{1b}]52;c;aGk=\u{7}\r\nosbench: all good";

#[test]
fn import_refuses_control_characters_in_labels() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite");
    let (path, _) = labelled(dir.path(), HOSTILE);
    let out = osbench(&store).arg("import").arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "run.label 'ok\\e]52;c;aGk=\\u{7}\\r\\nosbench: all good' contains control characters"
        ),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\r'),
        "{stderr:?}"
    );
}

#[test]
fn history_shows_stored_control_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite");
    let (_, text) = labelled(dir.path(), HOSTILE);
    // Written past `import`, as another osbench (or SQL) could.
    let doc = osbench::store::parse_document(&text, "hostile").unwrap();
    let mut db = osbench::store::Store::open(osbench::store::Location::new(&store)).unwrap();
    db.import(&doc, &text).unwrap();
    drop(db);
    let (stdout, _) = ok(osbench(&store)
        .args(["history", "--wide"])
        .output()
        .unwrap());
    assert!(
        !stdout.contains('\u{1b}') && !stdout.contains('\r'),
        "{stdout:?}"
    );
    assert!(
        stdout.contains("ok\\e]52;c;aGk=\\u{7}\\r\\nosbench: all good"),
        "{stdout}"
    );
}

#[test]
fn error_lines_are_capped_and_say_how_much_was_left_out() {
    let long = format!("syscall:case={}", "x".repeat(5000));
    let out = osbench("/nonexistent/store.sqlite")
        .args(["run", &long])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().next().unwrap();
    assert!(first.len() < 2300, "{} bytes", first.len());
    assert!(first.contains("bytes left out)"), "{first}");
}
