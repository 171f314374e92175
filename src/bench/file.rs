//! `file`: bulk reads and writes of a page-cached file — LEBench's small,
//! mid and big `read` and `write` (1, 10, 1,000 and 10,000 pages at offset 0
//! in one call) and lmbench's `bw_file_rd SIZE io_only` (the whole file in
//! 64 KiB reads, from the start each time).
//!
//! One op is one pass over a `pages`-page temporary file from offset 0
//! (pread/pwrite, so no seek is timed), in calls of `chunk` pages (0: the
//! whole file in one call, LEBench's way). The file is made in `$TMPDIR`
//! and read once before timing, so reads come from the page cache; writes
//! overwrite cached pages of a file already that long (nothing is synced).
//! Tables headline MB/s (MB = 10^6 B, lmbench's), the op column and the
//! mean give the time per pass (LEBench's latency per call when chunk=0).
//! The file is removed when the case ends, fails or is stopped; a file the
//! filesystem has no room for is refused before anything runs.
//!
//! lmbench's bw_file_rd sums every word it read (its `bread`), io_only
//! included: `sum=yes` does the same after each read (the bw_file_rd case);
//! LEBench does not touch the data (`sum=no`, the default).
//!
//! Differences on purpose: pread at offset 0 where lmbench calls lseek and
//! read; LEBench times one call per run, osbench a median of batches.
//! Left out: `open2close`, mmap reads, O_DIRECT.

use std::hint::black_box;
use std::io::Write;
use std::os::fd::AsRawFd;

use tempfile::NamedTempFile;

use super::fs::room_for;
use super::util::ring::WorkingSet;
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
            help: "read or write",
            kind: ParamKind::Choice(&["read", "write"]),
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
    ]),
    case_name: |p| {
        let chunk = match p.int("chunk") {
            0 => String::new(),
            c => format!("/{}K", c * page() as i64 / 1024),
        };
        let sum = if p.get("sum") == "yes" { "/sum" } else { "" };
        format!("{}/{}{chunk}{sum}", p.get("io"), size_text(p))
    },
    op: |p| {
        let calls = match p.int("chunk") {
            0 => "in one call".to_string(),
            c => format!("in {} B calls", c * page() as i64),
        };
        let sum = if p.get("sum") == "yes" && p.get("io") == "read" {
            ", each word read summed"
        } else {
            ""
        };
        format!(
            "{} all {} B of a page-cached temporary file from offset 0 ({}), {calls}{sum}",
            if p.get("io") == "read" {
                "pread() of"
            } else {
                "pwrite() over"
            },
            bytes(p),
            size_text(p)
        )
    },
    anchor: |p| match (p.get("io"), p.int("chunk"), p.get("sum")) {
        ("read", c, "yes") if c * page() as i64 == 64 * 1024 => {
            format!("bw_file_rd {} io_only", size_text(p).to_lowercase())
        }
        (io, _, _) => format!("LEBench {io} ({} pages)", p.int("pages")),
    },
    differs: "pread/pwrite at offset 0 (no lseek), the data not touched after a read; MB/s with MB = 10^6 B; a median of batches where LEBench times single calls and lmbench keeps its best.",
    bytes_per_op: |p| Some(bytes(p) as f64),
    setup,
    check: |p| room_for("file", bytes(p) as u64, 1),
    ..BenchDef::DEFAULTS
};

fn page() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 { n as usize } else { 4096 }
}

fn bytes(p: &Params) -> usize {
    p.int("pages") as usize * page()
}

/// "4K", "40K", "1M", "39M": the file size as lmbench writes sizes.
fn size_text(p: &Params) -> String {
    let kib = bytes(p) / 1024;
    if kib >= 1024 && kib.is_multiple_of(1024) {
        format!("{}M", kib / 1024)
    } else {
        format!("{kib}K")
    }
}

struct FileIo {
    file: NamedTempFile,
    buf: WorkingSet,
    len: usize,
    chunk: usize,
    read: bool,
    sum: bool,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    let len = bytes(p);
    let chunk = match p.int("chunk") as usize {
        0 => len,
        c => (c * page()).min(len),
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
    let mut f = FileIo {
        file,
        buf,
        len,
        chunk,
        read: p.get("io") == "read",
        sum: p.get("sum") == "yes",
    };
    f.pass()?; // every page cached (and, for writes, dirty) before timing
    Ok(Box::new(f))
}

impl FileIo {
    /// One pass over the whole file from offset 0.
    #[inline]
    fn pass(&mut self) -> Result<()> {
        let fd = self.file.as_file().as_raw_fd();
        let mut off = 0;
        while off < self.len {
            let want = self.chunk.min(self.len - off);
            let buf = self.buf.as_bytes_mut().as_mut_ptr();
            // SAFETY: `buf` holds at least `chunk` ≥ `want` bytes; `fd` is open.
            let n = unsafe {
                if self.read {
                    libc::pread(fd, buf.cast(), want, off as libc::off_t)
                } else {
                    libc::pwrite(fd, buf.cast(), want, off as libc::off_t)
                }
            };
            if n <= 0 {
                let e = std::io::Error::last_os_error();
                return Err(if n == 0 {
                    Error::Measure("the temporary file ended early".into())
                } else {
                    Error::io(
                        format!(
                            "file: {} the temporary file",
                            if self.read { "reading" } else { "writing" }
                        ),
                        e,
                    )
                });
            }
            if self.sum && self.read {
                black_box(sum_words(&self.buf.as_bytes_mut()[..n as usize]));
            }
            off += n as usize;
        }
        Ok(())
    }
}

/// The sum of the 8-byte words of `bytes` (lmbench's bread sums longs).
#[inline]
fn sum_words(bytes: &[u8]) -> u64 {
    bytes
        .chunks_exact(8)
        .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
        .fold(0, u64::wrapping_add)
}

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
    fn reads_and_writes_cover_the_file() {
        for io in ["read", "write"] {
            for (pages, chunk, sum) in [
                ("1", "0", "no"),
                ("10", "0", "yes"),
                ("10", "3", "no"),
                ("256", "16", "yes"),
            ] {
                let p = Params::new(
                    &DEF,
                    &[("io", io), ("pages", pages), ("chunk", chunk), ("sum", sum)],
                );
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
        let mut f = FileIo {
            file: NamedTempFile::new().unwrap(),
            buf: WorkingSet::with_bytes(3 * page()).unwrap(),
            len,
            chunk: 3 * page(),
            read: false,
            sum: false,
        };
        f.pass().unwrap();
        assert_eq!(f.file.as_file().metadata().unwrap().len(), len as u64);
    }

    #[test]
    fn words_are_summed() {
        let mut bytes = [0u8; 24];
        bytes[0] = 1;
        bytes[8] = 2;
        bytes[16] = 3;
        assert_eq!(sum_words(&bytes), 6);
    }

    #[test]
    fn names_follow_lmbench_sizes() {
        let name = |kv: &[(&str, &str)]| (DEF.case_name)(&Params::new(&DEF, kv));
        if page() == 4096 {
            assert_eq!(name(&[("pages", "10")]), "read/40K");
            let lmbench = [("pages", "256"), ("chunk", "16"), ("sum", "yes")];
            assert_eq!(name(&lmbench), "read/1M/64K/sum");
            let p = Params::new(&DEF, &lmbench);
            assert_eq!((DEF.anchor)(&p), "bw_file_rd 1m io_only");
        }
    }
}
