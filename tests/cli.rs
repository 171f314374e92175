//! The built `osbench` binary as a user meets it: listing, running, the
//! result document, and errors on bad input. Checks correctness only; no test
//! asserts how fast anything ran.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use assert_cmd::cargo::CommandCargoExt;
use osbench::store::read_document;

fn osbench() -> Command {
    Command::cargo_bin("osbench").unwrap()
}

/// A quick run: few short samples, no warm-up.
const QUICK: [&str; 6] = ["--samples", "3", "--sample-time", "1", "--warmup", "0"];

#[test]
fn list_shows_every_case_parameter_and_op() {
    let out = osbench().arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("syscall"));
    assert!(text.contains("null|read|write|stat|fstat|open"), "{text}");
    assert!(text.contains("default null"), "{text}");
    assert!(text.contains("one getppid() system call"), "{text}");
    assert!(text.contains("unit: ns per op"), "{text}");
}

#[test]
fn env_shows_kernel_cpu_and_build() {
    let out = osbench().arg("env").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for key in [
        "kernel ",
        "kernel_version ",
        "cpu_model ",
        "cpus ",
        "debug_build ",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(key)),
            "missing {key}: {text}"
        );
    }
}

#[test]
fn run_prints_all_six_cases_and_writes_every_raw_sample() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = osbench()
        .args(["run", "syscall", "--seed", "7"])
        .args(QUICK)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let header = table.lines().next().unwrap();
    for col in ["median", "95% CI of median", "CV", "n", "unit"] {
        assert!(header.contains(col), "{header}");
    }
    for case in ["null", "read", "write", "stat", "fstat", "open"] {
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(case)),
            "no {case} row:\n{table}"
        );
    }

    let doc = read_document(&json).unwrap();
    assert_eq!(doc.schema, "osbench/1");
    assert_eq!(doc.tool.name, "osbench");
    assert!(doc.run.complete);
    assert_eq!(doc.run.seed, 7);
    assert_eq!(doc.series.len(), 6);
    for s in &doc.series {
        assert_eq!(
            (s.bench.as_str(), s.unit.as_str(), s.config.as_str()),
            ("syscall", "ns", "default")
        );
        assert_eq!(s.samples.len(), 3);
        assert_eq!(s.raw.len(), 3);
        assert_eq!(s.summary.n, 3);
        assert_eq!(s.params["case"], s.case.as_str());
        assert_eq!(
            (s.pin.as_str(), s.cpus.len()),
            ("same", 1),
            "one-task cases are pinned"
        );
        assert!(s.summary.ci_low <= s.summary.median && s.summary.median <= s.summary.ci_high);
    }
    // The seed fixes the order the cases ran in.
    let again = dir.path().join("again.json");
    let out = osbench()
        .args(["run", "syscall", "--seed", "7", "-q"])
        .args(QUICK)
        .arg("--json")
        .arg(&again)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(read_document(&again).unwrap().run.order, doc.run.order);
}

#[test]
fn document_round_trips_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("doc.json");
    let out = osbench()
        .args(["run", "syscall:case=null", "-q"])
        .args(QUICK)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc = read_document(&json).unwrap();
    let rewritten = osbench::store::to_json(&doc);
    assert_eq!(
        String::from_utf8(rewritten).unwrap(),
        fs::read_to_string(&json).unwrap()
    );
}

/// Runs osbench with `args` in an empty directory; returns (status, stderr, files left there).
fn run_in_empty_dir(args: &[&str]) -> (Option<i32>, String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let out = osbench()
        .current_dir(dir.path())
        .args(args)
        .output()
        .unwrap();
    let files = fs::read_dir(dir.path()).unwrap().count();
    (
        out.status.code(),
        String::from_utf8(out.stderr).unwrap(),
        files,
    )
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_file() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["run", "nosuch", "--json", "x.json"],
            "unknown benchmark 'nosuch'; valid benchmarks: syscall",
        ),
        (
            &["run", "syscall:case=bogus", "--json", "x.json"],
            "allowed: null, read, write, stat, fstat, open",
        ),
        (
            &["run", "syscall:foo=1", "--json", "x.json"],
            "no parameter 'foo'; valid parameters: case",
        ),
        (
            &["run", "syscall:case", "--json", "x.json"],
            "malformed selector",
        ),
        (&["run", "--samples", "0", "--json", "x.json"], "--samples"),
        (
            &["run", "--sample-time", "-1", "--json", "x.json"],
            "--sample-time",
        ),
        (
            &["run", "--json", "/nonexistent/dir/x.json"],
            "directory /nonexistent/dir does not exist",
        ),
        (&["frobnicate"], "unrecognized subcommand"),
    ];
    for (args, want) in cases {
        let (code, stderr, files) = run_in_empty_dir(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{args:?}: not one line:\n{stderr}"
        );
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert_eq!(files, 0, "{args:?} left a file behind");
    }
    assert!(!Path::new("/nonexistent/dir/x.json").exists());
}

#[test]
fn interrupted_run_keeps_what_it_measured_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    // Long enough that the signal arrives mid-run: 6 cases × 200 samples × 5 ms.
    let mut child = osbench()
        .args([
            "run",
            "syscall",
            "-q",
            "--samples",
            "200",
            "--sample-time",
            "5",
            "--warmup",
            "0",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let doc = read_document(&json).unwrap();
    assert!(!doc.run.complete);
    assert!(
        doc.run
            .stopped_because
            .as_deref()
            .unwrap()
            .contains("interrupted")
    );
    assert!(doc.series.len() < 6);
    assert!(doc.series.iter().all(|s| !s.samples.is_empty()));
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "temporary file left behind"
    );
}
