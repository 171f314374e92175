//! osbench in a LAVA lab (issue 43): a plan's kernel A/B written by `osbench
//! lava` as a job LAVA's own schema check accepts (`lava_common.schemas`,
//! from Debian's lava-dispatcher), with contrib/lava/osbench.yaml a valid
//! test definition; then the job run by the real dispatcher (`lava-run`,
//! no server) on the QEMU device of contrib/lava/qemu-tcg-device.yaml
//! (TCG, Debian's kernel as `scripts/qemu-kernel.sh` extracts it, osbench's
//! initramfs), its log imported with `import --lava`: every boot stored with
//! the kernel it booted, the merged document paired by round with its
//! comparison, nothing stored twice when imported again; and the lab's
//! faults cut from the real log — a document cut short, a job cancelled
//! before a boot — each a boot said missing (status 2), never a silent gap.
//! A board's document as the test definition prints it comes back the same way.
//!
//! Needs lava-dispatcher (Debian), qemu-system-x86_64 and a kernel in
//! `$OSBENCH_QEMU_KERNEL`; without them the tests skip and say so, unless
//! `OSBENCH_REQUIRE_LAVA=1` (set by .ci/run). Correctness only.

use crate::common;

use std::path::Path;
use std::process::{Command, Output};

/// Debian's Python, which lava-dispatcher's modules are installed for.
const PYTHON: &str = "/usr/bin/python3";

/// Whether LAVA's dispatcher (its Python modules and `lava-run`) is here;
/// says why not, and fails when `OSBENCH_REQUIRE_LAVA=1`.
fn lava_or_skip(test: &str) -> bool {
    let modules = Command::new(PYTHON)
        .args(["-c", "import lava_common.schemas, lava_dispatcher"])
        .output();
    let run = Path::new("/usr/bin/lava-run").is_file();
    let why = match modules {
        Ok(o) if o.status.success() && run => return true,
        _ => "lava-dispatcher is not installed (apt-get install lava-dispatcher)",
    };
    let required = std::env::var("OSBENCH_REQUIRE_LAVA").is_ok_and(|v| v == "1");
    assert!(!required, "OSBENCH_REQUIRE_LAVA=1 but {why}");
    eprintln!("{test}: skipped: {why}");
    false
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A kernel A/B plan (`base`, and `nosmt` with that word appended) over 2 rounds.
fn ab_plan(dir: &Path, kernel: &Path) -> std::path::PathBuf {
    let plan = dir.join("ab.toml");
    let text = format!(
        "select = [\"syscall:case=getpid\"]\n\
         args = [\"--no-perf\", \"--samples\", \"3\", \"--sample-time\", \"1\", \"--warmup\", \"0\"]\n\
         [boot_rounds]\nrounds = 2\n\
         [[boot_rounds.kernel]]\nname = \"base\"\nkernel = \"{k}\"\n\
         [[boot_rounds.kernel]]\nname = \"nosmt\"\nkernel = \"{k}\"\nappend = \"nosmt\"\n",
        k = kernel.display()
    );
    std::fs::write(&plan, text).unwrap();
    plan
}

/// `osbench lava` of `plan` into DIR/job.yaml.
fn write_job(dir: &Path, plan: &Path, image: &Path) -> std::path::PathBuf {
    let job = dir.join("job.yaml");
    let out = common::osbench(dir.join("unused.sqlite"))
        .arg("lava")
        .arg(plan)
        .arg("--initramfs")
        .arg(image)
        .args([
            "--seed",
            "7",
            "--boot-minutes",
            "4",
            "--run-minutes",
            "6",
            "-o",
        ])
        .arg(&job)
        .output()
        .unwrap();
    let (_, err) = common::ok(out);
    assert!(err.contains("4 boot(s), seed 7"), "{err}");
    job
}

/// LAVA's own checks of a job definition and of a test definition.
const VALIDATE: &str = r#"
import sys, yaml
from lava_common.schemas import validate
from lava_common.schemas.test.testdef import validate as validate_testdef
validate(yaml.safe_load(open(sys.argv[1])), strict=True)
validate_testdef(yaml.safe_load(open(sys.argv[2])))
print("valid")
"#;

#[test]
fn lava_s_schema_accepts_the_job_and_the_test_definition() {
    if !lava_or_skip("lava_schema") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Files need not exist to be checked: the dispatcher fetches them later.
    let plan = ab_plan(dir.path(), Path::new("/nonexistent/vmlinuz"));
    let job = write_job(dir.path(), &plan, Path::new("/nonexistent/osbench.cpio"));
    let testdef = Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/lava/osbench.yaml");
    let out = Command::new(PYTHON)
        .args(["-c", VALIDATE])
        .arg(&job)
        .arg(&testdef)
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout).trim(), "valid", "{}", text(&out.stderr));
}

/// `osbench import --lava LOG` into `store`.
fn import(store: &Path, log: &Path) -> Output {
    common::osbench(store)
        .args(["import", "--lava"])
        .arg(log)
        .output()
        .unwrap()
}

#[test]
fn a_kernel_ab_runs_under_lava_run_and_comes_back_paired() {
    if !lava_or_skip("lava_run") {
        return;
    }
    let Some(kernel) = crate::qemu::kernel_or_skip("lava_run") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let image = crate::qemu::initramfs(dir.path());
    let plan = ab_plan(dir.path(), &kernel);
    let job = write_job(dir.path(), &plan, &image);
    let device = dir.path().join("qemu01.yaml");
    std::fs::write(
        &device,
        include_str!("../../contrib/lava/qemu-tcg-device.yaml"),
    )
    .unwrap();
    let out = Command::new("/usr/bin/lava-run")
        .arg("--job-id")
        .arg(format!("osbench-test-{}", std::process::id()))
        .arg("--output-dir")
        .arg(dir.path().join("out"))
        .arg("--device")
        .arg(&device)
        .arg(&job)
        .output()
        .unwrap();
    // The dispatcher with no server logs to standard error, as log.yaml's entries.
    let log_text = text(&out.stderr);
    assert!(out.status.success(), "{log_text}");
    assert!(log_text.contains("Job finished correctly"), "{log_text}");
    let log = dir.path().join("log.yaml");
    std::fs::write(&log, &log_text).unwrap();
    if let Ok(keep) = std::env::var("OSBENCH_KEEP_LAVA_LOG") {
        std::fs::write(keep, &log_text).unwrap();
    }

    let store = dir.path().join("lab.sqlite");
    let (stdout, _) = common::ok(import(&store, &log));
    assert_eq!(stdout.matches(": stored as run ").count(), 5, "{stdout}");
    let (again, _) = common::ok(import(&store, &log));
    assert_eq!(again.matches("not added again").count(), 5, "{again}");
    // Every boot records the kernel it booted, and the merged run is paired by round.
    let release = kernel.file_name().unwrap().to_string_lossy()["vmlinuz-".len()..].to_string();
    let db = osbench::store::Store::open_existing(osbench::store::Location::File(store.clone()))
        .unwrap();
    for id in 1..=4 {
        let doc = db.document(id).unwrap().unwrap();
        assert_eq!(doc.env.kernel, release);
        assert!(doc.run.meta.contains_key("lava_boot"));
    }
    let merged = db.document(5).unwrap().unwrap();
    let configs: Vec<&str> = merged.run.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(configs, ["base", "nosmt"]);
    assert_eq!(merged.run.schedule.len(), 2);
    assert_eq!(
        merged.comparisons.len(),
        1,
        "the paired comparison is attached"
    );

    faults(dir.path(), &log_text);
}

/// The lab's faults, cut from the real log: each boot missing is said, the rest stored once.
fn faults(dir: &Path, log_text: &str) {
    let lines: Vec<&str> = log_text.lines().collect();
    let last = |marker: &str| lines.iter().rposition(|l| l.contains(marker)).unwrap();
    // Cut short on the console: the last boot's document stops before its end.
    let short = dir.join("short.yaml");
    std::fs::write(&short, lines[..last("OSBENCH-DOC-END")].join("\n")).unwrap();
    let store = dir.join("faults.sqlite");
    let out = import(&store, &short);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("s4-r2-") && err.contains("cut short"), "{err}");
    assert!(err.contains("1 boot(s) missing"), "{err}");
    // Boots 1-3 stored; one complete round is not merged (the paired test needs two), said.
    assert_eq!(text(&out.stdout).matches(": stored as run ").count(), 3);
    assert!(err.contains("the kernels' boots are not merged"), "{err}");
    // Cancelled (or timed out in boot) before the last boot: never started.
    let cancelled = dir.join("cancelled.yaml");
    std::fs::write(&cancelled, lines[..last("OSBENCH-LAVA-START")].join("\n")).unwrap();
    let out = import(&store, &cancelled);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("never started"), "{err}");
    // The three boots it has are stored already.
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches("not added again").count(), 3, "{stdout}");
    // The whole log then adds only the boot that was missing, and the four boots' merge.
    let whole = dir.join("whole.yaml");
    std::fs::write(&whole, log_text).unwrap();
    let (stdout, _) = common::ok(import(&store, &whole));
    assert_eq!(stdout.matches(": stored as run ").count(), 2, "{stdout}");
    // A job that never reached osbench at all.
    let none = dir.join("none.yaml");
    let first = lines
        .iter()
        .position(|l| l.contains("OSBENCH-LAVA-START"))
        .unwrap();
    std::fs::write(&none, lines[..first].join("\n")).unwrap();
    let out = import(&store, &none);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("never reached osbench"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_board_s_document_printed_by_the_test_definition_is_imported_once() {
    // What contrib/lava/osbench.yaml does on a board: `lava --document FILE`.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("board.sqlite");
    let out = common::osbench(&store)
        .args(["lava", "--document"])
        .arg(common::fixture("small-run.json"))
        .output()
        .unwrap();
    let (lines, _) = common::ok(out);
    assert!(lines.starts_with("OSBENCH-LAVA-START dev"), "{lines}");
    assert!(lines.contains("\nOSBENCH-CASE "), "{lines}");
    // As a LAVA test shell's log carries it, after other output.
    let log = dir.path().join("board.log");
    std::fs::write(
        &log,
        format!("+ osbench run …\n{lines}+ lava-test-case …\n"),
    )
    .unwrap();
    let (first, _) = common::ok(import(&store, &log));
    assert_eq!(first.matches(": stored as run 1").count(), 1, "{first}");
    let (again, _) = common::ok(import(&store, &log));
    assert!(again.contains("already stored as run 1"), "{again}");
}
