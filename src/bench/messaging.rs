//! `messaging`: hackbench's workload (rt-tests `src/hackbench/hackbench.c`,
//! `perf bench sched messaging`'s `tools/perf/bench/sched-messaging.c`).
//!
//! `groups` groups of `fds` receivers and `fds` senders. Each receiver owns
//! the read end of its own AF_UNIX stream socket pair (or pipe); the group's
//! senders share all the write ends, and each writes `loops` messages of
//! `datasize` bytes to every receiver of its group, round robin; each receiver
//! reads `fds × loops` messages. Short reads and writes are continued.
//! Workers are processes (forked; the parent closes its copies of their ends,
//! as hackbench does) or threads with small stacks (hackbench `-T`).
//!
//! One sample = one run, conducted, as in hackbench, by a fresh process: a
//! *conductor* forked from osbench for each run creates the workers (its
//! children or threads), each of which writes one byte to a "ready" pair and
//! waits in poll() on a "wake" pair; it then tells osbench it is ready
//! (untimed). Timed: osbench writes a go byte; the conductor writes the single
//! (never consumed) wake byte, reaps (or joins) every worker, checks their
//! message counts, reports the end and exits; osbench reaps it — hackbench's
//! interval plus a pipe wake-up and the conductor's exit (well under a
//! millisecond; reaping it brings the workers' CPU time, which the conductor
//! collected, into osbench's accounts). Workers
//! started by a process that had already run a hackbench run are up to 45 %
//! faster on pipe-heavy shapes (measured on the development VM with a
//! C program too, so it is the kernel's doing, not osbench's), which is why
//! no process runs two. Unit: seconds per run. "hackbench N" is
//! `messaging:groups=N`; the report adds hackbench's `Time: S.mmm` line.
//!
//! On a stop, the signal handler SIGKILLs the conductor's process group,
//! which its worker processes join (threads die with it); osbench is a child
//! subreaper, so it reaps the workers the killed conductor leaves.
//!
//! Beyond hackbench: every worker's message count is checked after each run
//! (shared counters), a failed worker is an error, and the ready/wake pairs
//! and the message pairs are of the same kind, as in hackbench. Left out:
//! rt-tests' `-i` (TCP) and `-F` (SCHED_FIFO for the main thread).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::util::fdio::{
    pipe, read_exact, read_message, read_or_stop, retry, socketpair, write_all,
};
use super::util::ring::{Helpers, Mode, SharedCounters};
use super::{BenchDef, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::interrupt;
use crate::measure::placement::{Placement, ShortSlice, set_slice};
use crate::measure::supervise::{Exit, Supervisor, ignore_sigpipe_in_child};

pub static DEF: BenchDef = BenchDef {
    name: "messaging",
    summary: "hackbench: groups of senders and receivers passing messages (\"hackbench N\" = groups=N)",
    unit: Unit::S,
    params: &[
        ParamSpec {
            name: "groups",
            help: "groups of senders and receivers",
            kind: ParamKind::Int {
                min: 1,
                max: 10_000,
            },
            default: "10",
        },
        ParamSpec {
            name: "fds",
            help: "receivers (and senders) per group",
            kind: ParamKind::Int { min: 1, max: 1_000 },
            default: "20",
        },
        ParamSpec {
            name: "loops",
            help: "messages each sender sends to each receiver",
            kind: ParamKind::Int {
                min: 1,
                max: 10_000_000,
            },
            default: "100",
        },
        ParamSpec {
            name: "datasize",
            help: "bytes per message",
            kind: ParamKind::Int {
                min: 1,
                max: 65_536,
            },
            default: "100",
        },
        ParamSpec {
            name: "transport",
            help: "AF_UNIX stream socket pairs (hackbench's default) or pipes (-p)",
            kind: ParamKind::Choice(&["socket", "pipe"]),
            default: "socket",
        },
        ParamSpec {
            name: "mode",
            help: "workers are processes or threads (-T)",
            kind: ParamKind::Choice(&["processes", "threads"]),
            default: "processes",
        },
    ],
    // One default case, hackbench's own defaults, so that `messaging:groups=50`
    // is exactly `hackbench -g 50` and `messaging:transport=pipe` is `hackbench -p`.
    case_name,
    op: |p| {
        format!(
            "one hackbench run: {} tasks, {} messages of {} B, wake byte to last worker reaped",
            tasks(p) - 1,
            p.int("groups") * p.int("fds") * p.int("fds") * p.int("loops"),
            p.int("datasize")
        )
    },
    anchor: |p| format!("hackbench {}", hackbench_args(p)),
    differs: "each run has a fresh conductor process, as each hackbench invocation is one, and the timed interval adds a pipe wake-up, a check of every worker's message count and the conductor's exit (well under a millisecond); tasks, messages and thread stacks are hackbench's.",
    tasks,
    setup,
    sampling: Sampling::WholeRuns,
    ..BenchDef::DEFAULTS
};

/// hackbench's own options for the case, e.g. "-g 10 -p -T".
pub fn hackbench_args(p: &Params) -> String {
    let mut args = format!("-g {}", p.int("groups"));
    for (key, default, flag) in [
        ("fds", 20, "-f"),
        ("loops", 100, "-l"),
        ("datasize", 100, "-s"),
    ] {
        if p.int(key) != default {
            args.push_str(&format!(" {flag} {}", p.int(key)));
        }
    }
    if p.get("transport") == "pipe" {
        args.push_str(" -p");
    }
    if p.get("mode") == "threads" {
        args.push_str(" -T");
    }
    args
}

/// "g10/socket/processes", plus what differs from hackbench's defaults.
fn case_name(p: &Params) -> String {
    let mut name = format!(
        "g{}/{}/{}",
        p.int("groups"),
        p.get("transport"),
        p.get("mode")
    );
    for (key, default) in [("fds", 20), ("loops", 100), ("datasize", 100)] {
        if p.int(key) != default {
            name.push_str(&format!("/{key}={}", p.int(key)));
        }
    }
    name
}

fn tasks(p: &Params) -> usize {
    (p.int("groups") * p.int("fds") * 2) as usize + 1
}

#[derive(Debug, Clone, Copy)]
struct Shape {
    groups: usize,
    fds: usize,
    loops: usize,
    datasize: usize,
    pipes: bool,
}

impl Shape {
    fn messages_per_worker(&self) -> u64 {
        (self.fds * self.loops) as u64
    }
    fn workers(&self) -> usize {
        self.groups * self.fds * 2
    }
}

/// A pair of connected descriptors: (read end, write end).
fn fdpair(pipes: bool) -> Result<(OwnedFd, OwnedFd)> {
    if pipes { pipe() } else { socketpair() }
}

struct Messaging {
    shape: Shape,
    mode: Mode,
    placement: Placement,
    run: Option<Run>,
    /// The timing thread's own scheduler slice while the case lasts.
    slice: ShortSlice,
}

/// One run: its conductor, started, with every worker ready.
struct Run {
    /// The conductor, in a process group of its own that its worker
    /// processes join; the signal handler SIGKILLs that group on a stop.
    conductor: Supervisor,
    /// One byte here starts the run.
    go: OwnedFd,
    /// The conductor's reports (see [`Report`]).
    reports: OwnedFd,
    /// How the conductor ended, once the run was timed and it was reaped.
    exit: Option<Exit>,
}

/// What a conductor writes to osbench: one byte each — ready, then done
/// (every worker reaped, every count right) — and at any point
/// [`Report::FAILED`] followed by the error message, up to end of file.
struct Report;

impl Report {
    const READY: u8 = b'R';
    const DONE: u8 = b'D';
    const FAILED: u8 = b'E';
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    let shape = Shape {
        groups: p.int("groups") as usize,
        fds: p.int("fds") as usize,
        loops: p.int("loops") as usize,
        datasize: p.int("datasize") as usize,
        pipes: p.get("transport") == "pipe",
    };
    Ok(Box::new(Messaging {
        shape,
        mode: Mode::parse(p.get("mode")),
        placement: placement.clone(),
        run: None,
        slice: ShortSlice::take(),
    }))
}

impl Messaging {
    /// Starts the next run's conductor and waits until it reports every worker ready.
    fn start(&mut self) -> Result<()> {
        self.run = None;
        // A conductor killed on a stop leaves its worker processes to osbench
        // (they die of the same SIGKILL), so that osbench, not init, reaps them.
        // SAFETY: prctl with an integer argument only changes this process's flag.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
        let (go_r, go_w) = pipe()?;
        let (reports_r, reports_w) = pipe()?;
        let mut conductor = Supervisor::new("messaging").killed_on_stop();
        let (shape, mode, placement) = (self.shape, self.mode, self.placement.clone());
        let keep = [go_r.as_raw_fd(), reports_w.as_raw_fd()];
        let slice = self.slice.before;
        // The closure owns the conductor's ends; the parent's copies close when fork drops it.
        conductor.fork(self.placement.cpu_of(0), &keep, move || {
            // Workers get the slice osbench was started with, as hackbench's would.
            set_slice(slice);
            conduct(shape, mode, &placement, go_r, reports_w)
        })?;
        let run = self.run.insert(Run {
            conductor,
            go: go_w,
            reports: reports_r,
            exit: None,
        });
        run.expect(Report::READY)
    }

    /// Starts the run and waits until its conductor has reaped every worker
    /// and exited; this is the timed part. Reaping the conductor makes the
    /// workers' CPU time, which it collected, osbench's children's.
    fn go(&mut self) -> Result<()> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| Error::Measure("messaging run without prepare".into()))?;
        write_all(run.go.as_raw_fd(), &[1]).map_err(|e| Error::io("starting the run", e))?;
        run.exit = run.conductor.reap_all()?.first().copied();
        Ok(())
    }

    /// Ends the current run, untimed: a timed one's conductor must have
    /// reported its end (every count right) and exited 0; one never started
    /// is stopped by `Run`'s drop.
    fn finish(&mut self) -> Result<()> {
        let Some(mut run) = self.run.take() else {
            return Ok(());
        };
        let Some(exit) = run.exit else {
            return Ok(());
        };
        match run.report()? {
            Some(Report::DONE) if exit == Exit::Code(0) => Ok(()),
            Some(other) if other != Report::DONE => Err(unexpected(other)),
            _ => Err(Error::Measure(format!(
                "the hackbench conductor ended without reporting the end of its run ({exit:?})"
            ))),
        }
    }
}

impl Run {
    /// The conductor's next report byte, or `None` at end of file; its error
    /// message when it reported a failure (it is reaped then); `Interrupted`
    /// on a stop.
    fn report(&mut self) -> Result<Option<u8>> {
        let mut byte = [0u8; 1];
        let n = match read_or_stop(self.reports.as_raw_fd(), &mut byte) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Err(Error::Interrupted),
            Err(e) => return Err(Error::io("waiting for the hackbench conductor", e)),
            Ok(n) => n,
        };
        if interrupt::requested() {
            return Err(Error::Interrupted);
        }
        if n == 0 {
            return Ok(None);
        }
        if byte[0] != Report::FAILED {
            return Ok(Some(byte[0]));
        }
        let mut message = Vec::new();
        let mut chunk = [0u8; 512];
        while let Ok(n @ 1..) = read_or_stop(self.reports.as_raw_fd(), &mut chunk) {
            message.extend_from_slice(&chunk[..n]);
        }
        self.conductor.wait_all(Duration::from_secs(10))?;
        Err(Error::Measure(
            String::from_utf8_lossy(&message).into_owned(),
        ))
    }

    /// The next report, which must be `want`; a conductor that ended without
    /// it is reaped and its end named.
    fn expect(&mut self, want: u8) -> Result<()> {
        match self.report()? {
            Some(byte) if byte == want => Ok(()),
            Some(other) => Err(unexpected(other)),
            None => {
                let exits = self.conductor.wait_all(Duration::from_secs(10))?;
                Err(Error::Measure(format!(
                    "the hackbench conductor ended without a report ({:?})",
                    exits.first()
                )))
            }
        }
    }
}

fn unexpected(byte: u8) -> Error {
    Error::Measure(format!(
        "the hackbench conductor sent {:?} out of turn",
        byte as char
    ))
}

impl Workload for Messaging {
    /// Untimed: ends the previous run and starts the next run's conductor and workers.
    fn prepare(&mut self) -> Result<()> {
        self.finish()?;
        self.start()
    }

    /// Timed: start the run `prepare` set up and wait for its conductor to
    /// report every worker reaped. Further runs (never asked for by the
    /// harness, which times one at a time) set up their own.
    fn run(&mut self, iters: u64) -> Result<()> {
        for i in 0..iters {
            if i > 0 || self.run.is_none() {
                self.prepare()?;
            }
            self.go()?;
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.finish()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.exit.is_some() {
            return; // reaped after its run
        }
        // A run never started or cut short: SIGKILL the conductor's group
        // (conductor and worker processes; threads die with the conductor),
        // reap the conductor, then the workers it left to osbench.
        let group = self.conductor.pgid();
        self.conductor.kill_all();
        if let Some(pgid) = group {
            reap_group(pgid);
        }
    }
}

/// Reaps every child of osbench in process group `pgid` until none is left
/// (a killed conductor's workers, re-parented to osbench as a subreaper).
fn reap_group(pgid: libc::pid_t) {
    loop {
        // SAFETY: waiting for our own children of one group; no status wanted.
        let r = unsafe { libc::waitpid(-pgid, std::ptr::null_mut(), 0) };
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return; // ECHILD: none left
        }
    }
}

/// The conductor: hackbench's main process, one fresh process per run (see
/// the module doc). Starts the workers, reports ready, waits for the go
/// byte, wakes the workers, reaps them, checks every worker's message count
/// and reports the end, or reports what failed; then exits, which ends the
/// timed run. osbench is single-threaded
/// when it forks the conductor, so the conductor may allocate and start
/// threads. Its exit status is 0 when it reported the end.
fn conduct(shape: Shape, mode: Mode, placement: &Placement, go: OwnedFd, reports: OwnedFd) -> i32 {
    // A worker thread writing to a pair a failed start closed (ulimit -n
    // reached) must get EPIPE, not kill the conductor before it reports why
    // (CI saw "ended without a report (Signal(13))").
    ignore_sigpipe_in_child();
    match conduct_run(shape, mode, placement, go.as_raw_fd(), reports.as_raw_fd()) {
        Ok(()) => 0,
        Err(e) => {
            let mut message = vec![Report::FAILED];
            message.extend_from_slice(e.to_string().as_bytes());
            let _ = write_all(reports.as_raw_fd(), &message);
            1
        }
    }
}

fn conduct_run(
    shape: Shape,
    mode: Mode,
    placement: &Placement,
    go: RawFd,
    reports: RawFd,
) -> Result<()> {
    let mut workers = Workers::start(shape, mode, placement)?;
    write_all(reports, &[Report::READY]).map_err(|e| Error::io("reporting ready", e))?;
    let mut byte = [0u8; 1];
    if !read_exact(go, &mut byte).map_err(|e| Error::io("waiting for the go byte", e))? {
        return Ok(()); // osbench abandoned the run; the workers are killed on the way out
    }
    write_all(workers.wake.as_raw_fd(), &[1]).map_err(|e| Error::io("waking the workers", e))?;
    workers.helpers.join_all()?;
    check_counts(&workers.counters.values(), shape.messages_per_worker())?;
    write_all(reports, &[Report::DONE]).map_err(|e| Error::io("reporting the end", e))
}

/// Every worker must have passed exactly `want` messages.
fn check_counts(counts: &[u64], want: u64) -> Result<()> {
    match counts.iter().position(|&c| c != want) {
        None => Ok(()),
        Some(i) => Err(Error::Measure(format!(
            "worker {i} passed {} messages, expected {want}",
            counts[i]
        ))),
    }
}

/// The workers of one run, in the conductor: started and waiting for the wake byte.
struct Workers {
    helpers: Helpers,
    wake: OwnedFd,
    counters: Arc<SharedCounters>,
}

impl Workers {
    /// Starts every worker and waits until each has said it is ready.
    fn start(shape: Shape, mode: Mode, placement: &Placement) -> Result<Self> {
        let (ready_r, ready_w) = fdpair(shape.pipes)?;
        let (wake_r, wake_w) = fdpair(shape.pipes)?;
        let (ready_w, wake_r) = (Arc::new(ready_w), Arc::new(wake_r));
        // hackbench -T's threads: plain pthreads with PTHREAD_STACK_MIN stacks
        // (16 KiB on x86-64 glibc). Worker processes join the conductor's
        // group; either kind is killed with the conductor.
        let mut workers = Workers {
            helpers: Helpers::new(mode, "messaging", 16 * 1024)
                .in_callers_group()
                .plain_threads(),
            wake: wake_w,
            counters: Arc::new(SharedCounters::new(shape.workers())?),
        };

        let mut task = 1; // task 0 is the timing thread
        for _ in 0..shape.groups {
            let mut write_ends = Vec::with_capacity(shape.fds);
            for _ in 0..shape.fds {
                let (r, w) = fdpair(shape.pipes)?;
                write_ends.push(w);
                let slot = task - 1;
                let (ready, wake, counters) = (
                    Arc::clone(&ready_w),
                    Arc::clone(&wake_r),
                    Arc::clone(&workers.counters),
                );
                let keep = [r.as_raw_fd(), ready.as_raw_fd(), wake.as_raw_fd()];
                let mut msg = vec![0u8; shape.datasize];
                workers
                    .helpers
                    .spawn(placement.cpu_of(task), &keep, move || {
                        ready_then_wait(ready.as_raw_fd(), wake.as_raw_fd())?;
                        receive(r.as_raw_fd(), &mut msg, shape, counters.get(slot))
                    })?;
                task += 1;
            }
            let write_ends = Arc::new(write_ends);
            let mut keep: Vec<RawFd> = write_ends.iter().map(AsRawFd::as_raw_fd).collect();
            keep.extend([ready_w.as_raw_fd(), wake_r.as_raw_fd()]);
            for _ in 0..shape.fds {
                let slot = task - 1;
                let (ready, wake, counters, outs) = (
                    Arc::clone(&ready_w),
                    Arc::clone(&wake_r),
                    Arc::clone(&workers.counters),
                    Arc::clone(&write_ends),
                );
                let msg = vec![0u8; shape.datasize];
                workers
                    .helpers
                    .spawn(placement.cpu_of(task), &keep, move || {
                        ready_then_wait(ready.as_raw_fd(), wake.as_raw_fd())?;
                        send(&outs, &msg, shape, counters.get(slot))
                    })?;
                task += 1;
            }
            // Process mode: the conductor's copies of this group's write ends close here.
        }
        drop((ready_w, wake_r));

        // Collect one ready byte per worker.
        let mut remaining = shape.workers();
        let mut buf = [0u8; 512];
        while remaining > 0 {
            let want = remaining.min(buf.len());
            match read_or_stop(ready_r.as_raw_fd(), &mut buf[..want]) {
                Ok(0) => {
                    return Err(Error::Measure(
                        "workers exited before signalling ready".into(),
                    ));
                }
                Ok(n) => remaining -= n,
                Err(e) => return Err(Error::io("waiting for workers", e)),
            }
        }
        Ok(workers)
    }
}

/// hackbench's ready(): one byte to the ready pair, then wait until the wake
/// pair is readable.
fn ready_then_wait(ready: RawFd, wake: RawFd) -> io::Result<()> {
    write_all(ready, &[0])?;
    let mut pfd = libc::pollfd {
        fd: wake,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; retried on EINTR.
    while unsafe { libc::poll(&mut pfd, 1, -1) } < 0 {
        let e = io::Error::last_os_error();
        if !retry(&e) {
            return Err(e);
        }
    }
    Ok(())
}

/// A sender: `loops` rounds of one message to each receiver of the group.
/// Message buffers are allocated before the worker starts (hackbench keeps
/// them on the worker's stack): no allocation or unmapping while timed, which
/// in thread mode would cost TLB shoot-downs on every CPU.
fn send(
    outs: &[OwnedFd],
    msg: &[u8],
    shape: Shape,
    count: &std::sync::atomic::AtomicU64,
) -> io::Result<()> {
    let mut sent = 0;
    for _ in 0..shape.loops {
        for out in outs {
            write_all(out.as_raw_fd(), msg)?;
            sent += 1;
        }
    }
    count.store(sent, Ordering::Relaxed);
    Ok(())
}

/// A receiver: `fds × loops` whole messages.
fn receive(
    input: RawFd,
    msg: &mut [u8],
    shape: Shape,
    count: &std::sync::atomic::AtomicU64,
) -> io::Result<()> {
    let mut received = 0;
    for _ in 0..shape.messages_per_worker() {
        read_message(input, msg)?;
        received += 1;
    }
    count.store(received, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(kv: &[(&str, &str)]) -> Messaging {
        let p = Params::new(&DEF, kv);
        Messaging {
            shape: Shape {
                groups: p.int("groups") as usize,
                fds: p.int("fds") as usize,
                loops: p.int("loops") as usize,
                datasize: p.int("datasize") as usize,
                pipes: p.get("transport") == "pipe",
            },
            mode: Mode::parse(p.get("mode")),
            placement: Placement::unpinned(),
            run: None,
            slice: ShortSlice::take(),
        }
    }

    #[test]
    fn message_counts_are_exact_in_every_transport_and_mode() {
        for transport in ["socket", "pipe"] {
            for mode in ["processes", "threads"] {
                let mut m = case(&[
                    ("groups", "2"),
                    ("fds", "3"),
                    ("loops", "7"),
                    ("datasize", "33"),
                    ("transport", transport),
                    ("mode", mode),
                ]);
                // The workers alone, in this process, to see their counts.
                let mut w = Workers::start(m.shape, m.mode, &m.placement).unwrap();
                assert_eq!(w.helpers.len(), 12, "all workers started");
                write_all(w.wake.as_raw_fd(), &[1]).unwrap();
                w.helpers.join_all().unwrap();
                assert_eq!(
                    w.counters.values(),
                    vec![21; 12],
                    "{transport} {mode}: 3 fds × 7 loops each"
                );
                // Whole runs, each under a conductor of its own.
                for _ in 0..3 {
                    m.prepare().unwrap();
                    m.go().unwrap();
                    assert_eq!(m.run.as_ref().unwrap().exit, Some(Exit::Code(0)));
                }
                m.finish().unwrap();
            }
        }
    }

    #[test]
    fn a_wrong_count_names_the_worker() {
        assert!(check_counts(&[5, 5, 5], 5).is_ok());
        let e = check_counts(&[5, 4, 5], 5).unwrap_err().to_string();
        assert!(e.contains("worker 1 passed 4 messages, expected 5"), "{e}");
    }

    #[test]
    fn a_conductors_failure_reaches_osbench_with_its_message() {
        let (go_r, go_w) = pipe().unwrap();
        let (reports_r, reports_w) = pipe().unwrap();
        let mut conductor = Supervisor::new("messaging");
        let keep = [reports_w.as_raw_fd()];
        conductor
            .fork(None, &keep, move || {
                let mut message = vec![Report::FAILED];
                message.extend_from_slice(b"starting a child process after 7 children: boom");
                let _ = write_all(reports_w.as_raw_fd(), &message);
                1
            })
            .unwrap();
        let mut run = Run {
            conductor,
            go: go_w,
            reports: reports_r,
            exit: None,
        };
        drop(go_r);
        let e = run.report().unwrap_err().to_string();
        assert!(e.contains("after 7 children: boom"), "{e}");
        assert!(
            run.conductor.children().is_empty(),
            "the conductor was reaped"
        );
    }

    #[test]
    fn large_messages_are_passed_whole() {
        // 64 KiB messages exceed a pipe's atomic write size: short writes and reads happen.
        let mut m = case(&[
            ("groups", "1"),
            ("fds", "2"),
            ("loops", "5"),
            ("datasize", "65536"),
            ("transport", "pipe"),
        ]);
        m.prepare().unwrap();
        Workload::run(&mut m, 1).unwrap();
    }

    #[test]
    fn abandoned_runs_stop_every_worker() {
        for mode in ["processes", "threads"] {
            let mut m = case(&[("groups", "1"), ("fds", "4"), ("mode", mode)]);
            m.prepare().unwrap();
            let group = m.run.as_ref().unwrap().conductor.pgid().unwrap();
            drop(m); // never started: conductor and workers must still go away
            // SAFETY: signal 0 only asks whether the group has members.
            let alive = unsafe { libc::kill(-group, 0) } == 0;
            assert!(!alive, "{mode}: processes of group {group} remain");
        }
    }

    #[test]
    fn names_and_hackbench_arguments() {
        let p = Params::new(
            &DEF,
            &[("groups", "50"), ("transport", "pipe"), ("mode", "threads")],
        );
        assert_eq!(case_name(&p), "g50/pipe/threads");
        assert_eq!(hackbench_args(&p), "-g 50 -p -T");
        let p = Params::new(&DEF, &[("loops", "30")]);
        assert_eq!(hackbench_args(&p), "-g 10 -l 30");
        assert_eq!(tasks(&Params::new(&DEF, &[])), 401);
    }
}
