//! What `osbench agent --init` does as PID 1 of a User-Mode Linux guest (or
//! of a virtual machine booted from `osbench guest-image`'s initramfs)
//! before serving, and at the end: mount what the benchmarks need on a
//! read-only hostfs root or an initramfs (/proc, /sys, /dev, a tmpfs on /tmp), put the
//! console in raw mode (no echo of requests, no CR added to replies), and
//! power the guest off when the agent is done. Any agent whose channel is a
//! terminal also gets the raw mode. Left out: everything else an init does
//! (no services, no reaping beyond the agent's own children).

use std::ffi::CString;

use crate::error::{Error, Result};

/// Mounts /proc, /sys, /dev (devtmpfs) and a tmpfs on /tmp; fails unless
/// this process is PID 1 or /proc cannot be mounted. A mount point that is
/// already mounted is fine.
pub fn become_init() -> Result<()> {
    if !is_pid1() {
        return Err(Error::Measure(
            "agent --init is the init of a guest (PID 1); run `osbench agent` without --init"
                .into(),
        ));
    }
    // /proc is needed (the environment, CPU times); the others are used by
    // some benchmarks only, and a kernel may lack one: those failures are said
    // on the console and the agent goes on.
    mount("proc", "/proc", "")?;
    for (fstype, target, data) in [
        ("sysfs", "/sys", ""),
        ("devtmpfs", "/dev", ""),
        ("tmpfs", "/tmp", "size=128m,mode=1777"),
    ] {
        if let Err(e) = mount(fstype, target, data) {
            eprintln!("osbench agent: warning: {e}");
        }
    }
    Ok(())
}

/// Whether this process is PID 1 (of the system, or of a PID namespace).
pub fn is_pid1() -> bool {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() == 1 }
}

/// mount(2) of a pseudo file system; EBUSY (already mounted) is not an error.
fn mount(fstype: &str, target: &str, data: &str) -> Result<()> {
    let c = |s: &str| CString::new(s).expect("no NUL in a mount argument");
    let (source, fs, dir, opts) = (c(fstype), c(fstype), c(target), c(data));
    // SAFETY: every pointer is a live NUL-terminated string for the call.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            dir.as_ptr(),
            fs.as_ptr(),
            0,
            opts.as_ptr().cast(),
        )
    };
    let err = std::io::Error::last_os_error();
    if rc != 0 && err.raw_os_error() != Some(libc::EBUSY) {
        return Err(Error::io(format!("mounting {fstype} on {target}"), err));
    }
    Ok(())
}

/// Puts `fd` in raw mode if it is a terminal: no echo, no line editing, no
/// CR/LF translation, so the channel carries the protocol's bytes as they are.
pub fn raw_if_terminal(fd: libc::c_int) {
    // SAFETY: a zeroed termios is a valid buffer for tcgetattr to fill;
    // isatty, tcgetattr, cfmakeraw and tcsetattr only read and write it and
    // the terminal's settings.
    unsafe {
        if libc::isatty(fd) != 1 {
            return;
        }
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
        }
    }
}

/// Flushes the file systems and powers the guest off; it does not return.
/// Exiting PID 1 instead would panic the guest's kernel. Anything but PID 1
/// just exits (status 1): a root process would power the host off.
pub fn power_off() -> ! {
    if !is_pid1() {
        std::process::exit(1);
    }
    // The console (a serial port, slower still under TCG) may still be
    // sending the last lines: the kernel's own "reboot: Power down", printed
    // at once, landed inside them (a LAVA end marker split in two).
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    for fd in [libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: tcdrain only waits on a descriptor (ENOTTY when not a terminal).
        unsafe { libc::tcdrain(fd) };
    }
    // SAFETY: sync and reboot take no pointers; reboot(RB_POWER_OFF) ends
    // the (guest) system, which is what PID 1 of a guest is asked for.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    // reboot only returns on failure (not PID 1 of a namespace that may).
    std::process::exit(1)
}
