//! The unit a series reports per-operation values in, and what kind of
//! values they are. Both are written into documents under the exact names
//! they have always had ("ns", "us", "s"; "samples", "distribution").

use std::fmt;

use serde::{Deserialize, Serialize};

/// The unit of a series' per-operation values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Ns,
    Us,
    S,
}

impl Unit {
    /// Nanoseconds in one of this unit.
    pub fn ns(self) -> f64 {
        match self {
            Unit::Ns => 1.0,
            Unit::Us => 1e3,
            Unit::S => 1e9,
        }
    }

    /// The ASCII name used in documents ("ns", "us", "s").
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::S => "s",
        }
    }

    /// `bytes` moved in `per_op` of this unit, as MB/s (10^6 B/s, lmbench's MB).
    pub fn mb_per_s(self, bytes: f64, per_op: f64) -> f64 {
        bytes / (per_op * self.ns()) * 1e3
    }

    /// The name shown to people ("ns", "µs", "s").
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Us => "µs",
            other => other.as_str(),
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A unit equals its document name (`series.unit == "s"`).
impl PartialEq<&str> for Unit {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What a series' samples are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeriesKind {
    /// Each sample times many operations (or one whole run) and is divided down.
    #[default]
    Samples,
    /// Each sample is one event's latency; the series has quantiles and a histogram.
    Distribution,
}

impl PartialEq<&str> for SeriesKind {
    fn eq(&self, other: &&str) -> bool {
        matches!(
            (self, *other),
            (SeriesKind::Samples, "samples") | (SeriesKind::Distribution, "distribution")
        )
    }
}
