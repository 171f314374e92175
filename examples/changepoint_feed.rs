//! The change-point detection of `osbench regressions`, fed a corpus of
//! series one night at a time, for scripts/score-changepoints.py: reads the
//! corpus JSON of scripts/changepoint-corpus.py on standard input and
//! writes, per series, what the detection finds on the whole series and
//! what a nightly sweep would have announced night by night.
//!
//! A nightly sweep sees the first L runs on night L. A change point keeps
//! its identity from night to night while its first run stays within
//! [`SAME_CHANGE_RUNS`] runs of where it was last seen, in the same
//! direction — the rule `regressions` applies to its store — and is
//! *shown* the first night it is found (pending or not) and *announced*
//! the first night it is confirmed. Left out: the store, the
//! environment diff, rendering; the window (every point counts, as if
//! nothing was ever dismissed).

use std::io::Read;

use osbench::compare::regressions::SAME_CHANGE_RUNS;
use osbench::stats::changepoint::{Changes, Detection, Options, RunInfo, detect};
use serde_json::{Value, json};

/// A change point as a nightly sweep remembers it.
struct Known {
    id: usize,
    index: usize,
    slower: bool,
    announced: bool,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let corpus: Value = serde_json::from_str(&input)?;
    let nightly = !std::env::args().any(|a| a == "--final-only");
    let options = Options::default();
    let mut out = Vec::new();
    for s in corpus["series"].as_array().ok_or("no series")? {
        let values = floats(&s["values"]);
        let info = run_info(s);
        let detection = detect(&values, &info, &options);
        let whole = changes(&detection);
        let feed = if nightly {
            feed(&values, &info, &options)
        } else {
            Feed {
                shown: Vec::new(),
                announced: Vec::new(),
            }
        };
        out.push(json!({
            "name": s["name"],
            "points": whole.map(|c| c.points.iter().map(|p| json!({
                "index": p.index, "relative": p.relative, "confirmed": p.confirmed,
            })).collect::<Vec<_>>()).unwrap_or_default(),
            "drifts": whole.map(|c| c.drifts.iter().map(|d| json!({
                "start": d.start, "end": d.end, "per_run": d.per_run,
            })).collect::<Vec<_>>()).unwrap_or_default(),
            "announced": feed.announced,
            "shown": feed.shown,
        }));
    }
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .map_or_else(Vec::new, |a| a.iter().filter_map(Value::as_f64).collect())
}

/// What osbench knows of each run besides its median.
fn run_info(s: &Value) -> Vec<RunInfo> {
    let spread = floats(&s["spread"]);
    let clusters: Vec<bool> = s["two_clusters"].as_array().map_or_else(Vec::new, |a| {
        a.iter().map(|b| b.as_bool() == Some(true)).collect()
    });
    spread
        .iter()
        .zip(clusters.iter().chain(std::iter::repeat(&false)))
        .map(|(&spread, &two_clusters)| RunInfo {
            spread: Some(spread),
            two_clusters,
        })
        .collect()
}

fn changes(d: &Detection) -> Option<&Changes> {
    match d {
        Detection::Tested(c) => Some(c),
        Detection::TooFew { .. } => None,
    }
}

/// What a nightly sweep over `values` said: each change point the night it
/// was first shown (pending or confirmed) and the night it was announced
/// (confirmed), with its id, index and direction.
struct Feed {
    shown: Vec<Value>,
    announced: Vec<Value>,
}

fn feed(values: &[f64], info: &[RunInfo], options: &Options) -> Feed {
    let mut known: Vec<Known> = Vec::new();
    let (mut shown, mut announced) = (Vec::new(), Vec::new());
    for night in 1..=values.len() {
        let d = detect(&values[..night], &info[..night], options);
        let Some(c) = changes(&d) else { continue };
        for p in &c.points {
            let slower = p.relative > 0.0;
            let near = known
                .iter_mut()
                .find(|k| k.slower == slower && k.index.abs_diff(p.index) <= SAME_CHANGE_RUNS);
            let k = match near {
                Some(k) => {
                    k.index = p.index;
                    k
                }
                None => {
                    let id = known.len() + 1;
                    known.push(Known {
                        id,
                        index: p.index,
                        slower,
                        announced: false,
                    });
                    shown.push(json!({
                        "night": night, "id": id, "index": p.index, "slower": slower,
                    }));
                    known.last_mut().unwrap()
                }
            };
            if p.confirmed && !k.announced {
                k.announced = true;
                announced.push(json!({
                    "night": night, "id": k.id, "index": p.index, "slower": slower,
                    "relative": p.relative,
                }));
            }
        }
    }
    Feed { shown, announced }
}
