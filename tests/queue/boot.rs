//! Kernel-boot jobs run by real worker processes against a throwaway
//! PostgreSQL cluster (`common::pg`), with the boot faked: the worker reads
//! the running kernel under `OSBENCH_BOOT_PROC_ROOT` (a directory with
//! sys/kernel/osrelease and cmdline), its `--reboot-command` rewrites those
//! files and notes the boot in a marker file, and the worker runs with
//! `--once`, so it exits after "rebooting" and the test starts it again as
//! the host would after the boot. Cases: a one-boot job (and its boot back),
//! a boot that comes up in the wrong kernel (the job failed, the mismatch
//! named), a kernel file missing on the host, two kernels over two boot
//! rounds merged into one document that `compare --by host` reads, and a
//! boot whose run waits in the spool while the store is away (the job given
//! back and that boot's run made again). A real
//! kexec is not run. Without PostgreSQL these tests say so and pass, unless
//! `OSBENCH_REQUIRE_PG=1`.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::wait_until;

use common::pg::{Cluster, Tls, have_postgres};
use osbench::store::{JobRow, JobState, Location, Store};

/// The running kernel before any boot.
const BASE: &str = "6.1.0-base";

/// A cluster, its URL, a directory for plans and spools, and a fake /proc.
struct Host {
    pg: Cluster,
    url: String,
    dir: tempfile::TempDir,
}

impl Host {
    fn start() -> Self {
        let pg = Cluster::start(Tls::Off);
        let url = pg.url("127.0.0.1", "?connect_timeout=3");
        let host = Host {
            pg,
            url,
            dir: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(host.proc_root().join("sys/kernel")).unwrap();
        host.boot_into(BASE, "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1");
        host
    }

    fn proc_root(&self) -> PathBuf {
        self.dir.path().join("proc")
    }

    fn marker(&self) -> PathBuf {
        self.dir.path().join("boots")
    }

    /// What the fake /proc says is running.
    fn boot_into(&self, release: &str, cmdline: &str) {
        let root = self.proc_root();
        fs::write(root.join("sys/kernel/osrelease"), format!("{release}\n")).unwrap();
        fs::write(root.join("cmdline"), format!("{cmdline}\n")).unwrap();
    }

    /// The boots the reboot commands noted, one line each.
    fn boots(&self) -> Vec<String> {
        fs::read_to_string(self.marker())
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }

    /// A reboot command that "boots" the job's release with its append
    /// words (or, `fall_back`, leaves the kernel as it is) and notes it.
    fn reboot_command(&self, fall_back: bool) -> String {
        let root = self.proc_root();
        let rewrite = format!(
            "printf '%s\\n' \"$OSBENCH_BOOT_RELEASE\" > {0}/sys/kernel/osrelease && \
             printf 'root=/dev/sda1 %s\\n' \"$OSBENCH_BOOT_APPEND\" > {0}/cmdline && ",
            root.display()
        );
        format!(
            "{}echo \"job $OSBENCH_BOOT_JOB boot $OSBENCH_BOOT_RELEASE\" >> {}",
            if fall_back { "" } else { &rewrite },
            self.marker().display()
        )
    }

    fn cmd(&self) -> Command {
        let mut cmd = common::osbench(&self.url);
        cmd.env("OSBENCH_BOOT_PROC_ROOT", self.proc_root())
            .current_dir(self.dir.path());
        cmd
    }

    fn store(&self) -> Store {
        Store::open(Location::new(Path::new(&self.url))).unwrap()
    }

    fn job(&self, id: i64) -> JobRow {
        self.store().job(id).unwrap().unwrap()
    }

    /// `osbench submit` of a plan file with `text` to host "a", with `extra`.
    fn submit_output(&self, text: &str, extra: &[&str]) -> std::process::Output {
        let plan = self.dir.path().join("plan.toml");
        fs::write(&plan, text).unwrap();
        self.cmd()
            .arg("submit")
            .arg(&plan)
            .args(["--hosts", "a"])
            .args(extra)
            .output()
            .unwrap()
    }

    /// `osbench submit` of a plan file with `text`, to host "a"; the job's id.
    fn submit(&self, text: &str, extra: &[&str]) -> i64 {
        let (out, _) = common::ok(self.submit_output(text, extra));
        out.split_whitespace().nth(2).unwrap().parse().unwrap()
    }

    /// `osbench submit` of a plan file with `text` to host "a", which must
    /// be refused (status 2) with `says` in the message.
    fn refused(&self, text: &str, says: &str) {
        let out = self.submit_output(text, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{says:?} in {stderr}");
    }

    /// One start of worker "a" with `--once` (it exits after one job, or
    /// after rebooting for one); its standard error. It has exited when
    /// this returns: no worker is left running.
    fn worker_once(&self, extra: &[&str]) -> String {
        let out = self
            .cmd()
            .args([
                "worker", "--name", "a", "--once", "--poll", "0.2", "--spool",
            ])
            .arg(self.dir.path().join("spool"))
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        err
    }
}

/// A worker left running (not `--once`), killed and reaped when dropped.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Running {
    fn start(h: &Host, extra: &[&str]) -> Self {
        let log = h.dir.path().join("worker.log");
        let child = h
            .cmd()
            .args(["worker", "--name", "a", "--poll", "0.2", "--spool"])
            .arg(h.dir.path().join("spool"))
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Running { child, log }
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() && start.elapsed().as_secs() < 20 {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("worker log:\n{}", self.log());
        }
    }
}

/// The runs in the store that are one boot of a boot-rounds job: their steps.
fn boot_steps(store: &Store) -> Vec<String> {
    store
        .list(&Default::default())
        .unwrap()
        .iter()
        .filter_map(|r| store.document(r.id).unwrap())
        .filter_map(|d| d.run.meta.get("boot_step").cloned())
        .collect()
}

/// Two kernels over two rounds, each boot running `plan`.
fn two_kernels(plan: &str) -> String {
    format!(
        "{plan}[boot_rounds]\nrounds = 2\n[[boot_rounds.kernel]]\nname = \"base\"\n\
         release = \"{BASE}\"\n[[boot_rounds.kernel]]\nname = \"patched\"\n\
         release = \"6.18.0-patched\"\n"
    )
}

/// A plan of one quick case.
const PLAN: &str = "select = [\"syscall:null\"]\nsamples = 3\nsample_time = 1\nwarmup = 0\n";

#[test]
fn a_job_boots_its_kernel_then_runs_on_it_and_boots_back() {
    if !have_postgres("a_job_boots_its_kernel") {
        return;
    }
    let h = Host::start();
    let kernel = h.dir.path().join("vmlinuz-6.18.0-test");
    fs::write(&kernel, "not really a kernel").unwrap();
    let id = h.submit(
        &format!(
            "{PLAN}[kernel]\nkernel = \"{}\"\nrelease = \"6.18.0-test\"\nappend = \"nosmt\"\n\
             boot_back = true\n",
            kernel.display()
        ),
        &[],
    );
    let reboot = h.reboot_command(false);
    let back = format!(
        "echo \"job $OSBENCH_BOOT_JOB back\" >> {}",
        h.marker().display()
    );
    let args = ["--reboot-command", &reboot, "--boot-back-command", &back];
    let err = h.worker_once(&args);
    assert!(err.contains("rebooting into its kernel"), "{err}");
    let j = h.job(id);
    assert_eq!(j.state, JobState::Rebooting);
    let record: serde_json::Value = serde_json::from_str(j.kernel.as_deref().unwrap()).unwrap();
    assert_eq!(record["progress"]["boot"]["from"]["release"], BASE);
    assert_eq!(
        record["progress"]["boot"]["expectation"]["append"][0],
        "nosmt"
    );
    assert_eq!(h.boots(), [format!("job {id} boot 6.18.0-test")]);
    // The host comes back in that kernel; its worker starts again.
    let err = h.worker_once(&args);
    assert!(err.contains("back after the boot"), "{err}");
    let j = h.job(id);
    assert_eq!(j.state, JobState::Done, "{:?}", j.error);
    assert_eq!(j.attempts, 1);
    let doc = h.store().document(j.run_id.unwrap()).unwrap().unwrap();
    assert_eq!(doc.host(), "a");
    assert_eq!(doc.run.meta["job"], id.to_string());
    assert_eq!(h.boots()[1], format!("job {id} back"));
    // A job whose kernel is already running runs without a boot.
    let again = h.submit(
        &format!("{PLAN}[kernel]\nrelease = \"6.18.*\"\nappend = \"nosmt\"\n"),
        &[],
    );
    h.worker_once(&args);
    assert_eq!(h.job(again).state, JobState::Done);
    assert_eq!(h.boots().len(), 2, "no boot for a kernel already running");
}

#[test]
fn a_boot_into_another_kernel_fails_the_job_with_the_mismatch() {
    if !have_postgres("a_boot_into_another_kernel") {
        return;
    }
    let h = Host::start();
    let id = h.submit(
        &format!("{PLAN}[kernel]\nrelease = \"6.18.0-test\"\nappend = \"mitigations=off\"\n"),
        &[],
    );
    let reboot = h.reboot_command(true);
    h.worker_once(&["--reboot-command", &reboot]);
    assert_eq!(h.job(id).state, JobState::Rebooting);
    h.worker_once(&["--reboot-command", &reboot]);
    let j = h.job(id);
    assert_eq!(j.state, JobState::Failed);
    let e = j.error.unwrap();
    assert!(
        e.contains("asked for 6.18.0-test, running 6.1.0-base"),
        "{e}"
    );
    assert!(e.contains("mitigations=off is not on /proc/cmdline"), "{e}");
    // Not retried: the next start has nothing to do and boots nothing.
    h.worker_once(&["--reboot-command", &reboot]);
    assert_eq!(h.job(id).state, JobState::Failed);
    assert_eq!(h.boots().len(), 1);
    assert!(h.job(id).run_id.is_none());
    let (table, _) = common::ok(h.cmd().arg("jobs").output().unwrap());
    assert!(table.contains("running 6.1.0-base"), "{table}");
}

#[test]
fn a_host_that_never_comes_back_loses_the_job_at_its_boot_timeout() {
    if !have_postgres("a_host_that_never_comes_back") {
        return;
    }
    let h = Host::start();
    let plan = format!("{PLAN}boot_timeout = \"2s\"\n[kernel]\nrelease = \"6.18.0-test\"\n");
    let id = h.submit(&plan, &["--attempts", "2"]);
    let reboot = h.reboot_command(false);
    let args = ["--reboot-command", reboot.as_str()];
    h.worker_once(&args);
    let j = h.job(id);
    assert_eq!(j.state, JobState::Rebooting);
    assert_eq!(j.boot_into.as_deref(), Some("release 6.18.0-test"));
    let (table, _) = common::ok(h.cmd().arg("jobs").output().unwrap());
    assert!(
        table.contains("booting into release 6.18.0-test; lost unless its host is back by"),
        "{table}"
    );
    // No worker starts after the boot: past the deadline the job is lost.
    let lost = wait_until("the job lost", || {
        Some(h.job(id)).filter(|j| j.state == JobState::Lost)
    });
    let e = lost.error.unwrap();
    for says in [
        "host a did not come back from its boot into release 6.18.0-test: it waited 00:00:0",
        "past its boot_timeout of 00:00:02",
        "after attempt 1 of 2; queued again",
    ] {
        assert!(e.contains(says), "{says:?} in {e}");
    }
    let (table, _) = common::ok(h.cmd().arg("jobs").output().unwrap());
    assert!(table.contains("did not come back"), "{table}");
    // Claimed again as any lost job, it boots again (the host is back in
    // its old kernel); lost on its last attempt, it fails.
    h.boot_into(BASE, "root=/dev/sda1");
    h.worker_once(&args);
    let j = h.job(id);
    assert_eq!((j.state, j.attempts), (JobState::Rebooting, 2));
    assert_eq!(h.boots().len(), 2);
    let failed = wait_until("the job failed", || {
        Some(h.job(id)).filter(|j| j.state == JobState::Failed)
    });
    assert!(
        failed
            .error
            .unwrap()
            .contains("after attempt 2 of 2; not retried")
    );
    assert!(failed.finished.is_some());
    // A worker that starts now has nothing to take back.
    let err = h.worker_once(&args);
    assert!(!err.contains("back after the boot"), "{err}");
    assert_eq!(h.boots().len(), 2);
    // Bad timeouts are refused at submit.
    for (bad, says) in [
        (
            "boot_timeout = \"20\"\n[kernel]\nrelease = \"6.18\"\n",
            "not a time a boot may take",
        ),
        (
            "boot_timeout = 90\n[kernel]\nrelease = \"6.18\"\n",
            "boot_timeout = 90",
        ),
        ("boot_timeout = \"5m\"\n", "for a job that boots a kernel"),
    ] {
        h.refused(&format!("{PLAN}{bad}"), says);
    }
}

#[test]
fn a_version_8_store_gains_the_boot_deadline_and_keeps_its_jobs() {
    if !have_postgres("a_version_8_store_gains_the_boot_deadline") {
        return;
    }
    let h = Host::start();
    let id = h.submit(&format!("{PLAN}[kernel]\nrelease = \"6.18.0-test\"\n"), &[]);
    // As osbench before boot_timeout left it.
    h.pg.sql(
        "ALTER TABLE jobs DROP COLUMN boot_into, DROP COLUMN boot_started,
             DROP COLUMN boot_deadline;
         UPDATE osbench_schema SET version = 8",
    );
    let (table, _) = common::ok(h.cmd().arg("jobs").output().unwrap());
    assert!(table.contains(" queued "), "{table}");
    assert_eq!(
        h.pg.sql("SELECT version FROM osbench_schema"),
        format!("{}\n", osbench::store::SCHEMA_VERSION)
    );
    // The job boots with a deadline, the default 30 minutes away.
    let reboot = h.reboot_command(false);
    h.worker_once(&["--reboot-command", &reboot]);
    assert_eq!(h.job(id).state, JobState::Rebooting);
    let minutes =
        h.pg.sql("SELECT round(EXTRACT(EPOCH FROM boot_deadline - boot_started) / 60) FROM jobs");
    assert_eq!(minutes.trim(), "30");
}

#[test]
fn a_kernel_file_missing_on_the_host_fails_the_job_with_its_path() {
    if !have_postgres("a_kernel_file_missing") {
        return;
    }
    let h = Host::start();
    let missing = h.dir.path().join("vmlinuz-not-here");
    let id = h.submit(
        &format!(
            "{PLAN}[kernel]\nkernel = \"{}\"\nrelease = \"6.18.0\"\n",
            missing.display()
        ),
        &[],
    );
    let reboot = h.reboot_command(false);
    h.worker_once(&["--reboot-command", &reboot]);
    let j = h.job(id);
    assert_eq!(j.state, JobState::Failed);
    let e = j.error.unwrap();
    assert!(
        e.contains(&missing.display().to_string()) && e.contains("does not exist on this host"),
        "{e}"
    );
    assert!(h.boots().is_empty(), "nothing booted");
    // A relative path is refused at submit already.
    h.refused(
        &format!("{PLAN}[kernel]\nkernel = \"vmlinuz\"\n"),
        "not an absolute path",
    );
}

#[test]
fn two_kernels_over_two_boot_rounds_merge_into_one_paired_document() {
    if !have_postgres("two_kernels_over_two_boot_rounds") {
        return;
    }
    let h = Host::start();
    let id = h.submit(&two_kernels(PLAN), &["--label", "bootcmp"]);
    let reboot = h.reboot_command(false);
    // One start to stage the first boot, then one after each of the 4 boots.
    for start in 0..5 {
        assert_ne!(h.job(id).state, JobState::Done, "done after {start} starts");
        h.worker_once(&["--reboot-command", &reboot]);
    }
    let j = h.job(id);
    assert_eq!(j.state, JobState::Done, "{:?}", j.error);
    let boots = h.boots();
    assert_eq!(
        boots.len(),
        4,
        "every step boots, even into the running kernel"
    );
    for kernel in [BASE, "6.18.0-patched"] {
        let n = boots.iter().filter(|b| b.ends_with(kernel)).count();
        assert_eq!(n, 2, "{boots:?}");
    }
    let store = h.store();
    let doc = store.document(j.run_id.unwrap()).unwrap().unwrap();
    let configs: Vec<&str> = doc.run.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(configs, ["base", "patched"]);
    assert_eq!(doc.run.schedule.len(), 2);
    assert!(
        !doc.comparisons.is_empty(),
        "the paired comparison is attached"
    );
    assert!(j.error.unwrap().contains("merged from the runs of 4 boots"));
    // Each boot's run is kept, with its step.
    let steps = boot_steps(&store);
    assert_eq!(steps.len(), 4, "{steps:?}");
    // `compare --by host` reads the merged document as a run's configurations.
    let dir = h.dir.path().join("merged");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("a.json"), serde_json::to_string(&doc).unwrap()).unwrap();
    let record = h.dir.path().join("compare.json");
    let (table, _) = common::ok(
        h.cmd()
            .arg("compare")
            .arg(&dir)
            .args(["--by", "host", "--json"])
            .arg(&record)
            .output()
            .unwrap(),
    );
    assert!(table.contains("patched"), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&record).unwrap()).unwrap();
    assert!(table.contains("Paired over 2 rounds"), "{table}");
    let compared = &json["configurations"][0]["hosts"][0]["comparisons"][0];
    assert_eq!(compared["candidate"], "patched", "{json}");
    assert_eq!(compared["replicated"]["unit"], "rounds", "{json}");
    // Each boot's run has a label of its own, so the job's label names the
    // merged document, which `compare LABEL` finds in the store.
    let labels: Vec<String> = store
        .list(&Default::default())
        .unwrap()
        .iter()
        .filter_map(|r| store.document(r.id).unwrap())
        .filter(|d| d.run.meta.contains_key("boot_step"))
        .filter_map(|d| d.run.label)
        .collect();
    assert_eq!(labels.len(), 4, "{labels:?}");
    assert!(
        labels.iter().all(|l| l.starts_with("bootcmp boot ")),
        "{labels:?}"
    );
    let (table, _) = common::ok(
        h.cmd()
            .args(["compare", "bootcmp", "--by", "host"])
            .output()
            .unwrap(),
    );
    assert!(table.contains("Paired over 2 rounds"), "{table}");
}

#[test]
fn a_boots_run_kept_in_the_spool_gives_the_job_back_and_that_boot_runs_again() {
    if !have_postgres("a_boots_run_kept_in_the_spool") {
        return;
    }
    let h = Host::start();
    // Each boot's command waits for `go`: the store is stopped while the
    // first boot's run is under way, whatever the machine's load.
    let go = h.dir.path().join("go");
    let slow = format!(
        "time = [\"sh -c 'until [ -e {} ]; do sleep 0.02; done'\"]\nruns = 2\nwarmup = 0\n",
        go.display()
    );
    let id = h.submit(&two_kernels(&slow), &[]);
    let reboot = h.reboot_command(false);
    let args = ["--reboot-command", reboot.as_str()];
    h.worker_once(&args); // stages the first boot
    let w = Running::start(&h, &["--reboot-command", &reboot, "--lease", "30"]);
    wait_until("the first boot's run", || {
        (h.job(id).state == JobState::Running).then_some(())
    });
    h.pg.halt();
    fs::write(&go, "").unwrap();
    // The run's file is in the spool before osbench tries the store: wait
    // for the worker to say that the store refused it.
    wait_until("the boot's run kept in the spool", || {
        w.log()
            .contains("its run could not be stored; it waits in")
            .then_some(())
    });
    h.pg.resume();
    // Sent, the job given back, that boot run again, then the next boot staged.
    wait_until("the second boot staged", || {
        (h.job(id).state == JobState::Rebooting && h.boots().len() == 2).then_some(())
    });
    let steps = boot_steps(&h.store());
    assert_eq!(steps, ["0", "0"], "{}", w.log());
    assert!(
        w.log().contains("now that the store is back"),
        "{}",
        w.log()
    );
    drop(w);
    for _ in 0..3 {
        h.worker_once(&args);
    }
    let j = h.job(id);
    assert_eq!(j.state, JobState::Done, "{:?}", j.error);
    assert!(j.error.unwrap().contains("merged from the runs of 4 boots"));
    assert_eq!(boot_steps(&h.store()).len(), 5, "one boot measured twice");
}

#[test]
fn boot_rounds_of_a_time_plan_merge_into_one_paired_document() {
    if !have_postgres("boot_rounds_of_a_time_plan") {
        return;
    }
    let h = Host::start();
    let plan = "time = [\"true\", \"sh -c 'exit 0'\"]\nruns = 3\nprepare = \"true\"\n";
    let id = h.submit(&two_kernels(plan), &["--label", "timecmp"]);
    let reboot = h.reboot_command(false);
    for _ in 0..5 {
        h.worker_once(&["--reboot-command", &reboot]);
    }
    let j = h.job(id);
    assert_eq!(j.state, JobState::Done, "{:?}", j.error);
    assert_eq!(h.boots().len(), 4);
    let store = h.store();
    let doc = store.document(j.run_id.unwrap()).unwrap().unwrap();
    // Each command under each kernel, with every boot's runs.
    let series: Vec<(&str, &str, usize)> = doc
        .series
        .iter()
        .map(|s| (s.key.case.as_str(), s.key.config.as_str(), s.samples.len()))
        .collect();
    assert!(doc.series.iter().all(|s| s.runs.len() == 6));
    assert_eq!(
        series,
        [
            ("true", "base", 6),
            ("sh -c 'exit 0'", "base", 6),
            ("true", "patched", 6),
            ("sh -c 'exit 0'", "patched", 6),
        ]
    );
    // The time settings kept, each kernel's floor said.
    let time = doc.run.time.as_ref().expect("a merged `time` run");
    assert_eq!(time.prepare.as_deref(), Some("true"));
    assert!(time.floor.is_none() && time.rss_floor_kb > 0);
    let floors = doc
        .run
        .audit
        .iter()
        .find(|a| a.contains("floor of starting"));
    let floors = floors.expect("the floors in the audit");
    assert!(
        floors.contains("base ") && floors.contains("patched "),
        "{floors}"
    );
    assert_eq!(
        doc.comparisons.len(),
        2,
        "one paired comparison per command"
    );
    assert_eq!(boot_steps(&store).len(), 4);
    let (table, _) = common::ok(
        h.cmd()
            .args(["compare", "timecmp", "--by", "host"])
            .output()
            .unwrap(),
    );
    assert!(
        table.contains("Paired over 2 rounds") && table.contains("command sh -c 'exit 0'"),
        "{table}"
    );
    let html = h.dir.path().join("report.html");
    common::ok(
        h.cmd()
            .args(["report", "timecmp", "--html"])
            .arg(&html)
            .output()
            .unwrap(),
    );
    let html = fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("Command 3: true [patched]   (no shell, 6 runs)"),
        "{html}"
    );
}

/// D4: a reboot command that hangs is ended by SIGTERM (the worker exits
/// 130 at once, the job queued again, not left `rebooting`), and by its
/// timeout (`$OSBENCH_REBOOT_TIMEOUT`; the job failed, saying so).
#[test]
fn a_hanging_reboot_command_ends_at_a_stop_signal_or_its_timeout() {
    if !have_postgres("a_hanging_reboot_command") {
        return;
    }
    let h = Host::start();
    let plan = format!("{PLAN}[kernel]\nrelease = \"6.99.0-test\"\n");
    let id = h.submit(&plan, &[]);
    let mut w = Running::start(&h, &["--reboot-command", "sleep 600"]);
    wait_until("the job rebooting", || {
        (h.job(id).state == JobState::Rebooting).then_some(())
    });
    // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
    unsafe { libc::kill(w.child.id() as libc::pid_t, libc::SIGTERM) };
    let started = Instant::now();
    let status = wait_until("the worker to exit", || w.child.try_wait().unwrap());
    assert!(started.elapsed() < Duration::from_secs(10), "{}", w.log());
    assert_eq!(status.code(), Some(130), "{}", w.log());
    let job = h.job(id);
    assert_eq!(job.state, JobState::Queued, "{}", w.log());
    assert!(!w.log().contains("no longer this worker's"), "{}", w.log());
    drop(w);
    let err = h
        .cmd()
        .env("OSBENCH_REBOOT_TIMEOUT", "1")
        .args([
            "worker", "--name", "a", "--once", "--poll", "0.2", "--spool",
        ])
        .arg(h.dir.path().join("spool"))
        .args(["--reboot-command", "sleep 600"])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&err.stderr);
    let job = h.job(id);
    assert_eq!(job.state, JobState::Failed, "{log}");
    let e = job.error.unwrap();
    assert!(e.contains("timeout") && e.contains("did not reboot"), "{e}");
}

/// D7: a kernel job that fails after its boot (its set-up fails), and one
/// cancelled while its host reboots, still boot the host back into its
/// kernel: the next jobs do not run on the test kernel; a job that finds
/// the host on a kernel booted for another (which did not ask to boot
/// back) is warned of it.
#[test]
fn a_kernel_job_failed_or_cancelled_after_its_boot_still_boots_back() {
    if !have_postgres("a_kernel_job_failed_or_cancelled") {
        return;
    }
    let h = Host::start();
    let reboot = h.reboot_command(false);
    let back = format!(
        "echo \"job $OSBENCH_BOOT_JOB back\" >> {}",
        h.marker().display()
    );
    let args = ["--reboot-command", &reboot, "--boot-back-command", &back];
    let kernel = "[kernel]\nrelease = \"6.18.0-test\"\nboot_back = true\n";
    let failing = format!(
        "{PLAN}[[config]]\nname = \"a\"\nsetup = \"exit 3\"\n[[config]]\nname = \"b\"\n{kernel}"
    );
    let id = h.submit(&failing, &[]);
    h.worker_once(&args);
    assert_eq!(h.job(id).state, JobState::Rebooting);
    let err = h.worker_once(&args);
    assert_eq!(h.job(id).state, JobState::Failed, "{err}");
    assert_eq!(
        h.boots().last().unwrap(),
        &format!("job {id} back"),
        "{err}"
    );
    h.boot_into(BASE, "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1");

    let id = h.submit(&format!("{PLAN}{kernel}"), &[]);
    h.worker_once(&args);
    assert_eq!(h.job(id).state, JobState::Rebooting);
    common::ok(
        h.cmd()
            .args(["jobs", "--cancel", &id.to_string()])
            .output()
            .unwrap(),
    );
    let err = h.worker_once(&args);
    assert!(
        err.contains("the host runs the kernel booted for it"),
        "{err}"
    );
    assert_eq!(
        h.boots().last().unwrap(),
        &format!("job {id} back"),
        "{err}"
    );
    h.boot_into(BASE, "BOOT_IMAGE=/boot/vmlinuz root=/dev/sda1");

    // A kernel job that does not ask to boot back leaves the host on its
    // kernel: the next job is warned of it.
    let stay = h.submit(&format!("{PLAN}[kernel]\nrelease = \"6.18.0-test\"\n"), &[]);
    h.worker_once(&args);
    h.worker_once(&args);
    assert_eq!(h.job(stay).state, JobState::Done);
    let plain = h.submit(PLAN, &[]);
    let err = h.worker_once(&args);
    assert_eq!(h.job(plain).state, JobState::Done, "{err}");
    assert!(
        err.contains(&format!(
            "the kernel booted for job {stay}, not its own {BASE}"
        )),
        "{err}"
    );
}
