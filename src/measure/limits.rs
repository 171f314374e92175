//! Resource limits: errors of fork, thread and descriptor creation worded
//! with the limit to raise (`ulimit -n`, `ulimit -u`, memory), and the
//! address-space limit (`ulimit -v`) fitted and checked before a case
//! starts threads.

use std::io;

use crate::env::process::limit_hint;
use crate::error::{Error, Result};

/// fork failed (errno just set): say which limit to raise.
pub fn fork_error(started: usize) -> Error {
    process_error(started, io::Error::last_os_error())
}

/// A child process could not be started (fork, posix_spawn, exec of a
/// command): the limit its errno points to.
pub fn process_error(started: usize, e: io::Error) -> Error {
    let hint = limit_hint(&e).unwrap_or_else(|| "it failed".to_string());
    let after = if started > 0 {
        format!(" after {started} children")
    } else {
        String::new()
    };
    Error::io(format!("starting a child process{after}: {hint}"), e)
}

/// An error for a failed pipe/socket/open: names the descriptor limit on EMFILE/ENFILE.
pub fn descriptor_error(what: &str, e: io::Error) -> Error {
    let hint = match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => limit_hint(&e).map(|h| format!("; {h}")),
        _ => None,
    };
    Error::io(format!("{what}{}", hint.unwrap_or_default()), e)
}

/// A thread could not be started: the limit its errno points to. glibc's
/// pthread_create says EAGAIN both for the thread limit and for a stack it
/// could not map, so both limits are named then.
pub fn thread_error(started: usize, e: io::Error) -> Error {
    let hint = match e.raw_os_error() {
        Some(libc::EAGAIN) => format!(
            "the thread limit or the address space for its stack was exhausted: raise `ulimit -u` \
             (now {}) or `ulimit -v` (now {}), or the kernel's kernel.threads-max",
            crate::env::process::limit_text(libc::RLIMIT_NPROC),
            crate::env::process::limit_text(libc::RLIMIT_AS)
        ),
        _ => limit_hint(&e).unwrap_or_else(|| "it failed".to_string()),
    };
    Error::io(format!("starting thread {}: {hint}", started + 1), e)
}

/// Address space a thread takes in osbench's own process (a 16–64 KiB
/// stack, its guard page, TLS), and what the run needs after measuring
/// (statistics, the document): both generous, so a run never aborts for
/// want of memory half-way. Child processes have address spaces of their own.
const PER_THREAD_BYTES: usize = 128 << 10;
const HEADROOM_BYTES: usize = 8 << 20;

/// Under a finite `ulimit -v`, makes the C library's allocator use one
/// arena: each extra arena reserves 64 MiB of address space, which a few
/// threads' first allocations would otherwise exhaust (glibc then aborts
/// inside the thread). Nothing changes without such a limit.
pub fn fit_address_space_limit() {
    if address_space_limit().is_some() {
        #[cfg(target_env = "gnu")]
        // SAFETY: mallopt only sets an allocator parameter; M_ARENA_MAX is -8.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// The soft RLIMIT_AS in bytes, `None` when unlimited.
fn address_space_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// Before a case that starts `threads` threads is set up: under a finite `ulimit -v`,
/// checks (by reserving and releasing it) that the address space it and
/// the rest of the run need is still free, so that the run stops here with
/// a message instead of aborting mid-way when an allocation fails.
pub fn check_address_space(what: &str, threads: usize) -> Result<()> {
    let Some(limit) = address_space_limit() else {
        return Ok(());
    };
    let need = HEADROOM_BYTES + threads * PER_THREAD_BYTES;
    // SAFETY: an anonymous PROT_NONE mapping at an address of the kernel's
    // choosing touches no existing memory; it is unmapped at once.
    let free = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            need,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        );
        p != libc::MAP_FAILED && libc::munmap(p, need) == 0
    };
    if free {
        return Ok(());
    }
    Err(Error::Measure(format!(
        "{what} needs about {} MiB more address space than `ulimit -v` ({} KiB) leaves free: \
         raise it (e.g. `ulimit -v unlimited`) or run fewer threads",
        need >> 20,
        limit >> 10
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_hint_follows_from_its_errno() {
        let hint = |errno| limit_hint(&io::Error::from_raw_os_error(errno));
        assert!(hint(libc::EAGAIN).unwrap().contains("ulimit -u"));
        assert!(hint(libc::ENOMEM).unwrap().contains("ulimit -v"));
        assert!(hint(libc::EMFILE).unwrap().contains("ulimit -n"));
        assert!(hint(libc::ENFILE).unwrap().contains("fs.file-max"));
        assert_eq!(hint(libc::EACCES), None);
        let spawn = process_error(0, io::Error::from_raw_os_error(libc::EAGAIN)).to_string();
        assert!(
            spawn.contains("ulimit -u") && !spawn.contains("ulimit -v"),
            "{spawn}"
        );
        let thread = thread_error(3, io::Error::from_raw_os_error(libc::ENOMEM)).to_string();
        assert!(
            thread.contains("thread 4") && thread.contains("ulimit -v"),
            "{thread}"
        );
        assert!(!thread.contains("ulimit -u"), "{thread}");
    }

    #[test]
    fn descriptor_errors_name_the_limit() {
        let e = descriptor_error(
            "creating a pipe",
            io::Error::from_raw_os_error(libc::EMFILE),
        );
        assert!(e.to_string().contains("ulimit -n"), "{e}");
    }
}
