//! The kernel's newer interfaces as families (issue 41): `uring`, `futex`,
//! `rseq` and proc's clone3/pidfd cases in short real runs, and the paths
//! where the kernel refuses them made to happen (io_uring denied by a
//! seccomp filter in osbench's own process), not faked. Left out: timing
//! (never asserted), and the sandbox family (its own module).

use crate::kit::*;

/// `osbench ARGS` with system call `nr` failing with `errno` (a seccomp
/// filter installed in the child before exec): the filter dies with the
/// process, so nothing is left to restore.
#[cfg(target_arch = "x86_64")]
fn with_syscall_denied(nr: libc::c_long, errno: i32, args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = osbench(shared_store());
    cmd.args(args);
    // Load the system call number; `nr` → SECCOMP_RET_ERRNO | errno, else allow.
    let filter = [
        libc::sock_filter {
            code: 0x20,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: 0x15,
            jt: 0,
            jf: 1,
            k: nr as u32,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | errno as u32,
        },
        libc::sock_filter {
            code: 0x06,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    // SAFETY: between fork and exec the closure makes only two system calls
    // (prctl, seccomp) on memory prepared before the fork; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &raw const prog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// The tests that use io_uring, one at a time: one of them turns io_uring
/// off for the whole machine (`kernel.io_uring_disabled`).
static URING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn uring_lock() -> std::sync::MutexGuard<'static, ()> {
    URING.lock().unwrap_or_else(|p| p.into_inner())
}

const IO_URING_DISABLED: &str = "/proc/sys/kernel/io_uring_disabled";

/// Writes its value back to `kernel.io_uring_disabled` when dropped (a
/// failed assertion included), so no test leaves io_uring off.
struct RestoreIoUring(String);

impl Drop for RestoreIoUring {
    fn drop(&mut self) {
        fs::write(IO_URING_DISABLED, &self.0).expect("restoring kernel.io_uring_disabled");
    }
}

#[test]
fn uring_disabled_by_sysctl_is_skipped_saying_how_to_enable_it() {
    let _one = uring_lock();
    let Ok(before) = fs::read_to_string(IO_URING_DISABLED) else {
        eprintln!("skipping: this kernel has no {IO_URING_DISABLED} (Linux 6.6 or later)");
        return;
    };
    if !crate::common::pg::is_root() {
        eprintln!("skipping: writing {IO_URING_DISABLED} needs root");
        return;
    }
    let restore = RestoreIoUring(before.trim().to_string());
    fs::write(IO_URING_DISABLED, "2").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = osbench(shared_store())
        .args([
            "run",
            "uring:case=nop",
            "syscall:case=null",
            "--no-perf",
            "--json",
        ])
        .arg(&json)
        .args(QUICK)
        .output()
        .unwrap();
    drop(restore);
    assert_eq!(fs::read_to_string(IO_URING_DISABLED).unwrap(), before);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "skipped uring nop/1: io_uring is disabled (kernel.io_uring_disabled = 2; \
             `sysctl kernel.io_uring_disabled=0` enables it)"
        ),
        "{stderr}"
    );
    let doc = read_document(&json).unwrap();
    assert!(doc.series.iter().all(|s| s.key.bench != "uring"));
    assert_eq!(doc.run.skipped.len(), 3, "{:?}", doc.run.skipped);
}

/// `osbench ARGS` with io_uring_setup denied (EPERM) as a seccomp filter does.
#[cfg(target_arch = "x86_64")]
fn without_io_uring(args: &[&str]) -> std::process::Output {
    with_syscall_denied(libc::SYS_io_uring_setup, libc::EPERM, args)
}

#[test]
#[cfg(target_arch = "x86_64")]
fn cases_whose_system_call_the_kernel_lacks_are_skipped_with_the_reason() {
    for (nr, selector, says) in [
        (
            libc::SYS_futex_waitv,
            "futex:workload=waitv",
            "skipped futex waitv/8: this kernel has no futex_waitv",
        ),
        (
            libc::SYS_clone3,
            "proc:case=clone3",
            "skipped proc clone3: this kernel has no clone3",
        ),
        (
            libc::SYS_rseq,
            "rseq:case=rseq",
            "skipped rseq rseq: this kernel has no rseq",
        ),
    ] {
        let out = with_syscall_denied(
            nr,
            libc::ENOSYS,
            &[
                &["run", selector, "rseq:case=lock", "--no-perf"][..],
                &QUICK,
            ]
            .concat(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{selector}: {stderr}");
        assert!(stderr.contains(says), "{selector}: {stderr}");
    }
}

#[test]
#[cfg(target_arch = "x86_64")]
fn uring_denied_by_seccomp_is_skipped_with_the_reason_never_zero() {
    let _one = uring_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let args = [
        &[
            "run",
            "uring:case=nop",
            "syscall:case=null",
            "--no-perf",
            "--json",
        ][..],
        &[json.to_str().unwrap()],
        &QUICK,
    ]
    .concat();
    let out = without_io_uring(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("skipped uring nop/1: io_uring_setup is denied (EPERM"),
        "{stderr}"
    );
    let doc = read_document(&json).unwrap();
    assert!(doc.series.iter().all(|s| s.key.bench != "uring"));
    assert_eq!(
        doc.run.skipped.len(),
        3,
        "nop/1, nop/16, nop/256: {:?}",
        doc.run.skipped
    );
    assert!(doc.run.skipped[0].starts_with("uring nop/1: io_uring_setup is denied"));
    assert!(doc.series.iter().any(|s| s.key.bench == "syscall"));
    // Nothing else asked for: nothing to run, exit 2 with the reason.
    let alone = without_io_uring(&[&["run", "uring:case=nop"][..], &QUICK].concat());
    let stderr = String::from_utf8_lossy(&alone.stderr);
    assert_eq!(alone.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("nothing left to run") && stderr.contains("seccomp"),
        "{stderr}"
    );
}

#[test]
fn uring_runs_every_default_case_and_refuses_a_ring_beyond_the_kernels_limit() {
    let _one = uring_lock();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = quick_run(&["run", "uring:file_mib=1", "--no-perf"], &json);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for case in ["nop/1", "nop/16", "nop/256", "read/1", "read/32", "pread"] {
        assert!(stdout.contains(case), "{case}: {stdout}");
    }
    let big = osbench(shared_store())
        .args(["run", "uring:batch=65536"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&big.stderr);
    assert_eq!(big.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("an integer from 1 to 32768"), "{stderr}");
}

/// The case names of a run's document.
fn cases_of(json: &Path) -> Vec<String> {
    read_document(json)
        .unwrap()
        .series
        .iter()
        .map(|s| s.key.case.clone())
        .collect()
}

#[test]
fn futex_runs_perfs_five_workloads_and_waitv_and_prints_perfs_lines() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = quick_run(
        &["run", "futex:threads=2,futexes=16,hold=none", "--no-perf"],
        &json,
    );
    let cases = cases_of(&json);
    for case in [
        "hash/2t/16f",
        "wake/2t/w1",
        "wake-parallel/2t/2w",
        "requeue/2t/q1",
        "lock-pi/2t/nohold",
        "waitv/8",
    ] {
        assert!(cases.iter().any(|c| c == case), "{case}: {cases:?}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("perf bench futex hash -t 2 -f 16"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Averaged ") && stdout.contains(" operations/sec (+- "),
        "{stdout}"
    );
    assert!(stdout.contains("Wokeup 2 of 2 threads in "), "{stdout}");
    assert!(stdout.contains("Requeued 2 of 2 threads in "), "{stdout}");
    assert!(
        stdout.contains("Avg per-thread latency (waking 1/2 threads)"),
        "{stdout}"
    );
}

#[test]
fn futex_limits_exit_2_naming_the_limit_and_value() {
    for (selector, says) in [
        (
            "futex:workload=wake-parallel,threads=4,wakers=3",
            "perfectly divisible",
        ),
        ("futex:workload=waitv,n=129", "an integer from 1 to 128"),
        ("futex:threads=5000", "all, or an integer from 1 to 4096"),
        (
            "futex:threads=4096,futexes=1048576",
            "threads × futexes = 4294967296",
        ),
    ] {
        let out = osbench(shared_store())
            .args(["run", selector])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{selector}: {stderr}");
        assert!(stderr.contains(says), "{selector}: {stderr}");
    }
}

#[test]
fn rseq_runs_its_five_cases() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = quick_run(&["run", "rseq", "--no-perf"], &json);
    let cases = cases_of(&json);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for case in ["rseq", "lock", "getcpu", "getppid-rseq", "getppid-norseq"] {
        // Skipped only with the reason, never measured as zero.
        assert!(
            cases.iter().any(|c| c == case) || stderr.contains(&format!("skipped rseq {case}: ")),
            "{case}: {cases:?} {stderr}"
        );
    }
}

/// `osbench ARGS` with a locked-memory limit of 0 and without
/// CAP_IPC_LOCK (dropped in the child before exec), so io_uring's buffer
/// registration is charged to RLIMIT_MEMLOCK and refused with ENOMEM
/// (the capability leaves the bounding set as well: root's exec would
/// otherwise grant it again).
fn without_locked_memory(args: &[&str]) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = osbench(shared_store());
    cmd.args(args);
    // SAFETY: between fork and exec the closure makes only system calls
    // (setrlimit, capget, prctl, capset) on memory it owns; it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let zero = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let mut header = [0x2008_0522u32, 0]; // _LINUX_CAPABILITY_VERSION_3, this process
            let mut data = [[0u32; 3]; 2]; // effective, permitted, inheritable; two words
            if libc::setrlimit(libc::RLIMIT_MEMLOCK, &zero) != 0
                || libc::syscall(libc::SYS_capget, header.as_mut_ptr(), data.as_mut_ptr()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            const CAP_IPC_LOCK: u32 = 14;
            data[0][0] &= !(1 << CAP_IPC_LOCK);
            data[0][1] &= !(1 << CAP_IPC_LOCK);
            // Out of the bounding set too, or root's exec would grant it again.
            if libc::prctl(libc::PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0) != 0
                || libc::syscall(libc::SYS_capset, header.as_mut_ptr(), data.as_ptr()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn uring_buffers_beyond_the_locked_memory_limit_exit_2_naming_it() {
    let _one = uring_lock();
    let out = without_locked_memory(
        &[
            &[
                "run",
                "uring:case=read,buffers=registered,file_mib=1",
                "--no-perf",
            ][..],
            &QUICK,
        ]
        .concat(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("skipped uring") {
        eprintln!("io_uring unavailable here: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("RLIMIT_MEMLOCK (`ulimit -l`, now 0)")
            && stderr.contains("ulimit -l unlimited"),
        "{stderr}"
    );
}

#[test]
fn polled_completion_runs_or_is_refused_with_the_reason_and_leaves_no_file() {
    let _one = uring_lock();
    let dir = tempfile::tempdir().unwrap();
    let out = osbench(shared_store())
        .env("TMPDIR", dir.path())
        .args([
            "run",
            "uring:case=read,completion=polled,file_mib=1",
            "--no-perf",
        ])
        .args(QUICK)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && !stderr.contains("skipped uring") {
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("uring:completion=polled is refused here")
                && stderr.contains("cannot poll"),
            "{stderr}"
        );
    }
    let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn interrupted_pidfd_and_futex_runs_stop_and_leave_no_helper() {
    let _serial = helper_lock(); // the answering child is an osbench-proc
    for selector in ["proc:case=pidfd-signal", "futex:workload=lock-pi,threads=2"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("run.json");
        let args =
            format!("run {selector} -q --no-perf --samples 500 --sample-time 5 --warmup 0 --json");
        let status = interrupt_after(Duration::from_millis(1500), &args, &json, || ());
        assert_eq!(status.code(), Some(130), "{selector}");
        assert!(
            helper_processes().is_empty(),
            "{selector} left: {:?}",
            helper_processes()
        );
    }
}
