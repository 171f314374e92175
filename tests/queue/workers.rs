//! The job queue against a real PostgreSQL server (a throwaway cluster per
//! test, `common::pg`): worker processes under several names as hosts, each
//! running its own jobs and filing runs under its name; a worker SIGKILLed
//! mid-job (its job lost, claimed again and done by the next worker of that
//! name); a worker whose store stops mid-job and comes back (the run waits
//! in its spool and is sent); SIGTERM mid-job (what was measured is stored,
//! the job queued again); concurrent claimers (no job claimed twice); and
//! every refusal: another osbench version, a name in use, a plan beyond
//! the host's limits, a plan this osbench cannot run, a kernel job with no way to boot, bad
//! `submit` input, SQLite. Runs are tiny; nothing is timed. Without
//! PostgreSQL these tests say so and pass, unless `OSBENCH_REQUIRE_PG=1`.
//! The ignored `claims_of_1000_jobs_by_8_workers` is docs/store-scale.md's
//! measurement (scripts/store-scale.sh queue).

use crate::common;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::wait_until;

use common::pg::{Cluster, Tls, have_postgres};
use osbench::store::{JobRow, JobState, Location, NewJob, Store, WorkerId};

/// A quick run: few short samples, no warm-up.
pub(crate) const QUICK: [&str; 7] = [
    "--",
    "--samples",
    "3",
    "--sample-time",
    "1",
    "--warmup",
    "0",
];

/// A run of about `secs` seconds (samples of 20 ms), to be caught mid-job.
fn slow(secs: u32) -> Vec<String> {
    let samples = (secs * 50).to_string();
    [
        "--",
        "--samples",
        &samples,
        "--sample-time",
        "20",
        "--warmup",
        "0",
    ]
    .map(String::from)
    .to_vec()
}

/// A cluster, its URL and a directory for spools and logs.
pub(crate) struct Queue {
    pub(crate) pg: Cluster,
    pub(crate) url: String,
    pub(crate) dir: tempfile::TempDir,
}

impl Queue {
    pub(crate) fn start() -> Self {
        let pg = Cluster::start(Tls::Off);
        let url = pg.url("127.0.0.1", "?connect_timeout=3");
        Queue {
            pg,
            url,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn cmd(&self) -> Command {
        let mut cmd = common::osbench(&self.url);
        cmd.current_dir(self.dir.path());
        cmd
    }

    pub(crate) fn store(&self) -> Store {
        Store::open(Location::new(Path::new(&self.url))).unwrap()
    }

    /// `osbench submit ARGS`; the ids queued.
    pub(crate) fn submit(&self, args: &[&str]) -> Vec<i64> {
        let (out, _) = common::ok(self.cmd().arg("submit").args(args).output().unwrap());
        out.lines()
            .map(|l| l.split_whitespace().nth(2).unwrap().parse().unwrap())
            .collect()
    }

    pub(crate) fn jobs(&self) -> Vec<JobRow> {
        self.store().jobs(None, None).unwrap()
    }

    pub(crate) fn job(&self, id: i64) -> JobRow {
        self.store().job(id).unwrap().unwrap()
    }

    pub(crate) fn spool(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("spool-{name}"))
    }

    /// A worker process named `name`, asking every 0.2 s, with `extra` options.
    pub(crate) fn worker(&self, name: &str, extra: &[&str]) -> WorkerProc {
        let log = self
            .dir
            .path()
            .join(format!("worker-{name}-{}.log", nanos()));
        let child = self
            .cmd()
            .args(["worker", "--name", name, "--poll", "0.2", "--spool"])
            .arg(self.spool(name))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        WorkerProc { child, log }
    }

    /// Waits (up to 60 s) until job `id` is in `state`.
    pub(crate) fn wait_for(&self, id: i64, state: JobState) -> JobRow {
        wait_until(&format!("job {id} {state}"), || {
            let j = self.job(id);
            (j.state == state).then_some(j)
        })
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// A worker process, killed (SIGKILL) and reaped when dropped.
pub(crate) struct WorkerProc {
    pub(crate) child: Child,
    pub(crate) log: PathBuf,
}

impl WorkerProc {
    pub(crate) fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
    }

    /// Its exit status, waited for up to 30 s.
    pub(crate) fn exit(&mut self) -> std::process::ExitStatus {
        wait_until("the worker to exit", || self.child.try_wait().unwrap())
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("worker log {}:\n{}", self.log.display(), self.log());
        }
    }
}

#[test]
fn workers_as_hosts_run_their_own_jobs_and_file_runs_under_their_names() {
    if !have_postgres("workers_as_hosts") {
        return;
    }
    let q = Queue::start();
    let workers: Vec<WorkerProc> = ["a", "b", "c"]
        .iter()
        .map(|n| q.worker(n, &["--tag", "lab"]))
        .collect();
    wait_until("three live workers", || {
        let live = q.store().workers(Some("lab")).unwrap();
        (live.iter().filter(|w| w.live).count() == 3).then_some(())
    });
    let mut args = vec![
        "syscall:null",
        "--tag",
        "lab",
        "--repeat",
        "2",
        "--label",
        "nightly",
    ];
    args.extend(["--meta", "commit=abc"]);
    args.extend(QUICK);
    let ids = q.submit(&args);
    assert_eq!(ids.len(), 6);
    let done: Vec<JobRow> = ids
        .iter()
        .map(|&id| q.wait_for(id, JobState::Done))
        .collect();
    let store = q.store();
    let mut runs = BTreeSet::new();
    for j in &done {
        assert_eq!(j.attempts, 1, "job {} claimed once", j.id);
        let run = j.run_id.unwrap();
        assert!(runs.insert(run), "run {run} of two jobs");
        let doc = store.document(run).unwrap().unwrap();
        assert_eq!(doc.host(), j.host);
        assert_eq!(doc.run.label.as_deref(), Some("nightly"));
        assert_eq!(doc.run.meta["job"], j.id.to_string());
        assert_eq!(doc.run.meta["commit"], "abc");
    }
    let hosts: BTreeSet<&str> = done.iter().map(|j| j.host.as_str()).collect();
    assert_eq!(hosts, BTreeSet::from(["a", "b", "c"]));
    assert_eq!(
        store.list(&Default::default()).unwrap().len(),
        6,
        "no job run twice"
    );
    // The list shows them, as a table and as JSON.
    let (table, _) = common::ok(q.cmd().args(["jobs", "--host", "b"]).output().unwrap());
    assert_eq!(
        table.lines().filter(|l| l.contains(" done ")).count(),
        2,
        "{table}"
    );
    let (json, _) = common::ok(q.cmd().args(["jobs", "--json"]).output().unwrap());
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 6);
    assert_eq!(json[0]["plan"]["command"], "run");
    drop(workers);
}

#[test]
fn a_killed_workers_job_is_lost_then_done_by_the_next_worker_of_its_name() {
    if !have_postgres("a_killed_workers_job") {
        return;
    }
    let q = Queue::start();
    let mut args = vec!["syscall:null", "--hosts", "a"];
    let slow = slow(4);
    args.extend(slow.iter().map(String::as_str));
    let id = q.submit(&args)[0];
    let mut first = q.worker("a", &["--lease", "2"]);
    q.wait_for(id, JobState::Running);
    first.signal(libc::SIGKILL);
    first.exit();
    let lost = q.wait_for(id, JobState::Lost);
    let error = lost.error.unwrap();
    assert!(
        error.contains("lease of worker a pid") && error.contains("queued again"),
        "{error}"
    );
    // The next worker of that name (as systemd would restart it) takes it.
    let second = q.worker("a", &["--lease", "2"]);
    let running = q.wait_for(id, JobState::Running);
    assert_eq!(running.attempts, 2);
    let owner = running.lease_owner.unwrap();
    assert!(
        !owner.contains(&format!("pid {} ", first.child.id())),
        "{owner}"
    );
    drop(first);
    let done = q.wait_for(id, JobState::Done);
    drop(second);
    assert_eq!(done.attempts, 2);
    assert!(done.run_id.is_some());
    // The loss stays on the record.
    assert!(done.error.unwrap().contains("expired"));
}

#[test]
fn a_job_lost_on_its_last_attempt_fails() {
    if !have_postgres("a_job_lost_on_its_last_attempt") {
        return;
    }
    let q = Queue::start();
    let mut args = vec!["syscall:null", "--hosts", "a", "--attempts", "1"];
    let slow = slow(20);
    args.extend(slow.iter().map(String::as_str));
    let id = q.submit(&args)[0];
    let mut w = q.worker("a", &["--lease", "1"]);
    q.wait_for(id, JobState::Running);
    w.signal(libc::SIGKILL);
    w.exit();
    let failed = q.wait_for(id, JobState::Failed);
    let error = failed.error.unwrap();
    assert!(error.contains("not retried"), "{error}");
    let (table, _) = common::ok(q.cmd().arg("jobs").output().unwrap());
    assert!(table.contains("not retried"), "{table}");
}

#[test]
fn a_store_that_goes_away_mid_job_gets_the_run_when_it_is_back() {
    if !have_postgres("a_store_that_goes_away") {
        return;
    }
    let q = Queue::start();
    let mut args = vec!["syscall:null", "--hosts", "a"];
    let slow = slow(4);
    args.extend(slow.iter().map(String::as_str));
    let id = q.submit(&args)[0];
    let w = q.worker("a", &["--lease", "30"]);
    q.wait_for(id, JobState::Running);
    q.pg.halt();
    let spool = q.spool("a");
    let pending = wait_until("the run in the spool", || {
        let files: Vec<PathBuf> = fs::read_dir(&spool)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        (!files.is_empty()).then_some(files)
    });
    assert_eq!(pending.len(), 1, "{pending:?}");
    std::thread::sleep(Duration::from_millis(500));
    q.pg.resume();
    let done = q.wait_for(id, JobState::Done);
    assert!(!pending[0].exists(), "sent and removed");
    let doc = q.store().document(done.run_id.unwrap()).unwrap().unwrap();
    assert_eq!(doc.run.meta["job"], id.to_string());
    assert!(
        w.log().contains("now that the store is back"),
        "{}",
        w.log()
    );
}

#[test]
fn sigterm_stores_what_was_measured_and_gives_the_job_back() {
    if !have_postgres("sigterm_stores") {
        return;
    }
    let q = Queue::start();
    let mut args = vec!["--hosts", "a"];
    let many = steps(200, 100);
    args.extend(many.iter().map(String::as_str));
    let id = q.submit(&args)[0];
    let mut w = q.worker("a", &[]);
    // Once the second case has started, the first is measured: there is
    // something to store, however slowly the machine got there.
    wait_until("the second case", || {
        (started(&w.log(), 200) >= 2).then_some(())
    });
    w.signal(libc::SIGTERM);
    assert_eq!(w.exit().code(), Some(130), "{}", w.log());
    let job = q.job(id);
    assert_eq!(job.state, JobState::Queued, "{}", w.log());
    assert_eq!(job.attempts, 0, "a stop uses up no attempt");
    let note = job.error.unwrap();
    assert!(
        note.contains("stopped") && note.contains("what it measured is run"),
        "{note}"
    );
    let runs = q.store().list(&Default::default()).unwrap();
    assert_eq!(runs.len(), 1);
    assert!(
        !runs[0].complete,
        "the run keeps what was measured, marked incomplete"
    );
    // It stopped within the case it was in: at most one more started.
    let doc = q.store().document(runs[0].id).unwrap().unwrap();
    assert!(doc.run.order.len() <= 3, "{:?}", doc.run.order);
    // Its name is free at once.
    let workers = q.store().workers(None).unwrap();
    assert!(!workers[0].live);
}

/// Selectors and options of a run of `steps` cases (2 configurations over
/// `steps / 2` rounds of `syscall null`), each sampled for about
/// `sample_ms × 5` ms: its progress lines are "[i/steps] round …".
fn steps(steps: u32, sample_ms: u32) -> Vec<String> {
    let (rounds, ms) = ((steps / 2).to_string(), sample_ms.to_string());
    [
        "syscall:null",
        "--",
        "--config",
        "x=true",
        "--config",
        "y=true",
        "--rounds",
        &rounds,
        "--samples",
        "5",
        "--sample-time",
        &ms,
        "--warmup",
        "0",
    ]
    .map(String::from)
    .to_vec()
}

/// The progress lines of the cases of a run of `total` steps in `log`.
fn started(log: &str, total: u32) -> usize {
    log.matches(&format!("/{total}] round ")).count()
}

#[test]
fn a_running_job_cancelled_stops_at_the_next_case_and_the_worker_goes_on() {
    if !have_postgres("a_running_job_cancelled") {
        return;
    }
    let q = Queue::start();
    // 40 cases of at least a second each (five 200 ms samples), and a
    // quick job after it.
    let long = steps(40, 200);
    let mut args = vec!["--hosts", "a", "--label", "long"];
    args.extend(long.iter().map(String::as_str));
    let id = q.submit(&args)[0];
    let next = q.submit(&[&["syscall:null", "--hosts", "a"][..], &QUICK].concat())[0];
    // Renewed at most every second (a quarter of the lease), so at every
    // case boundary.
    let w = q.worker("a", &["--lease", "4"]);
    wait_until("the third case", || {
        (started(&w.log(), 40) >= 3).then_some(())
    });
    common::ok(
        q.cmd()
            .args(["jobs", "--cancel", &id.to_string()])
            .output()
            .unwrap(),
    );
    let at_cancel = started(&w.log(), 40);
    let done = q.wait_for(next, JobState::Done);
    let log = w.log();
    assert!(
        log.contains(&format!("job {id}: stopped, as it was cancelled")),
        "{log}"
    );
    let after = started(&log, 40) - at_cancel;
    assert!(after <= 2, "{after} cases started after the cancel:\n{log}");
    let job = q.job(id);
    assert_eq!(job.state, JobState::Cancelled, "{log}");
    let note = job.error.unwrap();
    assert!(note.contains("cancelled (was running)"), "{note}");
    // What was measured is stored under the job's meta, and named on it.
    let run = job.run_id.expect("the stopped run noted on the job");
    assert!(
        note.contains(&format!("before it stopped is run {run}")),
        "{note}"
    );
    let doc = q.store().document(run).unwrap().unwrap();
    assert_eq!(doc.run.meta["job"], id.to_string());
    assert_eq!(doc.run.label.as_deref(), Some("long"));
    assert!(!doc.run.complete, "marked incomplete");
    assert!(doc.run.order.len() < 40, "{:?}", doc.run.order);
    assert_ne!(done.run_id, Some(run));
    assert_eq!(q.store().list(&Default::default()).unwrap().len(), 2);
    drop(w);
}

/// `claimers` threads, each its own connection and worker token, claim
/// `jobs` jobs of one host until none is left; every claim's latency.
fn claim_all(url: &str, jobs: usize, claimers: usize) -> Vec<(i64, Duration)> {
    let open = || Store::open(Location::new(Path::new(url))).unwrap();
    let job = NewJob {
        host: "h".into(),
        label: None,
        meta: Default::default(),
        plan: "{}".into(),
        kernel: None,
        osbench_version: "0".into(),
        not_before: None,
        max_attempts: 3,
    };
    open().submit(&vec![job; jobs]).unwrap();
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..claimers)
            .map(|i| {
                scope.spawn(move || {
                    let mut store = open();
                    let w = WorkerId {
                        name: "h".into(),
                        tags: Vec::new(),
                        machine: "test".into(),
                        pid: i as i64,
                        osbench_version: "0".into(),
                        token: format!("claimer-{i}"),
                    };
                    let mut claims = Vec::new();
                    loop {
                        let t = Instant::now();
                        match store.claim(&w, 600.0).unwrap() {
                            Some(j) => claims.push((j.id, t.elapsed())),
                            None => return claims,
                        }
                    }
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    })
}

#[test]
fn concurrent_claimers_never_take_a_job_twice() {
    if !have_postgres("concurrent_claimers") {
        return;
    }
    let q = Queue::start();
    let claims = claim_all(&q.url, 200, 4);
    let ids: BTreeSet<i64> = claims.iter().map(|(id, _)| *id).collect();
    assert_eq!(claims.len(), 200, "every job claimed once");
    assert_eq!(ids.len(), 200, "no job claimed twice");
}

/// docs/store-scale.md's queue measurement: 1,000 jobs, 8 claimers, in
/// the empty database `$OSBENCH_SCALE_STORE` (the script's cluster, fsync
/// on), else in a throwaway cluster of the tests' (fsync off).
#[test]
#[ignore = "a measurement: run it alone (scripts/store-scale.sh queue)"]
fn claims_of_1000_jobs_by_8_workers() {
    let given = std::env::var("OSBENCH_SCALE_STORE").ok();
    if given.is_none() && !have_postgres("claims_of_1000_jobs") {
        return;
    }
    let q = given.is_none().then(Queue::start);
    let url = given.unwrap_or_else(|| q.as_ref().unwrap().url.clone());
    let start = Instant::now();
    let claims = claim_all(&url, 1000, 8);
    let wall = start.elapsed();
    let ids: BTreeSet<i64> = claims.iter().map(|(id, _)| *id).collect();
    assert_eq!(
        (claims.len(), ids.len()),
        (1000, 1000),
        "no duplicate claim"
    );
    let mut ms: Vec<f64> = claims.iter().map(|(_, d)| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let at = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
    println!(
        "queue: 1000 jobs claimed by 8 workers in {:.2} s; claim latency ms: p50 {:.2} p90 {:.2} \
         p99 {:.2} max {:.2}; duplicate claims: 0",
        wall.as_secs_f64(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
}

#[test]
fn a_worker_refuses_what_it_cannot_run_and_says_why_on_the_job() {
    if !have_postgres("a_worker_refuses") {
        return;
    }
    let q = Queue::start();
    let version = q.submit(&[&["syscall:null", "--hosts", "a"][..], &QUICK].concat())[0];
    q.pg.sql(&format!(
        "UPDATE jobs SET osbench_version = '0.0.1' WHERE id = {version}"
    ));
    let limits = q.submit(&["syscall:null", "--hosts", "a", "--", "--samples", "1000"])[0];
    let unreadable = q.submit(&[&["syscall:null", "--hosts", "a"][..], &QUICK].concat())[0];
    q.pg.sql(&format!(
        "UPDATE jobs SET plan = '{{\"command\":\"run\",\"args\":[\"--no-such-option\"]}}' \
         WHERE id = {unreadable}"
    ));
    let plan = |name: &str, table: &str| {
        let path = q.dir.path().join(name);
        let quick = "samples = 3\nsample_time = 1\nwarmup = 0\n";
        let text = format!("select = [\"syscall:null\"]\n{quick}[kernel]\n{table}\n");
        fs::write(&path, text).unwrap();
        q.submit(&[path.to_str().unwrap(), "--hosts", "a"])[0]
    };
    let kernel = plan("other.toml", "release = \"6.99\"");
    let no_file = plan(
        "nofile.toml",
        "kernel = \"/boot/no-such-vmlinuz\"\nrelease = \"6.99\"",
    );
    let uname = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let running = plan("running.toml", &format!("release = \"{}\"", uname.trim()));
    for _ in 0..6 {
        crate::common::ok(
            q.cmd()
                .args([
                    "worker",
                    "--name",
                    "a",
                    "--once",
                    "--max-job-time",
                    "5",
                    "--spool",
                ])
                .arg(q.spool("a"))
                .output()
                .unwrap(),
        );
    }
    let error = |id| {
        let j = q.job(id);
        assert_eq!(j.state, JobState::Failed, "job {id}: {:?}", j.error);
        j.error.unwrap()
    };
    let e = error(version);
    assert!(
        e.contains("needs osbench 0.0.1") && e.contains(env!("CARGO_PKG_VERSION")),
        "{e}"
    );
    assert!(error(limits).contains("beyond this host's --max-job-time of 5 s"));
    assert!(error(unreadable).contains("cannot run the job's plan"));
    let e = error(kernel);
    assert!(
        e.contains("cannot boot 6.99") && e.contains("no reboot command"),
        "{e}"
    );
    let e = error(no_file);
    assert!(
        e.contains("/boot/no-such-vmlinuz does not exist on this host"),
        "{e}"
    );
    let (table, _) = common::ok(q.cmd().arg("jobs").output().unwrap());
    assert!(table.contains("needs osbench 0.0.1"), "{table}");
    // The job whose kernel is the running one ran; nothing else did.
    assert_eq!(q.job(running).state, JobState::Done);
    assert_eq!(q.store().list(&Default::default()).unwrap().len(), 1);
}

/// A job's `--gate` that cannot judge (two runs of an interleaved A/B are too few
/// for the test) is noted on the job, which is done: it measured and stored
/// its run; the worker says it too.
#[test]
fn a_jobs_undecided_gate_is_noted_on_the_done_job() {
    if !have_postgres("a_jobs_undecided_gate") {
        return;
    }
    let q = Queue::start();
    // No equivalence margin: two close runs could otherwise be "equivalent".
    let quick = [
        "--runs",
        "2",
        "--warmup",
        "0",
        "--gate",
        "5",
        "--equivalence",
        "0",
    ];
    let id = q.submit(
        &[
            &["--time", "true", "true", "--hosts", "a", "--"][..],
            &quick,
        ]
        .concat(),
    )[0];
    let out = q
        .cmd()
        .args(["worker", "--name", "a", "--once", "--spool"])
        .arg(q.spool("a"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let job = q.job(id);
    assert_eq!(job.state, JobState::Done, "{:?}", job.error);
    let note = job.error.unwrap_or_default();
    assert!(
        note.starts_with("regression gate: 1 case could not be judged")
            && note.contains("too few runs"),
        "{note}"
    );
    assert!(
        stderr.contains("regression gate: 1 case could not be judged"),
        "{stderr}"
    );
}

#[test]
fn a_second_worker_of_a_name_in_use_refuses_to_start_naming_the_first() {
    if !have_postgres("a_second_worker") {
        return;
    }
    let q = Queue::start();
    let first = q.worker("a", &[]);
    wait_until("the first worker", || {
        q.store()
            .workers(None)
            .unwrap()
            .first()
            .filter(|w| w.live)
            .cloned()
    });
    let out = q
        .cmd()
        .args(["worker", "--name", "a", "--once", "--spool"])
        .arg(q.spool("a2"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("worker name 'a' is in use"), "{stderr}");
    assert!(
        stderr.contains(&format!("pid {}", first.child.id())),
        "{stderr}"
    );
    // Another name is fine.
    common::ok(
        q.cmd()
            .args(["worker", "--name", "b", "--once", "--spool"])
            .arg(q.spool("b"))
            .output()
            .unwrap(),
    );
}

#[test]
fn submit_refuses_bad_input_and_jobs_cancels() {
    if !have_postgres("submit_refuses") {
        return;
    }
    let q = Queue::start();
    let refused = |args: &[&str], says: &str| {
        let out = q.cmd().arg("submit").args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    };
    refused(&["nosuch", "--hosts", "a"], "unknown benchmark 'nosuch'");
    refused(&["syscall"], "--hosts");
    refused(
        &["syscall", "--tag", "gpu"],
        "no registered worker has tag 'gpu'",
    );
    refused(
        &["syscall", "--hosts", "a", "--not-before", "soon"],
        "'soon' is not a time",
    );
    refused(
        &["syscall", "--hosts", "a", "--meta", "job=3"],
        "set by the worker",
    );
    refused(&["syscall", "--hosts", "a,a"], "given twice");
    refused(
        &["syscall", "--hosts", "a", "--", "--rounds", "3"],
        "--rounds repeats",
    );
    refused(
        &["syscall", "--hosts", "a", "--", "--label", "x"],
        "cannot give --label",
    );
    let plan = q.dir.path().join("p.toml");
    fs::write(
        &plan,
        "select = [\"syscall\"]\n[[config]]\nname = \"only\"\n",
    )
    .unwrap();
    refused(
        &[plan.to_str().unwrap(), "--hosts", "a"],
        "one configuration",
    );
    // Not before an hour from now: a worker finds nothing to do.
    let later = q.submit(
        &[
            &["syscall:null", "--hosts", "a", "--not-before", "+1 hour"][..],
            &QUICK,
        ]
        .concat(),
    )[0];
    common::ok(
        q.cmd()
            .args(["worker", "--name", "a", "--once", "--spool"])
            .arg(q.spool("a"))
            .output()
            .unwrap(),
    );
    let j = q.job(later);
    assert_eq!(j.state, JobState::Queued);
    assert!(j.not_before.is_some());
    let (out, _) = common::ok(
        q.cmd()
            .args(["jobs", "--cancel", &later.to_string()])
            .output()
            .unwrap(),
    );
    assert!(out.contains("cancelled job"), "{out}");
    assert_eq!(q.job(later).state, JobState::Cancelled);
    let again = q
        .cmd()
        .args(["jobs", "--cancel", &later.to_string()])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("cancelled already"));
    let none = q.cmd().args(["jobs", "--cancel", "999"]).output().unwrap();
    assert!(String::from_utf8_lossy(&none.stderr).contains("there is no job 999"));
    assert_eq!(q.jobs().len(), 1);
}

#[test]
fn sqlite_refuses_the_queue_commands() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results.sqlite");
    for args in [
        &["submit", "syscall", "--hosts", "a"][..],
        &["jobs"],
        &["worker", "--name", "a", "--once"],
    ] {
        let out = common::osbench(&file)
            .args(args)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("needs a PostgreSQL store") && stderr.contains("SQLite file"),
            "{args:?}: {stderr}"
        );
    }
}

/// `jobs` (and `jobs --workers`, empty) fits 80 and 100 columns on a
/// terminal with no word broken (`common::terminal`); a pipe gets one line
/// per job.
#[test]
fn the_job_list_fits_80_and_100_columns_on_a_terminal() {
    if !have_postgres("the_job_list_fits") || !common::terminal::have_script() {
        return;
    }
    let q = Queue::start();
    let hosts = "a-host-with-a-rather-long-name,b";
    let label = "nightly-with-a-rather-long-label";
    let ids = q.submit(&["syscall:null", "--hosts", hosts, "--label", label]);
    common::ok(
        q.cmd()
            .args(["jobs", "--cancel", &ids[1].to_string()])
            .output()
            .unwrap(),
    );
    let store = Path::new(&q.url);
    let table = common::terminal::check_widths(store, q.dir.path(), &["jobs"], |_| true);
    let rows = table.lines().take_while(|l| !l.is_empty()).count();
    assert_eq!(rows, 1 + ids.len(), "{table}");
    assert!(
        table.contains(&format!("job {}: cancelled", ids[1])),
        "{table}"
    );
    assert!(table.lines().any(|l| l.chars().count() > 100), "{table}");
    let workers =
        common::terminal::check_widths(store, q.dir.path(), &["jobs", "--workers"], |_| true);
    assert!(workers.contains("no workers"), "{workers}");
}
