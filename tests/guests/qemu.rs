//! A QEMU virtual machine as a guest, booted the README's way: a stock
//! x86-64 kernel, the initramfs `osbench guest-image` writes, the serial
//! console as the agent's channel (`-serial stdio`), under TCG (emulation:
//! no KVM needed, and this machine's KVM runs only PVM guest kernels). One
//! quick case is measured and the document must say the guest was emulated
//! (and keep its own kernel's log);
//! a kernel that cannot find its init must fail naming the configuration and
//! quoting its console. Nothing may be left running. And the initramfs's
//! init outside a guest must refuse, not power the host off. Correctness only.
//!
//! Needs `qemu-system-x86_64` (Debian: qemu-system-x86) and a kernel in
//! `$OSBENCH_QEMU_KERNEL` (`scripts/qemu-kernel.sh` extracts Debian's);
//! without them the tests skip and say so, unless `OSBENCH_REQUIRE_QEMU=1`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use osbench::document::ProfileOutcome;
use osbench::store::read_document;

/// The kernel to boot, or `None` (said) when QEMU or a kernel is missing.
pub(crate) fn kernel_or_skip(test: &str) -> Option<PathBuf> {
    let required = std::env::var("OSBENCH_REQUIRE_QEMU").is_ok_and(|v| v == "1");
    let qemu = Command::new("qemu-system-x86_64").arg("--version").output();
    let kernel = std::env::var_os("OSBENCH_QEMU_KERNEL").map(PathBuf::from);
    let why = match (&qemu, &kernel) {
        (Err(_), _) => "qemu-system-x86_64 is not installed (Debian: qemu-system-x86)".to_string(),
        (_, None) => "OSBENCH_QEMU_KERNEL names no kernel (scripts/qemu-kernel.sh)".to_string(),
        (_, Some(k)) if !k.is_file() => format!("OSBENCH_QEMU_KERNEL={} is no file", k.display()),
        _ => return kernel,
    };
    assert!(!required, "OSBENCH_REQUIRE_QEMU=1 but {why}");
    eprintln!("{test}: skipped: {why}");
    None
}

/// What a QEMU test boots: the kernel, a directory holding the initramfs
/// and the run's document.
struct Boot {
    kernel: PathBuf,
    dir: tempfile::TempDir,
    image: PathBuf,
}

impl Boot {
    /// The kernel and a fresh initramfs, or `None` when the test skips.
    fn prepare(test: &str) -> Option<Boot> {
        let kernel = kernel_or_skip(test)?;
        let dir = tempfile::tempdir().unwrap();
        let image = initramfs(dir.path());
        Some(Boot { kernel, dir, image })
    }

    /// `osbench run` with this guest (see [`run`], [`qemu_guest`]).
    fn run(&self, append: &str, mark: &str) -> (Output, PathBuf) {
        let json = self.dir.path().join("vm.json");
        let guest = qemu_guest(&self.kernel, &self.image, append, mark);
        (run(&guest, &json), json)
    }
}

/// Writes the initramfs with `osbench guest-image` into `dir`.
pub(crate) fn initramfs(dir: &Path) -> PathBuf {
    let image = dir.join("osbench.cpio");
    let out = common::osbench(common::tmp_store("qemu-tests.sqlite"))
        .args(["guest-image", "--initramfs"])
        .arg(&image)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--guest 'vm=command:qemu"));
    image
}

/// The guest option booting `kernel` with `image` under TCG, with `append`
/// on the kernel's command line, marked with `mark` to look for leftovers.
fn qemu_guest(kernel: &Path, image: &Path, append: &str, mark: &str) -> String {
    format!(
        "vm=command:export OSBENCH_TEST_MARK={mark}; exec qemu-system-x86_64 -accel tcg -m 1G \
         -smp 1 -nodefaults -display none -serial stdio -no-reboot -kernel {} -initrd {} \
         -append 'console=ttyS0 quiet panic=-1 {append}'",
        kernel.display(),
        image.display()
    )
}

/// `osbench run syscall:case=getpid` natively and in `guest`, two quick rounds.
fn run(guest: &str, json: &Path) -> Output {
    common::osbench(common::tmp_store("qemu-tests.sqlite"))
        .args(["run", "syscall:case=getpid", "--no-perf"])
        .args(["--config", "native=", "--guest", guest])
        .args(["--samples", "3", "--sample-time", "1", "--warmup", "0"])
        .args(["--rounds", "2", "--profile", "--profile-passes", "1"])
        .args(["--profile-time", "50", "--json"])
        .arg(json)
        // Emulated boots are slow, the more so on a busy machine.
        .env("OSBENCH_GUEST_TIMEOUT", "300")
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_nothing_left(mark: &str) {
    let left = common::left_running(mark);
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_qemu_guest_boots_the_initramfs_and_measures_emulated() {
    let Some(boot) = Boot::prepare("a_qemu_guest_boots_the_initramfs") else {
        return;
    };
    let mark = "qemu-guest";
    let (out, json) = boot.run("", mark);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_nothing_left(mark);
    let doc = read_document(&json).unwrap();
    let vm = doc.series.iter().find(|s| s.key.config == "vm").unwrap();
    assert_eq!(vm.rounds.len(), 2);
    let guest = &doc.run.guests[0];
    let cmdline = guest.env.cmdline.as_deref().unwrap_or("");
    assert!(cmdline.contains("console=ttyS0"), "{cmdline}");
    let virt = guest.env.virtualization.as_ref().unwrap();
    assert!(virt.emulated(), "TCG says so in CPUID: {virt:?}");
    // Its system logs are its own kernel's, read by its agent.
    let log = common::kept_kernel_log(&guest.env);
    let booted = format!("Linux version {}", guest.env.kernel);
    assert!(log.contains(&booted), "{:?}\n{log}", guest.env.logs);
    let finding = "configuration 'vm' runs emulated";
    assert!(doc.run.audit.iter().any(|f| f.starts_with(finding)));
    assert!(err.contains(finding), "said on stderr too: {err}");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("— emulated"), "the guests section: {shown}");
    // Profiled inside, against the guest's own kernel (its agent runs as root).
    let Some(ProfileOutcome::Profiled(profile)) = &vm.profile else {
        panic!("no profile from the guest: {:?}", vm.profile);
    };
    let stacks: Vec<&String> = profile
        .passes
        .iter()
        .flat_map(|p| p.stacks.keys())
        .collect();
    assert!(
        stacks.iter().any(|s| s.contains("do_syscall_64")),
        "a system call's kernel path: {stacks:?}"
    );
}

#[test]
fn a_qemu_guest_without_its_init_fails_naming_its_configuration() {
    let Some(boot) = Boot::prepare("a_qemu_guest_without_its_init_fails") else {
        return;
    };
    let mark = "qemu-no-init";
    // No such init: the kernel looks for a root file system, has none, panics.
    let (out, json) = boot.run("rdinit=/none", mark);
    assert!(!json.exists(), "nothing was measured, so no document");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("configuration 'vm'"), "{err}");
    assert!(err.contains("Kernel panic"), "the console is quoted: {err}");
    assert_nothing_left(mark);
}

/// `osbench agent --init`, and osbench run as `/init`, outside a guest:
/// refused (status 2), the host left running. Run as PID 2 of a new PID
/// namespace, so that even a broken guard could not power the host off.
#[test]
fn init_outside_a_guest_is_refused() {
    let probe = Command::new("unshare")
        .args(["--fork", "--pid", "true"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("init_outside_a_guest_is_refused: skipped: unshare --pid is not permitted here");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("osbench");
    for how in ["\"$0\" agent --init", "exec -a /init \"$0\""] {
        let script = format!("({how}); echo status=$?");
        let out = Command::new("unshare")
            .args(["--fork", "--pid", "bash", "-c", &script])
            .arg(&bin)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        let err = stderr(&out);
        assert!(said.contains("status=2"), "{how}: {said} {err}");
        assert!(err.contains("the init of a guest (PID 1)"), "{how}: {err}");
    }
}

/// Processes whose command line names `needle` (a test's private cache directory).
fn naming(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            String::from_utf8_lossy(&cmdline)
                .contains(needle)
                .then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect()
}

#[test]
fn a_qemu_guest_in_one_line_boots_records_its_accelerator_and_its_parameters() {
    let Some(kernel) = kernel_or_skip("a_qemu_guest_in_one_line") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let json = dir.path().join("vm.json");
    let guest = format!(
        "vm=qemu:kernel={},append=mitigations=off,accel=tcg",
        kernel.display()
    );
    let run = |json: &Path| {
        common::osbench(common::tmp_store("qemu-tests.sqlite"))
            .args(["run", "syscall:case=getpid", "--no-perf"])
            .args(["--config", "native=", "--guest", &guest])
            .args(["--samples", "3", "--sample-time", "1", "--warmup", "0"])
            .args(["--rounds", "2", "--profile", "--profile-passes", "1"])
            .args(["--profile-time", "50", "--json"])
            .arg(json)
            .env("XDG_CACHE_HOME", &cache)
            .env("OSBENCH_GUEST_TIMEOUT", "300")
            .output()
            .unwrap()
    };
    let out = run(&json);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        naming(&cache.to_string_lossy()).is_empty(),
        "a VM was left running"
    );
    let doc = read_document(&json).unwrap();
    let guest = &doc.run.guests[0];
    assert_eq!(guest.accelerator.as_deref(), Some("tcg: asked for"));
    assert!(guest.env.virtualization.as_ref().unwrap().emulated());
    assert!(
        doc.run
            .audit
            .iter()
            .any(|f| f.starts_with("configuration 'vm' runs emulated"))
    );
    let cmdline = guest.env.cmdline.as_deref().unwrap_or("");
    assert!(
        cmdline.contains("console=ttyS0 quiet panic=-1 mitigations=off"),
        "{cmdline}"
    );
    // The kernel took mitigations=off: it never reached init.
    let param = &guest.boot_parameters[0];
    assert_eq!(
        (
            param.word.as_str(),
            param.taken_by.as_str(),
            param.in_cmdline
        ),
        ("mitigations=off", "kernel", true)
    );
    let init = guest.init.as_ref().expect("the agent was the VM's init");
    assert!(!init.env.contains_key("mitigations"), "{init:?}");
    // The initramfs was written once, into the cache, and is used again.
    let images = || std::fs::read_dir(cache.join("osbench")).unwrap().count();
    assert_eq!(images(), 1);
    let again = run(&dir.path().join("again.json"));
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(images(), 1, "the cached image was used again");
}
