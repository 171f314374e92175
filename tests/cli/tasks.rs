//! `run --tasks`: a real short sweep of getppid as processes and threads
//! (per-task throughput and efficiency in the document and the table, the
//! scaling plot with a line per configuration, no helper left), the limits
//! refused before anything starts, and `compare` per task count.

use crate::common::ok;
use crate::kit::*;

/// The swept series of a document: (case, tasks, mode).
fn swept(doc: &osbench::document::Document) -> Vec<(String, u64, String)> {
    doc.series
        .iter()
        .map(|s| {
            (
                s.key.case.clone(),
                s.params["tasks"].as_u64().unwrap(),
                s.params["tasks_mode"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The sweep's document at `json`: syscall null at 1 and 2 tasks, both
/// modes, 1 ms samples, `samples` of them over `invocations`.
fn sweep(json: &Path, samples: &str, invocations: &str) -> String {
    let _helpers = helper_lock();
    let args = [
        "run",
        "syscall:case=null",
        "--tasks",
        "1,2",
        "--tasks-mode",
        "both",
        "--no-perf",
        "--samples",
        samples,
        "--invocations",
        invocations,
        "--sample-time",
        "1",
        "--warmup",
        "0",
    ];
    let out = run_ok(&args, json);
    assert!(helper_processes().is_empty(), "{:?}", helper_processes());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_real_sweep_gives_per_task_throughput_efficiency_and_its_plot() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("sweep.json");
    let text = sweep(&json, "3", "1");
    let doc = read_document(&json).unwrap();
    let mut got = swept(&doc);
    got.sort();
    let want = [
        ("null@1p", 1, "processes"),
        ("null@1t", 1, "threads"),
        ("null@2p", 2, "processes"),
        ("null@2t", 2, "threads"),
    ];
    assert_eq!(got.len(), 4, "{got:?}");
    for ((case, n, mode), (wc, wn, wm)) in got.iter().zip(want) {
        assert_eq!((case.as_str(), *n, mode.as_str()), (wc, wn, wm));
    }
    assert!(
        doc.series
            .iter()
            .all(|s| s.summary.median > 0.0 && s.op.contains("per task"))
    );
    // will-it-scale's columns, a row per count, and where each mode stops.
    let header = text
        .lines()
        .find(|l| l.starts_with("tasks") && l.contains("processes"))
        .unwrap_or_else(|| panic!("{text}"));
    for col in [
        "processes/task",
        "processes eff",
        "threads",
        "threads eff",
        "linear",
    ] {
        assert!(header.contains(col), "{header}");
    }
    let row = |n: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(n))
    };
    let one = row("1").unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        one.matches("100%").count(),
        2,
        "efficiency at 1 task: {one}"
    );
    assert!(row("2").is_some_and(|r| r.contains('%')), "{text}");
    assert!(
        text.contains("processes: s") && text.contains("threads: s"),
        "{text}"
    );
    // The plots: a line per configuration (processes, threads).
    let plots = dir.path().join("plots");
    ok(osbench(shared_store())
        .args(["plot", "--out"])
        .arg(&plots)
        .arg(&json)
        .output()
        .unwrap());
    let svg = fs::read_to_string(plots.join("scaling-efficiency.svg")).unwrap();
    assert!(svg.contains("syscall null processes") && svg.contains("syscall null threads"));
    assert!(plots.join("scaling-throughput.svg").exists());
    // The HTML report: the table and both plots.
    let html = dir.path().join("r.html");
    ok(osbench(shared_store())
        .args(["report", "--html"])
        .arg(&html)
        .arg(&json)
        .output()
        .unwrap());
    let page = fs::read_to_string(&html).unwrap();
    for part in [
        "Scaling efficiency against tasks",
        "Throughput against tasks",
        "threads eff",
    ] {
        assert!(page.contains(part), "{part}");
    }
}

/// Rewrites the measured invocation medians of `doc` to a steady ±2 %
/// around 100 ns: what is tested is that compare keeps task counts apart,
/// not this loaded machine's spread between invocations.
fn steady(doc: &Path) {
    let mut d: serde_json::Value = serde_json::from_str(&fs::read_to_string(doc).unwrap()).unwrap();
    for s in d["series"].as_array_mut().unwrap() {
        let n = s["invocations"].as_array().unwrap().len();
        let values: Vec<f64> = (0..n).map(|i| 98.0 + (i % 5) as f64).collect();
        s["invocations"] = values.clone().into();
        s["samples"] = values.into();
        for k in ["median", "mean", "min", "max", "ci_low", "ci_high"] {
            s["summary"][k] = 100.0.into();
        }
    }
    fs::write(doc, serde_json::to_string(&d).unwrap()).unwrap();
}

#[test]
fn compare_judges_each_task_count_on_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    // Invocations: separately saved runs are compared by their spread.
    sweep(&a, "3", "6");
    steady(&a);
    // A change that hurts only at 2 tasks.
    planted_copy_where(&a, &b, 3.0, "osbench/1", |s| s["params"]["tasks"] == 2);
    let cmp = dir.path().join("cmp.json");
    ok(osbench(shared_store())
        .arg("compare")
        .args([&a, &b])
        .arg("--json")
        .arg(&cmp)
        .output()
        .unwrap());
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&cmp).unwrap()).unwrap();
    let rows = record["comparisons"].as_array().unwrap();
    let verdict = |case: &str| {
        rows.iter()
            .find(|r| r["case"] == case)
            .unwrap_or_else(|| panic!("{case}: {rows:?}"))["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for case in ["null@2p", "null@2t"] {
        assert_eq!(verdict(case), "slower", "{case}");
    }
    for case in ["null@1p", "null@1t"] {
        assert_ne!(verdict(case), "slower", "{case}");
        assert_ne!(verdict(case), "faster", "{case}");
    }
}

#[test]
fn task_counts_beyond_the_limits_are_refused_naming_the_limit() {
    let _helpers = helper_lock();
    let quick = "--samples 3 --sample-time 1 --warmup 0 --no-perf";
    // Each copy of a pipe round trip holds descriptors in osbench's own table.
    for (shell, limit, run, words) in [
        (
            "sh",
            "-n 40",
            "ipc:kind=pipe --tasks 64 --tasks-mode threads",
            [
                "RLIMIT_NOFILE",
                "is 40",
                "ulimit -n",
                "--tasks 64 (threads)",
            ],
        ),
        (
            "bash",
            "-u 50",
            "syscall:case=null --tasks 64",
            [
                "RLIMIT_NPROC",
                "is 50",
                "ulimit -u",
                "--tasks 64 (processes)",
            ],
        ),
    ] {
        let (code, err, out) = under_ulimit(shell, limit, &format!("run {run} {quick}"));
        assert_eq!(code, Some(2), "{err}");
        assert!(words.iter().all(|w| err.contains(w)), "{err}");
        assert!(!out.contains("median"), "nothing measured: {out}");
    }
    assert!(helper_processes().is_empty(), "{:?}", helper_processes());
}

#[test]
fn an_experiment_file_sweeps_through_its_selectors_in_every_configuration() {
    let _helpers = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let (file, json) = (dir.path().join("x.toml"), dir.path().join("x.json"));
    fs::write(
        &file,
        "select = [\"syscall:case=null,tasks=1..2,tasks_mode=threads\"]\n\
         [[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let out = quick_run(
        &["run", "--experiment", file, "--rounds", "2", "--no-perf"],
        &json,
    );
    let doc = read_document(&json).unwrap();
    let mut keys: Vec<String> = doc.series.iter().map(|s| s.key.to_string()).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "syscall null@1t [a]",
            "syscall null@1t [b]",
            "syscall null@2t [a]",
            "syscall null@2t [b]"
        ]
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("syscall null [a], tasks placed spread"),
        "{text}"
    );
    assert!(
        text.contains("syscall null [b], tasks placed spread"),
        "{text}"
    );
    assert!(helper_processes().is_empty(), "{:?}", helper_processes());
}

#[test]
fn ctrl_c_during_a_sweep_leaves_no_copy_running() {
    let _helpers = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("x.json");
    for mode in ["processes", "threads"] {
        // Many samples: still measuring when the signal comes.
        let args = format!(
            "run ipc:kind=pipe --tasks 2 --tasks-mode {mode} --samples 5000 --no-perf -q --json"
        );
        let status = interrupt_after(Duration::from_millis(2500), &args, &json, || {
            // Each copy's partner at least (and the copies themselves as processes).
            assert!(
                helper_processes().len() >= 2,
                "{mode}: {:?}",
                helper_processes()
            );
        });
        assert_eq!(status.code(), Some(130), "{mode}");
        assert!(
            wait_until(Duration::from_secs(2), Duration::from_millis(50), || {
                helper_processes().is_empty()
            }),
            "{mode}: left behind: {:?}",
            helper_processes()
        );
    }
}
