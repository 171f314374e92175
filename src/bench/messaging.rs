//! `messaging`: hackbench's workload (rt-tests `hackbench`, `perf bench sched
//! messaging`; anchors-methodology.md §2).
//!
//! `groups` groups of `fds` receivers and `fds` senders. Each receiver owns
//! the read end of its own AF_UNIX stream socket pair (or pipe); the group's
//! senders share all the write ends, and each writes `loops` messages of
//! `datasize` bytes to every receiver of its group, round robin; each receiver
//! reads `fds × loops` messages. Short reads and writes are continued.
//! Workers are processes (forked; the parent closes its copies of their ends,
//! as hackbench does) or threads with small stacks (hackbench `-T`).
//!
//! One sample = one run. Untimed: create the workers; each writes one byte to a
//! "ready" pair and waits in poll() on a "wake" pair. Timed, as hackbench:
//! from writing the single (never consumed) wake byte until every worker has
//! exited and been reaped (or joined). Unit: seconds per run. "hackbench N" is
//! `messaging:groups=N`; the report adds hackbench's `Time: S.mmm` line.
//!
//! Beyond hackbench: every worker's message count is checked after each run
//! (shared counters), a failed worker is an error, and the ready/wake pairs
//! and the message pairs are of the same kind, as in hackbench. Left out:
//! rt-tests' `-i` (TCP) and `-F` (SCHED_FIFO for the main thread).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::fdio::{pipe, read_message, read_or_stop, retry, socketpair, write_all};
use super::ring::{Helpers, Mode, SharedCounters};
use super::{BenchDef, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

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
}

/// The workers of one run, started and waiting for the wake byte.
struct Run {
    helpers: Helpers,
    /// Every worker has been woken and reaped.
    reaped: bool,
    wake: OwnedFd,
    /// Threads only: set before waking workers that must not work (a failed start).
    abort: Arc<AtomicBool>,
    counters: Arc<SharedCounters>,
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
    }))
}

impl Messaging {
    /// Starts every worker and waits until each has said it is ready.
    fn start(&mut self) -> Result<()> {
        self.run = None;
        let shape = self.shape;
        let (ready_r, ready_w) = fdpair(shape.pipes)?;
        let (wake_r, wake_w) = fdpair(shape.pipes)?;
        let (ready_w, wake_r) = (Arc::new(ready_w), Arc::new(wake_r));
        // hackbench -T uses PTHREAD_STACK_MIN stacks; 16 KiB on x86-64 glibc.
        // Killed by the signal handler on a stop: the timed wait is for their exit.
        let helpers = Helpers::new(self.mode, "messaging", 16 * 1024).killed_on_stop();
        let counters = Arc::new(SharedCounters::new(shape.workers())?);
        let run = self.run.insert(Run {
            helpers,
            reaped: false,
            wake: wake_w,
            abort: Arc::new(AtomicBool::new(false)),
            counters,
        });

        let mut task = 1; // task 0 is the timing thread
        for _ in 0..shape.groups {
            let mut write_ends = Vec::with_capacity(shape.fds);
            for _ in 0..shape.fds {
                let (r, w) = fdpair(shape.pipes)?;
                write_ends.push(w);
                let slot = task - 1;
                let (ready, wake, abort, counters) = (
                    Arc::clone(&ready_w),
                    Arc::clone(&wake_r),
                    Arc::clone(&run.abort),
                    Arc::clone(&run.counters),
                );
                let keep = [r.as_raw_fd(), ready.as_raw_fd(), wake.as_raw_fd()];
                let mut msg = vec![0u8; shape.datasize];
                run.helpers
                    .spawn(self.placement.cpu_of(task), &keep, move || {
                        if !ready_then_wait(ready.as_raw_fd(), wake.as_raw_fd(), &abort)? {
                            return Ok(());
                        }
                        receive(r.as_raw_fd(), &mut msg, shape, counters.get(slot))
                    })?;
                task += 1;
            }
            let write_ends = Arc::new(write_ends);
            let mut keep: Vec<RawFd> = write_ends.iter().map(AsRawFd::as_raw_fd).collect();
            keep.extend([ready_w.as_raw_fd(), wake_r.as_raw_fd()]);
            for _ in 0..shape.fds {
                let slot = task - 1;
                let (ready, wake, abort, counters, outs) = (
                    Arc::clone(&ready_w),
                    Arc::clone(&wake_r),
                    Arc::clone(&run.abort),
                    Arc::clone(&run.counters),
                    Arc::clone(&write_ends),
                );
                let msg = vec![0u8; shape.datasize];
                run.helpers
                    .spawn(self.placement.cpu_of(task), &keep, move || {
                        if !ready_then_wait(ready.as_raw_fd(), wake.as_raw_fd(), &abort)? {
                            return Ok(());
                        }
                        send(&outs, &msg, shape, counters.get(slot))
                    })?;
                task += 1;
            }
            // Process mode: the parent's copies of this group's write ends close here.
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
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    return Err(Error::Interrupted);
                }
                Err(e) => return Err(Error::io("waiting for workers", e)),
            }
        }
        Ok(())
    }

    /// Wakes every worker and reaps them all; this is the timed part.
    fn wake_and_reap(&mut self) -> Result<()> {
        let run = self
            .run
            .as_mut()
            .ok_or_else(|| Error::Measure("messaging run without prepare".into()))?;
        write_all(run.wake.as_raw_fd(), &[1]).map_err(|e| Error::io("waking the workers", e))?;
        run.helpers.join_all()?;
        run.reaped = true;
        Ok(())
    }

    /// Ends the current run, untimed: once it was reaped, checks that every
    /// receiver got, and every sender sent, `fds × loops` messages; a run that
    /// was never woken is abandoned (its workers stopped by `Run`'s drop).
    fn check_counts(&mut self) -> Result<()> {
        let Some(run) = self.run.take().filter(|r| r.reaped) else {
            return Ok(());
        };
        let want = self.shape.messages_per_worker();
        let counts = run.counters.values();
        match counts.iter().position(|&c| c != want) {
            None => Ok(()),
            Some(i) => Err(Error::Measure(format!(
                "worker {i} passed {} messages, expected {want}",
                counts[i]
            ))),
        }
    }
}

impl Workload for Messaging {
    /// Untimed: checks the previous run's message counts and starts the next run's workers.
    fn prepare(&mut self) -> Result<()> {
        self.check_counts()?;
        self.start()
    }

    /// Timed: wake the workers `prepare` started and reap them — nothing else,
    /// the counts are checked by the next `prepare` or `teardown`. Further runs
    /// (never asked for by the harness, which times one at a time) set up their own.
    fn run(&mut self, iters: u64) -> Result<()> {
        for i in 0..iters {
            if i > 0 || self.run.is_none() {
                self.prepare()?;
            }
            self.wake_and_reap()?;
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.check_counts()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // Processes are killed by their supervisor. Threads waiting for the
        // wake byte are told to return without working, then woken and joined.
        if let Helpers::Threads { .. } = self.helpers {
            self.abort.store(true, Ordering::SeqCst);
            let _ = write_all(self.wake.as_raw_fd(), &[1]);
            let _ = self.helpers.finish();
        }
    }
}

/// hackbench's ready(): one byte to the ready pair, then wait until the wake
/// pair is readable. False when the run is being abandoned (threads only).
fn ready_then_wait(ready: RawFd, wake: RawFd, abort: &AtomicBool) -> io::Result<bool> {
    write_all(ready, &[0])?;
    let mut pfd = libc::pollfd {
        fd: wake,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; retried on EINTR unless a stop was requested.
    while unsafe { libc::poll(&mut pfd, 1, -1) } < 0 {
        let e = io::Error::last_os_error();
        if !retry(&e) {
            return Err(e);
        }
    }
    Ok(!abort.load(Ordering::SeqCst))
}

/// Where a worker thread gives up once a stop was requested: a thread that
/// never blocks would not see the poke meant to stop it (one relaxed load
/// of a flag no one writes during a run, next to a system call of about a µs).
/// A worker process never sees the flag set: the signal handler kills it.
#[inline]
fn stop_point() -> io::Result<()> {
    if crate::measure::interrupt::requested() {
        Err(io::ErrorKind::Interrupted.into())
    } else {
        Ok(())
    }
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
            stop_point()?;
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
        stop_point()?;
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
                for _ in 0..3 {
                    m.prepare().unwrap();
                    assert_eq!(
                        m.run.as_ref().unwrap().helpers.len(),
                        12,
                        "all workers started"
                    );
                    m.wake_and_reap().unwrap();
                    let counts = m.run.as_ref().unwrap().counters.values();
                    assert_eq!(
                        counts,
                        vec![21; 12],
                        "{transport} {mode}: 3 fds × 7 loops each"
                    );
                    m.check_counts().unwrap();
                }
            }
        }
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
            drop(m); // never woken: the workers must still go away
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
