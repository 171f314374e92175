//! The text rendering of an `osbench time` run: per command, the seed
//! threads' `real`, `user` and `sys` (median, mean ± standard deviation, min,
//! max) and what else each run cost (peak RSS, switches, faults), then the
//! floor of starting a process. The comparison of several commands is
//! rendered by [`super::compare`]; [`verdict_lines`] says it in one sentence
//! per command.

use std::fmt::Write;

use crate::compare::Comparison;
use crate::document::{Document, Series};
use crate::stats::Summary;

/// `doc`'s commands, from their summaries and per-run counters.
/// One unit for every command and the floor, as hyperfine uses one per table.
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    let scale = time_scale(doc.series.iter().map(|s| s.summary.median));
    for (i, s) in doc.series.iter().enumerate() {
        let _ = writeln!(out, "{}", heading(i, s));
        command(&mut out, s, scale);
    }
    out.push_str(&digest(doc));
    if let Some(floor) = doc.run.time.as_ref().and_then(|t| t.floor.as_ref()) {
        let f = &floor.summary;
        let _ = writeln!(
            out,
            "Floor: {} takes {} {} (median of {}, 95% CI {} – {}); every command's real time includes it.",
            floor.op,
            fmt_in(f.median, scale),
            scale.1,
            f.n,
            fmt_in(f.ci_low, scale),
            fmt_in(f.ci_high, scale),
        );
    }
    out
}

/// The heading of command `i`: its name, shell, runs and failures.
fn heading(i: usize, s: &Series) -> String {
    let failed = s.runs.iter().filter(|r| !r.succeeded()).count();
    // A named command (--command-name) shows its line too.
    let line = s.params.get("command").and_then(|v| v.as_str());
    let name = match line {
        Some(line) if line != s.key.case => format!("{} = {line}", s.key.case),
        _ => s.key.case.clone(),
    };
    // Merged boot rounds: each command once per kernel.
    let name = crate::document::CaseKey {
        case: name,
        ..s.key.clone()
    }
    .short()
    .to_string();
    format!(
        "Command {}: {name}   ({}, {} run{}{})",
        i + 1,
        if s.params.get("shell").and_then(|v| v.as_bool()) == Some(true) {
            "sh -c"
        } else {
            "no shell"
        },
        s.runs.len(),
        if s.runs.len() == 1 { "" } else { "s" },
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        }
    )
}

/// Command `s`'s table (real, user, sys, peak RSS) and what else each run cost.
fn command(out: &mut String, s: &Series, scale: (f64, &str)) {
    // real, user and sys share the decimals that suit real.
    let d = super::decimals_for(s.summary.median * scale.0).min(3);
    let counter = |name: &str| s.counters.get(name);
    let mut rows = vec![summary_row("real", &s.summary.scaled(scale.0), d, scale.1)];
    for (name, key) in [("user", "user_ns"), ("sys", "sys_ns")] {
        if let Some(c) = counter(key) {
            rows.push(summary_row(name, &c.scaled(1e-9 * scale.0), d, scale.1));
        }
    }
    if let Some(c) = counter("max_rss_kb") {
        rows.push(summary_row("max RSS", &c.scaled(1.0 / 1024.0), 1, "MiB"));
    }
    let header = ["", "median", "mean ± stddev", "min", "max", "unit"];
    let numeric = [false, true, true, true, true, false];
    for line in super::align(&header, &numeric, &rows).lines() {
        let _ = writeln!(out, "  {line}");
    }
    let median_of = |name: &str| counter(name).map_or(f64::NAN, |c| c.median);
    let _ = writeln!(
        out,
        "  per run (medians): {} voluntary + {} involuntary context switches, {} minor + {} major faults",
        median_of("voluntary_switches"),
        median_of("involuntary_switches"),
        median_of("minor_faults"),
        median_of("major_faults"),
    );
    for (zone, e) in &s.energy {
        let _ = writeln!(
            out,
            "  energy {zone}: {} J per run, {} W (medians)",
            super::fmt_sig(e.joules_per_op.median),
            super::fmt_sig(e.watts.median)
        );
    }
    let (lo, hi) = (s.summary.ci_low, s.summary.ci_high);
    if s.summary.n < 2 {
        let _ = writeln!(out, "  one run: no spread and no interval");
    } else {
        let _ = writeln!(
            out,
            "  95% CI of the real median: {} – {} {}",
            fmt_in(lo, scale),
            fmt_in(hi, scale),
            scale.1
        );
    }
    for w in s.warnings.iter().filter(|w| !in_digest(w)) {
        let _ = writeln!(out, "  warning: {w}");
    }
    out.push('\n');
}

/// Warnings said once for all commands, after them ([`digest`]): a peak RSS
/// at osbench's own size is the same limit of `wait4` for every command.
fn in_digest(warning: &str) -> bool {
    warning.starts_with("max RSS (")
}

/// What every command (or several) had in common, said once: energy that
/// could not be read, a peak RSS that is osbench's own. Each with the
/// commands it concerns.
fn digest(doc: &Document) -> String {
    let mut notes: Vec<(String, String, Vec<usize>)> = Vec::new();
    for (i, s) in doc.series.iter().enumerate() {
        let energy = s
            .energy_unavailable
            .iter()
            .map(|why| format!("energy: {why}"));
        let warnings = s.warnings.iter().filter(|w| in_digest(w)).cloned();
        for text in energy.chain(warnings) {
            let kind = super::blank_numbers(&text);
            match notes.iter_mut().find(|(k, _, _)| *k == kind) {
                Some((_, _, commands)) => commands.push(i + 1),
                None => notes.push((kind, text, vec![i + 1])),
            }
        }
    }
    let mut out = String::new();
    for (_, text, commands) in &notes {
        let which = match commands.len() {
            n if n == doc.series.len() && n > 1 => "every command".to_string(),
            1 => format!("command {}", commands[0]),
            _ => format!(
                "commands {}",
                commands
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let _ = writeln!(out, "Note ({which}): {text}");
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// One sentence per candidate command: which is faster, by how much, and the
/// verdict (in its colour with `colour`).
pub fn verdict_lines(c: &Comparison, colour: bool) -> String {
    let mut out = String::new();
    let Some(row) = c.rows.first() else {
        return out;
    };
    for (k, (label, ch)) in c.labels[1..].iter().zip(&row.changes).enumerate() {
        let _ = writeln!(
            out,
            "'{label}' against '{}': {} ({:.3} × its time [95% CI{} {:.3} – {:.3}]).",
            c.labels[0],
            super::paint(ch.verdict, &c.verdict_words(k, ch), colour),
            ch.ci.ratio,
            if c.tests() > 1 { ", Holm-adjusted" } else { "" },
            ch.judged().0,
            ch.judged().1
        );
    }
    out
}

/// Seconds shown as s, ms or µs, chosen by the largest of `seconds`: (factor, symbol).
fn time_scale(seconds: impl IntoIterator<Item = f64>) -> (f64, &'static str) {
    super::readable_scale(crate::document::Unit::S, seconds)
}

fn fmt_in(seconds: f64, scale: (f64, &str)) -> String {
    super::fmt_sig(seconds * scale.0)
}

/// Median, mean ± stddev, min and max of `s` with `decimals`, and the unit.
fn summary_row(name: &str, s: &Summary, decimals: usize, unit: &str) -> Vec<String> {
    let f = |x: f64| format!("{x:.decimals$}");
    vec![
        name.to_string(),
        f(s.median),
        format!("{} ± {}", f(s.mean), f(s.stddev)),
        f(s.min),
        f(s.max),
        unit.to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units_follow_magnitude() {
        assert_eq!(time_scale([2.5]).1, "s");
        assert_eq!(time_scale([0.0105]).1, "ms");
        assert_eq!(time_scale([0.000_42]).1, "µs");
        assert_eq!(fmt_in(0.0105, time_scale([0.0105])), "10.50");
        // One unit for a table: the largest value's.
        assert_eq!(time_scale([0.000_42, 0.0512]).1, "ms");
        assert_eq!(fmt_in(0.000_487_7, time_scale([0.0512])), "0.4877");
    }

    /// Two commands, 51.24 ms and 0.4877 ms, with user time, and a floor.
    fn two_commands() -> Document {
        let mut doc = crate::report::fixture();
        let command = |name: &str, seconds: f64| {
            let samples = vec![seconds * 0.99, seconds, seconds * 1.01];
            let summary = crate::stats::summarize(&samples).unwrap();
            let mut s = Series::new(
                "command",
                name.into(),
                crate::document::Unit::S,
                samples,
                summary,
            );
            let user = crate::stats::summarize(&[seconds * 0.5e9; 3]).unwrap();
            s.counters.insert("user_ns".into(), user);
            s
        };
        doc.series = vec![command("make", 0.05124), command("true", 0.000_487_7)];
        doc.comparisons.clear();
        doc
    }

    #[test]
    fn every_table_of_time_has_one_unit() {
        let doc = two_commands();
        let text = render(&doc);
        assert!(text.contains("51.24") && text.contains("0.488"), "{text}");
        assert!(
            !text.contains("µs"),
            "one unit, ms, for both blocks: {text}"
        );
        // The counters table (terminal and HTML) in the same readable unit, not seconds.
        let crate::report::layout::Body::Blocks(blocks) =
            crate::report::counters::section(&doc).unwrap()
        else {
            panic!("blocks");
        };
        let table = blocks
            .iter()
            .find_map(|b| match b {
                crate::report::layout::Block::Table(t) => Some(t),
                _ => None,
            })
            .unwrap();
        assert!(table.rows.iter().all(|r| r[5] == "ms"), "{:?}", table.rows);
        assert_eq!(table.rows[0][2], "25.62", "{:?}", table.rows);
    }
}
