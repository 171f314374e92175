//! The environment record every document carries: [`Environment`] and its
//! parts, as they are serialised (field names are the document's keys).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::activity::Load;

/// What a result depends on beyond the benchmark's own parameters.
/// Fields added after the first documents are optional, so old documents still read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// `uname -v` (build number, preemption model, date).
    pub kernel_version: String,
    /// `uname -m`.
    pub arch: String,
    pub hostname: String,
    /// /proc/cmdline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Vendor, family, model, stepping and microcode from /proc/cpuinfo.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpu: BTreeMap<String, String>,
    /// Online logical CPUs.
    pub cpus: usize,
    /// Logical CPUs this process may run on (its affinity mask).
    pub cpus_allowed: usize,
    /// Cores, packages, threads per core and SMT state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_nodes: Option<usize>,
    /// MemTotal from /proc/meminfo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kib: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpufreq: Option<CpuFreq>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuidle: Option<CpuIdle>,
    /// The current clocksource (`tsc`, `kvm-clock`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
    /// Every file of /sys/devices/system/cpu/vulnerabilities: name → contents.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vulnerabilities: BTreeMap<String, String>,
    /// Transparent huge pages: `enabled` and `defrag` (the selected choice).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thp: BTreeMap<String, String>,
    /// DAMON's monitors and what their schemes do (a `pageout` evicts the
    /// page cache it finds cold: a file is then read back in small folios).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub damon: Vec<Damon>,
    /// What a signal frame holds: the kernel's minimum signal stack and the XSAVE area.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_frame: Option<SignalFrame>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualization: Option<Virtualization>,
    /// User-Mode Linux's /proc/sysemu (2: SYSEMU with single-step, 1: SYSEMU,
    /// 0: plain PTRACE_SYSCALL); present only inside a UML that has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uml_sysemu: Option<String>,
    /// perf_event_paranoid and the PMUs under /sys/bus/event_source/devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf: Option<Perf>,
    /// The powercap (RAPL) zones under /sys/class/powercap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub powercap: Vec<String>,
    /// osbench's timer slack at the start (`prctl(PR_GET_TIMERSLACK)`), ns: how
    /// much later than asked its SCHED_OTHER timers may fire (50 µs by default);
    /// benchmarks inherit it unless they set their own (`timer:slack_ns=N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timer_slack_ns: Option<u64>,
    /// Load average and busy processes at the start and end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
    /// True when osbench was built without optimisations (its timings are not representative).
    pub debug_build: bool,
    pub osbench_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
    /// SHA-256 (hex) of the kernel configuration's text, where one was read (`--logs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kconfig_sha256: Option<String>,
    /// The system logs kept with the run (`--logs`, the default): see [`super::logs`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<super::logs::SystemLogs>,
    /// Keys that could not be read → why (e.g. `cpufreq`: "no /sys/…/cpufreq").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub absent: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Distinct (package, core) pairs among the online CPUs.
    pub cores: usize,
    pub packages: usize,
    pub threads_per_core: usize,
    /// /sys/devices/system/cpu/smt/control (`on`, `off`, `notsupported`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt_control: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuFreq {
    pub driver: String,
    /// CPU 0's governor.
    pub governor: String,
    /// Every online CPU's governor, when they are not all the same.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub governors: BTreeMap<String, String>,
    /// `cpufreq/boost` (1 = on), or `intel_pstate/no_turbo` inverted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuIdle {
    pub driver: String,
    pub governor: String,
    /// CPU 0's idle states, shallowest first.
    pub states: Vec<IdleState>,
    /// /sys/module/haltpoll/parameters: guest halt-polling (`guest_halt_poll_ns` and its siblings).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub haltpoll: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleState {
    pub name: String,
    /// Exit latency, µs.
    pub latency_us: u64,
    /// Target residency, µs.
    pub residency_us: u64,
    pub disabled: bool,
}

/// The size of what signal delivery writes to the user stack; each part
/// absent (with the reason under `absent`) where it cannot be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignalFrame {
    /// AT_MINSIGSTKSZ from the auxiliary vector: the kernel's minimum signal
    /// stack for this CPU's enabled state, bytes (Linux 5.14+ on x86 and arm64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_sigstksz: Option<u64>,
    /// CPUID leaf 0xD sub-leaf 0 EBX: bytes of the XSAVE area for the state
    /// components enabled in XCR0 (AVX-512 and AMX make it large).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xsave_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Virtualization {
    /// The `hypervisor` CPU flag: running as a guest.
    pub hypervisor_flag: bool,
    /// The hypervisor's CPUID signature, named (`KVM`, `Hyper-V`, `VMware`, `Xen`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<String>,
    /// /sys/class/dmi/id sys_vendor and product_name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dmi_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dmi_product: Option<String>,
    /// Container markers found (`/.dockerenv`, `/run/.containerenv`, cgroup names).
    #[serde(default)]
    pub container: Vec<String>,
}

impl Virtualization {
    /// Whether the CPU is emulated rather than virtualized: QEMU's TCG says
    /// so in its CPUID signature (a VM under KVM says KVM; emulation that
    /// hides itself cannot be told apart).
    pub fn emulated(&self) -> bool {
        self.hypervisor
            .as_deref()
            .is_some_and(|h| h.contains("TCG"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Perf {
    /// /proc/sys/kernel/perf_event_paranoid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paranoid: Option<i64>,
    /// PMUs the kernel exposes (no `cpu`: no hardware counters).
    pub pmus: Vec<String>,
}

/// A DAMON monitor: a kdamond under /sys/kernel/mm/damon/admin, or the
/// damon_reclaim or damon_lru_sort module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Damon {
    /// `kdamond 0`, `damon_reclaim`, `damon_lru_sort`.
    pub name: String,
    /// `on` or `off` (a module's `enabled`), or why it is unknown.
    pub state: String,
    /// What it watches: `paddr` (physical memory), `vaddr` or `fvaddr` (processes').
    pub operations: Vec<String>,
    /// Its schemes' actions: `pageout`, `lru_prio`, `hugepage`, `stat`, …
    pub actions: Vec<String>,
}

impl Damon {
    /// Running, with a scheme that pages memory out (evicting page cache).
    pub fn pages_out(&self) -> bool {
        self.state == "on" && self.actions.iter().any(|a| a == "pageout")
    }
}

/// How this osbench binary was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Build {
    /// Git commit, "-dirty" appended when the tree had changes (absent outside a checkout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Cargo profile: "debug" or "release".
    pub profile: String,
    /// `rustc --version`.
    pub rustc: String,
}
