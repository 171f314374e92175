//! `atomic`: what an atomic read-modify-write costs — the seed's question
//! whether an uncontended LOCK prefix is cheap (002: hackbench 2.99 s without
//! it, 3.74 s with it).
//!
//! Uncontended, in one thread on a cache line only it touches: `plain` is
//! `add qword [mem], 1`, `locked` the same instruction with the LOCK prefix,
//! `swap` is `xchg` (implicitly locked), `cas` is `lock cmpxchg`, `fence` is
//! `mfence`; each iteration is one instruction on the same address, so
//! back-to-back operations depend on each other through memory, as in a
//! reference count. The instructions are inline assembly (x86-64), which the
//! compiler never removes, merges or reorders across iterations — a plain
//! `+= 1` would be folded into one add for the whole loop. Elsewhere the cases
//! use volatile accesses and `std::sync::atomic`. `getppid` is one system call
//! for scale (the report's answer line compares against it).
//!
//! Contended: the timing thread does locked adds while `threads − 1` helper
//! threads do the same without pause, either on the very same cache line
//! (`shared`: the line bounces between CPUs) or each on its own line
//! (`separate`: 128-byte apart, no false sharing); the figure is the timing
//! thread's cost per add under that load (lmbench's `-P` view). Threads are
//! placed with `--pin` (default: the scheduler's choice).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;

use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::limits::thread_error;
use crate::measure::placement::{Placement, pin_thread_for_life};

pub static DEF: BenchDef = BenchDef {
    name: "atomic",
    summary: "plain vs LOCK-prefixed add, xchg, cmpxchg, mfence; one cache line shared by threads vs one each",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "case",
            help: "operation, or contention (shared / separate lines)",
            kind: ParamKind::Choice(&[
                "plain", "locked", "swap", "cas", "fence", "getppid", "shared", "separate",
            ]),
            default: "plain",
        },
        ParamSpec {
            name: "threads",
            help: "threads in the contended cases, the timing one included",
            kind: ParamKind::CountOrAll { min: 1, max: 1024 },
            default: "all",
        },
    ],
    default_cases: DefaultCases::EachOf("case"),
    case_name: |p| match p.get("case") {
        c @ ("shared" | "separate") => format!("{c}/{}t", threads(p)),
        c => c.to_string(),
    },
    op: |p| match p.get("case") {
        "plain" => "one add qword [mem], 1 (no LOCK prefix), dependent on the previous".to_string(),
        "locked" => "one lock add qword [mem], 1, dependent on the previous".to_string(),
        "swap" => "one xchg [mem], reg (implicitly locked)".to_string(),
        "cas" => "one lock cmpxchg [mem], reg that succeeds".to_string(),
        "fence" => "one mfence".to_string(),
        "getppid" => "one getppid() system call (raw syscall), for scale".to_string(),
        "shared" => format!(
            "one lock add by 1 of {} threads adding to the same cache line",
            threads(p)
        ),
        _ => format!(
            "one lock add by 1 of {} threads, each adding to its own cache line",
            threads(p)
        ),
    },
    anchor: |_| "(none: seed 002's LOCK-prefix question)".to_string(),
    ops_per_iter: |_| UNROLL as f64,
    tasks: |p| {
        if matches!(p.get("case"), "shared" | "separate") {
            threads(p)
        } else {
            1
        }
    },
    setup,
    ..BenchDef::DEFAULTS
};

/// The thread count ("all" = every CPU this process may use).
fn threads(p: &Params) -> usize {
    p.count("threads")
}

/// Cache lines, 128 bytes apart (adjacent-line prefetch pairs 64-byte lines).
#[repr(C, align(128))]
struct Line(AtomicU64);

/// The operation the timing thread repeats.
#[derive(Debug, Clone, Copy)]
enum Op {
    Plain,
    /// Also the contended cases, whose difference is in the helper threads.
    Locked,
    Swap,
    Cas,
    Fence,
    Getppid,
}

struct Atomic {
    op: Op,
    lines: Arc<Vec<Line>>,
    stop: Arc<AtomicBool>,
    helpers: Vec<JoinHandle<()>>,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    let case = p.get("case");
    let op = match case {
        "plain" => Op::Plain,
        "swap" => Op::Swap,
        "cas" => Op::Cas,
        "fence" => Op::Fence,
        "getppid" => Op::Getppid,
        _ => Op::Locked, // locked, shared, separate
    };
    let n = if matches!(case, "shared" | "separate") {
        threads(p)
    } else {
        1
    };
    let lines: Arc<Vec<Line>> = Arc::new((0..n).map(|_| Line(AtomicU64::new(0))).collect());
    let mut bench = Atomic {
        op,
        lines,
        stop: Arc::new(AtomicBool::new(false)),
        helpers: Vec::new(),
    };
    for t in 1..n {
        let (lines, stop, cpu) = (
            Arc::clone(&bench.lines),
            Arc::clone(&bench.stop),
            placement.cpu_of(t),
        );
        let line = if case == "shared" { 0 } else { t };
        let handle = std::thread::Builder::new()
            .name("osbench-atomic".into())
            .spawn(move || {
                if let Some(cpu) = cpu {
                    let _ = pin_thread_for_life(cpu);
                }
                let target = &lines[line].0;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1024 {
                        locked_add(target);
                    }
                }
            })
            .map_err(|e| thread_error(t - 1, e))?;
        bench.helpers.push(handle);
    }
    Ok(Box::new(bench))
}

impl Workload for Atomic {
    fn run(&mut self, iters: u64) -> Result<()> {
        let line = &self.lines[0].0;
        match self.op {
            Op::Plain => x16_loop(iters, || plain_add(line)),
            Op::Locked => x16_loop(iters, || locked_add(line)),
            Op::Swap => {
                let mut i = 0u64;
                x16_loop(iters, || {
                    i = i.wrapping_add(1);
                    std::hint::black_box(line.swap(i, Ordering::SeqCst));
                });
            }
            Op::Cas => cas_loop(line, iters),
            Op::Fence => x16_loop(iters, mfence),
            Op::Getppid => x16_loop(iters, || {
                std::hint::black_box(super::syscall::raw_getppid());
            }),
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.stop_helpers()
    }
}

impl Atomic {
    fn stop_helpers(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let mut result = Ok(());
        for h in self.helpers.drain(..) {
            if h.join().is_err() {
                result = Err(Error::Measure("an atomic helper thread panicked".into()));
            }
        }
        result
    }
}

impl Drop for Atomic {
    fn drop(&mut self) {
        let _ = self.stop_helpers();
    }
}

/// Operations per loop iteration: the loop's own cost (≈ 1 cycle, the size of
/// a plain add here) is spread over 16 operations instead of subtracted from one.
const UNROLL: u64 = 16;

/// `iters` × 16 calls of `op`, sixteen written out per iteration. Never
/// inlined: each operation gets its own hot loop (one copy per closure type).
#[inline(never)]
fn x16_loop(iters: u64, mut op: impl FnMut()) {
    for _ in 0..iters {
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
        op();
    }
}

/// Compare-and-swaps that always succeed (nothing else writes the line).
fn cas_loop(line: &AtomicU64, iters: u64) {
    let mut current = line.load(Ordering::Relaxed);
    x16_loop(iters, || {
        current = match line.compare_exchange(
            current,
            current.wrapping_add(1),
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => current.wrapping_add(1),
            Err(seen) => seen,
        };
    });
}

/// `add qword [mem], 1` without the LOCK prefix.
#[inline(always)]
fn plain_add(line: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: adds 1 to the 8 bytes of `line`, which we may write; a plain
    // read-modify-write is not atomic, which is the point (single writer).
    unsafe {
        std::arch::asm!("add qword ptr [{0}], 1", in(reg) line.as_ptr(), options(nostack));
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: volatile accesses to memory we own; single writer.
    unsafe {
        let p = line.as_ptr();
        std::ptr::write_volatile(p, std::ptr::read_volatile(p).wrapping_add(1));
    }
}

/// A full memory fence (`mfence`), as an asm statement: consecutive
/// `atomic::fence` calls are merged by the compiler.
#[inline(always)]
fn mfence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: mfence has no operands and no effect besides ordering memory.
    unsafe {
        std::arch::asm!("mfence", options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(Ordering::SeqCst);
}

/// `lock add qword [mem], 1`.
#[inline(always)]
fn locked_add(line: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: an atomic add of 1 to the 8 bytes of `line`.
    unsafe {
        std::arch::asm!("lock add qword ptr [{0}], 1", in(reg) line.as_ptr(), options(nostack));
    }
    #[cfg(not(target_arch = "x86_64"))]
    line.fetch_add(1, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_case(case: &str, threads: &str, iters: u64) -> u64 {
        let p = Params::new(&DEF, &[("case", case), ("threads", threads)]);
        let mut b = setup(&p, &Placement::unpinned()).unwrap();
        b.run(iters).unwrap();
        b.teardown().unwrap();
        iters
    }

    #[test]
    fn plain_and_locked_adds_really_add() {
        let line = AtomicU64::new(5);
        x16_loop(1000, || plain_add(&line));
        assert_eq!(line.load(Ordering::Relaxed), 5 + 16_000);
        x16_loop(1000, || locked_add(&line));
        assert_eq!(line.load(Ordering::Relaxed), 5 + 32_000);
        cas_loop(&line, 10);
        assert_eq!(line.load(Ordering::Relaxed), 5 + 32_160);
    }

    #[test]
    fn every_case_runs_and_stops_its_helpers() {
        for case in [
            "plain", "locked", "swap", "cas", "fence", "getppid", "shared", "separate",
        ] {
            assert_eq!(run_case(case, "3", 1000), 1000);
        }
    }

    #[test]
    fn lines_do_not_share_a_cache_line() {
        assert_eq!(std::mem::size_of::<Line>(), 128);
    }
}
