//! Knobs: kernel toggles as data. A configuration may set the value of a
//! file (`set`, any path), of a sysctl, of a scheduler feature, or of one of
//! the typed knobs of [`TYPED_KNOBS`] (THP, the cpufreq governor, the clock
//! source, SMT); the
//! run reads each value before it measures, writes it for its
//! configuration's blocks and restores the value it found. This module is
//! the plain data of it: the one [`Knob`] type that crosses layers (the
//! command line, experiment files, the plan a worker runs, the document),
//! the table of typed knobs, and what the document records of each knob
//! ([`KnobRecord`]). Reading, checking, writing and restoring are
//! `experiment::knob`'s.
//!
//! Left out: knobs that are not one value of a file (boot parameters, a
//! module to load): those stay shell set-ups. Comes from issue 38 ("a toggle
//! is a value of a file; osbench should know that").

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One knob known by name: where its files are and which values it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypedKnob {
    /// Its name in experiment files (`thp = "never"`) and on the command line
    /// (`--config a:thp=never`).
    pub name: &'static str,
    /// Its file; a `*` stands for every match (each CPU's governor).
    pub path: &'static str,
    /// Where the accepted values are listed when the file itself does not
    /// list them (bracketed choices do): a file beside each of its files.
    pub choices_beside: Option<&'static str>,
    /// The accepted values when no file lists them (empty: any).
    pub choices: &'static [&'static str],
}

/// The typed knobs: one table, the only list of them.
pub const TYPED_KNOBS: &[TypedKnob] = &[
    TypedKnob {
        name: "thp",
        path: "/sys/kernel/mm/transparent_hugepage/enabled",
        choices_beside: None,
        choices: &[],
    },
    TypedKnob {
        name: "thp_defrag",
        path: "/sys/kernel/mm/transparent_hugepage/defrag",
        choices_beside: None,
        choices: &[],
    },
    TypedKnob {
        name: "cpufreq_governor",
        path: "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
        choices_beside: Some("scaling_available_governors"),
        choices: &[],
    },
    TypedKnob {
        name: "clocksource",
        path: "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        choices_beside: Some("available_clocksource"),
        choices: &[],
    },
    TypedKnob {
        name: "smt",
        path: "/sys/devices/system/cpu/smt/control",
        choices_beside: None,
        choices: &["on", "off", "forceoff"],
    },
];

/// The file of the scheduler's features (debugfs).
pub const SCHED_FEATURES_PATH: &str = "/sys/kernel/debug/sched/features";

/// Where sysctls are files.
pub const SYSCTL_ROOT: &str = "/proc/sys";

/// A file whose value a configuration sets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Knob {
    /// Any file, by its absolute path (`set`).
    File(String),
    /// A sysctl by its dotted name (`kernel.sched_autogroup_enabled`).
    Sysctl(String),
    /// One scheduler feature, by its name without `NO_` (`DELAY_DEQUEUE`);
    /// its values are the name (on) and `NO_` + the name (off).
    SchedFeature(String),
    /// A knob of [`TYPED_KNOBS`], by its name.
    Typed(&'static str),
}

/// A knob and the value one configuration gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobSetting {
    pub knob: Knob,
    pub value: String,
}

/// What a run did to one file of a knob, as the document records it (`run.knobs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnobRecord {
    /// The knob as written (`thp`, `sysctl.kernel.x`, `sched_feature.X`, a path).
    pub knob: String,
    /// The file written.
    pub path: String,
    /// Where: absent on this system; else who ran it ("guest 'vm'", "host 'h'").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// The value in force when the run read it (a bracketed choice's word).
    pub found: String,
    /// The value each configuration that names the knob set, by configuration
    /// (the others ran with `found`).
    pub set: BTreeMap<String, String>,
    /// Whether `found` was written back after the run (false: the run ended
    /// before it could; the warden writes it back when osbench dies).
    pub restored: bool,
}

impl Knob {
    /// Its name on the command line and in records: a path, `sysctl.NAME`,
    /// `sched_feature.NAME`, or a typed knob's name.
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// A knob named `knob`, given `value`: `sched_feature` takes its feature
    /// from the value (`NO_DELAY_DEQUEUE` → `DELAY_DEQUEUE`).
    pub fn setting(knob: &str, value: &str) -> Result<KnobSetting, String> {
        let knob = if knob == "sched_feature" {
            let feature = value.strip_prefix("NO_").unwrap_or(value);
            Knob::SchedFeature(feature.to_string())
        } else {
            knob.parse()?
        };
        Ok(KnobSetting {
            knob,
            value: value.to_string(),
        })
    }
}

/// The names the command line and experiment files know, for errors.
pub fn knob_names() -> String {
    let typed: Vec<&str> = TYPED_KNOBS.iter().map(|k| k.name).collect();
    format!(
        "a path starting with '/', sysctl.NAME, sched_feature, {}",
        typed.join(", ")
    )
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Knob::File(path) => f.write_str(path),
            Knob::Sysctl(name) => write!(f, "sysctl.{name}"),
            Knob::SchedFeature(name) => write!(f, "sched_feature.{name}"),
            Knob::Typed(name) => f.write_str(name),
        }
    }
}

impl FromStr for Knob {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = |why: &str| Err(format!("knob '{s}' {why}; a knob is {}", knob_names()));
        if s.starts_with('/') {
            if s.split('/').any(|part| part == "..") {
                return bad("climbs out with '..'");
            }
            return Ok(Knob::File(s.to_string()));
        }
        if let Some(name) = s.strip_prefix("sysctl.") {
            let fine = !name.is_empty() && !name.contains("..") && !name.contains('/');
            return if fine {
                Ok(Knob::Sysctl(name.to_string()))
            } else {
                bad("is not a sysctl name (dotted, e.g. sysctl.kernel.sched_autogroup_enabled)")
            };
        }
        if let Some(name) = s.strip_prefix("sched_feature.") {
            let fine =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            return if fine {
                Ok(Knob::SchedFeature(name.to_string()))
            } else {
                bad("is not a scheduler feature")
            };
        }
        match TYPED_KNOBS.iter().find(|k| k.name == s) {
            Some(k) => Ok(Knob::Typed(k.name)),
            None => bad("is not known"),
        }
    }
}

impl Serialize for Knob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Knob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_read_back_as_written() {
        for name in [
            "/sys/module/haltpoll/parameters/guest_halt_poll_ns",
            "sysctl.kernel.sched_autogroup_enabled",
            "sched_feature.DELAY_DEQUEUE",
            "thp",
            "cpufreq_governor",
            "smt",
        ] {
            let knob: Knob = name.parse().unwrap();
            assert_eq!(knob.to_string(), name);
            let json = serde_json::to_string(&knob).unwrap();
            assert_eq!(serde_json::from_str::<Knob>(&json).unwrap(), knob);
        }
        for bad in [
            "thpp",
            "sysctl.",
            "sysctl.a/../b",
            "/sys/../etc/passwd",
            "sched_feature.A-B",
        ] {
            assert!(bad.parse::<Knob>().is_err(), "{bad}");
        }
        let s = Knob::setting("sched_feature", "NO_DELAY_DEQUEUE").unwrap();
        assert_eq!(s.knob, Knob::SchedFeature("DELAY_DEQUEUE".into()));
        assert_eq!(s.value, "NO_DELAY_DEQUEUE");
    }
}
