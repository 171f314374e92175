//! Latency CDFs of the distribution families (wakeup, timer) from their
//! HDR buckets. The share of events is on a log-scaled tail axis, as
//! HdrHistogram's percentile plots are: each step up is one more nine (90 %,
//! 99 %, 99.9 %), so the tail (p99–p99.9) is as tall as the body.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::document::{Document, Series};
use crate::error::Result;

use super::draw::{DESC_PX, LABEL_PX, SANS, TITLE_PX, color, draw_svg, legend, mesh, tick};
use super::{Plot, file_safe, series_label};

/// The cumulative distribution of every `bench` series with a histogram: the
/// fraction of events at or below each bucket's value (on the tail axis,
/// `nines`), on a log time axis.
pub fn cdf_plot(doc: &Document, bench: &str) -> Result<Option<Plot>> {
    let series: Vec<&Series> = doc
        .series
        .iter()
        .filter(|s| s.key.bench == bench && s.histogram.is_some())
        .collect();
    let Some(first) = series.first() else {
        return Ok(None);
    };
    // Every curve in the first series' unit (a family has one unit).
    let per_unit = first.unit.ns();
    // The tail axis reaches the nines the largest recording can show (at least 99.9 %).
    let events = series.iter().map(|s| events_of(s)).max().unwrap_or(1);
    let top = (events as f64).log10().ceil().max(3.0);
    let curves: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| (series_label(s), cdf_points(s, per_unit, top)))
        .collect();
    let values = || curves.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let lo = values().fold(f64::INFINITY, f64::min);
    let hi = values().fold(0.0, f64::max);
    if !(lo.is_finite() && lo > 0.0 && hi >= lo) {
        return Ok(None);
    }
    let unit = first.unit.symbol().to_string();
    let title = format!("{bench} latency: cumulative distribution of events");
    let name = format!("latency-cdf-{}", file_safe(bench));
    let svg = draw_svg(&name, (820, 520), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (SANS, TITLE_PX))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d((lo / 1.25..hi * 1.25).log_scale(), 0.0..top)?;
        mesh(&mut chart.configure_mesh(), LABEL_PX, DESC_PX)
            .x_desc(format!("latency ({unit}, log scale)"))
            .y_desc("events at or below (%, log-scaled tail)")
            .y_labels(top as usize + 1)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| nines_label(*v))
            .draw()?;
        // The median and p99 levels, labelled at the right end.
        let level_font = (SANS, LABEL_PX - 1)
            .into_font()
            .color(&BLACK.mix(0.6))
            .pos(Pos::new(HPos::Right, VPos::Bottom));
        for (q, text) in [(50.0, "p50"), (99.0, "p99"), (99.9, "p99.9")] {
            let q = nines(q, events);
            chart.draw_series([PathElement::new(
                vec![(lo / 1.25, q), (hi * 1.25, q)],
                BLACK.mix(0.35).stroke_width(1),
            )])?;
            chart.draw_series([Text::new(text, (hi * 1.2, q), level_font.clone())])?;
        }
        for (i, (label, points)) in curves.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))?
                .label(label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2))
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, LABEL_PX)?;
        Ok(())
    })?;
    Ok(Some(Plot {
        name,
        title,
        note: "Every recorded event, from the HDR histogram: the share of events at or below each latency, \
               on a log-scaled tail axis (each step up one more nine: 90 %, 99 %, 99.9 %). Further left is \
               faster; the top is the tail. Grey lines: the median (p50), p99 and p99.9."
            .into(),
        svg,
    }))
}

/// A distribution's histogram as (value in units of `per_unit` ns, the
/// share of events at or below it on the tail axis, at most `top`).
fn cdf_points(s: &Series, per_unit: f64, top: f64) -> Vec<(f64, f64)> {
    let buckets = s.histogram.as_ref().map_or(&[][..], |h| &h.ns[..]);
    let total: u64 = buckets.iter().map(|b| b[1]).sum();
    let mut below = 0;
    buckets
        .iter()
        .map(|&[value, count]| {
            below += count;
            let percent = below as f64 / total.max(1) as f64 * 100.0;
            (value as f64 / per_unit, nines(percent, total).min(top))
        })
        .collect()
}

/// The events a distribution's histogram holds.
fn events_of(s: &Series) -> u64 {
    s.histogram
        .as_ref()
        .map_or(0, |h| h.ns.iter().map(|b| b[1]).sum())
}

/// `percent` of events on the tail axis: the nines of its share above, so
/// 90 % is 1, 99 % is 2, 99.9 % is 3 (HdrHistogram's percentile axis); 100 %
/// (the slowest of `events`) is at the nines that many events can show.
pub(super) fn nines(percent: f64, events: u64) -> f64 {
    let above = (1.0 - percent / 100.0).max(1.0 / events.max(1) as f64);
    -above.log10()
}

/// A tail-axis tick as the percentage it stands for: `90%`, `99.9%`.
fn nines_label(v: f64) -> String {
    let decimals = (v.round() as i64 - 2).clamp(0, 6) as usize;
    let percent = 100.0 * (1.0 - 10f64.powf(-v));
    format!("{percent:.decimals$}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_axis_gives_each_nine_one_step() {
        assert!((nines(90.0, 10_000) - 1.0).abs() < 1e-9);
        assert!((nines(99.0, 10_000) - 2.0).abs() < 1e-9);
        assert!((nines(99.9, 10_000) - 3.0).abs() < 1e-9);
        // p99 to p99.9 is as tall as p0 to p90: not squashed into a pixel.
        assert!((nines(99.9, 10_000) - nines(99.0, 10_000) - nines(90.0, 10_000)).abs() < 1e-9);
        assert!(
            (nines(100.0, 10_000) - 4.0).abs() < 1e-9,
            "the last event at 1 in 10^4"
        );
        assert_eq!(nines(0.0, 10), 0.0);
        let labels: Vec<String> = [0.0, 1.0, 2.0, 3.0, 4.0].map(nines_label).into();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%"]);
    }
}
