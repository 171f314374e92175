//! The parts shared by benchmarks whose tasks pass messages: a private working
//! set that a task sums between messages (lmbench's `bread`), and a group of
//! helper tasks — forked processes under a [`Supervisor`], or threads — that
//! each run one loop over their own descriptors.
//!
//! Helper loops only make system calls and touch their own memory, so they
//! are safe to run in a forked child (see [`Supervisor::fork`]).

use std::hint::black_box;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::measure::supervise::{Exit, Supervisor, thread_error};

/// A private, zeroed buffer of whole 8-byte words, mapped with mmap (a plain
/// system call, so a forked child may create one) and touched once so its
/// pages exist before timing.
pub struct WorkingSet {
    ptr: *mut u64,
    words: usize,
}

// SAFETY: the mapping is owned exclusively by this value; moving it to another
// thread moves that ownership.
unsafe impl Send for WorkingSet {}

impl WorkingSet {
    /// `kib` KiB of zeroed, faulted-in memory (nothing for 0).
    pub fn new(kib: usize) -> io::Result<Self> {
        Self::with_bytes(kib * 1024)
    }

    /// At least `len` bytes (rounded up to whole words), zeroed and faulted in.
    pub fn with_bytes(len: usize) -> io::Result<Self> {
        let bytes = len.div_ceil(8) * 8;
        if bytes == 0 {
            return Ok(Self {
                ptr: std::ptr::null_mut(),
                words: 0,
            });
        }
        // SAFETY: an anonymous private mapping with no address hint; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the mapping is `bytes` long and writable; zeroing faults every page in.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        Ok(Self {
            ptr: p.cast(),
            words: bytes / 8,
        })
    }

    /// Reads every word (lmbench's `bread`); the sum goes through `black_box`
    /// so the reads cannot be skipped or hoisted out of a loop.
    #[inline]
    pub fn sum(&self) -> u64 {
        if self.words == 0 {
            return 0;
        }
        let ptr = black_box(self.ptr);
        // SAFETY: `ptr` is the live mapping of `words` initialised u64s.
        let words = unsafe { std::slice::from_raw_parts(ptr, self.words) };
        black_box(words.iter().fold(0u64, |a, &w| a.wrapping_add(w)))
    }
}

impl WorkingSet {
    /// The memory as bytes (empty for a zero-sized set).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        if self.words == 0 {
            return &mut [];
        }
        // SAFETY: the live mapping of `words * 8` initialised bytes, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), self.words * 8) }
    }
}

impl Drop for WorkingSet {
    fn drop(&mut self) {
        if self.words > 0 {
            // SAFETY: unmapping exactly the mapping created in `new`.
            unsafe { libc::munmap(self.ptr.cast(), self.words * 8) };
        }
    }
}

/// What a helper task runs: its descriptors, in and out, and its CPU.
pub type HelperBody = fn(input: RawFd, output: RawFd, arg: usize) -> io::Result<()>;

/// Helper tasks of one case: processes or threads.
pub enum Helpers {
    Processes(Supervisor),
    Threads {
        name: String,
        handles: Vec<JoinHandle<io::Result<()>>>,
    },
}

/// How helper tasks are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Processes,
    Threads,
}

impl Mode {
    pub fn parse(s: &str) -> Self {
        if s == "threads" {
            Mode::Threads
        } else {
            Mode::Processes
        }
    }
}

impl Helpers {
    pub fn new(mode: Mode, bench: &str) -> Self {
        match mode {
            Mode::Processes => Helpers::Processes(Supervisor::new(bench)),
            Mode::Threads => Helpers::Threads {
                name: format!("osbench-{bench}"),
                handles: Vec::new(),
            },
        }
    }

    /// Starts a helper running `body(input, output, arg)` on `cpu`.
    ///
    /// A forked helper keeps only its two descriptors (see
    /// [`Supervisor::fork`]), so end of file propagates when a peer goes away;
    /// a thread takes ownership of its two and closes them when it returns.
    pub fn start(
        &mut self,
        cpu: Option<usize>,
        input: OwnedFd,
        output: OwnedFd,
        arg: usize,
        body: HelperBody,
    ) -> Result<()> {
        match self {
            Helpers::Processes(sup) => {
                let (i, o) = (input.as_raw_fd(), output.as_raw_fd());
                sup.fork(cpu, &[i, o], || match body(i, o, arg) {
                    Ok(()) => 0,
                    Err(_) => 1,
                })?;
                // The parent's copies close when `input` and `output` drop here.
                Ok(())
            }
            Helpers::Threads { name, handles } => {
                let started = handles.len();
                let handle = std::thread::Builder::new()
                    .name(name.clone())
                    .stack_size(64 * 1024)
                    .spawn(move || {
                        if let Some(cpu) = cpu {
                            crate::measure::placement::pin_thread_for_life(cpu)
                                .map_err(|e| io::Error::other(e.to_string()))?;
                        }
                        body(input.as_raw_fd(), output.as_raw_fd(), arg)
                    })
                    .map_err(|e| thread_error(started, e))?;
                handles.push(handle);
                Ok(())
            }
        }
    }

    /// Waits for every helper to finish by itself (after the caller closed the
    /// descriptors that feed them) and checks that each succeeded.
    pub fn finish(&mut self) -> Result<()> {
        match self {
            Helpers::Processes(sup) => {
                for exit in sup.wait_all(Duration::from_secs(10))? {
                    if exit != Exit::Code(0) {
                        return Err(Error::Measure(format!(
                            "a helper process ended badly: {exit:?}"
                        )));
                    }
                }
            }
            Helpers::Threads { handles, .. } => {
                for h in handles.drain(..) {
                    match h.join() {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => return Err(Error::io("a helper thread failed", e)),
                        Err(_) => return Err(Error::Measure("a helper thread panicked".into())),
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_set_is_zeroed_and_summed() {
        let ws = WorkingSet::new(16).unwrap();
        assert_eq!(ws.words, 16 * 1024 / 8);
        assert_eq!(ws.sum(), 0);
        assert_eq!(WorkingSet::new(0).unwrap().sum(), 0);
    }
}
