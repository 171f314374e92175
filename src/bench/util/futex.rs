//! FUTEX_WAIT and FUTEX_WAKE on an `AtomicU32`, the kernel's sleep-on-a-word
//! primitive: the wake-up benchmark's `futex` case and the end-of-run wait
//! for helper threads. Plain system calls, so usable in a forked child.
//! Left out: requeue, bitsets, PI futexes.

use std::io;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

fn op(op: libc::c_int, private: bool) -> libc::c_int {
    if private {
        op | libc::FUTEX_PRIVATE_FLAG
    } else {
        op
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout` if one is given.
/// Returns early (`Ok`) on a wake-up, a changed word, a signal or the timeout:
/// callers re-check what they wait for.
pub fn wait(
    word: &AtomicU32,
    expected: u32,
    private: bool,
    timeout: Option<Duration>,
) -> io::Result<()> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs() as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32 (shared mapping or our memory);
    // FUTEX_WAIT only reads it and sleeps while it equals `expected`; `ts_ptr`
    // is null or points to a timespec that outlives the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op(libc::FUTEX_WAIT, private),
            expected,
            ts_ptr,
        )
    };
    let e = io::Error::last_os_error();
    if r == 0
        || matches!(
            e.raw_os_error(),
            Some(libc::EAGAIN | libc::EINTR | libc::ETIMEDOUT)
        )
    {
        Ok(())
    } else {
        Err(e)
    }
}

/// Wakes at most one task sleeping on `word`.
pub fn wake(word: &AtomicU32, private: bool) -> io::Result<()> {
    wake_up_to(word, private, 1)
}

/// Wakes every task sleeping on `word`.
pub fn wake_all(word: &AtomicU32, private: bool) -> io::Result<()> {
    wake_up_to(word, private, i32::MAX)
}

fn wake_up_to(word: &AtomicU32, private: bool, n: i32) -> io::Result<()> {
    // SAFETY: waking at most `n` waiters on a live, aligned u32.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op(libc::FUTEX_WAKE, private),
            n,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
