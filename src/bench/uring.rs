//! `uring`: io_uring against plain system calls, the ring's configuration
//! as the finding (fio's `io_uring` vs `psync` engines, its `t/io_uring`,
//! liburing's examples). Unit: ns per operation.
//!
//! - `nop`: `batch` IORING_OP_NOP entries submitted with one
//!   io_uring_enter and all their completions reaped (per op = one no-op, so
//!   batch 1, 16 and 256 show what batching saves per entry);
//! - `read`: `batch` 4 KiB reads of one page-cached file in flight per
//!   submission (fio's iodepth), each at the next offset of a fixed
//!   pseudo-random sequence of 4 KiB-aligned offsets;
//! - `pread`: the same reads, the same file and the same offsets, one
//!   pread(2) each (fio's `psync`), so the ratio is side by side.
//!
//! The ring's configuration is parameters: `sqpoll=on` (a kernel thread
//! polls the submission queue, IORING_SETUP_SQPOLL), `files=registered`
//! (IORING_REGISTER_FILES, the read names the fixed file), `buffers=registered`
//! (IORING_REGISTER_BUFFERS and IORING_OP_READ_FIXED), `completion=polled`
//! (IORING_SETUP_IOPOLL on an O_DIRECT file: the device is polled instead of
//! interrupting; refused with the reason where the file system or device
//! cannot, e.g. tmpfs — then set TMPDIR to a directory on a block device
//! whose driver polls).
//!
//! The ring comes from the `io-uring` crate (tokio-rs's binding, liburing's
//! model without a runtime), not raw mmaps of our own. Where the kernel
//! refuses io_uring (`kernel.io_uring_disabled` = 2, or 1 without the
//! group, ENOSYS, EPERM from a seccomp filter) the family is skipped with
//! the reason, never measured as zero. ENOMEM from setup or buffer
//! registration is the locked-memory limit (RLIMIT_MEMLOCK): a message names
//! its value and how to raise it.
//!
//! Left out: writes, O_DIRECT reads with interrupts, linked and multishot
//! operations, fio's file layout (one file of `file_mib` MiB here, read
//! through once so it is page-cached before timing).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;

use io_uring::{IoUring, opcode, squeue, types};

use super::fault::Region;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::Placement;
use crate::rng::SplitMix64;

/// The size of one read, as fio's `--bs=4k`.
const BLOCK: usize = 4096;
/// Offsets in the fixed pseudo-random sequence the reads cycle through.
const OFFSETS: usize = 4096;
/// The kernel's largest submission queue (IORING_MAX_ENTRIES).
pub const MAX_ENTRIES: i64 = 32768;

pub static DEF: BenchDef = BenchDef {
    name: "uring",
    summary: "io_uring no-op round trips and 4 KiB page-cache reads vs pread (fio io_uring vs psync, t/io_uring)",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "case",
            help: "nop: no-op round trips; read: 4 KiB reads through the ring; pread: the same reads by pread(2)",
            kind: ParamKind::Choice(&["nop", "read", "pread"]),
            default: "nop",
        },
        ParamSpec {
            name: "batch",
            help: "entries submitted per io_uring_enter (fio's iodepth); the ring has this many",
            kind: ParamKind::Int {
                min: 1,
                max: MAX_ENTRIES,
            },
            default: "1",
        },
        ParamSpec {
            name: "sqpoll",
            help: "a kernel thread polls the submission queue (IORING_SETUP_SQPOLL)",
            kind: ParamKind::Choice(&["off", "on"]),
            default: "off",
        },
        ParamSpec {
            name: "files",
            help: "read: the file as a registered (fixed) file or a plain descriptor",
            kind: ParamKind::Choice(&["plain", "registered"]),
            default: "plain",
        },
        ParamSpec {
            name: "buffers",
            help: "read: registered buffers (READ_FIXED) or plain ones",
            kind: ParamKind::Choice(&["plain", "registered"]),
            default: "plain",
        },
        ParamSpec {
            name: "completion",
            help: "read: interrupt-driven, or polled (IORING_SETUP_IOPOLL, O_DIRECT) where the device allows",
            kind: ParamKind::Choice(&["interrupt", "polled"]),
            default: "interrupt",
        },
        ParamSpec {
            name: "file_mib",
            help: "read, pread: size of the page-cached file read (MiB)",
            kind: ParamKind::Int { min: 1, max: 1024 },
            default: "16",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("case", "nop"), ("batch", "1")],
        &[("case", "nop"), ("batch", "16")],
        &[("case", "nop"), ("batch", "256")],
        &[("case", "read")],
        &[("case", "read"), ("batch", "32")],
        &[("case", "pread")],
    ]),
    case_name,
    op: |p| match p.get("case") {
        "nop" => "one IORING_OP_NOP submitted and completed (a share of one io_uring_enter)".into(),
        "read" => "one 4 KiB read of a page-cached file through the ring".into(),
        _ => "one 4 KiB pread(2) of a page-cached file".into(),
    },
    anchor: |p| match p.get("case") {
        "nop" => format!("liburing nop loop, batch {}", p.int("batch")),
        "read" => format!(
            "fio --ioengine=io_uring --rw=randread --bs=4k --iodepth={}{}{}",
            p.int("batch"),
            if p.get("sqpoll") == "on" {
                " --sqthread_poll=1"
            } else {
                ""
            },
            if p.get("buffers") == "registered" {
                " --fixedbufs=1"
            } else {
                ""
            },
        ),
        _ => "fio --ioengine=psync --rw=randread --bs=4k".into(),
    },
    differs: "ns per operation from 10 ms batches of whole submissions (fio reports IOPS and latency percentiles over a timed run); one page-cached file of file_mib MiB read at a fixed pseudo-random sequence of 4 KiB offsets, the same for read and pread (fio draws its own). fio does work of its own per I/O (statistics, clock reads, its random map): on a page-cached file written in 1 MiB writes, as osbench writes its own, fio read 0.62–0.68 of osbench's MB/s (Intel, 6 Dec), its user time per 4 KiB pread 160–245 ns against osbench's 39 ns.",
    ops_per_iter: |p| match p.get("case") {
        "pread" => 1.0,
        _ => p.int("batch") as f64,
    },
    bytes_per_op: |p| (p.get("case") != "nop").then_some(BLOCK as f64),
    setup,
    check,
    unavailable: |_| unavailable(),
    ..BenchDef::DEFAULTS
};

fn case_name(p: &Params) -> String {
    let case = p.get("case");
    if case == "pread" {
        return case.to_string();
    }
    let mut name = format!("{case}/{}", p.int("batch"));
    for (key, on, tag) in [
        ("sqpoll", "on", "sqpoll"),
        ("files", "registered", "regfiles"),
        ("buffers", "registered", "regbufs"),
        ("completion", "polled", "iopoll"),
    ] {
        if p.get(key) == on {
            name.push('/');
            name.push_str(tag);
        }
    }
    name
}

/// Refuses parameters that would change nothing in the case asked for
/// (exit 2 before measuring), and polled completion the file cannot have.
fn check(p: &Params) -> Result<()> {
    let case = p.get("case");
    let defaults = [
        ("batch", "1"),
        ("sqpoll", "off"),
        ("files", "plain"),
        ("buffers", "plain"),
        ("completion", "interrupt"),
    ];
    let meaningless: &[&str] = match case {
        "pread" => &["batch", "sqpoll", "files", "buffers", "completion"],
        "nop" => &["files", "buffers", "completion"],
        _ => &[],
    };
    for (key, default) in defaults {
        if meaningless.contains(&key) && p.get(key) != default {
            return Err(Error::Usage(format!(
                "uring:case={case} takes no {key}={} (it would change nothing): drop it, or use case=read",
                p.get(key)
            )));
        }
    }
    // The ring the case will set up, tried now: a limit (ENOMEM under
    // RLIMIT_MEMLOCK) stops the run before anything is measured.
    if unavailable().is_none() && case != "pread" {
        if p.get("completion") == "polled" {
            let file = TestFile::new(p.int("file_mib") as usize)?;
            Ring::new(p, &file)?;
        } else {
            let ring = nop_ring(p)?;
            if p.get("buffers") == "registered" {
                let region = Region::anonymous(ring.batch * BLOCK)
                    .map_err(|e| super::fault::map_error("mapping the read buffers", e))?;
                register_buffers(&ring.ring, &region, ring.batch)?;
            }
        }
    }
    Ok(())
}

/// Registers `batch` 4 KiB buffers of `buffers` with `ring`.
fn register_buffers(ring: &IoUring, buffers: &Region, batch: usize) -> Result<()> {
    let iov: Vec<libc::iovec> = (0..batch)
        .map(|i| libc::iovec {
            // SAFETY: inside the mapping of batch * BLOCK bytes.
            iov_base: unsafe { buffers.ptr.add(i * BLOCK) }.cast(),
            iov_len: BLOCK,
        })
        .collect();
    // SAFETY: the buffers stay mapped as long as the ring: callers drop
    // the ring first (a Ring's field order) or together with the region.
    unsafe { ring.submitter().register_buffers(&iov) }
        .map_err(|e| ring_error("registering the read buffers with the ring", e))
}

/// Why this kernel refuses io_uring, if it does: a ring of one entry is
/// set up and dropped.
pub fn unavailable() -> Option<String> {
    let e = IoUring::<squeue::Entry>::new(1).err()?;
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .map(|v| v.trim().to_string());
    let why = match (e.raw_os_error(), sysctl.as_deref()) {
        (Some(libc::ENOMEM), _) => return None, // a limit: setup says it with the value
        (Some(libc::EPERM), Some("2")) => {
            "io_uring is disabled (kernel.io_uring_disabled = 2; `sysctl kernel.io_uring_disabled=0` enables it)".to_string()
        }
        (Some(libc::EPERM), Some("1")) => "io_uring is restricted (kernel.io_uring_disabled = 1) to the group in kernel.io_uring_group, which this user is not in".to_string(),
        (Some(libc::ENOSYS), _) => "this kernel has no io_uring (io_uring_setup: ENOSYS; Linux 5.1 or later, CONFIG_IO_URING)".to_string(),
        (Some(libc::EPERM), _) => "io_uring_setup is denied (EPERM, kernel.io_uring_disabled = 0: a seccomp filter or a security module forbids it)".to_string(),
        _ => format!("io_uring_setup failed: {e}"),
    };
    Some(why)
}

/// An io_uring setup or registration error: ENOMEM is the locked-memory
/// limit, named with its value and how to raise it.
fn ring_error(what: &str, e: io::Error) -> Error {
    let hint = match e.raw_os_error() {
        Some(libc::ENOMEM) => format!(
            ": the ring's memory is limited by RLIMIT_MEMLOCK (`ulimit -l`, now {}): raise it \
             (`ulimit -l unlimited`, or memlock in /etc/security/limits.conf) or use a smaller batch",
            crate::env::process::limit_text(libc::RLIMIT_MEMLOCK)
        ),
        Some(libc::EINVAL) => format!(
            ": the kernel refused the ring's size or flags (at most {MAX_ENTRIES} entries; SQPOLL and IOPOLL need Linux 5.11 and 5.1)"
        ),
        _ => String::new(),
    };
    Error::io(format!("{what}{hint}"), e)
}

/// The page-cached file the reads read, removed when dropped.
struct TestFile {
    temp: tempfile::NamedTempFile,
    bytes: usize,
}

impl TestFile {
    fn new(mib: usize) -> Result<Self> {
        let ctx =
            "writing the file uring reads to TMPDIR (set TMPDIR to a writable directory with room)";
        let mut temp = tempfile::Builder::new()
            .prefix("osbench-uring-")
            .tempfile()
            .map_err(|e| Error::io(ctx, e))?;
        let chunk = vec![0x5au8; 1 << 20];
        for _ in 0..mib {
            temp.write_all(&chunk).map_err(|e| Error::io(ctx, e))?;
        }
        temp.as_file().sync_all().map_err(|e| Error::io(ctx, e))?;
        Ok(Self {
            temp,
            bytes: mib << 20,
        })
    }

    /// The file opened for reading, O_DIRECT when `direct`.
    fn open(&self, direct: bool) -> Result<File> {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(if direct { libc::O_DIRECT } else { 0 })
            .open(self.temp.path())
            .map_err(|e| {
                Error::io(
                    format!(
                        "opening {}{} (polled completion needs O_DIRECT: set TMPDIR to a directory on a block device)",
                        self.temp.path().display(),
                        if direct { " with O_DIRECT" } else { "" }
                    ),
                    e,
                )
            })
    }

    /// The fixed sequence of 4 KiB-aligned offsets every case reads.
    fn offsets(&self) -> Vec<u64> {
        let mut rng = SplitMix64::new(0x05b3_ec41);
        let blocks = self.bytes / BLOCK;
        (0..OFFSETS)
            .map(|_| (rng.below(blocks) * BLOCK) as u64)
            .collect()
    }
}

/// A ring set up as the parameters say, with what its reads need.
struct Ring {
    ring: IoUring,
    batch: usize,
    file: File,
    /// `batch` 4 KiB page-aligned buffers, one per entry in flight.
    buffers: Region,
    fixed_file: bool,
    fixed_buffers: bool,
}

impl Ring {
    fn new(p: &Params, test: &TestFile) -> Result<Self> {
        let batch = p.int("batch") as usize;
        let polled = p.get("completion") == "polled";
        let mut builder = IoUring::builder();
        if p.get("sqpoll") == "on" {
            builder.setup_sqpoll(1000);
        }
        if polled {
            builder.setup_iopoll();
        }
        let ring = builder
            .build(batch as u32)
            .map_err(|e| ring_error(&format!("setting up an io_uring of {batch} entries"), e))?;
        let file = test.open(polled)?;
        let buffers = Region::anonymous(batch * BLOCK)
            .map_err(|e| super::fault::map_error("mapping the read buffers", e))?;
        let fixed_file = p.get("files") == "registered";
        if fixed_file {
            ring.submitter()
                .register_files(&[file.as_raw_fd()])
                .map_err(|e| ring_error("registering the file with the ring", e))?;
        }
        let fixed_buffers = p.get("buffers") == "registered";
        if fixed_buffers {
            register_buffers(&ring, &buffers, batch)?;
        }
        let mut ring = Self {
            ring,
            batch,
            file,
            buffers,
            fixed_file,
            fixed_buffers,
        };
        if polled {
            ring.read(&[0]).map_err(|e| {
                Error::Usage(format!(
                    "uring:completion=polled is refused here: a polled O_DIRECT read of {} failed ({e}); \
                     the file system or its device cannot poll (tmpfs, a virtual disk without poll queues): \
                     set TMPDIR to a directory on an NVMe device with poll queues (nvme.poll_queues)",
                    test.temp.path().display()
                ))
            })?;
        }
        Ok(ring)
    }

    /// One submission of `batch` no-ops, and all their completions.
    fn nops(&mut self) -> io::Result<()> {
        let nop = opcode::Nop::new().build();
        self.wait_for_an_empty_queue()?;
        {
            let mut sq = self.ring.submission();
            for _ in 0..self.batch {
                // SAFETY: a no-op refers to no memory.
                unsafe { sq.push(&nop) }.map_err(|_| io::Error::other("submission queue full"))?;
            }
        }
        self.complete(self.batch)
    }

    /// One submission of a read at each of `offsets` (at most `batch`), and
    /// all their completions.
    fn read(&mut self, offsets: &[u64]) -> io::Result<()> {
        let fd = self.file.as_raw_fd();
        self.wait_for_an_empty_queue()?;
        {
            let mut sq = self.ring.submission();
            for (i, &off) in offsets.iter().enumerate() {
                // SAFETY: inside the mapping of batch * BLOCK bytes (i < batch).
                let buf = unsafe { self.buffers.ptr.add(i * BLOCK) };
                let entry = match (self.fixed_file, self.fixed_buffers) {
                    (true, true) => {
                        opcode::ReadFixed::new(types::Fixed(0), buf, BLOCK as u32, i as u16)
                            .offset(off)
                            .build()
                    }
                    (false, true) => {
                        opcode::ReadFixed::new(types::Fd(fd), buf, BLOCK as u32, i as u16)
                            .offset(off)
                            .build()
                    }
                    (true, false) => opcode::Read::new(types::Fixed(0), buf, BLOCK as u32)
                        .offset(off)
                        .build(),
                    (false, false) => opcode::Read::new(types::Fd(fd), buf, BLOCK as u32)
                        .offset(off)
                        .build(),
                };
                // SAFETY: the buffer and file outlive the read: `complete`
                // reaps every entry before this returns.
                unsafe { sq.push(&entry) }
                    .map_err(|_| io::Error::other("submission queue full"))?;
            }
        }
        self.complete(offsets.len())
    }

    /// Waits until the kernel has taken every earlier entry off the
    /// submission queue. Without SQPOLL `submit` consumed them already; with
    /// it the polling thread posts an entry's completion before it moves the
    /// queue's head past it, so a batch can find the queue still full just
    /// after its predecessor's completions were reaped.
    fn wait_for_an_empty_queue(&mut self) -> io::Result<()> {
        while !self.ring.submission().is_empty() {
            if self.ring.submission().is_full() {
                self.ring.submitter().squeue_wait()?;
            } else {
                std::hint::spin_loop();
            }
        }
        Ok(())
    }

    /// Submits the `want` entries queued and reaps their completions,
    /// checking each (counted here: an SQPOLL thread may already have
    /// taken some off the queue).
    fn complete(&mut self, want: usize) -> io::Result<()> {
        self.ring.submit_and_wait(want)?;
        let mut seen = 0;
        while seen < want {
            for cqe in self.ring.completion() {
                seen += 1;
                if cqe.result() < 0 {
                    return Err(io::Error::from_raw_os_error(-cqe.result()));
                }
            }
            if seen < want {
                self.ring.submit_and_wait(want - seen)?;
            }
        }
        Ok(())
    }
}

enum Case {
    Nop(Ring),
    Read(Ring, Vec<u64>),
    Pread(File, Vec<u64>, Region),
}

struct Uring {
    case: Case,
    /// The next offset of the sequence.
    next: usize,
    /// Removed after the ring and the descriptors (field order).
    _file: Option<TestFile>,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    let (case, file) = match p.get("case") {
        "nop" => (Case::Nop(nop_ring(p)?), None),
        "read" => {
            let test = TestFile::new(p.int("file_mib") as usize)?;
            let mut ring = Ring::new(p, &test)?;
            let offsets = test.offsets();
            // Reads the whole file once, untimed: the case reads the page cache.
            for chunk in (0..test.bytes as u64)
                .step_by(BLOCK)
                .collect::<Vec<_>>()
                .chunks(ring.batch)
            {
                ring.read(chunk)
                    .map_err(|e| Error::io("reading the file through the ring", e))?;
            }
            (Case::Read(ring, offsets), Some(test))
        }
        _ => {
            let test = TestFile::new(p.int("file_mib") as usize)?;
            let file = test.open(false)?;
            let buf = Region::anonymous(BLOCK)
                .map_err(|e| super::fault::map_error("mapping the read buffer", e))?;
            // Reads the whole file once, untimed: the case reads the page cache.
            let mut whole = Case::Pread(file, (0..test.bytes as u64).step_by(BLOCK).collect(), buf);
            run_case(&mut whole, &mut 0, (test.bytes / BLOCK) as u64)?;
            if let Case::Pread(_, offsets, _) = &mut whole {
                *offsets = test.offsets();
            }
            (whole, Some(test))
        }
    };
    Ok(Box::new(Uring {
        case,
        next: 0,
        _file: file,
    }))
}

/// A ring for no-ops: no file, no buffers.
fn nop_ring(p: &Params) -> Result<Ring> {
    let batch = p.int("batch") as usize;
    let mut builder = IoUring::builder();
    if p.get("sqpoll") == "on" {
        builder.setup_sqpoll(1000);
    }
    let ring = builder
        .build(batch as u32)
        .map_err(|e| ring_error(&format!("setting up an io_uring of {batch} entries"), e))?;
    Ok(Ring {
        ring,
        batch,
        file: File::open("/dev/null").map_err(|e| Error::io("opening /dev/null", e))?,
        buffers: Region::anonymous(BLOCK)
            .map_err(|e| super::fault::map_error("mapping a buffer", e))?,
        fixed_file: false,
        fixed_buffers: false,
    })
}

/// `iters` iterations of `case` from offset `next` on.
fn run_case(case: &mut Case, next: &mut usize, iters: u64) -> Result<()> {
    let failed = |e| Error::io("a timed io_uring operation failed", e);
    match case {
        Case::Nop(ring) => {
            for _ in 0..iters {
                ring.nops().map_err(failed)?;
            }
        }
        Case::Read(ring, offsets) => {
            let batch = ring.batch;
            for _ in 0..iters {
                if *next + batch > offsets.len() {
                    *next = 0;
                }
                ring.read(&offsets[*next..(*next + batch).min(offsets.len())])
                    .map_err(failed)?;
                *next += batch;
            }
        }
        Case::Pread(file, offsets, buf) => {
            let fd = file.as_raw_fd();
            for _ in 0..iters {
                *next %= offsets.len();
                // SAFETY: `buf` is a live mapping of BLOCK bytes; fd is open.
                let n = unsafe { libc::pread(fd, buf.ptr.cast(), BLOCK, offsets[*next] as i64) };
                if n != BLOCK as isize {
                    return Err(Error::last_os("a timed pread(2) failed"));
                }
                *next += 1;
            }
        }
    }
    Ok(())
}

impl Workload for Uring {
    fn run(&mut self, iters: u64) -> Result<()> {
        run_case(&mut self.case, &mut self.next, iters)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(fixed: &[(&str, &str)]) -> Params {
        Params::new(&DEF, fixed)
    }

    #[test]
    fn every_ring_configuration_runs_where_the_kernel_allows() {
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
        for fixed in [
            &[("case", "nop"), ("batch", "16")][..],
            &[("case", "nop"), ("sqpoll", "on")],
            &[("case", "read"), ("batch", "4"), ("file_mib", "1")],
            &[
                ("case", "read"),
                ("files", "registered"),
                ("buffers", "registered"),
                ("file_mib", "1"),
            ],
            &[("case", "read"), ("sqpoll", "on"), ("file_mib", "1")],
            &[("case", "pread"), ("file_mib", "1")],
        ] {
            let p = params(fixed);
            check(&p).unwrap();
            let mut w = setup(&p, &Placement::unpinned()).unwrap();
            // Many batches back to back: an SQPOLL ring once found its queue
            // still full from the batch before (its head moves after the
            // completions are posted).
            w.run(500).unwrap();
            w.teardown().unwrap();
        }
    }

    #[test]
    fn parameters_that_change_nothing_are_refused() {
        let e = check(&params(&[("case", "pread"), ("batch", "8")])).unwrap_err();
        assert!(e.to_string().contains("takes no batch=8"), "{e}");
        let e = check(&params(&[("case", "nop"), ("buffers", "registered")])).unwrap_err();
        assert!(e.to_string().contains("case=read"), "{e}");
    }

    #[test]
    fn names_show_the_configuration() {
        let p = params(&[
            ("case", "read"),
            ("batch", "32"),
            ("sqpoll", "on"),
            ("files", "registered"),
        ]);
        assert_eq!(case_name(&p), "read/32/sqpoll/regfiles");
        assert_eq!(case_name(&params(&[("case", "pread")])), "pread");
        assert!((DEF.anchor)(&p).contains("--iodepth=32 --sqthread_poll=1"));
    }

    #[test]
    fn memlock_errors_name_the_limit_and_its_value() {
        let e = ring_error("setting up", io::Error::from_raw_os_error(libc::ENOMEM)).to_string();
        assert!(
            e.contains("RLIMIT_MEMLOCK") && e.contains("ulimit -l"),
            "{e}"
        );
        assert!(e.contains("now "), "{e}");
    }
}
