//! scripts/crosscheck.sh's bookkeeping run for real with this build's
//! osbench: the record written as each check ends, a check whose anchor is
//! missing recorded as unavailable (with the reason) while the run goes
//! on, `-c` skipping what the record holds for this machine and build, a
//! misspelt check stopping the run before anything runs, a stop ending an
//! anchor that ignores SIGTERM and leaving no files, `connect` raising a
//! fake lat_connect server's listen backlog and fixing lmbench's interval,
//! the fs rows' directory and placement, schbench's rows of one rate and
//! cyclictest's of one load sharing each round's runs (fakes of both sides;
//! cyclictest on osbench's CPU), the uprobe rows wanting a perf
//! built with BPF skeletons (a fake perf), lat-mem-rd's anchor the median
//! of several lat_mem_rd processes (a fake lmbench source), pagefault's
//! and lat_mmap's the mean of several processes (fake lmbench programs), and
//! scripts/crosscheck-kinds.py setting the record out by machine kind.
//! The checks are `ctx` (osbench alone: its CV) and `sig-install` with
//! lmbench pointed at an empty directory. Nothing is compared: the
//! cross-checks themselves are measurements for a quiet machine
//! (docs/crosscheck.md). A binary of its own: the script starts osbench
//! processes, which the other test binaries' checks for leftovers would see.

use std::path::Path;
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/crosscheck.sh");
const KINDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/crosscheck-kinds.py");

/// The script with two rounds of `args`, this build's osbench, lmbench's
/// programs in `lmbench`, a record at `record` and no wait for a quiet
/// machine.
fn script(record: &Path, lmbench: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(SCRIPT)
        .args(["-r", "2"])
        .args(args)
        .env("OSBENCH", env!("CARGO_BIN_EXE_osbench"))
        .env("CROSSCHECK_RECORD", record)
        .env("LMBENCH", lmbench)
        .env("QUIET_TRIES", "1");
    command
}

/// The script run with no lmbench.
fn crosscheck(record: &Path, args: &[&str]) -> Output {
    let empty = record.with_file_name("no-lmbench");
    std::fs::create_dir_all(&empty).unwrap();
    script(record, &empty, args).output().unwrap()
}

/// A run of the script against one fake lmbench program: its output, what
/// the fake wrote to $FAKE_LOG, and the record's rows.
struct FakeRun {
    out: Output,
    log: String,
    table: Vec<Vec<String>>,
}

/// Runs the script (two rounds of `checks`) with lmbench's programs in
/// `lmbench`, fakes logging their calls to `dir`/log and `env` added: its
/// output, what was logged and the record's rows.
fn run_script(dir: &Path, lmbench: &Path, checks: &[&str], env: &[(&str, &str)]) -> FakeRun {
    let log = dir.join("log");
    let record = dir.join("record.tsv");
    let out = script(&record, lmbench, checks)
        .envs(env.iter().copied())
        .env("FAKE_LOG", &log)
        .output()
        .unwrap();
    FakeRun {
        log: std::fs::read_to_string(&log).unwrap_or_default(),
        table: rows(&record),
        out,
    }
}

/// Runs `check` (two rounds) with lmbench's `name` the shell script `text`
/// (and an `enough` that prints lmbench's 1 s fallback),
/// and `env` added to the script's environment.
fn run_against_fake(name: &str, text: &str, check: &str, env: &[(&str, &str)]) -> FakeRun {
    let dir = tempfile::tempdir().unwrap();
    let lmbench = dir.path().join("lmbench");
    fake_program(&lmbench, name, text);
    // lmbench's calibration as it ends on the development VM: its 1 s fallback.
    fake_program(&lmbench, "enough", "#!/bin/sh\necho 1000000\n");
    run_script(dir.path(), &lmbench, &[check], env)
}

/// A fake program `name` in `dir` (an lmbench's, osbench, schbench): the
/// shell script `text`; its path.
fn fake_program(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The record's rows as fields, header first.
fn rows(record: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// Field `name` of row `row` (1 the first after the header) of a record
/// read by `rows`.
fn field<'a>(table: &'a [Vec<String>], row: usize, name: &str) -> &'a str {
    let at = table[0]
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}: {table:?}"));
    &table[row][at]
}

fn shown(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Whether python3, which the script summarises with, is missing (the
/// test then says it is skipped).
fn without_python3() -> bool {
    without(
        "python3",
        "--version",
        "crosscheck.sh summarises with python3",
    )
}

/// True (and says so, with `why`) when `tool ARG` cannot be run: the test
/// that needs it skips.
fn without(tool: &str, arg: &str, why: &str) -> bool {
    let missing = Command::new(tool).arg(arg).output().is_err();
    if missing {
        eprintln!("skipped: {why}");
    }
    missing
}

#[test]
fn the_record_keeps_each_check_and_continues_and_names_what_is_missing() {
    if without_python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.tsv");

    let misspelt = crosscheck(&record, &["ctx", "no-such-check"]);
    assert_eq!(misspelt.status.code(), Some(2), "{}", shown(&misspelt));
    assert!(
        !record.exists(),
        "a misspelt check ran others first:\n{}",
        shown(&misspelt)
    );

    let first = crosscheck(&record, &["sig-install", "ctx"]);
    assert!(first.status.success(), "{}", shown(&first));
    let table = rows(&record);
    assert_eq!(table.len(), 3, "a header and two rows: {table:?}");
    assert_eq!(field(&table, 1, "check"), "sig-install");
    let verdict = field(&table, 1, "verdict");
    assert!(
        verdict.starts_with("unavailable: ") && verdict.contains("lat_sig"),
        "the missing anchor is named: {:?}",
        table[1]
    );
    assert_eq!(field(&table, 2, "check"), "ctx");
    assert_eq!(field(&table, 2, "rounds"), "2");
    let verdict = field(&table, 2, "verdict");
    assert!(
        verdict.starts_with("yes") || verdict.starts_with("no"),
        "ctx has no anchor: its verdict is its CV's: {:?}",
        table[2]
    );

    let again = crosscheck(&record, &["-c", "sig-install", "ctx"]);
    assert!(again.status.success(), "{}", shown(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("## ctx: recorded already"),
        "{}",
        shown(&again)
    );
    let table = rows(&record);
    let checks: Vec<&str> = (1..table.len())
        .map(|row| field(&table, row, "check"))
        .collect();
    assert_eq!(
        checks,
        ["sig-install", "ctx", "sig-install"],
        "-c measures again only what could not run"
    );

    let kinds = Command::new("python3")
        .arg(KINDS)
        .arg(&record)
        .output()
        .unwrap();
    assert!(kinds.status.success(), "{}", shown(&kinds));
    let text = String::from_utf8_lossy(&kinds.stdout);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("no {name} row:\n{text}"))
            .to_string()
    };
    assert!(line("ctx").contains("CV "), "{text}");
    assert!(
        line("sig-install").contains("unavailable: ")
            && line("sig-install").contains("not measured on"),
        "{text}"
    );
}

/// The processes whose environment holds `entry` (`NAME=value`).
fn with_environment(entry: &str) -> Vec<i32> {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    processes
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == entry.as_bytes()))
        })
        .collect()
}

/// A stop (SIGTERM to every process of the run) while an anchor that
/// ignores SIGTERM runs, as lmbench's harness in effect does (it finishes
/// its run first): the script ends within seconds, kills the anchor, and
/// removes its temporary directory.
#[test]
fn a_stop_ends_an_anchor_that_ignores_sigterm_and_leaves_nothing() {
    if without_python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lmbench = dir.path().join("lmbench");
    let scratch = dir.path().join("tmp");
    std::fs::create_dir_all(&scratch).unwrap();
    let started = dir.path().join("started");
    // The fake anchor writes its pid, then sleeps on with SIGTERM ignored
    // (an ignored signal stays ignored across exec).
    fake_program(
        &lmbench,
        "lat_sig",
        &format!(
            "#!/bin/sh\ntrap '' TERM\necho $$ > '{}'\nexec sleep 600\n",
            started.display()
        ),
    );
    let mut run = script(&dir.path().join("record.tsv"), &lmbench, &["sig-install"])
        .env("TMPDIR", &scratch)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = |secs: u64, done: &mut dyn FnMut() -> bool| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        while !done() && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        done()
    };
    let pid = || {
        std::fs::read_to_string(&started)
            .ok()?
            .trim()
            .parse::<i32>()
            .ok()
    };
    let anchor_started = until(60, &mut || pid().is_some());
    // As Ctrl-C does to a terminal's group: every process of the run at
    // once (the script, its subshells, the anchor), so the subshells die
    // before the script can ask them for their children.
    for process in with_environment(&format!("TMPDIR={}", scratch.display())) {
        // SAFETY: kill(2) with a pid and a signal number.
        unsafe { libc::kill(process, libc::SIGTERM) };
    }
    let mut status = None;
    until(20, &mut || {
        status = run.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        run.kill().ok();
    }
    assert!(anchor_started, "the fake anchor never ran");
    assert_eq!(status.and_then(|s| s.code()), Some(130), "a stop exits 130");
    let anchor = pid().unwrap();
    // Gone, or a zombie waiting for its new parent to reap it.
    let left = std::fs::read_to_string(format!("/proc/{anchor}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false);
    if left {
        // SAFETY: kill(2) of the fake anchor the assertion below reports.
        unsafe { libc::kill(anchor, libc::SIGKILL) };
    }
    assert!(!left, "the anchor that ignored SIGTERM was left running");
    let files: Vec<_> = std::fs::read_dir(&scratch).unwrap().collect();
    assert!(
        files.is_empty(),
        "the run's temporary files were left: {files:?}"
    );
}

/// `connect` with a fake lat_connect whose server is a real listener: the
/// server starts under the script's LD_PRELOAD, which must raise its listen
/// backlog of 100 to net.core.somaxconn (read back with `ss`); the client
/// runs on CPU 0 with lmbench's own interval (ENOUGH=50000), and the server
/// is told to stop after the rounds.
#[test]
fn connect_raises_lat_connects_backlog_and_fixes_its_interval() {
    if without_python3()
        || without(
            "ss",
            "-V",
            "the fake server reads its backlog with ss (iproute2)",
        )
    {
        return;
    }
    let FakeRun { out, log, table } = run_against_fake(
        "lat_connect",
        r#"#!/bin/sh
case $1 in
-s) exec python3 -c '
import socket, subprocess
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(100)
ss = subprocess.run(["ss", "-Hltn", "sport = :%d" % s.getsockname()[1]], capture_output=True, text=True)
print("server backlog", ss.stdout.split()[2], file=open("'"$FAKE_LOG"'", "a"))
' ;;
-S) echo stopped >> "$FAKE_LOG" ;;
*) echo "client ENOUGH=$ENOUGH cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)" >> "$FAKE_LOG"
   echo "TCP/IP connection cost to localhost: 20.0 microseconds" ;;
esac
"#,
        "connect",
        &[("TIME_WAIT_WAIT", "0")],
    );
    assert!(out.status.success(), "{}", shown(&out));
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn").unwrap();
    // The script also defines each check once before the rounds (a server
    // started and stopped), and its exit stops the server again.
    let lines: Vec<&str> = log.lines().collect();
    let servers: Vec<&&str> = lines.iter().filter(|l| l.starts_with("server")).collect();
    let clients: Vec<&&str> = lines.iter().filter(|l| l.starts_with("client")).collect();
    let expected = format!("server backlog {}", somaxconn.trim());
    assert!(
        !servers.is_empty() && servers.iter().all(|l| **l == expected),
        "{lines:?}\n{}",
        shown(&out)
    );
    assert_eq!(
        clients,
        [&"client ENOUGH=50000 cpus=0"; 2],
        "{lines:?}\n{}",
        shown(&out)
    );
    assert_eq!(lines.last(), Some(&"stopped"), "{lines:?}");
    assert_eq!(table.len(), 2, "{table:?}");
    assert!(
        field(&table, 1, "anchor").contains("ENOUGH=50000"),
        "{table:?}"
    );
    assert!(
        !field(&table, 1, "verdict").starts_with("unavailable"),
        "{table:?}"
    );
}

/// An fs row with a fake lat_fs: both sides work in one directory on
/// /dev/shm's tmpfs (when it is one), the row names the filesystem, the
/// fake sees lmbench's own interval and repetitions on osbench's CPU, and
/// the directory is gone afterwards.
#[test]
fn fs_rows_run_in_one_tmpfs_directory_and_leave_nothing() {
    if without_python3() {
        return;
    }
    let shm_is_tmpfs = Command::new("stat")
        .args(["-f", "-c", "%T", "/dev/shm"])
        .output()
        .is_ok_and(|o| o.stdout == b"tmpfs\n");
    if !shm_is_tmpfs {
        eprintln!("skipped: /dev/shm is not a tmpfs here");
        return;
    }
    // lat_fs's line: size, files, creates/s, deletes/s (on stderr).
    let FakeRun { out, log, table } = run_against_fake(
        "lat_fs",
        "#!/bin/sh\nfor last; do :; done\n\
         echo \"ENOUGH=$ENOUGH cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status) args=$# dir=$last\" >> \"$FAKE_LOG\"\n\
         printf '0k\\t20000\\t400000\\t500000\\n' >&2\n",
        "fs-delete-0k",
        &[],
    );
    assert!(out.status.success(), "{}", shown(&out));
    let runs: Vec<&str> = log.lines().collect();
    assert_eq!(runs.len(), 2, "{log}");
    // On osbench's CPU, the last: osbench pins a one-task case there.
    let last_cpu = std::thread::available_parallelism().unwrap().get() - 1;
    // With lmbench's own repetitions: the directory is its one argument.
    let prefix = format!("ENOUGH=50000 cpus={last_cpu} args=1 dir=");
    let used = runs[0].strip_prefix(&prefix).expect(&log);
    assert!(
        used.starts_with("/dev/shm/crosscheck-fs.") && runs[1] == runs[0],
        "{log}"
    );
    assert!(
        field(&table, 1, "anchor").ends_with("DIR on tmpfs"),
        "{table:?}"
    );
    assert_eq!(field(&table, 1, "anchor_median"), "2", "{table:?}");
    // The log says which interval lmbench's own calibration chose.
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("# lmbench's calibrated interval (enough): 1000000 µs"),
        "{said}"
    );
    let run_dir = Path::new(used).parent().unwrap();
    assert!(!run_dir.exists(), "{} was left", run_dir.display());
}

/// [`run_script`] with every fake in `dir`, which must succeed: the calls
/// logged and the record's rows.
fn run_with_fakes(dir: &Path, checks: &[&str], env: &[(&str, &str)]) -> (String, Vec<Vec<String>>) {
    let FakeRun { out, log, table } = run_script(dir, dir, checks, env);
    assert!(out.status.success(), "{}", shown(&out));
    (log, table)
}

/// How many of the logged `calls` start with `who`.
fn count_calls(calls: &str, who: &str) -> usize {
    calls.lines().filter(|l| l.starts_with(who)).count()
}

/// schbench's rows at one rate share each round's runs: a fake osbench and
/// a fake schbench, each printing a schbench-format block and logging its
/// calls, are run once a round for two rows (ANCHOR_RUNS=3: three schbench
/// runs a round), and each row reads its own line of the same output.
#[test]
fn schbench_rows_of_one_rate_share_each_rounds_runs() {
    if without_python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let block = "Wakeup Latencies percentiles (usec)\\n\\t  50.0th: 3\\n\\t  99.0th: WAKE99\\n\
                 Request Latencies percentiles (usec)\\n\\t  50.0th: 2500\\n\\t  99.0th: 2900\\n\
                 average rps: 750\\n";
    // osbench prints its block on stdout, schbench on stderr.
    let fake = |name: &str, p99: &str, to: &str| {
        let text = format!(
            "#!/bin/sh\ncase $1 in --version) echo 'osbench 0.0.0'; exit ;; esac\n\
             echo \"{name} $*\" >> \"$FAKE_LOG\"\nprintf '{}' {to}\n",
            block.replace("WAKE99", p99)
        );
        fake_program(dir.path(), name, &text)
    };
    let osbench = fake("osbench", "40", "");
    let schbench = fake("schbench", "50", ">&2");
    let (calls, table) = run_with_fakes(
        dir.path(),
        &["schbench-wakeup-p99", "schbench-rps"],
        &[
            ("OSBENCH", osbench.to_str().unwrap()),
            ("SCHBENCH", schbench.to_str().unwrap()),
            ("ANCHOR_RUNS", "3"),
        ],
    );
    // Two rounds: two osbench runs and six schbench runs for both rows.
    assert_eq!(
        (
            count_calls(&calls, "osbench run"),
            count_calls(&calls, "schbench ")
        ),
        (2, 6),
        "{calls}"
    );
    assert!(
        calls.contains("schbench:stat=request-p99,workers="),
        "{calls}"
    );
    assert_eq!(field(&table, 1, "check"), "schbench-wakeup-p99");
    assert_eq!(field(&table, 1, "osbench_median"), "40", "{table:?}");
    assert_eq!(field(&table, 1, "anchor_median"), "50", "{table:?}");
    assert_eq!(field(&table, 2, "osbench_median"), "750", "{table:?}");
    assert_eq!(field(&table, 2, "anchor_median"), "750", "{table:?}");
}

/// cyclictest's two rows at one load share each round's runs, and
/// cyclictest runs where osbench's timer does: fakes of osbench (a results
/// row: p99 4000 µs, mean 480), cyclictest (its -h histogram: p99 2 µs,
/// Avg 500; it logs its arguments and whether hackbench runs) and
/// hackbench (which must be running while cyclictest runs, and be gone
/// after).
#[test]
fn cyclictest_rows_share_each_rounds_runs_placed_alike() {
    if without_python3() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let osbench = fake_program(
        dir.path(),
        "osbench",
        "#!/bin/sh\ncase $1 in --version) echo 'osbench 0.0.0'; exit ;; esac\n\
         echo \"osbench $*\" >> \"$FAKE_LOG\"\n\
         echo 'timer 1000us 22.0 182.3 1811.5 4000 17907.7 59834.4 480 us n/a 10000'\n",
    );
    fake_program(
        dir.path(),
        "hackbench",
        "#!/bin/sh\necho $$ > \"$FAKE_LOG.hackbench\"\nexec sleep 613\n",
    );
    fake_program(
        dir.path(),
        "cyclictest",
        "#!/bin/sh\n\
         kill -0 \"$(cat \"$FAKE_LOG.hackbench\")\" && hb=running || hb=gone\n\
         echo \"cyclictest $* hackbench=$hb\" >> \"$FAKE_LOG\"\n\
         echo 'WARN: not setting cpu_dma_latency to save battery power' >&2\n\
         printf '000001 000090\\n000002 000009\\n000003 000001\\n# Avg Latencies: 00500\\n# Histogram Overflows: 00000\\n'\n",
    );
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (calls, table) = run_with_fakes(
        dir.path(),
        &["cyclictest-load", "cyclictest-load-p99"],
        &[("OSBENCH", osbench.to_str().unwrap()), ("PATH", &path)],
    );
    // Two rounds: one run a side a round serves both rows.
    assert_eq!(
        (
            count_calls(&calls, "osbench run"),
            count_calls(&calls, "cyclictest ")
        ),
        (2, 2),
        "{calls}"
    );
    let last_cpu = std::thread::available_parallelism().unwrap().get() - 1;
    for call in calls.lines().filter(|l| l.starts_with("cyclictest ")) {
        assert!(call.contains(&format!(" -a {last_cpu} ")), "{calls}");
        assert!(call.ends_with("hackbench=running"), "{calls}");
    }
    assert!(calls.contains("--load hackbench:2"), "{calls}");
    assert_eq!(field(&table, 1, "check"), "cyclictest-load");
    assert_eq!(field(&table, 1, "osbench_median"), "480", "{table:?}");
    assert_eq!(field(&table, 1, "anchor_median"), "500", "{table:?}");
    assert_eq!(field(&table, 2, "osbench_median"), "4000", "{table:?}");
    assert_eq!(field(&table, 2, "anchor_median"), "2", "{table:?}");
    let hackbench = std::fs::read_to_string(dir.path().join("log.hackbench")).unwrap();
    let left = Path::new("/proc").join(hackbench.trim());
    assert!(
        !left.exists(),
        "the fake hackbench {} was left",
        hackbench.trim()
    );
}

/// A fake perf whose `version --build-options` says `skeletons` (on or
/// OFF) and whose uprobe collection has `empty`: `bench uprobe empty`
/// reads 20 µs a call over `baseline`, and the task-clock `stat` counts over
/// them 17 µs a call more, past set-ups of 10 and 15 ms. Every call logged.
fn fake_perf(dir: &Path, skeletons: &str) {
    let text = format!(
        "#!/bin/sh\necho \"perf $*\" >> \"$FAKE_LOG\"\ncase \"$*\" in\n\
         'version --build-options') echo 'perf version 6.12.fake'\n\
         echo '         bpf_skeletons: [ {skeletons} ]  # HAVE_BPF_SKEL' ;;\n\
         version) echo 'perf version 6.12.fake' ;;\n\
         'bench uprobe') echo '      baseline: Baseline libc usleep(1000) call'\n\
         echo '         empty: Attach empty BPF prog to uprobe on usleep, system wide' ;;\n\
         'bench uprobe baseline -l '*) echo ' 1090.000 usecs/op' ;;\n\
         'bench uprobe empty -l '*) echo ' 1110.000 usecs/op' ;;\n\
         'stat -x, -e task-clock perf bench uprobe '*)\n\
         awk -v b=\"$8\" -v l=\"${{10}}\" 'BEGIN {{ if (b == \"empty\") ms = 15 + 0.024 * l; else ms = 10 + 0.007 * l\n\
         printf \"%.2f,msec,task-clock,1,100.00,,\\n\", ms }}' >&2 ;;\nesac\n"
    );
    fake_program(dir, "perf", &text);
}

#[test]
fn uprobe_rows_need_a_perf_whose_empty_probe_attaches_a_program() {
    if without_python3() {
        return;
    }
    for skeletons in ["OFF", "on"] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        fake_perf(dir.path(), skeletons);
        // osbench's two cases, 17 µs apart.
        let osbench = fake_program(
            &dir.path().join("bin"),
            "osbench",
            "#!/bin/sh\ncase $1 in --version) echo 'osbench 0.0.0'; exit ;; esac\n\
             echo \"osbench $*\" >> \"$FAKE_LOG\"\n\
             echo 'sandbox null 100'\necho 'sandbox null+uprobe 17100'\n",
        );
        let record = dir.path().join("record.tsv");
        let path = format!(
            "{}:{}",
            dir.path().display(),
            std::env::var("PATH").unwrap()
        );
        let out = script(&record, dir.path(), &["uprobe", "uprobe-cpu"])
            .env("OSBENCH", &osbench)
            .env("PATH", path)
            .env("FAKE_LOG", &log)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", shown(&out));
        let calls = std::fs::read_to_string(&log).unwrap();
        let table = rows(&record);
        for row in [1, 2] {
            let verdict = field(&table, row, "verdict");
            if skeletons == "OFF" {
                assert!(
                    verdict.starts_with("unavailable") && verdict.contains("BPF skeletons"),
                    "{table:?}"
                );
            } else {
                assert!(
                    !verdict.starts_with("unavailable"),
                    "{table:?}\n{}",
                    shown(&out)
                );
                assert_eq!(field(&table, row, "osbench_median"), "17", "{table:?}");
            }
        }
        if skeletons == "OFF" {
            assert!(!calls.contains("perf bench uprobe empty"), "{calls}");
            assert!(!calls.contains("osbench run"), "{calls}");
        } else {
            // perf's own figure, and its CPU time past the set-ups.
            assert_eq!(field(&table, 1, "anchor_median"), "20", "{table:?}");
            assert_eq!(field(&table, 2, "anchor_median"), "17", "{table:?}");
        }
    }
}

/// An anchor that draws one order or place a process (lat_pagefault,
/// lat_mmap under 2 MiB): `draws` processes a round (LMBENCH_DRAWS, 8;
/// LAT_MMAP_DRAWS, 24) at lmbench's own interval on osbench's CPU (the
/// last), their mean. The fake `program` prints 1, 2, 3, 6 µs in turn, in
/// `line` (its `$v` the figure): a mean of 3, a median of 2.5; each of
/// its calls logs the file's size.
fn anchor_is_the_mean_of_several_draws(
    program: &str,
    check: &str,
    line: &str,
    bytes: u64,
    draws: usize,
) {
    if without_python3() {
        return;
    }
    let file_arg = if program == "lat_mmap" { "$2" } else { "$1" };
    let FakeRun { out, log, table } = run_against_fake(
        program,
        &format!(
            r#"#!/bin/sh
n=$(cat "$FAKE_LOG" 2>/dev/null | wc -l)
echo "ENOUGH=$ENOUGH cpus=$(awk '/^Cpus_allowed_list/ {{ print $2 }}' /proc/self/status) size=$(stat -c %s "{file_arg}")" >> "$FAKE_LOG"
set -- 1 2 3 6
shift $((n % 4))
v=$1
echo "{line}" >&2
"#
        ),
        check,
        &[],
    );
    assert!(out.status.success(), "{}", shown(&out));
    let last_cpu = std::thread::available_parallelism().unwrap().get() - 1;
    let expected = format!("ENOUGH=50000 cpus={last_cpu} size={bytes}");
    // Two rounds of `draws` processes.
    assert_eq!(log.lines().count(), 2 * draws, "{log}");
    assert!(log.lines().all(|l| l == expected), "{log}");
    assert_eq!(
        field(&table, 1, "anchor_median"),
        "3",
        "{table:?}\n{}",
        shown(&out)
    );
}

#[test]
fn pagefault_anchor_is_the_mean_of_several_processes() {
    anchor_is_the_mean_of_several_draws(
        "lat_pagefault",
        "pagefault",
        "Pagefaults on file: $v microseconds",
        8 << 20,
        8,
    );
}

#[test]
fn lat_mmap_anchor_is_the_mean_of_several_processes() {
    anchor_is_the_mean_of_several_draws("lat_mmap", "lat_mmap:256", "1.048576 $v", 1 << 20, 24);
}

/// A fake lmbench source tree for the lat-mem-rd driver: its lat_mem_rd.c
/// prints 1, 4, 3, 5, 2 ns (then again) from one process to the next,
/// counting them in $FAKE_LOG's file; the libraries it links are empty.
fn fake_lat_mem_rd_source(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let source = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define TRIES 11
void (*fpInit)(void);
void thrash_initialize(void) {}
void loads(size_t len, size_t range, size_t stride, int parallel, int warmup, int repetitions)
{
	static const double ns[] = { 1, 4, 3, 5, 2 };
	FILE *f = fopen(getenv("FAKE_LOG"), "a+");
	long n = 0;
	char line[256];
	while (fgets(line, sizeof line, f))
		n++;
	fprintf(f, "lat_mem_rd %zu %zu\n", len, stride);
	fclose(f);
	printf("%.5f %.3f\n", len / 1048576.0, ns[n % 5]);
}
int main(int argc, char **argv) { return 0; }
"#;
    std::fs::write(dir.join("lat_mem_rd.c"), source).unwrap();
    for lib in [
        "lib_timing",
        "lib_mem",
        "lib_stats",
        "lib_debug",
        "getopt",
        "lib_sched",
    ] {
        std::fs::write(dir.join(format!("{lib}.c")), "").unwrap();
    }
}

#[test]
fn lat_mem_rd_anchor_is_the_median_of_several_processes() {
    if without_python3()
        || without(
            "gcc",
            "--version",
            "the lat-mem-rd driver is built with gcc",
        )
    {
        return;
    }
    let src = tempfile::tempdir().unwrap();
    fake_lat_mem_rd_source(src.path());
    // lmbench's own lat_mem_rd is not run: the driver is built from the source.
    let FakeRun { out, log, table } = run_against_fake(
        "lat_mem_rd",
        "#!/bin/sh\nexit 1\n",
        "lat-mem-rd:128:128",
        &[("LMBENCH_SRC", src.path().to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", shown(&out));
    // Two rounds of fifteen processes, each at 128 KiB, stride 128.
    assert_eq!(log.lines().count(), 30, "{log}");
    assert!(log.lines().all(|l| l == "lat_mem_rd 131072 128"), "{log}");
    // Each round's median of 1, 4, 3, 5, 2 (three times over) is 3.
    assert_eq!(
        field(&table, 1, "anchor_median"),
        "3",
        "{table:?}\n{}",
        shown(&out)
    );
}
