//! Plain-text tables for the terminal: the per-case results of a run, lmbench's
//! summary terms where they apply, and the benchmark list.

use std::fmt::Write;

use super::{decimals_for, fmt_pct};
use crate::bench::{BenchDef, ParamKind, Params, REGISTRY};
use crate::document::{Document, Series};

/// The results table of a run, one row per series.
pub fn render_run(doc: &Document) -> String {
    let header = [
        "bench",
        "case",
        "median",
        "95% CI of median",
        "mean ± stddev",
        "CV",
        "n",
        "unit",
        "op",
    ];
    let rows: Vec<[String; 9]> = doc.series.iter().map(row).collect();
    let numeric = [false, false, true, true, true, true, true, false, false];
    let mut out = align(&header, &numeric, &rows);
    if let Some(line) = lmbench_syscall_line(&doc.series) {
        out.push('\n');
        out.push_str(&line);
    }
    out
}

fn row(s: &Series) -> [String; 9] {
    let m = &s.summary;
    let d = decimals_for(m.median);
    let unit = match s.unit.as_str() {
        "us" => "µs".to_string(),
        u => u.to_string(),
    };
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
    [
        s.bench.clone(),
        s.case.clone(),
        format!("{:.d$}", m.median),
        ci,
        format!("{:.d$} ± {:.d$}", m.mean, m.stddev),
        fmt_pct(m.cv),
        m.n.to_string(),
        unit,
        s.op.clone(),
    ]
}

/// Columns two spaces apart: text left-aligned, `numeric` ones right-aligned.
fn align<const N: usize>(header: &[&str; N], numeric: &[bool; N], rows: &[[String; N]]) -> String {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..N).map(width).collect();
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
    line(&header.map(String::from));
    for r in rows {
        line(r);
    }
    out
}

/// lmbench's "Processor, Processes" columns for the syscall cases present, in µs.
fn lmbench_syscall_line(series: &[Series]) -> Option<String> {
    let median_us = |case: &str| {
        series
            .iter()
            .find(|s| s.bench == "syscall" && s.case == case)
            .map(|s| s.summary.median / 1e3)
    };
    let null_io = match (median_us("read"), median_us("write")) {
        (Some(r), Some(w)) => Some((r + w) / 2.0),
        _ => None,
    };
    let terms: Vec<String> = [
        ("null call", median_us("null")),
        ("null I/O", null_io),
        ("stat", median_us("stat")),
        ("open clos", median_us("open")),
    ]
    .into_iter()
    .filter_map(|(label, v)| v.map(|v| format!("{label} {v:.4}")))
    .collect();
    (!terms.is_empty()).then(|| format!("lmbench terms (µs, medians): {}\n", terms.join("   ")))
}

/// `osbench list`: every family, its parameters, its default cases and its op.
pub fn list_benchmarks() -> String {
    let mut out = String::new();
    for def in REGISTRY {
        describe(&mut out, def);
    }
    out.push_str(
        "Select with BENCH or BENCH:key=value[,key=value...]; a fixed parameter applies to every \
         default case of the family.\n",
    );
    out
}

fn describe(out: &mut String, def: &BenchDef) {
    let _ = writeln!(out, "{} — {}", def.name, def.summary);
    let _ = writeln!(out, "  unit: {} per op", def.unit.symbol());
    let _ = writeln!(out, "  parameters:");
    for p in def.params {
        let allowed = match p.kind {
            ParamKind::Choice(words) => words.join("|"),
            ParamKind::Int { min, max } => format!("{min}..={max}"),
        };
        let _ = writeln!(
            out,
            "    {:<8} {} (default {}; allowed {})",
            p.name, p.help, p.default, allowed
        );
    }
    let _ = writeln!(out, "  default cases and what one op is:");
    for fixed in def.default_cases {
        let params = Params::new(def, fixed);
        let _ = writeln!(
            out,
            "    {:<10} {}",
            (def.case_name)(&params),
            (def.op)(&params)
        );
    }
    out.push('\n');
}
