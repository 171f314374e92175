//! A configuration's observers (`document::Observers`): its audit rules
//! and probes, checked before anything runs and installed around each of
//! its blocks, so that any case can be measured with and without them in
//! interleaved rounds. What they cost is the finding: the calls the case
//! makes are checked against every audit rule, and every probe on their
//! path fires. Installing goes through `bench::util::observe`, which has
//! the warden remove rules and probes if osbench dies (even by SIGKILL);
//! dropping an [`Observing`] removes them in the ordinary case.
//!
//! Left out: configurations in guests (their rules and probes would be
//! the guest's, installed by its agent: refused), and audit rules when
//! auditing was off at osbench's start (the timing thread would not be
//! audited: refused, saying how to turn it on).

use std::path::Path;

use blazesym::inspect::{Inspector, source::Elf, source::Source};

use crate::bench::util::observe::{self, AuditRules, Probe, ProbeKind};
use crate::document::{Config, Observers, ProbeSpec};
use crate::error::{Error, Result};

/// Checks every configuration's observers before anything runs: none in a
/// guest, auditctl usable and auditing already on, tracefs writable, each
/// kprobe's function in the kernel, each uprobe's symbol in its file.
pub(super) fn check(configs: &[Config]) -> Result<()> {
    for config in configs.iter().filter(|c| !c.observers.is_none()) {
        let what = format!("configuration '{}'", config.name);
        if config.guest.is_some() || config.in_guest.is_some() {
            return Err(Error::Usage(format!(
                "{what} has audit rules or probes and runs in a guest: they would be this \
                 machine's, not the guest's; drop them, or set them up in the guest's set-up"
            )));
        }
        if config.observers.audit_rules > 0 {
            observe::audit_check_running_threads().map_err(|e| within(&what, e))?;
        }
        for probe in &config.observers.probes {
            target(probe).map_err(|e| within(&what, e))?;
        }
    }
    Ok(())
}

/// `e` said of `what`.
fn within(what: &str, e: Error) -> Error {
    Error::Measure(format!("{what}: {e}"))
}

/// A configuration's audit rules and probes, installed; dropping it removes them.
#[must_use = "dropping it removes the rules and probes"]
pub(super) struct Observing {
    _probes: Vec<Probe>,
    _audit: Option<AuditRules>,
}

/// Installs `observers` (before a block of their configuration).
pub(super) fn install(observers: &Observers) -> Result<Observing> {
    let audit = (observers.audit_rules > 0)
        .then(|| AuditRules::apply(observers.audit_rules))
        .transpose()?;
    let probes = (observers.probes.iter().enumerate())
        .map(|(i, probe)| {
            let (kind, target) = target(probe)?;
            Probe::define(kind, &target, &format!("{}{i}", probe.label()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Observing {
        _probes: probes,
        _audit: audit,
    })
}

/// The probe's kind and where it goes as tracefs takes it: the kernel
/// function (checked in /proc/kallsyms), or `PATH:0xOFFSET` of the symbol
/// in its file; the events file checked writable.
fn target(probe: &ProbeSpec) -> Result<(ProbeKind, String)> {
    match probe {
        ProbeSpec::Kprobe { function } => {
            observe::events_file(ProbeKind::Kprobe)?;
            kernel_function(function)?;
            Ok((ProbeKind::Kprobe, function.clone()))
        }
        ProbeSpec::Uprobe { path, symbol } => {
            observe::events_file(ProbeKind::Uprobe)?;
            let offset = file_offset(Path::new(path), symbol)?;
            Ok((ProbeKind::Uprobe, format!("{path}:{offset:#x}")))
        }
    }
}

/// Checks that the running kernel has a function `name` (a text symbol of /proc/kallsyms).
fn kernel_function(name: &str) -> Result<()> {
    let symbols = std::fs::read_to_string("/proc/kallsyms")
        .map_err(|e| Error::io("reading /proc/kallsyms", e))?;
    let found = symbols.lines().any(|line| {
        let mut fields = line.split_whitespace().skip(1);
        matches!(fields.next(), Some("T" | "t")) && fields.next() == Some(name)
    });
    match found {
        true => Ok(()),
        false => Err(Error::Measure(format!(
            "kprobe:{name}: the running kernel has no function {name} (/proc/kallsyms); \
             system calls are __x64_sys_NAME on x86-64 (grep NAME /proc/kallsyms)"
        ))),
    }
}

/// Where `symbol` lies in the ELF file at `path`, as an offset in the file.
fn file_offset(path: &Path, symbol: &str) -> Result<u64> {
    let spec = format!("uprobe:{}:{symbol}", path.display());
    if !path.is_file() {
        return Err(Error::Measure(format!(
            "{spec}: no file {}",
            path.display()
        )));
    }
    let inspector = Inspector::new();
    let source = Source::Elf(Elf::new(path));
    let found = inspector
        .lookup(&source, &[symbol])
        .map_err(|e| Error::Measure(format!("{spec}: reading its symbols: {e}")))?;
    found
        .into_iter()
        .flatten()
        .find_map(|info| info.file_offset)
        .ok_or_else(|| {
            Error::Measure(format!(
                "{spec}: {} has no symbol {symbol} (nm -D {} lists those it has)",
                path.display(),
                path.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symbol_of_an_elf_file_has_an_offset_and_a_missing_one_is_named() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        // The test binary's own `main` symbol.
        assert!(file_offset(&exe, "main").unwrap() > 0);
        let err = file_offset(&exe, "no_such_symbol_anywhere").unwrap_err();
        assert!(err.to_string().contains("has no symbol"), "{err}");
        let err = file_offset(Path::new("/nonexistent"), "main").unwrap_err();
        assert!(err.to_string().contains("no file"), "{err}");
    }

    #[test]
    fn configurations_in_guests_cannot_have_observers() {
        let config = Config {
            name: "audited".into(),
            in_guest: Some("uml".into()),
            observers: Observers {
                audit_rules: 3,
                probes: Vec::new(),
            },
            ..Default::default()
        };
        let err = check(&[config]).unwrap_err().to_string();
        assert!(err.contains("runs in a guest"), "{err}");
    }
}
