//! Plots of result documents, one file per plot, drawn as SVG (and PNG) by
//! the back end in `draw`.
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

mod cdf;
mod comparison;
mod ctx;
mod draw;
mod history;
mod run_order;
mod scaling;

pub use cdf::cdf_plot;
pub use comparison::{Bar, comparison_bars, comparison_plot, record_bars};
pub use ctx::ctx_plot;
pub use draw::png;
pub use history::history_plot;
pub use run_order::run_order_plot;
pub use scaling::scaling_plots;

use serde_json::Value;

use crate::document::{Document, Series, SeriesKind};
use crate::error::Result;

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
    plots.extend(scaling_plots(doc)?);
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
pub(super) fn benches<'a>(series: impl Iterator<Item = &'a Series>) -> Vec<String> {
    first_seen(series.map(|s| &s.key.bench))
}

/// `names` without repeats, in order of first appearance.
pub(super) fn first_seen<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

/// A series' name in a legend: its case, and its configuration when there are several.
pub(super) fn series_label(s: &Series) -> String {
    s.key.short().to_string()
}

pub(super) fn param_i64(s: &Series, key: &str) -> Option<i64> {
    s.params.get(key).and_then(Value::as_i64)
}

/// The sampled series of `bench` with samples, grouped by case in order of
/// first appearance.
pub(super) fn cases_of<'a>(doc: &'a Document, bench: &str) -> Vec<(String, Vec<&'a Series>)> {
    let mut cases: Vec<(String, Vec<&Series>)> = Vec::new();
    for s in doc.series.iter().filter(|s| {
        s.key.bench == bench && s.kind != SeriesKind::Distribution && !s.samples.is_empty()
    }) {
        match cases.iter_mut().find(|(case, _)| *case == s.key.case) {
            Some((_, list)) => list.push(s),
            None => cases.push((s.key.case.clone(), vec![s])),
        }
    }
    cases
}

/// `name` with every character but ASCII letters, digits, '-' and '_' replaced by '_'.
pub(super) fn file_safe(name: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;
    use draw::{padded, tick};
    use resvg::tiny_skia;
    use run_order::{MAX_LINE_POINTS, decimate};

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
                "events at or below (%, log-scaled tail)",
                "99.9%",
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
        doc.series[0].key.case = "<script>alert(1)</script>".into();
        doc.series[0].key.config = "a&b".into();
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
