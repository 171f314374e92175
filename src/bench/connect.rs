//! `connect`: connection set-up, lmbench's `lat_connect` (TCP over loopback)
//! and `lat_unix_connect` (AF_UNIX stream). One op is one connection: the
//! timing thread makes a socket, sets SO_REUSEADDR (as lmbench's client
//! does), connects and closes; a forked server accepts each connection,
//! reads it until the client's close arrives and closes it, in parallel, as
//! lmbench's server process does.
//!
//! TIME_WAIT: the client closes first, so its side of every TCP connection
//! waits in TIME_WAIT, as in lmbench. (A server that closed at once, before
//! the client, would put TIME_WAIT on the server's side instead: each
//! client port is then free at once and connect() does not search past
//! ports in TIME_WAIT; measured, it was not what made osbench's figure
//! 0.6× lmbench's, see below.) connect()'s cost therefore grows with the
//! connections of the last 60 s, this run's and others'. Over loopback Linux reuses such ports
//! for new outgoing connections when `net.ipv4.tcp_tw_reuse` is 1 or 2 (2,
//! loopback only, is the default), so a long run does not run out of
//! ephemeral ports; with it at 0 the check refuses TCP and says how to set
//! it, and running out anyway (EADDRNOTAVAIL) is an error naming the ports.
//! Only 127.0.0.1 is ever bound, on a port the kernel chooses.
//!
//! Differences on purpose: the listen backlog is `net.core.somaxconn`
//! where lmbench's is 100. When lmbench's server falls 100 connections
//! behind (a pause of 1.5 ms), the kernel drops a SYN and that connect()
//! waits out the 1 s retransmission timeout: such runs read milliseconds
//! per connection (nstat's ListenOverflows and TCPTimeouts count them), and
//! without one the two agree (docs/crosscheck.md). The server is forked by
//! osbench (lmbench starts `lat_connect -s` separately, on its fixed port); the AF_UNIX
//! socket lives in a temporary directory osbench removes; lmbench's server
//! reads one byte to learn when to exit, osbench shuts its listener down.
//! The server's port is the kernel's choice, where lmbench's is fixed: a
//! connect() to a fixed port searches past every TIME_WAIT socket of the
//! last 60 s to it, and once a run's connections outnumber the ephemeral
//! ports each waits for one older than 1 s (tcp_tw_reuse), which is what
//! lat_connect's 1 s intervals measure on a host where its calibration
//! fails (docs/crosscheck.md, connect).
//! Left out: remote hosts.

use std::ffi::CString;
use std::io;
use std::net::{SocketAddrV4, TcpListener};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixListener;

use tempfile::TempDir;

use super::util::fdio::read_until_eof;
use super::util::ring::{Helpers, Mode};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::limits::descriptor_error;
use crate::measure::placement::Placement;

pub static DEF: BenchDef = BenchDef {
    name: "connect",
    summary: "connect + accept + close of one connection, loopback TCP or AF_UNIX (lmbench lat_connect, lat_unix_connect)",
    unit: Unit::Us,
    params: &[ParamSpec {
        name: "kind",
        help: "transport",
        kind: ParamKind::Choice(&["tcp", "unix"]),
        default: "tcp",
    }],
    default_cases: DefaultCases::EachOf("kind"),
    case_name: |p| p.get("kind").to_string(),
    op: |p| {
        let over = if p.get("kind") == "tcp" {
            "a loopback TCP"
        } else {
            "an AF_UNIX stream"
        };
        format!(
            "socket() + connect() + close() of {over} connection a server process accepts and reads until the close"
        )
    },
    anchor: |p| match p.get("kind") {
        "tcp" => "lat_connect localhost (lat_connect -s running)".to_string(),
        _ => "lat_unix_connect".to_string(),
    },
    differs: "a listen backlog of net.core.somaxconn where lmbench's 100 overflows when its server falls behind, and each dropped SYN costs lmbench's run a 1 s retransmission (its millisecond figures); client and server are spread over two CPUs by default (--pin; lmbench leaves them to the scheduler; on one CPU lmbench's figure is 5-6x and osbench's 2x their spread figures: docs/crosscheck.md); the server is forked by osbench and its listener shut down at the end (lmbench's is started separately and told to exit by a byte); a kernel-chosen loopback port, so no earlier run's TIME_WAIT sockets lie on its port search (lmbench's fixed port meets those of the last 60 s); the median of 10 ms batches, where connect()'s cost grows with the run's own TIME_WAIT sockets (lmbench times 50 ms intervals, or 1 s where its timing calibration fails, as on the development VM: 60,000 connections to one port outrun the 28,232 ephemeral ports, and lmbench then reads the 1 s TIME_WAIT reuse rule, 65 us, where osbench reads 16 us; with --sample-time 50 and lmbench at ENOUGH=50000, both after TIME_WAIT drained: 0.92-1.00 by hand, 0.996 over 5 rounds of scripts/crosscheck.sh connect).",
    tasks: |_| 2,
    setup,
    check,
    ..BenchDef::DEFAULTS
};

/// TCP needs TIME_WAIT ports to be reusable over loopback (see the file's comment).
fn check(p: &Params) -> Result<()> {
    if p.get("kind") != "tcp" {
        return Ok(());
    }
    let reuse = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    if reuse == Some(0) {
        return Err(Error::Usage(
            "connect: net.ipv4.tcp_tw_reuse is 0, so every connection's port would wait 60 s in \
             TIME_WAIT and a run would exhaust the ephemeral ports; set it to 2 (sysctl \
             net.ipv4.tcp_tw_reuse=2, the default: loopback only)"
                .into(),
        ));
    }
    Ok(())
}

/// Where the client connects.
enum Target {
    Tcp(libc::sockaddr_in),
    Unix(libc::sockaddr_un),
}

/// The client side of one case, and the server it connects to.
struct Connect {
    target: Target,
    listener: Option<OwnedFd>,
    helpers: Helpers,
    /// The AF_UNIX socket's directory, removed on drop.
    _dir: Option<TempDir>,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    Ok(Box::new(Connect::new(p, placement)?))
}

impl Connect {
    fn new(p: &Params, placement: &Placement) -> Result<Self> {
        let (target, listener, dir) = if p.get("kind") == "tcp" {
            let l = TcpListener::bind("127.0.0.1:0")
                .map_err(|e| descriptor_error("binding a loopback TCP port", e))?;
            let std::net::SocketAddr::V4(addr) = l
                .local_addr()
                .map_err(|e| descriptor_error("reading the TCP address", e))?
            else {
                return Err(Error::Measure("127.0.0.1 gave a non-IPv4 address".into()));
            };
            (Target::Tcp(sockaddr_in(addr)), OwnedFd::from(l), None)
        } else {
            let dir = tempfile::Builder::new()
                .prefix("osbench-connect")
                .tempdir()
                .map_err(|e| Error::io("creating a temporary directory in $TMPDIR", e))?;
            let path = dir.path().join("s");
            let l = UnixListener::bind(&path)
                .map_err(|e| descriptor_error("binding an AF_UNIX socket", e))?;
            (
                Target::Unix(sockaddr_un(&path)?),
                OwnedFd::from(l),
                Some(dir),
            )
        };
        // The backlog as deep as net.core.somaxconn allows (std asks for 128).
        // SAFETY: listen on our own bound socket.
        unsafe { libc::listen(listener.as_raw_fd(), i32::MAX) };
        let mut helpers = Helpers::new(Mode::Processes, "connect", 64 * 1024);
        let server = listener
            .try_clone()
            .map_err(|e| descriptor_error("duplicating the listener", e))?;
        let keep = [server.as_raw_fd()];
        helpers.spawn(placement.cpu_of(1), &keep, move || {
            serve(server.as_raw_fd())
        })?;
        let mut c = Connect {
            target,
            listener: Some(listener),
            helpers,
            _dir: dir,
        };
        c.once()?;
        Ok(c)
    }

    /// One connection: socket, SO_REUSEADDR, connect, close.
    #[inline]
    fn once(&mut self) -> Result<()> {
        let (family, addr, len) = match &self.target {
            Target::Tcp(a) => (
                libc::AF_INET,
                (a as *const libc::sockaddr_in).cast::<libc::sockaddr>(),
                size_of::<libc::sockaddr_in>(),
            ),
            Target::Unix(a) => (
                libc::AF_UNIX,
                (a as *const libc::sockaddr_un).cast::<libc::sockaddr>(),
                size_of::<libc::sockaddr_un>(),
            ),
        };
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(descriptor_error(
                "creating a socket",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: `fd` was just created and is owned by nothing else; closed on drop.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let one: i32 = 1;
        // SAFETY: an int option on our own socket (lmbench's SOCKOPT_REUSE).
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                (&raw const one).cast(),
                size_of::<i32>() as libc::socklen_t,
            )
        };
        // SAFETY: `addr` points to a sockaddr of `len` bytes owned by `self`.
        if unsafe { libc::connect(fd, addr, len as libc::socklen_t) } < 0 {
            return Err(connect_error(io::Error::last_os_error()));
        }
        drop(sock);
        Ok(())
    }

    /// Shuts the listener down, which ends the server's accept loop.
    fn stop_server(&mut self) {
        if let Some(l) = self.listener.take() {
            // SAFETY: shutdown of our own listening socket (the server shares it).
            unsafe { libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR) };
        }
    }
}

impl Workload for Connect {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            self.once()?;
        }
        Ok(())
    }

    fn teardown(mut self: Box<Self>) -> Result<()> {
        self.stop_server();
        self.helpers.finish()
    }
}

impl Drop for Connect {
    fn drop(&mut self) {
        self.stop_server();
    }
}

/// The server: accept each connection, read it until the client's close
/// arrives, close it — lmbench's server, so the client closes first and
/// TIME_WAIT falls on the client's ports — until the listener is shut down
/// (accept then fails with EINVAL). No allocation: it runs in a forked child.
fn serve(listener: RawFd) -> io::Result<()> {
    loop {
        // SAFETY: accept on the listening socket; null address out-pointers.
        let fd = unsafe { libc::accept(listener, std::ptr::null_mut(), std::ptr::null_mut()) };
        if fd >= 0 {
            let read = read_until_eof(fd);
            // SAFETY: closing the descriptor accept just returned.
            unsafe { libc::close(fd) };
            match read {
                Err(e) if e.raw_os_error() != Some(libc::ECONNRESET) => return Err(e),
                _ => continue,
            }
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINVAL) => return Ok(()),
            Some(libc::EINTR | libc::ECONNABORTED) => {}
            _ => return Err(e),
        }
    }
}

fn connect_error(e: io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) => Error::io(
            "connecting over loopback: no ephemeral port is free (TIME_WAIT holds them); set \
             net.ipv4.tcp_tw_reuse=2 or widen net.ipv4.ip_local_port_range",
            e,
        ),
        _ => descriptor_error("connecting to the server", e),
    }
}

fn sockaddr_in(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn sockaddr_un(path: &std::path::Path) -> Result<libc::sockaddr_un> {
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid (empty) value.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::Measure("the socket path holds a NUL byte".into()))?;
    let bytes = bytes.as_bytes_with_nul();
    if bytes.len() > a.sun_path.len() {
        return Err(Error::Usage(format!(
            "connect: the AF_UNIX socket path {} is longer than {} bytes; set TMPDIR to a shorter directory",
            path.display(),
            a.sun_path.len() - 1
        )));
    }
    for (d, s) in a.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_connect_and_the_server_ends_cleanly() {
        for kind in ["tcp", "unix"] {
            let p = Params::new(&DEF, &[("kind", kind)]);
            check(&p).unwrap();
            let mut c = Connect::new(&p, &Placement::unpinned()).unwrap();
            c.run(300).unwrap();
            let dir = c._dir.as_ref().map(|d| d.path().to_path_buf());
            Box::new(c).teardown().unwrap();
            if let Some(dir) = dir {
                assert!(!dir.exists(), "{} left behind", dir.display());
            }
        }
    }

    #[test]
    fn the_server_binds_loopback_only() {
        let c = Connect::new(&Params::new(&DEF, &[]), &Placement::unpinned()).unwrap();
        let Target::Tcp(a) = &c.target else {
            unreachable!()
        };
        assert_eq!(
            u32::from_be(a.sin_addr.s_addr),
            u32::from(std::net::Ipv4Addr::LOCALHOST)
        );
    }

    #[test]
    fn no_server_is_an_error_not_a_hang() {
        let mut c = Connect::new(&Params::new(&DEF, &[]), &Placement::unpinned()).unwrap();
        c.stop_server();
        let e = c.run(10).unwrap_err().to_string();
        assert!(e.contains("connecting to the server"), "{e}");
    }
}
