//! Where a compared change went, as a comparison record carries it: the
//! differential of the two sides' profiles (`stats::differential`), or
//! which side has no profile and why, so that `explain` can say how to get
//! one. Computed by `compare::explain`; rendered by `report::compare` and
//! `report::markdown`. Left out: the profiles themselves (each series
//! keeps its own, [`crate::document::ProfileOutcome`]).

use serde::{Deserialize, Serialize};

pub use crate::stats::differential::Differential;

/// A change's explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Explanation {
    /// Both sides were profiled.
    Differential(Differential),
    /// A side (or both) has no profile.
    NoProfile(Vec<MissingProfile>),
}

/// A side of a change without a profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingProfile {
    /// "baseline" or "candidate".
    pub side: String,
    /// The side's label (a file, a stored run's label, a configuration).
    pub label: String,
    /// Profiling was asked for and could not be done: why (naming the
    /// setting that would allow it). `None`: the side was not profiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl MissingProfile {
    /// What is missing and how to get it, after the side's name: "has no
    /// profile: run it with `osbench run … --profile`", or "has no
    /// profile: profiling was unavailable (…)".
    pub fn words(&self) -> String {
        match &self.unavailable {
            Some(why) => format!("has no profile: profiling was unavailable ({why})"),
            None => "has no profile: run it with `osbench run … --profile`".to_string(),
        }
    }
}

impl Explanation {
    /// Whether profiling was asked for on some side: a differential, or a
    /// side whose profile was unavailable, or only one side missing.
    pub fn profiling_asked(&self) -> bool {
        match self {
            Explanation::Differential(_) => true,
            Explanation::NoProfile(missing) => {
                missing.len() < 2 || missing.iter().any(|m| m.unavailable.is_some())
            }
        }
    }
}
