//! `osbench time` as a user meets it: exit statuses, timeouts, missing
//! programs, the document's per-run records and interleaved rounds. Checks
//! correctness only; no test asserts how fast anything ran.

use std::process::Command;

use crate::common;
use osbench::store::read_document;

/// `osbench time --warmup 0 ARGS`, with a private results store.
fn time(args: &[&str], store: &std::path::Path) -> std::process::Output {
    common::osbench(store.join("store.sqlite"))
        .args(["time", "--warmup", "0"])
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_failing_command_exits_2_naming_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let out = time(
        &["--runs", "3", "false", "--json", json.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("'false' exited with status 1"), "{err}");
    assert!(err.contains("--ignore-failure"), "{err}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("osbench: error"))
        .collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(!json.exists());

    let out = time(
        &[
            "--runs",
            "3",
            "--ignore-failure",
            "false",
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = read_document(&json).unwrap();
    assert!(doc.series[0].runs.iter().all(|r| r.exit_status == 1));
}

#[test]
fn a_missing_program_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = time(
        &["--runs", "2", "true", "osbench-no-such-program --x"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("'osbench-no-such-program' was not found in PATH"),
        "{err}"
    );
    let out = time(&["--runs", "2", "'unterminated"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unterminated single quote"));
}

#[test]
fn a_timeout_kills_the_command_and_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let out = time(
        &["--runs", "2", "--timeout", "0.3", "sleep 7.4321"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("'sleep 7.4321' was killed after reaching the timeout"),
        "{err}"
    );
    let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    assert!(!text(&ps.stdout).contains("sleep 7.4321"));
}

#[test]
fn every_run_is_recorded_with_its_own_rusage_in_interleaved_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    // dd reads into one buffer of bs bytes: its peak RSS is about that size.
    let big = "dd if=/dev/zero of=/dev/null bs=96M count=1";
    let small = "dd if=/dev/zero of=/dev/null bs=1M count=1";
    let out = time(
        &[
            "--runs",
            "4",
            "--seed",
            "3",
            big,
            small,
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for word in [
        "Command 1: dd",
        "Command 2: dd",
        "real",
        "user",
        "sys",
        "max RSS",
        "Floor:",
    ] {
        assert!(stdout.contains(word), "{word}: {stdout}");
    }
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.series.len(), 2);
    let (b, s) = (&doc.series[0], &doc.series[1]);
    assert_eq!(
        (b.key.bench.as_str(), b.key.case.as_str(), b.unit.as_str()),
        ("command", big, "s")
    );
    assert_eq!((b.runs.len(), b.samples.len()), (4, 4));
    assert!(b.runs.iter().all(|r| r.max_rss_kb > 90_000), "{:?}", b.runs);
    // The small command's peak is its own, not the big one's before it.
    assert!(s.runs.iter().all(|r| r.max_rss_kb < 60_000), "{:?}", s.runs);
    for (run, sample) in b.runs.iter().zip(&b.samples) {
        assert_eq!(run.wall_s, *sample);
        assert_eq!(run.exit_status, 0);
    }
    // Every round ran both commands and the empty one, in a recorded order.
    assert_eq!(doc.run.schedule.len(), 4);
    assert!(doc.run.schedule.iter().all(|r| r.len() == 3));
    assert_eq!(doc.comparisons.len(), 1);
    let json_text = std::fs::read_to_string(&json).unwrap();
    for field in [
        "wall_s",
        "user_s",
        "sys_s",
        "max_rss_kb",
        "voluntary_switches",
        "involuntary_switches",
        "minor_faults",
        "major_faults",
        "exit_status",
    ] {
        assert!(json_text.contains(&format!("\"{field}\"")), "{field}");
    }
    // Saved command documents compare like any others.
    let out = common::osbench(dir.path().join("store.sqlite"))
        .args(["compare", json.to_str().unwrap(), json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("command dd"));
}

#[test]
fn shell_mode_and_quoted_words_reach_the_program() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("flag");
    let line = format!(
        "sh -c 'test \"$1\" = \"a b\" && touch {}' x 'a b'",
        flag.display()
    );
    let out = time(&["--runs", "2", &line], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(flag.exists());
    let out = time(&["--runs", "2", "--shell", "exit 0 | cat"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn an_interrupt_kills_the_command_runs_the_cleanup_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let cleaned = dir.path().join("cleaned");
    let mut child = common::osbench(dir.path().join("store.sqlite"))
        .args(["time", "--warmup", "0", "--runs", "3", "--cleanup"])
        .arg(format!("touch {}", cleaned.display()))
        .arg("sleep 6.54321")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(cleaned.exists());
    let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    assert!(!text(&ps.stdout).contains("sleep 6.54321"));
}

#[test]
fn parameter_scans_expand_and_export_in_hyperfines_layout() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let hyperfine = dir.path().join("hyperfine.json");
    let out = time(
        &[
            "--runs",
            "2",
            "-L",
            "word",
            "a,b",
            "-P",
            "n",
            "1",
            "2",
            "echo {word}{n}",
            "--json",
            json.to_str().unwrap(),
            "--export-hyperfine",
            hyperfine.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = read_document(&json).unwrap();

    // hyperfine's layout, for scripts written against `hyperfine --export-json`.
    let exported: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&hyperfine).unwrap()).unwrap();
    let results = exported["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let last = &results[3];
    assert_eq!(last["command"], "echo b2");
    assert_eq!(last["parameters"]["n"], "2");
    assert_eq!(last["exit_codes"], serde_json::json!([0, 0]));
    let times: Vec<f64> = serde_json::from_value(last["times"].clone()).unwrap();
    assert_eq!(times, doc.series[3].samples);
    for key in ["mean", "stddev", "median", "user", "system", "min", "max"] {
        assert!(last[key].is_number(), "{key}: {last}");
    }
    assert_eq!(last["mean"], doc.series[3].summary.mean);
    let cases: Vec<&str> = doc.series.iter().map(|s| s.key.case.as_str()).collect();
    assert_eq!(cases, ["echo a1", "echo b1", "echo a2", "echo b2"]);
    let params = &doc.series[3].params["parameters"];
    assert_eq!(params["n"], "2");
    assert_eq!(params["word"], "b");

    // hyperfine times a command that does not use the parameter once per
    // value; osbench times it once and says so (docs/design-notes.md).
    let out = time(
        &[
            "--runs",
            "2",
            "-L",
            "n",
            "1,2",
            "sleep 0",
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("no command uses {n}: each is timed once"),
        "{}",
        text(&out.stderr)
    );
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.series.len(), 1);
    assert!(doc.series[0].params.get("parameters").is_none());
}

#[test]
fn command_names_label_the_series_and_keep_the_lines() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let out = time(
        &[
            "--runs",
            "2",
            "-n",
            "old",
            "--command-name",
            "new{n}",
            "-L",
            "n",
            "0",
            "true",
            "sleep {n}",
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Command 2: new0 = sleep 0"),
        "{}",
        text(&out.stdout)
    );
    let doc = read_document(&json).unwrap();
    let cases: Vec<&str> = doc.series.iter().map(|s| s.key.case.as_str()).collect();
    assert_eq!(cases, ["old", "new0"]);
    assert_eq!(doc.series[1].params["command"], "sleep 0");

    let out = time(&["-n", "a", "-n", "b", "true"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("at most one name per command"),
        "{}",
        text(&out.stderr)
    );
}

/// `osbench time --warmup 0 ARGS` started in the background, in a process
/// group of its own, with a private results store and TMPDIR (`tmp`) in `dir`, and SIGINT,
/// SIGTERM and SIGHUP as given (`ignore_hup`: as under `nohup`).
fn spawn_time(args: &[&str], dir: &std::path::Path, ignore_hup: bool) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = common::osbench(dir.join("store.sqlite"));
    cmd.env("TMPDIR", &tmp)
        .args(["time", "--warmup", "0"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    // SAFETY: signal(2) is async-signal-safe; it only sets this child's dispositions.
    unsafe {
        cmd.pre_exec(move || {
            for sig in [libc::SIGINT, libc::SIGTERM] {
                libc::signal(sig, libc::SIG_DFL);
            }
            let hup = if ignore_hup {
                libc::SIG_IGN
            } else {
                libc::SIG_DFL
            };
            libc::signal(libc::SIGHUP, hup);
            Ok(())
        });
    }
    cmd.spawn().unwrap()
}

/// Waits up to 10 s for `path` to exist.
fn wait_for_file(path: &std::path::Path) {
    for _ in 0..200 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("{} never appeared", path.display());
}

/// Sends `sig` to process `pid` (negative: a process group).
fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill(2) on a child (or its group) this test started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// The output of a child whose stderr is piped, after it ended; a child
/// still running after 15 s is killed and the test fails.
fn finish(mut child: std::process::Child) -> (Option<i32>, String) {
    for _ in 0..300 {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return (out.status.code(), text(&out.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("osbench did not end within 15 s");
}

/// Live processes (not zombies) other than osbench itself whose command
/// line contains `needle` (pid and line), after up to a second for killed
/// ones to be reaped.
fn running(needle: &str) -> Vec<(i32, String)> {
    let mut found = Vec::new();
    for _ in 0..20 {
        found = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let pid = e.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                let osbench = stat.contains("(osbench)");
                (line.contains(needle) && !osbench && !stat.contains(") Z ")).then_some((pid, line))
            })
            .collect();
        if found.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    found
}

/// Kills, by pid, what a failing test left running (found by [`running`]).
fn kill_leftovers(left: &[(i32, String)]) {
    for (pid, _) in left {
        // SAFETY: kill(2) of a process this test's osbench started.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
}

#[test]
fn a_hangup_ignored_at_start_stays_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let json = dir.path().join("t.json");
    let prepare = format!("touch {}", started.display());
    let child = spawn_time(
        &[
            "--runs",
            "2",
            "--prepare",
            &prepare,
            "sleep 0.6",
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
        true,
    );
    wait_for_file(&started);
    signal(child.id() as i32, libc::SIGHUP);
    let (code, err) = finish(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(read_document(&json).unwrap().run.complete);
}

/// `osbench time` with a hung hook (`flags` given a command that sleeps
/// forever after touching `started`), interrupted once by `sig` sent to
/// `target` (its pid, or minus its group: the terminal's Ctrl-C): the hook's
/// group is stopped, `--cleanup` runs and osbench exits 130.
fn interrupt_a_hung_hook(flag: &str, sleeper: &str, to_group: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (started, cleaned) = (dir.path().join("started"), dir.path().join("cleaned"));
    let hook = format!("touch {}; {sleeper}", started.display());
    let cleanup = format!("touch {}", cleaned.display());
    let args = [flag, &hook, "--cleanup", &cleanup, "--runs", "2", "true"];
    let child = spawn_time(&args, dir.path(), false);
    wait_for_file(&started);
    let pid = child.id() as i32;
    signal(if to_group { -pid } else { pid }, libc::SIGINT);
    let (code, err) = finish(child);
    let left = running(sleeper);
    kill_leftovers(&left);
    assert_eq!(code, Some(130), "{flag}: {err}");
    assert!(cleaned.exists(), "{flag}: the clean-up did not run");
    assert!(left.is_empty(), "{flag}: left running: {left:?}");
}

#[test]
fn an_interrupt_stops_a_hung_setup_or_prepare_and_runs_the_cleanup() {
    interrupt_a_hung_hook("--setup", "sleep 1000.311", false);
    interrupt_a_hung_hook("--prepare", "sleep 1000.312", false);
}

#[test]
fn ctrl_c_during_a_setup_is_an_interrupt_not_a_failed_setup() {
    // The whole foreground group gets SIGINT, as from a terminal.
    interrupt_a_hung_hook("--setup", "sleep 1000.321", true);
}

#[test]
fn the_timeout_bounds_prepare() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--timeout", "0.3", "--prepare", "sleep 1000.331"];
    let child = spawn_time(
        &[&args[..], &["--runs", "2", "true"]].concat(),
        dir.path(),
        false,
    );
    let (code, err) = finish(child);
    let left = running("sleep 1000.331");
    kill_leftovers(&left);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--prepare (sleep 1000.331) was killed after reaching the timeout"),
        "{err}"
    );
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_killed_osbench_leaves_no_process_and_no_file_behind() {
    // The set-up's sleep is a child of its shell (dash forks it).
    let cases: [(&[&str], &str); 2] = [
        (&["sleep 100.511"], "sleep 100.511"),
        (&["--setup", "sleep 100.512", "true"], "sleep 100.512"),
    ];
    for (args, sleeper) in cases {
        let dir = tempfile::tempdir().unwrap();
        let child = spawn_time(&[args, &["--runs", "2"]].concat(), dir.path(), false);
        for _ in 0..200 {
            if running(sleeper)
                .iter()
                .any(|(_, line)| line.starts_with(sleeper))
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        signal(child.id() as i32, libc::SIGKILL);
        let (code, _) = finish(child);
        assert_eq!(code, None, "killed by a signal");
        let left = running(sleeper);
        kill_leftovers(&left);
        assert!(left.is_empty(), "left running: {left:?}");
        // Nothing but the one per-user copy of the tiny program, kept by design.
        // SAFETY: getuid has no preconditions.
        let kept = format!("osbench-hello-{}", unsafe { libc::getuid() });
        let files: Vec<_> = std::fs::read_dir(dir.path().join("tmp"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .filter(|name| name.to_string_lossy() != kept)
            .collect();
        assert!(files.is_empty(), "left in TMPDIR: {files:?}");
    }
}

/// hyperfine's own run of `args` with `--export-json FILE`, or `None` (said
/// on stderr) where hyperfine is not installed (`apt-get install hyperfine`).
fn hyperfine_export(args: &[&str], dir: &std::path::Path) -> Option<serde_json::Value> {
    let file = dir.join("by-hyperfine.json");
    let ran = Command::new("hyperfine")
        .args(["-N", "--runs", "2", "--style", "none", "--export-json"])
        .arg(&file)
        .args(args)
        .output();
    match ran {
        Ok(out) if out.status.success() => {
            Some(serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap())
        }
        _ => {
            eprintln!("skipped the comparison with hyperfine itself: it is not installed here");
            None
        }
    }
}

/// osbench's `--export-json` (hyperfine's layout) of `time --runs 2 ARGS`.
fn osbench_export(args: &[&str], dir: &std::path::Path) -> serde_json::Value {
    let file = dir.join("by-osbench.json");
    let mut all = vec!["--runs", "2", "--export-json", file.to_str().unwrap()];
    all.extend(args);
    let out = time(&all, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "osbench: wrote {} (hyperfine's JSON layout)",
            file.display()
        )),
        "{stderr}"
    );
    serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
}

fn commands_and_parameters(export: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let results = export["results"].as_array().unwrap();
    results
        .iter()
        .map(|r| {
            (
                r["command"].as_str().unwrap().to_string(),
                r["parameters"].clone(),
            )
        })
        .collect()
}

#[test]
fn several_parameter_lists_run_in_hyperfines_order() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["-L", "a", "1,2", "-L", "b", "x,y", "echo {a} {b}"];
    let ours = commands_and_parameters(&osbench_export(&args, dir.path()));
    let lines: Vec<&str> = ours.iter().map(|(c, _)| c.as_str()).collect();
    // hyperfine 1.15: the first parameter varies fastest.
    assert_eq!(lines, ["echo 1 x", "echo 2 x", "echo 1 y", "echo 2 y"]);
    assert_eq!(ours[1].1, serde_json::json!({"a": "2", "b": "x"}));
    if let Some(theirs) = hyperfine_export(&args, dir.path()) {
        assert_eq!(ours, commands_and_parameters(&theirs));
    }
}

#[test]
fn a_command_without_the_parameter_is_timed_once_without_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let ours = commands_and_parameters(&osbench_export(
        &["-L", "x", "1,2", "echo {x}", "true"],
        dir.path(),
    ));
    // hyperfine times `true` once per value (x=1, x=2); osbench once, unlabelled.
    let null = serde_json::Value::Null;
    assert_eq!(
        ours,
        [
            ("echo 1".to_string(), serde_json::json!({"x": "1"})),
            ("true".to_string(), null),
            ("echo 2".to_string(), serde_json::json!({"x": "2"})),
        ]
    );
}

#[test]
fn one_run_is_allowed_as_in_hyperfine() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
    let out = time(
        &["--runs", "1", "true", "--json", json.to_str().unwrap()],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("(no shell, 1 run)"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stdout).contains("one run: no spread and no interval"));
    assert_eq!(read_document(&json).unwrap().series[0].samples.len(), 1);
}

/// What hyperfine's scripts (scripts/ in its repository: advanced_statistics,
/// plot_whisker, plot_histogram, plot_progression, welch_ttest,
/// plot_parametrized, plot_benchmark_comparison) read from `--export-json`:
/// `results[]` with `command`, `times`, `mean`, `stddev`, `median`, and
/// `parameters` of string values that `float()` reads.
#[test]
fn the_hyperfine_export_has_what_hyperfines_scripts_read() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["-P", "n", "1", "2", "echo {n}"];
    let ours = osbench_export(&args, dir.path());
    let results = ours["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert!(r["command"].is_string(), "{r}");
        let times = r["times"].as_array().unwrap();
        assert_eq!(times.len(), 2);
        assert!(
            times.iter().all(|t| t.as_f64().is_some_and(|t| t > 0.0)),
            "{r}"
        );
        for key in ["mean", "stddev", "median", "user", "system", "min", "max"] {
            assert!(r[key].is_number(), "{key}: {r}");
        }
        let exit_codes = r["exit_codes"].as_array().unwrap();
        assert!(exit_codes.iter().all(|c| c == 0), "{r}");
        let parameters = r["parameters"].as_object().unwrap();
        assert_eq!(parameters.len(), 1);
        assert!(
            parameters["n"].as_str().unwrap().parse::<f64>().is_ok(),
            "{r}"
        );
    }
    // Every key hyperfine itself writes, of the same JSON type.
    if let Some(theirs) = hyperfine_export(&args, dir.path()) {
        for (theirs, ours) in theirs["results"].as_array().unwrap().iter().zip(results) {
            for (key, value) in theirs.as_object().unwrap() {
                let kind = |v: &serde_json::Value| std::mem::discriminant(v);
                assert_eq!(kind(value), kind(&ours[key]), "{key}: {ours}");
            }
        }
    }
}

#[test]
fn hyperfines_short_and_long_option_names_mean_what_they_mean_there() {
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks");
    let mark = |what: &str| format!("echo {what} >> {}", marks.display());
    let json = dir.path().join("t.json");
    let (setup, prepare, cleanup) = (mark("setup"), mark("prepare"), mark("cleanup"));
    let out = time(
        &[
            "-s",
            &setup,
            "-p",
            &prepare,
            "-c",
            &cleanup,
            "-m",
            "2",
            "-M",
            "2",
            "-S",
            "sh",
            "--style",
            "nocolor",
            "--output",
            "null",
            "--input",
            "null",
            "--reference",
            "true",
            "exit 0",
            "--json",
            json.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let marks = std::fs::read_to_string(&marks).unwrap();
    assert_eq!(
        marks.lines().filter(|l| *l == "setup").count(),
        1,
        "{marks}"
    );
    assert_eq!(
        marks.lines().filter(|l| *l == "cleanup").count(),
        1,
        "{marks}"
    );
    // Two runs of each of the two commands (the reference first), each prepared.
    assert_eq!(
        marks.lines().filter(|l| *l == "prepare").count(),
        4,
        "{marks}"
    );
    let doc = read_document(&json).unwrap();
    let cases: Vec<&str> = doc.series.iter().map(|s| s.key.case.as_str()).collect();
    assert_eq!(cases, ["true", "exit 0"], "the reference is the baseline");
    assert!(doc.series.iter().all(|s| s.runs.len() == 2));
    // -S sh is --shell: `exit 0` is a shell built-in, timed without error.
}

#[test]
fn hyperfine_options_osbench_lacks_are_refused_with_what_it_offers() {
    let dir = tempfile::tempdir().unwrap();
    for (args, named, offered) in [
        (&["-S", "bash"][..], "-S bash", "sh -c"),
        (&["--output", "pipe"], "--output pipe", "--show-output"),
        (&["--input", "in.txt"], "--input in.txt", "--shell"),
        (
            &["--export-asciidoc", "x"],
            "--export-asciidoc",
            "--export-markdown",
        ),
        (
            &["--export-orgmode", "x"],
            "--export-orgmode",
            "--export-csv",
        ),
        (&["-u", "ms"], "--time-unit", "one readable unit per table"),
        (&["--sort", "command"], "--sort", "the first the baseline"),
        (&["--conclude", "true"], "--conclude", "--cleanup"),
        (
            &["--min-benchmarking-time", "1"],
            "--min-benchmarking-time",
            "--max-time",
        ),
    ] {
        let out = time(&[args, &["--no-store", "true"]].concat(), dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("hyperfine's {named}")),
            "{args:?}: {err}"
        );
        assert!(err.contains(offered), "{args:?}: {err}");
        assert!(!err.contains("-- -"), "clap's wrong tip: {err}");
    }
}

#[test]
fn a_placeholder_without_its_parameter_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("setup-ran");
    let setup = format!("touch {}", marks.display());
    let out = time(&["--setup", &setup, "--no-store", "sleep {n}"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("{n}") && err.contains("-P/--parameter-scan n"),
        "{err}"
    );
    assert!(!marks.exists(), "refused before the set-up ran");
    // A brace that is no placeholder (awk's, find's) is left alone.
    let out = time(
        &[
            "--runs",
            "1",
            "--no-store",
            "--shell",
            "echo {} | awk '{ print }'",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Two runs of an A/B are too few for the paired test: `--gate` cannot
/// judge, says so, and exits 3; `--allow-undecided` passes; `--bisect-exit`
/// keeps 125 (skip) for the same.
#[test]
fn a_gate_on_too_few_runs_exits_3_and_bisect_exit_skips() {
    let dir = tempfile::tempdir().unwrap();
    // No equivalence margin: two close runs could otherwise be "equivalent".
    let ab = [
        "--runs",
        "2",
        "--equivalence",
        "0",
        "--no-store",
        "true",
        "true",
    ];
    let out = time(&[&ab[..], &["--gate", "5"]].concat(), dir.path());
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("osbench: regression gate: 1 case could not be judged")
            && stderr.contains("too few runs for the test")
            && stderr.contains("run again with --runs 6 or more"),
        "{stderr}"
    );
    let allowed = ["--gate", "5", "--allow-undecided"];
    let out = time(&[&ab[..], &allowed].concat(), dir.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = time(
        &[&ab[..], &["--bisect-exit", "--gate", "5"]].concat(),
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    // --allow-undecided has no place beside --bisect-exit (undecided is its skip).
    let both = ["--bisect-exit", "--gate", "5", "--allow-undecided"];
    let out = time(&[&ab[..], &both].concat(), dir.path());
    assert_eq!(
        out.status.code(),
        Some(125),
        "a usage error under --bisect-exit"
    );
}

/// `time --target-mde` with `args`, its document in `dir`: the line it
/// printed on stderr and the target recorded in the document.
fn target_mde_run(args: &[&str], dir: &std::path::Path) -> (String, osbench::document::TargetMde) {
    let json = dir.join("t.json");
    let mut all = args.to_vec();
    all.extend(["--json", json.to_str().unwrap(), "true", "sh -c true"]);
    let out = time(&all, dir);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("target ±"))
        .unwrap_or_else(|| panic!("no target line: {err}"))
        .to_string();
    let doc = read_document(&json).unwrap();
    (line, doc.run.target_mde.expect("run.target_mde recorded"))
}

#[test]
fn a_change_to_detect_is_reported_and_recorded_when_reached() {
    // ±1000 % is detectable after the 8 runs asked for, however noisy the machine.
    let dir = tempfile::tempdir().unwrap();
    let (line, t) = target_mde_run(&["--runs", "8", "--target-mde", "1000"], dir.path());
    assert!(
        line.starts_with("target ±1000%: detectable after 8 rounds ("),
        "{line}"
    );
    assert!(t.reached && t.n == 8 && t.unit == "rounds", "{t:?}");
    assert!(t.detectable.unwrap() <= 10.0 && t.target == 10.0, "{t:?}");
    // One comparison: the level is the verdicts' own; the default budget ten minutes.
    assert_eq!((t.alpha, t.budget_s), (0.05, 600.0));
}

#[test]
fn a_change_to_detect_stops_at_the_budget_when_not_reached() {
    // No change of 0 % is ever detectable: the 1 s budget ends the rounds.
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--min-runs",
        "2",
        "--max-runs",
        "1000000",
        "--target-mde",
        "0",
        "--budget",
        "1s",
    ];
    let (line, t) = target_mde_run(&args, dir.path());
    assert!(
        line.starts_with("target ±0% not reached in the 1 s budget: ±"),
        "{line}"
    );
    assert!(
        line.ends_with(&format!("% detectable with {} rounds", t.n)),
        "{line}"
    );
    assert!(
        !t.reached && t.budget_s == 1.0 && t.elapsed_s >= 1.0,
        "{t:?}"
    );
    assert!(
        t.n >= 2 && t.n < 1_000_000 && t.detectable.unwrap() > 0.0,
        "{t:?}"
    );
}

#[test]
fn a_change_to_detect_needs_two_commands_and_a_budget_needs_a_target() {
    let dir = tempfile::tempdir().unwrap();
    let out = time(&["--target-mde", "2", "true"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("give two or more commands"));
    let out = time(&["--budget", "1min", "true", "true"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--target-mde"),
        "{}",
        text(&out.stderr)
    );
    let out = time(
        &["--target-mde", "2", "--budget", "soon", "true", "true"],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is not a duration"));
}
