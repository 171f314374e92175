//! Where the tasks of a case run (`osbench run --pin none|same|spread`).
//!
//! - `none`: the scheduler decides (lmbench's and perf bench's default);
//! - `same`: every task on one CPU, the last one allowed (usually the one with
//!   the fewest device interrupts) — every hand-off is a real context switch;
//! - `spread`: task i on the i-th allowed CPU, round robin (lmbench's
//!   `LMBENCH_SCHED=UNIQUE` when there are enough CPUs).
//!
//! Without `--pin`, a benchmark of one task is pinned as `same` and any other
//! is left to the scheduler: unpinned, a lone task lands on whichever vCPU the
//! scheduler picks, and on the development VM the two vCPUs differ (getppid()
//! 167.6 ns on CPU 0, 163.7 ns on CPU 1), so invocations flip between two
//! results 2.4 % apart; for several tasks, placement *is* the experiment and
//! the anchors' default is kept. The timing thread is pinned by the caller
//! with [`pin_current_thread`] (restored afterwards); helper tasks pin
//! themselves to [`Placement::cpu_of`] their index. A thread's scheduler
//! slice (`sched_setattr`) is set here too ([`ShortSlice`], [`set_slice`]).

use std::mem;

use crate::error::{Error, Result};

pub use crate::document::Pin;

/// The CPU of every task of one case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub pin: Pin,
    /// The CPUs tasks are placed on, in task order (task i uses `cpus[i % len]`);
    /// empty for `Pin::None`.
    pub cpus: Vec<usize>,
}

impl Placement {
    /// No pinning at all.
    pub fn unpinned() -> Self {
        Self {
            pin: Pin::None,
            cpus: Vec::new(),
        }
    }

    /// `pin` over the CPUs this thread is allowed on.
    pub fn new(pin: Pin) -> Result<Self> {
        let allowed = allowed_cpus()?;
        let cpus = match pin {
            Pin::None => Vec::new(),
            Pin::Same => vec![
                *allowed
                    .last()
                    .ok_or_else(|| Error::Measure("no CPU is allowed".into()))?,
            ],
            Pin::Spread => allowed,
        };
        Ok(Self { pin, cpus })
    }

    /// The CPU task `task` must run on, or `None` for the scheduler's choice.
    pub fn cpu_of(&self, task: usize) -> Option<usize> {
        (!self.cpus.is_empty()).then(|| self.cpus[task % self.cpus.len()])
    }

    /// The distinct CPUs `tasks` tasks occupy, ascending.
    pub fn cpus_used(&self, tasks: usize) -> Vec<usize> {
        let mut used: Vec<usize> = (0..tasks).filter_map(|t| self.cpu_of(t)).collect();
        used.sort_unstable();
        used.dedup();
        used
    }
}

/// The CPUs the calling thread may run on, ascending.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    let set = get_affinity()?;
    // SAFETY: CPU_ISSET only reads the set, for indices below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// Restores the thread's previous affinity when dropped.
#[derive(Debug)]
pub struct PinGuard {
    saved: libc::cpu_set_t,
    pub cpu: usize,
}

/// Pins the calling thread to `cpu` until the guard is dropped.
pub fn pin_current_thread(cpu: usize) -> Result<PinGuard> {
    let saved = get_affinity()?;
    // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET writes within it
    // (callers pass CPUs from `allowed_cpus`, all below CPU_SETSIZE).
    let mut one: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: as above: `cpu` is below CPU_SETSIZE, so CPU_SET writes within `one`.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    set_affinity(&one)
        .map_err(|e| Error::io(format!("pinning the measuring thread to CPU {cpu}"), e))?;
    Ok(PinGuard { saved, cpu })
}

/// Pins the calling thread to `cpu` for the rest of its life (helper threads).
pub fn pin_thread_for_life(cpu: usize) -> Result<()> {
    pin_current_thread(cpu).map(std::mem::forget)
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        // Restoring a mask we read ourselves cannot be refused unless CPUs went
        // offline meanwhile; then the thread stays pinned, which is harmless.
        let _ = set_affinity(&self.saved);
    }
}

fn get_affinity() -> Result<libc::cpu_set_t> {
    // SAFETY: all-zero is a valid cpu_set_t; the kernel writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is valid for `size_of` bytes.
    if unsafe { libc::sched_getaffinity(0, mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Err(Error::last_os("reading the CPU affinity"));
    }
    Ok(set)
}

fn set_affinity(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t.
    if unsafe { libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The shortest scheduler slice the kernel grants (0.1 ms, Linux 6.12 and
/// later; older kernels ignore it) for osbench's timing thread while a
/// messaging case lasts, restored after. A woken task with a short slice
/// gets an early virtual deadline, so a stop signal runs its handler at once
/// instead of after the thousands of runnable workers of a large run (up to
/// 0.8 s with 2,000 here). The thread sleeps through each timed run, so the
/// run itself is not affected; the conductor restores the original slice
/// before it starts the workers.
pub struct ShortSlice {
    /// The slice the thread had (0: the kernel's default), if it could be read.
    pub before: Option<u64>,
}

impl ShortSlice {
    /// Sets the short slice, remembering the one the thread had.
    pub fn take() -> Self {
        let before = sched_attr().map(|a| a.sched_runtime);
        if before.is_some() {
            set_slice(Some(100_000));
        }
        ShortSlice { before }
    }
}

impl Drop for ShortSlice {
    fn drop(&mut self) {
        set_slice(self.before);
    }
}

/// `struct sched_attr` of sched_setattr(2), its first version (56 bytes).
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct SchedAttr {
    size: u32,
    pub sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    pub sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

/// The calling thread's scheduling attributes, or None when they cannot be read.
pub fn sched_attr() -> Option<SchedAttr> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as libc::c_uint;
    // SAFETY: sched_getattr writes at most `size` bytes into `attr`, which is that large.
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut attr, size, 0) };
    (r == 0).then_some(attr)
}

/// Sets the calling thread's fair-class slice (`sched_runtime`; 0 is the
/// kernel's default) and leaves every other attribute as it is; `None` or
/// a thread not in the fair class is left alone, and a refusal is ignored.
pub fn set_slice(runtime: Option<u64>) {
    let (Some(runtime), Some(mut attr)) = (runtime, sched_attr()) else {
        return;
    };
    if attr.sched_policy != libc::SCHED_OTHER as u32
        && attr.sched_policy != libc::SCHED_BATCH as u32
    {
        return;
    }
    attr.size = std::mem::size_of::<SchedAttr>() as u32;
    attr.sched_runtime = runtime;
    // SAFETY: sched_setattr reads a valid, fully initialised sched_attr of `size` bytes.
    unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_map_tasks_to_cpus() {
        let spread = Placement {
            pin: Pin::Spread,
            cpus: vec![0, 1],
        };
        assert_eq!(
            (0..4).map(|t| spread.cpu_of(t)).collect::<Vec<_>>(),
            [Some(0), Some(1), Some(0), Some(1)]
        );
        assert_eq!(spread.cpus_used(1), [0]);
        assert_eq!(spread.cpus_used(5), [0, 1]);
        let same = Placement {
            pin: Pin::Same,
            cpus: vec![1],
        };
        assert_eq!(same.cpu_of(7), Some(1));
        assert_eq!(Placement::unpinned().cpu_of(0), None);
        assert!(Placement::new(Pin::Same).unwrap().cpus.len() == 1);
    }

    #[test]
    fn pins_and_restores() {
        let before = allowed_cpus().unwrap();
        let cpu = *before.last().unwrap();
        {
            let _guard = pin_current_thread(cpu).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![cpu]);
        }
        assert_eq!(allowed_cpus().unwrap(), before);
    }

    #[test]
    fn the_short_slice_lasts_as_long_as_the_case() {
        let slice = || {
            std::fs::read_to_string("/proc/thread-self/sched")
                .ok()?
                .lines()
                .find(|l| l.starts_with("se.slice"))?
                .rsplit(' ')
                .next()?
                .parse::<u64>()
                .ok()
        };
        let Some(before) = slice() else {
            return; // no scheduler debug fields to read here
        };
        let short = ShortSlice::take();
        if sched_attr().is_some_and(|a| a.sched_runtime == 100_000) {
            assert_eq!(slice(), Some(100_000));
        } // else a kernel before 6.12, which has no slice to set
        drop(short);
        assert_eq!(slice(), Some(before), "the slice is restored");
    }
}
