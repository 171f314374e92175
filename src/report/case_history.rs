//! A case's history as tables and sentences: its runs in time order (median
//! and interval of each, the change marked on the run where a level starts),
//! its change points with their evidence, and what the detection concluded.
//! The terminal lays them out here ([`render`]); the HTML report lays out the
//! same tables and sentences. Left out: the detection itself
//! ([`crate::compare::history`]) and the plot ([`super::plot::history_plot`]).

use super::fit::wrap_prose;
use super::layout::Table;
use super::{decimals_for, fmt_fixed, fmt_pct, fmt_sig};
use crate::compare::history::CaseHistory;
use crate::stats::changepoint::{ChangePoint, Changes, Detection};
use crate::text::printable;

/// "syscall null on vm", with the configuration in brackets unless default
/// and, where it tells two histories apart, the experiment after the host
/// ("(experiment a,b #1f0c3a9e)").
pub fn title(h: &CaseHistory) -> String {
    format!(
        "{} {} on {}{}",
        h.key.bench,
        h.key.short(),
        h.host,
        h.experiment
            .as_ref()
            .map_or(String::new(), |e| format!(" (experiment {e})"))
    )
}

/// The medians' unit as people read it ("µs").
pub fn unit(h: &CaseHistory) -> String {
    match h.unit {
        Some(u) => u.symbol().to_string(),
        None => h.runs.first().map_or(String::new(), |r| r.unit.clone()),
    }
}

/// "20 runs, 2026-11-01T02:00:00Z to 2026-11-20T02:00:00Z, medians in ns".
pub fn span(h: &CaseHistory) -> String {
    let (Some(first), Some(last)) = (h.runs.first(), h.runs.last()) else {
        return "no runs".into();
    };
    let runs = if h.runs.len() == 1 { "run" } else { "runs" };
    format!(
        "{} {runs}, {} to {}, medians in {}",
        h.runs.len(),
        first.started,
        last.started,
        unit(h)
    )
}

/// How change points are found, in one line.
pub fn method(c: &Changes) -> String {
    format!(
        "E-divisive means (Matteson & James 2014); a split counts when its permutation \
         test ({} shuffles, seed {}) gives p ≤ {}, a straight line does not explain the \
         history as well, and {} runs of the new level confirm it",
        c.options.permutations, c.options.seed, c.options.alpha, c.options.confirm_runs
    )
}

/// What the detection concluded, in a sentence (`None` when it was not run).
pub fn conclusion(h: &CaseHistory) -> Option<String> {
    let changes = match h.detection.as_ref()? {
        Detection::TooFew { n, needed } => {
            return Some(format!(
                "Cannot tell yet: {n} run{}; with fewer than {needed} no split can be significant.",
                if *n == 1 { "" } else { "s" }
            ));
        }
        Detection::Tested(c) => c,
    };
    let pending = changes.points.iter().filter(|p| !p.confirmed).count();
    let found = match changes.points.len() {
        0 => "No change point".to_string(),
        1 => "1 change point".to_string(),
        n => format!("{n} change points"),
    } + &match pending {
        0 => String::new(),
        n => format!(
            " ({n} pending: not yet {} runs of the new level and p ≤ {})",
            changes.options.confirm_runs,
            changes.options.confirm_alpha.min(changes.options.alpha)
        ),
    };
    let rest = match changes.rejected {
        Some(r) => format!(
            "; the strongest split {}, before {}, has p = {}",
            if changes.points.is_empty() {
                "tested"
            } else {
                "left"
            },
            at(h, r.index),
            super::compare::fmt_p(r.p_value)
        ),
        None if changes.points.is_empty() => String::new(),
        None => "; no segment is long enough to split again".into(),
    };
    Some(format!("{found}{rest}."))
}

/// "#13 (run 13)": a run by its place in the history and its id.
fn at(h: &CaseHistory, index: usize) -> String {
    format!("#{} (run {})", index + 1, h.runs[index].run_id)
}

/// "confirmed", or why not yet: "pending: 2 of 4 runs", "pending: p > 0.005".
fn status(h: &CaseHistory, p: &ChangePoint) -> String {
    let Some(Detection::Tested(c)) = &h.detection else {
        return String::new();
    };
    let after = h.runs.len() - p.index;
    if p.confirmed {
        "confirmed".into()
    } else if after < c.options.confirm_runs {
        format!("pending: {after} of {} runs", c.options.confirm_runs)
    } else {
        format!(
            "pending: p > {}",
            c.options.confirm_alpha.min(c.options.alpha)
        )
    }
}

/// The change points found, if any.
fn points(h: &CaseHistory) -> &[ChangePoint] {
    match &h.detection {
        Some(Detection::Tested(c)) => &c.points,
        _ => &[],
    }
}

/// The runs in time order; "change" (when the runs were tested for change
/// points) holds the size of a level that starts there.
pub fn runs_table(h: &CaseHistory) -> Table {
    let points = points(h);
    let d = decimals(h);
    let rows = h
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                r.run_id.to_string(),
                r.started.clone(),
                printable(r.label.as_deref().unwrap_or("-")).into_owned(),
                printable(&r.kernel).into_owned(),
                r.n.to_string(),
                fmt_fixed(r.median, d),
                r.ci.map_or_else(
                    || "-".into(),
                    |(lo, hi)| format!("{}–{}", fmt_fixed(lo, d), fmt_fixed(hi, d)),
                ),
                points
                    .iter()
                    .find(|p| p.index == i)
                    .map_or_else(String::new, change_cell),
            ]
        })
        .collect();
    let mut table = Table {
        header: vec![
            "#",
            "run",
            "started (UTC)",
            "label",
            "kernel",
            "n",
            "median",
            "95% CI",
            "change",
        ],
        numeric: vec![true, true, false, false, false, true, true, true, true],
        rows,
        cases: Vec::new(),
    };
    if !matches!(h.detection, Some(Detection::Tested(_))) {
        table.header.pop();
        table.numeric.pop();
        for row in &mut table.rows {
            row.pop();
        }
    }
    // The conventional --meta keys any run has, after the label.
    for (at, key) in meta_keys(h).into_iter().enumerate() {
        table.header.insert(4 + at, key);
        table.numeric.insert(4 + at, false);
        for (row, run) in table.rows.iter_mut().zip(&h.runs) {
            row.insert(
                4 + at,
                run.meta.get(key).cloned().unwrap_or_else(|| "-".into()),
            );
        }
    }
    table
}

/// The conventional `--meta` keys (commit, branch, build) some run of `h` has.
fn meta_keys(h: &CaseHistory) -> Vec<&'static str> {
    crate::document::meta::CONVENTIONAL
        .into_iter()
        .filter(|k| h.runs.iter().any(|r| r.meta.contains_key(*k)))
        .collect()
}

/// The change points with the medians of the segments around each and the
/// evidence; `None` when there are none.
pub fn changes_table(h: &CaseHistory) -> Option<Table> {
    let points = points(h);
    if points.is_empty() {
        return None;
    }
    let rows = points
        .iter()
        .map(|p| {
            let d = decimals(h);
            let run = &h.runs[p.index];
            vec![
                format!("#{}", p.index + 1),
                run.run_id.to_string(),
                run.started.clone(),
                printable(run.label.as_deref().unwrap_or("-")).into_owned(),
                fmt_fixed(p.before, d),
                fmt_fixed(p.after, d),
                signed_pct(p.relative),
                super::compare::fmt_p(p.p_value),
                fmt_sig(p.statistic),
                status(h, p),
            ]
        })
        .collect();
    Some(Table {
        header: vec![
            "at",
            "run",
            "started (UTC)",
            "label",
            "before",
            "after",
            "change",
            "p",
            "Q̂",
            "status",
        ],
        numeric: vec![
            true, true, false, false, true, true, true, true, true, false,
        ],
        rows,
        cases: Vec::new(),
    })
}

/// Decimals that give the smallest median about four significant digits,
/// so a history's numbers line up.
fn decimals(h: &CaseHistory) -> usize {
    decimals_for(
        h.runs
            .iter()
            .map(|r| r.median.abs())
            .fold(f64::INFINITY, f64::min),
    )
}

/// "+8.1%" or "-3.0%".
pub(super) fn signed_pct(fraction: f64) -> String {
    let text = fmt_pct(fraction);
    if fraction > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

/// A drift's change per run: "+0.050%" (three decimals: drift is slow).
pub(super) fn per_run_pct(fraction: f64) -> String {
    let text = format!("{:.3}%", fraction * 100.0);
    if fraction > 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

/// A change point's size, and "pending" while too few runs confirm it.
fn change_cell(p: &ChangePoint) -> String {
    if p.confirmed {
        signed_pct(p.relative)
    } else {
        format!("{} pending", signed_pct(p.relative))
    }
}

/// The drifting stretches as sentences ("Drifting +0.050%/run over #31–#90 …").
pub fn drift_sentences(h: &CaseHistory) -> Vec<String> {
    let Some(Detection::Tested(c)) = &h.detection else {
        return Vec::new();
    };
    c.drifts
        .iter()
        .map(|d| {
            format!(
                "Drifting {}/run over {} to {} ({} in all; Mann–Kendall p = {}): a trend, not a \
                 step.",
                per_run_pct(d.per_run),
                at(h, d.start),
                at(h, d.end - 1),
                signed_pct(d.total()),
                super::compare::fmt_p(d.p_value)
            )
        })
        .collect()
}

/// Every history for the terminal: a heading line, the runs, then the
/// change points and the conclusion.
pub fn render(histories: &[CaseHistory]) -> String {
    render_within(histories, None)
}

/// [`render`] fitted to `width` columns: tables by [`super::fit`], the
/// sentences wrapped at words (`None`: one line per row and sentence).
pub fn render_within(histories: &[CaseHistory], width: Option<usize>) -> String {
    let prose = |text: String| wrap_prose(&text, width);
    let mut out = String::new();
    for (i, h) in histories.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&prose(format!("{}: {}\n\n", title(h), span(h))));
        out.push_str(&runs_table(h).to_text_within(width));
        let Some(conclusion) = conclusion(h) else {
            continue;
        };
        out.push('\n');
        if let Some(Detection::Tested(c)) = &h.detection {
            out.push_str(&prose(format!("Change points by {}:\n", method(c))));
        }
        if let Some(t) = changes_table(h) {
            out.push_str(&t.to_text_within(width));
        }
        out.push_str(&prose(format!("{conclusion}\n")));
        for drift in drift_sentences(h) {
            out.push_str(&prose(format!("{drift}\n")));
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

    #[test]
    fn a_step_is_marked_on_its_run_and_listed_with_its_evidence() {
        let h = case_histories("syscall", "null", stepped(), Some(&Options::default())).remove(0);
        let text = render(std::slice::from_ref(&h));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "syscall null on vm: 20 runs, 2026-11-01T02:00:00Z to 2026-11-20T02:00:00Z, medians in ns"
        );
        assert!(lines[2].starts_with(" #  run  started (UTC)"), "{text}");
        // Run 13 starts the new level: its row carries the change.
        assert_eq!(
            lines[15],
            "13   13  2026-11-13T02:00:00Z  nightly-13  6.18.44  30  110.20  109.10–111.30  +10.0%"
        );
        assert!(lines[14].ends_with("98.70–100.70"), "{text}");
        assert!(
            text.contains("E-divisive means (Matteson & James 2014)"),
            "{text}"
        );
        let change = lines.iter().find(|l| l.starts_with("#13")).unwrap();
        let cells: Vec<&str> = change.split_whitespace().collect();
        assert_eq!(
            &cells[..7],
            [
                "#13",
                "13",
                "2026-11-13T02:00:00Z",
                "nightly-13",
                "100.00",
                "110.00",
                "+10.0%"
            ]
        );
        assert!(cells[7].parse::<f64>().unwrap() <= 0.05, "{change}");
        assert!(
            lines
                .last()
                .unwrap()
                .starts_with("1 change point; the strongest split left, before #"),
            "{text}"
        );
    }

    #[test]
    fn too_few_runs_and_flat_histories_say_so() {
        let few: Vec<_> = (1..=3)
            .map(|d| run(d, d as u32, "vm", "base", 5.0))
            .collect();
        let h = case_histories("ctx", "2p/0K", few, Some(&Options::default()));
        let text = render(&h);
        assert!(text.starts_with("ctx 2p/0K [base] on vm: 3 runs"), "{text}");
        assert!(
            text.ends_with(
                "Cannot tell yet: 3 runs; with fewer than 8 no split can be significant.\n"
            ),
            "{text}"
        );
        assert!(!text.contains("Change points by"));
        let flat: Vec<_> = (1..=12)
            .map(|d| run(d, d as u32, "vm", "default", 100.0 + (d % 3) as f64 * 0.1))
            .collect();
        let text = render(&case_histories(
            "syscall",
            "null",
            flat,
            Some(&Options::default()),
        ));
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with("No change point; the strongest split tested, before #"),
            "{last}"
        );
        assert!(!text.contains("+"), "no change marked: {text}");
    }

    #[test]
    fn without_detection_the_runs_are_listed_alone() {
        let h = case_histories("syscall", "null", stepped(), None);
        let text = render(&h);
        assert_eq!(text.lines().count(), 2 + 1 + 20, "{text}");
        assert!(
            text.lines()
                .nth(2)
                .unwrap()
                .ends_with("median         95% CI"),
            "{text}"
        );
        assert!(!text.contains("change"), "{text}");
    }

    #[test]
    fn the_revision_is_a_column_when_runs_have_one() {
        let mut runs = stepped();
        for r in runs.iter_mut().skip(1) {
            r.meta.insert("commit".into(), format!("c{:02}", r.run_id));
        }
        let h = case_histories("syscall", "null", runs, Some(&Options::default()));
        let table = runs_table(&h[0]);
        assert_eq!(table.header[3..6], ["label", "commit", "kernel"]);
        assert_eq!(table.rows[0][4], "-");
        assert_eq!(table.rows[12][4], "c13");
        assert_eq!(table.rows[12].len(), table.header.len());
    }
}
