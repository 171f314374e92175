//! The command line's habits as a user meets them: clap's suggestions and
//! the subcommand's help on a usage error, `--version` naming the commit,
//! shell completions and man pages generated from the clap definitions and
//! accepted by their shells and by groff, `-` as standard output for output
//! files, and verdict colours (on a terminal only, `NO_COLOR` and `--color`
//! honoured). Shells, groff and `script` (for a terminal) are used where
//! installed; a check that needs a missing one says so and is skipped.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `osbench ARGS` in `dir`, its store there, `NO_COLOR` unset.
fn run_in(args: &[&str], dir: &Path) -> Output {
    crate::common::osbench(dir.join("store.sqlite"))
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether `program` can be run (`program --version` or the like succeeds).
fn installed(program: &str, probe: &[&str]) -> bool {
    let found = Command::new(program)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped the {program} check: {program} is not installed here");
    }
    found
}

#[test]
fn a_misspelt_option_keeps_claps_tip_and_points_to_the_subcommands_help() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(&["run", "--sampels", "3"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("osbench: error: unexpected argument '--sampels' found")
            && lines[0].ends_with("(see osbench run --help)"),
        "{stderr}"
    );
    assert_eq!(lines[1], "  tip: a similar argument exists: '--samples'");
    // Given before the subcommand, a global option does not hide which it is.
    let out = run_in(
        &["--color", "never", "time", "--rnus", "2", "true"],
        dir.path(),
    );
    assert!(text(&out.stderr).contains("(see osbench time --help)"));
    let out = run_in(&["frobnicate"], dir.path());
    assert!(text(&out.stderr).ends_with("(see osbench --help)\n"));
}

/// The tips a newcomer from hyperfine, lmbench and hackbench met (issue 38):
/// each names what this subcommand takes for what the flag meant, and no
/// flag is told to go after `--` where the words there are not values.
#[test]
fn a_flag_from_another_tool_gets_what_this_subcommand_takes() {
    let dir = tempfile::tempdir().unwrap();
    let err = |args: &[&str]| {
        let out = run_in(args, dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        text(&out.stderr)
    };
    assert_eq!(
        err(&["run", "syscall", "-n", "5"]),
        "osbench: error: unexpected argument '-n' found (see osbench run --help)\n  \
         tip: for -n (repetitions), use '--samples 5' (samples per case)\n"
    );
    assert_eq!(
        err(&["run", "--runs", "5"]),
        "osbench: error: unexpected argument '--runs' found (see osbench run --help)\n  \
         tip: for hyperfine's --runs (runs of each command), use '--samples 5' (samples per \
         case)\n"
    );
    let configs = [
        "run", "syscall", "--config", "a=", "--config", "b=", "--runs", "5",
    ];
    assert!(err(&configs).contains("use '--rounds 5' (interleaved rounds)"));
    // history takes --width now (every command that prints a table does); a
    // misspelling of it gets clap's similar flag, not the `--` tip.
    assert_eq!(
        err(&["history", "--wdith", "90"]),
        "osbench: error: unexpected argument '--wdith' found (see osbench history --help)\n  \
         tip: a similar argument exists: '--width'\n"
    );
    assert!(
        err(&["time", "--runs", "5", "--samples", "3", "true"])
            .contains("is --runs in `osbench time`, which this line already gives")
    );
    assert!(err(&["run", "-g", "50"]).contains("select 'messaging:groups=50'"));
    assert!(err(&["time", "--samples", "5", "true"]).contains("use '--runs 5'"));
    for args in [
        &["run", "syscall", "-n", "5"][..],
        &["history", "--wdith", "90"],
        &["compare", "--runs", "3", "a", "b"],
        &["loop", "-n", "5"],
        &["time", "-g", "5", "true"],
    ] {
        assert!(!err(args).contains("'-- -"), "{args:?}: clap's `--` tip");
    }
}

/// Unknown benchmarks, parameters and values lead with the nearest name.
#[test]
fn a_near_miss_of_a_benchmark_or_case_says_what_was_meant() {
    let dir = tempfile::tempdir().unwrap();
    let err = |args: &[&str]| {
        let out = run_in(&[args, &["--no-store"]].concat(), dir.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: something was measured");
        text(&out.stderr)
    };
    assert!(
        err(&["run", "sycall"])
            .starts_with("osbench: error: unknown benchmark 'sycall'; did you mean 'syscall'?")
    );
    assert!(err(&["run", "syscal:case=null"]).contains("did you mean 'syscall'?"));
    assert!(err(&["run", "syscall:case=nul"]).starts_with(
        "osbench: error: invalid value 'nul' for syscall:case; did you mean 'null'? allowed: null,"
    ));
    assert!(err(&["run", "syscall:nul"]).contains("did you mean 'syscall:null'?"));
    assert!(err(&["run", "hackbench"]).contains("did you mean 'messaging'?"));
    let out = run_in(&["list", "sycall"], dir.path());
    assert!(text(&out.stderr).contains("no benchmark 'sycall'; did you mean 'syscall'?"));
}

#[test]
fn version_names_the_commit_that_env_records() {
    let dir = tempfile::tempdir().unwrap();
    let version = text(&run_in(&["--version"], dir.path()).stdout);
    assert!(version.starts_with("osbench 0."), "{version}");
    let env: serde_json::Value =
        serde_json::from_slice(&run_in(&["env", "--json"], dir.path()).stdout).unwrap();
    let profile = env["build"]["profile"].as_str().unwrap();
    assert!(version.contains(&format!("{profile} build")), "{version}");
    match env["build"]["commit"].as_str() {
        Some(commit) => assert!(version.contains(&format!("commit {commit}")), "{version}"),
        None => assert!(version.contains("commit unknown"), "{version}"),
    }
}

#[test]
fn completions_come_from_the_clap_definitions_and_their_shells_accept_them() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = run_in(&["completions", shell], dir.path());
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        for word in ["compare", "samples", "export-json", "parameter-list"] {
            assert!(script.contains(word), "{shell}: no {word}");
        }
        if installed(shell, &["-c", "true"]) {
            let file = dir.path().join(format!("osbench.{shell}"));
            std::fs::write(&file, &script).unwrap();
            // Each shell's own syntax check (fish: --no-execute).
            let check = if shell == "fish" {
                "--no-execute"
            } else {
                "-n"
            };
            let status = Command::new(shell).arg(check).arg(&file).status().unwrap();
            assert!(status.success(), "{shell} refuses the script");
        }
    }
    let out = run_in(&["completions", "tcsh"], dir.path());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_pages_list_every_subcommand_and_render() {
    let dir = tempfile::tempdir().unwrap();
    let page = text(&run_in(&["man"], dir.path()).stdout);
    assert!(page.contains(".TH osbench 1"), "{page}");
    for sub in ["run", "time", "compare", "completions", "man"] {
        assert!(page.contains(&format!("osbench\\-{sub}(1)")), "no {sub}");
    }
    let run = text(&run_in(&["man", "run"], dir.path()).stdout);
    assert!(run.contains(".TH osbench-run 1"), "{run}");
    assert!(run.contains("\\-\\-samples"), "{run}");
    let out = run_in(&["man", "nosuch"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("man pages exist for: list, run"));
    if installed("groff", &["--version"]) {
        let mut groff = Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        groff
            .stdin
            .take()
            .unwrap()
            .write_all(run.as_bytes())
            .unwrap();
        let out = groff.wait_with_output().unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_dash_writes_the_file_to_standard_output_and_the_tables_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let stored = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/small-run.json");
    for (option, check) in [
        ("--json", "{\n  \"schema\": \"osbench/1\""),
        ("--csv", "bench,case,config,round,sample,value,unit\n"),
        ("--markdown", "# osbench results"),
    ] {
        let out = run_in(&["export", stored, option, "-"], dir.path());
        assert!(out.status.success(), "{option}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).starts_with(check),
            "{option}: {}",
            text(&out.stdout)
        );
        assert!(text(&out.stderr).contains("osbench: wrote standard output"));
    }
    // A measuring command: the file alone on stdout, its tables on stderr.
    for option in ["--json", "--export-json"] {
        let args = [
            "time",
            "--runs",
            "2",
            "true",
            option,
            "-",
            "--no-store",
            "-q",
        ];
        let out = run_in(&args, dir.path());
        assert!(out.status.success(), "{option}: {}", text(&out.stderr));
        let file: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            file.get("series").or(file.get("results")).is_some(),
            "{option}"
        );
        assert!(
            text(&out.stderr).contains("Command 1: true"),
            "{option}: no table on stderr"
        );
    }
    assert!(
        !dir.path().join("-").exists(),
        "a file named '-' was written"
    );
    let out = run_in(&["run", "--json", "-", "--csv", "-"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("2 output files are '-' (standard output)"));
}

/// `osbench time` of a fast and a slow command: the slow one's verdict is
/// "slower" (six rounds of 0.2 s against none). Returns stdout.
fn slower_verdict(color: &str, no_color: bool, terminal: bool, dir: &Path) -> Option<String> {
    let args = [
        "time",
        "--color",
        color,
        "--runs",
        "6",
        "--warmup",
        "0",
        "--no-store",
        "-q",
        "true",
        "sleep 0.2",
    ];
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    let mut cmd = if terminal {
        if !installed("script", &["--version"]) {
            return None;
        }
        // script(1) gives the command a terminal and copies what it prints.
        let line = std::iter::once(bin.to_str().unwrap())
            .chain(args)
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let mut c = Command::new("script");
        c.args(["-qec", &line, "/dev/null"]);
        c
    } else {
        let mut c = Command::new(bin);
        c.args(args);
        c
    };
    cmd.current_dir(dir)
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("slower"), "{stdout}");
    Some(stdout)
}

#[test]
fn verdicts_are_coloured_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let red = "\x1b[31m"; // the verdict in red, whatever its words
    let piped = slower_verdict("auto", false, false, dir.path()).unwrap();
    assert!(!piped.contains('\x1b'), "colour in a pipe: {piped}");
    let forced = slower_verdict("always", true, false, dir.path()).unwrap();
    assert!(forced.contains(red), "--color always: {forced}");
    if let Some(terminal) = slower_verdict("auto", false, true, dir.path()) {
        assert!(
            terminal.contains(red),
            "no colour on a terminal: {terminal}"
        );
        let no_color = slower_verdict("auto", true, true, dir.path()).unwrap();
        assert!(
            !no_color.contains(red),
            "colour despite NO_COLOR: {no_color}"
        );
        let never = slower_verdict("never", false, true, dir.path()).unwrap();
        assert!(
            !never.contains(red),
            "colour despite --color never: {never}"
        );
    }
}

#[test]
fn completion_offers_benchmarks_and_placements_not_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let script = text(&run_in(&["completions", "bash"], dir.path()).stdout);
    // The `run` block: its words include every benchmark, and --pin's values are the placements.
    let run = script
        .split("\n        osbench__subcmd__run)")
        .nth(1)
        .expect("a block for run");
    let run = &run[..run.find("\n        osbench__").unwrap_or(run.len())];
    for word in ["syscall", "ctx", "messaging", "all"] {
        assert!(
            run.contains(&format!(" {word}")),
            "no {word} in run's completion"
        );
    }
    assert!(run.contains("compgen -W \"none same spread\""), "{run}");
}

#[test]
fn list_shows_the_benchmarks_named_and_refuses_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(&["list", "ctx", "syscall:null"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    let families: Vec<&str> = listing
        .lines()
        .filter(|l| l.contains(" — "))
        .map(|l| l.split(" — ").next().unwrap())
        .collect();
    assert_eq!(families, ["syscall", "ctx"], "{listing}");
    let out = run_in(&["list", "nosuch"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("the benchmarks are: syscall"),
        "{}",
        text(&out.stderr)
    );
}
