//! A load's process group: a `cmd:` load's start (`sh -c` in a group of
//! its own, listed with the warden), the group's CPU time and members as
//! /proc shows them, and its end (SIGTERM, a grace, SIGKILL, reaping).
//! Left out: the builtin loads' own tasks (`builtin`), which the
//! supervisor forks and reaps.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::measure::spawn::{ended_unreaped, kill_group};
use crate::measure::warden;

/// Starts `sh -c command` in a process group of its own (on `cpus` when
/// given), listed with the warden; its pid (the group's id), or why not.
pub(super) fn spawn_command(command: &str, cpus: &[usize]) -> Result<libc::pid_t, String> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    if !cpus.is_empty() {
        let set = cpu_set(cpus)?;
        // SAFETY: the closure runs in the forked child before exec and makes
        // one async-signal-safe system call on a set built before the fork.
        unsafe {
            cmd.pre_exec(move || set_affinity(&set));
        }
    }
    let child = cmd.spawn().map_err(|e| {
        let hint = crate::env::process::limit_hint(&e).map_or(String::new(), |h| format!(": {h}"));
        format!("starting sh: {e}{hint}")
    })?;
    let pid = child.id() as libc::pid_t;
    warden::guard(pid);
    Ok(pid)
}

/// The affinity mask of `cpus`, or why it cannot be one.
pub(super) fn cpu_set(cpus: &[usize]) -> Result<libc::cpu_set_t, String> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(format!("CPU {cpu} is beyond the CPUs this system can name"));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE, so CPU_SET writes within `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    Ok(set)
}

/// Puts the calling process on `set` (in a child, after fork).
pub(super) fn set_affinity(set: &libc::cpu_set_t) -> std::io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t of the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether our child `pid` has ended (it stays unreaped).
pub(super) fn ended(pid: libc::pid_t) -> bool {
    ended_unreaped(pid, false).unwrap_or(true)
}

/// One process of a group, as /proc/PID/stat shows it.
struct Member {
    pid: libc::pid_t,
    zombie: bool,
    /// utime + stime + cutime + cstime, in clock ticks.
    ticks: u64,
    comm: String,
}

/// The processes whose process group is `pgid`.
fn members(pgid: libc::pid_t) -> Vec<Member> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let member = parse_stat(pid, &stat)?;
            (member.0 == pgid).then_some(member.1)
        })
        .collect()
}

/// A /proc/PID/stat line: its process group and what [`Member`] keeps.
fn parse_stat(pid: libc::pid_t, stat: &str) -> Option<(libc::pid_t, Member)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    let number = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let pgrp = fields.get(2)?.parse().ok()?;
    let ticks = (11..=14).map(number).sum::<Option<u64>>()?;
    let zombie = fields.first()? == &"Z";
    Some((
        pgrp,
        Member {
            pid,
            zombie,
            ticks,
            comm,
        },
    ))
}

/// The CPU time (user + system, s) of the members of group `pgid` and of
/// the children they reaped.
pub(super) fn cpu_seconds(pgid: libc::pid_t) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    members(pgid).iter().map(|m| m.ticks as f64).sum::<f64>() / hz
}

/// How many members of group `pgid` are alive (not zombies).
#[cfg(test)]
pub(super) fn live_members(pgid: libc::pid_t) -> usize {
    members(pgid).iter().filter(|m| !m.zombie).count()
}

/// SIGTERMs group `pgid` and waits up to `grace` for every member to end;
/// SIGKILLs what is left then and names it (`None`: nothing was left).
pub(super) fn terminate(pgid: libc::pid_t, grace: Duration) -> Option<String> {
    kill_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    loop {
        let live: Vec<Member> = members(pgid).into_iter().filter(|m| !m.zombie).collect();
        if live.is_empty() {
            return None;
        }
        if Instant::now() >= deadline {
            kill(pgid);
            let named: Vec<String> = live
                .iter()
                .take(5)
                .map(|m| format!("{} {}", m.pid, m.comm))
                .collect();
            let more = live.len().saturating_sub(5);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            return Some(format!("{}{more}", named.join(", ")));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// SIGKILLs group `pgid` and waits (up to a second) until none of it runs:
/// a killed process may still be on its way out when kill(2) returns.
pub(super) fn kill(pgid: libc::pid_t) {
    kill_group(pgid, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline && members(pgid).iter().any(|m| !m.zombie) {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Reaps the group's leader (our child) and whichever other members are
/// ours to reap (re-parented to osbench as a subreaper); the leader's end in words.
pub(super) fn reap(leader: libc::pid_t) -> String {
    let mut status = 0;
    // SAFETY: waiting for our own child with a valid out-pointer, retried on EINTR.
    while unsafe { libc::waitpid(leader, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return "its end could not be read".into();
        }
    }
    // SAFETY: non-blocking waits for our own children of the (now dead) group.
    while unsafe { libc::waitpid(-leader, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
    if libc::WIFSIGNALED(status) {
        return format!("killed by signal {}", libc::WTERMSIG(status));
    }
    match libc::WEXITSTATUS(status) {
        127 => "exit status 127: the shell did not find the command".into(),
        code => format!("exit status {code}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_group_state_and_time() {
        let line = "42 (my (odd) cmd) S 1 40 40 0 -1 4194560 0 0 0 0 7 3 2 1 20 0 1 0 5 0 0";
        let (pgrp, m) = parse_stat(42, line).unwrap();
        assert_eq!((pgrp, m.zombie, m.ticks), (40, false, 13));
        assert_eq!(m.comm, "my (odd) cmd");
        assert!(parse_stat(1, "garbage").is_none());
    }
}
