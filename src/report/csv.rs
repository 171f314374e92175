//! Tidy CSV: of a run, one row per accepted sample (bench, case, config,
//! round, sample number, value, unit), ready for R, pandas or a spreadsheet;
//! of a comparison, one row per case and candidate. In both `run` and `time`
//! CSVs, `round` is the interleaved round (from 1) the sample was taken in
//! (empty when the document does not say) and `sample` its position in its
//! series (from 1, in run order); `time` rows (one per run) add the run's
//! user and sys time, peak RSS, exit status, command line and parameter
//! values. Values are written in full precision (the shortest text that
//! reads back as the same number). Quoting follows RFC 4180 (the `csv`
//! crate); a name that a common reader would take for a missing value with
//! its default options (pandas reads `null`, quoted or not, as NaN; see
//! [`READER_NA_VALUES`]) is written inside single quotes (`'null'`), so no
//! reader drops a case. Left out: rejected samples and raw timings (they are
//! in the JSON document).

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::compare::Comparison;
use crate::document::{CommandRun, Document, Series};

/// Cells that CSV readers take for a missing value with their default
/// options: pandas' `read_csv` (`na_values`, quoted or not; pandas 2 and 3),
/// R's `read.csv` (`NA`), readr's `read_csv` (`NA` and the empty cell), and
/// DuckDB's and Polars' readers (the empty cell).
pub const READER_NA_VALUES: &[&str] = &[
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
    "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
];

/// A name (a case, a configuration, a label, a parameter value) as written:
/// inside single quotes when a reader would take it for a missing value.
/// An empty cell stays empty: it is meant as missing.
fn name(text: &str) -> Cow<'_, str> {
    if !text.is_empty() && READER_NA_VALUES.contains(&text) {
        Cow::Owned(format!("'{text}'"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The run's samples, one row each; `time` runs' rows have their runs' columns too.
pub fn run(doc: &Document) -> String {
    let mut w = writer();
    let mut header = vec![
        "bench", "case", "config", "round", "sample", "value", "unit",
    ];
    let commands = doc.series.iter().any(|s| !s.runs.is_empty());
    let parameters = parameter_names(doc);
    let parameter_columns: Vec<String> = parameters
        .iter()
        .map(|p| format!("parameter_{p}"))
        .collect();
    if commands {
        header.extend(RUN_COLUMNS);
        header.extend(parameter_columns.iter().map(String::as_str));
    }
    write(&mut w, &header);
    for s in &doc.series {
        let rounds = sample_rounds(s);
        for (i, value) in s.samples.iter().enumerate() {
            let round = rounds
                .as_ref()
                .map_or_else(String::new, |r| r[i].to_string());
            let mut record: Vec<String> = vec![
                name(&s.key.bench).into(),
                name(&s.key.case).into(),
                name(&s.key.config).into(),
                round,
                (i + 1).to_string(),
                value.to_string(),
                s.unit.as_str().to_string(),
            ];
            if commands {
                // A command's runs are its samples, in the same order.
                let run = (s.runs.len() == s.samples.len()).then(|| &s.runs[i]);
                record.extend(run_cells(s, run, &parameters));
            }
            let record: Vec<&str> = record.iter().map(String::as_str).collect();
            write(&mut w, &record);
        }
    }
    finish(w)
}

/// The columns a `time` run's rows add, before its parameters.
const RUN_COLUMNS: [&str; 5] = ["user_s", "sys_s", "max_rss_kb", "exit_status", "command"];

/// A command run's cells: [`RUN_COLUMNS`], then the value of each parameter
/// (empty where the command has none, or for a series that is not a command's).
fn run_cells(s: &Series, run: Option<&CommandRun>, parameters: &[String]) -> Vec<String> {
    let mut cells = match run {
        Some(r) => vec![
            r.user_s.to_string(),
            r.sys_s.to_string(),
            r.max_rss_kb.to_string(),
            r.exit_status.to_string(),
        ],
        None => vec![String::new(); 4],
    };
    let line = s.params.get("command").and_then(|v| v.as_str());
    cells.push(name(line.unwrap_or_default()).into());
    let values = s.params.get("parameters").and_then(|v| v.as_object());
    for p in parameters {
        let value = values.and_then(|v| v.get(p)).and_then(|v| v.as_str());
        cells.push(name(value.unwrap_or_default()).into());
    }
    cells
}

/// The names of the parameters (`time -P`/`-L`) of the document's commands, sorted.
fn parameter_names(doc: &Document) -> Vec<String> {
    let names: BTreeSet<&String> = doc
        .series
        .iter()
        .filter_map(|s| s.params.get("parameters")?.as_object())
        .flat_map(|values| values.keys())
        .collect();
    names.into_iter().cloned().collect()
}

/// The round (from 1) of each sample, or `None` when the document does not say
/// (several rounds, or none recorded, and no `round_samples`).
fn sample_rounds(s: &Series) -> Option<Vec<usize>> {
    if s.round_samples.iter().sum::<usize>() == s.samples.len() && !s.round_samples.is_empty() {
        return Some(
            s.round_samples
                .iter()
                .enumerate()
                .flat_map(|(r, &n)| std::iter::repeat_n(r + 1, n))
                .collect(),
        );
    }
    (s.rounds.len() == 1).then(|| vec![1; s.samples.len()])
}

/// The comparison, one row per case and candidate (ratios are candidate ÷ baseline).
pub fn comparison(c: &Comparison) -> String {
    let mut w = writer();
    write(
        &mut w,
        &[
            "bench",
            "case",
            "config",
            "unit",
            "baseline",
            "baseline_median",
            "baseline_ci_low",
            "baseline_ci_high",
            "candidate",
            "candidate_median",
            "candidate_ci_low",
            "candidate_ci_high",
            "ratio",
            "ratio_ci_low",
            "ratio_ci_high",
            "p_value",
            "p_adjusted",
            "verdict",
        ],
    );
    for row in &c.rows {
        let base = &row.summaries[0];
        for (i, ch) in row.changes.iter().enumerate() {
            let cand = &row.summaries[i + 1];
            let numbers = [
                base.median,
                base.ci_low,
                base.ci_high,
                cand.median,
                cand.ci_low,
                cand.ci_high,
                ch.ci.ratio,
                ch.judged().0,
                ch.judged().1,
                ch.p_value,
                ch.p_adjusted,
            ]
            .map(|x| x.to_string());
            let mut record: Vec<Cow<str>> = vec![
                name(&row.key.bench),
                name(&row.key.case),
                name(&row.key.config),
                row.unit.as_str().into(),
                name(&c.labels[0]),
            ];
            record.extend(numbers[..3].iter().map(|n| n.as_str().into()));
            record.push(name(&c.labels[i + 1]));
            record.extend(numbers[3..].iter().map(|n| n.as_str().into()));
            record.push(ch.verdict.as_str().into());
            let record: Vec<&str> = record.iter().map(|c| c.as_ref()).collect();
            write(&mut w, &record);
        }
    }
    finish(w)
}

pub(super) fn writer() -> ::csv::Writer<Vec<u8>> {
    ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new())
}

pub(super) fn write(w: &mut ::csv::Writer<Vec<u8>>, record: &[&str]) {
    w.write_record(record)
        .expect("writing CSV into memory cannot fail");
}

pub(super) fn finish(w: ::csv::Writer<Vec<u8>>) -> String {
    let bytes = w
        .into_inner()
        .expect("flushing CSV into memory cannot fail");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::markdown::tests::{assert_snapshot, fixed_comparison};

    #[test]
    fn a_run_is_one_row_per_sample_as_its_snapshot() {
        let (_, doc) = crate::store::fixture();
        let text = run(&doc);
        assert_snapshot("small-run.csv", &text);
        let samples: usize = doc.series.iter().map(|s| s.samples.len()).sum();
        assert_eq!(text.lines().count(), 1 + samples);
    }

    #[test]
    fn a_comparison_is_one_row_per_change_as_its_snapshot() {
        assert_snapshot("comparison.csv", &comparison(&fixed_comparison()));
    }

    #[test]
    fn commas_quotes_and_line_breaks_read_back_as_written() {
        let (_, mut doc) = crate::store::fixture();
        doc.series.truncate(1);
        doc.series[0].key.config = "a, \"b\"\nc".into();
        let text = run(&doc);
        assert!(text.contains("\"a, \"\"b\"\"\nc\""), "{text}");
        let mut reader = ::csv::Reader::from_reader(text.as_bytes());
        for record in reader.records() {
            assert_eq!(&record.unwrap()[2], "a, \"b\"\nc");
        }
    }

    /// pandas' default `na_values` (`STR_NA_VALUES` in pandas/_libs/parsers.pyx,
    /// pandas 2.2 and 3.0), written out here on their own rather than taken
    /// from the code under test: `read_csv` turns a cell that is exactly one
    /// of these into NaN whether or not it was quoted.
    const PANDAS_NA: [&str; 19] = [
        "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
        "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
    ];

    /// Reads `text` as pandas does with its defaults: cells in [`PANDAS_NA`] are missing.
    fn read_like_pandas(text: &str) -> (Vec<String>, Vec<Vec<Option<String>>>) {
        let mut reader = ::csv::Reader::from_reader(text.as_bytes());
        let header = reader.headers().unwrap().iter().map(String::from).collect();
        let rows = reader
            .records()
            .map(|r| {
                r.unwrap()
                    .iter()
                    .map(|cell| (!PANDAS_NA.contains(&cell)).then(|| cell.to_string()))
                    .collect()
            })
            .collect();
        (header, rows)
    }

    #[test]
    fn no_name_reads_as_missing_in_pandas_or_r() {
        let (_, mut doc) = crate::store::fixture();
        doc.series[0].key.case = "null".into(); // syscall's own case name
        doc.series[1].key.config = "NA".into(); // R's only missing value
        for s in &mut doc.series[2..] {
            s.key.case = "None".into();
        }
        let text = run(&doc);
        let (header, rows) = read_like_pandas(&text);
        let text_columns = ["bench", "case", "config", "sample", "value", "unit"];
        for (i, column) in header.iter().enumerate() {
            if text_columns.contains(&column.as_str()) {
                assert!(rows.iter().all(|r| r[i].is_some()), "{column}: {text}");
            }
        }
        // R's read.csv: "NA" (quoted or not); readr adds the empty cell.
        assert!(
            !text
                .lines()
                .any(|l| l.split(',').any(|c| c == "NA" || c == "\"NA\""))
        );
        let cases: Vec<&str> = rows.iter().filter_map(|r| r[1].as_deref()).collect();
        assert!(
            cases.contains(&"'null'") && cases.contains(&"'None'"),
            "{cases:?}"
        );
        // Every value pandas' list holds is quoted, none other.
        for na in PANDAS_NA.iter().filter(|v| !v.is_empty()) {
            assert_eq!(name(na), format!("'{na}'"));
        }
        assert_eq!(name("nullable"), "nullable");
        assert_eq!(name(""), "");
    }

    #[test]
    fn comparison_labels_that_read_as_missing_are_quoted() {
        let mut c = fixed_comparison();
        c.labels[1] = "null".into();
        let (header, rows) = read_like_pandas(&comparison(&c));
        let candidate = header.iter().position(|h| h == "candidate").unwrap();
        assert!(
            rows.iter()
                .all(|r| r[candidate].as_deref() == Some("'null'"))
        );
    }

    /// The small run's first series as `osbench time` would write it: one
    /// command run per sample, with a parameter.
    fn time_document() -> Document {
        let (_, mut doc) = crate::store::fixture();
        doc.series.truncate(1);
        let s = &mut doc.series[0];
        s.key.bench = crate::document::COMMAND_BENCH.into();
        s.key.case = "sleep null".into();
        s.params = serde_json::json!({"command": "sleep {x}", "shell": false,
                                      "parameters": {"x": "null"}})
        .as_object()
        .unwrap()
        .clone();
        s.rounds = vec![0.0; s.samples.len()];
        s.round_samples = vec![1; s.samples.len()];
        s.runs = (0..s.samples.len())
            .map(|i| CommandRun {
                wall_s: s.samples[i],
                user_s: 0.25,
                sys_s: 0.125,
                max_rss_kb: 4000 + i as u64,
                voluntary_switches: 0,
                involuntary_switches: 0,
                minor_faults: 0,
                major_faults: 0,
                exit_status: i as i32,
                signal: None,
                timed_out: false,
            })
            .collect();
        doc
    }

    #[test]
    fn time_rows_carry_each_runs_costs_exit_status_and_parameters() {
        let doc = time_document();
        let text = run(&doc);
        let (header, rows) = read_like_pandas(&text);
        assert_eq!(
            header,
            [
                "bench",
                "case",
                "config",
                "round",
                "sample",
                "value",
                "unit",
                "user_s",
                "sys_s",
                "max_rss_kb",
                "exit_status",
                "command",
                "parameter_x"
            ]
        );
        let runs = &doc.series[0].runs;
        assert_eq!(rows.len(), runs.len());
        for (i, (row, r)) in rows.iter().zip(runs).enumerate() {
            let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].clone();
            assert_eq!(cell("user_s").unwrap().parse::<f64>().unwrap(), r.user_s);
            assert_eq!(cell("sys_s").unwrap().parse::<f64>().unwrap(), r.sys_s);
            assert_eq!(cell("max_rss_kb").unwrap(), r.max_rss_kb.to_string());
            assert_eq!(cell("exit_status").unwrap(), i.to_string());
            assert_eq!(cell("command").unwrap(), "sleep {x}");
            assert_eq!(cell("parameter_x").unwrap(), "'null'");
        }
    }

    #[test]
    fn round_and_sample_mean_the_same_in_time_and_run_rows() {
        // `time`: one run of every command per round, so run i is round i and sample i.
        let (_, rows) = read_like_pandas(&run(&time_document()));
        for (i, row) in rows.iter().enumerate() {
            let n = (i + 1).to_string();
            assert_eq!(
                (row[3].as_deref(), row[4].as_deref()),
                (Some(&*n), Some(&*n))
            );
        }
        // `run` with rounds: sample counts on across rounds, round is the round.
        let (_, doc) = crate::store::fixture();
        let (_, rows) = read_like_pandas(&run(&doc));
        let first: Vec<(&str, &str)> = rows[..4]
            .iter()
            .map(|r| (r[3].as_deref().unwrap(), r[4].as_deref().unwrap()))
            .collect();
        assert_eq!(first, [("1", "1"), ("1", "2"), ("2", "3"), ("2", "4")]);
    }

    #[test]
    fn rounds_come_from_the_samples_per_round() {
        let (_, mut doc) = crate::store::fixture();
        let s = &mut doc.series[0];
        assert_eq!(sample_rounds(s), Some(vec![1, 1, 2, 2]));
        s.round_samples.clear(); // an older document with several rounds: unknown
        assert_eq!(sample_rounds(s), None);
        s.rounds.truncate(1); // one round: every sample is from it
        assert_eq!(sample_rounds(s), Some(vec![1; 4]));
    }
}
