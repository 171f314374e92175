//! `osbench compare --explain` and `osbench explain` on two documents whose
//! profiles are synthetic (the fixture tests/data/report.json with a
//! profile added to its `syscall null [a]` series): the planted function is
//! named under "Where the change went", every line fits 80 columns, a side
//! without a profile is named with how to get one, and the comparison JSON
//! carries the explanation and reads back. Checks correctness only.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{fixture, ok, osbench, tmp_store};

/// The index of the fixture's `syscall null [a]` series.
fn syscall_a(doc: &serde_json::Value) -> usize {
    doc["series"]
        .as_array()
        .unwrap()
        .iter()
        .position(|s| s["bench"] == "syscall" && s["config"] == "a")
        .unwrap()
}

/// Five passes in which `planted` takes `share` of the samples, the
/// syscall's entry and exit the rest (each pass a little different).
fn profile(planted: &str, share: f64) -> serde_json::Value {
    let passes: Vec<serde_json::Value> = (0..5u64)
        .map(|i| {
            let samples = 2000 + 41 * i;
            let hot = (share * samples as f64).round() as u64 + (i * 7) % 5;
            let exit = (samples - hot) / 3;
            serde_json::json!({
                "ops": 1.0e6,
                "wall_ns": 200_000_000u64,
                "samples": samples,
                "stacks": {
                    format!("osbench::main;syscall;entry_SYSCALL_64;do_syscall_64;{planted}"): hot,
                    "osbench::main;syscall;entry_SYSCALL_64;syscall_exit_to_user_mode": exit,
                    "osbench::main;syscall;entry_SYSCALL_64": samples - hot - exit,
                },
            })
        })
        .collect();
    serde_json::json!({
        "profiled": {
            "event": "cpu-clock",
            "period": 100_000,
            "scope": "the case's tasks",
            "passes": passes,
        }
    })
}

/// The fixture as `name` in `dir`, its `syscall null [a]` series' samples
/// scaled by `scale` and given `profile` (none: no profile).
fn document(dir: &Path, name: &str, scale: f64, profile: Option<serde_json::Value>) -> PathBuf {
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(fixture("report.json")).unwrap()).unwrap();
    let i = syscall_a(&doc);
    let series = &mut doc["series"][i];
    let samples: Vec<f64> = series["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap() * scale)
        .collect();
    series["summary"] = serde_json::to_value(osbench::stats::summarize(&samples).unwrap()).unwrap();
    series["samples"] = serde_json::to_value(&samples).unwrap();
    if let Some(p) = profile {
        series["profile"] = p;
    }
    let path = dir.join(name);
    fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

/// A: `planted` takes 10 % of 170 ns; B: 30 % more time per op, all of it
/// in `planted`.
fn planted_pair(dir: &Path, planted: &str) -> (PathBuf, PathBuf) {
    let a = document(dir, "a.json", 1.0, Some(profile(planted, 0.10)));
    // B's op takes 1.3× as long; the planted function holds A's 10 % plus the 30 %.
    let b = document(dir, "b.json", 1.3, Some(profile(planted, 0.40 / 1.3)));
    (a, b)
}

/// Every line of every "Where the change went" block (the lines indented
/// under its title) fits 80 columns; the comparison's own lines are not
/// this test's.
fn every_line_fits(text: &str) {
    let mut in_block = false;
    let mut blocks = 0;
    for line in text.lines() {
        if line.contains("Where the change went") {
            (in_block, blocks) = (true, blocks + 1);
        } else if !line.starts_with("    ") {
            in_block = false;
        }
        if in_block {
            assert!(
                line.chars().count() <= 80,
                "{} columns: {line}",
                line.chars().count()
            );
        }
    }
    assert!(blocks > 0, "{text}");
}

/// The block under the syscall's change.
fn block(text: &str) -> &str {
    let start = text.find("Where the change went (").expect(text);
    let end = text[start..].find("unexplained").unwrap() + start;
    &text[start..text[end..].find('\n').unwrap() + end]
}

#[test]
fn compare_explain_and_explain_name_the_planted_function_within_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = planted_pair(dir.path(), "audit_filter_syscall");
    let store = tmp_store("explain-cli.sqlite");
    for args in [vec!["compare", "--explain"], vec!["explain"]] {
        let (stdout, _) = ok(osbench(&store).args(&args).args([&a, &b]).output().unwrap());
        every_line_fits(&stdout);
        let shown = block(&stdout);
        let top = shown.lines().nth(2).unwrap();
        assert!(top.contains("audit_filter_syscall"), "{shown}");
        assert!(top.contains('*'), "significant: {shown}");
        assert!(shown.contains("listed rows: +"), "{shown}");
        // The other cases have no profile on either side: said, with how to get one.
        assert!(
            stdout.contains("A has no profile") && stdout.contains("--profile"),
            "{stdout}"
        );
    }
}

#[test]
fn a_side_without_a_profile_is_named_with_how_to_get_one() {
    let dir = tempfile::tempdir().unwrap();
    let a = document(dir.path(), "a.json", 1.0, None);
    let b = document(dir.path(), "b.json", 1.3, Some(profile("f", 0.3)));
    let out = osbench(tmp_store("explain-cli.sqlite"))
        .args([Path::new("explain"), &a, &b])
        .output()
        .unwrap();
    let (stdout, stderr) = ok(out);
    every_line_fits(&stdout);
    let syscall = &stdout[stdout.find("syscall null [a]").unwrap()..];
    let missing = syscall
        .lines()
        .find(|l| l.contains("has no profile"))
        .unwrap();
    assert!(
        missing.trim_start().starts_with("A has no profile"),
        "{missing}"
    );
    assert!(syscall.contains("osbench run … --profile"), "{syscall}");
    assert!(
        stderr.contains("a.json") && stderr.contains("--profile"),
        "{stderr}"
    );
}

#[test]
fn the_comparison_json_carries_the_explanation_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = planted_pair(dir.path(), "audit_filter_syscall");
    let json = dir.path().join("comparison.json");
    let markdown = dir.path().join("comparison.md");
    ok(osbench(tmp_store("explain-cli.sqlite"))
        .args([Path::new("compare"), &a, &b, Path::new("--explain")])
        .arg("--json")
        .arg(&json)
        .arg("--markdown")
        .arg(&markdown)
        .output()
        .unwrap());
    let record: serde_json::Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    let records: Vec<osbench::document::ComparisonRecord> =
        serde_json::from_value(record["comparisons"].clone()).unwrap();
    let syscall = records
        .iter()
        .find(|r| r.bench == "syscall" && r.explanation.is_some())
        .expect("the syscall's change is explained");
    let Some(osbench::document::Explanation::Differential(d)) = &syscall.explanation else {
        panic!("{syscall:?}")
    };
    assert_eq!(d.rows[0].function, "audit_filter_syscall");
    // Written again, it is the same JSON.
    let again = serde_json::to_value(&records).unwrap();
    assert_eq!(again, record["comparisons"]);
    let md = fs::read_to_string(&markdown).unwrap();
    assert!(
        md.contains("## Where the changes went") && md.contains("| audit_filter_syscall |"),
        "{md}"
    );
}

/// `explain` and `compare --explain` fit 80 and 100 columns on a terminal,
/// no word broken (`common::terminal`); in a pipe, one line per row.
#[test]
fn explain_fits_80_and_100_columns_on_a_terminal_without_a_broken_word() {
    if !crate::common::terminal::have_script() {
        eprintln!("skipped: no script(1) to give osbench a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    planted_pair(dir.path(), "audit_filter_syscall");
    let store = dir.path().join("results.sqlite");
    for args in [
        &["explain", "a.json", "b.json"][..],
        &["compare", "--explain", "a.json", "b.json"],
    ] {
        let whole = crate::common::terminal::check_widths(&store, dir.path(), args, |_| true);
        assert!(whole.contains("Where the change went ("), "{whole}");
        assert!(whole.lines().any(|l| l.chars().count() > 100), "{whole}");
    }
}
