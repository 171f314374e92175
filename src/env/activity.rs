//! What else the machine is doing: the load average and the processes that
//! used CPU time during a short window, read from `/proc` at the start and
//! the end of a run.
//!
//! "Busy" means at least [`BUSY_SHARE`] of one CPU over the window
//! (`/proc/PID/stat` utime + stime, clock ticks, so 10 ms resolution at
//! USER_HZ = 100). osbench itself and its children are left out. Threads are
//! counted with their process; short-lived processes that start and end
//! inside the window are not seen.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::probe::Sys;

/// How long the CPU use of other processes is watched.
pub const WINDOW: Duration = Duration::from_millis(100);
/// A process that used at least this share of one CPU over the window is busy.
pub const BUSY_SHARE: f64 = 0.10;
/// The most busy processes recorded.
const MAX_BUSY: usize = 8;

/// The machine's activity at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    /// /proc/loadavg: 1, 5 and 15 minute averages.
    pub loadavg: [f64; 3],
    /// /proc/loadavg's runnable tasks at the moment (osbench's own thread included).
    pub runnable: u32,
    /// Length of the window the CPU use was measured over, ms.
    pub window_ms: u64,
    /// Other processes that used at least 10 % of a CPU during the window, busiest first.
    pub busy: Vec<Busy>,
}

/// One busy process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Busy {
    pub pid: i32,
    pub comm: String,
    /// Share of one CPU used during the window (1.0 = a whole CPU).
    pub cpu_share: f64,
}

/// Load at the start and at the end of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    pub start: Activity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Activity>,
}

/// Reads the load average and watches other processes for [`WINDOW`].
pub fn sample(sys: &Sys) -> Result<Activity, String> {
    let (loadavg, runnable) = parse_loadavg(&sys.read("/proc/loadavg")?)
        .ok_or("/proc/loadavg is not in the expected format")?;
    let before = cpu_ticks(sys)?;
    let start = Instant::now();
    std::thread::sleep(WINDOW);
    let after = cpu_ticks(sys)?;
    let window = start.elapsed();
    Ok(Activity {
        loadavg,
        runnable,
        window_ms: window.as_millis() as u64,
        busy: busy(&before, &after, window, clock_ticks_per_second()),
    })
}

/// `1.0 0.5 0.2 3/120 4567` → ([1.0, 0.5, 0.2], 3).
pub fn parse_loadavg(text: &str) -> Option<([f64; 3], u32)> {
    let f: Vec<&str> = text.split_whitespace().collect();
    let avg = |i: usize| f.get(i)?.parse::<f64>().ok();
    let runnable = f.get(3)?.split_once('/')?.0.parse().ok()?;
    Some(([avg(0)?, avg(1)?, avg(2)?], runnable))
}

/// pid → (command name, user + system ticks) of every process but this one and its children.
fn cpu_ticks(sys: &Sys) -> Result<BTreeMap<i32, (String, u64)>, String> {
    let me = std::process::id() as i32;
    let mut out = BTreeMap::new();
    for name in sys.list("/proc")? {
        let Ok(pid) = name.parse::<i32>() else {
            continue;
        };
        // A process may exit between listing and reading: skip it.
        let Some(stat) = sys.proc_stat(pid) else {
            continue;
        };
        if pid != me && stat.ppid != me {
            out.insert(pid, (stat.comm, stat.utime_ticks + stat.stime_ticks));
        }
    }
    Ok(out)
}

/// Processes present at both readings that used at least [`BUSY_SHARE`] of a CPU, busiest first.
pub fn busy(
    before: &BTreeMap<i32, (String, u64)>,
    after: &BTreeMap<i32, (String, u64)>,
    window: Duration,
    ticks_per_second: f64,
) -> Vec<Busy> {
    let secs = window.as_secs_f64().max(1e-3);
    let mut out: Vec<Busy> = after
        .iter()
        .filter_map(|(pid, (comm, t1))| {
            let (_, t0) = before.get(pid)?;
            let share = t1.saturating_sub(*t0) as f64 / ticks_per_second / secs;
            (share >= BUSY_SHARE - 1e-9).then(|| Busy {
                pid: *pid,
                comm: comm.clone(),
                cpu_share: (share * 100.0).round() / 100.0,
            })
        })
        .collect();
    out.sort_by(|a, b| b.cpu_share.total_cmp(&a.cpu_share));
    out.truncate(MAX_BUSY);
    out
}

/// USER_HZ, the unit of /proc/PID/stat times (100 on Linux).
pub fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 { hz as f64 } else { 100.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_loadavg() {
        assert_eq!(
            parse_loadavg("3.69 19.71 39.89 2/98 541\n"),
            Some(([3.69, 19.71, 39.89], 2))
        );
        assert_eq!(parse_loadavg("3.69 19.71"), None);
    }

    #[test]
    fn busy_needs_a_tenth_of_a_cpu_over_the_window() {
        let entry = |c: &str, t: u64| (c.to_string(), t);
        let before = BTreeMap::from([
            (1, entry("idle", 5)),
            (2, entry("cc1", 100)),
            (3, entry("make", 0)),
        ]);
        let after = BTreeMap::from([
            (1, entry("idle", 5)),
            (2, entry("cc1", 110)), // 10 ticks in 0.1 s at 100 Hz: a whole CPU
            (3, entry("make", 1)),  // 10 % of a CPU: just busy
            (4, entry("new", 50)),  // not there at the start: unknown, left out
        ]);
        let b = busy(&before, &after, Duration::from_millis(100), 100.0);
        let names: Vec<(&str, f64)> = b.iter().map(|b| (b.comm.as_str(), b.cpu_share)).collect();
        assert_eq!(names, [("cc1", 1.0), ("make", 0.1)]);
    }

    #[test]
    fn samples_a_fake_proc() {
        let dir = tempfile::tempdir().unwrap();
        let sys = Sys::at(dir.path());
        std::fs::create_dir_all(sys.path("/proc/77")).unwrap();
        std::fs::write(sys.path("/proc/loadavg"), "0.50 0.25 0.10 1/50 99\n").unwrap();
        std::fs::write(
            sys.path("/proc/77/stat"),
            "77 (x) S 1 77 77 0 -1 0 0 0 0 0 3 4 0 0\n",
        )
        .unwrap();
        let a = sample(&sys).unwrap();
        assert_eq!((a.loadavg, a.runnable), ([0.5, 0.25, 0.1], 1));
        assert!(a.busy.is_empty(), "its ticks did not move");
        assert!(a.window_ms >= 100);
    }
}
