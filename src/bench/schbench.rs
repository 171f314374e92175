//! `schbench`: Chris Mason's scheduler benchmark (masoncl/schbench,
//! `schbench.c`), its method rewritten here, not its code: message threads
//! hand requests to worker threads, which do a fixed amount of work per
//! request; reported are the wake-up latency and request latency percentiles
//! (p50, p90, p99, p99.9) and the requests per second.
//!
//! Each of `message_threads` message threads has `workers` worker threads.
//! Without a rate (`rps=0`, schbench's default mode) a worker marks its futex
//! blocked, stamps the time, puts itself on its message thread's lock-free
//! list, posts the message thread's futex and sleeps on its own; the message
//! thread splices the list, reads the clock once, stamps that time into every
//! worker on it and posts each (FUTEX_WAKE only when the worker announced it
//! sleeps). With a rate (`rps=N`, schbench `-R N`) each message thread posts
//! N ÷ message_threads requests per second to its workers round robin, as
//! fast as it can at the start of each second, then sleeps out the second
//! (a worker already holding more than 128 unserved posts is skipped after a
//! 100 µs nap, as schbench does); the worker takes every queued request.
//! *Wake-up latency*: from the stamp to the woken worker reading the clock.
//! *Request latency*: from the start of a request (before its `sleep_us`
//! think-time sleep) to the end of its work — so it excludes queueing, as in
//! schbench. The work: take this CPU's lock (a spin on a per-CPU lock,
//! re-taken if the thread migrated), then `operations` naive multiplications
//! of two square matrices of u64 sized so that three of them fill
//! `footprint_kb` (schbench's `do_some_math`). Times are whole microseconds
//! of CLOCK_MONOTONIC (schbench reads gettimeofday), zero ones not recorded
//! (nor a worker's last wake-up, by the stop, which carries no stamp),
//! into schbench's histogram (exact below 512 µs, then 256 buckets per power
//! of two, a bucket read as its middle); a percentile is the first bucket at
//! which the running count reaches p % of the events, as schbench computes it.
//!
//! One sample = one schbench run of `runtime` seconds with fresh threads
//! (started untimed, released together); the sample's value is the statistic
//! `stat` of that run (the harness's wall time is not used), its other
//! statistics are kept as the series' counters (`wakeup_p99_us`, `rps`, …).
//! `stat=rps` is recorded as time per request (1 ÷ requests per second, so a
//! faster run is smaller, as everywhere else). Rounds give the percentiles
//! their intervals. `auto_p99=T` (µs) searches, before the samples, for the
//! highest rate whose request p99 stays ≤ T while the workers keep up (≥ 90 %
//! of the offered rate), by short runs (doubling, then bisection), and takes
//! the samples at that rate (counter `rps_offered`); if no rate meets T, the
//! samples run at the rate with the lowest p99 and the series warns with it.
//! A probe lasts `runtime` seconds: below 100 requests per probe its p99 is
//! nearly its slowest request, so at low rates take a longer `runtime`.
//!
//! Differs from schbench on purpose (also in `osbench list`): `-A` there
//! targets a CPU busy percentage, here a request p99; runs are short and
//! repeated instead of one 30 s run; RPS is the run's completed requests ÷ its
//! measured length (schbench prints the median of per-second counts and the
//! average). Left out: pipe mode (`-p`), warm-up and zeroing intervals (the
//! harness warms up), the CPU pinning options (`--pin` places the threads),
//! `--split` shared working sets, `-L`, calibration, JSON output, the
//! schedstat delays.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::util::futex;
use super::util::ring::{Helpers, Mode};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::interrupt;
use crate::measure::placement::Placement;
use crate::measure::workload::RunReport;

/// The statistics a case can report, as `stat=` takes them.
const STATS: &[&str] = &[
    "wakeup-p50",
    "wakeup-p90",
    "wakeup-p99",
    "wakeup-p99.9",
    "request-p50",
    "request-p90",
    "request-p99",
    "request-p99.9",
    "rps",
];

pub static DEF: BenchDef = BenchDef {
    name: "schbench",
    summary: "schbench: message threads waking workers; wake-up and request latency percentiles, requests/s",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "stat",
            help: "the statistic of each run that is the sample (rps: as time per request)",
            kind: ParamKind::Choice(STATS),
            default: "request-p99",
        },
        ParamSpec {
            name: "message_threads",
            help: "message threads (schbench -m)",
            kind: ParamKind::Int { min: 1, max: 256 },
            default: "1",
        },
        ParamSpec {
            name: "workers",
            help: "worker threads per message thread (schbench -t; all: CPUs ÷ message threads, rounded up)",
            kind: ParamKind::CountOrAll { min: 1, max: 4096 },
            default: "all",
        },
        ParamSpec {
            name: "runtime",
            help: "seconds per run, one run per sample (schbench -r)",
            kind: ParamKind::Int { min: 1, max: 3600 },
            default: "1",
        },
        ParamSpec {
            name: "operations",
            help: "matrix multiplications per request (schbench -n)",
            kind: ParamKind::Int {
                min: 0,
                max: 100_000,
            },
            default: "5",
        },
        ParamSpec {
            name: "footprint_kb",
            help: "KiB of the three matrices each worker multiplies (schbench -F)",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 20,
            },
            default: "256",
        },
        ParamSpec {
            name: "sleep_us",
            help: "think-time sleep per request, µs (schbench -s)",
            kind: ParamKind::Int {
                min: 0,
                max: 1_000_000,
            },
            default: "100",
        },
        ParamSpec {
            name: "rps",
            help: "requests per second, paced per second (schbench -R; 0: workers ask as fast as they can)",
            kind: ParamKind::Int {
                min: 0,
                max: 100_000_000,
            },
            default: "0",
        },
        ParamSpec {
            name: "auto_p99",
            help: "µs: find the highest rate whose request p99 meets this, sample at it (0: off)",
            kind: ParamKind::Int {
                min: 0,
                max: 100_000_000,
            },
            default: "0",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("stat", "request-p99")],
        &[("stat", "wakeup-p99")],
        &[("stat", "rps")],
    ]),
    case_name,
    op: |p| match p.get("stat") {
        "rps" => format!(
            "one request (1 ÷ the requests/s of a {} s schbench run)",
            p.int("runtime")
        ),
        stat => format!(
            "the {stat} latency of a {} s schbench run",
            p.int("runtime")
        ),
    },
    anchor,
    differs: "runs of `runtime` s (default 1 s, schbench's 30 s) repeated as samples so that \
              rounds give percentile intervals; workers default to CPUs ÷ message threads as \
              schbench's; auto_p99 targets a request p99 where schbench -A targets a CPU busy %; \
              RPS = completed requests ÷ the run's measured length (schbench prints the median of \
              per-second counts); no pipe mode, --split, -L or warm-up/zeroing intervals; \
              schbench never writes the two matrices it reads (they are the kernel's zero page), \
              osbench's are written pages from its second sample on: on an AMD EPYC a request \
              there took 4.95 ms in schbench and 3.32 in osbench; 5.0-6.3 ms in either with the \
              zero page, and with written pages either has runs at 3.4-3.7 ms and runs at 5.4-6.0 \
              (docs/crosscheck.md, fifteenth session)",
    tasks: |p| 1 + p.int("message_threads") as usize * (1 + workers(p)),
    setup,
    sampling: Sampling::WholeRuns,
    not_swept: Some(
        "each sample is a percentile or requests/s of one whole run, not a count of iterations; \
         message_threads and workers set its tasks",
    ),
    check,
    ..BenchDef::DEFAULTS
};

/// "request-p99", with the rate mode appended: "request-p99@R200", "rps@A500".
fn case_name(p: &Params) -> String {
    let stat = p.get("stat");
    match (p.int("auto_p99"), p.int("rps")) {
        (0, 0) => stat.to_string(),
        (0, rps) => format!("{stat}@R{rps}"),
        (target, _) => format!("{stat}@A{target}"),
    }
}

/// The schbench command line of the same run (auto mode: the rate it found
/// is the series' `rps_offered` counter, to pass as `-R`).
fn anchor(p: &Params) -> String {
    let mut cmd = format!(
        "schbench -m {} -t {} -r {} -n {} -F {} -s {}",
        p.int("message_threads"),
        workers(p),
        p.int("runtime"),
        p.int("operations"),
        p.int("footprint_kb"),
        p.int("sleep_us"),
    );
    match (p.int("auto_p99"), p.int("rps")) {
        (0, 0) => {}
        (0, rps) => cmd += &format!(" -R {rps}"),
        _ => cmd += " -R <rps_offered>",
    }
    cmd
}

/// Workers per message thread: `all` is schbench's default, the CPUs this
/// process may use ÷ message threads, rounded up.
fn workers(p: &Params) -> usize {
    match p.get("workers") {
        "all" => {
            let cpus = std::thread::available_parallelism().map_or(1, usize::from);
            cpus.div_ceil(p.int("message_threads") as usize)
        }
        _ => p.count("workers"),
    }
}

fn check(p: &Params) -> Result<()> {
    let m = p.int("message_threads");
    let rps = p.int("rps");
    if rps > 0 && rps < m {
        return Err(bad(
            p,
            format!(
                "rps={rps} is split between message_threads={m}, which leaves each less than \
                 one request per second; set rps to at least {m} (or fewer message_threads)"
            ),
        ));
    }
    let threads = m as usize * (1 + workers(p));
    if threads > 8192 {
        return Err(bad(
            p,
            format!(
                "{threads} threads (message_threads × (1 + workers)) is more than the 8192 this \
                 family starts; lower message_threads or workers"
            ),
        ));
    }
    let matrices = (m as u64 * workers(p) as u64) * p.int("footprint_kb") as u64 * 1024;
    let memory = physical_memory();
    if matrices > memory / 2 {
        return Err(bad(
            p,
            format!(
                "its workers' matrices take {} MiB (message_threads × workers × footprint_kb), \
                 more than half of \
                 this machine's {} MiB of memory; lower workers or footprint_kb",
                matrices >> 20,
                memory >> 20
            ),
        ));
    }
    crate::measure::limits::check_address_space(&format!("schbench {}", case_name(p)), threads)
}

/// The machine's memory in bytes (u64::MAX when it cannot be read).
fn physical_memory() -> u64 {
    crate::env::probe::meminfo_kib("MemTotal:").map_or(u64::MAX, |kib| kib << 10)
}

fn bad(p: &Params, message: String) -> Error {
    Error::Bench {
        bench: "schbench".into(),
        case: case_name(p),
        message,
    }
}

// ---- schbench's histogram -------------------------------------------------

/// Bits of a value kept exactly in each power-of-two group.
const PLAT_BITS: u32 = 8;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_NR: usize = 19 * PLAT_VAL as usize;

/// Latencies (µs) in schbench's buckets: exact below 512, then 256 buckets
/// per power of two; the last bucket takes everything beyond.
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    events: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self {
            counts: vec![0; PLAT_NR],
            events: 0,
        }
    }
}

/// The bucket of `us`.
fn bucket_of(us: u64) -> usize {
    if us < 2 * PLAT_VAL {
        return us as usize;
    }
    let msb = 63 - us.leading_zeros();
    let dropped = msb - PLAT_BITS;
    let group_start = u64::from(dropped + 1) << PLAT_BITS;
    let within = (us >> dropped) & (PLAT_VAL - 1);
    ((group_start + within) as usize).min(PLAT_NR - 1)
}

/// The value a bucket stands for: itself when exact, else its middle.
fn bucket_value(bucket: usize) -> u64 {
    if bucket < 2 * PLAT_VAL as usize {
        return bucket as u64;
    }
    let dropped = (bucket as u32 >> PLAT_BITS) - 1;
    let low = 1u64 << (dropped + PLAT_BITS);
    let k = bucket as u64 % PLAT_VAL;
    low + ((k as f64 + 0.5) * (1u64 << dropped) as f64) as u64
}

impl Histogram {
    /// Records one latency (µs); zero is not recorded, as in schbench.
    pub fn add(&mut self, us: u64) {
        if us > 0 {
            self.counts[bucket_of(us)] += 1;
            self.events += 1;
        }
    }

    /// Adds `other`'s events.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.events += other.events;
    }

    pub fn events(&self) -> u64 {
        self.events
    }

    /// The `pct` percentile (µs): the value of the first bucket at which
    /// the running count reaches `pct` % of the events. `None` without events.
    pub fn percentile(&self, pct: f64) -> Option<u64> {
        if self.events == 0 {
            return None;
        }
        let wanted = pct / 100.0 * self.events as f64;
        let mut sum = 0u64;
        for (bucket, n) in self.counts.iter().enumerate() {
            sum += n;
            if sum as f64 >= wanted {
                return Some(bucket_value(bucket));
            }
        }
        Some(bucket_value(PLAT_NR - 1))
    }
}

// ---- one run's statistics ---------------------------------------------------

/// The percentiles schbench prints for latencies, and their counter suffixes.
const PERCENTILES: [(f64, &str); 4] = [(50.0, "p50"), (90.0, "p90"), (99.0, "p99"), (99.9, "p999")];

/// What one run measured.
#[derive(Debug, Clone, Default)]
pub struct RunStats {
    pub wakeup: Histogram,
    pub request: Histogram,
    /// Requests completed.
    pub requests: u64,
    /// From the release of the threads to the stop (ns).
    pub window_ns: u64,
}

impl RunStats {
    pub fn rps(&self) -> f64 {
        self.requests as f64 / (self.window_ns.max(1) as f64 / 1e9)
    }

    /// The value (ns) of `stat` ("wakeup-p99", "rps", …), or why there is none.
    pub fn value_ns(&self, stat: &str) -> std::result::Result<u64, String> {
        if stat == "rps" {
            if self.requests == 0 {
                return Err("no request completed in the run".into());
            }
            return Ok((1e9 / self.rps()).round() as u64);
        }
        let (kind, pct) = stat.split_once("-p").unwrap_or((stat, "99"));
        let hist = if kind == "wakeup" {
            &self.wakeup
        } else {
            &self.request
        };
        let pct: f64 = pct.parse().unwrap_or(99.0);
        hist.percentile(pct).map(|us| us * 1000).ok_or_else(|| {
            format!("the run recorded no {kind} latency of 1 µs or more (schbench drops zeros)")
        })
    }

    /// Every statistic as counters: `wakeup_p50_us` … `request_p999_us`,
    /// `rps`, `requests`, `wakeups`.
    pub fn counters(&self) -> Vec<(&'static str, f64)> {
        const NAMES: [[&str; 4]; 2] = [
            [
                "wakeup_p50_us",
                "wakeup_p90_us",
                "wakeup_p99_us",
                "wakeup_p999_us",
            ],
            [
                "request_p50_us",
                "request_p90_us",
                "request_p99_us",
                "request_p999_us",
            ],
        ];
        let mut out = Vec::new();
        for (hist, names) in [&self.wakeup, &self.request].into_iter().zip(NAMES) {
            for ((pct, _), name) in PERCENTILES.iter().zip(names) {
                if let Some(us) = hist.percentile(*pct) {
                    out.push((name, us as f64));
                }
            }
        }
        out.push(("rps", self.rps()));
        out.push(("requests", self.requests as f64));
        out.push(("wakeups", self.wakeup.events() as f64));
        out
    }
}

// ---- the auto mode's search ---------------------------------------------------

/// What one short run at an offered rate gave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    pub p99_us: f64,
    pub achieved_rps: f64,
}

/// The outcome of [`search`].
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The highest rate that met the target, or (unmet) the one with the lowest p99.
    pub rate: u64,
    pub probe: Probe,
    pub met: bool,
    /// Every rate tried, in order.
    pub tried: Vec<(u64, Probe)>,
}

/// The highest rate the search tries.
pub const MAX_RATE: u64 = 10_000_000;
/// Bisection stops when the bracket is this fraction of its low end.
const RESOLUTION: f64 = 0.05;

/// Whether `probe` at `rate` meets a p99 target of `target_us` while keeping up.
fn meets(target_us: f64, rate: u64, probe: Probe) -> bool {
    probe.p99_us <= target_us && probe.achieved_rps >= 0.9 * rate as f64
}

/// Finds the highest rate in `floor..=MAX_RATE` whose request p99 meets
/// `target_us`: doubling (or halving) from `start` until the target is
/// bracketed, then bisecting to 5 %. `probe(rate)` runs one short run.
pub fn search(
    target_us: f64,
    start: u64,
    floor: u64,
    mut probe: impl FnMut(u64) -> Result<Probe>,
) -> Result<Found> {
    let mut tried = Vec::new();
    let mut run = |rate: u64, tried: &mut Vec<(u64, Probe)>| -> Result<bool> {
        let p = probe(rate)?;
        tried.push((rate, p));
        Ok(meets(target_us, rate, p))
    };
    let (mut lo, mut hi) = (None::<u64>, None::<u64>);
    let mut rate = start.clamp(floor, MAX_RATE);
    loop {
        if run(rate, &mut tried)? {
            lo = Some(rate);
            if hi.is_some() || rate >= MAX_RATE {
                break;
            }
            rate = (rate * 2).min(MAX_RATE);
        } else {
            hi = Some(rate);
            if lo.is_some() || rate <= floor {
                break;
            }
            rate = (rate / 2).max(floor);
        }
    }
    if let (Some(mut low), Some(mut high)) = (lo, hi) {
        while (high - low) as f64 > (low as f64 * RESOLUTION).max(1.0) {
            let mid = low + (high - low) / 2;
            if run(mid, &mut tried)? {
                low = mid;
            } else {
                high = mid;
            }
        }
        lo = Some(low);
    }
    Ok(outcome(lo, tried))
}

/// The search's answer from the highest rate that met the target (if any)
/// and every rate tried: unmet, the rate with the lowest p99 (the higher
/// rate of a tie).
fn outcome(met: Option<u64>, tried: Vec<(u64, Probe)>) -> Found {
    let (rate, probe) = match met {
        Some(rate) => *tried
            .iter()
            .rev()
            .find(|(r, _)| *r == rate)
            .expect("a tried rate"),
        None => *tried
            .iter()
            .min_by(|a, b| a.1.p99_us.total_cmp(&b.1.p99_us).then(b.0.cmp(&a.0)))
            .expect("at least one rate tried"),
    };
    Found {
        rate,
        probe,
        met: met.is_some(),
        tried,
    }
}

/// The warning of a target no rate met.
pub fn unmet_warning(target_us: u64, found: &Found) -> String {
    format!(
        "auto_p99: no request rate met request p99 ≤ {target_us} µs while keeping up (serving \
         ≥ 90 % of it) among the {} rates tried, {} to {} requests/s. The best was {} \
         requests/s with request p99 {:.0} µs ({:.0} requests/s served), and these samples ran \
         at it: raise auto_p99 or lighten the work (operations, sleep_us)",
        found.tried.len(),
        found.tried.iter().map(|t| t.0).min().unwrap_or(0),
        found.tried.iter().map(|t| t.0).max().unwrap_or(0),
        found.rate,
        found.probe.p99_us,
        found.probe.achieved_rps,
    )
}

// ---- the threads ------------------------------------------------------------

const BLOCKED: u32 = 0;
const RUNNING: u32 = 1;
/// Unserved posts beyond which a rate thread skips a worker (schbench's batch).
const MAX_PENDING: u64 = 128;

/// Posts `word` (a futex a thread sleeps on), waking it only if it was blocked.
fn post(word: &AtomicU32) {
    if word
        .compare_exchange(BLOCKED, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
    {
        let _ = futex::wake(word, true);
    }
}

/// Sleeps until `word` is posted (then sets it blocked again), or `stop` is
/// set. Untimed, as schbench's fwait: a timed FUTEX_WAIT arms an hrtimer
/// and cancels it on waking, inside the wake-up latency measured (in a VM
/// programming a timer can exit to the host). The stop posts every worker
/// and message thread after setting `stop`, so none sleeps on.
fn wait(word: &AtomicU32, stop: &AtomicU32) {
    while word
        .compare_exchange(RUNNING, BLOCKED, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        if stop.load(Ordering::SeqCst) != 0 {
            return;
        }
        let _ = futex::wait(word, BLOCKED, true, None);
    }
}

fn now_us() -> u64 {
    monotonic_ns() / 1000
}

/// One worker's shared state.
#[derive(Default)]
struct WorkerSlot {
    futex: AtomicU32,
    /// When it was posted (µs), stamped by its waker.
    wake_us: AtomicU64,
    /// The next worker (index + 1, 0 = none) on its message thread's list.
    next: AtomicUsize,
    /// Rate mode: requests queued for it, and posts it has not yet served.
    queued: AtomicU64,
    pending: AtomicU64,
    done: AtomicU64,
    stats: Mutex<Option<(Histogram, Histogram)>>,
}

/// One message thread's shared state.
#[derive(Default)]
struct MessageSlot {
    futex: AtomicU32,
    /// Its list of waiting workers (index + 1, 0 = empty).
    head: AtomicUsize,
}

/// What one run's threads share.
struct Shared {
    go: AtomicU32,
    stop: AtomicU32,
    /// When the run ends (ns, CLOCK_MONOTONIC): no rate burst starts after it.
    deadline_ns: AtomicU64,
    workers_per: usize,
    /// Requests per second per message thread (0: no rate).
    rate: u64,
    operations: u64,
    matrix: usize,
    sleep_us: u64,
    messages: Vec<MessageSlot>,
    workers: Vec<WorkerSlot>,
    cpu_locks: Vec<AtomicBool>,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst) != 0
    }

    /// Waits (untimed, before the run) until the run is released.
    fn wait_go(&self) {
        while self.go.load(Ordering::SeqCst) == 0 {
            let _ = futex::wait(&self.go, 0, true, Some(Duration::from_millis(100)));
        }
    }

    fn my_workers(&self, msg: usize) -> std::ops::Range<usize> {
        msg * self.workers_per..(msg + 1) * self.workers_per
    }

    /// Splices message thread `msg`'s list and posts every worker on it,
    /// stamped with one time read (schbench's xlist_wake_all).
    fn wake_all(&self, msg: usize) {
        let mut next = self.messages[msg].head.swap(0, Ordering::SeqCst);
        let now = now_us();
        while next != 0 {
            let w = &self.workers[next - 1];
            next = w.next.swap(0, Ordering::SeqCst);
            w.wake_us.store(now, Ordering::SeqCst);
            post(&w.futex);
        }
    }

    /// Puts worker `i` on message thread `msg`'s list (a compare-and-swap prepend).
    fn enlist(&self, msg: usize, i: usize) {
        let head = &self.messages[msg].head;
        let mut old = head.load(Ordering::SeqCst);
        loop {
            self.workers[i].next.store(old, Ordering::SeqCst);
            match head.compare_exchange(old, i + 1, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }
}

/// Message thread `msg` without a rate: wakes whoever is on its list
/// whenever posted, until the stop (schbench's run_msg_thread).
fn message_loop(s: &Shared, msg: usize) {
    s.wait_go();
    let me = &s.messages[msg];
    loop {
        me.futex.store(BLOCKED, Ordering::SeqCst);
        s.wake_all(msg);
        if s.stopping() {
            s.wake_all(msg);
            return;
        }
        wait(&me.futex, &s.stop);
    }
}

/// Message thread `msg` with a rate: each second, posts its share of
/// requests round robin as fast as it can, then sleeps out the second
/// (schbench's run_rps_thread).
fn rate_loop(s: &Shared, msg: usize) {
    s.wait_go();
    let mine = s.my_workers(msg);
    let mut turn = 0usize;
    while !s.stopping() {
        let second = monotonic_ns();
        if second >= s.deadline_ns.load(Ordering::SeqCst) {
            // The run is over: no burst that its stop would cut short.
            let _ = futex::wait(&s.stop, 0, true, Some(Duration::from_millis(100)));
            continue;
        }
        for _ in 0..s.rate {
            if s.stopping() {
                break;
            }
            let w = &s.workers[mine.start + turn % mine.len()];
            turn += 1;
            if w.pending.load(Ordering::SeqCst) > MAX_PENDING {
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            w.pending.fetch_add(1, Ordering::SeqCst);
            w.queued.fetch_add(1, Ordering::SeqCst);
            w.wake_us.store(now_us(), Ordering::SeqCst);
            post(&w.futex);
        }
        let left = 1_000_000_000u64.saturating_sub(monotonic_ns() - second);
        if left > 0 {
            // Sleeps out the second, or until the stop (which wakes this word).
            let _ = futex::wait(&s.stop, 0, true, Some(Duration::from_nanos(left)));
        }
    }
    mine.for_each(|i| post(&s.workers[i].futex));
}

/// Worker `i` of message thread `msg`: asks for work, sleeps until woken,
/// records its wake-up latency, serves its requests (schbench's worker_thread).
fn worker_loop(s: &Shared, msg: usize, i: usize) {
    let n = s.matrix;
    let mut data = vec![0u64; 3 * n * n];
    let (mut wakeup, mut request) = (Histogram::default(), Histogram::default());
    let me = &s.workers[i];
    s.wait_go();
    while !s.stopping() {
        me.futex.store(BLOCKED, Ordering::SeqCst);
        me.wake_us.store(now_us(), Ordering::SeqCst);
        let mut serve = 1;
        if s.rate > 0 {
            me.pending.store(0, Ordering::SeqCst);
            serve = me.queued.swap(0, Ordering::SeqCst);
            if serve > 0 {
                me.futex.store(RUNNING, Ordering::SeqCst);
            }
        } else {
            s.enlist(msg, i);
        }
        if serve == 0 || s.rate == 0 {
            post(&s.messages[msg].futex);
            if !s.stopping() {
                wait(&me.futex, &s.stop);
            }
            // A wake-up by the stop is not stamped (schbench records it, which
            // its 30 s runs hide but a 1 s run at a low rate would not).
            if !s.stopping() {
                wakeup.add(now_us().saturating_sub(me.wake_us.load(Ordering::SeqCst)));
            }
            if s.rate > 0 {
                continue;
            }
        }
        for _ in 0..serve {
            if s.stopping() {
                break;
            }
            let start = now_us();
            if s.sleep_us > 0 {
                std::thread::sleep(Duration::from_micros(s.sleep_us));
            }
            do_work(s, &mut data);
            me.done.fetch_add(1, Ordering::SeqCst);
            request.add(now_us().saturating_sub(start));
        }
    }
    *me.stats.lock().unwrap_or_else(|e| e.into_inner()) = Some((wakeup, request));
}

/// One request's work: this CPU's lock held while multiplying the matrices
/// `operations` times (schbench's do_work without --split).
fn do_work(s: &Shared, data: &mut [u64]) {
    let lock = lock_this_cpu(&s.cpu_locks);
    for _ in 0..s.operations {
        multiply(data, s.matrix);
    }
    if let Some(l) = lock {
        l.store(false, Ordering::Release);
    }
}

/// Spins for the lock of the CPU this thread runs on, taking it again if the
/// thread moved meanwhile (schbench's lock_this_cpu); `None` if the CPU is
/// unknown.
fn lock_this_cpu(locks: &[AtomicBool]) -> Option<&AtomicBool> {
    loop {
        // SAFETY: sched_getcpu takes no arguments and only returns a number.
        let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
        let lock = locks.get(cpu)?;
        while lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: as above.
        if usize::try_from(unsafe { libc::sched_getcpu() }).ok() == Some(cpu) {
            return Some(lock);
        }
        lock.store(false, Ordering::Release);
    }
}

/// m3 = m1 × m2, naively, over three n × n matrices laid end to end in
/// `data`: for each cell, a row of m1 against a column of m2 (a stride of n
/// words), as schbench's `do_some_math`.
fn multiply(data: &mut [u64], n: usize) {
    let (m1m2, m3) = data.split_at_mut(2 * n * n);
    let (m1, m2) = m1m2.split_at(n * n);
    for (row, out) in m1.chunks_exact(n).zip(m3.chunks_exact_mut(n)) {
        for (j, cell) in out.iter_mut().enumerate() {
            // SAFETY: `row` is n words (a chunk of n); m2 is n × n words, so
            // from column j < n the words k × n, k < n, lie inside `&m2[j..]`.
            unsafe { row_times_column(row, &m2[j..], n, cell) };
        }
    }
    std::hint::black_box(m3);
}

/// `cell` = `row` · the column whose words lie `n` apart from the start of
/// `column`, in gcc's instructions for schbench's inner loop (Debian's gcc
/// 12 `-O2`, from schbench's disassembly): the cell zeroed, then per step a
/// load, a multiply from memory, the two pointers advanced, the add, and
/// the running sum stored to the cell (in C the cell may alias the
/// matrices, so every step stores). Rust's own loop for the same sum took
/// 0.80 × gcc's time with the sum kept in a register, and 0.88 × with a
/// store per step but its own unrolling (104 × 104, Intel guest, 6 Dec),
/// which made osbench's requests 10–15 % shorter than schbench's.
///
/// # Safety
/// `n > 0`, `row` is `n` words and `column` more than `(n − 1) × n` (the
/// caller's matrices guarantee it, so no check sits in the measured loop).
#[cfg(target_arch = "x86_64")]
unsafe fn row_times_column(row: &[u64], column: &[u64], n: usize, cell: &mut u64) {
    debug_assert!(n > 0 && row.len() == n && column.len() > (n - 1) * n);
    let row_end = row.as_ptr_range().end;
    // SAFETY: reads row[0..n] and column[k * n] for k < n, all inside the
    // slices (the caller's promise); writes only `cell`; no stack used.
    unsafe {
        std::arch::asm!(
            "mov qword ptr [{cell}], 0",
            "xor {sum:e}, {sum:e}",
            "2:",
            "mov {t}, qword ptr [{a}]",
            "imul {t}, qword ptr [{b}]",
            "add {a}, 8",
            "add {b}, {stride}",
            "add {sum}, {t}",
            "mov qword ptr [{cell}], {sum}",
            "cmp {a}, {row_end}",
            "jne 2b",
            cell = in(reg) cell as *mut u64,
            a = inout(reg) row.as_ptr() => _,
            b = inout(reg) column.as_ptr() => _,
            stride = in(reg) n * 8,
            row_end = in(reg) row_end,
            sum = out(reg) _,
            t = out(reg) _,
            options(nostack),
        );
    }
}

/// `cell` = `row` · the column whose words lie `n` apart from the start of
/// `column` (elsewhere than x86-64: the compiler's own loop; unsafe only to
/// share the x86-64 one's contract).
#[cfg(not(target_arch = "x86_64"))]
unsafe fn row_times_column(row: &[u64], column: &[u64], n: usize, cell: &mut u64) {
    *cell = (row.iter().zip(column.iter().step_by(n)))
        .fold(0u64, |acc, (&a, &b)| acc.wrapping_add(a.wrapping_mul(b)));
}

// ---- the workload ------------------------------------------------------------

/// A case's fixed shape.
#[derive(Debug, Clone)]
struct Shape {
    messages: usize,
    workers: usize,
    runtime: Duration,
    operations: u64,
    matrix: usize,
    sleep_us: u64,
    /// Placement of task 1.. (message thread m is task 1 + m × (1 + workers),
    /// its workers the tasks after it).
    cpus: Vec<Option<usize>>,
}

/// One run's threads, started and waiting for the release.
struct Run {
    shared: Arc<Shared>,
    helpers: Helpers,
}

struct Schbench {
    shape: Shape,
    stat: &'static str,
    /// The rate to sample at (0: none): `rps=`, or what the auto search found.
    rate: u64,
    /// auto_p99's target (µs), until the search has run.
    auto: Option<u64>,
    warning: Option<String>,
    next: Option<Run>,
    last: Option<RunStats>,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    let (messages, workers) = (p.int("message_threads") as usize, workers(p));
    let tasks = 1 + messages * (1 + workers);
    let kb = p.int("footprint_kb") as f64;
    let shape = Shape {
        messages,
        workers,
        runtime: Duration::from_secs(p.int("runtime") as u64),
        operations: p.int("operations") as u64,
        matrix: (kb * 1024.0 / 3.0 / 8.0).sqrt() as usize,
        sleep_us: p.int("sleep_us") as u64,
        cpus: (1..tasks).map(|t| placement.cpu_of(t)).collect(),
    };
    let stat = STATS
        .iter()
        .copied()
        .find(|s| *s == p.get("stat"))
        .unwrap_or("request-p99");
    Ok(Box::new(Schbench {
        shape,
        stat,
        rate: p.int("rps") as u64,
        auto: Some(p.int("auto_p99") as u64).filter(|t| *t > 0),
        warning: None,
        next: None,
        last: None,
    }))
}

impl Shape {
    /// Starts one run's threads at `rate` requests/s (0: none); they wait for
    /// the release.
    fn start(&self, rate: u64) -> Result<Run> {
        let shared = Arc::new(Shared {
            go: AtomicU32::new(0),
            stop: AtomicU32::new(0),
            deadline_ns: AtomicU64::new(u64::MAX),
            workers_per: self.workers,
            rate: rate / self.messages as u64,
            operations: self.operations,
            matrix: self.matrix,
            sleep_us: self.sleep_us,
            messages: (0..self.messages).map(|_| MessageSlot::default()).collect(),
            workers: (0..self.messages * self.workers)
                .map(|_| WorkerSlot::default())
                .collect(),
            cpu_locks: (0..configured_cpus())
                .map(|_| AtomicBool::new(false))
                .collect(),
        });
        let mut run = Run {
            shared,
            helpers: Helpers::new(Mode::Threads, "schbench", 256 * 1024),
        };
        for msg in 0..self.messages {
            if let Err(e) = self.spawn_group(&mut run, msg) {
                run.stop();
                return Err(e);
            }
        }
        Ok(run)
    }

    /// Starts message thread `msg` of `run` and its workers.
    fn spawn_group(&self, run: &mut Run, msg: usize) -> Result<()> {
        let task = msg * (1 + self.workers);
        let s = Arc::clone(&run.shared);
        run.helpers.spawn(self.cpus[task], &[], move || {
            if s.rate > 0 {
                rate_loop(&s, msg)
            } else {
                message_loop(&s, msg)
            }
            Ok(())
        })?;
        for w in 0..self.workers {
            let s = Arc::clone(&run.shared);
            let i = msg * self.workers + w;
            run.helpers.spawn(self.cpus[task + 1 + w], &[], move || {
                worker_loop(&s, msg, i);
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Releases `run`, lets it run for the runtime (or until a stop is
    /// requested), stops it and collects its statistics.
    fn finish(&self, mut run: Run) -> Result<RunStats> {
        let s = Arc::clone(&run.shared);
        let started = monotonic_ns();
        let end = started + self.runtime.as_nanos() as u64;
        s.deadline_ns.store(end, Ordering::SeqCst);
        s.go.store(1, Ordering::SeqCst);
        let _ = futex::wake_all(&s.go, true);
        let mut interrupted = false;
        while monotonic_ns() < end {
            if interrupt::requested() {
                interrupted = true;
                break;
            }
            let left = end.saturating_sub(monotonic_ns());
            std::thread::sleep(Duration::from_nanos(left.min(50_000_000)));
        }
        let window_ns = monotonic_ns() - started;
        run.stop();
        run.helpers.join_all()?;
        if interrupted {
            return Err(Error::Interrupted);
        }
        let mut stats = RunStats {
            window_ns,
            ..RunStats::default()
        };
        for w in &s.workers {
            stats.requests += w.done.load(Ordering::SeqCst);
            let taken = w.stats.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((wakeup, request)) = taken {
                stats.wakeup.merge(&wakeup);
                stats.request.merge(&request);
            }
        }
        Ok(stats)
    }

    /// One short run at `rate`, for the auto search.
    fn probe(&self, rate: u64) -> Result<Probe> {
        let stats = self.finish(self.start(rate)?)?;
        Ok(Probe {
            p99_us: stats.request.percentile(99.0).unwrap_or(u64::MAX) as f64,
            achieved_rps: stats.rps(),
        })
    }
}

/// The CPUs the kernel was configured with (every number sched_getcpu can return).
fn configured_cpus() -> usize {
    // SAFETY: sysconf only reads a system setting.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    usize::try_from(n).unwrap_or(1).max(1)
}

impl Run {
    /// Sets the stop and wakes every thread of the run.
    fn stop(&mut self) {
        let s = &self.shared;
        s.go.store(1, Ordering::SeqCst);
        let _ = futex::wake_all(&s.go, true);
        s.stop.store(1, Ordering::SeqCst);
        let _ = futex::wake_all(&s.stop, true);
        s.messages.iter().for_each(|m| post(&m.futex));
        s.workers.iter().for_each(|w| post(&w.futex));
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Schbench {
    /// The auto mode's search, once, before the first run.
    fn search_rate(&mut self) -> Result<()> {
        let Some(target) = self.auto.take() else {
            return Ok(());
        };
        let floor = self.shape.messages as u64;
        let start = if self.rate > 0 { self.rate } else { 100 };
        let shape = self.shape.clone();
        let found = search(target as f64, start, floor, |rate| shape.probe(rate))?;
        self.rate = found.rate;
        if !found.met {
            self.warning = Some(unmet_warning(target, &found));
        }
        Ok(())
    }
}

impl Workload for Schbench {
    fn prepare(&mut self) -> Result<()> {
        self.search_rate()?;
        self.next = None;
        self.next = Some(self.shape.start(self.rate)?);
        Ok(())
    }

    fn run(&mut self, _iters: u64) -> Result<()> {
        let run = match self.next.take() {
            Some(run) => run,
            None => self.shape.start(self.rate)?,
        };
        let stats = self.shape.finish(run)?;
        // A run without the statistic gives no sample (never a zero).
        stats.value_ns(self.stat).map_err(|why| Error::Bench {
            bench: "schbench".into(),
            case: self.stat.into(),
            message: format!(
                "{why}; at a low rps the workers are woken once per burst of requests: take \
                 stat=request-… or rps, or a longer runtime"
            ),
        })?;
        self.last = Some(stats);
        Ok(())
    }

    fn run_report(&mut self) -> Option<RunReport> {
        let stats = self.last.take()?;
        let mut counters = stats.counters();
        if self.rate > 0 {
            counters.push(("rps_offered", self.rate as f64));
        }
        Some(RunReport {
            value_ns: stats.value_ns(self.stat).ok()?,
            counters,
            warning: self.warning.clone(),
        })
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        if let Some(mut run) = self.next.take() {
            run.stop();
            run.helpers.join_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matrices_multiply_row_by_column() {
        // m1 = [1 2; 3 4], m2 = [5 6; 7 8]: m3 = [19 22; 43 50].
        let mut data = vec![1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0];
        multiply(&mut data, 2);
        assert_eq!(data[8..], [19, 22, 43, 50]);
        let mut three: Vec<u64> = (1..=27).collect();
        multiply(&mut three, 3);
        // Row 0 of m1 (1 2 3) against column 0 of m2 (10 13 16).
        assert_eq!(three[18], 10 + 2 * 13 + 3 * 16);
    }

    #[test]
    fn buckets_are_exact_below_512_then_rounded_to_their_middle() {
        for us in [0, 1, 7, 255, 511] {
            assert_eq!(bucket_value(bucket_of(us)), us);
        }
        // 512 and 513 share a bucket of width 2, read as 513.
        assert_eq!(bucket_of(512), bucket_of(513));
        assert_eq!(bucket_value(bucket_of(512)), 513);
        // 1000 lies in the width-2 group [512, 1024): bucket [1000, 1002).
        assert_eq!(bucket_value(bucket_of(1000)), 1001);
        // 5000 is in [4096, 8192), buckets of 16: [4992, 5008) → 5000.
        assert_eq!(bucket_value(bucket_of(5000)), 5000);
        assert_eq!(bucket_of(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_follow_schbench_and_drop_zeros() {
        let mut h = Histogram::default();
        h.add(0);
        for us in 1..=1000 {
            h.add(us);
        }
        assert_eq!(h.events(), 1000);
        assert_eq!(h.percentile(50.0), Some(500));
        assert_eq!(h.percentile(90.0), Some(901));
        assert_eq!(h.percentile(99.0), Some(991));
        // 99.9 / 100 × 1000 is 999.0000000000001 in doubles, in schbench's C as
        // here, so the 999th event does not reach it: the next bucket does.
        assert_eq!(h.percentile(99.9), Some(1001));
        assert_eq!(Histogram::default().percentile(50.0), None);
    }

    #[test]
    fn a_run_gives_each_statistic_and_rps_as_time_per_request() {
        let mut stats = RunStats {
            requests: 500,
            window_ns: 2_000_000_000,
            ..RunStats::default()
        };
        for us in 1..=100 {
            stats.wakeup.add(us);
            stats.request.add(us * 10);
        }
        assert_eq!(stats.value_ns("wakeup-p50"), Ok(50_000));
        assert_eq!(stats.value_ns("request-p99.9"), Ok(1_001_000));
        assert_eq!(stats.value_ns("rps"), Ok(4_000_000));
        let names: Vec<&str> = stats.counters().iter().map(|c| c.0).collect();
        assert!(names.contains(&"wakeup_p999_us") && names.contains(&"rps"));
        let none = RunStats::default();
        assert!(none.value_ns("rps").unwrap_err().contains("no request"));
        assert!(none.value_ns("wakeup-p99").unwrap_err().contains("wakeup"));
    }

    /// A fake machine: request p99 grows past the knee at 3000 requests/s,
    /// and it serves at most 5000.
    fn fake(rate: u64) -> Result<Probe> {
        let p99 = if rate <= 3000 {
            200.0
        } else {
            200.0 + (rate - 3000) as f64
        };
        Ok(Probe {
            p99_us: p99,
            achieved_rps: rate.min(5000) as f64,
        })
    }

    #[test]
    fn the_search_finds_the_highest_rate_meeting_the_target() {
        // p99 ≤ 700 µs up to 3500 requests/s.
        let found = search(700.0, 100, 1, fake).unwrap();
        assert!(found.met);
        assert!((3500 - 3500 / 20..=3500).contains(&found.rate), "{found:?}");
        // Met everywhere the machine keeps up: the limit is its 5000/s (÷ 0.9).
        let found = search(1e9, 100, 1, fake).unwrap();
        assert!(
            found.met && found.rate <= 5555 && found.rate >= 5000,
            "{found:?}"
        );
        // Starting above the knee, it halves down to it.
        let found = search(700.0, 50_000, 1, fake).unwrap();
        assert!(
            found.met && found.rate <= 3500 && found.rate >= 3300,
            "{found:?}"
        );
    }

    #[test]
    fn an_unmeetable_target_gives_the_best_rate_and_its_p99() {
        let found = search(100.0, 100, 1, fake).unwrap();
        assert!(!found.met);
        assert_eq!(found.probe.p99_us, 200.0);
        // Every rate from 100 down to 1 gives 200 µs: the highest of them is kept.
        assert_eq!(found.rate, 100);
        let text = unmet_warning(100, &found);
        assert!(
            text.contains("≤ 100 µs")
                && text.contains("The best was 100 requests/s")
                && text.contains("p99 200 µs"),
            "{text}"
        );
    }

    #[test]
    fn bad_rates_and_thread_counts_are_refused_with_what_to_do() {
        let p = Params::new(&DEF, &[("message_threads", "4"), ("rps", "2")]);
        let e = check(&p).unwrap_err().to_string();
        assert!(e.contains("set rps to at least 4"), "{e}");
        let p = Params::new(&DEF, &[("message_threads", "256"), ("workers", "64")]);
        let e = check(&p).unwrap_err().to_string();
        assert!(e.contains("lower message_threads or workers"), "{e}");
        let p = Params::new(&DEF, &[("workers", "4096"), ("footprint_kb", "1048576")]);
        let e = check(&p).unwrap_err().to_string();
        assert!(e.contains("lower workers or footprint_kb"), "{e}");
        assert!(check(&Params::new(&DEF, &[])).is_ok());
    }

    #[test]
    fn case_names_and_anchor_name_the_rate_mode() {
        let p = Params::new(&DEF, &[("rps", "200"), ("workers", "2")]);
        assert_eq!(case_name(&p), "request-p99@R200");
        assert_eq!(
            anchor(&p),
            "schbench -m 1 -t 2 -r 1 -n 5 -F 256 -s 100 -R 200"
        );
        let p = Params::new(&DEF, &[("stat", "rps"), ("auto_p99", "500")]);
        assert_eq!(case_name(&p), "rps@A500");
    }
}
