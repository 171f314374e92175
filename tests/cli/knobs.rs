//! Knobs (`--config NAME:KNOB=VALUE`): osbench writes each configuration's
//! values before its blocks and restores the values it found — after a
//! normal run whichever configuration ran last, after a failing set-up,
//! after SIGINT and SIGTERM, and (through the warden) after SIGKILL of
//! osbench — and refuses, before measuring, a value the file does not
//! accept. On a fake tree in a temporary directory: typed knobs (`thp`, a
//! sysctl) through `$OSBENCH_KNOB_ROOT`, a plain number through `set`'s path.
//! A regular file is not sysfs: a bracketed file restored holds the word in
//! force (`madvise`), not the list. On real knobs where the test can: a
//! net sysctl in a private network namespace, haltpoll's parameter as root.

use super::kit::*;

/// A fake tree: `ROOT/sys/kernel/mm/transparent_hugepage/enabled` (THP's
/// choices), `ROOT/proc/sys/kernel/fake` (0) and `ROOT/num` (100).
struct Tree {
    dir: tempfile::TempDir,
}

const THP: &str = "sys/kernel/mm/transparent_hugepage/enabled";
const SYSCTL: &str = "proc/sys/kernel/fake";

impl Tree {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let tree = Tree { dir };
        for (file, text) in [
            (THP, "always [madvise] never\n"),
            (SYSCTL, "0\n"),
            ("num", "100\n"),
        ] {
            let path = tree.path(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        tree
    }

    fn path(&self, file: &str) -> std::path::PathBuf {
        self.dir.path().join(file)
    }

    fn read(&self, file: &str) -> String {
        fs::read_to_string(self.path(file))
            .unwrap()
            .trim()
            .to_string()
    }

    /// osbench with this tree as the knobs' root and a store of its own.
    fn osbench(&self) -> Command {
        let mut cmd = osbench(self.path("store.sqlite"));
        cmd.env("OSBENCH_KNOB_ROOT", self.dir.path());
        cmd
    }

    /// `osbench run syscall:case=null --no-perf -q --rounds 2 QUICK ARGS
    /// --json JSON` with this tree, which must succeed.
    fn run_ok<S: AsRef<std::ffi::OsStr>>(
        &self,
        args: impl IntoIterator<Item = S>,
        json: &Path,
    ) -> std::process::Output {
        let out = self
            .osbench()
            .args([
                "run",
                "syscall:case=null",
                "--no-perf",
                "-q",
                "--rounds",
                "2",
            ])
            .args(QUICK)
            .args(args)
            .arg("--json")
            .arg(json)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// `--config` arguments: a sets num=5 and thp=never, b sets num=7 and
    /// the sysctl; each set-up appends what it sees to seen-a / seen-b.
    fn configs(&self) -> Vec<String> {
        let num = self.path("num");
        let num = num.display();
        let seen = |c: &str, file: &str| {
            let (file, out) = (self.path(file), self.path(&format!("seen-{c}")));
            format!("{c}=cat {} >> {}", file.display(), out.display())
        };
        [
            format!("a:{num}=5"),
            "a:thp=never".into(),
            seen("a", "num"),
            format!("b:{num}=7"),
            "b:sysctl.kernel.fake=1".into(),
            seen("b", THP),
        ]
        .iter()
        .flat_map(|c| ["--config".to_string(), c.clone()])
        .collect()
    }

    fn assert_restored(&self) {
        assert_eq!(self.read("num"), "100");
        // Never written (the run stopped before a's block): still the list.
        let thp = self.read(THP);
        assert!(thp == "madvise" || thp == "always [madvise] never", "{thp}");
        assert_eq!(self.read(SYSCTL), "0");
    }
}

#[test]
fn values_are_restored_whichever_configuration_runs_last_and_recorded() {
    let tree = Tree::new();
    let mut last = Vec::new();
    // Seeds 1 and 3 end with b, 6 and 7 with a.
    for seed in ["1", "3", "6", "7"] {
        let json = tree.path(&format!("run-{seed}.json"));
        let out = tree
            .osbench()
            .args(["run", "syscall:case=null", "--no-perf", "--rounds", "2"])
            .args(QUICK)
            .args(["--seed", seed])
            .args(tree.configs())
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        tree.assert_restored();
        let doc = read_document(&json).unwrap();
        last.push(doc.run.schedule.last().unwrap().last().unwrap().clone());
        let knobs = &doc.run.knobs;
        assert_eq!(knobs.len(), 3, "{knobs:?}");
        let num = knobs.iter().find(|k| k.knob.ends_with("/num")).unwrap();
        assert_eq!((num.found.as_str(), num.restored), ("100", true));
        assert_eq!((num.set["a"].as_str(), num.set["b"].as_str()), ("5", "7"));
        let thp = knobs.iter().find(|k| k.knob == "thp").unwrap();
        assert!(thp.path.ends_with(THP) && thp.found == "madvise" && thp.set.len() == 1);
        let sysctl = knobs
            .iter()
            .find(|k| k.knob == "sysctl.kernel.fake")
            .unwrap();
        assert_eq!(
            (sysctl.found.as_str(), sysctl.set["b"].as_str()),
            ("0", "1")
        );
        assert!(stdout.contains("knob thp ("), "{stdout}");
        assert!(
            stdout.contains("found madvise; a=never; restored"),
            "{stdout}"
        );
        assert_eq!(doc.run.configs[0].knobs.len(), 2);
    }
    // Each set-up saw its configuration's value; b, which leaves THP alone,
    // saw the value found (the list before anything was written, else the word).
    let seen_a = fs::read_to_string(tree.path("seen-a")).unwrap();
    assert!(seen_a.lines().all(|l| l == "5"), "{seen_a}");
    let seen_b = fs::read_to_string(tree.path("seen-b")).unwrap();
    assert!(
        (seen_b.lines()).all(|l| l == "madvise" || l == "always [madvise] never"),
        "{seen_b}"
    );
    last.sort();
    last.dedup();
    assert_eq!(
        last,
        ["a", "b"],
        "the seeds should end with each configuration"
    );
}

#[test]
fn a_refused_value_stops_the_run_before_measuring_and_leaves_the_file_as_it_was() {
    let tree = Tree::new();
    let json = tree.path("refused.json");
    let out = tree
        .osbench()
        .args(["run", "syscall:case=null", "--no-perf", "-q"])
        .args(QUICK)
        .args(["--config", "a:thp=sometimes", "--config", "b:thp=never"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("does not accept 'sometimes'"), "{stderr}");
    assert!(stderr.contains("always, madvise, never"), "{stderr}");
    assert!(stderr.contains("after 0 of"), "{stderr}");
    let thp = fs::read_to_string(tree.path(THP)).unwrap();
    assert_eq!(thp, "always [madvise] never\n");
    // The real THP file, when there is one: read, refused, never written.
    let real = "/sys/kernel/mm/transparent_hugepage/enabled";
    if let Ok(before) = fs::read_to_string(real) {
        let out = osbench(tree.path("store.sqlite"))
            .args([
                "run",
                "syscall:case=null",
                "-q",
                "--config",
                "a:thp=sometimes",
            ])
            .args(["--config", "b="])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("does not accept 'sometimes'"), "{stderr}");
        assert_eq!(fs::read_to_string(real).unwrap(), before);
    }
    // A file that is not there, and a knob osbench does not know.
    for (bad, says) in [
        ("a:sysctl.kernel.absent=1", "cannot read it"),
        ("a:thpp=never", "is not known"),
    ] {
        let out = tree
            .osbench()
            .args([
                "run",
                "syscall:case=null",
                "-q",
                "--config",
                bad,
                "--config",
                "b=",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{bad}: {stderr}");
    }
}

#[test]
fn a_failing_setup_still_restores_the_values() {
    let tree = Tree::new();
    let mut args = tree.configs();
    args.extend(["--config".into(), "c:thp=always".into()]);
    args.extend(["--config".into(), "c=exit 3".into()]);
    let out = tree
        .osbench()
        .args([
            "run",
            "syscall:case=null",
            "--no-perf",
            "-q",
            "--rounds",
            "2",
        ])
        .args(QUICK)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exit status: 3"));
    tree.assert_restored();
}

/// Starts a long run on `tree`, waits until a configuration's value is in
/// force, sends `signal` and returns how osbench ended (`None`: still running
/// after 30 s, killed).
fn signalled(tree: &Tree, signal: libc::c_int) -> Option<std::process::ExitStatus> {
    let mut child = tree
        .osbench()
        .args([
            "run",
            "syscall:case=null",
            "--no-perf",
            "-q",
            "--rounds",
            "1000",
        ])
        .args(["--samples", "50", "--sample-time", "5", "--warmup", "0"])
        .args(tree.configs())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while !["5", "7"].contains(&tree.read("num").as_str()) && waited < 3000 {
        std::thread::sleep(Duration::from_millis(10));
        waited += 1;
    }
    let set = ["5", "7"].contains(&tree.read("num").as_str());
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    assert!(set, "no configuration's value was written within 30 s");
    for _ in 0..300 {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn values_are_restored_after_sigint_and_sigterm() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let tree = Tree::new();
        let status = signalled(&tree, signal).expect("osbench ends after a stop signal");
        // osbench's exit status after a stop signal, whichever: interrupted.
        assert_eq!(status.code(), Some(130), "signal {signal}");
        tree.assert_restored();
    }
}

#[test]
fn the_warden_restores_the_values_after_sigkill() {
    let tree = Tree::new();
    signalled(&tree, libc::SIGKILL).expect("SIGKILL ends osbench");
    // The warden writes the values back once it sees osbench gone.
    for _ in 0..200 {
        if tree.read("num") == "100" && tree.read(SYSCTL) == "0" {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    tree.assert_restored();
}

#[test]
fn a_net_sysctl_in_a_private_namespace_is_set_and_restored() {
    let probe = Command::new("unshare").args(["--net", "true"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: `unshare --net` is not available here (not root?)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("netns.json");
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let script = format!(
        "cat /proc/sys/net/core/somaxconn; {} run syscall:case=null --no-perf -q --rounds 2 \
         --samples 3 --sample-time 1 --warmup 0 --config a:sysctl.net.core.somaxconn=1000 \
         --config b:sysctl.net.core.somaxconn=2000 --json {} >/dev/null && \
         cat /proc/sys/net/core/somaxconn",
        bin.display(),
        json.display()
    );
    let out = Command::new("unshare")
        .args(["--net", "sh", "-c", &script])
        .env("OSBENCH_STORE", dir.path().join("s.sqlite"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0], lines[1], "restored to the value found");
    let doc = read_document(&json).unwrap();
    let knob = &doc.run.knobs[0];
    assert_eq!((knob.found.as_str(), knob.restored), (lines[0], true));
    assert_eq!(knob.path, "/proc/sys/net/core/somaxconn");
}

#[test]
fn haltpoll_is_set_and_restored_when_root_can() {
    let path = "/sys/module/haltpoll/parameters/guest_halt_poll_ns";
    let before = fs::read_to_string(path);
    let writable = before.is_ok() && fs::OpenOptions::new().write(true).open(path).is_ok();
    if !writable {
        eprintln!("skipped: {path} is absent or not writable (not root, no haltpoll)");
        return;
    }
    let before = before.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("haltpoll.json");
    let out = osbench(dir.path().join("s.sqlite"))
        .args([
            "run",
            "syscall:case=null",
            "--no-perf",
            "-q",
            "--rounds",
            "2",
        ])
        .args(QUICK)
        .args(["--config", &format!("off:{path}=0")])
        .args(["--config", &format!("poll:{path}=200000")])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs::read_to_string(path).unwrap(), before);
    let doc = read_document(&json).unwrap();
    assert_eq!(doc.run.knobs[0].found, before.trim());
    assert!(doc.run.knobs[0].restored);
}

#[test]
fn a_guests_knobs_are_set_and_restored_in_the_guest() {
    // A command guest runs `osbench agent` here: its files are this tree.
    let tree = Tree::new();
    let json = tree.path("guest.json");
    // The guest's files are this machine's: g sets a file of its own, so
    // that the two places never write one file (each knows only its writes).
    let num = tree.path("num");
    let guest_num = tree.path("guest-num");
    fs::write(&guest_num, "1\n").unwrap();
    let seen = tree.path("seen-g");
    let out = tree.run_ok(
        [
            "--guest".to_string(),
            "g=command:{osbench} agent".into(),
            "--config".into(),
            format!("g:{}=5", guest_num.display()),
            "--config".into(),
            format!("h:{}=7", num.display()),
            "--config".into(),
            format!("h=cat {} >> {}", num.display(), seen.display()),
        ],
        &json,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("configuration 'g': knob "), "{stdout}");
    tree.assert_restored();
    assert_eq!(fs::read_to_string(&guest_num).unwrap(), "1\n");
    assert_eq!(fs::read_to_string(&seen).unwrap().trim(), "7\n7");
    let doc = read_document(&json).unwrap();
    let places: Vec<_> = doc.run.knobs.iter().map(|k| k.place.as_deref()).collect();
    assert_eq!(places, [None, Some("configuration 'g'")]);
    // A value refused in the guest stops the run there, before measuring.
    let out = tree
        .osbench()
        .args([
            "run",
            "syscall:case=null",
            "-q",
            "--guest",
            "g=command:{osbench} agent",
        ])
        .args(["--config", "g:thp=sometimes", "--config", "h="])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("configuration 'g': knob thp"), "{stderr}");
}

#[test]
fn knobs_add_up_per_configuration_and_one_set_up_may_join_them() {
    let tree = Tree::new();
    let refused = tree
        .osbench()
        .args(["run", "syscall:case=null", "-q", "--config", "a=true"])
        .args([
            "--config",
            "a:thp=never",
            "--config",
            "a=false",
            "--config",
            "b=",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("'a' is given twice"), "{stderr}");
    let json = tree.path("joined.json");
    tree.run_ok(
        [
            "--config",
            "a:thp=never",
            "--config",
            "a=true",
            "--config",
            "a:sysctl.kernel.fake=1",
            "--config",
            "b=",
            "--teardown",
            "a=true",
        ],
        &json,
    );
    let doc = read_document(&json).unwrap();
    let a = &doc.run.configs[0];
    assert_eq!(
        (a.setup.as_deref(), a.teardown.as_deref()),
        (Some("true"), Some("true"))
    );
    assert_eq!(a.knobs.len(), 2);
    assert_eq!(doc.run.configs.len(), 2);
    tree.assert_restored();
}

#[test]
fn an_agents_warden_writes_back_what_it_holds_when_the_agent_is_killed() {
    use std::io::{BufRead, BufReader, Write};
    let tree = Tree::new();
    let num = tree.path("num");
    let mut agent = tree
        .osbench()
        .arg("agent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut replies = BufReader::new(agent.stdout.take().unwrap()).lines();
    let mut next = || replies.next().unwrap().unwrap();
    assert!(next().contains("\"ready\""));
    let stdin = agent.stdin.as_mut().unwrap();
    let hold = serde_json::json!({"hold": {"id": 7, "path": num, "value": "100"}});
    writeln!(stdin, "{hold}").unwrap();
    assert_eq!(next(), r#"{"held":{"held":true}}"#);
    fs::write(&num, "5\n").unwrap(); // the client's write
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(agent.id() as i32, libc::SIGKILL) }, 0);
    agent.wait().unwrap();
    let restored = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(25));
        tree.read("num") == "100"
    });
    assert!(restored, "the agent's warden wrote the value back");
}
