//! The conditions the sides of a comparison were measured in, compared like
//! the environment: a side whose runs were measured while other processes
//! kept CPUs busy ([`crate::env::conditions`], contended at
//! [`CONTENDED_CPUS`]) against a side measured quiet is a confounder, named
//! in the findings ([`findings`]) and beside every faster or slower verdict
//! of that side ([`qualifiers`], `Comparison::verdict_words`). A case whose
//! samples formed two clusters (the `bimodal` noise flag: the machine
//! switched modes during it, e.g. cross-CPU wake-ups from a halted or a
//! running CPU) on some sides only is named too ([`mode_finding`]), without
//! qualifying its verdict: a mode seen on one side may well be there on the
//! other, unflagged.
//!
//! Left out: correcting anything (a busy machine's numbers are not a quiet
//! machine's plus an offset), and differences of degree between sides that
//! are both contended (named, not qualified). Drift of the machine's own
//! speed is `drift_findings`' (the sentinels), not this.

use super::Side;
use crate::document::{CaseKey, NoiseFlag};
use crate::env::Conditions;
use crate::env::conditions::CONTENDED_CPUS;

/// The conditions of each run of one side.
#[derive(Debug, Clone)]
pub struct SideConditions {
    pub runs: Vec<Conditions>,
}

impl SideConditions {
    /// The conditions `side`'s documents record.
    pub fn of(side: &Side) -> Self {
        Self {
            runs: side.docs.iter().map(|d| Conditions::of(&d.env)).collect(),
        }
    }

    /// How many of the runs were contended.
    pub fn contended(&self) -> usize {
        self.runs.iter().filter(|c| c.contended()).count()
    }

    /// Whether this side and `other` differ: a different share of their runs
    /// contended (a run whose conditions were not recorded counts as not).
    pub fn differ(&self, other: &SideConditions) -> bool {
        self.contended() * other.runs.len() != other.contended() * self.runs.len()
    }

    /// The contended run that had the most CPUs used by others.
    fn busiest_run(&self) -> Option<&Conditions> {
        self.runs
            .iter()
            .filter(|c| c.contended())
            .max_by(|a, b| a.others_cpus().total_cmp(&b.others_cpus()))
    }

    /// What side `letter` was measured in, short: "B measured while other
    /// processes used 1.0 of 2 CPUs (python3 99 %)", "A quiet", "2 of 3 of
    /// B's runs measured while …", "A not recorded".
    pub fn short(&self, letter: &str) -> String {
        let n = self.runs.len();
        let Some(busiest) = self.busiest_run() else {
            if self.runs.iter().all(|c| !c.known()) {
                return format!("{letter} not recorded");
            }
            return format!("{letter} quiet");
        };
        let busy = busiest.busy_words(busiest.others_cpus());
        match (self.contended(), n) {
            (_, 1) => format!("{letter} measured while {busy}"),
            (k, n) if k == n => format!("{letter}'s {n} runs measured while {busy} (the busiest)"),
            (k, n) => format!("{k} of {letter}'s {n} runs measured while {busy} (the busiest)"),
        }
    }

    /// What side `letter` was measured in, in full: each run's conditions.
    pub fn words(&self, letter: &str) -> String {
        match &self.runs[..] {
            [one] => format!("{letter} was measured while {}", one.words()),
            runs => {
                let each: Vec<String> = runs.iter().map(Conditions::words).collect();
                format!("{letter}'s runs were measured while: {}", each.join("; "))
            }
        }
    }
}

/// The findings ([`findings`]) and each candidate's qualifier
/// ([`qualifiers`]) of `sides`, the first the baseline, lettered A, B, …,
/// and the cases of two modes on some sides only ([`mode_finding`]) among
/// `keys`, the cases compared.
pub fn of_sides(sides: &[Side], keys: &[&CaseKey]) -> (Vec<String>, Vec<Option<String>>) {
    let each: Vec<SideConditions> = sides.iter().map(SideConditions::of).collect();
    let letters: Vec<String> = (0..sides.len()).map(super::letter).collect();
    let mut found = findings(&each, &letters);
    found.extend(mode_finding(sides, keys, &letters));
    (found, qualifiers(&each, &letters))
}

/// Each candidate's conditions against the baseline's, for every side but
/// the first: the short words of both when they differ ([`SideConditions::differ`]).
pub fn qualifiers(sides: &[SideConditions], letters: &[String]) -> Vec<Option<String>> {
    sides[1..]
        .iter()
        .zip(&letters[1..])
        .map(|(cand, l)| {
            cand.differ(&sides[0])
                .then(|| format!("{}; {}", cand.short(l), sides[0].short(&letters[0])))
        })
        .collect()
}

/// The conditions in sentences, when a side was contended: each candidate
/// whose conditions differ from the baseline's, or, when every side was
/// contended alike, one line saying so.
pub fn findings(sides: &[SideConditions], letters: &[String]) -> Vec<String> {
    if sides.iter().all(|s| s.contended() == 0) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (cand, l) in sides[1..].iter().zip(&letters[1..]) {
        if cand.differ(&sides[0]) {
            out.push(format!(
                "the runs' conditions differ: {}; {}. Other processes using {CONTENDED_CPUS} \
                 CPU or more keep CPUs from idling, which changes what wake-ups and \
                 cross-CPU work cost, so differences between {l} and {} may be the load's, \
                 not the change's; re-run both quiet (verdicts of {l} are qualified)",
                cand.words(l),
                sides[0].words(&letters[0]),
                letters[0],
            ));
        }
    }
    if out.is_empty() {
        let each: Vec<String> = sides.iter().zip(letters).map(|(s, l)| s.short(l)).collect();
        out.push(format!(
            "every side was measured while other processes were busy ({}): the results are \
             those of a busy machine",
            each.join("; ")
        ));
    }
    out
}

/// One line naming the compared cases (`keys`) whose samples formed two
/// clusters on some sides and not on others, with the sides that had them;
/// `None` when there are none.
pub fn mode_finding(sides: &[Side], keys: &[&CaseKey], letters: &[String]) -> Option<String> {
    let bimodal = |side: &Side, k: &CaseKey| {
        let series = side.docs.iter().flat_map(|d| &d.series);
        series
            .filter(|s| s.key == *k)
            .any(|s| s.noise.contains(&NoiseFlag::Bimodal))
    };
    let cases: Vec<String> = keys
        .iter()
        .filter_map(|k| {
            let on: Vec<&str> = sides
                .iter()
                .zip(letters)
                .filter(|(side, _)| bimodal(side, k))
                .map(|(_, l)| l.as_str())
                .collect();
            (!on.is_empty() && on.len() < sides.len()).then(|| format!("{k} ({})", on.join(", ")))
        })
        .collect();
    if cases.is_empty() {
        return None;
    }
    Some(format!(
        "samples formed two clusters on some sides only (the machine switched modes during \
         the case, e.g. cross-CPU wake-ups with the other CPU halted or busy): {}; a change \
         of such a case may be the modes', not the change's",
        cases.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Change;
    use crate::env::conditions::tests::env_with;

    fn side(runs: &[&[(&str, f64)]]) -> SideConditions {
        SideConditions {
            runs: runs
                .iter()
                .map(|busy| Conditions::of(&env_with(busy, Some(&[]))))
                .collect(),
        }
    }

    fn letters() -> Vec<String> {
        vec!["A".into(), "B".into()]
    }

    #[test]
    fn a_busy_candidate_against_a_quiet_baseline_is_named_and_qualified() {
        let sides = [side(&[&[]]), side(&[&[("python3", 0.99)]])];
        assert_eq!(
            qualifiers(&sides, &letters()),
            [Some(
                "B measured while other processes used 1.0 of 2 CPUs (python3 99 %); A quiet"
                    .to_string()
            )]
        );
        // The order: the baseline busy, the candidate quiet.
        let reversed = [side(&[&[("python3", 0.99)]]), side(&[&[]])];
        assert_eq!(
            qualifiers(&reversed, &letters()),
            [Some(
                "B quiet; A measured while other processes used 1.0 of 2 CPUs (python3 99 %)"
                    .to_string()
            )]
        );
        let found = findings(&sides, &letters());
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with(
                "the runs' conditions differ: B was measured while other processes used 1.0 \
                 of 2 CPUs (python3 99 %), load average 1.90; A was measured while other \
                 processes were quiet, load average 1.90 on 2 CPUs."
            ),
            "{}",
            found[0]
        );
    }

    #[test]
    fn quiet_sides_have_nothing_to_say_and_busy_ones_alike_are_named_unqualified() {
        let quiet = [side(&[&[]]), side(&[&[("sshd", 0.2)]])];
        assert_eq!(qualifiers(&quiet, &letters()), [None]);
        assert!(findings(&quiet, &letters()).is_empty());
        let busy = [side(&[&[("cc1", 0.9)]]), side(&[&[("python3", 1.0)]])];
        assert_eq!(qualifiers(&busy, &letters()), [None]);
        let found = findings(&busy, &letters());
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("every side was measured while"),
            "{found:?}"
        );
    }

    #[test]
    fn sides_of_several_runs_differ_by_their_share_of_contended_runs() {
        let a = side(&[&[], &[("cc1", 0.6)]]);
        let b = side(&[&[("cc1", 0.6)], &[]]);
        assert!(!a.differ(&b), "one of two on each side");
        let c = side(&[&[], &[], &[("cc1", 0.6)]]);
        assert!(a.differ(&c));
        assert_eq!(
            c.short("C"),
            "1 of C's 3 runs measured while other processes used 0.6 of 2 CPUs (cc1 60 %) \
             (the busiest)"
        );
        let mut unknown = side(&[&[]]);
        unknown.runs[0].start = None;
        unknown.runs[0].end = None;
        assert_eq!(unknown.short("A"), "A not recorded");
        assert!(unknown.differ(&side(&[&[("x", 0.5)]])));
    }

    /// The report fixture compared with itself, B measured while python3
    /// used a CPU, A quiet.
    fn busy_b() -> super::super::Comparison {
        let doc = |busy: &[(&str, f64)]| {
            let mut d = crate::report::fixture();
            d.env = env_with(busy, Some(&[]));
            d
        };
        let docs = [
            ("a.json".to_string(), doc(&[])),
            ("b.json".to_string(), doc(&[("python3", 0.99)])),
        ];
        let options = super::super::Options {
            resamples: 200,
            ..Default::default()
        };
        super::super::compare(&docs, options).unwrap()
    }

    #[test]
    fn faster_and_slower_verdicts_of_a_side_in_other_conditions_are_qualified() {
        use crate::stats::verdict::Verdict;
        let mut c = busy_b();
        assert_eq!(c.conditions.len(), 1, "{:?}", c.conditions);
        let mut ch = c.rows[0].changes[0];
        ch.testable = true;
        ch.verdict = Verdict::Slower;
        let plain = ch.words(&c.options);
        assert_eq!(
            c.verdict_words(0, &ch),
            format!(
                "{plain} — but the runs' conditions differ (B measured while other processes \
                 used 1.0 of 2 CPUs (python3 99 %); A quiet); re-run both quiet"
            )
        );
        for v in [
            Verdict::Faster,
            Verdict::SlowerWithinMargin,
            Verdict::FasterWithinMargin,
        ] {
            ch.verdict = v;
            assert!(
                c.verdict_words(0, &ch)
                    .contains("— but the runs' conditions differ")
            );
        }
        for v in [Verdict::Equivalent, Verdict::Inconclusive, Verdict::TooFew] {
            ch.verdict = v;
            assert_eq!(c.verdict_words(0, &ch), ch.words(&c.options), "{v:?}");
        }
        // The records say the verdict the same way, its value unchanged.
        c.rows[0].changes[0] = Change {
            verdict: Verdict::Slower,
            ..ch
        };
        let record = &c.records()[0];
        assert_eq!(record.verdict, Verdict::Slower);
        assert!(
            record.verdict_words.contains("re-run both quiet"),
            "{}",
            record.verdict_words
        );
        // Quiet alike: the words are the change's own.
        c.differing_conditions = vec![None];
        assert_eq!(c.verdict_words(0, &ch), ch.words(&c.options));
    }

    #[test]
    fn every_rendering_names_the_conditions() {
        let mut c = busy_b();
        c.rows[0].changes[0].verdict = crate::stats::verdict::Verdict::Slower;
        c.rows[0].changes[0].testable = true;
        let text = crate::report::compare::render(&c, false);
        assert!(
            text.contains("Conditions: the runs' conditions differ: B was measured while"),
            "{text}"
        );
        assert!(text.contains("re-run both quiet"), "{text}");
        let md = crate::report::markdown::comparison(&c);
        assert!(
            md.contains("Conditions:\n\n- the runs' conditions differ"),
            "{md}"
        );
        assert!(md.contains("— but the runs' conditions differ"), "{md}");
        let junit = crate::report::junit::comparison(&c, "osbench", 0.0);
        assert!(junit.contains("re-run both quiet"), "{junit}");
    }

    #[test]
    fn runs_of_one_document_have_no_conditions_to_compare() {
        let c = super::super::paired(&crate::report::fixture(), Default::default()).unwrap();
        assert!(c.conditions.is_empty() && c.differing_conditions.is_empty());
    }

    #[test]
    fn a_case_of_two_modes_on_one_side_only_is_named() {
        let mut a = crate::report::fixture();
        for s in &mut a.series {
            s.noise.retain(|f| *f != NoiseFlag::Bimodal);
        }
        let mut b = a.clone();
        b.series[0].noise.push(NoiseFlag::Bimodal);
        let sides = [
            Side {
                label: "a".into(),
                docs: vec![&a],
            },
            Side {
                label: "b".into(),
                docs: vec![&b],
            },
        ];
        let keys: Vec<&CaseKey> = a.series.iter().map(|s| &s.key).collect();
        let found = mode_finding(&sides, &keys, &letters()).unwrap();
        assert!(
            found.starts_with("samples formed two clusters on some sides only"),
            "{found}"
        );
        assert!(
            found.contains(&format!("{} (B)", a.series[0].key)),
            "{found}"
        );
        assert_eq!(found.matches(" (B)").count(), 1, "{found}");
        // On every side: the same modes, nothing to say.
        let mut both = b.clone();
        both.series[0].noise = vec![NoiseFlag::Bimodal];
        let sides = [
            Side {
                label: "b".into(),
                docs: vec![&b],
            },
            Side {
                label: "both".into(),
                docs: vec![&both],
            },
        ];
        assert_eq!(mode_finding(&sides, &keys, &letters()), None);
    }
}
