//! Staging and rebooting for kernel-boot jobs (`osbench::queue::boot`) with
//! stand-ins that reboot nothing: a `kexec` and a `systemctl` on a temporary
//! PATH that log their arguments, and reboot commands that write what they
//! were told to a file. A real kexec cannot run here (docs/kernel-boot-jobs.md
//! says what was checked). One test function: no other thread of this
//! process forks while a script is being written (which could make its exec
//! fail with ETXTBSY).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use osbench::Error;
use osbench::queue::boot::{
    BootMethod, BootRecord, BootSettings, KernelRequirement, KexecReboot, Running, boot_back,
    stage_boot_with,
};

/// An executable `dir/name` running `body` with `sh`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A stand-in that appends its name and each argument, one a line, then `--`, to `log`.
fn logger(dir: &Path, name: &str, log: &Path) -> PathBuf {
    let body = format!(
        "printf '%s\\n' \"$(basename \"$0\")\" \"$@\" -- >> '{}'",
        log.display()
    );
    script(dir, name, &body)
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

fn before() -> Running {
    Running {
        release: "6.8.0-45-generic".into(),
        cmdline: "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/vda1 ro quiet".into(),
    }
}

#[test]
fn kexec_and_reboot_commands_get_exactly_what_the_job_asks_for() {
    let dir = tempfile::tempdir().unwrap();
    let kernel = dir.path().join("vmlinuz-6.18.0-test");
    let initrd = dir.path().join("initrd.img-6.18.0-test");
    std::fs::write(&kernel, b"not really a kernel").unwrap();
    std::fs::write(&initrd, b"not really an initrd").unwrap();
    let req = KernelRequirement {
        kernel: Some(kernel.clone()),
        initrd: Some(initrd.clone()),
        append: Some("mitigations=off nosmt".into()),
        release: Some("6.18.0-test".into()),
        ..Default::default()
    };
    kexec_loads_then_systemctl_boots(dir.path(), &req);
    kexec_failures_name_the_command_and_its_error(dir.path(), &req);
    a_reboot_command_is_told_in_variables(dir.path(), &req);
    a_missing_kernel_file_stops_before_anything_runs(dir.path());
}

fn kexec_loads_then_systemctl_boots(dir: &Path, req: &KernelRequirement) {
    let bin = dir.join("bin");
    let log = dir.join("kexec.log");
    let kexec = logger(&bin, "kexec", &log);
    let systemctl = logger(&bin, "systemctl", &log);
    let path = bin.as_os_str();
    let (method, record) =
        stage_boot_with(req, &BootSettings::default(), "42", Some(path), before()).unwrap();
    let kernel = req.kernel.as_ref().unwrap().display().to_string();
    let initrd = req.initrd.as_ref().unwrap().display().to_string();
    let load = [
        "-l".to_string(),
        kernel,
        format!("--initrd={initrd}"),
        "--append=root=/dev/vda1 ro quiet mitigations=off nosmt".into(),
    ];
    let mut logged = vec!["kexec".to_string()];
    logged.extend(load.iter().cloned());
    logged.push("--".into());
    assert_eq!(lines(&log), logged, "staged, not yet booted");
    assert_eq!(
        method,
        BootMethod::Kexec {
            kexec: kexec.clone(),
            reboot: KexecReboot::Systemctl(systemctl.clone()),
        }
    );
    assert_eq!(record.staged[0], kexec.display().to_string());
    assert_eq!(record.staged[1..], load);
    assert_eq!(record.job, "42");
    assert_eq!(record.from, before());
    assert_eq!(record.expectation.release, "6.18.0-test");
    // The record goes into the job as JSON and comes back the same.
    let json = serde_json::to_string(&record).unwrap();
    assert_eq!(serde_json::from_str::<BootRecord>(&json).unwrap(), record);

    method.reboot(req, "42").unwrap();
    logged.extend(["systemctl", "kexec", "--"].map(String::from));
    assert_eq!(lines(&log), logged);

    // kexec -e at once, when the worker says so.
    let direct = BootSettings {
        kexec_direct: true,
        ..Default::default()
    };
    let (method, _) = stage_boot_with(req, &direct, "43", Some(path), before()).unwrap();
    std::fs::remove_file(&log).unwrap();
    method.reboot(req, "43").unwrap();
    assert_eq!(lines(&log), ["kexec", "-e", "--"]);

    // After the boot: the record's check passes on the kernel asked for, and names what differs.
    let booted = Running {
        release: "6.18.0-test".into(),
        cmdline: "root=/dev/vda1 ro quiet mitigations=off nosmt".into(),
    };
    record.expectation.check(&booted).unwrap();
    match record.expectation.check(&before()) {
        Err(Error::KernelMismatch { mismatches }) => {
            assert_eq!(
                mismatches[0],
                "release: asked for 6.18.0-test, running 6.8.0-45-generic"
            );
            assert_eq!(mismatches[1], "mitigations=off is not on /proc/cmdline");
            assert_eq!(mismatches[2], "nosmt is not on /proc/cmdline");
        }
        other => panic!("a mismatch, not {other:?}"),
    }
}

fn kexec_failures_name_the_command_and_its_error(dir: &Path, req: &KernelRequirement) {
    let bin = dir.join("failing");
    script(
        &bin,
        "kexec",
        "echo 'kexec_load failed: Operation not permitted' >&2; exit 1",
    );
    script(&bin, "systemctl", "exit 0");
    let settings = BootSettings::default();
    let e = stage_boot_with(req, &settings, "44", Some(bin.as_os_str()), before())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("kexec_load failed: Operation not permitted; the kernel is not staged"),
        "{e}"
    );
    assert!(e.contains(" -l "), "the command is named: {e}");
}

fn a_reboot_command_is_told_in_variables(dir: &Path, req: &KernelRequirement) {
    let no_kexec = dir.join("empty");
    std::fs::create_dir_all(&no_kexec).unwrap();
    let told = dir.join("told");
    let command = format!(
        "printf '%s\\n' \"$OSBENCH_BOOT_JOB\" \"$OSBENCH_BOOT_KERNEL\" \"$OSBENCH_BOOT_INITRD\" \
         \"$OSBENCH_BOOT_APPEND\" \"$OSBENCH_BOOT_RELEASE\" > '{}'",
        told.display()
    );
    let settings = BootSettings {
        reboot_command: Some(command.clone()),
        boot_back_command: Some(format!(
            "echo \"$OSBENCH_BOOT_JOB $OSBENCH_BOOT_BACK\" > '{}'",
            told.display()
        )),
        ..Default::default()
    };
    let (method, record) =
        stage_boot_with(req, &settings, "45", Some(no_kexec.as_os_str()), before()).unwrap();
    assert_eq!(method, BootMethod::Command(command));
    assert!(record.staged.is_empty());
    assert!(!told.exists(), "nothing runs before the reboot");
    method.reboot(req, "45").unwrap();
    let kernel = req.kernel.as_ref().unwrap().display().to_string();
    let initrd = req.initrd.as_ref().unwrap().display().to_string();
    assert_eq!(
        lines(&told),
        [
            "45",
            &kernel,
            &initrd,
            "mitigations=off nosmt",
            "6.18.0-test"
        ]
    );
    boot_back(&settings, "45").unwrap();
    assert_eq!(lines(&told), ["45 1"]);

    let failing = BootSettings {
        reboot_command: Some("echo 'no boot entry osbench-6.18' >&2; exit 3".into()),
        ..Default::default()
    };
    let (method, _) =
        stage_boot_with(req, &failing, "46", Some(no_kexec.as_os_str()), before()).unwrap();
    let e = method.reboot(req, "46").unwrap_err().to_string();
    assert!(e.contains("no boot entry osbench-6.18"), "{e}");
    assert!(e.ends_with("the host did not reboot"), "{e}");

    // Neither kexec nor a command: the error says what to install or configure.
    let e = stage_boot_with(
        req,
        &BootSettings::default(),
        "47",
        Some(no_kexec.as_os_str()),
        before(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("install kexec-tools"), "{e}");
}

fn a_missing_kernel_file_stops_before_anything_runs(dir: &Path) {
    let bin = dir.join("untouched");
    let log = dir.join("untouched.log");
    logger(&bin, "kexec", &log);
    logger(&bin, "systemctl", &log);
    let req = KernelRequirement {
        kernel: Some(dir.join("vmlinuz-not-here")),
        release: Some("6.18.0".into()),
        ..Default::default()
    };
    let e = stage_boot_with(
        &req,
        &BootSettings::default(),
        "48",
        Some(bin.as_os_str()),
        before(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(&format!(
            "kernel file {} does not exist on this host",
            dir.join("vmlinuz-not-here").display()
        )),
        "{e}"
    );
    assert!(!log.exists(), "kexec was not run");
}
