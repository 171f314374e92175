//! Fleet comparisons (`compare BEFORE AFTER --by host`): each host's runs
//! compared as two documents are ([`super::compare`]: ratio of medians with a
//! bootstrap interval, Mann–Whitney p), and a fleet-level verdict per case
//! that treats the hosts as replicates: the per-host ratios of medians go
//! into the paired test [`paired_log_ratio`] (geometric mean, t interval on
//! the log-ratios, exact two-sided sign-flip p), Holm-adjusted over cases.
//!
//! With n hosts the sign-flip test cannot give p below 2/2ⁿ (0.5 with two
//! hosts, 0.0625 with five): the comparison says when the fleet is too small
//! to reach the significance level at all. More than 20 hosts are taken as
//! 20 blocks of consecutive hosts (the median log-ratio of each), which keeps
//! the test exact at some loss of power. Left out: weighting hosts by their
//! own precision (each host counts once, as one replicate).

use super::{Comparison, Options, compare};
use crate::document::Document;
use crate::error::{Error, Result};
use crate::stats::compare::{
    MAX_ROUNDS, Power, RatioCi, Verdict, block_medians, holm, paired_log_ratio, verdict,
};

/// Every host's comparison and, per case, the fleet's.
#[derive(Debug, Clone)]
pub struct FleetComparison {
    /// What BEFORE and AFTER named (labels, run ids or directories).
    pub before: String,
    pub after: String,
    /// Each host present on both sides, with its own comparison (A = before).
    pub hosts: Vec<(String, Comparison)>,
    /// Hosts with runs on one side only, and which side they lack.
    pub unpaired: Vec<(String, &'static str)>,
    /// One per case every paired host has, in the first host's order.
    pub cases: Vec<FleetCase>,
    pub options: Options,
}

/// One case across the fleet.
#[derive(Debug, Clone)]
pub struct FleetCase {
    /// "bench case" (with " [config]" when not the default).
    pub name: String,
    /// Geometric mean of the hosts' ratios (after ÷ before), with t intervals.
    pub ci: RatioCi,
    /// Exact sign-flip p over hosts (blocks of hosts beyond 20), Holm-adjusted over cases.
    pub p_adjusted: f64,
    /// How small a p the test can give with this many hosts (blocks beyond 20).
    pub power: Power,
    pub verdict: Verdict,
    /// Hosts whose own verdict is slower, faster, and how many hosts.
    pub slower: usize,
    pub faster: usize,
    pub hosts: usize,
}

/// Compares each host's BEFORE document with its AFTER one. `before` and
/// `after` hold (host, document) pairs; hosts on one side only are listed as
/// unpaired. Needs at least one paired host; the fleet verdict needs two.
pub fn compare_by_host(
    names: (&str, &str),
    before: Vec<(String, Document)>,
    after: Vec<(String, Document)>,
    options: Options,
) -> Result<FleetComparison> {
    let mut hosts = Vec::new();
    let mut unpaired = Vec::new();
    let mut after = after;
    for (host, doc_before) in before {
        match after.iter().position(|(h, _)| *h == host) {
            Some(i) => {
                let (_, doc_after) = after.remove(i);
                let docs = [
                    (names.0.to_string(), doc_before),
                    (names.1.to_string(), doc_after),
                ];
                let c = compare(&docs, options)
                    .map_err(|e| Error::Measure(format!("host '{host}': {e}")))?;
                hosts.push((host, c));
            }
            None => unpaired.push((host, "after")),
        }
    }
    unpaired.extend(after.into_iter().map(|(h, _)| (h, "before")));
    if hosts.is_empty() {
        return Err(Error::Measure(format!(
            "no host has runs on both sides ({} and {}); nothing to compare by host",
            names.0, names.1
        )));
    }
    let cases = fleet_cases(&hosts, options);
    Ok(FleetComparison {
        before: names.0.into(),
        after: names.1.into(),
        hosts,
        unpaired,
        cases,
        options,
    })
}

/// The fleet verdict of every case all hosts compared (none with one host).
fn fleet_cases(hosts: &[(String, Comparison)], options: Options) -> Vec<FleetCase> {
    if hosts.len() < 2 {
        return Vec::new();
    }
    let name = |r: &super::CaseRow| {
        format!(
            "{} {}",
            r.bench,
            crate::report::case_label(&r.case, &r.config)
        )
    };
    let mut cases: Vec<FleetCase> = Vec::new();
    for row in &hosts[0].1.rows {
        let key = name(row);
        let changes: Option<Vec<_>> = hosts
            .iter()
            .map(|(_, c)| c.rows.iter().find(|r| name(r) == key).map(|r| r.changes[0]))
            .collect();
        let Some(changes) = changes else { continue };
        let logs: Vec<f64> = changes.iter().map(|ch| ch.ci.ratio.ln()).collect();
        let replicates = if logs.len() > MAX_ROUNDS {
            block_medians(&logs)
        } else {
            logs
        };
        let ones = vec![1.0; replicates.len()];
        let ratios: Vec<f64> = replicates.iter().map(|l| l.exp()).collect();
        let (ci, p) = paired_log_ratio(&ones, &ratios);
        cases.push(FleetCase {
            name: key,
            ci,
            p_adjusted: p,
            power: Power::sign_flip(replicates.len(), options.alpha, "hosts", "a fleet of"),
            verdict: Verdict::Inconclusive,
            slower: changes
                .iter()
                .filter(|c| c.verdict == Verdict::Slower)
                .count(),
            faster: changes
                .iter()
                .filter(|c| c.verdict == Verdict::Faster)
                .count(),
            hosts: changes.len(),
        });
    }
    let adjusted = holm(&cases.iter().map(|c| c.p_adjusted).collect::<Vec<_>>());
    for (case, p) in cases.iter_mut().zip(adjusted) {
        case.p_adjusted = p;
        case.verdict = verdict(&case.ci, p, options.alpha, options.equivalence, &case.power);
    }
    cases
}

impl FleetCase {
    /// The fleet's verdict in words ([`Verdict::words`]).
    pub fn words(&self, options: &Options) -> String {
        self.verdict
            .words(self.ci.ratio, options.equivalence, &self.power)
    }
}

impl FleetComparison {
    /// Whether any case is, over the fleet, significantly slower by more than `pct` %.
    pub fn gate_tripped(&self, pct: f64) -> bool {
        self.cases
            .iter()
            .any(|c| c.verdict == Verdict::Slower && c.ci.ratio > 1.0 + pct / 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::Series;

    /// A run of one case whose samples are `base` × (1 + small jitter).
    fn doc(base: f64) -> Document {
        let (_, mut d) = crate::store::fixture();
        let mut s: Series = d.series[0].clone();
        s.samples = (0..30)
            .map(|i| base * (1.0 + 0.001 * f64::from(i % 7)))
            .collect();
        s.summary = crate::stats::summary::summarize(&s.samples).unwrap();
        d.series = vec![s];
        // Three invocations a host, so that each host's own verdict can be significant.
        crate::compare::split_into_invocations(&mut d, 3);
        d
    }

    fn fleet(before: &[f64], after: &[f64]) -> FleetComparison {
        let side = |v: &[f64]| {
            v.iter()
                .enumerate()
                .map(|(i, &b)| (format!("h{i}"), doc(b)))
                .collect()
        };
        compare_by_host(("b", "a"), side(before), side(after), Options::default()).unwrap()
    }

    #[test]
    fn hosts_are_replicates_of_the_fleet_verdict() {
        // Every one of 8 hosts about 3 % slower after.
        let before = [100.0, 110.0, 95.0, 120.0, 101.0, 99.0, 130.0, 90.0];
        let after: Vec<f64> = before
            .iter()
            .enumerate()
            .map(|(i, b)| b * (1.03 + 0.002 * i as f64))
            .collect();
        let f = fleet(&before, &after);
        assert_eq!(f.hosts.len(), 8);
        let case = &f.cases[0];
        assert_eq!((case.hosts, case.slower), (8, 8));
        assert!(
            case.ci.ci95.0 > 1.02 && case.ci.ci95.1 < 1.05,
            "{:?}",
            case.ci
        );
        assert!(
            (case.p_adjusted - 2.0 / 256.0).abs() < 1e-12,
            "{}",
            case.p_adjusted
        );
        assert_eq!(case.verdict, Verdict::Slower);
        assert!(f.gate_tripped(2.0) && !f.gate_tripped(10.0));
    }

    #[test]
    fn two_hosts_cannot_be_significant_and_the_floor_says_so() {
        let f = fleet(&[100.0, 200.0], &[150.0, 300.0]);
        let case = &f.cases[0];
        assert_eq!(case.power.min_p, 0.5);
        assert_eq!(case.verdict, Verdict::TooFew);
        assert_eq!(case.slower, 2);
    }

    #[test]
    fn hosts_on_one_side_only_are_listed_and_one_host_has_no_fleet_verdict() {
        let f = compare_by_host(
            ("b", "a"),
            vec![("x".into(), doc(1.0)), ("y".into(), doc(1.0))],
            vec![("x".into(), doc(1.1)), ("z".into(), doc(1.0))],
            Options::default(),
        )
        .unwrap();
        assert_eq!(f.hosts.len(), 1);
        assert!(f.cases.is_empty());
        assert_eq!(f.unpaired, [("y".into(), "after"), ("z".into(), "before")]);
        let none = compare_by_host(
            ("b", "a"),
            vec![("x".into(), doc(1.0))],
            vec![("y".into(), doc(1.0))],
            Options::default(),
        );
        assert!(none.unwrap_err().to_string().contains("no host"));
    }

    #[test]
    fn more_than_twenty_hosts_are_taken_in_blocks() {
        let before = vec![100.0; 25];
        let after: Vec<f64> = (0..25).map(|i| 100.0 * (1.05 + 0.001 * i as f64)).collect();
        let case = &fleet(&before, &after).cases[0];
        assert_eq!(case.hosts, 25);
        assert!((case.power.min_p - 2.0 / f64::from(1u32 << 20)).abs() < 1e-15);
        assert_eq!(case.verdict, Verdict::Slower);
    }
}
