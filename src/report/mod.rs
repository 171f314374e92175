//! Renderings of documents for people. Reporters only format: every number
//! they print was computed elsewhere (the one exception, lmbench's "null I/O",
//! is lmbench's own definition: the mean of the read and write medians).
//! A run's sections are listed once, in [`sections`]; the terminal
//! ([`table`]), HTML and Markdown renderers only lay them out. This file holds
//! the formatting helpers they share. Left out: statistics, the benchmark
//! registry.

pub mod anchors;
pub mod compare;
pub mod counters;
pub mod csv;
pub mod env;
pub mod history;
pub mod html;
pub mod hyperfine;
pub mod markdown;
pub mod plot;
pub mod results;
pub mod sections;
pub mod table;
pub mod time;

use crate::document::{DEFAULT_CONFIG, Series};
pub use env::env_text;
pub use table::render_run;

/// `x` with about four significant digits (at most six decimals).
pub fn fmt_sig(x: f64) -> String {
    format!("{:.*}", decimals_for(x), x)
}

/// Decimals that give `x` about four significant digits.
pub fn decimals_for(x: f64) -> usize {
    if x == 0.0 || !x.is_finite() {
        return 1;
    }
    (3 - x.abs().log10().floor() as i64).clamp(0, 6) as usize
}

/// A case as tables and legends name it: with its configuration in brackets,
/// unless it ran without one ([`DEFAULT_CONFIG`]).
pub fn case_label(case: &str, config: &str) -> String {
    if config == DEFAULT_CONFIG {
        case.to_string()
    } else {
        format!("{case} [{config}]")
    }
}

/// A saved comparison's verdict in words (its value, in documents before the words were kept).
pub(crate) fn verdict_words(r: &crate::document::ComparisonRecord) -> &str {
    if r.verdict_words.is_empty() {
        &r.verdict
    } else {
        &r.verdict_words
    }
}

/// A percentage with one decimal.
pub fn fmt_pct(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// A ctx series' mode: "processes" (lmbench's, and the default) or "threads".
fn ctx_mode(s: &Series) -> &str {
    s.params
        .get("mode")
        .and_then(|v| v.as_str())
        .unwrap_or("processes")
}

/// Columns two spaces apart: text left-aligned, `numeric` ones right-aligned.
fn align<R: AsRef<[String]>>(header: &[&str], numeric: &[bool], rows: &[R]) -> String {
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

/// A small real document (ctx, wakeup, two configurations of syscall null
/// with their comparison) for the report tests.
#[cfg(test)]
pub(crate) fn fixture() -> crate::document::Document {
    serde_json::from_str(include_str!("../../tests/data/report.json")).expect("a valid document")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_name_each_configuration_of_a_case() {
        let doc = fixture();
        let table = results::results_table(&doc).unwrap();
        let cases: Vec<&str> = table.rows.iter().map(|r| r[1].as_str()).collect();
        for config in doc.series.iter().map(|s| &s.config) {
            if config != DEFAULT_CONFIG {
                assert!(
                    cases.iter().any(|c| c.ends_with(&format!("[{config}]"))),
                    "{config} missing from {cases:?}"
                );
            }
        }
        assert!(doc.series.iter().any(|s| s.config != "default"));
        assert_eq!(case_label("null", "default"), "null");
    }

    #[test]
    fn four_significant_digits() {
        assert_eq!(fmt_sig(104.3456), "104.3");
        assert_eq!(fmt_sig(0.112345), "0.1123");
        assert_eq!(fmt_sig(2345.6), "2346");
        assert_eq!(fmt_sig(3.0), "3.000");
        assert_eq!(fmt_pct(0.0123), "1.2%");
    }
}
