//! The plain measured quantities a document holds: how much was asked for
//! ([`Policy`]), each timed batch ([`RawSample`]), the overheads subtracted
//! ([`Overhead`]), each run of a whole command ([`CommandRun`]) and the energy
//! of a series ([`EnergyDomain`]). Only data and what reads it; measuring them
//! is `measure`'s job.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// How much to measure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Accepted samples wanted per case.
    pub samples: usize,
    /// Target duration of one sample.
    pub sample_time_ns: u64,
    /// Time spent running the benchmark unrecorded before sampling.
    pub warmup_ns: u64,
}

impl Policy {
    /// The most samples a case may ask for (the command line's bound too).
    pub const MAX_SAMPLES: usize = 1_000_000;
    /// The longest sample and warm-up: 600 s.
    pub const MAX_TIME_NS: u64 = 600_000_000_000;

    /// Checks the bounds `run`'s options enforce, so a policy from elsewhere
    /// (an agent's request) meets them too; the error names the field and
    /// its allowed range.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=Self::MAX_SAMPLES).contains(&self.samples) {
            return Err(format!(
                "samples is {}; it must be from 1 to {}",
                self.samples,
                Self::MAX_SAMPLES
            ));
        }
        if !(1..=Self::MAX_TIME_NS).contains(&self.sample_time_ns) {
            return Err(format!(
                "sample_time_ns is {}; it must be from 1 to {} (600 s)",
                self.sample_time_ns,
                Self::MAX_TIME_NS
            ));
        }
        if self.warmup_ns > Self::MAX_TIME_NS {
            return Err(format!(
                "warmup_ns is {}; it must be from 0 to {} (600 s)",
                self.warmup_ns,
                Self::MAX_TIME_NS
            ));
        }
        Ok(())
    }
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            samples: 11,
            sample_time_ns: 10_000_000,
            warmup_ns: 50_000_000,
        }
    }
}

/// One timed batch: `iters` iterations took `elapsed_ns` (clock difference, nothing subtracted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawSample {
    pub iters: u64,
    pub elapsed_ns: u64,
}

/// Measured costs of the measurement itself, subtracted from every sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// One clock read (subtracted once per sample).
    pub timer_ns: f64,
    /// One iteration of an empty loop (subtracted once per iteration).
    pub loop_ns_per_iter: f64,
}

impl Overhead {
    /// Nothing subtracted (series whose samples are whole runs or single events).
    pub const ZERO: Overhead = Overhead {
        timer_ns: 0.0,
        loop_ns_per_iter: 0.0,
    };
}

/// What one run cost, from `wait4` (field names are the document's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRun {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_kb: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
    /// The exit code, or 128 + the signal's number when a signal ended it (as shells report).
    pub exit_status: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
}

impl CommandRun {
    pub fn succeeded(&self) -> bool {
        self.exit_status == 0 && !self.timed_out
    }

    /// "exit status 1", "killed by signal 9 (timed out)", …
    pub fn outcome(&self) -> String {
        match (self.signal, self.timed_out) {
            (Some(_), true) => "was killed after reaching the timeout".to_string(),
            (Some(sig), false) => format!("was killed by signal {sig}"),
            _ => format!("exited with status {}", self.exit_status),
        }
    }
}

/// Energy of one zone over a series, per operation and as average power.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnergyDomain {
    /// Joules per operation, one value per sample.
    pub joules_per_op: Summary,
    /// Average power during each sample, W.
    pub watts: Summary,
    /// The per-sample values the summaries were made from, in sample order.
    pub samples_joules_per_op: Vec<f64>,
    pub samples_watts: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::Policy;

    #[test]
    fn a_policy_out_of_bounds_names_its_field_and_range() {
        assert!(Policy::default().check().is_ok());
        let with = |f: fn(&mut Policy)| {
            let mut p = Policy::default();
            f(&mut p);
            p.check().unwrap_err()
        };
        assert!(with(|p| p.samples = 0).starts_with("samples is 0; it must be from 1 to 1000000"));
        assert!(with(|p| p.samples = usize::MAX).starts_with("samples is 18446744073709551615"));
        assert!(with(|p| p.sample_time_ns = 10u64.pow(18)).starts_with("sample_time_ns is"));
        assert!(with(|p| p.warmup_ns = u64::MAX).starts_with("warmup_ns is"));
    }
}
