//! A case's history: its stored runs (one median each, in time order) cut
//! into series that can be compared over time — one per host, experiment
//! and configuration, since another machine or another configuration (a
//! configuration `a` of another experiment among them) is not a change in
//! time — each with its change points
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
    /// The experiment of the configuration (`a,b #1f0c3a9e`), named only
    /// where another history of the same host and configuration belongs to
    /// another experiment: it tells them apart.
    pub experiment: Option<String>,
    pub host: String,
    /// The unit of the medians; `None` for a unit this osbench does not know.
    pub unit: Option<Unit>,
    /// Oldest first.
    pub runs: Vec<CaseRun>,
    /// On the runs' medians, in that order; `None` when not asked for.
    pub detection: Option<Detection>,
}

/// `runs` (of `bench` `case`, oldest first) as one history per host,
/// experiment, configuration and unit, in order of each one's first run, each tested
/// for change points with `options` when given.
pub fn case_histories(
    bench: &str,
    case: &str,
    runs: Vec<CaseRun>,
    options: Option<&Options>,
) -> Vec<CaseHistory> {
    let mut groups: Vec<Vec<CaseRun>> = Vec::new();
    let key = |r: &CaseRun| {
        (
            r.hostname.clone(),
            r.experiment.clone(),
            r.config.clone(),
            r.unit.clone(),
        )
    };
    for run in runs {
        match groups.iter_mut().find(|g| key(&g[0]) == key(&run)) {
            Some(group) => group.push(run),
            None => groups.push(vec![run]),
        }
    }
    // (host, configuration, unit) of each group: shared by two groups, the
    // experiment tells them apart.
    let place = |g: &Vec<CaseRun>| {
        (
            g[0].hostname.clone(),
            g[0].config.clone(),
            g[0].unit.clone(),
        )
    };
    let places: Vec<_> = groups.iter().map(place).collect();
    groups
        .into_iter()
        .map(|runs| {
            let shared = places.iter().filter(|p| **p == place(&runs)).count() > 1;
            let medians: Vec<f64> = runs.iter().map(|r| r.median).collect();
            let first = &runs[0];
            CaseHistory {
                bench: bench.to_string(),
                case: case.to_string(),
                config: first.config.clone(),
                experiment: shared.then(|| first.experiment.clone()),
                host: first.hostname.clone(),
                unit: unit(&first.unit),
                detection: options.map(|o| changepoint::detect(&medians, o)),
                runs,
            }
        })
        .collect()
}

/// `runs` without those whose median is not a finite time of at most 10⁶ s
/// (a store edited by hand or by another program), and a run's interval
/// dropped where it is not one: the kept runs, and one message per run
/// skipped or interval dropped. Plots and change points then never see a
/// value whose axis or arithmetic overflows.
pub fn plausible_runs(runs: Vec<CaseRun>) -> (Vec<CaseRun>, Vec<String>) {
    use crate::document::validate::plausible_time;
    let mut notes = Vec::new();
    let mut kept = Vec::with_capacity(runs.len());
    for mut r in runs {
        let u = unit(&r.unit);
        let which = format!("run {} ({} on {})", r.run_id, r.config, r.hostname);
        if let Err(e) = plausible_time("its median", r.median, u) {
            notes.push(format!("{which} left out: {e}"));
            continue;
        }
        if let Some((low, high)) = r.ci {
            let checked = plausible_time("its interval's low end", low, u)
                .and_then(|()| plausible_time("its interval's high end", high, u));
            if let Err(e) = checked {
                notes.push(format!("{which} drawn without its interval: {e}"));
                r.ci = None;
            }
        }
        kept.push(r);
    }
    (kept, notes)
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
            experiment: String::new(),
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
    fn runs_with_absurd_medians_are_left_out_and_absurd_intervals_dropped() {
        let mut runs = stepped();
        runs[2].median = f64::INFINITY;
        runs[4].median = f64::NAN;
        runs[6].median = -1e308;
        runs[8].ci = Some((-1e308, 1e308));
        runs[9].unit = "furlongs".into();
        runs[9].median = 2e15;
        let (kept, notes) = plausible_runs(runs);
        assert_eq!(kept.len(), 16, "{notes:?}");
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert!(notes[0].starts_with("run 3 (default on vm) left out: its median is not a finite"));
        assert!(
            notes[2].contains("its median is -1e308 ns, more than 1e6 s"),
            "{notes:?}"
        );
        assert!(notes[3].starts_with("run 9 (default on vm) drawn without its interval"));
        assert_eq!(kept.iter().find(|r| r.run_id == 9).unwrap().ci, None);
        assert!(kept.iter().all(|r| r.median.abs() < 1e15));
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
