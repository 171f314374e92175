//! Configurations: the thing a comparison varies (a toggle, a kernel knob),
//! applied by a set-up command before a configuration's block of a round and
//! undone by a tear-down command after it.
//!
//! Commands run with `sh -c`, stdin closed, output captured. The tear-down is
//! owned by a guard, so it runs whatever happens to the block — success,
//! error, panic unwinding, or an interrupt (which stops measuring between
//! samples) — and no toggle is left applied. Only a second Ctrl-C, which
//! ends osbench at once, skips it.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One configuration of an experiment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub teardown: Option<String>,
    /// Environment variables for its set-up and tear-down commands.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Benchmark parameters this configuration changes ("spin.work" = "1050").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<Override>,
    /// Placement for this configuration ("none", "same", "spread"), instead of `--pin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<String>,
}

/// `bench.key = value`: a parameter a configuration sets for one benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Override {
    pub bench: String,
    pub key: String,
    pub value: String,
}

/// Runs a configuration's `command` with `sh -c` and its environment; an
/// error carries the exit status and the first line of stderr.
pub fn sh(what: &str, config: &Config, command: &str) -> Result<()> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(command)
        .envs(&config.env)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            Error::io(
                format!("running the {what} of configuration '{}'", config.name),
                e,
            )
        })?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(Error::Measure(format!(
        "the {what} of configuration '{}' ({command}) failed with {}: {}",
        config.name,
        out.status,
        stderr.lines().next().unwrap_or("no message")
    )))
}

/// A configuration being applied; dropping it runs its tear-down.
pub struct Applied<'a> {
    config: &'a Config,
    torn_down: bool,
}

impl<'a> Applied<'a> {
    /// Runs the set-up. If it fails, the tear-down runs too and the error is returned.
    pub fn apply(config: &'a Config) -> Result<Self> {
        let applied = Applied {
            config,
            torn_down: false,
        };
        if let Some(setup) = &config.setup {
            sh("set-up", config, setup)?; // `applied` drops here: tear-down runs
        }
        Ok(applied)
    }

    /// Runs the tear-down now and reports its failure.
    pub fn finish(mut self) -> Result<()> {
        self.torn_down = true;
        match &self.config.teardown {
            Some(t) => sh("tear-down", self.config, t),
            None => Ok(()),
        }
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        if let (false, Some(t)) = (self.torn_down, &self.config.teardown) {
            let _ = sh("tear-down", self.config, t);
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
        Applied::apply(&config(Some("true"), &touch))
            .unwrap()
            .finish()
            .unwrap();
        // Dropped (an error or a panic in the block).
        drop(Applied::apply(&config(None, &touch)).unwrap());
        // Failing set-up: the error comes back and the tear-down still ran.
        let err = Applied::apply(&config(Some("echo broken >&2; exit 3"), &touch))
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("exit status: 3") && err.to_string().contains("broken"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&mark).unwrap().lines().count(), 3);
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
