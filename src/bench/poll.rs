//! `poll`: one I/O multiplexing call over N ready descriptors with a zero
//! timeout — `select`, `poll`, `ppoll`, `epoll_wait`, and `epoll_ctl`.
//!
//! Anchors: lmbench `lat_select -n N file|tcp` (N duplicates of one
//! descriptor — a temporary file opened read-only, or one connected loopback
//! TCP socket — in select's *write* set, zero timeout) and LEBench's
//! `select`/`poll`/`epoll` tests (N unconnected TCP sockets, `socket()` with
//! no `connect()`, watched for reading, zero timeout; 10 and 1,000 in its
//! runs). The descriptors (`on`):
//! - `file`: lmbench's file case (write set; poll events POLLOUT);
//! - `tcp`: lmbench's tcp case (write set / POLLOUT / EPOLLOUT);
//! - `socket`: LEBench's unconnected sockets (read set / POLLIN / EPOLLIN;
//!   an unconnected socket reports a hang-up, which counts as readable).
//!
//! Every call's result is checked: all N must be reported ready (LEBench
//! checks this; lmbench does not). `epoll_ctl`: one op is one call, ADD and
//! DEL of one more descriptor alternately, into a set watching N others
//! (perf bench `epoll ctl` does random ops over many; osbench's is the
//! steady-state cost of one call). Differences on purpose: select's first
//! argument is the highest descriptor + 1 (lmbench passes N, so its
//! duplicates at N and above are not watched: 90 of 100 on tcp, 91 on file); LEBench times one call per run with
//! clock_gettime around it, osbench a median of batches — or, with
//! `set=fresh`, LEBench's own method: each op makes a new set of N
//! unconnected sockets (untimed; for epoll each added to the set as it is
//! made, as LEBench does), times one call with a clock read on each
//! side, and closes them, so the result is a distribution whose mean is
//! LEBench's average (its clock read included, as LEBench's is). As in lmbench, the
//! tcp connection's other end is accepted by a forked server process that
//! blocks reading it until every duplicate is closed.
//! Regular files cannot be watched by epoll (EPERM), so epoll cases refuse
//! `on=file`. The case where one of N becomes ready per call, woken by
//! another task, is `wakeup:wait=epoll,fds=N` (a latency distribution).

use std::ffi::CString;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use tempfile::NamedTempFile;

use super::util::fdio::{descriptors_needed, last_error, read_until_eof};
use super::util::ring::{Helpers, Mode};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::limits::descriptor_error;
use crate::measure::placement::Placement;

/// `set=fresh`: calls timed over 100 descriptors or fewer (a tenth of that
/// over more; LEBench's own counts are ten times these).
const FRESH_EVENTS: u64 = 10_000;

pub static DEF: BenchDef = BenchDef {
    name: "poll",
    summary: "select, poll, ppoll, epoll_wait or epoll_ctl over N ready descriptors, zero timeout (lmbench lat_select; LEBench select/poll/epoll)",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "call",
            help: "the multiplexing call timed",
            kind: ParamKind::Choice(&["select", "poll", "ppoll", "epoll_wait", "epoll_ctl"]),
            default: "select",
        },
        ParamSpec {
            name: "fds",
            help: "descriptors watched (N)",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 20,
            },
            default: "100",
        },
        ParamSpec {
            name: "on",
            help: "file: dups of a file (lmbench), tcp: dups of a loopback TCP socket (lmbench), socket: unconnected TCP sockets (LEBench)",
            kind: ParamKind::Choice(&["file", "tcp", "socket"]),
            default: "tcp",
        },
        ParamSpec {
            name: "set",
            help: "kept: one set, called again and again (batches); fresh: a new set per call, each call timed alone (LEBench; on=socket only)",
            kind: ParamKind::Choice(&["kept", "fresh"]),
            default: "kept",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[("call", "select"), ("on", "file")],
        &[("call", "select"), ("on", "tcp")],
        &[("call", "poll"), ("on", "tcp")],
        &[("call", "ppoll"), ("on", "tcp")],
        &[("call", "epoll_wait"), ("on", "tcp")],
        &[("call", "epoll_ctl"), ("on", "tcp")],
        &[("call", "select"), ("on", "socket"), ("fds", "1000")],
        &[("call", "poll"), ("on", "socket"), ("fds", "1000")],
        &[("call", "epoll_wait"), ("on", "socket"), ("fds", "1000")],
    ]),
    case_name: |p| {
        let fresh = if p.get("set") == "fresh" {
            "/fresh"
        } else {
            ""
        };
        format!("{}/{}/{}{fresh}", p.get("call"), p.get("on"), p.int("fds"))
    },
    op: |p| {
        let n = p.int("fds");
        let what = match p.get("on") {
            "file" => "duplicates of a read-only file",
            "tcp" => "duplicates of a connected loopback TCP socket",
            _ => "unconnected TCP sockets",
        };
        match p.get("call") {
            "epoll_ctl" => format!(
                "one epoll_ctl() call (ADD and DEL of one more socket, alternately) beside {n} watched {what}"
            ),
            call if p.get("set") == "fresh" => format!(
                "one {call}() over {n} ready {what} made just before it (untimed) and closed after, zero timeout, clock read to clock read"
            ),
            call => format!("one {call}() over {n} ready {what}, zero timeout"),
        }
    },
    sampling: Sampling::EventsFor(|p| {
        (p.get("set") == "fresh").then_some(if p.int("fds") <= 100 {
            FRESH_EVENTS
        } else {
            FRESH_EVENTS / 10
        })
    }),
    anchor: |p| match (p.get("call"), p.get("on")) {
        ("select", on @ ("file" | "tcp")) => format!("lat_select -n {} {on}", p.int("fds")),
        ("epoll_ctl", _) => "perf bench epoll ctl".to_string(),
        (call, _) => format!(
            "LEBench {} ({} sockets)",
            call.trim_end_matches("_wait"),
            p.int("fds")
        ),
    },
    ops_per_iter: |p| {
        if p.get("call") == "epoll_ctl" {
            2.0
        } else {
            1.0
        }
    },
    differs: "select watches all N (lmbench passes N as select's highest descriptor + 1, so it watches only its duplicates below N: 90 of 100 on tcp, 91 on file, by strace); every call must report all N ready; set=kept (the default) is a median of 10 ms batches over one set where LEBench times single calls on a new set each (set=fresh does as LEBench).",
    setup,
    check,
    ..BenchDef::DEFAULTS
};

/// Refuses, before anything runs, what cannot be set up: more descriptors
/// than `ulimit -n` allows, select beyond FD_SETSIZE, epoll on regular files.
fn check(p: &Params) -> Result<()> {
    let n = p.int("fds") as u64;
    let call = p.get("call");
    if call == "select" && n > libc::FD_SETSIZE as u64 {
        return Err(Error::Usage(format!(
            "poll: select can watch descriptors below FD_SETSIZE ({}) only, and fds={n} asks for more; \
             use call=poll, ppoll or epoll_wait for larger sets",
            libc::FD_SETSIZE
        )));
    }
    if p.get("set") == "fresh" && (p.get("on") != "socket" || call == "epoll_ctl") {
        return Err(Error::Usage(
            "poll: set=fresh is LEBench's method (a new set of unconnected sockets per call) and \
             needs on=socket and a call other than epoll_ctl"
                .into(),
        ));
    }
    if call.starts_with("epoll") && p.get("on") == "file" {
        return Err(Error::Usage(
            "poll: epoll cannot watch regular files (epoll_ctl gives EPERM); use on=tcp or on=socket"
                .into(),
        ));
    }
    // The N watched, epoll_ctl's extra one, the listener, the epoll set.
    descriptors_needed("poll", n + 3)
}

/// The watched descriptors and the state of the call.
struct Multiplex {
    call: Call,
    /// Held open for the calls (the sets name them by number).
    watched: Vec<OwnedFd>,
    /// `on=tcp`: the server process that accepted the connection.
    server: Option<Helpers>,
    expected: usize,
}

/// `set=fresh`: the case's parameters (each call builds its own set) and
/// the latencies of the calls timed so far.
struct FreshSets {
    params: Params,
    events: Vec<u64>,
}

enum Call {
    Select {
        set: libc::fd_set,
        nfds: i32,
        write: bool,
    },
    Poll(Vec<libc::pollfd>),
    Ppoll(Vec<libc::pollfd>),
    EpollWait {
        ep: OwnedFd,
        events: Vec<libc::epoll_event>,
    },
    EpollCtl {
        ep: OwnedFd,
        extra: OwnedFd,
        mask: u32,
    },
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    // The first set is checked here either way (every descriptor ready).
    let first = Multiplex::new(p)?;
    if p.get("set") == "fresh" {
        Box::new(first).teardown()?;
        return Ok(Box::new(FreshSets {
            params: p.clone(),
            events: Vec::new(),
        }));
    }
    Ok(Box::new(first))
}

/// The first watched descriptor: a temporary file (already unlinked) or
/// the client end of a loopback TCP connection, with the server process
/// that accepted the other end.
fn first_descriptor(on: &str) -> Result<(OwnedFd, Option<Helpers>)> {
    if on == "file" {
        let file = NamedTempFile::new()
            .map_err(|e| Error::io("creating a temporary file in $TMPDIR", e))?;
        let path = CString::new(file.path().as_os_str().as_bytes())
            .map_err(|_| Error::Measure("a temporary path holds a NUL byte".into()))?;
        // SAFETY: a NUL-terminated path; the result is checked.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(descriptor_error(
                "opening the temporary file",
                std::io::Error::last_os_error(),
            ));
        }
        // The file is unlinked when `file` drops; the descriptor stays open.
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok((unsafe { OwnedFd::from_raw_fd(fd) }, None))
    } else {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| descriptor_error("binding a loopback TCP port", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| descriptor_error("reading the TCP address", e))?;
        let client = TcpStream::connect(addr)
            .map_err(|e| descriptor_error("connecting over loopback TCP", e))?;
        // lmbench's server: accept, then block reading until the client's
        // close. Unpinned, as lmbench's; it takes no part in the timed call.
        let mut server = Helpers::new(Mode::Processes, "poll", 64 * 1024);
        let listener = OwnedFd::from(listener);
        let keep = [listener.as_raw_fd()];
        server.spawn(None, &keep, move || accept_and_hold(listener.as_raw_fd()))?;
        Ok((OwnedFd::from(client), Some(server)))
    }
}

/// Accepts one connection on `listener` and reads it until end of file.
/// No allocation: it runs in a forked child.
fn accept_and_hold(listener: RawFd) -> std::io::Result<()> {
    // SAFETY: accept on the listening socket; null address out-pointers.
    let fd = unsafe { libc::accept(listener, std::ptr::null_mut(), std::ptr::null_mut()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let read = read_until_eof(fd);
    // SAFETY: closing the descriptor accept just returned.
    unsafe { libc::close(fd) };
    read
}

impl Multiplex {
    /// The set, checked by one call: every descriptor is ready, or the case
    /// is refused here.
    fn new(p: &Params) -> Result<Self> {
        let mut m = Multiplex::build(p)?;
        m.once()?;
        Ok(m)
    }

    /// The set, not yet called.
    fn build(p: &Params) -> Result<Self> {
        let n = p.int("fds") as usize;
        let on = p.get("on");
        let mut server = None;
        let mut fds = Vec::with_capacity(n + 1);
        // One more than N for epoll_ctl's extra descriptor.
        let wanted = n + usize::from(p.get("call") == "epoll_ctl");
        let write = on != "socket";
        let mask = if write { libc::EPOLLOUT } else { libc::EPOLLIN } as u32;
        // LEBench adds each socket to its epoll set as it makes it; adding
        // them all after making them would leave every one cache-warm for
        // the call (a fresh call over 1,000 read about 0.6 of LEBench's).
        let mut socket_set = None;
        match on {
            "socket" => {
                let epoll = p.get("call").starts_with("epoll");
                let ep = epoll.then(new_epoll).transpose()?;
                fds = unconnected_sockets(wanted, ep.as_ref().map(|ep| (ep, n, mask)))?;
                socket_set = ep;
            }
            _ => {
                let (first, peer) = first_descriptor(on)?;
                server = peer;
                for _ in 1..wanted {
                    fds.push(
                        first
                            .try_clone()
                            .map_err(|e| descriptor_error("duplicating a watched descriptor", e))?,
                    );
                }
                fds.push(first);
            }
        }
        let watched: Vec<RawFd> = fds[..n].iter().map(AsRawFd::as_raw_fd).collect();
        let call = match p.get("call") {
            "select" => select_set(&watched, write)?,
            "poll" | "ppoll" => {
                let events = if write { libc::POLLOUT } else { libc::POLLIN };
                let set = watched
                    .iter()
                    .map(|&fd| libc::pollfd {
                        fd,
                        events,
                        revents: 0,
                    })
                    .collect();
                if p.get("call") == "poll" {
                    Call::Poll(set)
                } else {
                    Call::Ppoll(set)
                }
            }
            call => {
                let ep = match socket_set {
                    Some(ep) => ep,
                    None => epoll_set(&watched, mask)?,
                };
                if call == "epoll_wait" {
                    Call::EpollWait {
                        ep,
                        events: vec![libc::epoll_event { events: 0, u64: 0 }; n],
                    }
                } else {
                    let extra = fds.pop().expect("epoll_ctl opened one more descriptor");
                    Call::EpollCtl { ep, extra, mask }
                }
            }
        };
        Ok(Multiplex {
            call,
            watched: fds,
            server,
            expected: n,
        })
    }

    /// One call, its result checked.
    #[inline]
    fn once(&mut self) -> Result<()> {
        let ready = match &mut self.call {
            Call::Select { set, nfds, write } => {
                let mut copy = *set;
                let mut tv = libc::timeval {
                    tv_sec: 0,
                    tv_usec: 0,
                };
                let (r, w) = if *write {
                    (std::ptr::null_mut(), &raw mut copy)
                } else {
                    (&raw mut copy, std::ptr::null_mut())
                };
                // SAFETY: `copy` is a valid fd_set covering descriptors below `nfds`
                // (all below FD_SETSIZE, checked in `select_set`); `tv` is valid.
                unsafe { libc::select(*nfds, r, w, std::ptr::null_mut(), &mut tv) }
            }
            Call::Poll(set) => {
                // SAFETY: `set` is a valid array of `set.len()` pollfds.
                unsafe { libc::poll(set.as_mut_ptr(), set.len() as libc::nfds_t, 0) }
            }
            Call::Ppoll(set) => {
                let zero = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: as for poll; a valid timespec, no signal mask.
                unsafe {
                    libc::ppoll(
                        set.as_mut_ptr(),
                        set.len() as libc::nfds_t,
                        &zero,
                        std::ptr::null(),
                    )
                }
            }
            Call::EpollWait { ep, events } => {
                // SAFETY: `events` has room for `events.len()` entries.
                unsafe {
                    libc::epoll_wait(ep.as_raw_fd(), events.as_mut_ptr(), events.len() as i32, 0)
                }
            }
            Call::EpollCtl { ep, extra, mask } => {
                return epoll_ctl_pair(ep.as_raw_fd(), extra.as_raw_fd(), *mask);
            }
        };
        if ready < 0 {
            return Err(last_error("the multiplexing call failed"));
        }
        if ready as usize != self.expected {
            return Err(Error::Measure(format!(
                "the multiplexing call reported {ready} of {} descriptors ready",
                self.expected
            )));
        }
        Ok(())
    }
}

impl Workload for Multiplex {
    fn run(&mut self, iters: u64) -> Result<()> {
        if let Call::EpollCtl { ep, extra, mask } = &self.call {
            let (ep, extra, mask) = (ep.as_raw_fd(), extra.as_raw_fd(), *mask);
            for _ in 0..iters {
                epoll_ctl_pair(ep, extra, mask)?;
            }
            return Ok(());
        }
        for _ in 0..iters {
            self.once()?;
        }
        Ok(())
    }

    /// Closes every descriptor (the tcp server then reads end of file and
    /// exits) and checks that the server ended well.
    fn teardown(self: Box<Self>) -> Result<()> {
        let Multiplex {
            call,
            watched,
            server,
            ..
        } = *self;
        drop((call, watched));
        server.map_or(Ok(()), |mut s| s.finish())
    }
}

impl Workload for FreshSets {
    /// `iters` calls, each on a set made for it (untimed) and closed after,
    /// timed alone from a clock read before to one after, as LEBench does.
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            let mut set = Multiplex::build(&self.params)?;
            let start = monotonic_ns();
            set.once()?;
            self.events.push(monotonic_ns() - start);
        }
        Ok(())
    }

    fn take_events(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.events)
    }
}

/// ADD then DEL of `fd` in the epoll set `ep`: two epoll_ctl calls.
#[inline]
fn epoll_ctl_pair(ep: RawFd, fd: RawFd, mask: u32) -> Result<()> {
    let mut ev = libc::epoll_event {
        events: mask,
        u64: fd as u64,
    };
    // SAFETY: `ep` is an epoll descriptor, `fd` an open socket, `ev` valid.
    let added = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
    // SAFETY: as above; DEL ignores the event.
    let deleted = unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, &mut ev) };
    if added < 0 || deleted < 0 {
        return Err(last_error("epoll_ctl failed"));
    }
    Ok(())
}

/// An fd_set of `fds` (each below FD_SETSIZE, else an error naming the limit).
fn select_set(fds: &[RawFd], write: bool) -> Result<Call> {
    let highest = fds.iter().copied().max().unwrap_or(0);
    if highest >= libc::FD_SETSIZE as RawFd {
        return Err(Error::Usage(format!(
            "poll: select can watch descriptors below FD_SETSIZE ({}) only, and descriptor {highest} \
             is needed for this set (others are already open); use fewer fds or call=poll",
            libc::FD_SETSIZE
        )));
    }
    // SAFETY: fd_set is plain data; FD_ZERO initialises it and FD_SET sets
    // bits for descriptors checked above to be below FD_SETSIZE.
    let set = unsafe {
        let mut set: libc::fd_set = std::mem::zeroed();
        libc::FD_ZERO(&mut set);
        for &fd in fds {
            libc::FD_SET(fd, &mut set);
        }
        set
    };
    Ok(Call::Select {
        set,
        nfds: highest + 1,
        write,
    })
}

/// An epoll set watching each of `fds` for `mask`.
fn epoll_set(fds: &[RawFd], mask: u32) -> Result<OwnedFd> {
    let ep = new_epoll()?;
    for &fd in fds {
        epoll_add(&ep, fd, mask)?;
    }
    Ok(ep)
}

/// An empty epoll set.
fn new_epoll() -> Result<OwnedFd> {
    // SAFETY: plain system call; the result is checked.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(descriptor_error(
            "creating an epoll set",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: `ep` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(ep) })
}

/// `fd` added to the epoll set `ep`, watched for `mask`.
fn epoll_add(ep: &OwnedFd, fd: RawFd, mask: u32) -> Result<()> {
    let mut ev = libc::epoll_event {
        events: mask,
        u64: fd as u64,
    };
    // SAFETY: valid descriptors and event.
    if unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
        return Err(last_error("adding a descriptor to the epoll set"));
    }
    Ok(())
}

/// `count` unconnected sockets; with `(ep, n, mask)` the first `n` are
/// each added to `ep` as it is made, as LEBench does.
fn unconnected_sockets(
    count: usize,
    epoll: Option<(&OwnedFd, usize, u32)>,
) -> Result<Vec<OwnedFd>> {
    let mut fds = Vec::with_capacity(count);
    for i in 0..count {
        let fd = unconnected_socket()?;
        if let Some((ep, _, mask)) = epoll.filter(|&(_, n, _)| i < n) {
            epoll_add(ep, fd.as_raw_fd(), mask)?;
        }
        fds.push(fd);
    }
    Ok(fds)
}

/// A TCP socket that is never connected (LEBench's descriptors).
fn unconnected_socket() -> Result<OwnedFd> {
    // SAFETY: plain system call; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(descriptor_error(
            "creating a TCP socket",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: `fd` was just created and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(kv: &[(&str, &str)]) -> Params {
        Params::new(&DEF, kv)
    }

    #[test]
    fn every_call_sees_every_descriptor_ready() {
        for call in ["select", "poll", "ppoll", "epoll_wait", "epoll_ctl"] {
            for on in ["file", "tcp", "socket"] {
                for fds in ["1", "10", "200"] {
                    let p = case(&[("call", call), ("on", on), ("fds", fds)]);
                    if check(&p).is_err() {
                        assert!(call.starts_with("epoll") && on == "file", "{p}");
                        continue;
                    }
                    let mut m = Multiplex::new(&p).unwrap();
                    m.run(20).unwrap();
                    assert_eq!(m.expected, fds.parse::<usize>().unwrap(), "{p}");
                    // The tcp server saw the close and exited well.
                    Box::new(m).teardown().unwrap();
                }
            }
        }
    }

    /// LEBench's method: each call on a new set, timed alone, one event each.
    #[test]
    fn a_fresh_set_per_call_gives_one_event_per_call() {
        for call in ["select", "poll", "ppoll", "epoll_wait"] {
            let p = case(&[
                ("call", call),
                ("on", "socket"),
                ("fds", "10"),
                ("set", "fresh"),
            ]);
            check(&p).unwrap();
            let mut m = setup(&p, &Placement::unpinned()).unwrap();
            m.run(5).unwrap();
            let events = m.take_events();
            assert_eq!(events.len(), 5, "{p}");
            assert!(
                events.iter().all(|&ns| ns > 0 && ns < 1_000_000_000),
                "{p}: {events:?}"
            );
            assert!(m.take_events().is_empty());
            m.teardown().unwrap();
        }
        let Sampling::EventsFor(count) = DEF.sampling else {
            unreachable!()
        };
        assert_eq!(
            count(&case(&[("on", "socket"), ("set", "fresh")])),
            Some(FRESH_EVENTS)
        );
        assert_eq!(count(&case(&[("on", "socket")])), None);
        let refused = check(&case(&[("on", "tcp"), ("set", "fresh")])).unwrap_err();
        assert!(refused.to_string().contains("needs on=socket"), "{refused}");
    }

    #[test]
    fn a_descriptor_not_ready_is_an_error_not_a_silent_miss() {
        let mut m = Multiplex::new(&case(&[("call", "poll"), ("fds", "4")])).unwrap();
        if let Call::Poll(set) = &mut m.call {
            set[3].events = 0; // watching nothing: not ready
        }
        assert!(m.once().unwrap_err().to_string().contains("3 of 4"));
    }

    #[test]
    fn limits_are_refused_before_anything_runs() {
        let select = check(&case(&[("call", "select"), ("fds", "1025")])).unwrap_err();
        assert!(select.to_string().contains("FD_SETSIZE (1024)"), "{select}");
        let epoll = check(&case(&[("call", "epoll_wait"), ("on", "file")])).unwrap_err();
        assert!(epoll.to_string().contains("EPERM"), "{epoll}");
        let many = check(&case(&[("call", "poll"), ("fds", "1048576")])).unwrap_err();
        assert!(many.to_string().contains("ulimit -n"), "{many}");
    }
}
