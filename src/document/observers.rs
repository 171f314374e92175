//! What a configuration has observe every system call while its blocks
//! run: audit rules that every call is checked against, and kprobes or
//! uprobes on functions the measured path reaches. Plain data, parsed from
//! the experiment file's `audit_rules = N` and `probes = ["kprobe:FUNCTION",
//! "uprobe:PATH:SYMBOL"]`; installing and removing them is
//! `experiment::observe`'s job. Left out: tracepoints (a tracepoint is the
//! value of its `enable` file: a `set` knob), eBPF programs on the probes.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The audit rules and probes of one configuration (none by default).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observers {
    /// How many audit rules every system call is checked against (none matches).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub audit_rules: usize,
    /// Probes enabled while the configuration's blocks run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeSpec>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Observers {
    /// Whether the configuration observes nothing.
    pub fn is_none(&self) -> bool {
        self.audit_rules == 0 && self.probes.is_empty()
    }
}

/// One probe: on a kernel function, or on a symbol of an ELF file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ProbeSpec {
    /// `kprobe:FUNCTION` (a function of /proc/kallsyms).
    Kprobe { function: String },
    /// `uprobe:PATH:SYMBOL` (an absolute path to an ELF file, a symbol of it).
    Uprobe { path: String, symbol: String },
}

impl ProbeSpec {
    /// A short name for the probe's event (letters, digits and `_`).
    pub fn label(&self) -> String {
        let name = match self {
            ProbeSpec::Kprobe { function } => function,
            ProbeSpec::Uprobe { symbol, .. } => symbol,
        };
        name.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    }
}

impl TryFrom<String> for ProbeSpec {
    type Error = String;

    fn try_from(spec: String) -> Result<Self, String> {
        spec.parse()
    }
}

impl From<ProbeSpec> for String {
    fn from(spec: ProbeSpec) -> String {
        spec.to_string()
    }
}

impl std::str::FromStr for ProbeSpec {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, String> {
        let usage = "write kprobe:FUNCTION or uprobe:/ABSOLUTE/PATH:SYMBOL";
        let bad = |why: &str| format!("probe '{spec}': {why}; {usage}");
        match spec.split_once(':') {
            Some(("kprobe", function)) if is_symbol(function) => Ok(ProbeSpec::Kprobe {
                function: function.into(),
            }),
            Some(("kprobe", _)) => Err(bad("a kernel function's name is letters, digits, _ and .")),
            Some(("uprobe", rest)) => match rest.rsplit_once(':') {
                Some((path, symbol)) if path.starts_with('/') && is_symbol(symbol) => {
                    Ok(ProbeSpec::Uprobe {
                        path: path.into(),
                        symbol: symbol.into(),
                    })
                }
                _ => Err(bad("a uprobe names an absolute path and a symbol")),
            },
            _ => Err(bad(
                "the kinds are kprobe and uprobe (a tracepoint is a `set` knob of its enable file)",
            )),
        }
    }
}

/// Whether `name` can be a symbol's name.
fn is_symbol(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

impl fmt::Display for ProbeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeSpec::Kprobe { function } => write!(f, "kprobe:{function}"),
            ProbeSpec::Uprobe { path, symbol } => write!(f, "uprobe:{path}:{symbol}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_parse_and_print_back() {
        for spec in [
            "kprobe:__x64_sys_getppid",
            "uprobe:/usr/lib/x86_64-linux-gnu/libc.so.6:getppid",
        ] {
            let probe: ProbeSpec = spec.parse().unwrap();
            assert_eq!(probe.to_string(), spec);
        }
        let uprobe: ProbeSpec = "uprobe:/lib/libc.so.6:getppid".parse().unwrap();
        assert_eq!(
            uprobe,
            ProbeSpec::Uprobe {
                path: "/lib/libc.so.6".into(),
                symbol: "getppid".into()
            }
        );
        assert_eq!(uprobe.label(), "getppid");
    }

    #[test]
    fn bad_probes_say_how_to_write_one() {
        for (spec, why) in [
            ("tracepoint:syscalls/sys_enter_getppid", "`set` knob"),
            ("kprobe:", "letters, digits"),
            ("kprobe:a b", "letters, digits"),
            ("uprobe:libc.so.6:getppid", "absolute path"),
            ("uprobe:/lib/libc.so.6", "absolute path"),
        ] {
            let err = spec.parse::<ProbeSpec>().unwrap_err();
            assert!(
                err.contains(why) && err.contains("kprobe:FUNCTION"),
                "{spec}: {err}"
            );
        }
    }

    #[test]
    fn observers_serialize_only_what_is_set() {
        let none = Observers::default();
        assert!(none.is_none());
        let some = Observers {
            audit_rules: 37,
            probes: vec!["kprobe:f".parse().unwrap()],
        };
        let json = serde_json::to_string(&some).unwrap();
        assert_eq!(json, r#"{"audit_rules":37,"probes":["kprobe:f"]}"#);
        assert_eq!(serde_json::from_str::<Observers>(&json).unwrap(), some);
    }
}
