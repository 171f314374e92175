//! Applying knobs (`crate::document::Knob`): before anything is measured,
//! every file the configurations set is read — the value in force (a
//! bracketed sysfs choice such as THP's `always [madvise] never` is
//! `madvise`) and the values it accepts (the bracketed file's words, the
//! scheduler's features, a typed knob's list) — and every wanted value is
//! checked: a value the file does not accept is refused, naming the accepted
//! ones; a plain file (a number) must be writable (it is not written as a
//! trial: see `Knobs::check`; a value it refuses stops the run when
//! it is written before its configuration's first block). Before each configuration's block every file gets that
//! configuration's value, or the value found when it sets none (so the order
//! of blocks never matters); after the run the value found is written back.
//! On this system each value found is also held by the warden
//! (`crate::measure::warden`), which writes it back if osbench dies before
//! it could (SIGKILL, a second Ctrl-C).
//!
//! Files are reached through [`KnobFs`]: here ([`LocalFs`]) or in a guest
//! through its agent's shell (`place`). `$OSBENCH_KNOB_ROOT`, when set,
//! is put in front of the paths of typed knobs, sysctls and scheduler
//! features here (tests point it at a fake tree; `set` paths are used as
//! given). Left out: knobs whose files appear or vanish during the run (CPU
//! hotplug): each file is resolved once.

use std::collections::BTreeMap;

use crate::document::{
    Config, Knob, KnobRecord, KnobSetting, SCHED_FEATURES_PATH, SYSCTL_ROOT, TYPED_KNOBS,
};
use crate::error::{Error, Result};
use crate::measure::warden;

/// The environment variable whose value is put in front of typed knobs' paths here.
pub const ROOT_VAR: &str = "OSBENCH_KNOB_ROOT";

/// The files of knobs, wherever they are.
pub trait KnobFs {
    /// The file's contents.
    fn read(&mut self, path: &str) -> std::result::Result<String, String>;
    /// The existing files `pattern` names, its `*` matching within one part.
    fn expand(&mut self, pattern: &str) -> std::result::Result<Vec<String>, String>;
    /// Writes `value` (and a newline) to the file, as `echo value > path` would.
    fn write(&mut self, path: &str, value: &str) -> std::result::Result<(), String>;
    /// Whether the file may be written, without writing it.
    fn check_writable(&mut self, path: &str) -> std::result::Result<(), String>;
    /// What is put in front of the paths of typed knobs, sysctls and scheduler features.
    fn root(&self) -> String {
        String::new()
    }
    /// Holds `value` to be written back to `path` if osbench dies; an id to forget it by.
    fn hold(&mut self, _path: &str, _value: &str) -> Option<u32> {
        None
    }
    /// Forgets a held value (it was written back).
    fn forget(&mut self, _id: u32) {}
}

/// The files of this system; values found are held by the warden.
pub struct LocalFs;

/// A new id for a held value (unique in this process, shared with the
/// families' own holds).
pub fn next_hold_id() -> u32 {
    warden::next_id()
}

impl KnobFs for LocalFs {
    fn read(&mut self, path: &str) -> std::result::Result<String, String> {
        std::fs::read_to_string(path).map_err(|e| e.to_string())
    }

    fn expand(&mut self, pattern: &str) -> std::result::Result<Vec<String>, String> {
        let Some(star) = pattern.find('*') else {
            return Ok(vec![pattern.to_string()]);
        };
        let dir_end = pattern[..star].rfind('/').unwrap_or(0);
        let rest_start = pattern[star..]
            .find('/')
            .map_or(pattern.len(), |i| star + i);
        let (dir, prefix) = (&pattern[..dir_end], &pattern[dir_end + 1..star]);
        let (suffix, rest) = (&pattern[star + 1..rest_start], &pattern[rest_start..]);
        let entries = std::fs::read_dir(if dir.is_empty() { "/" } else { dir })
            .map_err(|e| format!("{dir}: {e}"))?;
        let mut found: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.len() >= prefix.len() + suffix.len())
            .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
            .map(|n| format!("{dir}/{n}{rest}"))
            .filter(|p| std::path::Path::new(p).exists())
            .collect();
        found.sort();
        Ok(found)
    }

    fn write(&mut self, path: &str, value: &str) -> std::result::Result<(), String> {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(|e| e.to_string())?;
        file.write_all(format!("{value}\n").as_bytes())
            .map_err(|e| e.to_string())
    }

    fn check_writable(&mut self, path: &str) -> std::result::Result<(), String> {
        // Opening for writing checks the permission; nothing is written.
        let file = std::fs::OpenOptions::new().write(true).open(path);
        file.map(drop).map_err(|e| e.to_string())
    }

    fn root(&self) -> String {
        std::env::var(ROOT_VAR).unwrap_or_default()
    }

    fn hold(&mut self, path: &str, value: &str) -> Option<u32> {
        let id = next_hold_id();
        warden::hold_restore(id, path.as_bytes(), format!("{value}\n").as_bytes()).then_some(id)
    }

    fn forget(&mut self, id: u32) {
        warden::forget_restore(id);
    }
}

/// A file's value as read: the value in force and the values listed as accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub in_force: String,
    /// Empty when the file lists none (a number, a plain word).
    pub choices: Vec<String>,
}

/// Reads a sysfs file's contents: `always [madvise] never` is `madvise` of
/// three choices; anything else is its trimmed self, of no listed choices.
pub fn parse_reading(contents: &str) -> Reading {
    let words = contents.split_whitespace();
    let listed = words
        .clone()
        .any(|w| w.len() > 2 && w.starts_with('[') && w.ends_with(']'));
    Reading {
        // The environment reads THP's mode the same way.
        in_force: crate::env::probe::selected(contents).trim().to_string(),
        choices: if listed {
            words
                .map(|w| w.trim_start_matches('[').trim_end_matches(']').to_string())
                .collect()
        } else {
            Vec::new()
        },
    }
}

/// Scheduler feature `feature`'s word in the features file (`X` when on,
/// `NO_X` when off), if the file lists it.
pub fn sched_feature_word(contents: &str, feature: &str) -> Option<String> {
    contents
        .split_whitespace()
        .find(|w| *w == feature || w.strip_prefix("NO_") == Some(feature))
        .map(String::from)
}

/// `--config NAME:KNOB=VALUE` (also `NAME@GUEST:KNOB=VALUE`): the name
/// (with its `@GUEST`) and the setting; `None` when `spec` is not of this
/// form (its name, before the first `=`, has no `:`).
pub fn parse_config_knob(spec: &str) -> Result<Option<(String, KnobSetting)>> {
    let Some((head, value)) = spec.split_once('=') else {
        return Ok(None);
    };
    let Some((name, knob)) = head.split_once(':') else {
        return Ok(None);
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(Error::Usage(format!(
            "'{name}' is not a configuration name (non-empty, no spaces) in --config {spec}"
        )));
    }
    let value = value.trim();
    if value.is_empty() {
        return Err(Error::Usage(format!(
            "--config {spec} gives knob {knob} no value (e.g. --config {name}:thp=never)"
        )));
    }
    let setting = Knob::setting(knob, value).map_err(Error::Usage)?;
    Ok(Some((name.to_string(), setting)))
}

/// The file pattern of `knob` under `root`.
fn pattern_of(knob: &Knob, root: &str) -> String {
    match knob {
        Knob::File(path) => path.clone(),
        Knob::Sysctl(name) => format!("{root}{SYSCTL_ROOT}/{}", name.replace('.', "/")),
        Knob::SchedFeature(_) => format!("{root}{SCHED_FEATURES_PATH}"),
        Knob::Typed(name) => {
            let typed = TYPED_KNOBS.iter().find(|k| k.name == *name);
            format!("{root}{}", typed.map_or("", |k| k.path))
        }
    }
}

/// One file a knob writes, as the run knows it.
#[derive(Debug)]
struct KnobFile {
    knob: Knob,
    path: String,
    found: String,
    /// Whether the run has written the file (from then on it writes it
    /// before every block, and writes `found` back at the end: another
    /// writer — a set-up, a guest sharing this system's files — may have
    /// changed it in between).
    written: bool,
    /// The warden's id for the value found (here).
    held: Option<u32>,
    /// The value each configuration that names the knob sets.
    set: BTreeMap<String, String>,
    restored: bool,
}

/// Every knob file of the configurations of one place, and what each
/// configuration sets.
#[derive(Debug, Default)]
pub struct Knobs {
    files: Vec<KnobFile>,
    /// By configuration index: (file index, value).
    wanted: BTreeMap<usize, Vec<(usize, String)>>,
    /// How errors and records name the place ("" here).
    place: Option<String>,
}

impl Knobs {
    /// Reads and checks every knob of `configs` (by configuration index)
    /// through `fs`; `place` names where (none: here). Nothing is left
    /// changed when it fails: trial values are written back and holds forgotten.
    pub fn resolve(
        configs: &[(usize, &Config)],
        fs: &mut dyn KnobFs,
        place: Option<String>,
    ) -> Result<Self> {
        let mut knobs = Knobs {
            place,
            ..Knobs::default()
        };
        for &(ci, config) in configs {
            for setting in &config.knobs {
                if let Err(e) = knobs.add(ci, config, setting, fs) {
                    knobs.forget_holds(fs);
                    return Err(e);
                }
            }
        }
        Ok(knobs)
    }

    /// Whether there is no knob.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Adds `setting` of configuration `ci` (every file its pattern names).
    fn add(
        &mut self,
        ci: usize,
        config: &Config,
        setting: &KnobSetting,
        fs: &mut dyn KnobFs,
    ) -> Result<()> {
        let pattern = pattern_of(&setting.knob, &fs.root());
        let paths = fs
            .expand(&pattern)
            .map_err(|e| self.error(&setting.knob, &pattern, format!("cannot list: {e}")))?;
        if paths.is_empty() {
            let why = "no file matches; does this system have it?".to_string();
            return Err(self.error(&setting.knob, &pattern, why));
        }
        for path in paths {
            let fi = match self.files.iter().position(|f| f.path == path) {
                Some(fi) => fi,
                None => self.read(&setting.knob, path, fs)?,
            };
            let file = &self.files[fi];
            if file.set.contains_key(&config.name) {
                let why = format!("configuration '{}' sets it twice", config.name);
                return Err(self.error(&setting.knob, &file.path, why));
            }
            self.check(fi, &setting.value, fs)?;
            let file = &mut self.files[fi];
            file.set.insert(config.name.clone(), setting.value.clone());
            self.wanted
                .entry(ci)
                .or_default()
                .push((fi, setting.value.clone()));
        }
        Ok(())
    }

    /// Reads file `path` of `knob` (its value found, held here); its index.
    fn read(&mut self, knob: &Knob, path: String, fs: &mut dyn KnobFs) -> Result<usize> {
        let contents = fs.read(&path).map_err(|e| {
            let why = format!("cannot read it: {e} (is it there, and may osbench read it?)");
            self.error(knob, &path, why)
        })?;
        let found = match knob {
            Knob::SchedFeature(feature) => {
                sched_feature_word(&contents, feature).ok_or_else(|| {
                    let listed = contents.split_whitespace().collect::<Vec<_>>().join(", ");
                    let why =
                        format!("lists no feature {feature} (or NO_{feature}); it lists {listed}");
                    self.error(knob, &path, why)
                })?
            }
            _ => parse_reading(&contents).in_force,
        };
        let held = fs.hold(&path, &found);
        self.files.push(KnobFile {
            knob: knob.clone(),
            path,
            written: false,
            found,
            held,
            set: BTreeMap::new(),
            restored: true,
        });
        Ok(self.files.len() - 1)
    }

    /// Refuses `value` for file `fi` unless the file (or the knob's list)
    /// accepts it; a file that lists nothing must be writable. (No trial
    /// write: some toggles act at once — `/proc/sysemu` = 0 crashes UML at
    /// its next system call — so a value is written only for its blocks.)
    fn check(&mut self, fi: usize, value: &str, fs: &mut dyn KnobFs) -> Result<()> {
        let file = &self.files[fi];
        let accepted = self.accepted(file, fs);
        if !accepted.is_empty() {
            if accepted.iter().any(|a| a == value) {
                return Ok(());
            }
            let why = format!(
                "does not accept '{value}'; it accepts {} (the value in force is '{}')",
                accepted.join(", "),
                file.found
            );
            return Err(self.error(&file.knob, &file.path, why));
        }
        fs.check_writable(&file.path).map_err(|e| {
            let why = format!("cannot be written: {e} (is osbench allowed to write it — root?)");
            self.error(&file.knob, &file.path, why)
        })
    }

    /// The values `file` accepts: its bracketed choices, a scheduler
    /// feature's two words, or a typed knob's list; empty: not listed.
    fn accepted(&self, file: &KnobFile, fs: &mut dyn KnobFs) -> Vec<String> {
        let typed = match &file.knob {
            Knob::SchedFeature(f) => return vec![f.clone(), format!("NO_{f}")],
            Knob::Typed(name) => TYPED_KNOBS.iter().find(|k| k.name == *name),
            _ => None,
        };
        if let Some(k) = typed {
            let dir = file.path.rsplit_once('/').map_or("", |(d, _)| d);
            let beside = k
                .choices_beside
                .and_then(|b| fs.read(&format!("{dir}/{b}")).ok());
            if let Some(list) = beside {
                return list.split_whitespace().map(String::from).collect();
            }
            if !k.choices.is_empty() {
                return k.choices.iter().map(|c| c.to_string()).collect();
            }
        }
        parse_reading(&fs.read(&file.path).unwrap_or_default()).choices
    }

    /// Gives every file configuration `ci`'s value (the value found where
    /// it sets none). A file the run has not written yet is left alone
    /// while it is to hold the value found; once written, it is written
    /// before every block, whatever it holds.
    pub fn apply(&mut self, ci: usize, fs: &mut dyn KnobFs) -> Result<()> {
        for fi in 0..self.files.len() {
            let wanted = self
                .wanted
                .get(&ci)
                .and_then(|w| w.iter().find(|(f, _)| *f == fi));
            let file = &self.files[fi];
            let value = wanted.map_or(&file.found, |(_, v)| v).clone();
            if !file.written && value == file.found {
                continue;
            }
            fs.write(&file.path, &value).map_err(|e| {
                let why = format!("writing '{value}' failed: {e}");
                self.error(&file.knob, &file.path, why)
            })?;
            let file = &mut self.files[fi];
            file.written = true;
            file.restored = false;
        }
        Ok(())
    }

    /// Writes every value found back where the run wrote; the first
    /// failure (the others are tried too).
    pub fn restore(&mut self, fs: &mut dyn KnobFs) -> Result<()> {
        let mut first = None;
        for fi in 0..self.files.len() {
            let file = &self.files[fi];
            if file.written
                && let Err(e) = fs.write(&file.path, &file.found)
            {
                let why = format!(
                    "writing back '{}' failed: {e}; write it back by hand",
                    file.found
                );
                first.get_or_insert(self.error(&file.knob, &file.path, why));
                continue;
            }
            let file = &mut self.files[fi];
            file.written = false;
            file.restored = true;
        }
        self.forget_holds(fs);
        first.map_or(Ok(()), Err)
    }

    /// Forgets the warden's holds of the files written back (or never changed).
    fn forget_holds(&mut self, fs: &mut dyn KnobFs) {
        for file in &mut self.files {
            if let (true, Some(id)) = (file.restored, file.held) {
                fs.forget(id);
                file.held = None;
            }
        }
    }

    /// What the document records of every file.
    pub fn records(&self) -> Vec<KnobRecord> {
        self.files
            .iter()
            .map(|f| KnobRecord {
                knob: f.knob.name(),
                path: f.path.clone(),
                place: self.place.clone(),
                found: f.found.clone(),
                set: f.set.clone(),
                restored: f.restored,
            })
            .collect()
    }

    fn error(&self, knob: &Knob, path: &str, message: String) -> Error {
        Error::Knob {
            place: self
                .place
                .as_ref()
                .map(|p| format!("{p}: "))
                .unwrap_or_default(),
            at: match knob {
                Knob::File(_) => String::new(),
                _ => format!(" ({path})"),
            },
            knob: knob.name(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bracketed_choices_and_plain_values_read() {
        let thp = parse_reading("always [madvise] never\n");
        assert_eq!(thp.in_force, "madvise");
        assert_eq!(thp.choices, ["always", "madvise", "never"]);
        let number = parse_reading("200000\n");
        assert_eq!(
            (number.in_force.as_str(), number.choices.len()),
            ("200000", 0)
        );
        let empty = parse_reading("[] x");
        assert_eq!(empty.in_force, "[] x");
    }

    #[test]
    fn sched_features_are_found_with_or_without_no() {
        let file = "GENTLE_FAIR_SLEEPERS START_DEBIT NO_NEXT_BUDDY DELAY_DEQUEUE NO_HRTICK\n";
        assert_eq!(
            sched_feature_word(file, "DELAY_DEQUEUE").as_deref(),
            Some("DELAY_DEQUEUE")
        );
        assert_eq!(
            sched_feature_word(file, "NEXT_BUDDY").as_deref(),
            Some("NO_NEXT_BUDDY")
        );
        assert_eq!(sched_feature_word(file, "HRTICK_DL"), None);
    }

    #[test]
    fn config_knobs_parse() {
        let (name, s) = parse_config_knob("poll:/sys/x/y=200000").unwrap().unwrap();
        assert_eq!(
            (name.as_str(), s.knob.name(), s.value.as_str()),
            ("poll", "/sys/x/y".into(), "200000")
        );
        let (name, s) = parse_config_knob("a@vm:sysctl.kernel.x=0")
            .unwrap()
            .unwrap();
        assert_eq!(
            (name.as_str(), s.knob, s.value.as_str()),
            ("a@vm", Knob::Sysctl("kernel.x".into()), "0")
        );
        let (_, s) = parse_config_knob("b:sched_feature=NO_DELAY_DEQUEUE")
            .unwrap()
            .unwrap();
        assert_eq!(s.knob, Knob::SchedFeature("DELAY_DEQUEUE".into()));
        assert!(
            parse_config_knob("on=echo 1 > /proc/sysemu")
                .unwrap()
                .is_none()
        );
        assert!(parse_config_knob("on=a:b=c").unwrap().is_none());
        for bad in ["a:thpp=never", "a:thp=", ":thp=never"] {
            assert!(parse_config_knob(bad).is_err(), "{bad}");
        }
    }

    /// Files in memory; a `*` pattern lists the CPUs' governors.
    struct MemFs(BTreeMap<String, String>);

    impl KnobFs for MemFs {
        fn read(&mut self, path: &str) -> std::result::Result<String, String> {
            self.0
                .get(path)
                .cloned()
                .ok_or_else(|| "no such file".into())
        }
        fn expand(&mut self, pattern: &str) -> std::result::Result<Vec<String>, String> {
            let (head, tail) = pattern.split_once('*').unwrap_or((pattern, ""));
            let paths = self
                .0
                .keys()
                .filter(|p| p.starts_with(head) && p.ends_with(tail));
            Ok(paths.cloned().collect())
        }
        fn write(&mut self, path: &str, value: &str) -> std::result::Result<(), String> {
            self.0.insert(path.into(), value.into());
            Ok(())
        }
        fn check_writable(&mut self, path: &str) -> std::result::Result<(), String> {
            self.read(path).map(drop)
        }
    }

    fn config(name: &str, knobs: &[(&str, &str)]) -> Config {
        Config {
            name: name.into(),
            knobs: (knobs.iter())
                .map(|(k, v)| Knob::setting(k, v).unwrap())
                .collect(),
            ..Config::default()
        }
    }

    #[test]
    fn typed_knobs_resolve_apply_and_restore() {
        let cpu = |n: u32| format!("/sys/devices/system/cpu/cpu{n}/cpufreq/");
        let mut fs = MemFs(BTreeMap::from([
            (
                SCHED_FEATURES_PATH.to_string(),
                "START_DEBIT DELAY_DEQUEUE NO_HRTICK\n".to_string(),
            ),
            ("/sys/devices/system/cpu/smt/control".into(), "on\n".into()),
            (format!("{}scaling_governor", cpu(0)), "schedutil\n".into()),
            (format!("{}scaling_governor", cpu(1)), "schedutil\n".into()),
            (
                format!("{}scaling_available_governors", cpu(0)),
                "performance schedutil\n".into(),
            ),
            (
                format!("{}scaling_available_governors", cpu(1)),
                "performance schedutil\n".into(),
            ),
        ]));
        let a = config(
            "a",
            &[
                ("sched_feature", "NO_DELAY_DEQUEUE"),
                ("cpufreq_governor", "performance"),
            ],
        );
        let b = config("b", &[("smt", "off")]);
        let mut knobs = Knobs::resolve(&[(0, &a), (1, &b)], &mut fs, None).unwrap();
        assert_eq!(knobs.records().len(), 4); // the features, two governors, SMT
        knobs.apply(0, &mut fs).unwrap();
        assert_eq!(fs.0[SCHED_FEATURES_PATH], "NO_DELAY_DEQUEUE");
        assert_eq!(fs.0[&format!("{}scaling_governor", cpu(1))], "performance");
        knobs.apply(1, &mut fs).unwrap();
        assert_eq!(fs.0[SCHED_FEATURES_PATH], "DELAY_DEQUEUE");
        assert_eq!(fs.0["/sys/devices/system/cpu/smt/control"], "off");
        knobs.restore(&mut fs).unwrap();
        assert_eq!(fs.0["/sys/devices/system/cpu/smt/control"], "on");
        assert!(knobs.records().iter().all(|r| r.restored));
        let refused = |knob: &str, value: &str, fs: &mut MemFs| {
            let c = config("c", &[(knob, value)]);
            Knobs::resolve(&[(0, &c)], fs, None)
                .unwrap_err()
                .to_string()
        };
        let e = refused("cpufreq_governor", "ondemand", &mut fs);
        assert!(e.contains("accepts performance, schedutil"), "{e}");
        let e = refused("sched_feature", "NO_HRTICK_DL", &mut fs);
        assert!(e.contains("lists no feature HRTICK_DL"), "{e}");
        let e = refused("smt", "maybe", &mut fs);
        assert!(e.contains("accepts on, off, forceoff"), "{e}");
    }
}
