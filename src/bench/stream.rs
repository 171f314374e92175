//! `stream`: streaming bandwidth through a pipe, an AF_UNIX stream socket
//! pair or a loopback TCP connection — lmbench's `bw_pipe`, `bw_unix` and
//! `bw_tcp`.
//!
//! As in lmbench, a writer (a forked process, or with `mode=threads` a
//! thread) writes `chunk`-byte blocks (64 KiB, lmbench's XFERSIZE) for as
//! long as the case runs; the timing thread reads `chunk` at a time until it
//! has moved 10 MiB (10,485,760 B, lmbench's XFER) — one operation. The
//! result is time per operation; tables headline it as MB/s with lmbench's
//! MB = 10^6 B. For TCP both ends ask for 1 MiB socket buffers (lmbench's
//! SOCKBUF; the kernel caps them at net.core.\[rw\]mem_max). A chunk larger
//! than the pipe's default capacity grows the pipe (F_SETPIPE_SZ) and is
//! refused beyond /proc/sys/fs/pipe-max-size.
//!
//! Differences on purpose: TCP uses a kernel-chosen loopback port and no
//! separate server program; the writer's buffer is not re-touched before
//! every write (lmbench's TOUCH is off by default too); `mode=threads`
//! exists. Placement matters a great deal (same CPU against two CPUs: the
//! reader and writer take turns or overlap): `--pin same` and `--pin spread`
//! both mean something. Left out: splice/vmsplice, remote hosts, UDP.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::util::fdio::{last_error, pipe, retry, socketpair};
use super::util::ring::{Helpers, Mode, WorkingSet};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::limits::descriptor_error;
use crate::measure::placement::Placement;

/// Bytes one operation moves: lmbench's XFER (10 MiB).
pub const BYTES_PER_OP: usize = 10 * 1024 * 1024;

/// lmbench's SOCKBUF: the socket buffer both TCP ends ask for.
const SOCKBUF: i32 = 1024 * 1024;

/// A pipe's capacity unless it is grown.
const PIPE_DEFAULT: usize = 64 * 1024;

pub static DEF: BenchDef = BenchDef {
    name: "stream",
    summary: "streaming bandwidth through a pipe, AF_UNIX or loopback TCP, a writer streaming 64 KiB blocks (lmbench bw_pipe/bw_unix/bw_tcp)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "kind",
            help: "transport",
            kind: ParamKind::Choice(&["pipe", "unix", "tcp"]),
            default: "pipe",
        },
        ParamSpec {
            name: "chunk",
            help: "bytes per read and write",
            kind: ParamKind::Int {
                min: 1,
                max: 16 << 20,
            },
            default: "65536",
        },
        ParamSpec {
            name: "mode",
            help: "the writer is a process or a thread",
            kind: ParamKind::Choice(&["processes", "threads"]),
            default: "processes",
        },
    ],
    default_cases: DefaultCases::EachOf("kind"),
    case_name: |p| {
        let mut name = p.get("kind").to_string();
        if p.int("chunk") != 65536 {
            name.push_str(&format!("/{}B", p.int("chunk")));
        }
        if p.get("mode") == "threads" {
            name.push_str("/threads");
        }
        name
    },
    op: |p| {
        let over = match p.get("kind") {
            "pipe" => "a pipe",
            "unix" => "an AF_UNIX stream socket pair",
            _ => "loopback TCP (1 MiB socket buffers)",
        };
        format!(
            "reading 10 MiB (10,485,760 B) over {over} in {} B reads from a {} writing {} B blocks",
            p.int("chunk"),
            if p.get("mode") == "threads" {
                "thread"
            } else {
                "process"
            },
            p.int("chunk")
        )
    },
    anchor: |p| {
        let chunk = if p.int("chunk") == 65536 {
            String::new()
        } else {
            format!(" -m {}", p.int("chunk"))
        };
        match p.get("kind") {
            "tcp" => format!("bw_tcp{chunk} localhost (bw_tcp -s running)"),
            kind => format!("bw_{kind}{chunk}"),
        }
    },
    differs: "MB/s with lmbench's MB = 10^6 B, from the median of 10 ms batches of 10 MiB reads (lmbench: the best of its repetitions); TCP on a kernel-chosen loopback port without a separate server; writer mode=threads exists. lmbench leaves placement to the scheduler: compare with --pin same or spread against lmbench under taskset or LMBENCH_SCHED (docs/crosscheck.md).",
    bytes_per_op: |_| Some(BYTES_PER_OP as f64),
    tasks: |_| 2,
    setup,
    check,
    ..BenchDef::DEFAULTS
};

/// A pipe chunk beyond what a pipe may hold is refused before anything runs.
fn check(p: &Params) -> Result<()> {
    let chunk = p.int("chunk") as usize;
    if p.get("kind") == "pipe" && chunk > PIPE_DEFAULT {
        let max = pipe_max_size();
        if chunk > max {
            return Err(Error::Usage(format!(
                "stream: chunk={chunk} is larger than a pipe may hold (/proc/sys/fs/pipe-max-size = {max}); \
                 raise it (sysctl fs.pipe-max-size={chunk}) or use a smaller chunk"
            )));
        }
    }
    Ok(())
}

fn pipe_max_size() -> usize {
    std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20)
}

/// The reading side of one case.
struct Stream {
    input: Option<OwnedFd>,
    buf: WorkingSet,
    chunk: usize,
    helpers: Helpers,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Stream::new(p, placement)?))
}

impl Stream {
    fn new(p: &Params, placement: &Placement) -> Result<Self> {
        let chunk = p.int("chunk") as usize;
        let (input, output) = match p.get("kind") {
            "pipe" => {
                let (r, w) = pipe()?;
                if chunk > PIPE_DEFAULT {
                    // SAFETY: F_SETPIPE_SZ on our own pipe; the result is checked.
                    if unsafe { libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, chunk as i32) } < 0 {
                        return Err(last_error("growing the pipe to hold one chunk"));
                    }
                }
                (r, w)
            }
            "unix" => socketpair()?,
            _ => {
                let listener = TcpListener::bind("127.0.0.1:0")
                    .map_err(|e| descriptor_error("binding a loopback TCP port", e))?;
                let addr = listener
                    .local_addr()
                    .map_err(|e| descriptor_error("reading the TCP address", e))?;
                let reader = TcpStream::connect(addr)
                    .map_err(|e| descriptor_error("connecting over loopback TCP", e))?;
                let (writer, _) = listener
                    .accept()
                    .map_err(|e| descriptor_error("accepting the TCP connection", e))?;
                let (r, w) = (OwnedFd::from(reader), OwnedFd::from(writer));
                set_buffer(&r, libc::SO_RCVBUF)?;
                set_buffer(&w, libc::SO_SNDBUF)?;
                (r, w)
            }
        };
        let mode = Mode::parse(p.get("mode"));
        let mut helpers = Helpers::new(mode, "stream", 64 * 1024);
        let in_child = mode == Mode::Processes;
        let keep = [output.as_raw_fd()];
        helpers.spawn(placement.cpu_of(1), &keep, move || {
            writer(output.as_raw_fd(), chunk, in_child)
        })?;
        let buf = WorkingSet::with_bytes(chunk).map_err(|e| Error::io("mapping the buffer", e))?;
        Ok(Stream {
            input: Some(input),
            buf,
            chunk,
            helpers,
        })
    }

    /// Reads one operation's 10 MiB, `chunk` at a time.
    #[inline]
    fn read_op(&mut self, fd: RawFd) -> Result<()> {
        let buf = &mut self.buf.as_bytes_mut()[..self.chunk];
        let mut done = 0;
        while done < BYTES_PER_OP {
            // SAFETY: the pointer and length describe `buf`.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            match n {
                n if n > 0 => done += n as usize,
                0 => {
                    return Err(Error::Measure(
                        "the writer stopped (end of file) in the middle of the stream".into(),
                    ));
                }
                _ => {
                    let e = io::Error::last_os_error();
                    if !retry(&e) {
                        return Err(Error::io("reading the stream", e));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Workload for Stream {
    fn run(&mut self, iters: u64) -> Result<()> {
        let Some(fd) = self.input.as_ref().map(AsRawFd::as_raw_fd) else {
            return Err(Error::Measure("the stream was already shut down".into()));
        };
        for _ in 0..iters {
            self.read_op(fd)?;
        }
        Ok(())
    }

    /// Closing the reading end makes the writer's next write fail (EPIPE),
    /// which ends it.
    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.input = None;
        self.helpers.finish()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.input = None; // a thread writer ends; a process is killed by its supervisor
    }
}

/// Writes `chunk`-byte blocks until the reader goes away. A forked writer
/// ignores SIGPIPE (its own disposition) so the end is an EPIPE error it
/// recognises; threads share the process's, which Rust already ignores.
/// The buffer is mmap'd: a forked child must not allocate.
fn writer(fd: RawFd, chunk: usize, in_child: bool) -> io::Result<()> {
    if in_child {
        crate::measure::supervise::ignore_sigpipe_in_child();
    }
    let mut buf = WorkingSet::with_bytes(chunk)?;
    let block = &mut buf.as_bytes_mut()[..chunk];
    block.fill(1);
    loop {
        match super::util::fdio::write_all(fd, block) {
            Ok(()) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPIPE | libc::ECONNRESET)) => {
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
}

/// Asks for lmbench's 1 MiB socket buffer (`which`: SO_RCVBUF or SO_SNDBUF).
fn set_buffer(fd: &OwnedFd, which: i32) -> Result<()> {
    let size = SOCKBUF;
    // SAFETY: an int option on our own socket; the result is checked.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            which,
            (&raw const size).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(last_error("setting a TCP socket buffer size"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transport_streams_and_ends_cleanly() {
        for mode in ["processes", "threads"] {
            for kind in ["pipe", "unix", "tcp"] {
                for chunk in ["65536", "4096", "1000000"] {
                    let p = Params::new(&DEF, &[("kind", kind), ("chunk", chunk), ("mode", mode)]);
                    check(&p).unwrap();
                    let mut s = Stream::new(&p, &Placement::unpinned()).unwrap();
                    s.run(2).unwrap();
                    Box::new(s).teardown().unwrap();
                }
            }
        }
    }

    #[test]
    fn a_dead_writer_is_an_error_not_a_hang() {
        let p = Params::new(&DEF, &[("kind", "unix")]);
        let mut s = Stream::new(&p, &Placement::unpinned()).unwrap();
        if let Helpers::Processes(sup) = &s.helpers {
            // SAFETY: killing our own writer child.
            unsafe { libc::kill(sup.children()[0], libc::SIGKILL) };
        }
        assert!(
            s.run(100)
                .unwrap_err()
                .to_string()
                .contains("writer stopped")
        );
    }

    #[test]
    fn a_chunk_beyond_the_pipe_limit_is_refused() {
        let too_big = (pipe_max_size() + 1).to_string();
        let p = Params::new(&DEF, &[("kind", "pipe"), ("chunk", too_big.as_str())]);
        let e = check(&p).unwrap_err().to_string();
        assert!(e.contains("pipe-max-size"), "{e}");
    }
}
