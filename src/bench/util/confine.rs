//! What confines the thread that times the `sandbox` family: a seccomp
//! filter of N instructions (built by `measure::sandbox`, every path
//! allowing) and a Landlock ruleset on a directory nested D deep, in the
//! manner of the kernel's `selftests/landlock/fs_bench` (a rule on every
//! directory, so that an access walks all of them). Both apply to the
//! calling thread only and die with it. Left out: Landlock's network and
//! scope rights, seccomp's other actions than allow and user notification
//! (`perf bench sched seccomp-notify`'s method: [`notify_on`] and
//! [`answer_notifications`]).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::measure::sandbox::{MOST_INSTRUCTIONS, allow_all_filter, install};

/// Installs an allow-all seccomp filter of `instructions` instructions on
/// the calling thread (with `no_new_privs`); it lasts as long as the thread.
pub fn seccomp(instructions: usize) -> Result<()> {
    if instructions > MOST_INSTRUCTIONS {
        return Err(too_long_filter(instructions));
    }
    install(&allow_all_filter(instructions)).map_err(|e| {
        Error::io(
            format!("installing a seccomp filter of {instructions} instructions (a kernel without CONFIG_SECCOMP_FILTER refuses it)"),
            e,
        )
    })
}

/// The error for a filter longer than the kernel allows.
pub fn too_long_filter(instructions: usize) -> Error {
    Error::Measure(format!(
        "a seccomp filter of {instructions} instructions is longer than the kernel allows: BPF_MAXINSNS is {MOST_INSTRUCTIONS} (a constant of the kernel's classic BPF, not a setting); use filter=0..={MOST_INSTRUCTIONS}"
    ))
}

/// What a notified call returns: `perf bench sched seccomp-notify`'s value.
pub const NOTIFY_ANSWER: i64 = i32::MAX as i64;

/// Installs on the calling thread a filter that hands every call of number
/// `nr` to a supervisor (SECCOMP_RET_USER_NOTIF) and allows the others,
/// `perf bench sched seccomp-notify`'s filter; returns the listener the
/// supervisor answers on ([`answer_notifications`]).
pub fn notify_on(nr: libc::c_long) -> Result<OwnedFd> {
    let op = |code: u16, jt: u8, jf: u8, k: u32| libc::sock_filter { code, jt, jf, k };
    // Load the number; if it is `nr`, notify, else allow.
    let filter = [
        op(0x20, 0, 0, 0),
        op(0x15, 0, 1, nr as u32),
        op(0x06, 0, 0, libc::SECCOMP_RET_USER_NOTIF),
        op(0x06, 0, 0, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(Error::last_os("setting no_new_privs for a seccomp filter"));
    }
    // SAFETY: `prog` points at `filter`, which outlives the call; the
    // kernel copies the program before returning.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &prog as *const libc::sock_fprog,
        )
    };
    if fd < 0 {
        return Err(Error::last_os(
            "installing a seccomp filter with a notification listener (Linux 5.0 or later)",
        ));
    }
    // SAFETY: a fresh descriptor the kernel just gave us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The supervisor's loop: answers every notification on `listener` with
/// [`NOTIFY_ANSWER`] (the call is not made, as in perf bench), waiting in
/// the blocking receive between calls as perf's supervisor does, until the
/// listener fails. It makes only system calls, so a forked child may run
/// it; it ends when that child is killed.
pub fn answer_notifications(listener: RawFd) {
    while answer_one(listener) {}
}

/// Receives one notification and answers it; false once the listener fails.
fn answer_one(fd: i32) -> bool {
    // SAFETY: an all-zero seccomp_notif is valid (and NOTIF_RECV wants it zeroed).
    let mut req: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: NOTIF_RECV fills `req`, a struct of the size its number encodes.
    if unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut req) } != 0 {
        // ENOENT: the caller went away (a signal) before it was received.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT);
    }
    let mut resp = libc::seccomp_notif_resp {
        id: req.id,
        val: NOTIFY_ANSWER,
        error: 0,
        flags: 0,
    };
    // SAFETY: NOTIF_SEND reads `resp`, a struct of the size its number encodes.
    let sent = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut resp) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT)
}

const CREATE_RULESET_VERSION: libc::c_uint = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;
const ACCESS_FS_READ_FILE: u64 = 1 << 2;
const ACCESS_FS_READ_DIR: u64 = 1 << 3;
/// The rights handled here exist since Landlock's first ABI.
pub const LANDLOCK_ABI_NEEDED: i64 = 1;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI of the running kernel, or why there is none usable.
pub fn landlock_abi() -> Result<i64> {
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the
    // version flag only returns the ABI version; it reads no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if abi >= LANDLOCK_ABI_NEEDED {
        return Ok(abi);
    }
    let e = std::io::Error::last_os_error();
    let why = match e.raw_os_error() {
        Some(libc::ENOSYS) => "this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK)",
        Some(libc::EOPNOTSUPP) => {
            "Landlock is built in but not enabled: add landlock to the lsm= boot parameter"
        }
        _ => "Landlock refused to tell its ABI version",
    };
    Err(Error::io(
        format!("Landlock ABI {LANDLOCK_ABI_NEEDED} or later is needed: {why}"),
        e,
    ))
}

/// A directory `depth` levels deep under a temporary base, with an empty
/// file at the bottom; removed when dropped.
pub struct NestedDirs {
    base: tempfile::TempDir,
    depth: usize,
    /// The file at the bottom.
    pub file: CString,
}

impl NestedDirs {
    /// Makes `base/d/d/…/d/file` with `depth` directories `d`.
    pub fn new(depth: usize) -> Result<Self> {
        let base = tempfile::Builder::new()
            .prefix("osbench-sandbox-")
            .tempdir()
            .map_err(|e| {
                Error::io(
                    "creating a temporary directory (set TMPDIR to a writable directory)",
                    e,
                )
            })?;
        let mut dir = base.path().to_path_buf();
        for _ in 0..depth {
            dir.push("d");
        }
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {depth} nested directories"), e))?;
        let file = dir.join("file");
        std::fs::File::create(&file).map_err(|e| Error::io("creating the file to open", e))?;
        let file = CString::new(file.as_os_str().as_bytes())
            .map_err(|_| Error::Measure("temporary path contains a NUL byte".into()))?;
        Ok(Self { base, depth, file })
    }

    /// The directories from the base down to the deepest.
    fn dirs(&self) -> Vec<PathBuf> {
        let mut dir = self.base.path().to_path_buf();
        let mut all = vec![dir.clone()];
        for _ in 0..self.depth {
            dir.push("d");
            all.push(dir.clone());
        }
        all
    }

    /// Restricts the calling thread with a Landlock ruleset handling file
    /// reads and directory listing: a rule on the base allows both, a rule
    /// on every nested directory allows only listing, so opening the file
    /// for reading walks every directory up to the base before it is
    /// allowed (fs_bench's walk, allowed at its end instead of denied).
    pub fn restrict_thread(&self) -> Result<()> {
        landlock_abi()?;
        let attr = RulesetAttr {
            handled_access_fs: ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR,
        };
        // SAFETY: `attr` is a valid ruleset attribute of the size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                size_of::<RulesetAttr>(),
                0,
            )
        };
        if fd < 0 {
            return Err(Error::last_os("creating a Landlock ruleset"));
        }
        // SAFETY: a fresh descriptor the kernel just gave us.
        let ruleset = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        for (i, dir) in self.dirs().iter().enumerate() {
            let allowed = if i == 0 {
                ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR
            } else {
                ACCESS_FS_READ_DIR
            };
            add_rule(&ruleset, dir, allowed)?;
        }
        restrict_self(&ruleset)
    }
}

/// Adds a path-beneath rule on `dir` allowing `allowed`.
fn add_rule(ruleset: &OwnedFd, dir: &Path, allowed: u64) -> Result<()> {
    let dir_fd = std::fs::File::open(dir)
        .map_err(|e| Error::io(format!("opening {} for a Landlock rule", dir.display()), e))?;
    let attr = PathBeneathAttr {
        allowed_access: allowed,
        parent_fd: dir_fd.as_raw_fd(),
    };
    // SAFETY: `attr` is a valid, packed path-beneath attribute; both
    // descriptors are open for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0,
        )
    };
    if r != 0 {
        return Err(Error::last_os("adding a Landlock rule"));
    }
    Ok(())
}

/// Sets `no_new_privs` and enforces `ruleset` on the calling thread.
fn restrict_self(ruleset: &OwnedFd) -> Result<()> {
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(Error::last_os("setting no_new_privs for Landlock"));
    }
    // SAFETY: landlock_restrict_self on an open ruleset descriptor, no flags.
    let r = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0) };
    if r != 0 {
        return Err(Error::last_os("enforcing the Landlock ruleset"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_landlocked_thread_opens_the_nested_file_and_nothing_else() {
        if landlock_abi().is_err() {
            return; // no Landlock here: `landlock_abi`'s error is the skip path
        }
        let dirs = NestedDirs::new(5).unwrap();
        let file = dirs.file.clone();
        let t = std::thread::spawn(move || {
            dirs.restrict_thread().unwrap();
            let inside = std::fs::File::open(std::ffi::OsStr::from_bytes(file.as_bytes()));
            let outside = std::fs::File::open("/proc/self/status");
            (inside.is_ok(), outside.map_err(|e| e.raw_os_error()))
        });
        let (inside, outside) = t.join().unwrap();
        assert!(inside);
        assert_eq!(outside.err(), Some(Some(libc::EACCES)));
        // This thread is not confined.
        assert!(std::fs::File::open("/proc/self/status").is_ok());
    }

    #[test]
    fn a_filter_over_the_kernel_limit_is_refused_naming_it() {
        let e = seccomp(MOST_INSTRUCTIONS + 1).unwrap_err().to_string();
        assert!(e.contains("BPF_MAXINSNS is 4096"), "{e}");
    }
}
