//! The key a case is matched and named by everywhere: benchmark, case and
//! configuration, typed once. Its [`Display`](std::fmt::Display) is the one
//! label a case has in text (`syscall null`, `ctx 2p/0K [poll]`: the
//! configuration in brackets unless the run had none), and [`CaseKey::short`]
//! the same without the benchmark, as a benchmark's own table lists its rows.
//! Its order is the benchmark's, then the case's, then the configuration's
//! names. Left out: where a case comes from (the registry's selectors) and
//! how wide a table's column is (the renderers').

use std::fmt;

use serde::{Deserialize, Serialize};

use super::DEFAULT_CONFIG;

/// Benchmark, case and configuration of one series (and of everything that
/// matches series: comparisons, histories, change points). Serialised as
/// the three fields `bench`, `case`, `config`, as documents always wrote them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CaseKey {
    pub bench: String,
    pub case: String,
    /// The configuration's name; [`DEFAULT_CONFIG`] in a run without configurations.
    pub config: String,
}

impl CaseKey {
    pub fn new(
        bench: impl Into<String>,
        case: impl Into<String>,
        config: impl Into<String>,
    ) -> Self {
        Self {
            bench: bench.into(),
            case: case.into(),
            config: config.into(),
        }
    }

    /// The case as its benchmark's table names it: `null`, `2p/0K [poll]`.
    pub fn short(&self) -> Short<'_> {
        Short(self)
    }

    /// Whether the case ran under a configuration of its own (not [`DEFAULT_CONFIG`]).
    pub fn has_config(&self) -> bool {
        self.config != DEFAULT_CONFIG
    }
}

/// [`CaseKey::short`]: the case with its configuration tag.
#[derive(Debug, Clone, Copy)]
pub struct Short<'a>(&'a CaseKey);

impl fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = self.0;
        if key.has_config() {
            write!(f, "{} [{}]", key.case, key.config)
        } else {
            f.write_str(&key.case)
        }
    }
}

impl fmt::Display for CaseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.bench, self.short())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_names_the_configuration_only_when_the_run_had_one() {
        let plain = CaseKey::new("syscall", "null", DEFAULT_CONFIG);
        assert_eq!(plain.to_string(), "syscall null");
        assert_eq!(plain.short().to_string(), "null");
        let poll = CaseKey::new("ctx", "2p/0K", "poll");
        assert_eq!(poll.to_string(), "ctx 2p/0K [poll]");
        assert_eq!(poll.short().to_string(), "2p/0K [poll]");
    }

    #[test]
    fn keys_order_by_benchmark_then_case_then_configuration() {
        let mut keys = [
            CaseKey::new("syscall", "null", "b"),
            CaseKey::new("ctx", "2p/0K", "z"),
            CaseKey::new("syscall", "null", "a"),
            CaseKey::new("syscall", "fstat", "z"),
        ];
        keys.sort();
        let shown: Vec<String> = keys.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "ctx 2p/0K [z]",
                "syscall fstat [z]",
                "syscall null [a]",
                "syscall null [b]"
            ]
        );
    }

    #[test]
    fn a_key_is_written_as_the_three_fields_documents_always_had() {
        let key = CaseKey::new("ctx", "2p/0K", "poll");
        let json = serde_json::to_value(&key).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"bench": "ctx", "case": "2p/0K", "config": "poll"})
        );
    }
}
