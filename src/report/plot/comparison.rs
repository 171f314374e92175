//! Comparison bars: each case's change against the baseline with its 95 %
//! whiskers, coloured by verdict.

use plotters::prelude::*;

use crate::compare::Comparison;
use crate::document::ComparisonRecord;
use crate::error::Result;
use crate::stats::verdict::Verdict;

use super::Plot;
use super::draw::{DESC_PX, LABEL_PX, PALETTE, SANS, TITLE_PX, draw_svg, mesh, padded, tick};

/// The colour of a verdict: faster green, slower red (beyond the margin or
/// within it), equivalent blue, inconclusive (and the old no-change) grey.
pub(super) fn verdict_color(verdict: Verdict) -> RGBColor {
    match verdict {
        Verdict::Faster | Verdict::FasterWithinMargin => PALETTE[4],
        Verdict::Slower | Verdict::SlowerWithinMargin => PALETTE[2],
        Verdict::Equivalent => PALETTE[0],
        Verdict::Inconclusive | Verdict::TooFew | Verdict::NoChange => PALETTE[9],
    }
}

/// One bar of a comparison plot: a candidate against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The case (and the candidate, where several are compared).
    pub label: String,
    /// Candidate ÷ baseline and the interval its verdict was judged on (95 %,
    /// Holm-adjusted: [`crate::compare::Change::judged`]).
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub verdict: Verdict,
}

/// The bars of a document's own comparisons (its configurations), and the
/// x-axis description.
pub fn record_bars(records: &[ComparisonRecord]) -> (Vec<Bar>, String) {
    let pair = |r: &ComparisonRecord| (r.baseline.clone(), r.candidate.clone());
    let pairs_vary = records.iter().any(|r| pair(r) != pair(&records[0]));
    let bars = records
        .iter()
        .map(|r| Bar {
            label: if pairs_vary {
                format!("{} {} ({} vs {})", r.bench, r.case, r.candidate, r.baseline)
            } else {
                format!("{} {}", r.bench, r.case)
            },
            ratio: r.ratio,
            ci_low: r.ci_low,
            ci_high: r.ci_high,
            verdict: r.verdict,
        })
        .collect();
    let x_desc = match records.first() {
        Some(r) if !pairs_vary => format!(
            "{} against {} (%; below 0: faster)",
            r.candidate, r.baseline
        ),
        _ => "change against the baseline (%; below 0: faster)".to_string(),
    };
    (bars, x_desc)
}

/// The bars of several documents compared (A the baseline, B, C, … the
/// candidates), and the x-axis description.
pub fn comparison_bars(c: &Comparison) -> (Vec<Bar>, String) {
    let several = c.labels.len() > 2;
    let mut bars = Vec::new();
    for row in &c.rows {
        let case = row.key.to_string();
        for (i, ch) in row.changes.iter().enumerate() {
            bars.push(Bar {
                label: if several {
                    format!("{case} ({})", crate::report::compare::letter(i + 1))
                } else {
                    case.clone()
                },
                ratio: ch.ci.ratio,
                ci_low: ch.judged().0,
                ci_high: ch.judged().1,
                verdict: ch.verdict,
            });
        }
    }
    let x_desc = if several {
        "change against A (%; below 0: faster)"
    } else {
        "B against A (%; below 0: faster)"
    };
    (bars, x_desc.to_string())
}

/// The x-axis description, or a shorter one without the sides' names when
/// it would not fit under the plot (`room` pixels; plotters centres it and
/// cuts what passes the picture's edge): at most 0.45 of the font's size a
/// character.
fn fitting_desc(desc: &str, room: u32) -> String {
    const SHORT: &str = "change against the baseline (%; below 0: faster)";
    let px = desc.chars().count() as u32 * super::draw::DESC_PX * 45 / 100;
    if px <= room {
        desc.to_string()
    } else {
        SHORT.to_string()
    }
}

/// One horizontal bar per comparison: the change of the candidate against
/// the baseline in %, its 95 % interval as a whisker, coloured by verdict.
pub fn comparison_plot(bars: &[Bar], title: &str, x_desc: &str) -> Result<Option<Plot>> {
    if bars.is_empty() {
        return Ok(None);
    }
    let labels: Vec<String> = bars
        .iter()
        .map(|b| format!("{}: {}", b.label, b.verdict.as_str()))
        .collect();
    let pct = |ratio: f64| (ratio - 1.0) * 100.0;
    let lo = bars.iter().map(|b| pct(b.ci_low)).fold(0.0, f64::min);
    let hi = bars.iter().map(|b| pct(b.ci_high)).fold(0.0, f64::max);
    let n = bars.len();
    // Room for the longest case name (about 7.5 px a character).
    let label_px = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u32 * 15 / 2 + 24;
    let label_px = label_px.clamp(80, 420);
    let row_of = |i: usize| (n - 1 - i) as f64; // first record on top
    let width = 820 + label_px / 2;
    let x_desc = fitting_desc(x_desc, width.saturating_sub(label_px + 28));
    let x_desc = x_desc.as_str();
    let svg = draw_svg("comparison", (width, 150 + 40 * n as u32), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (SANS, TITLE_PX - 2))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(label_px)
            .build_cartesian_2d(padded(lo, hi, 0.08), -0.5..n as f64 - 0.5)?;
        let name_at = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n {
                labels[n - 1 - i as usize].clone()
            } else {
                String::new()
            }
        };
        mesh(&mut chart.configure_mesh(), LABEL_PX, DESC_PX)
            .x_desc(x_desc)
            .y_labels(n)
            .y_label_formatter(&name_at)
            .x_label_formatter(&|v| format!("{}%", tick(*v)))
            .disable_y_mesh()
            .draw()?;
        chart.draw_series([PathElement::new(
            vec![(0.0, -0.5), (0.0, n as f64 - 0.5)],
            BLACK.stroke_width(1),
        )])?;
        for (i, r) in bars.iter().enumerate() {
            let (y, c) = (row_of(i), verdict_color(r.verdict));
            chart.draw_series([Rectangle::new(
                [(0.0, y - 0.3), (pct(r.ratio), y + 0.3)],
                c.mix(0.75).filled(),
            )])?;
            let whisker = BLACK.stroke_width(1);
            chart.draw_series([
                PathElement::new(vec![(pct(r.ci_low), y), (pct(r.ci_high), y)], whisker),
                PathElement::new(
                    vec![(pct(r.ci_low), y - 0.15), (pct(r.ci_low), y + 0.15)],
                    whisker,
                ),
                PathElement::new(
                    vec![(pct(r.ci_high), y - 0.15), (pct(r.ci_high), y + 0.15)],
                    whisker,
                ),
            ])?;
        }
        Ok(())
    })?;
    Ok(Some(Plot {
        name: "comparison".into(),
        title: title.to_string(),
        note:
            "Bars: the change of the candidate's median against the baseline's; whiskers: its 95% \
               interval; colour: the verdict (green faster, red slower, blue equivalent, grey no \
               significant change)."
                .into(),
        svg,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_too_wide_for_the_plot_loses_the_names_not_its_end() {
        let names = "with-the-patch-applied-now-on-the-test-kernel against \
                     without-the-patch-here-on-the-baseline-kernel (%; below 0: faster)";
        // The room under an 1820-pixel plot of one short case (where the long one was cut).
        assert_eq!(
            fitting_desc(names, 701),
            "change against the baseline (%; below 0: faster)"
        );
        let short = "poll against off (%; below 0: faster)";
        assert_eq!(fitting_desc(short, 701), short);
    }
}
