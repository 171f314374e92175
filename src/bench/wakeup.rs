//! `wakeup`: how long a blocked (or spinning) task takes to run after another
//! task wakes it, as a distribution (schbench's wake-up latency, seed 004's
//! spin vs halt vs monitor/mwait comparison in user space).
//!
//! Two tasks hand a wake-up back and forth. Each sleeps `gap_us` (schbench's
//! 100 µs think time) before waking the other, so the waiter really waits —
//! idle, or spinning — as in seed 004; `gap_us=0` is a pure ping-pong. The
//! waker reads CLOCK_MONOTONIC just before waking and publishes it; the wakee
//! reads the clock as soon as it runs; latency = the difference. Both
//! directions count, so `count` round trips give 2 × `count` latencies. Ways
//! to wait (`wait=`):
//! - `futex`: FUTEX_WAIT on a shared word (FUTEX_WAKE only when the waiter
//!   announced it sleeps, as a mutex does); `eventfd`: a blocking read of an
//!   eventfd; `pipe`: a blocking 1-byte read;
//! - `spin`: poll the shared word without sleeping (burns its CPU);
//! - `spin-then-futex`: spin for `spin_us`, then sleep on the futex;
//! - `epoll`: each task waits in epoll_wait over its own `fds` eventfds, of
//!   which the waker makes one ready per wake-up, each in turn — one of N
//!   descriptors becoming ready, woken by another task (perf bench `epoll
//!   wait`'s case, as a latency rather than its throughput; the ready-set
//!   call over N is `poll:call=epoll_wait`).
//!
//! Tasks are threads or processes (MAP_SHARED word, non-private futex); their
//! placement comes from `--pin` (default: scheduler's choice). The CPU time
//! both tasks burn per wake-up is measured (thread/process CPU clocks).
//! Left out: schbench's worker think time, message threads and RPS modes.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::util::fdio::{descriptors_needed, pipe, read_message, write_all};
use super::util::futex;
use super::util::ring::{Helpers, Mode, map_anonymous};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::limits::descriptor_error;
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "wakeup",
    summary: "wake-up latency distribution between two tasks: futex, eventfd, pipe, spin, spin-then-futex",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "wait",
            help: "how the woken task waits",
            kind: ParamKind::Choice(WAITS),
            default: "futex",
        },
        ParamSpec {
            name: "mode",
            help: "the two tasks are threads or processes",
            kind: ParamKind::Choice(&["threads", "processes"]),
            default: "threads",
        },
        ParamSpec {
            name: "spin_us",
            help: "spin-then-futex: how long to spin before sleeping, µs",
            kind: ParamKind::Int {
                min: 0,
                max: 1_000_000,
            },
            default: "50",
        },
        ParamSpec {
            name: "fds",
            help: "epoll: eventfds in each task's epoll set, one made ready per wake-up in turn",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 19,
            },
            default: "100",
        },
        ParamSpec {
            name: "gap_us",
            help: "each task sleeps this long before waking the other (idle time the waiter spends waiting), µs",
            kind: ParamKind::Int {
                min: 0,
                max: 1_000_000,
            },
            default: "100",
        },
        ParamSpec {
            name: "count",
            help: "round trips recorded (two wake-ups each)",
            kind: ParamKind::Int {
                min: 1,
                max: 100_000_000,
            },
            default: "5000",
        },
    ],
    default_cases: DefaultCases::EachOf("wait"),
    case_name: |p| match p.get("wait") {
        "spin-then-futex" => format!("spin{}us-futex/{}", p.int("spin_us"), p.get("mode")),
        "epoll" => format!("epoll{}/{}", p.int("fds"), p.get("mode")),
        w => format!("{w}/{}", p.get("mode")),
    },
    op: |p| {
        let how = match p.get("wait") {
            "epoll" => format!(
                "epoll: one of {} eventfds made ready, the wakee in epoll_wait over all",
                p.int("fds")
            ),
            w => w.to_string(),
        };
        format!("one wake-up ({how}): waker's clock read before waking → wakee's after running")
    },
    anchor: |p| match p.get("wait") {
        "epoll" => {
            "perf bench epoll wait (its throughput; here each wake-up's latency)".to_string()
        }
        _ => "schbench wake-up latency (different workload); cyclictest for timers".to_string(),
    },
    check: |p| match p.get("wait") {
        // Each direction's eventfds and epoll set.
        "epoll" => descriptors_needed("wakeup", 2 * p.int("fds") as u64 + 2),
        _ => Ok(()),
    },
    differs: "a two-task wake-up ping-pong in user space, not schbench's workers and message threads: its figures are not schbench's.",
    tasks: |_| 2,
    setup,
    sampling: Sampling::Events(|p| 2 * p.int("count") as u64),
    ..BenchDef::DEFAULTS
};

/// The ways to wait (`wait=`).
const WAITS: &[&str] = &[
    "futex",
    "eventfd",
    "pipe",
    "spin",
    "spin-then-futex",
    "epoll",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Futex,
    EventFd,
    Pipe,
    Spin,
    SpinThenFutex { spin_ns: u64 },
    Epoll,
}

/// One direction of the hand-off, on its own cache line.
#[repr(C, align(128))]
struct Channel {
    /// 0 empty, 1 signalled, 2 the waiter sleeps on the futex.
    flag: AtomicU32,
    /// What the wakee must do: RUN, REPORT_CPU or STOP.
    command: AtomicU32,
    /// The waker's clock just before waking.
    stamp: AtomicU64,
    /// Wakee → waker: the latency it measured, or its CPU time on REPORT_CPU.
    payload: AtomicU64,
    /// `epoll`: wake-ups so far, which pick the eventfd made ready next.
    turn: AtomicU64,
}

const RUN: u32 = 0;
const REPORT_CPU: u32 = 1;
const STOP: u32 = 2;

/// The two channels in memory shared with a forked peer.
struct Channels {
    ptr: *mut Channel,
}

// SAFETY: the channels are only accessed through atomics.
unsafe impl Send for Channels {}
// SAFETY: as above.
unsafe impl Sync for Channels {}

impl Channels {
    fn new() -> Result<Self> {
        let p = map_anonymous(2 * size_of::<Channel>(), libc::MAP_SHARED)
            .map_err(|e| Error::io("mapping the wake-up channels", e))?;
        // Zero-filled memory is two empty channels.
        Ok(Self { ptr: p.cast() })
    }
    /// 0: timing task → peer; 1: peer → timing task.
    fn get(&self, i: usize) -> &Channel {
        assert!(i < 2);
        // SAFETY: the mapping holds two zero-initialised channels.
        unsafe { &*self.ptr.add(i) }
    }
}

impl Drop for Channels {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), 2 * size_of::<Channel>()) };
    }
}

/// How one side signals and waits on one channel.
#[derive(Clone)]
struct Side {
    wait: Wait,
    private_futex: bool,
    /// eventfd or pipe read end (`epoll`: the epoll set) this side waits on,
    /// and the descriptors it wakes through (`epoll`: one in turn; else one).
    wait_fd: RawFd,
    wake_fds: Arc<[RawFd]>,
}

impl Side {
    /// Stamps the clock and wakes the other side.
    #[inline]
    fn wake(&self, ch: &Channel, command: u32) -> io::Result<()> {
        ch.command.store(command, Ordering::Relaxed);
        ch.stamp.store(monotonic_ns(), Ordering::Relaxed);
        let previous = ch.flag.swap(1, Ordering::Release);
        match self.wait {
            Wait::Futex | Wait::SpinThenFutex { .. } if previous == 2 => {
                futex::wake(&ch.flag, self.private_futex)
            }
            Wait::EventFd => write_all(self.wake_fds[0], &1u64.to_ne_bytes()),
            Wait::Pipe => write_all(self.wake_fds[0], &[1]),
            Wait::Epoll => {
                let turn = ch.turn.fetch_add(1, Ordering::Relaxed);
                let fd = self.wake_fds[(turn % self.wake_fds.len() as u64) as usize];
                write_all(fd, &1u64.to_ne_bytes())
            }
            _ => Ok(()),
        }
    }

    /// Waits to be woken; returns the latency (ns) and the command.
    #[inline]
    fn wait(&self, ch: &Channel) -> io::Result<(u64, u32)> {
        match self.wait {
            Wait::Spin => {
                spin_until(ch, u64::MAX);
            }
            Wait::Futex => sleep_until(ch, self.private_futex)?,
            Wait::SpinThenFutex { spin_ns } => {
                if !spin_until(ch, monotonic_ns().saturating_add(spin_ns)) {
                    sleep_until(ch, self.private_futex)?;
                }
            }
            Wait::EventFd => {
                let mut buf = [0u8; 8];
                read_message(self.wait_fd, &mut buf)?;
            }
            Wait::Pipe => {
                let mut buf = [0u8; 1];
                read_message(self.wait_fd, &mut buf)?;
            }
            Wait::Epoll => {
                let mut buf = [0u8; 8];
                read_message(epoll_ready(self.wait_fd)?, &mut buf)?;
            }
        }
        let now = monotonic_ns();
        let latency = now.saturating_sub(ch.stamp.load(Ordering::Relaxed));
        let command = ch.command.load(Ordering::Relaxed);
        ch.flag.store(0, Ordering::Relaxed);
        Ok((latency, command))
    }
}

/// Blocks in epoll_wait on `ep` until one descriptor is ready; returns it
/// (each registered with its own number as the event's data).
fn epoll_ready(ep: RawFd) -> io::Result<RawFd> {
    let mut ev = libc::epoll_event { events: 0, u64: 0 };
    loop {
        // SAFETY: room for one event in `ev`; `ep` is an epoll descriptor.
        match unsafe { libc::epoll_wait(ep, &mut ev, 1, -1) } {
            1 => return Ok(ev.u64 as RawFd),
            _ => {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) {
                    return Err(e);
                }
            }
        }
    }
}

/// Sleeps for `gap` (nothing for zero): idle time before the next wake-up.
fn pause(gap: std::time::Duration) {
    if !gap.is_zero() {
        std::thread::sleep(gap);
    }
}

/// Spins until signalled or the clock passes `deadline`; true when signalled.
#[inline]
fn spin_until(ch: &Channel, deadline: u64) -> bool {
    let mut polls = 0u32;
    while ch.flag.load(Ordering::Acquire) != 1 {
        std::hint::spin_loop();
        polls = polls.wrapping_add(1);
        if polls.is_multiple_of(64) && deadline != u64::MAX && monotonic_ns() >= deadline {
            return false;
        }
    }
    true
}

/// Announces sleep (flag 0 → 2) and waits on the futex until signalled.
fn sleep_until(ch: &Channel, private: bool) -> io::Result<()> {
    if ch
        .flag
        .compare_exchange(0, 2, Ordering::Acquire, Ordering::Acquire)
        .is_err()
    {
        return Ok(()); // signalled meanwhile (flag is 1)
    }
    while ch.flag.load(Ordering::Acquire) == 2 {
        futex::wait(&ch.flag, 2, private, None)?;
    }
    Ok(())
}

/// CPU time of the calling thread (`thread`) or process, in ns.
fn cpu_clock_ns(thread: bool) -> u64 {
    let clock = if thread {
        libc::CLOCK_THREAD_CPUTIME_ID
    } else {
        libc::CLOCK_PROCESS_CPUTIME_ID
    };
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; these clocks always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One direction of the hand-off: what its wakee waits on, and what its
/// waker writes to.
struct Direction {
    wait_fd: RawFd,
    wake_fds: Arc<[RawFd]>,
}

/// A new eventfd.
fn eventfd() -> Result<OwnedFd> {
    // SAFETY: eventfd returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(descriptor_error(
            "creating an eventfd",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: fd is a fresh descriptor owned by nobody else.
    Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// An epoll set watching each of `fds` for input, each with its own number as data.
fn epoll_over(fds: &[OwnedFd]) -> Result<OwnedFd> {
    // SAFETY: plain system call; the result is checked.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(descriptor_error(
            "creating an epoll set",
            io::Error::last_os_error(),
        ));
    }
    // SAFETY: `ep` was just created and is owned by nobody else.
    let ep = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(ep) };
    for fd in fds {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd.as_raw_fd() as u64,
        };
        // SAFETY: valid descriptors and event.
        if unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut ev) }
            < 0
        {
            return Err(descriptor_error(
                "adding an eventfd to the epoll set",
                io::Error::last_os_error(),
            ));
        }
    }
    Ok(ep)
}

/// The descriptors of one direction (none for the shared-memory waits),
/// and the descriptors to keep open.
fn direction(wait: Wait, fds: usize, owned: &mut Vec<OwnedFd>) -> Result<Direction> {
    let raw = |fds: &[OwnedFd]| -> Arc<[RawFd]> { fds.iter().map(AsRawFd::as_raw_fd).collect() };
    let (wait_fd, wake_fds) = match wait {
        Wait::EventFd => {
            let fd = eventfd()?;
            let dup = fd
                .try_clone()
                .map_err(|e| descriptor_error("duplicating an eventfd", e))?;
            let d = (fd.as_raw_fd(), raw(std::slice::from_ref(&dup)));
            owned.extend([fd, dup]);
            d
        }
        Wait::Pipe => {
            let (r, w) = pipe()?;
            let d = (r.as_raw_fd(), raw(std::slice::from_ref(&w)));
            owned.extend([r, w]);
            d
        }
        Wait::Epoll => {
            let ready = (0..fds).map(|_| eventfd()).collect::<Result<Vec<_>>>()?;
            let ep = epoll_over(&ready)?;
            let d = (ep.as_raw_fd(), raw(&ready));
            owned.push(ep);
            owned.extend(ready);
            d
        }
        _ => (-1, Arc::from([])),
    };
    Ok(Direction { wait_fd, wake_fds })
}

struct Wakeup {
    channels: Arc<Channels>,
    side: Side,
    gap: std::time::Duration,
    /// Keeps the timing side's descriptors open.
    _fds: Vec<OwnedFd>,
    thread_peer: bool,
    helpers: Helpers,
    events: Vec<u64>,
    stopped: bool,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    let wait = match p.get("wait") {
        "futex" => Wait::Futex,
        "eventfd" => Wait::EventFd,
        "pipe" => Wait::Pipe,
        "spin" => Wait::Spin,
        "epoll" => Wait::Epoll,
        _ => Wait::SpinThenFutex {
            spin_ns: p.int("spin_us") as u64 * 1000,
        },
    };
    let mode = Mode::parse(p.get("mode"));
    let threads = mode == Mode::Threads;
    let channels = Arc::new(Channels::new()?);
    // Direction 0 (timing → peer) wakes through fds[0]; direction 1 through fds[1].
    // Direction 0: timing task → peer; direction 1: peer → timing task.
    let mut fds = Vec::new();
    let n = p.int("fds") as usize;
    let [to_peer, to_me] = [direction(wait, n, &mut fds)?, direction(wait, n, &mut fds)?];
    let mine = Side {
        wait,
        private_futex: threads,
        wait_fd: to_me.wait_fd,
        wake_fds: to_peer.wake_fds,
    };
    let peer = Side {
        wait,
        private_futex: threads,
        wait_fd: to_peer.wait_fd,
        wake_fds: to_me.wake_fds,
    };
    let gap = std::time::Duration::from_micros(p.int("gap_us") as u64);
    let mut helpers = Helpers::new(mode, "wakeup", 64 * 1024);
    // A forked peer keeps these descriptor numbers; a thread peer uses the
    // timing side's, which outlive it (it is stopped before they close).
    let keep: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let ch = Arc::clone(&channels);
    helpers.spawn(placement.cpu_of(1), &keep, move || {
        loop {
            let (latency, command) = peer.wait(ch.get(0))?;
            match command {
                STOP => return Ok(()),
                REPORT_CPU => ch
                    .get(1)
                    .payload
                    .store(cpu_clock_ns(threads), Ordering::Relaxed),
                _ => {
                    ch.get(1).payload.store(latency, Ordering::Relaxed);
                    pause(gap);
                }
            }
            peer.wake(ch.get(1), RUN)?;
        }
    })?;
    Ok(Box::new(Wakeup {
        channels,
        side: mine,
        gap,
        _fds: fds,
        thread_peer: threads,
        helpers,
        events: Vec::new(),
        stopped: false,
    }))
}

impl Wakeup {
    /// One round trip with `command`; returns (peer's latency or payload, my latency).
    fn hand_off(&mut self, command: u32) -> Result<(u64, u64)> {
        let broken = |e| Error::io("the wake-up peer stopped answering", e);
        self.side
            .wake(self.channels.get(0), command)
            .map_err(broken)?;
        let (mine, _) = self.side.wait(self.channels.get(1)).map_err(broken)?;
        Ok((self.channels.get(1).payload.load(Ordering::Relaxed), mine))
    }

    fn stop(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.stopped, true) {
            return Ok(());
        }
        self.side
            .wake(self.channels.get(0), STOP)
            .map_err(|e| Error::io("stopping the wake-up peer", e))?;
        self.helpers.finish()
    }
}

impl Workload for Wakeup {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            pause(self.gap);
            let (theirs, mine) = self.hand_off(RUN)?;
            self.events.push(theirs);
            self.events.push(mine);
        }
        Ok(())
    }

    fn take_events(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.events)
    }

    fn cpu_time_ns(&mut self) -> Result<Option<u64>> {
        let (peer_cpu, _) = self.hand_off(REPORT_CPU)?;
        Ok(Some(peer_cpu + cpu_clock_ns(true)))
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.stop()
    }
}

impl Drop for Wakeup {
    fn drop(&mut self) {
        // A thread peer must be told to stop; a process peer is also killed by its supervisor.
        if self.thread_peer {
            let _ = self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wait_kind_completes_exactly_n_hand_offs() {
        for mode in ["threads", "processes"] {
            for &wait in WAITS {
                let p = Params::new(
                    &DEF,
                    &[
                        ("wait", wait),
                        ("mode", mode),
                        ("spin_us", "5"),
                        ("gap_us", "0"),
                        ("fds", "7"),
                    ],
                );
                let mut b = setup(&p, &Placement::unpinned()).unwrap();
                b.run(500).unwrap();
                let events = b.take_events();
                assert_eq!(
                    events.len(),
                    1000,
                    "{wait} {mode}: two wake-ups per round trip"
                );
                assert!(
                    events.iter().all(|&ns| ns < 10_000_000_000),
                    "{wait} {mode}: a latency is absurd"
                );
                assert!(b.cpu_time_ns().unwrap().unwrap() > 0);
                assert!(b.take_events().is_empty(), "CPU reports are not events");
                b.teardown().unwrap();
            }
        }
    }

    #[test]
    fn an_abandoned_thread_peer_is_stopped() {
        let p = Params::new(&DEF, &[("wait", "spin"), ("mode", "threads")]);
        let b = setup(&p, &Placement::unpinned()).unwrap();
        drop(b); // must not hang or leave a spinning thread
    }
}
