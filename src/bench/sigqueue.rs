//! `sigqueue`: signal delivery between two tasks as a latency distribution,
//! one op = one delivery (rt-tests `sigwaittest`, stress-ng `sigrt`).
//!
//! Each task blocks SIGRTMIN in its own mask and waits for it in
//! sigtimedwait(). The sender reads CLOCK_MONOTONIC and queues the signal
//! to the other task's thread (rt_tgsigqueueinfo, what pthread_sigqueue
//! does, so no other thread of osbench can take it) with the reading as
//! the signal's value; the receiver reads the clock as soon as sigtimedwait
//! returns: latency = the difference. The receiver answers the same way, so
//! `count` round trips give 2 × `count` latencies, after a `gap_us` pause
//! each, as `wakeup` does. Tasks are threads or processes (`mode`); the
//! forward latency comes back through a MAP_SHARED word. The timing
//! thread's mask is restored (pending signals drained first) at teardown.
//! Left out: sigwaittest's interval timer and priorities, and a handler-based
//! delivery between tasks.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::util::ring::{Helpers, Mode, map_anonymous};
use super::{BenchDef, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::interrupt;
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "sigqueue",
    summary: "signal delivery latency between two tasks, sigqueue → sigtimedwait (rt-tests sigwaittest)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "mode",
            help: "the two tasks are threads or processes",
            kind: ParamKind::Choice(&["threads", "processes"]),
            default: "threads",
        },
        ParamSpec {
            name: "gap_us",
            help: "each task sleeps this long before signalling the other, µs",
            kind: ParamKind::Int {
                min: 0,
                max: 1_000_000,
            },
            default: "100",
        },
        ParamSpec {
            name: "count",
            help: "round trips recorded (two deliveries each)",
            kind: ParamKind::Int {
                min: 1,
                max: 100_000_000,
            },
            default: "2000",
        },
    ],
    default_cases: super::DefaultCases::EachOf("mode"),
    case_name: |p| p.get("mode").to_string(),
    op: |_| {
        "one delivery: the sender's clock read before rt_tgsigqueueinfo → the receiver's after sigtimedwait".to_string()
    },
    anchor: |p| {
        format!(
            "sigwaittest{} -l N (rt-tests)",
            if p.get("mode") == "threads" {
                " -t"
            } else {
                ""
            }
        )
    },
    differs: "a ping-pong with a pause of gap_us before each send, not sigwaittest's timer-driven loop; latencies are one-way, stamped by the two tasks.",
    tasks: |_| 2,
    setup,
    sampling: Sampling::Events(|p| 2 * p.int("count") as u64),
    ..BenchDef::DEFAULTS
};

/// The value that tells the receiver to stop.
const STOP: u64 = u64::MAX;
/// How long a task waits for the other's signal before giving up.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);

/// What the two tasks share (a MAP_SHARED page): the peer's thread id, and
/// the latency it measured for the last forward delivery.
#[repr(C)]
struct Shared {
    peer_tid: AtomicI32,
    forward_ns: AtomicU64,
}

struct SharedPage(*mut Shared);
// SAFETY: the page is only accessed through atomics.
unsafe impl Send for SharedPage {}
// SAFETY: as above.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    fn get(&self) -> &Shared {
        // SAFETY: a live zero-filled mapping of at least one Shared.
        unsafe { &*self.0 }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `setup`.
        unsafe { libc::munmap(self.0.cast(), size_of::<Shared>()) };
    }
}

fn the_signal() -> libc::c_int {
    libc::SIGRTMIN()
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set; the signal number is valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, the_signal());
        set
    }
}

/// Blocks the signal in the calling thread; returns the previous mask.
fn block_signal() -> libc::sigset_t {
    let set = signal_set();
    // SAFETY: valid sets; pthread_sigmask changes only this thread's mask.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

/// Queues the signal with `value` to thread `tid` of process `pid`.
fn queue(pid: libc::pid_t, tid: libc::pid_t, value: u64) -> io::Result<()> {
    // The siginfo of SI_QUEUE on Linux: signo, errno, code, then (after
    // padding to 8 bytes) the sender's pid and uid and the value.
    #[repr(C)]
    struct QueueInfo {
        signo: i32,
        errno: i32,
        code: i32,
        _pad: i32,
        pid: i32,
        uid: u32,
        value: u64,
        _rest: [u64; 12],
    }
    const _: () = assert!(size_of::<QueueInfo>() == size_of::<libc::siginfo_t>());
    let info = QueueInfo {
        signo: the_signal(),
        errno: 0,
        code: libc::SI_QUEUE,
        _pad: 0,
        // SAFETY: getpid and getuid have no preconditions.
        pid: unsafe { libc::getpid() },
        // SAFETY: as above.
        uid: unsafe { libc::getuid() },
        value,
        _rest: [0; 12],
    };
    // SAFETY: `info` is a siginfo_t-sized, SI_QUEUE-coded record the kernel
    // only reads; the target is our own peer.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            pid,
            tid,
            the_signal(),
            &raw const info,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Waits for the signal; returns its value and the clock on its arrival.
/// Gives up on a stop request or after [`ANSWER_LIMIT`].
fn wait(set: &libc::sigset_t) -> io::Result<(u64, u64)> {
    let started = Instant::now();
    let slice = libc::timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        // SAFETY: an all-zero siginfo is a valid out-value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers for the call's duration.
        let r = unsafe { libc::sigtimedwait(set, &mut info, &slice) };
        let now = monotonic_ns();
        if r > 0 {
            // SAFETY: a queued signal's siginfo carries its value.
            let value = unsafe { info.si_value().sival_ptr } as u64;
            return Ok((value, now));
        }
        let e = io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) {
            return Err(e);
        }
        if interrupt::requested() {
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        if started.elapsed() > ANSWER_LIMIT {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no signal from the other task within 10 s",
            ));
        }
    }
}

struct SigQueue {
    shared: Arc<SharedPage>,
    gap: Duration,
    helpers: Helpers,
    peer_pid: libc::pid_t,
    set: libc::sigset_t,
    /// The timing thread's mask before set-up, restored at the end.
    old_mask: libc::sigset_t,
    events: Vec<u64>,
    stopped: bool,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    let mode = Mode::parse(p.get("mode"));
    let page = map_anonymous(size_of::<Shared>(), libc::MAP_SHARED)
        .map_err(|e| Error::io("mapping the shared page", e))?;
    let shared = Arc::new(SharedPage(page.cast()));
    let set = signal_set();
    // Blocked before the peer exists, so a forked peer starts with it blocked too.
    let old_mask = block_signal();
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    let gap = Duration::from_micros(p.int("gap_us") as u64);
    let mut workload = SigQueue {
        shared: Arc::clone(&shared),
        gap,
        helpers: Helpers::new(mode, "sigqueue", 64 * 1024),
        peer_pid: 0,
        set,
        old_mask,
        events: Vec::new(),
        stopped: false,
    };
    let peer_shared = Arc::clone(&shared);
    workload.helpers.spawn(placement.cpu_of(1), &[], move || {
        block_signal();
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() };
        peer_shared.get().peer_tid.store(me, Ordering::Release);
        loop {
            let (stamp, arrived) = wait(&set)?;
            if stamp == STOP {
                return Ok(());
            }
            let s = peer_shared.get();
            s.forward_ns
                .store(arrived.saturating_sub(stamp), Ordering::Relaxed);
            pause(gap);
            queue(pid, tid, monotonic_ns())?;
        }
    })?;
    // The peer publishes its thread id once its signal is blocked.
    let started = Instant::now();
    let peer = loop {
        match shared.get().peer_tid.load(Ordering::Acquire) {
            0 if started.elapsed() > ANSWER_LIMIT => {
                return Err(Error::Measure(
                    "the sigqueue peer did not start within 10 s".into(),
                ));
            }
            0 => std::thread::sleep(Duration::from_micros(100)),
            tid => break tid,
        }
    };
    workload.peer_pid = if mode == Mode::Threads { pid } else { peer };
    Ok(Box::new(workload))
}

fn pause(gap: Duration) {
    if !gap.is_zero() {
        std::thread::sleep(gap);
    }
}

impl SigQueue {
    fn peer_tid(&self) -> libc::pid_t {
        self.shared.get().peer_tid.load(Ordering::Relaxed)
    }

    fn stop(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        let told = queue(self.peer_pid, self.peer_tid(), STOP);
        let finished = self.helpers.finish();
        // Replies still pending are taken before the signal is unblocked
        // (its default action would end osbench).
        let none = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid pointers; a zero timeout only polls.
        while unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &none) } > 0 {}
        // SAFETY: restoring this thread's own mask saved at set-up.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut()) };
        told.map_err(|e| Error::io("stopping the sigqueue peer", e))?;
        finished
    }
}

impl Workload for SigQueue {
    fn run(&mut self, iters: u64) -> Result<()> {
        let broken = |e: io::Error| {
            if e.kind() == io::ErrorKind::Interrupted {
                Error::Interrupted
            } else {
                Error::io("the sigqueue peer stopped answering", e)
            }
        };
        let (peer_pid, peer_tid) = (self.peer_pid, self.peer_tid());
        for _ in 0..iters {
            pause(self.gap);
            queue(peer_pid, peer_tid, monotonic_ns()).map_err(broken)?;
            let (stamp, arrived) = wait(&self.set).map_err(broken)?;
            self.events
                .push(self.shared.get().forward_ns.load(Ordering::Relaxed));
            self.events.push(arrived.saturating_sub(stamp));
        }
        Ok(())
    }

    fn take_events(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.events)
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.stop()
    }
}

impl Drop for SigQueue {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::signal::tests::{ONE_AT_A_TIME, disposition};

    #[test]
    fn both_modes_deliver_exactly_two_signals_per_round_trip_and_restore_the_mask() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let before = disposition(the_signal());
        for mode in ["threads", "processes"] {
            let p = Params::new(&DEF, &[("mode", mode), ("gap_us", "0")]);
            let mut s = setup(&p, &Placement::unpinned()).unwrap();
            s.run(300).unwrap();
            let events = s.take_events();
            assert_eq!(events.len(), 600, "{mode}");
            assert!(
                events.iter().all(|&ns| ns > 0 && ns < 10_000_000_000),
                "{mode}"
            );
            s.teardown().unwrap();
            assert_eq!(disposition(the_signal()), before, "{mode}");
        }
    }

    #[test]
    fn a_dropped_case_stops_its_peer() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let p = Params::new(&DEF, &[("mode", "threads")]);
        drop(setup(&p, &Placement::unpinned()).unwrap()); // must not hang
    }
}
