//! `file`: bulk reads and writes of a page-cached file — LEBench's small,
//! mid and big `read` and `write` (1, 10, 1,000 and 10,000 pages at offset 0
//! in one call), lmbench's `bw_file_rd SIZE io_only|open2close` (the whole
//! file in 64 KiB reads, from the start each time) and `bw_mmap_rd SIZE
//! mmap_only|open2close` (the whole file read through a shared mapping).
//!
//! One op is one pass over a `pages`-page temporary file from offset 0
//! (pread/pwrite, so no seek is timed), in calls of `chunk` pages (0: the
//! whole file in one call, LEBench's way); `io=mmap` reads the pass through
//! a read-only shared mapping of the file instead. `open2close=yes` opens
//! the file (and maps it) afresh in each pass and closes (and unmaps) it
//! after, as lmbench's open2close does. The file is made in `$TMPDIR` and
//! read once before timing, so reads come from the page cache; writes
//! overwrite cached pages of a file already that long (nothing is synced).
//! Tables headline MB/s (MB = 10^6 B, lmbench's), the op column and the
//! mean give the time per pass (LEBench's latency per call when chunk=0).
//! The file is removed when the case ends, fails or is stopped; a file the
//! filesystem has no room for is refused before anything runs.
//!
//! lmbench sums every word it read (its `bread`, a chain of scalar adds,
//! `util::words::bread`), io_only included: `sum=yes` does the same after
//! each read (the bw_file_rd cases), and mapped reads always sum (touching
//! the words is what reads a mapping); LEBench does not touch the data
//! (`sum=no`, the default).
//!
//! Differences on purpose: pread at offset 0 where lmbench calls lseek and
//! read; LEBench times one call per run, osbench a median of batches.
//! Left out: writes with `open2close`, O_DIRECT.

use std::ffi::CString;
use std::hint::black_box;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use tempfile::NamedTempFile;

use super::fs::room_for;
use super::util::page_size;
use super::util::ring::WorkingSet;
use super::util::words::bread;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "file",
    summary: "read or write a page-cached file from offset 0, by size (LEBench read/write; lmbench bw_file_rd io_only)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "io",
            help: "read or write calls, or reads through a shared mapping (bw_mmap_rd)",
            kind: ParamKind::Choice(&["read", "write", "mmap"]),
            default: "read",
        },
        ParamSpec {
            name: "pages",
            help: "file size in pages (LEBench: 1, 10, 1000, 10000)",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 20,
            },
            default: "1",
        },
        ParamSpec {
            name: "chunk",
            help: "pages per call; 0: the whole file in one call (LEBench), 16: 64 KiB calls (lmbench)",
            kind: ParamKind::Int {
                min: 0,
                max: 1 << 20,
            },
            default: "0",
        },
        ParamSpec {
            name: "sum",
            help: "sum the words read after each read (lmbench's bread)",
            kind: ParamKind::Choice(&["no", "yes"]),
            default: "no",
        },
        ParamSpec {
            name: "open2close",
            help: "open (and map) the file afresh in each pass, as lmbench's open2close",
            kind: ParamKind::Choice(&["no", "yes"]),
            default: "no",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("io", "read"), ("pages", "1")],
        &[("io", "read"), ("pages", "10")],
        &[("io", "read"), ("pages", "1000")],
        &[("io", "read"), ("pages", "10000")],
        &[("io", "write"), ("pages", "1")],
        &[("io", "write"), ("pages", "10")],
        &[("io", "write"), ("pages", "1000")],
        &[("io", "write"), ("pages", "10000")],
        &[
            ("io", "read"),
            ("pages", "256"),
            ("chunk", "16"),
            ("sum", "yes"),
        ],
        &[
            ("io", "read"),
            ("pages", "256"),
            ("chunk", "16"),
            ("sum", "yes"),
            ("open2close", "yes"),
        ],
        &[("io", "mmap"), ("pages", "256")],
        &[("io", "mmap"), ("pages", "256"), ("open2close", "yes")],
    ]),
    case_name: |p| {
        let chunk = match p.int("chunk") {
            _ if p.get("io") == "mmap" => String::new(),
            0 => String::new(),
            c => format!("/{}K", c * page_size() as i64 / 1024),
        };
        let sum = if p.get("sum") == "yes" && p.get("io") != "mmap" {
            "/sum"
        } else {
            ""
        };
        let reopen = if p.get("open2close") == "yes" {
            "/open2close"
        } else {
            ""
        };
        format!("{}/{}{chunk}{sum}{reopen}", p.get("io"), size_text(p))
    },
    op: describe_op,
    anchor: |p| {
        let reopen = if p.get("open2close") == "yes" {
            "open2close"
        } else {
            "io_only"
        };
        let size = size_text(p).to_lowercase();
        match (p.get("io"), p.int("chunk"), p.get("sum")) {
            ("mmap", _, _) if reopen == "io_only" => format!("bw_mmap_rd {size} mmap_only"),
            ("mmap", _, _) => format!("bw_mmap_rd {size} open2close"),
            ("read", c, "yes") if c * page_size() as i64 == 64 * 1024 => {
                format!("bw_file_rd {size} {reopen}")
            }
            (io, _, _) => format!("LEBench {io} ({} pages)", p.int("pages")),
        }
    },
    differs: "pread/pwrite at offset 0 (no lseek), the data not touched after a read unless sum=yes; MB/s with MB = 10^6 B; a median of batches where LEBench times single calls (lmbench takes the median of its 11 repetitions too).",
    bytes_per_op: |p| Some(bytes(p) as f64),
    setup,
    check,
    ..BenchDef::DEFAULTS
};

/// One pass in words: the calls, the file, what is done with the data.
fn describe_op(p: &Params) -> String {
    let reopen = if p.get("open2close") == "yes" {
        ", the file opened before and closed after"
    } else {
        ""
    };
    if p.get("io") == "mmap" {
        return format!(
            "every word of a page-cached temporary file of {} B ({}) summed through a shared read-only mapping{}",
            bytes(p),
            size_text(p),
            reopen
                .replace("opened", "opened and mapped")
                .replace("closed", "unmapped and closed")
        );
    }
    let calls = match p.int("chunk") {
        0 => "in one call".to_string(),
        c => format!("in {} B calls", c * page_size() as i64),
    };
    let sum = if p.get("sum") == "yes" && p.get("io") == "read" {
        ", each word read summed"
    } else {
        ""
    };
    format!(
        "{} all {} B of a page-cached temporary file from offset 0 ({}), {calls}{sum}{reopen}",
        if p.get("io") == "read" {
            "pread() of"
        } else {
            "pwrite() over"
        },
        bytes(p),
        size_text(p)
    )
}

/// Room for the file, and a case lmbench has.
fn check(p: &Params) -> Result<()> {
    if p.get("io") == "write" && p.get("open2close") == "yes" {
        return Err(Error::Usage(
            "file: open2close=yes is for reads (io=read or io=mmap, lmbench's bw_file_rd and \
             bw_mmap_rd); writes keep the file open"
                .into(),
        ));
    }
    room_for("file", bytes(p) as u64, 1)
}

fn bytes(p: &Params) -> usize {
    p.int("pages") as usize * page_size()
}

/// "4K", "40K", "1M", "39M": the file size as lmbench writes sizes.
fn size_text(p: &Params) -> String {
    super::membw::size_text((bytes(p) / 1024) as i64)
}

/// What a pass does with the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Io {
    Read,
    Write,
    Mmap,
}

struct FileIo {
    file: NamedTempFile,
    /// The file's path, for `open2close` passes (made once: a pass allocates nothing).
    path: CString,
    buf: WorkingSet,
    len: usize,
    chunk: usize,
    io: Io,
    sum: bool,
    reopen: bool,
    /// `io=mmap` without `open2close`: the file mapped once, read each pass.
    map: Option<Mapping>,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    let len = bytes(p);
    let io = match p.get("io") {
        "read" => Io::Read,
        "write" => Io::Write,
        _ => Io::Mmap,
    };
    let chunk = match p.int("chunk") as usize {
        _ if io == Io::Mmap => page_size(),
        0 => len,
        c => (c * page_size()).min(len),
    };
    let mut file =
        NamedTempFile::new().map_err(|e| Error::io("creating a temporary file in $TMPDIR", e))?;
    let dir = super::fs::describe_dir(&std::env::temp_dir());
    let mut buf = WorkingSet::with_bytes(chunk).map_err(|e| Error::io("mapping the buffer", e))?;
    buf.as_bytes_mut()[..chunk].fill(7);
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk);
        file.write_all(&buf.as_bytes_mut()[..n])
            .map_err(|e| Error::io(format!("file: filling the temporary file in {dir}"), e))?;
        left -= n;
    }
    let path = CString::new(file.path().as_os_str().as_bytes()).map_err(|_| {
        Error::Usage(format!(
            "file: the temporary file's path in {dir} holds a NUL byte"
        ))
    })?;
    let reopen = p.get("open2close") == "yes";
    let map = match (io, reopen) {
        (Io::Mmap, false) => Some(Mapping::of(file.as_file().as_raw_fd(), len)?),
        _ => None,
    };
    let mut f = FileIo {
        file,
        path,
        buf,
        len,
        chunk,
        io,
        sum: p.get("sum") == "yes",
        reopen,
        map,
    };
    f.pass()?; // every page cached (and, for writes, dirty) before timing
    Ok(Box::new(f))
}

impl FileIo {
    /// One pass over the whole file from offset 0.
    #[inline]
    fn pass(&mut self) -> Result<()> {
        let reopened = if self.reopen {
            Some(self.open()?)
        } else {
            None
        };
        let fd = reopened
            .as_ref()
            .map_or_else(|| self.file.as_file().as_raw_fd(), |f| f.as_raw_fd());
        if self.io == Io::Mmap {
            let fresh = match &self.map {
                Some(_) => None,
                None => Some(Mapping::of(fd, self.len)?),
            };
            let map = self.map.as_ref().or(fresh.as_ref()).expect("a mapping");
            black_box(bread(map.words()));
            // lmbench's order: the file closed, then the mapping unmapped.
            drop(reopened);
            drop(fresh);
            return Ok(());
        }
        let mut off = 0;
        while off < self.len {
            let n = self.call(fd, off)?;
            if self.sum && self.io == Io::Read {
                black_box(bread(&self.buf.as_words()[..n / 8]));
            }
            off += n;
        }
        Ok(())
    }

    /// One pread or pwrite of up to a chunk at `off`: the bytes it moved.
    #[inline]
    fn call(&mut self, fd: RawFd, off: usize) -> Result<usize> {
        let want = self.chunk.min(self.len - off);
        let read = self.io == Io::Read;
        let buf = self.buf.as_bytes_mut().as_mut_ptr();
        // SAFETY: `buf` holds at least `chunk` ≥ `want` bytes; `fd` is open.
        let n = unsafe {
            if read {
                libc::pread(fd, buf.cast(), want, off as libc::off_t)
            } else {
                libc::pwrite(fd, buf.cast(), want, off as libc::off_t)
            }
        };
        if n > 0 {
            return Ok(n as usize);
        }
        let e = std::io::Error::last_os_error();
        Err(if n == 0 {
            Error::Measure("the temporary file ended early".into())
        } else {
            let doing = if read { "reading" } else { "writing" };
            Error::io(format!("file: {doing} the temporary file"), e)
        })
    }

    /// The file opened afresh for reading (`open2close`).
    fn open(&self) -> Result<OwnedFd> {
        // SAFETY: a NUL-terminated path; the result is checked.
        let fd = unsafe { libc::open(self.path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io(
                "file: opening the temporary file again",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// A read-only shared mapping of a whole file, unmapped when dropped.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    /// `len` bytes of `fd` from offset 0, `MAP_SHARED` as lmbench maps.
    fn of(fd: RawFd, len: usize) -> Result<Self> {
        // SAFETY: a new mapping with no address hint; the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::io(
                "file: mapping the temporary file",
                std::io::Error::last_os_error(),
            ));
        }
        Ok(Self { ptr, len })
    }

    /// The mapped file as 8-byte words (a page-aligned mapping of whole pages).
    fn words(&self) -> &[u64] {
        // SAFETY: the live, page-aligned mapping of `len` readable bytes;
        // every bit pattern is a valid u64.
        unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len / 8) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `of`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

// SAFETY: the mapping is owned by the value and moves with it.
unsafe impl Send for Mapping {}

impl Workload for FileIo {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            self.pass()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_writes_and_mappings_cover_the_file() {
        for io in ["read", "write", "mmap"] {
            for (pages, chunk, sum, reopen) in [
                ("1", "0", "no", "no"),
                ("10", "0", "yes", "no"),
                ("10", "3", "no", "yes"),
                ("256", "16", "yes", "yes"),
            ] {
                let kv = [
                    ("io", io),
                    ("pages", pages),
                    ("chunk", chunk),
                    ("sum", sum),
                    ("open2close", reopen),
                ];
                let p = Params::new(&DEF, &kv);
                if io == "write" && reopen == "yes" {
                    assert!(
                        (DEF.check)(&p)
                            .unwrap_err()
                            .to_string()
                            .contains("for reads")
                    );
                    continue;
                }
                (DEF.check)(&p).unwrap();
                let mut w = setup(&p, &Placement::unpinned()).unwrap();
                w.run(3).unwrap();
            }
        }
    }

    #[test]
    fn a_write_pass_leaves_the_file_its_length() {
        let p = Params::new(&DEF, &[("io", "write"), ("pages", "10"), ("chunk", "3")]);
        let len = bytes(&p);
        // An empty file: one write pass of 3-page calls makes it 10 pages long.
        let file = NamedTempFile::new().unwrap();
        let mut f = FileIo {
            path: CString::new(file.path().as_os_str().as_bytes()).unwrap(),
            file,
            buf: WorkingSet::with_bytes(3 * page_size()).unwrap(),
            len,
            chunk: 3 * page_size(),
            io: Io::Write,
            sum: false,
            reopen: false,
            map: None,
        };
        f.pass().unwrap();
        assert_eq!(f.file.as_file().metadata().unwrap().len(), len as u64);
    }

    #[test]
    fn a_mapping_reads_the_files_words() {
        let mut file = NamedTempFile::new().unwrap();
        let mut page_of_words = vec![0u8; page_size()];
        page_of_words[..8].copy_from_slice(&5u64.to_ne_bytes());
        page_of_words[page_size() - 8..].copy_from_slice(&6u64.to_ne_bytes());
        file.write_all(&page_of_words).unwrap();
        let map = Mapping::of(file.as_file().as_raw_fd(), page_size()).unwrap();
        assert_eq!(bread(map.words()), 11);
    }

    #[test]
    fn names_follow_lmbench_sizes() {
        let name = |kv: &[(&str, &str)]| (DEF.case_name)(&Params::new(&DEF, kv));
        if page_size() == 4096 {
            assert_eq!(name(&[("pages", "10")]), "read/40K");
            let lmbench = [("pages", "256"), ("chunk", "16"), ("sum", "yes")];
            assert_eq!(name(&lmbench), "read/1M/64K/sum");
            let p = Params::new(&DEF, &lmbench);
            assert_eq!((DEF.anchor)(&p), "bw_file_rd 1m io_only");
            let mmap = Params::new(
                &DEF,
                &[("io", "mmap"), ("pages", "256"), ("open2close", "yes")],
            );
            assert_eq!((DEF.case_name)(&mmap), "mmap/1M/open2close");
            assert_eq!((DEF.anchor)(&mmap), "bw_mmap_rd 1m open2close");
        }
    }
}
