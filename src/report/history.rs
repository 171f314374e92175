//! `osbench history`: one line per stored run — id, start time, label,
//! whether it completed, kernel, host, how many cases, which benchmarks —
//! and, by host (`history --by host`, `fleet run`), a case × host table of
//! medians. Left out: the runs' other results (they are in each document).

use super::fmt_sig;
use super::layout::Table;
use crate::document::Document;
use crate::store::RunRow;

/// Each case's median on each host: one row per case (in first-seen
/// order), one column per host (in the order given), "-" where a host has
/// no such case. Each document is one host's run.
pub fn by_host(runs: &[(&str, &Document)]) -> String {
    by_host_within(runs, None)
}

/// [`by_host`] fitted to `width` columns ([`super::fit`]; `None`: one line per case).
pub fn by_host_within(runs: &[(&str, &Document)], width: Option<usize>) -> String {
    let mut cases: Vec<String> = Vec::new();
    let label = |s: &crate::document::Series| s.key.to_string();
    for (_, doc) in runs {
        for s in &doc.series {
            let l = label(s);
            if !cases.contains(&l) {
                cases.push(l);
            }
        }
    }
    let hosts: Vec<String> = runs
        .iter()
        .map(|(host, _)| crate::text::printable(host).into_owned())
        .collect();
    let mut header = vec!["case"];
    header.extend(hosts.iter().map(String::as_str));
    let mut numeric = vec![false];
    numeric.extend(runs.iter().map(|_| true));
    let rows: Vec<Vec<String>> = cases
        .iter()
        .map(|case| {
            let mut row = vec![crate::text::printable(case).into_owned()];
            row.extend(runs.iter().map(|(_, doc)| {
                doc.series.iter().find(|s| &label(s) == case).map_or_else(
                    || "-".to_string(),
                    |s| format!("{} {}", fmt_sig(s.summary.median), s.unit.symbol()),
                )
            }));
            row
        })
        .collect();
    super::fit::columns_within(&header, &numeric, &rows, width)
}

/// The runs as a table, in the order given; the conventional `--meta` keys
/// (commit, branch, build) get a column each when any run has them.
pub fn render(rows: &[RunRow]) -> String {
    render_within(rows, None)
}

/// [`render`] fitted to `width` columns ([`super::fit`]; `None`: one line per run).
pub fn render_within(rows: &[RunRow], width: Option<usize>) -> String {
    let meta: Vec<&str> = crate::document::meta::CONVENTIONAL
        .into_iter()
        .filter(|k| rows.iter().any(|r| r.meta.contains_key(*k)))
        .collect();
    let mut header = vec!["id", "started (UTC)", "label", "complete", "kernel", "host"];
    header.extend(&meta);
    header.extend(["cases", "benchmarks"]);
    let mut numeric = vec![true, false, false, false, false, false];
    numeric.extend(meta.iter().map(|_| false));
    numeric.extend([true, false]);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut benches: Vec<&str> = Vec::new();
            for case in &r.cases {
                let bench = case.split(' ').next().unwrap_or("");
                if !benches.contains(&bench) {
                    benches.push(bench);
                }
            }
            let mut cells = vec![
                r.id.to_string(),
                r.started.clone(),
                r.label.clone().unwrap_or_else(|| "-".into()),
                if r.complete { "yes" } else { "no" }.into(),
                r.kernel.clone(),
                r.hostname.clone(),
            ];
            cells.extend(
                meta.iter()
                    .map(|k| r.meta.get(*k).cloned().unwrap_or_else(|| "-".into())),
            );
            cells.extend([r.cases.len().to_string(), benches.join(", ")]);
            // Stored text (labels, host names, kernels, meta) from anyone
            // who can write the store or import: shown, never obeyed.
            cells
                .into_iter()
                .map(|c| crate::text::printable(&c).into_owned())
                .collect()
        })
        .collect();
    let table = Table {
        header,
        numeric,
        rows: cells,
        cases: Vec::new(),
    };
    table.to_text_within(width)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_hosts_fit_the_width_in_groups() {
        let doc = crate::report::fixture();
        let hosts: Vec<String> = (1..=8).map(|i| format!("host-{i}")).collect();
        let runs: Vec<(&str, &Document)> = hosts.iter().map(|h| (h.as_str(), &doc)).collect();
        let wide = by_host(&runs);
        assert!(wide.lines().any(|l| l.chars().count() > 60), "{wide}");
        assert_eq!(by_host_within(&runs, None), wide);
        let fitted = by_host_within(&runs, Some(60));
        assert!(fitted.lines().all(|l| l.chars().count() <= 60), "{fitted}");
        assert!(
            fitted.contains("host-1") && fitted.contains("host-8"),
            "{fitted}"
        );
    }

    #[test]
    fn one_line_per_run_with_its_benchmarks_once() {
        let row = |id: i64, label: Option<&str>, complete: bool, cases: &[&str]| RunRow {
            id,
            label: label.map(String::from),
            started: "2026-11-30T08:00:00Z".into(),
            finished: "2026-11-30T08:00:09Z".into(),
            complete,
            kernel: "6.18.44".into(),
            hostname: "vm".into(),
            osbench_version: "0.1.0".into(),
            origin: "run".into(),
            cases: cases.iter().map(|c| c.to_string()).collect(),
            meta: Default::default(),
        };
        let text = render(&[
            row(
                1,
                Some("before"),
                true,
                &["syscall null", "ctx 2p/0K", "ctx 2p/16K"],
            ),
            row(12, None, false, &["syscall null"]),
        ]);
        assert_eq!(
            text,
            "id  started (UTC)         label   complete  kernel   host  cases  benchmarks\n\
             \x201  2026-11-30T08:00:00Z  before  yes       6.18.44  vm        3  syscall, ctx\n\
             12  2026-11-30T08:00:00Z  -       no        6.18.44  vm        1  syscall\n"
        );
        let mut tagged = row(3, None, true, &["syscall null"]);
        tagged.meta.insert("commit".into(), "ab12cd".into());
        tagged.meta.insert("other".into(), "x".into());
        let text = render(&[row(2, None, true, &["syscall null"]), tagged]);
        assert_eq!(
            text,
            "id  started (UTC)         label  complete  kernel   host  commit  cases  benchmarks\n\
             \x202  2026-11-30T08:00:00Z  -      yes       6.18.44  vm    -           1  syscall\n\
             \x203  2026-11-30T08:00:00Z  -      yes       6.18.44  vm    ab12cd      1  syscall\n"
        );
    }
}
