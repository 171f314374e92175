//! Tables for the terminal (and, as cells, for the HTML report): the per-case results of a run, the
//! latency distributions, the anchors' own layouts where they apply (lmbench's
//! "Processor, Processes" line and context-switch table, hackbench's `Time:`,
//! the LOCK-prefix answer line).

use std::fmt::Write;

use super::{decimals_for, fmt_pct};
use crate::document::{Document, Series};

/// A table as cells: what the text and HTML renderings share.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub header: Vec<&'static str>,
    /// Which columns are numbers (right-aligned).
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Columns two spaces apart, numbers right-aligned.
    pub fn to_text(&self) -> String {
        align(&self.header, &self.numeric, &self.rows)
    }
}

/// The results table of a run: one row per sampled series, then the
/// latency distributions and the anchors' own layouts.
pub fn render_run(doc: &Document) -> String {
    let mut out = results_table(doc).map_or_else(String::new, |t| t.to_text());
    let [processor, lock, hackbench, ctx] = anchor_sections(doc);
    let distributions = distribution_table(&doc.series).map(|t| t.to_text());
    let counters = super::counters::counters_section(&doc.series);
    for section in [processor, distributions, lock, hackbench, ctx, counters]
        .into_iter()
        .flatten()
    {
        out.push('\n');
        out.push_str(&section);
    }
    out
}

/// One row per sampled series (latency distributions have their own table).
pub fn results_table(doc: &Document) -> Option<Table> {
    let rows: Vec<Vec<String>> = doc
        .series
        .iter()
        .filter(|s| s.quantiles.is_none())
        .map(row)
        .collect();
    (!rows.is_empty()).then(|| Table {
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
        rows,
    })
}

/// The anchors' own layouts, as preformatted text where they apply:
/// lmbench's "Processor, Processes" terms, the LOCK-prefix answer line,
/// hackbench's `Time:` lines and lmbench's context-switch table.
pub fn anchor_sections(doc: &Document) -> [Option<String>; 4] {
    [
        lmbench_processor_line(&doc.series),
        lock_prefix_line(&doc.series),
        hackbench_lines(&doc.series),
        lmbench_ctx_table(doc),
    ]
}

fn row(s: &Series) -> Vec<String> {
    let m = &s.summary;
    let d = decimals_for(m.median);
    let unit = s.unit.symbol().to_string();
    let ci = if m.ci_coverage >= m.ci_level {
        format!("{:.d$} – {:.d$}", m.ci_low, m.ci_high)
    } else {
        format!(
            "{:.d$} – {:.d$} ({:.0}% only)",
            m.ci_low,
            m.ci_high,
            m.ci_coverage * 100.0
        )
    };
    vec![
        s.bench.clone(),
        super::case_label(&s.case, &s.config),
        format!("{:.d$}", m.median),
        ci,
        format!("{:.d$} ± {:.d$}", m.mean, m.stddev),
        fmt_pct(m.cv),
        m.n.to_string(),
        unit,
        s.noise.join(","),
        s.op.clone(),
    ]
}

/// Columns two spaces apart: text left-aligned, `numeric` ones right-aligned.
pub(super) fn align<R: AsRef<[String]>>(header: &[&str], numeric: &[bool], rows: &[R]) -> String {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r.as_ref()[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            let last = i + 1 == cells.len();
            if numeric[i] {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                if !last {
                    text.push_str(&" ".repeat(pad));
                }
            }
            if !last {
                text.push_str("  ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in rows {
        line(r.as_ref());
    }
    out
}

/// lmbench's "Processor, Processes" columns for the syscall and proc cases
/// present, in µs (lmbench's `null I/O` is the mean of read and write).
fn lmbench_processor_line(series: &[Series]) -> Option<String> {
    let median_us = |bench: &str, case: &str| {
        let s = series
            .iter()
            .find(|s| s.bench == bench && s.case == case && s.params.get("mode").is_none())?;
        Some(s.summary.median * s.unit.ns() / 1e3)
    };
    let null_io = match (median_us("syscall", "read"), median_us("syscall", "write")) {
        (Some(r), Some(w)) => Some((r + w) / 2.0),
        _ => None,
    };
    let terms: Vec<String> = [
        ("null call", median_us("syscall", "null")),
        ("null I/O", null_io),
        ("stat", median_us("syscall", "stat")),
        ("open clos", median_us("syscall", "open")),
        ("fork proc", median_us("proc", "fork")),
        ("exec proc", median_us("proc", "exec")),
        ("sh proc", median_us("proc", "sh")),
    ]
    .into_iter()
    .filter_map(|(label, v)| v.map(|v| format!("{label} {}", super::fmt_sig(v))))
    .collect();
    (!terms.is_empty()).then(|| format!("lmbench terms (µs, medians): {}\n", terms.join("   ")))
}

/// Quantiles of every distribution series, and the CPU time per event.
pub fn distribution_table(series: &[Series]) -> Option<Table> {
    let dists: Vec<&Series> = series.iter().filter(|s| s.quantiles.is_some()).collect();
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
    let rows: Vec<Vec<String>> = dists
        .iter()
        .map(|s| {
            let q = s.quantiles.expect("filtered above");
            let d = decimals_for(q.p50);
            let unit = s.unit.symbol().to_string();
            vec![
                s.bench.clone(),
                super::case_label(&s.case, &s.config),
                format!("{:.d$}", s.summary.min),
                format!("{:.d$}", q.p50),
                format!("{:.d$}", q.p90),
                format!("{:.d$}", q.p99),
                format!("{:.d$}", q.p99_9),
                format!("{:.d$}", q.max),
                format!("{:.d$}", s.summary.mean),
                unit,
                s.cpu_per_op
                    .map_or_else(|| "n/a".to_string(), |c| format!("{c:.d$}")),
                s.summary.n.to_string(),
            ]
        })
        .collect();
    let numeric = vec![
        false, false, true, true, true, true, true, true, true, false, true, true,
    ];
    Some(Table {
        header,
        numeric,
        rows,
    })
}

/// The seed's question answered from the atomic medians: what the LOCK
/// prefix adds to an uncontended add, against a plain add and a system call.
fn lock_prefix_line(series: &[Series]) -> Option<String> {
    let median = |bench: &str, case: &str| {
        series
            .iter()
            .find(|s| s.bench == bench && s.case == case)
            .map(|s| s.summary.median)
    };
    let (plain, locked) = (median("atomic", "plain")?, median("atomic", "locked")?);
    let extra = locked - plain;
    let syscall = median("atomic", "getppid").or_else(|| median("syscall", "null"));
    let versus_syscall = syscall.map_or_else(String::new, |g| {
        format!(", {:.1} % of a getppid() call", extra / g * 100.0)
    });
    Some(format!(
        "LOCK prefix, uncontended, on this CPU: a locked add costs {extra:.2} ns more than a plain add \
         ({:.1} × a plain add{versus_syscall})\n",
        locked / plain
    ))
}

/// hackbench's `Time:` line for each messaging series (the median run,
/// milliseconds truncated as hackbench prints them).
fn hackbench_lines(series: &[Series]) -> Option<String> {
    let mut out = String::new();
    for s in series.iter().filter(|s| s.bench == "messaging") {
        let m = &s.summary;
        let time = (m.median * 1000.0).floor() / 1000.0;
        let _ = writeln!(
            out,
            "{:<24} Time: {time:.3}   (median of {} runs; mean {:.3} ± {:.3} s)",
            s.anchor, m.n, m.mean, m.stddev
        );
    }
    (!out.is_empty()).then_some(out)
}

/// lmbench's context-switch columns (`scripts/getsummary`).
const CTX_COLUMNS: [(i64, i64); 7] = [
    (2, 0),
    (2, 16),
    (2, 64),
    (8, 16),
    (8, 64),
    (16, 16),
    (16, 64),
];

/// A ctx series' mode: "processes" (lmbench's, and the default) or "threads".
pub(super) fn ctx_mode(s: &Series) -> &str {
    s.params
        .get("mode")
        .and_then(|v| v.as_str())
        .unwrap_or("processes")
}

/// lmbench's "Context switching" table: one row per configuration, mode and
/// placement, the seven classic cells (ctx medians, µs), blank where not run.
fn lmbench_ctx_table(doc: &Document) -> Option<String> {
    let ctx: Vec<&Series> = doc.series.iter().filter(|s| s.bench == "ctx").collect();
    let param = |s: &Series, k: &str| s.params.get(k).and_then(|v| v.as_i64());
    let cell_of = |s: &Series| {
        CTX_COLUMNS
            .iter()
            .position(|&(p, k)| param(s, "procs") == Some(p) && param(s, "size") == Some(k))
    };
    let mut rows: Vec<(String, String, String, [Option<f64>; 7])> = Vec::new();
    for s in ctx.iter().filter(|s| cell_of(s).is_some()) {
        let mode = ctx_mode(s).to_string();
        let key = (s.config.clone(), mode, s.pin.clone());
        let i = match rows
            .iter()
            .position(|r| (&r.0, &r.1, &r.2) == (&key.0, &key.1, &key.2))
        {
            Some(i) => i,
            None => {
                rows.push((key.0, key.1, key.2, [None; 7]));
                rows.len() - 1
            }
        };
        rows[i].3[cell_of(s).expect("filtered above")] = Some(s.summary.median);
    }
    if rows.is_empty() {
        return None;
    }
    let mut out = String::from(
        "Context switching - times in microseconds - smaller is better\n\
         -------------------------------------------------------------\n\
         Host                 OS  2p/0K 2p/16K 2p/64K 8p/16K 8p/64K 16p/16K 16p/64K\n\
         \x20                        ctxsw  ctxsw  ctxsw  ctxsw  ctxsw   ctxsw   ctxsw\n\
         --------- ------------- ------ ------ ------ ------ ------ ------- -------\n",
    );
    let host: String = doc.env.hostname.chars().take(9).collect();
    let os: String = format!("Linux {}", doc.env.kernel)
        .chars()
        .take(13)
        .collect();
    for (config, mode, pin, cells) in rows {
        let _ = write!(out, "{host:<9} {os:<13}");
        for (i, cell) in cells.iter().enumerate() {
            let width = if i < 5 { 6 } else { 7 };
            let text = cell.map_or_else(String::new, |v| format!("{v:.2}"));
            let _ = write!(out, " {text:>width$}");
        }
        let _ = writeln!(
            out,
            "  {mode}, pin {pin}{}",
            if config == "default" {
                String::new()
            } else {
                format!(", {config}")
            }
        );
    }
    Some(out)
}
