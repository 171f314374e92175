//! The copies' shared memory: one cache line per copy holding its count of
//! completed iterations, its state and, when its set-up failed, why; and a
//! stop flag they all read. One anonymous shared mapping, so that forked
//! copies and threads alike write where the timing thread reads (as
//! will-it-scale's main.c keeps its per-task counters). Left out: starting
//! the copies (`workload`).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::measure::supervise::map_anonymous;

/// A copy that has not finished its set-up yet.
pub const STARTING: u32 = 0;
/// A copy looping on its operation.
pub const RUNNING: u32 = 1;
/// A copy whose set-up or operation failed; its message says why.
pub const FAILED: u32 = 2;

const MESSAGE_BYTES: usize = 104;

/// One copy's line: written by that copy only.
#[repr(C, align(128))]
struct Slot {
    count: AtomicU64,
    state: AtomicU32,
    message_len: AtomicU32,
    /// Written by its copy only, before it publishes `FAILED`.
    message: UnsafeCell<[u8; MESSAGE_BYTES]>,
}

/// The shared counters of `n` copies, unmapped when dropped (each forked
/// copy has its own mapping of the same pages, released when it exits).
#[derive(Debug)]
pub struct Counters {
    base: *mut u8,
    bytes: usize,
    n: usize,
}

// SAFETY: every field the copies and the timing thread share is atomic;
// the mapping lives as long as the `Counters`.
unsafe impl Send for Counters {}
// SAFETY: as above.
unsafe impl Sync for Counters {}

impl Counters {
    /// Maps the counters of `n` copies, all zero and `STARTING`.
    pub fn new(n: usize) -> Result<Self> {
        let bytes = std::mem::size_of::<Slot>() * (n + 1);
        let base = map_anonymous(bytes, libc::MAP_SHARED)
            .map_err(|e| Error::io(format!("mapping the shared counters of {n} tasks"), e))?;
        Ok(Self {
            base: base.cast(),
            bytes,
            n,
        })
    }

    fn slot(&self, i: usize) -> &Slot {
        assert!(i <= self.n, "copy {i} of {}", self.n);
        // SAFETY: slot i lies within the mapping (i ≤ n, n + 1 slots), is
        // aligned (the mapping is page-aligned, slots 128 bytes) and all-atomic.
        unsafe {
            &*self
                .base
                .add(i * std::mem::size_of::<Slot>())
                .cast::<Slot>()
        }
    }

    /// The stop flag lives in the extra last slot.
    fn stop_flag(&self) -> &AtomicBool {
        // SAFETY: the `count` of slot n, an AtomicU64, has room and alignment for an AtomicBool.
        unsafe { &*(&self.slot(self.n).count as *const AtomicU64).cast::<AtomicBool>() }
    }

    /// Copy `i` completed `iters` more iterations (it is the line's only writer).
    #[inline]
    pub fn add(&self, i: usize, iters: u64) {
        let c = &self.slot(i).count;
        c.store(c.load(Ordering::Relaxed) + iters, Ordering::Relaxed);
    }

    /// Iterations completed by every copy so far.
    pub fn total(&self) -> u64 {
        (0..self.n)
            .map(|i| self.slot(i).count.load(Ordering::Relaxed))
            .sum()
    }

    /// Iterations completed by copy `i` so far.
    pub fn count(&self, i: usize) -> u64 {
        self.slot(i).count.load(Ordering::Relaxed)
    }

    pub fn set_state(&self, i: usize, state: u32) {
        self.slot(i).state.store(state, Ordering::Release);
    }

    pub fn state(&self, i: usize) -> u32 {
        self.slot(i).state.load(Ordering::Acquire)
    }

    /// Copy `i` failed: keeps the start of `why` and marks it `FAILED`.
    pub fn fail(&self, i: usize, why: &str) {
        let slot = self.slot(i);
        let bytes = why.as_bytes();
        let mut len = bytes.len().min(MESSAGE_BYTES);
        while !why.is_char_boundary(len) {
            len -= 1;
        }
        let dst = slot.message.get().cast::<u8>();
        // SAFETY: only copy i writes its message, before publishing FAILED
        // (Release), and `len` ≤ MESSAGE_BYTES fits the array.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len) };
        slot.message_len.store(len as u32, Ordering::Relaxed);
        self.set_state(i, FAILED);
    }

    /// Why copy `i` failed, when it did.
    pub fn failure(&self, i: usize) -> Option<String> {
        if self.state(i) != FAILED {
            return None;
        }
        let slot = self.slot(i);
        let len = slot.message_len.load(Ordering::Relaxed) as usize;
        // SAFETY: the copy wrote its message before publishing FAILED
        // (Acquire above) and writes it no more.
        let message = unsafe { &*slot.message.get() };
        Some(String::from_utf8_lossy(&message[..len.min(MESSAGE_BYTES)]).into_owned())
    }

    /// Tells every copy to stop after its current iteration.
    pub fn stop(&self) {
        self.stop_flag().store(true, Ordering::Release);
    }

    pub fn stopping(&self) -> bool {
        self.stop_flag().load(Ordering::Relaxed)
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping `new` made, once.
        unsafe { libc::munmap(self.base.cast(), self.bytes) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_of_512_copies_add_up_and_keep_their_failures_apart() {
        let c = Counters::new(512).unwrap();
        for i in 0..512 {
            c.add(i, i as u64 + 1);
            c.set_state(i, RUNNING);
        }
        assert_eq!(c.total(), 512 * 513 / 2);
        assert_eq!(c.count(511), 512);
        c.fail(300, &"é".repeat(200));
        assert_eq!(c.state(300), FAILED);
        let why = c.failure(300).unwrap();
        assert!(why.len() <= MESSAGE_BYTES && why.chars().all(|ch| ch == 'é'));
        assert_eq!(c.failure(299), None);
        assert!(!c.stopping());
        c.stop();
        assert!(c.stopping() && c.count(511) == 512);
    }
}
