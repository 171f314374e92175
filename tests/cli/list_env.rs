//! `osbench list` and `osbench env`: every case, parameter and op listed;
//! the environment's keys named or said absent.

use super::kit::*;

#[test]
fn list_shows_every_case_parameter_and_op() {
    let out = osbench(shared_store()).arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("syscall"));
    assert!(text.contains("null|read|write|stat|fstat|open"), "{text}");
    assert!(text.contains("default null"), "{text}");
    assert!(text.contains("one getppid() system call"), "{text}");
    assert!(text.contains("unit: ns per op"), "{text}");
    // Each family names its anchor and what it measures differently on purpose.
    assert!(text.contains("anchor: hackbench -g 10"), "{text}");
    assert!(text.contains("anchor: lat_ctx -s 0 2"), "{text}");
    let differs = |family: &str| {
        let block = text.split("\n\n").find(|b| b.starts_with(family)).unwrap();
        block.contains("differs from it on purpose: ")
    };
    assert!(differs("ipc —") && differs("syscall —") && differs("messaging —"));
    assert!(!differs("spin —"), "spin has no anchor to differ from");
    // A family whose samples cluster by a cause of its own names it.
    let block = text
        .split("\n\n")
        .find(|b| b.starts_with("memlat —"))
        .unwrap();
    assert!(
        block.contains("samples in two clusters can come from: the pages under its buffers"),
        "{block}"
    );
}

#[test]
fn env_shows_kernel_cpu_and_build() {
    let out = osbench(shared_store()).arg("env").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for key in [
        "kernel ",
        "kernel_version ",
        "cpu_model ",
        "cpus ",
        "debug_build ",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(key)),
            "missing {key}: {text}"
        );
    }
}

#[test]
fn env_json_names_every_required_key_or_why_it_is_absent() {
    let out = osbench(shared_store())
        .args(["env", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let absent = env["absent"].as_object().cloned().unwrap_or_default();
    for key in [
        "kernel",
        "cmdline",
        "cpu_model",
        "vulnerabilities",
        "cpuidle",
        "clocksource",
        "virtualization",
    ] {
        assert!(
            env.get(key).is_some() || absent.contains_key(key),
            "{key} neither present nor explained: {env}"
        );
    }
    if let Some(idle) = env.get("cpuidle") {
        for k in ["driver", "governor", "states"] {
            assert!(idle.get(k).is_some(), "cpuidle.{k}: {idle}");
        }
    }
    // Either cpufreq is there or its absence is explained; the same for powercap.
    assert!(env.get("cpufreq").is_some() || absent.contains_key("cpufreq"));
    assert!(env.get("powercap").is_some() || absent.contains_key("powercap"));
    assert!(env["build"]["profile"].is_string(), "{env}");
    assert!(env["load"]["start"]["loadavg"].is_array(), "{env}");
}
