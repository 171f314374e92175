//! The warden: one small process per osbench that kills the process groups
//! osbench started and has not ended yet — timed commands, set-up and
//! tear-down shells, guests — if osbench dies, even by SIGKILL, and writes
//! back the values of files (knobs) osbench changed and has not restored.
//! osbench tells it, through a pipe, which groups are live and which
//! restores it holds; when osbench is gone the pipe's write end closes, the
//! warden reads the end of the stream, SIGKILLs every group still listed,
//! undoes every restore still held — the last held first — then exits. A
//! restore is a value written back to its file (open, write, close: a
//! knob), a line appended to a file (`echo '-:p' >> kprobe_events`: a probe
//! removed) or a command run to its end (`auditctl -D -k KEY`: audit rules
//! deleted).
//!
//! The stream's messages, each one write of at most `PIPE_BUF` bytes (so
//! they never interleave): `+`/`-` and a pid (5 bytes) list and unlist a
//! group; `R` (write), `A` (append) or `C` (command), an id (4 bytes), the
//! path's and the value's lengths (2 bytes each) and their bytes hold a
//! restore (a command's "path" is its argument vector, NUL-separated, the
//! program an absolute path); `F` and an id forget it.
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

/// Most restores held at once (one per knob file of a run).
const MAX_RESTORES: usize = 64;

/// The longest path of a restore, in bytes (its NUL not counted).
pub const MAX_RESTORE_PATH: usize = 511;

/// The longest value of a restore, in bytes.
pub const MAX_RESTORE_VALUE: usize = 255;

/// A message's head: its kind and a pid or id.
const HEAD: usize = 5;

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

/// Ids of restores held, unique in this process.
static NEXT_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

/// A new id for a restore to hold.
pub fn next_id() -> u32 {
    NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Holds a restore: if osbench dies before [`forget_restore`]`(id)`, the
/// warden writes `value` to `path`. False when it cannot (no warden, a path
/// or value too long, a NUL in the path): the value is then restored only
/// by osbench itself.
pub fn hold_restore(id: u32, path: &[u8], value: &[u8]) -> bool {
    !path.contains(&0) && hold_message(b'R', id, path, value)
}

/// Holds an append: if osbench dies before [`forget_restore`]`(id)`, the
/// warden appends `line` to `path` (tracefs's `kprobe_events`, whose
/// truncation would remove every probe, not just osbench's). False as for
/// [`hold_restore`].
pub fn hold_append(id: u32, path: &[u8], line: &[u8]) -> bool {
    !path.contains(&0) && hold_message(b'A', id, path, line)
}

/// Holds a command: if osbench dies before [`forget_restore`]`(id)`, the
/// warden runs `argv` (`argv[0]` an absolute path; no shell, an
/// environment of `PATH` alone) and waits for it. False when it cannot
/// (no warden, the arguments longer than [`MAX_RESTORE_PATH`] together, a
/// NUL in one, a relative program).
pub fn hold_command(id: u32, argv: &[&[u8]]) -> bool {
    if argv.is_empty() || !argv[0].starts_with(b"/") || argv.iter().any(|a| a.contains(&0)) {
        return false;
    }
    hold_message(b'C', id, &argv.join(&0u8), b"")
}

/// Sends a restore of kind `kind` (`R`, `A`, `C`).
fn hold_message(kind: u8, id: u32, path: &[u8], value: &[u8]) -> bool {
    if path.len() > MAX_RESTORE_PATH || value.len() > MAX_RESTORE_VALUE {
        return false;
    }
    let mut msg = Vec::with_capacity(HEAD + 4 + path.len() + value.len());
    msg.push(kind);
    msg.extend_from_slice(&id.to_ne_bytes());
    msg.extend_from_slice(&(path.len() as u16).to_ne_bytes());
    msg.extend_from_slice(&(value.len() as u16).to_ne_bytes());
    msg.extend_from_slice(path);
    msg.extend_from_slice(value);
    write_message(&msg)
}

/// Forgets restore `id` (osbench restored the value itself).
pub fn forget_restore(id: u32) {
    let mut msg = [b'F', 0, 0, 0, 0];
    msg[1..].copy_from_slice(&id.to_ne_bytes());
    write_message(&msg);
}

fn send(op: u8, group: libc::pid_t) {
    let mut msg = [op, 0, 0, 0, 0];
    msg[1..].copy_from_slice(&group.to_ne_bytes());
    write_message(&msg);
}

/// Writes one message to the warden's pipe; whether it was written whole.
fn write_message(msg: &[u8]) -> bool {
    let Some(w) = warden() else { return false };
    let Ok(w) = w.lock() else { return false };
    let Some(tx) = &w.tx else { return false };
    // SAFETY: writing a message we own to our pipe; a write of at most
    // PIPE_BUF bytes is atomic on a pipe, so messages never interleave.
    let n = unsafe { libc::write(tx.as_raw_fd(), msg.as_ptr().cast(), msg.len()) };
    n == msg.len() as isize
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

/// What the warden undoes: `kind` `R` writes `value` to `path`, `A` appends
/// it, `C` runs the command whose arguments `path` holds, NUL-separated;
/// `path` NUL-terminated; `seq` orders them (the last held is undone first);
/// `id` 0 is a free slot.
#[derive(Clone, Copy)]
struct Restore {
    id: u32,
    kind: u8,
    seq: u32,
    path: [u8; MAX_RESTORE_PATH + 1],
    path_len: usize,
    value: [u8; MAX_RESTORE_VALUE],
    value_len: usize,
}

const FREE: Restore = Restore {
    id: 0,
    kind: b'R',
    seq: 0,
    path: [0; MAX_RESTORE_PATH + 1],
    path_len: 0,
    value: [0; MAX_RESTORE_VALUE],
    value_len: 0,
};

/// The warden's life: keep the lists until the stream ends, then kill what
/// is listed and write back what is held. Only async-signal-safe calls,
/// fixed arrays, no allocation.
fn watch(rx: libc::c_int) -> ! {
    ignore_stop_signals();
    close_all_but(rx);
    let mut live = [0 as libc::pid_t; MAX_GROUPS];
    let mut restores = [FREE; MAX_RESTORES];
    let mut head = [0u8; HEAD];
    let mut seq = 0u32;
    loop {
        if !read_full(rx, &mut head) {
            for &g in live.iter().filter(|&&g| g > 0) {
                // SAFETY: kill with integer arguments.
                unsafe { libc::kill(-g, libc::SIGKILL) };
            }
            undo_all(&mut restores);
            // SAFETY: _exit ends the child without running osbench's atexit handlers.
            unsafe { libc::_exit(0) };
        }
        let arg = [head[1], head[2], head[3], head[4]];
        match head[0] {
            b'+' | b'-' => {
                let group = libc::pid_t::from_ne_bytes(arg);
                let (want, put) = if head[0] == b'+' {
                    (0, group)
                } else {
                    (group, 0)
                };
                if let Some(slot) = live.iter_mut().find(|g| **g == want) {
                    *slot = put;
                }
            }
            kind @ (b'R' | b'A' | b'C') => {
                seq += 1;
                hold(rx, kind, u32::from_ne_bytes(arg), seq, &mut restores);
            }
            b'F' => {
                let id = u32::from_ne_bytes(arg);
                if let Some(slot) = restores.iter_mut().find(|r| r.id == id && id != 0) {
                    slot.id = 0;
                }
            }
            _ => {}
        }
    }
}

/// Undoes every held restore, the last held first (a probe is disabled
/// before it is removed).
fn undo_all(restores: &mut [Restore; MAX_RESTORES]) {
    while let Some(r) = restores
        .iter_mut()
        .filter(|r| r.id != 0)
        .max_by_key(|r| r.seq)
    {
        match r.kind {
            b'C' => run_command(r),
            _ => write_back(r),
        }
        r.id = 0;
    }
}

/// Reads the rest of a restore message (lengths, path, value) into a free slot.
fn hold(rx: libc::c_int, kind: u8, id: u32, seq: u32, restores: &mut [Restore; MAX_RESTORES]) {
    let mut lengths = [0u8; 4];
    if !read_full(rx, &mut lengths) {
        return;
    }
    let path_len = u16::from_ne_bytes([lengths[0], lengths[1]]) as usize;
    let value_len = u16::from_ne_bytes([lengths[2], lengths[3]]) as usize;
    let mut r = FREE;
    if path_len > MAX_RESTORE_PATH || value_len > MAX_RESTORE_VALUE {
        return; // never sent (hold_restore refuses them)
    }
    let read = read_full(rx, &mut r.path[..path_len]) && read_full(rx, &mut r.value[..value_len]);
    r.id = id;
    (r.kind, r.seq, r.path_len, r.value_len) = (kind, seq, path_len, value_len);
    if let (true, Some(slot)) = (read && id != 0, restores.iter_mut().find(|s| s.id == 0)) {
        *slot = r;
    }
}

/// Writes a held value back to its file, or appends it (`A`).
fn write_back(r: &Restore) {
    let how = if r.kind == b'A' {
        libc::O_APPEND
    } else {
        libc::O_TRUNC
    };
    // SAFETY: open, write and close with a NUL-terminated path and a value
    // in fixed arrays we own.
    unsafe {
        let fd = libc::open(
            r.path.as_ptr().cast(),
            libc::O_WRONLY | how | libc::O_CLOEXEC,
        );
        if fd >= 0 {
            libc::write(fd, r.value.as_ptr().cast(), r.value_len);
            libc::close(fd);
        }
    }
}

/// The most arguments of a held command.
const MAX_ARGS: usize = 32;

/// Runs a held command (its arguments NUL-separated in `path`) and waits
/// for it. Only fork, execve, _exit and waitpid, on fixed arrays.
fn run_command(r: &mut Restore) {
    let mut argv = [std::ptr::null::<libc::c_char>(); MAX_ARGS + 1];
    let mut argc = 0;
    let mut start = 0;
    // The path array ends in a NUL past `path_len`, so every argument does.
    for i in 0..=r.path_len {
        if r.path[i] == 0 && argc < MAX_ARGS {
            argv[argc] = r.path[start..].as_ptr().cast();
            argc += 1;
            start = i + 1;
        }
    }
    let env_path = b"PATH=/usr/sbin:/usr/bin:/sbin:/bin\0";
    let envp = [env_path.as_ptr().cast::<libc::c_char>(), std::ptr::null()];
    // SAFETY: fork in the single-threaded warden; the child calls only
    // execve and _exit on NUL-terminated strings in arrays that outlive
    // them, the parent only waitpid on its own child.
    unsafe {
        match libc::fork() {
            0 => {
                libc::execve(argv[0], argv.as_ptr(), envp.as_ptr());
                libc::_exit(127);
            }
            -1 => {}
            pid => {
                while libc::waitpid(pid, std::ptr::null_mut(), 0) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
            }
        }
    }
}

/// Fills `buf` from `rx` (retrying after signals); false at the end of the
/// stream or on an error.
fn read_full(rx: libc::c_int, buf: &mut [u8]) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the unfilled part of a buffer we own.
        let n = unsafe { libc::read(rx, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        // SAFETY: reading this thread's errno.
        if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        if n <= 0 {
            return false;
        }
        got += n as usize;
    }
    true
}

/// The warden outlives osbench's stop signals (it must, to clean up after them).
fn ignore_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: setting a signal's disposition to SIG_IGN.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}

/// Closes every descriptor but `rx`: above all osbench's copy of the write
/// end, so its death ends the stream.
fn close_all_but(rx: libc::c_int) {
    // SAFETY: close_range and close with integer arguments.
    unsafe {
        let max = libc::c_uint::MAX;
        let below =
            rx == 0 || libc::syscall(libc::SYS_close_range, 0, (rx - 1) as libc::c_uint, 0) == 0;
        let above = libc::syscall(libc::SYS_close_range, (rx + 1) as libc::c_uint, max, 0) == 0;
        if !(below && above) {
            (0..1024)
                .filter(|&fd| fd != rx)
                .for_each(|fd| _ = libc::close(fd)); // Linux < 5.9
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restore as `hold` would store it.
    fn restore(id: u32, kind: u8, seq: u32, path: &[u8], value: &[u8]) -> Restore {
        let mut r = FREE;
        r.path[..path.len()].copy_from_slice(path);
        r.value[..value.len()].copy_from_slice(value);
        (r.id, r.kind, r.seq, r.path_len, r.value_len) = (id, kind, seq, path.len(), value.len());
        r
    }

    #[test]
    fn restores_are_undone_last_held_first_by_writing_appending_and_running() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("probe_events");
        let ran = dir.path().join("ran");
        std::fs::write(&file, "before\n").unwrap();
        let path = file.as_os_str().as_encoded_bytes();
        let script = format!("/bin/sh\0-c\0echo ran > {}", ran.display());
        let mut restores = [FREE; MAX_RESTORES];
        // Held in this order, in slots out of that order: a write back, an
        // append, a command.
        restores[5] = restore(1, b'R', 1, path, b"written\n");
        restores[2] = restore(2, b'A', 2, path, b"appended\n");
        restores[9] = restore(3, b'C', 3, script.as_bytes(), b"");
        undo_all(&mut restores);
        // The append came before the write back, which truncated it away.
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "written\n");
        assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
        assert!(restores.iter().all(|r| r.id == 0));
    }

    #[test]
    fn a_command_is_held_only_with_an_absolute_program() {
        assert!(!hold_command(next_id(), &[b"auditctl", b"-D"]));
        assert!(!hold_command(next_id(), &[]));
        assert!(!hold_command(next_id(), &[b"/bin/x", b"a\0b"]));
    }
}
