//! The clocks of osbench's measurements. The harness reads a [`Clock`]
//! around batches of operations and around a whole recording of events. An
//! event is shorter than a batch, so latency workloads timestamp each one
//! themselves with [`monotonic_ns`] (and pace their waits by it);
//! [`super::spawn`] reads it around one whole command.
//!
//! [`Monotonic`] is `CLOCK_MONOTONIC` in nanoseconds (the vDSO path, no system
//! call on a TSC clocksource); lmbench's `gettimeofday` has 1 µs resolution and
//! jumps with NTP steps, which is why we do not follow it here.

/// A source of nanosecond timestamps.
pub trait Clock {
    fn now_ns(&self) -> u64;
}

/// `clock_gettime(CLOCK_MONOTONIC)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Monotonic;

impl Clock for Monotonic {
    #[inline(always)]
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }
}

/// `CLOCK_MONOTONIC` now, in nanoseconds.
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists
    // on Linux, so the call cannot fail and its return value carries nothing.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sets the calling thread's timer slack to `ns` (at least 1: the kernel
/// reads 0 as "back to the default"), as `prctl(PR_SET_TIMERSLACK)`.
pub fn set_timer_slack_ns(ns: u64) -> std::io::Result<()> {
    let ns = ns.max(1) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes the value, no pointers.
    let r = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
