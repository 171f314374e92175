//! Capturing the environment: reading /proc and /sys (under a root that
//! tests replace, [`Sys`]), `uname(2)` and CPUID into an [`Environment`];
//! a value that cannot be read is recorded in `absent` with the reason.

use std::collections::BTreeMap;
use std::ffi::CStr;

use super::activity::{self, Load};
use super::probe::{self, Sys, cpuinfo_field, cpuinfo_has_flag};
use super::types::{
    Build, CpuFreq, CpuIdle, Damon, Environment, IdleState, Perf, SignalFrame, Topology,
    Virtualization,
};

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
        thp: thp(sys, &mut absent),
        damon: damon(sys),
        signal_frame: None,
        virtualization: Some(virtualization(sys, &cpuinfo, &mut absent)),
        // Not an absence elsewhere: only UML kernels have it.
        uml_sysemu: sys.read("/proc/sysemu").ok(),
        perf: None,
        powercap: Vec::new(),
        timer_slack_ns: super::process::timer_slack_ns()
            .inspect_err(|e| {
                absent.insert("timer_slack_ns".into(), format!("PR_GET_TIMERSLACK: {e}"));
            })
            .ok(),
        load: None,
        debug_build: cfg!(debug_assertions),
        osbench_version: env!("CARGO_PKG_VERSION").to_string(),
        build: Some(build(&mut absent)),
        kconfig_sha256: None,
        logs: None,
        absent,
    };
    env.topology = topology(sys, &online, &mut env.absent);
    env.signal_frame = signal_frame(&mut env.absent);
    power_and_topology(sys, &online, &mut env);
    env
}

/// The signal frame's size from the auxiliary vector and CPUID, each part
/// that cannot be read named in `absent`; `None` when neither can.
pub(super) fn signal_frame(absent: &mut BTreeMap<String, String>) -> Option<SignalFrame> {
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
pub(super) fn xsave_bytes() -> Result<u64, String> {
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
pub(super) fn xsave_bytes() -> Result<u64, String> {
    Err("no XSAVE on this architecture (CPUID is x86's)".into())
}

/// Transparent huge pages: the mode in force of each knob, or why it is absent.
pub(super) fn thp(sys: &Sys, absent: &mut BTreeMap<String, String>) -> BTreeMap<String, String> {
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

/// Where DAMON's kdamonds are set up through sysfs.
const KDAMONDS: &str = "/sys/kernel/mm/damon/admin/kdamonds";

/// DAMON's monitors: every kdamond under [`KDAMONDS`] with the operations
/// its contexts watch and its schemes' actions, then the damon_reclaim and
/// damon_lru_sort modules where loaded. None where DAMON is not built in
/// (nothing absent: most kernels have none).
pub(super) fn damon(sys: &Sys) -> Vec<Damon> {
    let numbered = |path: &str| -> Vec<String> {
        let names = sys.list(path).unwrap_or_default();
        names
            .into_iter()
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .collect()
    };
    let mut found = Vec::new();
    for kdamond in numbered(KDAMONDS) {
        let dir = format!("{KDAMONDS}/{kdamond}");
        let (mut operations, mut actions) = (Vec::new(), Vec::new());
        for context in numbered(&format!("{dir}/contexts")) {
            let context = format!("{dir}/contexts/{context}");
            operations.extend(sys.read(&format!("{context}/operations")));
            for scheme in numbered(&format!("{context}/schemes")) {
                actions.extend(sys.read(&format!("{context}/schemes/{scheme}/action")));
            }
        }
        found.push(Damon {
            name: format!("kdamond {kdamond}"),
            state: sys
                .read(&format!("{dir}/state"))
                .unwrap_or_else(|why| format!("unknown ({why})")),
            operations,
            actions,
        });
    }
    for (module, actions) in [
        ("damon_reclaim", &["pageout"][..]),
        ("damon_lru_sort", &["lru_prio", "lru_deprio"][..]),
    ] {
        if let Ok(enabled) = sys.read(&format!("/sys/module/{module}/parameters/enabled")) {
            found.push(Damon {
                name: module.to_string(),
                state: if enabled == "Y" { "on" } else { "off" }.to_string(),
                operations: vec!["paddr".to_string()],
                actions: actions.iter().map(|a| a.to_string()).collect(),
            });
        }
    }
    found
}

/// NUMA nodes, cpufreq and cpuidle of the `online` CPUs, the perf settings
/// and the powercap zones, into `env`.
pub(super) fn power_and_topology(sys: &Sys, online: &[usize], env: &mut Environment) {
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

pub(super) fn get_map(
    absent: &mut BTreeMap<String, String>,
    key: &str,
    r: Result<BTreeMap<String, String>, String>,
) -> BTreeMap<String, String> {
    r.unwrap_or_else(|why| {
        absent.insert(key.to_string(), why);
        BTreeMap::new()
    })
}

pub(super) fn is_numbered(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

pub(super) fn cpu_identity(cpuinfo: &str) -> BTreeMap<String, String> {
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

pub(super) fn topology(
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

pub(super) fn cpufreq(
    sys: &Sys,
    online: &[usize],
    absent: &mut BTreeMap<String, String>,
) -> Option<CpuFreq> {
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

pub(super) fn cpuidle(sys: &Sys, absent: &mut BTreeMap<String, String>) -> Option<CpuIdle> {
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

pub(super) fn virtualization(
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
pub(super) fn hypervisor_signature() -> Option<String> {
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
pub(super) fn hypervisor_signature() -> Option<String> {
    None
}

/// `KVMKVMKVM` → `KVM` and so on; an unknown signature is kept as it is.
pub(super) fn name_hypervisor(sig: &str) -> String {
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
pub(super) fn build(absent: &mut BTreeMap<String, String>) -> Build {
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

pub(super) struct Uname {
    release: String,
    version: String,
    machine: String,
    nodename: String,
}

/// `uname(2)`, or the reason it failed as the `Err` string.
pub(super) fn uname() -> Result<Uname, String> {
    // SAFETY: utsname is plain C data; all-zero is a valid value.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Err(format!("uname failed: {}", std::io::Error::last_os_error()));
    }
    let field = |f: &[libc::c_char]| {
        // SAFETY: on success the kernel NUL-terminates every field within its array.
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

pub(super) fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(0)
}

/// This machine's environment now ([`super::capture`]), with the system
/// logs read from the tree `logs` (and the kernel configuration's hash)
/// when given.
pub fn environment(logs: Option<&Sys>) -> Environment {
    let mut env = super::capture();
    if let Some(sys) = logs {
        let (logs, hash) = super::logs::capture(sys, &env.kernel);
        env.logs = Some(logs);
        env.kconfig_sha256 = hash;
    }
    env
}
