//! `sandbox`: what sandboxing and tracing add to one system call — the
//! calls of `syscall` (`null`: getppid, `open`: open + close, `stat`)
//! made under a seccomp filter of N instructions, a Landlock ruleset on a
//! path D directories deep, N audit rules evaluated on every call, or an
//! enabled kprobe, uprobe or tracepoint on the call's path. Each layer is
//! a parameter, so a with/without comparison is two cases of one run
//! (`filter=0` against `filter=100`; `examples/sandbox-*.toml`).
//!
//! (Not to be confused with `measure::sandbox`, the filter builder this
//! family uses, and `osbench sandbox`, which runs a whole command under one.)
//!
//! The calls are made by a worker thread of their own, because a seccomp
//! filter and a Landlock ruleset stay on the thread that installs them for
//! its life: the harness's timing thread hands the worker each batch's
//! iteration count and waits for it (one hand-off per 10 ms batch, the same
//! in every case, so it cancels in a comparison; both threads are on the
//! timing CPU when pinned). The filter and ruleset die with the worker.
//! Audit rules and probes are the machine's: they are added before the
//! worker starts (the kernel gives a thread its audit context at its
//! creation), held by the warden, and removed when the case ends.
//!
//! Anchors: `perf bench sched seccomp-notify` (a filter's notify path;
//! here the allow path), the kernel's `selftests/landlock/fs_bench` (a rule
//! on every directory of a deep path; there the access is denied at the
//! root, here allowed by the base's rule after the same walk), Oracle's
//! audit measurement (getpid +15 % with 37 rules), `perf bench uprobe`
//! (baseline, empty probe; perf built with BPF skeletons). `notify=on` is perf bench sched
//! seccomp-notify's method: getppid handed by a filter
//! (SECCOMP_RET_USER_NOTIF) to a supervisor process, which waits in the
//! blocking receive and answers each call with a value in place of the
//! kernel (perf's supervisor is the parent of a forked caller, and its call
//! is gettid; here a forked child answers osbench's worker thread). A
//! supervisor thread polling before each receive read 6.6 % above perf on
//! the Intel guest; without the poll, 12 % below: a thread of the caller's
//! own process does not switch address spaces. Left out: seccomp's cache of
//! number-only filters (this filter reads an argument, see
//! `measure::sandbox`), logging audit rules, eBPF on the probes. Landlock
//! does not mediate stat(), so `stat` under a ruleset shows what the
//! ruleset's presence costs (nothing expected).

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use super::util::confine::{self, NestedDirs, landlock_abi};
use super::util::observe::{self, AuditRules, Probe, ProbeKind, ProbeSite};
use super::{BenchDef, DefaultCases, ParamKind, ParamSpec, Params, Unit, Workload};
use crate::error::{Error, Result};
use crate::measure::placement::{PinGuard, Placement, pin_current_thread};
use crate::measure::sandbox::MOST_INSTRUCTIONS;
use crate::measure::supervise::Supervisor;

pub static DEF: BenchDef = BenchDef {
    name: "sandbox",
    summary: "one system call under a seccomp filter, a Landlock ruleset, audit rules or a probe (perf bench sched seccomp-notify, landlock fs_bench, Oracle's audit figures, perf bench uprobe)",
    unit: Unit::Ns,
    params: &[
        ParamSpec {
            name: "call",
            help: "the call timed: getppid, open+close or stat of a file `depth` directories deep",
            kind: ParamKind::Choice(&["null", "open", "stat"]),
            default: "null",
        },
        ParamSpec {
            name: "filter",
            help: "seccomp filter instructions, 0 for none (the kernel's limit, BPF_MAXINSNS, is 4096)",
            kind: ParamKind::Int {
                min: 0,
                max: 1_000_000,
            },
            default: "0",
        },
        ParamSpec {
            name: "notify",
            help: "getppid handed by a seccomp filter to a supervisor process that answers it (perf bench sched seccomp-notify)",
            kind: ParamKind::Choice(&["off", "on"]),
            default: "off",
        },
        ParamSpec {
            name: "landlock",
            help: "a Landlock ruleset with a rule on every directory of the path",
            kind: ParamKind::Choice(&["off", "on"]),
            default: "off",
        },
        ParamSpec {
            name: "depth",
            help: "directories above the file open and stat reach",
            kind: ParamKind::Int { min: 0, max: 1000 },
            default: "10",
        },
        ParamSpec {
            name: "audit",
            help: "audit rules every call is checked against (root, auditctl)",
            kind: ParamKind::Int { min: 0, max: 1000 },
            default: "0",
        },
        ParamSpec {
            name: "probe",
            help: "a probe enabled on the call's path (root, tracefs)",
            kind: ParamKind::Choice(&["none", "kprobe", "uprobe", "tracepoint"]),
            default: "none",
        },
    ],
    default_cases: DefaultCases::Listed(&[
        &[],
        &[("filter", "10")],
        &[("filter", "100")],
        &[("filter", "1000")],
        &[("notify", "on")],
        &[("call", "open")],
        &[("call", "open"), ("landlock", "on")],
        &[("call", "stat")],
        &[("call", "stat"), ("landlock", "on")],
    ]),
    case_name,
    op,
    anchor,
    differs: "each layer alone on the calls of `syscall`, made by a worker thread the timing thread hands every 10 ms batch to; seccomp's allow path with a filter that reads an argument (perf bench sched seccomp-notify times the notify path); Landlock's walk ends allowed at the base (fs_bench's ends denied at the root); audit rules that never log; a probe that records a tracefs event, where perf bench uprobe runs an empty BPF program (on one function, Intel: 16.7-17.3 us a hit with the event, 15.8-16.9 with an empty program; each hit two traps in the development VM, the breakpoint and the single-step of the displaced instruction). perf bench uprobe needs a perf built with BPF skeletons: without them (Debian's) its probe attaches nothing.",
    setup,
    check,
    recorded,
    // The notified case's supervisor is a second busy thread.
    tasks: |p| if p.get("notify") == "on" { 2 } else { 1 },
    ..BenchDef::DEFAULTS
};

fn case_name(p: &Params) -> String {
    let mut name = p.get("call").to_string();
    if p.get("call") != "null" {
        name += &format!("/d{}", p.int("depth"));
    }
    if p.int("filter") > 0 {
        name += &format!("+bpf{}", p.int("filter"));
    }
    if p.get("notify") == "on" {
        name += "+notify";
    }
    if p.get("landlock") == "on" {
        name += "+landlock";
    }
    if p.int("audit") > 0 {
        name += &format!("+audit{}", p.int("audit"));
    }
    if p.get("probe") != "none" {
        name += &format!("+{}", p.get("probe"));
    }
    name
}

fn op(p: &Params) -> String {
    let call = match p.get("call") {
        "null" => "one getppid() system call (raw syscall)".to_string(),
        "open" => format!(
            "one open(O_RDONLY) + close() of a file {} directories deep",
            p.int("depth")
        ),
        _ => format!("one stat() of a file {} directories deep", p.int("depth")),
    };
    let mut under = Vec::new();
    if p.int("filter") > 0 {
        under.push(format!(
            "a seccomp filter of {} instructions",
            p.int("filter")
        ));
    }
    if p.get("notify") == "on" {
        under.push("a seccomp filter notifying a supervisor process, which answers".to_string());
    }
    if p.get("landlock") == "on" {
        under.push("a Landlock rule on every directory".to_string());
    }
    if p.int("audit") > 0 {
        under.push(format!("{} audit rules", p.int("audit")));
    }
    if p.get("probe") != "none" {
        under.push(format!("an enabled {}", p.get("probe")));
    }
    if under.is_empty() {
        call
    } else {
        format!("{call}, under {}", under.join(", "))
    }
}

fn anchor(p: &Params) -> String {
    if p.get("probe") != "none" {
        "perf bench uprobe baseline, empty".to_string()
    } else if p.int("audit") > 0 {
        "Oracle's audit measurement: getpid +15 % with 37 rules".to_string()
    } else if p.get("landlock") == "on" || p.get("call") != "null" {
        format!("selftests/landlock/fs_bench -d {}", p.int("depth"))
    } else if p.get("notify") == "on" {
        "perf bench sched seccomp-notify".to_string()
    } else if p.int("filter") > 0 {
        format!(
            "osbench sandbox --seccomp {} -- perf bench syscall basic",
            p.int("filter")
        )
    } else {
        "lat_syscall null".to_string()
    }
}

/// What else sets a case's cost: whether the kernel compiles the filter
/// to machine code (`net.core.bpf_jit_enable`), and Landlock's ABI.
fn recorded(p: &Params) -> Vec<(&'static str, serde_json::Value)> {
    let mut facts = Vec::new();
    if p.int("filter") > 0 || p.get("notify") == "on" {
        let jit = std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable");
        let jit = jit.map_or_else(|_| "unreadable".to_string(), |v| v.trim().to_string());
        facts.push(("bpf_jit_enable", jit.into()));
    }
    if p.get("landlock") == "on"
        && let Ok(abi) = landlock_abi()
    {
        facts.push(("landlock_abi", abi.into()));
    }
    facts
}

/// The probe kind a case asks for, if any.
fn probe_kind(p: &Params) -> Option<ProbeKind> {
    match p.get("probe") {
        "kprobe" => Some(ProbeKind::Kprobe),
        "uprobe" => Some(ProbeKind::Uprobe),
        "tracepoint" => Some(ProbeKind::Tracepoint),
        _ => None,
    }
}

/// Where a probe on `call` goes: the kernel function the call reaches, the
/// function of osbench that makes it, its entry tracepoint.
fn probe_site(call: &str) -> ProbeSite {
    let (kernel_function, user_function, syscall): (_, usize, _) = match call {
        "null" => (
            SYS_GETPPID,
            super::syscall::raw_getppid as *const () as usize,
            "getppid",
        ),
        "open" => ("do_sys_openat2", open_close as *const () as usize, "openat"),
        _ => ("vfs_fstatat", stat_once as *const () as usize, "newfstatat"),
    };
    ProbeSite {
        kernel_function,
        user_function,
        syscall,
    }
}

#[cfg(target_arch = "x86_64")]
const SYS_GETPPID: &str = "__x64_sys_getppid";
#[cfg(target_arch = "aarch64")]
const SYS_GETPPID: &str = "__arm64_sys_getppid";
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const SYS_GETPPID: &str = "sys_getppid";

/// Before anything runs: the filter's length, Landlock's ABI, auditctl,
/// tracefs — each refusal names the limit or what is missing.
fn check(p: &Params) -> Result<()> {
    let filter = p.int("filter") as usize;
    if filter > MOST_INSTRUCTIONS {
        return Err(confine::too_long_filter(filter));
    }
    if filter == 1 {
        return Err(Error::Measure(
            "a seccomp filter has at least 2 instructions (a load and a return); use filter=0 for none".into(),
        ));
    }
    if p.get("notify") == "on" && p.get("call") != "null" {
        return Err(Error::Measure(
            "notify=on answers getppid in place of the kernel: it needs call=null".into(),
        ));
    }
    if p.get("landlock") == "on" {
        landlock_abi()?;
    }
    if p.int("audit") > 0 {
        observe::audit_check()?;
    }
    if let Some(kind) = probe_kind(p) {
        observe::probe_check(kind, &probe_site(p.get("call")))?;
    }
    Ok(())
}

/// The call the worker makes.
enum Call {
    Null,
    Open(CString),
    Stat(CString),
}

/// What the worker is asked: a batch of iterations.
struct Worker {
    to: Option<mpsc::SyncSender<u64>>,
    back: mpsc::Receiver<bool>,
    thread: Option<JoinHandle<()>>,
    /// The notified case's supervisor: a forked process, killed and reaped
    /// as this field drops, after `drop` has joined the worker, so nothing
    /// waits on its answers.
    supervisor: Option<Supervisor>,
}

struct Sandboxed {
    /// Declared first, so the worker is joined before what it runs under is removed.
    worker: Worker,
    _probe: Option<Probe>,
    _audit: Option<AuditRules>,
    _dirs: Option<Arc<NestedDirs>>,
}

fn setup(p: &Params, placement: &Placement) -> Result<Box<dyn Workload>> {
    check(p)?;
    let audit = match p.int("audit") {
        0 => None,
        n => Some(AuditRules::apply(n as usize)?),
    };
    let probe = probe_kind(p)
        .map(|kind| Probe::enable(kind, &probe_site(p.get("call"))))
        .transpose()?;
    let dirs = match p.get("call") {
        "null" => None,
        _ => Some(Arc::new(NestedDirs::new(p.int("depth") as usize)?)),
    };
    let call = match (p.get("call"), &dirs) {
        ("open", Some(d)) => Call::Open(d.file.clone()),
        ("stat", Some(d)) => Call::Stat(d.file.clone()),
        _ => Call::Null,
    };
    let landlock = match (p.get("landlock"), &dirs) {
        ("on", Some(d)) => Some(Arc::clone(d)),
        // getppid under Landlock: a ruleset on a directory of its own.
        ("on", None) => Some(Arc::new(NestedDirs::new(0)?)),
        _ => None,
    };
    let confine = Confinement {
        cpu: placement.cpu_of(0),
        filter: p.int("filter") as usize,
        landlock,
        notify: p.get("notify") == "on",
        supervisor_cpu: placement.cpu_of(1),
    };
    Ok(Box::new(Sandboxed {
        worker: Worker::start(confine, call)?,
        _probe: probe,
        _audit: audit,
        _dirs: dirs,
    }))
}

/// What the worker thread puts itself under before its first call.
struct Confinement {
    cpu: Option<usize>,
    filter: usize,
    landlock: Option<Arc<NestedDirs>>,
    /// getppid notified to a supervisor (on `supervisor_cpu`).
    notify: bool,
    supervisor_cpu: Option<usize>,
}

/// What the worker holds while it works, and the listener its supervisor answers on.
type Applied = (Option<PinGuard>, Option<OwnedFd>);

impl Confinement {
    fn apply(&self) -> Result<Applied> {
        let pin = self.cpu.map(pin_current_thread).transpose()?;
        if let Some(dirs) = &self.landlock {
            dirs.restrict_thread()?;
        }
        if self.filter > 0 {
            confine::seccomp(self.filter)?;
        }
        let listener = self
            .notify
            .then(|| confine::notify_on(libc::SYS_getppid))
            .transpose()?;
        Ok((pin, listener))
    }
}

impl Worker {
    /// Starts the worker: it confines itself, says whether it could, then
    /// makes `iters` calls for every count it is sent until the sender goes.
    fn start(confine: Confinement, call: Call) -> Result<Self> {
        let (to, batches) = mpsc::sync_channel::<u64>(0);
        let (done, back) = mpsc::sync_channel::<bool>(1);
        let (ready_tx, ready) = mpsc::sync_channel::<Result<Option<OwnedFd>>>(1);
        let supervisor_cpu = confine.supervisor_cpu;
        let thread = std::thread::Builder::new()
            .name("osbench-sandbox".into())
            .spawn(move || {
                let pin = match confine.apply() {
                    Ok((pin, listener)) => {
                        let _ = ready_tx.send(Ok(listener));
                        pin
                    }
                    Err(e) => return drop(ready_tx.send(Err(e))),
                };
                while let Ok(iters) = batches.recv() {
                    if done.send(calls(&call, iters)).is_err() {
                        break;
                    }
                }
                drop(pin);
            })
            .map_err(|e| crate::measure::limits::thread_error(1, e))?;
        let mut worker = Self {
            to: Some(to),
            back,
            thread: Some(thread),
            supervisor: None,
        };
        let listener = ready.recv().map_err(|_| {
            Error::Measure("the sandbox worker thread ended before it was ready".into())
        })??;
        if let Some(listener) = listener {
            worker.supervisor = Some(supervise(listener, supervisor_cpu)?);
        }
        Ok(worker)
    }
}

/// Forks the process that answers the worker's notified calls, as perf's
/// supervisor is a process apart from its caller: each notification then
/// switches address spaces both ways, as perf's do (a thread of osbench's
/// own would not). The child holds the only copy of the listener, so when
/// it is killed a call still waiting fails with ENOSYS.
fn supervise(listener: OwnedFd, cpu: Option<usize>) -> Result<Supervisor> {
    let mut supervisor = Supervisor::new("sandbox-notify");
    let fd = listener.as_raw_fd();
    supervisor.fork(cpu, &[fd], move || {
        confine::answer_notifications(fd);
        0
    })?;
    drop(listener);
    Ok(supervisor)
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.to.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Workload for Sandboxed {
    fn run(&mut self, iters: u64) -> Result<()> {
        let sent = self
            .worker
            .to
            .as_ref()
            .is_some_and(|to| to.send(iters).is_ok());
        match sent.then(|| self.worker.back.recv()) {
            Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => Err(Error::Measure(
                "a timed system call failed in the sandbox worker".into(),
            )),
            _ => Err(Error::Measure("the sandbox worker thread ended".into())),
        }
    }
}

/// `iters` calls; false if one failed.
#[inline(never)]
fn calls(call: &Call, iters: u64) -> bool {
    match call {
        Call::Null => {
            for _ in 0..iters {
                std::hint::black_box(super::syscall::raw_getppid());
            }
            true
        }
        Call::Open(path) => (0..iters).all(|_| open_close(path)),
        Call::Stat(path) => (0..iters).all(|_| stat_once(path)),
    }
}

/// One open(O_RDONLY) + close(), in a function of its own (a uprobe's site).
#[inline(never)]
fn open_close(path: &CString) -> bool {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed at once.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
    // SAFETY: `fd` was just opened here and is closed once.
    fd >= 0 && unsafe { libc::close(fd) } == 0
}

/// One stat(), in a function of its own (a uprobe's site).
#[inline(never)]
fn stat_once(path: &CString) -> bool {
    // SAFETY: an all-zero `stat` is a valid value of this plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` is writable for the call.
    unsafe { libc::stat(path.as_ptr(), &mut st) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fixed: &[(&str, &str)]) -> Result<()> {
        let params = Params::new(&DEF, fixed);
        (DEF.check)(&params)?;
        let mut w = setup(&params, &Placement::unpinned())?;
        w.run(100)?;
        w.run(100)?;
        w.teardown()
    }

    #[test]
    fn every_default_case_runs() {
        let landlock = landlock_abi().is_ok();
        for fixed in DEF.default_cases() {
            if fixed.contains(&("landlock", "on")) && !landlock {
                continue; // refused by check, as the CLI test shows
            }
            run(&fixed).unwrap();
        }
    }

    #[test]
    fn notified_calls_are_answered_by_a_process_reaped_with_the_worker() {
        let confine = Confinement {
            cpu: None,
            filter: 0,
            landlock: None,
            notify: true,
            supervisor_cpu: None,
        };
        let worker = Worker::start(confine, Call::Null).unwrap();
        let supervisor = worker
            .supervisor
            .as_ref()
            .expect("a notified case forks its supervisor");
        let pid = supervisor.children()[0];
        // SAFETY: getpid has no preconditions.
        assert_ne!(pid, unsafe { libc::getpid() });
        worker.to.as_ref().unwrap().send(1000).unwrap();
        assert!(worker.back.recv().unwrap(), "a notified call failed");
        drop(worker);
        // SAFETY: signal 0 only asks whether the pid exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(!alive, "the supervisor outlived its worker");
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::ESRCH)
        );
    }

    #[test]
    fn the_filter_stays_on_the_worker() {
        run(&[("filter", "4096")]).unwrap();
        // This thread has no filter: its seccomp mode is 0 ("disabled").
        // SAFETY: PR_GET_SECCOMP takes no pointer.
        assert_eq!(unsafe { libc::prctl(libc::PR_GET_SECCOMP) }, 0);
    }

    #[test]
    fn a_filter_longer_than_the_kernel_allows_is_refused_before_setup() {
        let e = run(&[("filter", "4097")]).unwrap_err().to_string();
        assert!(e.contains("BPF_MAXINSNS is 4096"), "{e}");
    }

    #[test]
    fn a_filter_case_records_the_jit_and_a_landlock_case_its_abi() {
        let facts = recorded(&Params::new(&DEF, &[("filter", "100"), ("landlock", "on")]));
        assert_eq!(facts[0].0, "bpf_jit_enable");
        assert_eq!(facts.len(), if landlock_abi().is_ok() { 2 } else { 1 });
        assert!(recorded(&Params::new(&DEF, &[])).is_empty());
    }

    #[test]
    fn case_names_say_every_layer() {
        let p = Params::new(
            &DEF,
            &[
                ("call", "open"),
                ("filter", "100"),
                ("landlock", "on"),
                ("audit", "37"),
                ("probe", "uprobe"),
            ],
        );
        assert_eq!(case_name(&p), "open/d10+bpf100+landlock+audit37+uprobe");
        assert_eq!(case_name(&Params::new(&DEF, &[])), "null");
    }
}
