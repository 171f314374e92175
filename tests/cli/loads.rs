//! `run --load` and a configuration's `load` (issue 42, item 1) through the
//! binary: a load runs only around its case's measurement (never during a
//! configuration's set-up or tear-down), its throughput is recorded and
//! shown beside the case and in a comparison, a load that exits early
//! marks the case, and Ctrl-C or SIGKILL of osbench leaves no load running.

use crate::kit::*;

/// Every stamp (ns) of a file written by `date +%s%N`, one a line.
fn stamps(path: &Path) -> Vec<u64> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[test]
fn a_load_runs_only_while_its_case_is_measured_and_is_compared() {
    let _serial = helper_lock();
    let dir = tempfile::tempdir().unwrap();
    let (ticks, hooks) = (dir.path().join("ticks"), dir.path().join("hooks"));
    let json = dir.path().join("run.json");
    let hook = || format!("sleep 0.05; date +%s%N >> {}; sleep 0.05", hooks.display());
    let experiment = dir.path().join("load.toml");
    let load = format!(
        "cmd:while :; do date +%s%N >> {}; sleep 0.005; done",
        ticks.display()
    );
    let text = format!(
        "select = [\"spin:work=100\"]\n\
         [[config]]\nname = \"quiet\"\nsetup = \"{s}\"\nteardown = \"{t}\"\n\
         [[config]]\nname = \"busy\"\nsetup = \"{s}\"\nteardown = \"{t}\"\nload = [\"{load}\", \"spin:1\"]\n",
        s = hook(),
        t = hook(),
    );
    fs::write(&experiment, text).unwrap();
    let args = [
        "run",
        "--experiment",
        experiment.to_str().unwrap(),
        "--rounds",
        "2",
    ];
    let more = [
        "--samples",
        "5",
        "--sample-time",
        "20",
        "--warmup",
        "0",
        "--no-perf",
    ];
    let out = run_ok(&[&args[..], &more[..]].concat(), &json);
    let doc = read_document(&json).unwrap();
    let busy = doc.series.iter().find(|s| s.key.config == "busy").unwrap();
    let quiet = doc.series.iter().find(|s| s.key.config == "quiet").unwrap();
    assert!(quiet.loads.is_empty());
    assert_eq!(
        busy.loads.len(),
        4,
        "two loads, two rounds: {:?}",
        busy.loads
    );
    let windows: Vec<(u64, u64)> = busy
        .loads
        .iter()
        .map(|r| (r.started_unix_ns, r.stopped_unix_ns))
        .collect();
    let ticks = stamps(&ticks);
    assert!(!ticks.is_empty());
    for t in &ticks {
        assert!(
            windows.iter().any(|(a, b)| a <= t && t <= b),
            "the load ran at {t}, outside its windows {windows:?}"
        );
    }
    let hooks = stamps(&hooks);
    assert_eq!(
        hooks.len(),
        8,
        "a set-up and a tear-down per configuration and round"
    );
    for h in &hooks {
        assert!(
            !windows.iter().any(|(a, b)| a <= h && h <= b),
            "a set-up or tear-down ran at {h}, inside a load's window {windows:?}"
        );
    }
    for r in &busy.loads {
        assert!(r.started_unix_ns <= r.measured_from_unix_ns);
        assert!(r.measured_to_unix_ns <= r.stopped_unix_ns);
        assert!(r.count > 0.0 && r.failed.is_none(), "{r:?}");
        let during = ticks
            .iter()
            .filter(|t| (r.measured_from_unix_ns..=r.measured_to_unix_ns).contains(t));
        if r.spec.starts_with("cmd:") {
            assert!(
                during.count() > 0,
                "no tick while the case was measured: {r:?}"
            );
        }
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("Background loads"), "{stdout}");
    assert!(stdout.contains("A under no load"), "{stdout}");
    assert!(
        stdout.contains("B under cmd:while") && stdout.contains("iterations/s"),
        "{stdout}"
    );
}

#[test]
fn a_load_that_exits_early_marks_the_case_and_keeps_its_samples() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("early.json");
    let out = quick_run(
        &["run", "spin:work=100", "--load", "cmd:exit 3", "--no-perf"],
        &json,
    );
    let doc = read_document(&json).unwrap();
    let series = &doc.series[0];
    assert_eq!(series.samples.len(), 3);
    assert!(
        series
            .noise
            .contains(&osbench::document::NoiseFlag::LoadFailed)
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("exited before the case's last sample"),
        "{stderr}"
    );
    assert!(stderr.contains("exit status 3"), "{stderr}");
}

#[test]
fn a_load_that_ignores_sigterm_is_killed_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stubborn.json");
    let load = "cmd:trap '' TERM; while :; do sleep 0.0101; done";
    let out = quick_run(
        &["run", "spin:work=100", "--load", load, "--no-perf"],
        &json,
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("did not stop within 1 s of SIGTERM; killed with SIGKILL"),
        "{stderr}"
    );
    assert!(stderr.contains("cmd:trap"), "{stderr}");
    assert!(hung_hook_processes("sleep 0.0101").is_empty());
    let doc = read_document(&json).unwrap();
    assert!(doc.series[0].loads[0].killed.is_some());
}

/// Starts a long run with `loads` (each `--load`'s value), waits until the
/// loads run, signals osbench with `signal` and says what was left running
/// after up to 3 s: helpers named osbench-* and processes whose command
/// line has `mark`.
fn signalled_with_loads(
    signal: libc::c_int,
    loads: &[&str],
    mark: &str,
) -> (Vec<String>, Vec<(i32, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = osbench(shared_store());
    cmd.args([
        "run",
        "spin:work=100",
        "-q",
        "--samples",
        "1000",
        "--no-perf",
    ]);
    for l in loads {
        cmd.args(["--load", l]);
    }
    let mut child = cmd
        .arg("--json")
        .arg(dir.path().join("x.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = wait_until(Duration::from_secs(20), Duration::from_millis(20), || {
        helper_processes()
            .iter()
            .any(|p| p.ends_with("osbench-load"))
            && !loads_marked(mark).is_empty()
    });
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let status = child.wait().unwrap();
    assert!(running, "the loads never ran");
    if signal == libc::SIGINT {
        assert_eq!(status.code(), Some(130));
    }
    wait_until(Duration::from_secs(3), Duration::from_millis(50), || {
        helper_processes().is_empty() && loads_marked(mark).is_empty()
    });
    (helper_processes(), loads_marked(mark))
}

/// Live processes running a load command that has `mark` (not osbench
/// itself, whose command line names it after --load).
fn loads_marked(mark: &str) -> Vec<(i32, String)> {
    let mut found = hung_hook_processes(mark);
    found.retain(|(_, line)| !line.contains("--load"));
    found
}

#[test]
fn ctrl_c_or_sigkill_with_loads_running_leaves_nothing() {
    let _serial = helper_lock();
    for (signal, mark) in [
        (libc::SIGINT, "sleep 1000.421"),
        (libc::SIGKILL, "sleep 1000.422"),
    ] {
        let cmd = format!("cmd:{mark}");
        let (helpers, commands) = signalled_with_loads(signal, &["spin:2", &cmd], mark);
        for (pid, _) in &commands {
            // SAFETY: kill(2) of a load this test's osbench started.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        assert!(helpers.is_empty(), "signal {signal} left {helpers:?}");
        assert!(commands.is_empty(), "signal {signal} left {commands:?}");
    }
}

#[test]
fn a_load_beyond_the_descriptor_limit_is_named_and_the_case_marked() {
    let _serial = helper_lock();
    let args =
        "run spin:work=100 --samples 3 --sample-time 1 --warmup 0 --no-perf --load hackbench:1";
    let (status, stderr, stdout) = under_ulimit("bash", "-n 40", args);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(
        stderr.contains("load 'hackbench:1' could not be started") && stderr.contains("ulimit -n"),
        "{stderr}"
    );
    assert!(stdout.contains("load-failed"), "{stdout}");
    assert!(helper_processes().is_empty(), "{:?}", helper_processes());
}
