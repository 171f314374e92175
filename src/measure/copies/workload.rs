//! [`CopiesWorkload`]: N copies of a case started (processes through the
//! [`Supervisor`], so they die with osbench; or threads, joined), each
//! looping on its own set-up of the case and counting in [`Counters`]; its
//! `run(iters)` waits, without reading a clock, until the copies together
//! completed `iters × N` iterations. Left out: the limits checked before
//! starting (`limits`), and which case it is (the set-up closure).

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::counters::{Counters, RUNNING, STARTING};
use super::{Copies, Mode};
use crate::error::{Error, Result};
use crate::measure::interrupt;
use crate::measure::placement::{Pin, Placement, allowed_cpus, pin_thread_for_life};
use crate::measure::supervise::{Exit, Supervisor};
use crate::measure::workload::Workload;

/// Sets one copy of the case up, placed as given (task 0 on `cpu_of(0)`).
pub type SetupFn = Arc<dyn Fn(&Placement) -> Result<Box<dyn Workload>> + Send + Sync>;

/// The shortest sleep between two readings of the counters.
const POLL: Duration = Duration::from_micros(50);
/// The longest (a stop request waits no longer to be seen).
const MAX_NAP: Duration = Duration::from_millis(50);
/// Without progress for this long, the copies are asked whether one failed.
const CHECK_AFTER: Duration = Duration::from_millis(50);
/// Without progress for this long, the copies are taken as stuck.
const STALL: Duration = Duration::from_secs(10);
/// Readings of the copies' set-up before giving up (about 60 s at 1 ms).
const SETUP_POLLS: u32 = 60_000;
/// Stack of a copy thread: room for a family's set-up (a debug build's
/// frames included), far below the 2 MiB default, so that 512 copies
/// reserve 128 MiB of address space rather than 1 GiB.
pub const COPY_STACK_BYTES: usize = 256 << 10;

/// N running copies of one case.
pub struct CopiesWorkload {
    copies: Copies,
    counters: Arc<Counters>,
    /// Iterations per copy the last `run` saw completed when it returned.
    completed: u64,
    supervisor: Option<Supervisor>,
    threads: Vec<JoinHandle<()>>,
}

impl CopiesWorkload {
    /// Starts `copies` of the case `setup` sets up (children named
    /// `osbench-<bench>`) and waits until every one is looping on it; an
    /// error names the copy that failed and why, with nothing left running.
    /// With `whole_runs`, each iteration of a copy is the case's `prepare()`
    /// then `run(1)` (a whole-run family: will-it-scale's page_fault1 maps
    /// and unmaps inside its loop too).
    pub fn start(bench: &str, copies: Copies, setup: SetupFn, whole_runs: bool) -> Result<Self> {
        let counters = Arc::new(Counters::new(copies.n)?);
        let mut this = Self {
            copies,
            counters,
            completed: 0,
            supervisor: (copies.mode == Mode::Processes).then(|| Supervisor::new(bench)),
            threads: Vec::new(),
        };
        let allowed = allowed_cpus()?;
        for i in 0..copies.n {
            let cpu = copies.cpu_of(i, &allowed);
            this.start_one(i, cpu, Arc::clone(&setup), whole_runs)?;
        }
        this.await_running()?;
        Ok(this)
    }

    fn start_one(
        &mut self,
        i: usize,
        cpu: Option<usize>,
        setup: SetupFn,
        whole_runs: bool,
    ) -> Result<()> {
        let counters = Arc::clone(&self.counters);
        let placement = match cpu {
            Some(c) => Placement {
                pin: Pin::Same,
                cpus: vec![c],
            },
            None => Placement::unpinned(),
        };
        match &mut self.supervisor {
            Some(sup) => {
                // The supervisor pins the child to `cpu` before the body runs.
                sup.fork(cpu, &[], move || {
                    copy_body(i, &counters, &setup, &placement, whole_runs)
                })?;
            }
            None => {
                let handle = std::thread::Builder::new()
                    .name(format!("osbench-copy{i}"))
                    .stack_size(COPY_STACK_BYTES)
                    .spawn(move || {
                        if let Some(c) = cpu
                            && let Err(e) = pin_thread_for_life(c)
                        {
                            counters.fail(i, &e.to_string());
                            return;
                        }
                        copy_body(i, &counters, &setup, &placement, whole_runs);
                    })
                    .map_err(|e| crate::measure::limits::thread_error(i, e))?;
                self.threads.push(handle);
            }
        }
        Ok(())
    }

    /// Waits until every copy runs; the first failure (or a stop) ends it.
    fn await_running(&mut self) -> Result<()> {
        for _ in 0..SETUP_POLLS {
            if let Some(e) = self.failure() {
                return Err(e);
            }
            if interrupt::requested() {
                return Err(Error::Interrupted);
            }
            if (0..self.copies.n).all(|i| self.counters.state(i) == RUNNING) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let starting = (0..self.copies.n)
            .filter(|&i| self.counters.state(i) == STARTING)
            .count();
        Err(Error::Measure(format!(
            "{starting} of {} tasks had not set the case up after 60 s; run fewer --tasks",
            self.copies.n
        )))
    }

    /// The first copy that failed, as an error naming it.
    fn failure(&self) -> Option<Error> {
        (0..self.copies.n).find_map(|i| {
            self.counters.failure(i).map(|why| {
                Error::Measure(format!(
                    "task {} of {} ({}) failed: {why}",
                    i + 1,
                    self.copies.n,
                    self.copies.mode.as_str()
                ))
            })
        })
    }

    /// Stops the copies and waits for them; the first failure is the error.
    fn stop(&mut self) -> Result<()> {
        self.counters.stop();
        let stuck = join_within(&mut self.threads, STOP_WITHIN);
        if stuck > 0 {
            return Err(Error::Measure(format!(
                "{stuck} of {} task threads did not stop within {} s of being told to (an \
                 operation that never returns); they end with osbench",
                self.copies.n,
                STOP_WITHIN.as_secs()
            )));
        }
        let exits = match &mut self.supervisor {
            Some(sup) => sup.wait_all(Duration::from_secs(5))?,
            None => Vec::new(),
        };
        if let Some(e) = self.failure() {
            return Err(e);
        }
        match exits.iter().position(|e| *e != Exit::Code(0)) {
            Some(i) => Err(Error::Measure(format!(
                "task {} of {} ended with {:?}",
                i + 1,
                self.copies.n,
                exits[i]
            ))),
            None => Ok(()),
        }
    }
}

/// One copy: sets the case up, marks itself running, loops on the operation
/// (each a whole run after its `prepare` with `whole_runs`; else batches of
/// [`batch_size`]) counting the iterations until told to stop, tears down.
/// The exit code.
fn copy_body(
    i: usize,
    counters: &Counters,
    setup: &SetupFn,
    placement: &Placement,
    whole_runs: bool,
) -> i32 {
    let mut w = match setup(placement) {
        Ok(w) => w,
        Err(e) => {
            counters.fail(i, &e.to_string());
            return 1;
        }
    };
    let batch = match whole_runs {
        true => Ok(1),
        false => batch_size(w.as_mut()),
    };
    let batch = match batch {
        Ok(b) => b,
        Err(e) => {
            counters.fail(i, &e.to_string());
            return 1;
        }
    };
    counters.set_state(i, RUNNING);
    while !counters.stopping() {
        let prepared = if whole_runs { w.prepare() } else { Ok(()) };
        if let Err(e) = prepared.and_then(|()| w.run(batch)) {
            counters.fail(i, &e.to_string());
            return 1;
        }
        counters.add(i, batch);
    }
    match w.teardown() {
        Ok(()) => 0,
        Err(e) => {
            counters.fail(i, &e.to_string());
            1
        }
    }
}

/// How long a copy's batch of iterations should take, at least.
const BATCH_TIME: Duration = Duration::from_micros(2);
/// The most iterations in one batch.
const MAX_BATCH: u64 = 1 << 16;

/// How long a copy runs its case untimed before sizing its batches: the
/// first runs fault pages in and miss every cache.
const WARM_TIME: Duration = Duration::from_micros(100);

/// The iterations a copy runs between two updates of its counter: after
/// [`WARM_TIME`] of single iterations, as many as take [`BATCH_TIME`], found
/// by doubling (the runs it takes are not counted), each size timed three
/// times and the fastest run kept, so a cold run or a stall cannot settle
/// the size too small. So the loop around the operation — a call, the stop
/// flag, the counter — costs about what will-it-scale's `(*iterations)++`
/// does: one iteration a call read 1.065 of will-it-scale's getppid1 at 1
/// task, and the size one cold run chose 1.060 (6 Dec, Intel).
fn batch_size(w: &mut dyn Workload) -> Result<u64> {
    let warm = Instant::now();
    while warm.elapsed() < WARM_TIME {
        w.run(1)?;
    }
    let mut batch = 1;
    loop {
        let mut fastest = Duration::MAX;
        for _ in 0..3 {
            let start = Instant::now();
            w.run(batch)?;
            fastest = fastest.min(start.elapsed());
        }
        if fastest >= BATCH_TIME || batch >= MAX_BATCH {
            return Ok(batch);
        }
        batch *= 2;
    }
}

impl Workload for CopiesWorkload {
    /// Waits until the copies together completed `iters × N` more iterations
    /// (at least `MIN_PER_COPY` × N), sleeping between readings
    /// (`wait_for`), and keeps how many each had completed, on average, at
    /// the last reading: the timing thread is woken late when every CPU runs
    /// a copy (1–2 ms, 5–20 % of a 10 ms window, measured on 2 CPUs), and the
    /// copies count on meanwhile.
    fn run(&mut self, iters: u64) -> Result<()> {
        let n = self.copies.n as u64;
        let from = self.counters.total();
        let target = from + iters.max(MIN_PER_COPY) * n;
        let seen = wait_for(&self.counters, target, || self.failure())?;
        // Rounded, not floored: a floor would drop half a copy's iteration
        // a window on average.
        self.completed = (seen - from + n / 2) / n;
        Ok(())
    }

    fn completed(&self, _asked: u64) -> u64 {
        self.completed
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.stop()
    }
}

impl Drop for CopiesWorkload {
    fn drop(&mut self) {
        self.counters.stop();
        join_within(&mut self.threads, STOP_WITHIN);
        // Dropping the supervisor kills and reaps the processes left.
    }
}

/// The fewest iterations of each copy one window waits for. A window
/// counts whole iterations, and the copies' iterations end out of step, so
/// a window of one iteration each (a whole run of `fault` lasts 50 ms)
/// read 31–87 ms from sample to sample at 2 copies; with 16, the part of an
/// iteration each other copy has done when a window starts or ends is at
/// most a sixteenth of its count.
const MIN_PER_COPY: u64 = 16;

/// How long stopped copies have to finish their iteration and tear down.
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// Joins the threads that end within `limit`; the others (a thread cannot
/// be killed) are let go, to end with the process. How many were let go.
fn join_within(threads: &mut Vec<JoinHandle<()>>, limit: Duration) -> usize {
    let polls = limit.as_millis() as u64;
    for _ in 0..polls {
        if threads.iter().all(JoinHandle::is_finished) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let (done, stuck): (Vec<_>, Vec<_>) = threads.drain(..).partition(JoinHandle::is_finished);
    for t in done {
        let _ = t.join();
    }
    stuck.len()
}

/// Waits until `counters` total `target`; `failed` is asked when progress
/// stalls. It sleeps most of the way: the rate seen so far in this window
/// says how long the rest should take, and it sleeps nine tenths of that,
/// then naps of [`POLL`] at the end. So the copies are disturbed by a few
/// wake-ups per window, not by a reader spinning on their counters, which
/// would take a CPU from them once every CPU runs a copy (measured on 2
/// CPUs: 2 copies of getppid read 1.25 of will-it-scale's per-task time
/// with a spinning reader, 1.09 with this). The window ends at most about
/// one `POLL` and a wake-up after its count; returns the total at that last
/// reading, which the copies' later counting can have taken past `target`.
pub(super) fn wait_for(
    counters: &Counters,
    target: u64,
    failed: impl Fn() -> Option<Error>,
) -> Result<u64> {
    let (start, from) = (Instant::now(), counters.total());
    let (mut last, mut progressed) = (from, Instant::now());
    loop {
        let now = counters.total();
        if now >= target {
            return Ok(now);
        }
        if now > last {
            (last, progressed) = (now, Instant::now());
        }
        std::thread::sleep(nap(start.elapsed(), now - from, target - now));
        if interrupt::requested() {
            return Err(Error::Interrupted);
        }
        let stalled = progressed.elapsed();
        if stalled >= CHECK_AFTER
            && let Some(e) = failed()
        {
            return Err(e);
        }
        if stalled >= STALL {
            return Err(Error::Measure(
                "no task completed an operation in about 10 s: a task is stuck or was \
                 killed; run fewer --tasks or check the case alone"
                    .into(),
            ));
        }
    }
}

/// How long to sleep when `done` iterations took `elapsed` and `left` remain:
/// nine tenths of the time they should take at that rate, at least [`POLL`]
/// and at most [`MAX_NAP`] (so a stop request or a stall is seen).
fn nap(elapsed: Duration, done: u64, left: u64) -> Duration {
    if done == 0 {
        return POLL;
    }
    let rest = elapsed.mul_f64(0.9 * left as f64 / done as f64);
    rest.clamp(POLL, MAX_NAP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::copies::Place;

    /// A fake case whose first `.0` runs are slow (a cold start), the rest free.
    struct ColdStart(u32);
    impl Workload for ColdStart {
        fn run(&mut self, _iters: u64) -> Result<()> {
            if self.0 > 0 {
                self.0 -= 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(())
        }
    }

    #[test]
    fn slow_first_runs_do_not_settle_the_batch_at_one() {
        // Three slow runs: the warm-up takes the first, and the fastest of
        // three timings of one iteration skips the next two; without either
        // the size stays 1. A stall of the free runs too (a busy machine)
        // would also read as slow, so three tries.
        let sizes: Vec<u64> = (0..3)
            .map(|_| batch_size(&mut ColdStart(3)).unwrap())
            .collect();
        assert!(sizes.iter().any(|&b| b > 1), "{sizes:?}");
    }

    /// A fake case: each iteration only yields the CPU.
    struct Nothing;
    impl Workload for Nothing {
        fn run(&mut self, _iters: u64) -> Result<()> {
            std::thread::yield_now();
            Ok(())
        }
    }

    fn copies(n: usize, mode: Mode) -> Copies {
        Copies {
            n,
            mode,
            place: Place::Spread,
        }
    }

    #[test]
    fn fake_copies_as_threads_and_processes_count_their_windows_and_stop() {
        for mode in [Mode::Threads, Mode::Processes] {
            let setup: SetupFn =
                Arc::new(|_: &Placement| Ok(Box::new(Nothing) as Box<dyn Workload>));
            let mut w = Box::new(
                CopiesWorkload::start("fake", copies(16, mode), setup, mode == Mode::Processes)
                    .unwrap(),
            );
            let before = w.counters.total();
            w.run(50).unwrap();
            // Credited what was counted when the window was seen complete:
            // at least what was asked, at most what the copies counted.
            let completed = w.completed(50);
            assert!(completed >= 50, "{mode:?}: {completed}");
            assert!(
                w.counters.total() + 8 >= before + 16 * completed,
                "{mode:?}"
            );
            // A window asked for one iteration of each still waits for
            // MIN_PER_COPY: whole iterations are counted, out of step.
            w.run(1).unwrap();
            assert!(w.completed(1) >= MIN_PER_COPY, "{mode:?}");
            w.teardown().unwrap();
        }
    }

    #[test]
    fn a_thread_whose_operation_never_returns_is_let_go_and_said() {
        static RELEASE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        /// Its first four calls (the warm-up's and three timings of one
        /// iteration) return after a millisecond, so the copy's batch is
        /// one call; the next blocks until the test releases it.
        struct Stuck(u32);
        impl Workload for Stuck {
            fn run(&mut self, _iters: u64) -> Result<()> {
                self.0 += 1;
                if self.0 <= 4 {
                    std::thread::sleep(Duration::from_millis(1));
                }
                while self.0 > 4 && !RELEASE.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Ok(())
            }
        }
        let setup: SetupFn = Arc::new(|_: &Placement| Ok(Box::new(Stuck(0)) as Box<dyn Workload>));
        let w = Box::new(
            CopiesWorkload::start("fake", copies(2, Mode::Threads), setup, false).unwrap(),
        );
        let e = w.teardown().unwrap_err().to_string();
        assert!(
            e.contains("2 of 2 task threads did not stop within 5 s"),
            "{e}"
        );
        RELEASE.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    #[test]
    fn a_copy_whose_set_up_fails_is_named_and_nothing_is_left_running() {
        for mode in [Mode::Threads, Mode::Processes] {
            let setup: SetupFn = Arc::new(|_: &Placement| {
                // Copy 5 (0-based), the sixth started, knows itself by its thread's name.
                if std::thread::current().name() == Some("osbench-copy5") {
                    return Err(Error::Measure("no room for this copy".into()));
                }
                Ok(Box::new(Nothing) as Box<dyn Workload>)
            });
            match mode {
                Mode::Threads => {
                    let e = CopiesWorkload::start("fake", copies(8, mode), setup, false)
                        .err()
                        .unwrap();
                    assert!(
                        e.to_string()
                            .contains("task 6 of 8 (threads) failed: no room"),
                        "{e}"
                    );
                }
                Mode::Processes => {
                    // A forked copy's thread has no such name: every one fails.
                    let setup: SetupFn =
                        Arc::new(|_: &Placement| Err(Error::Measure("no room".into())));
                    let e = CopiesWorkload::start("fake", copies(4, mode), setup, false)
                        .err()
                        .unwrap();
                    assert!(
                        e.to_string().contains("of 4 (processes) failed: no room"),
                        "{e}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_window_ends_once_fake_copies_complete_its_count_and_fails_with_them() {
        let counters = Arc::new(Counters::new(512).unwrap());
        let c = Arc::clone(&counters);
        let driver = std::thread::spawn(move || {
            for round in 0..20 {
                for i in 0..512 {
                    c.add(i, 1 + (i as u64 + round) % 3);
                }
            }
        });
        let target = (0..20u64)
            .map(|r| (0..512u64).map(|i| 1 + (i + r) % 3).sum::<u64>())
            .sum();
        assert_eq!(wait_for(&counters, target, || None).unwrap(), target);
        driver.join().unwrap();
        assert_eq!(counters.total(), target);
        counters.fail(7, "no memory");
        let e = wait_for(&counters, target + 1, || {
            counters
                .failure(7)
                .map(|w| Error::Measure(format!("task 8: {w}")))
        })
        .unwrap_err();
        assert!(e.to_string().contains("task 8: no memory"), "{e}");
    }
}
