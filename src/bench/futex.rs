//! `futex`: perf bench futex's five workloads with its parameters and
//! defaults (tools/perf/bench/futex-*.c, read for the method, not copied),
//! and `futex_waitv` waking one of N, which no benchmark measured before.
//! Unit: ns per operation; the report's anchor section also gives perf's
//! operations/sec per thread (a higher rate is faster; samples stay time per
//! operation, so every comparison reads lower as faster).
//!
//! - `hash`: `threads` threads (the timing one included), each calling
//!   FUTEX_WAIT on its own `futexes` words with a value they do not hold, so
//!   every call fails with EAGAIN after hashing the address (perf's method:
//!   it stresses the hash table, not the wait queues). Per op: one call of
//!   the timing thread while the others do the same.
//! - `lock-pi`: `threads` threads taking and releasing one PI futex
//!   (FUTEX_LOCK_PI, FUTEX_UNLOCK_PI), holding it across perf's usleep(1)
//!   (`hold=sleep`, perf's) or not at all (`hold=none`). Per op: one
//!   lock + unlock of the timing thread. perf's `-M` (a futex per thread) is
//!   left out.
//! - `wake`: `threads` waiters block on one futex; the timing thread calls
//!   FUTEX_WAKE for `wakes` at a time until all are awake. One event = that
//!   whole wake-up (perf's "Wokeup N of N threads in X ms").
//! - `wake-parallel`: the same waiters woken by `wakers` threads at once,
//!   threads ÷ wakers each; one event per waker = its own FUTEX_WAKE call
//!   (perf's "Avg per-thread latency").
//! - `requeue`: the waiters are moved to a second futex by FUTEX_CMP_REQUEUE
//!   of `requeue` at a time (waking none) until all are moved; one event =
//!   the whole requeue (perf's "Requeued N of N threads"), then they are
//!   woken untimed.
//! - `waitv`: a helper blocks in futex_waitv on `n` futexes; the timing
//!   thread wakes the last of them and waits until the helper says it
//!   returned (a FUTEX_WAKE back). Per op: that round trip.
//!
//! The wake-ups have two methods (`method`):
//! - `osbench` (the default): the same waiters every event, seen blocked on
//!   the futex in /proc/self/task/TID/syscall and woken at once: the cost of
//!   the calls with the caches and the other CPUs warm.
//! - `perf`: perf's own, event by event: fresh waiters pinned round robin to
//!   the CPUs (perf's placement unless `--pin` says otherwise) that exit once
//!   woken, and 100 ms of idleness between their blocking and the timed
//!   calls. As perf's, the waiters first wait to be released together (its
//!   condition variable) and block on the futex just after that wake-up: the
//!   scheduler then lets a waiter woken on the waker's CPU preempt it, as it
//!   does perf's (a freshly started thread that blocks at once is not let).
//!   wake-parallel's wakers are fresh unpinned threads meeting the timing
//!   thread at a barrier whose last arrival releases the others and makes
//!   its call at once (perf's pthread barrier). All these threads are plain
//!   POSIX threads with glibc's default stack, as perf's: a Rust thread
//!   unmaps its signal stack as it exits, and the waiters exit while the
//!   wakers are timed (`util::plain_thread`). Each event then includes
//!   waking idle CPUs and, where a woken waiter shares the waker's CPU, its
//!   preemption of the waker. perf's figures are this method's, measured
//!   with its µs clock.
//!
//! Differences from perf, on purpose: perf runs each throughput workload for
//! 10 s and averages the threads' rates; osbench times the timing thread in
//! 10 ms batches while the others run alongside, so its rate is one
//! thread's. Threads are pinned as `--pin` says (perf pins them round robin
//! to every CPU: `--pin spread` is its placement).
//! The module shares nothing with `util::futex` (the word waits of the other
//! families) but its name.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::util::plain_thread::PlainThread;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::limits::{check_address_space, thread_error};
use crate::measure::placement::{Pin, Placement, pin_thread_for_life};

/// Events per wake-up case (each one whole wake-up or requeue of the waiters).
const EVENTS: u64 = 200;
/// Events per wake-up case by perf's method (perf's default is 10 runs);
/// each costs its 100 ms of idleness.
const PERF_EVENTS: u64 = 30;
/// perf's idleness between blocking its waiters and waking them.
const PERF_IDLE: Duration = Duration::from_millis(100);
/// The kernel's most futexes in one futex_waitv (FUTEX_WAITV_MAX).
const WAITV_MAX: i64 = 128;
/// The most futex words a hash case allocates (threads × futexes, 4 B each: 256 MiB).
const MOST_WORDS: i64 = 1 << 26;

pub static DEF: BenchDef = BenchDef {
    name: "futex",
    summary: "perf bench futex's hash, wake, wake-parallel, requeue and lock-pi, and futex_waitv waking one of N",
    unit: Unit::Ns,
    params: PARAMS,
    default_cases: DefaultCases::EachOf("workload"),
    case_name,
    op: |p| {
        match p.get("workload") {
            "hash" => "one FUTEX_WAIT failing with EAGAIN (the address hashed), per thread",
            "lock-pi" => "one FUTEX_LOCK_PI + FUTEX_UNLOCK_PI of a shared PI futex, per thread",
            "wake" => "waking every waiter, `wakes` per FUTEX_WAKE (one event)",
            "wake-parallel" => "one waker's FUTEX_WAKE of its share of the waiters (one event)",
            "requeue" => "requeueing every waiter to a second futex (one event)",
            _ => "FUTEX_WAKE of one of n futexes a futex_waitv waits on, until it returned",
        }
        .to_string()
    },
    anchor,
    differs: "perf runs hash and lock-pi for 10 s and averages every thread's rate; osbench times one thread of them in 10 ms batches while the others run, so its rate is one thread's. Wake-ups by osbench's method reuse waiters seen blocked in /proc and wake them at once; method=perf is perf's (fresh waiters released together, then blocked, that exit once woken; wake-parallel's wakers at perf's barrier; 100 ms idle first): its events are cold and spread 10-95 % between invocations on both sides. perf's waiters end in pthread_exit(), whose forced unwind took 28 µs against 14 µs for osbench's returning (Intel, traced); perf's wake event holds one such exit, of the woken waiter that preempts the waker on its CPU. Threads are pinned as --pin says; perf pins round robin (--pin spread).",
    tasks,
    setup,
    sampling: Sampling::EventsFor(|p| {
        let events = if perf_method(p) { PERF_EVENTS } else { EVENTS };
        wakes_up(p).then_some(events)
    }),
    check,
    unavailable: |p| {
        (p.get("workload") == "waitv")
            .then(waitv_unavailable)
            .flatten()
    },
    ..BenchDef::DEFAULTS
};

const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "workload",
        help: "perf bench futex's workload, or waitv (futex_waitv waking one of n)",
        kind: ParamKind::Choice(&[
            "hash",
            "wake",
            "wake-parallel",
            "requeue",
            "lock-pi",
            "waitv",
        ]),
        default: "hash",
    },
    ParamSpec {
        name: "threads",
        help: "threads (perf -t; default: one per CPU, as perf's)",
        kind: ParamKind::CountOrAll { min: 1, max: 4096 },
        default: "all",
    },
    ParamSpec {
        name: "futexes",
        help: "hash: futexes per thread (perf -f)",
        kind: ParamKind::Int {
            min: 1,
            max: 1 << 20,
        },
        default: "1024",
    },
    ParamSpec {
        name: "shared",
        help: "private (perf's default) or shared futexes (perf -S)",
        kind: ParamKind::Choice(&["private", "shared"]),
        default: "private",
    },
    ParamSpec {
        name: "wakes",
        help: "wake: waiters woken per FUTEX_WAKE (perf -w)",
        kind: ParamKind::Int { min: 1, max: 4096 },
        default: "1",
    },
    ParamSpec {
        name: "wakers",
        help: "wake-parallel: waking threads (perf -w; default: one per waiter)",
        kind: ParamKind::IntOr {
            word: "threads",
            min: 1,
            max: 4096,
        },
        default: "threads",
    },
    ParamSpec {
        name: "requeue",
        help: "requeue: waiters moved per FUTEX_CMP_REQUEUE (perf -q)",
        kind: ParamKind::Int { min: 1, max: 4096 },
        default: "1",
    },
    ParamSpec {
        name: "hold",
        help: "lock-pi: perf's usleep(1) while holding the lock, or none",
        kind: ParamKind::Choice(&["sleep", "none"]),
        default: "sleep",
    },
    ParamSpec {
        name: "method",
        help: "wake, wake-parallel, requeue: osbench's (the same waiters, woken once seen blocked) or perf's (fresh waiters pinned round robin that exit when woken, 100 ms idle before each event)",
        kind: ParamKind::Choice(&["osbench", "perf"]),
        default: "osbench",
    },
    ParamSpec {
        name: "n",
        help: "waitv: futexes waited on at once (the kernel allows at most 128)",
        kind: ParamKind::Int {
            min: 1,
            max: WAITV_MAX,
        },
        default: "8",
    },
];

fn wakers(p: &Params) -> usize {
    match p.get("wakers") {
        "threads" => p.count("threads"),
        n => n.parse().unwrap_or(1),
    }
}

/// Whether the workload is one of the wake-up events.
fn wakes_up(p: &Params) -> bool {
    matches!(p.get("workload"), "wake" | "wake-parallel" | "requeue")
}

/// Whether the wake-ups follow perf's method.
fn perf_method(p: &Params) -> bool {
    p.get("method") == "perf"
}

/// `tag` when the futexes are shared, else nothing.
fn if_shared<'a>(p: &Params, tag: &'a str) -> &'a str {
    if p.get("shared") == "shared" { tag } else { "" }
}

/// The workload's own parameter, if it has one: its part of the case name
/// and perf's option for it.
fn own_param(p: &Params) -> Option<(String, String)> {
    let (name, flag) = match p.get("workload") {
        "hash" => (
            format!("/{}f", p.int("futexes")),
            format!(" -f {}", p.int("futexes")),
        ),
        "wake" => (
            format!("/w{}", p.int("wakes")),
            format!(" -w {}", p.int("wakes")),
        ),
        "wake-parallel" => (format!("/{}w", wakers(p)), format!(" -w {}", wakers(p))),
        "requeue" => (
            format!("/q{}", p.int("requeue")),
            format!(" -q {}", p.int("requeue")),
        ),
        _ => return None,
    };
    Some((name, flag))
}

fn case_name(p: &Params) -> String {
    let (workload, shared) = (p.get("workload"), if_shared(p, "/shared"));
    let own = match workload {
        "waitv" => return format!("waitv/{}{shared}", p.int("n")),
        "lock-pi" if p.get("hold") == "none" => "/nohold".to_string(),
        _ => own_param(p).map(|(name, _)| name).unwrap_or_default(),
    };
    let method = if perf_method(p) { "/perf" } else { "" };
    format!("{workload}/{}t{own}{shared}{method}", p.count("threads"))
}

fn anchor(p: &Params) -> String {
    let workload = p.get("workload");
    if workload == "waitv" {
        return "(none: futex_waitv has no benchmark elsewhere)".to_string();
    }
    let flag = own_param(p).map(|(_, flag)| flag).unwrap_or_default();
    format!(
        "perf bench futex {workload} -t {}{flag}{}",
        p.count("threads"),
        if_shared(p, " -S")
    )
}

fn tasks(p: &Params) -> usize {
    let t = p.count("threads");
    match p.get("workload") {
        "hash" | "lock-pi" => t,
        "wake" | "requeue" => t + 1,
        "wake-parallel" => t + wakers(p) + 1,
        _ => 2,
    }
}

/// Limits before anything runs (exit 2): threads the user may start, memory
/// for the futex words, wakers that divide the waiters.
fn check(p: &Params) -> Result<()> {
    let t = p.count("threads");
    let what = format!("futex:{p}");
    let nproc = crate::env::process::limit_text(libc::RLIMIT_NPROC);
    if let Ok(limit) = nproc.parse::<usize>()
        // SAFETY: geteuid has no preconditions.
        && unsafe { libc::geteuid() } != 0
        && tasks(p) > limit
    {
        return Err(Error::Usage(format!(
            "{what} starts {} threads, more than the process limit RLIMIT_NPROC (`ulimit -u`, now {limit}) allows: raise it or lower threads",
            tasks(p)
        )));
    }
    if p.get("workload") == "hash" && (t as i64) * p.int("futexes") > MOST_WORDS {
        return Err(Error::Usage(format!(
            "{what}: threads × futexes = {} futex words, more than osbench's limit of {MOST_WORDS} (256 MiB): lower threads or futexes",
            t as i64 * p.int("futexes")
        )));
    }
    if perf_method(p) && !wakes_up(p) {
        return Err(Error::Usage(format!(
            "{what}: method=perf is a method of the wake-ups (wake, wake-parallel, requeue); for perf's placement of hash and lock-pi use --pin spread"
        )));
    }
    if p.get("workload") == "wake-parallel" {
        let w = wakers(p);
        if w > t || !t.is_multiple_of(w) {
            return Err(Error::Usage(format!(
                "{what}: {t} waiters cannot be shared out evenly among {w} wakers (perf: \"Must be perfectly divisible\"): choose wakers dividing threads"
            )));
        }
    }
    check_address_space(&what, tasks(p))
}

/// The futex flags: FUTEX_PRIVATE_FLAG unless shared.
fn private_flag(p: &Params) -> i32 {
    if p.get("shared") == "shared" {
        0
    } else {
        libc::FUTEX_PRIVATE_FLAG
    }
}

/// futex(2) with its six arguments; the raw result (-1 and errno on failure).
fn futex(
    word: &AtomicU32,
    op: i32,
    val: u32,
    timeout_or_val2: usize,
    word2: Option<&AtomicU32>,
) -> i64 {
    let addr2 = word2.map_or(std::ptr::null_mut(), AtomicU32::as_ptr);
    // SAFETY: `word` (and `word2`) are live, aligned u32s for the whole call;
    // the ops used here take no timeout pointer (NULL) or a plain count.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            timeout_or_val2,
            addr2,
            0,
        )
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// One thread started for a case, pinned to the CPU of task `task` when
/// placed; its errors worded by `measure::limits`.
fn spawn(
    placement: &Placement,
    task: usize,
    body: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("osbench-futex".into())
        .stack_size(64 << 10)
        .spawn(pinned(placement.cpu_of(task), body))
        .map_err(|e| thread_error(task - 1, e))
}

/// `body`, run once the thread is pinned to `cpu` when placed (a refused
/// pinning leaves it where the scheduler put it).
fn pinned(cpu: Option<usize>, body: impl FnOnce()) -> impl FnOnce() {
    move || {
        if let Some(cpu) = cpu {
            let _ = pin_thread_for_life(cpu);
        }
        body();
    }
}

/// The name of perf's method's threads (15 bytes: all of it is the comm).
const PERF_THREAD: &std::ffi::CStr = c"osbench-futexpf";
/// Their stack: glibc's default (RLIMIT_STACK's 8 MiB), as perf's.
const PERF_STACK: usize = 8 << 20;

/// One of perf's method's threads: a plain POSIX thread, as perf's are (a
/// Rust thread's exit unmaps its signal stack while the event is timed:
/// `util::plain_thread`), on `cpu` when placed, after `started` others.
fn spawn_perf(
    cpu: Option<usize>,
    started: usize,
    body: impl FnOnce() + Send + 'static,
) -> Result<PlainThread> {
    let thread = PlainThread::spawn(
        PERF_STACK,
        Box::new({
            let body = pinned(cpu, body);
            move || {
                body();
                Ok(())
            }
        }),
    )
    .map_err(|e| thread_error(started, e))?;
    let _ = thread.set_name(PERF_THREAD);
    Ok(thread)
}

/// What the timing thread and its helpers share.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// The futex waiters block on (wake-ups), or the PI lock (lock-pi).
    word: AtomicU32,
    /// The requeue target.
    word2: AtomicU32,
    /// Waiters wait on `word` once per new value of this (a round).
    round: AtomicU32,
    /// Waiters that returned from their wait, over all rounds.
    returned: AtomicU32,
    /// wake-parallel: wakers start once per new value of this.
    wake_round: AtomicU32,
    /// wake-parallel: wakers done this round, and their latencies.
    wakers_done: AtomicU32,
    waker_ns: Vec<AtomicU64>,
    /// The waiters' thread ids, to see them blocked.
    tids: Vec<AtomicI32>,
    /// waitv: the helper returned (1) or not yet (0).
    answered: AtomicU32,
}

/// Waits while `word` holds `value` (FUTEX_WAIT, private), re-checking.
fn park(word: &AtomicU32, value: u32) {
    while word.load(Ordering::Acquire) == value {
        futex(
            word,
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            value,
            0,
            None,
        );
    }
}

/// Wakes every task parked on `word`.
fn unpark(word: &AtomicU32) {
    futex(
        word,
        libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
        i32::MAX as u32,
        0,
        None,
    );
}

enum Kind {
    Hash { words: Vec<AtomicU32>, next: usize },
    LockPi { hold: bool },
    Wake { wakes: u32 },
    WakeParallel { wakers: usize },
    Requeue { requeue: u32 },
    Waitv { words: Arc<Vec<AtomicU32>> },
}

struct Futex {
    kind: Kind,
    flags: i32,
    threads: usize,
    /// Where perf's method pins its fresh waiters; `None` by osbench's method.
    perf_placement: Option<Placement>,
    shared: Arc<Shared>,
    helpers: Vec<JoinHandle<()>>,
    events: Vec<u64>,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    let threads = p.count("threads");
    let flags = private_flag(p);
    let waiting = matches!(p.get("workload"), "wake" | "wake-parallel" | "requeue");
    let wakers_n = if p.get("workload") == "wake-parallel" {
        wakers(p)
    } else {
        0
    };
    let shared = Arc::new(Shared {
        tids: (0..if waiting { threads } else { 0 })
            .map(|_| AtomicI32::new(0))
            .collect(),
        waker_ns: (0..wakers_n).map(|_| AtomicU64::new(0)).collect(),
        ..Shared::default()
    });
    let kind = match p.get("workload") {
        "hash" => Kind::Hash {
            words: (0..p.int("futexes")).map(|_| AtomicU32::new(0)).collect(),
            next: 0,
        },
        "lock-pi" => Kind::LockPi {
            hold: p.get("hold") == "sleep",
        },
        "wake" => Kind::Wake {
            wakes: p.int("wakes") as u32,
        },
        "wake-parallel" => Kind::WakeParallel { wakers: wakers_n },
        "requeue" => Kind::Requeue {
            requeue: p.int("requeue") as u32,
        },
        _ => Kind::Waitv {
            words: Arc::new((0..p.int("n")).map(|_| AtomicU32::new(0)).collect()),
        },
    };
    let perf_placement = match (perf_method(p), placement.pin) {
        (false, _) => None,
        (true, Pin::None) => Some(Placement::new(Pin::Spread)?),
        (true, _) => Some(placement.clone()),
    };
    let mut bench = Futex {
        kind,
        flags,
        threads,
        perf_placement,
        shared,
        helpers: Vec::new(),
        events: Vec::new(),
    };
    bench.start_helpers(p, placement)?;
    // One untimed operation: a failure shows at set-up, not while timing.
    bench.run(1)?;
    bench.events.clear();
    Ok(Box::new(bench))
}

impl Futex {
    fn start_helpers(&mut self, p: &Params, placement: &Placement) -> Result<()> {
        let (flags, futexes) = (self.flags, p.int("futexes") as usize);
        let waiters = match &self.kind {
            Kind::Hash { .. } | Kind::LockPi { .. } => 0,
            Kind::Waitv { .. } => 0,
            // perf's method starts its own each event.
            _ if self.perf_placement.is_some() => return Ok(()),
            _ => self.threads,
        };
        for i in 1..self.threads.max(1) {
            let shared = Arc::clone(&self.shared);
            let body: Box<dyn FnOnce() + Send> = match &self.kind {
                Kind::Hash { .. } => Box::new(move || hash_helper(&shared, futexes, flags)),
                Kind::LockPi { hold } => {
                    let hold = *hold;
                    Box::new(move || lock_pi_helper(&shared, flags, hold))
                }
                _ => break,
            };
            self.helpers.push(spawn(placement, i, body)?);
        }
        for i in 0..waiters {
            let shared = Arc::clone(&self.shared);
            self.helpers
                .push(spawn(placement, i + 1, move || waiter(&shared, i, flags))?);
        }
        if let Kind::WakeParallel { wakers } = self.kind {
            let share = (self.threads / wakers) as u32;
            for i in 0..wakers {
                let shared = Arc::clone(&self.shared);
                let task = self.threads + 1 + i;
                self.helpers.push(spawn(placement, task, move || {
                    waker(&shared, i, share, flags)
                })?);
            }
        }
        if let Kind::Waitv { words } = &self.kind {
            let (shared, words) = (Arc::clone(&self.shared), Arc::clone(words));
            self.helpers.push(spawn(placement, 1, move || {
                waitv_helper(&shared, &words, flags)
            })?);
        }
        Ok(())
    }
}

/// hash's other threads: perf's loop over their own words until told to stop.
fn hash_helper(shared: &Shared, futexes: usize, flags: i32) {
    let words: Vec<AtomicU32> = (0..futexes).map(|_| AtomicU32::new(0)).collect();
    while !shared.stop.load(Ordering::Relaxed) {
        for w in &words {
            futex(w, libc::FUTEX_WAIT | flags, 1234, 0, None);
        }
    }
}

/// lock-pi's other threads: take, (hold,) release, until told to stop.
fn lock_pi_helper(shared: &Shared, flags: i32, hold: bool) {
    while !shared.stop.load(Ordering::Relaxed) {
        if lock_pi_once(&shared.word, flags, hold).is_err() {
            break;
        }
    }
}

fn lock_pi_once(word: &AtomicU32, flags: i32, hold: bool) -> std::io::Result<()> {
    while futex(word, libc::FUTEX_LOCK_PI | flags, 0, 0, None) != 0 {
        if errno() != libc::EINTR && errno() != libc::EAGAIN {
            return Err(std::io::Error::last_os_error());
        }
    }
    if hold {
        // SAFETY: usleep has no preconditions.
        unsafe { libc::usleep(1) };
    }
    if futex(word, libc::FUTEX_UNLOCK_PI | flags, 0, 0, None) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// A waiter: once per round, blocks on `word` until woken (or requeued and
/// woken), then counts itself back.
fn waiter(shared: &Shared, i: usize, flags: i32) {
    // SAFETY: gettid has no preconditions.
    shared.tids[i].store(unsafe { libc::gettid() }, Ordering::Release);
    let mut round = 0;
    loop {
        park(&shared.round, round);
        round = shared.round.load(Ordering::Acquire);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        // perf's loop: only a signal makes it wait again.
        while futex(&shared.word, libc::FUTEX_WAIT | flags, 0, 0, None) != 0
            && errno() == libc::EINTR
        {}
        shared.returned.fetch_add(1, Ordering::AcqRel);
    }
}

/// A wake-parallel waker: once per round, wakes its share and records how
/// long its one FUTEX_WAKE took.
fn waker(shared: &Shared, i: usize, share: u32, flags: i32) {
    let mut round = 0;
    loop {
        park(&shared.wake_round, round);
        round = shared.wake_round.load(Ordering::Acquire);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let start = monotonic_ns();
        futex(&shared.word, libc::FUTEX_WAKE | flags, share, 0, None);
        shared.waker_ns[i].store(monotonic_ns() - start, Ordering::Release);
        shared.wakers_done.fetch_add(1, Ordering::AcqRel);
        unpark(&shared.wakers_done);
    }
}

/// The futex_waitv helper: waits on every word; when one is set, clears it
/// and answers.
fn waitv_helper(shared: &Shared, words: &[AtomicU32], flags: i32) {
    const FUTEX2_SIZE_U32: u32 = 2;
    let private = if flags != 0 { 128 } else { 0 }; // FUTEX2_PRIVATE
    let waitv: Vec<FutexWaitv> = words
        .iter()
        .map(|w| FutexWaitv {
            val: 0,
            uaddr: w.as_ptr() as u64,
            flags: FUTEX2_SIZE_U32 | private,
            reserved: 0,
        })
        .collect();
    while !shared.stop.load(Ordering::Acquire) {
        if let Some(w) = words.iter().find(|w| w.load(Ordering::Acquire) == 1) {
            w.store(0, Ordering::Release);
            shared.answered.store(1, Ordering::Release);
            unpark(&shared.answered);
            continue;
        }
        // SAFETY: `waitv` holds `words.len()` (≤ 128) struct futex_waitv
        // entries, each naming a live word; no timeout.
        unsafe {
            libc::syscall(
                libc::SYS_futex_waitv,
                waitv.as_ptr(),
                waitv.len() as u32,
                0,
                std::ptr::null::<libc::timespec>(),
                libc::CLOCK_MONOTONIC,
            )
        };
    }
}

/// The kernel's `struct futex_waitv` (include/uapi/linux/futex.h).
#[repr(C)]
struct FutexWaitv {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

/// Why futex_waitv cannot run here (Linux 5.16 added it).
fn waitv_unavailable() -> Option<String> {
    // SAFETY: a zero-length futex_waitv names no memory; it fails at once.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex_waitv,
            std::ptr::null::<u8>(),
            0,
            0,
            std::ptr::null::<u8>(),
            0,
        )
    };
    (r < 0 && errno() == libc::ENOSYS)
        .then(|| "this kernel has no futex_waitv (ENOSYS; Linux 5.16 or later)".to_string())
}

/// Whether thread `tid` of this process is blocked in futex(2) on `word`
/// (/proc/self/task/TID/syscall: the number, then the first argument).
fn blocked_on(tid: i32, word: &AtomicU32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")) else {
        return false;
    };
    let mut fields = text.split_whitespace();
    fields.next() == Some(&libc::SYS_futex.to_string())
        && fields
            .next()
            .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
            == Some(word.as_ptr() as u64)
}

impl Futex {
    /// Starts a round and returns once every waiter is blocked on `word`.
    fn block_waiters(&self) -> Result<()> {
        let s = &self.shared;
        s.round.fetch_add(1, Ordering::AcqRel);
        unpark(&s.round);
        await_blocked(&s.tids, &s.word)
    }

    /// Waits until all `threads` waiters of this round have returned.
    fn await_returned(&self, rounds: u32) {
        while self.shared.returned.load(Ordering::Acquire) < rounds * self.threads as u32 {
            std::thread::yield_now();
        }
    }

    /// One wake-up event (wake, requeue) or one per waker (wake-parallel).
    fn wake_event(&mut self) -> Result<()> {
        self.block_waiters()?;
        let s = Arc::clone(&self.shared);
        let (t, flags) = (self.threads as i64, self.flags);
        match self.kind {
            Kind::Wake { wakes } => self.events.push(timed_wake(&s.word, wakes, t, flags)?),
            Kind::Requeue { requeue } => {
                let ns = timed_requeue((&s.word, &s.word2), requeue, t, flags)?;
                self.events.push(ns);
                let mut woken = 0;
                while woken < t {
                    woken +=
                        futex(&s.word2, libc::FUTEX_WAKE | flags, i32::MAX as u32, 0, None).max(0);
                }
            }
            Kind::WakeParallel { wakers } => {
                s.wakers_done.store(0, Ordering::Release);
                s.wake_round.fetch_add(1, Ordering::AcqRel);
                unpark(&s.wake_round);
                park_until(&s.wakers_done, wakers as u32);
                self.events
                    .extend(s.waker_ns.iter().map(|n| n.load(Ordering::Acquire)));
            }
            _ => unreachable!("not a wake-up workload"),
        }
        self.await_returned(s.round.load(Ordering::Acquire));
        Ok(())
    }

    /// One waitv round trip: set and wake the last word, wait for the answer.
    fn waitv_round_trip(&self, words: &[AtomicU32]) {
        let s = &self.shared;
        let last = &words[words.len() - 1];
        last.store(1, Ordering::Release);
        futex(last, libc::FUTEX_WAKE | self.flags, 1, 0, None);
        park(&s.answered, 0);
        s.answered.store(0, Ordering::Release);
    }
}

/// The ns taken to wake `waiters` blocked on `word`, `wakes` per FUTEX_WAKE.
fn timed_wake(word: &AtomicU32, wakes: u32, waiters: i64, flags: i32) -> Result<u64> {
    let start = monotonic_ns();
    let mut woken = 0;
    while woken < waiters {
        let r = futex(word, libc::FUTEX_WAKE | flags, wakes, 0, None);
        if r < 0 {
            return Err(Error::last_os("futex: a timed FUTEX_WAKE failed"));
        }
        woken += r;
    }
    Ok(monotonic_ns() - start)
}

/// The ns taken to move `waiters` blocked on `from` to `to`, `requeue` per
/// FUTEX_CMP_REQUEUE (waking none).
fn timed_requeue(
    (from, to): (&AtomicU32, &AtomicU32),
    requeue: u32,
    waiters: i64,
    flags: i32,
) -> Result<u64> {
    let start = monotonic_ns();
    let mut moved = 0;
    while moved < waiters {
        let r = futex(
            from,
            libc::FUTEX_CMP_REQUEUE | flags,
            0,
            requeue as usize,
            Some(to),
        );
        if r < 0 {
            return Err(Error::last_os("futex: a timed FUTEX_CMP_REQUEUE failed"));
        }
        moved += r;
    }
    Ok(monotonic_ns() - start)
}

/// Returns once every thread of `tids` is blocked on `word` (10 s at most).
fn await_blocked(tids: &[AtomicI32], word: &AtomicU32) -> Result<()> {
    let deadline = monotonic_ns() + 10_000_000_000;
    for tid in tids {
        loop {
            let t = tid.load(Ordering::Acquire);
            if t != 0 && blocked_on(t, word) {
                break;
            }
            if monotonic_ns() > deadline || crate::measure::interrupt::requested() {
                return Err(Error::Measure(
                    "futex: a waiter did not block on the futex within 10 s".into(),
                ));
            }
            std::thread::yield_now();
        }
    }
    Ok(())
}

/// What one event by perf's method shares with its fresh threads.
struct PerfRound {
    /// The futex the waiters block on, and the requeue target.
    word: AtomicU32,
    word2: AtomicU32,
    tids: Vec<AtomicI32>,
    /// wake-parallel: each waker's time for its FUTEX_WAKE.
    waker_ns: Vec<AtomicU64>,
    /// wake-parallel: the word that opens the barrier (perf's): 1 to wake,
    /// 2 to leave without waking (a waker failed to start).
    go: AtomicU32,
    /// wake-parallel: how many of the wakers and the timing thread reached
    /// the barrier that `go` opens.
    arrived: AtomicU32,
    /// The waiters' release: they wait on it first and block on `word` once
    /// it turns 1.
    start: AtomicU32,
}

impl PerfRound {
    fn new(waiters: usize, wakers: usize) -> PerfRound {
        PerfRound {
            word: AtomicU32::new(0),
            word2: AtomicU32::new(0),
            tids: (0..waiters).map(|_| AtomicI32::new(0)).collect(),
            waker_ns: (0..wakers).map(|_| AtomicU64::new(0)).collect(),
            go: AtomicU32::new(0),
            arrived: AtomicU32::new(0),
            start: AtomicU32::new(0),
        }
    }

    /// perf's pthread barrier of the wakers and the timing thread: the last
    /// of `parties` to arrive releases the others and goes on at once (so
    /// one waker usually makes its timed call while the others wake).
    fn barrier(&self, parties: u32) {
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == parties {
            self.go.store(1, Ordering::Release);
            unpark(&self.go);
        } else {
            park(&self.go, 0);
        }
    }

    /// Releases the waiters once all wait to be (perf's condition variable:
    /// each blocks on the futex just after a wake-up, as perf's do) and
    /// returns once all are blocked on `word`.
    fn block_waiters(&self) -> Result<()> {
        await_blocked(&self.tids, &self.start)?;
        self.start.store(1, Ordering::Release);
        unpark(&self.start);
        await_blocked(&self.tids, &self.word)
    }

    /// Wakes whoever still waits, on either word (after a failure); the
    /// words change first, so a waiter not blocked yet will not block.
    fn release_all(&self, flags: i32) {
        self.start.store(1, Ordering::Release);
        unpark(&self.start);
        for word in [&self.word, &self.word2] {
            word.store(1, Ordering::Release);
            futex(word, libc::FUTEX_WAKE | flags, i32::MAX as u32, 0, None);
        }
    }
}

impl Futex {
    /// One wake-up event by perf's method: fresh pinned waiters, blocked,
    /// 100 ms of idleness, the timed calls, then the waiters joined.
    fn perf_event(&mut self, placement: &Placement) -> Result<()> {
        let (t, flags) = (self.threads, self.flags);
        let wakers_n = match self.kind {
            Kind::WakeParallel { wakers } => wakers,
            _ => 0,
        };
        let round = Arc::new(PerfRound::new(t, wakers_n));
        let mut waiters = Vec::with_capacity(t);
        let mut outcome = Ok(());
        for i in 0..t {
            let r = Arc::clone(&round);
            match spawn_perf(placement.cpu_of(i), i, move || perf_waiter(&r, i, flags)) {
                Ok(handle) => waiters.push(handle),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        if outcome.is_ok() {
            outcome = round.block_waiters().and_then(|()| {
                std::thread::sleep(PERF_IDLE);
                self.perf_timed_calls(&round, wakers_n)
            });
        }
        // Nothing may stay blocked: a failed event wakes every waiter too.
        round.release_all(flags);
        for handle in waiters {
            let _ = handle.join();
        }
        outcome
    }

    /// The timed part of an event by perf's method.
    fn perf_timed_calls(&mut self, round: &Arc<PerfRound>, wakers_n: usize) -> Result<()> {
        let (t, flags) = (self.threads as i64, self.flags);
        match self.kind {
            Kind::Wake { wakes } => self.events.push(timed_wake(&round.word, wakes, t, flags)?),
            Kind::Requeue { requeue } => {
                let ns = timed_requeue((&round.word, &round.word2), requeue, t, flags)?;
                self.events.push(ns);
            }
            Kind::WakeParallel { .. } => {
                let share = (self.threads / wakers_n) as u32;
                let mut wakers = Vec::with_capacity(wakers_n);
                let mut failure = None;
                for i in 0..wakers_n {
                    let r = Arc::clone(round);
                    // perf lets the scheduler place its wakers.
                    match spawn_perf(None, self.threads + i, move || {
                        perf_waker(&r, i, share, flags)
                    }) {
                        Ok(handle) => wakers.push(handle),
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                }
                match failure {
                    None => round.barrier(wakers_n as u32 + 1),
                    Some(_) => {
                        round.go.store(2, Ordering::Release);
                        unpark(&round.go);
                    }
                }
                for w in wakers {
                    let _ = w.join();
                }
                if let Some(e) = failure {
                    return Err(e);
                }
                self.events
                    .extend(round.waker_ns.iter().map(|n| n.load(Ordering::Acquire)));
            }
            _ => unreachable!("not a wake-up workload"),
        }
        Ok(())
    }
}

/// A waiter of perf's method: blocks once on the round's futex (again only
/// after a signal) and exits when woken, as perf's do.
fn perf_waiter(round: &PerfRound, i: usize, flags: i32) {
    // SAFETY: gettid has no preconditions.
    round.tids[i].store(unsafe { libc::gettid() }, Ordering::Release);
    park(&round.start, 0);
    while futex(&round.word, libc::FUTEX_WAIT | flags, 0, 0, None) != 0 && errno() == libc::EINTR {}
}

/// A waker of perf's wake-parallel: released with the others, times its
/// one FUTEX_WAKE of `share` waiters.
fn perf_waker(round: &PerfRound, i: usize, share: u32, flags: i32) {
    round.barrier(round.waker_ns.len() as u32 + 1);
    if round.go.load(Ordering::Acquire) != 1 {
        return;
    }
    let start = monotonic_ns();
    futex(&round.word, libc::FUTEX_WAKE | flags, share, 0, None);
    round.waker_ns[i].store(monotonic_ns() - start, Ordering::Release);
}

/// Waits until `word` reaches `target` (woken by whoever raises it).
fn park_until(word: &AtomicU32, target: u32) {
    loop {
        let v = word.load(Ordering::Acquire);
        if v >= target {
            return;
        }
        futex(
            word,
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            v,
            0,
            None,
        );
    }
}

impl Workload for Futex {
    fn run(&mut self, iters: u64) -> Result<()> {
        let flags = self.flags;
        match &mut self.kind {
            Kind::Hash { words, next } => {
                for _ in 0..iters {
                    let r = futex(&words[*next], libc::FUTEX_WAIT | flags, 1234, 0, None);
                    if r == 0 || errno() != libc::EAGAIN {
                        return Err(Error::last_os(
                            "futex hash: FUTEX_WAIT did not fail with EAGAIN",
                        ));
                    }
                    *next = (*next + 1) % words.len();
                }
            }
            Kind::LockPi { hold } => {
                let hold = *hold;
                for _ in 0..iters {
                    lock_pi_once(&self.shared.word, flags, hold).map_err(|e| {
                        Error::io("futex lock-pi: FUTEX_LOCK_PI or FUTEX_UNLOCK_PI", e)
                    })?;
                }
            }
            Kind::Waitv { words } => {
                let words = Arc::clone(words);
                for _ in 0..iters {
                    self.waitv_round_trip(&words);
                }
            }
            _ => {
                let perf_placement = self.perf_placement.clone();
                for _ in 0..iters {
                    match &perf_placement {
                        Some(placement) => self.perf_event(placement)?,
                        None => self.wake_event()?,
                    }
                }
            }
        }
        Ok(())
    }

    fn take_events(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.events)
    }
}

impl Drop for Futex {
    fn drop(&mut self) {
        let s = &self.shared;
        s.stop.store(true, Ordering::Release);
        s.round.fetch_add(1, Ordering::AcqRel);
        unpark(&s.round);
        s.wake_round.fetch_add(1, Ordering::AcqRel);
        unpark(&s.wake_round);
        // Waiters a failed event left blocked.
        for word in [&s.word, &s.word2] {
            futex(
                word,
                libc::FUTEX_WAKE | self.flags,
                i32::MAX as u32,
                0,
                None,
            );
        }
        if let Kind::Waitv { words } = &self.kind {
            words[0].store(2, Ordering::Release);
            futex(&words[0], libc::FUTEX_WAKE | self.flags, 1, 0, None);
        }
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_runs_with_two_threads() {
        let ParamKind::Choice(workloads) = PARAMS[0].kind else {
            unreachable!()
        };
        for &workload in workloads {
            let p = Params::new(
                &DEF,
                &[
                    ("workload", workload),
                    ("threads", "2"),
                    ("futexes", "8"),
                    ("hold", "none"),
                ],
            );
            if let Some(why) = (DEF.unavailable)(&p) {
                eprintln!("skipped {workload}: {why}");
                continue;
            }
            check(&p).unwrap();
            let mut w = setup(&p, &Placement::unpinned()).unwrap();
            w.run(3).unwrap();
            let events = w.take_events();
            let expected = match workload {
                "wake" | "requeue" => 3,
                "wake-parallel" => 6,
                _ => 0,
            };
            assert_eq!(events.len(), expected, "{workload}: {events:?}");
            w.teardown().unwrap();
        }
    }

    #[test]
    fn perfs_barrier_holds_all_until_the_last_arrives_who_goes_on_at_once() {
        let round = Arc::new(PerfRound::new(0, 2));
        let passed = Arc::new(AtomicU32::new(0));
        let early: Vec<_> = (0..2)
            .map(|_| {
                let (r, p) = (Arc::clone(&round), Arc::clone(&passed));
                std::thread::spawn(move || {
                    r.barrier(3);
                    p.fetch_add(1, Ordering::AcqRel);
                })
            })
            .collect();
        while round.arrived.load(Ordering::Acquire) < 2 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            passed.load(Ordering::Acquire),
            0,
            "released before the last arrival"
        );
        // The last arrival does not wait: in a thread, so a wrong barrier fails, not hangs.
        let last = {
            let r = Arc::clone(&round);
            std::thread::spawn(move || r.barrier(3))
        };
        let since = std::time::Instant::now();
        while !last.is_finished() {
            assert!(
                since.elapsed() < Duration::from_secs(5),
                "the last arrival waited"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        for t in early {
            t.join().unwrap();
        }
        assert_eq!(passed.load(Ordering::Acquire), 2);
        assert_eq!(round.go.load(Ordering::Acquire), 1);
    }

    #[test]
    fn perfs_method_starts_fresh_waiters_each_event_and_leaves_none() {
        // Only this test uses perf's method: its threads are all of that name.
        let threads_now = || {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter(|t| {
                    let comm = t.as_ref().unwrap().path().join("comm");
                    std::fs::read_to_string(comm)
                        .is_ok_and(|c| c.trim().as_bytes() == PERF_THREAD.to_bytes())
                })
                .count()
        };
        // A joined thread can stay listed for a moment after its join
        // returned (CI saw one): a thread left behind stays for good.
        let threads_left = || {
            let since = std::time::Instant::now();
            while threads_now() > 0 && since.elapsed() < std::time::Duration::from_secs(2) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            threads_now()
        };
        for workload in ["wake", "requeue", "wake-parallel"] {
            let p = Params::new(
                &DEF,
                &[("workload", workload), ("threads", "3"), ("method", "perf")],
            );
            check(&p).unwrap();
            let mut w = setup(&p, &Placement::unpinned()).unwrap();
            // perf's method keeps no thread between events.
            assert_eq!(threads_left(), 0, "{workload}");
            w.run(2).unwrap();
            let expected = if workload == "wake-parallel" { 6 } else { 2 };
            let events = w.take_events();
            assert_eq!(events.len(), expected, "{workload}: {events:?}");
            // Each event includes at least the waking of its waiters.
            assert!(events.iter().all(|&ns| ns > 0), "{workload}: {events:?}");
            assert_eq!(threads_left(), 0, "{workload}");
            w.teardown().unwrap();
        }
        let e = check(&Params::new(
            &DEF,
            &[("workload", "hash"), ("method", "perf")],
        ))
        .unwrap_err();
        assert!(e.to_string().contains("--pin spread"), "{e}");
        let p = Params::new(
            &DEF,
            &[
                ("workload", "requeue"),
                ("threads", "2"),
                ("method", "perf"),
            ],
        );
        assert_eq!(case_name(&p), "requeue/2t/q1/perf");
    }

    #[test]
    fn perfs_defaults_and_names() {
        let p = Params::new(&DEF, &[("threads", "4")]);
        assert_eq!(case_name(&p), "hash/4t/1024f");
        assert_eq!(anchor(&p), "perf bench futex hash -t 4 -f 1024");
        let p = Params::new(
            &DEF,
            &[
                ("workload", "wake-parallel"),
                ("threads", "4"),
                ("wakers", "2"),
            ],
        );
        assert_eq!(anchor(&p), "perf bench futex wake-parallel -t 4 -w 2");
        assert_eq!(tasks(&p), 7);
    }

    #[test]
    fn limits_are_named_before_anything_runs() {
        let p = Params::new(
            &DEF,
            &[
                ("workload", "wake-parallel"),
                ("threads", "4"),
                ("wakers", "3"),
            ],
        );
        assert!(
            check(&p)
                .unwrap_err()
                .to_string()
                .contains("perfectly divisible")
        );
        let p = Params::new(&DEF, &[("threads", "4096"), ("futexes", "1048576")]);
        let e = check(&p).unwrap_err().to_string();
        assert!(
            e.contains("threads × futexes") && e.contains("67108864"),
            "{e}"
        );
    }
}
