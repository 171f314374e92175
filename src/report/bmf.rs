//! Bencher Metric Format (bencher.dev's `--adapter json` input): one JSON
//! object keyed by benchmark name, each holding measures keyed by slug, each
//! `{"value", "lower_value", "upper_value"}`. Here the value is the median
//! and the bounds its 95 % interval: `latency` in nanoseconds per operation
//! (Bencher's built-in latency measure) for every series, and `bandwidth`
//! in MB/s (10^6 B/s) for bandwidth series. A benchmark is named
//! `BENCH: CASE [CONFIG]` (the configuration left out when there is none),
//! with ` @ RUN` in a comparison of saved runs, whose every side is written.
//! Left out: the comparison itself (Bencher draws its own thresholds).

use serde_json::{Map, Value, json};

use crate::compare::Comparison;
use crate::document::{Document, Unit};
use crate::stats::Summary;

/// The measures of one summary.
fn measures(summary: &Summary, unit: Unit, bytes_per_op: Option<f64>) -> Value {
    let ns = |x: f64| x * unit.ns();
    let mut m = Map::new();
    m.insert(
        "latency".into(),
        json!({
            "value": ns(summary.median),
            "lower_value": ns(summary.ci_low),
            "upper_value": ns(summary.ci_high),
        }),
    );
    if let Some(bytes) = bytes_per_op {
        let mbs = |t: f64| unit.mb_per_s(bytes, t);
        // The higher the time, the lower the bandwidth: the ends swap.
        m.insert(
            "bandwidth".into(),
            json!({
                "value": mbs(summary.median),
                "lower_value": mbs(summary.ci_high),
                "upper_value": mbs(summary.ci_low),
            }),
        );
    }
    Value::Object(m)
}

fn finish(benchmarks: Map<String, Value>) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(benchmarks))
        .expect("numbers and strings serialise");
    bytes.push(b'\n');
    bytes
}

/// A run's (or `time`'s) series.
pub fn run(doc: &Document) -> Vec<u8> {
    let mut benchmarks = Map::new();
    for s in &doc.series {
        let name = format!("{}: {}", s.key.bench, s.key.short());
        benchmarks.insert(name, measures(&s.summary, s.unit, s.bytes_per_op));
    }
    finish(benchmarks)
}

/// Every side of a comparison of saved runs.
pub fn comparison(c: &Comparison) -> Vec<u8> {
    let mut benchmarks = Map::new();
    for row in &c.rows {
        for (summary, run) in row.summaries.iter().zip(&c.labels) {
            let name = format!("{}: {} @ {run}", row.key.bench, row.key.short());
            benchmarks.insert(name, measures(summary, row.unit, row.bytes_per_op));
        }
    }
    finish(benchmarks)
}
