//! One question, one answer: the same two labels compared through every
//! command that compares saved runs — `compare` (its table, `--json`,
//! `--csv`, `--markdown`) and `report --html` — give the same ratio and the
//! same interval, because every run with a label is a replicate everywhere.

use std::fs;
use std::path::Path;

use osbench::document::Document;

use crate::common::{fixture, ok, osbench};

/// The fixture as a stored run labelled `label`, started at minute
/// `minute`, every time scaled by `factor`.
fn labelled_run(label: &str, minute: u32, factor: f64) -> Document {
    let mut doc: Document =
        serde_json::from_str(&fs::read_to_string(fixture("small-run.json")).unwrap()).unwrap();
    doc.run.label = Some(label.into());
    doc.run.started = format!("2026-11-30T08:{minute:02}:00Z");
    doc.run.finished = format!("2026-11-30T08:{minute:02}:30Z");
    doc.run.seed = u64::from(minute);
    doc.comparisons.clear();
    for s in &mut doc.series {
        for v in &mut s.samples {
            *v *= factor;
        }
        s.summary = s.summary.scaled(factor);
    }
    doc
}

/// A store holding three runs labelled `before` and three `after` (5 %
/// slower, with run-to-run spread), alternated.
fn store_of_labels(path: &Path) {
    let mut store = osbench::store::Store::open(path).unwrap();
    let spread = [1.0, 1.02, 0.985];
    for (i, s) in spread.iter().enumerate() {
        let i = i as u32;
        store.insert(&labelled_run("before", 2 * i, *s)).unwrap();
        store
            .insert(&labelled_run(
                "after",
                2 * i + 1,
                1.05 * s * spread[(i as usize + 1) % 3],
            ))
            .unwrap();
    }
}

#[test]
fn the_same_labels_get_the_same_numbers_from_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("results.sqlite");
    store_of_labels(&store);
    let out = |name: &str| dir.path().join(name);
    let (text, _) = ok(osbench(&store)
        .args(["compare", "before", "after", "--json"])
        .arg(out("c.json"))
        .arg("--csv")
        .arg(out("c.csv"))
        .arg("--markdown")
        .arg(out("c.md"))
        .output()
        .unwrap());
    let (_, notes) = ok(osbench(&store)
        .args(["report", "before", "after", "--html"])
        .arg(out("r.html"))
        .output()
        .unwrap());
    let record: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out("c.json")).unwrap()).unwrap();
    let comparisons = record["comparisons"].as_array().unwrap();
    assert!(!comparisons.is_empty(), "{record}");
    let html = fs::read_to_string(out("r.html")).unwrap();
    let markdown = fs::read_to_string(out("c.md")).unwrap();
    let csv = fs::read_to_string(out("c.csv")).unwrap();
    for c in comparisons {
        let (ratio, low, high) = (
            c["ratio"].as_f64().unwrap(),
            c["ci_low"].as_f64().unwrap(),
            c["ci_high"].as_f64().unwrap(),
        );
        // Three runs a side: a t interval, replicated over invocations.
        assert_eq!(c["replicated"]["baseline"], 3, "{c}");
        assert!(low < ratio && ratio < high, "{c}");
        let shown = format!("{ratio:.3}  [{low:.3} – {high:.3}");
        assert!(
            text.contains(&shown),
            "compare's table lacks {shown}:\n{text}"
        );
        let cells = format!("{ratio:.3} [{low:.3} – {high:.3}]");
        assert!(html.contains(&cells), "the report lacks {cells}");
        let md = format!("{low:.3} – {high:.3}");
        assert!(
            markdown.contains(&md),
            "the Markdown lacks {md}:\n{markdown}"
        );
        let exact = format!("{ratio},{low},{high}");
        assert!(csv.contains(&exact), "the CSV lacks {exact}:\n{csv}");
    }
    // The report compared every run of each label, as compare did: no claim
    // that nothing stored tells the spread.
    assert!(html.contains("3 invocations a side"), "{html}");
    assert!(!html.contains("no stored runs"), "{html}");
    assert!(!notes.contains("warning"), "{notes}");
}
