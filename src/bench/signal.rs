//! `signal`: the cost of installing and delivering a signal in one task,
//! lmbench `lat_sig install|catch|prot`'s cases (will-it-scale `signal1`).
//!
//! - `install`: one sigaction() of a handler for SIGUSR1, the old action
//!   read back as lmbench's does;
//! - `send`: tgkill(pid, tid, 0), a signal send that delivers nothing —
//!   lmbench's `kill(pid, 0)`, which it subtracts from `catch`;
//! - `catch`: tgkill(pid, tid, SIGUSR1) to the timing thread itself,
//!   delivered to an empty handler and returned from (signal frame with the
//!   XSAVE state written to the stack, sigreturn). osbench's series holds the
//!   whole send + delivery; lmbench's `sig hndl` is `catch − send`, which
//!   the lmbench table computes from the two series and says so;
//! - `prot`: a write to a read-only anonymous page, caught by a SIGSEGV
//!   handler that returns, so the write faults again (lmbench's method); one
//!   op = fault + delivery + handler + return. The handler makes the page
//!   writable when the batch's count is reached, and the batch ends; the page
//!   is made read-only again (one mprotect per batch, amortised). lmbench's
//!   `Prot Fault` is this less its `catch` (`prot − (catch − send)` here).
//!
//! Thread-directed tgkill instead of lmbench's kill(getpid()): osbench has
//! other threads, and a process-directed signal could be delivered to one of
//! them. Every disposition a case changes is saved at set-up and restored at
//! teardown (or when the case is dropped on an error); the mask is not
//! changed. A SIGSEGV at any other address restores the saved disposition
//! and faults again, so a real crash is reported as before. Left out:
//! lmbench's `-P` parallel copies; `sigqueue` delivery between tasks is the
//! `sigqueue` family.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use super::fault::Region;
use super::util::page_size;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    not_as_threads: Some(
        "its signal dispositions are the process's and its fault handler's page is static data: \
         copies as threads would change each other's; sweep it as processes",
    ),
    name: "signal",
    summary: "signal install, send, catch and protection fault in one task (lmbench lat_sig install|catch|prot)",
    unit: Unit::Us,
    params: &[ParamSpec {
        name: "case",
        help: "what is timed",
        kind: ParamKind::Choice(&["install", "send", "catch", "prot"]),
        default: "catch",
    }],
    default_cases: DefaultCases::EachOf("case"),
    case_name: |p| p.get("case").to_string(),
    op: |p| {
        match p.get("case") {
            "install" => "one sigaction(SIGUSR1) installing a handler (the old action read back)",
            "send" => "one tgkill(self, 0): a send that delivers nothing (lmbench's kill(pid, 0))",
            "catch" => "tgkill(self, SIGUSR1) + delivery to an empty handler + sigreturn",
            _ => "a write to a read-only page + SIGSEGV delivery to a handler + sigreturn",
        }
        .to_string()
    },
    anchor: |p| match p.get("case") {
        "send" => "(lmbench lat_sig's kill(pid, 0), subtracted from catch)".to_string(),
        case => format!("lat_sig {case}"),
    },
    differs: "catch and prot keep what lmbench subtracts: lmbench's catch = catch − send, its prot = prot − catch + send (the lmbench table shows those); tgkill to the timing thread, not kill(getpid()): in one C process on an AMD EPYC, tgkill's catch − send read 1.011 of kill's (kill(pid, 0) costs 18 ns more than tgkill's), a quarter of catch's 1.043 there (docs/crosscheck.md, fifteenth session).",
    setup,
    ..BenchDef::DEFAULTS
};

/// Signals the `catch` handler has run for (tests check the count).
static CAUGHT: AtomicU64 = AtomicU64::new(0);
/// The read-only page `prot` writes to, and the faults left in its batch.
static PROT_PAGE: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static PROT_LEFT: AtomicU64 = AtomicU64::new(0);
/// SIGSEGV's disposition before `prot` was set up, for faults elsewhere.
static PROT_SAVED: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());

extern "C" fn count_caught(_: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::Relaxed);
}

/// The `prot` handler: counts a fault on our page and, at the end of the
/// batch, makes the page writable so the faulting write completes. A fault
/// anywhere else puts the saved disposition back, so it faults again there.
extern "C" fn prot_fault(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let page = PROT_PAGE.load(Ordering::Relaxed);
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() }.cast::<u8>();
    if page.is_null() || addr < page || addr >= page.wrapping_add(page_size()) {
        let saved = PROT_SAVED.load(Ordering::Relaxed);
        // SAFETY: sigaction is async-signal-safe; `saved` is null or the live
        // saved action, which outlives the handler's installation.
        unsafe { libc::sigaction(sig, saved, std::ptr::null_mut()) };
        return;
    }
    if PROT_LEFT.fetch_sub(1, Ordering::Relaxed) <= 1 {
        // SAFETY: mprotect is async-signal-safe; `page` is our live page.
        unsafe { libc::mprotect(page.cast(), page_size(), libc::PROT_READ | libc::PROT_WRITE) };
    }
}

/// A signal's disposition, installed by a case and put back when dropped.
pub(crate) struct Installed {
    sig: libc::c_int,
    saved: Box<libc::sigaction>,
}

impl Installed {
    /// Installs `handler` (with `flags`) for `sig`, saving what was there.
    pub(crate) fn new(sig: libc::c_int, handler: usize, flags: libc::c_int) -> Result<Self> {
        // SAFETY: an all-zero sigaction is a valid value of this C struct.
        let mut saved: Box<libc::sigaction> = Box::new(unsafe { std::mem::zeroed() });
        set_action(sig, handler, flags, Some(&mut saved))?;
        Ok(Self { sig, saved })
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // SAFETY: restoring the action saved by sigaction itself.
        unsafe { libc::sigaction(self.sig, &*self.saved, std::ptr::null_mut()) };
    }
}

/// sigaction(sig) of `handler`, empty mask, `flags`; the old action into `old`.
#[inline(always)]
fn set_action(
    sig: libc::c_int,
    handler: usize,
    flags: libc::c_int,
    old: Option<&mut libc::sigaction>,
) -> Result<()> {
    // SAFETY: an all-zero sigaction is valid; sigemptyset initialises its mask.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler;
    sa.sa_flags = flags;
    // SAFETY: valid pointers; `handler` is an extern "C" fn of the matching
    // kind for `flags` (or SIG_DFL / SIG_IGN).
    let ok = unsafe {
        libc::sigemptyset(&mut sa.sa_mask);
        let old = old.map_or(std::ptr::null_mut(), |o| o as *mut libc::sigaction);
        libc::sigaction(sig, &sa, old) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(Error::last_os(format!("sigaction of signal {sig}")))
    }
}

enum Case {
    Install,
    Send,
    Catch,
    Prot { page: Region },
}

struct Signal {
    case: Case,
    pid: libc::pid_t,
    tid: libc::pid_t,
    /// The dispositions this case changed, restored when it ends.
    _installed: Vec<Installed>,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(make(p)?))
}

fn make(p: &Params) -> Result<Signal> {
    let handler = count_caught as extern "C" fn(libc::c_int) as usize;
    let (case, installed) = match p.get("case") {
        // install re-installs the same handler; the saved one comes back at the end.
        "install" => (
            Case::Install,
            vec![Installed::new(libc::SIGUSR1, handler, 0)?],
        ),
        "send" => (Case::Send, Vec::new()),
        "catch" => (
            Case::Catch,
            vec![Installed::new(libc::SIGUSR1, handler, 0)?],
        ),
        _ => {
            let page = Region::map(
                page_size(),
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
            )
            .map_err(|e| Error::io("mapping the read-only page", e))?;
            let fault = prot_fault
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as usize;
            let segv = Installed::new(libc::SIGSEGV, fault, libc::SA_SIGINFO)?;
            PROT_SAVED.store(
                (&*segv.saved as *const libc::sigaction).cast_mut(),
                Ordering::Relaxed,
            );
            PROT_PAGE.store(page.ptr, Ordering::Relaxed);
            (Case::Prot { page }, vec![segv])
        }
    };
    // SAFETY: getpid and gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
    Ok(Signal {
        case,
        pid,
        tid,
        _installed: installed,
    })
}

impl Workload for Signal {
    fn run(&mut self, iters: u64) -> Result<()> {
        match &self.case {
            Case::Install => {
                let handler = count_caught as extern "C" fn(libc::c_int) as usize;
                // SAFETY: an all-zero sigaction is a valid value of this C struct.
                let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
                for _ in 0..iters {
                    set_action(libc::SIGUSR1, handler, 0, Some(&mut old))?;
                }
            }
            Case::Send => send_loop(self.pid, self.tid, 0, iters)?,
            Case::Catch => send_loop(self.pid, self.tid, libc::SIGUSR1, iters)?,
            Case::Prot { page } => {
                if iters == 0 {
                    return Ok(());
                }
                PROT_LEFT.store(iters, Ordering::Relaxed);
                // SAFETY: our page; the handler makes it writable after `iters` faults.
                unsafe { page.ptr.write_volatile(1) };
                // SAFETY: our own page, back to read-only for the next batch.
                if unsafe { libc::mprotect(page.ptr.cast(), page.len, libc::PROT_READ) } != 0 {
                    return Err(Error::last_os("mprotect of the prot page"));
                }
            }
        }
        Ok(())
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        if let Case::Prot { .. } = self.case {
            PROT_PAGE.store(std::ptr::null_mut(), Ordering::Relaxed);
            PROT_SAVED.store(std::ptr::null_mut(), Ordering::Relaxed);
        }
    }
}

/// `iters` tgkill(pid, tid, sig) calls to the calling thread.
#[inline(never)]
fn send_loop(pid: libc::pid_t, tid: libc::pid_t, sig: libc::c_int, iters: u64) -> Result<()> {
    for _ in 0..iters {
        // SAFETY: signalling our own thread; `sig` is 0 or SIGUSR1 with a handler installed.
        if unsafe { libc::tgkill(pid, tid, sig) } != 0 {
            return Err(Error::last_os("a timed tgkill()"));
        }
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Signal tests change process-wide dispositions: one at a time.
    pub(crate) static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    const SA_RESTORER: libc::c_int = 0x0400_0000;

    /// The disposition and flags of `sig`, and this thread's mask.
    pub(crate) fn disposition(sig: libc::c_int) -> (usize, libc::c_int, Vec<bool>) {
        // SAFETY: valid out-pointers; a null new action only reads.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old);
            let mut mask: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_SETMASK, std::ptr::null(), &mut mask);
            let blocked = (1..libc::SIGRTMAX())
                .map(|s| libc::sigismember(&mask, s) == 1)
                .collect();
            // glibc adds SA_RESTORER (its sigreturn trampoline) to every action it sets.
            (old.sa_sigaction, old.sa_flags & !SA_RESTORER, blocked)
        }
    }

    #[test]
    fn every_case_runs_and_restores_the_dispositions() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let before = [libc::SIGUSR1, libc::SIGSEGV].map(disposition);
        for case in ["install", "send", "catch", "prot"] {
            let p = Params::new(&DEF, &[("case", case)]);
            let mut s = setup(&p, &Placement::unpinned()).unwrap();
            let caught = CAUGHT.load(Ordering::Relaxed);
            s.run(1000).unwrap();
            s.run(0).unwrap();
            s.run(7).unwrap();
            if case == "catch" {
                assert_eq!(CAUGHT.load(Ordering::Relaxed) - caught, 1007);
            }
            s.teardown().unwrap();
            assert_eq!(
                [libc::SIGUSR1, libc::SIGSEGV].map(disposition),
                before,
                "{case}"
            );
        }
    }

    #[test]
    fn a_prot_batch_takes_one_fault_per_op() {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = make(&Params::new(&DEF, &[("case", "prot")])).unwrap();
        s.run(250).unwrap();
        // The handler counted down to zero: 250 faults, then the write went through.
        assert_eq!(PROT_LEFT.load(Ordering::Relaxed), 0);
        let Case::Prot { page } = &s.case else {
            unreachable!()
        };
        // SAFETY: the page is readable.
        assert_eq!(unsafe { page.ptr.read_volatile() }, 1);
    }
}
