//! SIGINT, SIGTERM and SIGHUP become a flag that the harness polls between
//! samples, so an interrupted run stops cleanly (helpers killed and reaped,
//! temporary files removed) and keeps what it has measured.
//!
//! The handlers are installed *without* SA_RESTART: a blocking wait (for
//! example reaping 2,000 hackbench workers) returns EINTR, and code that can
//! block for long checks [`requested`] when it does. A second signal while the
//! first is pending ends the process at once (status 128 + signal), as users
//! expect from a second Ctrl-C; helpers die with it (PR_SET_PDEATHSIG).
//!
//! A signal can also land while osbench is between system calls, just before
//! a wait that then blocks until the helpers finish by themselves (a whole
//! hackbench run of seconds). So the handler itself also SIGKILLs the process
//! groups of live helper processes registered with [`register_group`]: every
//! wait for them then ends at once, whenever the signal landed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::error::{Error, Result};

/// Set by the signal handler.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Whether a stop was requested by a signal (for long blocking waits).
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Process groups of live helper processes (0: a free slot), killed by the
/// handler. More supervisors than slots at once is not expected; one without
/// a slot is still killed when its owner sees the flag.
static HELPER_GROUPS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

/// Has the signal handler SIGKILL process group `pgid` when a stop is
/// requested (at once if one already was). The caller must unregister the
/// group before its last member is reaped, so no reused pid is ever signalled.
pub fn register_group(pgid: libc::pid_t) {
    for slot in &HELPER_GROUPS {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            break;
        }
    }
    // A signal that came before the slot was taken did not see it.
    if requested() {
        kill_group(pgid);
    }
}

/// Forgets a group registered with [`register_group`].
pub fn unregister_group(pgid: libc::pid_t) {
    for slot in &HELPER_GROUPS {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

fn kill_group(pgid: libc::pid_t) {
    // SAFETY: kill is async-signal-safe; `pgid` is a registered group whose
    // members are not all reaped yet, so its number has not been reused.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

extern "C" fn on_signal(sig: libc::c_int) {
    if REQUESTED.swap(true, Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
    for slot in &HELPER_GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            kill_group(pgid);
        }
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
