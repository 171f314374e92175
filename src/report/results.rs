//! The per-case tables of a run: one row per sampled series (median, its
//! interval, mean ± stddev, CV, …), and the quantiles of every latency
//! distribution. Left out: the anchors' layouts ([`super::anchors`]) and the
//! counters ([`super::counters`]).

use super::layout::{Body, Table};
use super::{decimals_for, fmt_pct};
use crate::document::{Document, Series, SeriesKind};
use crate::stats::histogram::Quantiles;

/// The results table as a section body.
pub fn results(doc: &Document) -> Option<Body> {
    results_table(doc).map(Body::Table)
}

/// The latency distributions as a section body.
pub fn distributions(doc: &Document) -> Option<Body> {
    distribution_table(&doc.series).map(Body::Table)
}

/// One row per sampled series (latency distributions have their own table).
pub fn results_table(doc: &Document) -> Option<Table> {
    let sampled: Vec<&Series> = doc
        .series
        .iter()
        .filter(|s| s.kind != SeriesKind::Distribution)
        .collect();
    (!sampled.is_empty()).then(|| Table {
        header: vec![
            "bench",
            "case",
            "median",
            "95% CI of median",
            "mean ± stddev",
            "CV",
            "n",
            "unit",
            "noise",
            "op",
        ],
        numeric: vec![
            false, false, true, true, true, true, true, false, false, false,
        ],
        rows: sampled.iter().map(|s| row(s)).collect(),
        cases: cases(&sampled),
    })
}

/// Each series' case and configuration.
fn cases(series: &[&Series]) -> Vec<(String, String)> {
    series
        .iter()
        .map(|s| (s.key.case.clone(), s.key.config.clone()))
        .collect()
}

/// A bandwidth series (one with `bytes_per_op`) headlines MB/s: its median
/// and interval converted exactly (a shorter time is a higher bandwidth),
/// the mean ± stddev left as time per operation with its unit named.
fn row(s: &Series) -> Vec<String> {
    let m = &s.summary;
    let d = decimals_for(m.median);
    let time = s.unit.symbol();
    let (median, low, high, unit) = match (
        s.mb_per_s(m.median),
        s.mb_per_s(m.ci_high),
        s.mb_per_s(m.ci_low),
    ) {
        (Some(median), Some(low), Some(high)) => (median, low, high, "MB/s"),
        _ => (m.median, m.ci_low, m.ci_high, time),
    };
    let bandwidth = unit != time;
    let dm = decimals_for(median);
    let ci = if m.n < 2 {
        "one sample: no interval".to_string()
    } else if m.ci_coverage >= m.ci_level {
        format!(
            "{} – {}",
            super::fmt_fixed(low, dm),
            super::fmt_fixed(high, dm)
        )
    } else {
        format!(
            "{} – {} ({:.0}% only)",
            super::fmt_fixed(low, dm),
            super::fmt_fixed(high, dm),
            m.ci_coverage * 100.0
        )
    };
    let spread = if bandwidth {
        format!(
            "{} ± {} {time}/op",
            super::fmt_fixed(m.mean, d),
            super::fmt_fixed(m.stddev, d)
        )
    } else {
        format!(
            "{} ± {}",
            super::fmt_fixed(m.mean, d),
            super::fmt_fixed(m.stddev, d)
        )
    };
    vec![
        s.key.bench.clone(),
        s.key.short().to_string(),
        super::fmt_fixed(median, dm),
        ci,
        spread,
        fmt_pct(m.cv),
        m.n.to_string(),
        unit.to_string(),
        s.noise
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(","),
        s.op.clone(),
    ]
}

/// Quantiles of every distribution series, and the CPU time per event.
pub fn distribution_table(series: &[Series]) -> Option<Table> {
    // A distribution always has its quantiles; one without (hand-edited) has no row.
    let dists: Vec<(&Series, Quantiles)> = series
        .iter()
        .filter(|s| s.kind == SeriesKind::Distribution)
        .filter_map(|s| Some((s, s.quantiles?)))
        .collect();
    if dists.is_empty() {
        return None;
    }
    let header = vec![
        "latency",
        "case",
        "min",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "mean",
        "unit",
        "CPU/event",
        "events",
    ];
    let numeric = vec![
        false, false, true, true, true, true, true, true, true, false, true, true,
    ];
    Some(Table {
        header,
        numeric,
        rows: dists.iter().map(|&(s, q)| distribution_row(s, q)).collect(),
        cases: cases(&dists.iter().map(|&(s, _)| s).collect::<Vec<_>>()),
    })
}

fn distribution_row(s: &Series, q: Quantiles) -> Vec<String> {
    let d = decimals_for(q.p50);
    vec![
        s.key.bench.clone(),
        s.key.short().to_string(),
        super::fmt_fixed(s.summary.min, d),
        super::fmt_fixed(q.p50, d),
        super::fmt_fixed(q.p90, d),
        super::fmt_fixed(q.p99, d),
        super::fmt_fixed(q.p99_9, d),
        super::fmt_fixed(q.max, d),
        super::fmt_fixed(s.summary.mean, d),
        s.unit.symbol().to_string(),
        s.cpu_per_op
            .map_or_else(|| "n/a".to_string(), |c| super::fmt_fixed(c, d)),
        s.summary.n.to_string(),
    ]
}

/// The guests a run's configurations ran in: what kernel and CPU their
/// agents saw, their clock source, and how long each took to answer.
/// A run of several invocations: how many, and each case's spread between
/// invocations beside its spread within one (the interval of the results
/// table covers both).
pub fn invocations(doc: &Document) -> Option<Body> {
    let n = doc.run.invocations.len();
    if n < 2 {
        return None;
    }
    let mut text = format!(
        "Measured in {n} invocations (fresh processes, layouts varied); the 95% CI covers the \
         spread between them. Spread (CV) between invocations / within one:\n"
    );
    for s in doc.series.iter() {
        if let Some(spread) = &s.invocation_spread {
            text.push_str(&format!(
                "  {} {}: {:.1}% / {:.1}%\n",
                s.key.bench,
                s.key.short(),
                spread.between_cv * 100.0,
                spread.within_cv * 100.0
            ));
        }
    }
    Some(Body::Text(text))
}

pub fn guests(doc: &Document) -> Option<Body> {
    if doc.run.guests.is_empty() {
        return None;
    }
    let mut text = String::from("Guests (each measured with its own clocks):\n");
    for g in &doc.run.guests {
        let env = &g.env;
        let clock = env.clocksource.as_deref().unwrap_or("unknown");
        // What the guest's CPUID says it runs under (e.g. KVM, or TCG when emulated).
        let under = env
            .virtualization
            .as_ref()
            .and_then(|v| v.hypervisor.as_deref())
            .map_or(String::new(), |h| format!(" under {h}"));
        let emulated = if env.virtualization.as_ref().is_some_and(|v| v.emulated()) {
            " — emulated: its clocks and costs are the emulator's"
        } else {
            ""
        };
        text.push_str(&format!(
            "  {}: {} {} on {}{under} ({} CPUs, clocksource {clock}), ready in {:.2} s{emulated}\n",
            g.config, env.kernel, env.arch, env.cpu_model, env.cpus, g.boot_s
        ));
    }
    Some(Body::Text(text))
}
