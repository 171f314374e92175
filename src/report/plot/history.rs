//! A case's history over stored runs, with its change points (pending ones
//! dotted), the median of each segment between them, and the trend of each
//! drifting stretch.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::compare::history::CaseHistory;
use crate::document::DEFAULT_CONFIG;
use crate::error::Result;
use crate::stats::changepoint::{ChangePoint, Detection};
use crate::store::CaseRun;

use super::draw::{
    DESC_PX, LABEL_PX, PALETTE, SANS, TITLE_PX, color, draw_svg, mesh, padded, tick,
};
use super::{Plot, file_safe};

/// A case's history: each stored run's median with its 95 % interval, oldest
/// first; the change points as dashed lines labelled with the run and the size
/// of the change, and the median of each segment between them as a grey line.
pub fn history_plot(h: &CaseHistory) -> Result<Plot> {
    let title = history_title(h);
    let name = history_name(h);
    let runs = &h.runs;
    let n = runs.len();
    let (lo, hi) = history_range(runs);
    let (points, segments, drifts) = match &h.detection {
        Some(Detection::Tested(c)) => (&c.points[..], segment_levels(&c.points, n), drift_lines(h)),
        _ => (&[][..], Vec::new(), Vec::new()),
    };
    let y_desc = history_y_desc(h);
    let svg = draw_svg(&name, (900, 480), |root| {
        let y_range = padded(lo, hi, 0.12);
        let (bottom, top) = (y_range.start, y_range.end);
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (SANS, TITLE_PX - 2))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(0.5..n as f64 + 0.5, y_range)?;
        mesh(&mut chart.configure_mesh(), LABEL_PX, DESC_PX)
            .x_desc("stored run, oldest first (#)")
            .y_desc(y_desc.as_str())
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .x_labels(n.min(12))
            .draw()?;
        let grey = BLACK.mix(0.45);
        for &(from, to, level) in &segments {
            chart.draw_series([PathElement::new(
                vec![(from as f64 + 0.5, level), (to as f64 + 0.5, level)],
                grey.stroke_width(2),
            )])?;
        }
        for line in &drifts {
            let style = PALETTE[1].stroke_width(3);
            chart.draw_series(DashedLineSeries::new(line.clone(), 3, 3, style))?;
        }
        let c = color(0);
        chart.draw_series(runs.iter().enumerate().map(|(i, r)| {
            let (low, high) = history_interval(r);
            PathElement::new(
                vec![(i as f64 + 1.0, low), (i as f64 + 1.0, high)],
                c.stroke_width(1),
            )
        }))?;
        let radius = if n <= 100 { 4 } else { 2 };
        chart.draw_series(
            runs.iter()
                .enumerate()
                .map(|(i, r)| Circle::new((i as f64 + 1.0, r.median), radius, c.filled())),
        )?;
        let mark = PALETTE[2];
        let font = (SANS, LABEL_PX - 1)
            .into_font()
            .color(&mark)
            .pos(Pos::new(HPos::Left, VPos::Top));
        for p in points {
            let x = p.index as f64 + 0.5;
            // Pending: dotted, and said so.
            let (dash, gap) = if p.confirmed { (6, 4) } else { (2, 4) };
            chart.draw_series(DashedLineSeries::new(
                [(x, bottom), (x, top)],
                dash,
                gap,
                mark.stroke_width(2),
            ))?;
            chart.draw_series([Text::new(point_label(p, runs), (x, top), font.clone())])?;
        }
        Ok(())
    })?;
    let note = history_note(h);
    Ok(Plot {
        name,
        title,
        note,
        svg,
    })
}

/// " #13 (run 8): +10.0%", and " pending" while unconfirmed.
fn point_label(p: &ChangePoint, runs: &[CaseRun]) -> String {
    format!(
        " #{} (run {}): {:+.1}%{}",
        p.index + 1,
        runs[p.index].run_id,
        p.relative * 100.0,
        if p.confirmed { "" } else { " pending" }
    )
}

/// The title of `h`'s plot.
pub(super) fn history_title(h: &CaseHistory) -> String {
    format!(
        "History: {} (median, 95% CI)",
        crate::report::case_history::title(h)
    )
}

/// The file name of `h`'s plot: case, host and configuration.
pub(super) fn history_name(h: &CaseHistory) -> String {
    format!(
        "history-{}-{}-{}{}{}",
        file_safe(&h.key.bench),
        file_safe(&h.key.case),
        file_safe(&h.host),
        if h.key.config == DEFAULT_CONFIG {
            String::new()
        } else {
            format!("-{}", file_safe(&h.key.config))
        },
        // The experiment's digest: two experiments' `a` are two files.
        match h.experiment.as_deref().and_then(|e| e.rsplit_once('#')) {
            Some((_, digest)) => format!("-{}", file_safe(digest)),
            None => String::new(),
        }
    )
}

/// A run's 95 % interval, or its median alone where the document has none.
pub(super) fn history_interval(r: &CaseRun) -> (f64, f64) {
    r.ci.unwrap_or((r.median, r.median))
}

/// The lowest and highest of the runs' medians and interval ends.
pub(super) fn history_range(runs: &[CaseRun]) -> (f64, f64) {
    let lo = runs
        .iter()
        .map(|r| history_interval(r).0.min(r.median))
        .fold(f64::INFINITY, f64::min);
    let hi = runs
        .iter()
        .map(|r| history_interval(r).1.max(r.median))
        .fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// What the y axis of `h`'s plot shows.
pub(super) fn history_y_desc(h: &CaseHistory) -> String {
    if h.key.bench == crate::document::COMMAND_BENCH {
        format!(
            "wall time per run ({})",
            crate::report::case_history::unit(h)
        )
    } else {
        format!("median per op ({})", crate::report::case_history::unit(h))
    }
}

/// The note under `h`'s plot: what its marks are, and why there are no change points.
pub(super) fn history_note(h: &CaseHistory) -> String {
    match &h.detection {
        Some(Detection::Tested(c)) => format!(
            "Dots: each stored run's median, whiskers its 95% interval, oldest run first. Red dashed \
             lines: change points, labelled with the run where the new level starts and the change \
             of the segment medians (E-divisive means, permutation test, p ≤ {}); dotted and \
             labelled pending: fewer than {} runs of the new level yet; grey lines: the median of \
             each segment{}.",
            c.options.alpha,
            c.options.confirm_runs,
            if c.drifts.is_empty() {
                ""
            } else {
                "; thick dashed lines: a drifting stretch's trend (Theil–Sen), a drift rather \
                 than a step"
            }
        ),
        Some(Detection::TooFew { n, needed }) => format!(
            "Dots: each stored run's median, whiskers its 95% interval, oldest run first. \
             {n} runs are too few to look for change points (at least {needed} are needed)."
        ),
        None => {
            "Dots: each stored run's median, whiskers its 95% interval, oldest run first.".into()
        }
    }
}

/// Each drifting stretch's trend as a line from its first run to its last
/// (the detection's trend: of the medians, or for a history folded onto one
/// level, of the folded values, close to the medians' middle).
fn drift_lines(h: &CaseHistory) -> Vec<Vec<(f64, f64)>> {
    let Some(Detection::Tested(c)) = &h.detection else {
        return Vec::new();
    };
    c.drifts
        .iter()
        .map(|d| {
            vec![
                (d.start as f64 + 1.0, d.level),
                (d.end as f64, d.level * (1.0 + d.total())),
            ]
        })
        .collect()
}

/// The segments between change points (0-based first run, last run, and the
/// median of the segment, which each change point carries).
pub(super) fn segment_levels(points: &[ChangePoint], n: usize) -> Vec<(usize, usize, f64)> {
    let Some(first) = points.first() else {
        return Vec::new();
    };
    let mut segments = vec![(0, first.index, first.before)];
    for (i, p) in points.iter().enumerate() {
        let end = points.get(i + 1).map_or(n, |next| next.index);
        segments.push((p.index, end, p.after));
    }
    segments
}
