//! The `sandbox` family end to end: its seccomp and Landlock cases in a
//! short real run, its refusals made to happen (a filter over the kernel's
//! limit, no auditctl in PATH, tracefs not mounted in a mount namespace of
//! the test's own), and audit rules and probes left nowhere after the run,
//! after Ctrl-C and after SIGKILL (`auditctl -l`, tracefs's uprobe_events
//! and enable files). The audit and probe tests need root (and auditctl,
//! unshare): without them they skip and say so, or fail under
//! `OSBENCH_REQUIRE_SANDBOX=1` (`.ci/run`).

use crate::kit::*;

/// Held by the tests that add audit rules: auditing's on/off state is the
/// machine's, so two of them at once would restore each other's.
static AUDIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Whether this test can do what it needs (`what`): skips when not, fails
/// when `OSBENCH_REQUIRE_SANDBOX=1`.
fn usable(test: &str, what: &str, ok: bool) -> bool {
    let required = std::env::var("OSBENCH_REQUIRE_SANDBOX").is_ok_and(|v| v == "1");
    assert!(
        ok || !required,
        "OSBENCH_REQUIRE_SANDBOX=1 but {test} cannot run: {what}"
    );
    if !ok {
        eprintln!("skipping {test}: {what}");
    }
    ok
}

use crate::common::pg::is_root as root;

fn auditctl(args: &[&str]) -> Option<String> {
    let out = Command::new("auditctl").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// osbench's audit rules now listed (their key is `osbench-PID`).
fn osbench_audit_rules() -> Vec<String> {
    auditctl(&["-l"])
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("key=osbench-"))
        .map(str::to_string)
        .collect()
}

fn audit_enabled() -> Option<String> {
    auditctl(&["-s"])?
        .lines()
        .find_map(|l| l.strip_prefix("enabled ").map(str::to_string))
}

fn audit_usable(test: &str) -> bool {
    usable(
        test,
        "needs root and auditctl (apt-get install -y auditd)",
        root() && audit_enabled().is_some(),
    )
}

#[test]
fn the_default_cases_run_with_a_filter_and_a_landlock_ruleset() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    if let Err(e) = osbench::bench::util::confine::landlock_abi() {
        // A kernel without Landlock: the default cases are refused, saying why.
        let out = osbench(shared_store())
            .args(["run", "sandbox", "--no-store"])
            .args(QUICK)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("Landlock ABI 1 or later is needed"),
            "{err}\n{e}"
        );
        return;
    }
    quick_run(&["run", "sandbox", "--no-store"], &json);
    let doc = read_document(&json).unwrap();
    let cases: Vec<String> = doc.series.iter().map(|s| s.key.case.clone()).collect();
    for want in [
        "null",
        "null+bpf10",
        "null+bpf100",
        "null+bpf1000",
        "null+notify",
        "open/d10",
        "open/d10+landlock",
        "stat/d10",
        "stat/d10+landlock",
    ] {
        assert!(cases.iter().any(|c| c == want), "{want} not in {cases:?}");
    }
}

/// `osbench run SELECTOR` (quick, not stored) with `env`, which must stop
/// before measuring with exit 2; its stderr.
fn refused(selector: &str, env: &[(&str, &str)]) -> String {
    let out = osbench(shared_store())
        .envs(env.iter().copied())
        .args(["run", selector, "--no-store"])
        .args(QUICK)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("after 0 of 1 cases"), "{err}");
    err
}

#[test]
fn a_filter_over_the_kernel_limit_stops_the_run_before_it_measures() {
    let err = refused("sandbox:null+bpf5000", &[]);
    assert!(err.contains("BPF_MAXINSNS is 4096"), "{err}");
}

#[test]
fn audit_rules_without_auditctl_are_refused_naming_the_package() {
    let err = refused("sandbox:null+audit3", &[("PATH", "/nonexistent")]);
    assert!(err.contains("install the package auditd"), "{err}");
}

#[test]
fn audit_rules_are_removed_after_the_run_ctrl_c_and_sigkill() {
    if !audit_usable("audit_rules_are_removed_after_the_run_ctrl_c_and_sigkill") {
        return;
    }
    let _one = AUDIT.lock().unwrap_or_else(|p| p.into_inner());
    let before = audit_enabled();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    quick_run(&["run", "sandbox:null+audit3", "--no-store"], &json);
    assert!(
        osbench_audit_rules().is_empty(),
        "{:?}",
        osbench_audit_rules()
    );
    assert_eq!(audit_enabled(), before);

    let status = interrupt_after(
        Duration::from_secs(2),
        "run sandbox:null+audit3 --samples 100000 --sample-time 20 --no-store --json",
        &json,
        || {
            assert_eq!(
                osbench_audit_rules().len(),
                3,
                "the rules are in place while it runs"
            )
        },
    );
    assert!(!status.success());
    assert!(
        osbench_audit_rules().is_empty(),
        "after Ctrl-C: {:?}",
        osbench_audit_rules()
    );
    assert_eq!(audit_enabled(), before);

    let mut child = osbench(shared_store())
        .args([
            "run",
            "sandbox:null+audit3",
            "--samples",
            "100000",
            "--no-store",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let added = wait_until(Duration::from_secs(20), Duration::from_millis(50), || {
        osbench_audit_rules().len() == 3
    });
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(added, "the rules never appeared");
    // The warden deletes them once osbench is gone.
    let removed = wait_until(Duration::from_secs(5), Duration::from_millis(50), || {
        osbench_audit_rules().is_empty() && audit_enabled() == before
    });
    assert!(
        removed,
        "after SIGKILL: {:?}, enabled {:?}",
        osbench_audit_rules(),
        audit_enabled()
    );
}

/// Runs `script` under `sh` in a mount namespace of its own (so what it
/// mounts is gone with it), `$OSBENCH` the binary; its stdout and stderr.
fn in_mount_namespace(script: &str) -> (bool, String, String) {
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(format!("mount --make-rprivate / && {script}"))
        .env("OSBENCH", bin)
        .env("OSBENCH_STORE", shared_store())
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

fn namespace_usable(test: &str) -> bool {
    let unshare = Command::new("unshare")
        .args(["-m", "true"])
        .status()
        .is_ok_and(|s| s.success());
    usable(test, "needs root and unshare -m", root() && unshare)
}

#[test]
fn a_probe_without_tracefs_is_refused_saying_how_to_mount_it() {
    if !namespace_usable("a_probe_without_tracefs_is_refused_saying_how_to_mount_it") {
        return;
    }
    // Empty directories over both places tracefs may be: it is not mounted.
    let (_, out, err) = in_mount_namespace(
        "mount -t tmpfs none /sys/kernel/tracing && mount -t tmpfs none /sys/kernel/debug \
         && \"$OSBENCH\" run sandbox:null+uprobe --no-store --samples 3 --sample-time 1 --warmup 0; echo \"exit $?\"",
    );
    assert!(out.contains("exit 2"), "{out}{err}");
    assert!(
        err.contains("tracefs is not mounted")
            && err.contains("mount -t tracefs nodev /sys/kernel/tracing"),
        "{err}"
    );
}

#[test]
fn a_probe_by_a_user_tracefs_is_closed_to_is_refused_saying_it_needs_root() {
    if !namespace_usable("a_probe_by_a_user_tracefs_is_closed_to_is_refused_saying_it_needs_root") {
        return;
    }
    let (_, out, err) = in_mount_namespace(
        "{ mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; } \
         && setpriv --reuid=65534 --regid=65534 --clear-groups \"$OSBENCH\" run sandbox:null+uprobe \
            --no-store --samples 3 --sample-time 1 --warmup 0; echo \"exit $?\"",
    );
    assert!(out.contains("exit 2"), "{out}{err}");
    assert!(
        err.contains("closed to this user: probes need root"),
        "{err}"
    );
}

/// The shell lines that print what is installed in tracefs: osbench's
/// probes and the getppid tracepoint's enable.
const TRACEFS_STATE: &str = "echo \"probes: $(grep -c osbench $T/uprobe_events)\"; \
     echo \"tracepoint: $(cat $T/events/syscalls/sys_enter_getppid/enable)\"";

#[test]
fn probes_are_enabled_measured_and_removed_after_the_run_ctrl_c_and_sigkill() {
    if !namespace_usable("probes_are_enabled_measured_and_removed_after_the_run_and_sigkill") {
        return;
    }
    let _helpers = helper_lock();
    let script = format!(
        "T=/sys/kernel/tracing
         mountpoint -q $T || mount -t tracefs nodev $T || exit 3
         for p in uprobe tracepoint; do
           \"$OSBENCH\" run sandbox:null+$p --no-store --samples 3 --sample-time 1 --warmup 0 >/dev/null || echo \"failed $p\"
         done
         {TRACEFS_STATE}
         \"$OSBENCH\" run sandbox:null+kprobe --no-store --samples 3 --sample-time 1 --warmup 0 >/dev/null 2>&1; echo \"kprobe exit $?\"
         for p in uprobe tracepoint; do for sig in INT KILL; do
           \"$OSBENCH\" run sandbox:null+$p --no-store --samples 100000 >/dev/null 2>&1 &
           pid=$!
           for i in $(seq 200); do
             grep -q osbench $T/uprobe_events 2>/dev/null && break
             [ \"$(cat $T/events/syscalls/sys_enter_getppid/enable)\" = 1 ] && break
             sleep 0.05
           done
           echo \"during $p:\"; {TRACEFS_STATE}
           kill -$sig $pid; wait $pid; sleep 1
           echo \"after SIG$sig of $p:\"; {TRACEFS_STATE}
         done
         done"
    );
    let (ok, out, err) = in_mount_namespace(&script);
    assert!(ok, "{out}{err}");
    assert!(!out.contains("failed"), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    // After the short runs, then during and after each killed run.
    assert_eq!(lines[..2], ["probes: 0", "tracepoint: 0"], "{out}");
    let kprobe = lines[2];
    // This kernel may lack CONFIG_KPROBE_EVENTS: then it is refused (exit 2).
    assert!(
        kprobe == "kprobe exit 0" || kprobe == "kprobe exit 2",
        "{out}"
    );
    let mut expected = Vec::new();
    for (probe, running) in [
        ("uprobe", ["probes: 1", "tracepoint: 0"]),
        ("tracepoint", ["probes: 0", "tracepoint: 1"]),
    ] {
        for sig in ["INT", "KILL"] {
            expected.push(format!("during {probe}:"));
            expected.extend(running.map(String::from));
            expected.push(format!("after SIG{sig} of {probe}:"));
            expected.extend(["probes: 0", "tracepoint: 0"].map(String::from));
        }
    }
    assert_eq!(lines[3..], expected, "{out}{err}");
}

/// Turns auditing on or off (`auditctl -e`), as the test needs it.
fn set_audit(on: bool) {
    auditctl(&["-e", if on { "1" } else { "0" }]).expect("auditctl -e");
}

/// Two configurations alike, each with 3 audit rules and a uprobe on
/// libc's getppid (whichever block comes first installs them: the long
/// run below is killed in it), measuring syscall null.
const OBSERVED: &str = "select = [\"syscall:case=null\"]\n\n[[config]]\nname = \"observed\"\n\
     audit_rules = 3\nprobes = [\"uprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:getppid\"]\n\n\
     [[config]]\nname = \"observed-again\"\naudit_rules = 3\n\
     probes = [\"uprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:getppid\"]\n";

#[test]
fn a_configuration_s_audit_rules_and_probes_are_installed_for_its_blocks_and_removed() {
    let test = "a_configuration_s_audit_rules_and_probes_are_installed_for_its_blocks_and_removed";
    let libc = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
    if !namespace_usable(test)
        || !audit_usable(test)
        || !usable(test, "needs Debian's x86-64 libc", libc.is_file())
    {
        return;
    }
    let _helpers = helper_lock();
    let _one = AUDIT.lock().unwrap_or_else(|p| p.into_inner());
    let before = audit_enabled();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("observed.toml");
    fs::write(&file, OBSERVED).unwrap();
    let json = dir.path().join("r.json");
    set_audit(true);
    let state = "echo \"uprobes $(grep -c osbench $T/uprobe_events) rules $(auditctl -l | grep -c key=osbench-)\"";
    let script = format!(
        "T=/sys/kernel/tracing
         mountpoint -q $T || mount -t tracefs nodev $T || exit 3
         \"$OSBENCH\" run --experiment {file} --rounds 2 --samples 3 --sample-time 1 --warmup 0 --no-store --json {json} >/dev/null || echo failed
         {state}
         \"$OSBENCH\" run --experiment {file} --samples 100000 --no-store >/dev/null 2>&1 &
         pid=$!
         for i in $(seq 200); do grep -q osbench $T/uprobe_events && break; sleep 0.05; done
         {state}
         kill -KILL $pid; wait $pid; sleep 1
         {state}",
        file = file.display(),
        json = json.display()
    );
    let (ok, out, err) = in_mount_namespace(&script);
    if let Some(b) = &before {
        set_audit(b == "1");
    }
    assert!(ok && !out.contains("failed"), "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    // After the short run, during the long one, after its SIGKILL.
    assert_eq!(
        lines,
        [
            "uprobes 0 rules 0",
            "uprobes 1 rules 3",
            "uprobes 0 rules 0"
        ],
        "{out}{err}"
    );
    let doc: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let config = &doc["run"]["configs"][0];
    assert_eq!(config["observers"]["audit_rules"], 3, "{config}");
    assert_eq!(
        config["observers"]["probes"][0],
        "uprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:getppid"
    );
}

#[test]
fn a_configuration_s_audit_rules_are_refused_when_auditing_was_off_at_the_start() {
    let test = "a_configuration_s_audit_rules_are_refused_when_auditing_was_off_at_the_start";
    if !audit_usable(test) {
        return;
    }
    let _one = AUDIT.lock().unwrap_or_else(|p| p.into_inner());
    let before = audit_enabled();
    set_audit(false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audited.toml");
    fs::write(
        &file,
        "select = [\"syscall:case=null\"]\n[[config]]\nname = \"bare\"\n[[config]]\nname = \"audited\"\naudit_rules = 2\n",
    )
    .unwrap();
    let out = osbench(shared_store())
        .args(["run", "--experiment"])
        .arg(&file)
        .args(["--no-store"])
        .args(QUICK)
        .output()
        .unwrap();
    if let Some(b) = &before {
        set_audit(b == "1");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("configuration 'audited'") && err.contains("auditctl -e 1"),
        "{err}"
    );
    assert!(osbench_audit_rules().is_empty());
}
