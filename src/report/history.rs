//! `osbench history`: one line per stored run — id, start time, label,
//! whether it completed, kernel, host, how many cases, which benchmarks.
//! Left out: the runs' results (they are in each run's document).

use super::align;
use crate::store::RunRow;

/// The runs as a table, in the order given.
pub fn render(rows: &[RunRow]) -> String {
    let header = [
        "id",
        "started (UTC)",
        "label",
        "complete",
        "kernel",
        "host",
        "cases",
        "benchmarks",
    ];
    let numeric = [true, false, false, false, false, false, true, false];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|r| {
            let mut benches: Vec<&str> = Vec::new();
            for case in &r.cases {
                let bench = case.split(' ').next().unwrap_or("");
                if !benches.contains(&bench) {
                    benches.push(bench);
                }
            }
            [
                r.id.to_string(),
                r.started.clone(),
                r.label.clone().unwrap_or_else(|| "-".into()),
                if r.complete { "yes" } else { "no" }.into(),
                r.kernel.clone(),
                r.hostname.clone(),
                r.cases.len().to_string(),
                benches.join(", "),
            ]
        })
        .collect();
    align(&header, &numeric, &cells)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
