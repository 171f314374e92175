//! Configurations: the thing a comparison varies (a toggle, a kernel knob),
//! applied by a set-up command before a configuration's block of a round and
//! undone by a tear-down command after it. A toggle that is the value of a
//! file is better a knob (`Config::knobs`, `super::knob`), which the run
//! writes before the set-up and restores itself; this module's commands are
//! for what is not a value.
//!
//! A configuration that runs in a guest has its set-up and tear-down run
//! inside the guest instead (`place::Place::apply`, through the agent);
//! [`share_guests`] lets several configurations share one guest.
//!
//! Commands run with `sh -c` in a process group of their own
//! ([`crate::measure::hook`]). A set-up watches the stop flag: a signal
//! while it runs stops its group (SIGTERM, then SIGKILL) and it returns
//! `Interrupted`. The tear-down is owned by a guard, so it runs whatever
//! happens to the block — success, error, panic unwinding, an interrupt
//! (which stops measuring between samples) or a stopped set-up — and no
//! toggle is left applied. A tear-down is not stopped by the flag (it is
//! what undoes the toggle); only a second Ctrl-C, which ends osbench at
//! once and kills the tear-down's group, skips it.

use std::collections::BTreeMap;

pub use crate::document::{Config, GuestSpec, Override};
use crate::error::{Error, Result};
use crate::measure::Interrupt;
pub use crate::measure::hook::{Watch, sh};

/// A set-up that has run; dropping it runs the matching tear-down.
pub struct Applied<'a> {
    env: &'a BTreeMap<String, String>,
    /// What the tear-down is called in errors, and its command.
    teardown: Option<(String, &'a str)>,
    torn_down: bool,
}

impl<'a> Applied<'a> {
    /// Runs a configuration's set-up, stopped by `stop`. If it fails (or is
    /// stopped), the tear-down runs too and the error is returned.
    pub fn apply(config: &'a Config, stop: &Interrupt) -> Result<Self> {
        let named = |what: &str, c: &'a Option<String>| {
            c.as_deref()
                .map(|c| (format!("the {what} of configuration '{}'", config.name), c))
        };
        Self::hooks(
            &config.env,
            named("set-up", &config.setup),
            named("tear-down", &config.teardown),
            stop,
        )
    }

    /// Runs `setup` (what it is called, its command), stopped by `stop`,
    /// keeping `teardown` for later; if the set-up fails, the tear-down runs too.
    pub fn hooks(
        env: &'a BTreeMap<String, String>,
        setup: Option<(String, &str)>,
        teardown: Option<(String, &'a str)>,
        stop: &Interrupt,
    ) -> Result<Self> {
        let applied = Applied {
            env,
            teardown,
            torn_down: false,
        };
        if let Some((what, command)) = setup {
            let watch = Watch {
                stop: Some(stop),
                timeout: None,
            };
            sh(&what, env, command, watch)?; // `applied` drops here: tear-down runs
        }
        Ok(applied)
    }

    /// Runs the tear-down now and reports its failure.
    pub fn finish(mut self) -> Result<()> {
        self.torn_down = true;
        match &self.teardown {
            Some((what, command)) => sh(what, self.env, command, Watch::default()),
            None => Ok(()),
        }
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        if let (false, Some((what, command))) = (self.torn_down, &self.teardown) {
            let _ = sh(what, self.env, command, Watch::default());
        }
    }
}

/// Parses `NAME=COMMAND` (the command may be empty: nothing to run).
pub fn parse_assignment(s: &str) -> Result<(String, Option<String>)> {
    let (name, command) = s.split_once('=').ok_or_else(|| {
        Error::Measure(format!(
            "'{s}' is not NAME=COMMAND (e.g. --config on='echo 1 > /proc/sysemu')"
        ))
    })?;
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(Error::Measure(format!(
            "'{name}' is not a configuration name (non-empty, no spaces)"
        )));
    }
    Ok((
        name.to_string(),
        (!command.trim().is_empty()).then(|| command.to_string()),
    ))
}

/// Gives every configuration that names a guest configuration (`in`, from
/// `--config NAME@GUEST=…`) that configuration's guest, shared: the guest
/// configuration is marked as sharing its guest under its own name.
pub fn share_guests(configs: &mut [Config]) -> Result<()> {
    for i in 0..configs.len() {
        let Some(host) = configs[i].in_guest.clone() else {
            continue;
        };
        let spec = configs
            .iter()
            .find(|c| c.name == host && c.in_guest.as_deref().is_none_or(|n| n == host))
            .and_then(|c| c.guest.clone())
            .ok_or_else(|| {
                Error::Measure(format!(
                    "configuration '{}' runs in '{host}', which no --guest {host}=… defines",
                    configs[i].name
                ))
            })?;
        configs[i].guest = Some(spec);
        for c in configs.iter_mut().filter(|c| c.name == host) {
            c.in_guest = Some(host.clone());
        }
    }
    Ok(())
}

/// Parses `NAME=uml[:KERNEL-PARAMETERS]`, `NAME=qemu[:kernel=PATH][,append=…]
/// [,accel=…][,cpus=N][,memory=…]` (the kernel defaults to `$OSBENCH_QEMU_KERNEL`) or `NAME=command:COMMAND` (`--guest`).
pub fn parse_guest(s: &str) -> Result<(String, GuestSpec)> {
    let (name, spec) = parse_assignment(s)?;
    let spec = spec.unwrap_or_default();
    let guest = match spec.split_once(':') {
        _ if spec == "uml" => GuestSpec::Uml {
            cmdline: None,
            mem: None,
            kernel: None,
        },
        Some(("uml", cmdline)) => GuestSpec::Uml {
            cmdline: Some(cmdline.to_string()),
            mem: None,
            kernel: None,
        },
        _ if spec == "qemu" => parse_qemu(&name, "")?,
        Some(("qemu", fields)) => parse_qemu(&name, fields)?,
        Some(("command", command)) if !command.trim().is_empty() => GuestSpec::Command {
            command: command.to_string(),
        },
        _ => {
            return Err(Error::Measure(format!(
                "guest '{spec}' of '{name}' is neither uml[:KERNEL-PARAMETERS], \
                 qemu[:kernel=PATH,append=…] nor command:COMMAND (e.g. --guest uml=uml, \
                 --guest c='command:{{osbench}} agent')"
            )));
        }
    };
    Ok((name, guest))
}

/// `kernel=PATH,append=…,accel=…,cpus=N,memory=…`: a comma starts a new
/// field only before one of these keys, so `append` may hold commas.
fn parse_qemu(name: &str, text: &str) -> Result<GuestSpec> {
    const KEYS: [&str; 5] = ["kernel", "append", "accel", "cpus", "memory"];
    let mut fields: Vec<(&str, String)> = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let key = part
            .split_once('=')
            .map(|(k, _)| k)
            .filter(|k| KEYS.contains(k));
        match (key, fields.last_mut()) {
            (Some(key), _) => fields.push((key, part[key.len() + 1..].to_string())),
            (None, Some((_, value))) => {
                value.push(',');
                value.push_str(part);
            }
            (None, None) => {
                return Err(Error::Measure(format!(
                    "guest of '{name}': '{part}' is not one of {}=…",
                    KEYS.join("=…, ")
                )));
            }
        }
    }
    let field = |key: &str| {
        fields
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.clone())
    };
    let cpus = field("cpus")
        .map(|c| {
            c.parse::<u32>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                Error::Measure(format!(
                    "guest of '{name}': cpus={c} is not a count of CPUs"
                ))
            })
        })
        .transpose()?;
    Ok(GuestSpec::Qemu {
        kernel: field("kernel"),
        append: field("append"),
        accel: field("accel"),
        cpus,
        memory: field("memory"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(setup: Option<&str>, teardown: &str) -> Config {
        Config {
            name: "x".into(),
            setup: setup.map(String::from),
            teardown: Some(teardown.into()),
            ..Config::default()
        }
    }

    #[test]
    fn teardown_runs_on_success_failure_and_drop() {
        let dir = tempfile::tempdir().unwrap();
        let mark = dir.path().join("torn");
        let touch = format!("echo done >> {}", mark.display());
        // Explicit finish.
        Applied::apply(&config(Some("true"), &touch), &Interrupt::none())
            .unwrap()
            .finish()
            .unwrap();
        // Dropped (an error or a panic in the block).
        drop(Applied::apply(&config(None, &touch), &Interrupt::none()).unwrap());
        // Failing set-up: the error comes back and the tear-down still ran.
        let err = Applied::apply(
            &config(Some("echo broken >&2; exit 3"), &touch),
            &Interrupt::none(),
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().contains("exit status: 3") && err.to_string().contains("broken"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&mark).unwrap().lines().count(), 3);
    }

    #[test]
    fn a_stopped_setup_is_the_interrupt_and_is_torn_down() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let on = format!("echo on > {}; sleep 1000", state.display());
        let off = format!("echo orig > {}", state.display());
        let stop = Interrupt::none();
        let flag = stop.clone();
        let setter = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            flag.set();
        });
        let err = Applied::apply(&config(Some(&on), &off), &stop)
            .err()
            .unwrap();
        setter.join().unwrap();
        assert!(matches!(err, Error::Interrupted), "{err}");
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "orig\n");
    }

    #[test]
    fn guests_parse() {
        let (name, g) = parse_guest("off=uml:nosysemu mem=256M").unwrap();
        assert_eq!(name, "off");
        assert!(matches!(g, GuestSpec::Uml { cmdline: Some(c), .. } if c == "nosysemu mem=256M"));
        let (_, g) = parse_guest("u=uml").unwrap();
        assert!(matches!(g, GuestSpec::Uml { cmdline: None, .. }));
        let (_, g) = parse_guest("c=command:ssh h osbench agent").unwrap();
        assert_eq!(
            g,
            GuestSpec::Command {
                command: "ssh h osbench agent".into()
            }
        );
        let (_, g) =
            parse_guest("vm=qemu:kernel=/k,append=mitigations=off idle=poll,cpus=2").unwrap();
        assert_eq!(
            g,
            GuestSpec::Qemu {
                kernel: Some("/k".into()),
                append: Some("mitigations=off idle=poll".into()),
                accel: None,
                cpus: Some(2),
                memory: None,
            }
        );
        let (_, g) = parse_guest("vm=qemu:kernel=/k,append=isolcpus=1,2,accel=tcg").unwrap();
        assert!(
            matches!(g, GuestSpec::Qemu { append: Some(a), accel: Some(t), .. } if a == "isolcpus=1,2" && t == "tcg")
        );
        for bad in [
            "x=",
            "x=qemu:kernel=/k,cpus=0",
            "x=qemu:k",
            "x=command:",
            "x=umlx",
        ] {
            assert!(parse_guest(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn configurations_share_the_guest_they_name() {
        let named = |name: &str, in_guest: Option<&str>, guest: Option<GuestSpec>| Config {
            name: name.into(),
            in_guest: in_guest.map(String::from),
            guest,
            ..Config::default()
        };
        let uml = parse_guest("uml=uml:nosysemu").unwrap().1;
        let mut configs = vec![
            named("native", None, None),
            named("one", Some("uml"), None),
            named("uml", None, Some(uml.clone())),
        ];
        share_guests(&mut configs).unwrap();
        assert_eq!(configs[0].guest, None);
        for c in &configs[1..] {
            assert_eq!(
                (c.guest.as_ref(), c.in_guest.as_deref()),
                (Some(&uml), Some("uml"))
            );
        }
        let mut orphan = vec![named("one", Some("vm"), None)];
        let e = share_guests(&mut orphan).unwrap_err().to_string();
        assert!(e.contains("'one' runs in 'vm'"), "{e}");
    }

    #[test]
    fn assignments_parse() {
        assert_eq!(
            parse_assignment("on=echo 1").unwrap(),
            ("on".into(), Some("echo 1".into()))
        );
        assert_eq!(parse_assignment("off=").unwrap(), ("off".into(), None));
        assert!(parse_assignment("nocommand").is_err());
        assert!(parse_assignment("=x").is_err());
    }
}
