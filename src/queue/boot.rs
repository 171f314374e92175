//! Jobs that boot the kernel they test (issue 30, item 3): what a job asks of
//! the kernel (its `[kernel]` table, [`KernelRequirement`]), the check after
//! the boot that the running kernel is that one ([`Expectation::check`]), and
//! how a host boots it ([`BootMethod`]: `kexec -l` then `systemctl kexec` or
//! `kexec -e`, or a configured reboot command that sets a one-shot boot entry).
//! Rounds of several kernels, one boot each, are [`super::boot_rounds`].
//!
//! Left out: the queue's part (recording the job `rebooting`, finding it
//! again after the boot: [`super::kernel_jobs`]), signed kexec (`kexec -s`) and a
//! timeout on the boot itself (a host that never comes back leaves its job
//! `rebooting`). How a worker uses this: docs/kernel-boot-jobs.md.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::measure::hook::{Watch, sh};

/// How long a reboot or boot-back command may take to return (it normally
/// returns once the shutdown is queued), unless `$OSBENCH_REBOOT_TIMEOUT`
/// gives other seconds ([`reboot_timeout`]).
pub const REBOOT_TIMEOUT: Duration = Duration::from_secs(300);

/// [`REBOOT_TIMEOUT`], or `$OSBENCH_REBOOT_TIMEOUT` seconds.
pub fn reboot_timeout() -> Duration {
    std::env::var("OSBENCH_REBOOT_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0 && s.is_finite())
        .map_or(REBOOT_TIMEOUT, Duration::from_secs_f64)
}

/// The command that boots back into the host's default kernel unless the
/// worker names another: kexec and one-shot boot entries leave the default alone.
pub const DEFAULT_BOOT_BACK: &str = "systemctl reboot";

/// A job's `[kernel]` table: the kernel the job must run on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelRequirement {
    /// What boot rounds call this kernel (its configuration's name); default [`Self::label`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The kernel image to boot (`/boot/vmlinuz-6.18-test`), a file on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<PathBuf>,
    /// Its initial ramdisk, loaded with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrd: Option<PathBuf>,
    /// Words that must be on /proc/cmdline; osbench adds them when it boots the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<String>,
    /// What `uname -r` must say: exactly this, or a glob when it has a `*`
    /// (`6.18.*`, `*-kasan`; `*` matches any run of characters, nothing else is special).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
    /// After the job, boot back into the host's default kernel.
    #[serde(default)]
    pub boot_back: bool,
}

impl KernelRequirement {
    /// What errors and boot rounds call this kernel: its name, else its
    /// release, else its file's name.
    pub fn label(&self) -> String {
        if let Some(name) = self.name.as_ref().or(self.release.as_ref()) {
            return name.clone();
        }
        self.kernel
            .as_deref()
            .and_then(Path::file_name)
            .map_or_else(|| "kernel".into(), |f| f.to_string_lossy().into_owned())
    }

    /// Checks the table on this host: a kernel or a release named, files
    /// that exist, the release known (given, or read from the kernel file).
    pub fn validate(&self) -> Result<()> {
        self.expectation().map(drop)
    }

    /// What the check after the boot expects ([`Self::validate`]'s checks
    /// first). Without `release`, the release comes from the kernel file's
    /// x86 boot header ([`bzimage_release`]); another image needs `release`.
    pub fn expectation(&self) -> Result<Expectation> {
        if self.kernel.is_none() && self.release.is_none() {
            return Err(Error::Boot(
                "a [kernel] table needs `kernel = \"/boot/vmlinuz-…\"` (the kernel to boot), \
                 `release = \"…\"` (what `uname -r` must say), or both"
                    .into(),
            ));
        }
        if self.initrd.is_some() && self.kernel.is_none() {
            return Err(Error::Boot(
                "`initrd` is loaded with a kernel file: name that file with `kernel = …` too"
                    .into(),
            ));
        }
        for (what, path) in [("kernel", &self.kernel), ("initrd", &self.initrd)] {
            if let Some(path) = path {
                existing_file(what, path)?;
            }
        }
        let append = self.append_words()?;
        let release = match (&self.release, &self.kernel) {
            (Some(release), _) => {
                if release.is_empty() || release.contains(char::is_whitespace) {
                    return Err(Error::Boot(format!(
                        "release '{release}' is not a kernel release (what `uname -r` says: \
                         one word, e.g. 6.18.0-test or 6.18.*)"
                    )));
                }
                release.clone()
            }
            (None, Some(kernel)) => image_release(kernel)?.ok_or_else(|| {
                Error::Boot(format!(
                    "cannot tell which release the kernel file {} is (it is not an x86 bzImage \
                     with a version string): add `release = \"…\"` (its `uname -r`) so that the \
                     check after the boot knows what to expect",
                    kernel.display()
                ))
            })?,
            (None, None) => unreachable!("checked above"),
        };
        Ok(Expectation { release, append })
    }

    /// The `append` words, one by one (double quotes keep spaces in a value).
    fn append_words(&self) -> Result<Vec<String>> {
        let text = self.append.as_deref().unwrap_or("");
        if text.contains(['\n', '\0']) {
            return Err(Error::Boot(
                "`append` has a newline or NUL; a kernel command line is one line".into(),
            ));
        }
        Ok(cmdline_words(text).into_iter().map(String::from).collect())
    }
}

/// `path` is an absolute path to a file on this host.
fn existing_file(what: &str, path: &Path) -> Result<()> {
    if !path.is_absolute() {
        return Err(Error::Boot(format!(
            "{what} '{}' is not an absolute path: name the file from / (/boot/…)",
            path.display()
        )));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(Error::Boot(format!(
            "{what} {} is not a file on this host",
            path.display()
        ))),
        Err(e) => Err(Error::Boot(format!(
            "{what} file {} does not exist on this host ({e}): install it here, or send the \
             job to hosts that have it",
            path.display()
        ))),
    }
}

/// How much of a kernel file is read for its version string.
const IMAGE_HEAD: u64 = 64 * 1024;

/// The release of the kernel file at `path`, if it is an x86 bzImage.
fn image_release(path: &Path) -> Result<Option<String>> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(IMAGE_HEAD).read_to_end(&mut head))
        .map_err(|e| Error::io(format!("reading the kernel file {}", path.display()), e))?;
    Ok(bzimage_release(&head))
}

/// The release (`uname -r`) in the start of an x86 bzImage: the boot
/// protocol's header (`HdrS` at 0x202, version 2.00 or later) points at a
/// version string at 0x200 + `kernel_version` (0x20E), whose first word it
/// is (Documentation/arch/x86/boot.rst). `None` for anything else.
pub fn bzimage_release(head: &[u8]) -> Option<String> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(head.get(at..at + 2)?.try_into().ok()?));
    if head.get(0x202..0x206)? != b"HdrS" || u16_at(0x206)? < 0x0200 {
        return None;
    }
    let at = usize::from(u16_at(0x20E)?);
    if at == 0 {
        return None;
    }
    let text = head.get(at + 0x200..)?;
    let text = &text[..text.iter().position(|&b| b == 0)?];
    let release = std::str::from_utf8(text).ok()?.split_whitespace().next()?;
    Some(release.to_string())
}

/// The words of a kernel command line as the kernel splits it: at spaces
/// outside double quotes (which stay part of the word).
pub fn cmdline_words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    let mut start = None;
    let mut quoted = false;
    for (i, c) in text.char_indices() {
        if c == '"' {
            quoted = !quoted;
        }
        match (c.is_whitespace() && !quoted, start) {
            (true, Some(s)) => {
                words.push(&text[s..i]);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push(&text[s..]);
    }
    words
}

/// A directory read instead of /proc for the running kernel ([`Running::read`]).
pub const PROC_ROOT_ENV: &str = "OSBENCH_BOOT_PROC_ROOT";

/// What the running kernel is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Running {
    /// `uname -r`.
    pub release: String,
    /// /proc/cmdline.
    pub cmdline: String,
}

impl Running {
    /// This host's kernel: /proc/sys/kernel/osrelease and /proc/cmdline,
    /// read under [`PROC_ROOT_ENV`] instead of /proc when it is set (tests
    /// fake a boot by rewriting those two files).
    pub fn read() -> Result<Self> {
        let root = std::env::var_os(PROC_ROOT_ENV)
            .filter(|r| !r.is_empty())
            .map_or_else(|| PathBuf::from("/proc"), PathBuf::from);
        let read = |rel: &str| {
            let path = root.join(rel);
            std::fs::read_to_string(&path)
                .map(|s| s.trim().to_string())
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))
        };
        Ok(Self {
            release: read("sys/kernel/osrelease")?,
            cmdline: read("cmdline")?,
        })
    }
}

/// What the check after a boot expects of the running kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    /// What `uname -r` must say: exactly, or as a glob when it has a `*`.
    pub release: String,
    /// Words /proc/cmdline must have; of a `key=value` word, the last `key=` on the line.
    pub append: Vec<String>,
}

impl Expectation {
    /// `Ok` when `running` is the kernel asked for; else every mismatch,
    /// named with what was asked and what is running. Also what tells a
    /// worker whether a job needs a boot at all.
    pub fn check(&self, running: &Running) -> Result<()> {
        let mut mismatches = Vec::new();
        if !release_matches(&self.release, &running.release) {
            let pattern = if self.release.contains('*') {
                " (a pattern)"
            } else {
                ""
            };
            mismatches.push(format!(
                "release: asked for {}{pattern}, running {}",
                self.release, running.release
            ));
        }
        let words = cmdline_words(&running.cmdline);
        let missing: Vec<String> = self
            .append
            .iter()
            .filter_map(|want| missing_word(want, &words))
            .collect();
        if !missing.is_empty() {
            mismatches.extend(missing);
            mismatches.push(format!("/proc/cmdline is '{}'", running.cmdline));
        }
        if mismatches.is_empty() {
            Ok(())
        } else {
            Err(Error::KernelMismatch { mismatches })
        }
    }

    /// [`Self::check`] against this host's kernel.
    pub fn check_running(&self) -> Result<()> {
        self.check(&Running::read()?)
    }
}

/// Whether `release` is `pattern`: equal, or matching it as a glob when it has a `*`.
pub fn release_matches(pattern: &str, release: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let [first, middle @ .., last] = &parts[..] else {
        return pattern == release; // no `*`: one part
    };
    let Some(mut rest) = release.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Why `want` is not in effect on a command line of `words`, if it is not:
/// absent, or (a `key=value`) overridden by a later `key=`.
fn missing_word(want: &str, words: &[&str]) -> Option<String> {
    let absent = || format!("{want} is not on /proc/cmdline");
    let Some((key, _)) = want.split_once('=') else {
        return (!words.contains(&want)).then(absent);
    };
    let last = words
        .iter()
        .rev()
        .find(|w| w.split_once('=').is_some_and(|(k, _)| k == key));
    match last {
        None => Some(absent()),
        Some(last) if *last == want => None,
        Some(last) => Some(format!(
            "{want} is not in effect: the command line's last {key}= is {last}"
        )),
    }
}

/// What a worker records on a job before it reboots for it: what to check
/// after the boot, and how the boot was made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootRecord {
    pub job: String,
    pub expectation: Expectation,
    /// [`BootMethod::describe`].
    pub method: String,
    /// The command that staged the kernel (empty for a reboot command).
    pub staged: Vec<String>,
    /// The kernel the host ran before (what a boot back returns to).
    pub from: Running,
}

/// Checks `req` on this host, chooses how to boot it ([`BootMethod::choose`],
/// on this `PATH`) and stages it. The worker stores the record (the job
/// `rebooting`), then calls the method's [`BootMethod::reboot`].
pub fn stage_boot(
    req: &KernelRequirement,
    settings: &BootSettings,
    job: &str,
) -> Result<(BootMethod, BootRecord)> {
    let path = std::env::var_os("PATH");
    stage_boot_with(req, settings, job, path.as_deref(), Running::read()?)
}

/// [`stage_boot`] with the `PATH` and the running kernel given.
pub fn stage_boot_with(
    req: &KernelRequirement,
    settings: &BootSettings,
    job: &str,
    path: Option<&OsStr>,
    from: Running,
) -> Result<(BootMethod, BootRecord)> {
    let expectation = req.expectation()?;
    let method = BootMethod::choose(req, settings, path)?;
    let staged = method.stage(req, &from.cmdline)?;
    let record = BootRecord {
        job: job.to_string(),
        expectation,
        method: method.describe(),
        staged,
        from,
    };
    Ok((method, record))
}

/// How this host may boot a job's kernel: a worker's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootSettings {
    /// A shell command that boots the job's kernel once and reboots (a
    /// one-shot boot entry: `grub-reboot "osbench-$OSBENCH_BOOT_RELEASE" &&
    /// systemctl reboot`), told what to boot in `OSBENCH_BOOT_*` variables
    /// ([`boot_env`]): for hosts without kexec, and jobs that name only a release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reboot_command: Option<String>,
    /// After `kexec -l`, `kexec -e` at once (nothing shut down cleanly)
    /// instead of `systemctl kexec`.
    #[serde(default)]
    pub kexec_direct: bool,
    /// What boots back into the default kernel ([`DEFAULT_BOOT_BACK`] unless set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_back_command: Option<String>,
}

/// What boots a kexec-loaded kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KexecReboot {
    /// `systemctl kexec`: services stopped and file systems unmounted first.
    Systemctl(PathBuf),
    /// `kexec -e`: at once, as after a crash.
    Direct,
}

/// How a host boots a job's kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootMethod {
    /// `kexec -l KERNEL [--initrd=INITRD] --append=WORDS`, then `reboot`.
    Kexec { kexec: PathBuf, reboot: KexecReboot },
    /// A configured reboot command ([`BootSettings::reboot_command`]).
    Command(String),
}

impl BootMethod {
    /// Kexec when `kexec` is on `path` and `req` names a kernel file, else
    /// the configured reboot command; neither is an error saying what to
    /// install or configure. `path` is a `PATH` value (`None`: none).
    pub fn choose(
        req: &KernelRequirement,
        settings: &BootSettings,
        path: Option<&OsStr>,
    ) -> Result<Self> {
        let kexec = req.kernel.as_ref().and_then(|_| on_path("kexec", path?));
        let systemctl = path.and_then(|p| on_path("systemctl", p));
        match (kexec, &settings.reboot_command) {
            (Some(kexec), _) if settings.kexec_direct => Ok(Self::Kexec {
                kexec,
                reboot: KexecReboot::Direct,
            }),
            (Some(kexec), _) if systemctl.is_some() => Ok(Self::Kexec {
                kexec,
                reboot: KexecReboot::Systemctl(systemctl.expect("checked")),
            }),
            (_, Some(command)) => Ok(Self::Command(command.clone())),
            (Some(_), None) => Err(Error::Boot(format!(
                "cannot boot {}: kexec is on PATH but systemctl is not, to boot what it loads; \
                 set the worker's kexec_direct (`kexec -e`, no clean shutdown) or a reboot command",
                req.label()
            ))),
            (None, None) => Err(Error::Boot(format!(
                "cannot boot {}: {}, and this worker has no reboot command; install kexec-tools \
                 or give the worker a reboot command that sets a one-shot boot entry \
                 (docs/kernel-boot-jobs.md)",
                req.label(),
                match req.kernel {
                    None => "the job names only a release, and kexec needs a kernel file",
                    Some(_) => "kexec is not on PATH",
                }
            ))),
        }
    }

    /// Stages `req`'s kernel (`kexec -l`; a reboot command has nothing to
    /// stage), the running command line `cmdline` giving the rest of the new
    /// one ([`boot_cmdline`]). Returns the command run, for the job's record.
    pub fn stage(&self, req: &KernelRequirement, cmdline: &str) -> Result<Vec<String>> {
        let Self::Kexec { kexec, .. } = self else {
            return Ok(Vec::new());
        };
        let args = kexec_load_args(req, cmdline)?;
        run_program(kexec, &args, "the kernel is not staged")?;
        let mut argv = vec![kexec.display().to_string()];
        argv.extend(args);
        Ok(argv)
    }

    /// Boots what [`Self::stage`] staged, for job `job`. `Ok` once the
    /// command has returned: the host is going down, and the caller waits.
    pub fn reboot(&self, req: &KernelRequirement, job: &str) -> Result<()> {
        let kept = "the host did not reboot";
        match self {
            Self::Kexec {
                reboot: KexecReboot::Systemctl(systemctl),
                ..
            } => run_program(systemctl, &["kexec".into()], kept),
            Self::Kexec {
                kexec,
                reboot: KexecReboot::Direct,
            } => run_program(kexec, &["-e".into()], kept),
            Self::Command(command) => {
                run_sh("the reboot command", &boot_env(req, job), command, kept)
            }
        }
    }

    /// The method in words, for the job's record.
    pub fn describe(&self) -> String {
        match self {
            Self::Kexec {
                kexec,
                reboot: KexecReboot::Systemctl(s),
            } => format!("{} -l, then {} kexec", kexec.display(), s.display()),
            Self::Kexec {
                kexec,
                reboot: KexecReboot::Direct,
            } => format!("{0} -l, then {0} -e", kexec.display()),
            Self::Command(command) => format!("reboot command: {command}"),
        }
    }
}

/// Runs the command that boots back into the host's default kernel after
/// job `job` ([`BootSettings::boot_back_command`], else [`DEFAULT_BOOT_BACK`]).
pub fn boot_back(settings: &BootSettings, job: &str) -> Result<()> {
    let command = settings
        .boot_back_command
        .as_deref()
        .unwrap_or(DEFAULT_BOOT_BACK);
    let env = BTreeMap::from([
        ("OSBENCH_BOOT_JOB".to_string(), job.to_string()),
        ("OSBENCH_BOOT_BACK".to_string(), "1".to_string()),
    ]);
    run_sh(
        "the boot-back command",
        &env,
        command,
        "the host did not reboot",
    )
}

/// What a reboot command is told: `OSBENCH_BOOT_JOB`, `OSBENCH_BOOT_KERNEL`,
/// `OSBENCH_BOOT_INITRD`, `OSBENCH_BOOT_APPEND` (the job's words only) and
/// `OSBENCH_BOOT_RELEASE` (the job's release or pattern), empty when the job has none.
pub fn boot_env(req: &KernelRequirement, job: &str) -> BTreeMap<String, String> {
    let path = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or(String::new(), |p| p.display().to_string())
    };
    BTreeMap::from([
        ("OSBENCH_BOOT_JOB".into(), job.to_string()),
        ("OSBENCH_BOOT_KERNEL".into(), path(&req.kernel)),
        ("OSBENCH_BOOT_INITRD".into(), path(&req.initrd)),
        (
            "OSBENCH_BOOT_APPEND".into(),
            req.append.clone().unwrap_or_default(),
        ),
        (
            "OSBENCH_BOOT_RELEASE".into(),
            req.release.clone().unwrap_or_default(),
        ),
    ])
}

/// `kexec -l`'s arguments for `req` with the running command line `cmdline`.
pub fn kexec_load_args(req: &KernelRequirement, cmdline: &str) -> Result<Vec<String>> {
    let kernel = req.kernel.as_ref().ok_or_else(|| {
        Error::Boot(format!(
            "cannot kexec {}: the job names no kernel file",
            req.label()
        ))
    })?;
    let mut args = vec!["-l".to_string(), kernel.display().to_string()];
    if let Some(initrd) = &req.initrd {
        args.push(format!("--initrd={}", initrd.display()));
    }
    args.push(format!("--append={}", boot_cmdline(req, cmdline)?));
    Ok(args)
}

/// The command line a kexec'd kernel gets: the running one's words less
/// `BOOT_IMAGE=` and `initrd=` (the boot loader's, naming the old files),
/// then the job's words that are not there already. Chosen over
/// `--reuse-cmdline` so the exact line is in the job's record.
pub fn boot_cmdline(req: &KernelRequirement, cmdline: &str) -> Result<String> {
    let mut words: Vec<String> = cmdline_words(cmdline)
        .into_iter()
        .filter(|w| !w.starts_with("BOOT_IMAGE=") && !w.starts_with("initrd="))
        .map(String::from)
        .collect();
    for want in req.append_words()? {
        if !words.contains(&want) {
            words.push(want);
        }
    }
    Ok(words.join(" "))
}

/// An executable called `name` in one of `path`'s directories.
pub fn on_path(name: &str, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `program args`, stdin closed; its failure names the command, its
/// status and first line of output, and `consequence`.
fn run_program(program: &Path, args: &[String], consequence: &str) -> Result<()> {
    let shown = format!("{} {}", program.display(), args.join(" "));
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Boot(format!("cannot run `{shown}`: {e}; {consequence}")))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(if out.stderr.is_empty() {
        &out.stdout
    } else {
        &out.stderr
    })
    .into_owned();
    Err(Error::Boot(format!(
        "`{shown}` failed with {}: {}; {consequence}",
        out.status,
        text.lines().next().unwrap_or("(no output)")
    )))
}

/// Runs `command` with `sh -c` ([`sh`]), at most [`reboot_timeout`],
/// ended (killed, `Err(Interrupted)`) by a stop signal.
fn run_sh(
    what: &str,
    env: &BTreeMap<String, String>,
    command: &str,
    consequence: &str,
) -> Result<()> {
    let stop = crate::measure::Interrupt::signals();
    let watch = Watch {
        stop: Some(&stop),
        timeout: Some(reboot_timeout()),
    };
    match sh(what, env, command, watch) {
        Err(Error::Interrupted) => Err(Error::Interrupted),
        Err(e) => Err(Error::Boot(format!("{e}; {consequence}"))),
        Ok(()) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(release: &str, cmdline: &str) -> Running {
        Running {
            release: release.into(),
            cmdline: cmdline.into(),
        }
    }

    /// The start of a bzImage whose version string is `version`.
    fn bzimage(version: &str) -> Vec<u8> {
        let mut head = vec![0u8; 0x400];
        head[0x202..0x206].copy_from_slice(b"HdrS");
        head[0x206..0x208].copy_from_slice(&0x020Fu16.to_le_bytes());
        head[0x20E..0x210].copy_from_slice(&0x100u16.to_le_bytes());
        head.extend_from_slice(&[0u8; 0x100]);
        head[0x300..0x300 + version.len()].copy_from_slice(version.as_bytes());
        head
    }

    #[test]
    fn the_table_is_read_with_unknown_keys_refused() {
        let req: KernelRequirement = toml::from_str(
            "kernel = \"/boot/vmlinuz-6.18-test\"\nappend = \"mitigations=off nosmt\"\n\
             release = \"6.18.*\"\nboot_back = true\n",
        )
        .unwrap();
        assert_eq!(
            req.kernel.as_deref(),
            Some(Path::new("/boot/vmlinuz-6.18-test"))
        );
        assert!(req.boot_back);
        assert_eq!(req.label(), "6.18.*");
        let e = toml::from_str::<KernelRequirement>("kernal = \"/boot/x\"").unwrap_err();
        assert!(e.to_string().contains("unknown field `kernal`"), "{e}");
    }

    #[test]
    fn validation_names_what_is_missing() {
        let e = KernelRequirement::default().validate().unwrap_err();
        assert!(e.to_string().contains("needs `kernel"), "{e}");
        let missing = KernelRequirement {
            kernel: Some("/boot/vmlinuz-does-not-exist".into()),
            release: Some("6.18.0".into()),
            ..Default::default()
        };
        let e = missing.validate().unwrap_err().to_string();
        assert!(
            e.contains("kernel file /boot/vmlinuz-does-not-exist does not exist on this host"),
            "{e}"
        );
        let relative = KernelRequirement {
            kernel: Some("vmlinuz".into()),
            ..Default::default()
        };
        assert!(
            relative
                .validate()
                .unwrap_err()
                .to_string()
                .contains("not an absolute path")
        );
        let initrd_alone = KernelRequirement {
            release: Some("6.18.0".into()),
            initrd: Some("/boot/initrd.img".into()),
            ..Default::default()
        };
        assert!(initrd_alone.validate().is_err());
        let spaced = KernelRequirement {
            release: Some("6.18 test".into()),
            ..Default::default()
        };
        assert!(
            spaced
                .validate()
                .unwrap_err()
                .to_string()
                .contains("not a kernel release")
        );
    }

    #[test]
    fn the_release_comes_from_the_image_when_not_given() {
        assert_eq!(
            bzimage_release(&bzimage("6.18.0-test (me@host) #1 SMP PREEMPT_DYNAMIC")).as_deref(),
            Some("6.18.0-test")
        );
        assert_eq!(bzimage_release(&[0u8; 0x1000]), None);
        assert_eq!(bzimage_release(b"short"), None);
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("vmlinuz-6.18.0-test");
        std::fs::write(&image, bzimage("6.18.0-test (me@host) #1")).unwrap();
        let req = KernelRequirement {
            kernel: Some(image.clone()),
            append: Some("nosmt".into()),
            ..Default::default()
        };
        let expected = req.expectation().unwrap();
        assert_eq!(expected.release, "6.18.0-test");
        assert_eq!(expected.append, ["nosmt"]);
        // Not a bzImage: the release must be given.
        std::fs::write(&image, b"an arm64 Image, say").unwrap();
        let e = req.validate().unwrap_err().to_string();
        assert!(e.contains("add `release = "), "{e}");
        let given = KernelRequirement {
            release: Some("6.18.0-test".into()),
            ..req
        };
        assert!(given.validate().is_ok());
    }

    #[test]
    fn releases_match_exactly_or_as_globs() {
        assert!(release_matches("6.18.0-test", "6.18.0-test"));
        assert!(!release_matches("6.18.0", "6.18.0-test"), "not a prefix");
        assert!(release_matches("6.18.*", "6.18.0-test"));
        assert!(!release_matches("6.18.*", "6.1.8"));
        assert!(release_matches("*-kasan", "6.18.0-kasan"));
        assert!(release_matches("6.*-rc*", "6.19.0-rc2"));
        assert!(!release_matches("6.*-rc*", "6.19.0"));
        assert!(release_matches("*", "anything"));
        assert!(!release_matches("6.1*1", "6.1"), "the ends may not overlap");
    }

    #[test]
    fn command_lines_split_as_the_kernel_splits_them() {
        assert_eq!(
            cmdline_words("  BOOT_IMAGE=/vmlinuz root=UUID=1 dyndbg=\"file a.c +p\" quiet "),
            [
                "BOOT_IMAGE=/vmlinuz",
                "root=UUID=1",
                "dyndbg=\"file a.c +p\"",
                "quiet"
            ]
        );
        assert!(cmdline_words("").is_empty());
    }

    #[test]
    fn the_check_names_the_release_and_every_missing_word() {
        let expected = Expectation {
            release: "6.18.0-test".into(),
            append: vec!["mitigations=off".into(), "nosmt".into(), "quiet".into()],
        };
        let ok = running("6.18.0-test", "root=/dev/sda1 mitigations=off nosmt quiet");
        assert!(expected.check(&ok).is_ok());
        let wrong = running(
            "6.8.0-45-generic",
            "BOOT_IMAGE=/vmlinuz mitigations=off mitigations=auto quiet",
        );
        let Err(Error::KernelMismatch { mismatches }) = expected.check(&wrong) else {
            panic!("a mismatch");
        };
        assert_eq!(
            mismatches,
            [
                "release: asked for 6.18.0-test, running 6.8.0-45-generic",
                "mitigations=off is not in effect: the command line's last mitigations= is \
                 mitigations=auto",
                "nosmt is not on /proc/cmdline",
                "/proc/cmdline is 'BOOT_IMAGE=/vmlinuz mitigations=off mitigations=auto quiet'",
            ]
        );
        let e = expected.check(&wrong).unwrap_err().to_string();
        assert!(
            e.starts_with("the running kernel is not the one the job asked for: release"),
            "{e}"
        );
        let absent = Expectation {
            release: "6.*".into(),
            append: vec!["isolcpus=1".into()],
        };
        let Err(Error::KernelMismatch { mismatches }) = absent.check(&ok) else {
            panic!("a mismatch");
        };
        assert_eq!(mismatches[0], "isolcpus=1 is not on /proc/cmdline");
        assert_eq!(mismatches.len(), 2);
    }

    #[test]
    fn the_running_kernel_is_read() {
        let here = Running::read().unwrap();
        assert!(!here.release.is_empty());
        let expected = Expectation {
            release: here.release.clone(),
            append: Vec::new(),
        };
        assert!(expected.check_running().is_ok());
    }

    #[test]
    fn kexec_is_chosen_when_on_path_and_the_job_names_a_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let put = |name: &str, mode: u32| {
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            p
        };
        let path = Some(dir.path().as_os_str());
        let file = KernelRequirement {
            kernel: Some("/boot/vmlinuz-6.18-test".into()),
            ..Default::default()
        };
        let release = KernelRequirement {
            release: Some("6.18.0".into()),
            ..Default::default()
        };
        let none = BootSettings::default();
        let command = BootSettings {
            reboot_command: Some("grub-reboot x && reboot".into()),
            ..Default::default()
        };
        let direct = BootSettings {
            kexec_direct: true,
            ..Default::default()
        };
        let chosen = |req, settings| BootMethod::choose(req, settings, path);
        let e = chosen(&file, &none).unwrap_err().to_string();
        assert!(
            e.contains("kexec is not on PATH, and this worker has no reboot command"),
            "{e}"
        );
        put("kexec", 0o644); // not executable: not taken
        let by_command = BootMethod::Command("grub-reboot x && reboot".into());
        assert_eq!(chosen(&file, &command).unwrap(), by_command);
        let kexec = put("kexec", 0o755);
        let e = chosen(&file, &none).unwrap_err().to_string();
        assert!(e.contains("systemctl is not"), "{e}");
        let at_once = BootMethod::Kexec {
            kexec: kexec.clone(),
            reboot: KexecReboot::Direct,
        };
        assert_eq!(chosen(&file, &direct).unwrap(), at_once);
        let systemctl = put("systemctl", 0o755);
        let clean = BootMethod::Kexec {
            kexec,
            reboot: KexecReboot::Systemctl(systemctl),
        };
        assert_eq!(chosen(&file, &none).unwrap(), clean);
        assert_eq!(chosen(&file, &command).unwrap(), clean, "kexec first");
        // A job that names only a release: the reboot command, or an error.
        assert_eq!(chosen(&release, &command).unwrap(), by_command);
        let e = chosen(&release, &none).unwrap_err().to_string();
        assert!(e.contains("names only a release"), "{e}");
        assert!(BootMethod::choose(&file, &none, None).is_err(), "no PATH");
    }

    #[test]
    fn kexec_gets_the_running_line_less_the_boot_loader_s_words_plus_the_job_s() {
        let req = KernelRequirement {
            kernel: Some("/boot/vmlinuz-6.18-test".into()),
            initrd: Some("/boot/initrd.img-6.18-test".into()),
            append: Some("mitigations=off quiet".into()),
            ..Default::default()
        };
        let args = kexec_load_args(
            &req,
            "BOOT_IMAGE=/vmlinuz-6.8 root=UUID=1 ro quiet initrd=\\initrd.img",
        )
        .unwrap();
        assert_eq!(
            args,
            [
                "-l",
                "/boot/vmlinuz-6.18-test",
                "--initrd=/boot/initrd.img-6.18-test",
                "--append=root=UUID=1 ro quiet mitigations=off",
            ]
        );
        let release_only = KernelRequirement {
            release: Some("6.18.0".into()),
            ..Default::default()
        };
        assert!(kexec_load_args(&release_only, "").is_err());
    }

    #[test]
    fn a_reboot_command_is_told_what_to_boot() {
        let req = KernelRequirement {
            kernel: Some("/boot/vmlinuz-6.18-test".into()),
            append: Some("nosmt".into()),
            ..Default::default()
        };
        let env = boot_env(&req, "42");
        let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("OSBENCH_BOOT_APPEND", "nosmt"),
                ("OSBENCH_BOOT_INITRD", ""),
                ("OSBENCH_BOOT_JOB", "42"),
                ("OSBENCH_BOOT_KERNEL", "/boot/vmlinuz-6.18-test"),
                ("OSBENCH_BOOT_RELEASE", ""),
            ]
        );
    }
}
