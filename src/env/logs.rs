//! System logs and kernel identity kept with a run (`--logs`, the default;
//! `--no-logs` leaves them out), as the Phoronix Test Suite's
//! `SaveSystemLogs`, mmtests and LKP's kconfig axis keep them: the kernel
//! configuration (`/proc/config.gz`, else `/boot/config-RELEASE`) and its
//! SHA-256, the kernel log since boot (`/dev/kmsg`, read without blocking)
//! with counts of warnings, oopses and call traces, the loaded modules
//! (`/proc/modules`), every sysctl under `kernel/`, `vm/` and `net/core/`
//! (but the ones that change by themselves: `kernel.random.*`,
//! `kernel.ns_last_pid`, `kernel.pty.nr`), and the DMI fields readable
//! under /sys/class/dmi/id (serial numbers and UUIDs left out), and the PCI
//! devices sysfs lists with their drivers ([`super::pci`]). The counts,
//! sources, DMI and PCI devices are plain; the configuration, log, modules and sysctls
//! go into one gzip-compressed, base64-encoded `archive` of at most
//! [`ARCHIVE_LIMIT`] bytes before compression (the log's tail at most
//! [`DMESG_LIMIT`]). A source that cannot be read is named in `unavailable`
//! with the reason (`dmesg_restrict` refusing the log, no config). The
//! environment's diff ([`crate::env::diff`]) lists the kconfig symbols, modules,
//! sysctls and PCI devices that differ between environments, and
//! [`crate::env::new_kernel_problems`] the warnings and oopses a later
//! environment's log has that the first's has not. Left out: the journal,
//! anything that would need a program run (`lspci`: sysfs is read instead).

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::pci::{self, PciDevice};
use super::probe::Sys;

/// The archive's size before compression, at most (bytes).
pub const ARCHIVE_LIMIT: usize = 1 << 20;
/// The kernel log's tail kept, at most (bytes).
pub const DMESG_LIMIT: usize = 256 << 10;
/// Warning and oops lines kept in plain `flagged`, at most.
const FLAGGED_LIMIT: usize = 20;

/// Sysctls that change by themselves, never a setting: left out.
const VOLATILE_SYSCTLS: [&str; 3] = ["kernel.random.", "kernel.ns_last_pid", "kernel.pty.nr"];

/// What was captured, as the document holds it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemLogs {
    /// Where the kernel configuration came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kconfig_source: Option<String>,
    /// Symbols set in it (`=y`, `=m`, values).
    #[serde(default)]
    pub kconfig_symbols: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dmesg: Option<KernelLog>,
    #[serde(default)]
    pub modules: usize,
    #[serde(default)]
    pub sysctls: usize,
    /// /sys/class/dmi/id file → contents.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dmi: BTreeMap<String, String>,
    /// The PCI devices, by slot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci: Vec<PciDevice>,
    /// Sources that could not be read (`kconfig`, `dmesg`, `modules`, `sysctl`, `dmi`,
    /// `pci`) → why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable: BTreeMap<String, String>,
    /// What was cut to keep the archive within its bound.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<String>,
    /// The archive's size before compression.
    #[serde(default)]
    pub archive_bytes: usize,
    /// Base64 of the gzip of the JSON [`Archive`].
    #[serde(default)]
    pub archive: String,
}

/// The kernel log's counts.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct KernelLog {
    pub lines: usize,
    /// `WARNING:` lines (WARN_ON and its kin).
    pub warnings: usize,
    /// `Oops`, `BUG:`, `general protection fault`, `Kernel panic` lines.
    pub oopses: usize,
    /// `Call Trace:` lines.
    pub call_traces: usize,
    /// The first warning and oops lines, as logged (`[seconds] text`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<String>,
}

/// The archived sources.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Archive {
    /// CONFIG_SYMBOL → value, for every symbol set.
    pub kconfig: BTreeMap<String, String>,
    /// The kernel log's tail, one `[seconds] text` line per record.
    pub dmesg: String,
    pub modules: Vec<String>,
    /// Dotted name (`vm.swappiness`) → value, whitespace collapsed.
    pub sysctl: BTreeMap<String, String>,
}

impl SystemLogs {
    /// The archive, decoded; `None` when it is missing or damaged.
    pub fn archive(&self) -> Option<Archive> {
        let gz = base64::engine::general_purpose::STANDARD
            .decode(&self.archive)
            .ok()?;
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut json)
            .ok()?;
        serde_json::from_slice(&json).ok()
    }
}

/// Captures the logs from the tree `sys` for the kernel `release`; also
/// returns the configuration's SHA-256 (hex) when it was read.
pub fn capture(sys: &Sys, release: &str) -> (SystemLogs, Option<String>) {
    let mut logs = SystemLogs::default();
    let mut archive = Archive::default();
    let mut missing = BTreeMap::new();
    let mut unavailable = |source: &str, why: String| {
        missing.insert(source.to_string(), why);
    };
    let mut hash = None;
    match kconfig(sys, release) {
        Ok((source, text)) => {
            hash = Some(hex(&Sha256::digest(text.as_bytes())));
            archive.kconfig = kconfig_symbols(&text);
            logs.kconfig_source = Some(source);
        }
        Err(why) => unavailable("kconfig", why),
    }
    match kernel_log(sys) {
        Ok(text) => {
            logs.dmesg = Some(count_problems(&text));
            archive.dmesg = tail(&text, DMESG_LIMIT).to_string();
            if archive.dmesg.len() < text.len() {
                logs.truncated
                    .push(format!("dmesg: the last {DMESG_LIMIT} bytes kept"));
            }
        }
        Err(why) => unavailable("dmesg", why),
    }
    match sys.read("/proc/modules") {
        Ok(text) => archive.modules = module_names(&text),
        Err(why) => unavailable("modules", why),
    }
    archive.sysctl = sysctls(sys);
    if archive.sysctl.is_empty() {
        unavailable("sysctl", "nothing readable under /proc/sys".into());
    }
    match sys.read_dir_files("/sys/class/dmi/id") {
        Ok(files) => logs.dmi = dmi_fields(files),
        Err(why) => unavailable("dmi", why),
    }
    match pci::capture(sys) {
        Ok(devices) => logs.pci = devices,
        Err(why) => unavailable("pci", why),
    }
    logs.unavailable = missing;
    logs.kconfig_symbols = archive.kconfig.len();
    logs.modules = archive.modules.len();
    logs.sysctls = archive.sysctl.len();
    pack(&mut logs, archive);
    (logs, hash)
}

/// Fits `archive` within [`ARCHIVE_LIMIT`] (the log's head goes first, then
/// kconfig symbols from the end) and stores it compressed in `logs`.
fn pack(logs: &mut SystemLogs, mut archive: Archive) {
    let size = |a: &Archive| serde_json::to_vec(a).expect("strings serialise").len();
    let excess = size(&archive).saturating_sub(ARCHIVE_LIMIT);
    if excess > 0 {
        let keep = archive.dmesg.len().saturating_sub(excess);
        archive.dmesg = tail(&archive.dmesg, keep).to_string();
        logs.truncated
            .push(format!("dmesg: cut to {keep} bytes to fit {ARCHIVE_LIMIT}"));
    }
    let (before, mut excess) = (
        archive.kconfig.len(),
        size(&archive).saturating_sub(ARCHIVE_LIMIT),
    );
    while excess > 0 {
        let Some((k, v)) = archive.kconfig.pop_last() else {
            break;
        };
        excess = excess.saturating_sub(k.len() + v.len() + 6); // "k":"v", with escapes aside
    }
    if archive.kconfig.len() < before {
        logs.truncated.push(format!(
            "kconfig: {} of {before} symbols kept",
            archive.kconfig.len()
        ));
    }
    let json = serde_json::to_vec(&archive).expect("strings serialise");
    logs.archive_bytes = json.len();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&json).expect("writing to memory");
    let bytes = gz.finish().expect("writing to memory");
    logs.archive = base64::engine::general_purpose::STANDARD.encode(bytes);
}

/// The last at most `limit` bytes of `text`, from a line start.
fn tail(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let rest = &text[start..];
    rest.find('\n').map_or(rest, |i| &rest[i + 1..])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The kernel configuration's source and text.
fn kconfig(sys: &Sys, release: &str) -> Result<(String, String), String> {
    let proc = "/proc/config.gz";
    match std::fs::read(sys.path(proc)) {
        Ok(gz) => {
            let mut text = String::new();
            flate2::read::GzDecoder::new(&gz[..])
                .read_to_string(&mut text)
                .map_err(|e| format!("{proc} does not decompress: {e}"))?;
            return Ok((proc.into(), text));
        }
        Err(e) if e.kind() != ErrorKind::NotFound => {
            return Err(format!("cannot read {proc}: {e}"));
        }
        Err(_) => {}
    }
    let boot = format!("/boot/config-{release}");
    std::fs::read_to_string(sys.path(&boot))
        .map(|text| (boot.clone(), text))
        .map_err(|e| format!("no {proc} (CONFIG_IKCONFIG_PROC) and {boot}: {e}"))
}

/// `CONFIG_X=value` lines as symbol → value (quotes kept).
pub fn kconfig_symbols(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| l.starts_with("CONFIG_"))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The kernel log since boot from `/dev/kmsg`, one `[seconds] text` line
/// per record, read without blocking; refused access is the reason.
fn kernel_log(sys: &Sys) -> Result<String, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = sys.path("/dev/kmsg");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&path)
        .map_err(|e| match e.kind() {
            ErrorKind::PermissionDenied => format!(
                "cannot read /dev/kmsg: {e} (kernel.dmesg_restrict keeps the log from users \
                 without CAP_SYSLOG)"
            ),
            _ => format!("cannot read /dev/kmsg: {e}"),
        })?;
    let mut records = String::new();
    // One record per read (a regular file in tests: many); 8 KiB holds any record.
    let mut buf = vec![0u8; 8192];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => records.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            // EPIPE: records were overwritten while reading; the next read goes on.
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("reading /dev/kmsg: {e}")),
        }
        if records.len() > 16 * DMESG_LIMIT {
            let keep = tail(&records, 2 * DMESG_LIMIT).to_string();
            records = keep;
        }
    }
    Ok(records
        .lines()
        .filter_map(kmsg_line)
        .collect::<Vec<_>>()
        .join("\n"))
}

/// A `/dev/kmsg` record (`PRIORITY,SEQ,MICROSECONDS,FLAGS;text`) as
/// `[seconds] text`; `None` for its continuation lines (` KEY=value`).
fn kmsg_line(record: &str) -> Option<String> {
    if record.starts_with(' ') {
        return None;
    }
    let (prefix, text) = record.split_once(';')?;
    let micros: u64 = prefix.split(',').nth(2)?.parse().ok()?;
    Some(format!(
        "[{:>5}.{:06}] {text}",
        micros / 1_000_000,
        micros % 1_000_000
    ))
}

/// What a kernel log line reports, if it is a problem.
fn problem(text: &str) -> Option<&'static str> {
    const OOPS: [&str; 5] = [
        "Oops",
        "BUG:",
        "general protection fault",
        "Kernel panic",
        "kernel BUG at",
    ];
    if OOPS.iter().any(|w| text.contains(w)) {
        Some("oops")
    } else if text.contains("WARNING:") {
        Some("warning")
    } else if text.trim_start().starts_with("Call Trace:") {
        Some("call trace")
    } else {
        None
    }
}

/// The log's line count and problems.
fn count_problems(log: &str) -> KernelLog {
    let mut counts = KernelLog::default();
    for line in log.lines() {
        counts.lines += 1;
        let flagged = match problem(message(line)) {
            Some("oops") => &mut counts.oopses,
            Some("warning") => &mut counts.warnings,
            Some(_) => {
                counts.call_traces += 1;
                continue;
            }
            None => continue,
        };
        *flagged += 1;
        if counts.flagged.len() < FLAGGED_LIMIT {
            counts.flagged.push(line.to_string());
        }
    }
    counts
}

/// A log line's text without its `[seconds] ` stamp.
pub(super) fn message(line: &str) -> &str {
    match line.split_once("] ") {
        Some((stamp, text)) if stamp.starts_with('[') => text,
        _ => line,
    }
}

/// The names in /proc/modules, sorted.
fn module_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names
}

/// Every readable sysctl under kernel/, vm/ and net/core/, dotted, whitespace collapsed.
fn sysctls(sys: &Sys) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for top in ["kernel", "vm", "net/core"] {
        walk_sysctls(sys, top, &mut out);
    }
    out
}

fn walk_sysctls(sys: &Sys, dir: &str, out: &mut BTreeMap<String, String>) {
    let Ok(names) = sys.list(&format!("/proc/sys/{dir}")) else {
        return;
    };
    for name in names {
        let rel = format!("{dir}/{name}");
        let key = rel.replace('/', ".");
        if VOLATILE_SYSCTLS
            .iter()
            .any(|v| key == *v || (v.ends_with('.') && key.starts_with(v)))
        {
            continue;
        }
        let path = sys.path(&format!("/proc/sys/{rel}"));
        if path.is_dir() {
            walk_sysctls(sys, &rel, out);
        } else if let Ok(value) = std::fs::read_to_string(&path) {
            // Write-only ones (vm.drop_caches) fail to read and are left out.
            out.insert(key, value.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
}

/// DMI files, without serial numbers, UUIDs and the kernel's own files.
fn dmi_fields(files: BTreeMap<String, String>) -> BTreeMap<String, String> {
    files
        .into_iter()
        .filter(|(name, value)| {
            !["serial", "uuid", "modalias", "uevent"]
                .iter()
                .any(|w| name.contains(w))
                && !value.starts_with("unreadable")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Environment;
    use crate::env::diff::{logs_diff as diff, new_kernel_problems};

    fn put(root: &std::path::Path, path: &str, text: &[u8]) {
        let p = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// A fake tree: a kconfig in /boot, a kernel log with `extra` records, modules, sysctls.
    fn tree(kconfig: &str, extra: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "/boot/config-6.1.0-test", kconfig.as_bytes());
        let kmsg = format!(
            "6,1,1500000,-;Linux version 6.1.0-test\n SUBSYSTEM=cpu\n6,2,2000001,-;kvm: ready\n{extra}"
        );
        put(root, "/dev/kmsg", kmsg.as_bytes());
        put(
            root,
            "/proc/modules",
            b"kvm 1 0 - Live 0x0\nloop 2 0 - Live 0x0\n",
        );
        put(root, "/proc/sys/vm/swappiness", b"60\n");
        put(root, "/proc/sys/kernel/printk", b"4\t4\t1\t7\n");
        put(
            root,
            "/proc/sys/kernel/random/uuid",
            b"changes every read\n",
        );
        put(root, "/proc/sys/net/core/somaxconn", b"4096\n");
        put(root, "/sys/class/dmi/id/sys_vendor", b"QEMU\n");
        put(root, "/sys/class/dmi/id/product_serial", b"secret\n");
        let bridge = ("0x8086", "0x0d57");
        super::super::pci::tests::put_device(root, "0000:00:00.0", bridge, None);
        dir
    }

    fn env_of(dir: &tempfile::TempDir) -> Environment {
        let sys = Sys::at(dir.path());
        let mut env = crate::env::capture_from(&sys);
        let (logs, hash) = capture(&sys, "6.1.0-test");
        env.logs = Some(logs);
        env.kconfig_sha256 = hash;
        env
    }

    #[test]
    fn captures_kconfig_log_modules_sysctls_and_dmi_from_a_fake_tree() {
        let dir = tree(
            "# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x\"\n",
            "",
        );
        let env = env_of(&dir);
        let logs = env.logs.as_ref().unwrap();
        assert_eq!(
            logs.kconfig_source.as_deref(),
            Some("/boot/config-6.1.0-test")
        );
        assert_eq!(env.kconfig_sha256.as_ref().map(String::len), Some(64));
        let archive = logs.archive().unwrap();
        assert_eq!(archive.kconfig["CONFIG_A"], "y");
        assert_eq!(archive.kconfig["CONFIG_C"], "\"x\"");
        assert!(!archive.kconfig.contains_key("CONFIG_B"));
        assert_eq!(
            archive.dmesg,
            "[    1.500000] Linux version 6.1.0-test\n[    2.000001] kvm: ready"
        );
        assert_eq!(archive.modules, ["kvm", "loop"]);
        assert_eq!(archive.sysctl["kernel.printk"], "4 4 1 7");
        assert_eq!(archive.sysctl["net.core.somaxconn"], "4096");
        assert!(
            !archive
                .sysctl
                .keys()
                .any(|k| k.starts_with("kernel.random"))
        );
        assert_eq!(logs.dmi.keys().collect::<Vec<_>>(), ["sys_vendor"]);
        assert_eq!(logs.dmesg.as_ref().unwrap().lines, 2);
        assert_eq!(logs.pci[0].id, "8086:0d57");
        assert!(logs.unavailable.is_empty(), "{:?}", logs.unavailable);
    }

    #[test]
    fn differing_kconfig_symbols_and_a_planted_oops_are_reported() {
        let a = env_of(&tree("CONFIG_A=y\nCONFIG_HZ=250\n", ""));
        let oops = "1,3,3000000,-;BUG: kernel NULL pointer dereference, address: 0000000000000008\n\
                    4,4,3000100,-;Call Trace:\n\
                    4,5,3000200,-;WARNING: CPU: 1 PID: 42 at mm/slub.c:1 kfree+0x1/0x2\n";
        let b = env_of(&tree("CONFIG_A=m\nCONFIG_HZ=1000\nCONFIG_NEW=y\n", oops));
        let log = b.logs.as_ref().unwrap().dmesg.clone().unwrap();
        assert_eq!((log.oopses, log.warnings, log.call_traces), (1, 1, 1));
        let d = diff(&[&a, &b]);
        let keys: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "kconfig.CONFIG_A",
                "kconfig.CONFIG_HZ",
                "kconfig.CONFIG_NEW"
            ]
        );
        assert_eq!(d[2].1, ["not set", "y"]);
        let labels = ["a".to_string(), "b".to_string()];
        let found = new_kernel_problems(&[&a, &b], &labels);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("1 oops") && found[0].contains("NULL pointer dereference"),
            "{found:?}"
        );
        assert!(new_kernel_problems(&[&b, &b], &labels).is_empty());
    }

    #[test]
    fn added_removed_and_rebound_pci_devices_are_listed() {
        let (a_dir, b_dir) = (tree("CONFIG_A=y\n", ""), tree("CONFIG_A=y\n", ""));
        let put = super::super::pci::tests::put_device;
        let (virtio, nic, nvme) = (
            ("0x1af4", "0x1041"),
            ("0x8086", "0x10d3"),
            ("0x144d", "0xa808"),
        );
        put(a_dir.path(), "0000:00:01.0", virtio, Some("virtio-pci"));
        put(a_dir.path(), "0000:00:02.0", nic, Some("e1000e"));
        put(b_dir.path(), "0000:00:01.0", virtio, Some("vfio-pci"));
        put(b_dir.path(), "0000:00:03.0", nvme, Some("nvme"));
        let (a, b) = (env_of(&a_dir), env_of(&b_dir));
        let pair = |k: &str, x: &str, y: &str| (k.to_string(), vec![x.to_string(), y.to_string()]);
        assert_eq!(
            diff(&[&a, &b]),
            [
                pair(
                    "pci.0000:00:01.0",
                    "1af4:1041 virtio-pci",
                    "1af4:1041 vfio-pci"
                ),
                pair("pci.0000:00:02.0", "8086:10d3 e1000e", "absent"),
                pair("pci.0000:00:03.0", "absent", "144d:a808 nvme"),
            ]
        );
        // A side without a PCI bus: no device is listed as removed.
        let bare = tree("CONFIG_A=y\n", "");
        std::fs::remove_dir_all(bare.path().join("sys/bus/pci")).unwrap();
        let bare = env_of(&bare);
        let logs = bare.logs.as_ref().unwrap();
        assert!(logs.pci.is_empty() && logs.unavailable["pci"].contains("no PCI bus"));
        assert!(diff(&[&a, &bare]).is_empty(), "{:?}", diff(&[&a, &bare]));
    }

    #[test]
    fn an_unreadable_log_is_unavailable_with_the_reason_and_the_archive_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let (logs, hash) = capture(&Sys::at(dir.path()), "x");
        assert!(hash.is_none());
        assert!(logs.unavailable["kconfig"].contains("/boot/config-x"));
        assert!(logs.unavailable["dmesg"].contains("/dev/kmsg"));
        let mut big = Archive {
            dmesg: "[    1.000000] a line of the log\n".repeat(50_000),
            ..Archive::default()
        };
        big.kconfig.insert("CONFIG_A".into(), "y".into());
        let mut logs = SystemLogs::default();
        pack(&mut logs, big);
        assert!(
            logs.archive_bytes <= ARCHIVE_LIMIT,
            "{}",
            logs.archive_bytes
        );
        assert!(
            logs.truncated[0].starts_with("dmesg: cut"),
            "{:?}",
            logs.truncated
        );
        assert!(logs.archive().unwrap().dmesg.len() < ARCHIVE_LIMIT);
    }
}
