//! schbench's own layout for the `schbench` family's series: its "Wakeup
//! Latencies percentiles (usec)", "Request Latencies percentiles (usec)"
//! blocks (the p99 starred, as schbench stars it) and an RPS line, one
//! block per configuration and schbench command line. Each value is the
//! median over the runs; a statistic some series sampled carries that
//! series' interval, the others are the medians of the runs' counters
//! (every run records every statistic) without one. Left out: schbench's
//! min/max lines, its per-second RPS percentiles and its sched delay lines.

use std::fmt::Write;

use super::layout::Body;
use crate::document::number::fmt_sig;
use crate::document::{DEFAULT_CONFIG, Document, Series};

/// The percentile rows of a latency block: label, `stat=` suffix, counter suffix.
const ROWS: [(&str, &str, &str); 4] = [
    ("50.0th", "p50", "p50"),
    ("90.0th", "p90", "p90"),
    ("99.0th", "p99", "p99"),
    ("99.9th", "p99.9", "p999"),
];

/// The section: one block per configuration × schbench command line.
pub fn schbench(doc: &Document) -> Option<Body> {
    let mut groups: Vec<(&str, &str, Vec<&Series>)> = Vec::new();
    for s in doc.series.iter().filter(|s| s.key.bench == "schbench") {
        let key = (s.key.config.as_str(), s.anchor.as_str());
        match groups.iter_mut().find(|g| (g.0, g.1) == key) {
            Some(g) => g.2.push(s),
            None => groups.push((key.0, key.1, vec![s])),
        }
    }
    let mut out = String::new();
    for (config, anchor, series) in &groups {
        if !out.is_empty() {
            out.push('\n');
        }
        let runs = series.iter().map(|s| s.summary.n).max().unwrap_or(0);
        let on = if *config == DEFAULT_CONFIG {
            String::new()
        } else {
            format!(" [{config}]")
        };
        let _ = writeln!(
            out,
            "{anchor}{on}   (medians of {runs} runs each; [a – b]: 95% interval, where a case sampled it)"
        );
        for (kind, title) in [("wakeup", "Wakeup"), ("request", "Request")] {
            let _ = writeln!(out, "{title} Latencies percentiles (usec)");
            for (label, stat, counter) in ROWS {
                let star = if stat == "p99" { "* " } else { "  " };
                let cell = latency_cell(series, kind, stat, counter);
                let _ = writeln!(out, "\t{star}{label}: {cell}");
            }
        }
        let _ = writeln!(out, "average rps: {}", rps_cell(series));
        if let Some(rate) = counter_median(series, "rps_offered") {
            let _ = writeln!(out, "rps offered (-R): {}", fmt_sig(rate));
        }
    }
    (!out.is_empty()).then_some(Body::Text(out))
}

/// The series among `series` that sampled `stat`.
fn sampled<'a>(series: &[&'a Series], stat: &str) -> Option<&'a Series> {
    series
        .iter()
        .copied()
        .find(|s| s.params.get("stat").and_then(|v| v.as_str()) == Some(stat))
}

/// The median over the runs of counter `name`, from the first series with it.
fn counter_median(series: &[&Series], name: &str) -> Option<f64> {
    series
        .iter()
        .find_map(|s| s.counters.get(name))
        .map(|c| c.median)
}

/// A latency row's value (µs): the sampled series' median and interval, or
/// the counters' median.
fn latency_cell(series: &[&Series], kind: &str, stat: &str, counter: &str) -> String {
    if let Some(s) = sampled(series, &format!("{kind}-{stat}")) {
        let us = |v: f64| fmt_sig(v * s.unit.ns() / 1e3);
        let m = &s.summary;
        return format!(
            "{:<10} [{} – {}]",
            us(m.median),
            us(m.ci_low),
            us(m.ci_high)
        );
    }
    counter_median(series, &format!("{kind}_{counter}_us")).map_or("-".into(), fmt_sig)
}

/// The requests/s: from the series that sampled time per request (its
/// interval inverted), or the counters' median.
fn rps_cell(series: &[&Series]) -> String {
    if let Some(s) = sampled(series, "rps") {
        let per_s = |v: f64| {
            if v > 0.0 {
                1e9 / (v * s.unit.ns())
            } else {
                0.0
            }
        };
        let m = &s.summary;
        return format!(
            "{} [{} – {}]",
            fmt_sig(per_s(m.median)),
            fmt_sig(per_s(m.ci_high)),
            fmt_sig(per_s(m.ci_low))
        );
    }
    counter_median(series, "rps").map_or("-".into(), fmt_sig)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::document::Unit;
    use crate::stats::summarize;

    /// A schbench series sampling `stat` with these samples (µs) and counters.
    fn series(stat: &str, samples: &[f64], counters: &[(&str, f64)]) -> Series {
        let mut s = Series::new(
            "schbench",
            stat.to_string(),
            Unit::Us,
            samples.to_vec(),
            summarize(samples).unwrap(),
        );
        s.anchor = "schbench -m 1 -t 2 -r 1 -n 5 -F 256 -s 100".into();
        s.params = json!({ "stat": stat }).as_object().unwrap().clone();
        for (name, v) in counters {
            s.counters
                .insert(name.to_string(), summarize(&[*v, *v, *v]).unwrap());
        }
        s
    }

    #[test]
    fn the_layout_is_schbench_s_with_intervals_where_sampled() {
        let mut doc = crate::report::fixture();
        doc.series = vec![
            series(
                "request-p99",
                &[900.0, 1000.0, 1100.0],
                &[("request_p50_us", 300.0), ("wakeup_p99_us", 40.0)],
            ),
            series("rps", &[250.0, 250.0, 250.0], &[("rps", 4000.0)]),
        ];
        let Some(Body::Text(text)) = schbench(&doc) else {
            panic!("a text section");
        };
        assert!(text.starts_with("schbench -m 1 -t 2"), "{text}");
        assert!(
            text.contains("Wakeup Latencies percentiles (usec)"),
            "{text}"
        );
        assert!(text.contains("\t* 99.0th: 40.00\n"), "{text}");
        assert!(text.contains("\t  50.0th: 300.0\n"), "{text}");
        assert!(text.contains("\t  99.9th: -\n"), "{text}");
        let request_p99 = text
            .lines()
            .filter(|l| l.contains("99.0th"))
            .nth(1)
            .unwrap();
        assert!(
            request_p99.contains("1000") && request_p99.contains('['),
            "{text}"
        );
        // 250 µs per request is 4000 requests/s.
        assert!(text.contains("average rps: 4000 ["), "{text}");
        doc.series.clear();
        assert!(schbench(&doc).is_none());
    }
}
