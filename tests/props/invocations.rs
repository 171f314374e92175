//! Separate runs compared truthfully, through the binary: a run measured in
//! several fresh processes keeps each one's samples, median, layout and
//! drift sentinels; one invocation a side is not evidence; runs that share a
//! label are replicates; stored runs tell how far one invocation lands.
//! Short real runs: the assertions are on kinds of verdict and on what the
//! documents record, never on speed.

use crate::common;

use std::path::Path;

use common::{ok, osbench};
use osbench::store::read_document;

/// A quick run: few short samples, no warm-up.
const QUICK: [&str; 6] = ["--samples", "6", "--sample-time", "1", "--warmup", "0"];

/// A quick `spin:work=100` run with `extra` arguments, stored in `store`.
fn spin(store: &Path, extra: &[&str]) -> (String, String) {
    ok(osbench(store)
        .args(["run", "spin:work=100", "-q"])
        .args(QUICK)
        .args(extra)
        .output()
        .unwrap())
}

/// `compare` of `runs` with its JSON record on standard output.
fn compare_json(store: &Path, runs: &[&str]) -> serde_json::Value {
    let (stdout, _) = ok(osbench(store)
        .arg("compare")
        .args(runs)
        .args(["--json", "-"])
        .output()
        .unwrap());
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn a_run_of_several_invocations_keeps_each_one_and_its_layout() {
    let dir = tempfile::tempdir().unwrap();
    let (store, file) = (dir.path().join("r.sqlite"), dir.path().join("run.json"));
    let (stdout, _) = spin(
        &store,
        &["--invocations", "3", "--json", file.to_str().unwrap()],
    );
    let doc = read_document(&file).unwrap();
    let s = &doc.series[0];
    assert_eq!(s.invocations.len(), 3, "{:?}", s.invocations);
    assert_eq!(s.invocation_samples, [2, 2, 2], "--samples shared out");
    assert_eq!(s.samples.len(), 6);
    let spread = s.invocation_spread.expect("spread between and within");
    assert!(spread.between_cv >= 0.0 && spread.within_cv >= 0.0);
    assert!(stdout.contains("3 invocations"), "{stdout}");
    assert_eq!(doc.run.invocations.len(), 3);
    assert_eq!(doc.run.order.len(), 3, "{:?}", doc.run.order);
    for (i, inv) in doc.run.invocations.iter().enumerate() {
        assert_eq!(inv.index, i + 1);
        for readings in [&inv.sentinels_before, &inv.sentinels_after] {
            let names: Vec<&str> = readings.iter().map(|r| r.name.as_str()).collect();
            assert_eq!(names, ["register-loop", "pointer-chase"]);
            assert!(readings.iter().all(|r| r.ns_per_step > 0.0));
        }
    }
    let layouts: Vec<(usize, usize)> = doc
        .run
        .invocations
        .iter()
        .map(|i| (i.env_pad, i.heap_offset))
        .collect();
    assert!(
        layouts.windows(2).any(|w| w[0] != w[1]),
        "layouts are varied: {layouts:?}"
    );
    assert!(
        doc.run.host.is_none(),
        "the run is this host's, not a remote's"
    );
    // The perf counting pass ran here, after the invocations, and its hooks were waited out.
    assert!(doc.run.perf_hooks_wait_ms.is_some());
}

#[test]
fn one_invocation_a_side_is_not_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none.sqlite");
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    for f in [&a, &b] {
        spin(
            &store,
            &[
                "--invocations",
                "1",
                "--no-store",
                "--json",
                f.to_str().unwrap(),
            ],
        );
    }
    let (stdout, _) = ok(osbench(&store)
        .arg("compare")
        .args([&a, &b])
        .output()
        .unwrap());
    assert!(
        // An A/A pair under load can land 1.5× apart: the words then name the factor.
        stdout.contains("[no interval]") && stdout.contains("one invocation a side"),
        "{stdout}"
    );
    let record = compare_json(&store, &[a.to_str().unwrap(), b.to_str().unwrap()]);
    let c = &record["comparisons"][0];
    assert_eq!(c["verdict"], "too-few", "{c}");
    assert_eq!(c["replicated"]["unit"], "invocations");
    assert_eq!(
        (
            c["replicated"]["baseline"].as_u64(),
            c["replicated"]["candidate"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

#[test]
fn labelled_runs_are_replicates_and_stored_runs_tell_one_invocations_spread() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("r.sqlite");
    for label in ["before", "after", "before", "after"] {
        spin(&store, &["--invocations", "2", "--label", label]);
    }
    let (stdout, _) = ok(osbench(&store)
        .args(["compare", "before", "after"])
        .output()
        .unwrap());
    assert!(
        stdout.contains("A = before (runs 1, 3) (baseline)")
            && stdout.contains("B = after (runs 2, 4)"),
        "{stdout}"
    );
    assert!(stdout.contains("(4 invocations a side)"), "{stdout}");
    let c = &compare_json(&store, &["before", "after"])["comparisons"][0];
    assert_ne!(c["verdict"], "too-few", "{c}");
    assert_eq!(c["replicated"]["baseline"], 4);

    // One invocation a side: the four earlier runs (eight invocations) tell
    // the spread — those of them measured quiet: a run measured while other
    // processes used half a CPU (on a shared machine, others' builds) is
    // left out of it.
    spin(&store, &["--invocations", "1", "--label", "x"]);
    spin(&store, &["--invocations", "1", "--label", "y"]);
    let db = osbench::store::Store::open_existing(&store).unwrap();
    let quiet = (1..=4)
        .filter(|&id| {
            let doc = db.document(id).unwrap().unwrap();
            !osbench::env::Conditions::of(&doc.env).contended()
        })
        .count();
    let c = &compare_json(&store, &["x", "y"])["comparisons"][0];
    if quiet < 2 {
        assert_eq!(c["verdict"], "too-few", "{quiet} quiet stored runs: {c}");
        return;
    }
    assert_ne!(c["verdict"], "too-few", "{c}");
    assert_eq!(c["replicated"]["prior_runs"], quiet, "{c}");
    let words = c["verdict_words"].as_str().unwrap();
    assert!(
        words.contains(&format!("taken from {quiet} stored runs")),
        "{words}"
    );
}

#[test]
fn several_invocations_are_refused_with_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let out = osbench(dir.path().join("r.sqlite"))
        .args(["run", "spin:work=100", "--config", "a=", "--config", "b="])
        .args(["--invocations", "3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--invocations") && stderr.contains("round by round"),
        "{stderr}"
    );
}
