//! Whole-message reads and writes on raw descriptors, and pipe creation, for
//! benchmarks that pass tokens and messages between tasks.
//!
//! Safe to call in a forked child: plain system calls, no allocation (an
//! `io::Error` from errno does not allocate). EINTR is retried unless a stop
//! was requested (then it is returned, so a helper blocked in a read or write
//! can be made to give up); short reads and writes are continued.

use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::error::Result;
use crate::measure::limits::descriptor_error;

/// Reads exactly `buf.len()` bytes. `Ok(false)` means end of file before the
/// first byte (the peer closed); end of file in the middle is an error.
#[inline]
pub fn read_exact(fd: RawFd, buf: &mut [u8]) -> io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unfilled part of `buf`.
        let n = unsafe { libc::read(fd, buf[done..].as_mut_ptr().cast(), buf.len() - done) };
        match n {
            0 if done == 0 => return Ok(false),
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n if n > 0 => done += n as usize,
            _ => {
                let e = io::Error::last_os_error();
                if !retry(&e) {
                    return Err(e);
                }
            }
        }
    }
    Ok(true)
}

/// Reads exactly `buf.len()` bytes where a message must come: end of file is
/// an error (`UnexpectedEof`) too.
#[inline]
pub fn read_message(fd: RawFd, buf: &mut [u8]) -> io::Result<()> {
    if read_exact(fd, buf)? {
        Ok(())
    } else {
        Err(io::ErrorKind::UnexpectedEof.into())
    }
}

/// Writes all of `buf`.
#[inline]
pub fn write_all(fd: RawFd, buf: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        // SAFETY: the pointer and length describe the unwritten part of `buf`.
        let n = unsafe { libc::write(fd, buf[done..].as_ptr().cast(), buf.len() - done) };
        if n >= 0 {
            done += n as usize;
        } else {
            let e = io::Error::last_os_error();
            if !retry(&e) {
                return Err(e);
            }
        }
    }
    Ok(())
}

/// Reads and drops what arrives on `fd` until end of file (the peer closed
/// every copy of its end) or an error other than EINTR: lmbench's servers
/// block this way in a `read` on each connection they accept.
pub fn read_until_eof(fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    loop {
        // SAFETY: the pointer and length describe `byte`.
        match unsafe { libc::read(fd, byte.as_mut_ptr().cast(), 1) } {
            0 => return Ok(()),
            n if n > 0 => {}
            _ => {
                let e = io::Error::last_os_error();
                if !retry(&e) {
                    return Err(e);
                }
            }
        }
    }
}

/// Reads what `fd` has (at most `buf.len()` bytes, 0 at end of file),
/// waiting for it in 20 ms slices and giving up (`Interrupted`) once a stop
/// is requested: the signal may have been delivered to another thread, so
/// this thread's blocking read would not have been interrupted.
pub fn read_or_stop(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        if crate::measure::interrupt::requested() {
            return Err(io::ErrorKind::Interrupted.into());
        }
        // SAFETY: one valid pollfd.
        match unsafe { libc::poll(&mut pfd, 1, 20) } {
            0 => continue,
            n if n > 0 => break,
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    // SAFETY: the pointer and length describe `buf`.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Whether a failed call is retried: only when a signal interrupted it and
/// no stop was requested.
#[inline]
pub fn retry(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Interrupted && !crate::measure::interrupt::requested()
}

/// A pipe as (read end, write end), close-on-exec (`std::io::pipe`), with
/// descriptor-limit errors worded as osbench words them.
pub fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let (r, w) = std::io::pipe().map_err(|e| descriptor_error("creating a pipe", e))?;
    Ok((r.into(), w.into()))
}

/// A connected AF_UNIX stream socket pair, close-on-exec (`UnixStream::pair`).
pub fn socketpair() -> Result<(OwnedFd, OwnedFd)> {
    let (a, b) = UnixStream::pair().map_err(|e| descriptor_error("creating a socket pair", e))?;
    Ok((a.into(), b.into()))
}

/// The last OS error (errno) as an error saying what failed.
pub fn last_error(what: &str) -> crate::error::Error {
    crate::error::Error::io(what, io::Error::last_os_error())
}

/// Refuses a case that needs `needed` more descriptors than the soft
/// `RLIMIT_NOFILE` (`ulimit -n`) leaves room for beside those already open,
/// naming the limit, its value and how to raise it.
pub fn descriptors_needed(bench: &str, needed: u64) -> Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // unknown: setting up will say if it runs out
    }
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    if lim.rlim_cur != libc::RLIM_INFINITY && needed + open > lim.rlim_cur {
        return Err(crate::error::Error::Usage(format!(
            "{bench}: the case needs {needed} descriptors and {open} are open, beyond the limit \
             `ulimit -n` = {}; raise it (`ulimit -n {}`, up to the hard limit {}) or ask for fewer",
            lim.rlim_cur,
            needed + open + 16,
            if lim.rlim_max == libc::RLIM_INFINITY {
                "unlimited".to_string()
            } else {
                lim.rlim_max.to_string()
            }
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn round_trip_and_eof() {
        let (r, w) = pipe().unwrap();
        write_all(w.as_raw_fd(), b"hello").unwrap();
        let mut buf = [0u8; 5];
        assert!(read_exact(r.as_raw_fd(), &mut buf).unwrap());
        assert_eq!(&buf, b"hello");
        drop(w);
        assert!(!read_exact(r.as_raw_fd(), &mut buf).unwrap());
    }

    #[test]
    fn eof_mid_message_is_an_error() {
        let (r, w) = pipe().unwrap();
        write_all(w.as_raw_fd(), b"he").unwrap();
        drop(w);
        let mut buf = [0u8; 5];
        assert!(read_exact(r.as_raw_fd(), &mut buf).is_err());
    }
}
