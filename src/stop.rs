//! Stop signals as counters for waits on other systems: a wait (for the
//! PostgreSQL store's answer) holds a [`Watch`] and gives up at the first stop
//! signal that comes after it was taken, even when an earlier signal already
//! stopped the measuring; while one is held, a repeated signal does not end
//! the process at once (the wait itself ends within a fraction of a second and
//! the run is kept in a file). The handler that counts the signals is the
//! harness's (`measure::interrupt`); this stands at the crate's root because
//! the store and the harness both read it and neither may import the other.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Stop signals received so far.
static SIGNALS: AtomicU64 = AtomicU64::new(0);

/// [`Watch`]es held now: while any is, a repeated signal does not `_exit`.
static WATCHES: AtomicUsize = AtomicUsize::new(0);

/// [`SIGNALS`] when the outermost of the watches held now was taken.
static WATCH_BASE: AtomicU64 = AtomicU64::new(0);

/// Counts a stop signal; whether a [`Watch`] is held now. Async-signal-safe
/// (atomics only): called by the signal handler.
pub fn count_signal() -> bool {
    SIGNALS.fetch_add(1, Ordering::SeqCst);
    WATCHES.load(Ordering::SeqCst) > 0
}

/// Held by a wait that gives up on the next stop signal (see the module's notes).
#[derive(Debug)]
pub struct Watch {
    since: u64,
}

impl Watch {
    /// Watches for stop signals from now on, or, taken while another watch
    /// is held, from when that one was taken (so a caller can watch a whole
    /// step whose parts take watches of their own).
    pub fn new() -> Self {
        if WATCHES.fetch_add(1, Ordering::SeqCst) == 0 {
            WATCH_BASE.store(SIGNALS.load(Ordering::SeqCst), Ordering::SeqCst);
        }
        Self {
            since: WATCH_BASE.load(Ordering::SeqCst),
        }
    }

    /// Whether a stop signal came since this watch was taken.
    pub fn signalled(&self) -> bool {
        SIGNALS.load(Ordering::SeqCst) > self.since
    }
}

impl Default for Watch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        WATCHES.fetch_sub(1, Ordering::SeqCst);
    }
}
