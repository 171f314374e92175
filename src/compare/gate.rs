//! The gate decision, in one place: from a comparison (or none, when
//! nothing was compared), or a fleet's comparisons, and the gate options
//! (`--gate PCT`, `--allow-undecided`, `--bisect-exit`), whether a command
//! passes, fails its regression gate, cannot judge (a case with too few
//! replicates for a test, or nothing compared: never a silent pass), or
//! tells `git bisect run` good, bad or skip. Its exit statuses are
//! [`GateDecision::exit_status`] (docs/guide/exit-status.md lists them);
//! saying it on stderr is the command line's.

use super::fleet::FleetComparison;
use super::{BisectStep, CaseRow, Change, Comparison};
use crate::stats::verdict::{Power, Verdict};

/// The exit status of a gate that could not judge a case.
pub const UNDECIDED_STATUS: u8 = 3;

/// How many undecided cases the gate's line names (the rest are counted).
const NAMED: usize = 5;

/// What judges a comparison for an exit status.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Gate {
    /// `--gate PCT`: fail when a case is significantly slower than the
    /// baseline by more than PCT %.
    pub pct: Option<f64>,
    /// `--allow-undecided`: pass, not [`UNDECIDED_STATUS`], when the gate
    /// cannot judge a case.
    pub allow_undecided: bool,
    /// `--bisect-exit`: decide as `git bisect run` expects instead.
    pub bisect: bool,
}

/// What the gate decided.
#[derive(Debug, Clone, PartialEq)]
pub enum GateDecision {
    /// No gate, or every case judged and none trips it.
    Pass,
    /// A case is significantly slower than the baseline by more than `pct` %
    /// (whatever the cases that could not be judged).
    Fail { pct: f64 },
    /// A gate was asked, none of the judged cases trips it, and some case
    /// could not be judged, or nothing was compared.
    Undecided(Undecided),
    /// `--bisect-exit`: the step `git bisect` is told (skip when nothing
    /// was compared or a case is undecided).
    Bisect(BisectStep),
}

/// The cases a gate could not judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Undecided {
    /// Each case with why; empty when nothing was compared and no case
    /// can be named.
    pub cases: Vec<UndecidedCase>,
    /// `--allow-undecided` was given: the command passes, and says so.
    pub allowed: bool,
}

/// One case the gate could not judge.
#[derive(Debug, Clone, PartialEq)]
pub struct UndecidedCase {
    /// "bench case" (with " \[config\]", and the candidate's label when a
    /// comparison has several).
    pub case: String,
    /// Why: "one invocation a side and no stored spread", "too few rounds …".
    pub why: String,
    /// What would let it be judged ("run each side with --invocations 3 …").
    pub remedy: Option<String>,
}

impl Gate {
    /// The decision on `comparison` (`None`: nothing was compared).
    pub fn decide(&self, comparison: Option<&Comparison>) -> GateDecision {
        if self.bisect {
            let gate_pct = self.pct.unwrap_or(0.0);
            let step = comparison.map_or(BisectStep::Skip, |c| c.bisect_step(gate_pct));
            return GateDecision::Bisect(step);
        }
        let Some(pct) = self.pct else {
            return GateDecision::Pass;
        };
        let Some(c) = comparison else {
            return self.judged(pct, false, Vec::new(), true);
        };
        let cases = undecided_cases(c);
        self.judged(pct, c.gate_tripped(pct), cases, c.rows.is_empty())
    }

    /// The decision on a comparison by host: on each fleet's verdicts, the
    /// hosts as replicates (`--bisect-exit` does not apply).
    pub fn decide_fleet(&self, fleets: &[FleetComparison]) -> GateDecision {
        let Some(pct) = self.pct else {
            return GateDecision::Pass;
        };
        let tripped = fleets.iter().any(|f| f.gate_tripped(pct));
        let cases: Vec<UndecidedCase> = fleets.iter().flat_map(fleet_undecided).collect();
        let nothing = fleets.iter().all(|f| f.cases.is_empty());
        self.judged(pct, tripped, cases, nothing)
    }

    /// A tripped gate fails whatever else; else undecided cases (or
    /// nothing compared: `nothing`, whatever `cases` names) are undecided;
    /// else the gate passes.
    fn judged(
        &self,
        pct: f64,
        tripped: bool,
        cases: Vec<UndecidedCase>,
        nothing: bool,
    ) -> GateDecision {
        if tripped {
            GateDecision::Fail { pct }
        } else if nothing || !cases.is_empty() {
            GateDecision::Undecided(Undecided {
                cases,
                allowed: self.allow_undecided,
            })
        } else {
            GateDecision::Pass
        }
    }
}

impl GateDecision {
    /// The exit status: 0 pass (and undecided under `--allow-undecided`),
    /// 1 a tripped gate, [`UNDECIDED_STATUS`] undecided; under
    /// `--bisect-exit` `git bisect run`'s 0, 1 or 125.
    pub fn exit_status(&self) -> u8 {
        match self {
            GateDecision::Pass => 0,
            GateDecision::Fail { .. } => 1,
            GateDecision::Undecided(u) if u.allowed => 0,
            GateDecision::Undecided(_) => UNDECIDED_STATUS,
            GateDecision::Bisect(step) => step.exit_status(),
        }
    }
}

impl Undecided {
    /// The gate's line ("regression gate: …", for the command line to
    /// prefix with "osbench: "): which cases could not be judged and why,
    /// what would judge them, and what lets them pass (or that they passed).
    pub fn words(&self) -> String {
        let mut named: Vec<String> = self
            .cases
            .iter()
            .take(NAMED)
            .map(|c| format!("{}: {}", c.case, c.why))
            .collect();
        if self.cases.len() > NAMED {
            named.push(format!("and {} more", self.cases.len() - NAMED));
        }
        let what = match self.cases.len() {
            0 => "nothing was compared, so no case could be judged".to_string(),
            1 => format!("1 case could not be judged ({})", named.join("; ")),
            n => format!("{n} cases could not be judged ({})", named.join("; ")),
        };
        let mut remedies: Vec<&str> = Vec::new();
        for r in self.cases.iter().filter_map(|c| c.remedy.as_deref()) {
            if !remedies.contains(&r) {
                remedies.push(r);
            }
        }
        let remedies = match (&remedies[..], self.cases.is_empty()) {
            ([], true) => ": compare runs that hold the same cases".to_string(),
            ([], false) => String::new(),
            (r, _) => format!(": {}", r.join("; ")),
        };
        let allow = if self.allowed {
            "; passed, as --allow-undecided asks"
        } else {
            "; --allow-undecided lets the gate pass without them"
        };
        format!("regression gate: {what}{remedies}{allow}")
    }
}

/// The cases of `c` the gate cannot judge: too few replicates for a test
/// (one invocation a side with no stored spread included), and the cases
/// that have no ratio at all.
fn undecided_cases(c: &Comparison) -> Vec<UndecidedCase> {
    let several = c.labels.len() > 2;
    let mut cases: Vec<UndecidedCase> = c
        .rows
        .iter()
        .flat_map(|row| {
            row.changes
                .iter()
                .zip(c.labels.iter().skip(1))
                .filter(|(ch, _)| ch.verdict == Verdict::TooFew)
                .map(move |(ch, label)| too_few(row, ch, several.then_some(label)))
        })
        .collect();
    cases.extend(c.not_compared.iter().map(|(case, why)| UndecidedCase {
        case: case.clone(),
        why: why.clone(),
        remedy: None,
    }));
    cases
}

/// A change with too few replicates for its test.
fn too_few(row: &CaseRow, ch: &Change, label: Option<&String>) -> UndecidedCase {
    let case = match label {
        Some(l) => format!("{} ({l})", row.key),
        None => row.key.to_string(),
    };
    if !ch.testable {
        return UndecidedCase {
            case,
            why: "one invocation a side and no stored spread".into(),
            remedy: Some(if ch.power.flag.is_empty() {
                super::decide::replicate_advice(ch.power.flag).into()
            } else {
                "run each side with --invocations 3, or compare against a labelled baseline \
                 of several runs"
                    .into()
            }),
        };
    }
    UndecidedCase {
        case,
        why: too_few_words(&ch.power),
        remedy: Some(format!(
            "run again with {} {} or more",
            ch.power.flag, ch.power.needs
        )),
    }
}

/// "too few rounds for the test (p ≥ 0.0625 with 4 rounds)".
fn too_few_words(power: &Power) -> String {
    format!(
        "too few {0} for the test (p ≥ {1} with {2} {0})",
        power.what, power.min_p, power.n
    )
}

/// The cases of a fleet the gate cannot judge: fleet verdicts with too few
/// hosts, or with one host (no fleet verdict at all) that host's cases.
fn fleet_undecided(f: &FleetComparison) -> Vec<UndecidedCase> {
    if f.hosts.len() < 2 {
        let host = f.hosts.first();
        return host
            .iter()
            .flat_map(|(_, c)| &c.rows)
            .map(|row| UndecidedCase {
                case: row.key.to_string(),
                why: "one host, and the fleet's verdict needs two or more".into(),
                remedy: Some(
                    "run on two or more hosts, or compare the host's runs without --by host".into(),
                ),
            })
            .collect();
    }
    f.cases
        .iter()
        .filter(|c| c.verdict == Verdict::TooFew)
        .map(|c| UndecidedCase {
            case: c.name.clone(),
            why: too_few_words(&c.power),
            remedy: Some(format!(
                "run on {} {} hosts or more",
                c.power.flag, c.power.needs
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(pct: f64) -> Gate {
        Gate {
            pct: Some(pct),
            ..Gate::default()
        }
    }

    /// Two documents of one case, one invocation each, `after` ÷ `before`
    /// slower by `ratio`: no stored spread, so the verdict is too-few.
    fn one_invocation_a_side(ratio: f64) -> Comparison {
        let (_, before) = crate::store::fixture();
        let mut after = before.clone();
        for s in &mut after.series {
            s.samples.iter_mut().for_each(|v| *v *= ratio);
            s.summary = crate::stats::summary::summarize(&s.samples).unwrap();
        }
        let docs = [("a".to_string(), before), ("b".to_string(), after)];
        super::super::compare(&docs, super::super::Options::default()).unwrap()
    }

    #[test]
    fn nothing_compared_is_undecided_for_a_gate_and_skips_a_bisection() {
        let undecided = gate(5.0).decide(None);
        assert_eq!(
            undecided,
            GateDecision::Undecided(Undecided {
                cases: Vec::new(),
                allowed: false
            })
        );
        assert_eq!(undecided.exit_status(), UNDECIDED_STATUS);
        let GateDecision::Undecided(u) = undecided else {
            unreachable!()
        };
        assert!(u.words().contains("nothing was compared"), "{}", u.words());
        let bisect = Gate {
            bisect: true,
            ..Gate::default()
        };
        assert_eq!(bisect.decide(None), GateDecision::Bisect(BisectStep::Skip));
        assert_eq!(bisect.decide(None).exit_status(), 125);
        assert_eq!(Gate::default().decide(None), GateDecision::Pass);
    }

    #[test]
    fn one_invocation_a_side_is_undecided_unless_allowed() {
        let c = one_invocation_a_side(1.04);
        assert!(
            c.rows
                .iter()
                .all(|r| r.changes[0].verdict == Verdict::TooFew)
        );
        let d = gate(2.0).decide(Some(&c));
        assert_eq!(d.exit_status(), 3);
        let GateDecision::Undecided(u) = &d else {
            panic!("{d:?}")
        };
        assert_eq!(u.cases.len(), c.rows.len());
        let line = u.words();
        assert!(line.starts_with("regression gate: "), "{line}");
        assert!(line.contains("could not be judged"), "{line}");
        assert!(
            line.contains("one invocation a side and no stored spread"),
            "{line}"
        );
        assert!(line.contains("--invocations 3"), "{line}");
        assert!(line.contains("--allow-undecided"), "{line}");
        let allowed = Gate {
            allow_undecided: true,
            ..gate(2.0)
        };
        let d = allowed.decide(Some(&c));
        assert!(
            matches!(&d, GateDecision::Undecided(u) if u.allowed),
            "{d:?}"
        );
        assert_eq!(d.exit_status(), 0);
        // No gate asked: nothing to judge.
        assert_eq!(Gate::default().decide(Some(&c)), GateDecision::Pass);
    }

    #[test]
    fn a_tripped_gate_beats_undecided_cases() {
        let mut c = one_invocation_a_side(1.0);
        // One case judged slower by 10 %, the rest too-few.
        let row = &mut c.rows[0];
        row.changes[0].testable = true;
        row.changes[0].verdict = Verdict::Slower;
        row.changes[0].ci.ratio = 1.10;
        c.not_compared.push(("x y".into(), "a sample is 0".into()));
        let d = gate(5.0).decide(Some(&c));
        assert_eq!(d, GateDecision::Fail { pct: 5.0 });
        assert_eq!(d.exit_status(), 1);
        // Under the gate's level, the case with no ratio leaves it undecided.
        let d = gate(20.0).decide(Some(&c));
        let GateDecision::Undecided(u) = &d else {
            panic!("{d:?}")
        };
        assert!(u.cases.iter().any(|k| k.case == "x y"), "{u:?}");
        assert_eq!(d.exit_status(), 3);
    }

    #[test]
    fn a_comparison_with_no_rows_is_undecided_and_names_the_cases_without_a_ratio() {
        let mut c = one_invocation_a_side(1.0);
        c.rows.clear();
        let d = gate(5.0).decide(Some(&c));
        assert_eq!(d.exit_status(), 3, "{d:?}");
        c.not_compared.push(("x y".into(), "a sample is 0".into()));
        let GateDecision::Undecided(u) = gate(5.0).decide(Some(&c)) else {
            panic!("no rows is undecided")
        };
        assert!(
            u.words()
                .contains("1 case could not be judged (x y: a sample is 0)")
        );
    }

    #[test]
    fn the_line_names_a_few_cases_and_counts_the_rest() {
        let case = |i: usize| UndecidedCase {
            case: format!("b c{i}"),
            why: "why".into(),
            remedy: Some("more".into()),
        };
        let u = Undecided {
            cases: (0..8).map(case).collect(),
            allowed: true,
        };
        let line = u.words();
        assert!(
            line.contains("8 cases could not be judged (b c0: why;"),
            "{line}"
        );
        assert!(
            line.contains("b c4: why; and 3 more): more; passed"),
            "{line}"
        );
        assert!(!line.contains("b c5"), "{line}");
    }
}
