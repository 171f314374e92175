//! `ipc`: round-trip latency to an echo peer, lmbench's `lat_pipe`, `lat_unix`,
//! `lat_tcp` and `lat_udp` (lmbench `src/lat_pipe.c`, `lat_unix.c`,
//! `lat_tcp.c`, `lat_udp.c`).
//!
//! The timing thread writes a `bytes`-byte message and reads the echo back; the
//! peer is a forked process (or, with `mode=threads`, a thread). One op is one
//! round trip, not halved, as in lmbench and `perf bench sched pipe`.
//! - `pipe`: two pipes; `unix`: an AF_UNIX stream socket pair;
//! - `tcp`: a loopback connection; TCP_NODELAY is *not* set, as in lmbench
//!   (with one message in flight Nagle's algorithm never delays a send);
//! - `udp`: two connected loopback sockets, 4-byte datagrams by default.
//!
//! Every message carries a sequence number in its first bytes and the reply
//! must return it (a lost or stale message is an error); a UDP reply that does
//! not come within 5 s is an error too (lmbench: 15 s alarm). Differences from
//! lmbench: TCP and UDP use ephemeral ports chosen by the kernel (no fixed port,
//! no separate server process); `mode=threads` exists. Left out: remote hosts.

use std::io;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::util::fdio::{pipe, read_exact, read_message, socketpair, write_all};
use super::util::ring::{Helpers, Mode, WorkingSet};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::limits::descriptor_error;
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "ipc",
    summary: "round trip to an echo peer over a pipe, AF_UNIX, TCP or UDP (lmbench lat_pipe/unix/tcp/udp)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "kind",
            help: "transport",
            kind: ParamKind::Choice(&["pipe", "unix", "tcp", "udp"]),
            default: "pipe",
        },
        ParamSpec {
            name: "bytes",
            help: "message size each way",
            kind: ParamKind::Int { min: 1, max: 65507 },
            default: "1",
        },
        ParamSpec {
            name: "mode",
            help: "the echo peer is a process or a thread",
            kind: ParamKind::Choice(&["processes", "threads"]),
            default: "processes",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("kind", "pipe")],
        &[("kind", "unix")],
        &[("kind", "tcp")],
        &[("kind", "udp"), ("bytes", "4")],
    ]),
    case_name,
    op: |p| {
        let over = match p.get("kind") {
            "pipe" => "two pipes",
            "unix" => "an AF_UNIX stream socket pair",
            "tcp" => "loopback TCP (TCP_NODELAY off)",
            _ => "loopback UDP",
        };
        format!(
            "one round trip (not halved) of {} B over {over} to an echo {}",
            p.int("bytes"),
            peer_word(p)
        )
    },
    anchor: |p| match p.get("kind") {
        "pipe" => "lat_pipe; perf bench sched pipe".to_string(),
        kind => format!("lat_{kind}"),
    },
    differs: "a median of 10 ms batches after a warm-up, each reply checked by sequence number; `perf bench sched pipe` reports the mean of one 1,000,000-round-trip run with the peer's fork and exit inside (`--samples 1 --sample-time 3000 --warmup 0` is that definition).",
    tasks: |_| 2,
    setup,
    ..BenchDef::DEFAULTS
};

fn peer_word(p: &Params) -> &'static str {
    if p.get("mode") == "threads" {
        "thread"
    } else {
        "process"
    }
}

/// "pipe", "udp", "tcp/64B", "unix/threads": the kind, then what differs from lmbench.
pub fn case_name(p: &Params) -> String {
    let kind = p.get("kind");
    let lmbench_bytes = if kind == "udp" { 4 } else { 1 };
    let mut name = kind.to_string();
    if p.int("bytes") != lmbench_bytes {
        name.push_str(&format!("/{}B", p.int("bytes")));
    }
    if p.get("mode") == "threads" {
        name.push_str("/threads");
    }
    name
}

/// The timing side of one connection.
struct Echo {
    /// Where the timing thread writes and reads (the same descriptor for sockets).
    out: Option<OwnedFd>,
    input: Option<OwnedFd>,
    message: Vec<u8>,
    reply: Vec<u8>,
    seq: u32,
    datagram: bool,
    helpers: Helpers,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Echo::new(p, placement)?))
}

impl Echo {
    fn new(p: &Params, placement: &Placement) -> Result<Self> {
        let bytes = p.int("bytes") as usize;
        let kind = p.get("kind");
        // (timing side in, timing side out, peer in, peer out)
        let (input, out, peer_in, peer_out): (OwnedFd, OwnedFd, OwnedFd, OwnedFd) = match kind {
            "pipe" => {
                let (to_peer_r, to_peer_w) = pipe()?;
                let (from_peer_r, from_peer_w) = pipe()?;
                (from_peer_r, to_peer_w, to_peer_r, from_peer_w)
            }
            "unix" => {
                let (a, b) = socketpair()?;
                let (a2, b2) = (dup(&a)?, dup(&b)?);
                (a, a2, b, b2)
            }
            "tcp" => {
                let listener = TcpListener::bind("127.0.0.1:0")
                    .map_err(|e| net_error("binding a loopback TCP port", e))?;
                let addr = listener
                    .local_addr()
                    .map_err(|e| net_error("reading the TCP address", e))?;
                let client = TcpStream::connect(addr)
                    .map_err(|e| net_error("connecting over loopback TCP", e))?;
                let (server, _) = listener
                    .accept()
                    .map_err(|e| net_error("accepting the TCP connection", e))?;
                let (a, b) = (OwnedFd::from(client), OwnedFd::from(server));
                let (a2, b2) = (dup(&a)?, dup(&b)?);
                (a, a2, b, b2)
            }
            _ => {
                let bind = || {
                    UdpSocket::bind("127.0.0.1:0")
                        .map_err(|e| net_error("binding a loopback UDP port", e))
                };
                let (a, b) = (bind()?, bind()?);
                let addr = |s: &UdpSocket| {
                    s.local_addr()
                        .map_err(|e| net_error("reading a UDP address", e))
                };
                a.connect(addr(&b)?)
                    .map_err(|e| net_error("connecting UDP sockets", e))?;
                b.connect(addr(&a)?)
                    .map_err(|e| net_error("connecting UDP sockets", e))?;
                a.set_read_timeout(Some(Duration::from_secs(5)))
                    .map_err(|e| net_error("setting the UDP reply timeout", e))?;
                let (a, b) = (OwnedFd::from(a), OwnedFd::from(b));
                let (a2, b2) = (dup(&a)?, dup(&b)?);
                (a, a2, b, b2)
            }
        };
        let mut helpers = Helpers::new(Mode::parse(p.get("mode")), "ipc", 64 * 1024);
        helpers.start(placement.cpu_of(1), peer_in, peer_out, bytes, echo)?;
        let mut e = Echo {
            out: Some(out),
            input: Some(input),
            message: vec![0; bytes],
            reply: vec![0; bytes],
            seq: 0,
            datagram: kind == "udp",
            helpers,
        };
        e.round_trip()?; // prime: the peer has run once
        Ok(e)
    }

    #[inline]
    fn round_trip(&mut self) -> Result<()> {
        let (out, input) = match (&self.out, &self.input) {
            (Some(o), Some(i)) => (o.as_raw_fd(), i.as_raw_fd()),
            _ => return Err(Error::Measure("the echo peer was already shut down".into())),
        };
        self.seq = self.seq.wrapping_add(1);
        let stamp = self.seq.to_ne_bytes();
        let n = stamp.len().min(self.message.len());
        self.message[..n].copy_from_slice(&stamp[..n]);
        write_all(out, &self.message).map_err(peer_broken)?;
        read_message(input, &mut self.reply).map_err(peer_broken)?;
        if self.reply[..n] != stamp[..n] {
            return Err(Error::Measure(format!(
                "reply {} did not echo message {}",
                self.seq, self.seq
            )));
        }
        Ok(())
    }

    /// Tells the peer to stop (end of file; an empty datagram for UDP) and waits for it.
    fn shut_down(&mut self) -> Result<()> {
        self.stop_peer();
        self.helpers.finish()
    }

    fn stop_peer(&mut self) {
        if let (true, Some(out)) = (self.datagram, &self.out) {
            // SAFETY: sending an empty datagram on our own connected socket.
            unsafe { libc::send(out.as_raw_fd(), std::ptr::null(), 0, 0) };
        }
        self.out = None;
        self.input = None;
    }
}

impl Workload for Echo {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            self.round_trip()?;
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.shut_down()
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop_peer(); // unblocks a thread peer; a process peer is killed by its supervisor
    }
}

/// The echo peer: read a whole message, write it back, until end of file (or
/// an empty datagram). The buffer is mmap'd: a forked child must not allocate.
fn echo(input: RawFd, output: RawFd, bytes: usize) -> io::Result<()> {
    let mut buf = WorkingSet::with_bytes(bytes)?;
    let msg = &mut buf.as_bytes_mut()[..bytes];
    while read_exact(input, msg)? {
        write_all(output, msg)?;
    }
    Ok(())
}

fn dup(fd: &OwnedFd) -> Result<OwnedFd> {
    fd.try_clone()
        .map_err(|e| descriptor_error("duplicating a descriptor", e))
}

fn net_error(what: &str, e: io::Error) -> Error {
    descriptor_error(what, e)
}

fn peer_broken(e: io::Error) -> Error {
    Error::io(
        "the echo peer stopped answering (it exited, failed, or a datagram was lost)",
        e,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo_case(kind: &str, bytes: &str, mode: &str) -> Echo {
        let p = Params::new(&DEF, &[("kind", kind), ("bytes", bytes), ("mode", mode)]);
        Echo::new(&p, &Placement::unpinned()).unwrap()
    }

    #[test]
    fn every_kind_echoes_every_byte() {
        for mode in ["processes", "threads"] {
            for kind in ["pipe", "unix", "tcp", "udp"] {
                for bytes in ["1", "4", "1000"] {
                    let mut e = echo_case(kind, bytes, mode);
                    for round in 0..20u8 {
                        for (i, b) in e.message.iter_mut().enumerate() {
                            *b = (i as u8).wrapping_mul(31).wrapping_add(round);
                        }
                        e.round_trip().unwrap();
                        // round_trip overwrote the first bytes with the sequence number.
                        assert_eq!(e.reply, e.message, "{kind} {bytes} B {mode}");
                    }
                    Workload::run(&mut e, 50).unwrap();
                    Box::new(e).teardown().unwrap();
                }
            }
        }
    }

    #[test]
    fn a_dead_peer_is_an_error_not_a_hang() {
        let mut e = echo_case("pipe", "1", "processes");
        if let Helpers::Processes(sup) = &e.helpers {
            // SAFETY: killing our own peer child.
            unsafe { libc::kill(sup.children()[0], libc::SIGKILL) };
        }
        assert!(
            Workload::run(&mut e, 10)
                .unwrap_err()
                .to_string()
                .contains("stopped answering")
        );
    }

    #[test]
    fn names_say_what_differs_from_lmbench() {
        let name = |kv: &[(&str, &str)]| case_name(&Params::new(&DEF, kv));
        assert_eq!(name(&[("kind", "udp"), ("bytes", "4")]), "udp");
        assert_eq!(name(&[("kind", "tcp"), ("bytes", "64")]), "tcp/64B");
        assert_eq!(
            name(&[("kind", "unix"), ("mode", "threads")]),
            "unix/threads"
        );
    }
}
