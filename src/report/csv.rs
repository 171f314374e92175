//! Tidy CSV: of a run, one row per accepted sample (bench, case, config,
//! round, sample number, value, unit), ready for R, pandas or a spreadsheet;
//! of a comparison, one row per case and candidate. Values are written in
//! full precision (the shortest text that reads back as the same number).
//! Quoting follows RFC 4180 (the `csv` crate). Left out: rejected samples
//! and raw timings (they are in the JSON document).

use crate::compare::Comparison;
use crate::document::{Document, Series};

/// The run's samples, one row each.
pub fn run(doc: &Document) -> String {
    let mut w = writer();
    write(
        &mut w,
        &[
            "bench", "case", "config", "round", "sample", "value", "unit",
        ],
    );
    for s in &doc.series {
        let rounds = sample_rounds(s);
        for (i, value) in s.samples.iter().enumerate() {
            let round = rounds
                .as_ref()
                .map_or_else(String::new, |r| r[i].to_string());
            write(
                &mut w,
                &[
                    &s.bench,
                    &s.case,
                    &s.config,
                    &round,
                    &(i + 1).to_string(),
                    &value.to_string(),
                    s.unit.as_str(),
                ],
            );
        }
    }
    finish(w)
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
                ch.ci.ci95.0,
                ch.ci.ci95.1,
                ch.p_value,
                ch.p_adjusted,
            ]
            .map(|x| x.to_string());
            let mut record: Vec<&str> = vec![
                &row.bench,
                &row.case,
                &row.config,
                row.unit.as_str(),
                &c.labels[0],
            ];
            record.extend(numbers[..3].iter().map(String::as_str));
            record.push(&c.labels[i + 1]);
            record.extend(numbers[3..].iter().map(String::as_str));
            record.push(ch.verdict.as_str());
            write(&mut w, &record);
        }
    }
    finish(w)
}

fn writer() -> ::csv::Writer<Vec<u8>> {
    ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new())
}

fn write(w: &mut ::csv::Writer<Vec<u8>>, record: &[&str]) {
    w.write_record(record)
        .expect("writing CSV into memory cannot fail");
}

fn finish(w: ::csv::Writer<Vec<u8>>) -> String {
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
        doc.series[0].config = "a, \"b\"\nc".into();
        let text = run(&doc);
        assert!(text.contains("\"a, \"\"b\"\"\nc\""), "{text}");
        let mut reader = ::csv::Reader::from_reader(text.as_bytes());
        for record in reader.records() {
            assert_eq!(&record.unwrap()[2], "a, \"b\"\nc");
        }
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
