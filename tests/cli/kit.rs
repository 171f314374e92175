//! Helpers the `osbench` CLI test modules share: the shared store, quick
//! runs, interrupting a run, helper processes left behind, ulimits, planted
//! documents. Re-exports the imports every module uses.

pub(crate) use std::fs;
pub(crate) use std::path::Path;
pub(crate) use std::process::{Command, Stdio};
pub(crate) use std::time::Duration;

pub(crate) use crate::common::osbench;
pub(crate) use osbench::store::read_document;

/// The results store every test's osbench writes to unless the test gives
/// its own: never the user's own store.
pub(crate) fn shared_store() -> std::path::PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-tests-results.sqlite")
}

/// A quick run: few short samples, no warm-up.
pub(crate) const QUICK: [&str; 6] = ["--samples", "3", "--sample-time", "1", "--warmup", "0"];

/// `osbench ARGS --json JSON`, which must succeed.
pub(crate) fn run_ok(args: &[&str], json: &Path) -> std::process::Output {
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
pub(crate) fn quick_run(args: &[&str], json: &Path) -> std::process::Output {
    run_ok(&[args, &QUICK[..]].concat(), json)
}

/// Starts `osbench ARGS JSON`, waits `after`, runs `check`, sends SIGINT and
/// returns how osbench ended.
pub(crate) fn interrupt_after(
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
pub(crate) fn run_in_empty_dir(args: &[&str]) -> (Option<i32>, String, usize) {
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

/// Held by every test that starts helper processes, so the ones that look for
/// leftover helpers on the whole machine do not see another test's.
pub(crate) static HELPER_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub(crate) fn helper_lock() -> std::sync::MutexGuard<'static, ()> {
    HELPER_TESTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Processes named like osbench's helpers (`osbench-ctx`, `osbench-ipc`, …).
/// Not test binaries (`target/debug/deps/osbench-<hash>`, named
/// `osbench-<hash>` too) nor their helpers: another checkout's unit tests
/// on this machine are not this binary's leftovers.
pub(crate) fn helper_processes() -> Vec<String> {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let exe = fs::read_link(entry.path().join("exe")).ok()?;
            if exe.to_string_lossy().contains("/deps/") {
                return None;
            }
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
pub(crate) fn wait_until(within: Duration, step: Duration, mut done: impl FnMut() -> bool) -> bool {
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
pub(crate) fn under_ulimit(shell: &str, limit: &str, args: &str) -> (Option<i32>, String, String) {
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

/// Writes a copy of the document at `from` to `to` with every sample and
/// summary value of every series multiplied by `factor`, the schema set to `schema`.
pub(crate) fn planted_copy(from: &Path, to: &Path, factor: f64, schema: &str) {
    planted_copy_where(from, to, factor, schema, |_| true);
}

/// [`planted_copy`] with only the series `chosen` says multiplied.
pub(crate) fn planted_copy_where(
    from: &Path,
    to: &Path,
    factor: f64,
    schema: &str,
    chosen: impl Fn(&serde_json::Value) -> bool,
) {
    let mut doc: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(from).unwrap()).unwrap();
    doc["schema"] = schema.into();
    if factor != 1.0 {
        doc["env"]["kernel"] = "6.99.0-planted".into(); // a confounder compare must show
    }
    for s in doc["series"].as_array_mut().unwrap() {
        if !chosen(s) {
            continue;
        }
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

/// Live processes whose command line contains `needle` (pid and line),
/// after up to a second for killed ones to be reaped.
pub(crate) fn hung_hook_processes(needle: &str) -> Vec<(i32, String)> {
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

/// The default cases `osbench list` names for `family`, in its order.
pub(crate) fn listed_cases(list: &str, family: &str) -> Vec<String> {
    list.lines()
        .skip_while(|l| !l.starts_with(&format!("{family} — ")))
        .take_while(|l| !l.is_empty())
        .skip_while(|l| !l.contains("default cases and what one op is"))
        .skip(1)
        .map(|l| l[4..].split_whitespace().next().unwrap().to_string())
        .collect()
}
