//! Fleet comparisons (`compare BEFORE AFTER --by host`): each host's runs
//! compared as two documents are ([`super::compare`]: ratio of medians with a
//! bootstrap interval, Mann–Whitney p) — or, for one fleet run with
//! configurations (`compare RUN --by host`), each host's configurations
//! compared round by round ([`super::paired`]) — and a fleet-level verdict per case
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
use crate::stats::paired::{MAX_ROUNDS, block_medians, paired_log_ratio};
use crate::stats::verdict::{
    Power, RatioCi, Verdict, holm, holm_levels, t_interval_at, verdict_at_level,
};

/// Every host's comparison and, per case, the fleet's.
#[derive(Debug, Clone)]
pub struct FleetComparison {
    /// What BEFORE and AFTER named (labels, run ids or directories), or the
    /// baseline and candidate configurations.
    pub before: String,
    pub after: String,
    /// Each host present on both sides, with its own comparison (A = before).
    pub hosts: Vec<(String, Comparison)>,
    /// Hosts left out, and why ("no run after").
    pub unpaired: Vec<(String, String)>,
    /// One per case every paired host has, in the first host's order.
    pub cases: Vec<FleetCase>,
    pub options: Options,
}

/// One case across the fleet.
#[derive(Debug, Clone)]
pub struct FleetCase {
    /// "bench case" (with " \[config\]" when not the default).
    pub name: String,
    /// Geometric mean of the hosts' ratios (after ÷ before), with t intervals.
    pub ci: RatioCi,
    /// The confidence level of the interval the fleet verdict was judged on
    /// ([`FleetCase::judged`]).
    pub judged_level: f64,
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

impl FleetCase {
    /// The interval the fleet verdict was judged on: the 95 % one widened to
    /// [`FleetCase::judged_level`], which agrees with the Holm-adjusted p
    /// ([`holm_levels`]).
    pub fn judged(&self) -> (f64, f64) {
        t_interval_at(
            &self.ci,
            self.judged_level,
            (self.power.n.max(1) - 1) as f64,
        )
    }
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
            None => unpaired.push((host, "no run after".into())),
        }
    }
    unpaired.extend(after.into_iter().map(|(h, _)| (h, "no run before".into())));
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

/// Compares the configurations of one fleet run within each host: one
/// comparison per candidate configuration (each against the first, the
/// baseline), every host's rounds paired as `run` pairs them, and the fleet's
/// verdict with the hosts as replicates. `runs` holds (host, document); a
/// host whose run cannot be compared (other configurations, fewer than two
/// complete rounds) is left out and says why.
pub fn configs_by_host(
    runs: &[(String, Document)],
    options: Options,
) -> Result<Vec<FleetComparison>> {
    let names =
        |d: &Document| -> Vec<String> { d.run.configs.iter().map(|c| c.name.clone()).collect() };
    let Some(configs) = runs.iter().map(|(_, d)| names(d)).find(|n| n.len() >= 2) else {
        return Err(Error::Measure(
            "no host's run has two or more configurations; compare --by host with one run \
             compares its configurations (fleet run --config/--experiment), with two runs \
             each host's BEFORE and AFTER"
                .into(),
        ));
    };
    let mut paired = Vec::new();
    let mut left_out = Vec::new();
    for (host, doc) in runs {
        let compared = if names(doc) == configs {
            super::paired(doc, options).map_err(|e| e.to_string())
        } else {
            Err(format!("other configurations ({})", names(doc).join(", ")))
        };
        match compared {
            Ok(c) => paired.push((host.clone(), c)),
            Err(why) => left_out.push((host.clone(), why)),
        }
    }
    if paired.is_empty() {
        return Err(Error::Measure(format!(
            "no host's configurations can be compared: {}",
            left_out
                .iter()
                .map(|(h, why)| format!("host '{h}': {why}"))
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let comparisons = (1..configs.len())
        .map(|k| {
            let hosts: Vec<(String, Comparison)> = paired
                .iter()
                .map(|(h, c)| (h.clone(), candidate(c, k)))
                .collect();
            FleetComparison {
                before: configs[0].clone(),
                after: configs[k].clone(),
                cases: fleet_cases(&hosts, options),
                hosts,
                unpaired: left_out.clone(),
                options,
            }
        })
        .collect();
    Ok(comparisons)
}

/// A paired comparison of several configurations cut down to the baseline
/// and candidate `k` (p-values stay adjusted over all of them).
fn candidate(c: &Comparison, k: usize) -> Comparison {
    let mut c = c.clone();
    c.labels = vec![c.labels[0].clone(), c.labels[k].clone()];
    for row in &mut c.rows {
        row.summaries = vec![row.summaries[0].clone(), row.summaries[k].clone()];
        row.changes = vec![row.changes[k - 1]];
        row.explanations = row.explanations.get(k - 1).cloned().into_iter().collect();
    }
    c
}

/// The fleet verdict of every case all hosts compared (none with one host).
fn fleet_cases(hosts: &[(String, Comparison)], options: Options) -> Vec<FleetCase> {
    if hosts.len() < 2 {
        return Vec::new();
    }
    let name = |r: &super::CaseRow| r.key.to_string();
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
            judged_level: 0.95,
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
    let raw: Vec<f64> = cases.iter().map(|c| c.p_adjusted).collect();
    let levels = holm_levels(&raw, options.alpha);
    for (((case, p), raw), level) in cases.iter_mut().zip(holm(&raw)).zip(&raw).zip(levels) {
        // Judged at its own Holm level, as a comparison's changes are.
        case.p_adjusted = p;
        case.judged_level = level;
        let df = (case.power.n.max(1) - 1) as f64;
        let margin = options.equivalence;
        case.verdict = verdict_at_level(&case.ci, df, *raw, level, margin, &mut case.power);
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
    /// Whether any case, over the fleet, trips a gate at `pct` % ([`Verdict::trips_gate`]).
    pub fn gate_tripped(&self, pct: f64) -> bool {
        self.cases
            .iter()
            .any(|c| c.verdict.trips_gate(c.ci.ratio, pct))
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
        assert_eq!(
            f.unpaired,
            [
                ("y".into(), "no run after".into()),
                ("z".into(), "no run before".into())
            ]
        );
        let none = compare_by_host(
            ("b", "a"),
            vec![("x".into(), doc(1.0))],
            vec![("y".into(), doc(1.0))],
            Options::default(),
        );
        assert!(none.unwrap_err().to_string().contains("no host"));
    }

    /// A run of one case under configurations `off` and `on`, three rounds
    /// each, `on` costing `factor` times as much.
    fn configured(factor: f64) -> Document {
        let mut d = doc(100.0);
        d.run.configs = ["off", "on"]
            .map(|name| crate::document::Config {
                name: name.into(),
                ..Default::default()
            })
            .to_vec();
        let mut off = d.series[0].clone();
        (off.key.config, off.slot, off.rounds) = ("off".into(), Some(0), vec![100.0, 101.0, 99.0]);
        let mut on = off.clone();
        on.key.config = "on".into();
        on.rounds = off.rounds.iter().map(|r| r * factor).collect();
        d.series = vec![off, on];
        d
    }

    #[test]
    fn one_fleet_run_compares_its_configurations_within_each_host() {
        let mut other = configured(1.0);
        other.run.configs.truncate(1);
        let runs = vec![
            ("x".to_string(), configured(1.1)),
            ("y".to_string(), configured(1.2)),
            ("z".to_string(), other),
        ];
        let fleets = configs_by_host(&runs, Options::default()).unwrap();
        let [f] = &fleets[..] else {
            panic!("one candidate configuration: {fleets:?}")
        };
        assert_eq!((f.before.as_str(), f.after.as_str()), ("off", "on"));
        let ratios: Vec<f64> = f
            .hosts
            .iter()
            .map(|(_, c)| c.rows[0].changes[0].ci.ratio)
            .collect();
        assert!((ratios[0] - 1.1).abs() < 1e-9 && (ratios[1] - 1.2).abs() < 1e-9);
        assert_eq!(
            f.unpaired,
            [("z".into(), "other configurations (off)".into())]
        );
        let case = &f.cases[0];
        assert_eq!(case.hosts, 2);
        assert!(
            (case.ci.ratio - (1.1f64 * 1.2).sqrt()).abs() < 1e-9,
            "{case:?}"
        );
        // Two runs of one configuration each have nothing to compare.
        let mut plain = vec![("x".to_string(), doc(1.0))];
        plain[0].1.run.configs.clear();
        let e = configs_by_host(&plain, Options::default()).unwrap_err();
        assert!(e.to_string().contains("two or more configurations"), "{e}");
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

    #[test]
    fn the_fleet_gate_fails_on_a_slower_fleet_and_is_undecided_with_too_few_hosts() {
        use crate::compare::gate::{Gate, GateDecision};
        let gate = Gate {
            pct: Some(2.0),
            ..Gate::default()
        };
        let before = [100.0, 110.0, 95.0, 120.0, 101.0, 99.0, 130.0, 90.0];
        let after: Vec<f64> = before.iter().map(|b| b * 1.03).collect();
        let slower = fleet(&before, &after);
        assert_eq!(
            gate.decide_fleet(&[slower]),
            GateDecision::Fail { pct: 2.0 }
        );
        // Two hosts: the fleet's verdict is too-few; undecided, status 3.
        let two = fleet(&[100.0, 200.0], &[150.0, 300.0]);
        let d = gate.decide_fleet(&[two]);
        assert_eq!(d.exit_status(), 3, "{d:?}");
        let GateDecision::Undecided(u) = d else {
            unreachable!()
        };
        assert!(
            u.words().contains("too few hosts for the test"),
            "{}",
            u.words()
        );
        // One host: no fleet verdict at all; its cases are named.
        let one = fleet(&[100.0], &[150.0]);
        let GateDecision::Undecided(u) = gate.decide_fleet(&[one]) else {
            panic!("one host is undecided")
        };
        assert_eq!(u.cases.len(), 1);
        assert!(u.cases[0].why.starts_with("one host"), "{u:?}");
    }
}
