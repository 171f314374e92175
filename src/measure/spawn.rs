//! One timed run of a whole command, for `osbench time`.
//!
//! The clock is read just before the spawn (std's `posix_spawn`, the child
//! in a process group of its own, which the [`super::warden`] kills if
//! osbench dies) and again as soon as `waitid(WNOWAIT)` reports
//! the child's end — the wall time a user waiting for the command sees, like
//! hyperfine's `-N`. Only then, untimed, is anything the command left in its
//! process group killed and the child reaped with `wait4`, whose rusage is
//! that child's alone (and its reaped descendants'), never the cumulative
//! `RUSAGE_CHILDREN` of every earlier run. A timeout or a stop signal kills the
//! whole process group and reaps it before returning.
//!
//! Caveat of Linux's accounting, not ours: `ru_maxrss` also counts the memory
//! the child had before its execve — a copy of the spawning process, here
//! osbench — so no run reports less than osbench's own resident size
//! ([`own_max_rss_kb`]); the caller records that floor.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use crate::document::CommandRun;
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::counters::{Usage, getrusage};
use crate::measure::{interrupt, warden};

/// How every run is started.
#[derive(Debug, Clone, Default)]
pub struct SpawnOptions {
    pub cwd: Option<PathBuf>,
    /// Added to (or replacing in) osbench's own environment.
    pub env: Vec<(String, String)>,
    /// Per run; the process group is killed when it is exceeded.
    pub timeout: Option<Duration>,
    /// Let the command write to osbench's stdout and stderr (default: /dev/null).
    pub show_output: bool,
}

/// Runs `argv` (its program already resolved to `program`) once and times it.
/// `Err(Interrupted)` when a stop signal arrives; the command is then killed.
pub fn run_once(program: &Path, argv: &[String], opts: &SpawnOptions) -> Result<CommandRun> {
    let mut cmd = Command::new(program);
    cmd.arg0(&argv[0])
        .args(&argv[1..])
        .envs(opts.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .process_group(0);
    // posix_spawn, not a fork of osbench: the warden, not a parent-death
    // signal, makes the command die with osbench.
    warden::ensure_started();
    if !opts.show_output {
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
    }
    if let Some(dir) = &opts.cwd {
        cmd.current_dir(dir);
    }
    let start = monotonic_ns();
    let child = cmd.spawn().map_err(|e| {
        let hint = crate::env::process::limit_hint(&e).map_or(String::new(), |h| format!(": {h}"));
        Error::io(format!("starting '{}'{hint}", program.display()), e)
    })?;
    let pid = child.id() as libc::pid_t;
    warden::guard(pid);
    // From here on `child` is ours to reap (std never waits for it on drop).
    let ended = wait_for_end(pid, opts.timeout.map(|t| Instant::now() + t));
    let end = monotonic_ns();
    // Untimed: whatever the command left behind in its group goes too. The
    // unreaped leader keeps the group id from being reused meanwhile.
    kill_group(pid, libc::SIGKILL);
    warden::release(pid);
    let (status, usage) = reap(pid)?;
    let timed_out = ended?;
    Ok(run_record(
        end.saturating_sub(start),
        status,
        &usage,
        timed_out,
    ))
}

/// Waits until `pid` has ended without reaping it; `Ok(true)` when the
/// deadline passed first (the group has then been killed).
fn wait_for_end(pid: libc::pid_t, deadline: Option<Instant>) -> Result<bool> {
    let Some(deadline) = deadline else {
        loop {
            match wait_no_reap(pid) {
                Ok(()) => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    stop_if_requested(pid)?;
                }
                Err(e) => return Err(Error::io(format!("waiting for command {pid}"), e)),
            }
        }
    };
    let pidfd = PidFd::open(pid)?;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            kill_group(pid, libc::SIGKILL);
            wait_no_reap(pid).map_err(|e| Error::io("waiting for a killed command", e))?;
            return Ok(true);
        }
        match pidfd.poll(left) {
            Ok(true) => {
                wait_no_reap(pid).map_err(|e| Error::io("waiting for command", e))?;
                return Ok(false);
            }
            Ok(false) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => stop_if_requested(pid)?,
            Err(e) => return Err(Error::io("waiting for command", e)),
        }
    }
}

/// After EINTR: if osbench was asked to stop, kills the command's group and
/// reports `Interrupted` (the caller reaps).
fn stop_if_requested(pid: libc::pid_t) -> Result<()> {
    if interrupt::requested() {
        kill_group(pid, libc::SIGKILL);
        return Err(Error::Interrupted);
    }
    Ok(())
}

/// `waitid(P_PID, pid, WEXITED | WNOWAIT)`: blocks until `pid` ends, leaves it a zombie.
fn wait_no_reap(pid: libc::pid_t) -> io::Result<()> {
    ended_unreaped(pid, true).map(|_| ())
}

/// Whether our child `pid` has ended (`block`: once it has), left unreaped
/// (`waitid` with WNOWAIT), so its pid — and the process group it leads —
/// cannot be reused while the group is signalled.
pub(crate) fn ended_unreaped(pid: libc::pid_t, block: bool) -> io::Result<bool> {
    let flags = libc::WEXITED | libc::WNOWAIT | if block { 0 } else { libc::WNOHANG };
    // SAFETY: siginfo_t is plain C data; all-zero is valid.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a valid out-pointer; `pid` is our unreaped child.
    let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, flags) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (si_pid stays 0 when nothing has ended).
    Ok(unsafe { info.si_pid() } != 0)
}

/// Sends `sig` to process group `pgid` (ESRCH — nobody left — is fine). The
/// caller owns the group and has not reaped its leader, so the id cannot have
/// been reused.
pub(crate) fn kill_group(pgid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe { libc::kill(-pgid, sig) };
}

/// `wait4(pid)`, retried on EINTR: the wait status and that child's rusage.
fn reap(pid: libc::pid_t) -> Result<(libc::c_int, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain C data; all-zero is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid out-pointers; `pid` is our child, not yet reaped.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(Error::io(format!("reaping command {pid}"), e));
        }
    }
}

fn run_record(wall_ns: u64, status: libc::c_int, u: &libc::rusage, timed_out: bool) -> CommandRun {
    let u = Usage::of(u);
    let (exit_status, signal) = if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        (128 + sig, Some(sig))
    } else {
        (libc::WEXITSTATUS(status), None)
    };
    CommandRun {
        wall_s: wall_ns as f64 * 1e-9,
        user_s: u.user_ns as f64 * 1e-9,
        sys_s: u.sys_ns as f64 * 1e-9,
        max_rss_kb: u.max_rss_kb,
        voluntary_switches: u.voluntary,
        involuntary_switches: u.involuntary,
        minor_faults: u.minor_faults,
        major_faults: u.major_faults,
        exit_status,
        signal,
        timed_out,
    }
}

/// osbench's own peak resident set (KiB): the floor of every run's `max_rss_kb`.
pub fn own_max_rss_kb() -> u64 {
    getrusage(libc::RUSAGE_SELF).max_rss_kb
}

/// A pidfd (Linux ≥ 5.3), for waiting on a child with a timeout.
struct PidFd(std::os::fd::OwnedFd);

impl PidFd {
    fn open(pid: libc::pid_t) -> Result<Self> {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(Error::last_os(
                "opening a pidfd for --timeout (needs Linux 5.3 or newer)",
            ));
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(Self(unsafe {
            std::os::fd::OwnedFd::from_raw_fd(fd as libc::c_int)
        }))
    }

    /// Whether the process ended within `wait` (rounded up to whole ms).
    fn poll(&self, wait: Duration) -> io::Result<bool> {
        use std::os::fd::AsRawFd;
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd.
        match unsafe { libc::poll(&mut pfd, 1, ms) } {
            r if r < 0 => Err(io::Error::last_os_error()),
            r => Ok(r > 0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str, opts: &SpawnOptions) -> CommandRun {
        let argv: Vec<String> = vec!["sh".into(), "-c".into(), line.into()];
        run_once(Path::new("/bin/sh"), &argv, opts).unwrap()
    }

    #[test]
    fn exit_statuses_and_signals_are_reported() {
        let o = SpawnOptions::default();
        assert!(run("exit 0", &o).succeeded());
        let r = run("exit 3", &o);
        assert_eq!((r.exit_status, r.signal), (3, None));
        assert_eq!(r.outcome(), "exited with status 3");
        let r = run("kill -TERM $$", &o);
        assert_eq!((r.exit_status, r.signal), (128 + 15, Some(15)));
        assert!(!r.succeeded());
    }

    #[test]
    fn cpu_time_is_the_runs_own() {
        // (Peak RSS is checked through the binary in tests/time.rs: here the
        // spawner is the large test process, whose size Linux counts in every
        // child's ru_maxrss.)
        let o = SpawnOptions::default();
        let busy = run("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", &o);
        let idle = run("exit 0", &o);
        assert!(busy.user_s + busy.sys_s > idle.user_s + idle.sys_s);
        assert!(idle.user_s + idle.sys_s < 0.005, "{idle:?}");
    }

    #[test]
    fn a_timeout_kills_the_whole_group() {
        let o = SpawnOptions {
            timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        };
        let marker = tempfile::NamedTempFile::new().unwrap();
        let path = marker.path().display().to_string();
        // The background child would touch the file after 1 s if it survived.
        let r = run(&format!("(sleep 1; echo x > {path}) & sleep 5"), &o);
        assert!(r.timed_out && r.signal == Some(9), "{r:?}");
        assert!(r.outcome().contains("timeout"));
        std::thread::sleep(Duration::from_millis(1300));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    }

    #[test]
    fn environment_and_directory_are_applied() {
        let dir = tempfile::tempdir().unwrap();
        let o = SpawnOptions {
            cwd: Some(dir.path().to_path_buf()),
            env: vec![("OSBENCH_T".into(), "7".into())],
            ..Default::default()
        };
        let check = format!(
            "[ \"$OSBENCH_T\" = 7 ] && [ \"$(pwd -P)\" = \"{}\" ]",
            dir.path().canonicalize().unwrap().display()
        );
        assert!(run(&check, &o).succeeded());
    }
}
