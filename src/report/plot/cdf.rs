//! Latency CDFs of the distribution families (wakeup, timer) from their
//! HDR buckets.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::document::{Document, Series};
use crate::error::Result;

use super::draw::{DESC_PX, LABEL_PX, SANS, TITLE_PX, color, draw_svg, legend, mesh, tick};
use super::{Plot, file_safe, series_label};

/// The cumulative distribution of every `bench` series with a histogram: the
/// fraction of events at or below each bucket's value, on a log time axis.
pub fn cdf_plot(doc: &Document, bench: &str) -> Result<Option<Plot>> {
    let series: Vec<&Series> = doc
        .series
        .iter()
        .filter(|s| s.bench == bench && s.histogram.is_some())
        .collect();
    let Some(first) = series.first() else {
        return Ok(None);
    };
    // Every curve in the first series' unit (a family has one unit).
    let per_unit = first.unit.ns();
    let curves: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .map(|s| (series_label(s), cdf_points(s, per_unit)))
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
            .build_cartesian_2d((lo / 1.25..hi * 1.25).log_scale(), 0.0..100.0)?;
        mesh(&mut chart.configure_mesh(), LABEL_PX, DESC_PX)
            .x_desc(format!("latency ({unit}, log scale)"))
            .y_desc("events at or below (%)")
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .draw()?;
        // The median and p99 levels, labelled at the right end.
        let level_font = (SANS, LABEL_PX - 1)
            .into_font()
            .color(&BLACK.mix(0.6))
            .pos(Pos::new(HPos::Right, VPos::Bottom));
        for (q, text) in [(50.0, "p50"), (99.0, "p99")] {
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
        legend(&mut chart, SeriesLabelPosition::LowerRight, LABEL_PX)?;
        Ok(())
    })?;
    Ok(Some(Plot {
        name,
        title,
        note: "Every recorded event, from the HDR histogram: the share of events at or below each latency. \
               Further left is faster; the top right is the tail. Grey lines: the median (p50) and p99."
            .into(),
        svg,
    }))
}

/// A distribution's histogram as (value in units of `per_unit` ns, % of
/// events at or below it).
pub(super) fn cdf_points(s: &Series, per_unit: f64) -> Vec<(f64, f64)> {
    let buckets = s.histogram.as_ref().map_or(&[][..], |h| &h.ns[..]);
    let total: u64 = buckets.iter().map(|b| b[1]).sum();
    let mut below = 0;
    buckets
        .iter()
        .map(|&[value, count]| {
            below += count;
            (
                value as f64 / per_unit,
                below as f64 / total.max(1) as f64 * 100.0,
            )
        })
        .collect()
}
