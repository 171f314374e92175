//! docs/result-document.md against real documents: its JSON examples parse
//! (comments stripped) with no key given twice, and every key that real
//! documents hold — a run of a plain, a stand-in-subtracted and a
//! distribution case, an `osbench time` run with a parameter, a run with
//! configurations, and `compare --json` — is in the page's key index ("Every
//! key"), as are the example's own keys and those of a comparison's
//! explanation (built from a synthetic differential). A reader written from the page alone
//! then meets no key it was not told about. Left out: keys only guests and
//! RAPL machines produce (listed by hand; not generated here).

use std::collections::BTreeSet;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

const PAGE: &str = include_str!("../../docs/result-document.md");

/// A JSON value that refuses an object with a key given twice.
struct NoDuplicates(serde_json::Value);

impl<'de> Deserialize<'de> for NoDuplicates {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicatesVisitor).map(NoDuplicates)
    }
}

struct NoDuplicatesVisitor;

impl<'de> Visitor<'de> for NoDuplicatesVisitor {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(NoDuplicates(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(items.into())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some((key, NoDuplicates(v))) = map.next_entry::<String, NoDuplicates>()? {
            if object.insert(key.clone(), v).is_some() {
                return Err(de::Error::custom(format!("key \"{key}\" given twice")));
            }
        }
        Ok(object.into())
    }
}

/// `text` without `//` comments (outside strings).
fn strip_comments(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let (mut in_string, mut escaped) = (false, false);
        let mut end = line.len();
        for (i, c) in line.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if in_string => escaped = true,
                '"' => in_string = !in_string,
                '/' if !in_string && line[i..].starts_with("//") => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        out.push_str(&line[..end]);
        out.push('\n');
    }
    out
}

/// The page's fenced ```json blocks, in order.
fn json_blocks() -> Vec<&'static str> {
    PAGE.split("```json\n")
        .skip(1)
        .map(|rest| &rest[..rest.find("```").expect("a closed block")])
        .collect()
}

/// A block as JSON: whole, or (a fragment of an object: `"key": …`) inside braces.
fn parse_block(block: &str) -> Result<serde_json::Value, String> {
    let text = strip_comments(block);
    let trimmed = text.trim().trim_end_matches(',');
    let whole = if trimmed.starts_with('{') {
        trimmed.to_string()
    } else {
        format!("{{{trimmed}}}")
    };
    serde_json::from_str::<NoDuplicates>(&whole)
        .map(|v| v.0)
        .map_err(|e| format!("{e}\n{whole}"))
}

/// The key index: each line `- `pattern`` of the section "Every key",
/// braces expanded (`a.{b,c}` is `a.b` and `a.c`).
fn key_index() -> Vec<String> {
    let start = PAGE.find("## Every key").expect("the page has a key index");
    let section = &PAGE[start..];
    let end = section[3..].find("\n## ").map_or(section.len(), |i| i + 3);
    section[..end]
        .lines()
        .filter_map(|l| l.strip_prefix("- `")?.split('`').next())
        .flat_map(expand_braces)
        .collect()
}

fn expand_braces(pattern: &str) -> Vec<String> {
    let Some(open) = pattern.find('{') else {
        return vec![pattern.to_string()];
    };
    let close = open + pattern[open..].find('}').expect("a closed brace");
    pattern[open + 1..close]
        .split(',')
        .flat_map(|choice| {
            expand_braces(&format!(
                "{}{choice}{}",
                &pattern[..open],
                &pattern[close + 1..]
            ))
        })
        .collect()
}

/// Whether `path` (keys joined by `.`, arrays as `[]`) matches `pattern`,
/// where a `<name>` segment stands for any one key.
fn matches(pattern: &str, path: &str) -> bool {
    let (p, k): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), path.split('.').collect());
    p.len() == k.len()
        && p.iter().zip(&k).all(|(p, k)| {
            p == k
                || p.starts_with('<')
                    && match p.strip_suffix("[]") {
                        Some(_) => k.ends_with("[]"),
                        None => !k.ends_with("[]"),
                    }
        })
}

/// Every key path of `v` (arrays as `[]`, their elements' keys beneath).
fn key_paths(v: &serde_json::Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                let path = if at.is_empty() {
                    key.clone()
                } else {
                    format!("{at}.{key}")
                };
                let path = if value.is_array() {
                    format!("{path}[]")
                } else {
                    path
                };
                out.insert(path.clone());
                key_paths(value, &path, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| key_paths(i, at, out)),
        _ => {}
    }
}

/// `osbench ARGS --json -` in `dir` (its store there too), which must succeed: the document.
fn json_of(args: &[&str], dir: &Path) -> Vec<u8> {
    let out = crate::common::osbench(dir.join("store.sqlite"))
        .current_dir(dir)
        .args(args)
        .args(["--json", "-"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn undocumented(paths: &BTreeSet<String>, index: &[String]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| !index.iter().any(|pattern| matches(pattern, p)))
        .cloned()
        .collect()
}

#[test]
fn the_examples_parse_and_name_no_key_twice() {
    let blocks = json_blocks();
    assert!(blocks.len() >= 6, "{} blocks", blocks.len());
    for block in blocks {
        if let Err(e) = parse_block(block) {
            panic!("an example does not parse: {e}");
        }
    }
    let dup = parse_block("{\"a\": 1, \"a\": 2}").unwrap_err();
    assert!(dup.contains("given twice"), "{dup}");
}

#[test]
fn every_key_of_the_main_example_is_in_the_index() {
    let example = parse_block(json_blocks()[0]).unwrap();
    let mut paths = BTreeSet::new();
    key_paths(&example, "", &mut paths);
    // The example's "..." placeholders stand for more of the same.
    paths.retain(|p| !p.contains("..."));
    let missing = undocumented(&paths, &key_index());
    assert!(missing.is_empty(), "not in the key index: {missing:#?}");
}

#[test]
fn every_key_of_real_documents_is_in_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let quick = [
        "--samples",
        "2",
        "--sample-time",
        "1",
        "--warmup",
        "0",
        "--no-store",
        "-q",
    ];
    let mut runs: Vec<Vec<&str>> = vec![
        // A plain case, one with a subtracted stand-in (ctx), a distribution (wakeup).
        [
            &[
                "run",
                "syscall:case=null",
                "ctx:procs=2,size=0",
                "wakeup:wait=futex",
            ][..],
            &quick,
        ]
        .concat(),
        [
            "time",
            "--runs",
            "2",
            "-L",
            "x",
            "1,2",
            "sleep 0.00{x}",
            "true",
            "--no-store",
            "-q",
        ]
        .to_vec(),
    ];
    let configs = [
        "--config",
        "a=",
        "--config",
        "b=true",
        "--teardown",
        "b=true",
        "--rounds",
        "2",
    ];
    runs.push(
        [
            &["run", "syscall:case=null", "--label", "patched"][..],
            &quick,
            &configs,
        ]
        .concat(),
    );
    let index = key_index();
    let mut files = Vec::new();
    for (i, args) in runs.iter().enumerate() {
        let doc = json_of(args, dir.path());
        let file = dir.path().join(format!("{i}.json"));
        std::fs::write(&file, &doc).unwrap();
        files.push(file);
        let mut paths = BTreeSet::new();
        key_paths(&serde_json::from_slice(&doc).unwrap(), "", &mut paths);
        let missing = undocumented(&paths, &index);
        assert!(
            missing.is_empty(),
            "{args:?}: not in the key index: {missing:#?}"
        );
    }
    // `compare --json`: its own small document (of the small run with
    // configurations: a distribution's 10,000 events make a debug build slow).
    let (a, b) = (files[2].to_str().unwrap(), files[2].to_str().unwrap());
    let record = json_of(&["compare", a, b], dir.path());
    let mut paths = BTreeSet::new();
    key_paths(&serde_json::from_slice(&record).unwrap(), "", &mut paths);
    let missing = undocumented(&paths, &index);
    assert!(
        missing.is_empty(),
        "compare --json: not in the key index: {missing:#?}"
    );
}

#[test]
fn index_patterns_match_as_documented() {
    assert!(matches("series[].params.<name>", "series[].params.case"));
    assert!(!matches(
        "series[].params.<name>",
        "series[].params.parameters.x"
    ));
    assert!(matches(
        "env.cpuidle.states[].name",
        "env.cpuidle.states[].name"
    ));
    assert!(!matches("env.<key>", "env.powercap[]"));
    assert!(matches("env.<key>[]", "env.powercap[]"));
    assert_eq!(expand_braces("a.{b,c}.{d,e}").len(), 4);
    assert!(matches(
        "series[].quantiles.p99.9",
        "series[].quantiles.p99.9"
    ));
}

#[test]
fn every_key_of_an_explanation_is_in_the_index() {
    // A differential with every optional key (intervals, p-values, notes,
    // an appeared function), and a side without a profile, in a comparison
    // record as `compare --explain --json` writes it.
    use osbench::document::{ComparisonRecord, Explanation, MissingProfile};
    use osbench::stats::differential::{SideProfile, differential};
    use std::collections::BTreeMap;
    let pass = |hot: u64, new: u64| -> BTreeMap<String, u64> {
        [
            ("main;f".to_string(), hot),
            ("main;g".to_string(), 500),
            ("main;h".to_string(), new),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    };
    let (a, b) = (
        vec![pass(100, 0), pass(104, 0)],
        vec![pass(300, 20), pass(310, 23)],
    );
    let mut a_side = SideProfile::at_one_time(&a, 100.0);
    // Seven samples of each baseline pass were not kept by name.
    a_side.passes.iter_mut().for_each(|p| p.total += 7);
    let b_side = SideProfile::at_one_time(&b, 130.0);
    let mut d = differential(&a_side, &b_side, Default::default());
    d.notes.push("baseline: kernel symbols hidden".into());
    let record: ComparisonRecord = serde_json::from_value(serde_json::json!({
        "bench": "syscall", "case": "null", "baseline": "a", "candidate": "b",
        "ratio": 1.3, "ci_low": 1.2, "ci_high": 1.4, "p_value": 0.01, "verdict": "slower",
    }))
    .unwrap();
    let missing = MissingProfile {
        side: "baseline".into(),
        label: "a".into(),
        unavailable: Some("perf_event_paranoid is 3".into()),
    };
    let records = [
        ComparisonRecord {
            explanation: Some(Explanation::Differential(d)),
            ..record.clone()
        },
        ComparisonRecord {
            explanation: Some(Explanation::NoProfile(vec![missing])),
            ..record
        },
    ];
    let json = serde_json::json!({ "comparisons": records });
    let mut paths = BTreeSet::new();
    key_paths(&json, "", &mut paths);
    assert!(
        paths.iter().any(|p| p.ends_with("self_time.p_adjusted")),
        "{paths:#?}"
    );
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("no_profile[].unavailable")),
        "{paths:#?}"
    );
    let missing = undocumented(&paths, &key_index());
    assert!(missing.is_empty(), "not in the key index: {missing:#?}");
}
