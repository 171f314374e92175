//! `syscall`: the cost of one simple system call, lmbench `lat_syscall`'s cases.
//!
//! - `null`: `getppid()` issued with the raw `syscall` instruction (inline asm on
//!   x86_64, `libc::syscall` elsewhere), so no libc wrapper or caching is
//!   involved. The instruction sits in a small non-inlined function, as in
//!   libc's `getppid()` that lmbench and `perf bench syscall basic` call: the
//!   return right after the system call is part of what every program pays.
//!   On the AMD EPYC guest this was built on (SRSO "Safe RET" mitigation) that
//!   return costs ~45 ns: 118 ns inlined vs 164 ns as a call, and perf bench
//!   166 ns; inlining would disagree with both anchors by a quarter.
//! - `getpid`: `getpid()` the same way — seed 000's loop (UML with and
//!   without SYSEMU), selectable but not a default case (lmbench has none);
//! - `read`: `read()` of 1 byte from /dev/zero; `write`: 1 byte to /dev/null;
//! - `stat`, `fstat`, `open` (open O_RDONLY + close): on an empty temporary file
//!   osbench creates in `$TMPDIR` (/tmp) and removes afterwards (lmbench uses a
//!   freshly touched file in its scratch directory).
//!
//! Each call's result is checked (a failing call stops the case), which costs
//! one well-predicted branch. Left out: lmbench's `null I/O` is a derived
//! figure ((read + write) / 2), shown by the table reporter, not a case.

use std::ffi::CString;
use std::fs::File;
use std::hint::black_box;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use tempfile::NamedTempFile;

use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "syscall",
    summary: "one simple system call (lmbench lat_syscall: null, read, write, stat, fstat, open)",
    unit: Unit::Ns,
    params: &[ParamSpec {
        name: "case",
        help: "which call is timed",
        kind: ParamKind::Choice(&["null", "read", "write", "stat", "fstat", "open", "getpid"]),
        default: "null",
    }],
    // lmbench's cases; getpid only when asked for.
    default_cases: DefaultCases::Listed(&[
        &[("case", "null")],
        &[("case", "read")],
        &[("case", "write")],
        &[("case", "stat")],
        &[("case", "fstat")],
        &[("case", "open")],
    ]),
    case_name: |p| p.get("case").to_string(),
    op,
    anchor: |p| format!("lat_syscall {}", p.get("case")),
    differs: "a median of 10 ms batches after a warm-up, pinned to the last allowed CPU; `perf bench syscall basic` reports the mean of one unpinned 10,000,000-call loop. The call and its return path are the same (raw getppid in a non-inlined function).",
    setup,
    ..BenchDef::DEFAULTS
};

fn op(p: &Params) -> String {
    match p.get("case") {
        "null" => "one getppid() system call (raw syscall, no libc)",
        "getpid" => "one getpid() system call (raw syscall, no libc caching)",
        "read" => "one 1-byte read() from /dev/zero",
        "write" => "one 1-byte write() to /dev/null",
        "stat" => "one stat() of a temporary file",
        "fstat" => "one fstat() of an open temporary file",
        _ => "one open(O_RDONLY) + close() of a temporary file",
    }
    .to_string()
}

/// The call being timed and what it needs.
enum Call {
    Null,
    Getpid,
    Read(OwnedFd),
    Write(OwnedFd),
    Stat(CString),
    Fstat(File),
    Open(CString),
}

struct Syscall {
    call: Call,
    /// The file stat/fstat/open work on; removed when this is dropped.
    _temp_file: Option<NamedTempFile>,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(make(p)?))
}

fn make(p: &Params) -> Result<Syscall> {
    let (call, temp_file) = match p.get("case") {
        "null" => (Call::Null, None),
        "getpid" => (Call::Getpid, None),
        "read" => (Call::Read(open_dev("/dev/zero", false)?), None),
        "write" => (Call::Write(open_dev("/dev/null", true)?), None),
        case => {
            let file = tempfile::Builder::new()
                .prefix("osbench-syscall-")
                .tempfile()
                .map_err(|e| Error::io("creating a temporary file for syscall (set TMPDIR to a writable directory)", e))?;
            let path = CString::new(file.path().as_os_str().as_bytes())
                .map_err(|_| Error::Measure("temporary file path contains a NUL byte".into()))?;
            let call = match case {
                "stat" => Call::Stat(path),
                "fstat" => Call::Fstat(
                    file.reopen()
                        .map_err(|e| Error::io("reopening the temporary file", e))?,
                ),
                _ => Call::Open(path),
            };
            (call, Some(file))
        }
    };
    Ok(Syscall {
        call,
        _temp_file: temp_file,
    })
}

fn open_dev(path: &str, write: bool) -> Result<OwnedFd> {
    std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .open(path)
        .map(OwnedFd::from)
        .map_err(|e| Error::io(format!("opening {path}"), e))
}

impl Workload for Syscall {
    fn run(&mut self, iters: u64) -> Result<()> {
        let ok = match &self.call {
            Call::Null => null_loop(iters),
            Call::Getpid => getpid_loop(iters),
            Call::Read(fd) => read_loop(fd.as_raw_fd(), iters),
            Call::Write(fd) => write_loop(fd.as_raw_fd(), iters),
            Call::Stat(path) => stat_loop(path, iters),
            Call::Fstat(file) => fstat_loop(file.as_raw_fd(), iters),
            Call::Open(path) => open_loop(path, iters),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::last_os("a timed system call failed"))
        }
    }
}

#[inline(never)]
fn null_loop(iters: u64) -> bool {
    for _ in 0..iters {
        black_box(raw_getppid());
    }
    true
}

#[inline(never)]
fn getpid_loop(iters: u64) -> bool {
    for _ in 0..iters {
        black_box(raw_getpid());
    }
    true
}

/// `count` raw getpid() calls (`osbench loop`, seed 000's program).
pub fn getpid_calls(count: u64) {
    getpid_loop(count);
}

/// `getppid()` through the `syscall` instruction, in a function of its own
/// like libc's wrapper (see the module doc for why it is not inlined).
#[inline(never)]
pub(crate) fn raw_getppid() -> i64 {
    syscall0(libc::SYS_getppid)
}

/// `getpid()` likewise (glibc stopped caching it in 2.25; this never did).
#[inline(never)]
pub(crate) fn raw_getpid() -> i64 {
    syscall0(libc::SYS_getpid)
}

/// System call `nr` with no arguments, through the `syscall` instruction.
/// Only for calls that take no argument, touch no user memory and cannot
/// fail (getppid, getpid).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn syscall0(nr: libc::c_long) -> i64 {
    let ret: i64;
    // SAFETY: callers pass only argument-less calls that read and write no
    // user memory. The instruction clobbers only rax (result), rcx and r11,
    // all declared; the kernel restores rflags from r11 and does not touch
    // the stack.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr => ret,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags),
        );
    }
    ret
}

/// Elsewhere: libc's generic `syscall()` (no caching either).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn syscall0(nr: libc::c_long) -> i64 {
    // SAFETY: callers pass only argument-less calls that cannot fail.
    unsafe { libc::syscall(nr) as i64 }
}

#[inline(never)]
fn read_loop(fd: i32, iters: u64) -> bool {
    let mut byte = 0u8;
    for _ in 0..iters {
        // SAFETY: `byte` is a valid 1-byte buffer for the whole call; fd is open.
        if unsafe { libc::read(fd, (&raw mut byte).cast(), 1) } != 1 {
            return false;
        }
    }
    true
}

#[inline(never)]
fn write_loop(fd: i32, iters: u64) -> bool {
    let byte = 0u8;
    for _ in 0..iters {
        // SAFETY: `byte` is a valid 1-byte buffer for the whole call; fd is open.
        if unsafe { libc::write(fd, (&raw const byte).cast(), 1) } != 1 {
            return false;
        }
    }
    true
}

#[inline(never)]
fn stat_loop(path: &CString, iters: u64) -> bool {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    for _ in 0..iters {
        // SAFETY: `path` is NUL-terminated and `st` is writable for the call.
        if unsafe { libc::stat(path.as_ptr(), &mut st) } != 0 {
            return false;
        }
    }
    true
}

#[inline(never)]
fn fstat_loop(fd: i32, iters: u64) -> bool {
    // SAFETY: as in `stat_loop`.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    for _ in 0..iters {
        // SAFETY: fd is open and `st` is writable for the call.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return false;
        }
    }
    true
}

#[inline(never)]
fn open_loop(path: &CString, iters: u64) -> bool {
    for _ in 0..iters {
        // SAFETY: `path` is NUL-terminated; the descriptor is closed at once and
        // never used elsewhere.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
        // SAFETY: `fd` was just opened here and is closed once.
        if fd < 0 || unsafe { libc::close(fd) } != 0 {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_runs_and_cleans_up() {
        for case in ["null", "read", "write", "stat", "fstat", "open", "getpid"] {
            let params = Params::new(&DEF, &[("case", case)]);
            let mut b = setup(&params, &Placement::unpinned()).unwrap();
            b.run(10).unwrap();
            b.teardown().unwrap();
        }
    }

    #[test]
    fn raw_getppid_is_the_parent() {
        assert_eq!(
            raw_getppid(),
            i64::from(std::os::unix::process::parent_id())
        );
    }

    #[test]
    fn raw_getpid_is_this_process() {
        assert_eq!(raw_getpid(), i64::from(std::process::id()));
    }

    #[test]
    fn temporary_file_is_removed() {
        let b = make(&Params::new(&DEF, &[("case", "stat")])).unwrap();
        let path = b._temp_file.as_ref().unwrap().path().to_path_buf();
        assert!(path.exists());
        drop(b);
        assert!(!path.exists());
    }
}
