//! Issue 44's hangs and lost data of the worker, each made to happen
//! against a throwaway PostgreSQL cluster (the `workers` module's `Queue`):
//! a `time` job beyond `--max-job-time` (D10), a spool document the store
//! refuses (D1), a spool that cannot be written (D2), a hanging reboot
//! command (D4), SIGTERM just after the last case (D8), a job with
//! unreadable meta in `jobs`. Without PostgreSQL these tests say so and
//! pass, unless `OSBENCH_REQUIRE_PG=1`. Nothing is timed.

use std::time::{Duration, Instant};

use crate::common::pg::have_postgres;
use crate::workers::Queue;
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
