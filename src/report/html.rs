//! The HTML report: one self-contained file (inline CSS and SVG; no script,
//! no external URL) with, per document, the run, the results tables (the same
//! cells as the terminal's), the case parameters, the comparison of its
//! configurations, the plots and the environment; and, given several
//! documents, their comparison first; then, when asked for, cases' histories
//! with their change points.
//!
//! Every string that comes from outside osbench's source (labels, case names,
//! parameters, commands, environment values, file names) goes through
//! [`escape`]. The SVG comes from plotters, which escapes its text itself,
//! and, for profiled series, from inferno ([`super::flame`]), which does
//! too; its script is left out.
//! The run and the environment are rendered from their JSON form, so fields
//! added to the document later appear without a change here.

use std::fmt::Write;

use serde_json::Value;

mod profiles;

use super::case_history;
use super::decimals_for;
use super::layout::{Block, Body, Table};
use super::plot::{self, Plot};
use super::sections::{self, Section};
use crate::compare::Comparison;
use crate::compare::history::CaseHistory;
use crate::document::{ComparisonRecord, Document};
use crate::error::Result;
use crate::stats::changepoint::Detection;

/// `text` safe in HTML text and in quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
:root { color-scheme: light; }
body { font-family: 'DejaVu Sans', system-ui, sans-serif; color: #1d2430; background: #f6f7f9;
       margin: 0; line-height: 1.45; font-size: 15px; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 28px 48px; background: #fff;
       box-shadow: 0 0 0 1px #e3e6ea; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 21px; margin: 36px 0 10px; padding-bottom: 4px; border-bottom: 2px solid #4e79a7; }
h3 { font-size: 17px; margin: 24px 0 8px; color: #33414f; }
p.meta { color: #5a6673; margin: 0 0 12px; }
nav ul { margin: 6px 0 0; padding-left: 20px; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 13.5px; }
th, td { border: 1px solid #dde1e6; padding: 4px 8px; text-align: left; vertical-align: top; }
thead th { background: #eef1f5; }
.scroll td:last-child { min-width: 18em; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.kv th { background: #f3f5f8; font-weight: 600; white-space: nowrap; }
table.kv table.kv { margin: 0; }
.scroll { overflow-x: auto; }
pre { background: #f3f5f8; border: 1px solid #dde1e6; padding: 10px 12px; overflow-x: auto;
      font-size: 12.5px; line-height: 1.35; }
figure { margin: 14px 0 22px; padding: 8px; border: 1px solid #e3e6ea; background: #fff; }
figure svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: #5a6673; font-size: 13px; margin-top: 6px; }
.faster { color: #2e7d32; font-weight: 600; }
.slower { color: #c62828; font-weight: 600; }
.equivalent { color: #2f5f8f; font-weight: 600; }
.none { color: #8a949e; }
.warn { color: #a15c00; }
ul.warnings { font-size: 13.5px; padding-left: 20px; }
ul.warnings li { margin: 3px 0; }
";

/// The report of `docs` (source, document); `comparison` is theirs when
/// several are reported (the first document is its baseline).
pub fn render(docs: &[(String, Document)], comparison: Option<&Comparison>) -> Result<String> {
    render_with_history(docs, comparison, &[])
}

/// The report of `docs` and `comparison` as [`render`] makes it, with a
/// History section for `histories` (cases' stored runs and their change
/// points) after the comparison.
pub fn render_with_history(
    docs: &[(String, Document)],
    comparison: Option<&Comparison>,
    histories: &[CaseHistory],
) -> Result<String> {
    let names: Vec<String> = docs
        .iter()
        .map(|(source, doc)| doc_name(source, doc))
        .chain(
            histories
                .iter()
                .map(|h| format!("history of {}", case_history::title(h))),
        )
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>osbench report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        escape(&names.join(", "))
    );
    let _ = writeln!(out, "<h1>osbench report</h1>");
    let mut counts = Vec::new();
    if !docs.is_empty() || histories.is_empty() {
        counts.push(format!(
            "{} document{}",
            docs.len(),
            if docs.len() == 1 { "" } else { "s" }
        ));
    }
    match histories.len() {
        0 => {}
        1 => counts.push("1 case history".into()),
        n => counts.push(format!("{n} case histories")),
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} · written by osbench {}</p>",
        counts.join(" · "),
        escape(env!("CARGO_PKG_VERSION"))
    );
    if docs.len() + usize::from(!histories.is_empty()) > 1 || comparison.is_some() {
        out.push_str("<nav><ul>\n");
        if comparison.is_some() {
            out.push_str("<li><a href=\"#comparison\">Comparison</a></li>\n");
        }
        if !histories.is_empty() {
            out.push_str("<li><a href=\"#history\">History</a></li>\n");
        }
        for (i, name) in names.iter().take(docs.len()).enumerate() {
            let _ = writeln!(out, "<li><a href=\"#doc-{i}\">{}</a></li>", escape(name));
        }
        out.push_str("</ul></nav>\n");
    }
    if let Some(c) = comparison {
        comparison_section(&mut out, c, docs)?;
    }
    if !histories.is_empty() {
        history_section(&mut out, histories)?;
    }
    for (i, ((source, doc), name)) in docs.iter().zip(&names).enumerate() {
        document_section(&mut out, i, source, doc, name)?;
    }
    out.push_str("</main>\n</body>\n</html>\n");
    Ok(out)
}

/// Each case history: its plot, its change points with their evidence, what
/// the detection concluded, and the runs (folded).
fn history_section(out: &mut String, histories: &[CaseHistory]) -> Result<()> {
    out.push_str("<section id=\"history\">\n<h2>History</h2>\n");
    for (i, h) in histories.iter().enumerate() {
        let _ = writeln!(
            out,
            "<h3>{}</h3>\n<p class=\"meta\">{}</p>",
            escape(&case_history::title(h)),
            escape(&case_history::span(h))
        );
        let plot = plot::history_plot(h)?;
        figure(out, &format!("history-{i}"), &plot);
        if let Some(Detection::Tested(c)) = &h.detection {
            let _ = writeln!(
                out,
                "<p>Change points by {}.</p>",
                escape(&case_history::method(c))
            );
        }
        if let Some(t) = case_history::changes_table(h) {
            table_html(out, &t);
        }
        if let Some(conclusion) = case_history::conclusion(h) {
            let _ = writeln!(out, "<p><strong>{}</strong></p>", escape(&conclusion));
        }
        for drift in case_history::drift_sentences(h) {
            let _ = writeln!(out, "<p class=\"drift\">{}</p>", escape(&drift));
        }
        out.push_str("<details><summary>The runs, oldest first</summary>\n");
        table_html(out, &case_history::runs_table(h));
        out.push_str("</details>\n");
    }
    out.push_str("</section>\n");
    Ok(())
}

/// What a document is called: its label, else where it came from.
fn doc_name(source: &str, doc: &Document) -> String {
    doc.run.label.clone().unwrap_or_else(|| source.to_string())
}

fn document_section(
    out: &mut String,
    i: usize,
    source: &str,
    doc: &Document,
    name: &str,
) -> Result<()> {
    let _ = writeln!(
        out,
        "<section id=\"doc-{i}\">\n<h2>Run: {}</h2>",
        escape(name)
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} · {} → {} · {} series{}</p>",
        escape(source),
        escape(&doc.run.started),
        escape(&doc.run.finished),
        doc.series.len(),
        match (&doc.run.complete, &doc.run.stopped_because) {
            (true, _) => String::new(),
            (false, why) => format!(
                " · <span class=\"warn\">stopped early: {}</span>",
                escape(why.as_deref().unwrap_or("reason not recorded"))
            ),
        }
    );

    results_html(out, doc);
    if !doc.comparisons.is_empty() {
        out.push_str("<h3>Compared within the run</h3>\n");
        records_table(out, &doc.comparisons);
    }
    let knobs = super::compare::knob_lines(doc);
    if !knobs.is_empty() {
        out.push_str("<h3>Knobs</h3>\n<ul>\n");
        for line in &knobs {
            let _ = writeln!(out, "<li>{}</li>", escape(line));
        }
        out.push_str("</ul>\n");
    }

    let plots = plot::document_plots(doc)?;
    if !plots.is_empty() {
        out.push_str("<h3>Plots</h3>\n");
        for p in &plots {
            figure(out, &format!("doc-{i}-{}", p.name), p);
        }
    }
    profiles::document(out, i, doc);

    cases_table(out, doc);
    warnings_html(out, doc);
    settings_html(out, source, doc);
    out.push_str("</section>\n");
    Ok(())
}

/// The run's sections: its tables under "Results", then the anchors'
/// layouts and the counters as preformatted text, then what `osbench time`
/// prints per command.
fn results_html(out: &mut String, doc: &Document) {
    out.push_str("<h3>Results</h3>\n");
    let (tables, texts): (Vec<Section>, Vec<Section>) = sections::of(doc)
        .into_iter()
        .partition(|s| matches!(s.body, Body::Table(_)));
    if tables.is_empty() {
        out.push_str("<p class=\"none\">No case completed.</p>\n");
    }
    for section in tables.iter().chain(&texts) {
        match &section.body {
            Body::Table(t) => table_html(out, t),
            Body::Text(text) => pre(out, text),
            Body::Blocks(blocks) => {
                for block in blocks {
                    match block {
                        Block::Text(text) => {
                            let _ = writeln!(out, "<p>{}</p>", escape(text.trim_end()));
                        }
                        Block::Table(t) => table_html(out, t),
                    }
                }
            }
        }
    }
    if doc.run.time.is_some() {
        // `osbench time`: what the terminal shows per command.
        pre(out, &super::time::render(doc));
    }
}

fn pre(out: &mut String, text: &str) {
    let _ = writeln!(out, "<pre>{}</pre>", escape(text.trim_end()));
}

/// The run's warnings as the terminal's digest says them: each distinct
/// warning once, with the cases (and configurations) that gave it.
fn warnings_html(out: &mut String, doc: &Document) {
    let groups = super::digest::digest(&super::digest::case_warnings(&doc.series), "rounds");
    if groups.is_empty() {
        return;
    }
    out.push_str("<h3>Warnings</h3>\n<ul class=\"warnings\">\n");
    for line in super::digest::group_lines(&groups) {
        let _ = writeln!(out, "<li>{}</li>", escape(&line));
    }
    out.push_str("</ul>\n");
}

/// The run's settings and environment, from their JSON form.
fn settings_html(out: &mut String, source: &str, doc: &Document) {
    out.push_str("<h3>Run settings</h3>\n<div class=\"scroll\">");
    let mut run = serde_json::to_value(&doc.run).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut run {
        map.insert("source".into(), Value::String(source.to_string()));
        map.insert(
            "tool".into(),
            Value::String(format!("{} {}", doc.tool.name, doc.tool.version)),
        );
        map.insert("schema".into(), Value::String(doc.schema.clone()));
    }
    object_html(
        out,
        &run,
        &[
            "label",
            "source",
            "started",
            "finished",
            "complete",
            "stopped_because",
            "seed",
            "configs",
            "schedule",
            "stopped_by",
            "policy",
            "order",
        ],
    );
    out.push_str("</div>\n<h3>Environment</h3>\n<div class=\"scroll\">");
    object_html(
        out,
        &serde_json::to_value(&doc.env).unwrap_or(Value::Null),
        &[
            "kernel",
            "kernel_version",
            "arch",
            "hostname",
            "cpu_model",
            "cpus",
            "cpus_allowed",
        ],
    );
    out.push_str("</div>\n");
}

/// A table: header cells, then rows; numeric columns right-aligned.
fn table_html(out: &mut String, t: &Table) {
    out.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for h in &t.header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for (cell, numeric) in row.iter().zip(&t.numeric) {
            let class = if *numeric { " class=\"num\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// Each series' parameters, placement, what one op is compared with (its anchor).
fn cases_table(out: &mut String, doc: &Document) {
    if doc.series.is_empty() {
        return;
    }
    let rows = doc
        .series
        .iter()
        .map(|s| {
            let params: Vec<String> = s
                .params
                .iter()
                .map(|(k, v)| format!("{k}={}", scalar_text(v)))
                .collect();
            let cpus: Vec<String> = s.cpus.iter().map(usize::to_string).collect();
            let placement = if cpus.is_empty() {
                s.pin.to_string()
            } else {
                format!("{} (CPU {})", s.pin, cpus.join(", "))
            };
            vec![
                s.key.bench.clone(),
                s.key.case.clone(),
                s.key.config.clone(),
                params.join(", "),
                placement,
                s.anchor.clone(),
            ]
        })
        .collect();
    out.push_str("<h3>Cases</h3>\n");
    table_html(
        out,
        &Table {
            header: vec![
                "bench",
                "case",
                "config",
                "parameters",
                "placement",
                "anchor",
            ],
            numeric: vec![false; 6],
            rows,
            cases: Vec::new(),
        },
    );
}

/// A ratio, to three decimals as the terminal shows it.
fn fmt_ratio(x: f64) -> String {
    format!("{x:.3}")
}

/// A verdict's words in a cell whose class is its value (for the colour).
fn verdict_cell(verdict: &str, words: &str) -> String {
    format!("<td class=\"{}\">{}</td>", escape(verdict), escape(words))
}

/// The comparisons written into a document (its configurations).
fn records_table(out: &mut String, records: &[ComparisonRecord]) {
    out.push_str(
        "<div class=\"scroll\"><table>\n<thead><tr><th>bench</th><th>case</th><th>candidate vs baseline</th>\
         <th>ratio</th><th>CI of ratio (95%, Holm-adjusted)</th><th>change</th><th>p (Holm)</th><th>verdict</th></tr></thead>\n<tbody>\n",
    );
    for r in records {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{} vs {}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{} – {}</td><td class=\"num\">{:+.1}%</td><td class=\"num\">{}</td>{}</tr>",
            escape(&r.bench),
            escape(&r.case),
            escape(&r.candidate),
            escape(&r.baseline),
            fmt_ratio(r.ratio),
            fmt_ratio(r.ci_low),
            fmt_ratio(r.ci_high),
            (r.ratio - 1.0) * 100.0,
            super::compare::fmt_p(r.p_value),
            verdict_cell(r.verdict.as_str(), r.words())
        );
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// Several documents compared: who is who, the changes with each side's
/// median, the method, environment differences and cases not compared,
/// then where the time went, from the profiles of `docs` (the compared
/// documents, baseline first), when they have any.
fn comparison_section(out: &mut String, c: &Comparison, docs: &[(String, Document)]) -> Result<()> {
    out.push_str("<section id=\"comparison\">\n<h2>Comparison</h2>\n<table class=\"kv\">\n");
    let letters: Vec<String> = (0..c.labels.len()).map(super::compare::letter).collect();
    for (i, (l, label)) in letters.iter().zip(&c.labels).enumerate() {
        let _ = writeln!(
            out,
            "<tr><th>{l}</th><td>{}{}</td></tr>",
            escape(label),
            if i == 0 { " (baseline)" } else { "" }
        );
    }
    out.push_str("</table>\n<div class=\"scroll\"><table>\n<thead><tr><th>case</th><th>unit</th>");
    for l in &letters {
        let _ = write!(out, "<th>{l}: {} [95% CI]</th>", c.centre);
    }
    out.push_str("<th>vs A</th><th>ratio [CI: 95%, Holm-adjusted]</th><th>change</th><th>p (Holm)</th><th>verdict</th></tr></thead>\n<tbody>\n");
    for row in &c.rows {
        let case = row.key.to_string();
        let d = decimals_for(row.summaries[0].median);
        let medians: String = row
            .summaries
            .iter()
            .map(|s| {
                format!(
                    "<td class=\"num\">{} [{} – {}]</td>",
                    super::fmt_fixed(s.median, d),
                    super::fmt_fixed(s.ci_low, d),
                    super::fmt_fixed(s.ci_high, d)
                )
            })
            .collect();
        for (k, (l, ch)) in letters[1..].iter().zip(&row.changes).enumerate() {
            let (lo, hi) = ch.judged();
            // No spread between replicates known: a ratio without an interval, as the text says.
            let interval = if lo == hi {
                "[no interval]".to_string()
            } else {
                format!("[{} – {}]", fmt_ratio(lo), fmt_ratio(hi))
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td>{medians}<td>{l}</td><td class=\"num\">{} {interval}</td>\
                 <td class=\"num\">{:+.1}%</td><td class=\"num\">{}</td>{}</tr>",
                escape(&case),
                escape(row.unit.symbol()),
                fmt_ratio(ch.ci.ratio),
                (ch.ci.ratio - 1.0) * 100.0,
                super::compare::fmt_p(ch.p_adjusted),
                verdict_cell(ch.verdict.as_str(), &c.verdict_words(k, ch))
            );
        }
    }
    out.push_str("</tbody>\n</table></div>\n");
    let _ = writeln!(
        out,
        "<p class=\"meta\">{}</p>",
        escape(&super::compare::method_line(c))
    );
    findings_html(out, c);
    loads_html(out, c);
    env_diff_html(out, c, &letters);
    missing_html(out, c);
    let (bars, x_desc) = plot::comparison_bars(c);
    if let Some(p) = plot::comparison_plot(
        &bars,
        "Change against the baseline A (95% intervals, Holm-adjusted)",
        &x_desc,
    )? {
        figure(out, "comparison-plot", &p);
    }
    profiles::comparison(out, c, docs);
    out.push_str("</section>\n");
    Ok(())
}

/// What each side of each case ran beside (background loads), where any did.
fn loads_html(out: &mut String, c: &Comparison) {
    let found = super::compare::load_findings(c);
    if found.is_empty() {
        return;
    }
    out.push_str("<h3>Background loads</h3>\n<ul>\n");
    for (case, words) in found {
        let _ = writeln!(
            out,
            "<li>{}: {}</li>",
            escape(&case),
            escape(&words.join("; "))
        );
    }
    out.push_str("</ul>\n");
}

/// The sides' differing conditions (other processes busy on one), what the
/// drift sentinels saw of the machine's own speed, and the kernel
/// warnings and oopses a later side's log has that A's has not.
fn findings_html(out: &mut String, c: &Comparison) {
    for (title, findings) in [
        ("Conditions", &c.conditions),
        ("Drift", &c.drift),
        ("Kernel log", &c.kernel_log),
    ] {
        if !findings.is_empty() {
            let _ = writeln!(out, "<h3>{title}</h3>\n<ul class=\"warnings\">");
            for finding in findings {
                let _ = writeln!(out, "<li class=\"warn\">{}</li>", escape(finding));
            }
            out.push_str("</ul>\n");
        }
    }
}

/// The environment values that differ between the documents.
fn env_diff_html(out: &mut String, c: &Comparison, letters: &[String]) {
    if !c.env_diff.is_empty() {
        out.push_str(
            "<h3>Environment differences</h3>\n<p class=\"meta\">Confounders unless they are the change being tested.</p>\n\
             <div class=\"scroll\"><table>\n<thead><tr><th>key</th>",
        );
        for l in letters {
            let _ = write!(out, "<th>{l}</th>");
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (key, values) in &c.env_diff {
            let _ = write!(out, "<tr><th>{}</th>", escape(key));
            for v in values {
                let _ = write!(out, "<td>{}</td>", escape(v));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
}

/// The cases some document lacks.
fn missing_html(out: &mut String, c: &Comparison) {
    if !c.missing.is_empty() {
        out.push_str("<h3>Not in every document (not compared)</h3>\n<ul>\n");
        for (case, lacking) in &c.missing {
            let _ = writeln!(
                out,
                "<li>{}: missing from {}</li>",
                escape(case),
                escape(&lacking.join(", "))
            );
        }
        out.push_str("</ul>\n");
    }
    if !c.not_compared.is_empty() {
        out.push_str("<h3>Not compared</h3>\n<ul>\n");
        for (case, why) in &c.not_compared {
            let _ = writeln!(out, "<li>{}: {}</li>", escape(case), escape(why));
        }
        out.push_str("</ul>\n");
    }
}

/// A plot inline, as element `id`: its SVG (without the XML namespace,
/// which HTML implies) and caption.
fn figure(out: &mut String, id: &str, p: &Plot) {
    let svg = p
        .svg
        .replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let _ = writeln!(
        out,
        "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>",
        escape(id),
        svg.trim(),
        escape(&p.note)
    );
}

/// An object's keys: `first` (those present) in that order, then the others
/// alphabetically; anything else as [`value_html`] renders it.
fn object_html(out: &mut String, v: &Value, first: &[&str]) {
    let Value::Object(map) = v else {
        return value_html(out, v);
    };
    let mut entries: Vec<(&String, &Value)> =
        first.iter().filter_map(|k| map.get_key_value(*k)).collect();
    entries.extend(map.iter().filter(|(k, _)| !first.contains(&k.as_str())));
    entries_html(out, entries);
}

fn entries_html<'a>(out: &mut String, entries: impl IntoIterator<Item = (&'a String, &'a Value)>) {
    out.push_str("<table class=\"kv\">\n");
    for (key, value) in entries {
        let _ = write!(out, "<tr><th>{}</th><td>", escape(key));
        value_html(out, value);
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>");
}

/// Any JSON value: objects as key/value tables (nested as deep as they go),
/// lists of plain values joined by commas, other lists item by item.
fn value_html(out: &mut String, v: &Value) {
    match v {
        Value::Object(map) if map.is_empty() => out.push_str("<span class=\"none\">none</span>"),
        Value::Object(map) => entries_html(out, map),
        Value::Array(items) if items.is_empty() => out.push_str("<span class=\"none\">none</span>"),
        Value::Array(items) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let texts: Vec<String> = items.iter().map(scalar_text).collect();
            out.push_str(&escape(&texts.join(", ")));
        }
        Value::Array(items) => {
            out.push_str("<ol>");
            for item in items {
                out.push_str("<li>");
                value_html(out, item);
                out.push_str("</li>");
            }
            out.push_str("</ol>");
        }
        Value::Null => out.push_str("<span class=\"none\">null</span>"),
        scalar => out.push_str(&escape(&scalar_text(scalar))),
    }
}

fn scalar_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    fn labelled(label: &str) -> Document {
        let mut doc = fixture();
        doc.run.label = Some(label.into());
        doc
    }

    #[test]
    fn drift_and_kernel_log_findings_get_a_section_each() {
        let mut c = crate::report::markdown::tests::fixed_comparison();
        let mut page = String::new();
        findings_html(&mut page, &c);
        assert_eq!(page, "", "nothing to say, no section");
        c.drift = vec!["B's sentinel spin is 12% slower than A's".into()];
        c.kernel_log = vec!["B's log has 1 oops A's has not: <Oops>".into()];
        findings_html(&mut page, &c);
        assert_eq!(
            page,
            "<h3>Drift</h3>\n<ul class=\"warnings\">\n<li class=\"warn\">B&#39;s sentinel spin is 12% \
             slower than A&#39;s</li>\n</ul>\n<h3>Kernel log</h3>\n<ul class=\"warnings\">\n<li \
             class=\"warn\">B&#39;s log has 1 oops A&#39;s has not: &lt;Oops&gt;</li>\n</ul>\n"
        );
    }

    #[test]
    fn differing_conditions_get_a_section_and_qualify_the_verdict_cell() {
        let mut c = crate::report::markdown::tests::fixed_comparison();
        c.conditions = vec!["the runs' conditions differ: B was measured while <busy>".into()];
        let mut page = String::new();
        findings_html(&mut page, &c);
        assert!(
            page.starts_with(
                "<h3>Conditions</h3>\n<ul class=\"warnings\">\n<li class=\"warn\">the \
                 runs&#39; conditions differ: B was measured while &lt;busy&gt;</li>"
            ),
            "{page}"
        );
        c.rows[0].changes[0].verdict = crate::stats::verdict::Verdict::Slower;
        c.differing_conditions = vec![Some("B measured while x; A quiet".into())];
        let mut section = String::new();
        comparison_section(&mut section, &c, &[]).unwrap();
        assert!(section.contains("re-run both quiet"), "{section}");
    }

    #[test]
    fn a_case_history_gets_its_plot_change_points_and_runs() {
        use crate::compare::history::case_histories;
        use crate::compare::history::tests::stepped;
        use crate::stats::changepoint::Options;
        let mut runs = stepped();
        for r in &mut runs {
            r.hostname = "<b>vm</b>".into();
        }
        let histories = case_histories("syscall", "null", runs, Some(&Options::default()));
        let page = render_with_history(&[], None, &histories).unwrap();
        assert!(
            page.contains("<p class=\"meta\">1 case history · written by"),
            "{page}"
        );
        let section = &page[page.find("<section id=\"history\">").unwrap()..];
        for text in [
            "<h3>syscall null on &lt;b&gt;vm&lt;/b&gt;</h3>",
            "<figure id=\"history-0\">",
            "Change points by E-divisive means (Matteson &amp; James 2014)",
            "<td class=\"num\">#13</td>",
            "<td class=\"num\">+10.0%</td>",
            "<p><strong>1 change point; the strongest split left",
            "<details><summary>The runs, oldest first</summary>",
        ] {
            assert!(section.contains(text), "lacks {text}");
        }
        assert!(!page.contains("<b>vm"), "the host is escaped");
        // 20 runs in the folded table, after its header row.
        let runs = &section[section.find("<details>").unwrap()..];
        assert_eq!(runs.matches("<tr>").count(), 21);
        // With documents too, the history comes before them and both are in the menu.
        let page = render_with_history(&[("f.json".into(), fixture())], None, &histories).unwrap();
        let (nav, history, doc) = (
            page.find("<a href=\"#history\">").unwrap(),
            page.find("<section id=\"history\">").unwrap(),
            page.find("<section id=\"doc-0\">").unwrap(),
        );
        assert!(nav < history && history < doc);
        assert!(page.contains("1 document · 1 case history"));
    }

    #[test]
    fn a_script_label_is_text_not_markup() {
        let doc = labelled("<script>alert(1)</script>");
        let html = render(&[("run.json".into(), doc)], None).unwrap();
        assert!(!html.to_lowercase().contains("<script"), "{html}");
        assert!(html.contains("<h2>Run: &lt;script&gt;alert(1)&lt;/script&gt;</h2>"));
        assert!(
            html.contains("<title>osbench report: &lt;script&gt;alert(1)&lt;/script&gt;</title>")
        );
    }

    #[test]
    fn every_string_from_outside_is_escaped() {
        let mark = "<i>\"x'&";
        let mut doc = labelled(mark);
        let s = &mut doc.series[0];
        s.key.case = mark.into();
        s.op = mark.into();
        s.anchor = mark.into();
        s.noise.push(mark.into());
        s.warnings.push(mark.into());
        s.params.insert("key".into(), Value::String(mark.into()));
        doc.series[5].key.case = mark.into(); // a latency distribution
        doc.env.hostname = mark.into();
        doc.env.cpu_model = mark.into();
        doc.run.configs[0].setup = Some(mark.into());
        doc.comparisons[0].candidate = mark.into();
        let html = render(&[(mark.into(), doc)], None).unwrap();
        assert!(!html.contains("<i>"), "{html}");
        // Title, heading, source twice, label, results and cases tables, op,
        // anchor, noise, warning, parameter, distribution table, ctx table,
        // host, CPU, set-up, comparison; the SVG text is plotters' escaping.
        let escaped = "&lt;i&gt;&quot;x&#39;&amp;";
        assert!(
            html.matches(escaped).count() >= 18,
            "{}",
            html.matches(escaped).count()
        );
        assert!(html.contains("&lt;i&gt;&quot;x&apos;&amp;"), "plot text");
    }

    #[test]
    fn the_page_is_self_contained_and_has_every_section() {
        let html = render(&[("run.json".into(), fixture())], None).unwrap();
        for needle in [
            "<h3>Results</h3>",
            "<th>95% CI of median</th>",
            "<th>p99.9</th>",
            "Context switching - times in microseconds",
            "<h3>Compared within the run</h3>",
            "<td class=\"no-change\">no-change</td>",
            "<h3>Plots</h3>",
            "<figure id=\"doc-0-ctx-size\">",
            "<figure id=\"doc-0-latency-cdf-wakeup\">",
            "<figure id=\"doc-0-comparison\">",
            "<figure id=\"doc-0-samples-ctx\">",
            "<h3>Cases</h3>",
            "mode=processes, procs=2, size=0",
            "<h3>Warnings</h3>",
            "<h3>Run settings</h3>",
            "<th>seed</th><td>3588817784324363</td>",
            "<h3>Environment</h3>",
            "<th>kernel</th>",
        ] {
            assert!(html.contains(needle), "no {needle}");
        }
        assert_eq!(html.matches("<svg").count(), 5);
        for outside in [
            "http:", "https:", "<script", "<link", " src=", "url(", "@import",
        ] {
            assert!(!html.contains(outside), "{outside}");
        }
    }

    #[test]
    fn counters_per_op_are_shown_when_counted() {
        let mut doc = fixture();
        let per_op = crate::stats::summarize(&[1.0, 1.0]).unwrap();
        doc.series[0]
            .counters
            .insert("voluntary_switches".into(), per_op);
        let html = render(&[("run.json".into(), doc)], None).unwrap();
        assert!(html.contains("Counters per op"), "no counters section");
    }

    #[test]
    fn several_documents_are_compared_first() {
        let mut after = fixture();
        for s in &mut after.series {
            // Far beyond this fixture's round-to-round spread (its samples are bimodal).
            s.samples.iter_mut().for_each(|v| *v *= 3.0);
        }
        let mut before = fixture();
        crate::compare::split_into_invocations(&mut before, 3);
        crate::compare::split_into_invocations(&mut after, 3);
        let docs = [
            ("before.json".to_string(), before),
            ("after.json".to_string(), after),
        ];
        let options = crate::compare::Options {
            resamples: 500,
            ..Default::default()
        };
        let c = crate::compare::compare(&docs, options).unwrap();
        let html = render(&docs, Some(&c)).unwrap();
        let at = |needle: &str| html.find(needle).unwrap_or_else(|| panic!("no {needle}"));
        assert!(at("<section id=\"comparison\">") < at("<section id=\"doc-0\">"));
        assert!(at("<section id=\"doc-0\">") < at("<section id=\"doc-1\">"));
        assert!(html.contains("<tr><th>A</th><td>before.json (baseline)</td></tr>"));
        assert!(html.contains("<td class=\"slower\">slower</td>"));
        assert!(html.contains("<figure id=\"comparison-plot\">"));
        // Its bars name each case with its configuration.
        assert!(html.contains("syscall null [b]: slower"), "{html}");
        assert!(html.contains("<a href=\"#doc-1\">after.json</a>"));
    }

    #[test]
    fn escapes_every_markup_character() {
        assert_eq!(escape("plain µs 2p/16K"), "plain µs 2p/16K");
        assert_eq!(
            escape(r#"<a href="x" onclick='y'>&amp;</a>"#),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;"
        );
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
    }

    #[test]
    fn json_values_render_nested_and_escaped() {
        let v = serde_json::json!({
            "kernel": "6.1 <b>",
            "cpus": 2,
            "flags": ["a&b", 3, true],
            "vulnerabilities": { "spectre_v2": "Mitigation: <x>" },
            "nothing": null,
            "empty": [],
        });
        let mut out = String::new();
        value_html(&mut out, &v);
        assert!(
            out.contains("<tr><th>kernel</th><td>6.1 &lt;b&gt;</td></tr>"),
            "{out}"
        );
        assert!(out.contains("<td>2</td>"), "{out}");
        assert!(out.contains("a&amp;b, 3, true"), "{out}");
        assert!(
            out.contains("<th>spectre_v2</th><td>Mitigation: &lt;x&gt;</td>"),
            "{out}"
        );
        assert!(out.contains("<span class=\"none\">null</span>"), "{out}");
        assert!(!out.contains("<b>") && !out.contains("<x>"), "{out}");
    }
}
