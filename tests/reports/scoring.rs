//! The change-point scoring of scripts/score-changepoints.py run for real:
//! a small synthetic corpus with known steps (scripts/changepoint-corpus.py,
//! 16 series, seed 2026), osbench's detection fed it night by night through
//! the `changepoint_feed` example, and Apache Otava's on the same series
//! (`pip install apache-otava`; the Python is `$OSBENCH_OTAVA_PYTHON`, else
//! python3). Skipped, saying so, without Otava unless
//! `OSBENCH_REQUIRE_OTAVA=1` (CI) requires it. What it holds: the script
//! scores both, and on this corpus osbench's nightly announcements are
//! mostly true (fewer with no step near than Otava's), one id per step, at
//! most 0.1 false alerts per flat series, an F1 of at least 0.6. It asserts
//! nothing about speed.

use std::path::PathBuf;
use std::process::Command;

fn python() -> String {
    std::env::var("OSBENCH_OTAVA_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn have_otava() -> bool {
    let found = Command::new(python())
        .args(["-c", "import otava.analysis"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("OSBENCH_REQUIRE_OTAVA").as_deref() != Ok("1"),
            "Apache Otava is required (OSBENCH_REQUIRE_OTAVA=1) but {} cannot import it: \
             pip install apache-otava, or set OSBENCH_OTAVA_PYTHON",
            python()
        );
        eprintln!(
            "skipped: {} cannot import otava (pip install apache-otava)",
            python()
        );
    }
    found
}

/// The example beside this test binary (a whole `cargo test` builds it;
/// built here when a filtered one did not).
fn feed() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let feed = profile.join("examples").join("changepoint_feed");
    if !feed.exists() {
        let built = Command::new(env!("CARGO"))
            .args(["build", "--example", "changepoint_feed"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .unwrap();
        assert!(
            built.success(),
            "cargo build --example changepoint_feed failed"
        );
    }
    feed
}

#[test]
fn osbench_and_otava_are_scored_on_the_same_corpus() {
    if !have_otava() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("scores.json");
    let out = Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/score-changepoints.py"
        ))
        .args([
            "--series",
            "16",
            "--seed",
            "2026",
            "--min-runs",
            "40",
            "--max-runs",
            "60",
        ])
        .arg("--feed")
        .arg(feed())
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("| osbench |") && table.contains("| Otava 0.8 defaults |"),
        "{table}"
    );
    let scores: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (ours, otava) = (&scores["osbench"], &scores["Otava 0.8 defaults"]);
    let number = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    assert!(
        number(&ours["feed"]["spurious_share"]) < number(&otava["feed"]["spurious_share"]),
        "{table}"
    );
    assert!(number(&ours["feed"]["ids_per_step"]) <= 1.1, "{table}");
    assert!(number(&ours["all"]["false_per_flat"]) <= 0.1, "{table}");
    assert!(number(&ours["all"]["f1"]) >= 0.6, "{table}");
}
