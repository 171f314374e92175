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
//! themselves to [`Placement::cpu_of`] their index.

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
}
