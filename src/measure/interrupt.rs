//! SIGINT, SIGTERM and SIGHUP become a flag that the harness polls between
//! samples, so an interrupted run stops cleanly (helpers killed and reaped,
//! temporary files removed) and keeps what it has measured. SIGHUP or
//! SIGTERM ignored when osbench started (`nohup osbench …`) stays ignored
//! (SIGINT is always caught: see [`Interrupt::install`]).
//!
//! The handlers are installed *without* SA_RESTART: a blocking wait (for
//! example reaping 2,000 hackbench workers) returns EINTR, and code that can
//! block for long checks [`requested`] when it does. A second signal while the
//! first is pending ends the process at once (status 128 + signal), as users
//! expect from a second Ctrl-C; helpers die with it (PR_SET_PDEATHSIG), and
//! so do set-up shells, timed commands and guests (the `warden` sees osbench
//! go and SIGKILLs their groups).
//!
//! A signal can also land while osbench is between system calls, just before
//! a wait that then blocks until the helpers finish by themselves (a whole
//! hackbench run of seconds). So the handler itself also SIGKILLs the process
//! groups registered with [`register_group`] (helpers whose owner waits for
//! their exit): every wait for them then ends at once, whenever the signal
//! landed.
//!
//! Waits on another system (the PostgreSQL store) hold a [`crate::stop::Watch`]:
//! the handler counts every signal there, and while a watch is held a repeated
//! signal does not end the process at once.
//!
//! An [`Interrupt`] can be nested in another ([`Interrupt::nested`]): set by
//! its own `set()` or by the outer one, so one stop mechanism serves a stop
//! signal and a part of the program stopped alone (a cancelled job).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use crate::error::{Error, Result};

/// Set by the signal handler.
static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Whether a stop was requested by a signal (for long blocking waits).
#[inline]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Process groups of live helper processes (0: a free slot), killed by the
/// handler. More supervisors than slots at once is not expected; one without
/// a slot is still killed when its owner sees the flag.
static HELPER_GROUPS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

/// Has the signal handler SIGKILL process group `pgid` when a stop is
/// requested (at once if one already was). The caller must unregister the
/// group before its last member is reaped, so no reused pid is ever signalled.
pub fn register_group(pgid: libc::pid_t) {
    claim(&HELPER_GROUPS, pgid);
    // A signal that came before the slot was taken did not see it. (SeqCst on
    // both sides: the handler sets the flag, then reads the slots.)
    if REQUESTED.load(Ordering::SeqCst) {
        kill_group(pgid);
    }
}

/// Forgets a group registered with [`register_group`].
pub fn unregister_group(pgid: libc::pid_t) {
    release(&HELPER_GROUPS, pgid);
}

fn claim(slots: &[AtomicI32], pgid: libc::pid_t) {
    for slot in slots {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            break;
        }
    }
}

fn release(slots: &[AtomicI32], pgid: libc::pid_t) {
    for slot in slots {
        let _ = slot.compare_exchange(pgid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// SIGKILLs every group registered in `slots` (async-signal-safe).
fn kill_groups(slots: &[AtomicI32]) {
    for slot in slots {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            kill_group(pgid);
        }
    }
}

fn kill_group(pgid: libc::pid_t) {
    // SAFETY: kill is async-signal-safe; `pgid` is a registered group whose
    // members are not all reaped yet, so its number has not been reused.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

extern "C" fn on_signal(sig: libc::c_int) {
    let watched = crate::stop::count_signal();
    if REQUESTED.swap(true, Ordering::SeqCst) && !watched {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(128 + sig) };
    }
    kill_groups(&HELPER_GROUPS);
}

/// The signal [`poke`] sends: ignored by default, so harmless where the
/// handlers are not installed.
const POKE: libc::c_int = libc::SIGURG;

extern "C" fn on_poke(_: libc::c_int) {}

/// After a stop was requested: interrupts the blocking system call a helper
/// thread is in (EINTR, as the handler has no SA_RESTART), so its loop sees
/// the flag and gives up. A thread between calls is not affected: callers
/// poke until the thread has finished.
pub fn poke<T>(thread: &std::thread::JoinHandle<T>) {
    use std::os::unix::thread::JoinHandleExt;
    // SAFETY: the handle is not joined yet, so its pthread_t is still valid
    // (a finished thread keeps it until joined); the handler does nothing.
    unsafe { libc::pthread_kill(thread.as_pthread_t(), POKE) };
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling (helper) thread, so
/// the kernel delivers them to a thread that checks the flag, and its
/// blocking waits return EINTR at once.
pub fn leave_stop_signals_to_others() {
    // SAFETY: a sigset built with sigemptyset/sigaddset, passed by pointer;
    // pthread_sigmask only changes this thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Whether `sig` is ignored now (SIG_IGN), read without changing it.
fn ignored(sig: libc::c_int) -> Result<bool> {
    // SAFETY: a zeroed sigaction is valid to write into; a null new action
    // makes sigaction only read the current one.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(sig, std::ptr::null(), &mut current) != 0 {
            return Err(Error::last_os("reading a signal's disposition"));
        }
        Ok(current.sa_sigaction == libc::SIG_IGN)
    }
}

/// A "stop soon" flag: the process-wide one set by signals, or a private
/// one; either may be nested in another ([`Interrupt::nested`]), which
/// then sets it too.
#[derive(Debug, Clone)]
pub struct Interrupt {
    /// A private flag, or `None`: the process-wide one signals set.
    own: Option<Arc<AtomicBool>>,
    /// The interrupt this one is nested in.
    outer: Option<Arc<Interrupt>>,
}

impl Interrupt {
    /// A private flag no signal sets (tests, library callers with their own handling).
    pub fn none() -> Self {
        Self {
            own: Some(Arc::new(AtomicBool::new(false))),
            outer: None,
        }
    }

    /// A flag of its own, also set whenever this one is: a part of the
    /// program that can be stopped alone (a worker's job that was
    /// cancelled), which every stop signal still stops. Setting it leaves
    /// this one alone.
    pub fn nested(&self) -> Self {
        Self {
            own: Some(Arc::new(AtomicBool::new(false))),
            outer: Some(Arc::new(self.clone())),
        }
    }

    /// Installs the handlers for SIGINT, SIGTERM and SIGHUP, and the one
    /// for [`poke`]. SIGHUP or SIGTERM ignored when osbench started
    /// (`nohup` ignores SIGHUP) stays ignored, as in every Unix tool. SIGINT
    /// is caught even then: a shell without job control ignores it in every
    /// `&` job, which is how scripts and tests start osbench in the
    /// background before stopping it with `kill -INT`.
    pub fn install() -> Result<Self> {
        let stop = on_signal as *const () as libc::sighandler_t;
        let poked = on_poke as *const () as libc::sighandler_t;
        for (sig, handler) in [
            (libc::SIGINT, stop),
            (libc::SIGTERM, stop),
            (libc::SIGHUP, stop),
            (POKE, poked),
        ] {
            if handler == stop && sig != libc::SIGINT && ignored(sig)? {
                continue;
            }
            // SAFETY: a zeroed sigaction with an empty mask and no flags is valid;
            // the handlers only touch atomics and call kill and _exit.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = handler;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                    return Err(Error::last_os("installing signal handlers"));
                }
            }
        }
        Ok(Self {
            own: None,
            outer: None,
        })
    }

    /// The process-wide flag stop signals set, without installing the
    /// handlers (for code deep in a program that installed them: the
    /// worker's reboot commands); never set where they are not installed.
    pub fn signals() -> Self {
        Self {
            own: None,
            outer: None,
        }
    }

    pub fn is_set(&self) -> bool {
        let own = match &self.own {
            Some(flag) => flag.load(Ordering::Relaxed),
            None => requested(),
        };
        own || self.outer.as_ref().is_some_and(|outer| outer.is_set())
    }

    /// Sets the flag (as a signal would): its own, not the one it is nested in.
    pub fn set(&self) {
        match &self.own {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_interrupt_is_set_by_its_outer_one_and_not_the_other_way() {
        let outer = Interrupt::none();
        let job = outer.nested();
        let other = outer.nested();
        job.set();
        assert!(job.is_set() && !outer.is_set() && !other.is_set());
        outer.set();
        assert!(other.is_set() && outer.nested().is_set());
    }
}
