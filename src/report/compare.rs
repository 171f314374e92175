//! The text rendering of a [`Comparison`]: a row per case with every side's
//! median and interval, each candidate's ratio to the baseline with its
//! interval, change in %, adjusted p-value and verdict; then the seed-002
//! summary layout (`benchmark | A | B | speedup`, mean ± stddev); then the
//! cases that were not in every document.

use std::fmt::Write;

use super::decimals_for;
use crate::compare::Comparison;
use crate::compare::fleet::{FleetCase, FleetComparison};

/// The comparison as text; with `colour`, verdicts in their terminal colours ([`super::paint`]).
pub fn render(c: &Comparison, colour: bool) -> String {
    let mut out = String::new();
    let letters: Vec<String> = (0..c.labels.len()).map(letter).collect();
    for (l, label) in letters.iter().zip(&c.labels) {
        let _ = writeln!(
            out,
            "{l} = {label}{}",
            if l == "A" { " (baseline)" } else { "" }
        );
    }
    out.push_str(&env_differences(c, &letters));
    out.push('\n');
    for row in &c.rows {
        // Whole commands' seconds in a readable unit, one for the case's lines.
        let (factor, unit) =
            super::readable_scale(row.unit, row.summaries.iter().map(|s| s.median));
        let d = decimals_for(row.summaries[0].median * factor);
        let _ = writeln!(
            out,
            "{} {} ({unit}, {} and 95% CI)",
            row.key.bench,
            row.key.short(),
            c.centre
        );
        for (l, s) in letters.iter().zip(&row.summaries) {
            // A bandwidth case also shows its median as MB/s (higher is faster).
            let bandwidth = row.bytes_per_op.map_or_else(String::new, |b| {
                let mbs = row.unit.mb_per_s(b, s.median);
                format!("  = {} MB/s", super::fmt_sig(mbs))
            });
            let _ = writeln!(
                out,
                "  {l}  {}  [{} – {}]  n={}{bandwidth}",
                super::fmt_fixed(s.median * factor, d),
                super::fmt_fixed(s.ci_low * factor, d),
                super::fmt_fixed(s.ci_high * factor, d),
                s.n
            );
        }
        out.push_str(&load_lines(&letters, &row.loads));
        for (k, (l, ch)) in letters[1..].iter().zip(&row.changes).enumerate() {
            // What would decide an undecided verdict goes on a line of its own.
            let (verdict, decider) = c.verdict_and_decider(k, ch);
            let painted = super::paint(ch.verdict, &verdict, colour);
            let _ = writeln!(out, "  {l}/A  {}", change_line(ch, &painted));
            if let Some(decider) = decider {
                let _ = writeln!(out, "     {decider}");
            }
            out.push_str(&super::explain::text(c, row, k));
        }
    }
    let _ = writeln!(out, "\n{}", method_line(c));
    out.push_str(&findings(c));

    out.push_str(&summary_table(c, &letters));
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

/// Each side's background loads and their own throughput, a line a side
/// ("     A under hackbench:2 at 1.2e6 messages/s"); none without loads.
fn load_lines(letters: &[String], loads: &[Vec<(String, String, f64)>]) -> String {
    let mut out = String::new();
    for words in load_words(letters, loads) {
        let _ = writeln!(out, "     {words}");
    }
    out
}

/// Each side's loads in words ("B under spin:1 at 4.9e7 iterations/s",
/// "A under no load"); empty when no side of the case ran one.
pub(super) fn load_words(letters: &[String], loads: &[Vec<(String, String, f64)>]) -> Vec<String> {
    letters
        .iter()
        .zip(loads)
        .map(|(l, side)| {
            let each: Vec<String> = side
                .iter()
                .map(|(spec, unit, rate)| format!("{spec} at {} {unit}/s", super::fmt_sig(*rate)))
                .collect();
            match each.is_empty() {
                true => format!("{l} under no load"),
                false => format!("{l} under {}", each.join(", ")),
            }
        })
        .collect()
}

/// Per case whose sides ran beside background loads: the case and what
/// each side ran under ([`load_words`]), for the HTML and Markdown renderings.
pub(super) fn load_findings(c: &Comparison) -> Vec<(String, Vec<String>)> {
    let letters: Vec<String> = (0..c.labels.len()).map(letter).collect();
    c.rows
        .iter()
        .filter(|row| !row.loads.is_empty())
        .map(|row| (row.key.to_string(), load_words(&letters, &row.loads)))
        .collect()
}

/// The conditions', drift sentinels' and kernel log's findings, a line each
/// ("Conditions: the runs' conditions differ: …").
fn findings(c: &Comparison) -> String {
    let mut out = String::new();
    for (title, findings) in [
        ("Conditions", &c.conditions),
        ("Drift", &c.drift),
        ("Kernel log", &c.kernel_log),
    ] {
        for finding in findings {
            let _ = writeln!(out, "{title}: {finding}");
        }
    }
    out
}

/// The environment keys that differ between the sides, each flagged as the
/// declared factor or a possible confounder.
fn env_differences(c: &Comparison, letters: &[String]) -> String {
    let mut out = String::new();
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
            .map(|(k, _)| super::display_width(k))
            .max()
            .unwrap_or(0)
            .min(40);
        for (key, values) in &c.env_diff {
            let (values, as_changes) = super::env_values(values);
            let shown: Vec<String> = letters
                .iter()
                .zip(&values)
                .enumerate()
                .map(|(i, (l, v))| match as_changes && i > 0 {
                    true => format!("{l} vs A: {v}"),
                    false => format!("{l}: {v}"),
                })
                .collect();
            let flag = if crate::env::is_factor(key, &c.factors) {
                "factor     "
            } else {
                "CONFOUNDER?"
            };
            let key = super::pad_right(key, width);
            let _ = writeln!(out, "  {flag} {key} {}", shown.join("   "));
        }
    }
    out
}

/// The seed-002 layout (`benchmark | A | B | unit | B vs A`): each side's
/// centre — the statistic the ratio is of ([`Comparison::centre`]) — and the
/// change, which is B ÷ A of those very numbers; cases named as the other
/// tables name them, with their configuration.
fn summary_table(c: &Comparison, letters: &[String]) -> String {
    let mut out = String::from("\n");
    let mut header = vec!["benchmark".to_string()];
    header.extend(letters.iter().cloned());
    header.push("unit".to_string());
    header.extend(letters[1..].iter().map(|l| format!("{l} vs A")));
    let mut rows: Vec<Vec<String>> = Vec::new();
    for row in &c.rows {
        let (factor, unit) =
            super::readable_scale(row.unit, row.summaries.iter().map(|s| s.median));
        let d = decimals_for(row.summaries[0].median * factor);
        let mut cells = vec![row.key.to_string()];
        cells.extend(
            row.summaries
                .iter()
                .map(|s| super::fmt_fixed(s.median * factor, d)),
        );
        cells.push(unit.to_string());
        cells.extend(
            row.changes
                .iter()
                .map(|ch| format!("{:+.1} %", (ch.ci.ratio - 1.0) * 100.0)),
        );
        rows.push(cells);
    }
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let unit_column = letters.len() + 1;
    let numeric: Vec<bool> = (0..header.len())
        .map(|i| i > 0 && i != unit_column)
        .collect();
    out.push_str(&super::align(&header, &numeric, &rows));
    let _ = writeln!(
        out,
        "(each side: the {}; each change: the ratio of those, the one judged above)",
        c.centre
    );
    out
}

/// A comparison by host: per case, each host's medians before and after
/// with its own ratio and verdict, then the fleet's verdict over the hosts.
pub fn render_fleet(f: &FleetComparison, colour: bool) -> String {
    let mut out = format!(
        "A = {}, B = {}, by host: {} host{} on both sides\n",
        f.before,
        f.after,
        f.hosts.len(),
        if f.hosts.len() == 1 { "" } else { "s" }
    );
    for (host, why) in &f.unpaired {
        let _ = writeln!(out, "  host {host}: {why} (left out)");
    }
    let Some((_, first)) = f.hosts.first() else {
        return out;
    };
    for row in &first.rows {
        let name = row.key.to_string();
        let _ = writeln!(out, "\n{name} ({}, medians)", row.unit.symbol());
        let header = ["host", "A", "B", "B/A", "95% CI", "change", "p", "verdict"];
        let numeric = [false, true, true, true, true, true, true, false];
        let mut cells: Vec<Vec<String>> = Vec::new();
        for (host, c) in &f.hosts {
            let Some(r) = c.rows.iter().find(|r| {
                (&r.key.bench, &r.key.case, &r.key.config)
                    == (&row.key.bench, &row.key.case, &row.key.config)
            }) else {
                cells.push(vec![
                    host.clone(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "not in both runs".into(),
                ]);
                continue;
            };
            let ch = &r.changes[0];
            let d = decimals_for(r.summaries[0].median);
            cells.push(vec![
                host.clone(),
                super::fmt_fixed(r.summaries[0].median, d),
                super::fmt_fixed(r.summaries[1].median, d),
                format!("{:.3}", ch.ci.ratio),
                format!("[{:.3} – {:.3}]", ch.judged().0, ch.judged().1),
                format!("{:+.1}%", (ch.ci.ratio - 1.0) * 100.0),
                fmt_p(ch.p_adjusted),
                c.verdict_words(0, ch),
            ]);
        }
        out.push_str(&super::align(&header, &numeric, &cells));
        if let Some(fc) = f.cases.iter().find(|c| c.name == name) {
            out.push_str(&fleet_line(fc, &f.options, colour));
        }
    }
    let _ = writeln!(
        out,
        "\nEach host: {}. Fleet: hosts as replicates — geometric mean of the hosts' ratios with a \
         t interval, exact sign-flip p over hosts, Holm-adjusted over cases; equivalent = 90% \
         interval within ±{}%.",
        first.method,
        f.options.equivalence * 100.0
    );
    out
}

/// A comparison by host as JSON: each host's changes and the fleet's.
pub fn fleet_record(f: &FleetComparison) -> serde_json::Value {
    let hosts: Vec<serde_json::Value> = f
        .hosts
        .iter()
        .map(|(host, c)| serde_json::json!({ "host": host, "comparisons": c.records() }))
        .collect();
    let fleet: Vec<serde_json::Value> = f
        .cases
        .iter()
        .map(|c| {
            serde_json::json!({
                "case": c.name,
                "ratio": c.ci.ratio,
                "ci_low": c.judged().0,
                "ci_high": c.judged().1,
                "p_value": c.p_adjusted,
                "p_floor": c.power.min_p,
                "verdict": c.verdict.as_str(),
                "verdict_words": c.words(&f.options),
                "hosts": c.hosts,
                "slower_hosts": c.slower,
                "faster_hosts": c.faster,
            })
        })
        .collect();
    serde_json::json!({
        "schema": crate::document::SCHEMA,
        "tool": crate::document::Tool::this(),
        "by": "host",
        "before": f.before,
        "after": f.after,
        "unpaired": f.unpaired.iter().map(|(h, why)| serde_json::json!({"host": h, "left_out": why})).collect::<Vec<_>>(),
        "hosts": hosts,
        "fleet": fleet,
    })
}

/// The fleet's verdict on one case.
fn fleet_line(c: &FleetCase, options: &crate::compare::Options, colour: bool) -> String {
    let words = super::paint(c.verdict, &c.words(options), colour);
    format!(
        "  fleet  B/A  {}; slower on {} and faster on {} of {} hosts\n",
        change_text(
            c.ci.ratio,
            c.judged(),
            Some(c.ci.ci95),
            c.p_adjusted,
            &words
        ),
        c.slower,
        c.faster,
        c.hosts
    )
}

/// A change as the text comparisons print it: ratio, the interval the
/// verdict was judged on (followed by the unadjusted 95 % one when a
/// multiplicity adjustment widened it), change in %, adjusted p and the
/// verdict's `words`.
fn change_text(
    ratio: f64,
    judged: (f64, f64),
    unadjusted: Option<(f64, f64)>,
    p: f64,
    words: &str,
) -> String {
    let change = (ratio - 1.0) * 100.0;
    if judged.0 == judged.1 {
        // No spread between replicates known: a ratio without an interval or a test.
        return format!("{ratio:.3}  [no interval]  {change:+.1}%  → {words}");
    }
    let interval = match unadjusted.filter(|u| *u != judged) {
        Some(u) => format!(
            "[{:.3} – {:.3} Holm; unadjusted {:.3} – {:.3}]",
            judged.0, judged.1, u.0, u.1
        ),
        None => format!("[{:.3} – {:.3}]", judged.0, judged.1),
    };
    format!(
        "{ratio:.3}  {interval}  {change:+.1}%  p={}  → {words}",
        fmt_p(p)
    )
}

/// [`change_text`] of one change of a comparison.
fn change_line(ch: &crate::compare::Change, words: &str) -> String {
    change_text(
        ch.ci.ratio,
        ch.judged(),
        Some(ch.ci.ci95),
        ch.p_adjusted,
        words,
    )
}

/// How the comparison was computed and judged, in one sentence (every rendering says it).
pub(super) fn method_line(c: &Comparison) -> String {
    format!(
        "{}{}; equivalent = 90% interval within ±{}%.",
        c.method,
        if c.tests() > 1 {
            format!(
                ", Holm-adjusted over {} comparisons (p and the intervals beside the verdicts: \
                 each 95% interval widened until it agrees with its adjusted p)",
                c.tests()
            )
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
    crate::compare::letter(i)
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
            let _ = writeln!(
                out,
                "  {} {} {label}: ±{half:.2}%",
                row.key.bench, row.key.case
            );
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
            s.key.bench,
            s.key.short(),
            t.stopped_by
        );
    }
    out
}

/// The one line that says how a `--target-mde` run went: "target ±2%:
/// detectable after 34 rounds (1 min 12 s)", or "target ±2% not reached in
/// the 10 min budget: ±3.1% detectable with 120 rounds".
pub fn target_mde_line(t: &crate::document::TargetMde) -> String {
    let pct = |x: f64| (x * 100_000.0).round() / 1000.0;
    let target = format!("target ±{}%", pct(t.target));
    let (n, unit) = (t.n, &t.unit);
    let elapsed = duration_words(t.elapsed_s);
    if t.reached {
        return format!("{target}: detectable after {n} {unit} ({elapsed})");
    }
    let budget = duration_words(t.budget_s);
    let when = if t.elapsed_s >= t.budget_s {
        format!("in the {budget} budget")
    } else {
        format!("in {elapsed} (budget {budget}: the most {unit} allowed ran, or the run stopped)")
    };
    match t.detectable {
        Some(d) => format!(
            "{target} not reached {when}: ±{:.1}% detectable with {n} {unit}",
            d * 100.0
        ),
        None => {
            format!("{target} not reached {when}: too few {unit} ({n}) to tell what is detectable")
        }
    }
}

/// Seconds in words: "0.04 s", "0.4 s", "12 s", "1 min 12 s", "10 min", "1 h 5 min".
pub fn duration_words(secs: f64) -> String {
    if secs < 0.1 {
        return format!("{secs:.2} s");
    }
    if secs < 10.0 {
        let tenths = (secs * 10.0).round() / 10.0;
        return format!("{tenths} s");
    }
    let s = secs.round() as u64;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    match (h, m, s) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// One line per knob the run set: the value found, each configuration's
/// value (the others ran with the value found), and whether it was restored
/// (`knob thp (/sys/…/enabled): found madvise; a=never b=always; restored`).
/// Files of one knob alike in all of that (each CPU's governor) share a line.
pub fn knob_lines(doc: &crate::document::Document) -> Vec<String> {
    let mut out = Vec::new();
    let knobs = &doc.run.knobs;
    let mut i = 0;
    while i < knobs.len() {
        let k = &knobs[i];
        let alike = |o: &&crate::document::KnobRecord| {
            (&o.knob, &o.place, &o.found, &o.set, o.restored)
                == (&k.knob, &k.place, &k.found, &k.set, k.restored)
        };
        let more = knobs[i + 1..].iter().take_while(alike).count();
        let set: Vec<String> = k.set.iter().map(|(c, v)| format!("{c}={v}")).collect();
        let place = k
            .place
            .as_ref()
            .map(|p| format!("{p}: "))
            .unwrap_or_default();
        let path = match (k.path == k.knob, more) {
            (true, _) => String::new(),
            (false, 0) => format!(" ({})", k.path),
            (false, n) => format!(" ({} and {n} more)", k.path),
        };
        let restored = if k.restored {
            "restored"
        } else {
            "NOT restored: write the value found back by hand"
        };
        let (found, set) = (&k.found, set.join(" "));
        out.push(format!(
            "{place}knob {}{path}: found {found}; {set}; {restored}",
            k.knob
        ));
        i += 1 + more;
    }
    out
}

/// [`knob_lines`] as text under the results: a blank line, then a line
/// each (empty without knobs).
pub fn knob_text(doc: &crate::document::Document) -> String {
    knob_lines(doc)
        .iter()
        .fold(String::new(), |text, line| text + "\n" + line)
        + if doc.run.knobs.is_empty() { "" } else { "\n" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_mde_line_says_whether_and_when() {
        let mut t = crate::document::TargetMde {
            target: 0.02,
            budget_s: 600.0,
            reached: true,
            detectable: Some(0.0187),
            n: 34,
            unit: "rounds".into(),
            elapsed_s: 72.4,
            alpha: 0.05,
        };
        assert_eq!(
            target_mde_line(&t),
            "target ±2%: detectable after 34 rounds (1 min 12 s)"
        );
        (t.reached, t.detectable, t.n, t.elapsed_s) = (false, Some(0.0314), 120, 600.2);
        assert_eq!(
            target_mde_line(&t),
            "target ±2% not reached in the 10 min budget: ±3.1% detectable with 120 rounds"
        );
        assert_eq!(duration_words(2.04), "2 s");
        assert_eq!(duration_words(0.44), "0.4 s");
        assert_eq!(duration_words(0.036), "0.04 s");
        assert_eq!(duration_words(3900.0), "1 h 5 min");
    }

    /// The fixture compared with itself.
    fn fixture_comparison() -> Comparison {
        let docs = [
            ("before.json".to_string(), crate::report::fixture()),
            ("after.json".to_string(), crate::report::fixture()),
        ];
        let options = crate::compare::Options {
            resamples: 200,
            ..Default::default()
        };
        crate::compare::compare(&docs, options).unwrap()
    }

    #[test]
    fn precision_lines_name_the_stop_and_each_comparison() {
        let c = fixture_comparison();
        let text = precision_lines(Some(&c), "--max-time reached after 2 rounds");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Stopped: --max-time reached after 2 rounds.");
        assert_eq!(
            lines[1],
            "Smallest change each comparison could show (half-width of its 95% interval):"
        );
        assert_eq!(lines.len(), 2 + c.rows.len());
        let row = &c.rows[0];
        assert!(lines[2].starts_with(&format!(
            "  {} {} after.json: ±",
            row.key.bench, row.key.case
        )));
        assert!(text.ends_with("%\n"), "{text}");
    }

    #[test]
    fn long_values_show_their_changed_words_and_the_summary_keeps_configurations() {
        let mut c = fixture_comparison();
        let base = "BOOT_IMAGE=/boot/vmlinuz-6.18.44 root=UUID=4f1c2a9e-3b7d-4e2a-9c1f-7d8e6b5a4c3d ro \
                    quiet console=ttyS0,115200 init_on_alloc=1 transparent_hugepage=madvise";
        let after = format!("{} mitigations=off", base.replace(" quiet", ""));
        c.env_diff = vec![("cmdline".into(), vec![base.to_string(), after])];
        let text = render(&c, false);
        let line = text.lines().find(|l| l.contains("cmdline")).unwrap();
        assert!(line.contains("A: 7 words"), "{line}");
        assert!(line.contains("B vs A: +mitigations=off -quiet"), "{line}");
        assert!(!line.contains("UUID"), "{line}");
        let summary = &text[text.rfind("benchmark").unwrap()..];
        let tagged: Vec<_> = c
            .rows
            .iter()
            .filter(|r| r.key.config != "default")
            .collect();
        assert!(!tagged.is_empty());
        for r in tagged {
            let name = r.key.to_string();
            assert!(summary.contains(&name), "{name} not in {summary}");
        }
    }

    #[test]
    fn knobs_get_a_line_each_and_a_cpus_governors_share_one() {
        use crate::document::KnobRecord;
        let record = |knob: &str, path: &str, restored: bool| KnobRecord {
            knob: knob.into(),
            path: path.into(),
            place: None,
            found: "schedutil".into(),
            set: [("a".to_string(), "performance".to_string())].into(),
            restored,
        };
        let empty = tempfile::tempdir().unwrap();
        let env = crate::env::capture_from(&crate::env::probe::Sys::at(empty.path()));
        let mut doc = crate::document::Document::new(
            env,
            crate::document::RunInfo::new(String::new(), 0, crate::document::Policy::default()),
            Vec::new(),
        );
        let gov = |n: u32| format!("/sys/devices/system/cpu/cpu{n}/cpufreq/scaling_governor");
        doc.run.knobs = vec![
            record("cpufreq_governor", &gov(0), true),
            record("cpufreq_governor", &gov(1), true),
            record("/x", "/x", false),
        ];
        let lines = knob_lines(&doc);
        assert_eq!(
            lines,
            [
                format!("knob cpufreq_governor ({} and 1 more): found schedutil; a=performance; restored", gov(0)),
                "knob /x: found schedutil; a=performance; NOT restored: write the value found back by hand".to_string(),
            ]
        );
        // The Markdown export and the HTML report list the same lines.
        let markdown = crate::report::markdown::run(&doc);
        assert!(
            markdown.contains(&format!("## Knobs\n\n- knob cpufreq_governor ({}", gov(0))),
            "{markdown}"
        );
        let html = crate::report::html::render(&[("r.json".into(), doc)], None).unwrap();
        assert!(
            html.contains("<h3>Knobs</h3>") && html.contains("NOT restored"),
            "{html}"
        );
    }
}
