//! Running a program under a seccomp filter that allows every system call
//! but costs its length on each one: the planted cause for measuring what
//! a sandbox (Docker's default profile, systemd's `SystemCallFilter=`) adds
//! to a system call, and for checking that a profile names the filter path.
//! The filter loads the system call number and compares it with numbers no
//! system call has, one instruction each, as a sequential allow list does,
//! then allows (seccomp(2), `Documentation/userspace-api/seccomp_filter.rst`).
//! Left out: filters that deny or trap, argument checks, the arch check.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use crate::error::Error;

/// The most instructions a classic BPF program may have (BPF_MAXINSNS).
pub const MOST_INSTRUCTIONS: usize = 4096;

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
/// No system call has a number this high on any architecture.
const NO_SUCH_CALL: u32 = 0x4000_0000;

/// The filter: `instructions` long (at least 2): load the number, compare
/// it `instructions − 2` times with numbers no call has (falling through
/// either way), allow.
pub fn allow_all_filter(instructions: usize) -> Vec<libc::sock_filter> {
    let op = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let n = instructions.clamp(2, MOST_INSTRUCTIONS);
    let mut filter = vec![op(BPF_LD_W_ABS, 0)];
    filter.extend((0..n - 2).map(|k| op(BPF_JMP_JEQ_K, NO_SUCH_CALL + k as u32)));
    filter.push(op(BPF_RET_K, SECCOMP_RET_ALLOW));
    filter
}

/// Installs `filter` on the calling thread (and what it executes), after
/// `no_new_privs`, which an unprivileged process needs for it.
fn install(filter: &[libc::sock_filter]) -> std::io::Result<()> {
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `prog` points at `filter`, which outlives the call; the
    // kernel copies the program before returning.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Replaces this process with `argv` under an allow-all filter of
/// `instructions` instructions; returns only on failure.
pub fn exec_filtered(instructions: usize, argv: &[OsString]) -> Error {
    let Some((program, args)) = argv.split_first() else {
        return Error::Measure("no command to run under the seccomp filter".into());
    };
    if let Err(e) = install(&allow_all_filter(instructions)) {
        return Error::io(
            "installing the seccomp filter (a kernel without CONFIG_SECCOMP_FILTER refuses it)",
            e,
        );
    }
    let e = std::process::Command::new(program).args(args).exec();
    Error::io(format!("running {}", program.to_string_lossy()), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_has_the_length_asked_and_ends_by_allowing() {
        let f = allow_all_filter(300);
        assert_eq!(f.len(), 300);
        assert_eq!((f[0].code, f[0].k), (BPF_LD_W_ABS, 0));
        assert!(
            f[1..299]
                .iter()
                .all(|i| i.code == BPF_JMP_JEQ_K && i.k >= NO_SUCH_CALL)
        );
        assert_eq!((f[299].code, f[299].k), (BPF_RET_K, SECCOMP_RET_ALLOW));
        assert_eq!(allow_all_filter(0).len(), 2);
        assert_eq!(allow_all_filter(1 << 20).len(), MOST_INSTRUCTIONS);
    }

    #[test]
    fn a_filtered_program_still_makes_every_call() {
        // A child installs the filter and execs a shell that makes calls of many kinds.
        let filter = allow_all_filter(500);
        let mut child = std::process::Command::new("sh");
        child.args(["-c", "ls / > /dev/null && echo done"]);
        // SAFETY: the closure runs in the forked child before exec and only
        // makes the two prctl calls of `install` on a filter built before
        // the fork (no allocation after it).
        unsafe {
            child.pre_exec(move || install(&filter));
        }
        let out = child.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
    }
}
