//! What observes the thread that times the `sandbox` family from outside
//! it: audit rules that every system call is checked against (through
//! `auditctl`), and a probe or tracepoint on the measured path (through
//! tracefs's `kprobe_events`, `uprobe_events` and `events/…/enable`).
//! Unlike a seccomp filter, these are the whole machine's: each is held by
//! the warden (`measure::warden`), which removes it if osbench dies, even
//! by SIGKILL, and osbench removes it itself when the case ends. Left out:
//! audit rules that log (these never match a field, so no record is
//! written: the cost is their evaluation, Oracle's measurement), eBPF
//! programs on the probes, and probes on other functions than the one
//! measured.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};
use crate::measure::warden;

/// The package that has `auditctl`.
const AUDIT_PACKAGE: &str = "auditd";

/// `auditctl` as found in `PATH`, or an error naming the package.
pub fn auditctl() -> Result<PathBuf> {
    auditctl_in(&std::env::var_os("PATH").unwrap_or_default())
}

/// `auditctl` as found in the directories of `path` (PATH's syntax).
fn auditctl_in(path: &std::ffi::OsStr) -> Result<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join("auditctl"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::Measure(format!(
                "audit rules need auditctl, which is not in PATH; install the package {AUDIT_PACKAGE} (apt-get install -y {AUDIT_PACKAGE}) and run as root"
            ))
        })
}

/// Runs `auditctl args`, its standard output on success.
fn run_auditctl(auditctl: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(auditctl)
        .args(args)
        .output()
        .map_err(|e| Error::io(format!("running {}", auditctl.display()), e))?;
    if !out.status.success() {
        return Err(Error::Measure(format!(
            "auditctl {} failed ({}): {}; audit rules need root (CAP_AUDIT_CONTROL) and a kernel with CONFIG_AUDITSYSCALL",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The `enabled` value `auditctl -s` reports (0 off, 1 on, 2 locked).
fn audit_enabled(auditctl: &Path) -> Result<u8> {
    let status = run_auditctl(auditctl, &["-s"])?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("enabled ")?.trim().parse().ok())
        .ok_or_else(|| Error::Measure(format!("auditctl -s printed no 'enabled' line: {status}")))
}

/// Whether audit rules can be added here: auditctl present, runnable, and
/// the audit configuration not locked.
pub fn audit_check() -> Result<()> {
    let auditctl = auditctl()?;
    if audit_enabled(&auditctl)? == 2 {
        return Err(Error::Measure(
            "the audit configuration is locked (auditctl -s: enabled 2) until the next boot; no rule can be added".into(),
        ));
    }
    Ok(())
}

/// Whether audit rules added now will be checked on the calls of threads
/// that already exist (osbench's timing thread, for a configuration's
/// rules): only if auditing was on when they were created, since the
/// kernel gives a thread its audit context then. Auditing on now is taken
/// as on then (osbench has not turned it on yet).
pub fn audit_check_running_threads() -> Result<()> {
    audit_check()?;
    if audit_enabled(&auditctl()?)? == 0 {
        return Err(Error::Measure(
            "audit rules as a configuration need auditing on before osbench starts (auditctl -s: enabled 0): the kernel gives a thread its audit context when the thread is created, so rules added later are never checked on the calls of osbench's timing thread. Turn it on (auditctl -e 1; auditd does at its start), run osbench, and turn it off again (auditctl -e 0) if you want; or measure with the sandbox family's audit parameter, which starts its own thread after the rules".into(),
        ));
    }
    Ok(())
}

/// `n` audit rules on every system call of this architecture, each
/// checking a user id no process has (so each is evaluated on every call
/// and none writes a record), under the key `osbench-PID`; auditing is
/// enabled if it was off. Removed, and auditing put back as it was, when
/// dropped (or by the warden if osbench dies). Threads started after this
/// are audited: the kernel gives a thread its audit context when it is created.
pub struct AuditRules {
    auditctl: PathBuf,
    key: String,
    was_enabled: u8,
    holds: Vec<u32>,
}

/// The first of the user ids the rules compare with (none is in use).
const NO_SUCH_UID: u64 = 2_000_000_000;

impl AuditRules {
    /// Adds the rules; on an error, what was added is removed.
    pub fn apply(n: usize) -> Result<Self> {
        let auditctl = auditctl()?;
        let was_enabled = audit_enabled(&auditctl)?;
        let key = format!("osbench-{}", std::process::id());
        let mut rules = Self {
            auditctl,
            key,
            was_enabled,
            holds: Vec::new(),
        };
        let bin = rules.auditctl.as_os_str().as_encoded_bytes().to_vec();
        if was_enabled == 0 {
            rules.hold(&[&bin, b"-e", b"0"])?;
            run_auditctl(&rules.auditctl, &["-e", "1"])?;
        }
        rules.hold(&[&bin, b"-D", b"-k", rules.key.clone().as_bytes()])?;
        for i in 0..n as u64 {
            let uid = format!("uid={}", NO_SUCH_UID + i);
            let args = [
                "-a",
                "always,exit",
                "-F",
                "arch=b64",
                "-S",
                "all",
                "-F",
                &uid,
            ];
            run_auditctl(&rules.auditctl, &[&args[..], &["-k", &rules.key]].concat())?;
        }
        Ok(rules)
    }

    fn hold(&mut self, argv: &[&[u8]]) -> Result<()> {
        hold(&mut self.holds, "the audit rules' removal", |id| {
            warden::hold_command(id, argv)
        })
    }
}

impl Drop for AuditRules {
    fn drop(&mut self) {
        let _ = run_auditctl(&self.auditctl, &["-D", "-k", &self.key]);
        if self.was_enabled == 0 {
            let _ = run_auditctl(&self.auditctl, &["-e", "0"]);
        }
        self.holds.drain(..).for_each(warden::forget_restore);
    }
}

/// Where tracefs is looked for, in order.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// The mounted tracefs, or an error naming how to mount it (or, when it
/// is there but closed to this user, that probes need root).
pub fn tracefs() -> Result<PathBuf> {
    for root in TRACEFS.iter().map(PathBuf::from) {
        match std::fs::metadata(root.join("events")) {
            Ok(m) if m.is_dir() => return Ok(root),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(Error::io(
                    format!(
                        "tracefs at {} is closed to this user: probes need root",
                        root.display()
                    ),
                    e,
                ));
            }
            _ => {}
        }
    }
    Err(Error::Measure(format!(
        "tracefs is not mounted (neither {} nor {} has an events directory); mount it as root: mount -t tracefs nodev /sys/kernel/tracing",
        TRACEFS[0], TRACEFS[1]
    )))
}

/// A probe's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    /// A kprobe on a kernel function.
    Kprobe,
    /// A uprobe on a function of osbench's own executable.
    Uprobe,
    /// A system call's entry tracepoint.
    Tracepoint,
}

/// Where a probe goes: the kernel function (kprobe), the address of
/// osbench's function (uprobe), the system call's tracepoint
/// (`syscalls/sys_enter_NAME`).
pub struct ProbeSite {
    pub kernel_function: &'static str,
    pub user_function: usize,
    pub syscall: &'static str,
}

/// The file of tracefs a probe kind needs (`kprobe_events`, …), checked
/// writable: what `check` calls before anything runs.
pub fn probe_check(kind: ProbeKind, site: &ProbeSite) -> Result<PathBuf> {
    match kind {
        ProbeKind::Tracepoint => writable(
            &format!("events/syscalls/sys_enter_{}/enable", site.syscall),
            "CONFIG_FTRACE_SYSCALLS",
        ),
        _ => events_file(kind),
    }
}

/// The tracefs file that kprobes (`kprobe_events`) or uprobes
/// (`uprobe_events`) are added to, checked writable.
pub fn events_file(kind: ProbeKind) -> Result<PathBuf> {
    match kind {
        ProbeKind::Uprobe => writable("uprobe_events", "CONFIG_UPROBE_EVENTS"),
        _ => writable("kprobe_events", "CONFIG_KPROBE_EVENTS"),
    }
}

/// tracefs's `file`, checked present (else the kernel lacks `config`) and writable.
fn writable(file: &str, config: &str) -> Result<PathBuf> {
    let path = tracefs()?.join(file);
    if !path.exists() {
        return Err(Error::Measure(format!(
            "{} is missing: this kernel was built without {config}",
            path.display()
        )));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| {
            Error::io(
                format!(
                    "{} is not writable (probes need root, and tracefs mounted read-write)",
                    path.display()
                ),
                e,
            )
        })?;
    Ok(path)
}

/// An enabled probe or tracepoint; disabled and removed when dropped (or
/// by the warden if osbench dies).
pub struct Probe {
    /// The `enable` file written 1, to write 0.
    enable: PathBuf,
    /// The events file and the line that removes the probe (`-:osbench/NAME`).
    remove: Option<(PathBuf, String)>,
    holds: Vec<u32>,
}

impl Probe {
    /// Adds (kprobe, uprobe) and enables a probe of `kind` on `site`.
    pub fn enable(kind: ProbeKind, site: &ProbeSite) -> Result<Self> {
        let target = match kind {
            ProbeKind::Tracepoint => return Self::tracepoint(site),
            ProbeKind::Kprobe => site.kernel_function.to_string(),
            ProbeKind::Uprobe => uprobe_target(site.user_function)?,
        };
        Self::define(kind, &target, site.syscall)
    }

    /// Enables the system call's entry tracepoint, unless someone else has.
    fn tracepoint(site: &ProbeSite) -> Result<Self> {
        let enable = probe_check(ProbeKind::Tracepoint, site)?;
        if std::fs::read_to_string(&enable).is_ok_and(|v| v.trim() != "0") {
            return Err(Error::Measure(format!(
                "{} is already enabled by someone else; disable it (echo 0 > it) or measure another case",
                enable.display()
            )));
        }
        Self::enabled_by(enable).turn_on()
    }

    /// Adds a kprobe (`target` a kernel function) or a uprobe (`target`
    /// `PATH:0xOFFSET`) named `osbench_LABEL_PID` and enables it.
    pub fn define(kind: ProbeKind, target: &str, label: &str) -> Result<Self> {
        let file = events_file(kind)?;
        let name = format!("osbench_{label}_{}", std::process::id());
        let enable = tracefs()?.join(format!("events/osbench/{name}/enable"));
        let mut probe = Self::enabled_by(enable);
        let remove = format!("-:osbench/{name}\n");
        probe.hold(|id| {
            warden::hold_append(id, file.as_os_str().as_encoded_bytes(), remove.as_bytes())
        })?;
        append(&file, &format!("p:osbench/{name} {target}\n"))?;
        probe.remove = Some((file, remove));
        probe.turn_on()
    }

    /// A probe not enabled yet, whose `enable` file is this.
    fn enabled_by(enable: PathBuf) -> Self {
        Self {
            enable,
            remove: None,
            holds: Vec::new(),
        }
    }

    /// Writes 1 to the enable file, the warden holding the 0 that undoes it.
    fn turn_on(mut self) -> Result<Self> {
        let enable = self.enable.clone();
        self.hold(|id| warden::hold_restore(id, enable.as_os_str().as_encoded_bytes(), b"0\n"))?;
        std::fs::write(&self.enable, "1\n")
            .map_err(|e| Error::io(format!("enabling {}", self.enable.display()), e))?;
        Ok(self)
    }

    fn hold(&mut self, held: impl FnOnce(u32) -> bool) -> Result<()> {
        hold(&mut self.holds, "the probe's removal", held)
    }
}

/// Has the warden hold an undo (`held` with a new id), its id kept in
/// `holds`; an error when it cannot: osbench adds nothing it could not
/// remove after a crash.
fn hold(holds: &mut Vec<u32>, what: &str, held: impl FnOnce(u32) -> bool) -> Result<()> {
    let id = warden::next_id();
    if !held(id) {
        return Err(Error::Measure(format!(
            "the warden could not hold {what} (osbench adds nothing it could not remove after a crash)"
        )));
    }
    holds.push(id);
    Ok(())
}

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.enable, "0\n");
        if let Some((file, line)) = &self.remove {
            let _ = append(file, line);
        }
        self.holds.drain(..).for_each(warden::forget_restore);
    }
}

/// Appends `line` to a tracefs events file (truncating it would remove
/// every probe, not only osbench's).
fn append(file: &Path, line: &str) -> Result<()> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(|e| {
            Error::io(
                format!("writing '{}' to {}", line.trim(), file.display()),
                e,
            )
        })
}

/// `PATH:0xOFFSET` of the code at `address` in this process, as
/// `uprobe_events` takes it: the mapping's file and the offset in it.
fn uprobe_target(address: usize) -> Result<String> {
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| Error::io("reading /proc/self/maps", e))?;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(_perms), Some(offset)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let path = fields.nth(2).unwrap_or("");
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let parse = |h: &str| usize::from_str_radix(h, 16).ok();
        if let (Some(start), Some(end), Some(offset)) = (parse(start), parse(end), parse(offset))
            && (start..end).contains(&address)
            && path.starts_with('/')
        {
            return Ok(format!("{path}:{:#x}", address - start + offset));
        }
    }
    Err(Error::Measure(format!(
        "the probed function's address {address:#x} is in no file mapping of /proc/self/maps"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uprobe_target_is_this_executable_at_an_offset() {
        let f: fn() -> usize = || 7;
        let target = uprobe_target(f as *const () as usize).unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let (path, offset) = target.rsplit_once(':').unwrap();
        assert_eq!(Path::new(path), exe);
        assert!(offset.starts_with("0x"));
    }

    #[test]
    fn auditctl_missing_from_path_names_the_package() {
        let e = auditctl_in("/nonexistent".as_ref())
            .unwrap_err()
            .to_string();
        assert!(e.contains("install the package auditd"), "{e}");
    }
}
