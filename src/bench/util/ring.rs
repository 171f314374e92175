//! The parts shared by benchmarks whose tasks pass messages: a private working
//! set that a task sums between messages (lmbench's `bread`), a group of
//! helper tasks — forked processes under a [`Supervisor`], or threads — each
//! running a loop over descriptors it owns, and counters shared with them.
//!
//! Helper loops only make system calls and touch their own memory, so they
//! are safe to run in a forked child (see [`Supervisor::fork`]).

use std::hint::black_box;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::futex;
use super::plain_thread::PlainThread;
use crate::error::{Error, Result};
use crate::measure::interrupt;
use crate::measure::limits::thread_error;
use crate::measure::supervise::{Exit, Supervisor};

/// A private, zeroed buffer of whole 8-byte words, mapped with mmap (a plain
/// system call, so a forked child may create one) and touched once so its
/// pages exist before timing.
pub struct WorkingSet {
    ptr: *mut u64,
    words: usize,
    /// Bytes mapped, never touched, before and after the buffer (a page for
    /// [`WorkingSet::placed_as_valloc`], else none).
    margin: usize,
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
        Self::with_margin(len, 0)
    }

    /// As [`WorkingSet::with_bytes`], placed as glibc's `valloc` places a
    /// large buffer (lmbench's `bw_mem`): a page into a mapping a page longer
    /// on each side. The kernel aligns an anonymous mapping whose length is
    /// a multiple of 2 MiB to 2 MiB, and on an AMD EPYC libc's copy between
    /// two such buffers ran 15-18 % faster than between lmbench's
    /// (docs/crosscheck.md, fifteenth session); this mapping's length is
    /// not such a multiple where the buffer's is.
    pub fn placed_as_valloc(len: usize) -> io::Result<Self> {
        Self::with_margin(len, super::page_size())
    }

    /// `len` bytes (whole words) with `margin` bytes mapped on each side.
    fn with_margin(len: usize, margin: usize) -> io::Result<Self> {
        let bytes = len.div_ceil(8) * 8;
        if bytes == 0 {
            return Ok(Self {
                ptr: std::ptr::null_mut(),
                words: 0,
                margin: 0,
            });
        }
        let mapping = map_anonymous(bytes + 2 * margin, libc::MAP_PRIVATE)?;
        // SAFETY: `margin` bytes into a mapping `bytes + 2 * margin` long.
        let p = unsafe { mapping.cast::<u8>().add(margin) };
        // SAFETY: `bytes` writable bytes from `p`; zeroing faults their pages in.
        unsafe { std::ptr::write_bytes(p, 0, bytes) };
        Ok(Self {
            ptr: p.cast(),
            words: bytes / 8,
            margin,
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

/// Where the shared mappings of helpers come from (also the loads').
pub(crate) use crate::measure::supervise::map_anonymous;

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

impl WorkingSet {
    /// The memory as 8-byte words (empty for a zero-sized set).
    pub fn as_words(&self) -> &[u64] {
        if self.words == 0 {
            return &[];
        }
        // SAFETY: the live mapping of `words` initialised u64s.
        unsafe { std::slice::from_raw_parts(self.ptr, self.words) }
    }

    /// The memory as 32-bit words (empty for a zero-sized set).
    pub fn as_words32_mut(&mut self) -> &mut [u32] {
        if self.words == 0 {
            return &mut [];
        }
        // SAFETY: the live, page-aligned mapping of `words * 8` initialised
        // bytes, borrowed mutably; any bit pattern is a valid u32.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast(), self.words * 2) }
    }
}

impl Drop for WorkingSet {
    fn drop(&mut self) {
        if self.words > 0 {
            // SAFETY: unmapping exactly the mapping created in `with_margin`.
            unsafe {
                libc::munmap(
                    self.ptr.cast::<u8>().sub(self.margin).cast(),
                    self.words * 8 + 2 * self.margin,
                )
            };
        }
    }
}

/// Helper tasks of one case: processes or threads.
pub enum Helpers {
    Processes(Supervisor),
    Threads {
        name: String,
        stack_bytes: usize,
        handles: Vec<JoinHandle<io::Result<()>>>,
        /// Threads whose body has not returned yet.
        running: Arc<Running>,
    },
    /// Threads made the way hackbench -T makes them (see [`Helpers::plain_threads`]).
    PlainThreads {
        stack_bytes: usize,
        threads: Vec<PlainThread>,
    },
}

/// A count of helper threads still running their body, which the last one
/// to finish wakes the waiter on (a futex), so the end of a run can be
/// awaited in a way a stop request can cut short (a join cannot).
#[derive(Default)]
pub struct Running(AtomicU32);

/// Counts its thread out when the thread's body returns (or unwinds).
struct CountedOut(Arc<Running>);

impl Drop for CountedOut {
    fn drop(&mut self) {
        if self.0.0.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = futex::wake(&self.0.0, true);
        }
    }
}

impl Running {
    /// Waits until every thread's body has returned, looking for a stop
    /// every 100 ms (a signal may land just before it sleeps). On a stop it
    /// pokes the unfinished threads (their blocking reads and writes then
    /// fail), gives them [`STOP_GRACE`] to return, and returns false: threads
    /// still busy (hundreds of them on two CPUs take a while to be scheduled
    /// and notice) are left to finish on their own or die with the process,
    /// so a stop is not delayed by them.
    fn wait(&self, threads: &[JoinHandle<io::Result<()>>]) -> bool {
        let mut poked: Option<Instant> = None;
        loop {
            let left = self.0.load(Ordering::Acquire);
            if left == 0 {
                return true;
            }
            if interrupt::requested() {
                match poked {
                    Some(at) if at.elapsed() >= STOP_GRACE => return false,
                    Some(_) => {}
                    None => {
                        threads
                            .iter()
                            .filter(|t| !t.is_finished())
                            .for_each(interrupt::poke);
                        poked = Some(Instant::now());
                    }
                }
            }
            let nap = if poked.is_some() {
                Duration::from_millis(5)
            } else {
                Duration::from_millis(100)
            };
            let _ = futex::wait(&self.0, left, true, Some(nap));
        }
    }
}

/// How long a stop waits for poked helper threads before leaving them.
const STOP_GRACE: Duration = Duration::from_millis(50);

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
    /// Helpers named `osbench-<bench>`; threads get `stack_bytes` of stack.
    pub fn new(mode: Mode, bench: &str, stack_bytes: usize) -> Self {
        match mode {
            Mode::Processes => Helpers::Processes(Supervisor::new(bench)),
            Mode::Threads => Helpers::Threads {
                name: format!("osbench-{bench}"),
                stack_bytes,
                handles: Vec::new(),
                running: Arc::default(),
            },
        }
    }

    /// Helper processes are SIGKILLed by the signal handler on a stop
    /// ([`Supervisor::killed_on_stop`]); threads are unaffected.
    pub fn killed_on_stop(self) -> Self {
        match self {
            Helpers::Processes(sup) => Helpers::Processes(sup.killed_on_stop()),
            threads => threads,
        }
    }

    /// Helper processes join the caller's process group (see
    /// [`Supervisor::in_callers_group`]); threads are unaffected.
    pub fn in_callers_group(self) -> Self {
        match self {
            Helpers::Processes(sup) => Helpers::Processes(sup.in_callers_group()),
            threads => threads,
        }
    }

    /// Threads are made as hackbench -T makes them: pthread_create with the
    /// given stack and nothing else — no name, no signal stack (Rust's
    /// threads map one and unmap it as they exit, which costs a TLB
    /// shoot-down per thread inside a timed hackbench run), no stop handling:
    /// for helpers that die with their process when a stop kills it.
    pub fn plain_threads(self) -> Self {
        match self {
            Helpers::Threads { stack_bytes, .. } => Helpers::PlainThreads {
                stack_bytes,
                threads: Vec::new(),
            },
            other => other,
        }
    }

    /// How many helpers were started and not yet finished.
    pub fn len(&self) -> usize {
        match self {
            Helpers::Processes(sup) => sup.children().len(),
            Helpers::Threads { handles, .. } => handles.len(),
            Helpers::PlainThreads { threads, .. } => threads.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts a helper on `cpu` running `body`, which owns what it uses.
    ///
    /// A forked helper keeps only the descriptors in `keep` (see
    /// [`Supervisor::fork`]) and the parent drops its copy of `body` (and so
    /// of any descriptors it owns) at once; a thread owns `body` and drops it
    /// when it returns. In a forked child `body` must only make system calls.
    pub fn spawn(
        &mut self,
        cpu: Option<usize>,
        keep: &[RawFd],
        body: impl FnOnce() -> io::Result<()> + Send + 'static,
    ) -> Result<()> {
        match self {
            Helpers::Processes(sup) => {
                sup.fork(cpu, keep, || i32::from(body().is_err()))?;
                Ok(())
            }
            Helpers::Threads {
                name,
                stack_bytes,
                handles,
                running,
            } => {
                if interrupt::requested() {
                    return Err(Error::Interrupted);
                }
                let started = handles.len();
                running.0.fetch_add(1, Ordering::AcqRel);
                let counted = CountedOut(Arc::clone(running));
                let handle = std::thread::Builder::new()
                    .name(name.clone())
                    .stack_size(*stack_bytes)
                    .spawn(move || {
                        let _counted = counted;
                        interrupt::leave_stop_signals_to_others();
                        if let Some(cpu) = cpu {
                            crate::measure::placement::pin_thread_for_life(cpu)
                                .map_err(|e| io::Error::other(e.to_string()))?;
                        }
                        body()
                    })
                    .map_err(|e| thread_error(started, e))?;
                handles.push(handle);
                Ok(())
            }
            Helpers::PlainThreads {
                stack_bytes,
                threads,
            } => {
                let started = threads.len();
                let body = move || {
                    if let Some(cpu) = cpu {
                        crate::measure::placement::pin_thread_for_life(cpu)
                            .map_err(|e| io::Error::other(e.to_string()))?;
                    }
                    body()
                };
                threads.push(
                    PlainThread::spawn(*stack_bytes, Box::new(body))
                        .map_err(|e| thread_error(started, e))?,
                );
                Ok(())
            }
        }
    }

    /// Starts a helper running `body(input, output, arg)`: a token or echo loop
    /// over one descriptor in and one out.
    pub fn start(
        &mut self,
        cpu: Option<usize>,
        input: OwnedFd,
        output: OwnedFd,
        arg: usize,
        body: fn(RawFd, RawFd, usize) -> io::Result<()>,
    ) -> Result<()> {
        let keep = [input.as_raw_fd(), output.as_raw_fd()];
        self.spawn(cpu, &keep, move || {
            body(input.as_raw_fd(), output.as_raw_fd(), arg)
        })
    }

    /// Waits, without a time limit but giving up on an interrupt, for every
    /// helper to finish by itself (the timed end of a hackbench run), and
    /// checks that each succeeded.
    pub fn join_all(&mut self) -> Result<()> {
        match self {
            Helpers::Processes(sup) => check_exits(sup.reap_all()?),
            Helpers::Threads {
                handles, running, ..
            } => {
                if !running.wait(handles) {
                    handles.clear(); // detached: they end on their own
                    return Err(Error::Interrupted);
                }
                self.finish()
            }
            Helpers::PlainThreads { .. } => self.finish(),
        }
    }

    /// Waits for every helper to finish by itself (after the caller closed the
    /// descriptors that feed them) and checks that each succeeded; helper
    /// processes get 10 s.
    pub fn finish(&mut self) -> Result<()> {
        match self {
            Helpers::Processes(sup) => check_exits(sup.wait_all(Duration::from_secs(10))?),
            Helpers::Threads {
                handles, running, ..
            } => {
                // After a stop, threads that do not return at once are left (detached).
                if interrupt::requested() && !running.wait(handles) {
                    handles.clear();
                    return Ok(());
                }
                let mut result = Ok(());
                for h in handles.drain(..) {
                    let outcome = match h.join() {
                        Ok(Ok(())) => Ok(()),
                        Ok(Err(e)) => Err(Error::io("a helper thread failed", e)),
                        Err(_) => Err(Error::Measure("a helper thread panicked".into())),
                    };
                    result = result.and(outcome);
                }
                result
            }
            Helpers::PlainThreads { threads, .. } => {
                let mut result = Ok(());
                for t in threads.drain(..) {
                    result = result.and(t.join());
                }
                result
            }
        }
    }
}

fn check_exits(exits: Vec<Exit>) -> Result<()> {
    // After a stop, helpers end however the stop left them: killed by the
    // signal handler, or by SIGPIPE from a ring torn down mid-lap.
    if crate::measure::interrupt::requested() {
        return Ok(());
    }
    let failed = |e: &&Exit| **e != Exit::Code(0);
    let bad = exits.iter().filter(failed).count();
    match exits.iter().find(failed) {
        None => Ok(()),
        Some(first) => Err(Error::Measure(format!(
            "{bad} of {} helper processes ended badly (first: {first:?})",
            exits.len()
        ))),
    }
}

/// Counters in memory shared with forked helpers (MAP_SHARED), one per helper,
/// so the parent can check how many messages each one passed.
pub struct SharedCounters {
    ptr: *mut AtomicU64,
    len: usize,
}

// SAFETY: the mapping is only accessed through atomics.
unsafe impl Send for SharedCounters {}
// SAFETY: as above.
unsafe impl Sync for SharedCounters {}

impl SharedCounters {
    pub fn new(len: usize) -> Result<Self> {
        let p = map_anonymous(len.max(1) * 8, libc::MAP_SHARED)
            .map_err(|e| Error::io("mapping shared counters", e))?;
        // Anonymous mappings are zero-filled: every counter starts at 0.
        Ok(Self { ptr: p.cast(), len })
    }

    pub fn get(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.len);
        // SAFETY: `i` is in bounds of the live, zero-initialised mapping.
        unsafe { &*self.ptr.add(i) }
    }

    pub fn values(&self) -> Vec<u64> {
        (0..self.len)
            .map(|i| self.get(i).load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for SharedCounters {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.ptr.cast(), self.len.max(1) * 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_counters_are_seen_across_fork() {
        let counters = std::sync::Arc::new(SharedCounters::new(3).unwrap());
        let mut helpers = Helpers::new(Mode::Processes, "test", 64 * 1024);
        let c = std::sync::Arc::clone(&counters);
        helpers
            .spawn(None, &[], move || {
                c.get(2).store(42, Ordering::Relaxed);
                Ok(())
            })
            .unwrap();
        helpers.join_all().unwrap();
        assert_eq!(counters.values(), [0, 0, 42]);
    }

    #[test]
    fn working_set_is_zeroed_and_summed() {
        let ws = WorkingSet::new(16).unwrap();
        assert_eq!(ws.words, 16 * 1024 / 8);
        assert_eq!(ws.sum(), 0);
        assert_eq!(WorkingSet::new(0).unwrap().sum(), 0);
    }

    /// The address ranges of this process's mappings (`/proc/self/maps`).
    fn mappings() -> Vec<(usize, usize)> {
        std::fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter_map(|line| {
                let (from, to) = line.split_whitespace().next()?.split_once('-')?;
                Some((
                    usize::from_str_radix(from, 16).ok()?,
                    usize::from_str_radix(to, 16).ok()?,
                ))
            })
            .collect()
    }

    #[test]
    fn placed_as_valloc_is_a_page_into_a_mapping_a_page_longer_each_side() {
        let two_mib = 2 << 20;
        let page = crate::bench::util::page_size();
        let mut ws = WorkingSet::placed_as_valloc(two_mib).unwrap();
        let buffer = ws.ptr as usize;
        assert_eq!(buffer % page, 0, "the buffer starts on a page");
        assert_eq!(ws.margin, page);
        assert_eq!(ws.sum(), 0);
        ws.as_bytes_mut().fill(1);
        assert_eq!(ws.as_bytes_mut().len(), two_mib);
        // Anonymous mappings can merge with a neighbour: the one holding the
        // buffer reaches at least a page before it and a page after it.
        let (from, to) = mappings()
            .into_iter()
            .find(|&(from, to)| from <= buffer && buffer < to)
            .expect("a mapping holds the buffer");
        assert!(from <= buffer - page && buffer + two_mib + page <= to);
        assert_eq!(WorkingSet::with_bytes(two_mib).unwrap().margin, 0);
    }
}
