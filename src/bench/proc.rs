//! `proc`: the cost of creating tasks, lmbench `lat_proc` and more
//! (lmbench `src/lat_proc.c`, `src/hello.c`). Unit: µs per creation, child's
//! end included.
//!
//! - `fork`: fork(), the child `_exit`s at once, the parent waits (lmbench,
//!   whose child calls exit(1): measured, that costs what osbench's larger
//!   parent costs over a small C one, see `differs`);
//! - `exec`: fork, the child closes stdout and execve()s a tiny program with an
//!   empty environment, the parent waits (lmbench);
//! - `sh`: the same through `/bin/sh -c` (lmbench);
//! - `spawn`: posix_spawn() of the tiny program (stdout closed) + wait;
//! - `vfork`: clone(CLONE_VM | CLONE_VFORK) on a small separate stack — what
//!   vfork() does, without Rust having to return twice from one call — then
//!   execve of the tiny program + wait;
//! - `thread`: pthread_create of an empty function + pthread_join;
//! - `clone3`: clone3() without CLONE_PIDFD (SIGCHLD as its exit signal),
//!   the child `_exit`s at once, the parent waits (lat_proc fork's method);
//! - `pidfd-spawn`: clone3() with CLONE_PIDFD, the child `_exit`s, the
//!   parent waits through the pidfd (waitid(P_PIDFD)) and closes it;
//! - `pidfd-signal`: pidfd_send_signal(SIGUSR1) to a child that answers
//!   with one byte on a pipe once sigwaitinfo() returns it, the parent reads
//!   it: a round trip, lmbench lat_sig's question through a pidfd (lat_sig
//!   signals itself; here the signal crosses processes, so two wake-ups are
//!   inside). The child is forked once by `measure::supervise` and its
//!   pidfd taken with pidfd_open;
//! - `pidfd-open`: pidfd_open() of that live child + close().
//!
//! LEBench's fork and thread tests (its `forkTest`, `threadTest`) as latency
//! distributions, one event per task, each stamped with CLOCK_MONOTONIC
//! just before the call:
//! - `fork_return`: until fork() returns in the parent (LEBench's parent
//!   figure); the child `_exit`s and is waited for untimed;
//! - `fork_child`: until the child's first instruction, which writes the
//!   clock to a MAP_SHARED page (LEBench's child figure);
//! - `thread_return`, `thread_child`: the same for pthread_create and the
//!   new thread's first instruction (LEBench's "thr create").
//!
//! `vmas=N` maps N extra single-page MAP_SHARED anonymous mappings (never
//! touched, so each is a VMA of its own and no page) before the case, as
//! LEBench's "big fork" (6,000) and "huge fork" (12,000) do; fork then copies
//! them (and with `fork`, the child's exit tears them down, inside the time).
//!
//! The tiny program is shipped inside osbench: a 165-byte static x86-64 ELF
//! (below, hand-assembled) that writes "Hello world\n" and exits 0, kept in
//! `$TMPDIR` as one file per user (`osbench-hello-<uid>`, written once and
//! checked before each use), so even a killed osbench leaves nothing new
//! behind. (Executing it through `/proc/<pid>/fd/<n>` of an unnamed file was
//! tried: it made exec ~10–20 % slower here, a procfs path walk lmbench does
//! not pay.) So `exec` measures the kernel's execve with no
//! dynamic loader and no large binary; lmbench's `hello` is a dynamically
//! linked C program, so its exec figure also includes ld.so.
//! On other architectures the exec-family cases report an error. Children
//! inherit the timing task's placement (pinned to one CPU by default).

use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use std::sync::atomic::{AtomicU64, Ordering};

use tempfile::TempPath;

use super::fault::{Region, map_error};
use super::util::page_size;
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Sampling, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::clock::monotonic_ns;
use crate::measure::limits::{fork_error, process_error, thread_error};
use crate::measure::placement::Placement;
use crate::measure::supervise::{Exit, wait_child};

pub static DEF: BenchDef = BenchDef {
    name: "proc",
    summary: "creating a process or thread, to its end (lmbench lat_proc: fork, exec, sh; and more) or to its first run (LEBench fork, thr create)",
    unit: Unit::Us,
    params: &[
        ParamSpec {
            name: "case",
            help: "how the task is created",
            kind: ParamKind::Choice(&[
                "fork",
                "exec",
                "sh",
                "spawn",
                "vfork",
                "thread",
                "clone3",
                "pidfd-spawn",
                "pidfd-signal",
                "pidfd-open",
                "fork_return",
                "fork_child",
                "thread_return",
                "thread_child",
            ]),
            default: "fork",
        },
        ParamSpec {
            name: "vmas",
            help: "extra single-page mappings the process holds (LEBench big fork: 6000, huge: 12000)",
            kind: ParamKind::Int {
                min: 0,
                max: 60_000,
            },
            default: "0",
        },
    ],
    default_cases: DefaultCases::EachOf("case"),
    case_name: |p| match p.int("vmas") {
        0 => p.get("case").to_string(),
        n => format!("{}/{n}vmas", p.get("case")),
    },
    op: |p| {
        match p.get("case") {
            "fork" => "fork() + child _exit + waitpid",
            "exec" => "fork() + execve(tiny static program, empty env, stdout closed) + waitpid",
            "sh" => "fork() + /bin/sh -c tiny program + waitpid",
            "spawn" => "posix_spawn(tiny static program, stdout closed) + waitpid",
            "vfork" => "clone(CLONE_VM|CLONE_VFORK) + execve(tiny static program) + waitpid",
            "thread" => "pthread_create(empty function) + pthread_join",
            "clone3" => "clone3() + child _exit + waitpid",
            "pidfd-spawn" => "clone3(CLONE_PIDFD) + child _exit + waitid(P_PIDFD) + close",
            "pidfd-signal" => {
                "pidfd_send_signal(SIGUSR1) to a child + its 1-byte answer on a pipe (round trip)"
            }
            "pidfd-open" => "pidfd_open() of a live child + close()",
            "fork_return" => "one fork(): the clock before it → its return in the parent",
            "fork_child" => {
                "one fork(): the clock before it → the child's first instruction (a clock read)"
            }
            "thread_return" => "one pthread_create(): the clock before it → its return",
            _ => "one pthread_create(): the clock before it → the new thread's first instruction",
        }
        .to_string()
    },
    anchor: |p| {
        let lebench = |side: &str| match p.int("vmas") {
            0 => Some(format!("LEBench fork, {side}")),
            6000 => Some(format!("LEBench big fork, {side}")),
            12000 => Some(format!("LEBench huge fork, {side}")),
            _ => None,
        };
        let named = match (p.get("case"), p.int("vmas")) {
            ("fork_return", _) => lebench("parent"),
            ("fork_child", _) => lebench("child"),
            ("thread_return", 0) => Some("LEBench thr create, parent".to_string()),
            ("thread_child", 0) => Some("LEBench thr create, child".to_string()),
            (_, n) if n > 0 => None,
            ("fork", _) => Some("lat_proc fork".to_string()),
            ("exec", _) => Some("lat_proc exec".to_string()),
            ("sh", _) => Some("lat_proc shell".to_string()),
            ("clone3", _) => Some("(none: lat_proc fork's method, through clone3)".to_string()),
            ("pidfd-spawn", _) => Some(
                "(none: lat_proc fork's method, clone3 CLONE_PIDFD + waitid P_PIDFD)".to_string(),
            ),
            ("pidfd-signal", _) => {
                Some("(none: lat_sig's method, through pidfd_send_signal)".to_string())
            }
            _ => None,
        };
        named.unwrap_or_else(|| match p.int("vmas") {
            0 => format!("(none: {})", p.get("case")),
            n => format!("(none: {} with {n} extra mappings)", p.get("case")),
        })
    },
    sampling: Sampling::EventsFor(|p| {
        matches!(
            p.get("case"),
            "fork_return" | "fork_child" | "thread_return" | "thread_child"
        )
        .then_some(FIRST_RUN_EVENTS)
    }),
    differs: "exec and spawn run a 165-byte static program, so no dynamic loader is timed (lmbench's hello is dynamically linked: its exec figure includes ld.so). fork's child calls _exit where lmbench's calls exit(1), and osbench's parent is a large Rust process: measured on one CPU of the AMD guest (5 rounds, medians of the rounds' ratios), exit(1) costs 1.13x _exit in a small C loop and osbench's parent 1.14x that loop's, so the two cancel (osbench ÷ C exit(1) loop 1.00); lat_proc fork itself reads 1.23x that C loop (its harness, not the operation), so proc:case=fork ÷ lat_proc fork is 0.78 (docs/crosscheck.md). On the Intel guest (6 Dec, lat_proc on osbench's CPU): 0.732 (73 vs 100 µs); a C loop there took 69 µs with _exit and 80 µs with exit(1), so lat_proc's harness adds 1.25x again; its children make no system call but set_robust_list and exit_group.",
    setup,
    check: |p| {
        let vmas = p.int("vmas") as usize;
        super::mmap::check_map_count(&format!("proc:{p}"), vmas)
    },
    unavailable: |p| pidfd::unavailable(p.get("case")),
    ..BenchDef::DEFAULTS
};

/// Tasks created per case of LEBench's kind (each one event).
const FIRST_RUN_EVENTS: u64 = 1000;

/// A static x86-64 Linux ELF: `write(1, "Hello world\n", 12); exit(0)`.
/// ELF header (64 bytes) + one PT_LOAD program header (56) at 0x400000,
/// entry 0x400078, then 33 bytes of code and the 12-byte message.
#[rustfmt::skip]
const TINY_ELF: [u8; 165] = [
    // e_ident: magic, 64-bit, little endian, version 1, System V ABI
    0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    2, 0,                                           // e_type: executable
    0x3e, 0,                                        // e_machine: x86-64
    1, 0, 0, 0,                                     // e_version
    0x78, 0, 0x40, 0, 0, 0, 0, 0,                   // e_entry 0x400078
    0x40, 0, 0, 0, 0, 0, 0, 0,                      // e_phoff 64
    0, 0, 0, 0, 0, 0, 0, 0,                         // e_shoff
    0, 0, 0, 0,                                     // e_flags
    0x40, 0, 0x38, 0, 1, 0,                         // e_ehsize 64, e_phentsize 56, e_phnum 1
    0, 0, 0, 0, 0, 0,                               // e_shentsize, e_shnum, e_shstrndx
    // program header: PT_LOAD, R+X, whole file at 0x400000
    1, 0, 0, 0, 5, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0,                         // p_offset
    0, 0, 0x40, 0, 0, 0, 0, 0,                      // p_vaddr
    0, 0, 0x40, 0, 0, 0, 0, 0,                      // p_paddr
    165, 0, 0, 0, 0, 0, 0, 0,                       // p_filesz
    165, 0, 0, 0, 0, 0, 0, 0,                       // p_memsz
    0, 0x10, 0, 0, 0, 0, 0, 0,                      // p_align 0x1000
    // code
    0xb8, 1, 0, 0, 0,                               // mov eax, 1 (write)
    0xbf, 1, 0, 0, 0,                               // mov edi, 1
    0x48, 0x8d, 0x35, 0x10, 0, 0, 0,                // lea rsi, [rip + 16] (the message)
    0xba, 12, 0, 0, 0,                              // mov edx, 12
    0x0f, 0x05,                                     // syscall
    0xb8, 60, 0, 0, 0,                              // mov eax, 60 (exit)
    0x31, 0xff,                                     // xor edi, edi
    0x0f, 0x05,                                     // syscall
    b'H', b'e', b'l', b'l', b'o', b' ', b'w', b'o', b'r', b'l', b'd', b'\n',
];

/// The tiny program at a path any process osbench starts can exec (also
/// `osbench time`'s empty command: the floor of starting any process).
pub(crate) struct Tiny {
    pub(crate) path: CString,
    /// A private copy, removed when dropped, when the shared one could not be used.
    _private: Option<TempPath>,
}

/// The tiny program as one file per user in `$TMPDIR`
/// (`osbench-hello-<uid>`), written once and kept: a killed osbench cannot
/// leave more than that one file behind, and exec walks an ordinary path to
/// an ordinary file, as lmbench's exec does. A file of that name that is not
/// ours, or not the program, is left alone and a private copy used instead.
pub(crate) fn write_tiny() -> Result<Tiny> {
    if !cfg!(target_arch = "x86_64") {
        return Err(Error::Measure(
            "the exec cases ship a tiny x86-64 program; this architecture is not supported yet"
                .into(),
        ));
    }
    let dir = std::env::temp_dir();
    // SAFETY: getuid has no preconditions and cannot fail.
    let shared = dir.join(format!("osbench-hello-{}", unsafe { libc::getuid() }));
    let (path, private) = if is_the_program(&shared) {
        (shared, None)
    } else {
        let ctx =
            "writing the tiny program to TMPDIR (set TMPDIR to a writable, executable directory)";
        let mut file = tempfile::Builder::new()
            .prefix("osbench-hello-")
            .tempfile_in(&dir)
            .map_err(|e| Error::io(ctx, e))?;
        file.write_all(&TINY_ELF).map_err(|e| Error::io(ctx, e))?;
        file.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io(ctx, e))?;
        // Closing the file first: exec of a file open for writing fails with ETXTBSY.
        let temp = file.into_temp_path();
        // Published under the shared name only if nothing has that name (a
        // link never replaces); another osbench may have won the race.
        let _ = std::fs::hard_link(&temp, &shared);
        if is_the_program(&shared) {
            (shared, None)
        } else {
            (temp.to_path_buf(), Some(temp))
        }
    };
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::Measure("TMPDIR path contains a NUL byte".into()))?;
    wait_until_executable(&path)?;
    Ok(Tiny {
        path: c,
        _private: private,
    })
}

/// Whether `path` is a regular file (not a link) of ours, not writable by
/// others, executable, holding exactly the tiny program.
fn is_the_program(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    // SAFETY: getuid has no preconditions and cannot fail.
    let ours = meta.uid() == unsafe { libc::getuid() };
    let mode = meta.mode() & 0o777;
    meta.is_file()
        && ours
        && mode & 0o022 == 0
        && mode & 0o100 != 0
        && meta.len() == TINY_ELF.len() as u64
        && std::fs::read(path).is_ok_and(|bytes| bytes == TINY_ELF)
}

/// The tiny program could not be run: a file system that forbids exec is
/// only blamed when the errno says so.
fn exec_error(path: &Path, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM | libc::ENOEXEC) => Error::io(
            format!(
                "running the tiny program in {} (set TMPDIR to a directory that allows exec)",
                path.display()
            ),
            e,
        ),
        _ => process_error(0, e),
    }
}

/// Runs the freshly written program once, retrying while exec fails with
/// ETXTBSY: a child another thread forked while the file was open for
/// writing holds a copy of that descriptor until it execs or exits (seen
/// in the parallel test suite). Once the program has run, no such copy is
/// left and none can appear, so the timed execs never meet it.
fn wait_until_executable(path: &Path) -> Result<()> {
    let mut tries = 0;
    loop {
        match std::process::Command::new(path)
            .stdout(std::process::Stdio::null())
            .status()
        {
            Ok(status) if status.success() => return Ok(()),
            Ok(status) => {
                return Err(Error::Measure(format!(
                    "the tiny program in {} ended with {status} instead of exiting 0",
                    path.display()
                )));
            }
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(exec_error(path, e)),
        }
    }
}

enum Case {
    Fork,
    Exec(Exec),
    Sh(Exec),
    Spawn(Exec),
    Vfork(Exec, Vec<u8>),
    Thread,
    /// clone3, with a pidfd to wait through or not.
    Clone3 {
        pidfd: bool,
    },
    /// A child answering pidfd_send_signal, or whose pidfd is opened.
    PidfdSignal(pidfd::Answerer),
    PidfdOpen(pidfd::Answerer),
    /// LEBench's cases: which moment ends each event, and the clock the new
    /// task stamps on its first instruction.
    FirstRun(Moment, Stamp),
}

/// What ends a LEBench event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Moment {
    ForkReturn,
    ForkChild,
    ThreadReturn,
    ThreadChild,
}

/// A word in a MAP_SHARED page: the clock the new task wrote on its first
/// instruction (shared with a forked child too).
struct Stamp(Region);

impl Stamp {
    fn new() -> Result<Self> {
        let page = Region::map(
            page_size(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
        )
        .map_err(|e| map_error("mapping the shared page of the first-run stamp", e))?;
        Ok(Self(page))
    }

    fn word(&self) -> &AtomicU64 {
        // SAFETY: the page is live, writable and page-aligned (so aligned
        // for a u64), and only ever accessed through this atomic.
        unsafe { &*self.0.ptr.cast::<AtomicU64>() }
    }
}

/// What execve needs, prepared once: NUL-terminated strings and pointer arrays.
struct Exec {
    /// Kept open while the pointers below are in use.
    _tiny: Tiny,
    program: CString,
    /// Owns the strings `argv` points into.
    _args: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    envp: [*const libc::c_char; 1],
}

impl Exec {
    /// Runs `tiny` directly, or through `/bin/sh -c tiny`.
    fn new(through_shell: bool) -> Result<Self> {
        let tiny = write_tiny()?;
        let (program, args) = if through_shell {
            let sh = CString::new("/bin/sh").expect("no NUL");
            (
                sh,
                vec![
                    CString::new("sh").expect("no NUL"),
                    CString::new("-c").expect("no NUL"),
                    tiny.path.clone(),
                ],
            )
        } else {
            (tiny.path.clone(), vec![tiny.path.clone()])
        };
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        Ok(Self {
            _tiny: tiny,
            program,
            _args: args,
            argv,
            envp: [std::ptr::null()],
        })
    }
}

struct Proc {
    case: Case,
    /// The extra mappings of `vmas`, unmapped when the case ends.
    _vmas: Vec<Region>,
    /// The latencies of LEBench's cases recorded since the harness last took them, ns.
    events: Vec<u64>,
}

fn setup(p: &Params, _: &Placement) -> Result<Box<dyn Workload>> {
    let case = match p.get("case") {
        "fork" => Case::Fork,
        "exec" => Case::Exec(Exec::new(false)?),
        "sh" => Case::Sh(Exec::new(true)?),
        "spawn" => Case::Spawn(Exec::new(false)?),
        "vfork" => Case::Vfork(Exec::new(false)?, vec![0u8; 64 * 1024]),
        "thread" => Case::Thread,
        "clone3" => Case::Clone3 { pidfd: false },
        "pidfd-spawn" => Case::Clone3 { pidfd: true },
        "pidfd-signal" => Case::PidfdSignal(pidfd::Answerer::start()?),
        "pidfd-open" => Case::PidfdOpen(pidfd::Answerer::start()?),
        "fork_return" => Case::FirstRun(Moment::ForkReturn, Stamp::new()?),
        "fork_child" => Case::FirstRun(Moment::ForkChild, Stamp::new()?),
        "thread_return" => Case::FirstRun(Moment::ThreadReturn, Stamp::new()?),
        _ => Case::FirstRun(Moment::ThreadChild, Stamp::new()?),
    };
    let vmas = (0..p.int("vmas"))
        .map(|_| {
            Region::map(
                page_size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
            )
            .map_err(|e| map_error("mapping the extra single-page VMAs", e))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut bench = Proc {
        case,
        _vmas: vmas,
        events: Vec::new(),
    };
    // Fail at set-up, not while timing, if the program cannot run. A few
    // retries: in a multi-threaded process (the test harness) a child forked
    // by another thread may briefly hold the file's write descriptor, and
    // execve then fails with ETXTBSY.
    let mut attempts = 0;
    while let Err(e) = bench.run(1) {
        attempts += 1;
        if attempts == 10 {
            return Err(e);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    bench.events.clear();
    Ok(Box::new(bench))
}

impl Workload for Proc {
    fn run(&mut self, iters: u64) -> Result<()> {
        for _ in 0..iters {
            let status = match &mut self.case {
                Case::Fork => fork_exit_wait()?,
                Case::Exec(e) | Case::Sh(e) => fork_exec_wait(e)?,
                Case::Spawn(e) => spawn_wait(e)?,
                Case::Vfork(e, stack) => vfork_exec_wait(e, stack)?,
                Case::Thread => {
                    thread_create_join(empty_thread, std::ptr::null_mut())?;
                    Exit::Code(0)
                }
                Case::Clone3 { pidfd } => pidfd::clone3_exit_wait(*pidfd)?,
                Case::PidfdSignal(child) => child.round_trip()?,
                Case::PidfdOpen(child) => child.open_close()?,
                Case::FirstRun(moment, stamp) => {
                    let (latency, status) = first_run(*moment, stamp)?;
                    self.events.push(latency);
                    status
                }
            };
            if status != Exit::Code(0) {
                return Err(Error::Measure(format!(
                    "the child ended with {status:?}, not exit status 0"
                )));
            }
        }
        Ok(())
    }

    fn take_events(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.events)
    }
}

/// One LEBench event: the clock before fork() or pthread_create(), to the
/// `moment` that ends it; the task is waited for (untimed) before returning.
fn first_run(moment: Moment, stamp: &Stamp) -> Result<(u64, Exit)> {
    let word = stamp.word();
    word.store(0, Ordering::Relaxed);
    let (start, returned, status) = match moment {
        Moment::ForkReturn | Moment::ForkChild => {
            let start = monotonic_ns();
            // SAFETY: the child only reads the clock (vDSO clock_gettime,
            // async-signal-safe), stores to the shared page and _exits.
            match unsafe { libc::fork() } {
                -1 => return Err(fork_error(0)),
                // SAFETY: in the child: a clock read, a store and _exit (see above).
                0 => unsafe {
                    word.store(monotonic_ns(), Ordering::Release);
                    libc::_exit(0)
                },
                pid => {
                    let returned = monotonic_ns();
                    (start, returned, wait_child(pid)?)
                }
            }
        }
        Moment::ThreadReturn | Moment::ThreadChild => {
            let arg = std::ptr::from_ref(word).cast_mut().cast();
            let start = monotonic_ns();
            let returned = thread_create_join(stamping_thread, arg)?;
            (start, returned, Exit::Code(0))
        }
    };
    let end = match moment {
        Moment::ForkReturn | Moment::ThreadReturn => returned,
        Moment::ForkChild | Moment::ThreadChild => word.load(Ordering::Acquire),
    };
    if end < start {
        return Err(Error::Measure(
            "the new task wrote no clock reading before it ended".into(),
        ));
    }
    Ok((end - start, status))
}

/// A new thread's first instruction: stamps the clock into the word `arg` points to.
extern "C" fn stamping_thread(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: `arg` is the `&AtomicU64` of a live Stamp, which outlives the
    // thread (first_run joins it before returning).
    let word = unsafe { &*arg.cast::<AtomicU64>() };
    word.store(monotonic_ns(), Ordering::Release);
    std::ptr::null_mut()
}

fn fork_exit_wait() -> Result<Exit> {
    // SAFETY: the child only calls _exit, which is async-signal-safe.
    match unsafe { libc::fork() } {
        -1 => Err(fork_error(0)),
        // SAFETY: _exit in the child, async-signal-safe.
        0 => unsafe { libc::_exit(0) },
        pid => wait_child(pid),
    }
}

fn fork_exec_wait(e: &Exec) -> Result<Exit> {
    // SAFETY: the child only makes async-signal-safe calls (close, execve,
    // _exit) on pointers prepared before the fork, which stay valid in it.
    match unsafe { libc::fork() } {
        -1 => Err(fork_error(0)),
        // SAFETY: in the child: close, execve and _exit on pointers prepared before the fork.
        0 => unsafe {
            libc::close(1);
            libc::execve(e.program.as_ptr(), e.argv.as_ptr(), e.envp.as_ptr());
            libc::_exit(127)
        },
        pid => wait_child(pid),
    }
}

fn spawn_wait(e: &Exec) -> Result<Exit> {
    // SAFETY: the file actions object is initialised, used and destroyed here;
    // every pointer passed to posix_spawn is valid for the call.
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        libc::posix_spawn_file_actions_init(&mut actions);
        libc::posix_spawn_file_actions_addclose(&mut actions, 1);
        let mut pid = 0;
        let r = libc::posix_spawn(
            &mut pid,
            e.program.as_ptr(),
            &actions,
            std::ptr::null(),
            e.argv.as_ptr() as *const *mut libc::c_char,
            e.envp.as_ptr() as *const *mut libc::c_char,
        );
        libc::posix_spawn_file_actions_destroy(&mut actions);
        if r != 0 {
            return Err(process_error(0, std::io::Error::from_raw_os_error(r)));
        }
        wait_child(pid)
    }
}

/// The vfork child: runs on its own stack, in the parent's memory, until execve.
extern "C" fn vfork_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the &Exec passed by vfork_exec_wait, alive while the
    // parent is suspended (CLONE_VFORK); close/execve/_exit touch no shared state.
    unsafe {
        let e = &*(arg as *const Exec);
        libc::close(1);
        libc::execve(e.program.as_ptr(), e.argv.as_ptr(), e.envp.as_ptr());
        libc::_exit(127)
    }
}

fn vfork_exec_wait(e: &Exec, stack: &mut [u8]) -> Result<Exit> {
    // Stacks grow down on x86-64: pass the (16-byte aligned) top.
    let top = (stack.as_mut_ptr() as usize + stack.len()) & !15;
    // SAFETY: the child runs `vfork_child` on `stack`, which outlives it (the
    // parent is suspended until the child execs or exits); SIGCHLD makes it a
    // normal child for waitpid.
    let pid = unsafe {
        libc::clone(
            vfork_child,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            e as *const Exec as *mut libc::c_void,
        )
    };
    if pid < 0 {
        Err(fork_error(0))
    } else {
        wait_child(pid)
    }
}

extern "C" fn empty_thread(_: *mut libc::c_void) -> *mut libc::c_void {
    std::ptr::null_mut()
}

/// Creates a thread running `body(arg)` and joins it; returns the clock
/// read as soon as pthread_create returned.
fn thread_create_join(
    body: extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
    arg: *mut libc::c_void,
) -> Result<u64> {
    // SAFETY: `thread` is written by pthread_create before it is joined;
    // `body` returns at once, using `arg` only as its contract says.
    unsafe {
        let mut thread: libc::pthread_t = std::mem::zeroed();
        let r = libc::pthread_create(&mut thread, std::ptr::null(), body, arg);
        let returned = monotonic_ns();
        if r != 0 {
            return Err(thread_error(0, std::io::Error::from_raw_os_error(r)));
        }
        libc::pthread_join(thread, std::ptr::null_mut());
        Ok(returned)
    }
}

/// clone3 and the pidfd system calls: the cases `clone3`, `pidfd-spawn`,
/// `pidfd-signal` and `pidfd-open`.
mod pidfd {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    use crate::error::{Error, Result};
    use crate::measure::limits::{descriptor_error, fork_error};
    use crate::measure::supervise::{Exit, Supervisor, wait_child};

    /// The kernel's `struct clone_args` up to `tls` (CLONE_ARGS_SIZE_VER0).
    #[repr(C)]
    #[derive(Default)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
    }

    /// Why this kernel cannot run `case` (a system call it lacks), if so.
    pub(super) fn unavailable(case: &str) -> Option<String> {
        let (nr, name, since) = match case {
            "clone3" | "pidfd-spawn" => (libc::SYS_clone3, "clone3", "5.3"),
            "pidfd-signal" => (libc::SYS_pidfd_send_signal, "pidfd_send_signal", "5.1"),
            "pidfd-open" => (libc::SYS_pidfd_open, "pidfd_open", "5.3"),
            _ => return None,
        };
        // SAFETY: every argument is 0 or a null pointer, which each of these
        // calls rejects (EINVAL, EBADF, ESRCH) without touching memory.
        let r = unsafe { libc::syscall(nr, 0, 0, 0, 0) };
        let missing = r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS);
        missing.then(|| format!("this kernel has no {name} (ENOSYS; Linux {since} or later)"))
    }

    /// clone3() of a child that `_exit`s at once, waited for by pid, or
    /// through a pidfd (CLONE_PIDFD, waitid(P_PIDFD)) then closed.
    pub(super) fn clone3_exit_wait(with_pidfd: bool) -> Result<Exit> {
        let mut pidfd: libc::c_int = -1;
        let args = CloneArgs {
            flags: if with_pidfd {
                libc::CLONE_PIDFD as u64
            } else {
                0
            },
            pidfd: std::ptr::addr_of_mut!(pidfd) as u64,
            exit_signal: libc::SIGCHLD as u64,
            ..CloneArgs::default()
        };
        // SAFETY: like fork (no CLONE_VM): the child gets a copy of this
        // address space and only calls _exit; `args` and `pidfd` are live.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone3,
                &raw const args,
                std::mem::size_of::<CloneArgs>(),
            )
        };
        match pid {
            -1 => Err(fork_error(0)),
            // SAFETY: _exit in the child, async-signal-safe.
            0 => unsafe { libc::_exit(0) },
            pid if with_pidfd => {
                // SAFETY: the kernel wrote a new descriptor we own.
                let fd = unsafe { OwnedFd::from_raw_fd(pidfd) };
                wait_pidfd(&fd, pid as libc::pid_t)
            }
            pid => wait_child(pid as libc::pid_t),
        }
    }

    /// waitid(P_PIDFD) for the child behind `fd`.
    fn wait_pidfd(fd: &OwnedFd, pid: libc::pid_t) -> Result<Exit> {
        loop {
            // SAFETY: an all-zero siginfo_t is a valid out-buffer.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            // SAFETY: `fd` is a live pidfd of our child; `info` is writable.
            let r = unsafe {
                libc::waitid(
                    libc::P_PIDFD,
                    fd.as_raw_fd() as libc::id_t,
                    &mut info,
                    libc::WEXITED,
                )
            };
            if r == 0 {
                // SAFETY: waitid filled a child's exit in.
                let (code, status) = unsafe { (info.si_code, info.si_status()) };
                return Ok(if code == libc::CLD_EXITED {
                    Exit::Code(status)
                } else {
                    Exit::Signal(status)
                });
            }
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                let e = Error::last_os(format!("waitid(P_PIDFD) for child {pid}"));
                // Reaped by pid instead, so it cannot be left a zombie.
                let _ = wait_child(pid);
                return Err(e);
            }
        }
    }

    /// A supervised child that answers every SIGUSR1 with one byte on a
    /// pipe, and its pidfd.
    pub(super) struct Answerer {
        pidfd: OwnedFd,
        pid: libc::pid_t,
        answers: OwnedFd,
        /// Kills and reaps the child when dropped (after the descriptors).
        _children: Supervisor,
    }

    impl Answerer {
        pub(super) fn start() -> Result<Self> {
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors.
            if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
                return Err(descriptor_error(
                    "creating a pipe for pidfd-signal",
                    std::io::Error::last_os_error(),
                ));
            }
            // SAFETY: pipe2 just made both; each is owned once.
            let (answers, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            let mut children = Supervisor::new("proc");
            let w = write.as_raw_fd();
            // SIGUSR1 blocked from the child's first instruction (inherited),
            // so a signal sent before its loop starts waits instead of killing it.
            let old = block_sigusr1(libc::SIG_BLOCK, None);
            let pid = children.fork(None, &[w], move || answer_signals(w));
            block_sigusr1(libc::SIG_SETMASK, Some(old));
            let pid = pid?;
            drop(write);
            // SAFETY: pidfd_open of our own live child, no flags.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            if fd < 0 {
                return Err(descriptor_error(
                    "pidfd_open of the answering child",
                    std::io::Error::last_os_error(),
                ));
            }
            Ok(Self {
                // SAFETY: a new descriptor we own.
                pidfd: unsafe { OwnedFd::from_raw_fd(fd as i32) },
                pid,
                answers,
                _children: children,
            })
        }

        /// pidfd_send_signal(SIGUSR1), then the child's answer.
        pub(super) fn round_trip(&mut self) -> Result<Exit> {
            // SAFETY: a live pidfd of our child; no siginfo, no flags.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    self.pidfd.as_raw_fd(),
                    libc::SIGUSR1,
                    0,
                    0,
                )
            };
            if r != 0 {
                return Err(Error::last_os(format!(
                    "pidfd_send_signal to child {}",
                    self.pid
                )));
            }
            let mut byte = 0u8;
            // SAFETY: reading one byte into `byte` from our pipe's read end.
            if unsafe { libc::read(self.answers.as_raw_fd(), (&raw mut byte).cast(), 1) } != 1 {
                return Err(Error::last_os(
                    "reading the child's answer (the child ended?)",
                ));
            }
            Ok(Exit::Code(0))
        }

        /// pidfd_open of the child, then close.
        pub(super) fn open_close(&mut self) -> Result<Exit> {
            // SAFETY: pidfd_open of our own live child, no flags.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) };
            // SAFETY: closing the descriptor just opened, once.
            if fd < 0 || unsafe { libc::close(fd as i32) } != 0 {
                return Err(Error::last_os(format!("pidfd_open of child {}", self.pid)));
            }
            Ok(Exit::Code(0))
        }
    }

    /// This thread's signal mask with SIGUSR1 blocked (`how` SIG_BLOCK), or
    /// set back to `old` (SIG_SETMASK); returns the mask before.
    fn block_sigusr1(how: libc::c_int, old: Option<libc::sigset_t>) -> libc::sigset_t {
        // SAFETY: signal-set calls on local sets; pthread_sigmask changes
        // only this thread's mask.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            let mut before: libc::sigset_t = std::mem::zeroed();
            let new = old.unwrap_or(set);
            libc::pthread_sigmask(how, &new, &mut before);
            before
        }
    }

    /// The child's loop: SIGUSR1 blocked and taken by sigwaitinfo, one byte
    /// written for each; ends when the pipe is gone (the parent closed it).
    fn answer_signals(answers: libc::c_int) -> i32 {
        // SAFETY: signal-set calls on a local set; sigwaitinfo and write are
        // async-signal-safe system calls on memory this frame owns.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            loop {
                if libc::sigwaitinfo(&set, std::ptr::null_mut()) == libc::SIGUSR1
                    && libc::write(answers, [1u8].as_ptr().cast(), 1) != 1
                {
                    return 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_exec_errors_blame_the_temporary_directory() {
        let path = Path::new("/tmp/osbench-hello-0");
        let msg = |errno| exec_error(path, std::io::Error::from_raw_os_error(errno)).to_string();
        assert!(msg(libc::EACCES).contains("TMPDIR"));
        let limit = msg(libc::EAGAIN);
        assert!(
            !limit.contains("TMPDIR") && limit.contains("ulimit -u"),
            "{limit}"
        );
        assert!(msg(libc::ENOMEM).contains("ulimit -v"));
    }

    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[test]
    fn every_case_runs_and_lebench_cases_give_one_latency_per_task() {
        let ParamKind::Choice(cases) = DEF.params[0].kind else {
            unreachable!()
        };
        for case in cases {
            let p = Params::new(&DEF, &[("case", case)]);
            let mut b = setup(&p, &Placement::unpinned()).unwrap();
            assert!(
                b.take_events().is_empty(),
                "{case}: set-up's run is not an event"
            );
            b.run(3).unwrap();
            let events = b.take_events();
            let Sampling::EventsFor(count) = DEF.sampling else {
                unreachable!()
            };
            if count(&p).is_some() {
                assert_eq!(events.len(), 3, "{case}");
                // A stamp left at 0 or from another task would be an error or absurd.
                assert!(
                    events.iter().all(|&ns| ns > 0 && ns < 10_000_000_000),
                    "{case}: {events:?}"
                );
            } else {
                assert!(events.is_empty(), "{case}");
            }
        }
    }

    #[test]
    fn lebench_cases_name_big_and_huge_fork() {
        let anchor =
            |case, vmas| (DEF.anchor)(&Params::new(&DEF, &[("case", case), ("vmas", vmas)]));
        assert_eq!(anchor("fork_child", "6000"), "LEBench big fork, child");
        assert_eq!(anchor("fork_return", "12000"), "LEBench huge fork, parent");
        assert_eq!(anchor("fork", "0"), "lat_proc fork");
        assert!(anchor("fork", "6000").starts_with("(none: fork with 6000"));
        assert!(anchor("thread_child", "10").starts_with("(none:"));
    }

    #[test]
    fn extra_vmas_are_held_for_the_case_and_unmapped_after() {
        let maps = || {
            std::fs::read_to_string("/proc/self/maps")
                .unwrap()
                .lines()
                .count()
        };
        let p = Params::new(&DEF, &[("case", "fork"), ("vmas", "3000")]);
        assert_eq!((DEF.case_name)(&p), "fork/3000vmas");
        let before = maps();
        let mut b = setup(&p, &Placement::unpinned()).unwrap();
        // Other tests map and unmap meanwhile: a margin, far below 3,000.
        assert!(maps() > before + 2500, "{} vs {before}", maps());
        b.run(2).unwrap();
        drop(b);
        assert!(maps() < before + 500, "{} vs {before}", maps());
    }

    #[test]
    fn the_tiny_program_says_hello_and_exits_0() {
        let tiny = write_tiny().unwrap();
        let out = std::process::Command::new(std::ffi::OsStr::from_bytes(tiny.path.as_bytes()))
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"Hello world\n");
        assert_eq!(TINY_ELF.len(), 165);
    }

    #[test]
    fn the_tiny_program_is_one_file_per_user_and_only_ever_that_one() {
        let path =
            |t: &Tiny| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(t.path.as_bytes()));
        let (a, b) = (write_tiny().unwrap(), write_tiny().unwrap());
        assert_eq!(path(&a), path(&b), "reused");
        // SAFETY: getuid has no preconditions.
        let name = format!("osbench-hello-{}", unsafe { libc::getuid() });
        assert!(path(&a).ends_with(&name));
        assert!(is_the_program(&path(&a)));
        drop((a, b));
        assert!(
            path(&write_tiny().unwrap()).exists(),
            "kept for the next run"
        );
        // A file that is not the program is never used.
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("prog");
        std::fs::write(&other, b"#!/bin/sh\n").unwrap();
        assert!(!is_the_program(&other));
        std::os::unix::fs::symlink(path(&write_tiny().unwrap()), dir.path().join("link")).unwrap();
        assert!(
            !is_the_program(&dir.path().join("link")),
            "not through a link"
        );
    }
}
