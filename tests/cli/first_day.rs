//! A newcomer's first day (issue 25), the statistics and warnings: one
//! change per screen in an A/A run, per-configuration intervals over the
//! rounds, a gate inside the equivalence margin, warnings said once,
//! progress off a terminal, rounds beyond 20, and the small refusals
//! (`--no-store --label`, `-q`; a run compared with itself is flagged). Checks what is
//! printed and refused, never how fast anything ran.

use crate::common;

use std::path::Path;

use common::{ok, osbench};
use osbench::store::read_document;

/// A quick run with configurations: short samples, no warm-up, no perf pass.
const QUICK: [&str; 7] = [
    "--samples",
    "3",
    "--sample-time",
    "1",
    "--warmup",
    "0",
    "--no-perf",
];

/// An A/A run: one case, two configurations that set nothing up.
const AA_RUN: [&str; 6] = [
    "run",
    "syscall:case=null",
    "--config",
    "a=",
    "--config",
    "b=",
];

/// The number after `label` on the line of `text` that starts with it (after spaces).
fn number_after(text: &str, label: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no line starting with {label:?}:\n{text}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// `osbench ARGS` in `dir`, which must exit 2 saying `expected` on stderr.
fn fails(dir: &Path, args: &[&str], expected: &str) {
    let out = osbench(dir.join("store.sqlite"))
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
}

#[test]
fn an_a_a_run_shows_one_change_and_intervals_over_its_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("aa.json");
    let out = osbench(dir.path().join("store.sqlite"))
        .args(AA_RUN)
        .args(["--rounds", "4", "--no-store", "--json"])
        .arg(&json)
        .args(QUICK)
        .output()
        .unwrap();
    let (stdout, stderr) = ok(out);
    // The values beside the change are the paired centres: their ratio is the change.
    assert!(
        stdout.contains("syscall null (ns, geometric mean of round medians and 95% CI)"),
        "{stdout}"
    );
    let (a, b) = (number_after(&stdout, "A  "), number_after(&stdout, "B  "));
    let ratio = number_after(&stdout, "B/A  ");
    assert!(
        (b / a / ratio - 1.0).abs() < 0.002,
        "{a} {b} {ratio}\n{stdout}"
    );
    // The summary's change column is the same change, and says so.
    let change = (ratio - 1.0) * 100.0;
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("syscall null ") && l.ends_with(" %"))
        .unwrap();
    let summary_change: f64 = summary
        .split_whitespace()
        .rev()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (summary_change - change).abs() < 0.11,
        "{summary}\n{stdout}"
    );
    assert!(
        stdout.contains("each change: the ratio of those, the one judged above"),
        "{stdout}"
    );
    // Each configuration's interval in the results table is over its round medians.
    let doc = read_document(&json).unwrap();
    for s in &doc.series {
        assert_eq!(s.rounds.len(), 4);
        let (lo, hi) =
            osbench::stats::replicates::round_interval(s.summary.median, &s.rounds).unwrap();
        assert_eq!(
            (s.summary.ci_low, s.summary.ci_high),
            (lo, hi),
            "{}",
            s.key.config
        );
    }
    // Progress names the round and the configuration; each warning comes once a case.
    for round in 1..=4 {
        assert!(
            stderr.contains(&format!("round {round}/4 a: syscall null")),
            "{stderr}"
        );
    }
    let mut said: Vec<String> = Vec::new();
    for line in stderr.lines() {
        let Some(w) = line.strip_prefix("osbench: warning: syscall null [") else {
            continue;
        };
        let kind = osbench::report::blank_numbers(w);
        assert!(!said.contains(&kind), "said twice: {line}\n{stderr}");
        said.push(kind);
    }
}

#[test]
fn a_gate_inside_the_equivalence_margin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let contradiction = ["--gate", "3", "--equivalence", "5"];
    for args in [
        &AA_RUN[..],
        &["compare", "x.json", "y.json"][..],
        &["time", "true", "true"][..],
    ] {
        fails(
            dir.path(),
            &[args, &contradiction[..]].concat(),
            "--gate 3 lies inside the equivalence margin ±5%",
        );
    }
}

#[test]
fn a_gate_beyond_the_margin_trips_on_a_slowdown_and_passes_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let time = |b: &str| {
        osbench(dir.path().join("store.sqlite"))
            .args([
                "time",
                "--warmup",
                "0",
                "--runs",
                "6",
                "--no-store",
                "--shell",
            ])
            .args(["--gate", "5", "--equivalence", "3", "true", b])
            .output()
            .unwrap()
    };
    // Every run of `sleep 0.05` is far slower than `true`: all six blocks agree.
    let slower = time("sleep 0.05");
    let stdout = String::from_utf8(slower.stdout).unwrap();
    assert_eq!(slower.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("→ slower"), "{stdout}");
    // `true` against `true` never trips it.
    let same = time("true");
    let stdout = String::from_utf8(same.stdout).unwrap();
    assert_eq!(same.status.code(), Some(0), "{stdout}");
}

#[test]
fn time_says_its_rounds_off_a_terminal_and_its_common_notes_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = osbench(dir.path().join("store.sqlite"))
        .args([
            "time",
            "--warmup",
            "0",
            "--runs",
            "3",
            "--no-store",
            "true",
            "true",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = ok(out);
    assert!(stderr.contains("osbench: round 1 of 3"), "{stderr}");
    assert!(stderr.contains("osbench: round 3 of 3"), "{stderr}");
    // Energy and a peak RSS at osbench's own size are said once for both commands.
    assert!(!stdout.contains("  energy: "), "{stdout}");
    assert!(
        stdout.lines().filter(|l| l.contains("energy")).count() <= 1,
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .filter(|l| l.contains("osbench's own size"))
            .count()
            <= 1,
        "{stdout}"
    );
    // The values beside the change are the block centres, in the table's one unit.
    assert!(
        stdout.lines().any(|l| l.starts_with("command wall time (")
            && l.ends_with("s, geometric mean of block medians and 95% CI)")),
        "{stdout}"
    );
}

#[test]
fn rounds_go_beyond_twenty_with_a_drawn_sign_flip_test() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(osbench(dir.path().join("store.sqlite"))
        .args(["run", "--help"])
        .output()
        .unwrap())
    .0;
    assert!(help.contains("exact up to 20 rounds"), "{help}");
    let out = osbench(dir.path().join("store.sqlite"))
        .args(AA_RUN)
        .args(["--rounds", "21", "--no-store", "-q"])
        .args([
            "--samples",
            "2",
            "--sample-time",
            "1",
            "--warmup",
            "0",
            "--no-perf",
        ])
        .output()
        .unwrap();
    let stdout = ok(out).0;
    assert!(
        stdout.contains("Paired over 21 rounds")
            && stdout.contains("sign-flip p from 20000 random sign patterns"),
        "{stdout}"
    );
    fails(
        dir.path(),
        &[
            "run", "syscall", "--config", "a=", "--config", "b=", "--rounds", "1001",
        ],
        "1001",
    );
}

#[test]
fn one_sample_has_no_interval_and_small_refusals_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("one.json");
    let out = osbench(dir.path().join("store.sqlite"))
        .args([
            "run",
            "syscall:case=null",
            "--samples",
            "1",
            "--warmup",
            "0",
        ])
        .args(["--no-perf", "--label", "one", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let (stdout, stderr) = ok(out);
    assert!(stdout.contains("one sample: no interval"), "{stdout}");
    assert!(!stdout.contains("% only"), "{stdout}");
    assert!(
        stderr.contains("with one sample a case has no spread"),
        "{stderr}"
    );

    // --no-store --label: the label would be lost (with --json it is kept).
    fails(
        dir.path(),
        &["run", "syscall:case=null", "--no-store", "--label", "x"],
        "the label would be lost",
    );

    // A run compared with itself: by file, and by stored run id.
    for (x, y, what) in [
        (
            json.to_str().unwrap(),
            json.to_str().unwrap(),
            "the same document",
        ),
        ("1", "1", "run 1"),
        ("one", "1", "run 1"),
    ] {
        let (stdout, stderr) = ok(osbench(dir.path().join("store.sqlite"))
            .args(["compare", x, y])
            .output()
            .unwrap());
        let flag = format!("osbench: warning: '{x}' and '{y}' both hold {what}: a run compared");
        assert!(stderr.contains(&flag), "{stderr}");
        assert!(stdout.contains("B/A"), "{stdout}");
    }

    // -q is accepted by compare, history, export, plot and report, and silences stderr.
    let out_dir = dir.path().join("out");
    let md = dir.path().join("one.md");
    let html = dir.path().join("one.html");
    for args in [
        vec!["history", "-q"],
        vec!["export", "1", "-q", "--markdown", md.to_str().unwrap()],
        vec!["plot", "1", "-q", "--out", out_dir.to_str().unwrap()],
        vec!["report", "1", "-q", "--html", html.to_str().unwrap()],
    ] {
        let (_, stderr) = ok(osbench(dir.path().join("store.sqlite"))
            .args(&args)
            .output()
            .unwrap());
        assert_eq!(stderr, "", "{args:?}");
    }
    assert!(md.exists() && html.exists());
    // compare takes -q (and then fails on the missing run).
    fails(dir.path(), &["compare", "-q", "1", "nosuch"], "nosuch");
    fails(
        dir.path(),
        &["history", "nosuch:case"],
        "No stored run has nosuch:case",
    );

    // relabel and rm: asked for off a terminal, done with --yes.
    fails(dir.path(), &["relabel", "one", "kept"], "give --yes");
    ok(osbench(dir.path().join("store.sqlite"))
        .args(["relabel", "one", "kept", "--yes"])
        .output()
        .unwrap());
    let listed = ok(osbench(dir.path().join("store.sqlite"))
        .arg("history")
        .output()
        .unwrap())
    .0;
    assert!(
        listed.contains("kept") && !listed.contains(" one "),
        "{listed}"
    );
    ok(osbench(dir.path().join("store.sqlite"))
        .args(["rm", "kept", "--yes"])
        .output()
        .unwrap());
    let listed = ok(osbench(dir.path().join("store.sqlite"))
        .arg("history")
        .output()
        .unwrap())
    .0;
    assert!(listed.starts_with("No stored run matches"), "{listed}");
}
