//! What a document records of the levels above the sample: the invocations
//! (fresh osbench processes) a run was measured in, their deliberately varied
//! layout, the drift sentinels read around them, and how many replicates a
//! comparison rested on. Plain data; the statistics are `stats::replicates`'.

use serde::{Deserialize, Serialize};

/// One invocation of a run: a fresh process that measured every selected case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    /// 1-based, in the order they ran.
    pub index: usize,
    /// Bytes of padding added to its environment (which moves its initial stack).
    pub env_pad: usize,
    /// Bytes it allocated and kept before anything else (which moves its heap).
    pub heap_offset: usize,
    /// Seed of its case order.
    pub seed: u64,
    /// The drift sentinels read just before it started and just after it ended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sentinels_before: Vec<SentinelReading>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sentinels_after: Vec<SentinelReading>,
}

/// One reading of a drift sentinel (`measure::sentinel`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentinelReading {
    /// "register-loop" or "pointer-chase".
    pub name: String,
    pub ns_per_step: f64,
}

/// How much of a series' spread is between invocations and how much within.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InvocationSpread {
    /// Coefficient of variation of the invocations' medians.
    pub between_cv: f64,
    /// The median of each invocation's own coefficient of variation.
    pub within_cv: f64,
}

/// What a comparison's replicates are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplicateUnit {
    /// Separate processes: the invocations of saved runs (a run measured in
    /// one invocation is one).
    Invocations,
    /// Rounds of one run, paired (configurations interleaved).
    Rounds,
    /// Blocks of a `time` run's interleaved runs, paired.
    Blocks,
}

impl ReplicateUnit {
    fn noun(self, n: usize) -> &'static str {
        match (self, n) {
            (ReplicateUnit::Invocations, 1) => "invocation",
            (ReplicateUnit::Invocations, _) => "invocations",
            (ReplicateUnit::Rounds, 1) => "round",
            (ReplicateUnit::Rounds, _) => "rounds",
            (ReplicateUnit::Blocks, 1) => "block",
            (ReplicateUnit::Blocks, _) => "blocks",
        }
    }
}

/// What a comparison's test and interval were replicated over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replication {
    pub unit: ReplicateUnit,
    /// Replicates on the baseline's side and on the candidate's.
    pub baseline: usize,
    pub candidate: usize,
    /// When the sides had too few replicates of their own to tell how far
    /// separate invocations land: the stored runs of the same case, host,
    /// kernel and configuration whose spread was used instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_runs: Option<usize>,
}

impl Replication {
    /// "(5 invocations a side)", "(3 and 5 invocations)", with the source of
    /// the spread when it was not the sides' own.
    pub fn words(&self) -> String {
        let count = if self.baseline == self.candidate {
            format!("{} {} a side", self.baseline, self.unit.noun(self.baseline))
        } else {
            format!(
                "{} and {} {}",
                self.baseline,
                self.candidate,
                self.unit.noun(2)
            )
        };
        match self.prior_runs {
            Some(runs) => format!(
                "({count}; how far separate invocations differ taken from {runs} stored runs \
                 and these)"
            ),
            None => format!("({count})"),
        }
    }
}
