//! Width and terminal: the default suite fits the terminal, pipes keep one
//! line per row, no wrapped line on an 80-column terminal; and every other
//! command that prints a table or prose (`list`, `env`, `history`, its
//! `--changes`, `regressions`, `compare`) fits 80 and 100 columns on a
//! terminal without a broken word, one line per row in a pipe unless
//! `--width` asks, and `--wide` keeps the pipe's layout on a terminal
//! (`crate::common::terminal` says what "broken" means). `jobs` is tried in
//! the queue tests (it needs PostgreSQL), `explain` in the reports' (its
//! profiled documents are made there).

use std::path::PathBuf;

use super::kit::*;
use crate::common::terminal::{
    assert_fits, assert_fitted, check_widths, have_script, on_terminal, on_terminal_sized, piped,
    without_escapes,
};

#[test]
fn the_default_suite_fits_the_terminal_and_pipes_keep_one_line_per_row() {
    let _serial = helper_lock(); // the suite starts helpers (ctx, ipc, hackbench's workers)
    let dir = tempfile::tempdir().unwrap();
    // At 100 columns as asked (the terminal's width is tried through a pty below).
    let json = dir.path().join("run.json");
    let out = quick_run(&["run", "--no-store", "--width", "100"], &json);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_fits(&text, 100, "the default suite");
    assert!(
        text.contains("syscall") && text.contains("messaging"),
        "{text}"
    );
    // A pipe: one line per series in the results table, however wide.
    let out = quick_run(&["run", "--no-store"], &json);
    let text = String::from_utf8(out.stdout).unwrap();
    let series = read_document(&json).unwrap().series;
    let results: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
    let sampled = series.iter().filter(|s| s.quantiles.is_none()).count();
    assert_eq!(results.len(), 1 + sampled, "{text}");
    assert!(
        results
            .iter()
            .any(|l| osbench::report::display_width(l) > 100),
        "{text}"
    );
    assert!(!text.contains("\nop:\n"), "{text}");
}

#[test]
fn the_default_suite_has_no_wrapped_line_on_an_80_column_terminal() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no script(1) to give osbench a terminal");
        return;
    }
    let _serial = helper_lock(); // the suite starts helpers (ctx, ipc, hackbench's workers)
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let run = format!(
        "stty cols 80 rows 50; {} run --no-store {}",
        bin.display(),
        QUICK.join(" ")
    );
    let (raw, _) = crate::common::ok(
        Command::new("script")
            .args(["-qec", &run, "/dev/null"])
            .env("OSBENCH_STORE", shared_store())
            .stdin(Stdio::null())
            .output()
            .unwrap(),
    );
    // Results, warnings and the progress bar share the terminal: what stays
    // on screen of each line is what follows its last carriage return.
    let text: String = raw
        .lines()
        .map(|l| without_escapes(l.rsplit('\r').next().unwrap_or("")) + "\n")
        .collect();
    assert!(text.contains("messaging"), "{text}");
    assert!(text.contains("osbench: warning: "), "{text}");
    assert_fits(&text, 80, "the default suite on a terminal");
}

/// Twelve nightly runs of the small fixture imported into a store of their
/// own in `dir` (`night-N.json` there too): from night 8 on, each case
/// 50 % slower, on another kernel, while python3 used a CPU; with commits
/// (`--meta commit=cNN`), so history has a revision column, regressions
/// finds the change, and compare names the differing conditions.
fn nights(dir: &Path) -> PathBuf {
    let fixture: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(crate::common::fixture("small-run.json")).unwrap(),
    )
    .unwrap();
    let mut files = Vec::new();
    for n in 1..=12u32 {
        let mut doc = fixture.clone();
        let factor = if n >= 8 { 1.5 } else { 1.0 };
        doc["run"]["started"] = format!("2026-11-{n:02}T02:00:00Z").into();
        doc["run"]["finished"] = format!("2026-11-{n:02}T02:00:05Z").into();
        doc["run"]["label"] = format!("night-{n}").into();
        doc["run"]["meta"] = serde_json::json!({ "commit": format!("c{n:02}") });
        let busy: &[(&str, f64)] = if n >= 8 { &[("python3", 0.99)] } else { &[] };
        doc["env"]["load"] = super::compare::load(busy);
        if n >= 8 {
            doc["env"]["kernel"] = "6.99.0-planted".into();
        }
        for s in doc["series"].as_array_mut().unwrap() {
            let samples = s["samples"].as_array_mut().unwrap();
            for (i, v) in samples.iter_mut().enumerate() {
                let jitter = 1.0 + 0.01 * ((n as usize * 7 + i) % 5) as f64;
                *v = (v.as_f64().unwrap() * factor * jitter).into();
            }
            for k in [
                "median", "mean", "stddev", "min", "max", "mad", "ci_low", "ci_high",
            ] {
                s["summary"][k] = (s["summary"][k].as_f64().unwrap() * factor).into();
            }
        }
        let file = dir.join(format!("night-{n}.json"));
        fs::write(&file, doc.to_string()).unwrap();
        files.push(file);
    }
    let store = dir.join("nights.sqlite");
    crate::common::ok(osbench(&store).arg("import").args(&files).output().unwrap());
    store
}

/// Every line is compared.
fn all(_: &str) -> bool {
    true
}

#[test]
fn every_command_fits_80_and_100_columns_on_a_terminal_without_a_broken_word() {
    if !have_script() {
        eprintln!("skipped: no script(1) to give osbench a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = nights(dir.path());
    let at = |args: &[&str]| check_widths(&store, dir.path(), args, all);
    // Each piped output is one line per row, wider than the terminals: the
    // fitting above was needed.
    let wider = |text: &str| {
        text.lines()
            .any(|l| osbench::report::display_width(l) > 100)
    };
    let list = at(&["list"]);
    assert!(wider(&list), "{list}");
    let history = at(&["history"]);
    assert!(
        history.contains("night-12") && history.contains("c12"),
        "{history}"
    );
    at(&["history", "--by", "host"]);
    let case = at(&["history", "syscall:null"]);
    assert!(case.contains("6.99.0-planted"), "{case}");
    let changes = at(&["history", "syscall:null", "--changes"]);
    assert!(changes.contains("Change points by E-divisive"), "{changes}");
    let sweep = at(&["regressions", "--last", "6"]);
    assert!(
        wider(&sweep) && sweep.contains("revisions after"),
        "{sweep}"
    );
    let compared = at(&["compare", "night-1.json", "night-12.json"]);
    assert!(
        wider(&compared) && compared.contains("Conditions: "),
        "{compared}"
    );
    // The environment's load is read anew by each run: its lines are left out.
    let env = check_widths(&store, dir.path(), &["env"], |l| !l.starts_with("load."));
    assert!(wider(&env) && env.contains("cmdline"), "{env}");
}

#[test]
fn width_fits_a_pipe_and_wide_keeps_one_line_per_row_on_a_terminal() {
    if !have_script() {
        eprintln!("skipped: no script(1) to give osbench a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = nights(dir.path());
    for args in [
        &["list"][..],
        &["history"],
        &["history", "syscall:null", "--changes"],
        &["regressions", "--last", "6"],
    ] {
        let (_, whole) = piped(&store, dir.path(), args);
        let fitted = piped(&store, dir.path(), &[args, &["--width", "80"]].concat()).1;
        assert_fitted(&fitted, &whole, 80, &args.join(" "));
        let (_, wide) = on_terminal(&store, dir.path(), &[args, &["--wide"]].concat(), 80);
        assert_eq!(wide, whole, "{}", args.join(" "));
    }
    // A terminal that reports its columns but no rows is still fitted.
    let (_, shown) = on_terminal_sized(&store, dir.path(), &["history"], "cols 80 rows 0");
    let whole = piped(&store, dir.path(), &["history"]).1;
    assert!(whole.lines().any(|l| l.chars().count() > 80), "{whole}");
    assert_fitted(&shown, &whole, 80, "history on a terminal of no rows");
}

#[test]
fn the_check_finds_a_broken_word_a_lost_word_and_a_long_line() {
    let fails = |shown: &'static str, whole: &'static str| {
        std::panic::catch_unwind(|| assert_fitted(shown, whole, 20, "t")).is_err()
    };
    assert!(fails(
        "id  revi\n    sions after\n",
        "id  revisions after\n"
    ));
    assert!(fails("id  revisions\n", "id  revisions after\n"));
    assert!(fails(
        "id  revisions after and more\n",
        "id  revisions after and more\n"
    ));
    // Wrapped at words, an interval tightened, a text moved to a legend: whole.
    assert!(!fails(
        "id  revisions\n    after\n",
        "id  revisions after\n"
    ));
    assert!(!fails(
        "case  median\nnull  1.2–1.5\nop:\n  null: one call\n",
        "case  median  op\nnull  1.2 – 1.5  one call\n"
    ));
    // A token wider than half the terminal may break after its separators.
    assert!(!fails(
        "allowed a|bb|ccc|\n  dddd|eeeee\n",
        "allowed a|bb|ccc|dddd|eeeee\n"
    ));
}
