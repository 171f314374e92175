//! osbench's own loads, each a few forked children of osbench (one process
//! group, named `osbench-load`) that run until they are killed and count
//! what they do in a shared, anonymous mapping — one slot per task, written
//! by that task alone, read by osbench at the stop:
//!
//! - `hackbench:G` — hackbench's shape (rt-tests' `hackbench -g G`, 20
//!   senders and 20 receivers per group over AF_UNIX stream socket pairs,
//!   100-byte messages) but endless: each sender writes to each receiver of
//!   its group round robin, each receiver reads; counted: messages received.
//!   Unlike hackbench there is no fixed number of loops and no timing.
//! - `spin:N` — N tasks in a dependent integer loop; counted: iterations.
//! - `memstream:MiB` — one task copying a MiB buffer to another (two
//!   mappings, touched first); counted: bytes copied.
//! - `iostream[:DIR]` — one task writing 16 MiB to a file in DIR (default:
//!   the temporary directory; made by osbench unnamed, `O_TMPFILE`, or
//!   unlinked at once, so nothing is left however osbench ends),
//!   `fdatasync`, dropping its pages
//!   (`POSIX_FADV_DONTNEED`) and reading them back; counted: bytes written
//!   and read. A file system that ignores the advice serves the reads from
//!   the page cache.
//!
//! The bodies run in a fork of a possibly threaded osbench: system calls
//! only, no locks, no allocation. Left out: threads as tasks, hackbench's
//! pipes (`-p`) and its other group sizes.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::group::{cpu_set, set_affinity};
use crate::document::{LoadKind, LoadSpec};
use crate::measure::supervise::{Supervisor, map_anonymous};
use crate::measure::warden;

/// Receivers (and senders) per hackbench group, as hackbench's default.
const FDS: usize = 20;
/// Bytes per message, as hackbench's default.
const MESSAGE: usize = 100;
/// Spin iterations between two updates of the counter.
const SPIN_CHUNK: u64 = 1 << 16;
/// Bytes an I/O streamer writes (then syncs and reads back) per pass.
const IO_PASS: usize = 16 << 20;
/// Bytes per write or read of an I/O streamer.
const IO_BLOCK: usize = 1 << 20;

/// Slot 0: tasks that have started; slot 1 + i: task i's count.
pub(super) struct Counters {
    base: *mut AtomicU64,
    slots: usize,
}

// SAFETY: the mapping is shared memory of atomics, valid until drop.
unsafe impl Send for Counters {}

impl Counters {
    fn new(tasks: usize) -> Result<Self, String> {
        let slots = tasks + 1;
        let bytes = slots * std::mem::size_of::<AtomicU64>();
        let base = map(bytes, libc::MAP_SHARED)
            .ok_or_else(|| format!("mapping its counters: {}", std::io::Error::last_os_error()))?;
        Ok(Self {
            base: base.cast(),
            slots,
        })
    }

    fn slot(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.slots);
        // SAFETY: `i` is within the mapping, which is zeroed (a valid
        // AtomicU64) and lives as long as `self`.
        unsafe { &*self.base.add(i) }
    }

    /// The sum of every task's count.
    pub(super) fn total(&self) -> u64 {
        (1..self.slots)
            .map(|i| self.slot(i).load(Ordering::Relaxed))
            .sum()
    }

    /// Waits until every task has started, or `limit`.
    pub(super) fn await_ready(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.slot(0).load(Ordering::Acquire) < (self.slots - 1) as u64
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Counters {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping, of the size it was made with.
        unsafe {
            libc::munmap(
                self.base.cast(),
                self.slots * std::mem::size_of::<AtomicU64>(),
            )
        };
    }
}

/// What a started builtin load is made of.
pub(super) type Started = (Supervisor, Counters);

/// Forks the tasks of builtin load `spec`; why not, when it cannot.
pub(super) fn start(spec: &LoadSpec) -> Result<Started, String> {
    let cpus = match spec.cpus.is_empty() {
        true => None,
        false => Some(cpu_set(&spec.cpus)?),
    };
    let mut sup = Supervisor::new("load");
    let forked =
        |sup: &mut Supervisor, counters: &Counters, i: usize, keep: &[RawFd], body: Body| {
            let slot = counters.slot(i + 1) as *const AtomicU64 as usize;
            let ready = counters.slot(0) as *const AtomicU64 as usize;
            sup.fork(None, keep, move || {
                // SAFETY: both point into the shared mapping, which the child inherited.
                let (slot, ready) =
                    unsafe { (&*(slot as *const AtomicU64), &*(ready as *const AtomicU64)) };
                if let Some(set) = &cpus
                    && set_affinity(set).is_err()
                {
                    return 2;
                }
                ready.fetch_add(1, Ordering::Release);
                body.run(slot)
            })
            .map_err(|e| e.to_string())
        };
    let counters = fork_all(&spec.kind, &mut sup, &forked)?;
    if let Some(pgid) = sup.pgid() {
        warden::guard(pgid);
    }
    Ok((sup, counters))
}

/// Forks every task of a builtin load of `kind` with `forked`; their counters.
fn fork_all(kind: &LoadKind, sup: &mut Supervisor, forked: &Fork) -> Result<Counters, String> {
    let counters = match kind {
        LoadKind::Hackbench { groups } => {
            let counters = Counters::new(groups * FDS * 2)?;
            for g in 0..*groups {
                hackbench_group(sup, &counters, g, forked)?;
            }
            counters
        }
        LoadKind::Spin { tasks } => {
            let counters = Counters::new(*tasks)?;
            for i in 0..*tasks {
                forked(sup, &counters, i, &[], Body::Spin)?;
            }
            counters
        }
        LoadKind::MemStream { mib } => {
            let counters = Counters::new(1)?;
            forked(sup, &counters, 0, &[], Body::Mem(mib << 20))?;
            counters
        }
        LoadKind::IoStream { dir } => {
            let counters = Counters::new(1)?;
            let file = scratch_file(dir.as_deref())?;
            forked(
                sup,
                &counters,
                0,
                &[file.as_raw_fd()],
                Body::Io(file.as_raw_fd()),
            )?;
            counters
        }
        LoadKind::Cmd { .. } => return Err("a command is not a builtin load".into()),
    };
    Ok(counters)
}

type Fork<'a> =
    dyn Fn(&mut Supervisor, &Counters, usize, &[RawFd], Body) -> Result<libc::pid_t, String> + 'a;

/// Forks one hackbench group: its receivers (tasks `g*40 …`) and senders.
fn hackbench_group(
    sup: &mut Supervisor,
    counters: &Counters,
    g: usize,
    forked: &Fork,
) -> Result<(), String> {
    let mut reads = Vec::with_capacity(FDS);
    let mut writes = Vec::with_capacity(FDS);
    for _ in 0..FDS {
        let (r, w) = socketpair()?;
        reads.push(r);
        writes.push(w);
    }
    let first = g * FDS * 2;
    for (i, r) in reads.iter().enumerate() {
        forked(
            sup,
            counters,
            first + i,
            &[r.as_raw_fd()],
            Body::Receive(r.as_raw_fd()),
        )?;
    }
    let ends: Vec<RawFd> = writes.iter().map(AsRawFd::as_raw_fd).collect();
    let mut sends = [0; FDS];
    sends.copy_from_slice(&ends);
    for i in 0..FDS {
        forked(sup, counters, first + FDS + i, &ends, Body::Send(sends))?;
    }
    Ok(()) // the parent's copies of the ends close here
}

fn socketpair() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills a two-element array we own.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!(
            "making its socket pairs: {e} (raise `ulimit -n` for many groups)"
        ));
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// An unnamed file in `dir` (default: the temporary directory).
fn scratch_file(dir: Option<&str>) -> Result<std::fs::File, String> {
    let base = dir.map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    tempfile::tempfile_in(&base).map_err(|e| {
        format!(
            "making a file in {}: {e} (give a writable directory: iostream:DIR)",
            base.display()
        )
    })
}

/// What one task does.
#[derive(Clone, Copy)]
enum Body {
    Spin,
    Mem(usize),
    Io(RawFd),
    Receive(RawFd),
    Send([RawFd; FDS]),
}

impl Body {
    /// Runs until killed (or a failure: its exit status).
    fn run(self, count: &AtomicU64) -> i32 {
        match self {
            Body::Spin => spin(count),
            Body::Mem(bytes) => mem(bytes, count),
            Body::Io(fd) => io(fd, count),
            Body::Receive(fd) => receive(fd, count),
            Body::Send(fds) => send(&fds),
        }
    }
}

fn spin(count: &AtomicU64) -> i32 {
    let mut x = 1u64;
    loop {
        for _ in 0..SPIN_CHUNK {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        count.fetch_add(SPIN_CHUNK, Ordering::Relaxed);
    }
}

/// A fresh anonymous mapping of `bytes`, zeroed, `sharing` MAP_SHARED or
/// MAP_PRIVATE (a child's buffer: no allocator).
fn map(bytes: usize, sharing: libc::c_int) -> Option<*mut u8> {
    map_anonymous(bytes, sharing).ok().map(|p| p.cast())
}

fn mem(bytes: usize, count: &AtomicU64) -> i32 {
    let (Some(src), Some(dst)) = (map(bytes, libc::MAP_PRIVATE), map(bytes, libc::MAP_PRIVATE))
    else {
        return 3;
    };
    // SAFETY: both mappings are `bytes` long, writable and disjoint.
    unsafe { std::ptr::write_bytes(src, 1, bytes) };
    loop {
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
        count.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

fn io(fd: RawFd, count: &AtomicU64) -> i32 {
    let Some(block) = map(IO_BLOCK, libc::MAP_PRIVATE) else {
        return 3;
    };
    loop {
        for (read, step) in [(false, 0), (true, 1)] {
            let mut off = 0;
            while off < IO_PASS {
                // SAFETY: reading into or writing from our mapping, of its length.
                let n = unsafe {
                    match read {
                        false => libc::pwrite(fd, block.cast(), IO_BLOCK, off as i64),
                        true => libc::pread(fd, block.cast(), IO_BLOCK, off as i64),
                    }
                };
                if n <= 0 {
                    return 4 + step; // a full disk (or an error): the load ends, and is reported
                }
                off += n as usize;
                count.fetch_add(n as u64, Ordering::Relaxed);
            }
            if !read {
                // SAFETY: system calls on our own descriptor.
                unsafe {
                    libc::fdatasync(fd);
                    libc::posix_fadvise(fd, 0, IO_PASS as i64, libc::POSIX_FADV_DONTNEED);
                }
            }
        }
    }
}

fn receive(fd: RawFd, count: &AtomicU64) -> i32 {
    let mut buf = [0u8; MESSAGE];
    let mut bytes = 0u64;
    loop {
        // SAFETY: reading into a buffer we own, of its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), MESSAGE) };
        if n <= 0 {
            return 6;
        }
        bytes += n as u64;
        count.store(bytes / MESSAGE as u64, Ordering::Relaxed);
    }
}

fn send(fds: &[RawFd; FDS]) -> i32 {
    let buf = [0u8; MESSAGE];
    loop {
        for &fd in fds {
            let mut done = 0;
            while done < MESSAGE {
                // SAFETY: writing from a buffer we own, within its length.
                let n = unsafe { libc::write(fd, buf[done..].as_ptr().cast(), MESSAGE - done) };
                if n <= 0 {
                    return 7;
                }
                done += n as usize;
            }
        }
    }
}
