//! Supervision of the child processes and threads a workload starts.
//!
//! Every forked child joins one process group per [`Supervisor`], is named
//! (`osbench-<bench>`, shown by `ps`), asks the kernel to SIGKILL it if osbench
//! dies (`PR_SET_PDEATHSIG`), restores default signal handling, may be pinned
//! to a CPU, and then runs its body and `_exit`s — it never returns into the
//! parent's code, not even on a panic. Dropping the supervisor (normal end,
//! error, panic unwinding) SIGKILLs the group and reaps every child, so no
//! process outlives the case. Threads are joined by their owners; they exit
//! when the descriptors they wait on are closed.
//!
//! Resource errors are worded by `measure::limits`.

use std::io;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::measure::interrupt;
use crate::measure::limits::fork_error;

/// The children of one benchmark case.
#[derive(Debug)]
pub struct Supervisor {
    name: String,
    pgid: Option<libc::pid_t>,
    children: Vec<libc::pid_t>,
    /// The signal handler kills the children itself (see [`Self::killed_on_stop`]).
    killed_on_stop: bool,
    /// The children's group is this supervisor's own (not its caller's, see
    /// [`Self::in_callers_group`]), so it may be signalled as a whole.
    owns_group: bool,
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Supervisor {
    /// A supervisor whose children are called `osbench-<bench>`.
    pub fn new(bench: &str) -> Self {
        Self {
            name: format!("osbench-{bench}"),
            pgid: None,
            children: Vec::new(),
            killed_on_stop: false,
            owns_group: true,
        }
    }

    /// Children join the caller's own process group instead of a new one, so
    /// whoever kills that group kills them too (a messaging conductor's
    /// workers). The group is not this supervisor's to signal: it kills its
    /// children one by one.
    pub fn in_callers_group(mut self) -> Self {
        // SAFETY: getpgrp has no preconditions and cannot fail.
        self.pgid = Some(unsafe { libc::getpgrp() });
        self.owns_group = false;
        self
    }

    /// Has the signal handler SIGKILL the children the moment a stop is
    /// requested ([`interrupt::register_group`]), for owners that block
    /// until the children exit (the end of a hackbench run). Not for helpers
    /// a peer waits on through shared memory: that peer would wait forever.
    pub fn killed_on_stop(mut self) -> Self {
        self.killed_on_stop = true;
        self
    }

    /// The process group of the children (after the first fork).
    pub fn pgid(&self) -> Option<libc::pid_t> {
        self.pgid
    }

    /// Pids of the children not yet reaped.
    pub fn children(&self) -> &[libc::pid_t] {
        &self.children
    }

    /// Forks a child that runs `body` and exits with its return value.
    ///
    /// Before `body`, the child closes every descriptor above 2 except those
    /// in `keep`, so it holds no copy of another task's pipe or socket ends
    /// (otherwise a peer would never see end of file when its partner closes).
    /// `body` runs in a copy of this process that may have had other threads:
    /// its work must be system calls (read, write, mmap, …) and must not take
    /// locks another thread could have held (stdio, the environment). glibc's
    /// malloc is fork-safe, so dropping what `body` owns when it returns is fine.
    pub fn fork(
        &mut self,
        cpu: Option<usize>,
        keep: &[RawFd],
        body: impl FnOnce() -> i32,
    ) -> Result<libc::pid_t> {
        // Sorted here, in the parent, so the child does not have to allocate.
        let mut keep_sorted = keep.to_vec();
        keep_sorted.sort_unstable();
        if interrupt::requested() {
            return Err(Error::Interrupted);
        }
        let pgid = self.pgid.unwrap_or(0);
        let name = process_name(&self.name);
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: fork has no memory-safety preconditions; the child branch
        // below only makes async-signal-safe calls before running `body`,
        // whose contract (above) is the same, and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(fork_error(self.children.len()));
        }
        if pid == 0 {
            child_prologue(parent, pgid, &name, cpu);
            close_all_but(&keep_sorted);
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(101);
            // SAFETY: _exit ends the child without running the parent's atexit
            // handlers or destructors, which belong to the parent.
            unsafe { libc::_exit(code) };
        }
        // Also set the group from the parent, so it is in place whichever runs first.
        let group = if pgid == 0 { pid } else { pgid };
        // SAFETY: setpgid on our own, not yet reaped child.
        unsafe { libc::setpgid(pid, group) };
        self.children.push(pid);
        if self.pgid.is_none() {
            self.pgid = Some(group);
            if self.killed_on_stop {
                interrupt::register_group(group);
            }
        }
        Ok(pid)
    }

    /// Waits up to `limit` for every child to exit by itself and returns how
    /// each ended, in fork order; children still running after that are
    /// killed, reaped, and reported as an error.
    pub fn wait_all(&mut self, limit: Duration) -> Result<Vec<Exit>> {
        self.release_group();
        let deadline = Instant::now() + limit;
        let mut exits: Vec<Option<Exit>> = vec![None; self.children.len()];
        while exits.iter().any(Option::is_none) {
            for (pid, exit) in self
                .children
                .iter()
                .zip(exits.iter_mut())
                .filter(|(_, e)| e.is_none())
            {
                *exit = try_wait(*pid)?;
            }
            if exits.iter().all(Option::is_some) {
                break;
            }
            if Instant::now() >= deadline {
                // Keep only the unreaped ones: a reaped pid may be reused and must not be signalled.
                let running: Vec<libc::pid_t> = self
                    .children
                    .iter()
                    .zip(&exits)
                    .filter(|(_, e)| e.is_none())
                    .map(|(p, _)| *p)
                    .collect();
                let count = running.len();
                self.children = running;
                self.kill_all();
                return Err(Error::Measure(format!(
                    "{count} helper process(es) did not exit within {} s of being told to stop; killed",
                    limit.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.children.clear();
        Ok(exits.into_iter().flatten().collect())
    }

    /// Reaps every child in fork order, blocking as long as it takes — the end
    /// of a timed run — but giving up with `Interrupted` when a signal asks to
    /// stop (the caller then drops the supervisor, which kills the rest).
    pub fn reap_all(&mut self) -> Result<Vec<Exit>> {
        let mut exits = Vec::with_capacity(self.children.len());
        let mut result = Ok(());
        for i in 0..self.children.len() {
            if i + 1 == self.children.len() {
                // The group leaves the handler's list only once its last
                // member has exited (not yet reaped, so its pid stays
                // taken): until then a stop still kills the group, and with
                // it any processes that member started in it.
                if let Err(e) = await_exit(self.children[i]) {
                    result = Err(e);
                    break;
                }
                self.release_group();
            }
            match waitpid(self.children[i], 0, true) {
                Ok(exit) => exits.push(exit.expect("a blocking wait always returns an exit")),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Forget the reaped ones: their pids may be reused and must never be signalled.
        self.children.drain(..exits.len());
        // Children killed by the signal handler: the interrupt, not a failure.
        if interrupt::requested() {
            result = Err(Error::Interrupted);
        }
        result.map(|()| exits)
    }

    /// SIGKILLs every child still running and reaps them all.
    pub fn kill_all(&mut self) {
        let group = self.pgid;
        self.release_group();
        if let (Some(pgid), false, true) = (group, self.children.is_empty(), self.owns_group) {
            // SAFETY: signalling our own process group, which has unreaped members.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        for pid in self.children.drain(..) {
            // SAFETY: `pid` is our unreaped child, so the pid cannot have been reused.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let _ = wait_child(pid);
        }
    }
}

impl Supervisor {
    /// Takes the group off the signal handler's list: done before its last
    /// member is reaped, after which its number may be reused. The next fork
    /// starts a new group.
    fn release_group(&mut self) {
        if let (Some(pgid), true) = (self.pgid.take(), self.killed_on_stop) {
            interrupt::unregister_group(pgid);
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// A readable, writable anonymous mapping of `bytes` (> 0), private or shared;
/// zero-filled by the kernel. A plain system call, usable in a forked child.
pub fn map_anonymous(bytes: usize, sharing: libc::c_int) -> io::Result<*mut libc::c_void> {
    // SAFETY: an anonymous mapping with no address hint; the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            sharing | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(p)
    }
}

/// Waits for our child `pid` to end (blocking, retried when a signal interrupts).
pub fn wait_child(pid: libc::pid_t) -> Result<Exit> {
    waitpid(pid, 0, false).map(|e| e.expect("a blocking wait always returns an exit"))
}

/// Waits until our child `pid` has exited, without reaping it; gives up
/// with `Interrupted` when a signal asks to stop.
fn await_exit(pid: libc::pid_t) -> Result<()> {
    loop {
        // SAFETY: waitid on our own unreaped child; WNOWAIT leaves it
        // waitable, so nothing is reaped; `info` is a valid out-pointer.
        let r = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(Error::io("waiting for a helper process", e));
        }
        if interrupt::requested() {
            return Err(Error::Interrupted);
        }
    }
}

/// Non-blocking waitpid: `None` while the child runs.
fn try_wait(pid: libc::pid_t) -> Result<Option<Exit>> {
    waitpid(pid, libc::WNOHANG, false)
}

/// waitpid retried on EINTR — unless `give_up_on_stop` and a signal asked
/// osbench to stop, which returns `Interrupted`.
fn waitpid(pid: libc::pid_t, flags: libc::c_int, give_up_on_stop: bool) -> Result<Option<Exit>> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r == 0 {
            return Ok(None);
        }
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(Error::io(format!("waiting for child {pid}"), e));
        }
        if give_up_on_stop && crate::measure::interrupt::requested() {
            return Err(Error::Interrupted);
        }
    }
    Ok(Some(exit_of(status)))
}

fn exit_of(status: libc::c_int) -> Exit {
    if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Code(libc::WEXITSTATUS(status))
    }
}

/// The 15-byte, NUL-terminated name the kernel keeps for a task.
fn process_name(name: &str) -> [u8; 16] {
    let mut buf = [0u8; 16];
    let n = name.len().min(15);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    buf
}

/// For a forked child that must see a write to a closed pipe or socket as
/// EPIPE (an error it handles) rather than die of SIGPIPE, whose default
/// the supervisor's forked children get back (`child_prologue`).
pub fn ignore_sigpipe_in_child() {
    // SAFETY: sets this process's own SIGPIPE disposition; async-signal-safe.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// What a freshly forked child of `parent` does before its body: only system calls.
fn child_prologue(parent: libc::pid_t, pgid: libc::pid_t, name: &[u8; 16], cpu: Option<usize>) {
    // SAFETY: each call below is async-signal-safe and takes valid arguments:
    // our own pid (0), a NUL-terminated 16-byte name, a zero-initialised
    // cpu_set_t with one bit set below CPU_SETSIZE.
    unsafe {
        libc::setpgid(0, pgid);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::prctl(libc::PR_SET_NAME, name.as_ptr());
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(sig, libc::SIG_DFL);
        }
        if let Some(cpu) = cpu {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                libc::_exit(1); // a helper on the wrong CPU would falsify the placement record
            }
        }
    }
    // If osbench died before PR_SET_PDEATHSIG took effect, the child has
    // been reparented. (Not "the parent is 1": as a guest's init, or in a
    // PID namespace, osbench itself is PID 1.)
    // SAFETY: getppid and _exit are async-signal-safe.
    if unsafe { libc::getppid() } != parent {
        // SAFETY: as above.
        unsafe { libc::_exit(1) };
    }
}

/// Closes every descriptor from 3 up except `keep` (ascending): close_range(2)
/// over the gaps, or one close per descriptor where that system call is missing.
fn close_all_but(keep: &[RawFd]) {
    let mut from: libc::c_uint = 3;
    for &k in keep.iter().chain(&[RawFd::MAX]) {
        let k = k as libc::c_uint;
        if k > from {
            close_range(from, k - 1);
        }
        from = from.max(k.saturating_add(1));
    }
}

fn close_range(first: libc::c_uint, last: libc::c_uint) {
    // SAFETY: close_range only closes descriptors of this (child) process.
    let r = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
    if r != 0 {
        // Kernel older than 5.9: close one by one up to the descriptor limit.
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `lim` is a valid out-pointer.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
        let end = (last as u64).min(lim.rlim_cur.min(1 << 20));
        for fd in first as u64..=end {
            // SAFETY: closing descriptors of this child only.
            unsafe { libc::close(fd as RawFd) };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    fn alive(pid: libc::pid_t) -> bool {
        // A reaped child no longer exists: kill(pid, 0) fails with ESRCH.
        // SAFETY: signal 0 only checks for existence.
        unsafe { libc::kill(pid, 0) == 0 }
    }

    #[test]
    fn exit_codes_are_collected() {
        let mut sup = Supervisor::new("test");
        sup.fork(None, &[], || 0).unwrap();
        sup.fork(None, &[], || 7).unwrap();
        assert_eq!(
            sup.wait_all(Duration::from_secs(10)).unwrap(),
            vec![Exit::Code(0), Exit::Code(7)]
        );
        assert!(sup.children().is_empty());
    }

    #[test]
    fn a_stop_requested_before_a_blocking_reap_ends_it_at_once() {
        // In a child of its own: the signal handler and its flag are process-wide.
        let mut outer = Supervisor::new("test");
        outer
            .fork(None, &[], || {
                if crate::measure::interrupt::Interrupt::install().is_err() {
                    return 2;
                }
                let mut sup = Supervisor::new("test-helper").killed_on_stop();
                for _ in 0..3 {
                    if sup
                        .fork(None, &[], || {
                            // SAFETY: sleep is a plain system call.
                            unsafe { libc::sleep(60) as i32 }
                        })
                        .is_err()
                    {
                        return 3;
                    }
                }
                // The signal lands while nothing blocks, before the wait
                // starts: only the handler's kill can end that wait early.
                // SAFETY: raising a signal whose handler is installed.
                unsafe { libc::raise(libc::SIGINT) };
                match sup.reap_all() {
                    Err(Error::Interrupted) => 0,
                    _ => 4,
                }
            })
            .unwrap();
        // Far less than the helpers' 60 s.
        let exits = outer.wait_all(Duration::from_secs(20)).unwrap();
        assert_eq!(exits, vec![Exit::Code(0)]);
    }

    #[test]
    fn children_share_one_process_group() {
        let mut sup = Supervisor::new("test");
        let a = sup.fork(None, &[], || 0).unwrap();
        let b = sup.fork(None, &[], || 0).unwrap();
        assert_eq!(sup.pgid(), Some(a));
        // SAFETY: getpgid of our own unreaped children.
        assert_eq!(unsafe { libc::getpgid(b) }, a);
        sup.wait_all(Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn dropping_kills_and_reaps_blocked_children() {
        let mut pids = Vec::new();
        {
            let mut sup = Supervisor::new("test");
            for _ in 0..3 {
                pids.push(
                    sup.fork(None, &[], || {
                        // SAFETY: pause only blocks until a signal arrives.
                        unsafe { libc::pause() };
                        0
                    })
                    .unwrap(),
                );
            }
            assert!(pids.iter().all(|&p| alive(p)));
        }
        assert!(
            pids.iter().all(|&p| !alive(p)),
            "a child survived its supervisor"
        );
    }

    #[test]
    fn a_child_that_will_not_stop_is_killed_after_the_limit() {
        let mut sup = Supervisor::new("test");
        let pid = sup
            .fork(None, &[], || {
                // SAFETY: pause only blocks until a signal arrives.
                unsafe { libc::pause() };
                0
            })
            .unwrap();
        let err = sup.wait_all(Duration::from_millis(50)).unwrap_err();
        assert!(err.to_string().contains("did not exit"), "{err}");
        assert!(!alive(pid));
    }

    #[test]
    fn a_panicking_child_exits_instead_of_running_the_parent() {
        let mut sup = Supervisor::new("test");
        sup.fork(None, &[], || panic!("child panics")).unwrap();
        assert_eq!(
            sup.wait_all(Duration::from_secs(10)).unwrap(),
            vec![Exit::Code(101)]
        );
    }

    #[test]
    fn children_keep_only_their_own_descriptors() {
        let (mut r, w) = std::io::pipe().unwrap();
        let (other_r, _other_w) = std::io::pipe().unwrap();
        let (keep, other) = (w.as_raw_fd(), other_r.as_raw_fd());
        let mut sup = Supervisor::new("test");
        sup.fork(None, &[keep], || {
            // SAFETY: fcntl F_GETFD only queries descriptor flags.
            let open = |fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1;
            let report = [u8::from(open(keep)), u8::from(open(other))];
            // SAFETY: writing two bytes from a live array to our kept pipe end.
            unsafe { libc::write(keep, report.as_ptr().cast(), 2) };
            0
        })
        .unwrap();
        drop(w);
        let mut got = [9u8; 2];
        std::io::Read::read_exact(&mut r, &mut got).unwrap();
        assert_eq!(got, [1, 0], "kept end open, the other pipe closed");
        sup.wait_all(Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn names_are_truncated_for_the_kernel() {
        assert_eq!(
            &process_name("osbench-messaging-long")[..15],
            b"osbench-messagi"
        );
        assert_eq!(process_name("osbench-ctx")[11], 0);
    }
}
