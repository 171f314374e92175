//! `osbench compare`: planted slowdowns and speed-ups, the gate, bad
//! documents, differing command lines and environments as confounders.

use super::kit::*;

/// Bandwidth cases keep time per operation in their samples and headline
/// MB/s: a planted higher bandwidth (a shorter time per 10 MiB) is called
/// faster, a `--gate` does not trip on it, and the lower one trips it.
#[test]
fn a_planted_higher_bandwidth_is_faster_and_does_not_trip_the_gate() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    // Separate runs are compared invocation by invocation.
    let args = [
        "run",
        "stream:kind=unix",
        "-q",
        "--no-perf",
        "--samples",
        "12",
    ];
    let quick = ["--invocations", "6", "--sample-time", "1", "--warmup", "0"];
    run_ok(&[&args[..], &quick[..]].concat(), &a);
    // Ten times the MB/s: beyond the spread of invocations on a loaded machine
    // (CI saw invocation medians 3.4x apart beside other tests' builds).
    planted_copy(&a, &b, 0.1, "osbench/1");
    let doc = |p: &Path| -> serde_json::Value {
        serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
    };
    assert_eq!(doc(&a)["series"][0]["bytes_per_op"], 10485760.0);
    let report = |p: &Path| {
        let (stdout, _) = crate::common::ok(
            osbench(shared_store())
                .arg("export")
                .arg(p)
                .args(["--markdown", "-"])
                .output()
                .unwrap(),
        );
        stdout
    };
    // The results row: | stream | unix | MEDIAN | … | MB/s | …
    let mbs = |text: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with("| stream"))
            .unwrap_or_else(|| panic!("no stream row:\n{text}"));
        line.split('|').nth(3).unwrap().trim().parse().unwrap()
    };
    let (ra, rb) = (report(&a), report(&b));
    assert!(ra.contains("MB/s"), "{ra}");
    assert!((mbs(&rb) / mbs(&ra) - 10.0).abs() < 0.1, "{ra}\n{rb}");
    let compare = |x: &Path, y: &Path, gate: &str| {
        osbench(shared_store())
            .arg("compare")
            .arg(x)
            .arg(y)
            .args(["--gate", gate])
            .output()
            .unwrap()
    };
    let faster = compare(&a, &b, "10");
    let text = String::from_utf8(faster.stdout).unwrap();
    assert!(text.contains("→ faster") && text.contains("MB/s"), "{text}");
    assert_eq!(
        faster.status.code(),
        Some(0),
        "a higher bandwidth must not trip the gate: {text}"
    );
    let slower = compare(&b, &a, "10");
    let text = String::from_utf8(slower.stdout).unwrap();
    assert!(text.contains("→ slower"), "{text}");
    assert_eq!(slower.status.code(), Some(1), "{text}");
}

#[test]
fn compare_finds_a_planted_slowdown_and_trips_the_gate() {
    let _serial = helper_lock(); // its samples are timed: not beside 2,000 hackbench workers
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let run = osbench(shared_store())
        .args([
            "run",
            "syscall:case=null",
            "-q",
            "--no-perf",
            "--invocations",
            "6",
            "--samples",
            "12",
            "--sample-time",
            "1",
            "--warmup",
            "0",
            "--json",
        ])
        .arg(&a)
        .output()
        .unwrap();
    assert!(run.status.success());
    // Twice the time: beyond the spread of invocations on a loaded machine
    // (CI saw ±16 % between 1 ms-sample invocations, and 25 % inconclusive).
    planted_copy(&a, &b, 2.0, "osbench/1");
    let out = osbench(shared_store())
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("B/A  2.000") && text.contains("→ slower"),
        "{text}"
    );
    assert!(text.contains("+100.0 %"), "seed-002 layout: {text}");
    assert!(
        text.contains("Environment differences") && text.contains("6.99.0-planted"),
        "{text}"
    );
    let out_json = dir.path().join("cmp.json");
    let written = osbench(shared_store())
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--json")
        .arg(&out_json)
        .output()
        .unwrap();
    assert!(written.status.success());
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&out_json).unwrap()).unwrap();
    assert_eq!(record["comparisons"][0]["verdict"], "slower");
    assert_eq!(
        record["comparisons"][0]["candidate"],
        b.display().to_string()
    );
    let gated = osbench(shared_store())
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--gate", "10"])
        .output()
        .unwrap();
    assert_eq!(gated.status.code(), Some(1));
    let loose = osbench(shared_store())
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--gate", "150"])
        .output()
        .unwrap();
    assert_eq!(loose.status.code(), Some(0), "100 % is under a 150 % gate");
    // The same document twice: never a difference; equivalent once the margin
    // is wider than the sampling noise of these short debug-build samples.
    let compare_self = |extra: &[&str]| {
        let out = osbench(shared_store())
            .arg("compare")
            .arg(&a)
            .arg(&a)
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let same = compare_self(&[]);
    assert!(
        !same.contains("→ slower") && !same.contains("→ faster"),
        "{same}"
    );
    assert!(compare_self(&["--equivalence", "50"]).contains("→ equivalent"));
}

#[test]
fn compare_rejects_bad_documents_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (a, other, broken, disjoint) = (
        dir.path().join("a.json"),
        dir.path().join("other.json"),
        dir.path().join("broken.json"),
        dir.path().join("disjoint.json"),
    );
    quick_run(&["run", "syscall:case=null", "-q"], &a);
    planted_copy(&a, &other, 1.0, "osbench/9");
    let text = fs::read_to_string(&a).unwrap();
    fs::write(&broken, &text[..text.len() / 2]).unwrap();
    quick_run(&["run", "syscall:case=read", "-q"], &disjoint);
    let cases: [(&Path, &str); 3] = [
        (
            &broken,
            "broken.json: not an osbench result document: EOF while parsing",
        ),
        (&other, "schema 'osbench/9', this osbench reads 'osbench/1'"),
        (&disjoint, "no case in common"),
    ];
    for (bad, want) in cases {
        let out = osbench(shared_store())
            .arg("compare")
            .arg(&a)
            .arg(bad)
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
    }
    let out = osbench(shared_store())
        .arg("compare")
        .arg(&broken)
        .arg(&a)
        .output()
        .unwrap();
    assert!(
        String::from_utf8(out.stderr).unwrap().contains("line "),
        "the error names the line"
    );
}

#[test]
fn compare_names_a_differing_command_line_and_flags_confounders() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    quick_run(&["run", "syscall:case=null", "-q"], &a);
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&a).unwrap()).unwrap();
    doc["env"]["cmdline"] = "quiet mitigations=off".into();
    doc["env"]["vulnerabilities"]["spectre_v2"] = "Vulnerable".into();
    fs::write(&b, serde_json::to_string(&doc).unwrap()).unwrap();
    let out = osbench(shared_store())
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--factor", "cmdline"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    let line = |key: &str| {
        text.lines()
            .find(|l| l.split_whitespace().any(|w| w == key))
            .unwrap_or_else(|| panic!("no line for {key}: {text}"))
            .to_string()
    };
    assert!(line("cmdline").contains("factor"), "{text}");
    assert!(
        line("cmdline").contains("B: quiet mitigations=off"),
        "{text}"
    );
    assert!(
        line("vulnerabilities.spectre_v2").contains("CONFOUNDER?"),
        "{text}"
    );
    assert!(text.contains("declared factor: cmdline"), "{text}");
}

#[test]
fn documents_without_counters_or_the_new_env_keys_still_compare() {
    let dir = tempfile::tempdir().unwrap();
    let (a, old) = (dir.path().join("a.json"), dir.path().join("old.json"));
    quick_run(&["run", "syscall:case=null", "-q"], &a);
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&a).unwrap()).unwrap();
    let env = doc["env"].as_object_mut().unwrap();
    env.retain(|k, _| {
        [
            "kernel",
            "kernel_version",
            "arch",
            "hostname",
            "cpu_model",
            "cpus",
            "cpus_allowed",
            "debug_build",
            "osbench_version",
        ]
        .contains(&k.as_str())
    });
    for s in doc["series"].as_array_mut().unwrap() {
        let s = s.as_object_mut().unwrap();
        for k in [
            "counters",
            "counter_samples",
            "counters_unavailable",
            "energy",
            "energy_unavailable",
        ] {
            s.remove(k);
        }
    }
    doc["run"].as_object_mut().unwrap().remove("audit");
    fs::write(&old, serde_json::to_string(&doc).unwrap()).unwrap();
    let out = osbench(shared_store())
        .arg("compare")
        .arg(&old)
        .arg(&a)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    // The keys only the new document has are differences ("absent" in the old one).
    assert!(text.contains("A: absent"), "{text}");
}

#[test]
fn what_a_configuration_changes_in_the_environment_is_shown_as_the_factor() {
    // The set-up narrows osbench's own CPU affinity (its parent's pid in `sh -c`):
    // `cpus_allowed` then differs between the configurations, and nothing else does.
    let allowed = fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Cpus_allowed_list:")
                .map(|v| v.trim().to_string())
        })
        .unwrap();
    let have_taskset = Command::new("taskset").arg("-V").output().is_ok();
    if !have_taskset || std::thread::available_parallelism().unwrap().get() < 2 {
        eprintln!("skipped: needs taskset and two usable CPUs");
        return;
    }
    let first = osbench::env::probe::cpu_list(&allowed)[0];
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("cfg.json");
    let narrow = format!("one=taskset -pc {first} $PPID >/dev/null");
    let restore = format!("one=taskset -pc {allowed} $PPID >/dev/null");
    let out = quick_run(
        &[
            "run",
            "spin:work=100",
            "--config",
            "all=",
            "--config",
            &narrow,
            "--teardown",
            &restore,
            "--rounds",
            "2",
            "-q",
        ],
        &json,
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let doc = read_document(&json).unwrap();
    let keys: Vec<&str> = doc
        .run
        .config_env_diff
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(keys, ["cpus_allowed"], "{text}");
    assert_eq!(doc.run.config_env_diff[0].1[1], "1");
    assert!(
        text.lines()
            .any(|l| l.contains("factor") && l.contains("cpus_allowed")),
        "{text}"
    );
}

/// `small-run.json` (one invocation of each case) and a copy of it slower by
/// `factor` on host `host`, in `dir`: two sides with no spread between
/// invocations and, with no store, none stored either.
fn one_invocation_pair(
    dir: &Path,
    factor: f64,
    host: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let fixture = crate::common::fixture("small-run.json");
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    for (path, f) in [(&a, 1.0), (&b, factor)] {
        planted_copy(&fixture, path, f, "osbench/1");
        let mut doc: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        doc["env"]["hostname"] = host.into();
        fs::write(path, serde_json::to_string(&doc).unwrap()).unwrap();
    }
    (a, b)
}

/// One invocation a side and nothing stored: the gate cannot judge, says
/// which cases and why, and exits 3; `--allow-undecided` lets it pass.
#[test]
fn a_gate_that_cannot_judge_exits_3_unless_undecided_cases_are_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = one_invocation_pair(dir.path(), 1.04, "testhost");
    let no_store = dir.path().join("none.sqlite");
    let compare = |extra: &[&str]| {
        osbench(&no_store)
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .args(["--gate", "2"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = compare(&[]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("osbench: regression gate: 4 cases could not be judged (syscall null")
            && stderr.contains("one invocation a side and no stored spread")
            && stderr.contains("run each side with --invocations 3")
            && stderr.contains("--allow-undecided"),
        "{stderr}"
    );
    let out = compare(&["--allow-undecided"]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("passed, as --allow-undecided asks"),
        "{stderr}"
    );
    // Quiet: no line, the status still says it.
    let out = compare(&["-q"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        !String::from_utf8(out.stderr)
            .unwrap()
            .contains("regression gate")
    );
    // Without --gate there is nothing to pass or fail.
    let out = osbench(&no_store)
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // --allow-undecided means nothing without --gate.
    let out = osbench(&no_store)
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--allow-undecided")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `compare --by host --gate`: two hosts cannot make a fleet's verdict
/// significant, and one host has none: undecided, status 3.
#[test]
fn the_fleet_gate_is_undecided_with_too_few_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (dir.path().join("before"), dir.path().join("after"));
    fs::create_dir_all(&before).unwrap();
    fs::create_dir_all(&after).unwrap();
    for host in ["h1", "h2"] {
        let pair = dir.path().join(host);
        fs::create_dir_all(&pair).unwrap();
        let (a, b) = one_invocation_pair(&pair, 1.04, host);
        fs::copy(&a, before.join(format!("{host}.json"))).unwrap();
        fs::copy(&b, after.join(format!("{host}.json"))).unwrap();
    }
    let by_host = |extra: &[&str]| {
        osbench(dir.path().join("none.sqlite"))
            .arg("compare")
            .arg(&before)
            .arg(&after)
            .args(["--by", "host", "--gate", "2"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = by_host(&[]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("cases could not be judged") && stderr.contains("too few hosts"),
        "{stderr}"
    );
    assert_eq!(by_host(&["--allow-undecided"]).status.code(), Some(0));
    fs::remove_file(before.join("h2.json")).unwrap();
    let out = by_host(&[]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("one host, and the fleet's verdict needs two"),
        "{stderr}"
    );
}

/// The load `env.load` records: a 1-minute load average and the busy
/// processes (command name, share of a CPU), at the start and the end alike.
pub(crate) fn load(busy: &[(&str, f64)]) -> serde_json::Value {
    let busy: Vec<serde_json::Value> = busy
        .iter()
        .enumerate()
        .map(|(i, (comm, share))| serde_json::json!({"pid": 4000 + i, "comm": comm, "cpu_share": share}))
        .collect();
    let activity = serde_json::json!({"loadavg": [0.2, 0.2, 0.2], "runnable": 1, "window_ms": 100, "busy": busy});
    serde_json::json!({"start": activity, "end": activity})
}

/// Two saved documents (the small fixture in two invocations a side), the
/// second twice as slow and measured while python3 used a CPU: the output
/// names the differing conditions and qualifies the slower verdicts, in the
/// table and in the --json record, whose verdict values stay `slower`.
#[test]
fn compare_names_differing_conditions_and_qualifies_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let mut doc: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(crate::common::fixture("small-run.json")).unwrap(),
    )
    .unwrap();
    doc["env"]["load"] = load(&[]);
    for s in doc["series"].as_array_mut().unwrap() {
        let mut v: Vec<f64> = s["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let half = v.len() / 2;
        let median = |w: &mut [f64]| {
            w.sort_by(f64::total_cmp);
            let n = w.len();
            (w[(n - 1) / 2] + w[n / 2]) / 2.0
        };
        let (first, second) = v.split_at_mut(half);
        s["invocations"] = serde_json::json!([median(first), median(second)]);
        s["invocation_samples"] = serde_json::json!([half, second.len()]);
    }
    fs::write(&a, serde_json::to_string(&doc).unwrap()).unwrap();
    planted_copy(&a, &b, 2.0, "osbench/1");
    let mut busy: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&b).unwrap()).unwrap();
    busy["env"]["load"] = load(&[("python3", 0.99)]);
    fs::write(&b, serde_json::to_string(&busy).unwrap()).unwrap();
    let json = dir.path().join("c.json");
    let out = osbench(dir.path().join("no-store.sqlite"))
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(
            "Conditions: the runs' conditions differ: B was measured while other processes used \
             1.0 of 2 CPUs (python3 99 %), load average 0.20; A was measured while other \
             processes were quiet, load average 0.20 on 2 CPUs."
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "— but the runs' conditions differ (B measured while other processes used 1.0 of 2 \
             CPUs (python3 99 %); A quiet); re-run both quiet"
        ),
        "{text}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    assert!(
        record["conditions"][0]
            .as_str()
            .unwrap()
            .starts_with("the runs' conditions differ")
    );
    let slower: Vec<&serde_json::Value> = record["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "slower")
        .collect();
    assert!(!slower.is_empty(), "{record}");
    for c in slower {
        assert!(
            c["verdict_words"]
                .as_str()
                .unwrap()
                .ends_with("re-run both quiet"),
            "{c}"
        );
    }
}
