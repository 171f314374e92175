//! Issue 44's hangs and lost data of the worker, each made to happen
//! against a throwaway PostgreSQL cluster (the `workers` module's `Queue`):
//! a `time` job beyond `--max-job-time` (D10), a spool document the store
//! refuses (D1), SIGTERM just after the last case (D8), a job row with
//! unreadable meta in `jobs`, and a spool that cannot be written (D2: one
//! refused at start, one removed mid-job). The hanging reboot command (D4)
//! and the host left on a test kernel (D7) are in `boot`. Without
//! PostgreSQL these tests say so and pass, unless `OSBENCH_REQUIRE_PG=1`.
//! Nothing is timed.

use std::time::{Duration, Instant};

use crate::common;
use crate::common::pg::have_postgres;
use crate::workers::{QUICK, Queue, WorkerProc};
use osbench::store::JobState;

/// D10: a `time` job (whose length no plan tells) is stopped at the host's
/// `--max-job-time`, failed with what it measured kept.
#[test]
fn a_time_job_is_stopped_at_max_job_time() {
    if !have_postgres("a_time_job_is_stopped") {
        return;
    }
    let q = Queue::start();
    let id = q.submit(&["--time", "sleep 0.5", "--hosts", "a", "--", "--runs", "60"])[0];
    let started = Instant::now();
    let out = q
        .cmd()
        .args([
            "worker",
            "--name",
            "a",
            "--once",
            "--max-job-time",
            "2",
            "--spool",
        ])
        .arg(q.spool("a"))
        .output()
        .unwrap();
    let took = started.elapsed();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(20), "took {took:?}: {log}");
    let job = q.job(id);
    assert_eq!(job.state, JobState::Failed, "{log}");
    let e = job.error.unwrap();
    assert!(
        e.contains("beyond this host's --max-job-time of 2 s"),
        "{e}"
    );
}

/// A document of a tiny run (`--no-store --json`), as JSON to edit.
fn document(q: &Queue) -> serde_json::Value {
    let path = q
        .dir
        .path()
        .join(format!("doc-{}.json", std::process::id()));
    let args = [
        &["run", "syscall:null", "--no-store", "-q", "--json"][..],
        &QUICK[1..],
    ]
    .concat();
    let out = q
        .cmd()
        .args(&args[..5])
        .arg(&path)
        .args(&args[5..])
        .output()
        .unwrap();
    common::ok(out);
    let doc = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    doc
}

/// D1: a spool document the store refuses (a NUL in a text, as a `time`
/// plan's `-n` once made) is moved to `rejected/`, named in a warning; the
/// documents after it are sent, and the worker claims and runs its job.
#[test]
fn a_spool_document_the_store_refuses_is_set_aside_and_the_worker_goes_on() {
    if !have_postgres("a_spool_document_the_store_refuses") {
        return;
    }
    let q = Queue::start();
    let spool = q.spool("a");
    std::fs::create_dir_all(&spool).unwrap();
    let good = document(&q);
    let mut bad = good.clone();
    bad["series"][0]["case"] = "a\u{0}b".into();
    std::fs::write(spool.join("osbench-1.json"), bad.to_string()).unwrap();
    std::fs::write(spool.join("osbench-2.json"), good.to_string()).unwrap();
    let id = q.submit(&[&["syscall:null", "--hosts", "a"][..], &QUICK].concat())[0];
    let mut w = q.worker("a", &["--once"]);
    assert_eq!(w.exit().code(), Some(0), "{}", w.log());
    let log = w.log();
    assert!(
        log.contains("refused") && log.contains("osbench-1.json") && log.contains("rejected"),
        "{log}"
    );
    assert!(spool.join("rejected/osbench-1.json").exists(), "{log}");
    assert!(!spool.join("osbench-1.json").exists());
    assert!(
        !spool.join("osbench-2.json").exists(),
        "the good one is sent: {log}"
    );
    assert_eq!(q.job(id).state, JobState::Done, "{log}");
    assert_eq!(q.store().list(&Default::default()).unwrap().len(), 2);
}

/// D8: SIGTERM after the last case (sent by the tear-down of the only
/// of the last block: two configurations, two rounds) stores the run and ends
/// the job done: it is not queued again to be measured twice.
#[test]
fn sigterm_after_the_last_case_ends_the_job_done_not_queued_again() {
    if !have_postgres("sigterm_after_the_last_case") {
        return;
    }
    let q = Queue::start();
    let count = q.dir.path().join("teardowns");
    let teardown = format!(
        "echo x >> {0}; [ $(wc -l < {0}) -ne 4 ] || {{ kill -TERM $PPID; sleep 1; }}",
        count.display()
    );
    let mut args = vec!["syscall:null", "--hosts", "a"];
    args.extend(&QUICK);
    let (ta, tb) = (format!("a={teardown}"), format!("b={teardown}"));
    args.extend(["--config", "a=true", "--config", "b=true", "--rounds", "2"]);
    args.extend(["--teardown", &ta, "--teardown", &tb]);
    let id = q.submit(&args)[0];
    let mut w = q.worker("a", &[]);
    assert_eq!(w.exit().code(), Some(130), "{}", w.log());
    let job = q.job(id);
    assert_eq!(job.state, JobState::Done, "{}", w.log());
    let runs = q.store().list(&Default::default()).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(job.run_id, Some(runs[0].id));
}

/// A job row whose meta is no JSON map (written by other means than
/// `submit`) does not make `jobs` fail for everyone: it is listed, said to
/// be unreadable, and a worker fails it.
#[test]
fn a_job_with_unreadable_meta_is_listed_as_such_and_failed() {
    if !have_postgres("a_job_with_unreadable_meta") {
        return;
    }
    let q = Queue::start();
    let ok = q.submit(&[&["syscall:null", "--hosts", "a"][..], &QUICK].concat())[0];
    let bad = q.submit(&[&["syscall:null", "--hosts", "a"][..], &QUICK].concat())[0];
    q.pg.sql(&format!("UPDATE jobs SET meta = '[1, 2]' WHERE id = {bad}"));
    let (table, _) = common::ok(q.cmd().arg("jobs").output().unwrap());
    assert!(table.contains(&format!("job {bad}: unreadable")), "{table}");
    common::ok(q.cmd().args(["jobs", "--json"]).output().unwrap());
    for _ in 0..2 {
        common::ok(
            q.cmd()
                .args(["worker", "--name", "a", "--once", "--spool"])
                .arg(q.spool("a"))
                .output()
                .unwrap(),
        );
    }
    assert_eq!(q.job(ok).state, JobState::Done);
    let job = q.job(bad);
    assert_eq!(job.state, JobState::Failed);
    assert!(job.error.unwrap().contains("meta is not a JSON map"));
}

/// D2: a spool the worker cannot write is refused at start; one that goes
/// away mid-job (as a full or read-only one would: the run cannot be kept
/// there) leaves the run in `$TMPDIR`, said as such, and the worker still
/// sends it, and marks the job done, when the store is back.
#[test]
fn a_spool_that_cannot_be_written_is_refused_or_its_run_still_sent() {
    if !have_postgres("a_spool_that_cannot_be_written") {
        return;
    }
    let q = Queue::start();
    // /proc/self/fdinfo exists and takes no file, even from root.
    let out = q
        .cmd()
        .args([
            "worker",
            "--name",
            "a",
            "--once",
            "--spool",
            "/proc/self/fdinfo",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot be written"), "{err}");

    let tmp = q.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let id = q.submit(&[
        "syscall:null",
        "--hosts",
        "a",
        "--",
        "--samples",
        "150",
        "--sample-time",
        "20",
        "--warmup",
        "0",
    ])[0];
    let spool = q.spool("a");
    let log = q.dir.path().join("worker-d2.log");
    let child = q
        .cmd()
        .env("TMPDIR", &tmp)
        .args([
            "worker", "--name", "a", "--poll", "0.2", "--lease", "30", "--spool",
        ])
        .arg(&spool)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // Killed and reaped when dropped, whatever happens.
    let w = WorkerProc { child, log };
    let read = || w.log();
    q.wait_for(id, JobState::Running);
    q.pg.halt();
    std::fs::remove_dir_all(&spool).unwrap();
    let said = common::wait_until("the run kept elsewhere", || {
        read().contains("nor written to the spool").then(read)
    });
    assert!(said.contains(&tmp.display().to_string()), "{said}");
    std::fs::create_dir_all(&spool).unwrap();
    q.pg.resume();
    let done = q.wait_for(id, JobState::Done);
    assert!(done.run_id.is_some());
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(
        left.iter()
            .all(|p| p.extension().is_none_or(|e| e != "json")),
        "{left:?}: {}",
        read()
    );
}
