//! Background loads around a case: started before its set-up and first
//! timed sample, stopped after its last sample and tear-down, one fresh
//! start per case (never SIGSTOPped and resumed: a stopped load would still
//! hold its memory, its file and its place in the run queues), so a load
//! never runs while another case, a configuration's set-up or tear-down, or
//! the perf counting and profiling passes run.
//!
//! Each load runs in a process group of its own, listed with the
//! [`super::warden`] (which SIGKILLs it if osbench dies, even by SIGKILL).
//! osbench's own loads (`builtin`) are forked children of osbench (named
//! `osbench-load`, also killed by the kernel when their parent dies:
//! `PR_SET_PDEATHSIG`) that count their operations in shared memory; a
//! `cmd:` load is `sh -c COMMAND`, its stdout and stderr discarded, whose
//! throughput is the CPU time (user + system) of its process group, read
//! from /proc at the stop: the live members' own time and that of the
//! children they reaped — not that of processes which left the group or
//! were reaped by someone else.
//!
//! Stopping: the count is read, then the group gets SIGTERM and has
//! [`STOP_GRACE`] to end; what is left is SIGKILLed and named in the run's
//! warnings. A load that could not start, or whose tasks ended before the
//! stop, is reported ([`LoadRun::failed`]) so that the case is flagged
//! `load-failed` rather than silently measured unloaded. A case's rusage
//! counters leave the loads' tasks out (`counters::is_load_task`). Left out: loads
//! inside guests are started by the guest's osbench (the run request
//! carries them), not here; the placement of a load's tasks is a CPU mask
//! (`@CPUS`), not one CPU per task.

mod builtin;
mod group;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use crate::document::{LoadKind, LoadRun, LoadSpec};
use crate::measure::counters;
use crate::measure::supervise::Supervisor;
use crate::measure::warden;

/// How long a load has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(1);

/// How long osbench waits for a builtin load's tasks to say they run.
const READY_WAIT: Duration = Duration::from_secs(2);

/// Now, in ns since the Unix epoch (the clock the document's load windows use).
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The loads of one case, running.
pub struct Loads {
    running: Vec<Running>,
}

impl Loads {
    /// Starts every load of `specs` (none: nothing runs). A load that cannot
    /// start is kept as a failure to report at [`Loads::stop`], never an
    /// error: the case is measured and flagged.
    pub fn start(specs: &[LoadSpec]) -> Self {
        if !specs.is_empty() {
            warden::ensure_started();
        }
        let running = specs.iter().map(Running::start).collect();
        Self { running }
    }

    /// Stops every load (SIGTERM, then SIGKILL after [`STOP_GRACE`]), reaps
    /// it and says what it did; `measured` is the case's measuring window
    /// (Unix ns), recorded beside the load's own.
    pub fn stop(mut self, measured: (u64, u64)) -> Vec<LoadRun> {
        std::mem::take(&mut self.running)
            .into_iter()
            .map(|r| r.stop(measured))
            .collect()
    }
}

impl Drop for Loads {
    /// Loads not stopped (an error or a panic on the way): killed and reaped.
    fn drop(&mut self) {
        for r in &mut self.running {
            r.kill();
        }
    }
}

/// What runs a load.
enum Tasks {
    /// osbench's own: forked children counting in `counters`.
    Builtin {
        supervisor: Supervisor,
        counters: builtin::Counters,
    },
    /// `sh -c COMMAND`, the leader of its group.
    Command { leader: libc::pid_t },
    /// It could not start: why.
    NotStarted(String),
}

/// One load, running.
struct Running {
    spec: LoadSpec,
    tasks: Tasks,
    started: Instant,
    started_unix_ns: u64,
}

impl Running {
    fn start(spec: &LoadSpec) -> Self {
        let started_unix_ns = unix_ns();
        let started = Instant::now();
        let tasks = match &spec.kind {
            LoadKind::Cmd { command } => {
                group::spawn_command(command, &spec.cpus).map(|leader| Tasks::Command { leader })
            }
            _ => builtin::start(spec).map(|(supervisor, counters)| Tasks::Builtin {
                supervisor,
                counters,
            }),
        }
        .unwrap_or_else(Tasks::NotStarted);
        if let Tasks::Builtin { counters, .. } = &tasks {
            counters.await_ready(READY_WAIT);
        }
        let running = Self {
            spec: spec.clone(),
            tasks,
            started,
            started_unix_ns,
        };
        counters::list_load_tasks(&running.children(), true);
        running
    }

    /// Its tasks that are osbench's children.
    fn children(&self) -> Vec<libc::pid_t> {
        match &self.tasks {
            Tasks::Builtin { supervisor, .. } => supervisor.children().to_vec(),
            Tasks::Command { leader } => vec![*leader],
            Tasks::NotStarted(_) => Vec::new(),
        }
    }

    /// The process group, while there is one.
    fn pgid(&self) -> Option<libc::pid_t> {
        match &self.tasks {
            Tasks::Builtin { supervisor, .. } => supervisor.pgid(),
            Tasks::Command { leader } => Some(*leader),
            Tasks::NotStarted(_) => None,
        }
    }

    fn stop(mut self, (from, to): (u64, u64)) -> LoadRun {
        let count = match &self.tasks {
            Tasks::Builtin { counters, .. } => counters.total() as f64,
            Tasks::Command { leader } => group::cpu_seconds(*leader),
            Tasks::NotStarted(_) => 0.0,
        };
        let seconds = self.started.elapsed().as_secs_f64();
        let mut failed = self.ended_early();
        let killed = self.pgid().and_then(|g| group::terminate(g, STOP_GRACE));
        // Once nothing of it runs: whatever it did is before this.
        let stopped_unix_ns = unix_ns();
        let killed = killed.map(|left| {
            format!(
                "load '{}' did not stop within {} s of SIGTERM; killed with SIGKILL ({left})",
                self.spec,
                STOP_GRACE.as_secs()
            )
        });
        if let Some(status) = self.reap() {
            failed = failed.map(|f| format!("{f} ({status})"));
        }
        LoadRun {
            spec: self.spec.to_string(),
            unit: self.spec.counts().to_string(),
            count,
            seconds,
            started_unix_ns: self.started_unix_ns,
            stopped_unix_ns,
            measured_from_unix_ns: from,
            measured_to_unix_ns: to,
            failed,
            killed,
        }
    }

    /// Why the load did not run to the stop: it never started, or (some
    /// of) its tasks ended already.
    fn ended_early(&self) -> Option<String> {
        let spec = &self.spec;
        match &self.tasks {
            Tasks::NotStarted(why) => Some(format!(
                "load '{spec}' could not be started ({why}); the case ran without it"
            )),
            Tasks::Builtin { supervisor, .. } => {
                let ended = supervisor
                    .children()
                    .iter()
                    .filter(|&&p| group::ended(p))
                    .count();
                (ended > 0).then(|| {
                    format!(
                        "{ended} of the {} tasks of load '{spec}' ended before the case's last \
                         sample; the case ran partly without it",
                        supervisor.children().len()
                    )
                })
            }
            Tasks::Command { leader } => group::ended(*leader).then(|| {
                format!(
                    "load '{spec}' exited before the case's last sample; the case ran partly or \
                     wholly without it: run the command by hand to see why"
                )
            }),
        }
    }

    /// Reaps what is left (all of it ended or killed); a command's exit status in words.
    fn reap(&mut self) -> Option<String> {
        let group = self.pgid();
        counters::list_load_tasks(&self.children(), false);
        if let Some(g) = group {
            warden::release(g);
        }
        match std::mem::replace(&mut self.tasks, Tasks::NotStarted(String::new())) {
            Tasks::Builtin { mut supervisor, .. } => {
                supervisor.kill_all();
                None
            }
            Tasks::Command { leader } => Some(group::reap(leader)),
            Tasks::NotStarted(_) => None,
        }
    }

    /// Kills and reaps the load at once (an unstopped load being dropped).
    fn kill(&mut self) {
        if let Some(g) = self.pgid() {
            group::kill(g);
        }
        let _ = self.reap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `spec` for `ms` and stops it.
    fn run_for(spec: &str, ms: u64) -> LoadRun {
        let loads = Loads::start(&[spec.parse().unwrap()]);
        std::thread::sleep(Duration::from_millis(ms));
        let mut runs = loads.stop((1, 2));
        runs.remove(0)
    }

    /// Live processes in group `pgid`.
    fn live(pgid: libc::pid_t) -> usize {
        group::live_members(pgid)
    }

    #[test]
    fn every_builtin_load_counts_what_it_does_and_leaves_nothing() {
        for spec in ["spin:2@0", "hackbench:1", "memstream:1", "iostream"] {
            let loads = Loads::start(&[spec.parse().unwrap()]);
            let pgid = loads.running[0].pgid().expect("started");
            // Its tasks are not the case's: rusage leaves them out.
            let tasks = loads.running[0].children();
            assert!(!tasks.is_empty() && tasks.iter().all(|&p| counters::is_load_task(p)));
            std::thread::sleep(Duration::from_millis(300));
            let run = loads.stop((1, 2)).remove(0);
            assert!(
                !tasks.iter().any(|&p| counters::is_load_task(p)),
                "{spec}: still listed"
            );
            assert!(run.count > 0.0, "{spec}: {run:?}");
            assert_eq!(
                (run.failed.as_deref(), run.killed.as_deref()),
                (None, None),
                "{spec}"
            );
            assert_eq!(run.unit, spec.parse::<LoadSpec>().unwrap().counts());
            assert!(run.started_unix_ns < run.stopped_unix_ns);
            assert_eq!((run.measured_from_unix_ns, run.measured_to_unix_ns), (1, 2));
            assert_eq!(live(pgid), 0, "{spec} left processes");
        }
    }

    #[test]
    fn a_command_load_counts_its_cpu_time() {
        let run = run_for("cmd:while :; do :; done", 400);
        assert!(run.count > 0.0 && run.unit == "cpu-s", "{run:?}");
        assert!(run.failed.is_none() && run.killed.is_none(), "{run:?}");
    }

    #[test]
    fn a_load_that_ends_early_or_never_starts_is_reported() {
        let early = run_for("cmd:exit 3", 200);
        let why = early.failed.expect("an early exit is reported");
        assert!(
            why.contains("exited before") && why.contains("exit status 3"),
            "{why}"
        );
        let missing = run_for("cmd:no-such-command-osbench", 200);
        assert!(missing.failed.unwrap().contains("did not find the command"));
        let nowhere = run_for("iostream:/nonexistent/osbench", 50);
        let why = nowhere
            .failed
            .expect("a load that cannot start is reported");
        assert!(
            why.contains("could not be started") && why.contains("iostream:DIR"),
            "{why}"
        );
    }

    #[test]
    fn a_load_that_ignores_sigterm_is_killed_and_named_after_the_grace() {
        let loads = Loads::start(&["cmd:trap '' TERM; while :; do sleep 0.01; done"
            .parse()
            .unwrap()]);
        let pgid = loads.running[0].pgid().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let asked = Instant::now();
        let run = loads.stop((1, 2)).remove(0);
        let took = asked.elapsed();
        let killed = run.killed.expect("a load that ignores SIGTERM is killed");
        assert!(
            killed.contains("SIGKILL") && killed.contains("cmd:trap"),
            "{killed}"
        );
        // The grace, not a timing: it waited for it, and not for ever.
        assert!(took >= STOP_GRACE && took < 10 * STOP_GRACE, "{took:?}");
        assert_eq!(live(pgid), 0);
    }

    #[test]
    fn dropped_loads_are_killed_and_reaped() {
        let loads = Loads::start(&["spin:1".parse().unwrap(), "cmd:sleep 30".parse().unwrap()]);
        let groups: Vec<_> = loads.running.iter().filter_map(Running::pgid).collect();
        assert_eq!(groups.len(), 2);
        drop(loads);
        assert!(groups.iter().all(|&g| live(g) == 0));
    }
}
