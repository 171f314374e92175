//! The regression sweep (`osbench regressions`): one pass of the change-point
//! detection of [`super::history`] over every stored case × host ×
//! configuration, keeping the change points a nightly run should hear of —
//! those in a window of recent runs and at least as large as asked — each
//! with the runs and revisions on both sides. Medians are times per
//! operation for every series (bandwidth series too: their MB/s is derived
//! from the time), so a larger median is always a slowdown.
//!
//! Which change points are in the window: those whose new level starts in
//! it, and the latest change of a history whose current level reaches into
//! it — a level that began before the window is still news until someone
//! dismisses it in the store (`--ack`, `--expect`); the store remembers what
//! was dismissed, the caller skips those. Left out: reading the store,
//! recording the points and the environment diff (the CLI joins them) and
//! rendering ([`crate::report::regressions`]).

use serde::Serialize;

use super::history::CaseHistory;
use crate::document::{CaseKey, Direction};
use crate::env::SideChange;
use crate::stats::changepoint::{ChangePoint, Detection};
use crate::store::CaseRun;

/// Which runs are recent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Window {
    /// Runs started at or after this time (UTC, RFC 3339).
    Since(String),
    /// The last N runs of each history.
    Last(usize),
}

impl Window {
    /// Whether the run at `index` of `runs` is in the window.
    fn holds(&self, runs: &[CaseRun], index: usize) -> bool {
        match self {
            Window::Since(t) => runs[index].started.as_str() >= t.as_str(),
            Window::Last(n) => index + n >= runs.len(),
        }
    }
}

/// One side of a change point: the runs of a level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Level {
    /// Run ids, in history order.
    pub runs: Vec<i64>,
    /// Start times (UTC) of the first and last run.
    pub first_started: String,
    pub last_started: String,
    /// The revision (`--meta` of the revision key) of the first and last run.
    pub first_revision: Option<String>,
    pub last_revision: Option<String>,
    /// The level's median.
    pub median: f64,
}

impl Level {
    fn of(runs: &[CaseRun], median: f64, key: &str) -> Self {
        let revision = |r: Option<&CaseRun>| r.and_then(|r| r.meta.get(key).cloned());
        Self {
            runs: runs.iter().map(|r| r.run_id).collect(),
            first_started: runs.first().map_or_else(String::new, |r| r.started.clone()),
            last_started: runs.last().map_or_else(String::new, |r| r.started.clone()),
            first_revision: revision(runs.first()),
            last_revision: revision(runs.last()),
            median,
        }
    }

    /// "c01..c07" (one revision alone when first and last are the same).
    pub fn revisions(&self) -> Option<String> {
        match (&self.first_revision, &self.last_revision) {
            (Some(a), Some(b)) if a == b => Some(a.clone()),
            (Some(a), Some(b)) => Some(format!("{a}..{b}")),
            (Some(a), None) | (None, Some(a)) => Some(a.clone()),
            (None, None) => None,
        }
    }

    /// "3..9" (run ids of the first and last run).
    pub fn run_range(&self) -> String {
        match (self.runs.first(), self.runs.last()) {
            (Some(a), Some(b)) if a == b => a.to_string(),
            (Some(a), Some(b)) => format!("{a}..{b}"),
            _ => "-".into(),
        }
    }
}

/// A change point the sweep keeps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Regression {
    /// Its id in the store's `change_points` (0 until recorded).
    pub id: i64,
    /// Written as the fields `bench`, `case`, `config`.
    #[serde(flatten)]
    pub key: CaseKey,
    pub host: String,
    /// The medians' unit as documents name it.
    pub unit: String,
    pub before: Level,
    pub after: Level,
    /// `after / before − 1`.
    pub change: f64,
    pub p_value: f64,
    /// A larger time per operation after.
    pub slower: bool,
    /// Enough runs of the new level and a small enough p-value confirm it
    /// ([`crate::stats::changepoint::Options::confirm_runs`] and
    /// `confirm_alpha`); until then it is pending: shown, not alerted on.
    pub confirmed: bool,
    /// Environment keys whose values differ between the two levels.
    pub env: Vec<SideChange>,
}

/// How many runs either side of a change point's first run a change point
/// found earlier may be at and still be this one (the detection may place a
/// change a run or two apart as more runs arrive).
pub const SAME_CHANGE_RUNS: usize = 2;

impl Regression {
    /// Whether a change point recorded earlier in this history (same case,
    /// configuration and host) in the same direction, `earlier`, is this
    /// change found again with its first run up to [`SAME_CHANGE_RUNS`] runs apart.
    pub fn is_same_change(&self, earlier: &crate::store::FoundPoint) -> bool {
        let before = &self.before.runs[self.before.runs.len().saturating_sub(SAME_CHANGE_RUNS)..];
        let after = &self.after.runs[..self.after.runs.len().min(SAME_CHANGE_RUNS + 1)];
        earlier.key.bench == self.key.bench
            && earlier.key.case == self.key.case
            && earlier.key.config == self.key.config
            && earlier.host == self.host
            && earlier.direction == Direction::of(self.slower)
            && (before.contains(&earlier.run_id) || after.contains(&earlier.run_id))
    }
}

/// What the sweep keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOptions {
    pub window: Window,
    /// The smallest |change| kept, as a fraction (0.05: 5 %).
    pub min_change: f64,
    /// The `--meta` key that names the revision ("commit").
    pub revision_key: String,
}

/// The change points of `histories` (each already tested) that `options`
/// keep, in the histories' order.
pub fn sweep(histories: &[CaseHistory], options: &SweepOptions) -> Vec<Regression> {
    let mut out = Vec::new();
    for h in histories {
        let Some(Detection::Tested(changes)) = &h.detection else {
            continue;
        };
        let points = &changes.points;
        for (k, p) in points.iter().enumerate() {
            let start = if k == 0 { 0 } else { points[k - 1].index };
            let end = points.get(k + 1).map_or(h.runs.len(), |next| next.index);
            let latest = k + 1 == points.len();
            let in_window = options.window.holds(&h.runs, p.index)
                || (latest && options.window.holds(&h.runs, h.runs.len() - 1));
            // NaN (a level of 0 before) is never large enough.
            let large_enough = p.relative.abs() >= options.min_change;
            if !in_window || !large_enough {
                continue;
            }
            out.push(regression(h, p, start, end, &options.revision_key));
        }
    }
    out
}

fn regression(h: &CaseHistory, p: &ChangePoint, start: usize, end: usize, key: &str) -> Regression {
    Regression {
        id: 0,
        key: h.key.clone(),
        host: h.host.clone(),
        unit: h.runs[p.index].unit.clone(),
        before: Level::of(&h.runs[start..p.index], p.before, key),
        after: Level::of(&h.runs[p.index..end], p.after, key),
        change: p.relative,
        p_value: p.p_value,
        slower: p.relative > 0.0,
        confirmed: p.confirmed,
        env: Vec::new(),
    }
}

/// What one sweep found: what it alerts on, what waits for more runs, and
/// what drifts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sweep {
    /// Confirmed change points, not dismissed, with their store ids.
    pub confirmed: Vec<Regression>,
    /// Change points too few runs confirm yet (id 0: not recorded).
    pub pending: Vec<Regression>,
    pub drifts: Vec<DriftFinding>,
}

impl Sweep {
    /// Confirmed, then pending.
    pub fn changes(&self) -> impl Iterator<Item = &Regression> {
        self.confirmed.iter().chain(&self.pending)
    }
}

/// A stretch of a history whose level drifts rather than steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftFinding {
    /// Written as the fields `bench`, `case`, `config`.
    #[serde(flatten)]
    pub key: CaseKey,
    pub host: String,
    pub unit: String,
    /// The runs of the stretch.
    pub runs: Level,
    /// The change per run, relative to the stretch's first level (0.0005: +0.05 % a run).
    pub per_run: f64,
    /// The change over the whole stretch (`per_run` × its runs − 1).
    pub total: f64,
    /// The trend test's p-value.
    pub p_value: f64,
}

/// The drifting stretches of `histories` that reach into the window.
pub fn drifts(histories: &[CaseHistory], options: &SweepOptions) -> Vec<DriftFinding> {
    let mut out = Vec::new();
    for h in histories {
        let Some(Detection::Tested(changes)) = &h.detection else {
            continue;
        };
        for d in &changes.drifts {
            if !options.window.holds(&h.runs, d.end - 1) {
                continue;
            }
            let stretch = &h.runs[d.start..d.end];
            let medians: Vec<f64> = stretch.iter().map(|r| r.median).collect();
            out.push(DriftFinding {
                key: h.key.clone(),
                host: h.host.clone(),
                unit: stretch[0].unit.clone(),
                runs: Level::of(
                    stretch,
                    crate::stats::summary::median(&medians),
                    &options.revision_key,
                ),
                per_run: d.per_run,
                total: d.total(),
                p_value: d.p_value,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::history::case_histories;
    use crate::compare::history::tests::{run, stepped};
    use crate::stats::changepoint::Options;

    fn options(window: Window, min_change: f64) -> SweepOptions {
        SweepOptions {
            window,
            min_change,
            revision_key: "commit".into(),
        }
    }

    /// Two hosts of 20 nights: "vm" slows down 10 % from night 13, "big" is flat.
    fn fleet() -> Vec<CaseHistory> {
        let mut runs = stepped();
        runs.extend((1..=20).map(|day| {
            let wobble = [0.0, 0.3, -0.2][day as usize % 3];
            run(100 + day as i64, day, "big", "default", 150.0 + wobble)
        }));
        for r in &mut runs {
            let day = &r.started[8..10];
            r.meta.insert("commit".into(), format!("c{day}"));
        }
        runs.sort_by(|a, b| a.started.cmp(&b.started).then(a.run_id.cmp(&b.run_id)));
        case_histories("syscall", "null", runs, Some(&Options::default()))
    }

    #[test]
    fn the_latest_change_is_kept_with_its_runs_and_revisions() {
        let found = sweep(&fleet(), &options(Window::Last(2), 0.05));
        assert_eq!(found.len(), 1, "{found:?}");
        let r = &found[0];
        assert_eq!((r.host.as_str(), r.slower), ("vm", true));
        assert_eq!(r.before.run_range(), "1..12");
        assert_eq!(r.after.run_range(), "13..20");
        assert_eq!(r.before.revisions().as_deref(), Some("c01..c12"));
        assert_eq!(r.after.revisions().as_deref(), Some("c13..c20"));
        assert!((r.change - 0.10).abs() < 0.01, "{}", r.change);
        assert!(r.p_value <= 0.05);
        // Too small a change for --min-change 15 %.
        assert!(sweep(&fleet(), &options(Window::Last(2), 0.15)).is_empty());
        // A window that starts after the last run holds nothing.
        let later = Window::Since("2026-12-01T00:00:00Z".into());
        assert!(sweep(&fleet(), &options(later, 0.0)).is_empty());
        let since = Window::Since("2026-11-13T00:00:00Z".into());
        assert_eq!(sweep(&fleet(), &options(since, 0.0)).len(), 1);
    }

    #[test]
    fn an_older_change_counts_only_when_it_starts_in_the_window() {
        // 100 → 120 from night 9, down to 110 from night 17 (a partial fix).
        let runs: Vec<CaseRun> = (1..=24)
            .map(|day| {
                let wobble = [0.0, 0.4, -0.3, 0.2][day as usize % 4];
                let level = match day {
                    ..9 => 100.0,
                    9..17 => 120.0,
                    _ => 110.0,
                };
                run(day as i64, day, "vm", "default", level + wobble)
            })
            .collect();
        let h = case_histories("syscall", "null", runs, Some(&Options::default()));
        let all = sweep(&h, &options(Window::Last(24), 0.0));
        assert_eq!(all.len(), 2, "{all:?}");
        assert!(all[0].slower && !all[1].slower);
        // The last 3 runs: only the current level (the improvement) is news.
        let recent = sweep(&h, &options(Window::Last(3), 0.0));
        assert_eq!(recent.len(), 1);
        assert_eq!(recent[0].after.runs[0], 17);
        assert!(!recent[0].slower);
        assert_eq!(recent[0].before.revisions(), None);
    }

    #[test]
    fn a_change_found_again_a_run_apart_is_the_same_change() {
        let found = sweep(&fleet(), &options(Window::Last(2), 0.05));
        let r = &found[0];
        let earlier = |run_id: i64, direction: &str, host: &str| crate::store::FoundPoint {
            key: CaseKey::new("syscall", "null", "default"),
            host: host.into(),
            unit: "ns".into(),
            run_id,
            before_run_id: run_id - 1,
            before_median: 100.0,
            after_median: 110.0,
            relative: 0.1,
            p_value: 0.01,
            direction: Direction::parse(direction).unwrap(),
        };
        // The new level starts at run 13: runs 11..15 are the same change.
        for near in [11, 12, 14, 15] {
            assert!(r.is_same_change(&earlier(near, "slower", "vm")), "{near}");
        }
        assert!(!r.is_same_change(&earlier(10, "slower", "vm")));
        assert!(!r.is_same_change(&earlier(16, "slower", "vm")));
        assert!(!r.is_same_change(&earlier(14, "faster", "vm")));
        assert!(!r.is_same_change(&earlier(14, "slower", "big")));
    }
}
