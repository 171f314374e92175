//! The worker's trust boundary: what a job's plan may make this host do.
//! Anyone who can insert a row in the store's `jobs` table writes plans;
//! the host's admin writes the policy (a TOML file the admin owns,
//! [`DEFAULT_PATH`] unless `osbench worker --policy FILE`), and the worker
//! checks every plan it claims against it before anything runs, whatever
//! `submit` checked. A plan may always choose what to measure and how much
//! (selectors, samples, rounds, targets, parameters); it never says where
//! results go (`--json`, `--store` and every other path-writing option are
//! refused: [`REFUSED`]); shell set-ups, knobs, `time` commands, guests and
//! kernel boots are allowed only as far as the policy lists them. No file:
//! the default policy, which allows none of them ([`Policy::default`]).
//!
//! ```toml
//! knobs = ["thp", "cpufreq_governor", "sysctl.kernel.sched_*"]
//! time_commands = ["make -j8", "make -j16"]
//! kernel_jobs = false
//! guests = false
//! any_shell = false               # also what `cmd:` loads need (`--load cmd:…`)
//! [scripts]                       # set-ups and tear-downs a plan names
//! irq-affinity = "/etc/osbench/scripts/irq-affinity.sh"
//! ```
//!
//! The options a plan gives are seen as the command line's parser read them
//! ([`Given`], so `--json=x` and short forms are caught alike); the plan's
//! configurations are read by the experiment files' own reader. Left out:
//! limits on how long a job runs (`--max-job-time`, [`super::worker::Limits`])
//! and who may write the store (PostgreSQL's roles:
//! docs/running-workers-safely.md). Comes from issue 44 (S1, S2).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::job::JobPlan;
use crate::document::{LoadKind, LoadSpec};

/// Where the worker reads its policy unless `--policy` says otherwise.
pub const DEFAULT_PATH: &str = "/etc/osbench/worker-policy.toml";

/// Options of `run` / `time` (their parser's ids) a plan may give freely:
/// what to measure, how much, and how to show it on the worker's log.
pub const FREE: &[&str] = &[
    "selectors",
    "samples",
    "sample_time",
    "warmup",
    "seed",
    "pin",
    "tasks",
    "tasks_mode",
    "tasks_place",
    "no_perf",
    "allow_unknown_boot_parameters",
    "profile",
    "profile_passes",
    "profile_time",
    "rounds",
    "target_ci",
    "max_time",
    "target_mde",
    "budget",
    "invocations",
    "equivalence",
    "gate",
    "allow_undecided",
    "wide",
    "width",
    "quiet",
    "verbose",
    "color",
    "logs",
    "no_logs",
    "command_names",
    "_no_shell",
    "runs",
    "min_runs",
    "max_runs",
    "timeout",
    "ignore_failure",
    "show_output",
    "style",
    "time_unit",
    "sort",
    "min_benchmarking_time",
];

/// Options the policy decides on: commands, set-ups, knobs, guests.
pub const POLICED: &[&str] = &[
    "configs",
    "teardowns",
    "guests",
    "commands",
    "shell",
    "shell_name",
    "reference",
    "prepare",
    "setup",
    "cleanup",
    "conclude",
    "parameter_scan",
    "parameter_step",
    "parameter_list",
    "env",
    "cwd",
    "output",
    "input",
    "loads",
];

pub use super::job::REFUSED;

/// The options a plan gives, as the command line's parser read them: each
/// option's id (`export_hyperfine`), its name as written (`--export-hyperfine`),
/// and its values.
pub type Given = Vec<(String, String, Vec<String>)>;

/// The worker's policy, as its file says (absent keys: refused).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Knobs plans may set, by name as experiment files write them (`thp`,
    /// `sysctl.kernel.sched_autogroup_enabled`, `sched_feature.DELAY_DEQUEUE`,
    /// a path); a trailing `*` matches any rest; `"*"` any knob.
    #[serde(default)]
    pub knobs: Vec<String>,
    /// Set-up and tear-down scripts plans may name (`setup = "NAME"`): name
    /// → the script the worker runs (a file the admin owns).
    #[serde(default)]
    pub scripts: BTreeMap<String, PathBuf>,
    /// Command lines `time` plans may time, exactly as written (their
    /// `--prepare`, `--setup`, `--cleanup` and `--reference` too); `"*"`:
    /// any command.
    #[serde(default)]
    pub time_commands: Vec<String>,
    /// Whether plans may boot a kernel (`[kernel]`, `[boot_rounds]`).
    #[serde(default)]
    pub kernel_jobs: bool,
    /// Whether configurations may run in guests (UML, QEMU, a command).
    #[serde(default)]
    pub guests: bool,
    /// Whether set-ups, tear-downs and their `env` may be any shell
    /// command (the plan's writers are trusted as this host's admin).
    #[serde(default)]
    pub any_shell: bool,
    /// Where it was read from (or why it is the default), for messages.
    #[serde(skip)]
    pub origin: String,
}

/// Why a policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error(
        "cannot read the worker policy {path}: {cause}; give --policy FILE, or remove it for the default policy (docs/running-workers-safely.md)"
    )]
    Read { path: String, cause: std::io::Error },
    #[error(
        "the worker policy {path} is not valid: {message}; its keys are in docs/running-workers-safely.md"
    )]
    Bad { path: String, message: String },
    #[error(
        "the worker policy {path} is writable by {who}; only its owner may write it (chmod go-w {path})"
    )]
    Writable { path: String, who: &'static str },
}

impl Policy {
    /// The policy at `path` (`--policy`), else at [`DEFAULT_PATH`], else
    /// the default one. A file that is given but missing, unreadable,
    /// invalid, or writable by others than its owner is an error.
    pub fn load(path: Option<&Path>) -> Result<Self, PolicyError> {
        let (path, given) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (PathBuf::from(DEFAULT_PATH), false),
        };
        let shown = path.display().to_string();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if !given && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Policy {
                    origin: format!("the default policy (no {DEFAULT_PATH})"),
                    ..Policy::default()
                });
            }
            Err(cause) => return Err(PolicyError::Read { path: shown, cause }),
        };
        refuse_writable(&path)?;
        let mut policy: Policy = toml::from_str(&text).map_err(|e| PolicyError::Bad {
            path: shown.clone(),
            message: crate::text::printable(&e.to_string()).into_owned(),
        })?;
        if let Some((name, _)) = policy.scripts.iter().find(|(_, p)| !p.is_absolute()) {
            return Err(PolicyError::Bad {
                path: shown,
                message: format!("script '{name}' is not an absolute path"),
            });
        }
        policy.origin = format!("the worker policy {shown}");
        Ok(policy)
    }

    /// What the policy allows, in a line (the worker says it when it starts).
    pub fn summary(&self) -> String {
        let list = |items: &[String]| match items.is_empty() {
            true => "none".to_string(),
            false => items.join(", "),
        };
        let scripts: Vec<String> = self.scripts.keys().cloned().collect();
        format!(
            "{}: knobs {}; scripts {}; time commands {}; kernel jobs {}; guests {}; any shell {}",
            self.origin,
            list(&self.knobs),
            list(&scripts),
            list(&self.time_commands),
            yes(self.kernel_jobs),
            yes(self.guests),
            yes(self.any_shell),
        )
    }

    /// Checks a claimed job against the policy: its plan's options as the
    /// parser read them (`given`), its configurations, and whether it boots
    /// a kernel. The plan to run (set-up names replaced by their scripts),
    /// or why it is refused, naming the policy.
    pub fn admit(&self, plan: &JobPlan, given: &Given, boots: bool) -> Result<JobPlan, String> {
        let refuse = |why: String| Err(format!("{why}, which {} does not allow", self.origin));
        if boots && !self.kernel_jobs {
            return refuse("the job boots a kernel ([kernel] or [boot_rounds])".into());
        }
        for (id, name, values) in given {
            if let Err(why) = self.option(id, name, values) {
                return refuse(why);
            }
        }
        let mut plan = plan.clone();
        if let Some(text) = &plan.experiment {
            match self.configurations(text) {
                Ok(text) => plan.experiment = Some(text),
                Err(why) => return refuse(why),
            }
        }
        Ok(plan)
    }

    /// Whether option `id` (written `name`) with `values` may be given.
    fn option(&self, id: &str, name: &str, values: &[String]) -> Result<(), String> {
        if FREE.contains(&id) {
            return Ok(());
        }
        if !POLICED.contains(&id) {
            let what = match REFUSED.contains(&id) {
                true => "a plan never says where results go or what the worker sets",
                false => "an option the policy does not know",
            };
            return Err(format!("the plan gives {name} ({what})"));
        }
        let commands = |what: &str| -> Result<(), String> {
            match values.iter().find(|v| !self.time_command(v)) {
                Some(v) => Err(format!(
                    "the plan's {what} `{}` is not in time_commands",
                    crate::text::printable(v)
                )),
                None => Ok(()),
            }
        };
        match id {
            "commands" | "reference" => commands("command"),
            "prepare" | "setup" | "cleanup" | "conclude" => commands(name),
            "shell" | "shell_name" if !self.time_commands.is_empty() => Ok(()),
            "configs" => values.iter().try_for_each(|v| self.config_option(v)),
            "loads" => values.iter().try_for_each(|v| self.load_option(v)),
            "guests" if !self.guests => {
                Err(format!("the plan runs configurations in guests ({name})"))
            }
            "guests" => Ok(()),
            "parameter_scan" | "parameter_step" | "parameter_list" => plain_words(name, values),
            "output" | "input" if values.iter().all(|v| v == "null" || v == "inherit") => Ok(()),
            _ if self.any_shell => Ok(()),
            _ => Err(format!("the plan gives {name}")),
        }
    }

    /// Whether `time` may run `command`.
    fn time_command(&self, command: &str) -> bool {
        self.time_commands.iter().any(|c| c == "*" || c == command)
    }

    /// `--config NAME:KNOB=VALUE` (a knob) or `--config NAME=COMMAND` (a
    /// set-up: only as any shell; named scripts go in the plan file).
    fn config_option(&self, value: &str) -> Result<(), String> {
        let Some(at) = value.find([':', '=', '@']) else {
            return Ok(());
        };
        let (name, rest) = (&value[..at], &value[at + 1..]);
        let command = match &value[at..at + 1] {
            ":" => return self.knob(rest.split_once('=').map_or(rest, |(k, _)| k), name),
            "@" if !self.guests => return Err(format!("configuration '{name}' runs in a guest")),
            "@" => rest.split_once('=').map_or("", |(_, c)| c),
            _ => rest,
        };
        match command.trim().is_empty() || self.any_shell {
            true => Ok(()),
            false => Err(format!(
                "configuration '{name}' runs a shell set-up given on the command line (name a \
                 script of the policy's [scripts] in the plan file's [[config]] instead)"
            )),
        }
    }

    /// `--load SPEC`: osbench's own loads always; a `cmd:` load (any shell
    /// command) only as any shell.
    fn load_option(&self, spec: &str) -> Result<(), String> {
        match spec.parse::<LoadSpec>() {
            Ok(s) if s.runs_a_command() && !self.any_shell => Err(format!(
                "the plan runs the command load `{}` given on the command line (name a script \
                 of the policy's [scripts] in a [[config]]'s load = \"cmd:NAME\" instead)",
                crate::text::printable(spec)
            )),
            _ => Ok(()), // a bad spec is the command line's to refuse
        }
    }

    /// A `[[config]]`'s `load` (a spec or a list): `cmd:NAME` loads
    /// resolved to the policy's script NAME, other commands only as any shell.
    fn config_loads(&self, name: &str, load: &mut toml::Value) -> Result<(), String> {
        let specs: Vec<&mut toml::Value> = match load {
            toml::Value::Array(items) => items.iter_mut().collect(),
            one => vec![one],
        };
        for value in specs {
            let Some(text) = value.as_str() else { continue };
            let Ok(spec) = text.parse::<LoadSpec>() else {
                continue; // the experiment file's reader words the error
            };
            let LoadKind::Cmd { command } = &spec.kind else {
                continue;
            };
            if self.any_shell {
                continue;
            }
            let Some(script) = self.scripts.get(command.as_str()) else {
                return Err(format!(
                    "configuration '{name}' has the load `{}`, whose command is not a script of \
                     the policy's [scripts] (plans name a script; they do not give shell)",
                    crate::text::printable(text)
                ));
            };
            let line = crate::text::shell_word(&script.to_string_lossy()).into_owned();
            let placed = text.rsplit_once('@').filter(|_| !spec.cpus.is_empty());
            let at = placed.map_or(String::new(), |(_, cpus)| format!("@{cpus}"));
            *value = toml::Value::String(format!("cmd:{line}{at}"));
        }
        Ok(())
    }

    /// Whether configuration `config` may set `knob`.
    fn knob(&self, knob: &str, config: &str) -> Result<(), String> {
        let allowed = self.knobs.iter().any(|k| match k.strip_suffix('*') {
            Some(prefix) => knob.starts_with(prefix),
            None => k == knob,
        });
        match allowed {
            true => Ok(()),
            false => Err(format!(
                "configuration '{config}' sets knob {} (not in knobs)",
                crate::text::printable(knob)
            )),
        }
    }

    /// The experiment text with set-up and tear-down names replaced by the
    /// policy's scripts, once its knobs, guests and environment pass.
    fn configurations(&self, text: &str) -> Result<String, String> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| format!("the plan's configurations: {e}"))?;
        if table.contains_key("guests") && !self.guests {
            return Err("the plan declares guests ([guests])".into());
        }
        if let Some(toml::Value::Array(configs)) = table.get_mut("config") {
            for config in configs.iter_mut().filter_map(toml::Value::as_table_mut) {
                self.configuration(config)?;
            }
        }
        let text = super::job::write_toml(&table);
        self.knobs_of(&text)?;
        Ok(text)
    }

    /// One `[[config]]` table checked, its script names resolved.
    fn configuration(&self, config: &mut toml::Table) -> Result<(), String> {
        let name = config
            .get("name")
            .and_then(toml::Value::as_str)
            .unwrap_or("?")
            .to_string();
        let name = crate::text::printable(&name).into_owned();
        if (config.contains_key("guest") || config.contains_key("in")) && !self.guests {
            return Err(format!("configuration '{name}' runs in a guest"));
        }
        let has_env = config
            .get("env")
            .and_then(toml::Value::as_table)
            .is_some_and(|t| !t.is_empty());
        if has_env && !self.any_shell {
            return Err(format!(
                "configuration '{name}' sets environment variables for its set-up (env)"
            ));
        }
        if let Some(load) = config.get_mut("load") {
            self.config_loads(&name, load)?;
        }
        for key in ["setup", "teardown"] {
            let Some(command) = config.get(key).and_then(toml::Value::as_str) else {
                continue;
            };
            if command.trim().is_empty() || self.any_shell {
                continue;
            }
            let Some(script) = self.scripts.get(command) else {
                return Err(format!(
                    "configuration '{name}' has the {key} `{}`, which is not a script of the \
                     policy's [scripts] (plans name a script; they do not give shell)",
                    crate::text::printable(command)
                ));
            };
            let line = crate::text::shell_word(&script.to_string_lossy()).into_owned();
            config.insert(key.into(), toml::Value::String(line));
        }
        Ok(())
    }

    /// Checks the knobs of the experiment `text`, read by the experiment
    /// files' own reader (the names it gives them).
    fn knobs_of(&self, text: &str) -> Result<(), String> {
        let dir = tempfile::tempdir().map_err(|e| format!("no temporary directory: {e}"))?;
        let path = dir.path().join("experiment.toml");
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let (_, configs) = crate::experiment::file::load(&path)
            .map_err(|e| format!("the plan's configurations: {e}"))?;
        for config in &configs {
            for setting in &config.knobs {
                self.knob(&setting.knob.name(), &config.name)?;
            }
        }
        Ok(())
    }
}

fn yes(b: bool) -> &'static str {
    if b { "allowed" } else { "refused" }
}

/// Parameter values that cannot add words or shell to an allowed command.
fn plain_words(name: &str, values: &[String]) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._,:+-".contains(c);
    match values.iter().find(|v| !v.chars().all(plain)) {
        Some(v) => Err(format!(
            "the plan's {name} value `{}` is not plain words (letters, digits, . _ , : + -)",
            crate::text::printable(v)
        )),
        None => Ok(()),
    }
}

/// An error when `path` is writable by its group or by others, or owned
/// by someone other than root or this process's user (who could rewrite it).
fn refuse_writable(path: &Path) -> Result<(), PolicyError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|cause| PolicyError::Read {
        path: path.display().to_string(),
        cause,
    })?;
    let mode = meta.mode();
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
        (_, true) => "everyone",
        (true, false) => "its group",
        (false, false) if meta.uid() != 0 && meta.uid() != me => "its owner, another user",
        (false, false) => return Ok(()),
    };
    Err(PolicyError::Writable {
        path: path.display().to_string(),
        who,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::parse_plan_file;

    fn given(items: &[(&str, &[&str])]) -> Given {
        let item = |(id, values): &(&str, &[&str])| {
            let values = values.iter().map(|v| v.to_string()).collect();
            (
                id.to_string(),
                format!("--{}", id.replace('_', "-")),
                values,
            )
        };
        items.iter().map(item).collect()
    }

    fn plan(text: &str) -> JobPlan {
        parse_plan_file(text, "p.toml").unwrap().plan
    }

    fn policy(text: &str) -> Policy {
        Policy {
            origin: "the worker policy /etc/p.toml".into(),
            ..toml::from_str(text).unwrap()
        }
    }

    #[test]
    fn the_default_policy_runs_benchmarks_and_nothing_else() {
        let p = Policy {
            origin: "the default policy".into(),
            ..Policy::default()
        };
        let free = given(&[("selectors", &["syscall:null"]), ("samples", &["3"])]);
        assert!(
            p.admit(&plan("select = [\"syscall\"]"), &free, false)
                .is_ok()
        );
        let e =
            |plan: &JobPlan, given: &Given, boots: bool| p.admit(plan, given, boots).unwrap_err();
        let shell = plan("select = [\"a\"]\n[[config]]\nname = \"x\"\nsetup = \"id > /tmp/x\"");
        let why = e(&shell, &Given::new(), false);
        assert!(
            why.contains("`id > /tmp/x`") && why.ends_with("the default policy does not allow"),
            "{why}"
        );
        let knob = plan("select = [\"a\"]\n[[config]]\nname = \"x\"\nthp = \"never\"");
        assert!(e(&knob, &Given::new(), false).contains("sets knob thp"));
        let time = given(&[("commands", &["sh -c 'id > /tmp/y'"])]);
        assert!(
            e(
                &JobPlan {
                    command: crate::queue::JobCommand::Time,
                    args: vec![],
                    experiment: None
                },
                &time,
                false
            )
            .contains("not in time_commands")
        );
        assert!(e(&plan("select = [\"a\"]"), &Given::new(), true).contains("boots a kernel"));
        for refused in ["json", "store", "export_hyperfine", "csv", "pairs"] {
            let why = e(
                &plan("select = [\"a\"]"),
                &given(&[(refused, &["/x"])]),
                false,
            );
            assert!(why.contains("never says where results go"), "{why}");
        }
        let cli_setup = given(&[("configs", &["a=rm -rf /", "b="])]);
        assert!(e(&plan("select = [\"a\"]"), &cli_setup, false).contains("configuration 'a'"));
        let guest = given(&[("guests", &["g=command:sh"])]);
        assert!(e(&plan("select = [\"a\"]"), &guest, false).contains("guests"));
    }

    #[test]
    fn own_loads_run_freely_and_command_loads_need_a_script_or_any_shell() {
        let p = Policy {
            origin: "the default policy".into(),
            ..Policy::default()
        };
        let select = plan("select = [\"a\"]");
        let builtin = given(&[("loads", &["hackbench:2", "spin:1@0"])]);
        assert!(p.admit(&select, &builtin, false).is_ok());
        let cmd = given(&[("loads", &["cmd:make -j2"])]);
        let why = p.admit(&select, &cmd, false).unwrap_err();
        assert!(why.contains("command load `cmd:make -j2`"), "{why}");
        let shell = plan("select = [\"a\"]\n[[config]]\nname = \"x\"\nload = \"cmd:id > /tmp/x\"");
        let why = p.admit(&shell, &Given::new(), false).unwrap_err();
        assert!(why.contains("load `cmd:id > /tmp/x`"), "{why}");
        let scripted = policy("[scripts]\nbuild = \"/etc/osbench/build.sh\"");
        let text =
            "select = [\"a\"]\n[[config]]\nname = \"x\"\nload = [\"spin:1\", \"cmd:build@0-1\"]";
        let admitted = scripted.admit(&plan(text), &Given::new(), false).unwrap();
        let back: toml::Table = toml::from_str(admitted.experiment.as_ref().unwrap()).unwrap();
        let load = back["config"][0]["load"].as_array().unwrap();
        assert_eq!(load[0].as_str(), Some("spin:1"));
        assert_eq!(load[1].as_str(), Some("cmd:/etc/osbench/build.sh@0-1"));
        let any = policy("any_shell = true");
        assert!(any.admit(&select, &cmd, false).is_ok());
        assert!(any.admit(&shell, &Given::new(), false).is_ok());
    }

    #[test]
    fn a_policy_allows_what_it_lists_and_names_scripts() {
        let p = policy(
            "knobs = [\"thp\", \"sysctl.kernel.sched_*\"]\ntime_commands = [\"make -j8\"]\n\
             [scripts]\nirq-off = \"/etc/osbench/irq off.sh\"",
        );
        let text = "select = [\"a\"]\n[[config]]\nname = \"x\"\nsetup = \"irq-off\"\nthp = \"never\"\n\
                    sysctl = { \"kernel.sched_autogroup_enabled\" = \"0\" }";
        let admitted = p.admit(&plan(text), &Given::new(), false).unwrap();
        let back: toml::Table = toml::from_str(admitted.experiment.as_ref().unwrap()).unwrap();
        let setup = back["config"][0]["setup"].as_str().unwrap();
        assert_eq!(setup, "'/etc/osbench/irq off.sh'");
        let other = text
            .replace("sched_autogroup_enabled", "x")
            .replace("kernel.", "vm.");
        let why = p.admit(&plan(&other), &Given::new(), false).unwrap_err();
        assert!(
            why.contains("sets knob sysctl.vm.x") && why.contains("/etc/p.toml"),
            "{why}"
        );
        let knob = given(&[("configs", &["a:thp=never", "b:smt=off"])]);
        assert!(
            p.admit(&plan("select = [\"a\"]"), &knob, false)
                .unwrap_err()
                .contains("knob smt")
        );
        let time = JobPlan {
            command: crate::queue::JobCommand::Time,
            args: vec![],
            experiment: None,
        };
        assert!(
            p.admit(
                &time,
                &given(&[("commands", &["make -j8"]), ("shell", &["true"])]),
                false
            )
            .is_ok()
        );
        let scan = given(&[
            ("commands", &["make -j8"]),
            ("parameter_list", &["n", "1;id"]),
        ]);
        assert!(
            p.admit(&time, &scan, false)
                .unwrap_err()
                .contains("not plain words")
        );
        let env = "select = [\"a\"]\n[[config]]\nname = \"x\"\nsetup = \"irq-off\"\nenv = { LD_PRELOAD = \"/tmp/x.so\" }";
        assert!(
            p.admit(&plan(env), &Given::new(), false)
                .unwrap_err()
                .contains("env")
        );
    }

    #[test]
    fn policy_files_are_read_checked_and_owned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, "knobs = [\"thp\"]\nkernel_jobs = true\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let p = Policy::load(Some(&path)).unwrap();
        assert_eq!(p.knobs, ["thp"]);
        assert!(p.kernel_jobs && p.summary().contains("kernel jobs allowed"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Policy::load(Some(&path)).unwrap_err().to_string();
        assert!(e.contains("writable by everyone"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(&path, "knob = [\"thp\"]\n").unwrap();
        assert!(
            Policy::load(Some(&path))
                .unwrap_err()
                .to_string()
                .contains("not valid")
        );
        std::fs::write(&path, "[scripts]\na = \"rel.sh\"\n").unwrap();
        assert!(
            Policy::load(Some(&path))
                .unwrap_err()
                .to_string()
                .contains("absolute")
        );
        std::fs::write(&path, "knobs = []\n").unwrap();
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            let e = Policy::load(Some(&path)).unwrap_err().to_string();
            assert!(e.contains("its owner, another user"), "{e}");
        }
        let missing = dir.path().join("none.toml");
        assert!(Policy::load(Some(&missing)).is_err());
    }
}
