//! Guests as a user meets them: configurations that run in another system
//! with `osbench agent` inside — a command guest (a plain child process, no
//! hardware needed) and User-Mode Linux — and every way a guest can fail:
//! another version, no answer, death mid-run, a malformed reply, a failed
//! boot, Ctrl-C. Each must name the configuration, leave nothing running and
//! keep what was measured. A guest's system logs are its own, read by its
//! agent (none with `--no-logs`). Correctness only; no test asserts on speed.
//!
//! The UML tests need `linux.uml` (Debian: user-mode-linux; or a kernel in
//! `$OSBENCH_UML_KERNEL`). Without it they skip and say so, unless
//! `OSBENCH_REQUIRE_UML=1` (as `.ci/run` sets). A UML kernel that cannot run
//! on this host's CPU (UML before ~6.13 on hosts with AMX: "ptrace set fp
//! regs failed, errno = 14") is a host limit: the test says so and skips.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::Sshd;
use osbench::store::read_document;

/// Few samples, no warm-up; 5 ms samples, since 1 ms ones of a process-mode
/// ipc case could not land 3 in 19 tries beside other tests' guests.
const QUICK: [&str; 8] = [
    "--samples",
    "3",
    "--sample-time",
    "5",
    "--warmup",
    "0",
    "--rounds",
    "2",
];

/// `osbench run SELECTOR --config native= --guest GUEST QUICK --json JSON`,
/// guests given `timeout_s` to answer.
fn run_guest(selector: &str, guest: &str, json: &Path, timeout_s: &str) -> Output {
    run_guest_with(selector, guest, json, timeout_s, &[])
}

/// [`run_guest`] with `extra` arguments.
fn run_guest_with(
    selector: &str,
    guest: &str,
    json: &Path,
    timeout_s: &str,
    extra: &[&str],
) -> Output {
    common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args(["run", selector, "--no-perf", "--config", "native="])
        .args(["--guest", guest])
        .args(QUICK)
        .args(extra)
        .arg("--json")
        .arg(json)
        .env("OSBENCH_GUEST_TIMEOUT", timeout_s)
        .output()
        .unwrap()
}

/// [`run_guest`] of `spin:work=100` with the command guest `g` running `guest`.
fn run_with_guest(guest: &str, json: &Path, timeout_s: &str) -> Output {
    run_guest(
        "spin:work=100",
        &format!("g=command:{guest}"),
        json,
        timeout_s,
    )
}

/// A guest command carrying a unique mark, so a test can look for leftovers.
fn marked_command(mark: &str, body: &str) -> String {
    format!("export OSBENCH_TEST_MARK={mark}; {body}")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_command_guest_runs_its_cases_in_interleaved_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("g.json");
    let mark = "ok-guest";
    // The guest's agent reads its system logs from a tree of its own.
    let logs = dir.path().join("guest-logs");
    common::logs_tree(&logs, "Linux version of the guest");
    let agent = format!(
        "export OSBENCH_LOGS_ROOT='{}'; exec {{osbench}} agent",
        logs.display()
    );
    let out = run_with_guest(&marked_command(mark, &agent), &json, "60");
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = read_document(&json).unwrap();
    let configs: Vec<&str> = doc.series.iter().map(|s| s.key.config.as_str()).collect();
    assert_eq!(configs, ["native", "g"]);
    assert!(doc.series.iter().all(|s| s.rounds.len() == 2));
    assert_eq!(doc.run.guests.len(), 1);
    let guest = &doc.run.guests[0];
    assert_eq!(guest.config, "g");
    assert_eq!(guest.version, env!("CARGO_PKG_VERSION"));
    assert!(guest.boot_s > 0.0 && !guest.env.kernel.is_empty());
    let log = common::kept_kernel_log(&guest.env);
    assert!(log.ends_with("] Linux version of the guest"), "{log:?}");
    assert!(!common::kept_kernel_log(&doc.env).contains("of the guest"));
    assert_eq!(doc.comparisons.len(), 1);
    assert!(
        common::left_running(mark).is_empty(),
        "left running: {:?}",
        common::left_running(mark)
    );
}

#[test]
fn a_guest_runs_the_load_itself_and_an_agent_that_drops_it_is_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("g.json");
    let guest = "g=command:exec {osbench} agent";
    let out = run_guest_with("spin:work=100", guest, &json, "60", &["--load", "spin:1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = read_document(&json).unwrap();
    for s in &doc.series {
        assert_eq!(s.loads.len(), 2, "{}: a load run per round", s.key.config);
        assert!(s.loads.iter().all(|r| r.spec == "spin:1" && r.count > 0.0));
        assert!(!s.noise.contains(&osbench::document::NoiseFlag::LoadFailed));
    }
    // An agent that never sees the request's loads (an older osbench) runs none.
    let dropped = r#"sed -u 's/,"loads":\[[^]]*\]//' | {osbench} agent"#;
    let guest = format!("g=command:{dropped}");
    let out = run_guest_with("spin:work=100", &guest, &json, "60", &["--load", "spin:1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = read_document(&json).unwrap();
    let g = doc.series.iter().find(|s| s.key.config == "g").unwrap();
    assert!(g.loads.is_empty() && g.noise.contains(&osbench::document::NoiseFlag::LoadFailed));
    assert!(
        g.warnings
            .iter()
            .any(|w| w.contains("the guest's osbench ran no load"))
    );
}

#[test]
fn no_logs_asks_a_guest_for_none() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("g.json");
    let guest = "g=command:exec {osbench} agent";
    let out = run_guest_with("spin:work=100", guest, &json, "60", &["--no-logs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = read_document(&json).unwrap();
    assert!(doc.env.logs.is_none() && doc.run.guests[0].env.logs.is_none());
}

/// Runs a broken guest; returns osbench's stderr after checking the exit
/// status (2), that the configuration is named, and that nothing is left.
fn broken(
    mark: &str,
    body: &str,
    timeout_s: &str,
) -> (String, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("b.json");
    let out = run_with_guest(&marked_command(mark, body), &json, timeout_s);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("osbench: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {err}");
    assert!(errors[0].contains("configuration 'g'"), "{err}");
    assert_eq!(err.lines().last(), Some(errors[0]), "{err}");
    assert!(
        common::left_running(mark).is_empty(),
        "left running: {:?}",
        common::left_running(mark)
    );
    (err, json, dir)
}

#[test]
fn an_agent_of_another_version_is_refused() {
    let ready = r#"{"ready":{"protocol":1,"version":"0.0.1"}}"#;
    let (err, json, _dir) = broken("old", &format!("echo '{ready}'; sleep 60"), "10");
    assert!(err.contains("osbench 0.0.1"), "{err}");
    assert!(!json.exists(), "nothing was measured, so no document");
}

#[test]
fn a_guest_that_never_answers_times_out() {
    let (err, _, _dir) = broken("mute", "echo booting; sleep 60", "1.5");
    assert!(err.contains("did not answer within 1.5 s"), "{err}");
    assert!(err.contains("booting"), "the console is quoted: {err}");
}

/// The agent's `ready` line of this osbench, as a fake guest writes it.
fn ready_line() -> String {
    format!(
        r#"{{"ready":{{"protocol":1,"version":"{}"}}}}"#,
        env!("CARGO_PKG_VERSION")
    )
}

#[test]
fn a_malformed_reply_is_an_error() {
    let ready = ready_line();
    let body = format!("echo '{ready}'; read line; echo '{{garbage'; sleep 60");
    let (err, _, _dir) = broken("garbage", &body, "10");
    assert!(err.contains("malformed reply"), "{err}");
}

#[test]
fn a_console_line_without_end_is_cut_not_kept_whole() {
    // Before the bound, osbench's memory grew by the guest's output rate.
    let (err, _, _dir) = broken("endless-console", "echo booting; yes | tr -d '\\n'", "3");
    assert!(err.contains("did not answer within 3 s"), "{err}");
    assert!(err.contains("booting | "), "the console is quoted: {err}");
    assert!(
        err.contains("yyy… (a line of more than 4096 bytes, cut)"),
        "the endless line is cut, and quoted cut again: {err}"
    );
}

#[test]
fn an_endless_protocol_line_closes_the_channel_with_a_named_error() {
    let ready = ready_line();
    let body = format!("echo '{ready}'; read line; printf '{{'; tr '\\0' a < /dev/zero");
    let (err, _, _dir) = broken("endless-reply", &body, "30");
    assert!(err.contains("protocol line of more than 256 MiB"), "{err}");
}

#[test]
fn a_series_of_another_case_is_refused() {
    // The agent is asked for syscall null where spin was requested.
    let body = "sed -u 's/spin:work=100,planted=0/syscall:case=null/' | {osbench} agent";
    let (err, json, _dir) = broken("other-case", body, "30");
    assert!(
        err.contains("answered with a series of syscall null"),
        "{err}"
    );
    // The round order is random: when native ran first, its series is kept alone.
    if json.exists() {
        let doc = read_document(&json).unwrap();
        let configs: Vec<&str> = doc.series.iter().map(|s| s.key.config.as_str()).collect();
        assert!(
            configs.iter().all(|c| *c == "native"),
            "nothing of g is kept: {configs:?}"
        );
    }
}

#[test]
fn a_series_without_samples_is_refused_and_the_rest_is_kept() {
    let body = r#"{osbench} agent | sed -u 's/"samples":\[[^]]*\]/"samples":[]/'"#;
    let (err, json, _dir) = broken("no-samples", body, "30");
    assert!(err.contains("is not valid"), "{err}");
    // When native ran first (the order is random), what it measured reads
    // back: the document passes its checks.
    if json.exists() {
        let doc = read_document(&json).unwrap();
        assert!(!doc.series.is_empty() && doc.series.iter().all(|s| s.key.config == "native"));
    }
}

#[test]
fn a_guest_that_dies_mid_run_keeps_what_was_measured() {
    // The agent gets only the handshake, the check of the cases and the
    // first run request, then its input ends and it exits: the guest is gone
    // at its second case.
    let body =
        "{ read a; echo \"$a\"; read b; echo \"$b\"; read c; echo \"$c\"; } | {osbench} agent";
    let (err, json, _dir) = broken("dies", body, "10");
    assert!(
        err.contains("the guest ended") || err.contains("closed its channel"),
        "{err}"
    );
    let doc = read_document(&json).unwrap();
    assert!(!doc.run.complete);
    // Round 1 ran the native case and the guest's first; both are kept.
    let configs: Vec<&str> = doc.series.iter().map(|s| s.key.config.as_str()).collect();
    assert_eq!(configs, ["native", "g"], "what was measured before is kept");
}

/// A UML kernel that boots here, or why the UML tests skip.
fn uml_or_skip(test: &str) -> bool {
    let required = std::env::var("OSBENCH_REQUIRE_UML").is_ok_and(|v| v == "1");
    if let Err(why) = osbench::guest::uml::find_kernel(None) {
        assert!(!required, "OSBENCH_REQUIRE_UML=1 but {why}");
        eprintln!("{test}: skipped: {why}");
        return false;
    }
    true
}

/// Whether `err` is the known host limit of old UML kernels on AMX hosts.
fn host_limit(test: &str, err: &str) -> bool {
    let limit = err.contains("ptrace set fp regs failed");
    if limit {
        eprintln!(
            "{test}: skipped: this UML kernel cannot run on this host's CPU (its FPU buffer is \
             smaller than the host's XSAVE area); set OSBENCH_UML_KERNEL to a newer UML: {err}"
        );
    }
    limit
}

/// The UML tests look for any UML process left: they run one at a time.
fn uml_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn uml_processes() -> Vec<String> {
    fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let cmdline = fs::read(entry.path().join("cmdline")).ok()?;
            let text = String::from_utf8_lossy(&cmdline);
            (text.contains("rootfstype=hostfs") && text.contains("umid=osbench"))
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
fn uml_runs_a_case_with_its_own_kernel_and_stops_cleanly() {
    if !uml_or_skip("uml_runs_a_case") {
        return;
    }
    let _serial = uml_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("uml.json");
    let out = run_guest("syscall:case=getpid", "uml=uml", &json, "60");
    let err = stderr(&out);
    if !out.status.success() && host_limit("uml_runs_a_case", &err) {
        assert!(uml_processes().is_empty());
        return;
    }
    assert!(out.status.success(), "{err}");
    let doc = read_document(&json).unwrap();
    let guest = &doc.run.guests[0];
    assert_ne!(guest.env.kernel_version, doc.env.kernel_version);
    // Its system logs are its own kernel's: its log tells of its boot.
    let log = common::kept_kernel_log(&guest.env);
    assert!(
        log.contains(&format!("Linux version {}", guest.env.kernel)),
        "{:?}\n{log}",
        guest.env.logs
    );
    assert!(
        doc.run
            .config_env_diff
            .iter()
            .any(|(k, _)| k == "kernel_version"),
        "{:?}",
        doc.run.config_env_diff
    );
    let uml = doc.series.iter().find(|s| s.key.config == "uml").unwrap();
    assert_eq!(uml.rounds.len(), 2);
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());

    // Ctrl-C in the middle: exit 130, no UML left, the document keeps what was measured.
    let log = dir.path().join("interrupted.log");
    let mut child = common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args([
            "run",
            "syscall:case=getpid",
            "--no-perf",
            "--config",
            "native=",
        ])
        .args(["--guest", "uml=uml", "--rounds", "20", "--samples", "50"])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // Past the boot and the first round's cases (both configurations
    // measured once), however slowly a loaded machine boots the guest: the
    // progress lines are "[i/40] round …".
    common::wait_until("the first round's cases", || {
        let text = fs::read_to_string(&log).unwrap_or_default();
        (text.matches("/40] round ").count() >= 3).then_some(())
    });
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    std::thread::sleep(Duration::from_millis(300));
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());
    assert!(!read_document(&json).unwrap().run.complete);
}

#[test]
fn a_uml_guest_that_fails_to_boot_names_its_configuration() {
    if !uml_or_skip("a_uml_guest_that_fails_to_boot") {
        return;
    }
    let _serial = uml_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("boot.json");
    // Too little memory for the kernel to boot.
    let out = run_guest("spin:work=100", "tiny=uml:mem=1M", &json, "20");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("configuration 'tiny'"), "{err}");
    assert!(err.contains("last console lines"), "{err}");
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());
}

#[test]
fn a_pid_namespace_is_a_guest_too() {
    let probe = Command::new("unshare")
        .args(["--fork", "--pid", "--mount-proc", "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("a_pid_namespace_is_a_guest_too: skipped: unshare --pid is not permitted here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ns.json");
    let mark = "pid-namespace";
    let body = "exec unshare --fork --pid --mount-proc {osbench} agent";
    // The agent is PID 1 there, as a guest's init is: a case whose helper
    // is a forked process must still run (the helper once took a parent of
    // PID 1 for a dead osbench and exited).
    let out = run_guest(
        "ipc:kind=pipe,bytes=1,mode=processes",
        &format!("g=command:{}", marked_command(mark, body)),
        &json,
        "60",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.series.len(), 2);
    assert!(
        common::left_running(mark).is_empty(),
        "left running: {:?}",
        common::left_running(mark)
    );
}

#[test]
fn the_seed_program_makes_its_calls_and_exits() {
    let out = common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args(["loop", "100000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    let bad = common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args(["loop", "lots"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn an_ssh_host_is_a_guest() {
    if !common::sshd_usable("an_ssh_host_is_a_guest") {
        return;
    }
    let sshd = Sshd::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ssh.json");
    let mark = "ssh-guest";
    let ssh = format!(
        "ssh -T -p {} -i {} -o BatchMode=yes -o StrictHostKeyChecking=no \
         -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1 \
         OSBENCH_TEST_MARK={mark} {{osbench}} agent",
        sshd.port,
        sshd.key.display()
    );
    let out = run_with_guest(&marked_command(mark, &ssh), &json, "60");
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.series.len(), 2);
    assert_eq!(doc.run.guests[0].config, "g");
    drop(sshd);
    assert!(
        common::left_running(mark).is_empty(),
        "left running: {:?}",
        common::left_running(mark)
    );
}

/// `osbench run --experiment FILE QUICK --json JSON` with `toml` as the file.
fn run_experiment(toml: &str, dir: &Path, extra: &[&str]) -> (Output, std::path::PathBuf) {
    let file = dir.join("experiment.toml");
    fs::write(&file, toml).unwrap();
    let json = dir.join("run.json");
    let out = common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args(["run", "--no-perf", "--experiment"])
        .arg(&file)
        .args(QUICK)
        .args(extra)
        .arg("--json")
        .arg(&json)
        .env("OSBENCH_GUEST_TIMEOUT", "60")
        .output()
        .unwrap();
    (out, json)
}

/// An experiment: `native` on the host, then configurations `a` and `b`
/// sharing the command guest `g` (the agent as a plain child, marked), each
/// set-up and tear-down appending its name to `log`; `b_setup` replaces b's.
fn shared_command_guest(mark: &str, log: &Path, b_setup: &str, selector: &str) -> String {
    let log = log.display();
    format!(
        r#"
        select = ["{selector}"]
        [guests]
        g = {{ kind = "command", command = "export OSBENCH_TEST_MARK={mark}; exec {{osbench}} agent" }}
        [[config]]
        name = "native"
        [[config]]
        name = "a"
        in = "g"
        setup = "echo 'a on' >> {log}"
        teardown = "echo 'a off' >> {log}"
        [[config]]
        name = "b"
        in = "g"
        setup = "echo 'b on' >> {log}; {b_setup}"
        teardown = "echo 'b off' >> {log}"
        "#
    )
}

/// Each configuration's set-up was followed by its own tear-down, `blocks` times in all.
fn assert_paired(log: &Path, blocks: usize) {
    let text = fs::read_to_string(log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 * blocks, "{text}");
    for pair in lines.chunks(2) {
        let name = pair[0].strip_suffix(" on").expect(&text);
        assert_eq!(pair[1], format!("{name} off"), "{text}");
    }
}

#[test]
fn configurations_share_a_guest_and_set_it_up_inside_interleaved_with_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let mark = "shared-guest";
    let toml = shared_command_guest(mark, &log, "true", "spin:work=100");
    let (out, json) = run_experiment(&toml, dir.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Two rounds of a and b, each set up and torn down in the guest around its block.
    assert_paired(&log, 4);
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.run.guests.len(), 1, "one guest booted for both");
    let guest = &doc.run.guests[0];
    assert_eq!(
        (guest.config.as_str(), guest.configs.clone()),
        ("g", vec!["a".into(), "b".into()])
    );
    let configs: Vec<&str> = doc.series.iter().map(|s| s.key.config.as_str()).collect();
    assert_eq!(configs, ["native", "a", "b"]);
    assert!(doc.run.schedule.iter().all(|round| round.len() == 3));
    assert!(
        common::left_running(mark).is_empty(),
        "left: {:?}",
        common::left_running(mark)
    );
}

#[test]
fn a_failing_set_up_in_a_guest_names_its_configuration_quotes_it_and_is_torn_down() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let mark = "failing-guest-setup";
    let failing = "echo 'no such toggle here' >&2; exit 3";
    let toml = shared_command_guest(mark, &log, failing, "spin:work=100");
    let (out, _) = run_experiment(&toml, dir.path(), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("configuration 'b'"), "{err}");
    assert!(
        err.contains("failed inside the guest with exit status: 3"),
        "{err}"
    );
    assert!(
        err.contains("no such toggle here"),
        "the guest's output is quoted: {err}"
    );
    // b's failed set-up was torn down too, and every block before it.
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.ends_with("b on\nb off\n"), "{text}");
    assert!(
        common::left_running(mark).is_empty(),
        "left: {:?}",
        common::left_running(mark)
    );

    // A set-up that hangs is killed at the guest timeout, and named.
    let hung = shared_command_guest(mark, &log, "echo stuck; sleep 600", "spin:work=100");
    let file = dir.path().join("hung.toml");
    fs::write(&file, hung).unwrap();
    let out = common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args(["run", "--no-perf", "--experiment"])
        .arg(&file)
        .args(QUICK)
        .env("OSBENCH_GUEST_TIMEOUT", "2")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("configuration 'b'") && err.contains("timeout of 2 s"),
        "{err}"
    );
    assert!(err.contains("stuck"), "{err}");
    assert!(
        common::left_running(mark).is_empty(),
        "left: {:?}",
        common::left_running(mark)
    );
}

#[test]
fn ctrl_c_in_a_shared_guest_tears_its_configuration_down_inside() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hooks.log");
    let mark = "interrupted-guest";
    let toml = shared_command_guest(mark, &log, "true", "spin:work=100000");
    let file = dir.path().join("long.toml");
    fs::write(&file, toml).unwrap();
    let mut child = common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args(["run", "--no-perf", "--experiment"])
        .arg(&file)
        // Requests short enough to end within the 5 s a stop waits for one,
        // even on a loaded machine.
        .args(["--rounds", "20", "--samples", "40", "--warmup", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until a guest configuration is set up, then interrupt its block.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !fs::read_to_string(&log).is_ok_and(|t| t.contains(" on")) {
        assert!(std::time::Instant::now() < deadline, "no set-up ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let text = fs::read_to_string(&log).unwrap();
    let blocks = text.lines().count().div_ceil(2);
    assert_paired(&log, blocks);
    assert!(
        common::left_running(mark).is_empty(),
        "left: {:?}",
        common::left_running(mark)
    );
}

#[test]
fn uml_init_takes_what_the_kernel_hands_it_and_unknown_words_are_named() {
    if !uml_or_skip("uml_init_takes_what_the_kernel_hands_it") {
        return;
    }
    let _serial = uml_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("init.json");
    let guest = "off=uml:nosysemu OSBENCH_MADE_UP=value";
    let out = common::osbench(common::tmp_store("guest-tests.sqlite"))
        .args([
            "run",
            "syscall:case=getpid",
            "--no-perf",
            "--config",
            "native=",
        ])
        .args(["--guest", guest, "--allow-unknown-boot-parameters"])
        .args(QUICK)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let err = stderr(&out);
    if !out.status.success() && host_limit("uml_init_takes_what_the_kernel_hands_it", &err) {
        return;
    }
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: configuration 'off'") && err.contains("'OSBENCH_MADE_UP=value'"),
        "{err}"
    );
    let doc = read_document(&json).unwrap();
    let guest = &doc.run.guests[0];
    let init = guest.init.as_ref().expect("the agent was the guest's init");
    assert!(init.args.iter().any(|a| a == "nosysemu"), "{init:?}");
    assert_eq!(
        init.env.get("OSBENCH_MADE_UP").map(String::as_str),
        Some("value")
    );
    let taken: Vec<(&str, &str, bool)> = guest
        .boot_parameters
        .iter()
        .map(|p| (p.word.as_str(), p.taken_by.as_str(), p.in_cmdline))
        .collect();
    assert_eq!(
        taken,
        [
            ("nosysemu", "uml", true),
            ("OSBENCH_MADE_UP=value", "nobody", true)
        ]
    );
    // nosysemu did what it says: UML's switch reads 0 (it boots at 2).
    assert_eq!(guest.env.uml_sysemu.as_deref(), Some("0"));
    assert!(
        doc.run
            .audit
            .iter()
            .any(|f| f.contains("'OSBENCH_MADE_UP=value'"))
    );
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());

    // A made-up word, without the flag: an error naming it, nothing measured.
    let out = run_guest(
        "syscall:case=getpid",
        "typo=uml:nosysemu frobnicate",
        &json,
        "60",
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("configuration 'typo'") && err.contains("'frobnicate'"),
        "{err}"
    );
    assert!(!err.contains("'nosysemu'"), "nosysemu is UML's own: {err}");
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());
}

/// Native, then UML's /proc/sysemu set to each of `values` by in-guest set-ups of one UML.
fn sysemu_experiment(values: &[&str]) -> String {
    let mut toml = String::from(
        "select = [\"syscall:case=getpid\"]\n[guests]\numl = \"uml\"\n[[config]]\nname = \"native\"\n",
    );
    for v in values {
        toml.push_str(&format!(
            "[[config]]\nname = \"sysemu-{v}\"\nin = \"uml\"\nsetup = \"echo {v} > /proc/sysemu\"\n\
             teardown = \"echo 2 > /proc/sysemu\"\n"
        ));
    }
    toml
}

#[test]
fn uml_sysemu_set_inside_one_guest_shows_in_each_configurations_environment() {
    if !uml_or_skip("uml_sysemu_set_inside_one_guest") {
        return;
    }
    let _serial = uml_lock();
    let dir = tempfile::tempdir().unwrap();
    let (out, json) = run_experiment(&sysemu_experiment(&["2", "1"]), dir.path(), &[]);
    let err = stderr(&out);
    if !out.status.success() && host_limit("uml_sysemu_set_inside_one_guest", &err) {
        return;
    }
    assert!(out.status.success(), "{err}");
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.run.guests.len(), 1, "one UML for both");
    let sysemu = doc
        .run
        .config_env_diff
        .iter()
        .find(|(k, _)| k == "uml_sysemu");
    let values = sysemu.map(|(_, v)| v.clone());
    assert_eq!(
        values,
        Some(vec!["absent".into(), "2".into(), "1".into()]),
        "{:?}",
        doc.run.config_env_diff
    );
    assert!(doc.series.iter().all(|s| s.rounds.len() == 2));
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());
}

#[test]
fn uml_sysemu_as_a_knob_is_set_inside_the_guest_and_restored() {
    if !uml_or_skip("uml_sysemu_as_a_knob") {
        return;
    }
    let _serial = uml_lock();
    let dir = tempfile::tempdir().unwrap();
    let toml = sysemu_experiment(&[])
        + "[[config]]\nname = \"one\"\nin = \"uml\"\nset = { \"/proc/sysemu\" = \"1\" }\n\
           [[config]]\nname = \"two\"\nin = \"uml\"\n";
    let (out, json) = run_experiment(&toml, dir.path(), &[]);
    let err = stderr(&out);
    if !out.status.success() && host_limit("uml_sysemu_as_a_knob", &err) {
        return;
    }
    assert!(out.status.success(), "{err}");
    let doc = read_document(&json).unwrap();
    let knob = &doc.run.knobs[0];
    assert_eq!(knob.place.as_deref(), Some("guest 'uml'"));
    assert_eq!((knob.found.as_str(), knob.set["one"].as_str()), ("2", "1"));
    assert!(knob.restored && !knob.set.contains_key("two"));
    // `two` sets nothing: it ran with the value found.
    let sysemu = doc
        .run
        .config_env_diff
        .iter()
        .find(|(k, _)| k == "uml_sysemu");
    assert_eq!(
        sysemu.map(|(_, v)| v.clone()),
        Some(vec!["absent".into(), "1".into(), "2".into()])
    );
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());
}

#[test]
fn uml_crashing_at_sysemu_0_stops_the_run_naming_it_and_keeps_what_was_measured() {
    if !uml_or_skip("uml_crashing_at_sysemu_0") {
        return;
    }
    let _serial = uml_lock();
    let dir = tempfile::tempdir().unwrap();
    // Seed 9 puts sysemu-0 last in the first round: native and sysemu-2 are measured first.
    let (out, json) = run_experiment(
        &sysemu_experiment(&["2", "0"]),
        dir.path(),
        &["--seed", "9"],
    );
    let err = stderr(&out);
    if !out.status.success() && host_limit("uml_crashing_at_sysemu_0", &err) {
        return;
    }
    assert!(uml_processes().is_empty(), "left: {:?}", uml_processes());
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.run.schedule[0], ["native", "sysemu-2", "sysemu-0"]);
    if out.status.success() {
        // A UML whose run-time switch works: 0 measured like the others.
        assert!(doc.series.iter().any(|s| s.key.config == "sysemu-0"));
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("configuration 'sysemu-0'"), "{err}");
    assert!(err.contains("echo 0 > /proc/sysemu"), "{err}");
    assert!(
        err.contains("last console lines"),
        "UML's last words are quoted: {err}"
    );
    let configs: Vec<&str> = doc.series.iter().map(|s| s.key.config.as_str()).collect();
    assert_eq!(
        configs,
        ["native", "sysemu-2"],
        "what was measured before is kept"
    );
    assert!(!doc.run.complete);
}

/// A Python program that runs its arguments with io_uring_setup failing
/// with EPERM (a seccomp filter, as a container's would), x86-64 only.
const WITHOUT_IO_URING: &str = r#"
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def op(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)
# Load the system call number; io_uring_setup (425) -> ERRNO | EPERM, else allow.
program = op(0x20, 0, 0, 0) + op(0x15, 0, 1, 425) + op(0x06, 0, 0, 0x00050001) + op(0x06, 0, 0, 0x7FFF0000)
buffer = ctypes.create_string_buffer(program)
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Fprog(4, ctypes.addressof(buffer))
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("seccomp: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
"#;

#[test]
#[cfg(target_arch = "x86_64")]
fn a_case_a_guests_kernel_cannot_run_is_skipped_in_every_configuration_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("without-io-uring.py");
    fs::write(&script, WITHOUT_IO_URING).unwrap();
    let mark = "uring-denied-guest";
    let toml = format!(
        r#"
        select = ["uring:case=nop,batch=1", "spin:work=100"]
        [[config]]
        name = "native"
        [[config]]
        name = "denied"
        guest = {{ kind = "command", command = "export OSBENCH_TEST_MARK={mark}; exec python3 {} {{osbench}} agent" }}
        "#,
        script.display()
    );
    let (out, json) = run_experiment(&toml, dir.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("osbench: skipped uring nop/1: io_uring_setup is denied"),
        "{}",
        stderr(&out)
    );
    let doc = read_document(&json).unwrap();
    // Compared on the same cases: the ring is measured in neither.
    let series: Vec<(&str, &str)> = (doc.series.iter())
        .map(|s| (s.key.config.as_str(), s.key.bench.as_str()))
        .collect();
    assert_eq!(series, [("native", "spin"), ("denied", "spin")]);
    assert_eq!(doc.run.skipped.len(), 1, "{:?}", doc.run.skipped);
    let skipped = &doc.run.skipped[0];
    assert!(
        skipped.starts_with("uring nop/1: io_uring_setup is denied (EPERM")
            && skipped.ends_with("(where configuration 'denied' runs)"),
        "{skipped}"
    );
    assert!(
        !doc.run.order.iter().any(|o| o.contains("uring")),
        "{:?}",
        doc.run.order
    );
    assert!(
        common::left_running(mark).is_empty(),
        "left running: {:?}",
        common::left_running(mark)
    );
}
