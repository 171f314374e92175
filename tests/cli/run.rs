//! `osbench run`: cases printed and every raw sample kept, the document's
//! round trip, placement and mode, messaging, proc, distributions, counters,
//! the perf pass and every I/O family.

use super::kit::*;

#[test]
fn run_prints_all_six_cases_and_writes_every_raw_sample() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = quick_run(&["run", "syscall", "--seed", "7"], &json);
    let table = String::from_utf8(out.stdout).unwrap();
    let header = table.lines().next().unwrap();
    for col in ["median", "95% CI of median", "CV", "n", "unit"] {
        assert!(header.contains(col), "{header}");
    }
    for case in ["null", "read", "write", "stat", "fstat", "open"] {
        assert!(
            table
                .lines()
                .any(|l| l.split_whitespace().nth(1) == Some(case)),
            "no {case} row:\n{table}"
        );
    }

    let doc = read_document(&json).unwrap();
    assert_eq!(doc.schema, "osbench/1");
    assert_eq!(doc.tool.name, "osbench");
    assert!(doc.run.complete);
    assert_eq!(doc.run.seed, 7);
    assert_eq!(doc.series.len(), 6);
    for s in &doc.series {
        assert_eq!(
            (s.key.bench.as_str(), s.unit.as_str(), s.key.config.as_str()),
            ("syscall", "ns", "default")
        );
        assert_eq!(s.samples.len(), 3);
        assert_eq!(s.raw.len(), 3);
        assert_eq!(s.summary.n, 3);
        assert_eq!(s.params["case"], s.key.case.as_str());
        assert_eq!(
            (s.pin.as_str(), s.cpus.len()),
            ("same", 1),
            "one-task cases are pinned"
        );
        assert!(s.summary.ci_low <= s.summary.median && s.summary.median <= s.summary.ci_high);
    }
    // The seed fixes the order the cases ran in.
    let again = dir.path().join("again.json");
    quick_run(&["run", "syscall", "--seed", "7", "-q"], &again);
    assert_eq!(read_document(&again).unwrap().run.order, doc.run.order);
}

#[test]
fn document_round_trips_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("doc.json");
    quick_run(&["run", "syscall:case=null", "-q"], &json);
    let doc = read_document(&json).unwrap();
    let rewritten = osbench::store::to_json(&doc);
    assert_eq!(
        String::from_utf8(rewritten).unwrap(),
        fs::read_to_string(&json).unwrap()
    );
}

#[test]
fn ipc_and_ctx_record_placement_and_mode() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = quick_run(
        &[
            "run",
            "ipc:kind=unix",
            "ctx:procs=3,mode=threads",
            "--pin",
            "spread",
            "-q",
        ],
        &json,
    );
    let doc = read_document(&json).unwrap();
    let cpus = std::thread::available_parallelism().unwrap().get().min(3);
    for s in &doc.series {
        assert_eq!(s.pin, "spread");
        assert_eq!(
            s.cpus.len(),
            cpus.min(if s.key.bench == "ipc" { 2 } else { 3 })
        );
    }
    assert_eq!(doc.series[1].params["mode"], "threads");
    assert_eq!(doc.series[1].key.case, "3t/0K");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        !table.contains("Context switching"),
        "3 procs is not an lmbench column"
    );
}

#[test]
fn messaging_prints_hackbench_time_and_counts_every_message() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let out = quick_run(
        &[
            "run",
            "messaging:groups=2,fds=3,loops=10",
            "messaging:groups=1,transport=pipe,mode=threads",
            "-q",
        ],
        &json,
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("hackbench -g 2 -f 3 -l 10"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("hackbench -g 1 -p -T") && l.contains("Time: ")),
        "{text}"
    );
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.series.len(), 2);
    assert!(
        doc.series
            .iter()
            .all(|s| s.unit == "s" && s.raw.iter().all(|r| r.iters == 1))
    );
    // The workers' CPU time is counted (their conductor collects it and is
    // reaped inside the run): far more than osbench's own few system calls.
    for s in &doc.series {
        let cpu_ns = s.counters["user_ns"].median + s.counters["sys_ns"].median;
        let wall_ns = s.summary.median * 1e9;
        assert!(
            cpu_ns > 0.05 * wall_ns,
            "{}: {cpu_ns} ns of CPU in {wall_ns} ns",
            s.key.case
        );
    }
    assert!(helper_processes().is_empty());
}

#[test]
fn messaging_names_the_descriptor_limit_and_leaves_no_worker() {
    let _serial = helper_lock();
    // 24 descriptors: enough to start some receivers of the first group, not its senders.
    for (limit, mode) in [(24, "processes"), (64, "threads")] {
        let (code, stderr, _) = under_ulimit(
            "sh",
            &format!("-n {limit}"),
            &format!("run messaging:mode={mode} -q"),
        );
        assert_eq!(code, Some(2), "{mode}: {stderr}");
        assert!(
            stderr.contains(&format!("ulimit -n is {limit}")),
            "{mode}: {stderr}"
        );
        assert!(
            helper_processes().is_empty(),
            "{mode}: {:?}",
            helper_processes()
        );
    }
}

#[test]
fn interrupted_messaging_kills_every_worker_and_exits_130() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    // Runs of several seconds, so the signal lands inside one.
    let args = "run messaging:groups=4,loops=20000 -q --warmup 0 --json";
    let status = interrupt_after(Duration::from_millis(1500), args, &json, || {
        assert_eq!(
            helper_processes().len(),
            161,
            "the run's conductor and all its workers should be running"
        );
    });
    assert_eq!(status.code(), Some(130));
    wait_until(Duration::from_secs(1), Duration::from_millis(20), || {
        helper_processes().is_empty()
    });
    assert!(
        helper_processes().is_empty(),
        "left behind: {:?}",
        helper_processes()
    );
    // Stopped inside its first run: nothing was measured, so no document.
    assert!(!json.exists());
}

#[test]
fn a_hackbench_of_50_groups_stops_at_once_at_any_stage() {
    let _serial = helper_lock();
    // A stop used to wait behind 2,000 runnable workers (1.1–2.6 s, issue 18).
    // scripts/faults.sh measures the 0.5 s target on a quiet machine. Here
    // other tests share the CPUs (CI saw a 4.2 s stop), so a run is made to
    // last 20 times hackbench's default (tens of seconds) and the bound only
    // catches a stop that waits for the run to end.
    for mode in ["processes", "threads"] {
        // During the workers' start-up, and inside a run (one lasts seconds).
        for after in [Duration::from_millis(300), Duration::from_millis(2000)] {
            let dir = tempfile::tempdir().unwrap();
            let json = dir.path().join("m.json");
            let args =
                format!("run messaging:groups=50,mode={mode},loops=2000 -q --warmup 0 --json");
            let mut signalled = None;
            let status = interrupt_after(after, &args, &json, || {
                signalled = Some(std::time::Instant::now());
            });
            let took = signalled.unwrap().elapsed();
            assert_eq!(status.code(), Some(130), "{mode} after {after:?}");
            assert!(
                took < Duration::from_secs(10),
                "{mode}: stopped {took:?} after the signal sent {after:?} in"
            );
            wait_until(Duration::from_secs(1), Duration::from_millis(20), || {
                helper_processes().is_empty()
            });
            assert!(helper_processes().is_empty(), "{:?}", helper_processes());
        }
    }
}

#[test]
fn interrupted_wakeup_processes_stop_instead_of_waiting_for_a_dead_peer() {
    let _serial = helper_lock();
    // A helper killed by the signal handler would leave the timing side
    // waiting on shared memory forever: wakeup's helpers are left alone.
    let mut child = osbench(shared_store())
        .args([
            "run",
            "wakeup:mode=processes,count=2000000",
            "-q",
            "--no-store",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("still running 20 s after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert!(helper_processes().is_empty(), "{:?}", helper_processes());
}

#[test]
fn interrupted_messaging_threads_stop_inside_their_run() {
    let _serial = helper_lock(); // a heavy load for the tests that time a ring
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    // One run passes 32 M messages, many seconds: the signal lands inside it.
    let args = "run messaging:groups=4,loops=20000,mode=threads -q --warmup 0 --json";
    let status = interrupt_after(Duration::from_millis(1500), args, &json, || {});
    assert_eq!(status.code(), Some(130));
    // The threads gave up mid-run instead of finishing it: nothing was measured.
    assert!(!json.exists());
}

#[test]
fn proc_runs_all_six_cases() {
    let _serial = helper_lock(); // its exec'd program is named osbench-hello-…
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    // 10 ms samples: a 1 ms sample of a few forks was too noisy to accept in CI.
    let args = ["run", "proc", "-q", "--samples", "3", "--sample-time", "10"];
    run_ok(&[&args[..], &["--warmup", "0"]].concat(), &json);
    let cases: Vec<String> = read_document(&json)
        .unwrap()
        .series
        .iter()
        .map(|s| s.key.case.clone())
        .collect();
    assert_eq!(
        cases,
        [
            "fork",
            "exec",
            "sh",
            "spawn",
            "vfork",
            "thread",
            "clone3",
            "pidfd-spawn",
            "pidfd-signal",
            "pidfd-open",
            "fork_return",
            "fork_child",
            "thread_return",
            "thread_child"
        ]
    );
}

#[test]
fn distributions_carry_quantiles_and_a_histogram() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("d.json");
    quick_run(
        &[
            "run",
            "wakeup:wait=futex,count=200,gap_us=0",
            "timer:interval_us=200,count=50",
            "-q",
        ],
        &json,
    );
    let doc = read_document(&json).unwrap();
    for s in &doc.series {
        assert_eq!(s.kind, "distribution");
        let q = s.quantiles.expect("quantiles");
        assert!(
            q.p50 <= q.p90 && q.p90 <= q.p99 && q.p99 <= q.p99_9 && q.p99_9 <= q.max,
            "{q:?}"
        );
        let h = s.histogram.as_ref().expect("histogram");
        assert_eq!(
            h.ns.iter().map(|[_, c]| c).sum::<u64>() as usize,
            s.samples.len()
        );
    }
    assert_eq!(
        doc.series[0].samples.len(),
        400,
        "two wake-ups per round trip"
    );
    assert_eq!(doc.series[1].samples.len(), 50);
    assert!(doc.series[0].cpu_per_op.is_some());
}

/// `--target-ci` without configurations: each case samples until its
/// interval is narrow enough, and the output says which cases reached it.
#[test]
fn a_plain_run_samples_each_case_to_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let out = quick_run(
        &[
            "run",
            "syscall:case=null",
            "spin:work=100",
            "--target-ci",
            "50",
            "--no-perf",
        ],
        &json,
    );
    let doc = read_document(&json).unwrap();
    assert!(doc.run.stopped_by.is_none());
    for s in &doc.series {
        let t = s.target.as_ref().unwrap();
        assert!(t.reached, "{t:?}");
        assert_eq!(t.target, 0.5);
        assert!(t.stopped_by.starts_with("reached ±"), "{t:?}");
    }
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("±50%: 2 of 2 cases reached it.")
            && text.contains("reached     syscall null"),
        "{text}"
    );
}

#[test]
fn every_series_counts_per_op_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = quick_run(&["run", "syscall:case=null", "spin"], &json);
    let doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    for s in doc["series"].as_array().unwrap() {
        let counters = s["counters"].as_object().unwrap();
        let unavailable = s["counters_unavailable"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for name in [
            "user_ns",
            "sys_ns",
            "voluntary_switches",
            "involuntary_switches",
            "minor_faults",
            "major_faults",
            "context_switches",
            "cpu_migrations",
            "page_faults",
            "cycles",
            "instructions",
        ] {
            assert!(
                counters.contains_key(name) != unavailable.contains_key(name),
                "{name}: counted or explained, not both or neither: {s}"
            );
        }
        // rusage is always there, with a summary like the time's.
        let user = &counters["user_ns"];
        assert_eq!(user["n"], s["summary"]["n"], "{s}");
        assert!(user["median"].as_f64().unwrap() >= 0.0);
        assert_eq!(
            s["counter_samples"]["sys_ns"].as_array().unwrap().len(),
            s["samples"].as_array().unwrap().len()
        );
        assert!(
            s.get("energy").is_some() != s.get("energy_unavailable").is_some(),
            "energy read or explained: {s}"
        );
        // perf counters come from the counting pass, one value per batch of it.
        let pass = s.get("perf_pass").and_then(|p| p.as_array());
        for name in ["context_switches", "cpu_migrations", "page_faults"] {
            if let Some(c) = counters.get(name) {
                let pass = pass.unwrap_or_else(|| panic!("{name} counted without a pass: {s}"));
                assert_eq!(c["n"], pass.len(), "{s}");
                let values = s["counter_samples"][name].as_array().unwrap();
                assert_eq!(values.len(), pass.len(), "{s}");
            }
        }
    }
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Counters per op"), "{text}");
    let ran = osbench(shared_store())
        .args(["run", "syscall:case=null", "--no-perf", "-q"])
        .args(QUICK)
        .output()
        .unwrap();
    let text = String::from_utf8(ran.stdout).unwrap();
    assert!(text.contains("not opened (--no-perf)"), "{text}");
}

/// The counting pass reaches a helper set up before it: on one CPU every
/// pipe round trip is two context switches, one of them the echo process's.
#[test]
fn the_perf_pass_counts_the_helpers_or_says_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    quick_run(&["run", "ipc:kind=pipe", "--pin", "same", "-q"], &json);
    let doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let s = &doc["series"][0];
    match s["counters"].get("context_switches") {
        Some(c) => {
            assert_eq!(s["perf_pass"].as_array().unwrap().len(), 3, "{s}");
            assert_eq!(c["n"], 3, "{s}");
            let mean = c["mean"].as_f64().unwrap();
            assert!((1.5..3.0).contains(&mean), "switches per round trip: {s}");
        }
        None => {
            assert!(
                s["counters_unavailable"]["context_switches"].is_string(),
                "{s}"
            );
            assert!(s.get("perf_pass").is_none(), "{s}");
        }
    }
}

/// Every default case of the I/O families runs for real in one short run:
/// the cases `osbench list` names, each with its samples and anchor, the
/// bandwidth ones with bytes per op (MB/s), and nothing left in $TMPDIR.
#[test]
fn every_io_family_runs_the_cases_list_names() {
    let _serial = helper_lock();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let families = ["poll", "stream", "connect", "fs", "file", "clock"];
    crate::common::ok(
        osbench(shared_store())
            .arg("run")
            .args(families)
            .args(["-q", "--no-perf", "--samples", "2", "--sample-time", "1"])
            .args(["--warmup", "0", "--json"])
            .arg(&json)
            .env("TMPDIR", tmp.path())
            .output()
            .unwrap(),
    );
    let list =
        String::from_utf8(osbench(shared_store()).arg("list").output().unwrap().stdout).unwrap();
    let doc = read_document(&json).unwrap();
    for family in families {
        let mut listed = listed_cases(&list, family);
        let mut ran: Vec<String> = doc
            .series
            .iter()
            .filter(|s| s.key.bench == family)
            .map(|s| s.key.case.clone())
            .collect();
        assert!(!listed.is_empty(), "{family} lists no cases:\n{list}");
        listed.sort();
        ran.sort();
        assert_eq!(ran, listed, "{family}");
    }
    for s in &doc.series {
        // Two asked; one may be set aside on a loaded machine.
        assert!(!s.samples.is_empty(), "{} {}", s.key.bench, s.key.case);
        assert!(
            !s.anchor.is_empty(),
            "{} {} names no anchor",
            s.key.bench,
            s.key.case
        );
        if s.key.bench == "stream" || s.key.bench == "file" {
            assert!(
                s.bytes_per_op.is_some(),
                "{} {} is a bandwidth",
                s.key.bench,
                s.key.case
            );
        }
    }
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    assert!(helper_processes().is_empty(), "{:?}", helper_processes());
}

/// The memory families in a short real run at small sizes: lmbench's
/// bandwidth table fills its Mmap, Bcopy and Mem columns and the Memory
/// latencies table its L1 and L2 columns, each case naming its anchor.
#[test]
fn the_memory_families_fill_lmbench_tables_in_a_short_run() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("mem.json");
    let cases = [
        "membw:kib=64",
        "membw:op=cp,kib=64",
        "membw:op=fcp,kib=64",
        "membw:op=bcopy,kib=64",
        "memlat:kib=1",
        "memlat:kib=128",
        "file:io=mmap,pages=16",
    ];
    let out = quick_run(&[&["run", "--no-perf"][..], &cases[..]].concat(), &json);
    let doc = read_document(&json).unwrap();
    let anchors: Vec<&str> = doc.series.iter().map(|s| s.anchor.as_str()).collect();
    for anchor in [
        "bw_mem 64k frd",
        "bw_mem 64k bcopy",
        "lat_mem_rd 1 128 (the 128K row)",
        "bw_mmap_rd 64k mmap_only",
    ] {
        assert!(anchors.contains(&anchor), "{anchor} not in {anchors:?}");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let bandwidth = text
        .split("*Local* Communication bandwidths")
        .nth(1)
        .unwrap_or_else(|| panic!("no bandwidth table:\n{text}"));
    let row: Vec<&str> = bandwidth
        .lines()
        .nth(5)
        .unwrap()
        .split_whitespace()
        .collect();
    // Host, Linux, kernel, then Mmap reread, Bcopy (libc), Bcopy (hand), Mem read, Mem write.
    assert_eq!(row.len(), 3 + 5, "{bandwidth}");
    let memory = text
        .split("Memory latencies in nanoseconds")
        .nth(1)
        .unwrap_or_else(|| panic!("no memory latencies table:\n{text}"));
    assert!(memory.contains("Mhz and Guesses are left out"), "{memory}");
}

#[test]
fn invocations_are_added_until_another_run_like_it_would_detect_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let base = ["run", "spin:work=100", "-q", "--no-perf"];
    // ±1000 % is detectable between runs of the 3 invocations it starts with.
    let out = quick_run(&[&base[..], &["--target-mde", "1000"]].concat(), &json);
    let doc = read_document(&json).unwrap();
    let t = doc.run.target_mde.unwrap();
    assert!(t.reached && t.unit == "invocations" && t.n == 3, "{t:?}");
    assert_eq!(
        (doc.run.invocations.len(), doc.series[0].invocations.len()),
        (3, 3)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("target ±1000%: detectable after 3 invocations ("),
        "{err}"
    );
    // No change of 0 % is: a 1 s budget ends the invocations, two at least.
    let args = ["--invocations", "2", "--target-mde", "0", "--budget", "1s"];
    let out = quick_run(&[&base[..], &args[..]].concat(), &json);
    let doc = read_document(&json).unwrap();
    let t = doc.run.target_mde.unwrap();
    assert!(!t.reached && t.elapsed_s >= 1.0 && t.n >= 2, "{t:?}");
    assert_eq!(t.n, doc.run.invocations.len());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("target ±0% not reached in the 1 s budget: ±"),
        "{err}"
    );
}
