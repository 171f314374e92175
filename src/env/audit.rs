//! The noise audit: what about the machine, as captured in an
//! [`Environment`], may disturb a run's results. Each finding is one line,
//! printed on stderr and stored in the document (`run.audit`).
//!
//! Checks: the 1-minute load average (at least [`LOAD_WARN`]) and processes
//! other than osbench using at least a tenth of a CPU, at the start and at
//! the end of the run; a cpufreq governor other than `performance`; a debug
//! build; and running multi-task cases unpinned where cross-CPU wake-ups are
//! likely bimodal. That last one is a heuristic, not a measurement: a guest
//! (the `hypervisor` CPU flag) with more than one usable CPU and guest
//! halt-polling off or absent (`haltpoll.guest_halt_poll_ns` = 0 or no
//! haltpoll) wakes an idle vCPU through the host, which on the development VM
//! costs about 30 µs instead of about 5 µs and flips between the two.
//! A guest whose CPU is emulated (QEMU's TCG) is a finding too: its clocks
//! and costs are the emulator's. So is a running DAMON monitor that pages
//! memory out: it evicts page cache it finds cold, even a file written
//! seconds before, and the file is read back in 4 KiB folios, which fault
//! and read at other costs (seen on the development VM: an 8 MiB file's
//! 1 MiB folios evicted one by one within a minute).

use super::{Activity, Environment};

/// A 1-minute load average from this value up is worth a warning.
pub const LOAD_WARN: f64 = 0.5;

/// Findings before the run. `unpinned_multi_task`: some case runs several tasks unpinned.
pub fn before_run(env: &Environment, unpinned_multi_task: bool) -> Vec<String> {
    let mut out = Vec::new();
    if env.debug_build {
        out.push(
            "this is a debug build; its timings are not representative (build with --release: \
             cargo run --release -- ...)"
                .to_string(),
        );
    }
    if let Some(start) = env.load.as_ref().map(|l| &l.start) {
        if start.loadavg[0] >= LOAD_WARN {
            out.push(format!(
                "the 1-minute load average is {:.2} on {} CPUs at the start: other work is running or just ran",
                start.loadavg[0], env.cpus
            ));
        }
        out.extend(busy_line(start, "at the start"));
    }
    if let Some(f) = &env.cpufreq {
        let mut governors: Vec<&String> = f.governors.values().collect();
        governors.push(&f.governor);
        if governors.iter().any(|g| g.as_str() != "performance") {
            out.push(format!(
                "the cpufreq governor is {} (driver {}), not performance: the clock speed may change \
                 during the run (cpupower frequency-set -g performance)",
                f.governor, f.driver
            ));
        }
    }
    for d in env.damon.iter().filter(|d| d.pages_out()) {
        out.push(format!(
            "DAMON's {} is on with a pageout scheme ({}): it evicts page cache it finds cold, \
             and an evicted file is read back in 4 KiB folios, so file-backed cases (fault, \
             mmap, file) may change cost mid-run{}",
            d.name,
            d.operations.join(", "),
            match d.name.strip_prefix("kdamond ") {
                Some(n) => format!(
                    "; for such cases echo off > /sys/kernel/mm/damon/admin/kdamonds/{n}/state, \
                     and on again after"
                ),
                None => String::new(),
            }
        ));
    }
    if unpinned_multi_task && let Some(why) = bimodal_wakeups(env) {
        out.push(format!(
            "some cases run unpinned and cross-CPU wake-ups here are likely bimodal ({why}); \
             expect two clusters of samples, or use --pin same"
        ));
    }
    out
}

/// Findings at the end of the run (processes that became busy).
pub fn after_run(env: &Environment) -> Vec<String> {
    env.load
        .as_ref()
        .and_then(|l| l.end.as_ref())
        .and_then(|end| busy_line(end, "at the end"))
        .into_iter()
        .collect()
}

fn busy_line(a: &Activity, when: &str) -> Option<String> {
    if a.busy.is_empty() {
        return None;
    }
    let list: Vec<String> = a
        .busy
        .iter()
        .map(|b| {
            format!(
                "{} (pid {}, {:.0}% of a CPU)",
                b.comm,
                b.pid,
                b.cpu_share * 100.0
            )
        })
        .collect();
    Some(format!(
        "other processes were busy {when}: {}",
        list.join(", ")
    ))
}

/// The finding for `who` (a guest) whose environment says its CPU is emulated.
pub fn emulated_guest(who: &str, env: &Environment) -> Option<String> {
    let v = env.virtualization.as_ref().filter(|v| v.emulated())?;
    Some(format!(
        "{who} runs emulated ({}): its clocks and costs are an emulator's, comparable only with \
         the same emulator's, not with the host or hardware (use KVM for kernel timings)",
        v.hypervisor.as_deref().unwrap_or("TCG")
    ))
}

/// Why cross-CPU wake-ups are likely bimodal here, if they are (see the module comment).
pub fn bimodal_wakeups(env: &Environment) -> Option<String> {
    let v = env.virtualization.as_ref()?;
    if !v.hypervisor_flag || env.cpus_allowed < 2 {
        return None;
    }
    let guest = v.hypervisor.as_deref().unwrap_or("virtual-machine");
    let poll_ns = env
        .cpuidle
        .as_ref()
        .and_then(|c| c.haltpoll.get("guest_halt_poll_ns"))
        .and_then(|v| v.parse::<u64>().ok());
    match poll_ns {
        Some(0) => Some(format!(
            "a {guest} guest with guest halt-polling off, haltpoll.guest_halt_poll_ns=0"
        )),
        Some(_) => None,
        None => Some(format!(
            "a {guest} guest without haltpoll guest halt-polling"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::activity::Busy;
    use crate::env::{CpuFreq, CpuIdle, Load, Virtualization};

    fn quiet_env() -> Environment {
        let mut env = crate::env::capture_from(&crate::env::probe::Sys::at("/nonexistent"));
        env.debug_build = false;
        env.cpus_allowed = 2;
        env.virtualization = None;
        env.load = Some(Load {
            start: Activity {
                loadavg: [0.1, 0.1, 0.1],
                runnable: 1,
                window_ms: 100,
                busy: vec![],
            },
            end: None,
        });
        env
    }

    #[test]
    fn a_quiet_bare_metal_release_run_has_no_findings() {
        let env = quiet_env();
        assert!(before_run(&env, true).is_empty());
        assert!(after_run(&env).is_empty());
    }

    #[test]
    fn a_damon_monitor_paging_out_is_a_finding_and_one_stopped_is_not() {
        let mut env = quiet_env();
        let monitor = |state: &str, action: &str| crate::env::Damon {
            name: "kdamond 0".into(),
            state: state.into(),
            operations: vec!["paddr".into()],
            actions: vec![action.into()],
        };
        env.damon = vec![monitor("off", "pageout"), monitor("on", "stat")];
        assert!(before_run(&env, false).is_empty());
        env.damon.push(monitor("on", "pageout"));
        let found = before_run(&env, false);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("DAMON's kdamond 0 is on with a pageout scheme (paddr)")
                && found[0].contains("kdamonds/0/state"),
            "{}",
            found[0]
        );
    }

    #[test]
    fn an_emulated_guest_is_a_finding_and_a_virtualized_one_is_not() {
        let mut env = quiet_env();
        let under = |hypervisor: &str| Virtualization {
            hypervisor_flag: true,
            hypervisor: Some(hypervisor.into()),
            dmi_vendor: Some("QEMU".into()),
            dmi_product: None,
            container: vec![],
        };
        assert_eq!(emulated_guest("configuration 'vm'", &env), None);
        env.virtualization = Some(under("KVM"));
        assert_eq!(emulated_guest("configuration 'vm'", &env), None);
        env.virtualization = Some(under("QEMU (TCG)"));
        let found = emulated_guest("configuration 'vm'", &env).unwrap();
        assert!(
            found.starts_with("configuration 'vm' runs emulated (QEMU (TCG))"),
            "{found}"
        );
    }

    #[test]
    fn each_disturbance_is_named() {
        let mut env = quiet_env();
        env.debug_build = true;
        let load = env.load.as_mut().unwrap();
        load.start.loadavg[0] = 1.7;
        load.end = Some(Activity {
            loadavg: [2.0; 3],
            runnable: 3,
            window_ms: 100,
            busy: vec![Busy {
                pid: 42,
                comm: "cc1".into(),
                cpu_share: 0.93,
            }],
        });
        env.cpufreq = Some(CpuFreq {
            driver: "intel_pstate".into(),
            governor: "powersave".into(),
            governors: Default::default(),
            boost: None,
        });
        env.virtualization = Some(Virtualization {
            hypervisor_flag: true,
            hypervisor: Some("KVM".into()),
            dmi_vendor: None,
            dmi_product: None,
            container: vec![],
        });
        env.cpuidle = Some(CpuIdle {
            driver: "haltpoll".into(),
            governor: "haltpoll".into(),
            states: vec![],
            haltpoll: [("guest_halt_poll_ns".to_string(), "0".to_string())].into(),
        });
        let found = before_run(&env, true).join("\n");
        for needle in [
            "debug build",
            "load average is 1.70",
            "governor is powersave",
            "guest_halt_poll_ns=0",
        ] {
            assert!(found.contains(needle), "{needle}: {found}");
        }
        assert!(
            !before_run(&env, false).join("\n").contains("unpinned"),
            "all pinned: no wake-up warning"
        );
        assert_eq!(
            after_run(&env),
            ["other processes were busy at the end: cc1 (pid 42, 93% of a CPU)"]
        );
        env.cpuidle
            .as_mut()
            .unwrap()
            .haltpoll
            .insert("guest_halt_poll_ns".into(), "200000".into());
        assert!(
            bimodal_wakeups(&env).is_none(),
            "halt-polling on: wake-ups are fast"
        );
    }
}
