//! The HTML report in a real browser: headless Chromium (Debian's `chromium`
//! package) loads the report of a small real run, takes a screenshot and
//! dumps the DOM it built; the tables, the plots (a case's history from the
//! store among them) and a hostile label (as text) must be in it. Without
//! Chromium the test is skipped with the reason printed, unless
//! `OSBENCH_REQUIRE_BROWSER=1` (set by .ci/run): then it fails.

use std::fs::{self, File};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use resvg::tiny_skia::Pixmap;

const LABEL: &str = "<script>alert(1)</script>";
const WINDOW: (u32, u32) = (1200, 6000);

/// `chromium` (or `chromium-browser`) on the PATH.
fn find_chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
}

/// A report page as headless Chromium shows it: its screenshot and the
/// DOM it built, each from a fresh run of the browser with one profile.
struct Page<'a> {
    browser: &'a Path,
    dir: &'a Path,
    profile: PathBuf,
    url: String,
}

impl<'a> Page<'a> {
    fn open(browser: &'a Path, dir: &'a Path, html: &Path) -> Self {
        let profile = dir.join("profile");
        fs::create_dir(&profile).unwrap();
        let url = format!("file://{}", html.display());
        Self {
            browser,
            dir,
            profile,
            url,
        }
    }

    fn screenshot(&self) -> Pixmap {
        let shot = self.dir.join("shot.png");
        let log = File::create(self.dir.join("screenshot.log")).unwrap();
        let mode = format!("--screenshot={}", shot.display());
        chromium(self.browser, &self.profile, &mode, &self.url, log);
        Pixmap::decode_png(&fs::read(&shot).expect("a screenshot")).unwrap()
    }

    fn dom(&self) -> String {
        let dom_file = self.dir.join("dom.html");
        let out = File::create(&dom_file).unwrap();
        chromium(self.browser, &self.profile, "--dump-dom", &self.url, out);
        fs::read_to_string(&dom_file).unwrap()
    }
}

/// Runs headless Chromium on `url` with `mode` (a --screenshot or --dump-dom
/// argument), stdout to `stdout`, everything it writes kept in `profile`;
/// kills its whole process group after it ends or after two minutes.
fn chromium(browser: &Path, profile: &Path, mode: &str, url: &str, stdout: File) {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.join("data").display()
        ))
        .arg(format!("--window-size={},{}", WINDOW.0, WINDOW.1))
        .arg(mode)
        .arg(url)
        .env("HOME", profile)
        .env("XDG_CONFIG_HOME", profile.join("config"))
        .env("XDG_CACHE_HOME", profile.join("cache"))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // SAFETY: kill(2) with the negated id of the group created above for
    // this browser only; it touches no memory of ours.
    unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
    let _ = child.wait();
    let status = status.expect("chromium finished within two minutes");
    assert!(status.success(), "chromium {mode}: {status}");
}

/// `osbench ARGS LAST` (ARGS split at whitespace), which must succeed.
fn osbench_ok(args: &str, last: &Path) {
    let out = common::osbench(common::tmp_store("html-browser-results.sqlite"))
        .args(args.split_whitespace())
        .arg(last)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "osbench {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Chromium, or `None` (the test `name` skipped, the reason printed)
/// unless `OSBENCH_REQUIRE_BROWSER=1`: then the test fails.
fn chromium_or_skip(name: &str) -> Option<PathBuf> {
    let browser = find_chromium();
    if browser.is_none() {
        let why = "chromium is not installed (Debian: apt-get install chromium)";
        if std::env::var("OSBENCH_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("OSBENCH_REQUIRE_BROWSER=1 but {why}");
        }
        eprintln!("skipped {name}: {why}");
    }
    browser
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(browser) = chromium_or_skip("report_renders_in_headless_chromium") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");

    // A small real run with every kind of plot: a ctx ring, a latency
    // distribution, and two configurations (a comparison).
    osbench_ok(
        "run ctx:procs=2,size=0 wakeup:wait=futex,count=300 syscall:case=null --config a= --config b= \
         --rounds 2 --samples 3 --sample-time 1 --warmup 0 -q --json",
        &json,
    );
    let mut doc: serde_json::Value = serde_json::from_slice(&fs::read(&json).unwrap()).unwrap();
    doc["run"]["label"] = LABEL.into();
    fs::write(&json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let html = dir.path().join("report.html");
    // With the history of a case from the store the run was saved in.
    osbench_ok(
        &format!("report {} --history syscall:null --html", json.display()),
        &html,
    );
    let page = Page::open(&browser, dir.path(), &html);

    // The screenshot: the page's size, and not blank: plenty of drawn pixels,
    // and the orange of the second configuration's line in the run-order plot.
    let image = page.screenshot();
    assert_eq!((image.width(), image.height()), WINDOW);
    let pixels = image.pixels();
    let drawn = pixels
        .iter()
        .filter(|p| p.red() < 200 || p.green() < 200 || p.blue() < 200)
        .count();
    assert!(
        drawn > pixels.len() / 100,
        "only {drawn} of {} pixels are drawn",
        pixels.len()
    );
    let near = |v: u8, want: u8| v.abs_diff(want) <= 12;
    let orange = pixels
        .iter()
        .filter(|p| near(p.red(), 0xf2) && near(p.green(), 0x8e) && near(p.blue(), 0x2b))
        .count();
    assert!(
        orange > 20,
        "no plot line is visible ({orange} orange pixels)"
    );

    // The DOM the browser built: tables, every plot as SVG, the label as text.
    let dom = page.dom();
    for needle in [
        "<th>95% CI of median</th>",
        "<th>p99.9</th>",
        "<td class=\"too-few\">", // 2 rounds: the sign-flip test cannot reach p < 0.05
        "<h3>Environment</h3>",
        "<figure id=\"doc-0-ctx-size\">",
        "<figure id=\"doc-0-latency-cdf-wakeup\">",
        "<figure id=\"doc-0-comparison\">",
        "<figure id=\"doc-0-samples-syscall\">",
        "<section id=\"history\">",
        "<figure id=\"history-0\">",
    ] {
        assert!(dom.contains(needle), "the page lacks {needle}");
    }
    // Each figure holds its plot as SVG (parsed, so the browser drew it).
    assert_eq!(dom.matches("<figure").count(), dom.matches("<svg").count());
    assert!(
        dom.matches("<svg").count() >= 5,
        "{} plots",
        dom.matches("<svg").count()
    );
    assert!(dom.matches("<table").count() >= 5);
    assert!(dom.contains("<h2>Run: &lt;script&gt;alert(1)&lt;/script&gt;</h2>"));
    assert!(!dom.to_lowercase().contains("<script"), "a script element");
}

/// The fixture document with `stacks` (folded stack, samples) as the
/// profile of its `syscall null [a]`, written to `path`.
fn profiled_fixture(path: &Path, stacks: serde_json::Value) {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&fs::read(common::fixture("report.json")).unwrap()).unwrap();
    let a = doc["series"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|s| s["bench"] == "syscall" && s["config"] == "a")
        .unwrap();
    let samples: u64 = stacks
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    a["profile"] = serde_json::json!({"profiled": {
        "event": "cpu-clock", "period": 100000, "scope": "the case's tasks",
        "passes": [{"ops": 1000.0, "wall_ns": 50000000, "samples": samples, "stacks": stacks}],
    }});
    fs::write(path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

#[test]
fn flame_graphs_render_in_headless_chromium() {
    let Some(browser) = chromium_or_skip("flame_graphs_render_in_headless_chromium") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (dir.path().join("a.json"), dir.path().join("b.json"));
    profiled_fixture(
        &before,
        serde_json::json!({"main;getpid": 60, "main;loop": 40}),
    );
    profiled_fixture(
        &after,
        serde_json::json!({"main;getpid": 60, "main;filter": 90, "main;loop": 40}),
    );
    let html = dir.path().join("report.html");
    osbench_ok(
        &format!("report {} {} --html", before.display(), after.display()),
        &html,
    );
    let page = Page::open(&browser, dir.path(), &html);

    // The differential is drawn (not folded): the frame that grew most is
    // inferno's deepest red, rgb(255,100,100); one that shrank, blue.
    let image = page.screenshot();
    let near = |v: u8, want: u8| v.abs_diff(want) <= 3;
    let count = |rgb: (u8, u8, u8)| {
        image
            .pixels()
            .iter()
            .filter(|p| near(p.red(), rgb.0) && near(p.green(), rgb.1) && near(p.blue(), rgb.2))
            .count()
    };
    assert!(count((255, 100, 100)) > 1000, "no red frame");
    // getpid: 60 of 100 samples, scaled to 190, then 60: 54 fewer of 90 at most.
    assert!(count((160, 160, 255)) > 1000, "no blue frame");

    // Every flame graph is an SVG of the DOM, the folded ones too; no script.
    let dom = page.dom();
    assert!(dom.contains("<h3 id=\"where-the-time-went\">Where the time went</h3>"));
    // The differential and each side's in the comparison; each run's own.
    assert_eq!(dom.matches("<svg class=\"flame\"").count(), 3 + 2);
    assert!(dom.contains("<title>filter (90 samples, 47.37%; +47.37%)</title>"));
    assert!(!dom.to_lowercase().contains("<script"), "a script element");
}
