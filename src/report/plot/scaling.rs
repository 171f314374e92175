//! The scaling plots of swept cases (`run --tasks`): total throughput
//! against tasks and scaling efficiency against tasks, one line per
//! configuration (case, mode, placement, configuration), the throughput plot
//! with will-it-scale's linear line of each. Left out: intervals (the
//! medians' are in the results table) and unswept series.

use plotters::prelude::*;

use crate::document::{DEFAULT_CONFIG, Document};
use crate::error::Result;
use crate::report::scaling::{LineKey, lines};
use crate::stats::scaling::{Rung, STOP_EFFICIENCY, Scaling};

use super::Plot;
use super::draw::{DESC_PX, LABEL_PX, SANS, TITLE_PX, color, draw_svg, legend, mesh, padded, tick};

/// The two plots, or none when nothing was swept.
pub fn scaling_plots(doc: &Document) -> Result<Vec<Plot>> {
    let lines = lines(doc);
    if lines.is_empty() {
        return Ok(Vec::new());
    }
    let places = lines.iter().any(|(k, _)| k.place != lines[0].0.place);
    let configs = lines
        .iter()
        .any(|(k, _)| k.config != lines[0].0.config || k.config != DEFAULT_CONFIG);
    let labels: Vec<String> = lines
        .iter()
        .map(|(k, _)| k.label(places, configs))
        .collect();
    let throughput = plot(
        &lines,
        &labels,
        (
            "scaling-throughput",
            "Throughput against tasks (all tasks, ops/s)",
        ),
        "total operations per second (millions)",
        |r| r.total / 1e6,
    )?;
    let efficiency = plot(
        &lines,
        &labels,
        ("scaling-efficiency", "Scaling efficiency against tasks"),
        "efficiency: total / (tasks × one-task total)",
        |r| r.efficiency,
    )?;
    Ok(vec![
        Plot {
            name: "scaling-throughput".into(),
            title: "Throughput against tasks (all tasks, ops/s)".into(),
            note: "Solid: the measured total of all tasks at each count (10^9 / the median \
                   per-task ns per op, × tasks); dashed: will-it-scale's linear line, tasks × \
                   the one-task throughput."
                .into(),
            svg: throughput,
        },
        Plot {
            name: "scaling-efficiency".into(),
            title: "Scaling efficiency against tasks".into(),
            note: format!(
                "Total throughput over tasks × the one-task throughput; 1 is perfect scaling. A \
                 line stops scaling at the first count below {:.0}% (dotted).",
                STOP_EFFICIENCY * 100.0
            ),
            svg: efficiency,
        },
    ])
}

/// One plot of `value` against tasks, a line per key (and, for totals, a
/// dashed linear line each; for efficiency, the stop threshold).
fn plot(
    lines: &[(LineKey, Scaling)],
    labels: &[String],
    (name, title): (&str, &str),
    y_desc: &str,
    value: fn(&Rung) -> f64,
) -> Result<String> {
    let totals = name == "scaling-throughput";
    let (x_max, y_max) = extent(lines, value, totals);
    draw_svg(name, (820, 520), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (SANS, TITLE_PX))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(84)
            .build_cartesian_2d(0.0..x_max * 1.04, padded(0.0, y_max, 0.08))?;
        mesh(&mut chart.configure_mesh(), LABEL_PX, DESC_PX)
            .x_desc("tasks")
            .y_desc(y_desc)
            // Task counts are whole: no tick between two.
            .x_label_formatter(&|v| {
                if (v - v.round()).abs() < 1e-6 {
                    tick(v.round())
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| tick(*v))
            .draw()?;
        for (i, (_, s)) in lines.iter().enumerate() {
            let c = color(i);
            let pts: Vec<(f64, f64)> = s.rungs.iter().map(|r| (r.tasks as f64, value(r))).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                .label(labels[i].as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2))
                });
            chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            if totals {
                let linear = s.rungs.iter().map(|r| (r.tasks as f64, r.linear / 1e6));
                chart.draw_series(DashedLineSeries::new(linear, 6, 4, c.stroke_width(1)))?;
            }
        }
        if !totals {
            let stop = [(0.0, STOP_EFFICIENCY), (x_max * 1.04, STOP_EFFICIENCY)];
            chart.draw_series(DashedLineSeries::new(
                stop,
                2,
                4,
                BLACK.mix(0.5).stroke_width(1),
            ))?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, LABEL_PX)?;
        Ok(())
    })
}

/// The largest task count, and the largest value drawn: with the linear
/// lines for totals, at least 1 for efficiencies.
fn extent(lines: &[(LineKey, Scaling)], value: fn(&Rung) -> f64, totals: bool) -> (f64, f64) {
    let all = || lines.iter().flat_map(|(_, s)| s.rungs.iter());
    let x_max = all().map(|r| r.tasks as f64).fold(1.0, f64::max);
    let y_max = all().map(value).fold(0.0, f64::max);
    let y_max = match totals {
        true => all().map(|r| r.linear / 1e6).fold(y_max, f64::max),
        false => y_max.max(1.0),
    };
    (x_max, y_max)
}
