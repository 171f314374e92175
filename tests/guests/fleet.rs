//! Fleet runs as a user meets them: two "hosts" that are this machine under
//! two names, reached through a throwaway sshd, and one that cannot be
//! reached. The good hosts' documents are stored and written, the bad one is
//! named, the exit status says the run was partial, nothing is left running,
//! each document keeps the system logs its host's agent read (none with
//! `--no-logs`); then `compare --by host` and `history --by host` read the
//! fleet back.
//! Needs openssh-server and root; skips and says so without them, unless
//! `OSBENCH_REQUIRE_SSH=1` (as `.ci/run` sets). No test asserts on speed.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Output;

use common::{Sshd, osbench};
use osbench::store::read_document;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A hosts file: `a` and `b` reach the sshd (b with this osbench named by
/// path unless `install`), `down` a port nobody listens on.
fn hosts_file(sshd: &Sshd, dir: &Path, install: bool) -> std::path::PathBuf {
    let options = |port: Option<u16>| {
        let mut o = sshd.ssh_options();
        if let Some(p) = port {
            o[0] = format!("Port={p}");
        }
        format!("{o:?}")
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port(); // the listener is dropped: nothing listens there now
    let path_line = if install {
        String::new()
    } else {
        format!("osbench = {:?}\n", env!("CARGO_BIN_EXE_osbench"))
    };
    let text = format!(
        "[[host]]\nname = \"a\"\ntarget = \"root@127.0.0.1\"\nssh_options = {}\n{path_line}\n\
         [[host]]\nname = \"b\"\ntarget = \"root@127.0.0.1\"\nssh_options = {}\n{path_line}\n\
         [[host]]\nname = \"down\"\ntarget = \"root@127.0.0.1\"\nssh_options = {}\n",
        options(None),
        options(None),
        options(Some(closed)),
    );
    let path = dir.join(if install {
        "install.toml"
    } else {
        "hosts.toml"
    });
    fs::write(&path, text).unwrap();
    path
}

fn fleet_run(store: &Path, hosts: &Path, label: &str, work: &str, extra: &[&str]) -> Output {
    fleet_run_with_logs(store, hosts, label, work, extra, None)
}

/// [`fleet_run`], this client's system logs (it should read none) in `logs`.
fn fleet_run_with_logs(
    store: &Path,
    hosts: &Path,
    label: &str,
    work: &str,
    extra: &[&str],
    logs: Option<&Path>,
) -> Output {
    let mut cmd = osbench(store);
    if let Some(logs) = logs {
        cmd.env("OSBENCH_LOGS_ROOT", logs);
    }
    cmd.args(["fleet", "run", &format!("spin:work={work}"), "--no-perf"])
        .args(["--samples", "5", "--sample-time", "1", "--warmup", "0"])
        .arg("--hosts")
        .arg(hosts)
        .args(["--label", label])
        .args(extra)
        .env("OSBENCH_GUEST_TIMEOUT", "60")
        .output()
        .unwrap()
}

#[test]
fn a_fleet_runs_on_every_reachable_host_and_names_the_one_it_could_not_reach() {
    if !common::sshd_usable("a_fleet_runs_on_every_reachable_host") {
        return;
    }
    let mark = "fleet-test";
    let cache = tempfile::tempdir().unwrap();
    // The hosts' agents read their system logs from one tree, this client
    // (which must not: a host's are its own) from another.
    let dir = tempfile::tempdir().unwrap();
    let (remote_logs, local_logs) = (dir.path().join("remote"), dir.path().join("local"));
    common::logs_tree(&remote_logs, "Linux version of the remote host");
    common::logs_tree(&local_logs, "Linux version of the client");
    let sshd = Sshd::start(&[&format!(
        "SetEnv OSBENCH_TEST_MARK={mark} XDG_CACHE_HOME={} OSBENCH_LOGS_ROOT={}",
        cache.path().display(),
        remote_logs.display()
    )]);
    let store = dir.path().join("fleet.sqlite");
    let out_dir = dir.path().join("before");

    // 1. --install: a and b get this osbench in their cache; `down` fails alone.
    let install = hosts_file(&sshd, dir.path(), true);
    let out_arg = out_dir.to_string_lossy().into_owned();
    let out = fleet_run_with_logs(
        &store,
        &install,
        "before",
        "100",
        &["--install", "--out", &out_arg, "--meta", "commit=f1"],
        Some(&local_logs),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("host 'down'") && err.contains("partial"),
        "{err}"
    );
    assert!(err.contains("1 of 3 hosts"), "{err}");
    assert!(err.contains("could not be reached over ssh"), "{err}");
    // What osbench audits here (the load, busy processes) is not the unreached host's.
    assert!(!err.contains("warning: down:"), "{err}");
    let table = text(&out.stdout);
    assert!(
        table
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .eq(["case", "a", "b"]),
        "{table}"
    );
    for host in ["a", "b"] {
        let doc = read_document(&out_dir.join(format!("{host}.json"))).unwrap();
        assert_eq!(doc.run.host.as_deref(), Some(host));
        assert_eq!(doc.run.label.as_deref(), Some("before"));
        assert_eq!(doc.run.meta.get("commit").map(String::as_str), Some("f1"));
        assert!(doc.run.complete && doc.series.len() == 1);
        // The environment is the host's own, as its agent saw it, and so are its logs.
        assert!(!doc.env.kernel.is_empty());
        let log = common::kept_kernel_log(&doc.env);
        assert!(
            log.ends_with("] Linux version of the remote host"),
            "{log:?}"
        );
    }
    assert!(!out_dir.join("down.json").exists());
    let installed: Vec<_> = fs::read_dir(cache.path().join("osbench"))
        .unwrap()
        .collect();
    assert_eq!(
        installed.len(),
        1,
        "one copy, shared by both hosts: {installed:?}"
    );

    // 2. The hosts' own osbench, named by path; a slower spin afterwards; no logs.
    let hosts = hosts_file(&sshd, dir.path(), false);
    let no_logs_dir = dir.path().join("after");
    let no_logs_arg = no_logs_dir.to_string_lossy().into_owned();
    let out = fleet_run(
        &store,
        &hosts,
        "after",
        "100",
        &["--no-logs", "--out", &no_logs_arg],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("host 'down': could not be reached over ssh"),
        "{err}"
    );
    assert!(!err.contains("warning: down:"), "{err}");
    for host in ["a", "b"] {
        let doc = read_document(&no_logs_dir.join(format!("{host}.json"))).unwrap();
        assert!(doc.env.logs.is_none() && doc.env.kconfig_sha256.is_none());
    }

    // 3. Read back by host.
    let history = osbench(&store)
        .args(["history", "--by", "host"])
        .output()
        .unwrap();
    let table = text(&history.stdout);
    assert!(history.status.success(), "{}", text(&history.stderr));
    assert!(table.contains("spin work=100"), "{table}");
    let compare = osbench(&store)
        .args(["compare", "before", "after", "--by", "host"])
        .output()
        .unwrap();
    let report = text(&compare.stdout);
    assert!(compare.status.success(), "{}", text(&compare.stderr));
    assert!(
        report.contains("by host: 2 hosts on both sides"),
        "{report}"
    );
    assert!(report.contains("fleet  B/A"), "{report}");
    assert!(report.contains("too few hosts for the test"), "{report}");
    // The same from the directory fleet run --out wrote, against the store's runs.
    let from_dir = osbench(&store)
        .arg("compare")
        .arg(&out_dir)
        .args(["after", "--by", "host"])
        .output()
        .unwrap();
    assert!(from_dir.status.success(), "{}", text(&from_dir.stderr));
    eprintln!("{report}");
    drop(sshd);
    assert!(
        common::left_running(mark).is_empty(),
        "left running: {:?}",
        common::left_running(mark)
    );
}

#[test]
fn a_host_whose_files_cannot_be_written_loses_no_other_host() {
    if !common::sshd_usable("a_host_whose_files_cannot_be_written") {
        return;
    }
    let mark = "fleet-save-test";
    let sshd = Sshd::start(&[&format!("SetEnv OSBENCH_TEST_MARK={mark}")]);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("fleet.sqlite");
    let out_dir = dir.path().join("out");
    let hosts = hosts_file(&sshd, dir.path(), false);
    let out_arg = out_dir.to_string_lossy().into_owned();
    // The --out directory is checked before measuring and removed by the
    // first set-up: every host's file then fails when the run ends.
    let gone = format!("gone=rm -rf '{out_arg}'");
    let out = fleet_run(
        &store,
        &hosts,
        "saves",
        "100",
        &[
            "--out",
            &out_arg,
            "--config",
            &gone,
            "--config",
            "kept=true",
            "--rounds",
            "2",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for host in ["a", "b", "down"] {
        assert!(err.contains(&format!("host '{host}'")), "{host}: {err}");
    }
    // Both measured hosts are stored and shown, though no file could be written.
    let table = text(&out.stdout);
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|l| l.split_whitespace().eq(["case", "a", "b"])),
        "{table}\n{err}"
    );
    let history = osbench(&store)
        .args(["history", "--label", "saves", "--by", "host"])
        .output()
        .unwrap();
    assert!(history.status.success(), "{}", text(&history.stderr));
    assert!(
        text(&history.stdout).contains("spin work=100"),
        "{}",
        text(&history.stdout)
    );
    drop(sshd);
    assert!(
        common::left_running(mark).is_empty(),
        "{:?}",
        common::left_running(mark)
    );
}

#[test]
fn a_host_without_osbench_is_told_about_install() {
    if !common::sshd_usable("a_host_without_osbench_is_told_about_install") {
        return;
    }
    let sshd = Sshd::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts.toml");
    fs::write(
        &hosts,
        format!(
            "[[host]]\nname = \"bare\"\ntarget = \"root@127.0.0.1\"\nssh_options = {:?}\n\
             osbench = \"/nonexistent/osbench\"\n",
            sshd.ssh_options()
        ),
    )
    .unwrap();
    let out = fleet_run(&dir.path().join("s.sqlite"), &hosts, "x", "100", &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("host 'bare'") && err.contains("--install"),
        "{err}"
    );
}

#[test]
fn each_host_applies_and_restores_its_own_toggles_and_a_failing_set_up_names_its_host() {
    if !common::sshd_usable("each_host_applies_and_restores_its_own_toggles") {
        return;
    }
    let mark = "fleet-config-test";
    // Each "host" keeps its toggle in a directory of its own, which its
    // session is given as $TOGGLE_DIR; host `c`'s does not exist, so its
    // set-up fails as a toggle the host refuses would.
    let sshd = Sshd::start(&[
        &format!("SetEnv OSBENCH_TEST_MARK={mark}"),
        "AcceptEnv TOGGLE_DIR",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let toggles = |host: &str| dir.path().join(host);
    fs::create_dir(toggles("a")).unwrap();
    fs::create_dir(toggles("b")).unwrap();
    let mut hosts_toml = String::new();
    for host in ["a", "b", "c"] {
        let mut options = sshd.ssh_options();
        options.push(format!("SetEnv=TOGGLE_DIR={}", toggles(host).display()));
        hosts_toml += &format!(
            "[[host]]\nname = \"{host}\"\ntarget = \"root@127.0.0.1\"\nssh_options = {options:?}\n\
             osbench = {:?}\n",
            env!("CARGO_BIN_EXE_osbench")
        );
    }
    let hosts = dir.path().join("hosts.toml");
    fs::write(&hosts, hosts_toml).unwrap();
    let store = dir.path().join("fleet.sqlite");
    let out_dir = dir.path().join("runs");
    let out_arg = out_dir.to_string_lossy().into_owned();

    // `off` checks that the toggle is not applied; `on` applies it, and its
    // tear-down notes that it was still applied before restoring it.
    let log = r#">> "$TOGGLE_DIR/log""#;
    let off = format!(r#"off=test ! -e "$TOGGLE_DIR/toggle" && echo off-clear {log}"#);
    let on = format!(r#"on=echo on > "$TOGGLE_DIR/toggle" && echo on-set {log}"#);
    let on_teardown = format!(
        r#"on=test -f "$TOGGLE_DIR/toggle" && echo on-was-set {log}; rm "$TOGGLE_DIR/toggle""#
    );
    let out = fleet_run(
        &store,
        &hosts,
        "toggles",
        "100",
        &[
            "--config",
            &off,
            "--config",
            &on,
            "--teardown",
            &on_teardown,
            "--rounds",
            "3",
            "--out",
            &out_arg,
        ],
    );
    let err = text(&out.stderr);
    eprintln!("{err}\n{}", text(&out.stdout));
    assert_eq!(out.status.code(), Some(2), "{err}");
    // `c` is named, with the configuration and what its shell said.
    let c_line = err
        .lines()
        .find(|l| l.contains("host 'c'"))
        .unwrap_or_else(|| panic!("host c is not named: {err}"));
    assert!(
        c_line.contains("the set-up of configuration '")
            && c_line.contains("failed")
            && c_line.contains("nonexistent"),
        "{c_line}"
    );
    assert!(err.contains("1 of 3 hosts"), "{err}");
    assert!(!out_dir.join("c.json").exists());

    for host in ["a", "b"] {
        let doc = read_document(&out_dir.join(format!("{host}.json"))).unwrap();
        assert!(doc.run.complete, "{host}: {:?}", doc.run.stopped_because);
        assert_eq!(doc.run.host.as_deref(), Some(host));
        let names: Vec<&str> = doc.run.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["off", "on"]);
        assert_eq!(doc.run.schedule.len(), 3, "three rounds");
        let configs: Vec<&str> = doc.series.iter().map(|s| s.key.config.as_str()).collect();
        assert_eq!(configs, ["off", "on"]);
        assert!(doc.series.iter().all(|s| s.rounds.len() == 3));
        // Applied and restored in every round, on this host, in the order
        // the run's schedule gives; nothing left applied.
        let expected: Vec<&str> = doc
            .run
            .schedule
            .iter()
            .flat_map(|round| round.iter())
            .flat_map(|config| match config.as_str() {
                "on" => vec!["on-set", "on-was-set"],
                _ => vec!["off-clear"],
            })
            .collect();
        let log = fs::read_to_string(toggles(host).join("log")).unwrap();
        assert_eq!(log.lines().collect::<Vec<_>>(), expected, "{host}");
        assert!(
            !toggles(host).join("toggle").exists(),
            "{host}: left applied"
        );
    }
    let table = text(&out.stdout);
    assert!(table.contains("spin work=100 [on]"), "{table}");
    assert!(
        table.contains("A = off, B = on, by host: 2 hosts"),
        "{table}"
    );

    // compare --by host reads the fleet run back: configurations within each host.
    let compare = osbench(&store)
        .args(["compare", "toggles", "--by", "host", "--json", "-"])
        .output()
        .unwrap();
    assert!(compare.status.success(), "{}", text(&compare.stderr));
    let record: serde_json::Value = serde_json::from_slice(&compare.stdout).unwrap();
    let hosts: Vec<&str> = record["configurations"][0]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["a", "b"]);
    let report = text(&compare.stderr);
    assert!(
        report.contains("A = off, B = on, by host: 2 hosts"),
        "{report}"
    );
    drop(sshd);
    assert!(
        common::left_running(mark).is_empty(),
        "left running: {:?}",
        common::left_running(mark)
    );
}

#[test]
fn a_hosts_knobs_are_set_and_restored_on_the_host() {
    if !common::sshd_usable("a_hosts_knobs_are_set_and_restored_on_the_host") {
        return;
    }
    let mark = "fleet-knob-test";
    let sshd = Sshd::start(&[&format!("SetEnv OSBENCH_TEST_MARK={mark}")]);
    let dir = tempfile::tempdir().unwrap();
    // One host: every host of this test is this machine, whose files they would share.
    let hosts = dir.path().join("hosts.toml");
    let host = format!(
        "[[host]]\nname = \"a\"\ntarget = \"root@127.0.0.1\"\nssh_options = {:?}\nosbench = {:?}\n",
        sshd.ssh_options(),
        env!("CARGO_BIN_EXE_osbench")
    );
    fs::write(&hosts, host).unwrap();
    let knob = dir.path().join("knob");
    fs::write(&knob, "always [madvise] never\n").unwrap();
    let out_dir = dir.path().join("runs");
    let (on, off) = (
        format!("on:{}=always", knob.display()),
        format!("off:{}=never", knob.display()),
    );
    let out_arg = out_dir.to_string_lossy().into_owned();
    let extra = [
        "--config", &off, "--config", &on, "--rounds", "2", "--out", &out_arg,
    ];
    let store = dir.path().join("fleet.sqlite");
    let out = fleet_run(&store, &hosts, "knobs", "100", &extra);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(fs::read_to_string(&knob).unwrap().trim(), "madvise");
    let doc = read_document(&out_dir.join("a.json")).unwrap();
    let record = &doc.run.knobs[0];
    assert_eq!(record.place.as_deref(), Some("host 'a'"));
    assert_eq!((record.found.as_str(), record.restored), ("madvise", true));
    assert_eq!(record.set.len(), 2);
    // A value the host's file does not list is refused there, before measuring.
    fs::write(&knob, "always [madvise] never\n").unwrap();
    let bad = format!("on:{}=sometimes", knob.display());
    let extra = ["--config", &off, "--config", &bad, "--out", &out_arg];
    let out = fleet_run(&store, &hosts, "knobs-refused", "100", &extra);
    let err = text(&out.stderr);
    assert!(
        err.contains("host 'a'") && err.contains("does not accept 'sometimes'"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(&knob).unwrap(),
        "always [madvise] never\n"
    );
    drop(sshd);
    assert!(common::left_running(mark).is_empty(), "left running");
}

#[test]
fn a_fleet_refuses_configurations_it_cannot_run_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("guests.toml");
    fs::write(
        &file,
        "[[config]]\nname = \"here\"\n[[config]]\nname = \"uml\"\nguest = \"uml\"\n",
    )
    .unwrap();
    // No host is reached: the target resolves nowhere, and nothing gets that far.
    let fleet = |extra: &[&str]| {
        let out = osbench(dir.path().join("s.sqlite"))
            .args(["fleet", "run", "spin", "--host", "a=nobody@invalid."])
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), text(&out.stderr))
    };
    let experiment = file.to_string_lossy().into_owned();
    let (code, err) = fleet(&["--experiment", &experiment]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("configuration 'uml' names a guest") && err.contains("fleet host"),
        "{err}"
    );
    let (code, err) = fleet(&["--rounds", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--rounds repeats configurations"), "{err}");
}
