//! The gate decision, in one place: from a comparison (or none, when
//! nothing was compared) and the gate options (`--gate PCT`,
//! `--bisect-exit`), whether a command passes, fails its regression gate,
//! or tells `git bisect run` good, bad or skip. Turning the decision into an
//! exit status and saying it on stderr are the command line's.

use super::{BisectStep, Comparison};

/// What judges a comparison for an exit status.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Gate {
    /// `--gate PCT`: fail when a case is significantly slower than the
    /// baseline by more than PCT %.
    pub pct: Option<f64>,
    /// `--bisect-exit`: decide as `git bisect run` expects instead.
    pub bisect: bool,
}

/// What the gate decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GateDecision {
    /// No gate, or nothing trips it.
    Pass,
    /// A case is significantly slower than the baseline by more than `pct` %.
    Fail { pct: f64 },
    /// `--bisect-exit`: the step `git bisect` is told (skip when nothing
    /// was compared).
    Bisect(BisectStep),
}

impl Gate {
    /// The decision on `comparison` (`None`: nothing was compared).
    pub fn decide(&self, comparison: Option<&Comparison>) -> GateDecision {
        if self.bisect {
            let gate_pct = self.pct.unwrap_or(0.0);
            let step = comparison.map_or(BisectStep::Skip, |c| c.bisect_step(gate_pct));
            return GateDecision::Bisect(step);
        }
        match (self.pct, comparison) {
            (Some(pct), Some(c)) if c.gate_tripped(pct) => GateDecision::Fail { pct },
            _ => GateDecision::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_compared_passes_a_gate_and_skips_a_bisection() {
        let gate = Gate {
            pct: Some(5.0),
            bisect: false,
        };
        assert_eq!(gate.decide(None), GateDecision::Pass);
        let bisect = Gate {
            pct: None,
            bisect: true,
        };
        assert_eq!(bisect.decide(None), GateDecision::Bisect(BisectStep::Skip));
    }
}
