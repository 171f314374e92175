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
