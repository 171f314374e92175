//! `osbench plot` and `osbench report` as a user meets them, on the small
//! real document in tests/data/report.json: the files they write, what is in
//! them, and errors on bad input. Checks correctness only.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{fixture, osbench, tmp_store};

/// Runs `cmd`, which must succeed.
fn succeed(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A copy of the fixture, as `name` in `dir`, changed by `edit`.
fn edited_fixture(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let mut doc =
        serde_json::from_str(&fs::read_to_string(fixture("report.json")).unwrap()).unwrap();
    edit(&mut doc);
    let path = dir.join(name);
    fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

/// Files in `dir`, sorted, hidden ones (temporary files) included.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn plot_writes_an_svg_and_a_png_of_every_plot() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("plots"); // created by osbench
    let out = succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .args(["plot", fixture("report.json").to_str().unwrap(), "--out"])
            .arg(&out_dir),
    );
    let stems = [
        "comparison",
        "ctx-size",
        "latency-cdf-wakeup",
        "samples-ctx",
        "samples-syscall",
    ];
    let expected: Vec<String> = stems
        .iter()
        .flat_map(|s| [format!("{s}.png"), format!("{s}.svg")])
        .collect();
    assert_eq!(listing(&out_dir), expected);
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed.lines().count(), expected.len(), "{printed}");
    for stem in stems {
        let svg = fs::read_to_string(out_dir.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let png = fs::read(out_dir.join(format!("{stem}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{stem}.png");
    }
}

#[test]
fn report_writes_one_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .args(["report", fixture("report.json").to_str().unwrap(), "--html"])
            .arg(&html),
    );
    assert_eq!(listing(dir.path()), ["report.html"]);
    let page = fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<style>"));
    assert_eq!(page.matches("<svg").count(), 5);
    assert!(page.contains("<h3>Environment</h3>"));
    assert!(!page.contains("http:") && !page.contains("<script"));
}

#[test]
fn report_of_several_documents_compares_them() {
    let dir = tempfile::tempdir().unwrap();
    // The candidate: every syscall sample 40 % slower.
    let after = edited_fixture(dir.path(), "after.json", |doc| {
        for s in doc["series"].as_array_mut().unwrap() {
            if s["bench"] == "syscall" {
                for v in s["samples"].as_array_mut().unwrap() {
                    *v = (v.as_f64().unwrap() * 1.4).into();
                }
            }
        }
        doc["run"]["label"] = "patched".into();
    });
    let html = dir.path().join("both.html");
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .arg("report")
            .arg(fixture("report.json"))
            .arg(&after)
            .arg("--html")
            .arg(&html),
    );
    let page = fs::read_to_string(&html).unwrap();
    assert!(page.contains("<section id=\"comparison\">"));
    assert!(page.contains("<td class=\"slower\">slower</td>"), "{page}");
    assert!(page.contains("<h2>Run: patched</h2>"));
    assert!(page.contains("<figure id=\"comparison-plot\">"));
}

#[test]
fn documents_without_common_cases_are_reported_without_a_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let other = edited_fixture(dir.path(), "other.json", |doc| {
        for s in doc["series"].as_array_mut().unwrap() {
            s["bench"] = "other".into();
        }
    });
    let html = dir.path().join("r.html");
    let out = osbench(tmp_store("report-cli-results.sqlite"))
        .arg("report")
        .arg(fixture("report.json"))
        .arg(&other)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("warning: no comparison"), "{stderr}");
    let page = fs::read_to_string(&html).unwrap();
    assert!(!page.contains("<section id=\"comparison\">"));
    assert!(page.contains("<section id=\"doc-1\">"));
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("notes.txt");
    fs::write(&not_json, "hello").unwrap();
    let fixture = fixture("report.json");
    let fixture = fixture.to_str().unwrap();
    let missing_dir = dir.path().join("nowhere/r.html");
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["report", not_json.to_str().unwrap(), "--html", "r.html"],
            "not an osbench result document",
        ),
        (
            vec!["report", "missing.json", "--html", "r.html"],
            "missing.json",
        ),
        (
            vec!["report", fixture, "--html", missing_dir.to_str().unwrap()],
            "does not exist",
        ),
        (vec!["report", fixture], "--html"),
        (
            vec!["plot", not_json.to_str().unwrap(), "--out", "plots"],
            "not an osbench result document",
        ),
    ];
    for (args, says) in cases {
        let out = osbench(tmp_store("report-cli-results.sqlite"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert_eq!(listing(dir.path()), ["notes.txt"]);
}

#[test]
fn a_time_document_is_reported_with_its_commands() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("time.json");
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .args(["time", "true", "--runs", "3", "--json"])
            .arg(&json),
    );
    let html = dir.path().join("time.html");
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .arg("report")
            .arg(&json)
            .arg("--html")
            .arg(&html),
    );
    let page = fs::read_to_string(&html).unwrap();
    // The terminal's per-command table, and the runs in order.
    assert!(page.contains("Command 1: true"), "{page}");
    assert!(page.contains("<figure id=\"doc-0-samples-command\">"));
    assert!(page.contains("wall time per run (s)"));
}

#[test]
fn an_interval_wider_than_any_time_is_read() {
    // Two rounds whose medians differ tenfold give a log-t interval far beyond
    // 1e6 s; a plain t interval over rounds may reach below zero. Both are
    // honest intervals, not damage.
    let dir = tempfile::tempdir().unwrap();
    let wide = edited_fixture(dir.path(), "wide.json", |d| {
        d["series"][0]["summary"]["ci_low"] = (-1e9).into();
        d["series"][0]["summary"]["ci_high"] = 1.8e15.into();
    });
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .arg("compare")
            .arg(fixture("report.json"))
            .arg(&wide),
    );
}

#[test]
fn damaged_documents_are_refused_by_every_reader_with_the_series_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    let fixture = fixture("report.json");
    type Edit = fn(&mut serde_json::Value);
    let damage: [(&str, Edit, &str); 7] = [
        (
            "empty.json",
            |d| d["series"][0]["samples"] = serde_json::json!([]),
            "samples is empty",
        ),
        (
            "huge.json",
            |d| d["series"][0]["samples"][3] = 1e308.into(),
            "more than 1e6 s per operation",
        ),
        (
            "negative.json",
            // 20 ns of clock read and 0.27 ns of loop were subtracted (2 ops per
            // iteration): −5 µs is far more negative than that.
            |d| d["series"][0]["samples"][3] = (-5.0).into(),
            "further below zero than",
        ),
        (
            "interval.json",
            |d| d["series"][0]["summary"]["ci_low"] = 1e9.into(),
            "is above summary.ci_high",
        ),
        (
            "count.json",
            |d| d["series"][0]["summary"]["n"] = 12.into(),
            "summary.n is 12 but there are 11 samples",
        ),
        (
            "rounds.json",
            |d| d["series"][0]["round_samples"] = serde_json::json!([5, 5]),
            "round_samples adds up to 10 but samples has 11",
        ),
        (
            "raw.json",
            |d| d["series"][0]["raw"] = serde_json::json!([{"iters": 1, "elapsed_ns": 5}]),
            "raw has 1 samples but samples has 11",
        ),
    ];
    for (name, edit, problem) in damage {
        let bad = edited_fixture(dir.path(), name, edit);
        let bad = bad.to_str().unwrap();
        let runs: [Vec<&str>; 5] = [
            vec!["compare", fixture.to_str().unwrap(), bad],
            vec!["report", bad, "--html", "r.html"],
            vec!["plot", bad, "--out", "plots"],
            vec!["export", bad, "--csv", "x.csv"],
            vec!["import", bad],
        ];
        for args in runs {
            let out = osbench(tmp_store("report-cli-results.sqlite"))
                .env("OSBENCH_STORE", &store)
                .args(&args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8(out.stderr).unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
            for says in [
                name,
                "series 1 (bench ctx, case 2p/0K, config default)",
                problem,
            ] {
                assert!(stderr.contains(says), "{args:?}: {says:?} not in {stderr}");
            }
        }
    }
    assert!(!store.exists(), "nothing was imported");
    let written: Vec<String> = listing(dir.path())
        .into_iter()
        .filter(|n| !n.ends_with(".json"))
        .collect();
    assert!(written.is_empty(), "nothing was written: {written:?}");

    // A damaged run already in a store is refused when read from there too.
    let mut doc: osbench::document::Document =
        serde_json::from_str(&fs::read_to_string(&fixture).unwrap()).unwrap();
    doc.series[0].samples.clear();
    osbench::store::Store::open(&store)
        .unwrap()
        .insert(&doc)
        .unwrap();
    let out = osbench(tmp_store("report-cli-results.sqlite"))
        .env("OSBENCH_STORE", &store)
        .args(["compare", "1"])
        .arg(&fixture)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("run 1: series 1 (bench ctx, case 2p/0K, config default): samples is empty"),
        "{stderr}"
    );
}

#[test]
fn a_case_with_a_sample_that_is_not_positive_is_listed_not_compared() {
    // Zero is within what a subtraction of overheads can leave: the document
    // is valid, but there is no ratio of medians for the case.
    let dir = tempfile::tempdir().unwrap();
    let zero = edited_fixture(dir.path(), "zero.json", |d| {
        d["series"][0]["samples"][0] = 0.0.into();
    });
    let out = succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .arg("compare")
            .arg(fixture("report.json"))
            .arg(&zero),
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Not compared:"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "ctx 2p/0K: a sample in {} is 0 µs, not positive",
            zero.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("ctx 2p/16K"),
        "the other cases are compared"
    );
}

/// A profile as a document stores it: one pass of `stacks` (folded stack,
/// samples), with a note.
fn profile_json(stacks: &[(&str, u64)]) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = stacks
        .iter()
        .map(|(s, n)| (s.to_string(), (*n).into()))
        .collect();
    serde_json::json!({"profiled": {
        "event": "cpu-clock",
        "period": 100000,
        "scope": "the case's tasks and the idle task on the CPUs they ran on",
        "passes": [{
            "ops": 1000.0,
            "wall_ns": 50000000,
            "samples": stacks.iter().map(|(_, n)| n).sum::<u64>(),
            "stacks": map,
        }],
        "notes": ["user stacks without frame pointers <end at libc>"],
    }})
}

/// The series of `doc` that is `syscall null [config]`.
fn syscall_null<'a>(doc: &'a mut serde_json::Value, config: &str) -> &'a mut serde_json::Value {
    doc["series"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["bench"] == "syscall" && s["config"] == config)
        .unwrap()
}

#[test]
fn a_report_of_profiled_runs_shows_where_the_time_went() {
    let dir = tempfile::tempdir().unwrap();
    // Both sides profiled `syscall null [a]`; `[b]` only on the candidate,
    // the baseline's having been refused.
    let before = edited_fixture(dir.path(), "before.json", |doc| {
        let a = syscall_null(doc, "a");
        a["profile"] = profile_json(&[
            ("main;do_syscall_64;__x64_sys_getpid", 60),
            ("main;loop", 40),
        ]);
        let b = syscall_null(doc, "b");
        b["profile"] = serde_json::json!({"unavailable": "perf_event_paranoid is 3; set it to 1"});
    });
    let after = edited_fixture(dir.path(), "after.json", |doc| {
        let a = syscall_null(doc, "a");
        a["profile"] = profile_json(&[
            ("main;do_syscall_64;__x64_sys_getpid", 60),
            ("main;do_syscall_64;__seccomp_filter", 90),
            ("main;loop", 40),
        ]);
        let b = syscall_null(doc, "b");
        b["profile"] = profile_json(&[("main;loop", 10)]);
        doc["run"]["label"] = "seccomp".into();
    });
    let html = dir.path().join("r.html");
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .arg("report")
            .arg(&before)
            .arg(&after)
            .arg("--html")
            .arg(&html),
    );
    let page = fs::read_to_string(&html).unwrap();
    let at = |needle: &str| page.find(needle).unwrap_or_else(|| panic!("no {needle}"));
    let section = &page[at("<h3 id=\"where-the-time-went\">Where the time went</h3>")
        ..at("<section id=\"doc-0\">")];
    for needle in [
        "<h4>syscall null [a]: B against A</h4>",
        "<figure id=\"profile-7-1\">\n<svg class=\"flame\"",
        "<title>__seccomp_filter (90 samples, 47.37%; +47.37%)</title>",
        "<details><summary>A&#39;s flame graph (baseline)</summary>\n<figure id=\"profile-7-1-a\">",
        "<details><summary>B&#39;s flame graph</summary>\n<figure id=\"profile-7-1-b\">",
        "<li>A: user stacks without frame pointers &lt;end at libc&gt;</li>",
        "<p class=\"warn\">syscall null [b]: B against A: A has no profile: perf_event_paranoid \
         is 3; set it to 1; B has one, so there is no differential.</p>",
    ] {
        assert!(section.contains(needle), "no {needle} in {section}");
    }
    // The differential and the two sides' graphs, each an inline SVG.
    assert_eq!(section.matches("<svg class=\"flame\"").count(), 3);
    // Each run's section has its own profiled series' graphs, folded.
    let doc1 = &page[at("<section id=\"doc-1\">")..];
    assert!(doc1.contains("<details><summary>Flame graph: syscall null [b]</summary>"));
    let doc0 = &page[at("<section id=\"doc-0\">")..at("<section id=\"doc-1\">")];
    assert!(doc0.contains(
        "<p class=\"warn\">syscall null [b]: no profile: perf_event_paranoid is 3; set it to 1</p>"
    ));
    // Still one page without script or anything fetched.
    for outside in [
        "<script",
        "http:",
        "https:",
        "onload",
        "<?xml",
        "<!DOCTYPE svg",
    ] {
        assert!(!page.contains(outside), "{outside}");
    }

    // A side not profiled at all: the line names it and how to profile.
    let plain = edited_fixture(dir.path(), "plain.json", |_| {});
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .arg("report")
            .arg(&plain)
            .arg(&after)
            .arg("--html")
            .arg(&html),
    );
    let page = fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(
            "syscall null [a]: B against A: A has no profile (run it with `osbench run … \
             --profile`); B has one, so there is no differential."
        ),
        "{page}"
    );
}

#[test]
fn a_report_of_one_profiled_run_folds_each_flame_graph() {
    let dir = tempfile::tempdir().unwrap();
    let run = edited_fixture(dir.path(), "run.json", |doc| {
        syscall_null(doc, "a")["profile"] = profile_json(&[("main;getpid", 5)]);
    });
    let html = dir.path().join("r.html");
    succeed(
        osbench(tmp_store("report-cli-results.sqlite"))
            .arg("report")
            .arg(&run)
            .arg("--html")
            .arg(&html),
    );
    let page = fs::read_to_string(&html).unwrap();
    let profiles = &page[page.find("<h3>Profiles</h3>").expect("a Profiles section")..];
    assert!(profiles.starts_with(
        "<h3>Profiles</h3>\n<details><summary>Flame graph: syscall null [a]</summary>\n\
         <figure id=\"doc-0-flame-7\">\n<svg class=\"flame\""
    ));
    assert!(profiles.contains("<title>getpid (5 samples, 100.00%)</title>"));
    // The plots are still there, before it; the flame graph is one more SVG.
    assert!(page.find("<h3>Plots</h3>").unwrap() < page.find("<h3>Profiles</h3>").unwrap());
    assert_eq!(
        page.matches("<svg").count(),
        5 + 2,
        "five plots, a flame graph (two <svg>s)"
    );
    assert!(!page.contains("Where the time went"));
}
