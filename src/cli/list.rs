//! `osbench list`: the benchmark registry as text, every family with its
//! unit, its parameters (default, allowed values in
//! [`Notation::Short`](osbench::bench::Notation::Short)) and its default
//! cases (`*` marks the quick default suite) with what one op is, its anchor
//! (once, or per case when the cases' anchors differ) and what it measures
//! differently from its anchors on purpose. It only
//! reads the registry; selecting and validating cases is `bench::util::select`'s.

use std::fmt::Write;
use std::process::ExitCode;

use osbench::bench::util::select::in_default_suite;
use osbench::bench::{BenchDef, Notation, Params, REGISTRY};

pub fn list() -> anyhow::Result<ExitCode> {
    print!("{}", render());
    Ok(ExitCode::SUCCESS)
}

/// Every family, its parameters, its default cases and its op.
fn render() -> String {
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
    let cases: Vec<Params> = def
        .default_cases()
        .iter()
        .map(|fixed| Params::new(def, fixed))
        .collect();
    let anchors: Vec<String> = cases.iter().map(|p| (def.anchor)(p)).collect();
    let one_anchor = anchors.windows(2).all(|w| w[0] == w[1]);
    if one_anchor {
        let _ = writeln!(out, "  anchor: {}", anchors[0]);
    } else {
        let _ = writeln!(out, "  anchors: each case's, after its op");
    }
    if !def.differs.is_empty() {
        let _ = writeln!(out, "  differs from it on purpose: {}", def.differs);
    }
    let _ = writeln!(out, "  parameters:");
    for p in def.params {
        let _ = writeln!(
            out,
            "    {:<8} {} (default {}; allowed {})",
            p.name,
            p.help,
            p.default,
            p.allowed_as(Notation::Short)
        );
    }
    let _ = writeln!(out, "  default cases and what one op is:");
    // The names padded to the longest, so every op starts in one column.
    let width = cases
        .iter()
        .map(|p| (def.case_name)(p).chars().count())
        .max()
        .unwrap_or(0)
        .max(10);
    for (params, anchor) in cases.iter().zip(&anchors) {
        let _ = writeln!(
            out,
            "  {} {:<width$} {}{}",
            if in_default_suite(def, params) {
                '*'
            } else {
                ' '
            },
            (def.case_name)(params),
            (def.op)(params),
            if one_anchor {
                String::new()
            } else {
                format!(" (anchor: {anchor})")
            }
        );
    }
    out.push('\n');
}
