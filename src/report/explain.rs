//! "Where the change went": the explanation of a compared change by the
//! sides' profiles (`compare::explain`), as text under the change in the
//! terminal table — every line within [`WIDTH`] columns — and as a
//! Markdown table. Rows: the function, each side's self time per op, the
//! difference with its interval (at the row's Holm level), its share of the
//! measured change, and a mark (significant, appeared, vanished); then what
//! the listed rows account for and the unexplained remainder. A side
//! without a profile is named with how to get one. Left out: HTML and
//! flame graphs (`report::html`, `report::flame`); the statistics.

use std::fmt::Write;

use crate::compare::{CaseRow, Comparison, letter};
use crate::document::{Explanation, MissingProfile};
use crate::stats::differential::{Differential, FunctionRow, Presence};

/// The width every line of the text block fits.
pub const WIDTH: usize = 80;

/// The block's indent (under a change line, as the decider's).
const INDENT: &str = "    ";

/// A function name cut to `width` columns, its middle replaced by `…`
/// (names keep their start and their end, which tell them apart).
fn truncate(name: &str, width: usize) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= width || width < 5 {
        return name.to_string();
    }
    let head = (width - 1) / 2;
    let tail = width - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// How many decimals the numbers of `d` get: about four significant
/// digits of the larger side's time per op.
pub(super) fn decimals(d: &Differential) -> usize {
    crate::report::decimals_for(d.baseline_per_op.abs().max(d.candidate_per_op.abs()))
}

/// `x` with a sign and `dec` decimals, a difference that rounds to zero
/// as "+0.0" (never "-0.0").
pub(super) fn signed(x: f64, dec: usize) -> String {
    let text = format!("{x:+.dec$}");
    if text[1..].chars().all(|c| c == '0' || c == '.') {
        format!("+{}", &text[1..])
    } else {
        text
    }
}

/// A row's difference with the half-width of its interval: "+51.1 ±2.9".
fn difference_cell(r: &FunctionRow, dec: usize) -> String {
    let t = &r.self_time;
    match (t.ci_low, t.ci_high) {
        (Some(lo), Some(hi)) => {
            format!("{} ±{:.dec$}", signed(t.difference, dec), (hi - lo) / 2.0)
        }
        _ => signed(t.difference, dec),
    }
}

/// A row's share of the measured change: "98%", or "–" when nothing changed.
pub(super) fn share_cell(r: &FunctionRow, measured: f64) -> String {
    r.share_of(measured)
        .map_or("–".to_string(), |s| format!("{}%", signed(s * 100.0, 0)))
}

/// A row's mark: `*` significant, `new` appeared, `gone` vanished.
pub(super) fn mark(r: &FunctionRow) -> String {
    let presence = match r.presence {
        Presence::Both => "",
        Presence::Appeared => "new",
        Presence::Vanished => "gone",
    };
    let star = if r.significant { "*" } else { "" };
    [star, presence]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The text block under change `k` of `row`, or nothing when the
/// comparison shows no explanation there ([`Comparison::explanation`]).
pub fn text(c: &Comparison, row: &CaseRow, k: usize) -> String {
    let (a, b) = (letter(0), letter(k + 1));
    match c.explanation(row, k) {
        None => String::new(),
        Some(Explanation::NoProfile(missing)) => {
            let mut out = format!("{INDENT}Where the change went: not known\n");
            for m in missing {
                let line = format!("{INDENT}  {} {}\n", side_name(m, &a, &b), m.words());
                out.push_str(&super::fit::wrap_prose(&line, Some(WIDTH)));
            }
            out
        }
        Some(Explanation::Differential(d)) => differential_text(d, row.unit.symbol(), (&a, &b)),
    }
}

/// A missing side's letter (the lines above name its label).
pub(super) fn side_name<'l>(m: &MissingProfile, a: &'l str, b: &'l str) -> &'l str {
    if m.side == "baseline" { a } else { b }
}

/// The rows of `d` as a text table fitted to [`WIDTH`], then its legend,
/// what the listed rows account for, and its notes.
fn differential_text(d: &Differential, unit: &str, (a, b): (&str, &str)) -> String {
    let dec = decimals(d);
    let mut out = format!(
        "{INDENT}Where the change went (self time per op, {unit}; {} and {} profiling passes):\n",
        d.baseline_passes, d.candidate_passes
    );
    let diff_header = format!("{b}−{a}");
    let header = ["function", a, b, diff_header.as_str(), "share", ""];
    let numeric = [false, true, true, true, true, false];
    let mut cells: Vec<Vec<String>> = d
        .rows
        .iter()
        .map(|r| {
            vec![
                r.function.clone(),
                format!("{:.dec$}", r.self_time.baseline),
                format!("{:.dec$}", r.self_time.candidate),
                difference_cell(r, dec),
                share_cell(r, d.measured_change),
                mark(r),
            ]
        })
        .collect();
    // The function column takes what the others leave of the width.
    let others: usize = (1..header.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| super::display_width(&c[i]))
                .chain([super::display_width(header[i])])
                .max()
                .unwrap_or(0)
                + 2
        })
        .sum();
    let room = WIDTH.saturating_sub(INDENT.len() + others).max(12);
    for c in &mut cells {
        c[0] = truncate(&c[0], room);
    }
    if !cells.is_empty() {
        for line in super::align(&header, &numeric, &cells).lines() {
            let _ = writeln!(out, "{INDENT}{line}");
        }
    }
    let legend: String = legend(d, unit, (a, b))
        .iter()
        .map(|l| format!("{INDENT}{l}\n"))
        .collect();
    out.push_str(&super::fit::wrap_prose(&legend, Some(WIDTH)));
    out
}

/// What the marks and intervals mean, the listed rows against the
/// measured change, and the notes: a line each, unwrapped.
pub(super) fn legend(d: &Differential, unit: &str, (a, b): (&str, &str)) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    if d.tested > 0 {
        lines.push(format!(
            "* significant: Holm over {} functions tested (± at its level, else 95%)",
            d.tested
        ));
    }
    if d.rows.iter().any(|r| r.presence != Presence::Both) {
        lines.push(format!("new: in {b}'s profile only; gone: in {a}'s only"));
    }
    let dec = decimals(d);
    lines.push(format!(
        "listed rows: {} of the measured {} {unit}/op; unexplained: {}",
        signed(d.listed_change, dec),
        signed(d.measured_change, dec),
        signed(d.unexplained, dec)
    ));
    lines.extend(d.notes.iter().map(|n| format!("note: {n}")));
    lines
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::markdown::tests::fixed_comparison;
    use crate::stats::differential::{DifferentialOptions, SideProfile, differential};
    use crate::stats::verdict::Verdict;

    /// Five passes a side of stacks named `names`, the first taking
    /// `planted` of the samples and the rest sharing the others.
    fn passes(names: &[String], planted: f64) -> Vec<BTreeMap<String, u64>> {
        (0..5u64)
            .map(|i| {
                let n = 10_000 + 53 * i;
                let hot = (planted * n as f64) as u64 + i * 3;
                let each = (n - hot) / (names.len() as u64 - 1);
                let mut stacks: BTreeMap<String, u64> = names[1..]
                    .iter()
                    .enumerate()
                    .map(|(k, f)| (format!("main;{f}"), each + (i * k as u64) % 7))
                    .collect();
                stacks.insert(format!("main;{}", names[0]), hot);
                stacks
            })
            .collect()
    }

    /// A differential of `names` from `per_op` to `per_op × 1.3`, all of
    /// the change in the first name; `top` rows listed.
    fn planted(names: &[String], per_op: f64, top: usize) -> Differential {
        let (a, b) = (passes(names, 0.1), passes(names, 0.4 / 1.3));
        let options = DifferentialOptions {
            top,
            ..Default::default()
        };
        let side = SideProfile::at_one_time;
        differential(&side(&a, per_op), &side(&b, per_op * 1.3), options)
    }

    fn names() -> Vec<String> {
        [
            "audit_filter_syscall",
            "entry_SYSCALL_64",
            "syscall_exit_to_user_mode",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn a_significant_change_of_profiled_runs_shows_where_it_went_unasked() {
        let mut c = fixed_comparison();
        let d = planted(&names(), 170.0, 8);
        c.rows[0].explanations = vec![Explanation::Differential(d)];
        let text = crate::report::compare::render(&c, false);
        let block = &text[text.find("Where the change went (").expect(&text)..];
        let top = block.lines().nth(2).unwrap();
        assert!(
            top.trim_start().starts_with("audit_filter_syscall"),
            "{block}"
        );
        assert!(top.ends_with('*'), "{top}");
        assert!(
            block.contains("listed rows: +51.0 of the measured +51.0 ns/op"),
            "{block}"
        );
        // Not significant: shown only when asked for.
        c.rows[0].changes[0].verdict = Verdict::Inconclusive;
        let text = crate::report::compare::render(&c, false);
        assert!(!text.contains("Where the change went"), "{text}");
        c.options.explain = true;
        let text = crate::report::compare::render(&c, false);
        assert!(text.contains("Where the change went ("), "{text}");
    }

    #[test]
    fn sides_never_profiled_say_nothing_unless_asked() {
        let mut c = fixed_comparison();
        let missing = |side: &str, label: &str| MissingProfile {
            side: side.into(),
            label: label.into(),
            unavailable: None,
        };
        c.rows[0].explanations = vec![Explanation::NoProfile(vec![
            missing("baseline", "before.json"),
            missing("candidate", "after"),
        ])];
        let text = crate::report::compare::render(&c, false);
        assert!(!text.contains("Where the change went"), "{text}");
        assert!(
            crate::report::markdown::comparison(&c)
                .find("Where the")
                .is_none()
        );
        c.options.explain = true;
        let text = crate::report::compare::render(&c, false);
        assert!(
            text.contains("Where the change went: not known\n      A has no profile: run it with `osbench run … --profile`\n      B has no profile"),
            "{text}"
        );
        let md = crate::report::markdown::comparison(&c);
        assert!(
            md.contains("## Where the changes went") && md.contains("- A has no profile"),
            "{md}"
        );
    }

    #[test]
    fn long_names_and_large_numbers_still_fit_80_columns() {
        let mut names = names();
        names[0] = "std::rt::lang_start_internal::{{closure}}::h1f2e3d4c5b6a7988".into();
        names.push(
            "<osbench::bench::syscall::Null as osbench::measure::Workload>::run_batch".into(),
        );
        names.push("[unknown kernel]".into());
        let mut c = fixed_comparison();
        c.rows[0].changes[0].verdict = Verdict::Slower;
        // A microsecond-scale op in ns: wide numbers in every column.
        c.rows[0].explanations = vec![Explanation::Differential(planted(&names, 123_456.7, 8))];
        let text = text(&c, &c.rows[0], 0);
        assert!(text.contains("std::rt::"), "{text}");
        for line in text.lines() {
            assert!(
                line.chars().count() <= WIDTH,
                "{}: {line}",
                line.chars().count()
            );
        }
        assert!(text.contains('…'), "a name cut: {text}");
        let md = crate::report::markdown::explanations(&c);
        assert!(
            md.contains("| std::rt::lang\\_start") || md.contains("| std::rt::lang_start"),
            "{md}"
        );
        assert!(
            md.contains("share of change") && md.contains("listed rows:"),
            "{md}"
        );
    }

    #[test]
    fn truncation_keeps_both_ends_and_signs_never_say_minus_zero() {
        assert_eq!(truncate("abcdefghij", 7), "abc…hij");
        assert_eq!(truncate("short", 7), "short");
        assert_eq!(signed(-0.04, 1), "+0.0");
        assert_eq!(signed(-0.06, 1), "-0.1");
        assert_eq!(signed(3.0, 0), "+3");
    }
}
