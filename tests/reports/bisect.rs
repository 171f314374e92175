//! Bisecting a planted slowdown in a small git repository the test makes:
//! its "build" writes `prog`, a shell script that sleeps for the time in the
//! file `delay` (0.02 s, then 0.1 s from the planted commit on). Both `git
//! bisect run osbench time --bisect-exit …` and `osbench bisect` must name
//! the planted commit. The 5× slowdown is far beyond timing noise, and the
//! margin (50 %) wide enough that equal builds are judged equivalent on a loaded
//! machine; no
//! test asserts how fast anything ran.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::osbench;

/// The subject of the planted commit (the 5th of 8).
const PLANTED: &str = "planted slowdown";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Eight commits: the first adds the build script, the fifth makes `prog`
/// slower; returns (first commit, planted commit, last commit).
fn repository(dir: &Path) -> (String, String, String) {
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(
        dir.join("build.sh"),
        "printf '#!/bin/sh\\nsleep %s\\n' \"$(cat delay)\" > prog && chmod +x prog\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), "prog\n").unwrap();
    let mut commits = Vec::new();
    for i in 1..=8 {
        let (delay, subject) = match i {
            5 => ("0.1", PLANTED.to_string()),
            _ if i > 5 => ("0.1", format!("change {i}")),
            _ => ("0.02", format!("change {i}")),
        };
        std::fs::write(dir.join("delay"), delay).unwrap();
        std::fs::write(dir.join("notes"), format!("{i}\n")).unwrap();
        git(dir, &["add", "."]);
        git(dir, &["commit", "-q", "-m", &subject]);
        commits.push(git(dir, &["rev-parse", "HEAD"]));
    }
    (commits[0].clone(), commits[4].clone(), commits[7].clone())
}

fn osbench_path() -> String {
    let cmd = osbench(common::tmp_store("bisect.sqlite"));
    cmd.get_program().to_string_lossy().into_owned()
}

#[test]
fn git_bisect_run_with_bisect_exit_finds_the_planted_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let (good, planted, bad) = repository(&repo);
    let good_tree = dir.path().join("good");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            good_tree.to_str().unwrap(),
            &good,
        ],
    );
    let built = Command::new("sh")
        .args(["build.sh"])
        .current_dir(&good_tree)
        .status()
        .unwrap();
    assert!(built.success());
    git(&repo, &["bisect", "start", &bad, &good]);
    let step = format!(
        "sh build.sh && exec '{}' time --bisect-exit --no-store -q --warmup 0 --runs 10 \
         --equivalence 50 --shell '{}/prog' ./prog",
        osbench_path(),
        good_tree.display()
    );
    let out = git(&repo, &["bisect", "run", "sh", "-c", &step]);
    assert!(
        out.contains(&format!("{planted} is the first bad commit")),
        "{out}"
    );
    git(&repo, &["bisect", "reset"]);
}

#[test]
fn osbench_bisect_names_the_planted_commit_with_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let (good, planted, bad) = repository(dir.path());
    let head_before = git(dir.path(), &["rev-parse", "HEAD"]);
    let out = osbench(common::tmp_store("bisect.sqlite"))
        .args(["bisect", "--repo", dir.path().to_str().unwrap()])
        .args(["--good", &good, "--bad", &bad, "--build", "sh build.sh"])
        .args(["--command", "./prog", "--runs", "10", "--equivalence", "50"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("first bad commit: {planted} {PLANTED}")),
        "{stdout}"
    );
    assert!(stdout.contains("(--bad confirmed)"), "{stdout}");
    // Each step's verdict: the planted commit's A/B was slower.
    let planted_step = stdout
        .lines()
        .find(|l| l.contains(&planted[..12]) && l.contains("bad"));
    assert!(
        planted_step.is_some_and(|l| l.contains("slower")),
        "{stdout}"
    );
    // The repository's own checkout and work trees are as they were.
    assert_eq!(git(dir.path(), &["rev-parse", "HEAD"]), head_before);
    let trees = git(dir.path(), &["worktree", "list"]);
    assert_eq!(trees.lines().count(), 1, "{trees}");
}

#[test]
fn bisect_refuses_revisions_it_cannot_bisect() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _, bad) = repository(dir.path());
    let third = git(dir.path(), &["rev-parse", "HEAD~5"]);
    let run = |good: &str, bad: &str| {
        let out = osbench(common::tmp_store("bisect.sqlite"))
            .args(["bisect", "--repo", dir.path().to_str().unwrap()])
            .args(["--good", good, "--bad", bad, "--build", "sh build.sh"])
            .args(["--command", "./prog", "--runs", "10", "--equivalence", "50"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run("nosuchrev", &bad).contains("'nosuchrev' is not a commit"));
    assert!(run(&bad, &good).contains("is not an ancestor"));
    // Both sides sleep 0.02 s: BAD is not slower, and nothing is bisected.
    assert!(run(&good, &third).contains("is not slower than --good"));
    let trees = git(dir.path(), &["worktree", "list"]);
    assert_eq!(trees.lines().count(), 1, "{trees}");
}

/// `--case` runs the case as two configurations, each side's `--switch` in
/// its work tree (here checking that side was built), or each side a
/// `--guest` started there; an A/B too short to call slower is no slowdown,
/// so nothing is bisected. Without `--switch`, or without
/// `--command` or `--case`, the command line is refused.
#[test]
fn bisect_by_case_runs_one_configuration_per_side() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _, _) = repository(dir.path());
    let third = git(dir.path(), &["rev-parse", "HEAD~5"]);
    let bisect = |extra: &[&str]| {
        osbench(common::tmp_store("bisect.sqlite"))
            .args(["bisect", "--repo", dir.path().to_str().unwrap()])
            .args(["--good", &good, "--bad", &third, "--build", "sh build.sh"])
            .args(extra)
            .output()
            .unwrap()
    };
    // Three rounds cannot reach significance: the A/B of BAD cannot call it
    // slower. It is too short to decide, or (a tight interval on a quiet
    // machine) equivalent; neither is a slowdown.
    let no_slowdown = |err: &str| {
        err.contains("is not slower than --good")
            && (err.contains("null: inconclusive: too few rounds")
                || err.contains("null: equivalent within"))
    };
    let case = ["--case", "syscall:case=null", "--switch", "test -x prog"];
    let out = bisect(&[&case[..], &["--runs", "3", "--retries", "0"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(no_slowdown(&err), "{err}");
    // Each side a guest started in its tree (here this osbench's own agent).
    let guest = [
        "--case",
        "syscall:case=null",
        "--guest",
        "test -x prog && exec {osbench} agent",
    ];
    let out = bisect(&[&guest[..], &["--runs", "3", "--retries", "0"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(no_slowdown(&err), "{err}");
    for extra in [&["--case", "syscall:case=null"][..], &[]] {
        let out = bisect(extra);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("required"));
    }
}

/// D6: a build that hangs is ended by SIGINT and by SIGTERM (exit 130, its
/// processes, the work trees and `$TMPDIR/osbench-bisect-*` gone), and by
/// `--build-timeout` (the good revision "does not build", naming the timeout).
#[test]
fn a_hanging_build_ends_at_a_stop_signal_or_its_timeout_leaving_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (good, _, bad) = repository(dir.path());
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("building");
    // A duration of its own, to find it among the machine's processes.
    let hang = format!("touch {}; exec sleep 6131", marker.display());
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let _ = std::fs::remove_file(&marker);
        let mut child = osbench(common::tmp_store("bisect.sqlite"))
            .env("TMPDIR", tmp.path())
            .args(["bisect", "--repo", dir.path().to_str().unwrap()])
            .args(["--good", &good, "--bad", &bad, "--build", &hang])
            .args(["--command", "./prog"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        common::wait_until("the build to start", || marker.exists().then_some(()));
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let started = std::time::Instant::now();
        let status = common::wait_until("bisect to exit", || child.try_wait().unwrap());
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(started.elapsed().as_secs() < 5, "{err}");
        assert_eq!(status.code(), Some(130), "signal {sig}: {err}");
        let trees = git(dir.path(), &["worktree", "list"]);
        assert_eq!(trees.lines().count(), 1, "{trees}");
        let left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("osbench-bisect-")
            })
            .collect();
        assert!(left.is_empty(), "{left:?}");
        let sleeping = Command::new("pgrep").args(["-f", &hang]).output().unwrap();
        assert!(sleeping.stdout.is_empty(), "the build is left running");
    }
    let out = osbench(common::tmp_store("bisect.sqlite"))
        .env("TMPDIR", tmp.path())
        .args(["bisect", "--repo", dir.path().to_str().unwrap()])
        .args(["--good", &good, "--bad", &bad, "--build", &hang])
        .args(["--command", "./prog", "--build-timeout", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not build") && err.contains("timeout"),
        "{err}"
    );
}
