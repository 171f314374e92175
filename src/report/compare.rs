//! The text rendering of a [`Comparison`]: a row per case with every side's
//! median and interval, each candidate's ratio to the baseline with its
//! interval, change in %, adjusted p-value and verdict; then the seed-002
//! summary layout (`benchmark | A | B | speedup`, mean ± stddev); then the
//! cases that were not in every document.

use std::fmt::Write;

use super::decimals_for;
use crate::compare::Comparison;

/// The comparison as text.
pub fn render(c: &Comparison) -> String {
    let mut out = String::new();
    let letters: Vec<String> = (0..c.labels.len()).map(letter).collect();
    for (l, label) in letters.iter().zip(&c.labels) {
        let _ = writeln!(
            out,
            "{l} = {label}{}",
            if l == "A" { " (baseline)" } else { "" }
        );
    }
    if !c.env_diff.is_empty() {
        let _ = writeln!(
            out,
            "\nEnvironment differences ({}):",
            if c.factors.is_empty() {
                "no --factor declared: each is a possible confounder".to_string()
            } else {
                format!("declared factor: {}", c.factors.join(", "))
            }
        );
        let width = c
            .env_diff
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0)
            .min(40);
        for (key, values) in &c.env_diff {
            let shown: Vec<String> = letters
                .iter()
                .zip(values)
                .map(|(l, v)| format!("{l}: {v}"))
                .collect();
            let flag = if crate::env::is_factor(key, &c.factors) {
                "factor     "
            } else {
                "CONFOUNDER?"
            };
            let _ = writeln!(out, "  {flag} {key:<width$} {}", shown.join("   "));
        }
    }
    out.push('\n');
    for row in &c.rows {
        let unit = row.unit.symbol();
        let d = decimals_for(row.summaries[0].median);
        let _ = writeln!(
            out,
            "{} {} ({unit}, median and 95% CI)",
            row.bench,
            super::case_label(&row.case, &row.config)
        );
        for (l, s) in letters.iter().zip(&row.summaries) {
            let _ = writeln!(
                out,
                "  {l}  {:.d$}  [{:.d$} – {:.d$}]  n={}",
                s.median, s.ci_low, s.ci_high, s.n
            );
        }
        for (l, ch) in letters[1..].iter().zip(&row.changes) {
            let _ = writeln!(
                out,
                "  {l}/A  {:.3}  [{:.3} – {:.3}]  {:+.1}%  p={}  → {}",
                ch.ci.ratio,
                ch.ci.ci95.0,
                ch.ci.ci95.1,
                (ch.ci.ratio - 1.0) * 100.0,
                fmt_p(ch.p_adjusted),
                ch.words(&c.options)
            );
        }
    }
    let _ = writeln!(out, "\n{}", method_line(c));

    // The seed-002 layout: summary with mean ± standard deviation and speedup.
    out.push('\n');
    let mut header = vec!["benchmark".to_string()];
    header.extend(letters.iter().cloned());
    header.extend(letters[1..].iter().map(|l| format!("{l} vs A")));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for row in &c.rows {
        let d = decimals_for(row.summaries[0].mean);
        let mut cells = vec![format!("{} {}", row.bench, row.case)];
        cells.extend(
            row.summaries
                .iter()
                .map(|s| format!("{:.d$} ± {:.d$}", s.mean, s.stddev)),
        );
        cells.extend(
            row.changes
                .iter()
                .map(|ch| format!("{:+.1} %", (ch.ci.ratio - 1.0) * 100.0)),
        );
        rows.push(cells);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let numeric: Vec<bool> = (0..header.len()).map(|i| i > 0).collect();
    out.push_str(&super::align(&header, &numeric, &rows));
    if !c.missing.is_empty() {
        out.push_str("\nNot in every document (not compared):\n");
        for (case, lacking) in &c.missing {
            let _ = writeln!(out, "  {case}: missing from {}", lacking.join(", "));
        }
    }
    if !c.not_compared.is_empty() {
        out.push_str("\nNot compared:\n");
        for (case, why) in &c.not_compared {
            let _ = writeln!(out, "  {case}: {why}");
        }
    }
    out
}

/// How the comparison was computed and judged, in one sentence (every rendering says it).
pub(super) fn method_line(c: &Comparison) -> String {
    format!(
        "{}{}; equivalent = 90% interval within ±{}%.",
        c.method,
        if c.tests() > 1 {
            format!(", Holm-adjusted over {} comparisons", c.tests())
        } else {
            String::new()
        },
        c.options.equivalence * 100.0
    )
}

/// A p-value with two significant digits ("<0.0001" below that).
pub(super) fn fmt_p(p: f64) -> String {
    if p < 1e-4 {
        "<0.0001".into()
    } else {
        format!("{p:.*}", decimals_for(p).saturating_sub(2))
    }
}

/// A, B, …, Z, AA, AB, …
pub(super) fn letter(i: usize) -> String {
    let a = (b'A' + (i % 26) as u8) as char;
    if i < 26 {
        a.to_string()
    } else {
        format!("{}{a}", letter(i / 26 - 1))
    }
}

/// What ended the rounds of a run or a `time` run (`stopped_by`, e.g. "every
/// 95% interval within ±5.00% after 7 rounds") and, when they were compared,
/// the smallest change each comparison could show: the relative half-width
/// of its 95% interval.
pub fn precision_lines(c: Option<&Comparison>, stopped_by: &str) -> String {
    let mut out = format!("Stopped: {stopped_by}.\n");
    let Some(c) = c else {
        return out;
    };
    out.push_str("Smallest change each comparison could show (half-width of its 95% interval):\n");
    for row in &c.rows {
        for (label, ch) in c.labels[1..].iter().zip(&row.changes) {
            let half = ch.ci.relative_half_width() * 100.0;
            let _ = writeln!(out, "  {} {} {label}: ±{half:.2}%", row.bench, row.case);
        }
    }
    out
}

/// Which cases of a run sampled to a precision target reached it and which
/// stopped on a limit, each with what ended it; nothing without a target.
pub fn target_lines(doc: &crate::document::Document) -> String {
    let targeted: Vec<_> = doc
        .series
        .iter()
        .filter_map(|s| Some((s, s.target.as_ref()?)))
        .collect();
    let Some((_, first)) = targeted.first() else {
        return String::new();
    };
    let reached = targeted.iter().filter(|(_, t)| t.reached).count();
    let mut out = format!(
        "\nTarget: 95% interval of each median within ±{}%: {reached} of {} cases reached it.\n",
        first.target * 100.0,
        targeted.len()
    );
    for (s, t) in &targeted {
        let _ = writeln!(
            out,
            "  {} {} {}: {}",
            if t.reached {
                "reached    "
            } else {
                "NOT reached"
            },
            s.bench,
            super::case_label(&s.case, &s.config),
            t.stopped_by
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_lines_name_the_stop_and_each_comparison() {
        let docs = [
            ("before.json".to_string(), crate::report::fixture()),
            ("after.json".to_string(), crate::report::fixture()),
        ];
        let options = crate::compare::Options {
            resamples: 200,
            ..Default::default()
        };
        let c = crate::compare::compare(&docs, options).unwrap();
        let text = precision_lines(Some(&c), "--max-time reached after 2 rounds");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Stopped: --max-time reached after 2 rounds.");
        assert_eq!(
            lines[1],
            "Smallest change each comparison could show (half-width of its 95% interval):"
        );
        assert_eq!(lines.len(), 2 + c.rows.len());
        let row = &c.rows[0];
        assert!(lines[2].starts_with(&format!("  {} {} after.json: ±", row.bench, row.case)));
        assert!(text.ends_with("%\n"), "{text}");
    }
}
