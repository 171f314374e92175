//! The environment a result was measured in, recorded in every document.
//!
//! For now: kernel release and version, architecture, host name, CPU model,
//! online and usable logical CPUs, whether this is a debug build, and
//! osbench's version. Nothing here reads environment variables (they may hold
//! secrets). A value that cannot be read is recorded as `"unknown (reason)"`,
//! never invented.

use std::ffi::CStr;

use serde::{Deserialize, Serialize};

/// What a result depends on beyond the benchmark's own parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// `uname -r`.
    pub kernel: String,
    /// `uname -v` (build number, preemption model, date).
    pub kernel_version: String,
    /// `uname -m`.
    pub arch: String,
    pub hostname: String,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cpus: usize,
    /// Logical CPUs this process may run on (its affinity mask).
    pub cpus_allowed: usize,
    /// True when osbench was built without optimisations (its timings are not representative).
    pub debug_build: bool,
    pub osbench_version: String,
}

/// Reads the environment now.
pub fn capture() -> Environment {
    let uts = uname();
    Environment {
        kernel: uts
            .as_ref()
            .map_or_else(Clone::clone, |u| u.release.clone()),
        kernel_version: uts
            .as_ref()
            .map_or_else(Clone::clone, |u| u.version.clone()),
        arch: uts
            .as_ref()
            .map_or_else(Clone::clone, |u| u.machine.clone()),
        hostname: uts
            .as_ref()
            .map_or_else(Clone::clone, |u| u.nodename.clone()),
        cpu_model: cpu_model(),
        cpus: online_cpus(),
        cpus_allowed: std::thread::available_parallelism().map_or(0, usize::from),
        debug_build: cfg!(debug_assertions),
        osbench_version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// The keys whose values differ between environments, with each one's value
/// (as text, in input order). Nothing here knows which difference was intended.
pub fn diff(envs: &[&Environment]) -> Vec<(String, Vec<String>)> {
    let maps: Vec<serde_json::Map<String, serde_json::Value>> = envs
        .iter()
        .map(|e| match serde_json::to_value(e) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        })
        .collect();
    let Some(first) = maps.first() else {
        return Vec::new();
    };
    first
        .keys()
        .filter(|k| maps.iter().any(|m| m.get(*k) != first.get(*k)))
        .map(|k| {
            let values = maps
                .iter()
                .map(|m| {
                    m.get(k).map_or_else(
                        || "absent".to_string(),
                        |v| v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    )
                })
                .collect();
            (k.clone(), values)
        })
        .collect()
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
        return Err(format!(
            "unknown (uname failed: {})",
            std::io::Error::last_os_error()
        ));
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

fn cpu_model() -> String {
    match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(text) => cpuinfo_model(&text)
            .unwrap_or_else(|| "unknown (no 'model name' line in /proc/cpuinfo)".to_string()),
        Err(e) => format!("unknown (cannot read /proc/cpuinfo: {e})"),
    }
}

/// The first `model name` in /proc/cpuinfo text.
fn cpuinfo_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
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

    #[test]
    fn parses_model_name() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t: fpu\n";
        assert_eq!(
            cpuinfo_model(text).as_deref(),
            Some("Intel(R) Xeon(R) Processor")
        );
        assert_eq!(cpuinfo_model("processor : 0\n"), None);
    }

    #[test]
    fn diff_lists_only_the_keys_that_differ() {
        let a = capture();
        let mut b = a.clone();
        b.kernel = "6.19.0-patched".into();
        b.cpus += 1;
        let d = diff(&[&a, &b]);
        let keys: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["cpus", "kernel"]);
        assert_eq!(d[1].1[1], "6.19.0-patched");
        assert!(diff(&[&a, &a.clone()]).is_empty());
    }

    #[test]
    fn capture_fills_the_basics() {
        let env = capture();
        assert!(!env.kernel.is_empty() && env.cpus >= 1 && env.cpus_allowed >= 1);
        assert_eq!(env.debug_build, cfg!(debug_assertions));
    }
}
