//! OpenMetrics text (openmetrics.io, the Prometheus exposition format with
//! `# EOF`) of a run's series and of a comparison's verdicts, for
//! node_exporter's textfile collector, Prometheus and GitLab's metrics
//! reports. One gauge per series: `osbench_median_seconds` (time per
//! operation) with `osbench_median_ci_low_seconds` and
//! `osbench_median_ci_high_seconds` (the median's 95 % interval; the unit
//! stays last in the name, as OpenMetrics asks of a family with a unit);
//! bandwidth series as `osbench_median_bytes_per_second` and its interval
//! instead. Labels `bench`, `case`, `config`, `host` (and `run`, the side's
//! name, in a comparison of saved runs). Each change as `osbench_ratio`
//! (candidate ÷ baseline) with its interval, and `osbench_verdict`: 1 slower
//! beyond the margin, −1 faster beyond it, 0 anything else, the verdict's
//! name in its `verdict` label. Left out: raw samples, counters, timestamps
//! (a textfile collector stamps what it reads).

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::compare::Comparison;
use crate::document::{Document, Series};
use crate::stats::verdict::Verdict;

/// One labelled value of a family.
struct Sample {
    labels: Vec<(&'static str, String)>,
    value: f64,
}

/// The families, by name, each with its type line's unit and help.
#[derive(Default)]
struct Families {
    order: Vec<(&'static str, &'static str, &'static str)>,
    samples: BTreeMap<&'static str, Vec<Sample>>,
}

impl Families {
    fn add(&mut self, family: (&'static str, &'static str, &'static str), sample: Sample) {
        if !self.samples.contains_key(family.0) {
            self.order.push(family);
        }
        self.samples.entry(family.0).or_default().push(sample);
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for &(name, unit, help) in &self.order {
            let _ = writeln!(out, "# TYPE {name} gauge");
            if !unit.is_empty() {
                let _ = writeln!(out, "# UNIT {name} {unit}");
            }
            let _ = writeln!(out, "# HELP {name} {help}");
            for s in &self.samples[name] {
                let labels: Vec<String> = s
                    .labels
                    .iter()
                    .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                    .collect();
                let _ = writeln!(out, "{name}{{{}}} {}", labels.join(","), number(s.value));
            }
        }
        out.push_str("# EOF\n");
        out
    }
}

const MEDIAN: [(&str, &str, &str); 3] = [
    (
        "osbench_median_seconds",
        "seconds",
        "Median time per operation.",
    ),
    (
        "osbench_median_ci_low_seconds",
        "seconds",
        "Lower end of the 95% interval of the median time per operation.",
    ),
    (
        "osbench_median_ci_high_seconds",
        "seconds",
        "Upper end of the 95% interval of the median time per operation.",
    ),
];

const BANDWIDTH: [(&str, &str, &str); 3] = [
    (
        "osbench_median_bytes_per_second",
        "bytes_per_second",
        "Bandwidth at the median time per operation.",
    ),
    (
        "osbench_median_ci_low_bytes_per_second",
        "bytes_per_second",
        "Lower end of the 95% interval of the bandwidth.",
    ),
    (
        "osbench_median_ci_high_bytes_per_second",
        "bytes_per_second",
        "Upper end of the 95% interval of the bandwidth.",
    ),
];

const RATIO: [(&str, &str, &str); 3] = [
    (
        "osbench_ratio",
        "",
        "Candidate time divided by baseline time (above 1: slower).",
    ),
    (
        "osbench_ratio_ci_low",
        "",
        "Lower end of the ratio's interval the verdict was judged on (95%, Holm-adjusted).",
    ),
    (
        "osbench_ratio_ci_high",
        "",
        "Upper end of the ratio's interval the verdict was judged on (95%, Holm-adjusted).",
    ),
];

const VERDICT: (&str, &str, &str) = (
    "osbench_verdict",
    "",
    "1 slower beyond the margin, -1 faster beyond it, 0 otherwise; the verdict label names it.",
);

/// A value summarized in a unit: its median and 95 % interval ends, per
/// operation, and the bytes one operation moves for bandwidth series.
struct Point<'a> {
    labels: Vec<(&'static str, String)>,
    summary: &'a crate::stats::Summary,
    unit: crate::document::Unit,
    bytes_per_op: Option<f64>,
}

impl Families {
    fn add_point(&mut self, p: Point) {
        let s = p.summary;
        let secs = |per_op: f64| per_op * p.unit.ns() / 1e9;
        let values = match p.bytes_per_op {
            // Bandwidth falls as time rises: the interval's ends swap.
            Some(bytes) => (
                BANDWIDTH,
                [s.median, s.ci_high, s.ci_low].map(|t| bytes / secs(t)),
            ),
            None => (MEDIAN, [s.median, s.ci_low, s.ci_high].map(secs)),
        };
        for (family, value) in values.0.into_iter().zip(values.1) {
            let labels = p.labels.clone();
            self.add(family, Sample { labels, value });
        }
    }

    /// Every change of `c`: its ratio, interval and verdict; `host(i)` is the
    /// host of side `i`.
    fn add_changes(&mut self, c: &Comparison, host: impl Fn(usize) -> String) {
        for row in &c.rows {
            for (i, ch) in row.changes.iter().enumerate() {
                let labels = vec![
                    ("bench", row.key.bench.clone()),
                    ("case", row.key.case.clone()),
                    ("config", row.key.config.clone()),
                    ("baseline", c.labels[0].clone()),
                    ("candidate", c.labels[i + 1].clone()),
                    ("host", host(i + 1)),
                ];
                let ends = [ch.ci.ratio, ch.judged().0, ch.judged().1];
                for (family, value) in RATIO.into_iter().zip(ends) {
                    let labels = labels.clone();
                    self.add(family, Sample { labels, value });
                }
                let mut labels = labels;
                labels.push(("verdict", ch.verdict.as_str().into()));
                let value = match ch.verdict {
                    Verdict::Slower => 1.0,
                    Verdict::Faster => -1.0,
                    _ => 0.0,
                };
                self.add(VERDICT, Sample { labels, value });
            }
        }
    }
}

fn series_labels(s: &Series, host: &str) -> Vec<(&'static str, String)> {
    vec![
        ("bench", s.key.bench.clone()),
        ("case", s.key.case.clone()),
        ("config", s.key.config.clone()),
        ("host", host.to_string()),
    ]
}

/// A run's (or `time`'s) series, and its comparison of configurations or
/// commands when it made one.
pub fn run(doc: &Document, comparison: Option<&Comparison>) -> String {
    let mut families = Families::default();
    for s in &doc.series {
        families.add_point(Point {
            labels: series_labels(s, doc.host()),
            summary: &s.summary,
            unit: s.unit,
            bytes_per_op: s.bytes_per_op,
        });
    }
    if let Some(c) = comparison {
        families.add_changes(c, |_| doc.host().to_string());
    }
    families.render()
}

/// A comparison of saved runs: every side's summary of every case (`run`
/// the side's name, made unique by its position when two sides share one),
/// then the changes. `hosts` holds each side's host.
pub fn comparison(c: &Comparison, hosts: &[String]) -> String {
    let mut families = Families::default();
    let runs = unique_names(&c.labels);
    for row in &c.rows {
        for (i, summary) in row.summaries.iter().enumerate() {
            let labels = vec![
                ("bench", row.key.bench.clone()),
                ("case", row.key.case.clone()),
                ("config", row.key.config.clone()),
                ("host", hosts[i].clone()),
                ("run", runs[i].clone()),
            ];
            families.add_point(Point {
                labels,
                summary,
                unit: row.unit,
                bytes_per_op: row.bytes_per_op,
            });
        }
    }
    let mut unique = c.clone();
    unique.labels = runs;
    families.add_changes(&unique, |i| hosts[i].clone());
    families.render()
}

/// `names`, a repeated one suffixed with its position (`a`, `a#2`).
fn unique_names(names: &[String]) -> Vec<String> {
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if names[..i].contains(n) {
                format!("{n}#{}", i + 1)
            } else {
                n.clone()
            }
        })
        .collect()
}

/// A label value with backslash, double quote and line feed escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A number as OpenMetrics writes it (`NaN`, `+Inf`, `-Inf` by name).
fn number(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_labels_are_written_as_the_format_asks() {
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(1.5e-7), "0.00000015");
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let names = ["a", "b", "a"].map(String::from);
        assert_eq!(unique_names(&names), ["a", "b", "a#3"]);
    }
}
