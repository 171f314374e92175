//! Plots of result documents: SVG drawn with plotters, and PNG rasterised
//! from that same SVG by resvg with the bundled DejaVu Sans
//! (`assets/DejaVuSans.ttf`, Bitstream Vera licence), so both formats show
//! one picture and nothing depends on fontconfig or system fonts.
//!
//! The plots: lmbench's context-switch picture (time against working-set
//! size, one line per process count, with the 95 % interval of each median);
//! latency CDFs of the distribution families (wakeup, timer) from their HDR
//! buckets; comparison bars (change against the baseline, 95 % whiskers); the
//! samples of every sampled case in run order (drift); a case's history over
//! stored runs with its change points. Pure: a document (or a history) in,
//! SVG text out; every number drawn was computed elsewhere. Left out:
//! distribution series in run order (thousands of single events; their CDF
//! shows them) and ctx series without `procs`/`size` parameters.

use std::sync::{Arc, OnceLock};

use plotters::chart::MeshStyle;
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use resvg::{tiny_skia, usvg};
use serde_json::Value;

use crate::compare::Comparison;
use crate::compare::history::CaseHistory;
use crate::document::{ComparisonRecord, DEFAULT_CONFIG, Document, Series, SeriesKind};
use crate::error::{Error, Result};
use crate::stats::Summary;
use crate::stats::changepoint::{ChangePoint, Detection};
use crate::store::CaseRun;

/// DejaVu Sans, the font PNGs are drawn with (licence: assets/DejaVuSans-LICENSE.txt).
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// PNG pixels per SVG pixel (sharp text on high-density screens and in print).
const PNG_SCALE: f32 = 2.0;

const SANS: &str = "sans-serif";
// Requested sizes; plotters' SVG backend writes about 0.8 of them.
const TITLE_PX: u32 = 24;
const LABEL_PX: u32 = 16;
const DESC_PX: u32 = 18;

/// Tableau 10: distinguishable, and readable in grey print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// One drawn plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// File stem: "ctx-size", "latency-cdf-wakeup", "comparison", "samples-ctx".
    pub name: String,
    /// What the plot shows (drawn as its title).
    pub title: String,
    /// How to read it, for a caption beside it.
    pub note: String,
    pub svg: String,
}

/// Every plot a document has data for, in a fixed order: the ctx curve, the
/// latency CDFs, the comparison of its configurations, the samples in run order.
pub fn document_plots(doc: &Document) -> Result<Vec<Plot>> {
    let mut plots = Vec::new();
    plots.extend(ctx_plot(doc)?);
    for bench in benches(doc.series.iter().filter(|s| s.histogram.is_some())) {
        plots.extend(cdf_plot(doc, &bench)?);
    }
    let (bars, x_desc) = record_bars(&doc.comparisons);
    plots.extend(comparison_plot(
        &bars,
        "Compared within the run: change against the baseline (95% CI)",
        &x_desc,
    )?);
    for bench in benches(
        doc.series
            .iter()
            .filter(|s| s.kind != SeriesKind::Distribution),
    ) {
        plots.extend(run_order_plot(doc, &bench)?);
    }
    Ok(plots)
}

/// The benchmark families of `series`, in order of first appearance.
fn benches<'a>(series: impl Iterator<Item = &'a Series>) -> Vec<String> {
    first_seen(series.map(|s| &s.bench))
}

/// `names` without repeats, in order of first appearance.
fn first_seen<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// A series' name in a legend: its case, and its configuration when there are several.
fn series_label(s: &Series) -> String {
    super::case_label(&s.case, &s.config)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = std::result::Result<(), Box<dyn std::error::Error>>;

/// Draws on a white SVG canvas of `size` pixels and returns the SVG text.
fn draw_svg(name: &str, size: (u32, u32), draw: impl FnOnce(&Area<'_>) -> Drawn) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .map_err(Box::from)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(Box::from));
        drawn.map_err(|e| Error::Plot {
            what: name.into(),
            message: e.to_string(),
        })?;
    }
    Ok(svg)
}

/// The mesh of every plot: faint major grid lines only, tick labels of
/// `label_px` and axis descriptions of `desc_px`.
fn mesh<'m, 'a, 'b, 'c, X: Ranged, Y: Ranged>(
    style: &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'c>>,
    label_px: u32,
    desc_px: u32,
) -> &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'c>> {
    style
        .label_style((SANS, label_px))
        .axis_desc_style((SANS, desc_px))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
}

/// The legend of the labelled series, at `position`, in `font_px` text.
fn legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
    font_px: u32,
) -> Drawn {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font((SANS, font_px))
        .draw()?;
    Ok(())
}

/// Extends `lo..hi` by `frac` of its width on both sides (or ±1 when empty),
/// never below zero when `lo` is not. A range that is not finite, or whose
/// padded width is not (±1e308), is `0..1`: plotters' tick search never ends
/// on an infinite width.
fn padded(lo: f64, hi: f64, frac: f64) -> std::ops::Range<f64> {
    let width = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    let low = lo - width * frac;
    let low = if lo >= 0.0 { low.max(0.0) } else { low };
    let high = hi + width * frac;
    if !(high - low).is_finite() {
        return 0.0..1.0;
    }
    low..high
}

/// Tick labels: about three significant digits, no trailing zeros.
fn tick(v: f64) -> String {
    let text = format!("{:.*}", super::decimals_for(v).saturating_sub(1), v);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    // A tick a rounding error below zero.
    if text == "-0" { "0" } else { text }.to_string()
}

fn param_i64(s: &Series, key: &str) -> Option<i64> {
    s.params.get(key).and_then(Value::as_i64)
}

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
type CtxKey = (i64, String, String, String);

/// A ctx series' process count and working set, if it has both.
fn ctx_point(s: &Series) -> Option<(i64, i64)> {
    if s.bench != "ctx" {
        return None;
    }
    Some((param_i64(s, "procs")?, param_i64(s, "size")?))
}

/// The ctx lines, sorted, each with its points as (working set in KiB,
/// summary) sorted by working set.
fn ctx_lines(doc: &Document) -> Vec<(CtxKey, Vec<(f64, &Summary)>)> {
    let mut lines: Vec<(CtxKey, Vec<(f64, &Summary)>)> = Vec::new();
    for s in &doc.series {
        let Some((procs, size)) = ctx_point(s) else {
            continue;
        };
        let k = (
            procs,
            super::ctx_mode(s).to_string(),
            s.pin.clone(),
            s.config.clone(),
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
fn ctx_labels<P>(lines: &[(CtxKey, P)]) -> Vec<String> {
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
fn cdf_points(s: &Series, per_unit: f64) -> Vec<(f64, f64)> {
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

/// The colour of a verdict: faster green, slower red (beyond the margin or
/// within it), equivalent blue, inconclusive (and the old no-change) grey.
fn verdict_color(verdict: &str) -> RGBColor {
    match verdict {
        "faster" | "faster-within-margin" => PALETTE[4],
        "slower" | "slower-within-margin" => PALETTE[2],
        "equivalent" => PALETTE[0],
        _ => PALETTE[9],
    }
}

/// One bar of a comparison plot: a candidate against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The case (and the candidate, where several are compared).
    pub label: String,
    /// Candidate ÷ baseline and its 95 % interval.
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// A [`crate::stats::compare::Verdict`] value ("no-change" in old documents).
    pub verdict: String,
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
            verdict: r.verdict.clone(),
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
        let case = if row.config == DEFAULT_CONFIG {
            format!("{} {}", row.bench, row.case)
        } else {
            format!("{} {} [{}]", row.bench, row.case, row.config)
        };
        for (i, ch) in row.changes.iter().enumerate() {
            bars.push(Bar {
                label: if several {
                    format!("{case} ({})", super::compare::letter(i + 1))
                } else {
                    case.clone()
                },
                ratio: ch.ci.ratio,
                ci_low: ch.ci.ci95.0,
                ci_high: ch.ci.ci95.1,
                verdict: ch.verdict.as_str().to_string(),
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

/// One horizontal bar per comparison: the change of the candidate against
/// the baseline in %, its 95 % interval as a whisker, coloured by verdict.
pub fn comparison_plot(bars: &[Bar], title: &str, x_desc: &str) -> Result<Option<Plot>> {
    if bars.is_empty() {
        return Ok(None);
    }
    let labels: Vec<String> = bars
        .iter()
        .map(|b| format!("{}: {}", b.label, b.verdict))
        .collect();
    let pct = |ratio: f64| (ratio - 1.0) * 100.0;
    let lo = bars.iter().map(|b| pct(b.ci_low)).fold(0.0, f64::min);
    let hi = bars.iter().map(|b| pct(b.ci_high)).fold(0.0, f64::max);
    let n = bars.len();
    // Room for the longest case name (about 7.5 px a character).
    let label_px = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u32 * 15 / 2 + 24;
    let label_px = label_px.clamp(80, 420);
    let row_of = |i: usize| (n - 1 - i) as f64; // first record on top
    let svg = draw_svg(
        "comparison",
        (820 + label_px / 2, 150 + 40 * n as u32),
        |root| {
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
                let (y, c) = (row_of(i), verdict_color(&r.verdict));
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
        },
    )?;
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
            .flat_map(|(_, list)| list.iter().map(|s| &s.config)),
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
                let i = configs.iter().position(|c| *c == s.config).unwrap_or(0);
                let c = color(i);
                let points = decimate(&s.samples);
                let line = chart
                    .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(1)))?;
                if configs.len() > 1 {
                    line.label(s.config.as_str()).legend(move |(x, y)| {
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
const MAX_LINE_POINTS: usize = 2000;

/// `samples` as (sample number from 1, value) points: all of them up to
/// [`MAX_LINE_POINTS`], else the smallest and largest of each of about
/// `MAX_LINE_POINTS / 2` buckets of consecutive samples, in the order they
/// were taken, so that spikes and steps stay visible in a picture of fixed
/// width at a cost linear in the samples.
fn decimate(samples: &[f64]) -> Vec<(f64, f64)> {
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

/// A case's history: each stored run's median with its 95 % interval, oldest
/// first; the change points as dashed lines labelled with the run and the size
/// of the change, and the median of each segment between them as a grey line.
pub fn history_plot(h: &CaseHistory) -> Result<Plot> {
    let title = history_title(h);
    let name = history_name(h);
    let runs = &h.runs;
    let n = runs.len();
    let (lo, hi) = history_range(runs);
    let (points, segments) = match &h.detection {
        Some(Detection::Tested(c)) => (&c.points[..], segment_levels(&c.points, n)),
        _ => (&[][..], Vec::new()),
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
            chart.draw_series(DashedLineSeries::new(
                [(x, bottom), (x, top)],
                6,
                4,
                mark.stroke_width(2),
            ))?;
            let text = format!(
                " #{} (run {}): {:+.1}%",
                p.index + 1,
                runs[p.index].run_id,
                p.relative * 100.0
            );
            chart.draw_series([Text::new(text, (x, top), font.clone())])?;
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

/// The title of `h`'s plot.
fn history_title(h: &CaseHistory) -> String {
    format!(
        "History: {} (median, 95% CI)",
        super::case_history::title(h)
    )
}

/// The file name of `h`'s plot: case, host and configuration.
fn history_name(h: &CaseHistory) -> String {
    format!(
        "history-{}-{}-{}{}",
        file_safe(&h.bench),
        file_safe(&h.case),
        file_safe(&h.host),
        if h.config == DEFAULT_CONFIG {
            String::new()
        } else {
            format!("-{}", file_safe(&h.config))
        }
    )
}

/// A run's 95 % interval, or its median alone where the document has none.
fn history_interval(r: &CaseRun) -> (f64, f64) {
    r.ci.unwrap_or((r.median, r.median))
}

/// The lowest and highest of the runs' medians and interval ends.
fn history_range(runs: &[CaseRun]) -> (f64, f64) {
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
fn history_y_desc(h: &CaseHistory) -> String {
    if h.bench == crate::document::COMMAND_BENCH {
        format!("wall time per run ({})", super::case_history::unit(h))
    } else {
        format!("median per op ({})", super::case_history::unit(h))
    }
}

/// The note under `h`'s plot: what its marks are, and why there are no change points.
fn history_note(h: &CaseHistory) -> String {
    match &h.detection {
        Some(Detection::Tested(c)) => format!(
            "Dots: each stored run's median, whiskers its 95% interval, oldest run first. Red dashed \
             lines: change points, labelled with the run where the new level starts and the change \
             of the segment medians (E-divisive means, permutation test, p ≤ {}); grey lines: the \
             median of each segment.",
            c.options.alpha
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

/// The segments between change points (0-based first run, last run, and the
/// median of the segment, which each change point carries).
fn segment_levels(points: &[ChangePoint], n: usize) -> Vec<(usize, usize, f64)> {
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

/// The sampled series of `bench` with samples, grouped by case in order of
/// first appearance.
fn cases_of<'a>(doc: &'a Document, bench: &str) -> Vec<(String, Vec<&'a Series>)> {
    let mut cases: Vec<(String, Vec<&Series>)> = Vec::new();
    for s in doc
        .series
        .iter()
        .filter(|s| s.bench == bench && s.kind != SeriesKind::Distribution && !s.samples.is_empty())
    {
        match cases.iter_mut().find(|(case, _)| *case == s.case) {
            Some((_, list)) => list.push(s),
            None => cases.push((s.case.clone(), vec![s])),
        }
    }
    cases
}

/// `name` with every character but ASCII letters, digits, '-' and '_' replaced by '_'.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The bundled font, loaded once.
fn font_db() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        Arc::new(db)
    })
    .clone()
}

/// The PNG image of `plot`'s SVG, at twice its pixel size, with the bundled font.
pub fn png(plot: &Plot) -> Result<Vec<u8>> {
    let fail = |message: String| Error::Plot {
        what: plot.name.clone(),
        message,
    };
    let options = usvg::Options {
        fontdb: font_db(),
        font_family: "DejaVu Sans".into(),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(&plot.svg, &options).map_err(|e| fail(e.to_string()))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(PNG_SCALE)
        .ok_or_else(|| fail("the image is empty".into()))?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| {
        fail(format!(
            "no {}×{} image can be allocated",
            size.width(),
            size.height()
        ))
    })?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(PNG_SCALE, PNG_SCALE),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| fail(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    fn plot_named<'a>(plots: &'a [Plot], name: &str) -> &'a Plot {
        plots
            .iter()
            .find(|p| p.name == name)
            .unwrap_or_else(|| panic!("no plot {name}"))
    }

    #[test]
    fn a_document_gets_every_plot_it_has_data_for() {
        let plots = document_plots(&fixture()).unwrap();
        let names: Vec<&str> = plots.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ctx-size",
                "latency-cdf-wakeup",
                "comparison",
                "samples-ctx",
                "samples-syscall"
            ]
        );
        for p in &plots {
            assert!(p.svg.starts_with("<svg"), "{}", p.name);
            assert!(p.svg.contains(&p.title), "{} has no caption", p.name);
        }
    }

    #[test]
    fn axes_are_labelled_with_units_and_lines_are_named() {
        let plots = document_plots(&fixture()).unwrap();
        let has = |name: &str, texts: &[&str]| {
            let svg = &plot_named(&plots, name).svg;
            for t in texts {
                assert!(svg.contains(t), "{name} lacks '{t}'");
            }
        };
        has(
            "ctx-size",
            &[
                "working set summed by each process (KiB)",
                "time per context switch (µs)",
                "2 processes",
                "8 processes",
            ],
        );
        has(
            "latency-cdf-wakeup",
            &[
                "latency (µs, log scale)",
                "events at or below (%)",
                "futex/threads",
                "pipe/threads",
                "p99",
            ],
        );
        has(
            "comparison",
            &[
                "b against a (%; below 0: faster)",
                "ctx 2p/0K: faster",
                "syscall null: no-change",
                "wakeup futex/threads: slower",
            ],
        );
        has(
            "samples-syscall",
            &[
                "sample, in run order",
                "ns per op",
                ">\na\n</text>",
                ">\nb\n</text>",
            ],
        );
        // The y-axis description is drawn rotated.
        let ctx = &plot_named(&plots, "ctx-size").svg;
        let line = ctx
            .lines()
            .position(|l| l.contains("time per context switch"))
            .unwrap();
        assert!(
            ctx.lines().nth(line - 1).unwrap().contains("rotate(270"),
            "{ctx}"
        );
    }

    #[test]
    fn text_from_the_document_is_escaped_in_the_svg() {
        let mut doc = fixture();
        doc.series[0].case = "<script>alert(1)</script>".into();
        doc.series[0].config = "a&b".into();
        doc.comparisons[0].case = "<img src=x>".into();
        for p in document_plots(&doc).unwrap() {
            assert!(
                !p.svg.contains("<script") && !p.svg.contains("<img"),
                "{}",
                p.svg
            );
        }
        let samples = document_plots(&doc).unwrap().remove(3);
        assert!(
            samples
                .svg
                .contains("&lt;script&gt;alert(1)&lt;/script&gt;")
        );
    }

    #[test]
    fn a_history_plot_marks_its_change_point_and_segments() {
        use crate::compare::history::case_histories;
        use crate::compare::history::tests::stepped;
        use crate::stats::changepoint::Options;
        let h = case_histories("syscall", "null", stepped(), Some(&Options::default())).remove(0);
        let p = history_plot(&h).unwrap();
        assert_eq!(p.name, "history-syscall-null-vm");
        for text in [
            "History: syscall null on vm (median, 95% CI)",
            "stored run, oldest first (#)",
            "median per op (ns)",
            "#13 (run 13): +10.0%",
        ] {
            assert!(p.svg.contains(text), "lacks '{text}'");
        }
        assert!(p.note.contains("p ≤ 0.05"), "{}", p.note);
        // 20 runs: 20 dots; the dashed change line is drawn as short pieces.
        assert_eq!(p.svg.matches("<circle").count(), 20);
        let dashes = |svg: &str| svg.matches("stroke=\"#E15759\"").count();
        assert!(dashes(&p.svg) > 5, "{}", p.svg);
        // Without detection: the same dots, no change line, no level lines.
        let plain = case_histories("syscall", "null", stepped(), None).remove(0);
        let p = history_plot(&plain).unwrap();
        assert_eq!(p.svg.matches("<circle").count(), 20);
        assert_eq!(dashes(&p.svg), 0);
        assert!(!p.svg.contains("(run 13)"));
        png(&p).unwrap();
    }

    #[test]
    fn an_axis_of_infinite_width_is_a_finite_one() {
        for (lo, hi) in [
            (-1e308, 1e308),
            (0.0, f64::MAX),
            (f64::NEG_INFINITY, 1.0),
            (f64::NAN, 1.0),
            (f64::INFINITY, f64::NEG_INFINITY),
        ] {
            let r = padded(lo, hi, 0.12);
            assert!(
                (r.end - r.start).is_finite() && r.end > r.start,
                "{lo}..{hi}: {r:?}"
            );
        }
        assert_eq!(padded(10.0, 20.0, 0.1), 9.0..21.0);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(-1e-17), "0");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(0.125), "0.125");
        assert_eq!(tick(1500.0), "1500");
        assert_eq!(tick(-0.3), "-0.3");
    }

    #[test]
    fn a_document_without_series_has_no_plots() {
        let mut doc = fixture();
        doc.series.clear();
        doc.comparisons.clear();
        assert!(document_plots(&doc).unwrap().is_empty());
    }

    /// The PNG is the SVG at twice the size, and its rotated y-axis label is
    /// drawn: dark pixels in the strip left of the tick labels, in a column
    /// much taller than wide.
    #[test]
    fn png_draws_the_rotated_axis_label() {
        let plots = document_plots(&fixture()).unwrap();
        let ctx = plot_named(&plots, "ctx-size");
        let png = png(ctx).unwrap();
        let image = tiny_skia::Pixmap::decode_png(&png).unwrap();
        assert_eq!((image.width(), image.height()), (1640, 1040));
        let dark: Vec<(u32, u32)> = (0..image.height())
            .flat_map(|y| (0..60).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = image.pixel(x, y).unwrap();
                u32::from(p.red()) + u32::from(p.green()) + u32::from(p.blue()) < 200
            })
            .collect();
        assert!(dark.len() > 500, "only {} dark pixels", dark.len());
        let span = |f: fn(&(u32, u32)) -> u32| {
            dark.iter().map(f).max().unwrap() - dark.iter().map(f).min().unwrap()
        };
        assert!(
            span(|p| p.1) > 5 * span(|p| p.0),
            "the label is not vertical"
        );
    }

    #[test]
    fn long_series_are_drawn_through_each_buckets_extremes() {
        let short: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(decimate(&short).len(), 10);
        let mut long = vec![1.0; 1_000_000];
        long[123_456] = 50.0; // one spike
        let points = decimate(&long);
        assert!(points.len() <= MAX_LINE_POINTS + 2, "{}", points.len());
        assert!(points.contains(&(123_457.0, 50.0)), "the spike is kept");
        assert!(points.windows(2).all(|w| w[0].0 <= w[1].0), "in run order");
    }
}
