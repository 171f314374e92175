//! Shell commands run around measurements: a configuration's set-up and
//! tear-down, `osbench time`'s `--setup`, `--prepare` and `--cleanup`.
//!
//! Each runs as `sh -c COMMAND` with stdin closed, stdout discarded and
//! stderr kept for the error message, in a process group of its own that
//! dies with osbench, whatever ends osbench (even SIGKILL): the
//! [`super::warden`] SIGKILLs the whole group then, the shell's own children
//! included (also when a second signal ends osbench at once). The shell
//! stays osbench's child: `$PPID` in a hook is osbench.
//!
//! osbench does not block on the command: it checks every `POLL` whether
//! the shell has ended, whether a stop was requested and whether the
//! deadline passed. On a stop the group gets SIGTERM, then SIGKILL after
//! [`GRACE`], and the caller gets `Error::Interrupted`; past the deadline it
//! gets SIGKILL at once. A command that ends by itself may leave processes
//! in its group (a server started with `&`): they are left running (and no
//! longer guarded: osbench's death does not end them).

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{ChildStderr, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::measure::interrupt::Interrupt;
use crate::measure::spawn::{ended_unreaped, kill_group};
use crate::measure::warden;

/// How often a running command is checked.
const POLL: Duration = Duration::from_millis(20);
/// How long a stopped command's group has between SIGTERM and SIGKILL.
pub const GRACE: Duration = Duration::from_secs(2);
/// How much of a command's stderr is kept (the rest is read and dropped).
const KEPT_STDERR: usize = 64 * 1024;

/// What may end a command before it ends by itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Watch<'a> {
    /// A stop request (None: the command always runs to its end — tear-downs).
    pub stop: Option<&'a Interrupt>,
    pub timeout: Option<Duration>,
}

/// How the wait for a command ended.
enum End {
    Exited,
    Stopped,
    TimedOut,
}

/// Runs `command` with `sh -c` and `env`; `what` names it in errors ("the
/// set-up of configuration 'on'"), which carry the exit status and the first
/// line of stderr. `Err(Interrupted)` when `watch.stop` was set while it ran.
pub fn sh(what: &str, env: &BTreeMap<String, String>, command: &str, watch: Watch) -> Result<()> {
    let (end, status, stderr) = spawn_and_wait(what, env, command, watch)?;
    let stopped = watch.stop.is_some_and(Interrupt::is_set);
    match end {
        End::Stopped => Err(Error::Interrupted),
        End::TimedOut => Err(Error::Measure(format!(
            "{what} ({command}) was killed after reaching the timeout of {} s (--timeout)",
            watch.timeout.unwrap_or_default().as_secs_f64()
        ))),
        End::Exited => check_status(what, command, status, &stderr, stopped),
    }
}

/// How a command run by [`sh_captured`] ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Captured {
    pub success: bool,
    /// The exit status in words, or that it was killed at the timeout.
    pub status: String,
    /// Its stdout and stderr together, the first `KEPT_STDERR` bytes.
    pub output: String,
}

/// Runs `command` as [`sh`] does, but with its stdout joined to its stderr
/// and kept, and its failure or timeout returned as a [`Captured`] rather
/// than an error (an agent's in-guest set-ups: the client words the error).
/// `Err` only when it could not be run, or `Interrupted` by `watch.stop`.
pub fn sh_captured(
    env: &BTreeMap<String, String>,
    command: &str,
    watch: Watch,
) -> Result<Captured> {
    // The shell's stdout is made its stderr before the command runs.
    let joined = format!("exec 1>&2\n{command}");
    let (end, status, output) = spawn_and_wait("a command", env, &joined, watch)?;
    let output = String::from_utf8_lossy(&output.kept).into_owned();
    let status = match end {
        End::Stopped => return Err(Error::Interrupted),
        End::TimedOut => format!(
            "killed after reaching the timeout of {} s",
            watch.timeout.unwrap_or_default().as_secs_f64()
        ),
        End::Exited => status.to_string(),
    };
    Ok(Captured {
        success: matches!(end, End::Exited) && status == "exit status: 0",
        status,
        output,
    })
}

/// Runs `command` with `sh -c` in a process group of its own and waits for
/// it under `watch`: how the wait ended, the shell's status, its stderr.
fn spawn_and_wait(
    what: &str,
    env: &BTreeMap<String, String>,
    command: &str,
    watch: Watch,
) -> Result<(End, ExitStatus, Stderr)> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    warden::ensure_started();
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("running {what}"), e))?;
    let pid = child.id() as libc::pid_t;
    warden::guard(pid);
    let mut stderr = Stderr::new(child.stderr.take());
    let deadline = watch.timeout.map(|t| Instant::now() + t);
    let end = wait(pid, &mut stderr, watch.stop, deadline);
    if end.is_err() {
        kill_group(pid, libc::SIGKILL);
    }
    // The group is forgotten before its leader is reaped (no reused pid is signalled).
    warden::release(pid);
    let status = child
        .wait()
        .map_err(|e| Error::io(format!("waiting for {what}"), e))?;
    stderr.read_available();
    let end = end.map_err(|e| Error::io(format!("waiting for {what}"), e))?;
    Ok((end, status, stderr))
}

/// A command that ended by itself: `Ok` on success; a failure while a stop
/// was requested is the stop's doing (`Interrupted`, e.g. the terminal's
/// SIGINT reached it too).
fn check_status(
    what: &str,
    command: &str,
    status: ExitStatus,
    stderr: &Stderr,
    stopped: bool,
) -> Result<()> {
    if status.success() {
        return Ok(());
    }
    if stopped {
        return Err(Error::Interrupted);
    }
    Err(Error::Measure(format!(
        "{what} ({command}) failed with {status}: {}",
        stderr.first_line()
    )))
}

/// Waits for the group led by `pid` (without reaping the leader) until it
/// ends, `stop` is set or `deadline` passes; the group is then stopped.
fn wait(
    pid: libc::pid_t,
    stderr: &mut Stderr,
    stop: Option<&Interrupt>,
    deadline: Option<Instant>,
) -> io::Result<End> {
    loop {
        if ended(pid)? {
            return Ok(End::Exited);
        }
        if stop.is_some_and(Interrupt::is_set) {
            kill_group(pid, libc::SIGTERM);
            let grace = Instant::now() + GRACE;
            while !ended(pid)? && Instant::now() < grace {
                stderr.wait(POLL);
            }
            kill_group(pid, libc::SIGKILL);
            return Ok(End::Stopped);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            kill_group(pid, libc::SIGKILL);
            return Ok(End::TimedOut);
        }
        stderr.wait(POLL);
    }
}

/// Whether our child `pid` has ended; it is left unreaped (a zombie keeps
/// its group id from being reused while the group is signalled).
fn ended(pid: libc::pid_t) -> io::Result<bool> {
    ended_unreaped(pid, false)
}

/// A command's stderr, read without blocking while it runs.
struct Stderr {
    /// None once it has ended (or could not be read).
    pipe: Option<ChildStderr>,
    kept: Vec<u8>,
}

impl Stderr {
    fn new(pipe: Option<ChildStderr>) -> Self {
        if let Some(p) = &pipe {
            set_nonblocking(p.as_raw_fd());
        }
        Self {
            pipe,
            kept: Vec::new(),
        }
    }

    /// Waits up to `wait` for output (a signal ends the wait early), then
    /// reads what has arrived.
    fn wait(&mut self, wait: Duration) {
        let Some(pipe) = &self.pipe else {
            std::thread::sleep(wait);
            return;
        };
        let mut pfd = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; errors (EINTR) only end the wait early.
        unsafe { libc::poll(&mut pfd, 1, wait.as_millis() as libc::c_int) };
        self.read_available();
    }

    /// Reads what is in the pipe now, keeping the first [`KEPT_STDERR`] bytes.
    fn read_available(&mut self) {
        let mut buf = [0u8; 4096];
        while let Some(pipe) = &mut self.pipe {
            match pipe.read(&mut buf) {
                Ok(0) => self.pipe = None,
                Ok(n) => {
                    let room = KEPT_STDERR.saturating_sub(self.kept.len());
                    self.kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => self.pipe = None,
            }
        }
    }

    fn first_line(&self) -> String {
        let text = String::from_utf8_lossy(&self.kept);
        text.lines().next().unwrap_or("no message").to_string()
    }
}

fn set_nonblocking(fd: libc::c_int) {
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, watch: Watch) -> Result<()> {
        sh("the test hook", &BTreeMap::new(), command, watch)
    }

    #[test]
    fn status_and_first_stderr_line_are_reported() {
        run("true", Watch::default()).unwrap();
        let err = run("echo one >&2; echo two >&2; exit 4", Watch::default()).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("exit status: 4") && msg.contains(": one"),
            "{msg}"
        );
        // Output larger than a pipe's buffer does not block the command.
        run("head -c 300000 /dev/zero >&2", Watch::default()).unwrap();
    }

    #[test]
    fn a_stop_ends_a_hung_command_and_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let stop = Interrupt::none();
        let flag = stop.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            flag.set();
        });
        let watch = Watch {
            stop: Some(&stop),
            timeout: None,
        };
        let command = format!("sleep 1000 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let err = run(&command, watch).unwrap_err();
        setter.join().unwrap();
        assert!(matches!(err, Error::Interrupted), "{err}");
        assert!(started.elapsed() < GRACE, "SIGTERM was enough");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        assert!(!running(pid.trim()), "the background sleep survived");
    }

    /// Whether process `pid` is alive (not gone, not a zombie), allowing a
    /// second for a killed one to be reaped by its new parent.
    fn running(pid: &str) -> bool {
        let stat = std::path::Path::new("/proc").join(pid).join("stat");
        for _ in 0..50 {
            match std::fs::read_to_string(&stat) {
                Ok(s) if !s.contains(") Z ") => {}
                _ => return false,
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    #[test]
    fn a_captured_command_keeps_its_output_and_its_end() {
        let env = BTreeMap::from([("K".to_string(), "v".to_string())]);
        let done =
            sh_captured(&env, "echo out $K; echo err >&2; exit 3", Watch::default()).unwrap();
        assert!(!done.success);
        assert_eq!(done.status, "exit status: 3");
        assert_eq!(done.output, "out v\nerr\n");
        assert!(sh_captured(&env, "true", Watch::default()).unwrap().success);
        let watch = Watch {
            stop: None,
            timeout: Some(Duration::from_millis(200)),
        };
        let hung = sh_captured(&env, "echo waiting; sleep 1000", watch).unwrap();
        assert!(
            !hung.success && hung.status.contains("timeout of 0.2 s"),
            "{hung:?}"
        );
        assert_eq!(hung.output, "waiting\n");
    }

    #[test]
    fn a_timeout_kills_the_command() {
        let watch = Watch {
            stop: None,
            timeout: Some(Duration::from_millis(200)),
        };
        let err = run("sleep 1000", watch).unwrap_err();
        assert!(err.to_string().contains("timeout of 0.2 s"), "{err}");
    }

    #[test]
    fn a_failure_during_a_stop_is_the_interrupt() {
        let stop = Interrupt::none();
        stop.set();
        let watch = Watch {
            stop: Some(&stop),
            timeout: None,
        };
        // Ended by itself (failing) before the flag was looked at, or
        // terminated: either way the caller sees the stop.
        let err = run("exit 130", watch).unwrap_err();
        assert!(matches!(err, Error::Interrupted), "{err}");
    }
}
