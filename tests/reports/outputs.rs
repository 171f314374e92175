//! The files other systems read (`--openmetrics`, `--junit`, `--bmf`,
//! `--kcidb`) checked
//! by real readers: the Python `prometheus_client` OpenMetrics parser and an
//! XML Schema validator (`xmlschema`) against tests/data/junit.xsd, written
//! from the Ant/Jenkins JUnit format; and `--bisect-exit`'s statuses. The
//! Python readers are skipped with a message when missing, unless
//! `OSBENCH_REQUIRE_PYTHON_READERS=1` (set by .ci/run); the KCIDB files are
//! validated by the `kcidb-io` package's schema (the Python of
//! `$OSBENCH_KCIDB_PYTHON`, a virtual environment .ci/run makes, else
//! python3), skipped without it unless `OSBENCH_REQUIRE_KCIDB=1`. The A/Bs time
//! `sleep 0.02` against `sleep 0.1`, a planted 5× slowdown (beyond what
//! a machine loaded by parallel builds does to sleeps); no test
//! asserts how fast anything ran.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::osbench;

/// `osbench time` of `fast` and `slow` sleeps (first the baseline), unsaved, with `extra`.
fn time_ab(first: &str, second: &str, extra: &[&str]) -> Output {
    osbench(common::tmp_store("outputs.sqlite"))
        .args(["time", "--no-store", "-q", "--warmup", "0", "--runs", "10"])
        .args(["-n", "first", "-n", "second", "--shell"])
        .args([format!("sleep {first}"), format!("sleep {second}")])
        .args(extra)
        .output()
        .unwrap()
}

/// A quick unsaved `osbench run` of `selector` (3 samples of 1 ms), with `extra`.
fn quick_run(selector: &str, extra: &[&str]) -> Output {
    osbench(common::tmp_store("outputs.sqlite"))
        .args(["run", selector, "--samples", "3", "--sample-time", "1"])
        .args(["--warmup", "0", "--no-perf", "--no-store", "-q"])
        .args(extra)
        .output()
        .unwrap()
}

/// Two empty configurations compared over two rounds, with no equivalence
/// margin: two rounds can never be significant, and two ratios that happen
/// to agree closely could otherwise be called equivalent (CI once saw it),
/// so every case is undecided.
const TWO_CONFIGS: [&str; 8] = [
    "--config",
    "a=",
    "--config",
    "b=",
    "--rounds",
    "2",
    "--equivalence",
    "0",
];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Whether python3 can import `modules`; says why not when it cannot, and
/// fails when `OSBENCH_REQUIRE_PYTHON_READERS=1`.
fn python_has(test: &str, modules: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return true;
    }
    let why = format!("python3 cannot import {modules} (pip install prometheus_client xmlschema)");
    if std::env::var("OSBENCH_REQUIRE_PYTHON_READERS").as_deref() == Ok("1") {
        panic!("OSBENCH_REQUIRE_PYTHON_READERS=1 but {why}");
    }
    eprintln!("skipped {test}: {why}");
    false
}

/// Runs a Python `script` with `args`; its standard output, or a panic with its error.
fn python(script: &str, args: &[&str]) -> String {
    python_of("python3", script, args)
}

/// [`python`] with the interpreter `python3`.
pub(crate) fn python_of(python3: &str, script: &str, args: &[&str]) -> String {
    let out = Command::new(python3)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "python: {}", text(&out.stderr));
    text(&out.stdout)
}

/// The OpenMetrics file parsed by prometheus_client: one line per sample,
/// `name{sorted labels} value`, after `TYPE name gauge` per family.
const PARSE_OPENMETRICS: &str = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for family in text_string_to_metric_families(open(sys.argv[1]).read()):
    print("TYPE", family.name, family.type, family.unit)
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        print(f"{s.name}{{{labels}}} {s.value!r}")
"#;

#[test]
fn openmetrics_of_time_parses_with_prometheus_client() {
    if !python_has("openmetrics_of_time", "prometheus_client") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("metrics.prom");
    let out = time_ab("0.02", "0.1", &["--openmetrics", arg(&file)]);
    common::ok(out);
    let raw = fs::read_to_string(&file).unwrap();
    assert!(raw.ends_with("# EOF\n"), "{raw}");
    let parsed = python(PARSE_OPENMETRICS, &[arg(&file)]);
    assert!(
        parsed.contains("TYPE osbench_median_seconds gauge seconds"),
        "{parsed}"
    );
    let sample = |name: &str, needle: &str| -> f64 {
        let line = parsed
            .lines()
            .find(|l| l.starts_with(&format!("{name}{{")) && l.contains(needle))
            .unwrap_or_else(|| panic!("no {name} with {needle}:\n{parsed}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let first = sample("osbench_median_seconds", "case=first");
    let second = sample("osbench_median_seconds", "case=second");
    assert!(first >= 0.02 && second >= 0.1, "{parsed}");
    assert!(sample("osbench_median_ci_low_seconds", "case=first") <= first);
    assert!(sample("osbench_median_ci_high_seconds", "case=second") >= second);
    assert!(parsed.contains("bench=command,case=first,config=default,host="));
    // The planted slowdown: ratio above 1, verdict slower (gauge 1).
    assert!(
        sample("osbench_ratio", "candidate=second") > 1.5,
        "{parsed}"
    );
    assert_eq!(sample("osbench_verdict", "verdict=slower"), 1.0, "{parsed}");
}

#[test]
fn openmetrics_of_a_bandwidth_run_is_in_bytes_per_second() {
    if !python_has("openmetrics_of_bandwidth", "prometheus_client") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("stream.prom");
    let out = quick_run("stream:kind=unix", &["--openmetrics", arg(&file)]);
    common::ok(out);
    let parsed = python(PARSE_OPENMETRICS, &[arg(&file)]);
    assert!(
        parsed.contains("TYPE osbench_median_bytes_per_second gauge bytes_per_second"),
        "{parsed}"
    );
    assert!(!parsed.contains("osbench_median_seconds"), "{parsed}");
    let value = |name: &str| -> f64 {
        let prefix = format!("{name}{{bench=stream,case=unix,config=default,host=");
        let line = parsed.lines().find(|l| l.starts_with(&prefix));
        let line = line.unwrap_or_else(|| panic!("no {name}:\n{parsed}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let median = value("osbench_median_bytes_per_second");
    assert!(
        value("osbench_median_ci_low_bytes_per_second") <= median,
        "{parsed}"
    );
    assert!(
        value("osbench_median_ci_high_bytes_per_second") >= median,
        "{parsed}"
    );
}

/// A `time` document of one command named `prog` sleeping `secs`, with each
/// run made an invocation of its own, so that separately saved documents
/// compare by replicates.
fn saved_run(dir: &Path, name: &str, secs: &str) -> PathBuf {
    let path = dir.join(name);
    let out = osbench(common::tmp_store("outputs.sqlite"))
        .args(["time", "--no-store", "-q", "--warmup", "0", "--runs", "6"])
        .args(["-n", "prog", "--shell", &format!("sleep {secs}")])
        .args(["--json", arg(&path)])
        .output()
        .unwrap();
    common::ok(out);
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for s in doc["series"].as_array_mut().unwrap() {
        let n = s["samples"].as_array().unwrap().len();
        s["invocations"] = s["samples"].clone();
        s["invocation_samples"] = vec![1; n].into();
    }
    fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

/// Validates `xml` against tests/data/junit.xsd; the validator's complaint, if any.
const VALIDATE_JUNIT: &str = r#"
import sys, xmlschema
schema = xmlschema.XMLSchema(sys.argv[1])
errors = [str(e) for e in schema.iter_errors(sys.argv[2])]
print("valid" if not errors else "\n".join(errors))
"#;

fn junit_schema() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/junit.xsd")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn junit_of_compare_is_schema_valid_and_fails_the_slower_case() {
    if !python_has("junit_of_compare", "xmlschema") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fast = saved_run(dir.path(), "fast.json", "0.02");
    let slow = saved_run(dir.path(), "slow.json", "0.1");
    let junit = dir.path().join("junit.xml");
    let bmf = dir.path().join("bmf.json");
    let metrics = dir.path().join("compare.prom");
    let out = osbench(common::tmp_store("outputs.sqlite"))
        .args(["compare", arg(&fast), arg(&slow)])
        .args(["--junit", arg(&junit), "--bmf", arg(&bmf)])
        .args(["--openmetrics", arg(&metrics)])
        .output()
        .unwrap();
    common::ok(out);
    let xml = fs::read_to_string(&junit).unwrap();
    assert_eq!(
        python(VALIDATE_JUNIT, &[&junit_schema(), arg(&junit)]).trim(),
        "valid",
        "{xml}"
    );
    assert!(xml.contains("failures=\"1\""), "{xml}");
    let name = format!("name=\"prog: {} vs {}\"", slow.display(), fast.display());
    assert!(
        xml.contains("classname=\"osbench.command\"") && xml.contains(&name),
        "{xml}"
    );
    assert!(xml.contains("<failure type=\"slower\""), "{xml}");

    // --bisect-exit on compare: bad; the other way round good.
    for (a, b, code) in [(&fast, &slow, 1), (&slow, &fast, 0)] {
        let out = osbench(common::tmp_store("outputs.sqlite"))
            .args(["compare", arg(a), arg(b), "--bisect-exit"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
    }

    // With a gate above the change the case passes.
    let out = osbench(common::tmp_store("outputs.sqlite"))
        .args(["compare", arg(&fast), arg(&slow), "--gate", "900"])
        .args(["--junit", arg(&junit)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let xml = fs::read_to_string(&junit).unwrap();
    assert_eq!(
        python(VALIDATE_JUNIT, &[&junit_schema(), arg(&junit)]).trim(),
        "valid"
    );
    assert!(
        xml.contains("failures=\"0\"") && !xml.contains("<failure"),
        "{xml}"
    );

    // Bencher Metric Format: every side's median in ns within its interval.
    let bmf: serde_json::Value = serde_json::from_slice(&fs::read(&bmf).unwrap()).unwrap();
    for (side, floor) in [(&fast, 2e7), (&slow, 1e8)] {
        let name = format!("command: prog @ {}", side.display());
        let latency = &bmf[&name]["latency"];
        let value = latency["value"]
            .as_f64()
            .unwrap_or_else(|| panic!("{name}: {bmf}"));
        assert!(value >= floor, "{bmf}");
        assert!(latency["lower_value"].as_f64().unwrap() <= value);
        assert!(latency["upper_value"].as_f64().unwrap() >= value);
    }
    // The comparison's OpenMetrics: each side under its run label.
    if python_has("openmetrics_of_compare", "prometheus_client") {
        let parsed = python(PARSE_OPENMETRICS, &[arg(&metrics)]);
        let run = |p: &Path| format!("run={}", p.display());
        assert!(
            parsed.contains(&run(&fast)) && parsed.contains(&run(&slow)),
            "{parsed}"
        );
        assert!(parsed.contains("osbench_verdict{"), "{parsed}");
    }
}

#[test]
fn junit_of_a_run_with_configurations_is_schema_valid() {
    if !python_has("junit_of_run", "xmlschema") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("run.xml");
    let bmf = dir.path().join("run.bmf.json");
    let files = ["--junit", arg(&junit), "--bmf", arg(&bmf)];
    let out = quick_run("syscall:case=null", &[&TWO_CONFIGS[..], &files].concat());
    common::ok(out);
    assert_eq!(
        python(VALIDATE_JUNIT, &[&junit_schema(), arg(&junit)]).trim(),
        "valid"
    );
    let xml = fs::read_to_string(&junit).unwrap();
    // Two rounds cannot reach significance: the case is skipped, not failed.
    assert!(
        xml.contains("name=\"null: b vs a\"") && xml.contains("<skipped"),
        "{xml}"
    );
    let bmf: serde_json::Value = serde_json::from_slice(&fs::read(&bmf).unwrap()).unwrap();
    assert!(
        bmf["syscall: null [a]"]["latency"]["value"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{bmf}"
    );
    assert!(bmf["syscall: null [b]"].is_object(), "{bmf}");
    // Two rounds cannot decide: --bisect-exit says skip.
    let bisect = ["--bisect-exit"];
    let out = quick_run("syscall:case=null", &[&TWO_CONFIGS[..], &bisect].concat());
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
}

/// The Python with `kcidb_io` (`$OSBENCH_KCIDB_PYTHON`, else python3), or
/// `None`, said, when there is none; fails when `OSBENCH_REQUIRE_KCIDB=1`.
pub(crate) fn kcidb_python(test: &str) -> Option<String> {
    let python3 = std::env::var("OSBENCH_KCIDB_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&python3)
        .args(["-c", "import kcidb_io"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(python3);
    }
    let why = format!("{python3} cannot import kcidb_io (pip install kcidb-io)");
    assert!(
        std::env::var("OSBENCH_REQUIRE_KCIDB").as_deref() != Ok("1"),
        "OSBENCH_REQUIRE_KCIDB=1 but {why}"
    );
    eprintln!("skipped {test}: {why}");
    None
}

/// Validates a KCIDB file against the latest schema exactly; its tests' statuses.
pub(crate) const VALIDATE_KCIDB: &str = r#"
import sys, json, kcidb_io
data = json.load(open(sys.argv[1]))
kcidb_io.schema.LATEST.validate_exactly(data)
print(" ".join(t["status"] for t in data["tests"]))
"#;

#[test]
fn kcidb_of_compare_and_run_is_schema_valid_with_the_verdict_as_status() {
    let Some(python3) = kcidb_python("kcidb") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fast = saved_run(dir.path(), "fast.json", "0.02");
    let slow = saved_run(dir.path(), "slow.json", "0.1");
    let kcidb = dir.path().join("kcidb.json");
    // Slower beyond a gate of 5 %: FAIL; within a gate of 900 %: PASS.
    for (gate, status) in [("5", "FAIL"), ("900", "PASS")] {
        let out = osbench(common::tmp_store("outputs.sqlite"))
            .args(["compare", arg(&fast), arg(&slow), "--gate", gate])
            .args(["--kcidb", arg(&kcidb)])
            .output()
            .unwrap();
        assert!(out.status.code().is_some(), "{}", text(&out.stderr));
        assert_eq!(
            python_of(&python3, VALIDATE_KCIDB, &[arg(&kcidb)]).trim(),
            status
        );
    }
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(&kcidb).unwrap()).unwrap();
    let test = &doc["tests"][0];
    assert_eq!(test["path"], "osbench.command.prog", "{doc}");
    assert_eq!(test["number"]["unit"], "s", "{doc}");
    // A run of two configurations over two rounds cannot decide: DONE, not PASS.
    let out = quick_run(
        "syscall:case=null",
        &[&TWO_CONFIGS[..], &["--kcidb", arg(&kcidb)]].concat(),
    );
    common::ok(out);
    assert_eq!(
        python_of(&python3, VALIDATE_KCIDB, &[arg(&kcidb)]).trim(),
        "DONE"
    );
    // A run of one configuration: each case a measurement (DONE) with its unit.
    common::ok(quick_run("syscall:case=null", &["--kcidb", arg(&kcidb)]));
    assert_eq!(
        python_of(&python3, VALIDATE_KCIDB, &[arg(&kcidb)]).trim(),
        "DONE"
    );
    let doc: serde_json::Value = serde_json::from_slice(&fs::read(&kcidb).unwrap()).unwrap();
    assert_eq!(doc["tests"][0]["number"]["unit"], "ns", "{doc}");
    assert!(
        doc["checkouts"][0]["id"]
            .as_str()
            .unwrap()
            .starts_with("osbench:")
    );
}

#[test]
fn bisect_exit_says_bad_good_or_skip_as_git_expects() {
    let slower = time_ab("0.02", "0.1", &["--bisect-exit"]);
    assert_eq!(slower.status.code(), Some(1), "{}", text(&slower.stderr));
    assert!(text(&slower.stderr).contains("osbench: bisect: bad"));
    let faster = time_ab("0.1", "0.02", &["--bisect-exit"]);
    assert_eq!(faster.status.code(), Some(0), "{}", text(&faster.stderr));
    // A gate above the change: not bad.
    let gated = time_ab("0.02", "0.1", &["--bisect-exit", "--gate", "900"]);
    assert_eq!(gated.status.code(), Some(0), "{}", text(&gated.stderr));
    // Two runs cannot decide: skip.
    let few = osbench(common::tmp_store("outputs.sqlite"))
        .args([
            "time",
            "--no-store",
            "-q",
            "--warmup",
            "0",
            "--runs",
            "2",
            "--bisect-exit",
        ])
        .args(["--shell", "sleep 0.02", "sleep 0.05"])
        .output()
        .unwrap();
    assert_eq!(few.status.code(), Some(125), "{}", text(&few.stderr));
    // An error (a command that fails), and a bad command line: skip, not bad.
    let failing = osbench(common::tmp_store("outputs.sqlite"))
        .args([
            "time",
            "--no-store",
            "-q",
            "--runs",
            "3",
            "--bisect-exit",
            "true",
            "false",
        ])
        .output()
        .unwrap();
    assert_eq!(
        failing.status.code(),
        Some(125),
        "{}",
        text(&failing.stderr)
    );
    let usage = osbench(common::tmp_store("outputs.sqlite"))
        .args(["compare", "--bisect-exit", "--no-such-flag", "a", "b"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(125), "{}", text(&usage.stderr));
}

#[test]
fn bad_outputs_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(Vec<String>, &str); 5] = [
        (
            vec!["--openmetrics".into(), "/nonexistent/dir/m.prom".into()],
            "/nonexistent/dir",
        ),
        (
            vec!["--junit".into(), "-".into(), "--bmf".into(), "-".into()],
            "standard output",
        ),
        (
            vec!["--junit".into(), arg(&dir.path().join("j.xml")).into()],
            "--junit",
        ),
        (vec!["--bisect-exit".into()], "--bisect-exit"),
        (
            vec!["--bmf".into(), "/nonexistent/b.json".into()],
            "/nonexistent",
        ),
    ];
    for (extra, needle) in cases {
        let out = osbench(common::tmp_store("outputs.sqlite"))
            .args(["time", "--no-store", "-q", "--runs", "2", "true"])
            .args(&extra)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        let expected = if extra[0] == "--bisect-exit" { 125 } else { 2 };
        assert_eq!(out.status.code(), Some(expected), "{extra:?}: {err}");
        assert!(err.contains(needle), "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
    }
    assert!(!dir.path().join("j.xml").exists());
    let out = osbench(common::tmp_store("outputs.sqlite"))
        .args([
            "compare", "a.json", "b.json", "--by", "host", "--junit", "j.xml",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--by host writes no OpenMetrics"));
}
