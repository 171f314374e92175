//! The calling process's own settings that shape what it can measure: its
//! timer slack and its resource limits, read (never set: setting the slack
//! for a case is the harness's, `measure::clock::set_timer_slack_ns`). A read
//! here is a capture, so the environment, the harness's error messages and
//! the store's can all say what a limit is without measuring anything.

use std::io;

/// The calling thread's timer slack (`prctl(PR_GET_TIMERSLACK)`), ns: how
/// much later than asked the kernel may fire a normal (SCHED_OTHER) task's
/// timers, to group wake-ups (50 µs by default; real-time tasks get none).
pub fn timer_slack_ns() -> std::io::Result<u64> {
    // SAFETY: PR_GET_TIMERSLACK takes no pointers; it returns the slack or -1.
    let r = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r as u64)
}

/// What a resource error's errno says to do, with the limit's current
/// value; `None` for errors that are not about a limit.
pub fn limit_hint(e: &io::Error) -> Option<String> {
    Some(match e.raw_os_error()? {
        libc::EAGAIN => format!(
            "the process and thread limit was reached: raise `ulimit -u` (now {}) or the \
             kernel's kernel.pid_max / kernel.threads-max",
            limit_text(libc::RLIMIT_NPROC)
        ),
        libc::ENOMEM => format!(
            "out of memory: raise `ulimit -v` (now {}), or use fewer tasks or a smaller working set",
            limit_text(libc::RLIMIT_AS)
        ),
        libc::EMFILE => format!(
            "the open-file limit is too low (ulimit -n is {}): raise it, e.g. `ulimit -n 65536`",
            limit_text(libc::RLIMIT_NOFILE)
        ),
        libc::ENFILE => "the system-wide file limit (fs.file-max) was reached".to_string(),
        _ => return None,
    })
}

/// The soft limit as text ("unlimited" or a number).
pub fn limit_text(resource: libc::__rlimit_resource_t) -> String {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer.
    if unsafe { libc::getrlimit(resource, &mut lim) } != 0 {
        return "unknown".into();
    }
    if lim.rlim_cur == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        lim.rlim_cur.to_string()
    }
}
