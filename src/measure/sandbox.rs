//! Running a program under a seccomp filter that allows every system call
//! but costs its length on each one: the planted cause for measuring what
//! a sandbox (Docker's default profile, systemd's `SystemCallFilter=`) adds
//! to a system call, and for checking that a profile names the filter path.
//! The filter loads the call's first argument and compares it with values,
//! one instruction each, as a sequential allow list compares the number,
//! then allows whatever matched or not. It reads an argument, not the
//! number, because since Linux 5.11 the kernel emulates a filter that reads
//! only the number once per number and skips it on every call after
//! (the seccomp action cache): an allow list of numbers costs nothing
//! measurable there, which is a finding in itself but not the planted cause (seccomp(2), `Documentation/userspace-api/seccomp_filter.rst`).
//! Left out: filters that deny or trap, argument checks, the arch check.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use crate::error::Error;

/// The most instructions a classic BPF program may have (BPF_MAXINSNS).
pub const MOST_INSTRUCTIONS: usize = 4096;

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JA: u16 = 0x05;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
/// The first value compared (then one more per comparison); whatever the
/// argument, every path allows.
const FIRST_VALUE: u32 = 0x4000_0000;
/// Where the low half of the first argument lies in `struct seccomp_data`
/// (nr, arch, instruction_pointer, args[6]).
const FIRST_ARGUMENT: u32 = 16;

/// The most comparisons that jump to one allow (a jump offset is 8 bits).
const BLOCK: usize = 200;

/// The filter: `instructions` long (2 to [`MOST_INSTRUCTIONS`]): load the
/// first argument, compare it with values, each comparison jumping to
/// an allow on a match (so the JIT must emit every compare and branch: a
/// comparison that falls through either way is compiled to nothing), then
/// allow. Every `BLOCK` comparisons an allow of their own is jumped over.
pub fn allow_all_filter(instructions: usize) -> Vec<libc::sock_filter> {
    let op = |code, jt: usize, k| libc::sock_filter {
        code,
        jt: jt as u8,
        jf: 0,
        k,
    };
    let n = instructions.clamp(2, MOST_INSTRUCTIONS);
    let mut filter = vec![op(BPF_LD_W_ABS, 0, FIRST_ARGUMENT)];
    let mut k = FIRST_VALUE;
    while filter.len() < n - 1 {
        let left = n - 1 - filter.len();
        // A block of its own when more than a block is left: m comparisons,
        // a jump over its allow, the allow.
        let (m, own_allow) = if left > BLOCK + 2 {
            (BLOCK, true)
        } else {
            (left, false)
        };
        for j in 0..m {
            // To the allow: past the rest of the block (and the jump over it).
            let to_allow = if own_allow { m - j } else { m - 1 - j };
            filter.push(op(BPF_JMP_JEQ_K, to_allow, k));
            k += 1;
        }
        if own_allow {
            filter.push(op(BPF_JMP_JA, 0, 1));
            filter.push(op(BPF_RET_K, 0, SECCOMP_RET_ALLOW));
        }
    }
    filter.push(op(BPF_RET_K, 0, SECCOMP_RET_ALLOW));
    filter
}

/// Installs `filter` on the calling thread (and what it executes), after
/// `no_new_privs`, which an unprivileged process needs for it.
pub fn install(filter: &[libc::sock_filter]) -> std::io::Result<()> {
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
    fn the_filter_has_the_length_asked_and_every_jump_lands_on_an_allow() {
        for n in [2, 3, 150, 203, 300, 1000, MOST_INSTRUCTIONS] {
            let f = allow_all_filter(n);
            assert_eq!(f.len(), n);
            assert_eq!((f[0].code, f[0].k), (BPF_LD_W_ABS, FIRST_ARGUMENT));
            assert_eq!((f[n - 1].code, f[n - 1].k), (BPF_RET_K, SECCOMP_RET_ALLOW));
            let allows = |at: usize| (f[at].code, f[at].k) == (BPF_RET_K, SECCOMP_RET_ALLOW);
            for (i, op) in f.iter().enumerate() {
                match op.code {
                    BPF_JMP_JEQ_K => {
                        assert!(op.k >= FIRST_VALUE, "{n}: {i}");
                        assert!(allows(i + 1 + op.jt as usize), "{n}: {i} lands on an allow");
                        assert!(op.jt > 0 || i + 2 == n, "{n}: {i} would compile to nothing");
                    }
                    // Over the allow right after it.
                    BPF_JMP_JA => assert!(op.k == 1 && allows(i + 1) && i + 2 < n, "{n}: {i}"),
                    _ => {}
                }
            }
        }
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
