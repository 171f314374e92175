//! A case's history: its stored runs (one median each, in time order) cut
//! into series that can be compared over time — one per host, experiment
//! and configuration, since another machine or another configuration (a
//! configuration `a` of another experiment among them) is not a change in
//! time — each with its change points
//! ([`crate::stats::changepoint`]). The store reads the runs; reporters
//! render the result. Left out: choosing which runs to read (the caller
//! filters by host and configuration through the store).

use crate::document::{CaseKey, Unit};
use crate::stats::changepoint::{self, Detection, Options, RunInfo};
use crate::store::CaseRun;

/// One host's runs of one case in one configuration, and where their level changed.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseHistory {
    pub key: CaseKey,
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
            let info: Vec<RunInfo> = runs.iter().map(run_info).collect();
            let first = &runs[0];
            CaseHistory {
                key: CaseKey::new(bench, case, first.config.clone()),
                experiment: shared.then(|| first.experiment.clone()),
                host: first.hostname.clone(),
                unit: unit(&first.unit),
                detection: options.map(|o| changepoint::detect(&medians, &info, o)),
                runs,
            }
        })
        .collect()
}

/// What a stored run tells of itself besides its median: its interval's
/// relative half-width, and whether its samples fell in two clusters.
fn run_info(r: &CaseRun) -> RunInfo {
    RunInfo {
        spread: r
            .ci
            .filter(|_| r.median > 0.0)
            .map(|(low, high)| (high - low) / 2.0 / r.median),
        two_clusters: r.bimodal,
    }
}

/// The order a history's runs are read in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum RunOrder {
    /// By start time (ties by run id).
    #[default]
    Started,
    /// By the order in which each value of this `--meta` key first appears
    /// (in start order): a revision axis, so that a run re-measuring an old
    /// commit sits with that commit; runs without the key are left out.
    Meta(String),
}

impl std::str::FromStr for RunOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            None if s == "start" => Ok(RunOrder::Started),
            Some(("meta", key)) if crate::document::meta::valid_key(key) => {
                Ok(RunOrder::Meta(key.to_string()))
            }
            _ => Err(format!(
                "'{s}' is not an order: 'start' (the runs' start times) or meta:KEY (the \
                 order each value of --meta KEY first appears in, e.g. meta:commit)"
            )),
        }
    }
}

/// `items` (in start order) in `order`; with [`RunOrder::Meta`], those
/// without the key are left out and counted. `meta` reads an item's value of
/// a key, `started` its start time.
pub fn order_runs<T>(
    mut items: Vec<T>,
    order: &RunOrder,
    meta: impl Fn(&T, &str) -> Option<String>,
    started: impl Fn(&T) -> String,
) -> (Vec<T>, usize) {
    let key = match order {
        RunOrder::Started => {
            items.sort_by_key(|i| started(i));
            return (items, 0);
        }
        RunOrder::Meta(key) => key,
    };
    items.sort_by_key(|i| started(i));
    let before = items.len();
    let mut tagged: Vec<(String, T)> = items
        .into_iter()
        .filter_map(|i| meta(&i, key).map(|v| (v, i)))
        .collect();
    let left_out = before - tagged.len();
    let mut first_seen: Vec<String> = Vec::new();
    for (value, _) in &tagged {
        if !first_seen.contains(value) {
            first_seen.push(value.clone());
        }
    }
    // A stable sort: runs of one value keep their start order.
    tagged.sort_by_key(|(value, _)| first_seen.iter().position(|v| v == value));
    (tagged.into_iter().map(|(_, i)| i).collect(), left_out)
}

/// `runs` with every one of the `--meta` pairs `wanted`.
pub fn with_meta(runs: Vec<CaseRun>, wanted: &[(String, String)]) -> Vec<CaseRun> {
    runs.into_iter()
        .filter(|r| wanted.iter().all(|(k, v)| r.meta.get(k) == Some(v)))
        .collect()
}

/// `runs` of one case in `order` (see [`order_runs`]), with a note when
/// runs were left out for want of the key.
pub fn ordered_case_runs(runs: Vec<CaseRun>, order: &RunOrder) -> (Vec<CaseRun>, Option<String>) {
    let (runs, left_out) = order_runs(
        runs,
        order,
        |r, k| r.meta.get(k).cloned(),
        |r| r.started.clone(),
    );
    let note = match order {
        RunOrder::Meta(key) if left_out > 0 => Some(format!(
            "{left_out} run{} without --meta {key} left out (ordered by meta:{key})",
            if left_out == 1 { "" } else { "s" }
        )),
        _ => None,
    };
    (runs, note)
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
            bimodal: false,
            meta: Default::default(),
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
            .map(|h| (h.host.as_str(), h.key.config.as_str(), h.runs.len()))
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

    #[test]
    fn runs_order_by_a_meta_keys_first_appearance() {
        let mut runs = stepped();
        for r in &mut runs {
            r.meta.insert("commit".into(), format!("c{:02}", r.run_id));
        }
        // Run 5 re-measures commit c02 later; run 7 has no commit.
        runs[4].meta.insert("commit".into(), "c02".into());
        runs[6].meta.clear();
        let order: RunOrder = "meta:commit".parse().unwrap();
        let (ordered, note) = ordered_case_runs(runs.clone(), &order);
        let ids: Vec<i64> = ordered.iter().take(5).map(|r| r.run_id).collect();
        assert_eq!(ids, [1, 2, 5, 3, 4]);
        assert_eq!(ordered.len(), 19);
        assert!(
            note.unwrap()
                .starts_with("1 run without --meta commit left out")
        );
        let (by_start, note) = ordered_case_runs(runs.clone(), &RunOrder::Started);
        assert_eq!((by_start.len(), note), (20, None));
        assert!("meta:".parse::<RunOrder>().is_err());
        assert!("commit".parse::<RunOrder>().is_err());
        assert_eq!("start".parse::<RunOrder>(), Ok(RunOrder::Started));
        let only = with_meta(runs, &[("commit".into(), "c02".into())]);
        assert_eq!(only.iter().map(|r| r.run_id).collect::<Vec<_>>(), [2, 5]);
    }
}
