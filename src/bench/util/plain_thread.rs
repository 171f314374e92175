//! POSIX threads made the way C benchmarks make them: pthread_create with a
//! stack size and default everything else. Rust's std threads also map a
//! signal stack each and unmap it as they exit (a munmap, so a TLB
//! shoot-down, in the exiting thread's last microseconds), which is work
//! inside a timed hackbench -T run (`ring`) and inside perf bench futex's
//! events (`futex`), whose threads exit while others are timed.
//!
//! Leaves out: names (the caller sets one if it wants), stop handling (the
//! threads die with their process) and placement (the body pins itself).

use std::io;

use crate::error::{Error, Result};

/// What a plain thread runs: its body, boxed so it crosses pthread_create's `void *`.
pub type PlainBody = Box<dyn FnOnce() -> io::Result<()> + Send>;

/// A joinable POSIX thread (dropped unjoined, it is detached).
pub struct PlainThread(libc::pthread_t);

impl PlainThread {
    /// Starts `body` on a new POSIX thread with a `stack_bytes` stack (at
    /// least PTHREAD_STACK_MIN).
    pub fn spawn(stack_bytes: usize, body: PlainBody) -> io::Result<PlainThread> {
        /// Runs the body; returns null on success, else a leaked `Box<io::Error>`
        /// that [`PlainThread::join`] takes back (a panic becomes an error too).
        extern "C" fn start(arg: *mut libc::c_void) -> *mut libc::c_void {
            // SAFETY: `arg` is the `Box<PlainBody>` leaked by `spawn` for this thread alone.
            let body = unsafe { Box::from_raw(arg.cast::<PlainBody>()) };
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
                .unwrap_or_else(|_| Err(io::Error::other("a helper thread panicked")));
            match outcome {
                Ok(()) => std::ptr::null_mut(),
                Err(e) => Box::into_raw(Box::new(e)).cast(),
            }
        }
        let arg = Box::into_raw(Box::new(body));
        let mut thread: libc::pthread_t = 0;
        // SAFETY: the attribute object is initialised before use and destroyed
        // after; `start` takes ownership of `arg` only if the thread was created,
        // otherwise it is taken back here.
        let err = unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            libc::pthread_attr_init(&mut attr);
            libc::pthread_attr_setstacksize(&mut attr, stack_bytes.max(libc::PTHREAD_STACK_MIN));
            let err = libc::pthread_create(&mut thread, &attr, start, arg.cast());
            libc::pthread_attr_destroy(&mut attr);
            if err != 0 {
                drop(Box::from_raw(arg));
            }
            err
        };
        if err == 0 {
            Ok(PlainThread(thread))
        } else {
            Err(io::Error::from_raw_os_error(err))
        }
    }

    /// Names the thread (its comm: 15 bytes at most, longer names are refused).
    pub fn set_name(&self, name: &std::ffi::CStr) -> io::Result<()> {
        // SAFETY: the thread is not joined yet, so its handle is valid (glibc
        // answers an error if the thread already ended); `name` is NUL-terminated.
        match unsafe { libc::pthread_setname_np(self.0, name.as_ptr()) } {
            0 => Ok(()),
            err => Err(io::Error::from_raw_os_error(err)),
        }
    }

    /// Waits for the thread and returns how its body ended.
    pub fn join(self) -> Result<()> {
        let thread = self.0;
        // Joined here, so never detached by `drop`.
        std::mem::forget(self);
        let mut ret: *mut libc::c_void = std::ptr::null_mut();
        // SAFETY: `thread` was created joinable by `spawn` and is joined once.
        let err = unsafe { libc::pthread_join(thread, &mut ret) };
        if err != 0 {
            return Err(Error::io(
                "joining a helper thread",
                io::Error::from_raw_os_error(err),
            ));
        }
        if ret.is_null() {
            return Ok(());
        }
        // SAFETY: a non-null result is the `Box<io::Error>` leaked by `start`.
        let e = unsafe { Box::from_raw(ret.cast::<io::Error>()) };
        Err(Error::io("a helper thread failed", *e))
    }
}

/// Dropping an unjoined thread detaches it: it runs on until its body returns
/// or its process ends (helpers that die with their process are dropped so;
/// joining them here would wait for ever).
impl Drop for PlainThread {
    fn drop(&mut self) {
        // SAFETY: a dropped thread was not joined (`join` forgets it) nor
        // detached; the handle is not used again.
        unsafe { libc::pthread_detach(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_thread_runs_its_body_and_reports_how_it_ended() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = PlainThread::spawn(
            64 << 10,
            Box::new(move || {
                tx.send(7).unwrap();
                Ok(())
            }),
        )
        .unwrap();
        t.join().unwrap();
        assert_eq!(rx.recv().unwrap(), 7);
        let failing =
            PlainThread::spawn(1 << 20, Box::new(|| Err(io::Error::other("no")))).unwrap();
        assert!(failing.join().unwrap_err().to_string().contains("no"));
        // A panic's message needs more than PTHREAD_STACK_MIN (no signal stack catches an overflow).
        let panicking = PlainThread::spawn(1 << 20, Box::new(|| panic!("inside"))).unwrap();
        assert!(
            panicking
                .join()
                .unwrap_err()
                .to_string()
                .contains("panicked")
        );
    }

    #[test]
    fn dropping_a_plain_thread_lets_it_run_on() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let thread = PlainThread::spawn(
            1 << 20,
            Box::new(move || {
                go_rx.recv().map_err(io::Error::other)?;
                tx.send(1).map_err(io::Error::other)
            }),
        )
        .unwrap();
        // Dropped while it waits, elsewhere, so a drop that waited fails the test.
        let dropper = std::thread::spawn(move || drop(thread));
        let since = std::time::Instant::now();
        while !dropper.is_finished() {
            assert!(
                since.elapsed() < std::time::Duration::from_secs(5),
                "the drop waited"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        go_tx.send(()).unwrap();
        assert_eq!(rx.recv_timeout(std::time::Duration::from_secs(5)), Ok(1));
    }
}
