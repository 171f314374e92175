//! The diff of environment records: each flattened to `key = value` lines,
//! the keys whose values differ between documents, and for long values of
//! words (a kernel command line) the words that differ.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::logs::{Archive, SystemLogs, message};
use super::pci;
use super::types::Environment;

/// Keys left out of [`diff`]: they differ on every run (the load), repeat other
/// keys (`absent`), or are compared source by source (`logs`, [`logs_diff`]).
pub(super) const NOT_DIFFED: [&str; 3] = ["load", "absent", "logs"];

/// Every value of `env` as dotted key → text (`cpuidle.haltpoll.guest_halt_poll_ns` → `0`),
/// array elements by index (`cpuidle.states.1.name`).
pub fn flatten(env: &Environment) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(value) = serde_json::to_value(env) {
        flatten_into("", &value, &mut out);
    }
    // The compressed archive is for readers of the logs, not a value to show.
    out.remove("logs.archive");
    out
}

pub(super) fn flatten_into(prefix: &str, value: &Value, out: &mut BTreeMap<String, String>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                flatten_into(&join(k), v, out);
            }
        }
        Value::Array(items) if items.iter().any(|v| v.is_object() || v.is_array()) => {
            for (i, v) in items.iter().enumerate() {
                flatten_into(&join(&i.to_string()), v, out);
            }
        }
        Value::Array(items) => {
            let words: Vec<String> = items.iter().map(scalar_text).collect();
            let text = if words.is_empty() {
                "none".to_string()
            } else {
                words.join(" ")
            };
            out.insert(prefix.to_string(), text);
        }
        other => {
            out.insert(prefix.to_string(), scalar_text(other));
        }
    }
}

pub(super) fn scalar_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// The keys (dotted, as [`flatten`] names them) whose values differ between
/// environments, with each one's value in input order ("absent" where a
/// document lacks the key). The load at start and end is not compared.
/// Nothing here knows which difference was intended: see [`is_factor`].
/// The system logs' kconfig symbols, modules and sysctls follow
/// (`logs_diff`).
pub fn diff(envs: &[&Environment]) -> Vec<(String, Vec<String>)> {
    let mut out = plain_diff(envs);
    out.extend(logs_diff(envs));
    out
}

/// [`diff`] of the values [`flatten`] gives.
fn plain_diff(envs: &[&Environment]) -> Vec<(String, Vec<String>)> {
    let flat: Vec<BTreeMap<String, String>> = envs.iter().map(|e| flatten(e)).collect();
    let mut keys: Vec<&String> = flat.iter().flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| {
            let top = k.split('.').next().unwrap_or(k);
            !NOT_DIFFED.contains(&top)
        })
        .filter(|k| flat.iter().any(|m| m.get(*k) != flat[0].get(*k)))
        .map(|k| {
            let values = flat
                .iter()
                .map(|m| m.get(k).cloned().unwrap_or_else(|| "absent".to_string()))
                .collect();
            (k.clone(), values)
        })
        .collect()
}

/// A key whose values on two sides of a change share none.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SideChange {
    pub key: String,
    /// The distinct values before, in order of first appearance ("absent" where lacking).
    pub before: Vec<String>,
    pub after: Vec<String>,
}

/// The keys whose values before and after a change in a history (each side
/// a set of runs' environments) have no value in common: what else changed
/// at the change. A key that varies within a side but takes some of the same
/// values on both is noise, not a difference, and is left out; so is the load.
pub fn between_sides(before: &[&Environment], after: &[&Environment]) -> Vec<SideChange> {
    let flat = |side: &[&Environment]| -> Vec<BTreeMap<String, String>> {
        side.iter().map(|e| flatten(e)).collect()
    };
    let (before, after) = (flat(before), flat(after));
    let mut keys: Vec<&String> = before.iter().chain(&after).flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    let values = |side: &[BTreeMap<String, String>], key: &str| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in side {
            let v = m.get(key).cloned().unwrap_or_else(|| "absent".to_string());
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    };
    keys.into_iter()
        .filter(|k| !NOT_DIFFED.contains(&k.split('.').next().unwrap_or(k)))
        .filter_map(|key| {
            let (b, a) = (values(&before, key), values(&after, key));
            (!b.is_empty() && !a.is_empty() && b.iter().all(|v| !a.contains(v))).then(|| {
                SideChange {
                    key: key.clone(),
                    before: b,
                    after: a,
                }
            })
        })
        .collect()
}

/// A value longer than this many characters is shown as the words that changed.
pub const LONG_VALUE: usize = 60;

/// How a value of words (a kernel command line) changed from `from` to
/// `to`: words only `to` has, words only `from` has, and `key=value` words
/// whose value changed (`root=/dev/sda1` → `root=/dev/sda2`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WordChanges {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// (key, from, to).
    pub changed: Vec<(String, String, String)>,
}

impl WordChanges {
    /// The changes in words: `+added`, `-removed`, `key: from → to`.
    pub fn words(&self) -> Vec<String> {
        let changed = self
            .changed
            .iter()
            .map(|(k, from, to)| format!("{k}: {from} → {to}"));
        self.added
            .iter()
            .map(|w| format!("+{w}"))
            .chain(self.removed.iter().map(|w| format!("-{w}")))
            .chain(changed)
            .collect()
    }
}

/// The words that differ between `from` and `to` (split at whitespace;
/// order and repeats ignored).
pub fn word_changes(from: &str, to: &str) -> WordChanges {
    let (a, b): (Vec<&str>, Vec<&str>) = (
        from.split_whitespace().collect(),
        to.split_whitespace().collect(),
    );
    let key = |w: &str| w.split_once('=').map(|(k, _)| k.to_string());
    let only_b: Vec<&str> = b.iter().copied().filter(|w| !a.contains(w)).collect();
    let mut only_a: Vec<&str> = a.iter().copied().filter(|w| !b.contains(w)).collect();
    let mut out = WordChanges::default();
    for w in only_b {
        let old = key(w).and_then(|k| only_a.iter().position(|o| key(o).as_ref() == Some(&k)));
        match old {
            Some(i) => {
                let before = only_a.remove(i);
                let (k, new) = w.split_once('=').expect("a key=value word");
                let old = before.split_once('=').map_or("", |(_, v)| v);
                out.changed
                    .push((k.to_string(), old.to_string(), new.to_string()));
            }
            None => out.added.push(w.to_string()),
        }
    }
    out.removed = only_a.into_iter().map(str::to_string).collect();
    out
}

/// Whether `key` is one of the declared `factors` or lies under one
/// (`--factor vulnerabilities` covers `vulnerabilities.spectre_v2`).
pub fn is_factor(key: &str, factors: &[String]) -> bool {
    factors.iter().any(|f| {
        let f = f.trim_end_matches('.');
        key == f
            || key
                .strip_prefix(f)
                .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The kconfig symbols (`kconfig.CONFIG_X`), modules (`modules.NAME`),
/// sysctls (`sysctl.vm.swappiness`) and PCI devices (`pci.0000:00:01.0`:
/// id and driver) whose values differ between `envs`, each value in input
/// order (`not set`, `not loaded`, `absent` where one lacks it); nothing
/// unless every environment has logs, and of a source only when every one
/// could read it.
pub fn logs_diff(envs: &[&Environment]) -> Vec<(String, Vec<String>)> {
    let logs: Option<Vec<&SystemLogs>> = envs.iter().map(|e| e.logs.as_ref()).collect();
    let Some(logs) = logs.filter(|l| l.len() >= 2) else {
        return Vec::new();
    };
    let mut out = archive_diff(&logs);
    if logs.iter().all(|l| !l.unavailable.contains_key("pci")) {
        let slots: Vec<BTreeMap<String, String>> =
            logs.iter().map(|l| pci::by_slot(&l.pci)).collect();
        differing("pci", &slots.iter().collect::<Vec<_>>(), "absent", &mut out);
    }
    out
}

/// [`diff`] of the archived sources: kconfig, sysctls, modules.
fn archive_diff(logs: &[&SystemLogs]) -> Vec<(String, Vec<String>)> {
    let archives: Option<Vec<Archive>> = logs.iter().map(|l| l.archive()).collect();
    let Some(archives) = archives else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if logs.iter().all(|l| l.kconfig_source.is_some()) {
        let maps: Vec<_> = archives.iter().map(|a| &a.kconfig).collect();
        differing("kconfig", &maps, "not set", &mut out);
    }
    let sysctl: Vec<_> = archives.iter().map(|a| &a.sysctl).collect();
    differing("sysctl", &sysctl, "absent", &mut out);
    let modules: Vec<BTreeMap<String, String>> = archives
        .iter()
        .map(|a| {
            let loaded = |m: &String| (m.clone(), "loaded".to_string());
            a.modules.iter().map(loaded).collect()
        })
        .collect();
    let modules: Vec<_> = modules.iter().collect();
    differing("modules", &modules, "not loaded", &mut out);
    out
}

/// Keys of `maps` whose values differ, as `PREFIX.KEY`, `missing` where one lacks the key.
fn differing(
    prefix: &str,
    maps: &[&BTreeMap<String, String>],
    missing: &str,
    out: &mut Vec<(String, Vec<String>)>,
) {
    let keys: BTreeSet<&String> = maps.iter().flat_map(|m| m.keys()).collect();
    for key in keys {
        let values: Vec<String> = maps
            .iter()
            .map(|m| m.get(key).cloned().unwrap_or_else(|| missing.to_string()))
            .collect();
        if values.iter().any(|v| *v != values[0]) {
            out.push((format!("{prefix}.{key}"), values));
        }
    }
}

/// For each environment after the first (named by `labels`): the kernel
/// warnings and oopses its log has that the first's has not, in words,
/// with the first such line. Nothing where either log is missing.
pub fn new_kernel_problems(envs: &[&Environment], labels: &[String]) -> Vec<String> {
    let log = |e: &Environment| e.logs.as_ref().and_then(|l| l.dmesg.clone());
    let Some(base) = envs.first().and_then(|e| log(e)) else {
        return Vec::new();
    };
    let seen: BTreeSet<&str> = base.flagged.iter().map(|l| message(l)).collect();
    let mut out = Vec::new();
    for (env, label) in envs.iter().zip(labels).skip(1) {
        let Some(candidate) = log(env) else { continue };
        let new: Vec<&String> = candidate
            .flagged
            .iter()
            .filter(|l| !seen.contains(message(l)))
            .collect();
        let more = candidate.oopses > base.oopses || candidate.warnings > base.warnings;
        if new.is_empty() && !more {
            continue;
        }
        let first = new
            .first()
            .map_or(String::new(), |l| format!("; first: \"{}\"", message(l)));
        out.push(format!(
            "{label}: a new kernel warning or oops appeared since {}: its log has {} oops and {} \
             warning lines ({} and {} before), {} not in the first{first}",
            labels[0],
            candidate.oopses,
            candidate.warnings,
            base.oopses,
            base.warnings,
            new.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_share_no_value_across_the_change_are_listed() {
        let base = crate::store::fixture().1.env;
        let with = |kernel: &str, clock: &str| {
            let mut e = base.clone();
            e.kernel = kernel.into();
            e.clocksource = Some(clock.into());
            e
        };
        // The kernel changed with the level; the clocksource wobbles on both sides.
        let before = [with("6.1", "tsc"), with("6.1", "hpet")];
        let after = [with("6.2", "tsc"), with("6.2", "tsc")];
        let b: Vec<&Environment> = before.iter().collect();
        let a: Vec<&Environment> = after.iter().collect();
        let changes = between_sides(&b, &a);
        assert_eq!(
            changes,
            [SideChange {
                key: "kernel".into(),
                before: vec!["6.1".into()],
                after: vec!["6.2".into()],
            }]
        );
        assert!(between_sides(&b, &b).is_empty());
    }

    #[test]
    fn a_command_line_diff_is_its_added_removed_and_changed_words() {
        let before = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet splash";
        let after = "BOOT_IMAGE=/vmlinuz root=/dev/sda2 ro splash mitigations=off";
        let c = word_changes(before, after);
        assert_eq!(c.added, ["mitigations=off"]);
        assert_eq!(c.removed, ["quiet"]);
        assert_eq!(
            c.changed,
            [("root".into(), "/dev/sda1".into(), "/dev/sda2".into())]
        );
        assert_eq!(
            c.words(),
            ["+mitigations=off", "-quiet", "root: /dev/sda1 → /dev/sda2"]
        );
        assert_eq!(word_changes(before, before), WordChanges::default());
    }
}
