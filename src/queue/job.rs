//! What a job runs ([`JobPlan`]): the arguments of `osbench run` or
//! `osbench time` on its host (selectors or commands, policy, precision
//! target, any other option of theirs), an experiment file's
//! configurations with their set-ups, and an optional kernel table that
//! kernel-boot jobs carry (typed by `kernel_jobs`). Made from a plan file
//! ([`parse_plan_file`]) or from selectors, and checked by the submitter's
//! own command-line parser before it is queued. Left out: anything that
//! says where results go (the worker stores them under its own name).
//!
//! A plan file (TOML):
//!
//! ```toml
//! select = ["syscall:null", "ctx"]   # what `run` measures; or
//! # time = ["make -j8", "make -j16"] # commands `time` runs instead
//! samples = 5                        # any option of run / time: KEY = VALUE is
//! sample_time = 2                    # --KEY VALUE (underscores become dashes),
//! no_perf = true                     # true is a flag, an array repeats it
//! args = ["--pin", "same"]           # or options as words
//! boot_timeout = "20m"               # how long a boot may take (boot jobs)
//! [[config]]                         # configurations, as in experiment files
//! name = "on"
//! [[config]]
//! name = "off"
//! setup = "echo 0 > /proc/sys/kernel/foo"
//! [kernel]                           # a kernel to boot first (boot jobs)
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which command a job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobCommand {
    Run,
    Time,
}

impl JobCommand {
    pub fn as_str(self) -> &'static str {
        match self {
            JobCommand::Run => "run",
            JobCommand::Time => "time",
        }
    }
}

/// Everything a job runs, as stored in its row (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobPlan {
    pub command: JobCommand,
    /// The command's arguments (positional and options), without the
    /// store, label, meta or experiment file, which the worker adds.
    pub args: Vec<String>,
    /// An experiment file (TOML) with the configurations, given to the
    /// command as `--experiment FILE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<String>,
}

impl JobPlan {
    /// The plan stored in a job row.
    pub fn from_json(text: &str) -> Result<Self> {
        serde_json::from_str(text).map_err(|e| Error::BadDocument {
            path: "the job's plan".into(),
            what: "an osbench job plan",
            message: e.to_string(),
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a plan always serialises")
    }

    /// The command line the worker runs, after the program name: the
    /// command, its arguments, then `--experiment FILE` when there are
    /// configurations (`experiment_file` is where their text was written).
    pub fn argv(&self, experiment_file: Option<&std::path::Path>) -> Vec<String> {
        let mut argv = vec![self.command.as_str().to_string()];
        argv.extend(self.args.iter().cloned());
        if let Some(path) = experiment_file {
            argv.push("--experiment".into());
            argv.push(path.display().to_string());
        }
        argv
    }
}

/// Options no plan gives, whatever the policy: where results go (files,
/// the store), what the worker sets itself (label, meta, experiment file),
/// and the exit statuses of bisect. Every option in neither [`super::policy::FREE`] nor
/// [`super::policy::POLICED`] is refused too; this list is for the message.
pub const REFUSED: &[&str] = &[
    "json",
    "kcidb",
    "csv",
    "markdown",
    "openmetrics",
    "junit",
    "bmf",
    "export_hyperfine",
    "export_asciidoc",
    "export_orgmode",
    "store",
    "no_store",
    "label",
    "meta",
    "pairs",
    "experiment",
    "bisect_exit",
];

/// Whether `--NAME` is an option a plan must not give: one of
/// [`REFUSED`] (by its id, `export_hyperfine` for
/// `--export-hyperfine`), or `--export-json` (hyperfine's name of `--json`).
/// The worker checks again, on the options as its parser reads them.
fn refused_option(name: &str) -> bool {
    name == "export-json" || REFUSED.contains(&name.replace('-', "_").as_str())
}

/// A plan file read: the plan, and its `[kernel]` / `[boot_rounds]` tables
/// and `boot_timeout` as a JSON object keyed by their names.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanFile {
    pub plan: JobPlan,
    pub kernel: Option<serde_json::Value>,
}

/// Reads a plan file's text (`origin` names it in errors).
pub fn parse_plan_file(text: &str, origin: &str) -> Result<PlanFile> {
    let bad = |message: String| Error::BadDocument {
        path: origin.to_string(),
        what: "an osbench plan file",
        message,
    };
    let mut table: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
    let strings = |value: toml::Value, key: &str| -> std::result::Result<Vec<String>, String> {
        match value {
            toml::Value::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    toml::Value::String(s) => Ok(s),
                    other => Err(format!("{key}: {} is not a string", inline(&other))),
                })
                .collect(),
            other => Err(format!(
                "{key} must be an array of strings, not {}",
                inline(&other)
            )),
        }
    };
    let select = table.remove("select").map(|v| strings(v, "select"));
    let time = table.remove("time").map(|v| strings(v, "time"));
    let words = table.remove("args").map(|v| strings(v, "args"));
    // A kernel job's tables and boot_timeout, as JSON keyed by their names
    // (`kernel_jobs::KernelJob`).
    let kernel: serde_json::Map<String, serde_json::Value> = super::kernel_jobs::KEYS
        .iter()
        .filter_map(|k| Some((k.to_string(), table.remove(*k)?)))
        .map(|(k, v)| (k, serde_json::to_value(v).expect("TOML is JSON-shaped")))
        .collect();
    let kernel = (!kernel.is_empty()).then_some(serde_json::Value::Object(kernel));
    let mut experiment = toml::Table::new();
    for key in ["config", "guests"] {
        if let Some(v) = table.remove(key) {
            experiment.insert(key.into(), v);
        }
    }
    let (command, mut args) = match (select, time) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "give select (cases for `run`) or time (commands for `time`), not both".into(),
            ));
        }
        (_, Some(commands)) => (JobCommand::Time, commands.map_err(bad)?),
        (select, None) => (
            JobCommand::Run,
            select.transpose().map_err(bad)?.unwrap_or_default(),
        ),
    };
    if command == JobCommand::Time && !experiment.is_empty() {
        return Err(bad(
            "`time` jobs have no configurations ([[config]], [guests]): each command is one".into(),
        ));
    }
    for (key, value) in table {
        args.extend(option_words(&key, value).map_err(bad)?);
    }
    args.extend(words.transpose().map_err(bad)?.unwrap_or_default());
    refuse_worker_options(&args)?;
    let experiment = (!experiment.is_empty()).then(|| write_toml(&experiment));
    Ok(PlanFile {
        plan: JobPlan {
            command,
            args,
            experiment,
        },
        kernel,
    })
}

/// `key = value` of a plan file as command-line words.
fn option_words(key: &str, value: toml::Value) -> std::result::Result<Vec<String>, String> {
    let flag = format!("--{}", key.replace('_', "-"));
    let word = |v: &toml::Value| match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        other => Err(format!(
            "{key}: {} is not a string or a number",
            inline(other)
        )),
    };
    match &value {
        toml::Value::Boolean(true) => Ok(vec![flag]),
        toml::Value::Boolean(false) => Ok(Vec::new()),
        toml::Value::Array(items) => {
            let mut out = Vec::new();
            for v in items {
                out.push(flag.clone());
                out.push(word(v)?);
            }
            Ok(out)
        }
        v => Ok(vec![flag, word(v)?]),
    }
}

/// An error when `args` give an option the worker sets itself.
pub fn refuse_worker_options(args: &[String]) -> Result<()> {
    for a in args {
        let name = a
            .strip_prefix("--")
            .map(|n| n.split('=').next().unwrap_or(n));
        if let Some(name) = name.filter(|n| refused_option(n)) {
            let why = match name {
                "store" | "no-store" | "label" | "meta" | "experiment" | "bisect-exit" => {
                    "the worker stores each run under its own name in its store, with the job's \
                     --label and --meta (give them to `submit`), and configurations go in the \
                     plan file ([[config]])"
                }
                _ => {
                    "a plan never says where results go (the worker keeps them in its store; \
                     read them with `osbench export` there)"
                }
            };
            return Err(Error::Usage(format!(
                "a job's plan cannot give --{name}: {why}"
            )));
        }
    }
    Ok(())
}

/// A TOML table as text: each key on a line, nested values inline.
pub(crate) fn write_toml(table: &toml::Table) -> String {
    table
        .iter()
        .map(|(k, v)| format!("{} = {}\n", quoted(k), inline(v)))
        .collect()
}

fn inline(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => quoted(s),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => format!("{f:?}"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", items.join(", "))
        }
        toml::Value::Table(t) => {
            let pairs: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{} = {}", quoted(k), inline(v)))
                .collect();
            format!("{{ {} }}", pairs.join(", "))
        }
    }
}

/// A TOML basic string.
fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plans_knobs_reach_the_worker_as_they_were_written() {
        let text = r#"
            select = ["syscall:null"]
            [[config]]
            name = "a"
            thp = "never"
            sysctl = { "kernel.sched_autogroup_enabled" = "0" }
            [[config]]
            name = "b"
            set = { "/sys/module/haltpoll/parameters/guest_halt_poll_ns" = "200000" }
            sched_feature = "NO_DELAY_DEQUEUE"
        "#;
        let file = parse_plan_file(text, "p.toml").unwrap();
        let plan = JobPlan::from_json(&file.plan.to_json()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.toml");
        std::fs::write(&path, plan.experiment.as_ref().unwrap()).unwrap();
        let (_, configs) = crate::experiment::file::load(&path).unwrap();
        let knobs = |c: usize| -> Vec<String> {
            let k = configs[c].knobs.iter();
            k.map(|k| format!("{}={}", k.knob, k.value)).collect()
        };
        assert_eq!(
            knobs(0),
            ["sysctl.kernel.sched_autogroup_enabled=0", "thp=never"]
        );
        assert_eq!(
            knobs(1),
            [
                "sched_feature.DELAY_DEQUEUE=NO_DELAY_DEQUEUE",
                "/sys/module/haltpoll/parameters/guest_halt_poll_ns=200000"
            ]
        );
    }

    #[test]
    fn a_plan_file_becomes_arguments_and_an_experiment() {
        let text = r#"
            select = ["syscall:null"]
            samples = 3
            sample_time = 1.5
            no_perf = true
            args = ["--pin", "same"]
            [[config]]
            name = "a"
            [[config]]
            name = "b \"q\""
            setup = "echo 1\necho 2"
            params = { "spin.work" = 10 }
            [kernel]
            release = "6.18"
        "#;
        let file = parse_plan_file(text, "p.toml").unwrap();
        assert_eq!(file.plan.command, JobCommand::Run);
        assert_eq!(
            file.plan.args,
            [
                "syscall:null",
                "--no-perf",
                "--sample-time",
                "1.5",
                "--samples",
                "3",
                "--pin",
                "same"
            ]
        );
        assert_eq!(file.kernel.unwrap()["kernel"]["release"], "6.18");
        // The experiment text reads back as the same tables.
        let back: toml::Table = toml::from_str(file.plan.experiment.as_ref().unwrap()).unwrap();
        let configs = back["config"].as_array().unwrap();
        assert_eq!(configs[1]["name"].as_str(), Some("b \"q\""));
        assert_eq!(configs[1]["setup"].as_str(), Some("echo 1\necho 2"));
        assert_eq!(configs[1]["params"]["spin.work"].as_integer(), Some(10));
        let plan = JobPlan::from_json(&file.plan.to_json()).unwrap();
        assert_eq!(plan, file.plan);
        let argv = plan.argv(Some(std::path::Path::new("/t/e.toml")));
        assert_eq!(argv[0], "run");
        assert_eq!(&argv[argv.len() - 2..], ["--experiment", "/t/e.toml"]);
    }

    #[test]
    fn bad_plan_files_are_refused_with_the_reason() {
        let e = |text: &str| parse_plan_file(text, "p.toml").unwrap_err().to_string();
        assert!(e("select = [\"a\"]\ntime = [\"b\"]").contains("not both"));
        assert!(e("time = [\"b\"]\n[[config]]\nname = \"a\"").contains("no configurations"));
        assert!(e("select = \"a\"").contains("array of strings"));
        assert!(e("store = \"x\"").contains("cannot give --store"));
        assert!(e("args = [\"--label=x\"]").contains("cannot give --label"));
        assert!(e("json = \"/etc/passwd\"").contains("cannot give --json"));
        assert!(e("args = [\"--export-hyperfine=/x\"]").contains("never says where results go"));
        assert!(e("select = [").contains("p.toml"));
    }
}
