//! Background loads, as a run names and records them: the typed spec
//! ([`LoadSpec`], written `hackbench:G`, `spin:N`, `memstream[:MiB]`,
//! `iostream[:DIR]` or `cmd:COMMAND`, each with an optional `@CPUS`
//! placement) and what one load did beside one case ([`LoadRun`]: its
//! throughput, its window, what went wrong). Plain data: starting and
//! stopping a load is `measure::load`'s job, choosing which load a case runs
//! under is the run's. Comes from issue 42, item 1.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The kinds of load, as the error for an unknown one lists them.
pub const LOAD_KINDS: &str = "hackbench:GROUPS, spin:TASKS, memstream[:MiB], iostream[:DIR], \
                              cmd:COMMAND (each optionally @CPUS, e.g. spin:2@1, cmd:make -j2@0-1)";

/// The largest `hackbench:G` (each group is 40 processes).
pub const MOST_HACKBENCH_GROUPS: usize = 64;
/// The largest `spin:N`.
pub const MOST_SPIN_TASKS: usize = 4096;
/// A memory streamer's buffer unless `memstream:MiB` says (twice this is mapped).
pub const DEFAULT_MEMSTREAM_MIB: usize = 64;

/// What a load runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadKind {
    /// hackbench-style messaging: `groups` groups of 20 senders and 20 receivers.
    Hackbench { groups: usize },
    /// `tasks` processes that spin.
    Spin { tasks: usize },
    /// One process copying a buffer of `mib` MiB to another, over and over.
    MemStream { mib: usize },
    /// One process writing and reading back a temporary file in `dir`
    /// (default: the system's temporary directory).
    IoStream { dir: Option<String> },
    /// A shell command (`sh -c`).
    Cmd { command: String },
}

/// A load and where it runs: `kind`, on `cpus` (empty: wherever the
/// scheduler puts it). Written and read as the text the user typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LoadSpec {
    pub kind: LoadKind,
    pub cpus: Vec<usize>,
    /// The CPU list as written after `@` (kept to print the spec back).
    cpus_text: Option<String>,
}

impl LoadSpec {
    /// Whether this load runs a command the user gave (a worker polices it).
    pub fn runs_a_command(&self) -> bool {
        matches!(self.kind, LoadKind::Cmd { .. })
    }

    /// What its throughput counts ("messages", "iterations", "bytes", "cpu-s").
    pub fn counts(&self) -> &'static str {
        match self.kind {
            LoadKind::Hackbench { .. } => "messages",
            LoadKind::Spin { .. } => "iterations",
            LoadKind::MemStream { .. } | LoadKind::IoStream { .. } => "bytes",
            LoadKind::Cmd { .. } => "cpu-s",
        }
    }
}

impl fmt::Display for LoadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            LoadKind::Hackbench { groups } => write!(f, "hackbench:{groups}")?,
            LoadKind::Spin { tasks } => write!(f, "spin:{tasks}")?,
            LoadKind::MemStream { mib } => write!(f, "memstream:{mib}")?,
            LoadKind::IoStream { dir: None } => write!(f, "iostream")?,
            LoadKind::IoStream { dir: Some(d) } => write!(f, "iostream:{d}")?,
            LoadKind::Cmd { command } => write!(f, "cmd:{command}")?,
        }
        match &self.cpus_text {
            Some(cpus) => write!(f, "@{cpus}"),
            None => Ok(()),
        }
    }
}

impl From<LoadSpec> for String {
    fn from(spec: LoadSpec) -> Self {
        spec.to_string()
    }
}

impl TryFrom<String> for LoadSpec {
    type Error = Error;
    fn try_from(text: String) -> Result<Self> {
        text.parse()
    }
}

impl FromStr for LoadSpec {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let bad = |why: String| Error::Usage(format!("load '{text}': {why}"));
        let (body, cpus_text) = match text.rsplit_once('@') {
            Some((body, cpus)) if is_cpu_list(cpus) => (body, Some(cpus.to_string())),
            _ => (text, None),
        };
        let cpus = match &cpus_text {
            Some(list) => parse_cpu_list(list).map_err(bad)?,
            None => Vec::new(),
        };
        let (kind, arg) = match body.split_once(':') {
            Some((kind, arg)) => (kind, Some(arg)),
            None => (body, None),
        };
        let count = |what: &str, default: Option<usize>, most: usize| -> Result<usize> {
            let n = match (arg, default) {
                (Some(a), _) => a.trim().parse::<usize>().ok(),
                (None, d) => d,
            };
            match n {
                Some(n) if (1..=most).contains(&n) => Ok(n),
                _ => Err(bad(format!("{kind} takes {what} from 1 to {most}"))),
            }
        };
        let kind = match kind {
            "hackbench" => LoadKind::Hackbench {
                groups: count("GROUPS (hackbench:2)", None, MOST_HACKBENCH_GROUPS)?,
            },
            "spin" => LoadKind::Spin {
                tasks: count("TASKS (spin:2)", Some(1), MOST_SPIN_TASKS)?,
            },
            "memstream" => LoadKind::MemStream {
                mib: count("MiB (memstream:64)", Some(DEFAULT_MEMSTREAM_MIB), 1 << 20)?,
            },
            "iostream" => LoadKind::IoStream {
                dir: arg.filter(|d| !d.is_empty()).map(str::to_string),
            },
            "cmd" => match arg.map(str::trim) {
                Some(c) if !c.is_empty() => LoadKind::Cmd {
                    command: c.to_string(),
                },
                _ => return Err(bad("cmd: needs a command (cmd:stress-ng --cpu 2)".into())),
            },
            _ => {
                return Err(bad(format!(
                    "not a kind of load; the kinds are {LOAD_KINDS}"
                )));
            }
        };
        Ok(LoadSpec {
            kind,
            cpus,
            cpus_text,
        })
    }
}

/// Whether `text` looks like a CPU list (`1`, `0-1`, `0,2-3`).
fn is_cpu_list(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == '-')
}

/// `0,2-3` → [0, 2, 3].
fn parse_cpu_list(text: &str) -> std::result::Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let bad = || format!("'{part}' in @{text} is not a CPU or a range of CPUs (@0-1, @0,2)");
        let (lo, hi) = match part.split_once('-') {
            Some((lo, hi)) => (
                lo.parse().map_err(|_| bad())?,
                hi.parse().map_err(|_| bad())?,
            ),
            None => {
                let cpu: usize = part.parse().map_err(|_| bad())?;
                (cpu, cpu)
            }
        };
        if lo > hi || hi >= 1 << 16 {
            return Err(bad());
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// What one load did beside one case (one round of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadRun {
    /// The spec as written.
    pub spec: String,
    /// What `count` counts: "messages", "iterations", "bytes" (the load's own
    /// operations, counted by its tasks in shared memory) or "cpu-s" (a
    /// command's CPU time, user and system, read from its process group).
    pub unit: String,
    /// How many it did between its start and its stop.
    pub count: f64,
    /// From its start to the reading of `count`, s.
    pub seconds: f64,
    /// Wall-clock times (Unix ns) of its start (before its first task was
    /// started) and its stop (once its last task had ended).
    pub started_unix_ns: u64,
    pub stopped_unix_ns: u64,
    /// Wall-clock times (Unix ns) of the start and the end of the case's
    /// measurement (calibration, warm-up and timed samples), which the load
    /// window encloses.
    pub measured_from_unix_ns: u64,
    pub measured_to_unix_ns: u64,
    /// Set when it did not run throughout: it could not start, or it ended
    /// before the case's last sample. The series is then flagged `load-failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Set when it ignored SIGTERM for a second and was SIGKILLed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub killed: Option<String>,
}

impl LoadRun {
    /// Its throughput: `count` per second (0 when it did not run).
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.count / self.seconds
        } else {
            0.0
        }
    }
}

/// The throughput of each load of `runs` over all of them (rounds), as
/// (spec, unit, count per second): total count over total time, per spec,
/// in the order first seen.
pub fn load_rates(runs: &[LoadRun]) -> Vec<(String, String, f64)> {
    let mut out: Vec<(String, String, f64, f64)> = Vec::new();
    for r in runs {
        match out.iter_mut().find(|(s, ..)| *s == r.spec) {
            Some((_, _, count, secs)) => (*count, *secs) = (*count + r.count, *secs + r.seconds),
            None => out.push((r.spec.clone(), r.unit.clone(), r.count, r.seconds)),
        }
    }
    out.into_iter()
        .map(|(s, u, c, t)| (s, u, if t > 0.0 { c / t } else { 0.0 }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> LoadSpec {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn every_kind_parses_and_prints_back() {
        assert_eq!(parse("hackbench:2").kind, LoadKind::Hackbench { groups: 2 });
        assert_eq!(parse("spin").kind, LoadKind::Spin { tasks: 1 });
        assert_eq!(parse("memstream").kind, LoadKind::MemStream { mib: 64 });
        assert_eq!(parse("iostream:/var/tmp").to_string(), "iostream:/var/tmp");
        let spin = parse("spin:2@1");
        assert_eq!(
            (spin.kind.clone(), spin.cpus.clone()),
            (LoadKind::Spin { tasks: 2 }, vec![1])
        );
        assert_eq!(spin.to_string(), "spin:2@1");
        let make = parse("cmd:make -j2@0-1");
        assert_eq!(make.cpus, [0, 1]);
        assert_eq!(
            make.kind,
            LoadKind::Cmd {
                command: "make -j2".into()
            }
        );
        assert_eq!(make.to_string(), "cmd:make -j2@0-1");
        // An @ that is not a CPU list stays in the command.
        let mail = parse("cmd:echo a@b");
        assert!(mail.cpus.is_empty() && mail.to_string() == "cmd:echo a@b");
        assert!(make.runs_a_command() && !spin.runs_a_command());
    }

    #[test]
    fn bad_specs_say_what_the_kinds_are() {
        let e = "stress:2".parse::<LoadSpec>().unwrap_err().to_string();
        assert!(
            e.contains("hackbench:GROUPS") && e.contains("cmd:COMMAND"),
            "{e}"
        );
        for bad in [
            "hackbench",
            "hackbench:0",
            "spin:x",
            "cmd:",
            "cmd:  ",
            "spin:1@2-1",
        ] {
            assert!(bad.parse::<LoadSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn specs_round_trip_through_json_as_text() {
        let spec = parse("spin:3@0,1");
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, "\"spin:3@0,1\"");
        assert_eq!(serde_json::from_str::<LoadSpec>(&json).unwrap(), spec);
    }

    #[test]
    fn rates_add_up_the_rounds_of_each_load() {
        let run = |spec: &str, count: f64, seconds: f64| LoadRun {
            spec: spec.into(),
            unit: "iterations".into(),
            count,
            seconds,
            started_unix_ns: 0,
            stopped_unix_ns: 0,
            measured_from_unix_ns: 0,
            measured_to_unix_ns: 0,
            failed: None,
            killed: None,
        };
        let rates = load_rates(&[
            run("spin:1", 10.0, 1.0),
            run("a", 1.0, 0.0),
            run("spin:1", 30.0, 3.0),
        ]);
        assert_eq!(rates[0], ("spin:1".into(), "iterations".into(), 10.0));
        assert_eq!(rates[1].2, 0.0);
    }
}
