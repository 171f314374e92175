//! The environment a result was measured in, recorded in every document, and
//! the diff of two such records.
//!
//! Captured: kernel release, version and command line; CPU identity,
//! microcode, logical/physical CPUs, SMT, NUMA nodes, memory; cpufreq,
//! cpuidle (with haltpoll's parameters), clocksource, every CPU vulnerability
//! file, transparent huge pages, the signal frame's size (AT_MINSIGSTKSZ and
//! the XSAVE area of CPUID leaf 0xD: signal delivery writes it to the user
//! stack, so it decides the cost of `signal` and `sigqueue`), perf and
//! powercap availability;
//! virtualization (hypervisor flag and CPUID vendor, DMI, container markers);
//! the load and busy processes at the start and end of a run; osbench's
//! version and build. A value that cannot be read is left out and its key is
//! recorded in `absent` with the reason, never invented. Nothing here reads
//! environment variables (they may hold secrets). Sources: /proc and /sys
//! (under a root that tests replace, see [`probe::Sys`]), `uname(2)`, CPUID.

pub mod activity;
pub mod audit;
pub mod probe;

use std::collections::BTreeMap;
use std::ffi::CStr;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use activity::{Activity, Load};
use probe::{Sys, cpuinfo_field, cpuinfo_has_flag};

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
    /// Load average and busy processes at the start and end of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
    /// True when osbench was built without optimisations (its timings are not representative).
    pub debug_build: bool,
    pub osbench_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<Build>,
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

/// Reads the environment of this machine now, including a [`activity::WINDOW`] look at its load.
pub fn capture() -> Environment {
    let sys = Sys::real();
    let mut env = capture_from(&sys);
    match activity::sample(&sys) {
        Ok(start) => env.load = Some(Load { start, end: None }),
        Err(why) => {
            env.absent.insert("load".into(), why);
        }
    }
    env
}

/// Records the load at the end of the run.
pub fn record_end(env: &mut Environment) {
    if let (Some(load), Ok(end)) = (env.load.as_mut(), activity::sample(&Sys::real())) {
        load.end = Some(end);
    }
}

/// Reads the environment from the tree `sys` (no load sample), plus uname, CPUID and the build.
pub fn capture_from(sys: &Sys) -> Environment {
    let mut absent = BTreeMap::new();
    let mut get = |key: &str, r: Result<String, String>| {
        r.map_err(|why| {
            absent.insert(key.to_string(), why);
        })
        .ok()
    };
    let uts = uname();
    let uts_field = |f: fn(&Uname) -> &String| match &uts {
        Ok(u) => f(u).clone(),
        Err(why) => format!("unknown ({why})"),
    };
    let cpuinfo = get("cpu", sys.read("/proc/cpuinfo")).unwrap_or_default();
    let cmdline = get("cmdline", sys.read("/proc/cmdline"));
    let clocksource = get(
        "clocksource",
        sys.read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
    );
    let memory_kib = get("memory_kib", sys.read("/proc/meminfo"))
        .as_deref()
        .and_then(probe::mem_total_kib);
    let vulnerabilities = get_map(
        &mut absent,
        "vulnerabilities",
        sys.read_dir_files("/sys/devices/system/cpu/vulnerabilities"),
    );
    let thp = thp(sys, &mut absent);
    let cpu = cpu_identity(&cpuinfo);
    let online = sys
        .read("/sys/devices/system/cpu/online")
        .map(|t| probe::cpu_list(&t))
        .unwrap_or_default();
    let mut env = Environment {
        kernel: uts_field(|u| &u.release),
        kernel_version: uts_field(|u| &u.version),
        arch: uts_field(|u| &u.machine),
        hostname: uts_field(|u| &u.nodename),
        cmdline,
        cpu_model: cpuinfo_field(&cpuinfo, "model name")
            .unwrap_or_else(|| "unknown (no 'model name' line in /proc/cpuinfo)".to_string()),
        cpu,
        cpus: if online.is_empty() {
            online_cpus()
        } else {
            online.len()
        },
        cpus_allowed: std::thread::available_parallelism().map_or(0, usize::from),
        topology: None,
        numa_nodes: None,
        memory_kib,
        cpufreq: None,
        cpuidle: None,
        clocksource,
        vulnerabilities,
        thp,
        signal_frame: None,
        virtualization: Some(virtualization(sys, &cpuinfo, &mut absent)),
        // Not an absence elsewhere: only UML kernels have it.
        uml_sysemu: sys.read("/proc/sysemu").ok(),
        perf: None,
        powercap: Vec::new(),
        load: None,
        debug_build: cfg!(debug_assertions),
        osbench_version: env!("CARGO_PKG_VERSION").to_string(),
        build: Some(build(&mut absent)),
        absent,
    };
    env.topology = topology(sys, &online, &mut env.absent);
    env.signal_frame = signal_frame(&mut env.absent);
    devices(sys, &online, &mut env);
    env
}

/// The signal frame's size from the auxiliary vector and CPUID, each part
/// that cannot be read named in `absent`; `None` when neither can.
fn signal_frame(absent: &mut BTreeMap<String, String>) -> Option<SignalFrame> {
    // SAFETY: getauxval only reads the process's auxiliary vector.
    let min_sigstksz = match unsafe { libc::getauxval(libc::AT_MINSIGSTKSZ) } {
        0 => {
            absent.insert(
                "signal_frame.min_sigstksz".into(),
                "no AT_MINSIGSTKSZ in the auxiliary vector (Linux before 5.14, or an \
                 architecture that does not pass it)"
                    .into(),
            );
            None
        }
        n => Some(n),
    };
    let xsave_bytes = xsave_bytes().map_err(|why| {
        absent.insert("signal_frame.xsave_bytes".into(), why);
    });
    let frame = SignalFrame {
        min_sigstksz,
        xsave_bytes: xsave_bytes.ok(),
    };
    (frame.min_sigstksz.is_some() || frame.xsave_bytes.is_some()).then_some(frame)
}

/// CPUID leaf 0xD sub-leaf 0 EBX: the XSAVE area for the features XCR0 enables.
#[cfg(target_arch = "x86_64")]
fn xsave_bytes() -> Result<u64, String> {
    let max_leaf = std::arch::x86_64::__cpuid(0).eax;
    let osxsave = std::arch::x86_64::__cpuid(1).ecx & (1 << 27) != 0;
    if max_leaf < 0xd || !osxsave {
        return Err(
            "the CPU or the kernel does not enable XSAVE (CPUID leaf 0xD absent or \
                    OSXSAVE clear)"
                .into(),
        );
    }
    Ok(u64::from(std::arch::x86_64::__cpuid_count(0xd, 0).ebx))
}

#[cfg(not(target_arch = "x86_64"))]
fn xsave_bytes() -> Result<u64, String> {
    Err("no XSAVE on this architecture (CPUID is x86's)".into())
}

/// Transparent huge pages: the mode in force of each knob, or why it is absent.
fn thp(sys: &Sys, absent: &mut BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut thp = BTreeMap::new();
    for knob in ["enabled", "defrag"] {
        let path = format!("/sys/kernel/mm/transparent_hugepage/{knob}");
        match sys.read(&path) {
            Ok(v) => {
                thp.insert(knob.to_string(), probe::selected(&v));
            }
            Err(why) => {
                absent.insert(format!("thp.{knob}"), why);
            }
        }
    }
    thp
}

/// NUMA nodes, cpufreq and cpuidle of the `online` CPUs, the perf settings
/// and the powercap zones, into `env`.
fn devices(sys: &Sys, online: &[usize], env: &mut Environment) {
    env.numa_nodes = match sys.list("/sys/devices/system/node") {
        Ok(names) => Some(names.iter().filter(|n| is_numbered(n, "node")).count()),
        Err(why) => {
            env.absent.insert("numa_nodes".into(), why);
            None
        }
    };
    env.cpufreq = cpufreq(sys, online, &mut env.absent);
    env.cpuidle = cpuidle(sys, &mut env.absent);
    env.perf = Some(Perf {
        paranoid: sys
            .read("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|t| t.parse().ok()),
        pmus: sys
            .list("/sys/bus/event_source/devices")
            .unwrap_or_default(),
    });
    match sys.list("/sys/class/powercap") {
        Ok(zones) if !zones.is_empty() => env.powercap = zones,
        Ok(_) => {
            env.absent
                .insert("powercap".into(), "/sys/class/powercap is empty".into());
        }
        Err(why) => {
            env.absent.insert(
                "powercap".into(),
                format!("{why} (no RAPL energy counters)"),
            );
        }
    }
}

fn get_map(
    absent: &mut BTreeMap<String, String>,
    key: &str,
    r: Result<BTreeMap<String, String>, String>,
) -> BTreeMap<String, String> {
    r.unwrap_or_else(|why| {
        absent.insert(key.to_string(), why);
        BTreeMap::new()
    })
}

fn is_numbered(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn cpu_identity(cpuinfo: &str) -> BTreeMap<String, String> {
    [
        ("vendor", "vendor_id"),
        ("family", "cpu family"),
        ("model", "model"),
        ("stepping", "stepping"),
        ("microcode", "microcode"),
    ]
    .into_iter()
    .filter_map(|(key, field)| Some((key.to_string(), cpuinfo_field(cpuinfo, field)?)))
    .collect()
}

fn topology(
    sys: &Sys,
    online: &[usize],
    absent: &mut BTreeMap<String, String>,
) -> Option<Topology> {
    let mut cores = std::collections::BTreeSet::new();
    let mut packages = std::collections::BTreeSet::new();
    for cpu in online {
        let read = |f: &str| sys.read(&format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"));
        match (read("physical_package_id"), read("core_id")) {
            (Ok(p), Ok(c)) => {
                cores.insert((p.clone(), c));
                packages.insert(p);
            }
            (Err(why), _) | (_, Err(why)) => {
                absent.insert("topology".into(), why);
                return None;
            }
        }
    }
    if cores.is_empty() {
        absent.insert(
            "topology".into(),
            "no online CPU list in /sys/devices/system/cpu/online".into(),
        );
        return None;
    }
    Some(Topology {
        cores: cores.len(),
        packages: packages.len(),
        threads_per_core: online.len().div_ceil(cores.len()),
        smt_control: sys.read("/sys/devices/system/cpu/smt/control").ok(),
    })
}

fn cpufreq(sys: &Sys, online: &[usize], absent: &mut BTreeMap<String, String>) -> Option<CpuFreq> {
    let dir = |cpu: usize| format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq");
    let first = online.first().copied().unwrap_or(0);
    if !sys.exists(&dir(first)) {
        absent.insert(
            "cpufreq".into(),
            format!(
                "no {}: no cpufreq driver, the kernel does not control the frequency (usual in VMs)",
                dir(first)
            ),
        );
        return None;
    }
    let read = |cpu: usize, f: &str| sys.read(&format!("{}/{f}", dir(cpu)));
    let governors: BTreeMap<String, String> = online
        .iter()
        .filter_map(|&c| Some((format!("cpu{c}"), read(c, "scaling_governor").ok()?)))
        .collect();
    let governor = read(first, "scaling_governor").unwrap_or_else(|why| format!("unknown ({why})"));
    let all_same = governors.values().all(|g| *g == governor);
    let boost = sys
        .read("/sys/devices/system/cpu/cpufreq/boost")
        .ok()
        .or_else(|| {
            let no_turbo = sys
                .read("/sys/devices/system/cpu/intel_pstate/no_turbo")
                .ok()?;
            Some(if no_turbo == "1" { "0" } else { "1" }.to_string())
        });
    Some(CpuFreq {
        driver: read(first, "scaling_driver").unwrap_or_else(|why| format!("unknown ({why})")),
        governor,
        governors: if all_same { BTreeMap::new() } else { governors },
        boost,
    })
}

fn cpuidle(sys: &Sys, absent: &mut BTreeMap<String, String>) -> Option<CpuIdle> {
    let base = "/sys/devices/system/cpu/cpuidle";
    let driver = match sys.read(&format!("{base}/current_driver")) {
        Ok(d) => d,
        Err(why) => {
            absent.insert("cpuidle".into(), format!("{why} (no cpuidle driver)"));
            return None;
        }
    };
    let governor = sys
        .read(&format!("{base}/current_governor"))
        .or_else(|_| sys.read(&format!("{base}/current_governor_ro")))
        .unwrap_or_else(|why| format!("unknown ({why})"));
    let states_dir = "/sys/devices/system/cpu/cpu0/cpuidle";
    let states = sys
        .list(states_dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| is_numbered(n, "state"))
        .map(|n| {
            let read = |f: &str| {
                sys.read(&format!("{states_dir}/{n}/{f}"))
                    .unwrap_or_default()
            };
            IdleState {
                name: read("name"),
                latency_us: read("latency").parse().unwrap_or(0),
                residency_us: read("residency").parse().unwrap_or(0),
                disabled: read("disable") == "1",
            }
        })
        .collect();
    let haltpoll = get_map(
        absent,
        "cpuidle.haltpoll",
        sys.read_dir_files("/sys/module/haltpoll/parameters")
            .map_err(|why| format!("{why} (haltpoll cpuidle module not loaded)")),
    );
    Some(CpuIdle {
        driver,
        governor,
        states,
        haltpoll,
    })
}

fn virtualization(
    sys: &Sys,
    cpuinfo: &str,
    absent: &mut BTreeMap<String, String>,
) -> Virtualization {
    let hypervisor_flag = cpuinfo_has_flag(cpuinfo, "hypervisor");
    let hypervisor = if hypervisor_flag {
        let found = hypervisor_signature();
        if found.is_none() {
            absent.insert(
                "virtualization.hypervisor".into(),
                "no CPUID hypervisor signature readable on this architecture".into(),
            );
        }
        found
    } else {
        None
    };
    let mut dmi = |key: &str, file: &str| {
        sys.read(&format!("/sys/class/dmi/id/{file}"))
            .map_err(|why| {
                absent.insert(format!("virtualization.{key}"), why);
            })
            .ok()
    };
    let dmi_vendor = dmi("dmi_vendor", "sys_vendor");
    let dmi_product = dmi("dmi_product", "product_name");
    let mut container: Vec<String> = ["/.dockerenv", "/run/.containerenv"]
        .into_iter()
        .filter(|p| sys.exists(p))
        .map(|p| format!("{p} exists"))
        .collect();
    if let Ok(cgroup) = sys.read("/proc/1/cgroup") {
        for word in ["docker", "kubepods", "lxc", "libpod", "containerd"] {
            if cgroup.contains(word) {
                container.push(format!("/proc/1/cgroup mentions {word}"));
            }
        }
    }
    Virtualization {
        hypervisor_flag,
        hypervisor,
        dmi_vendor,
        dmi_product,
        container,
    }
}

/// The hypervisor's CPUID leaf 0x40000000 signature, named.
#[cfg(target_arch = "x86_64")]
fn hypervisor_signature() -> Option<String> {
    let r = std::arch::x86_64::__cpuid(0x4000_0000);
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let sig = String::from_utf8_lossy(&bytes)
        .trim_end_matches('\0')
        .to_string();
    Some(name_hypervisor(&sig))
}

#[cfg(not(target_arch = "x86_64"))]
fn hypervisor_signature() -> Option<String> {
    None
}

/// `KVMKVMKVM` → `KVM` and so on; an unknown signature is kept as it is.
fn name_hypervisor(sig: &str) -> String {
    let name = match sig {
        "KVMKVMKVM" => "KVM",
        "Microsoft Hv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU (TCG)",
        "ACRNACRNACRN" => "ACRN",
        "bhyve bhyve " => "bhyve",
        " lrpepyh vr" => "Parallels",
        "" => "unknown (empty CPUID signature)",
        other => other,
    };
    name.to_string()
}

/// This binary's build, from build.rs.
fn build(absent: &mut BTreeMap<String, String>) -> Build {
    let commit = option_env!("OSBENCH_GIT_COMMIT").map(str::to_string);
    if commit.is_none() {
        absent.insert(
            "build.commit".into(),
            "not built from a git checkout (or git was not available)".into(),
        );
    }
    Build {
        commit,
        profile: option_env!("OSBENCH_PROFILE")
            .unwrap_or("unknown")
            .to_string(),
        rustc: option_env!("OSBENCH_RUSTC")
            .unwrap_or("unknown")
            .to_string(),
    }
}

/// Keys left out of [`diff`]: they differ on every run (the load) or repeat other keys (`absent`).
const NOT_DIFFED: [&str; 2] = ["load", "absent"];

/// Every value of `env` as dotted key → text (`cpuidle.haltpoll.guest_halt_poll_ns` → `0`),
/// array elements by index (`cpuidle.states.1.name`).
pub fn flatten(env: &Environment) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(value) = serde_json::to_value(env) {
        flatten_into("", &value, &mut out);
    }
    out
}

fn flatten_into(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                flatten_into(&join(k), v, out);
            }
        }
        Value::Array(items) if items.iter().any(|v| v.is_object() || v.is_array()) => {
            for (i, v) in items.iter().enumerate() {
                flatten_into(&join(&i.to_string()), v, out);
            }
        }
        Value::Array(items) => {
            let words: Vec<String> = items.iter().map(scalar_text).collect();
            let text = if words.is_empty() {
                "none".to_string()
            } else {
                words.join(" ")
            };
            out.insert(prefix.to_string(), text);
        }
        other => {
            out.insert(prefix.to_string(), scalar_text(other));
        }
    }
}

fn scalar_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The keys (dotted, as [`flatten`] names them) whose values differ between
/// environments, with each one's value in input order ("absent" where a
/// document lacks the key). The load at start and end is not compared.
/// Nothing here knows which difference was intended: see [`is_factor`].
pub fn diff(envs: &[&Environment]) -> Vec<(String, Vec<String>)> {
    let flat: Vec<BTreeMap<String, String>> = envs.iter().map(|e| flatten(e)).collect();
    let mut keys: Vec<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| {
            let top = k.split('.').next().unwrap_or(k);
            !NOT_DIFFED.contains(&top)
        })
        .filter(|k| flat.iter().any(|m| m.get(*k) != flat[0].get(*k)))
        .map(|k| {
            let values = flat
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or_else(|| "absent".to_string()))
                .collect();
            (k.clone(), values)
        })
        .collect()
}

/// Whether `key` is one of the declared `factors` or lies under one
/// (`--factor vulnerabilities` covers `vulnerabilities.spectre_v2`).
pub fn is_factor(key: &str, factors: &[String]) -> bool {
    factors.iter().any(|f| {
        let f = f.trim_end_matches('.');
        key == f
            || key
                .strip_prefix(f)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

struct Uname {
    release: String,
    version: String,
    machine: String,
    nodename: String,
}

/// `uname(2)`, or the reason it failed as the `Err` string.
fn uname() -> Result<Uname, String> {
    // SAFETY: utsname is plain C data; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Err(format!("uname failed: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: on success the kernel NUL-terminates every field within its array.
    let field = |f: &[libc::c_char]| {
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    Ok(Uname {
        release: field(&u.release),
        version: field(&u.version),
        machine: field(&u.machine),
        nodename: field(&u.nodename),
    })
}

fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake machine like the development VM: two CPUs, haltpoll, tsc, no cpufreq, no powercap.
    fn fake_tree(cmdline: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let put = |path: &str, text: &str| {
            let p = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("/proc/cmdline", cmdline);
        put(
            "/proc/cpuinfo",
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\
             model name\t: AMD EPYC\nstepping\t: 1\nmicrocode\t: 0x1000065\n\
             flags\t\t: fpu tsc hypervisor\n",
        );
        put("/proc/meminfo", "MemTotal:       24684096 kB\n");
        put("/sys/devices/system/cpu/online", "0-1\n");
        for cpu in 0..2 {
            put(
                &format!("/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id"),
                "0\n",
            );
            put(
                &format!("/sys/devices/system/cpu/cpu{cpu}/topology/core_id"),
                &format!("{cpu}\n"),
            );
        }
        put("/sys/devices/system/cpu/smt/control", "notsupported\n");
        put("/sys/devices/system/node/node0/cpulist", "0-1\n");
        put(
            "/sys/devices/system/cpu/cpuidle/current_driver",
            "haltpoll\n",
        );
        put(
            "/sys/devices/system/cpu/cpuidle/current_governor",
            "haltpoll\n",
        );
        for (i, (name, lat)) in [("POLL", "0"), ("haltpoll idle", "1")].iter().enumerate() {
            let d = format!("/sys/devices/system/cpu/cpu0/cpuidle/state{i}");
            put(&format!("{d}/name"), name);
            put(&format!("{d}/latency"), lat);
            put(&format!("{d}/residency"), lat);
            put(&format!("{d}/disable"), "0");
        }
        put("/sys/module/haltpoll/parameters/guest_halt_poll_ns", "0\n");
        put(
            "/sys/module/haltpoll/parameters/guest_halt_poll_grow",
            "2\n",
        );
        put(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        put(
            "/sys/devices/system/cpu/vulnerabilities/spectre_v2",
            "Mitigation: Retpolines\n",
        );
        put(
            "/sys/devices/system/cpu/vulnerabilities/meltdown",
            "Not affected\n",
        );
        put(
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        );
        put("/.dockerenv", "");
        dir
    }

    #[test]
    fn captures_a_fake_machine_and_names_what_is_absent() {
        let dir = fake_tree("quiet haltpoll.guest_halt_poll_ns=0\n");
        let env = capture_from(&Sys::at(dir.path()));
        assert_eq!(
            env.cmdline.as_deref(),
            Some("quiet haltpoll.guest_halt_poll_ns=0")
        );
        assert_eq!(env.cpu_model, "AMD EPYC");
        assert_eq!(env.cpu["family"], "25");
        assert_eq!(env.cpu["microcode"], "0x1000065");
        assert_eq!(env.cpus, 2);
        let t = env.topology.as_ref().unwrap();
        assert_eq!((t.cores, t.packages, t.threads_per_core), (2, 1, 1));
        assert_eq!(env.numa_nodes, Some(1));
        assert_eq!(env.memory_kib, Some(24_684_096));
        let idle = env.cpuidle.as_ref().unwrap();
        assert_eq!(
            (idle.driver.as_str(), idle.governor.as_str()),
            ("haltpoll", "haltpoll")
        );
        assert_eq!(idle.states[1].name, "haltpoll idle");
        assert_eq!(idle.haltpoll["guest_halt_poll_ns"], "0");
        assert_eq!(env.clocksource.as_deref(), Some("tsc"));
        assert_eq!(env.vulnerabilities.len(), 2);
        assert_eq!(env.thp["enabled"], "madvise");
        let v = env.virtualization.as_ref().unwrap();
        assert!(v.hypervisor_flag);
        assert_eq!(v.container, ["/.dockerenv exists"]);
        assert!(
            env.absent["cpufreq"].contains("no cpufreq driver"),
            "{:?}",
            env.absent
        );
        assert!(env.absent["powercap"].starts_with("no /sys/class/powercap"));
        assert!(env.absent["thp.defrag"].starts_with("no "));
        assert!(env.absent.contains_key("virtualization.dmi_vendor"));
        assert!(env.cpufreq.is_none());
    }

    #[test]
    fn an_empty_tree_is_all_absent_and_nothing_invented() {
        let dir = tempfile::tempdir().unwrap();
        let env = capture_from(&Sys::at(dir.path()));
        for key in [
            "cmdline",
            "clocksource",
            "vulnerabilities",
            "cpuidle",
            "cpufreq",
            "powercap",
        ] {
            assert!(env.absent.contains_key(key), "{key}: {:?}", env.absent);
        }
        assert!(env.cmdline.is_none() && env.cpuidle.is_none());
        assert!(env.cpu_model.starts_with("unknown ("));
    }

    #[test]
    fn different_command_lines_are_named_by_the_diff() {
        let (a, b) = (fake_tree("quiet\n"), fake_tree("quiet mitigations=off\n"));
        let ea = capture_from(&Sys::at(a.path()));
        let mut eb = capture_from(&Sys::at(b.path()));
        eb.vulnerabilities
            .insert("spectre_v2".into(), "Vulnerable".into());
        eb.cpuidle
            .as_mut()
            .unwrap()
            .haltpoll
            .insert("guest_halt_poll_ns".into(), "200000".into());
        let d = diff(&[&ea, &eb]);
        let keys: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "cmdline",
                "cpuidle.haltpoll.guest_halt_poll_ns",
                "vulnerabilities.spectre_v2"
            ]
        );
        assert_eq!(d[0].1, ["quiet", "quiet mitigations=off"]);
        assert!(diff(&[&ea, &ea.clone()]).is_empty());
    }

    #[test]
    fn the_load_is_not_a_difference_and_missing_keys_read_absent() {
        let dir = fake_tree("quiet\n");
        let a = capture_from(&Sys::at(dir.path()));
        let mut b = a.clone();
        b.load = Some(Load {
            start: Activity {
                loadavg: [9.0; 3],
                runnable: 9,
                window_ms: 100,
                busy: vec![],
            },
            end: None,
        });
        b.clocksource = None;
        let d = diff(&[&a, &b]);
        assert_eq!(
            d,
            [(
                "clocksource".to_string(),
                vec!["tsc".to_string(), "absent".to_string()]
            )]
        );
    }

    #[test]
    fn factors_cover_their_nested_keys() {
        let f = vec!["vulnerabilities".to_string(), "cmdline".to_string()];
        assert!(is_factor("vulnerabilities.spectre_v2", &f));
        assert!(is_factor("cmdline", &f));
        assert!(!is_factor("cmdline_extra", &f));
        assert!(!is_factor("kernel", &f));
    }

    #[test]
    fn old_documents_without_the_new_keys_still_read() {
        let old = r##"{"kernel":"6.18","kernel_version":"#1","arch":"x86_64","hostname":"vm",
            "cpu_model":"AMD EPYC","cpus":2,"cpus_allowed":2,"debug_build":false,"osbench_version":"0.1.0"}"##;
        let env: Environment = serde_json::from_str(old).unwrap();
        assert!(env.cmdline.is_none() && env.vulnerabilities.is_empty() && env.absent.is_empty());
    }

    #[test]
    fn names_hypervisors() {
        assert_eq!(name_hypervisor("KVMKVMKVM"), "KVM");
        assert_eq!(name_hypervisor("Microsoft Hv"), "Hyper-V");
        assert_eq!(name_hypervisor("SomethingNew"), "SomethingNew");
    }

    #[test]
    fn capture_fills_the_basics() {
        let env = capture_from(&Sys::real());
        assert!(!env.kernel.is_empty() && env.cpus >= 1 && env.cpus_allowed >= 1);
        assert_eq!(env.debug_build, cfg!(debug_assertions));
        // Read from this process, whatever the tree: a size or a reason for each part.
        let frame = env.signal_frame.clone().unwrap_or(SignalFrame {
            min_sigstksz: None,
            xsave_bytes: None,
        });
        for (part, value) in [
            ("min_sigstksz", frame.min_sigstksz),
            ("xsave_bytes", frame.xsave_bytes),
        ] {
            let why = env.absent.get(&format!("signal_frame.{part}"));
            assert!(
                value.is_some() != why.is_some(),
                "{part}: {value:?} {why:?}"
            );
            // The legacy FXSAVE area alone is 512 bytes; a frame is larger.
            assert!(value.is_none_or(|b| b >= 512), "{part}: {value:?}");
        }
        assert_eq!(
            env.build.as_ref().unwrap().profile,
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        );
    }
}
