//! The warden: one small process per osbench that kills the process groups
//! osbench started and has not ended yet — timed commands, set-up and
//! tear-down shells, guests — if osbench dies, even by SIGKILL. osbench tells it, through a pipe, which groups are live;
//! when osbench is gone the pipe's write end closes, the warden reads the end
//! of the stream and SIGKILLs every group still listed, then exits.
//!
//! Why not a parent-death signal on each child: it is not inherited by the
//! child's own children (a shell's commands), and it needs a pre-exec step,
//! which makes std fork the whole of osbench instead of using `posix_spawn`,
//! ~70–100 µs more per timed run here (measured against `true`). Registering
//! a group costs one 5-byte write. Left out: children started when the warden
//! could not be forked (they run unguarded).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

/// Most groups listed at once (one timed command at a time in practice).
const MAX_GROUPS: usize = 64;

/// The write end of the warden's pipe (`None` once [`stop`]ped), and its pid.
struct Warden {
    tx: Option<OwnedFd>,
    pid: libc::pid_t,
}

static WARDEN: OnceLock<Option<Mutex<Warden>>> = OnceLock::new();

/// The warden of this process, started at first use; `None` if it could not be.
fn warden() -> Option<&'static Mutex<Warden>> {
    WARDEN.get_or_init(|| start().map(Mutex::new)).as_ref()
}

/// Before osbench exits: ends the warden's stream and reaps it, waiting
/// up to 1 s (a forked benchmark child that still holds the pipe keeps it
/// alive: it is then left, as before), so that no warden is left a zombie
/// for init to collect. Groups still listed are killed, as at osbench's
/// death; groups started later run unguarded.
pub fn stop() {
    let Some(Some(w)) = WARDEN.get() else {
        return; // never started: nothing to reap
    };
    let Ok(mut w) = w.lock() else { return };
    if w.tx.take().is_none() {
        return;
    }
    for _ in 0..1000 {
        // SAFETY: waitpid on our own child, with no status wanted.
        let r = unsafe { libc::waitpid(w.pid, std::ptr::null_mut(), libc::WNOHANG) };
        if r != 0 {
            return; // reaped, or not ours to reap
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Lists `group` as live: the warden kills it if osbench dies.
pub fn guard(group: libc::pid_t) {
    send(b'+', group);
}

/// Unlists `group` (call before its leader is reaped).
pub fn release(group: libc::pid_t) {
    send(b'-', group);
}

/// Starts the warden, or does not (it is a safety net, not a requirement).
pub fn ensure_started() {
    let _ = warden();
}

fn send(op: u8, group: libc::pid_t) {
    let Some(w) = warden() else { return };
    let Ok(w) = w.lock() else { return };
    let Some(tx) = &w.tx else { return };
    let mut msg = [op, 0, 0, 0, 0];
    msg[1..].copy_from_slice(&group.to_ne_bytes());
    // SAFETY: writing 5 bytes from a local array to our pipe; a write this
    // small is atomic on a pipe (PIPE_BUF), so messages never interleave.
    unsafe { libc::write(tx.as_raw_fd(), msg.as_ptr().cast(), msg.len()) };
}

fn start() -> Option<Warden> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills a two-element array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    let (rx, tx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the child runs `watch`, which makes only async-signal-safe
    // calls (osbench may have other threads) and never returns.
    match unsafe { libc::fork() } {
        -1 => None,
        0 => watch(rx.as_raw_fd()),
        pid => {
            drop(rx);
            Some(Warden { tx: Some(tx), pid })
        }
    }
}

/// The warden's life: keep the list until the stream ends, then kill what is
/// listed. Only async-signal-safe calls, a fixed array, no allocation.
fn watch(rx: libc::c_int) -> ! {
    // SAFETY: signal, close_range, read, kill and _exit with integer
    // arguments and local buffers.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // Every other descriptor closed: above all osbench's copy of the
        // write end, so its death ends the stream.
        let max = libc::c_uint::MAX;
        let below =
            rx == 0 || libc::syscall(libc::SYS_close_range, 0, (rx - 1) as libc::c_uint, 0) == 0;
        let above = libc::syscall(libc::SYS_close_range, (rx + 1) as libc::c_uint, max, 0) == 0;
        if !(below && above) {
            (0..1024)
                .filter(|&fd| fd != rx)
                .for_each(|fd| _ = libc::close(fd)); // Linux < 5.9
        }
        let mut live = [0 as libc::pid_t; MAX_GROUPS];
        let mut msg = [0u8; 5];
        loop {
            let n = libc::read(rx, msg.as_mut_ptr().cast(), msg.len());
            if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
                for &g in live.iter().filter(|&&g| g > 0) {
                    libc::kill(-g, libc::SIGKILL);
                }
                libc::_exit(0);
            }
            if n != 5 {
                continue;
            }
            let group = libc::pid_t::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
            let (want, put) = if msg[0] == b'+' {
                (0, group)
            } else {
                (group, 0)
            };
            if let Some(slot) = live.iter_mut().find(|g| **g == want) {
                *slot = put;
            }
        }
    }
}
