//! `rseq`: per-CPU operations without atomics, and what a registered rseq
//! area costs on the return to user space. Anchor: the kernel's rseq
//! selftests (`param_test_benchmark`, tools/testing/selftests/rseq,
//! `rseq-x86.h` read for the method, not copied) and the rseq commit's
//! per-CPU counter (15.3 ns with atomics vs 2.0 ns with rseq on its machine).
//! Unit: ns per operation.
//!
//! - `rseq`: one increment of this CPU's counter (one 64-byte line per CPU)
//!   in an rseq critical section: the descriptor (`struct rseq_cs`) is
//!   stored in the thread's rseq area, the CPU number read from it, and a
//!   plain `add` commits; a preemption, migration or signal inside restarts
//!   it through the abort handler (preceded by the signature, as the
//!   selftests do). x86_64 only; elsewhere the case is skipped with the reason.
//! - `lock`: one LOCK-prefixed add to a counter (uncontended).
//! - `getcpu`: the CPU number as the vDSO's getcpu reads it (LSL of the
//!   per-CPU segment limit) + a LOCK add to that CPU's counter: the per-CPU
//!   counter before rseq.
//! - `getppid-rseq`, `getppid-norseq`: one raw getppid() (as `syscall null`)
//!   in a thread with rseq registered, and with it unregistered: the rseq
//!   work on every return to user space (Linux 6.19 removed much of it).
//!
//! The area: glibc (2.35 and later) registers one for every thread and
//! exports where it is (`__rseq_offset` from the thread pointer, `__rseq_size`,
//! looked up with dlsym so older glibcs still link); osbench reuses it.
//! Without glibc's registration (an old glibc, `GLIBC_TUNABLES=glibc.pthread.rseq=0`)
//! osbench registers an area of its own for the timing thread.
//!
//! `getppid-norseq` unregisters the timing thread's area for the case and
//! registers the same area again when the case ends (teardown, or drop on
//! an error or a panic): glibc reads the area only for sched_getcpu, which
//! falls back to the system call while the CPU number reads -1, and nothing
//! else in the case calls it. A fresh raw-cloned thread without glibc's
//! registration was the alternative; it would have had to be handed every
//! batch across threads, which the harness's clock would time.
//!
//! Left out: the selftests' other operations (cmpxchg, memcpy, list pops),
//! the `mm_cid` field, and contention (one thread).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

/// The signature the abort handler is preceded by (x86's RSEQ_SIG, glibc's too).
const RSEQ_SIG: u32 = 0x5305_3053;
/// `struct rseq`'s original size, as registered.
const RSEQ_LEN: u32 = 32;
const RSEQ_FLAG_UNREGISTER: i32 = 1;

pub static DEF: BenchDef = BenchDef {
    name: "rseq",
    summary: "a per-CPU counter in an rseq critical section vs LOCK add vs getcpu + atomic; getppid with and without rseq (kernel rseq selftests)",
    unit: Unit::Ns,
    params: &[ParamSpec {
        name: "case",
        help: "what one operation is",
        kind: ParamKind::Choice(&["rseq", "lock", "getcpu", "getppid-rseq", "getppid-norseq"]),
        default: "rseq",
    }],
    default_cases: DefaultCases::EachOf("case"),
    case_name: |p| p.get("case").to_string(),
    op: |p| {
        match p.get("case") {
            "rseq" => "one increment of this CPU's counter in an rseq critical section",
            "lock" => "one LOCK-prefixed add to a counter (uncontended)",
            "getcpu" => "the CPU number (vDSO getcpu's LSL) + a LOCK add to that CPU's counter",
            "getppid-rseq" => "one getppid() system call with rseq registered",
            _ => "one getppid() system call with rseq unregistered",
        }
        .to_string()
    },
    anchor: |p| match p.get("case") {
        "getppid-rseq" | "getppid-norseq" => {
            "lat_syscall null (with / without the rseq area)".into()
        }
        "lock" => "(none: the rseq commit's atomic counter)".into(),
        case => format!("rseq selftests param_test_benchmark ({case} per-CPU counter)"),
    },
    differs: "one thread, no contention, a median of 10 ms batches; the rseq case runs the selftests' loop in gcc's instructions (librseq's 64 KiB per-CPU stride is 64-byte lines here), and as the selftest counts its loop, no empty loop's cost is subtracted from it; the other cases call a small non-inlined function per operation. The getcpu case reads the CPU as the vDSO does (LSL), not through glibc's sched_getcpu, which itself reads the rseq area since glibc 2.35.",
    setup,
    unavailable: |p| unavailable(p.get("case")),
    own_loop: |p| p.get("case") == "rseq",
    ..BenchDef::DEFAULTS
};

/// Why `case` cannot run here, if so.
fn unavailable(case: &str) -> Option<String> {
    let asm_case = matches!(case, "rseq" | "getcpu");
    if asm_case && !cfg!(target_arch = "x86_64") {
        return Some(format!(
            "the {case} case's critical section is written for x86_64 only"
        ));
    }
    if matches!(case, "rseq" | "getppid-rseq" | "getppid-norseq") {
        // SAFETY: an rseq call with a null area and an invalid flag writes
        // nothing: EINVAL where rseq exists, ENOSYS where it does not.
        let r = unsafe { libc::syscall(libc::SYS_rseq, 0, 0, -1, 0) };
        let e = std::io::Error::last_os_error().raw_os_error();
        if r < 0 && e == Some(libc::ENOSYS) {
            return Some("this kernel has no rseq (ENOSYS; Linux 4.18 or later)".into());
        }
    }
    None
}

/// The kernel's `struct rseq` (the fields of its original 32 bytes).
#[repr(C, align(32))]
struct RseqArea {
    cpu_id_start: u32,
    cpu_id: u32,
    rseq_cs: u64,
    flags: u32,
    _pad: [u32; 3],
}

thread_local! {
    /// osbench's own area for a thread glibc registered none for.
    static OWN_AREA: RseqArea = const {
        RseqArea { cpu_id_start: 0, cpu_id: u32::MAX, rseq_cs: 0, flags: 0, _pad: [0; 3] }
    };
    /// Whether OWN_AREA is registered.
    static OWN_REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// glibc's `__rseq_offset` and `__rseq_size`, when it registered an area.
fn glibc_rseq() -> Option<(isize, u32)> {
    // SAFETY: dlsym with RTLD_DEFAULT and NUL-terminated names; the symbols,
    // when present, are glibc's read-only `ptrdiff_t` and `unsigned int`.
    unsafe {
        let off = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr());
        let size = libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr());
        if off.is_null() || size.is_null() {
            return None;
        }
        let size = *size.cast::<u32>();
        (size > 0).then(|| (*off.cast::<isize>(), size))
    }
}

/// The thread pointer (x86_64: the TCB's self pointer at %fs:0).
#[cfg(target_arch = "x86_64")]
fn thread_pointer() -> *mut u8 {
    let tp: *mut u8;
    // SAFETY: reading the TCB's self pointer, which glibc keeps at %fs:0.
    unsafe {
        std::arch::asm!("mov {}, qword ptr fs:0", out(reg) tp, options(nostack, readonly, preserves_flags))
    };
    tp
}

/// This thread's registered rseq area: glibc's, or osbench's own
/// (registered now if need be); with the length it was registered with.
fn current_area() -> Result<(*mut RseqArea, u32)> {
    #[cfg(target_arch = "x86_64")]
    if let Some((offset, _)) = glibc_rseq() {
        // SAFETY: glibc's area lies at `offset` from the thread pointer.
        let area = unsafe { thread_pointer().offset(offset) }.cast::<RseqArea>();
        return Ok((area, RSEQ_LEN));
    }
    let area = OWN_AREA.with(|a| std::ptr::from_ref(a).cast_mut());
    if !OWN_REGISTERED.get() {
        register(area, RSEQ_LEN, 0)
            .map_err(|e| Error::io("registering an rseq area for the timing thread", e))?;
        OWN_REGISTERED.set(true);
    }
    Ok((area, RSEQ_LEN))
}

/// rseq(2) on `area` with `flags` (0: register, 1: unregister).
fn register(area: *mut RseqArea, len: u32, flags: i32) -> std::io::Result<()> {
    // SAFETY: `area` is this thread's 32-byte aligned area (glibc's or a
    // thread-local that lives as long as the thread).
    let r = unsafe { libc::syscall(libc::SYS_rseq, area, len, flags, RSEQ_SIG) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// One 64-byte line per possible CPU.
#[repr(C, align(64))]
struct Line(AtomicU64, [u64; 7]);

/// Lines for every possible CPU number (/sys/devices/system/cpu/possible).
fn lines() -> Vec<Line> {
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| s.trim().rsplit(['-', ',']).next()?.parse::<usize>().ok())
        .map_or(8192, |last| last + 1);
    (0..possible.max(1))
        .map(|_| Line(AtomicU64::new(0), [0; 7]))
        .collect()
}

enum Case {
    Rseq,
    Lock,
    Getcpu,
    Getppid,
    /// The area unregistered for the case, registered again when it ends.
    GetppidUnregistered {
        area: *mut RseqArea,
        len: u32,
    },
}

struct Rseq {
    case: Case,
    counters: Vec<Line>,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    let case = match p.get("case") {
        "rseq" => {
            current_area()?;
            Case::Rseq
        }
        "lock" => Case::Lock,
        "getcpu" => Case::Getcpu,
        "getppid-rseq" => {
            current_area()?;
            Case::Getppid
        }
        _ => {
            let (area, len) = current_area()?;
            let len = unregister(area, len)?;
            Case::GetppidUnregistered { area, len }
        }
    };
    Ok(Box::new(Rseq {
        case,
        counters: lines(),
    }))
}

/// Unregisters `area`, trying glibc's `__rseq_size` as the length when the
/// original 32 bytes is refused; returns the length that worked.
fn unregister(area: *mut RseqArea, len: u32) -> Result<u32> {
    let mut tried = vec![len];
    tried.extend(glibc_rseq().map(|(_, size)| size).filter(|s| *s != len));
    for &l in &tried {
        if register(area, l, RSEQ_FLAG_UNREGISTER).is_ok() {
            return Ok(l);
        }
    }
    Err(Error::last_os(
        "unregistering the timing thread's rseq area for getppid-norseq",
    ))
}

impl Drop for Rseq {
    fn drop(&mut self) {
        if let Case::GetppidUnregistered { area, len } = self.case {
            // Registered again as it was: glibc (or osbench) finds it as before.
            if let Err(e) = register(area, len, 0) {
                eprintln!(
                    "osbench: warning: the timing thread's rseq area could not be registered again: {e}"
                );
            }
        }
    }
}

impl Workload for Rseq {
    fn run(&mut self, iters: u64) -> Result<()> {
        match self.case {
            Case::Rseq => {
                let (area, _) = current_area()?;
                percpu_increments(area, &self.counters, iters);
            }
            Case::Lock => {
                for _ in 0..iters {
                    locked_add(&self.counters[0].0);
                }
            }
            Case::Getcpu => {
                for _ in 0..iters {
                    let cpu = getcpu().min(self.counters.len() - 1);
                    locked_add(&self.counters[cpu].0);
                }
            }
            Case::Getppid | Case::GetppidUnregistered { .. } => {
                for _ in 0..iters {
                    std::hint::black_box(super::syscall::raw_getppid());
                }
            }
        }
        Ok(())
    }
}

#[inline(never)]
fn locked_add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The CPU number as the vDSO's getcpu reads it without RDPID: the limit of
/// the per-CPU GDT segment (selector 0x7b), low 12 bits.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn getcpu() -> usize {
    let p: u32;
    // SAFETY: LSL only reads a segment limit into a register (ZF set on
    // success); it touches no memory.
    unsafe {
        std::arch::asm!("lsl {0:e}, {1:e}", out(reg) p, in(reg) 0x7bu32, options(nostack, nomem))
    };
    (p & 0xfff) as usize
}

#[cfg(not(target_arch = "x86_64"))]
fn getcpu() -> usize {
    0
}

/// Runs `iters` increments of this CPU's counter, each in an rseq critical
/// section, as the selftests' loop (`test_percpu_inc_thread` with
/// `rseq_load_add_store__ptr`) runs in gcc's instructions: per iteration the
/// area's offset loaded from memory (glibc's `__rseq_offset` there), the CPU
/// read from `cpu_id_start` through the thread pointer plus that offset and
/// its line's address computed, then the descriptor stored in `rseq_cs`
/// through %fs, the CPU compared with `cpu_id` (a mismatch aborts) and one
/// `add` commits; an abort (preemption, migration, a signal inside) restarts
/// the iteration. The loop is inside the assembly, as the selftest's is
/// inside its function, so that no call or compiler-chosen addressing sits
/// between iterations: on the Intel machine the same add ran 2.2 times as
/// fast through a plain `[rdx]` as at base + index (its store forwarded at
/// once to the next add). The selftest's figure counts this loop, so the
/// case sets `own_loop`. Left out: librseq's 64 KiB per-CPU stride (64-byte
/// lines here; the shift differs, not the instructions).
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn percpu_increments(area: *mut RseqArea, counters: &[Line], iters: u64) {
    // Read by the loop from memory on every iteration, as gcc reloads
    // `__rseq_offset` (a global it cannot prove unchanged).
    let area_offset: isize = (area as isize).wrapping_sub(thread_pointer() as isize);
    // SAFETY: `area` is this thread's registered rseq area, in its TLS
    // block (glibc's, or osbench's thread-local), so %fs (or the thread
    // pointer) plus `area_offset` addresses it; its cpu_id_start is a CPU
    // number below the number of possible CPUs, so the line indexed is
    // inside `counters`. `area_offset` lives on this frame for the whole
    // asm. The descriptor lives in its own section for the program's life;
    // the abort handler is preceded by the registered signature and jumps
    // back to the iteration's start; every register written is an output.
    unsafe {
        std::arch::asm!(
            ".pushsection __rseq_cs, \"aw\"",
            ".balign 32",
            "3:",
            ".long 0, 0",
            ".quad 4f, (6f - 4f), 7f",
            ".popsection",
            "test {n}, {n}",
            "jz 9f",
            "mov {tp}, qword ptr fs:0",
            "xor {i:e}, {i:e}",
            "5:",
            "mov {off}, qword ptr [{offp}]",
            "lea {line}, [{off} + {tp}]",
            "mov {line:e}, dword ptr [{line}]",
            "mov {cpu}, {line}",
            "shl {line}, 6",
            "lea {cs}, [rip + 3b]",
            "mov qword ptr fs:[{off} + 8], {cs}",
            "4:",
            "cmp dword ptr fs:[{off} + 4], {cpu:e}",
            "jnz 7f",
            "add qword ptr [{lines} + {line}], 1",
            "6:",
            "add {i}, 1",
            "cmp {i}, {n}",
            "jb 5b",
            "9:",
            ".pushsection __rseq_failure, \"ax\"",
            ".byte 0x0f, 0xb9, 0x3d",
            ".long 0x53053053",
            "7:",
            "jmp 5b",
            ".popsection",
            n = in(reg) iters,
            offp = in(reg) &raw const area_offset,
            lines = in(reg) counters.as_ptr(),
            tp = out(reg) _,
            i = out(reg) _,
            off = out(reg) _,
            line = out(reg) _,
            cpu = out(reg) _,
            cs = out(reg) _,
            options(nostack),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn percpu_increments(_: *mut RseqArea, _: &[Line], _: u64) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(counters: &[Line]) -> u64 {
        counters.iter().map(|l| l.0.load(Ordering::Relaxed)).sum()
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn every_increment_lands_once_on_the_cpu_the_area_names() {
        if unavailable("rseq").is_some() {
            return;
        }
        let (area, _) = current_area().unwrap();
        let counters = lines();
        percpu_increments(area, &counters, 0);
        assert_eq!(total(&counters), 0);
        for _ in 0..10 {
            percpu_increments(area, &counters, 10_000);
        }
        assert_eq!(total(&counters), 100_000);
        // SAFETY: this thread's registered area.
        let cpu = unsafe { (*area).cpu_id } as usize;
        assert!(cpu < counters.len());
        assert!(getcpu() < counters.len());
    }

    #[test]
    fn every_case_runs_and_norseq_registers_the_area_again() {
        std::thread::spawn(|| {
            for case in ["rseq", "lock", "getcpu", "getppid-rseq", "getppid-norseq"] {
                if let Some(why) = unavailable(case) {
                    eprintln!("skipped {case}: {why}");
                    continue;
                }
                let p = Params::new(&DEF, &[("case", case)]);
                let mut w = setup(&p, &Placement::unpinned()).unwrap();
                w.run(10).unwrap();
                w.teardown().unwrap();
                // Registered again: the kernel keeps its cpu_id current.
                let (area, _) = current_area().unwrap();
                // SAFETY: this thread's registered area, read as the kernel writes it.
                let cpu = unsafe { std::ptr::read_volatile(&raw const (*area).cpu_id) };
                assert_ne!(cpu, u32::MAX, "{case}");
            }
        })
        .join()
        .unwrap();
    }
}
