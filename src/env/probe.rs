//! Reading `/proc` and `/sys` under a root directory, so tests can point the
//! environment capture at a fake tree in a temporary directory.
//!
//! Every read returns the trimmed text or the reason it could not be had
//! ("no /sys/…", "cannot read /proc/…: …"); the caller records the reason as
//! absent. Parsers here are pure functions of file text. Nothing reads the
//! process environment (it may hold secrets).

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::PathBuf;

/// A `/proc` + `/sys` tree: `/` on a real system, a temporary directory in tests.
#[derive(Debug, Clone)]
pub struct Sys {
    root: PathBuf,
}

impl Sys {
    /// The running system's tree.
    pub fn real() -> Self {
        Self::at("/")
    }

    /// The tree under `root` (`root/proc/cmdline`, `root/sys/…`).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `path` (absolute, as on a real system) inside this tree.
    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// The trimmed contents of `path`, or why not.
    pub fn read(&self, path: &str) -> Result<String, String> {
        match std::fs::read_to_string(self.path(path)) {
            Ok(text) => Ok(text.trim().to_string()),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(format!("no {path}")),
            Err(e) => Err(format!("cannot read {path}: {e}")),
        }
    }

    /// Whether `path` exists in this tree.
    pub fn exists(&self, path: &str) -> bool {
        self.path(path).exists()
    }

    /// Names of the entries of directory `path`, sorted, or why not.
    pub fn list(&self, path: &str) -> Result<Vec<String>, String> {
        let entries = std::fs::read_dir(self.path(path)).map_err(|e| match e.kind() {
            ErrorKind::NotFound => format!("no {path}"),
            _ => format!("cannot list {path}: {e}"),
        })?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_by_key(|n| natural_key(n));
        Ok(names)
    }

    /// Every file of directory `path` as name → trimmed contents (unreadable files say why).
    pub fn read_dir_files(&self, path: &str) -> Result<BTreeMap<String, String>, String> {
        let names = self.list(path)?;
        Ok(names
            .into_iter()
            .filter(|n| self.path(&format!("{path}/{n}")).is_file())
            .map(|n| {
                let value = self
                    .read(&format!("{path}/{n}"))
                    .unwrap_or_else(|why| format!("unreadable ({why})"));
                (n, value)
            })
            .collect())
    }

    /// `/proc/PID/stat`, parsed; `None` if the process is gone or the line is malformed.
    pub fn proc_stat(&self, pid: impl std::fmt::Display) -> Option<ProcStat> {
        parse_stat(&self.read(&format!("/proc/{pid}/stat")).ok()?)
    }
}

/// Sort key that puts `cpu2` before `cpu10` and `state2` before `state10`.
fn natural_key(name: &str) -> (String, u64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, num) = name.split_at(name.len() - digits);
    (stem.to_string(), num.parse().unwrap_or(0))
}

/// The value of the first `key : value` line of /proc/cpuinfo text.
pub fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// Whether the first CPU's `flags` line in /proc/cpuinfo lists `flag`.
pub fn cpuinfo_has_flag(cpuinfo: &str, flag: &str) -> bool {
    cpuinfo_field(cpuinfo, "flags").is_some_and(|f| f.split_whitespace().any(|x| x == flag))
}

/// The bracketed choice of a sysfs selector file: `always [madvise] never` → `madvise`.
pub fn selected(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .filter(|w| !w.is_empty())
        .unwrap_or(text)
        .to_string()
}

/// `MemTotal` from /proc/meminfo text, in KiB.
pub fn mem_total_kib(meminfo: &str) -> Option<u64> {
    kib_field(meminfo, "MemTotal:")
}

/// A `Key: N kB` field of /proc text (meminfo, a status file), in KiB.
pub fn kib_field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// A field of this system's /proc/meminfo (`MemAvailable:`), in KiB.
pub fn meminfo_kib(key: &str) -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/meminfo").ok()?, key)
}

/// A CPU list such as `0-3,8,10-11` as the CPUs it names.
pub fn cpu_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.parse::<usize>()),
        }
    }
    cpus
}

/// One line of /proc/PID/stat: command name, state, and CPU ticks (user + system).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub comm: String,
    pub state: char,
    pub ppid: i32,
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    pub minflt: u64,
    pub majflt: u64,
}

/// Parses /proc/PID/stat text (the command name may contain spaces and parentheses).
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    // Fields after the name, numbered from 3 (state) as in proc(5).
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat {
        comm,
        state: rest.first()?.chars().next()?,
        ppid: rest.get(1)?.parse().ok()?,
        minflt: field(10)?,
        majflt: field(12)?,
        utime_ticks: field(14)?,
        stime_ticks: field(15)?,
    })
}

/// `voluntary_ctxt_switches` and `nonvoluntary_ctxt_switches` from /proc/PID/status text.
pub fn status_switches(text: &str) -> Option<(u64, u64)> {
    let get = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(key)?.strip_prefix(':')?;
            rest.trim().parse::<u64>().ok()
        })
    };
    Some((
        get("voluntary_ctxt_switches")?,
        get("nonvoluntary_ctxt_switches")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_text() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel name\t: AMD EPYC\nflags\t\t: fpu tsc hypervisor lahf_lm\n";
        assert_eq!(cpuinfo_field(info, "cpu family").as_deref(), Some("25"));
        assert_eq!(cpuinfo_field(info, "stepping"), None);
        assert!(cpuinfo_has_flag(info, "hypervisor"));
        assert!(!cpuinfo_has_flag(info, "hyper"));
        assert_eq!(selected("always [madvise] never"), "madvise");
        assert_eq!(selected("tsc"), "tsc");
        assert_eq!(
            mem_total_kib("MemTotal:       24684096 kB\nMemFree: 1 kB\n"),
            Some(24_684_096)
        );
        assert_eq!(cpu_list("0-2,5, 7-8"), [0, 1, 2, 5, 7, 8]);
        assert_eq!(
            status_switches(
                "Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n"
            ),
            Some((12, 3))
        );
    }

    #[test]
    fn parses_stat_with_awkward_names() {
        let line = "4148 (a (b) c) R 4133 4133 31566 0 -1 4194304 98 0 7 0 150 25 0 0 20 0 1 0";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.comm, "a (b) c");
        assert_eq!((s.state, s.ppid), ('R', 4133));
        assert_eq!((s.minflt, s.majflt), (98, 7));
        assert_eq!((s.utime_ticks, s.stime_ticks), (150, 25));
        assert_eq!(parse_stat("12 (x"), None);
    }

    #[test]
    fn missing_and_present_files_in_a_fake_tree() {
        let dir = tempfile::tempdir().unwrap();
        let sys = Sys::at(dir.path());
        std::fs::create_dir_all(sys.path("/sys/x")).unwrap();
        for n in ["state10", "state2", "state0"] {
            std::fs::write(sys.path(&format!("/sys/x/{n}")), "v\n").unwrap();
        }
        assert_eq!(sys.read("/sys/x/state2").unwrap(), "v");
        assert_eq!(sys.read("/proc/cmdline").unwrap_err(), "no /proc/cmdline");
        assert_eq!(sys.list("/sys/x").unwrap(), ["state0", "state2", "state10"]);
        assert_eq!(sys.read_dir_files("/sys/x").unwrap().len(), 3);
        assert!(
            sys.list("/sys/none")
                .unwrap_err()
                .starts_with("no /sys/none")
        );
    }
}
