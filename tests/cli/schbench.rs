//! The `schbench` family end to end: a short real run's percentiles and
//! counters, the rate pacing, `list`'s parameters and differences, and the
//! parameter checks. Speeds are never asserted: only order, presence and a
//! wide band around the rate asked.

use super::kit::*;

/// Light work per request, so that a debug build keeps up.
const LIGHT: &str = "operations=1,footprint_kb=16";

/// The per-sample values of counter `name` of the only series in `doc`.
fn counter(doc: &osbench::document::Document, name: &str) -> Vec<f64> {
    doc.series[0]
        .counter_samples
        .get(name)
        .unwrap_or_else(|| panic!("no counter {name}: {:?}", doc.series[0].counters.keys()))
        .clone()
}

/// The document of a quick run (3 runs of 1 s) of `schbench:PARAMS` with light work.
fn short_run(params: &str) -> osbench::document::Document {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    quick_run(&["run", &format!("schbench:{params},{LIGHT}"), "-q"], &json);
    read_document(&json).unwrap()
}

#[test]
fn schbench_short_run_gives_ordered_percentiles_and_every_statistic() {
    let doc = short_run("stat=request-p99");
    let s = &doc.series[0];
    assert_eq!((s.samples.len(), s.unit.as_str()), (3, "us"));
    // The sample is the run's own request p99, not its wall time (1 s).
    let p99 = counter(&doc, "request_p99_us");
    assert_eq!(s.samples, p99);
    for kind in ["wakeup", "request"] {
        let at = |p: &str| counter(&doc, &format!("{kind}_{p}_us"));
        let (p50, p90, p99, p999) = (at("p50"), at("p90"), at("p99"), at("p999"));
        for i in 0..3 {
            assert!(
                0.0 < p50[i] && p50[i] <= p90[i] && p90[i] <= p99[i] && p99[i] <= p999[i],
                "{kind} run {i}: {} {} {} {}",
                p50[i],
                p90[i],
                p99[i],
                p999[i]
            );
        }
    }
    assert!(counter(&doc, "rps").iter().all(|r| *r > 0.0));
    assert!(counter(&doc, "requests").iter().all(|r| *r >= 1.0));
    assert!(s.anchor.starts_with("schbench -m 1 -t "), "{}", s.anchor);
    assert!(helper_processes().is_empty());
}

#[test]
fn schbench_paces_requests_at_the_rate_asked() {
    let doc = short_run("stat=rps,rps=200");
    let s = &doc.series[0];
    assert_eq!(s.key.case, "rps@R200");
    assert!(s.anchor.ends_with("-R 200"), "{}", s.anchor);
    assert!(counter(&doc, "rps_offered").iter().all(|r| *r == 200.0));
    // A wide band: the pacing, not the machine's speed, is under test.
    for (rps, us) in counter(&doc, "rps").iter().zip(&s.samples) {
        assert!((100.0..=300.0).contains(rps), "{rps} requests/s at -R 200");
        assert!(
            (1e6 / us - rps).abs() < 1.0,
            "{us} µs per request vs {rps}/s"
        );
    }
}

#[test]
fn list_schbench_shows_its_parameters_and_differences() {
    let out = osbench(shared_store())
        .args(["list", "schbench"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "message_threads",
        "workers",
        "runtime",
        "operations",
        "footprint_kb",
        "sleep_us",
        "rps",
        "auto_p99",
        "anchor: schbench -m 1 -t ",
        "differs from it on purpose: ",
        "schbench -A targets a CPU busy %",
        "wakeup-p99.9",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
}

#[test]
fn schbench_refuses_a_rate_below_one_per_message_thread() {
    let out = osbench(shared_store())
        .args(["run", "schbench:rps=1,message_threads=2", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("set rps to at least 2"), "{err}");
    let out = osbench(shared_store())
        .args(["run", "schbench:runtime=0", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("invalid value '0' for schbench:runtime; allowed: an integer from 1 to 3600"),
        "{err}"
    );
}

#[test]
fn interrupted_schbench_stops_inside_a_run_and_keeps_the_runs_done() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("i.json");
    // 1 s runs: the signal at 2.5 s lands inside the third.
    let args = format!("run schbench:stat=request-p50,{LIGHT} -q --samples 20 --warmup 0 --json");
    let started = std::time::Instant::now();
    let status = interrupt_after(Duration::from_millis(2500), &args, &json, || {});
    assert_eq!(status.code(), Some(130));
    // The run in progress stopped at once, not at its end or the 20th.
    assert!(started.elapsed() < Duration::from_secs(8));
    let doc = read_document(&json).unwrap();
    let n = doc.series[0].samples.len();
    assert!((1..20).contains(&n), "{n} runs kept");
    assert_eq!(counter(&doc, "request_p50_us").len(), n);
}

#[test]
fn an_unmeetable_auto_p99_keeps_samples_at_the_best_rate_and_says_so() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("a.json");
    // Every request sleeps 100 µs: no rate gives a request p99 of 1 µs. The
    // search starts at rps=4 and halves to 1: three probes.
    let selector = format!("schbench:stat=request-p99,auto_p99=1,rps=4,{LIGHT}");
    let args = ["run", &selector, "-q", "--samples", "2", "--warmup", "0"];
    run_ok(&args, &json);
    let doc = read_document(&json).unwrap();
    let s = &doc.series[0];
    assert_eq!(s.samples.len(), 2);
    let warning = s
        .warnings
        .iter()
        .find(|w| w.starts_with("auto_p99: no request rate met request p99 ≤ 1 µs"))
        .unwrap_or_else(|| panic!("{:?}", s.warnings));
    let best = counter(&doc, "rps_offered")[0];
    assert!([1.0, 2.0, 4.0].contains(&best), "{best}");
    assert!(
        warning.contains("among the 3 rates tried, 1 to 4 requests/s"),
        "{warning}"
    );
    assert!(
        warning.contains(&format!("The best was {best} requests/s with request p99")),
        "{warning}"
    );
}
