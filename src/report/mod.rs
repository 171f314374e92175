//! Renderings of documents for people. Reporters only format: every number
//! they print was computed elsewhere (the one exception, lmbench's "null I/O",
//! is lmbench's own definition: the mean of the read and write medians).
//! A run's sections are listed once, in [`sections`]; the terminal
//! ([`table`]), HTML and Markdown renderers only lay them out. This file holds
//! the formatting helpers they share. Left out: statistics, the benchmark
//! registry.

pub mod anchors;
pub mod bmf;
pub mod case_history;
pub mod compare;
pub mod counters;
pub mod csv;
pub mod digest;
pub mod env;
pub mod explain;
pub mod fit;
pub mod flame;
pub mod history;
pub mod html;
pub mod hyperfine;
pub mod jobs;
pub mod junit;
pub mod kcidb;
pub mod layout;
pub mod loads;
pub mod markdown;
pub mod openmetrics;
pub mod plot;
pub mod regressions;
pub mod results;
pub mod scaling;
pub mod schbench;
pub mod sections;
pub mod table;
pub mod time;

use unicode_width::UnicodeWidthStr;

use crate::document::Series;
pub use crate::document::number::{decimals_for, fmt_fixed, fmt_sig};
use crate::stats::verdict::Verdict;
pub use env::env_text;
pub use table::{render_run, render_run_within};

/// `text` with every number blanked to `#`: the same warning whatever the
/// values in it ("CV 12.5%" and "CV 30.1%" alike), to say it once.
pub fn blank_numbers(text: &str) -> String {
    let mut out = String::new();
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() || (in_number && c == '.') {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// How a table shows values of `unit`, as (factor, symbol): seconds (whole
/// commands, `osbench time`) in s, ms or µs, one for the table, chosen by the
/// largest of `typical` (so it reads 1 or more, as hyperfine picks one unit
/// per table); the benchmarks' own units (ns, µs) as they are.
pub fn readable_scale(
    unit: crate::document::Unit,
    typical: impl IntoIterator<Item = f64>,
) -> (f64, &'static str) {
    if unit != crate::document::Unit::S {
        return (1.0, unit.symbol());
    }
    let largest = typical
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    match largest {
        s if s >= 1.0 => (1.0, "s"),
        s if s >= 1e-3 => (1e3, "ms"),
        _ => (1e6, "µs"),
    }
}

/// An environment key's values, one per side, and whether they are shown
/// as changes: each as it is, or when one is long (a kernel command line)
/// and every other side changed at most half its words, the baseline's word
/// count and each other side's changed words against it (`+mitigations=off
/// -quiet`), at most ten of them. Values that differ throughout (a sentence
/// replaced by another) are shown whole.
pub(crate) fn env_values(values: &[String]) -> (Vec<String>, bool) {
    const SHOWN: usize = 10;
    let base = &values[0];
    let words = |v: &str| v.split_whitespace().count();
    let changes: Vec<Vec<String>> = values[1..]
        .iter()
        .map(|v| crate::env::word_changes(base, v).words())
        .collect();
    let long = values
        .iter()
        .any(|v| v.chars().count() > crate::env::LONG_VALUE);
    let small = values[1..]
        .iter()
        .zip(&changes)
        .all(|(v, c)| 2 * c.len() <= words(base).max(words(v)));
    if !long || !small {
        return (values.to_vec(), false);
    }
    let mut out = vec![format!("{} words", words(base))];
    for mut words in changes {
        let more = words.len().saturating_sub(SHOWN);
        words.truncate(SHOWN);
        if more > 0 {
            words.push(format!("… and {more} more"));
        }
        out.push(match words.is_empty() {
            true => "the same words in another order".to_string(),
            false => words.join(" "),
        });
    }
    (out, true)
}

/// A percentage with one decimal.
pub fn fmt_pct(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

/// `text` (a verdict's words) in the verdict's terminal colour when `colour`:
/// faster green, slower red, anything else as it is. Keyed on the verdict,
/// never on its words.
pub fn paint(verdict: Verdict, text: &str, colour: bool) -> String {
    let sgr = match verdict {
        Verdict::Faster => "32",
        Verdict::Slower => "31",
        _ => return text.to_string(),
    };
    if colour {
        format!("\x1b[{sgr}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The columns `text` takes on a terminal (`µs` is 2, a CJK character 2 each).
pub fn display_width(text: &str) -> usize {
    text.width()
}

/// `text` padded with spaces on the right to `width` display columns.
pub fn pad_right(text: &str, width: usize) -> String {
    let pad = width.saturating_sub(display_width(text));
    format!("{text}{}", " ".repeat(pad))
}

/// A ctx series' mode: "processes" (lmbench's, and the default) or "threads".
fn ctx_mode(s: &Series) -> &str {
    s.params
        .get("mode")
        .and_then(|v| v.as_str())
        .unwrap_or("processes")
}

/// Columns two spaces apart: text left-aligned, `numeric` ones right-aligned,
/// padded by display width so non-ASCII text (`µs`, names) lines up.
fn align<R: AsRef<[String]>>(header: &[&str], numeric: &[bool], rows: &[R]) -> String {
    let width = |i: usize| {
        rows.iter()
            .map(|r| display_width(&r.as_ref()[i]))
            .chain([display_width(header[i])])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i] - display_width(cell);
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
    fn tiny_values_keep_their_digits() {
        assert_eq!(fmt_sig(1.5e-9), "1.500e-9");
        assert_eq!(fmt_sig(-2.25e-8), "-2.250e-8");
        assert_eq!(fmt_sig(0.0), "0.0");
        assert_eq!(fmt_sig(0.001234), "0.001234");
        assert_eq!(fmt_sig(1234.4), "1234");
        assert_eq!(fmt_fixed(4e-7, 6), "4.000e-7");
        assert_eq!(fmt_fixed(6e-7, 6), "0.000001");
    }

    #[test]
    fn tiny_medians_are_printed_with_their_digits_in_every_table() {
        let mut doc = fixture();
        for s in &mut doc.series {
            s.samples.iter_mut().for_each(|v| *v *= 1e-9);
            s.summary = s.summary.scaled(1e-9);
        }
        let table = results::results_table(&doc).unwrap();
        let docs = [
            ("a".to_string(), doc.clone()),
            ("b".to_string(), doc.clone()),
        ];
        let options = crate::compare::Options {
            resamples: 200,
            ..Default::default()
        };
        let c = crate::compare::compare(&docs, options).unwrap();
        let html = html::render(&docs, Some(&c)).unwrap();
        let texts = [
            format!("{:?}", table.rows),
            compare::render(&c, false),
            markdown::comparison(&c),
            html,
        ];
        for text in texts {
            assert!(!text.contains("0.000000"), "{text}");
            assert!(text.contains("e-7") || text.contains("e-6"), "{text}");
        }
    }

    #[test]
    fn results_name_each_configuration_of_a_case() {
        let doc = fixture();
        let table = results::results_table(&doc).unwrap();
        let cases: Vec<&str> = table.rows.iter().map(|r| r[1].as_str()).collect();
        for config in doc.series.iter().map(|s| &s.key.config) {
            if config != crate::document::DEFAULT_CONFIG {
                assert!(
                    cases.iter().any(|c| c.ends_with(&format!("[{config}]"))),
                    "{config} missing from {cases:?}"
                );
            }
        }
        assert!(doc.series.iter().any(|s| s.key.config != "default"));
        let plain = crate::document::CaseKey::new("syscall", "null", "default");
        assert_eq!(plain.short().to_string(), "null");
    }

    #[test]
    fn columns_align_by_display_width() {
        let rows = [
            vec!["a".to_string(), "µs".to_string(), "1.0".to_string()],
            vec!["漢字".to_string(), "ns".to_string(), "10.0".to_string()],
        ];
        let text = align(&["name", "unit", "value"], &[false, false, true], &rows);
        let widths: Vec<usize> = text.lines().map(display_width).collect();
        assert_eq!(widths, [widths[0]; 3], "{text}");
        // The unit column starts at the same terminal column on every line.
        let lines: Vec<&str> = text.lines().collect();
        let column = |line: &str, unit: &str| display_width(&line[..line.find(unit).unwrap()]);
        assert_eq!(column(lines[0], "unit"), column(lines[1], "µs"), "{text}");
        assert_eq!(column(lines[1], "µs"), column(lines[2], "ns"), "{text}");
        assert_eq!(pad_right("µs", 4), "µs  ");
    }

    #[test]
    fn verdicts_are_coloured_by_the_verdict_not_its_words() {
        assert_eq!(
            paint(Verdict::Faster, "faster", true),
            "\x1b[32mfaster\x1b[0m"
        );
        assert_eq!(paint(Verdict::Slower, "x", true), "\x1b[31mx\x1b[0m");
        assert_eq!(paint(Verdict::Equivalent, "equivalent", true), "equivalent");
        assert_eq!(paint(Verdict::Slower, "slower", false), "slower");
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
