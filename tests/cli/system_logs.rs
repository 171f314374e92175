//! The system logs kept with every run, read from fake trees
//! (`OSBENCH_LOGS_ROOT`): two runs whose kernel configurations differ are
//! compared and the changed symbols listed as possible confounders; a planted
//! oops in the second run's kernel log is warned about, on the terminal, in
//! `--markdown` and in the HTML report; `--no-logs` keeps none. Checks correctness only.

use crate::common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use common::osbench;

/// A tree with `/proc/config.gz` holding `kconfig` and a `/dev/kmsg` holding `kmsg`.
fn tree(dir: &Path, name: &str, kconfig: &str, kmsg: &str) -> PathBuf {
    let root = dir.join(name);
    let put = |path: &str, bytes: &[u8]| {
        let p = root.join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, bytes).unwrap();
    };
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(kconfig.as_bytes()).unwrap();
    put("proc/config.gz", &gz.finish().unwrap());
    put("dev/kmsg", kmsg.as_bytes());
    put("proc/modules", b"kvm 1 0 - Live 0x0\n");
    put("proc/sys/vm/swappiness", b"60\n");
    root
}

/// A `time` run of `true` with its logs read from `root`, written to `json`.
fn run(root: Option<&Path>, json: &Path, extra: &[&str]) -> serde_json::Value {
    let mut cmd = osbench(common::tmp_store("system-logs.sqlite"));
    if let Some(root) = root {
        cmd.env("OSBENCH_LOGS_ROOT", root);
    }
    let out = cmd
        .args(["time", "--no-store", "-q", "--runs", "3", "-n", "p", "true"])
        .arg("--json")
        .arg(json)
        .args(extra)
        .output()
        .unwrap();
    common::ok(out);
    serde_json::from_slice(&fs::read(json).unwrap()).unwrap()
}

#[test]
fn compare_lists_changed_kconfig_symbols_and_warns_of_a_new_oops() {
    let dir = tempfile::tempdir().unwrap();
    let boot = "6,1,1000000,-;Linux version 6.1\n";
    let a = tree(dir.path(), "a", "CONFIG_HZ=250\nCONFIG_KASAN=y\n", boot);
    let oops = format!(
        "{boot}1,2,5000000,-;BUG: kernel NULL pointer dereference, address: 0000000000000008\n\
         4,3,5000100,-;Call Trace:\n"
    );
    let b = tree(dir.path(), "b", "CONFIG_HZ=1000\nCONFIG_KASAN=y\n", &oops);
    let (ja, jb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let doc_a = run(Some(&a), &ja, &[]);
    let doc_b = run(Some(&b), &jb, &[]);
    assert_eq!(doc_a["env"]["logs"]["kconfig_source"], "/proc/config.gz");
    assert_ne!(
        doc_a["env"]["kconfig_sha256"],
        doc_b["env"]["kconfig_sha256"]
    );
    assert_eq!(doc_b["env"]["logs"]["dmesg"]["oopses"], 1);
    assert_eq!(doc_b["env"]["logs"]["dmesg"]["call_traces"], 1);

    let (record, markdown) = (dir.path().join("compare.json"), dir.path().join("c.md"));
    let out = osbench(common::tmp_store("system-logs.sqlite"))
        .arg("compare")
        .arg(&ja)
        .arg(&jb)
        .arg("--json")
        .arg(&record)
        .arg("--markdown")
        .arg(&markdown)
        .output()
        .unwrap();
    let record: serde_json::Value = serde_json::from_slice(&fs::read(&record).unwrap()).unwrap();
    let kernel_log = record["kernel_log"][0].as_str().unwrap_or_default();
    assert!(kernel_log.contains("1 oops"), "{record}");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let hz = stdout
        .lines()
        .find(|l| l.contains("kconfig.CONFIG_HZ"))
        .unwrap_or_else(|| panic!("no kconfig.CONFIG_HZ:\n{stdout}"));
    assert!(hz.contains("250") && hz.contains("1000"), "{hz}");
    assert!(!stdout.contains("CONFIG_KASAN"), "{stdout}");
    assert!(stdout.contains("kconfig_sha256"), "{stdout}");
    assert!(
        stderr.contains("a new kernel warning or oops appeared")
            && stderr.contains("NULL pointer dereference"),
        "{stderr}"
    );
    assert!(stdout.contains("Kernel log: "), "{stdout}");
    // The Markdown and the HTML report say the same.
    let markdown = fs::read_to_string(&markdown).unwrap();
    let line = markdown.lines().skip_while(|l| *l != "Kernel log:").nth(2);
    assert!(
        line.is_some_and(|l| l.starts_with("- ")
            && l.contains("b.json: a new kernel warning or oops appeared")
            && l.contains("NULL pointer dereference")),
        "{markdown}"
    );
    let html = dir.path().join("r.html");
    let page = html_report(&ja, &jb, &html);
    let section = page.split("<h3>Kernel log</h3>").nth(1).unwrap_or_default();
    let item = section.split("</li>").next().unwrap_or_default();
    assert!(
        item.contains("<li class=\"warn\">")
            && item.contains("b.json: a new kernel warning or oops appeared")
            && item.contains("NULL pointer dereference"),
        "{page}"
    );

    // The same logs on both sides: no symbol listed, no warning.
    let out = osbench(common::tmp_store("system-logs.sqlite"))
        .arg("compare")
        .arg(&jb)
        .arg(&jb)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains("kconfig.") && !stdout.contains("Kernel log"),
        "{stdout}"
    );
    assert!(!html_report(&jb, &jb, &html).contains("Kernel log"));
}

/// `osbench report A B --html HTML`'s page.
fn html_report(a: &Path, b: &Path, html: &Path) -> String {
    let out = osbench(common::tmp_store("system-logs.sqlite"))
        .arg("report")
        .args([a, b])
        .arg("--html")
        .arg(html)
        .output()
        .unwrap();
    common::ok(out);
    fs::read_to_string(html).unwrap()
}

#[test]
fn no_logs_keeps_none_and_an_unreadable_log_is_unavailable_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("none.json");
    let doc = run(None, &json, &["--no-logs"]);
    assert!(doc["env"].get("logs").is_none() && doc["env"].get("kconfig_sha256").is_none());
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let doc = run(Some(&empty), &json, &["--logs"]);
    let unavailable = &doc["env"]["logs"]["unavailable"];
    assert!(
        unavailable["dmesg"].as_str().unwrap().contains("/dev/kmsg"),
        "{unavailable}"
    );
    assert!(
        unavailable["kconfig"]
            .as_str()
            .unwrap()
            .contains("/proc/config.gz")
    );
}

#[test]
fn env_logs_shows_the_summary_a_run_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path(), "t", "CONFIG_HZ=250\n", "6,1,1000000,-;hello\n");
    let out = osbench(common::tmp_store("system-logs.sqlite"))
        .env("OSBENCH_LOGS_ROOT", &root)
        .args(["env", "--logs"])
        .output()
        .unwrap();
    let (stdout, _) = common::ok(out);
    let line = |key: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(key))
            .map(str::to_string)
    };
    assert!(
        line("logs.kconfig_source ").is_some_and(|l| l.ends_with("/proc/config.gz")),
        "{stdout}"
    );
    assert!(
        line("logs.dmesg.lines ").is_some_and(|l| l.ends_with(" 1")),
        "{stdout}"
    );
    assert!(line("kconfig_sha256 ").is_some(), "{stdout}");
    assert!(
        line("logs.archive ").is_none(),
        "the archive is not a value to show: {stdout}"
    );
}
