//! Markdown (GitHub-flavoured pipe tables) of a run and of a comparison, for
//! pasting into mails, issues and pull requests (hyperfine's `--export-markdown`).
//! A run's sections ([`super::sections`]) become pipe tables or fenced text
//! under their titles; text from outside (labels, configuration names,
//! environment values) is escaped so it stays one cell and renders as
//! written. Left out: plots (see the HTML report).

use std::fmt::Write;

use super::compare::{fmt_p, letter};
use super::decimals_for;
use super::explain;
use super::layout::{Block, Body, Table};
use super::sections;
use crate::compare::Comparison;
use crate::document::{ComparisonRecord, DEFAULT_CONFIG, Document, Explanation};
use crate::stats::differential::Differential;

/// The run as Markdown: what was run, its sections (results, latency
/// distributions, the anchors' layouts, counters), the comparisons of its
/// configurations, the noise audit, the environment.
pub fn run(doc: &Document) -> String {
    let mut out = run_header(doc);
    // A configuration column only when there are configurations.
    let configs = doc.series.iter().any(|s| s.key.config != DEFAULT_CONFIG);
    for section in sections::of(doc) {
        let _ = write!(out, "\n## {}\n\n", section.title);
        match section.body {
            Body::Table(t) => out.push_str(&section_table(t, configs)),
            Body::Text(text) => {
                let _ = write!(out, "```\n{text}```\n");
            }
            Body::Blocks(blocks) => {
                for (i, block) in blocks.into_iter().enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    match block {
                        Block::Text(text) => out.push_str(&escape_lines(&text)),
                        Block::Table(t) => out.push_str(&section_table(t, configs)),
                    }
                }
            }
        }
    }
    if !doc.comparisons.is_empty() {
        out.push_str("\n## Comparisons of the configurations\n\n");
        out.push_str(&records(&doc.comparisons));
    }
    let knobs = super::compare::knob_lines(doc);
    if !knobs.is_empty() {
        out.push_str("\n## Knobs\n\n");
        for line in &knobs {
            let _ = writeln!(out, "- {}", escape(line));
        }
    }
    if !doc.run.audit.is_empty() {
        out.push_str("\n## Noise audit\n\n");
        for finding in &doc.run.audit {
            let _ = writeln!(out, "- {}", escape(finding));
        }
    }
    let warnings = super::digest::digest(&super::digest::case_warnings(&doc.series), "rounds");
    if !warnings.is_empty() {
        out.push_str("\n## Warnings\n\n");
        for line in super::digest::group_lines(&warnings) {
            let _ = writeln!(out, "- {}", escape(&line));
        }
    }
    out.push_str("\n## Environment\n\n");
    let env_rows: Vec<Vec<String>> = crate::env::flatten(&doc.env)
        .iter()
        .map(|(k, v)| vec![escape(k), escape(v)])
        .collect();
    out.push_str(&table(
        &["key".into(), "value".into()],
        &[false, false],
        &env_rows,
    ));
    out
}

/// The title and what was run: when, where, with which policy and configurations.
fn run_header(doc: &Document) -> String {
    let mut out = String::new();
    let title = doc.run.label.as_deref().map_or_else(
        || "osbench results".to_string(),
        |l| format!("osbench results: {}", escape(l)),
    );
    let _ = writeln!(out, "# {title}\n");
    let r = &doc.run;
    let _ = writeln!(
        out,
        "- Run: {} to {}, {}",
        r.started,
        r.finished,
        match &r.stopped_because {
            Some(why) if !r.complete => format!("stopped early ({})", escape(why)),
            _ if !r.complete => "stopped early".to_string(),
            _ => "complete".to_string(),
        }
    );
    let _ = writeln!(
        out,
        "- Host: {} ({}, Linux {}), osbench {}",
        escape(&doc.env.hostname),
        escape(&doc.env.arch),
        escape(&doc.env.kernel),
        escape(&doc.tool.version)
    );
    let _ = match &r.time {
        // A timed command has rounds and warm-up runs, not samples of a duration.
        Some(time) => writeln!(
            out,
            "- Policy: {} rounds, each command once a round in a seeded random order, after {} \
             warm-up round{}, seed {}",
            r.policy.samples,
            time.warmup,
            if time.warmup == 1 { "" } else { "s" },
            r.seed
        ),
        None => writeln!(
            out,
            "- Policy: {} samples of {} ms per case, {} ms warm-up, seed {}",
            r.policy.samples,
            r.policy.sample_time_ns as f64 / 1e6,
            r.policy.warmup_ns as f64 / 1e6,
            r.seed
        ),
    };
    if !r.configs.is_empty() {
        let names: Vec<String> = r.configs.iter().map(|c| escape(&c.name)).collect();
        let _ = writeln!(
            out,
            "- Configurations: {} (the first is the baseline), {} rounds",
            names.join(", "),
            r.schedule.len()
        );
    }
    out
}

/// A section's table with its cells escaped. When its rows are cases, the
/// first column is "bench" and, if `configs`, the configuration gets its own
/// column instead of the case's brackets.
fn section_table(t: Table, configs: bool) -> String {
    let Table {
        header,
        mut numeric,
        rows,
        cases,
    } = t;
    let mut header: Vec<String> = header.iter().map(|h| h.to_string()).collect();
    let mut rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape(c)).collect())
        .collect();
    if !cases.is_empty() {
        header[0] = "bench".into();
    }
    if configs && !cases.is_empty() {
        header.insert(2, "config".into());
        numeric.insert(2, false);
        for (row, (case, config)) in rows.iter_mut().zip(&cases) {
            row[1] = escape(case);
            row.insert(2, escape(config));
        }
    }
    table(&header, &numeric, &rows)
}

/// The comparison records of a document (its configurations against the first).
fn records(records: &[ComparisonRecord]) -> String {
    let header: Vec<String> = [
        "bench",
        "case",
        "baseline",
        "candidate",
        "ratio",
        "CI of ratio (95%, Holm-adj.)",
        "change",
        "p (Holm)",
        "verdict",
    ]
    .map(String::from)
    .to_vec();
    let numeric = [false, false, false, false, true, true, true, true, false];
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                escape(&r.bench),
                escape(&r.case),
                escape(&r.baseline),
                escape(&r.candidate),
                format!("{:.3}", r.ratio),
                format!("{:.3} – {:.3}", r.ci_low, r.ci_high),
                format!("{:+.1}%", (r.ratio - 1.0) * 100.0),
                fmt_p(r.p_value),
                escape(r.words()),
            ]
        })
        .collect();
    table(&header, &numeric, &rows)
}

/// A comparison of documents as Markdown: which is which, the environment
/// differences, one row per case and candidate, the method, what was missing.
pub fn comparison(c: &Comparison) -> String {
    let mut out = String::from("# osbench comparison\n\n");
    let letters: Vec<String> = (0..c.labels.len()).map(letter).collect();
    for (l, label) in letters.iter().zip(&c.labels) {
        let _ = writeln!(
            out,
            "- {l} = {}{}",
            escape(label),
            if l == "A" { " (baseline)" } else { "" }
        );
    }
    if !c.env_diff.is_empty() {
        out.push_str(&env_differences(c, &letters));
    }
    out.push_str("\n## Changes\n\n");
    out.push_str(&changes(c, &letters));
    let _ = writeln!(out, "\n{}", escape(&super::compare::method_line(c)));
    for (title, findings) in [
        ("Conditions", &c.conditions),
        ("Drift", &c.drift),
        ("Kernel log", &c.kernel_log),
    ] {
        if !findings.is_empty() {
            let _ = writeln!(out, "\n{title}:\n");
            for finding in findings {
                let _ = writeln!(out, "- {}", escape(finding));
            }
        }
    }
    let loads = super::compare::load_findings(c);
    if !loads.is_empty() {
        out.push_str("\nBackground loads:\n\n");
        for (case, words) in loads {
            let _ = writeln!(out, "- {}: {}", escape(&case), escape(&words.join("; ")));
        }
    }
    if !c.missing.is_empty() {
        out.push_str("\nNot in every document (not compared):\n\n");
        for (case, lacking) in &c.missing {
            let lacking: Vec<String> = lacking.iter().map(|l| escape(l)).collect();
            let _ = writeln!(
                out,
                "- {}: missing from {}",
                escape(case),
                lacking.join(", ")
            );
        }
    }
    if !c.not_compared.is_empty() {
        out.push_str("\nNot compared:\n\n");
        for (case, why) in &c.not_compared {
            let _ = writeln!(out, "- {}: {}", escape(case), escape(why));
        }
    }
    out.push_str(&explanations(c));
    out
}

/// The environment values that differ between the documents, each a
/// declared factor or a possible confounder.
fn env_differences(c: &Comparison, letters: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## Environment differences\n\n{}\n",
        if c.factors.is_empty() {
            "No --factor declared: each is a possible confounder.".to_string()
        } else {
            let factors: Vec<String> = c.factors.iter().map(|f| escape(f)).collect();
            format!("Declared factor: {}.", factors.join(", "))
        }
    );
    let mut header = vec!["key".to_string(), "role".to_string()];
    header.extend(letters.iter().cloned());
    let numeric = vec![false; header.len()];
    let rows: Vec<Vec<String>> = c
        .env_diff
        .iter()
        .map(|(key, values)| {
            let role = if crate::env::is_factor(key, &c.factors) {
                "factor"
            } else {
                "confounder?"
            };
            let mut cells = vec![escape(key), role.to_string()];
            let (values, as_changes) = super::env_values(values);
            cells.extend(
                values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match as_changes && i > 0 {
                        true => format!("vs A: {}", escape(v)),
                        false => escape(v),
                    }),
            );
            cells
        })
        .collect();
    out.push_str(&table(&header, &numeric, &rows));
    out
}

/// One row per case and candidate: each side's median, the ratio, the change and the verdict.
fn changes(c: &Comparison, letters: &[String]) -> String {
    let mut header: Vec<String> = [
        "bench",
        "case",
        "config",
        "A: median [95% CI]",
        "candidate",
        "candidate: median [95% CI]",
        "ratio",
        "CI of ratio (95%, Holm-adj.)",
        "change",
        "p (Holm)",
        "verdict",
        "unit",
    ]
    .map(|h| h.replace("median", c.centre))
    .to_vec();
    let mut numeric = vec![
        false, false, false, true, false, true, true, true, true, true, false, false,
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for row in &c.rows {
        let d = decimals_for(row.summaries[0].median);
        let median = |i: usize| {
            let s = &row.summaries[i];
            let f = |x: f64| super::fmt_fixed(x, d);
            format!("{} [{} – {}]", f(s.median), f(s.ci_low), f(s.ci_high))
        };
        for (i, ch) in row.changes.iter().enumerate() {
            rows.push(vec![
                escape(&row.key.bench),
                escape(&row.key.case),
                escape(&row.key.config),
                median(0),
                letters[i + 1].clone(),
                median(i + 1),
                format!("{:.3}", ch.ci.ratio),
                match ch.judged() {
                    (lo, hi) if lo == hi => "no interval".to_string(),
                    (lo, hi) => format!("{lo:.3} – {hi:.3}"),
                },
                format!("{:+.1}%", (ch.ci.ratio - 1.0) * 100.0),
                fmt_p(ch.p_adjusted),
                escape(&c.verdict_words(i, ch)),
                escape(row.unit.symbol()),
            ]);
        }
    }
    // The configuration column only when some case has one.
    if c.rows.iter().all(|r| r.key.config == DEFAULT_CONFIG) {
        header.remove(2);
        numeric.remove(2);
        rows.iter_mut().for_each(|r| {
            r.remove(2);
        });
    }
    table(&header, &numeric, &rows)
}

/// A pipe table; `numeric` columns are right-aligned.
pub(super) fn table(header: &[String], numeric: &[bool], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|", header.join(" | "));
    for &n in numeric {
        out.push_str(if n { " ---: |" } else { " --- |" });
    }
    out.push('\n');
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
    out
}

/// Lines of prose, each escaped (as [`escape`]) and ending in a newline.
fn escape_lines(text: &str) -> String {
    text.lines().map(|l| format!("{}\n", escape(l))).collect()
}

/// `text` as one table cell that renders as written: `<`, `>` and `&` as
/// HTML entities (a backslash before `<` is no escape in Python-Markdown,
/// which shows it), pipes, other markup characters and backslashes escaped
/// with a backslash (CommonMark's and Python-Markdown's escapes), line
/// breaks turned into spaces.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '|' | '`' | '*' | '[' | ']' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// The explanations a comparison shows, as Markdown: per explained change
/// a title and a pipe table; nothing when none is shown.
pub(super) fn explanations(c: &Comparison) -> String {
    let mut out = String::new();
    for row in &c.rows {
        for k in 0..row.changes.len() {
            let Some(e) = c.explanation(row, k) else {
                continue;
            };
            let (a, b) = (letter(0), letter(k + 1));
            let case = escape(&row.key.to_string());
            let _ = writeln!(out, "\n### {case}: {b} vs {a}\n");
            match e {
                Explanation::NoProfile(missing) => {
                    for m in missing {
                        let name = explain::side_name(m, &a, &b);
                        let _ = writeln!(out, "- {name} {}", escape(&m.words()));
                    }
                }
                Explanation::Differential(d) => {
                    out.push_str(&differential_markdown(d, row.unit.symbol(), (&a, &b)));
                }
            }
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\n## Where the changes went\n{out}")
}

/// One differential as a Markdown table and its lines.
fn differential_markdown(d: &Differential, unit: &str, (a, b): (&str, &str)) -> String {
    let dec = explain::decimals(d);
    let header: Vec<String> = [
        "function".to_string(),
        format!("{a} ({unit}/op, self)"),
        format!("{b} ({unit}/op, self)"),
        format!("{b} − {a}"),
        "interval".to_string(),
        "share of change".to_string(),
        "mark".to_string(),
    ]
    .to_vec();
    let numeric = [false, true, true, true, true, true, false];
    let rows: Vec<Vec<String>> = d
        .rows
        .iter()
        .map(|r| {
            let t = &r.self_time;
            let interval = match (t.ci_low, t.ci_high) {
                (Some(lo), Some(hi)) => format!(
                    "{} – {} ({:.1}%)",
                    explain::signed(lo, dec),
                    explain::signed(hi, dec),
                    t.ci_level * 100.0
                ),
                _ => "–".to_string(),
            };
            vec![
                escape(&r.function),
                format!("{:.dec$}", t.baseline),
                format!("{:.dec$}", t.candidate),
                explain::signed(t.difference, dec),
                interval,
                explain::share_cell(r, d.measured_change),
                escape(&explain::mark(r)),
            ]
        })
        .collect();
    let mut out = String::from("\n");
    out.push_str(&table(&header, &numeric, &rows));
    out.push('\n');
    for line in explain::legend(d, unit, (a, b)) {
        let _ = writeln!(out, "- {}", escape(&line));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::compare::{CaseRow, Change, Options};
    use crate::stats::verdict::{Power, RatioCi, Verdict};

    /// A fixed comparison of two documents, one faster case, one missing case.
    pub(crate) fn fixed_comparison() -> Comparison {
        let (_, doc) = crate::store::fixture();
        let summary = |i: usize| doc.series[i].summary.clone();
        Comparison {
            labels: vec!["before.json".into(), "after, \"tuned\" | x".into()],
            rows: vec![CaseRow {
                key: crate::document::CaseKey::new(
                    "syscall",
                    "null",
                    crate::document::DEFAULT_CONFIG,
                ),
                unit: crate::document::Unit::Ns,
                bytes_per_op: None,
                summaries: vec![summary(0), summary(2)],
                changes: vec![Change {
                    ci: RatioCi {
                        ratio: 0.8994,
                        ci95: (0.8812, 0.9177),
                        ci90: (0.885, 0.914),
                    },
                    judged_level: 0.95,
                    df: 8.0,
                    p_value: 0.0286,
                    p_adjusted: 0.0286,
                    verdict: Verdict::Faster,
                    power: Power::rank_test(11, 11, 0.05),
                    replication: crate::document::Replication {
                        unit: crate::document::ReplicateUnit::Invocations,
                        baseline: 5,
                        candidate: 5,
                        prior_runs: None,
                    },
                    testable: true,
                    seconds_per_replicate: None,
                }],
                explanations: Vec::new(),
                loads: Vec::new(),
            }],
            missing: vec![("wakeup futex/threads".into(), vec!["before.json".into()])],
            not_compared: Vec::new(),
            env_diff: vec![
                (
                    "kernel".into(),
                    vec!["6.18.44-test".into(), "6.19.0-rc1".into()],
                ),
                ("cpus".into(), vec!["2".into(), "4".into()]),
            ],
            factors: vec!["kernel".into()],
            method: "Unpaired: ratios of medians".into(),
            centre: "median",
            options: Options::default(),
            drift: Vec::new(),
            kernel_log: Vec::new(),
            conditions: Vec::new(),
            differing_conditions: Vec::new(),
        }
    }

    /// `actual` equals the file `tests/data/NAME`; on a difference the
    /// message shows the new text (inspect it, then copy it to the file).
    pub(crate) fn assert_snapshot(name: &str, actual: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name);
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            actual == expected,
            "{} differs; the output is:\n{actual}",
            path.display()
        );
    }

    #[test]
    fn counters_appear_when_a_series_has_them() {
        let mut doc = crate::report::fixture();
        assert!(!run(&doc).contains("Counters per op"));
        let s = &mut doc.series[0];
        let per_op = crate::stats::summarize(&[2.0, 2.0, 2.0]).unwrap();
        s.counters.insert("voluntary_switches".into(), per_op);
        s.counters_unavailable
            .insert("cycles".into(), "no hardware PMU (ENOENT)".into());
        let text = run(&doc);
        assert!(text.contains("## Counters per op"), "{text}");
        // A pipe table, not a code block.
        assert!(
            text.contains("| bench | case | config | user | sys | sys % | unit | vol sw |"),
            "{text}"
        );
        let section = &text[text.find("## Counters per op").unwrap()..];
        assert!(!section.contains("```"), "{section}");
        assert!(
            text.contains("Not counted: cycles: no hardware PMU (ENOENT)"),
            "{text}"
        );
    }

    #[test]
    fn the_anchors_layouts_are_exported_too() {
        let mut doc = crate::report::fixture();
        let mut messaging = doc.series[0].clone();
        messaging.key.bench = "messaging".into();
        messaging.anchor = "hackbench -g 10 -l 100".into();
        doc.series.push(messaging);
        let text = run(&doc);
        assert!(text.contains("## lmbench: Context switching"), "{text}");
        assert!(
            text.contains("```\nContext switching - times in microseconds"),
            "{text}"
        );
        assert!(text.contains("hackbench -g 10 -l 100   Time: "), "{text}");
        // The same blocks as the terminal's, fenced.
        for section in sections::of(&doc) {
            if let Body::Text(block) = section.body {
                assert!(text.contains(&format!("```\n{block}```\n")), "{block}");
            }
        }
    }

    #[test]
    fn a_run_renders_as_its_snapshot() {
        assert_snapshot("small-run.md", &run(&crate::store::fixture().1));
    }

    #[test]
    fn a_comparison_renders_as_its_snapshot() {
        assert_snapshot("comparison.md", &comparison(&fixed_comparison()));
    }

    #[test]
    fn drift_and_kernel_log_findings_are_listed_as_the_terminal_says_them() {
        let mut c = fixed_comparison();
        c.drift = vec!["B's sentinel spin is 12% slower than A's".into()];
        c.kernel_log = vec!["B's log has 1 oops A's has not: Oops: 0002".into()];
        let text = comparison(&c);
        let drift = text.find("Drift:\n\n- B's sentinel spin is 12% slower than A's");
        let oops = text.find("Kernel log:\n\n- B's log has 1 oops A's has not: Oops: 0002");
        assert!(drift.is_some() && oops.is_some(), "{text}");
    }

    #[test]
    fn outside_text_stays_in_its_cell_and_renders_as_written() {
        assert_eq!(
            escape("a|b <script>alert(1)</script> `x` *y* [z] \\ &lt; line\nbreak"),
            "a\\|b &lt;script&gt;alert(1)&lt;/script&gt; \\`x\\` \\*y\\* \\[z\\] \\\\ &amp;lt; line break"
        );
        let mut doc = crate::store::fixture().1;
        doc.series[0].key.config = "evil | config\nname".into();
        let text = run(&doc);
        let line = text
            .lines()
            .find(|l| l.contains("evil"))
            .expect("the row is there");
        assert!(line.contains("| evil \\| config name |"), "{line}");
        // Every row of the results table has as many cells as its header.
        let pipes = |l: &str| l.replace("\\|", "").matches('|').count();
        let header = text
            .lines()
            .find(|l| l.starts_with("| bench | case | config | median"))
            .unwrap();
        assert_eq!(pipes(line), pipes(header));
    }
}
