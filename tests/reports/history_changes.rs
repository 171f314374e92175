//! `osbench history BENCH:CASE --changes` as a user meets it: stores built
//! from synthetic documents (the small real document in tests/data, its
//! `syscall null` medians moved night by night) are imported, then the
//! history must place a planted step at the right run, find nothing in a flat
//! history, say when there are too few runs, keep hosts apart, and `plot` and
//! `report --history` must draw it; a store holding absurd values (±inf,
//! ±1e308) must neither hang nor hide the other runs. Every osbench here gets
//! a store in a temporary directory.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::osbench;
use serde_json::Value;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/small-run.json");

fn ok(out: Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// Exits 2 with one line on stderr, which is returned.
fn fails(out: Output) -> String {
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

/// The fixture as night `day`'s run on `host`: its syscall series moved by `shift` ns.
fn night(dir: &Path, day: usize, host: &str, shift: f64) -> PathBuf {
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(FIXTURE).unwrap()).unwrap();
    doc["run"]["started"] = format!("2026-11-{day:02}T02:00:00Z").into();
    doc["run"]["finished"] = format!("2026-11-{day:02}T02:05:00Z").into();
    doc["run"]["label"] = format!("nightly-{day}").into();
    doc["env"]["hostname"] = host.into();
    for s in doc["series"].as_array_mut().unwrap() {
        if s["bench"] != "syscall" {
            continue;
        }
        for v in s["samples"].as_array_mut().unwrap() {
            *v = (v.as_f64().unwrap() + shift).into();
        }
        for key in ["median", "mean", "min", "max", "ci_low", "ci_high"] {
            let moved = s["summary"][key].as_f64().unwrap() + shift;
            s["summary"][key] = moved.into();
        }
    }
    let path = dir.join(format!("{host}-{day:02}.json"));
    fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

/// Nights 1..=`nights` on `host`, each moved by `level(day)` plus a small
/// wobble, imported newest first (so run ids run against time).
fn import_nights(store: &Path, host: &str, nights: usize, level: impl Fn(usize) -> f64) {
    let dir = store.parent().unwrap();
    let wobble = [0.0, 0.4, -0.3, 0.2, -0.1];
    let files: Vec<PathBuf> = (1..=nights)
        .rev()
        .map(|day| night(dir, day, host, level(day) + wobble[day % 5]))
        .collect();
    ok(osbench(store).arg("import").args(&files).output().unwrap());
}

/// `osbench history CASE --changes` with `extra` arguments.
fn changes(store: &Path, case: &str, extra: &[&str]) -> String {
    ok(osbench(store)
        .args(["history", case, "--changes"])
        .args(extra)
        .output()
        .unwrap())
}

#[test]
fn a_planted_step_is_found_at_the_run_where_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    // +10 ns from night 13 of 20 on; run ids are 21 - night.
    import_nights(
        &store,
        "testhost",
        20,
        |day| if day >= 13 { 10.0 } else { 0.0 },
    );
    let text = changes(&store, "syscall:null", &["--config", "base"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "syscall null [base] on testhost: 20 runs, 2026-11-01T02:00:00Z to \
         2026-11-20T02:00:00Z, medians in ns",
        "{text}"
    );
    // The runs in time order, the change marked on night 13 (run 8).
    let rows: Vec<Vec<&str>> = lines[3..23]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], (i + 1).to_string(), "{text}");
        assert_eq!(row[1], (20 - i).to_string(), "{text}");
        assert_eq!(row[3], format!("nightly-{}", i + 1), "{text}");
    }
    assert_eq!(rows[12].last(), Some(&"+10.0%"), "{text}");
    assert!(rows.iter().filter(|r| r.len() == 9).count() == 1, "{text}");
    // The change point: night 13, run 8, the segments' medians, the evidence.
    let point: Vec<&str> = lines
        .iter()
        .find(|l| l.starts_with("#13"))
        .unwrap_or_else(|| panic!("{text}"))
        .split_whitespace()
        .collect();
    assert_eq!(
        &point[..7],
        [
            "#13",
            "8",
            "2026-11-13T02:00:00Z",
            "nightly-13",
            "100.25",
            "110.25",
            "+10.0%"
        ],
        "{text}"
    );
    assert!(point[7].parse::<f64>().unwrap() <= 0.01, "{text}");
    assert!(text.contains("E-divisive means (Matteson & James 2014)"));
    assert!(
        lines.last().unwrap().starts_with("1 change point;"),
        "{text}"
    );
    // The same answer every time (the shuffles are seeded).
    assert_eq!(changes(&store, "syscall:null", &["--config", "base"]), text);
    // Without --changes: the runs alone.
    let plain = ok(osbench(&store)
        .args(["history", "syscall:null", "--config", "base"])
        .output()
        .unwrap());
    assert_eq!(plain.lines().count(), 23, "{plain}");
    assert!(plain.lines().nth(2).unwrap().ends_with("95% CI"), "{plain}");
    assert!(
        !plain.contains("+10.0%") && !plain.contains("change"),
        "{plain}"
    );
}

#[test]
fn a_flat_history_has_none_and_a_short_one_cannot_tell() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    import_nights(&store, "testhost", 20, |_| 0.0);
    import_nights(&store, "tiny", 3, |day| day as f64 * 30.0);
    let text = changes(&store, "syscall:null", &[]);
    // Two configurations on testhost, one history each, then tiny's two.
    let titles: Vec<&str> = text.lines().filter(|l| l.contains(" runs, ")).collect();
    assert_eq!(titles.len(), 4, "{text}");
    assert!(titles[0].starts_with("syscall null [base] on testhost: 20 runs"));
    assert!(titles[2].starts_with("syscall null [base] on tiny: 3 runs"));
    let conclusions: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("No change point") || l.starts_with("Cannot tell"))
        .collect();
    assert_eq!(conclusions.len(), 4, "{text}");
    for c in &conclusions[..2] {
        assert!(
            c.starts_with("No change point; the strongest split tested"),
            "{c}"
        );
    }
    for c in &conclusions[2..] {
        assert_eq!(
            *c,
            "Cannot tell yet: 3 runs; with fewer than 8 no split can be significant."
        );
    }
    assert!(
        !text.lines().any(|l| l.ends_with('%')),
        "no change marked: {text}"
    );
    // --host keeps one host's runs.
    let one = changes(
        &store,
        "syscall:null",
        &["--host", "tiny", "--config", "base"],
    );
    assert_eq!(
        one.lines().filter(|l| l.contains(" runs, ")).count(),
        1,
        "{one}"
    );
    // A case that is not stored is an error (status 2) that says which are.
    for args in [&["syscall:nul", "--changes"][..], &["nosuch:case"][..]] {
        let stderr = fails(osbench(&store).arg("history").args(args).output().unwrap());
        assert!(
            stderr.starts_with("osbench: error: No stored run has "),
            "{stderr}"
        );
    }
    let stderr = fails(
        osbench(&store)
            .args(["history", "syscall:nul"])
            .output()
            .unwrap(),
    );
    assert!(
        stderr.contains("No stored run has syscall:nul; stored cases of syscall: syscall:null."),
        "{stderr}"
    );
}

#[test]
fn plot_and_report_draw_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    import_nights(
        &store,
        "testhost",
        16,
        |day| if day >= 9 { -8.0 } else { 0.0 },
    );
    let plots = dir.path().join("plots");
    let out = ok(osbench(&store)
        .args([
            "plot",
            "--history",
            "syscall:null",
            "--config",
            "base",
            "--out",
        ])
        .arg(&plots)
        .output()
        .unwrap());
    assert_eq!(out.lines().count(), 2, "{out}");
    let svg = fs::read_to_string(plots.join("history-syscall-null-testhost-base.svg")).unwrap();
    assert!(svg.contains("#9 (run 8): -8."), "{svg}");
    assert!(
        plots
            .join("history-syscall-null-testhost-base.png")
            .is_file()
    );

    let html = dir.path().join("r.html");
    ok(osbench(&store)
        .args([
            "report",
            "nightly-16",
            "--history",
            "syscall:null",
            "--html",
        ])
        .arg(&html)
        .output()
        .unwrap());
    let page = fs::read_to_string(&html).unwrap();
    let history = &page[page.find("<section id=\"history\">").unwrap()..];
    assert_eq!(history.matches("<figure id=\"history-").count(), 2);
    assert!(history.contains("<td class=\"num\">#9</td>"), "{history}");
    assert!(
        page.contains("<section id=\"doc-0\">"),
        "the run is reported too"
    );
}

#[test]
fn case_arguments_without_a_case_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    import_nights(&store, "testhost", 2, |_| 0.0);
    let plots = dir.path().join("plots");
    for (args, says) in [
        (&["history", "--changes"][..], "<BENCH:CASE>"),
        (&["history", "--config", "x"][..], "give BENCH:CASE"),
        // `history syscall` is the family's cases, as `run syscall`; an unknown name is refused.
        (&["history", "nosuch"][..], "is not BENCH:CASE"),
        (
            &["history", "syscall:null", "--label", "x"][..],
            "cannot be used with",
        ),
        (
            &["history", "syscall:null", "--changes", "--max-p", "1.5"][..],
            "p-value",
        ),
        (
            &["plot", "1", "--host", "x", "--out", "p"][..],
            "give --history BENCH:CASE",
        ),
        (
            &["plot", "--history", "ctx:2p/0K", "--out", "p"][..],
            "No stored run has ctx:2p/0K",
        ),
    ] {
        let stderr = fails(
            osbench(&store)
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap(),
        );
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!plots.exists() && !dir.path().join("p").exists());
}

/// `cmd`'s output, or a failure when it has not ended within 60 s (the
/// issue saw `plot --history` of a ±1e308 interval spin for 7 minutes).
fn bounded(mut cmd: Command, dir: &Path) -> Output {
    let (out, err) = (dir.join("bounded.out"), dir.join("bounded.err"));
    cmd.stdout(fs::File::create(&out).unwrap())
        .stderr(fs::File::create(&err).unwrap())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{cmd:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: fs::read(out).unwrap(),
        stderr: fs::read(err).unwrap(),
    }
}

/// Sets night `label`'s stored `syscall null base` median (the store's index
/// of it, as an SQL literal) and, when given, its document's interval.
fn spoil(store: &Path, label: &str, median: &str, ci: Option<(f64, f64)>) {
    let db = rusqlite::Connection::open(store).unwrap();
    let id: i64 = db
        .query_row("SELECT id FROM runs WHERE label = ?1", [label], |r| {
            r.get(0)
        })
        .unwrap();
    let sql = format!(
        "UPDATE series SET median = {median} WHERE run_id = ?1 AND bench = 'syscall' AND config = 'base'"
    );
    assert_eq!(db.execute(&sql, [id]).unwrap(), 1);
    if let Some((low, high)) = ci {
        let text: String = db
            .query_row("SELECT document FROM runs WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        let mut doc: Value = serde_json::from_str(&text).unwrap();
        doc["series"][0]["summary"]["ci_low"] = low.into();
        doc["series"][0]["summary"]["ci_high"] = high.into();
        let text = serde_json::to_string(&doc).unwrap();
        db.execute("UPDATE runs SET document = ?1 WHERE id = ?2", (text, id))
            .unwrap();
    }
}

#[test]
fn absurd_stored_values_are_left_out_with_a_warning_never_a_loop() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    import_nights(&store, "testhost", 12, |_| 0.0);
    spoil(&store, "nightly-3", "9e999", None);
    spoil(&store, "nightly-5", "-9e999", None);
    spoil(&store, "nightly-7", "1e308", None);
    // Its median is kept; only its interval, whose width overflows, is not.
    spoil(&store, "nightly-9", "100", Some((-1e308, 1e308)));
    let run = |args: &[&str]| {
        let mut cmd = osbench(&store);
        cmd.args(args);
        bounded(cmd, dir.path())
    };
    let plots = dir.path().join("plots");
    let html = dir.path().join("r.html");
    let for_history: [&[&str]; 4] = [
        &["history", "syscall:null", "--config", "base"],
        &["history", "syscall:null", "--config", "base", "--changes"],
        &[
            "plot",
            "--history",
            "syscall:null",
            "--config",
            "base",
            "--out",
            plots.to_str().unwrap(),
        ],
        &[
            "report",
            "nightly-12",
            "--history",
            "syscall:null",
            "--html",
            html.to_str().unwrap(),
        ],
    ];
    for args in for_history {
        let out = run(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        for (night, what) in [
            ("nightly-3", "left out: its median is not a finite number"),
            ("nightly-5", "left out: its median is not a finite number"),
            (
                "nightly-7",
                "left out: its median is 1e308 ns, more than 1e6 s",
            ),
            (
                "nightly-9",
                "drawn without its interval: its interval's low end is -1e308 ns",
            ),
        ] {
            let id = 13 - night[8..].parse::<usize>().unwrap();
            let line =
                format!("osbench: warning: syscall:null: run {id} (base on testhost) {what}");
            assert!(err.contains(&line), "{args:?}: {line} in {err}");
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains("inf") && !stdout.contains("1000000000"),
            "{stdout}"
        );
    }
    let listed =
        String::from_utf8(run(&["history", "syscall:null", "--config", "base"]).stdout).unwrap();
    assert!(
        listed.contains("9 runs"),
        "the other runs are kept: {listed}"
    );
    assert!(
        plots
            .join("history-syscall-null-testhost-base.svg")
            .is_file()
    );
    // A document that fails its checks is refused by name; the others compare.
    let out = run(&["export", "nightly-9", "--json", "-"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("run 4: series 1 (bench syscall, case null, config base)"),
        "{err}"
    );
    let out = run(&["compare", "nightly-1", "nightly-3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn printed_names_and_selectors_name_histories() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    import_nights(&store, "testhost", 3, |_| 0.0);
    let history = |args: &[&str]| ok(osbench(&store).arg("history").args(args).output().unwrap());
    let flagged = history(&["syscall:null", "--config", "base"]);
    assert!(
        flagged.starts_with("syscall null [base] on testhost: 3 runs"),
        "{flagged}"
    );
    // The tag the tables print is the --config.
    assert_eq!(history(&["syscall:null [base]"]), flagged);
    assert_eq!(history(&["syscall null [base]"]), flagged);
    // A family, as `run syscall` takes it: its cases that are stored.
    let family = history(&["syscall", "--config", "base"]);
    assert!(
        family.contains("syscall null [base] on testhost"),
        "{family}"
    );
    assert_eq!(history(&["syscall:case=null [base]"]), flagged);
    let err = fails(
        osbench(&store)
            .args(["history", "syscall:null [base]", "--config", "other"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("'base'") && err.contains("'other'"), "{err}");
}

/// `osbench regressions --last 3` with `extra` arguments: its exit code and output.
fn sweep_last(store: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out = osbench(store)
        .args(["regressions", "--last", "3", "--bench", "syscall"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    (out.status.code(), String::from_utf8(out.stdout).unwrap())
}

#[test]
fn a_late_change_is_pending_until_confirmed_then_keeps_its_id_as_it_moves() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    // 20 flat nights, then two slow ones (+30 ns): pending, not alerted.
    import_nights(
        &store,
        "testhost",
        22,
        |day| if day >= 21 { 30.0 } else { 0.0 },
    );
    let (code, text) = sweep_last(&store, &[]);
    assert_eq!(code, Some(0), "{text}");
    // Both configurations of the fixture's syscall case moved.
    assert!(
        text.contains("0 slowdowns, 0 improvements in 2 histories; 2 pending"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.contains("syscall null [base]"))
        .unwrap();
    assert!(
        row.trim_start().starts_with("pending") && row.contains("slower +30.0%"),
        "{text}"
    );
    assert!(text.contains("not alerted on unless --pending"), "{text}");
    // The early warning, for those who ask for it.
    assert_eq!(sweep_last(&store, &["--pending"]).0, Some(1));
    let history = changes(&store, "syscall:null", &["--config", "base"]);
    assert!(history.contains("+30.0% pending"), "{history}");
    assert!(
        history.contains("(1 pending: not yet 4 runs of the new level and p ≤ 0.005)"),
        "{history}"
    );
    assert!(history.contains("pending: 2 of 4 runs"), "{history}");
    // Four more slow nights confirm it: a slowdown with an id, exit 1.
    let more = dir.path().join("more");
    fs::create_dir(&more).unwrap();
    let files: Vec<PathBuf> = (23..=26)
        .map(|day| night(&more, day, "testhost", 30.0))
        .collect();
    ok(osbench(&store).arg("import").args(&files).output().unwrap());
    let (code, text) = sweep_last(&store, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("2 slowdowns, 0 improvements in 2 histories"),
        "{text}"
    );
    let id_of = |text: &str| -> String {
        let row = text
            .lines()
            .find(|l| l.contains("syscall null [base]"))
            .unwrap();
        row.split_whitespace().next().unwrap().to_string()
    };
    let id = id_of(&text);
    // A later sweep that places the change a run apart (here: the record
    // moved by hand) finds the same change: same id, no second record.
    let db = rusqlite::Connection::open(&store).unwrap();
    let moved = db
        .execute(
            "UPDATE change_points SET run_id = run_id + 1 WHERE id = ?1",
            [&id],
        )
        .unwrap();
    assert_eq!(moved, 1);
    let (_, again) = sweep_last(&store, &[]);
    assert_eq!(id_of(&again), id, "{again}");
    let records: i64 = db
        .query_row("SELECT count(*) FROM change_points", [], |r| r.get(0))
        .unwrap();
    assert_eq!(records, 2);
    // Acknowledged, it follows the change: the next sweep is silent of it.
    ok(osbench(&store)
        .args(["regressions", "--ack", &id])
        .output()
        .unwrap());
    let (_, text) = sweep_last(&store, &[]);
    assert!(
        text.starts_with("osbench regressions: 1 slowdown"),
        "{text}"
    );
    assert!(!text.contains("[base]"), "{text}");
}

#[test]
fn a_drifting_history_is_reported_as_drift_not_as_a_slowdown() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    // +0.1 ns (0.1 %) a night over 60 nights: +6 % in all, in no one step.
    import_nights(&store, "testhost", 60, |day| 0.1 * day as f64);
    let (code, text) = sweep_last(&store, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("0 slowdowns, 0 improvements in 2 histories; 2 drifting"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("- syscall null [base] on testhost: drifting +0.1"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("over runs 60..1"), "{line}");
    let history = changes(&store, "syscall:null", &["--config", "base"]);
    assert!(history.contains("No change point"), "{history}");
    assert!(history.contains("Drifting +0.1"), "{history}");
    assert!(history.contains("a trend, not a step"), "{history}");
}
