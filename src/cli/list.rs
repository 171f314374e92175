//! `osbench list [BENCH…]`: the benchmark registry as text, every family (or
//! the ones named) with its
//! unit, its parameters (default, allowed values in
//! [`Notation::Short`](osbench::bench::Notation::Short)) and its default
//! cases (`*` marks the quick default suite) with what one op is, its anchor
//! (once, or per case when the cases' anchors differ) and what it measures
//! differently from its anchors on purpose. It only
//! reads the registry; selecting and validating cases is `bench::util::select`'s.

use std::fmt::Write;
use std::process::ExitCode;

use clap::Args;

use osbench::bench::util::select::{ALL, bench_meant, config_tag, in_default_suite};
use osbench::bench::{BenchDef, Notation, Params, REGISTRY, find};
use osbench::report::fit::{wrap_hanging, wrap_prose};

/// `osbench list [BENCH…]`.
#[derive(Args)]
pub struct ListArgs {
    /// Only these benchmarks (a selector's or printed case's benchmark counts: `ctx`,
    /// `ctx:2p/0K`); none: every benchmark
    #[arg(value_name = "BENCH", value_parser = super::with_bench_names(parse_bench),
          hide_possible_values = true)]
    benches: Vec<&'static BenchDef>,
    #[command(flatten)]
    pub layout: super::LayoutArgs,
}

/// The family a selector or printed case name (`ctx`, `syscall:null`) is of.
fn parse_bench(s: &str) -> Result<&'static BenchDef, String> {
    let (text, _) = config_tag(s);
    let name = text.split([':', ' ']).next().unwrap_or(text);
    find(name).ok_or_else(|| {
        let names: Vec<&str> = REGISTRY.iter().map(|d| d.name).collect();
        let mean = bench_meant(name)
            .filter(|m| *m != ALL)
            .map_or(String::new(), |m| format!("did you mean '{m}'? "));
        format!(
            "no benchmark '{name}'; {mean}the benchmarks are: {}",
            names.join(", ")
        )
    })
}

pub fn list(args: &ListArgs, console: super::Console) -> anyhow::Result<ExitCode> {
    console.print(&render(&args.benches, console.width));
    Ok(ExitCode::SUCCESS)
}

/// Every family (or those in `only`), its parameters, its default cases and
/// its op, fitted to `width` columns (`None`: one line each): a parameter's
/// help and a case's op continue under themselves.
fn render(only: &[&BenchDef], width: Option<usize>) -> String {
    let mut out = String::new();
    for def in REGISTRY {
        if only.is_empty() || only.iter().any(|d| std::ptr::eq(*d, *def)) {
            describe(&mut out, def, width);
        }
    }
    out.push_str(&wrap_prose(
        "Select with BENCH (its default cases) or BENCH:key=value[,key=value...]: the default cases \
         that agree with the given values, or else the one case they name; or name a case as the \
         tables print it (BENCH:CASE, e.g. syscall:null or ctx:2p/0K). Cases marked * form the \
         quick default suite (`osbench run` with no selector); `osbench run all` runs every default \
         case. Every case but the latency distributions also takes tasks=N or tasks=A..B, \
         tasks_mode=processes|threads and tasks_place=spread|packed: N copies of it at once, \
         will-it-scale's sweep (as `run --tasks`; docs/scaling.md).\n",
        width,
    ));
    out
}

fn describe(out: &mut String, def: &BenchDef, width: Option<usize>) {
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
    if let Some(cause) = def.two_clusters {
        let _ = writeln!(out, "  samples in two clusters can come from: {cause}");
    }
    let _ = writeln!(out, "  parameters:");
    for p in def.params {
        let line = format!(
            "    {:<8} {} (default {}; allowed {})\n",
            p.name,
            p.help,
            p.default,
            p.allowed_as(Notation::Short)
        );
        out.push_str(&wrap_hanging(&line, width, 5 + p.name.len().max(8)));
    }
    let _ = writeln!(out, "  default cases and what one op is:");
    // The names padded to the longest, so every op starts in one column.
    let names = cases
        .iter()
        .map(|p| (def.case_name)(p).chars().count())
        .max()
        .unwrap_or(0)
        .max(10);
    for (params, anchor) in cases.iter().zip(&anchors) {
        let line = format!(
            "  {} {:<names$} {}{}\n",
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
        out.push_str(&wrap_hanging(&line, width, 5 + names));
    }
    out.push('\n');
}
