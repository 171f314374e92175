//! The built `osbench` binary as a user meets it: listing, running, the
//! result document, and errors on bad input. Checks correctness only; no test
//! asserts how fast anything ran.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::osbench;
use osbench::store::read_document;

/// The results store every test's osbench writes to unless the test gives
/// its own: never the user's own store.
fn shared_store() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests-results.sqlite")
}

/// A quick run: few short samples, no warm-up.
const QUICK: [&str; 6] = ["--samples", "3", "--sample-time", "1", "--warmup", "0"];

/// `osbench ARGS --json JSON`, which must succeed.
fn run_ok(args: &[&str], json: &Path) -> std::process::Output {
    let out = osbench(shared_store())
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `osbench ARGS QUICK --json JSON`, which must succeed.
fn quick_run(args: &[&str], json: &Path) -> std::process::Output {
    run_ok(&[args, &QUICK[..]].concat(), json)
}

#[test]
fn list_shows_every_case_parameter_and_op() {
    let out = osbench(shared_store()).arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("syscall"));
    assert!(text.contains("null|read|write|stat|fstat|open"), "{text}");
    assert!(text.contains("default null"), "{text}");
    assert!(text.contains("one getppid() system call"), "{text}");
    assert!(text.contains("unit: ns per op"), "{text}");
    // Each family names its anchor and what it measures differently on purpose.
    assert!(text.contains("anchor: hackbench -g 10"), "{text}");
    assert!(text.contains("anchor: lat_ctx -s 0 2"), "{text}");
    let differs = |family: &str| {
        let block = text.split("\n\n").find(|b| b.starts_with(family)).unwrap();
        block.contains("differs from it on purpose: ")
    };
    assert!(differs("ipc —") && differs("syscall —") && differs("messaging —"));
    assert!(!differs("spin —"), "spin has no anchor to differ from");
}

#[test]
fn env_shows_kernel_cpu_and_build() {
    let out = osbench(shared_store()).arg("env").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for key in [
        "kernel ",
        "kernel_version ",
        "cpu_model ",
        "cpus ",
        "debug_build ",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(key)),
            "missing {key}: {text}"
        );
    }
}

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
            (s.bench.as_str(), s.unit.as_str(), s.config.as_str()),
            ("syscall", "ns", "default")
        );
        assert_eq!(s.samples.len(), 3);
        assert_eq!(s.raw.len(), 3);
        assert_eq!(s.summary.n, 3);
        assert_eq!(s.params["case"], s.case.as_str());
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

/// Starts `osbench ARGS JSON`, waits `after`, runs `check`, sends SIGINT and
/// returns how osbench ended.
fn interrupt_after(
    after: Duration,
    args: &str,
    json: &Path,
    check: impl FnOnce(),
) -> std::process::ExitStatus {
    let mut child = osbench(shared_store())
        .args(args.split_whitespace())
        .arg(json)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    // A failed check must not leave the run going for the other tests.
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)) {
        let _ = child.kill();
        let _ = child.wait();
        std::panic::resume_unwind(panic);
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    child.wait().unwrap()
}

/// Runs osbench with `args` in an empty directory; returns (status, stderr, files left there).
fn run_in_empty_dir(args: &[&str]) -> (Option<i32>, String, usize) {
    let dir = tempfile::tempdir().unwrap();
    let out = osbench(shared_store())
        .current_dir(dir.path())
        .args(args)
        .output()
        .unwrap();
    let files = fs::read_dir(dir.path()).unwrap().count();
    (
        out.status.code(),
        String::from_utf8(out.stderr).unwrap(),
        files,
    )
}

#[test]
fn bad_input_exits_2_with_one_line_and_no_file() {
    // Every family of the registry, in its order.
    let families: Vec<&str> = osbench::bench::REGISTRY.iter().map(|d| d.name).collect();
    let unknown = format!(
        "unknown benchmark 'nosuch'; valid benchmarks: {}",
        families.join(", ")
    );
    let cases: [(&[&str], &str); 20] = [
        (&["run", "nosuch", "--json", "x.json"], &unknown),
        (
            &["run", "syscall:case=bogus", "--json", "x.json"],
            "allowed: null, read, write, stat, fstat, open",
        ),
        (
            &["run", "syscall:foo=1", "--json", "x.json"],
            "no parameter 'foo'; valid parameters: case",
        ),
        (
            &["run", "syscall:case", "--json", "x.json"],
            "malformed selector",
        ),
        (&["run", "--samples", "0", "--json", "x.json"], "--samples"),
        (
            &["run", "--sample-time", "-1", "--json", "x.json"],
            "--sample-time",
        ),
        (
            &["run", "--json", "/nonexistent/dir/x.json"],
            "directory /nonexistent/dir does not exist",
        ),
        (&["frobnicate"], "unrecognized subcommand"),
        (
            &["run", "ctx:procs=1"],
            "invalid value '1' for ctx:procs; allowed: an integer from 2 to 1024",
        ),
        (&["run", "ctx:procs=0"], "invalid value '0' for ctx:procs"),
        (
            &["run", "ctx:procs=100000"],
            "invalid value '100000' for ctx:procs",
        ),
        (
            &["run", "ctx:size=-1"],
            "invalid value '-1' for ctx:size; allowed: an integer from 0 to 65536",
        ),
        (&["run", "ipc:kind=bogus"], "allowed: pipe, unix, tcp, udp"),
        (
            &["run", "timer:interval_us=0"],
            "invalid value '0' for timer:interval_us",
        ),
        (
            &["run", "wakeup:wait=bogus"],
            "allowed: futex, eventfd, pipe, spin, spin-then-futex",
        ),
        (
            &["run", "atomic:threads=0"],
            "invalid value '0' for atomic:threads; allowed: all, or an integer from 1 to 1024",
        ),
        (
            &["run", "--pin", "bogus"],
            "invalid value 'bogus' for '--pin <PLACEMENT>'",
        ),
        // A refused value is named as given, control characters escaped.
        (
            &["run", "--label", "a\nb"],
            "invalid value 'a\\nb' for '--label <NAME>': a label cannot contain control characters",
        ),
        (&["run", "--samples", "-1"], "-1 is not in 1..=1000000"),
        (
            &["run", "--warmup", "-3"],
            "'-3' is not a duration in milliseconds from 0 to 600000",
        ),
    ];
    for (args, want) in cases {
        let (code, stderr, files) = run_in_empty_dir(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(
            stderr.lines().count(),
            1,
            "{args:?}: not one line:\n{stderr}"
        );
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert_eq!(files, 0, "{args:?} left a file behind");
    }
    assert!(!Path::new("/nonexistent/dir/x.json").exists());
}

#[test]
fn interrupted_run_keeps_what_it_measured_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    // Long enough that the signal arrives mid-run: 6 cases × 200 samples × 5 ms.
    // 3 s: the first case is done even on a loaded machine (at 1.5 s, a CI run
    // beside other builds had not finished calibrating it).
    let args = "run syscall -q --samples 200 --sample-time 5 --warmup 0 --json";
    let status = interrupt_after(Duration::from_millis(3000), args, &json, || ());
    assert_eq!(status.code(), Some(130));
    let doc = read_document(&json).unwrap();
    assert!(!doc.run.complete);
    assert!(
        doc.run
            .stopped_because
            .as_deref()
            .unwrap()
            .contains("interrupted")
    );
    assert!(doc.series.len() < 6);
    assert!(doc.series.iter().all(|s| !s.samples.is_empty()));
    assert_eq!(
        fs::read_dir(dir.path()).unwrap().count(),
        1,
        "temporary file left behind"
    );
}

/// Held by every test that starts helper processes, so the ones that look for
/// leftover helpers on the whole machine do not see another test's.
static HELPER_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn helper_lock() -> std::sync::MutexGuard<'static, ()> {
    HELPER_TESTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Processes named like osbench's helpers (`osbench-ctx`, `osbench-ipc`, …).
fn helper_processes() -> Vec<String> {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let comm = fs::read_to_string(entry.path().join("comm")).ok()?;
            // A zombie is not running: killed helpers whose parent (osbench)
            // has exited wait for init to reap them, 1–3 s on this machine.
            let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
            let state = stat.rsplit(") ").next()?.chars().next()?;
            (state != 'Z' && comm.starts_with("osbench-"))
                .then(|| format!("{} {}", entry.file_name().to_string_lossy(), comm.trim()))
        })
        .collect()
}

/// Polls every `step` until `done` or `within` has passed; whether it got done.
fn wait_until(within: Duration, step: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + within;
    while !done() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(step);
    }
    true
}

/// `osbench ARGS` started by `shell` after `ulimit LIMIT`; its status, stderr and stdout.
fn under_ulimit(shell: &str, limit: &str, args: &str) -> (Option<i32>, String, String) {
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let out = Command::new(shell)
        .env("OSBENCH_STORE", shared_store())
        .arg("-c")
        .arg(format!("ulimit {limit} && exec '{}' {args}", bin.display()))
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code(), text(out.stderr), text(out.stdout))
}

#[test]
fn interrupted_ring_leaves_no_process_and_keeps_its_samples() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ctx.json");
    let args = "run ctx:procs=16,size=64 -q --samples 1000 --json";
    // 3 s: past the calibration even on a loaded machine; the case lasts 10 s.
    let status = interrupt_after(Duration::from_millis(3000), args, &json, || {
        let running = helper_processes();
        assert_eq!(running.len(), 15, "the ring should be running: {running:?}");
    });
    assert_eq!(status.code(), Some(130));
    assert!(
        helper_processes().is_empty(),
        "left behind: {:?}",
        helper_processes()
    );
    let doc = read_document(&json).unwrap();
    assert!(!doc.run.complete);
    let series = &doc.series[0];
    assert!(!series.samples.is_empty() && series.samples.len() < 1000);
    assert!(series.noise.contains(&"interrupted".to_string()));
    assert!(series.baseline.is_some(), "the ovr baseline is recorded");
}

#[test]
fn descriptor_limit_is_named_and_nothing_is_left_running() {
    let _serial = helper_lock();
    let (code, stderr, _) = under_ulimit("sh", "-n 16", "run ctx:procs=16 -q");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("ulimit -n"), "{stderr}");
    assert!(helper_processes().is_empty());
}

#[test]
fn an_address_space_limit_stops_the_run_before_measuring_not_with_an_abort() {
    let _serial = helper_lock();
    // 400 threads do not fit in what ~58 MiB leaves; glibc used to abort (134) mid-case.
    let (code, stderr, _) = under_ulimit(
        "bash",
        "-v 60000",
        "run messaging:groups=10,mode=threads -q",
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("`ulimit -v` (60000 KiB)"), "{stderr}");
}

#[test]
fn a_mapping_beyond_ulimit_v_stops_the_run_before_measuring() {
    // 4 GiB of pages under a 1 GiB limit: refused by the family's check, naming the limit.
    let (code, stderr, stdout) = under_ulimit(
        "bash",
        "-v 1000000",
        "run syscall:case=null fault:case=anon,pages=1048576 -q",
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("needs 4096 MiB of address space, but `ulimit -v` is 1000000 KiB"),
        "{stderr}"
    );
    // Checked before anything ran: no results table.
    assert!(stdout.is_empty());
}

#[test]
fn interrupted_memory_and_signal_cases_leave_no_process_and_keep_their_samples() {
    let _serial = helper_lock();
    for (args, helpers) in [
        (
            "run fault:case=cow,pages=16384 -q --samples 1000000 --json",
            1,
        ),
        (
            "run sigqueue:mode=processes,count=100000000,gap_us=0 -q --json",
            1,
        ),
        ("run signal:case=prot -q --samples 100000 --json", 0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("out.json");
        // A loaded machine starts a debug build slowly: wait for the helpers
        // (up to 30 s), then give the case a second to take samples.
        let status = interrupt_after(Duration::ZERO, args, &json, || {
            wait_until(Duration::from_secs(30), Duration::from_millis(50), || {
                helper_processes().len() >= helpers
            });
            std::thread::sleep(Duration::from_millis(if helpers == 0 {
                2500
            } else {
                1000
            }));
            // A copy-on-write child is killed and forked anew between runs:
            // look again until it is there.
            wait_until(Duration::from_secs(5), Duration::from_millis(10), || {
                helper_processes().len() == helpers
            });
            let running = helper_processes();
            assert_eq!(running.len(), helpers, "{args}: {running:?}");
        });
        assert_eq!(status.code(), Some(130), "{args}");
        // A child killed as osbench exits may take a moment to free its pages.
        wait_until(Duration::from_secs(3), Duration::from_millis(20), || {
            helper_processes().is_empty()
        });
        assert!(
            helper_processes().is_empty(),
            "{args}: {:?}",
            helper_processes()
        );
        let doc = read_document(&json).unwrap();
        assert!(
            !doc.run.complete && !doc.series[0].samples.is_empty(),
            "{args}"
        );
    }
}

#[test]
fn interrupted_tlb_shootdowns_end_their_threads_and_keep_the_samples_or_refuse_one_cpu() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let args = [
        "run",
        "tlb:threads=2",
        "-q",
        "--samples",
        "100000",
        "--json",
    ];
    if std::thread::available_parallelism().map_or(1, usize::from) < 2 {
        let out = osbench(shared_store())
            .args(args)
            .arg(&json)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("only between CPUs"), "{err}");
        return;
    }
    let mut child = osbench(shared_store())
        .args(args)
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let threads = || -> Vec<String> {
        fs::read_dir(format!("/proc/{pid}/task"))
            .map(|tasks| {
                tasks
                    .flatten()
                    .filter_map(|t| fs::read_to_string(t.path().join("comm")).ok())
                    .filter(|comm| comm.trim() == "osbench-tlb")
                    .collect()
            })
            .unwrap_or_default()
    };
    // A loaded machine starts a debug build slowly: wait for the helper (up
    // to 30 s), then give the case a second to take samples.
    wait_until(Duration::from_secs(30), Duration::from_millis(50), || {
        !threads().is_empty()
    });
    std::thread::sleep(Duration::from_millis(1000));
    if threads().len() != 1 {
        let _ = child.kill(); // never left running for the other tests
        panic!("the helper should be spinning: {:?}", threads());
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let doc = read_document(&json).unwrap();
    let s = &doc.series[0];
    assert!(!doc.run.complete && !s.samples.is_empty());
    // The shootdowns per call were counted, or why not is said; never a zero stand-in.
    assert!(
        s.counter_samples.contains_key("tlb_shootdowns")
            || s.counters_unavailable.contains_key("tlb_shootdowns"),
        "{:?}",
        s.counters_unavailable
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
        assert_eq!(s.cpus.len(), cpus.min(if s.bench == "ipc" { 2 } else { 3 }));
    }
    assert_eq!(doc.series[1].params["mode"], "threads");
    assert_eq!(doc.series[1].case, "3t/0K");
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
            s.case
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
        .map(|s| s.case.clone())
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

/// Writes a copy of the document at `from` to `to` with every sample and
/// summary value of every series multiplied by `factor`, the schema set to `schema`.
fn planted_copy(from: &Path, to: &Path, factor: f64, schema: &str) {
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(from).unwrap()).unwrap();
    doc["schema"] = schema.into();
    if factor != 1.0 {
        doc["env"]["kernel"] = "6.99.0-planted".into(); // a confounder compare must show
    }
    for s in doc["series"].as_array_mut().unwrap() {
        for v in s["samples"].as_array_mut().unwrap() {
            *v = (v.as_f64().unwrap() * factor).into();
        }
        // `get_mut`: indexing would insert a null where a series has none.
        let invocations = s.get_mut("invocations").and_then(|v| v.as_array_mut());
        for v in invocations.into_iter().flatten() {
            *v = (v.as_f64().unwrap() * factor).into();
        }
        for k in [
            "median", "mean", "stddev", "min", "max", "mad", "ci_low", "ci_high",
        ] {
            s["summary"][k] = (s["summary"][k].as_f64().unwrap() * factor).into();
        }
    }
    fs::write(to, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

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
        let out = osbench(shared_store())
            .arg("export")
            .arg(p)
            .args(["--markdown", "-"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
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

/// A flag that would do nothing in its context is refused, never silently accepted.
#[test]
fn flags_that_would_do_nothing_are_refused() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["run", "syscall", "--rounds", "3"],
            "--rounds repeats configurations",
        ),
        (
            &["run", "syscall", "--max-time", "5"],
            "give --target-ci PCT too",
        ),
        (
            &["run", "syscall", "--gate", "5"],
            "--gate judges comparisons",
        ),
        (
            &["run", "syscall", "--equivalence", "2", "--gate", "5"],
            "--equivalence and --gate judge comparisons",
        ),
        (
            &["run", "syscall", "--config", "a=", "--target-ci", "1"],
            "one configuration has nothing to be compared with",
        ),
        (
            &["time", "true", "--gate", "5"],
            "one command is timed alone",
        ),
    ];
    for (args, want) in cases {
        let (code, stderr, files) = run_in_empty_dir(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}:\n{stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
        assert_eq!(files, 0, "{args:?} left a file behind");
    }
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
fn configurations_run_in_seeded_rounds_and_are_compared_paired() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ab.json");
    let out = quick_run(
        &[
            "run",
            "syscall:case=null",
            "--config",
            "a=true",
            "--config",
            "b=",
            "--rounds",
            "4",
            "-q",
        ],
        &json,
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Paired over 4 rounds") && text.contains("B/A"),
        "{text}"
    );
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.run.schedule.len(), 4);
    for round in &doc.run.schedule {
        let mut sorted = round.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            ["a", "b"],
            "each round is a permutation of the configurations"
        );
    }
    let configs: Vec<&str> = doc.series.iter().map(|s| s.config.as_str()).collect();
    assert_eq!(configs, ["a", "b"]);
    assert!(
        doc.series
            .iter()
            .all(|s| s.rounds.len() == 4 && s.samples.len() == 12)
    );
}

#[test]
fn a_failing_setup_stops_the_run_after_its_teardown() {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("torn-down");
    let teardown = format!("b=touch {}", mark.display());
    let out = osbench(shared_store())
        .args([
            "run",
            "syscall:case=null",
            "-q",
            "--config",
            "a=",
            "--config",
            "b=echo nope >&2; exit 3",
        ])
        .args(["--teardown", &teardown])
        .args(QUICK)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("set-up of configuration 'b'") && stderr.contains("nope"),
        "{stderr}"
    );
    assert!(mark.exists(), "the tear-down must have run");
}

#[test]
fn an_interrupt_runs_the_teardown() {
    let dir = tempfile::tempdir().unwrap();
    let (json, mark) = (dir.path().join("i.json"), dir.path().join("restored"));
    let teardowns = [
        format!("a=touch {}", mark.display()),
        format!("b=touch {}", mark.display()),
    ];
    let mut child = osbench(shared_store())
        .args([
            "run",
            "syscall:case=null",
            "-q",
            "--samples",
            "1000",
            "--config",
            "a=",
            "--config",
            "b=",
        ])
        .args([
            "--teardown",
            &teardowns[0],
            "--teardown",
            &teardowns[1],
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(
        mark.exists(),
        "the interrupted configuration's tear-down must have run"
    );
}

#[test]
fn an_interrupt_stops_a_hung_setup_and_runs_its_teardown() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::write(&state, "orig\n").unwrap();
    let setup = format!("a=echo on > {}; sleep 1000.411", state.display());
    let teardown = format!("a=echo orig > {}", state.display());
    let mut cmd = osbench(shared_store());
    cmd.env("OSBENCH_STORE", dir.path().join("store.sqlite"))
        .args(["run", "syscall:case=null", "-q", "--samples", "3"])
        .args([
            "--sample-time",
            "5",
            "--config",
            &setup,
            "--config",
            "b=true",
        ])
        .args(["--teardown", &teardown])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: signal(2) only resets this child's SIGINT to the default.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    while fs::read_to_string(&state).unwrap() != "on\n" {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let mut status = None;
    for _ in 0..300 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let hook_left = hung_hook_processes("sleep 1000.411");
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    for (pid, _) in &hook_left {
        // SAFETY: kill(2) of the set-up this test's osbench started.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(130),
        "one SIGINT must stop it"
    );
    assert_eq!(fs::read_to_string(&state).unwrap(), "orig\n");
    assert!(hook_left.is_empty(), "left running: {hook_left:?}");
}

/// Live processes whose command line contains `needle` (pid and line),
/// after up to a second for killed ones to be reaped.
fn hung_hook_processes(needle: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for _ in 0..20 {
        found = fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let pid = e.file_name().to_str()?.parse().ok()?;
                let cmdline = fs::read(e.path().join("cmdline")).ok()?;
                let stat = fs::read_to_string(e.path().join("stat")).ok()?;
                let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                (line.contains(needle) && !stat.contains(") Z ")).then_some((pid, line))
            })
            .collect();
        if found.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    found
}

#[test]
fn configuration_names_must_be_unique_and_paired() {
    for (args, want) in [
        (vec!["--config", "a=", "--config", "a=true"], "given twice"),
        (vec!["--config", "a="], "nothing to be compared"),
        (
            vec!["--config", "a=", "--config", "b=", "--teardown", "c=true"],
            "no --config defines",
        ),
    ] {
        let out = osbench(shared_store())
            .args(["run", "syscall:case=null"])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}

#[test]
fn an_experiment_file_sets_parameters_per_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let (file, json) = (dir.path().join("e.toml"), dir.path().join("e.json"));
    fs::write(
        &file,
        "select = [\"spin\"]\n[[config]]\nname = \"light\"\nparams = { \"spin.work\" = 100 }\n\
         [[config]]\nname = \"heavy\"\nparams = { \"spin.work\" = 105 }\npin = \"same\"\n",
    )
    .unwrap();
    let out = osbench(shared_store())
        .args(["run", "--rounds", "3", "-q"])
        .args(QUICK)
        .arg("--experiment")
        .arg(&file)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("B/A"), "paired comparison printed: {text}");
    let doc = read_document(&json).unwrap();
    let works: Vec<i64> = doc
        .series
        .iter()
        .map(|s| s.params["work"].as_i64().unwrap())
        .collect();
    assert_eq!(works, [100, 105]);
    assert_eq!((doc.series[0].slot, doc.series[1].slot), (Some(0), Some(0)));
    assert_eq!(doc.series[1].pin, "same");

    fs::write(
        &file,
        "[[config]]\nname = \"a\"\nparams = { \"spin.wrok\" = 1 }\n[[config]]\nname = \"b\"\n",
    )
    .unwrap();
    let out = osbench(shared_store())
        .args(["run", "spin", "--experiment"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr.contains("configuration 'a'") && stderr.contains("no parameter 'wrok'"),
        "{stderr}"
    );
}

#[test]
fn rounds_stop_at_the_precision_target_or_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    // --no-perf: no counting pass, so no extra CPU load from it next to the
    // other tests running in parallel (the intervals must be narrow).
    let base = [
        "run",
        "spin:work=100",
        "--config",
        "a=",
        "--config",
        "b=",
        "-q",
        "--no-perf",
    ];
    // A ±50 % target is met once intervals exist (3 rounds), or a little
    // later when a round was disturbed by the tests running alongside.
    quick_run(&[&base[..], &["--target-ci", "50"]].concat(), &json);
    let doc = read_document(&json).unwrap();
    let rounds = doc.run.schedule.len();
    assert!(rounds >= 3, "{rounds} rounds");
    let why = doc.run.stopped_by.as_deref().unwrap();
    assert!(
        why.contains(&format!("within ±50.00% after {rounds} rounds")),
        "{why}"
    );
    // An impossible target with a tiny time limit stops at the limit (after the first two rounds).
    quick_run(
        &[&base[..], &["--target-ci", "0", "--max-time", "0.001"]].concat(),
        &json,
    );
    let doc = read_document(&json).unwrap();
    assert!(
        doc.run
            .stopped_by
            .as_deref()
            .unwrap()
            .contains("--max-time reached after 2 rounds"),
        "{:?}",
        doc.run.stopped_by
    );
}

#[test]
fn env_json_names_every_required_key_or_why_it_is_absent() {
    let out = osbench(shared_store())
        .args(["env", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let absent = env["absent"].as_object().cloned().unwrap_or_default();
    for key in [
        "kernel",
        "cmdline",
        "cpu_model",
        "vulnerabilities",
        "cpuidle",
        "clocksource",
        "virtualization",
    ] {
        assert!(
            env.get(key).is_some() || absent.contains_key(key),
            "{key} neither present nor explained: {env}"
        );
    }
    if let Some(idle) = env.get("cpuidle") {
        for k in ["driver", "governor", "states"] {
            assert!(idle.get(k).is_some(), "cpuidle.{k}: {idle}");
        }
    }
    // Either cpufreq is there or its absence is explained; the same for powercap.
    assert!(env.get("cpufreq").is_some() || absent.contains_key("cpufreq"));
    assert!(env.get("powercap").is_some() || absent.contains_key("powercap"));
    assert!(env["build"]["profile"].is_string(), "{env}");
    assert!(env["load"]["start"]["loadavg"].is_array(), "{env}");
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

/// The I/O families' limits stop a run before anything is measured (exit 2,
/// one line naming the limit and how to raise it), even after a valid case.
#[test]
fn io_limits_exit_2_before_measuring() {
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let cases: [(&str, &str, &str); 5] = [
        ("", "poll:call=select,fds=2000", "FD_SETSIZE (1024)"),
        (
            "",
            "poll:call=epoll_wait,on=file",
            "epoll cannot watch regular files",
        ),
        (
            "ulimit -n 64;",
            "poll:call=poll,fds=100",
            "`ulimit -n` = 64",
        ),
        ("", "stream:chunk=16000000", "/proc/sys/fs/pipe-max-size"),
        (
            "TMPDIR=/nonexistent",
            "fs",
            "cannot create a directory in /nonexistent",
        ),
    ];
    for (prefix, selector, want) in cases {
        let dir = tempfile::tempdir().unwrap();
        let script = format!(
            "{prefix} exec {} run syscall:case=null {selector} --json out.json",
            bin.display()
        );
        let out = Command::new("sh")
            .args(["-c", &script])
            .current_dir(dir.path())
            .env("OSBENCH_STORE", shared_store())
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{selector}: {stderr}");
        // Warnings of the noise audit may come first; the error is one line.
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("osbench: warning"))
            .collect();
        assert_eq!(errors.len(), 1, "{selector}: {stderr}");
        assert!(errors[0].contains(want), "{selector}: {stderr}");
        assert!(out.stdout.is_empty(), "{selector}: something was measured");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0, "{selector}");
    }
}

/// Ctrl-C in the middle of `fs` leaves no file or directory in $TMPDIR.
#[test]
fn an_interrupted_fs_run_leaves_nothing_in_tmpdir() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut child = osbench(shared_store())
        .args([
            "run",
            "fs:phase=create,files=2000",
            "-q",
            "--samples",
            "500",
        ])
        .args(["--warmup", "0", "--json"])
        .arg(out.path().join("out.json"))
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the case is running: its directory exists.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while fs::read_dir(tmp.path()).unwrap().count() == 0 {
        assert!(std::time::Instant::now() < deadline, "fs never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The default cases `osbench list` names for `family`, in its order.
fn listed_cases(list: &str, family: &str) -> Vec<String> {
    list.lines()
        .skip_while(|l| !l.starts_with(&format!("{family} — ")))
        .take_while(|l| !l.is_empty())
        .skip_while(|l| !l.contains("default cases and what one op is"))
        .skip(1)
        .map(|l| l[4..].split_whitespace().next().unwrap().to_string())
        .collect()
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
    let out = osbench(shared_store())
        .arg("run")
        .args(families)
        .args(["-q", "--no-perf", "--samples", "2", "--sample-time", "1"])
        .args(["--warmup", "0", "--json"])
        .arg(&json)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list =
        String::from_utf8(osbench(shared_store()).arg("list").output().unwrap().stdout).unwrap();
    let doc = read_document(&json).unwrap();
    for family in families {
        let mut listed = listed_cases(&list, family);
        let mut ran: Vec<String> = doc
            .series
            .iter()
            .filter(|s| s.bench == family)
            .map(|s| s.case.clone())
            .collect();
        assert!(!listed.is_empty(), "{family} lists no cases:\n{list}");
        listed.sort();
        ran.sort();
        assert_eq!(ran, listed, "{family}");
    }
    for s in &doc.series {
        // Two asked; one may be set aside on a loaded machine.
        assert!(!s.samples.is_empty(), "{} {}", s.bench, s.case);
        assert!(
            !s.anchor.is_empty(),
            "{} {} names no anchor",
            s.bench,
            s.case
        );
        if s.bench == "stream" || s.bench == "file" {
            assert!(
                s.bytes_per_op.is_some(),
                "{} {} is a bandwidth",
                s.bench,
                s.case
            );
        }
    }
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    assert!(helper_processes().is_empty(), "{:?}", helper_processes());
}

/// A 1 MiB tmpfs mounted for one test and unmounted when dropped.
struct SmallTmpfs(tempfile::TempDir);

impl SmallTmpfs {
    /// None (the test says it did not run) unless this is root.
    fn mount() -> Option<Self> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("not run: mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "osbench-test"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(ok.success(), "mount -t tmpfs failed");
        Some(SmallTmpfs(dir))
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// A child killed (and reaped) when the test ends, passed or failed.
struct KilledAtEnd(std::process::Child);

impl Drop for KilledAtEnd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A filesystem that fills up in the middle of an `fs` case (another
/// writer takes every block the case frees between its passes): exit 2,
/// one error naming the directory and the full filesystem, the cases
/// measured before and the failing case's own samples kept in the
/// document, nothing of osbench's left there.
#[test]
fn a_filesystem_full_in_the_middle_of_fs_exits_2_and_keeps_what_was_measured() {
    let Some(mnt) = SmallTmpfs::mount() else {
        return;
    };
    let root = mnt.0.path().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let mut child = KilledAtEnd(
        osbench(shared_store())
            .args([
                "run",
                "syscall:case=null",
                "fs:phase=create,kib=4,files=200",
            ])
            .args(["-q", "--no-perf", "--seed", "1", "--samples", "5000"])
            .args(["--sample-time", "1", "--warmup", "0", "--json"])
            .arg(&json)
            .env("TMPDIR", &root)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Once fs's directory exists, take every block there is, and keep
    // taking each one freed, until osbench ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    // (fs's own directory: the check of free space leaves a probe there first)
    let fs_started = || {
        fs::read_dir(&root).unwrap().any(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("osbench-fs")
        })
    };
    while !fs_started() {
        assert!(std::time::Instant::now() < deadline, "fs never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Let fs take samples of its own first. A sample is one pass of 200
    // files, 1-4 ms on the development VMs, so the 5,000 passes asked for
    // last far longer than this wait on any of them.
    std::thread::sleep(Duration::from_millis(300));
    let mut filler = fs::File::create(root.join("filler")).unwrap();
    let block = [0u8; 4096];
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "the run never failed");
        let _ = std::io::Write::write(&mut filler, &block);
    };
    let stderr = std::io::read_to_string(child.0.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(2), "{stderr}");
    let error = stderr
        .lines()
        .find(|l| l.starts_with("osbench: error"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        error.contains(&root.display().to_string())
            && error.contains("tmpfs")
            && error.contains("the filesystem is full")
            && error.contains("keeps what was measured"),
        "{stderr}"
    );
    let doc = read_document(&json).unwrap();
    assert!(
        doc.series
            .iter()
            .any(|s| s.bench == "syscall" && !s.samples.is_empty()),
        "the case measured before is kept"
    );
    let fs_series = doc.series.iter().find(|s| s.bench == "fs");
    assert!(
        fs_series.is_some_and(|s| !s.samples.is_empty() && s.noise.iter().any(|n| n == "failed")),
        "the failing case keeps its own samples, flagged: {:?}",
        fs_series.map(|s| (s.samples.len(), &s.noise))
    );
    let left: Vec<_> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "filler")
        .collect();
    assert!(left.is_empty(), "left on the full filesystem: {left:?}");
}

/// Display columns of `line` (µ, –, ± are one each).
fn columns(line: &str) -> usize {
    line.chars().count()
}

/// Fails naming every line of `text` wider than `width`.
fn assert_fits(text: &str, width: usize) {
    let long: Vec<&str> = text.lines().filter(|l| columns(l) > width).collect();
    assert!(
        long.is_empty(),
        "lines wider than {width}:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_default_suite_fits_the_terminal_and_pipes_keep_one_line_per_row() {
    let _serial = helper_lock(); // the suite starts helpers (ctx, ipc, hackbench's workers)
    let dir = tempfile::tempdir().unwrap();
    // At 100 columns as asked (the terminal's width is tried through a pty below).
    let json = dir.path().join("run.json");
    let out = quick_run(&["run", "--no-store", "--width", "100"], &json);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_fits(&text, 100);
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
    assert!(results.iter().any(|l| columns(l) > 100), "{text}");
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
    let out = Command::new("script")
        .args(["-qec", &run, "/dev/null"])
        .env("OSBENCH_STORE", shared_store())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Results, warnings and the progress bar share the terminal: what stays
    // on screen of each line is what follows its last carriage return.
    let raw = String::from_utf8(out.stdout).unwrap();
    let text: String = raw
        .lines()
        .map(|l| without_escapes(l.rsplit('\r').next().unwrap_or("")) + "\n")
        .collect();
    assert!(text.contains("messaging"), "{text}");
    assert!(text.contains("osbench: warning: "), "{text}");
    assert_fits(&text, 80);
}

/// `line` without terminal escape sequences (ESC [ … letter).
fn without_escapes(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            out.push(c);
        }
    }
    out
}
