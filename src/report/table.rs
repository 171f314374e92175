//! A run's sections for the terminal: tables as aligned columns, the
//! anchors' layouts and the counters as they are (the sections themselves
//! come from [`super::sections`]); and the benchmark list. Left out: the
//! comparison ([`super::compare`]) and plots.

use std::fmt::Write;

use super::align;
use super::sections::{self, Body, Table};
use crate::bench::select::in_default_suite;
use crate::bench::{BenchDef, ParamKind, Params, REGISTRY};
use crate::document::Document;

impl Table {
    /// Columns two spaces apart, numbers right-aligned.
    pub fn to_text(&self) -> String {
        align(&self.header, &self.numeric, &self.rows)
    }
}

/// The sections of a run as text. The results table opens the output; every
/// other section follows a blank line, so it stands apart from what was
/// printed before even when there is no results table.
pub fn render_run(doc: &Document) -> String {
    let mut out = String::new();
    for section in sections::of(doc) {
        if section.name != sections::RESULTS {
            out.push('\n');
        }
        match &section.body {
            Body::Table(t) => out.push_str(&t.to_text()),
            Body::Text(text) => out.push_str(text),
        }
    }
    out
}

/// `osbench list`: every family, its parameters, its default cases and its op.
pub fn list_benchmarks() -> String {
    let mut out = String::new();
    for def in REGISTRY {
        describe(&mut out, def);
    }
    out.push_str(
        "Select with BENCH (its default cases) or BENCH:key=value[,key=value...]: the default cases \
         that agree with the given values, or else the one case they name. Cases marked * form the \
         quick default suite (`osbench run` with no selector); `osbench run all` runs every default \
         case.\n",
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
            ParamKind::CountOrAll { min, max } => format!("all|{min}..={max}"),
        };
        let _ = writeln!(
            out,
            "    {:<8} {} (default {}; allowed {})",
            p.name, p.help, p.default, allowed
        );
    }
    let _ = writeln!(out, "  default cases and what one op is:");
    for fixed in def.default_cases() {
        let params = Params::new(def, &fixed);
        let _ = writeln!(
            out,
            "  {} {:<10} {}",
            if in_default_suite(def, &params) {
                '*'
            } else {
                ' '
            },
            (def.case_name)(&params),
            (def.op)(&params)
        );
    }
    out.push('\n');
}
