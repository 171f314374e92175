//! Where the measuring thread runs.
//!
//! A single-task benchmark is timed with its thread pinned to one CPU (the
//! last one it is allowed on, usually the one with the fewest device
//! interrupts), and the previous affinity is restored afterwards. Unpinned, a
//! run lands on whichever vCPU the scheduler picks, and on this machine kind
//! the two vCPUs differ: getppid() costs 167.6 ns on CPU 0 and 163.7 ns on
//! CPU 1, so unpinned invocations flip between two results 2.4 % apart.
//! Placement of several tasks (`--pin`) comes with the multi-task benchmarks.

use std::mem;

use crate::error::{Error, Result};

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
