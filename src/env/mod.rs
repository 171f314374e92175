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
//! the load and busy processes at the start and end of a run (and whether
//! others contended for the CPUs, [`conditions`]); osbench's
//! version and build; with `--logs` the kernel configuration, kernel log,
//! modules, sysctls and DMI ([`logs`]). A value that cannot be read is left out and its key is
//! recorded in `absent` with the reason, never invented. Nothing here reads
//! environment variables (they may hold secrets). Sources: /proc and /sys
//! (under a root that tests replace, see [`probe::Sys`]), `uname(2)`, CPUID.

pub mod activity;
pub mod audit;
mod capture;
pub mod conditions;
mod diff;
pub mod logs;
pub mod pci;
pub mod probe;
pub mod process;
mod types;

pub use activity::{Activity, Load};
pub use capture::{capture, capture_from, environment, record_end};
pub use conditions::Conditions;
pub use diff::{
    LONG_VALUE, SideChange, WordChanges, between_sides, diff, flatten, is_factor,
    new_kernel_problems, word_changes,
};
pub use types::{
    Build, CpuFreq, CpuIdle, Damon, Environment, IdleState, Perf, SignalFrame, Topology,
    Virtualization,
};

#[cfg(test)]
mod tests {
    use super::*;
    use capture::name_hypervisor;
    use probe::Sys;

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
        let damon = "/sys/kernel/mm/damon/admin/kdamonds";
        put(&format!("{damon}/nr_kdamonds"), "1\n");
        put(&format!("{damon}/0/state"), "on\n");
        put(&format!("{damon}/0/contexts/nr_contexts"), "1\n");
        put(&format!("{damon}/0/contexts/0/operations"), "paddr\n");
        put(
            &format!("{damon}/0/contexts/0/schemes/0/action"),
            "pageout\n",
        );
        put(&format!("{damon}/0/contexts/0/schemes/1/action"), "stat\n");
        put("/sys/module/damon_reclaim/parameters/enabled", "N\n");
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
        let damon: Vec<(&str, &str, bool)> = env
            .damon
            .iter()
            .map(|d| (d.name.as_str(), d.state.as_str(), d.pages_out()))
            .collect();
        assert_eq!(
            damon,
            [("kdamond 0", "on", true), ("damon_reclaim", "off", false)]
        );
        assert_eq!(env.damon[0].operations, ["paddr"]);
        assert_eq!(env.damon[0].actions, ["pageout", "stat"]);
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
        assert!(env.cmdline.is_none() && env.cpuidle.is_none() && env.damon.is_empty());
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
