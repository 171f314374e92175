//! lmbench's context-switch picture: time against working-set size, one
//! line per process count, with the 95 % interval of each median. Left out:
//! ctx series without `procs`/`size` parameters, and those of a task sweep.

use plotters::prelude::*;

use crate::document::{Document, Series};
use crate::error::Result;
use crate::stats::Summary;

use super::draw::{DESC_PX, LABEL_PX, SANS, TITLE_PX, color, draw_svg, legend, mesh, padded, tick};
use super::{Plot, param_i64};

/// lmbench's picture: context-switch time against the working set each
/// process sums, one line per process count (and per mode, placement and
/// configuration where those vary), medians with their 95 % intervals.
pub fn ctx_plot(doc: &Document) -> Result<Option<Plot>> {
    let Some(first) = doc.series.iter().find(|s| ctx_point(s).is_some()) else {
        return Ok(None);
    };
    let lines = ctx_lines(doc);
    let labels = ctx_labels(&lines);
    let all = || lines.iter().flat_map(|(_, p)| p.iter());
    // At least 4 KiB wide, so a lone 0 KiB column gets whole-number ticks.
    let x_max = all().map(|p| p.0).fold(4.0, f64::max);
    let y_max = all()
        .map(|p| p.1.ci_high.max(p.1.median))
        .fold(0.0, f64::max);
    // Below zero only when an overhead subtraction left a value there.
    let y_min = all()
        .map(|p| p.1.ci_low.min(p.1.median))
        .fold(0.0, f64::min);
    let unit = first.unit.symbol().to_string();
    let title = "Context switch time vs working set (median, 95% CI)".to_string();
    let svg = draw_svg("ctx-size", (820, 520), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (SANS, TITLE_PX))
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(72)
            // Room left of 0 KiB so its point stands clear of the axis.
            .build_cartesian_2d(-x_max * 0.03..x_max * 1.04, padded(y_min, y_max, 0.08))?;
        mesh(&mut chart.configure_mesh(), LABEL_PX, DESC_PX)
            .x_desc("working set summed by each process (KiB)")
            .y_desc(format!("time per context switch ({unit})"))
            .x_label_formatter(&|v| if *v < 0.0 { String::new() } else { tick(*v) })
            .y_label_formatter(&|v| tick(*v))
            .draw()?;
        for (i, (_, points)) in lines.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|p| (p.0, p.1.median)),
                    c.stroke_width(2),
                ))?
                .label(labels[i].as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|p| {
                PathElement::new(
                    vec![(p.0, p.1.ci_low), (p.0, p.1.ci_high)],
                    c.stroke_width(1),
                )
            }))?;
            chart.draw_series(
                points
                    .iter()
                    .map(|p| Circle::new((p.0, p.1.median), 4, c.filled())),
            )?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft, LABEL_PX)?;
        Ok(())
    })?;
    Ok(Some(Plot {
        name: "ctx-size".into(),
        title,
        note:
            "Dots: the median time per switch of each ring size and working set (lmbench's lat_ctx \
               picture); whiskers: the 95% interval of that median."
                .into(),
        svg,
    }))
}

/// A ctx line: process count, mode, placement and configuration.
pub(super) type CtxKey = (i64, String, String, String);

/// A ctx series' process count and working set, if it has both.
pub(super) fn ctx_point(s: &Series) -> Option<(i64, i64)> {
    // A task sweep's ctx series are per-task figures of N rings at once.
    if s.key.bench != "ctx" || s.params.contains_key("tasks") {
        return None;
    }
    Some((param_i64(s, "procs")?, param_i64(s, "size")?))
}

/// The ctx lines, sorted, each with its points as (working set in KiB,
/// summary) sorted by working set.
pub(super) fn ctx_lines(doc: &Document) -> Vec<(CtxKey, Vec<(f64, &Summary)>)> {
    let mut lines: Vec<(CtxKey, Vec<(f64, &Summary)>)> = Vec::new();
    for s in &doc.series {
        let Some((procs, size)) = ctx_point(s) else {
            continue;
        };
        let k = (
            procs,
            crate::report::ctx_mode(s).to_string(),
            s.pin.to_string(),
            s.key.config.clone(),
        );
        let point = (size as f64, &s.summary);
        match lines.iter_mut().find(|(l, _)| *l == k) {
            Some((_, points)) => points.push(point),
            None => lines.push((k, vec![point])),
        }
    }
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, points) in &mut lines {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

/// Each line's legend: process count and mode, then placement and
/// configuration where those vary.
pub(super) fn ctx_labels<P>(lines: &[(CtxKey, P)]) -> Vec<String> {
    let varies = |f: fn(&CtxKey) -> &String| lines.iter().any(|(k, _)| f(k) != f(&lines[0].0));
    let (pins_vary, configs_vary) = (varies(|k| &k.2), varies(|k| &k.3));
    lines
        .iter()
        .map(|(k, _)| {
            let mut text = format!("{} {}", k.0, k.1);
            if pins_vary {
                text.push_str(&format!(", pin {}", k.2));
            }
            if configs_vary {
                text.push_str(&format!(" [{}]", k.3));
            }
            text
        })
        .collect()
}
