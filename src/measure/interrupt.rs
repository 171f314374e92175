//! SIGINT, SIGTERM and SIGHUP become a flag that the harness polls between
//! samples, so an interrupted run stops cleanly (helpers killed and reaped,
//! temporary files removed) and keeps what it has measured.
//!
//! The handlers are installed *without* SA_RESTART: a blocking wait (for
//! example reaping 2,000 hackbench workers) returns EINTR, and code that can
//! block for long checks [`requested`] when it does. A second signal while the
//! first is pending ends the process at once (status 128 + signal), as users
//! expect from a second Ctrl-C; helpers die with it (PR_SET_PDEATHSIG).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// Set by the signal handler.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Whether a stop was requested by a signal (for long blocking waits).
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

extern "C" fn on_signal(sig: libc::c_int) {
    if REQUESTED.swap(true, Ordering::Relaxed) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
}

/// A "stop soon" flag: the process-wide one set by signals, or a private one.
#[derive(Debug, Clone)]
pub struct Interrupt(Option<Arc<AtomicBool>>);

impl Interrupt {
    /// A private flag no signal sets (tests, library callers with their own handling).
    pub fn none() -> Self {
        Self(Some(Arc::new(AtomicBool::new(false))))
    }

    /// Installs the handlers for SIGINT, SIGTERM and SIGHUP.
    pub fn install() -> Result<Self> {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: a zeroed sigaction with an empty mask and no flags is valid;
            // the handler only touches an atomic and calls _exit.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                    return Err(Error::last_os("installing signal handlers"));
                }
            }
        }
        Ok(Self(None))
    }

    pub fn is_set(&self) -> bool {
        match &self.0 {
            Some(flag) => flag.load(Ordering::Relaxed),
            None => requested(),
        }
    }

    /// Sets the flag (as a signal would).
    pub fn set(&self) {
        match &self.0 {
            Some(flag) => flag.store(true, Ordering::Relaxed),
            None => REQUESTED.store(true, Ordering::Relaxed),
        }
    }

    /// `Err(Interrupted)` once the flag is set.
    pub fn check(&self) -> Result<()> {
        if self.is_set() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}
