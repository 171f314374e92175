//! A case's history: its stored runs (one median each, in time order) cut
//! into series that can be compared over time — one per host and
//! configuration, since another machine or another configuration is not a
//! change in time — each with its change points
//! ([`crate::stats::changepoint`]). The store reads the runs; reporters
//! render the result. Left out: choosing which runs to read (the caller
//! filters by host and configuration through the store).

use crate::document::Unit;
use crate::stats::changepoint::{self, Detection, Options};
use crate::store::CaseRun;

/// One host's runs of one case in one configuration, and where their level changed.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseHistory {
    pub bench: String,
    pub case: String,
    pub config: String,
    pub host: String,
    /// The unit of the medians; `None` for a unit this osbench does not know.
    pub unit: Option<Unit>,
    /// Oldest first.
    pub runs: Vec<CaseRun>,
    /// On the runs' medians, in that order; `None` when not asked for.
    pub detection: Option<Detection>,
}

/// `runs` (of `bench` `case`, oldest first) as one history per host,
/// configuration and unit, in order of each one's first run, each tested
/// for change points with `options` when given.
pub fn case_histories(
    bench: &str,
    case: &str,
    runs: Vec<CaseRun>,
    options: Option<&Options>,
) -> Vec<CaseHistory> {
    let mut groups: Vec<Vec<CaseRun>> = Vec::new();
    let key = |r: &CaseRun| (r.hostname.clone(), r.config.clone(), r.unit.clone());
    for run in runs {
        match groups.iter_mut().find(|g| key(&g[0]) == key(&run)) {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    groups
        .into_iter()
        .map(|runs| {
            let medians: Vec<f64> = runs.iter().map(|r| r.median).collect();
            let first = &runs[0];
            CaseHistory {
                bench: bench.to_string(),
                case: case.to_string(),
                config: first.config.clone(),
                host: first.hostname.clone(),
                unit: unit(&first.unit),
                detection: options.map(|o| changepoint::detect(&medians, o)),
                runs,
            }
        })
        .collect()
}

/// The unit a document names `name`.
fn unit(name: &str) -> Option<Unit> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::stats::changepoint::Changes;

    /// A run of `host`'s `config` with `median` (interval ±1 %), started on day `day`.
    pub(crate) fn run(id: i64, day: u32, host: &str, config: &str, median: f64) -> CaseRun {
        CaseRun {
            run_id: id,
            started: format!("2026-11-{day:02}T02:00:00Z"),
            label: Some(format!("nightly-{day}")),
            hostname: host.into(),
            kernel: "6.18.44".into(),
            config: config.into(),
            unit: "ns".into(),
            n: 30,
            median,
            ci: Some((median * 0.99, median * 1.01)),
        }
    }

    /// 20 nightly runs on "vm": 100 ns, then 110 ns from the 13th on.
    pub(crate) fn stepped() -> Vec<CaseRun> {
        (1..=20)
            .map(|day| {
                let wobble = [0.0, 0.4, -0.3, 0.2, -0.1][day as usize % 5];
                let level = if day >= 13 { 110.0 } else { 100.0 };
                run(day as i64, day, "vm", "default", level + wobble)
            })
            .collect()
    }

    #[test]
    fn each_host_and_configuration_is_its_own_history() {
        let mut runs = stepped();
        // Another host, slower throughout but flat, interleaved in time.
        runs.extend((1..=20).map(|day| run(100 + day as i64, day, "big", "default", 150.0)));
        runs.push(run(200, 21, "vm", "patched", 90.0));
        runs.sort_by(|a, b| a.started.cmp(&b.started).then(a.run_id.cmp(&b.run_id)));
        let histories = case_histories("syscall", "null", runs, Some(&Options::default()));
        let names: Vec<(&str, &str, usize)> = histories
            .iter()
            .map(|h| (h.host.as_str(), h.config.as_str(), h.runs.len()))
            .collect();
        assert_eq!(
            names,
            [
                ("vm", "default", 20),
                ("big", "default", 20),
                ("vm", "patched", 1)
            ]
        );
        let Some(Detection::Tested(Changes { points, .. })) = &histories[0].detection else {
            panic!("{:?}", histories[0].detection);
        };
        assert_eq!(points.len(), 1);
        assert_eq!(histories[0].runs[points[0].index].run_id, 13);
        let Some(Detection::Tested(flat)) = &histories[1].detection else {
            panic!()
        };
        assert!(flat.points.is_empty());
        assert!(matches!(
            histories[2].detection,
            Some(Detection::TooFew { n: 1, .. })
        ));
        assert_eq!(histories[0].unit, Some(Unit::Ns));
        let listed = case_histories("syscall", "null", stepped(), None);
        assert_eq!((listed.len(), listed[0].detection.as_ref()), (1, None));
    }
}
