//! What would decide an undecided verdict, in numbers and words: the
//! smallest change the evidence could have detected and the replicates that
//! would detect the observed one ([`Change::decider`], from
//! [`crate::stats::power`]), how to replicate a side, and the words of a
//! change with no spread to judge it by (one invocation a side).
//!
//! Left out: planning a whole experiment (that is `run --target-mde`), and
//! the power of tests other than the t on logs (the sign-flip test's reach
//! is only checked, see [`crate::stats::power::sign_flip_keeps_promise`]).

use super::Change;
use crate::document::ReplicateUnit;
use crate::stats::verdict::Verdict;

impl Change {
    /// What would decide an undecided change: the smallest change this
    /// evidence detects with 80 % power at the level the verdict was judged
    /// at, and the replicates that would detect the observed change
    /// ([`crate::stats::power`]). `None` without an interval.
    pub fn decider(&self) -> Option<Decider> {
        use crate::stats::power::{
            Design, min_detectable, replicates_needed, sign_flip_keeps_promise,
            sign_flip_pairs_needed,
        };
        if !self.testable || self.df <= 0.0 || self.ci.ci95.0 >= self.ci.ci95.1 {
            return None;
        }
        let r = &self.replication;
        let design = match r.unit {
            ReplicateUnit::Invocations => Design::Unpaired {
                baseline: r.baseline,
                candidate: r.candidate,
            },
            ReplicateUnit::Rounds | ReplicateUnit::Blocks => Design::Paired { n: r.baseline },
        };
        let t = crate::stats::paired::t_quantile(0.975, self.df);
        let se = (self.ci.ci95.1 / self.ci.ci95.0).ln() / (2.0 * t);
        let log_sd = se / design.se_factor();
        let alpha = (1.0 - self.judged_level).max(1e-12);
        let paired = !matches!(design, Design::Unpaired { .. });
        // Paired verdicts rest on the sign-flip test: too few pairs for it
        // at this level detect nothing, however large the change.
        let too_coarse = paired && !sign_flip_keeps_promise(r.baseline, alpha);
        let detectable = if too_coarse {
            f64::INFINITY
        } else {
            min_detectable(design, self.df, log_sd, alpha, DECIDING_POWER)
        };
        let observed = self.ci.ratio.ln().abs();
        let needed = (observed > 1e-4)
            .then(|| {
                replicates_needed(paired, log_sd, observed, alpha, DECIDING_POWER, MOST_NEEDED)
            })
            .flatten()
            .map(|n| match paired {
                true => n.max(sign_flip_pairs_needed(alpha)),
                false => n,
            });
        Some(Decider {
            detectable: detectable.exp_m1(),
            observed: self.ci.ratio - 1.0,
            needed,
            paired,
            // A too-few verdict already says the test is too coarse.
            too_coarse: (too_coarse && self.verdict != Verdict::TooFew)
                .then(|| (r.baseline, sign_flip_pairs_needed(alpha))),
            what: self.power.what,
            flag: self.power.flag,
            seconds_each: self.seconds_per_replicate,
        })
    }
}

/// A change this far from 1 (either way, as a factor) is named as such when
/// one invocation a side gives no spread to judge it by. Not a verdict: a
/// debug build's A/A invocations on a loaded 2-vCPU VM were seen 1.52×
/// apart, and cross-CPU wake-ups from a halted vCPU cost tens of times a
/// busy one's — which is why the words ask to replicate.
pub const EXTREME_FACTOR: f64 = 2.0;

/// The words of a change with no spread to judge it by (one invocation a
/// side, nothing stored): a too-few verdict that says what would decide it,
/// and names an extreme change as such.
pub(super) fn untestable_words(ratio: f64, flag: &str) -> String {
    let replicate = replicate_advice(flag);
    let factor = ratio.max(1.0 / ratio);
    if factor >= EXTREME_FACTOR {
        let way = if ratio > 1.0 { "slower" } else { "faster" };
        return format!(
            "{factor:.2}× {way} in one invocation a side; no spread to judge it by — replicate \
             to confirm: {replicate}"
        );
    }
    format!(
        "inconclusive: one invocation a side, and no stored runs of this case on this host and \
         kernel tell how far separate invocations differ; {replicate}"
    )
}

/// The power at which [`Change::decider`] names what this evidence detects.
pub const DECIDING_POWER: f64 = 0.8;
/// Replicates a side beyond which [`Change::decider`] says a change is too small to tell.
pub const MOST_NEEDED: usize = 1000;

/// What would decide an undecided change ([`Change::decider`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decider {
    /// The smallest relative change this evidence detects with 80 % power (0.098: ±9.8 %).
    pub detectable: f64,
    /// The observed relative change (ratio − 1).
    pub observed: f64,
    /// Replicates (a side, or pairs) that would detect the observed change
    /// with 80 % power; `None` beyond [`MOST_NEEDED`], or no change observed.
    pub needed: Option<usize>,
    /// Rounds or blocks of one run (pairs), not replicates a side.
    pub paired: bool,
    /// Paired: the pairs there are and the fewest with which the sign-flip
    /// test the verdict rests on can detect a change reliably at its level,
    /// when there are fewer.
    pub too_coarse: Option<(usize, usize)>,
    /// What a replicate is ("invocations", "rounds", "runs") and the option that sets it.
    pub what: &'static str,
    pub flag: &'static str,
    /// About how long one replicate takes.
    pub seconds_each: Option<f64>,
}

impl Decider {
    /// "this evidence could detect ±9.8% (80% power); to tell +8.2%:
    /// about 9 invocations a side (--invocations 9), ~45 s each".
    pub fn words(&self) -> String {
        let detect = if self.detectable.is_finite() {
            Some(format!(
                "this evidence could detect ±{:.1}% (80% power)",
                self.detectable * 100.0
            ))
        } else if let Some((have, least)) = self.too_coarse {
            Some(format!(
                "{have} {0} are too few for the sign-flip test to detect a change reliably at \
                 this comparison's level ({least} or more {0} are)",
                self.what
            ))
        } else if self.paired {
            None // a too-few verdict, which says why
        } else {
            Some("this evidence could detect no change".to_string())
        };
        let observed = format!("{:+.1}%", self.observed * 100.0);
        let a_side = if self.paired { "" } else { " a side" };
        let tell = match self.needed {
            Some(n) => {
                let each = self
                    .seconds_each
                    .map_or_else(String::new, |s| format!(", ~{} each", duration_words(s)));
                let flag = if self.flag.is_empty() {
                    String::new()
                } else {
                    format!(" ({} {n})", self.flag)
                };
                format!(
                    "to tell {observed}: about {n} {}{a_side}{flag}{each}",
                    self.what
                )
            }
            None if self.observed.abs() > 1e-4 => format!(
                "{observed} is too small to tell here with up to {MOST_NEEDED} {}{a_side}",
                self.what
            ),
            None => return detect.unwrap_or_default(),
        };
        match detect {
            Some(detect) => format!("{detect}; {tell}"),
            None => tell,
        }
    }
}

/// A duration in seconds as people say it: "400 ms", "4.6 s", "45 s", "3 min", "1.5 h".
fn duration_words(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1000.0)
    } else if seconds < 10.0 {
        format!("{seconds:.1} s")
    } else if seconds < 120.0 {
        format!("{seconds:.0} s")
    } else if seconds < 7200.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// How to replicate a side of a comparison of saved runs whose replicates
/// are set by `flag` (a [`crate::stats::verdict::Power::flag`]: `--invocations` for `run`'s
/// cases; empty for `time`'s commands, which have no invocations but runs
/// kept under one label).
pub fn replicate_advice(flag: &str) -> &'static str {
    if flag.is_empty() {
        "time each side several times under one label (osbench time --label NAME …), or time \
         both commands in one run"
    } else {
        "run each side with --invocations 5 (or label several runs alike), or compare \
         configurations in one run"
    }
}
