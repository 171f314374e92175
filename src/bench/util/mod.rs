//! What the families share and are not families themselves: selectors and
//! their resolution into cases (`select`), raw-descriptor I/O (`fdio`),
//! futex waits and wakes (`futex`), what confines a thread (`confine`:
//! seccomp, Landlock) or observes it (`observe`: audit rules, probes) for
//! `sandbox`, POSIX threads made as C benchmarks make them (`plain_thread`),
//! the helper tasks and working sets of the message-passing
//! families (`ring`), loads, stores and sums that compile as lmbench's
//! C loops do (`words`), and the system's page size.

pub mod confine;
pub mod fdio;
pub mod futex;
pub mod observe;
pub mod plain_thread;
pub mod ring;
pub mod select;
pub mod words;

/// The system's page size in bytes.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}
