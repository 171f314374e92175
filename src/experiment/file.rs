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
//! guest = "uml"                # optional: run this configuration's cases in a guest,
//! # or guest = { kind = "uml", cmdline = "nosysemu", mem = "512M", kernel = "/path/linux" }
//! # or guest = { kind = "command", command = "ssh host osbench agent" }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::config::{Config, Override};
use crate::document::GuestSpec;
use crate::error::{Error, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    select: Vec<String>,
    config: Vec<FileConfig>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
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
}

/// `guest = "uml"`, or a table with its `kind`.
#[derive(Deserialize)]
#[serde(untagged)]
enum FileGuest {
    Kind(String),
    Spec(GuestSpec),
}

impl FileGuest {
    fn spec(self, config: &str) -> std::result::Result<GuestSpec, String> {
        match self {
            FileGuest::Spec(spec) => Ok(spec),
            FileGuest::Kind(kind) if kind == "uml" => Ok(GuestSpec::Uml {
                cmdline: None,
                mem: None,
                kernel: None,
            }),
            FileGuest::Kind(kind) => Err(format!(
                "configuration '{config}': guest '{kind}' is not \"uml\"; other guests are \
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
    let mut configs = Vec::new();
    for c in file.config {
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
        let guest = c.guest.map(|g| g.spec(&c.name)).transpose()?;
        configs.push(Config {
            name: c.name,
            setup: c.setup,
            teardown: c.teardown,
            env: c.env,
            params,
            pin: c.pin,
            guest,
        });
    }
    Ok((file.select, configs))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            (configs[1].pin.as_deref(), configs[1].env["K"].as_str()),
            (Some("same"), "v")
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
                let selectors: Vec<crate::bench::select::Selector> =
                    select.iter().map(|s| s.parse().unwrap()).collect();
                crate::bench::select::resolve(&selectors)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            }
        }
    }
}
