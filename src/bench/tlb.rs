//! `tlb`: the cost of a TLB shootdown, one op = one byte written to a page
//! of a private anonymous mapping (a zero-fill fault) and
//! `madvise(MADV_DONTNEED)` of that page (will-it-scale `tlb_flush2`,
//! stress-ng `tlb-shootdown`). The timing thread cycles through the `pages`
//! pages of its mapping (256 = 1 MiB, tlb_flush2's size); the other
//! `threads` − 1 threads of the process spin on their own CPUs (`--pin
//! spread` unless another `--pin` is given), so the mapping's address space
//! is live there and every madvise must interrupt them to flush their TLBs.
//! `threads=1` is tlb_flush2's single task: the same call with no other CPU
//! to flush, the baseline the shootdown adds to.
//!
//! The family reads the machine's TLB shootdown interrupts (the `TLB` line
//! of /proc/interrupts, all CPUs, around every sample) as the counter
//! `tlb_shootdowns`, so the interrupts per call are reported beside the
//! time; where the kernel has no such line the counter is unavailable with
//! the reason. A KVM guest with paravirtual flushes skips the interrupt to
//! a vCPU the host has preempted (the flush is done when it runs again), so
//! the counter can be below 1 per call there.
//!
//! Differs from tlb_flush2 on purpose: its threads all run the loop (each
//! one's madvise interrupts the others), osbench's helpers only keep the
//! address space live, so the timing thread's calls are the only ones and
//! their cost is not mixed with the others' interrupts; tlb_flush2 also
//! unmaps and maps its 1 MiB again after every 256 calls (amortised in its
//! figure), osbench keeps one mapping; its `assert` reads each page back
//! after the madvise, a read fault that maps the zero page, which osbench
//! does only with `readback=yes` (the case to set beside tlb_flush2). The helpers spin on a plain load, not
//! a PAUSE loop, so that a hypervisor's pause-loop exiting does not take
//! their vCPU away. Left out: stress-ng's mprotect and munmap flushes, and
//! flushes between processes sharing memory.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::fault::{Region, map_error};
use super::util::page_size;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::interrupt;
use crate::measure::limits::thread_error;
use crate::measure::placement::{Pin, Placement, allowed_cpus, pin_thread_for_life};

pub static DEF: BenchDef = BenchDef {
    name: "tlb",
    summary: "TLB shootdowns: touch + madvise(MADV_DONTNEED) of a page while other threads run on other CPUs (will-it-scale tlb_flush2 threads)",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "threads",
            help: "threads of the process, the timing one included, each on its own CPU (1: no shootdown)",
            kind: ParamKind::CountOrAll { min: 1, max: 1024 },
            default: "2",
        },
        ParamSpec {
            name: "pages",
            help: "pages of the mapping the timing thread cycles through",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 20,
            },
            default: "256",
        },
        ParamSpec {
            name: "readback",
            help: "read the dropped page back after each madvise, as tlb_flush2's assert does (a read fault mapping the zero page)",
            kind: ParamKind::Choice(&["no", "yes"]),
            default: "no",
        },
    ],
    default_cases: DefaultCases::Listed(&[&[("threads", "1")], &[]]),
    case_name: |p| match p.get("readback") {
        "yes" => format!("{}t/readback", threads(p)),
        _ => format!("{}t", threads(p)),
    },
    op: |p| {
        let others = match threads(p) {
            1 => ", no other thread".to_string(),
            2 => ", which flushes the TLB of the other CPU running the process".to_string(),
            n => format!(
                ", which flushes the TLBs of the {} other CPUs running the process",
                n - 1
            ),
        };
        let readback = match p.get("readback") {
            "yes" => ", then one byte read back (a read fault mapping the zero page)",
            _ => "",
        };
        format!(
            "one byte written to a page (zero-fill fault) + madvise(MADV_DONTNEED) of it{others}{readback}"
        )
    },
    anchor: |p| match threads(p) {
        1 => "tlb_flush2_threads -t 1 (will-it-scale)".to_string(),
        n => format!("tlb_flush2_threads -t {n} (will-it-scale; stress-ng --tlb-shootdown)"),
    },
    differs: "only the timing thread calls madvise (tlb_flush2's threads all do, interrupting each other); the other threads spin to keep the address space live on their CPUs. One mapping is cycled through; tlb_flush2 maps its 1 MiB afresh every 256 calls, and its assert reads each page back after the madvise (a third fault: readback=yes does the same).",
    tasks: threads,
    setup,
    check,
    default_pin: Some(Pin::Spread),
    counts_tlb_shootdowns: true,
    ..BenchDef::DEFAULTS
};

/// The thread count ("all" = every CPU this process may use).
fn threads(p: &Params) -> usize {
    p.count("threads")
}

/// A shootdown needs another CPU: refuses more threads than CPUs to put them on.
fn check(p: &Params) -> Result<()> {
    let wanted = threads(p);
    let cpus = allowed_cpus()?;
    if wanted > 1 && cpus.len() < wanted {
        let why = if cpus.len() == 1 {
            "a TLB shootdown happens only between CPUs, and this process may run on one CPU"
                .to_string()
        } else {
            format!(
                "each thread runs on its own CPU, and this process may run on {} CPUs",
                cpus.len()
            )
        };
        return Err(Error::Measure(format!(
            "tlb:{p} runs {wanted} threads, but {why} ({cpus:?}): ask for threads=1 \
             (no shootdown){}",
            if cpus.len() > 1 {
                format!(" or at most threads={}", cpus.len())
            } else {
                String::new()
            }
        )));
    }
    Ok(())
}

/// How long set-up waits for the helper threads to be running.
const START_LIMIT: Duration = Duration::from_secs(10);

struct Tlb {
    region: Region,
    page: usize,
    /// The next page to touch.
    next: usize,
    /// Read the page back after dropping it (tlb_flush2's assert).
    readback: bool,
    stop: Arc<AtomicBool>,
    helpers: Vec<JoinHandle<()>>,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    let page = page_size();
    let region = Region::anonymous(p.int("pages") as usize * page)
        .map_err(|e| map_error("mapping the pages to touch and drop", e))?;
    // Every touch is one 4 KiB fault, every madvise one page's flush.
    region
        .advise(libc::MADV_NOHUGEPAGE)
        .map_err(|e| Error::io("madvise(MADV_NOHUGEPAGE)", e))?;
    let mut bench = Tlb {
        region,
        page,
        next: 0,
        readback: p.get("readback") == "yes",
        stop: Arc::new(AtomicBool::new(false)),
        helpers: Vec::new(),
    };
    let running = Arc::new(AtomicUsize::new(0));
    for t in 1..threads(p) {
        let (stop, running, cpu) = (
            Arc::clone(&bench.stop),
            Arc::clone(&running),
            placement.cpu_of(t),
        );
        let handle = std::thread::Builder::new()
            .name("osbench-tlb".into())
            .spawn(move || {
                if let Some(cpu) = cpu {
                    let _ = pin_thread_for_life(cpu);
                }
                running.fetch_add(1, Ordering::Release);
                keep_live(&stop);
            })
            .map_err(|e| thread_error(t - 1, e))?;
        bench.helpers.push(handle);
    }
    // The first sample must already have every helper on its CPU.
    let started = Instant::now();
    while running.load(Ordering::Acquire) < bench.helpers.len() {
        if interrupt::requested() {
            return Err(Error::Interrupted);
        }
        if started.elapsed() > START_LIMIT {
            return Err(Error::Measure(
                "the tlb helper threads did not start within 10 s".into(),
            ));
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    Ok(Box::new(bench))
}

/// Runs in the process's address space until told to stop (or a stop is
/// requested): plain loads, no PAUSE, no system call, so the CPU stays in
/// this address space (see the module comment).
fn keep_live(stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) && !interrupt::requested() {
        for _ in 0..4096 {
            std::hint::black_box(stop.load(Ordering::Relaxed));
        }
    }
}

impl Workload for Tlb {
    fn run(&mut self, iters: u64) -> Result<()> {
        let pages = self.region.len / self.page;
        for _ in 0..iters {
            touch_and_drop(&self.region, self.next * self.page, self.page)?;
            if self.readback {
                // SAFETY: the page just dropped, inside the live, readable mapping.
                let byte = unsafe { self.region.ptr.add(self.next * self.page).read_volatile() };
                if byte != 0 {
                    return Err(Error::Measure(
                        "a page read back after madvise(MADV_DONTNEED) was not zero".into(),
                    ));
                }
            }
            self.next = (self.next + 1) % pages;
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.stop_helpers()
    }
}

/// Writes a byte at `offset` of `region`, then drops the page (`len` bytes) with MADV_DONTNEED.
#[inline(never)]
fn touch_and_drop(region: &Region, offset: usize, len: usize) -> Result<()> {
    // SAFETY: `offset + len <= region.len`: the page is inside the live,
    // writable mapping, which nothing else reads; dropping it only makes the
    // next touch fault in a zero page.
    unsafe {
        let at = region.ptr.add(offset);
        at.write_volatile(1);
        if libc::madvise(at.cast(), len, libc::MADV_DONTNEED) != 0 {
            return Err(Error::last_os("madvise(MADV_DONTNEED) of the touched page"));
        }
    }
    Ok(())
}

impl Tlb {
    fn stop_helpers(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let mut result = Ok(());
        for h in self.helpers.drain(..) {
            if h.join().is_err() {
                result = Err(Error::Measure("a tlb helper thread panicked".into()));
            }
        }
        result
    }
}

impl Drop for Tlb {
    fn drop(&mut self) {
        let _ = self.stop_helpers();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Helper threads of this process named osbench-tlb.
    fn helper_threads() -> usize {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|comm| comm.trim() == "osbench-tlb")
            .count()
    }

    #[test]
    fn every_call_drops_the_page_and_the_helpers_end_with_the_case() {
        let cpus = allowed_cpus().unwrap().len();
        let n = cpus.clamp(1, 2).to_string();
        let p = Params::new(&DEF, &[("threads", n.as_str()), ("pages", "4")]);
        let placement = Placement::new(Pin::Spread).unwrap();
        let mut w = setup(&p, &placement).unwrap();
        w.run(9).unwrap();
        assert_eq!(helper_threads(), cpus.clamp(1, 2) - 1);
        w.teardown().unwrap();
        assert_eq!(helper_threads(), 0);
        // A fresh case over the same kind of mapping: after each call the
        // page reads as zero again (the write was dropped).
        let region = Region::anonymous(page_size()).unwrap();
        for _ in 0..3 {
            touch_and_drop(&region, 0, page_size()).unwrap();
            // SAFETY: the first byte of a live readable mapping.
            assert_eq!(unsafe { region.ptr.read_volatile() }, 0);
        }
    }

    #[test]
    fn more_threads_than_cpus_are_refused_naming_the_cpus() {
        let cpus = allowed_cpus().unwrap().len();
        let too_many = (cpus + 1).to_string();
        let e = check(&Params::new(&DEF, &[("threads", too_many.as_str())]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("threads=1") && e.contains("CPU"), "{e}");
        assert!(check(&Params::new(&DEF, &[("threads", "1")])).is_ok());
    }

    #[test]
    fn one_call_is_one_fault_and_a_read_back_another() {
        for (readback, per_call) in [("no", 1), ("yes", 2)] {
            faults_per_call(readback, per_call);
        }
    }

    fn faults_per_call(readback: &str, per_call: u64) {
        let p = Params::new(
            &DEF,
            &[("threads", "1"), ("pages", "16"), ("readback", readback)],
        );
        let mut w = setup(&p, &Placement::unpinned()).unwrap();
        w.run(16).unwrap(); // every page touched and dropped once
        let faults = || {
            // SAFETY: an all-zero rusage is valid; the pointer is valid.
            let mut u: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
            u.ru_minflt as u64
        };
        let before = faults();
        w.run(1000).unwrap();
        let taken = faults() - before;
        let want = 1000 * per_call;
        assert!(
            (want - 20..=want + 20).contains(&taken),
            "readback={readback}: {taken} faults for 1000 calls"
        );
        w.teardown().unwrap();
    }
}
