//! Experiment files (TOML): the selectors and the configurations of a
//! comparison, for what the command line cannot say (per-configuration
//! parameters, environment, placement).
//!
//! ```toml
//! select = ["spin"]            # optional; selectors on the command line take precedence
//! [[config]]
//! name = "light"
//! setup = "..."                # optional, run with sh -c
//! teardown = "..."             # optional, always run
//! env = { KEY = "value" }      # optional, for set-up and tear-down
//! params = { "spin.work" = 1000 }
//! pin = "same"                 # optional
//! load = "hackbench:2"         # optional: a background load beside every case
//! # (or a list; spin:N, memstream[:MiB], iostream[:DIR], cmd:COMMAND, each @CPUS)
//! # knobs, each optional: values of files, restored after the run (experiment::knob)
//! set = { "/sys/module/haltpoll/parameters/guest_halt_poll_ns" = "200000" }
//! sysctl = { "kernel.sched_autogroup_enabled" = "0" }
//! sched_feature = "NO_DELAY_DEQUEUE"   # or a list
//! thp = "never"                # and the other typed knobs: document::TYPED_KNOBS
//! guest = "uml"                # optional: run this configuration's cases in a guest,
//! # or guest = { kind = "uml", cmdline = "nosysemu", mem = "512M", kernel = "/path/linux" }
//! # or guest = { kind = "qemu", kernel = "/path/vmlinuz", append = "mitigations=off",
//! #              accel = "auto", cpus = 1, memory = "1G" }   # all but kernel optional
//! # or guest = { kind = "command", command = "ssh host osbench agent" }
//! # or in = "vm": run in the guest [guests.vm] declares, booted once and
//! # shared with every configuration naming it
//!
//! [guests]                     # optional: guests that several configurations share
//! vm = "uml"                   # or a table, as `guest` takes
//! ```
//!
//! A configuration that runs in a guest has its set-up and tear-down run
//! inside that guest (by its agent), so configurations sharing a guest can
//! each set a toggle of the guest's kernel (`setup = "echo 0 > /proc/sysemu"`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::config::{Config, Override};
use crate::document::{GuestSpec, Knob, KnobSetting, LoadSpec, TYPED_KNOBS};
use crate::error::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    select: Vec<String>,
    #[serde(default)]
    guests: BTreeMap<String, FileGuest>,
    config: Vec<FileConfig>,
}

/// A configuration as the file writes it; its knobs (`set`, `sysctl`,
/// `sched_feature`, the typed knobs of [`crate::document::TYPED_KNOBS`]) are
/// the keys no field takes (`knobs`), checked in [`knobs_of`].
#[derive(Deserialize)]
struct FileConfig {
    name: String,
    setup: Option<String>,
    teardown: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    params: BTreeMap<String, toml::Value>,
    pin: Option<String>,
    guest: Option<FileGuest>,
    #[serde(rename = "in")]
    in_guest: Option<String>,
    load: Option<FileLoads>,
    #[serde(default)]
    audit_rules: usize,
    #[serde(default)]
    probes: Vec<crate::document::ProbeSpec>,
    #[serde(flatten)]
    knobs: BTreeMap<String, toml::Value>,
}

/// `load = "SPEC"` or `load = ["SPEC", …]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum FileLoads {
    One(String),
    Many(Vec<String>),
}

impl FileLoads {
    /// The specs, read; `owner` names the configuration in errors.
    fn specs(self, owner: &str) -> std::result::Result<Vec<LoadSpec>, String> {
        let texts = match self {
            FileLoads::One(one) => vec![one],
            FileLoads::Many(many) => many,
        };
        texts
            .iter()
            .map(|t| {
                t.parse()
                    .map_err(|e| format!("configuration '{owner}': {e}"))
            })
            .collect()
    }
}

/// `guest = "uml"`, or a table with its `kind`.
#[derive(Deserialize)]
#[serde(untagged)]
enum FileGuest {
    Kind(String),
    Spec(GuestSpec),
}

impl FileGuest {
    /// The spec; `owner` names where it was given in errors.
    fn spec(self, owner: &str) -> std::result::Result<GuestSpec, String> {
        match self {
            FileGuest::Spec(spec) => Ok(spec),
            FileGuest::Kind(kind) if kind == "uml" => Ok(GuestSpec::Uml {
                cmdline: None,
                mem: None,
                kernel: None,
            }),
            FileGuest::Kind(kind) => Err(format!(
                "{owner}: guest '{kind}' is not \"uml\"; other guests are \
                 tables, e.g. guest = {{ kind = \"command\", command = \"ssh host osbench agent\" }}"
            )),
        }
    }
}

/// Reads an experiment file: its selectors and its configurations.
pub fn load(path: &Path) -> Result<(Vec<String>, Vec<Config>)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    parse(&text).map_err(|message| Error::BadDocument {
        path: path.display().to_string(),
        what: "an osbench experiment file",
        message,
    })
}

fn parse(text: &str) -> std::result::Result<(Vec<String>, Vec<Config>), String> {
    // Multi-line TOML errors are folded onto one line where they are printed.
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    let mut guests = BTreeMap::new();
    for (name, guest) in file.guests {
        let spec = guest.spec(&format!("guests.{name}"))?;
        guests.insert(name, spec);
    }
    let mut configs = Vec::new();
    for mut c in file.config {
        let mut params = Vec::new();
        for (name, value) in c.params {
            let (bench, key) = name.split_once('.').ok_or_else(|| {
                format!(
                    "parameter '{name}' of configuration '{}' is not bench.key",
                    c.name
                )
            })?;
            let value = match value {
                toml::Value::String(s) => s,
                toml::Value::Integer(i) => i.to_string(),
                other => {
                    return Err(format!(
                        "parameter '{name}': {other:?} is neither a string nor an integer"
                    ));
                }
            };
            params.push(Override {
                bench: bench.into(),
                key: key.into(),
                value,
            });
        }
        let guest = match (c.guest, &c.in_guest) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "configuration '{}' has both guest and in; give one",
                    c.name
                ));
            }
            (Some(g), None) => Some(g.spec(&c.name)?),
            (None, Some(name)) => Some(guests.get(name).cloned().ok_or_else(|| {
                format!(
                    "configuration '{}' is in guest '{name}', which [guests] does not declare",
                    c.name
                )
            })?),
            (None, None) => None,
        };
        let pin = c.pin.as_deref().map(str::parse).transpose();
        let pin = pin.map_err(|e| format!("configuration '{}': pin {e}", c.name))?;
        let knobs = knobs_of(&c.name, std::mem::take(&mut c.knobs))?;
        let loads = c.load.take().map(|l| l.specs(&c.name)).transpose()?;
        configs.push(Config {
            loads: loads.unwrap_or_default(),
            knobs,
            name: c.name,
            setup: c.setup,
            teardown: c.teardown,
            env: c.env,
            params,
            pin,
            guest,
            in_guest: c.in_guest,
            observers: crate::document::Observers {
                audit_rules: c.audit_rules,
                probes: c.probes,
            },
        });
    }
    Ok((file.select, configs))
}

/// The knobs of configuration `name` from its keys no field takes:
/// `set = { PATH = VALUE }`, `sysctl = { NAME = VALUE }`, `sched_feature =
/// "NO_X"` (or a list), and `TYPED = VALUE` for each typed knob; any other
/// key is refused as unknown.
fn knobs_of(
    name: &str,
    keys: BTreeMap<String, toml::Value>,
) -> std::result::Result<Vec<KnobSetting>, String> {
    let text = |key: &str, v: toml::Value| match v {
        toml::Value::String(s) => Ok(s),
        toml::Value::Integer(i) => Ok(i.to_string()),
        other => Err(format!(
            "configuration '{name}': {key} = {other:?} is neither a string nor an integer"
        )),
    };
    let mut out = Vec::new();
    for (key, value) in keys {
        let mut add = |knob: &str, v: toml::Value| -> std::result::Result<(), String> {
            let setting = Knob::setting(knob, &text(knob, v)?);
            out.push(setting.map_err(|e| format!("configuration '{name}': {e}"))?);
            Ok(())
        };
        match (key.as_str(), value) {
            ("set" | "sysctl", toml::Value::Table(table)) => {
                for (k, v) in table {
                    let prefix = if key == "sysctl" { "sysctl." } else { "" };
                    add(&format!("{prefix}{k}"), v)?;
                }
            }
            ("sched_feature", toml::Value::Array(list)) => {
                list.into_iter().try_for_each(|v| add("sched_feature", v))?;
            }
            ("set" | "sysctl", other) => {
                return Err(format!(
                    "configuration '{name}': {key} = {other:?} is not a table \
                     (e.g. {key} = {{ \"…\" = \"0\" }})"
                ));
            }
            (k, v) if k == "sched_feature" || TYPED_KNOBS.iter().any(|t| t.name == k) => add(k, v)?,
            (k, _) => {
                let typed: Vec<&str> = TYPED_KNOBS.iter().map(|t| t.name).collect();
                return Err(format!(
                    "configuration '{name}': unknown field `{k}`; a configuration takes name, \
                     setup, teardown, env, params, pin, load, guest, in, and the knobs set, sysctl, \
                     sched_feature, {}",
                    typed.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_observers() {
        let (_, configs) = parse(
            "[[config]]\nname = \"a\"\naudit_rules = 37\nprobes = [\"kprobe:f\"]\n\
             [[config]]\nname = \"b\"\n",
        )
        .unwrap();
        assert_eq!(configs[0].observers.audit_rules, 37);
        assert_eq!(configs[0].observers.probes[0].to_string(), "kprobe:f");
        assert!(configs[1].observers.is_none());
        let err = parse("[[config]]\nname = \"a\"\nprobes = [\"tracepoint:x\"]\n").unwrap_err();
        assert!(err.contains("kprobe:FUNCTION"), "{err}");
    }

    #[test]
    fn reads_knobs() {
        let (_, configs) = parse(
            r#"
            [[config]]
            name = "a"
            set = { "/sys/module/haltpoll/parameters/guest_halt_poll_ns" = 200000 }
            sysctl = { "kernel.sched_autogroup_enabled" = "0" }
            sched_feature = ["NO_DELAY_DEQUEUE", "HRTICK"]
            thp = "never"
            [[config]]
            name = "b"
            smt = "off"
            cpufreq_governor = "performance"
            "#,
        )
        .unwrap();
        let names: Vec<String> = configs[0].knobs.iter().map(|k| k.knob.name()).collect();
        assert_eq!(
            names,
            [
                "sched_feature.DELAY_DEQUEUE",
                "sched_feature.HRTICK",
                "/sys/module/haltpoll/parameters/guest_halt_poll_ns",
                "sysctl.kernel.sched_autogroup_enabled",
                "thp"
            ]
        );
        assert_eq!(configs[0].knobs[2].value, "200000");
        assert_eq!(configs[1].knobs.len(), 2);
        let e = parse("[[config]]\nname = \"a\"\nthpp = \"never\"\n").unwrap_err();
        assert!(
            e.contains("unknown field `thpp`") && e.contains("thp_defrag"),
            "{e}"
        );
        let e = parse("[[config]]\nname = \"a\"\nsysctl = 1\n").unwrap_err();
        assert!(e.contains("is not a table"), "{e}");
    }

    #[test]
    fn reads_the_documented_shape() {
        let (select, configs) = parse(
            r#"
            select = ["spin"]
            [[config]]
            name = "light"
            params = { "spin.work" = 1000 }
            [[config]]
            name = "heavy"
            setup = "true"
            teardown = "true"
            env = { K = "v" }
            params = { "spin.work" = 1050 }
            pin = "same"
            "#,
        )
        .unwrap();
        assert_eq!(select, ["spin"]);
        assert_eq!(configs.len(), 2);
        assert_eq!(
            configs[1].params,
            [Override {
                bench: "spin".into(),
                key: "work".into(),
                value: "1050".into()
            }]
        );
        assert_eq!(
            (configs[1].pin, configs[1].env["K"].as_str()),
            (Some(crate::document::Pin::Same), "v")
        );
    }

    #[test]
    fn configurations_share_a_guest_declared_once() {
        let (_, configs) = parse(
            r#"
            [guests]
            vm = { kind = "uml", cmdline = "loglevel=3" }
            [[config]]
            name = "native"
            [[config]]
            name = "on"
            in = "vm"
            setup = "echo 1 > /proc/sysemu"
            [[config]]
            name = "off"
            in = "vm"
            setup = "echo 0 > /proc/sysemu"
            "#,
        )
        .unwrap();
        let spec = GuestSpec::Uml {
            cmdline: Some("loglevel=3".into()),
            mem: None,
            kernel: None,
        };
        assert_eq!(configs[0].guest, None);
        for c in &configs[1..] {
            assert_eq!(
                (c.guest.as_ref(), c.in_guest.as_deref()),
                (Some(&spec), Some("vm"))
            );
        }
        let undeclared = parse("[[config]]\nname = \"a\"\nin = \"vm\"\n").unwrap_err();
        assert!(undeclared.contains("'vm'"), "{undeclared}");
        let both = parse(
            "[guests]\nvm = \"uml\"\n[[config]]\nname = \"a\"\nin = \"vm\"\nguest = \"uml\"\n",
        );
        assert!(both.unwrap_err().contains("both guest and in"));
    }

    #[test]
    fn reads_a_load_or_a_list_of_loads_and_refuses_unknown_kinds() {
        let text = "[[config]]\nname = \"a\"\n[[config]]\nname = \"b\"\nload = \"spin:2@1\"\n\
                    [[config]]\nname = \"c\"\nload = [\"hackbench:1\", \"cmd:make -j2@0-1\"]\n";
        let (_, configs) = parse(text).unwrap();
        assert!(configs[0].loads.is_empty());
        let texts = |c: &Config| c.loads.iter().map(|l| l.to_string()).collect::<Vec<_>>();
        assert_eq!(texts(&configs[1]), ["spin:2@1"]);
        assert_eq!(texts(&configs[2]), ["hackbench:1", "cmd:make -j2@0-1"]);
        let e = parse("[[config]]\nname = \"a\"\nload = \"stress:2\"\n").unwrap_err();
        assert!(
            e.contains("configuration 'a'") && e.contains("not a kind of load"),
            "{e}"
        );
    }

    #[test]
    fn rejects_unknown_keys_and_bad_parameters() {
        assert!(
            parse("[[config]]\nname = \"a\"\nsetpu = \"x\"\n")
                .unwrap_err()
                .contains("setpu")
        );
        assert!(
            parse("[[config]]\nname = \"a\"\nparams = { work = 1 }\n")
                .unwrap_err()
                .contains("bench.key")
        );
    }

    #[test]
    fn the_shipped_examples_load_and_select_real_cases() {
        for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let (select, configs) =
                    load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                assert!(configs.len() >= 2, "{}", path.display());
                let selectors: Vec<crate::bench::util::select::Selector> =
                    select.iter().map(|s| s.parse().unwrap()).collect();
                crate::bench::util::select::resolve(&selectors)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
        }
    }
}
