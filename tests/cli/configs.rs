//! Configurations: seeded interleaved rounds compared paired, set-ups and
//! teardowns (also when interrupted or hung), experiment files, stopping rules.

use super::kit::*;

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
    let configs: Vec<&str> = doc.series.iter().map(|s| s.key.config.as_str()).collect();
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

/// The `target ±…` line a `--target-mde` run printed on stderr.
fn target_line(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find(|l| l.starts_with("target ±"))
        .unwrap_or_else(|| panic!("no target line: {err}"))
        .to_string()
}

#[test]
fn rounds_are_added_until_a_change_is_detectable_or_the_budget_ends() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("t.json");
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
    // ±1000 % is detectable as soon as the rounds are looked at (3).
    let out = quick_run(&[&base[..], &["--target-mde", "1000"]].concat(), &json);
    let t = read_document(&json).unwrap().run.target_mde.unwrap();
    assert!(t.reached && t.unit == "rounds" && t.n >= 3, "{t:?}");
    let line = target_line(&out);
    assert!(
        line.starts_with(&format!("target ±1000%: detectable after {} rounds (", t.n)),
        "{line}"
    );
    // No change of 0 % is ever detectable: a 1 s budget ends the rounds.
    let out = quick_run(
        &[&base[..], &["--target-mde", "0", "--budget", "1s"]].concat(),
        &json,
    );
    let doc = read_document(&json).unwrap();
    let t = doc.run.target_mde.unwrap();
    assert!(
        !t.reached && t.budget_s == 1.0 && t.elapsed_s >= 1.0,
        "{t:?}"
    );
    assert_eq!(t.n, doc.run.schedule.len());
    assert!(t.n < osbench::stats::paired::MOST_ROUNDS, "{t:?}");
    assert!(target_line(&out).starts_with("target ±0% not reached in the 1 s budget: ±"));
    // One configuration has nothing to detect a change against.
    let out = osbench(shared_store())
        .args([
            "run",
            "spin:work=100",
            "--config",
            "a=",
            "--target-mde",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
