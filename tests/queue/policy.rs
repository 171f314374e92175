//! The worker's trust boundary (issue 44, S1 and S2), as an attacker with
//! INSERT on `jobs` meets it: a plan's shell set-up, a `--prepare` of a
//! `time` plan and a row inserted past `submit` with `--store` and `--json`
//! are refused by a worker under the default policy, the job failed with a
//! message naming the policy, and nothing of theirs runs or is written; a
//! policy that names a script runs that script for a plan that names it,
//! and the worker says what it runs before it runs it; `jobs` shows it. And
//! contrib/osbench-roles.sql's roles: a submitter queues jobs but cannot
//! cancel one or remove a run; a worker runs jobs but cannot remove runs.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, pg};
use crate::workers::{QUICK, Queue};
use osbench::store::{JobState, Location, NewJob, Store};

/// A file in the queue's directory.
fn path(q: &Queue, name: &str) -> PathBuf {
    q.dir.path().join(name)
}

/// A policy file with `text`, as its admin writes it (mode 0644).
fn policy_file(q: &Queue, text: &str) -> PathBuf {
    let path = path(q, "policy.toml");
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// `worker --once` under `policy`; its stderr.
fn work(q: &Queue, policy: &Path) -> String {
    let out = q
        .cmd()
        .args(["worker", "--name", "w1", "--once", "--policy"])
        .arg(policy)
        .arg("--spool")
        .arg(path(q, "spool"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

#[test]
fn plans_asking_for_more_than_the_policy_allows_fail_and_run_nothing() {
    if !pg::have_postgres("plans_asking_for_more") {
        return;
    }
    let q = Queue::start();
    let default = policy_file(&q, "# nothing allowed\n");
    let pwned = path(&q, "pwned");
    let plan = path(&q, "plan.toml");
    fs::write(
        &plan,
        format!(
            "select = [\"syscall:null\"]\nsamples = 3\n[[config]]\nname = \"a\"\n\
             [[config]]\nname = \"b\"\nsetup = \"id > {}\"\n",
            pwned.display()
        ),
    )
    .unwrap();
    let mut submit = q.cmd();
    submit.arg("submit").arg(&plan).args(["--hosts", "w1"]);
    let (out, noted) = common::ok(submit.output().unwrap());
    assert!(
        noted.contains("osbench: note: configuration 'b' has the setup")
            && noted.contains("runs only on workers whose policy allows it"),
        "{noted}"
    );
    let id: i64 = out.split_whitespace().nth(2).unwrap().parse().unwrap();
    let said = work(&q, &default);
    let job = q.job(id);
    assert_eq!(job.state, JobState::Failed);
    let error = job.error.unwrap();
    assert!(
        error.contains(&format!(
            "the worker policy {} does not allow",
            default.display()
        )) && error.contains("is not a script of the policy"),
        "{error}"
    );
    assert!(said.contains("knobs none; scripts none"), "{said}");
    // A `time` plan's --prepare, past a policy that allows its command.
    let time = policy_file(&q, "time_commands = [\"true\"]\n");
    let touch = format!("touch {}", pwned.display());
    let id = q.submit(&[
        "--time", "true", "--hosts", "w1", "--", "-p", &touch, "--runs", "2",
    ])[0];
    work(&q, &time);
    let error = q.job(id).error.unwrap();
    assert!(error.contains("--prepare `touch"), "{error}");
    assert!(!pwned.exists(), "a refused plan ran");
}

#[test]
fn a_row_written_past_submit_is_checked_again_by_the_worker() {
    if !pg::have_postgres("a_row_written_past_submit") {
        return;
    }
    let q = Queue::start();
    let redirect = path(&q, "redirect.sqlite");
    let overwritten = path(&q, "overwritten.json");
    let mut store = Store::open(Location::new(Path::new(&q.url))).unwrap();
    let row = |args: Vec<String>| NewJob {
        host: "w1".into(),
        label: None,
        meta: Default::default(),
        plan: serde_json::json!({"command": "run", "args": args}).to_string(),
        kernel: None,
        osbench_version: env!("CARGO_PKG_VERSION").into(),
        not_before: None,
        max_attempts: 1,
    };
    let mut args: Vec<String> = ["syscall:null"]
        .iter()
        .chain(&QUICK[1..])
        .chain(&["-q"])
        .map(|s| s.to_string())
        .collect();
    args.extend(["--store".into(), redirect.display().to_string()]);
    let mut json = args[..args.len() - 2].to_vec();
    json.push(format!("--json={}", overwritten.display()));
    let ids = store.submit(&[row(args), row(json)]).unwrap();
    let trusting = common::fixture("trusting-worker-policy.toml");
    for (id, option) in ids.iter().zip(["--store", "--json"]) {
        work(&q, &trusting);
        let job = q.job(*id);
        assert_eq!(job.state, JobState::Failed, "{:?}", job.error);
        let error = job.error.unwrap();
        assert!(error.contains(&format!("cannot give {option}")), "{error}");
    }
    assert!(!redirect.exists() && !overwritten.exists());
}

#[test]
fn a_script_the_policy_names_runs_and_the_worker_says_what_it_runs() {
    if !pg::have_postgres("a_script_the_policy_names") {
        return;
    }
    let q = Queue::start();
    let mark = path(&q, "marked");
    let script = path(&q, "mark it.sh");
    fs::write(
        &script,
        format!("#!/bin/sh\necho set >> '{}'\n", mark.display()),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let policy = policy_file(
        &q,
        &format!(
            "knobs = [\"sysctl.kernel.osbench_test_*\"]\n[scripts]\nmark = \"{}\"\n",
            script.display()
        ),
    );
    let plan = path(&q, "plan.toml");
    let text = "select = [\"syscall:null\"]\nsamples = 3\nsample_time = 1\nwarmup = 0\n\
                [[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\nsetup = \"mark\"\n";
    fs::write(&plan, text).unwrap();
    let id = q.submit(&[
        plan.to_str().unwrap(),
        "--hosts",
        "w1",
        "--",
        "--rounds",
        "2",
    ])[0];
    let said = work(&q, &policy);
    let job = q.job(id);
    assert_eq!(job.state, JobState::Done, "{:?}\n{said}", job.error);
    let marked = fs::read_to_string(&mark).unwrap();
    assert!(
        marked.starts_with("set\n") && marked.lines().all(|l| l == "set"),
        "{marked}"
    );
    let runs = said
        .find(&format!("job {id}: runs `osbench run syscall:null"))
        .expect(&said);
    let setup = said.find("mark it.sh").expect(&said);
    assert!(runs < setup, "{said}");
    let (listed, _) = common::ok(q.cmd().args(["jobs", "--wide"]).output().unwrap());
    assert!(
        listed.contains(&format!("job {id}: osbench run syscall:null")),
        "{listed}"
    );
    assert!(listed.contains(r#""setup" = "mark""#), "{listed}");
}

#[test]
fn the_documented_roles_separate_submitting_from_administering() {
    if !pg::have_postgres("the_documented_roles") {
        return;
    }
    let q = Queue::start();
    // The owner makes the schema, then grants as contrib/osbench-roles.sql says.
    common::ok(q.cmd().arg("jobs").output().unwrap());
    let roles = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/osbench-roles.sql");
    q.pg.sql(&fs::read_to_string(roles).unwrap());
    q.pg.sql("ALTER ROLE osbench_submit PASSWORD 'sub'; ALTER ROLE osbench_worker PASSWORD 'wk'");
    let as_role = |user: &str, pw: &str| {
        let url = format!("postgresql://{user}:{pw}@127.0.0.1:{}/postgres", q.pg.port);
        let mut cmd = common::osbench(url);
        cmd.current_dir(q.dir.path());
        cmd
    };
    let submitter = || as_role("osbench_submit", "sub");
    let (out, _) = common::ok(
        submitter()
            .args(["submit", "syscall:null", "--hosts", "w1"])
            .args(QUICK)
            .arg("-q")
            .output()
            .unwrap(),
    );
    let id: i64 = out.split_whitespace().nth(2).unwrap().parse().unwrap();
    let refused = |mut cmd: Command| {
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("permission denied"), "{stderr}");
    };
    let mut cancel = submitter();
    cancel.args(["jobs", "--cancel", &id.to_string()]);
    refused(cancel);
    let trusting = common::fixture("trusting-worker-policy.toml");
    let out = as_role("osbench_worker", "wk")
        .args(["worker", "--name", "w1", "--once", "--policy"])
        .arg(&trusting)
        .arg("--spool")
        .arg(path(&q, "spool"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = q.job(id);
    assert_eq!(job.state, JobState::Done, "{:?}", job.error);
    let run = job.run_id.unwrap().to_string();
    for mut rm in [submitter(), as_role("osbench_worker", "wk")] {
        rm.args(["rm", &run, "--yes"]);
        refused(rm);
    }
}
