//! The samples of every sampled case in run order, so drift and warm-up
//! show. Left out: distribution series (thousands of single events; their
//! CDF shows them).

use plotters::prelude::*;

use crate::document::Document;
use crate::error::Result;

use super::draw::{DESC_PX, LABEL_PX, SANS, TITLE_PX, color, draw_svg, legend, mesh, padded, tick};
use super::{Plot, cases_of, file_safe, first_seen};

/// One small panel per case of `bench`: its samples in the order they were
/// taken, a line per configuration, so drift and warm-up effects show.
pub fn run_order_plot(doc: &Document, bench: &str) -> Result<Option<Plot>> {
    let cases = cases_of(doc, bench);
    if cases.is_empty() {
        return Ok(None);
    }
    let configs = first_seen(
        cases
            .iter()
            .flat_map(|(_, list)| list.iter().map(|s| &s.key.config)),
    );
    let columns = if cases.len() == 1 { 1 } else { 2 };
    let rows = cases.len().div_ceil(columns);
    let (width, panel_height, head) = (900u32, 264u32, 44u32);
    let title = format!("{bench}: samples in run order");
    let name = format!("samples-{}", file_safe(bench));
    let svg = draw_svg(&name, (width, head + panel_height * rows as u32), |root| {
        let body = root.titled(&title, (SANS, TITLE_PX))?;
        let panels = body.split_evenly((rows, columns));
        for ((case, list), panel) in cases.iter().zip(&panels) {
            let n = list.iter().map(|s| s.samples.len()).max().unwrap_or(1);
            let values = || list.iter().flat_map(|s| s.samples.iter().copied());
            let lo = values().fold(f64::INFINITY, f64::min);
            let hi = values().fold(f64::NEG_INFINITY, f64::max);
            let unit = list[0].unit.symbol().to_string();
            let mut chart = ChartBuilder::on(panel)
                .caption(case, (SANS, DESC_PX))
                .margin(10)
                .x_label_area_size(46)
                .y_label_area_size(66)
                .build_cartesian_2d(0.5..n as f64 + 0.5, padded(lo, hi, 0.1))?;
            mesh(&mut chart.configure_mesh(), LABEL_PX - 1, LABEL_PX)
                .x_desc("sample, in run order")
                .y_desc(if bench == "command" {
                    format!("wall time per run ({unit})")
                } else {
                    format!("{unit} per op")
                })
                .x_label_formatter(&|v| tick(*v))
                .y_label_formatter(&|v| tick(*v))
                .x_labels(8)
                .y_labels(6)
                .draw()?;
            for s in list {
                let i = configs.iter().position(|c| *c == s.key.config).unwrap_or(0);
                let c = color(i);
                let points = decimate(&s.samples);
                let line = chart
                    .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(1)))?;
                if configs.len() > 1 {
                    line.label(s.key.config.as_str()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                    });
                }
                if points.len() <= 200 {
                    chart.draw_series(points.iter().map(|&p| Circle::new(p, 2, c.filled())))?;
                }
            }
            if configs.len() > 1 {
                legend(&mut chart, SeriesLabelPosition::UpperRight, LABEL_PX - 1)?;
            }
        }
        Ok(())
    })?;
    Ok(Some(Plot {
        name,
        title,
        note: "Every accepted sample in the order it was taken, one line per configuration (over \
               2000 samples: each bucket's lowest and highest): a trend or a step is drift during \
               the run, a lone spike an interruption."
            .into(),
        svg,
    }))
}

/// Most samples a run-order line draws one by one; longer series are drawn
/// through each bucket's minimum and maximum.
pub(super) const MAX_LINE_POINTS: usize = 2000;

/// `samples` as (sample number from 1, value) points: all of them up to
/// [`MAX_LINE_POINTS`], else the smallest and largest of each of about
/// `MAX_LINE_POINTS / 2` buckets of consecutive samples, in the order they
/// were taken, so that spikes and steps stay visible in a picture of fixed
/// width at a cost linear in the samples.
pub(super) fn decimate(samples: &[f64]) -> Vec<(f64, f64)> {
    let numbered = samples
        .iter()
        .enumerate()
        .map(|(i, &v)| ((i + 1) as f64, v));
    if samples.len() <= MAX_LINE_POINTS {
        return numbered.collect();
    }
    let bucket = samples.len().div_ceil(MAX_LINE_POINTS / 2);
    let numbered: Vec<(f64, f64)> = numbered.collect();
    let mut points = Vec::with_capacity(MAX_LINE_POINTS + 2);
    for chunk in numbered.chunks(bucket) {
        let by_value = |a: &&(f64, f64), b: &&(f64, f64)| a.1.total_cmp(&b.1);
        let (lo, hi) = (
            chunk.iter().min_by(by_value).expect("a chunk is not empty"),
            chunk.iter().max_by(by_value).expect("a chunk is not empty"),
        );
        points.extend(if lo.0 <= hi.0 { [*lo, *hi] } else { [*hi, *lo] });
    }
    points
}
