//! `fs`: file creation and deletion, lmbench's `lat_fs`. One sample is one
//! whole pass over `files` files in a directory new for that pass (made
//! untimed, as lmbench's set-up makes one per timed interval): `phase=create` times
//! creating them (creat, `kib` KiB written in 128 KiB writes as lmbench's
//! `mkfile` does, optionally fsync, close), `phase=delete` times unlinking
//! them; the untimed step between samples does the other half. One op is
//! one file (µs per file; lmbench prints files per second, 10^6 ÷ µs).
//!
//! The directory is a new temporary one under `$TMPDIR` (default /tmp; set
//! TMPDIR to measure another filesystem), named in the op with its
//! filesystem type and mount options from /proc/self/mountinfo. It is
//! removed with everything in it when the case ends, fails or is stopped
//! (Ctrl-C included): nothing is left behind. A directory osbench cannot
//! write, or a filesystem without room for the files, is refused before
//! anything runs; a filesystem that fills up in the middle is an error
//! naming it.
//!
//! Differences on purpose: lmbench spreads its files over directories of at
//! most 100 (its `-n`) and lets its timing loop choose how many; osbench
//! puts `files` (default 100, one lmbench directory) in one directory. As
//! in lmbench, files are named 0, 1, …, made from the last name to the
//! first and unlinked in the order they were made. osbench runs the case on
//! one CPU, lat_fs unpinned: a delete's RCU frees then fall on the timed CPU
//! (`--pin none` is lmbench's placement). `fsync=yes` exists (lmbench
//! never syncs). Left out: lmbench's parallel (-P) mode.

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

/// lmbench's mkfile writes at most this much per write.
const WRITE_CHUNK: usize = 128 * 1024;

pub static DEF: BenchDef = BenchDef {
    name: "fs",
    summary: "create or delete files of 0-10 KiB in a temporary directory, µs per file (lmbench lat_fs)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "phase",
            help: "which half is timed",
            kind: ParamKind::Choice(&["create", "delete"]),
            default: "create",
        },
        ParamSpec {
            name: "kib",
            help: "size of each file in KiB (lmbench: 0, 1, 4, 10)",
            kind: ParamKind::Int { min: 0, max: 1024 },
            default: "0",
        },
        ParamSpec {
            name: "files",
            help: "files per pass, all in one directory",
            kind: ParamKind::Int {
                min: 1,
                max: 100_000,
            },
            default: "100",
        },
        ParamSpec {
            name: "fsync",
            help: "fsync each file before closing it",
            kind: ParamKind::Choice(&["no", "yes"]),
            default: "no",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("phase", "create")],
        &[("phase", "delete")],
        &[("phase", "create"), ("kib", "10")],
        &[("phase", "delete"), ("kib", "10")],
    ]),
    case_name: |p| {
        let sync = if p.get("fsync") == "yes" {
            "/fsync"
        } else {
            ""
        };
        let files = match p.int("files") {
            100 => String::new(),
            n => format!("/{n}"),
        };
        format!("{}/{}k{files}{sync}", p.get("phase"), p.int("kib"))
    },
    op: |p| {
        let what = if p.get("phase") == "create" {
            let sync = if p.get("fsync") == "yes" {
                ", fsync"
            } else {
                ""
            };
            format!(
                "creating one {} KiB file (creat, write{sync}, close)",
                p.int("kib")
            )
        } else {
            format!("unlinking one {} KiB file", p.int("kib"))
        };
        let dir = std::env::temp_dir();
        let mount = mount_of(&dir);
        let note = match p.get("phase") {
            "create" => journal_note(mount.as_ref()),
            _ => "",
        };
        format!(
            "{what}, {} files per pass, in a new directory under {}{note}",
            p.int("files"),
            describe_mounted(&dir, mount.as_ref())
        )
    },
    anchor: |p| format!("lat_fs -s {}k", p.int("kib")),
    differs: "µs per file (lmbench prints files/s); one new directory of `files` files per sample, lmbench nests directories of 100 and sizes its own loop to its interval: at its 50 ms, 20,000 files of 0 KiB, 8,000 creates and 13,000 deletes of 10 KiB on the development VM's tmpfs; at the 1 s it falls back to where its timing calibration fails, 400,000. Per file the cost grows with the pass (tmpfs, Intel: delete 1.2 us a file at 100, 2.6 at 20,000; create 2.1 and 2.4): with files= at lmbench's counts, lat_fs on osbench's CPU at its 11 repetitions, the four rows read 0.99-1.04 of lat_fs (Intel), 0.47-0.80 at the default (docs/crosscheck.md). osbench runs on one CPU (its one-task default), lat_fs where the scheduler puts it; pinned, the RCU frees of the unlinked inodes run on the timed CPU (Intel, a C loop of 20,000 unlinks on tmpfs: 2.24-2.51 us pinned, 2.02-2.17 unpinned), so --pin none is lmbench's placement; fsync=yes exists.",
    ops_per_iter: |p| p.int("files") as f64,
    sampling: Sampling::WholeRuns,
    setup,
    check,
    ..BenchDef::DEFAULTS
};

/// `dir` with the filesystem it is on: "/tmp (ext4, rw,relatime)".
pub fn describe_dir(dir: &Path) -> String {
    describe_mounted(dir, mount_of(dir).as_ref())
}

/// `dir` with `mount`, the mount holding it, when it was found.
fn describe_mounted(dir: &Path, mount: Option<&Mount>) -> String {
    match mount {
        Some(m) => format!("{} ({}, {})", dir.display(), m.fs, m.options),
        None => dir.display().to_string(),
    }
}

/// The mount holding a directory, from /proc/self/mountinfo.
pub struct Mount {
    /// The filesystem type ("ext4").
    pub fs: String,
    /// The mount options ("rw,relatime").
    pub options: String,
    /// What is mounted ("/dev/vda").
    pub source: String,
}

/// The mount holding `dir`, from /proc/self/mountinfo (the longest mount
/// point that is a prefix of it).
pub fn mount_of(dir: &Path) -> Option<Mount> {
    let dir = dir.canonicalize().ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines()
        .filter_map(|line| {
            // id parent major:minor root mountpoint options ... - fstype source super-options
            let (left, right) = line.split_once(" - ")?;
            let fields: Vec<&str> = left.split(' ').collect();
            let point = PathBuf::from(fields.get(4)?.replace("\\040", " "));
            let mut right = right.split(' ');
            let mount = Mount {
                fs: right.next()?.to_string(),
                source: right.next()?.to_string(),
                options: fields.get(5)?.to_string(),
            };
            dir.starts_with(&point).then_some((point, mount))
        })
        .max_by_key(|(point, _)| point.as_os_str().len())
        .map(|(_, mount)| mount)
}

/// Said in the op when `mount` is an ext4 without a journal,
/// which skips every inode deleted in the last 60 s (300 s while its inode
/// table block is unwritten) and scans past each: creates after many
/// deletes (the pass before, another tool's run) cost more, up to 300 µs a
/// file here against 7 µs after 100 s idle (fs/ext4/ialloc.c,
/// `recently_deleted`; docs/crosscheck.md).
fn journal_note(mount: Option<&Mount>) -> &'static str {
    // ext4's sysfs directory is named by the device: /dev/vda's is "vda".
    let journal_task = mount.filter(|m| m.fs == "ext4").and_then(|m| {
        let device = m.source.rsplit('/').next().unwrap_or_default();
        std::fs::read_to_string(format!("/sys/fs/ext4/{device}/journal_task")).ok()
    });
    match journal_task {
        Some(task) if without_journal(&task) => {
            "; ext4 without a journal: inodes deleted in the last 60-300 s are skipped, so creates after deletes cost more"
        }
        _ => "",
    }
}

/// Whether ext4's sysfs `journal_task` says the filesystem has no journal.
fn without_journal(journal_task: &str) -> bool {
    journal_task.trim() == "<none>"
}

/// The directory must be writable and have room for a pass, before anything runs.
fn check(p: &Params) -> Result<()> {
    room_for("fs", p.int("kib") as u64 * 1024, p.int("files") as u64)
}

/// Refuses, naming the directory and what is free there, a `$TMPDIR` that
/// osbench cannot write or that has no room for `files` files of `bytes`.
pub fn room_for(bench: &str, bytes: u64, files: u64) -> Result<()> {
    let dir = std::env::temp_dir();
    // Free space first: the writability probe below is itself an entry there.
    // SAFETY: statvfs is plain data filled in by the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| Error::Usage(format!("{bench}: TMPDIR holds a NUL byte")))?;
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } == 0 {
        let block = st.f_frsize.max(1);
        let needed = bytes.div_ceil(block) * block * files;
        let free = st.f_bavail * block;
        if needed > free || files > st.f_favail {
            return Err(Error::Usage(format!(
                "{bench}: {} has {free} bytes and {} inodes free, and {files} files of {bytes} B need \
                 {needed} bytes; free space there, set TMPDIR to a larger filesystem, or ask for fewer \
                 or smaller files",
                describe_dir(&dir),
                st.f_favail,
            )));
        }
    }
    TempDir::new_in(&dir).map_err(|e| {
        Error::Usage(format!(
            "{bench}: cannot create a directory in {} ({e}); set TMPDIR to a directory osbench may write",
            dir.display()
        ))
    })?;
    Ok(())
}

/// One case: its directory, the current pass's directory and file names,
/// and which of them exist now. Files are made from the last name to the
/// first and unlinked in the order they were made, as lmbench's
/// `benchmark_mk` and `benchmark_rm` walk their names; each pass has a
/// directory of its own, as each of lmbench's timed intervals has.
struct Files {
    dir: Option<TempDir>,
    /// Passes begun: the current pass's directory is `dir/passes`.
    passes: u64,
    names: Vec<CString>,
    /// Files of this pass made so far (names from the last), and unlinked so far.
    made: usize,
    unmade: usize,
    data: Vec<u8>,
    fsync: bool,
    create_timed: bool,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Files::new_in(p, &std::env::temp_dir())?))
}

impl Files {
    /// A case in a new directory under `parent`, its first pass's directory made.
    fn new_in(p: &Params, parent: &Path) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("osbench-fs")
            .tempdir_in(parent)
            .map_err(|e| Error::io(format!("creating a directory in {}", parent.display()), e))?;
        let mut files = Files {
            dir: Some(dir),
            passes: 0,
            names: Vec::new(),
            made: 0,
            unmade: 0,
            data: vec![0; p.int("kib") as usize * 1024],
            fsync: p.get("fsync") == "yes",
            create_timed: p.get("phase") == "create",
        };
        files.begin_pass(p.int("files") as usize)?;
        Ok(files)
    }

    fn dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new("?"), |d| d.path())
    }

    fn pass_dir(&self, pass: u64) -> PathBuf {
        self.dir().join(pass.to_string())
    }

    /// Untimed: removes the last pass's directory (empty by then) and makes
    /// the next one with its `files` names. A pass that made no file yet
    /// keeps its directory.
    fn begin_pass(&mut self, files: usize) -> Result<()> {
        if self.passes > 0 && self.made == 0 {
            return Ok(());
        }
        if self.passes > 0 {
            let old = self.pass_dir(self.passes);
            std::fs::remove_dir(&old)
                .map_err(|e| Error::io(format!("fs: removing {}", old.display()), e))?;
        }
        self.passes += 1;
        let new = self.pass_dir(self.passes);
        std::fs::create_dir(&new).map_err(|e| self.failed("making the directory of", e))?;
        self.names = (0..files)
            .map(|i| {
                CString::new(new.join(i.to_string()).as_os_str().as_bytes())
                    .map_err(|_| Error::Measure("a temporary path holds a NUL byte".into()))
            })
            .collect::<Result<_>>()?;
        (self.made, self.unmade) = (0, 0);
        Ok(())
    }

    /// Makes every file of the pass not yet made, last name first (lmbench's mkfile).
    fn create_all(&mut self) -> Result<()> {
        while self.made < self.names.len() {
            let name = &self.names[self.names.len() - 1 - self.made];
            // SAFETY: a NUL-terminated path; the result is checked.
            let fd = unsafe {
                libc::open(
                    name.as_ptr(),
                    libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC | libc::O_CLOEXEC,
                    0o666,
                )
            };
            if fd < 0 {
                return Err(self.failed("creating", io::Error::last_os_error()));
            }
            self.made += 1;
            // SAFETY: `fd` was just opened and is owned by nothing else.
            let file = unsafe { OwnedFd::from_raw_fd(fd) };
            for chunk in self.data.chunks(WRITE_CHUNK) {
                super::util::fdio::write_all(fd, chunk).map_err(|e| self.failed("writing", e))?;
            }
            // SAFETY: fsync of the descriptor just written.
            if self.fsync && unsafe { libc::fsync(fd) } != 0 {
                return Err(self.failed("syncing", io::Error::last_os_error()));
            }
            drop(file);
        }
        Ok(())
    }

    /// Unlinks every file made and not yet unlinked, in the order they were made.
    fn delete_all(&mut self) -> Result<()> {
        while self.unmade < self.made {
            let name = &self.names[self.names.len() - 1 - self.unmade];
            // SAFETY: a NUL-terminated path; the result is checked.
            if unsafe { libc::unlink(name.as_ptr()) } != 0 {
                return Err(self.failed("deleting", io::Error::last_os_error()));
            }
            self.unmade += 1;
        }
        Ok(())
    }

    /// A failed file operation, naming the directory (and its filesystem when full).
    fn failed(&self, doing: &str, e: io::Error) -> Error {
        let full = if e.raw_os_error() == Some(libc::ENOSPC) {
            " — the filesystem is full; the directory and its files are removed"
        } else {
            ""
        };
        let done = if doing == "deleting" {
            self.unmade
        } else {
            self.made
        };
        Error::io(
            format!(
                "fs: {doing} file {} of {} in {}{full}",
                done + 1,
                self.names.len(),
                describe_dir(self.dir())
            ),
            e,
        )
    }
}

impl Workload for Files {
    /// Untimed: the half that is not measured, in a new pass directory.
    fn prepare(&mut self) -> Result<()> {
        let files = self.names.len();
        self.delete_all()?;
        self.begin_pass(files)?;
        if !self.create_timed {
            self.create_all()?;
        }
        Ok(())
    }

    fn run(&mut self, iters: u64) -> Result<()> {
        for i in 0..iters {
            if i > 0 {
                self.prepare()?;
            }
            if self.create_timed {
                self.create_all()?;
            } else {
                self.delete_all()?;
            }
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        let dir = self.dir.take();
        match dir {
            Some(d) => {
                let path = d.path().to_path_buf();
                d.close()
                    .map_err(|e| Error::io(format!("removing {}", path.display()), e))
            }
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(kv: &[(&str, &str)]) -> PathBuf {
        let p = Params::new(&DEF, kv);
        check(&p).unwrap();
        let mut f = Files::new_in(&p, &std::env::temp_dir()).unwrap();
        let dir = f.dir().to_path_buf();
        for pass in 1..=3 {
            f.prepare().unwrap();
            f.run(1).unwrap();
            // One pass directory at a time, each new.
            let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
            assert_eq!(entries.len(), 1, "{p}");
            assert_eq!(f.passes, pass, "{p}");
            let expected = if f.create_timed { f.names.len() } else { 0 };
            assert_eq!(
                std::fs::read_dir(f.pass_dir(pass)).unwrap().count(),
                expected,
                "{p}"
            );
        }
        if f.create_timed {
            let size = std::fs::metadata(f.pass_dir(3).join("0")).unwrap().len();
            assert_eq!(size, p.int("kib") as u64 * 1024);
        }
        Box::new(f).teardown().unwrap();
        dir
    }

    #[test]
    fn both_phases_do_their_half_and_leave_nothing() {
        for phase in ["create", "delete"] {
            for kib in ["0", "10", "200"] {
                let dir = pass(&[("phase", phase), ("kib", kib), ("files", "20")]);
                assert!(!dir.exists(), "{} left behind", dir.display());
            }
        }
        let dir = pass(&[("fsync", "yes"), ("files", "3"), ("kib", "1")]);
        assert!(!dir.exists());
    }

    /// lmbench's orders: made from the last name to the first, unlinked in
    /// the order made. A directory in a file's place makes the first call
    /// of each half fail, and the error says which file it was.
    #[test]
    fn files_are_made_last_first_and_unlinked_in_the_order_made() {
        let p = Params::new(&DEF, &[("files", "3")]);
        let mut f = Files::new_in(&p, &std::env::temp_dir()).unwrap();
        let pass = f.pass_dir(1);
        std::fs::create_dir(pass.join("0")).unwrap();
        let e = f.create_all().unwrap_err().to_string();
        assert!(e.contains("creating file 3 of 3"), "{e}");
        assert!(pass.join("2").is_file() && pass.join("1").is_file());
        std::fs::remove_dir(pass.join("0")).unwrap();
        f.create_all().unwrap();
        std::fs::remove_file(pass.join("2")).unwrap();
        std::fs::create_dir(pass.join("2")).unwrap();
        let e = f.delete_all().unwrap_err().to_string();
        assert!(e.contains("deleting file 1 of 3"), "{e}");
        assert!(pass.join("1").is_file() && pass.join("0").is_file());
        Box::new(f).teardown().unwrap();
    }

    #[test]
    fn a_dropped_case_leaves_nothing_behind() {
        let p = Params::new(&DEF, &[("files", "10")]);
        let mut f = Files::new_in(&p, &std::env::temp_dir()).unwrap();
        f.create_all().unwrap();
        let dir = f.dir().to_path_buf();
        drop(f);
        assert!(!dir.exists());
    }

    /// A filesystem that fills up in the middle of a pass: the error names
    /// the directory and says it is full, and nothing is left on it. Needs
    /// root (it mounts a 64 KiB tmpfs); anyone else is told it did not run.
    #[test]
    fn a_full_filesystem_is_an_error_that_leaves_nothing() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("not run: mounting a tmpfs needs root");
            return;
        }
        let mnt = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "osbench-test"])
            .arg(mnt.path())
            .status()
            .unwrap();
        assert!(ok.success(), "mount -t tmpfs failed");
        let unmount = || {
            std::process::Command::new("umount")
                .arg(mnt.path())
                .status()
                .unwrap()
        };
        let p = Params::new(&DEF, &[("kib", "10"), ("files", "20")]);
        let result = Files::new_in(&p, mnt.path()).and_then(|mut f| f.create_all());
        let left = std::fs::read_dir(mnt.path()).unwrap().count();
        assert!(unmount().success());
        let e = result.unwrap_err().to_string();
        assert!(
            e.contains("the filesystem is full") && e.contains("tmpfs"),
            "{e}"
        );
        assert_eq!(left, 0, "files left on the full filesystem");
    }

    #[test]
    fn the_mount_of_a_directory_is_found() {
        let m = mount_of(Path::new("/proc/self")).unwrap();
        assert_eq!(m.fs, "proc");
        assert_eq!(m.source, "proc");
        assert!(!m.options.is_empty());
    }

    #[test]
    fn an_ext4_without_a_journal_is_told_by_its_journal_task() {
        assert!(without_journal("<none>\n"));
        assert!(!without_journal("412\n"));
        assert!(!without_journal(""));
    }

    #[test]
    fn a_pass_larger_than_the_filesystem_is_refused() {
        let p = Params::new(&DEF, &[("kib", "1024"), ("files", "100000")]);
        // 100 GB: more than /tmp has on any machine these tests run on.
        let e = check(&p).unwrap_err().to_string();
        assert!(e.contains("need 104857600000 bytes"), "{e}");
    }
}
