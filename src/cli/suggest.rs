//! Tips for a flag a subcommand refuses (`osbench run -n 5`): what this
//! subcommand takes for what the flag means in the tools osbench's users come
//! from — one table, [`KNOWN`], of hyperfine's, lmbench's, perf bench's,
//! hackbench's, cyclictest's and will-it-scale's flags and of generic
//! spellings (`-n`, `--iterations`, `--count`, `--repeat`, `--runs`) — and
//! otherwise clap's similar flag, only when this command line would accept
//! it. clap's "to pass '-n' as a value, use '-- -n'" is never kept: the
//! words after `--` are values only for `submit`, whose are the job's `run`
//! (or `time`) options, and there a flag the job takes is moved after `--`.
//!
//! Each tip carries the command line with it applied, and is given only
//! when that parses (or fails only as the line without the flag does); the
//! tests parse every one. A subcommand's own flags are read from its clap definition, and the
//! checks `run` makes after parsing (`--rounds` needs two configurations,
//! `--max-time` needs `--target-ci`) are repeated in [`refused_later`].
//! Left out: schbench's flags (its workers and message threads have no
//! counterpart: `wakeup` is a two-task ping-pong) and cyclictest's `-D`
//! (a duration osbench does not take per case); a guess from anything but
//! the benchmarks named and whether configurations are given. The flags'
//! meanings are those of each tool's manual or usage text.

use clap::Command;

/// What a flag of another tool is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Intent {
    Repeat,
    MinRuns,
    MaxRuns,
    WarmupRuns,
    Prepare,
    Setup,
    Cleanup,
    NoShell,
    ExportJson,
    ExportMarkdown,
    ExportCsv,
    CommandName,
    IgnoreFailure,
    Parallel,
    OpsPerSample,
    Groups,
    Fds,
    Messages,
    DataSize,
    Pipe,
    Threads,
    Processes,
    Interval,
    WakeUps,
    Priority,
    Affinity,
    Tasks,
}

/// A flag of another tool: its spellings, whose it is ("" for a generic
/// spelling), what it means in a few words, an example of its value (none
/// when it takes none) and its intent.
pub(super) struct Known {
    pub spellings: &'static [&'static str],
    pub tool: &'static str,
    pub what: &'static str,
    pub value: Option<&'static str>,
    pub intent: Intent,
}

const fn known(
    spellings: &'static [&'static str],
    tool: &'static str,
    what: &'static str,
    value: Option<&'static str>,
    intent: Intent,
) -> Known {
    Known {
        spellings,
        tool,
        what,
        value,
        intent,
    }
}

use Intent::*;

/// The flags users bring from other tools, in the order their tips are
/// shown: spellings, tool ("" for a generic spelling), what it means, an
/// example value (`None`: it takes none), intent.
#[rustfmt::skip]
pub(super) const KNOWN: &[Known] = &[
    known(&["-r", "--runs"], "hyperfine", "runs of each command", Some("5"), Repeat),
    known(&["-m", "--min-runs"], "hyperfine", "least runs", Some("5"), MinRuns),
    known(&["-M", "--max-runs"], "hyperfine", "most runs", Some("50"), MaxRuns),
    known(&["-w", "--warmup"], "hyperfine", "warm-up runs", Some("3"), WarmupRuns),
    known(&["-p", "--prepare"], "hyperfine", "a command before each run", Some("sync"), Prepare),
    known(&["-s", "--setup"], "hyperfine", "a command before all runs", Some("make"), Setup),
    known(&["-c", "--cleanup"], "hyperfine", "a command after all runs", Some("true"), Cleanup),
    known(&["-N", "--shell=none"], "hyperfine", "no shell", None, NoShell),
    known(&["--export-json"], "hyperfine", "JSON results", Some("out.json"), ExportJson),
    known(&["--export-markdown"], "hyperfine", "a Markdown table", Some("out.md"), ExportMarkdown),
    known(&["--export-csv"], "hyperfine", "CSV results", Some("out.csv"), ExportCsv),
    known(&["-n", "--command-name"], "hyperfine", "a command's name", Some("old"), CommandName),
    known(&["-i", "--ignore-failure"], "hyperfine", "ignore failures", None, IgnoreFailure),
    known(&["-N"], "lmbench", "repetitions", Some("5"), Repeat),
    known(&["-W"], "lmbench", "warm-up runs", Some("3"), WarmupRuns),
    known(&["-P"], "lmbench", "parallel copies", Some("2"), Parallel),
    known(&["-r", "--repeat"], "perf bench", "repetitions", Some("5"), Repeat),
    known(&["-l", "--loops"], "perf bench", "ops per measurement", Some("1000"), OpsPerSample),
    known(&["-g", "--groups"], "hackbench", "groups", Some("20"), Groups),
    known(&["-f", "--fds"], "hackbench", "receivers per group", Some("10"), Fds),
    known(&["-l", "--loops"], "hackbench", "messages per sender", Some("100"), Messages),
    known(&["-s", "--datasize"], "hackbench", "bytes per message", Some("64"), DataSize),
    known(&["-p", "--pipe"], "hackbench", "pipes", None, Pipe),
    known(&["-T", "--threads"], "hackbench", "threads", None, Threads),
    known(&["-P", "--process"], "hackbench", "processes", None, Processes),
    known(&["-i", "--interval"], "cyclictest", "period in µs", Some("500"), Interval),
    known(&["-l", "--loops"], "cyclictest", "wake-ups", Some("1000"), WakeUps),
    known(&["-p", "--priority", "--prio"], "cyclictest", "FIFO priority", Some("80"), Priority),
    known(&["-a", "--affinity"], "cyclictest", "CPU affinity", Some("0"), Affinity),
    known(&["-t"], "will-it-scale", "tasks", Some("2"), Tasks),
    known(
        &["-n", "--iterations", "--count", "--repeat", "--runs", "--repetitions"],
        "", "repetitions", Some("5"), Repeat,
    ),
    known(
        &["--samples", "--rounds", "--invocations"],
        "osbench run", "repetitions", Some("5"), Repeat,
    ),
];

/// How a suggested flag gets its value.
#[derive(Clone, Copy)]
enum Given {
    /// The refused flag's value, as it was given.
    Same,
    /// This value, whatever the refused flag had.
    Fixed(&'static str),
    /// A value of another kind: shown as the placeholder, applied as the example.
    Other(&'static str, &'static str),
}

/// What this subcommand takes for an intent.
#[derive(Clone, Copy)]
enum Target {
    /// A flag (`--samples`, or `-S`), when the subcommand has it with this
    /// value name; `note` says what it is, if its name does not.
    Flag {
        flag: &'static str,
        value_name: &'static str,
        given: Given,
        note: &'static str,
    },
    /// A selector parameter (`messaging:groups=N`, or a fixed value).
    Param {
        bench: &'static str,
        key: &'static str,
        fixed: Option<&'static str>,
    },
    /// The subcommand's own count argument (`osbench loop N`).
    Count,
}

const fn flag(flag: &'static str, value_name: &'static str, note: &'static str) -> Target {
    Target::Flag {
        flag,
        value_name,
        given: Given::Same,
        note,
    }
}

const fn param(bench: &'static str, key: &'static str, fixed: Option<&'static str>) -> Target {
    Target::Param { bench, key, fixed }
}

/// What an intent is in osbench, in order of preference: the first that a
/// subcommand takes (in the context of its command line) is its tip. Which
/// subcommand takes which is read from its clap definition (a flag of this
/// name and value name: `run`'s `--warmup <MS>` is a time, `time`'s
/// `--warmup <N>` a count), so this is the whole per-subcommand mapping.
fn targets(intent: Intent) -> Vec<Target> {
    const WARMUP_MS: Target = Target::Flag {
        flag: "--warmup",
        value_name: "MS",
        given: Given::Other("<MS>", "50"),
        note: "a time in ms, not a count",
    };
    const SAMPLE_TIME: Target = Target::Flag {
        flag: "--sample-time",
        value_name: "MS",
        given: Given::Other("<MS>", "10"),
        note: "a sample's length",
    };
    const NO_SHELL: Target = Target::Flag {
        flag: "-S",
        value_name: "SHELL",
        given: Given::Fixed("none"),
        note: "the default",
    };
    const PIN: Target = Target::Flag {
        flag: "--pin",
        value_name: "PLACEMENT",
        given: Given::Fixed("same"),
        note: "the case's tasks on one CPU",
    };
    match intent {
        Repeat => vec![
            flag("--rounds", "N", "interleaved rounds"),
            flag("--samples", "N", "samples per case"),
            flag("--runs", "N", ""),
            Target::Count,
        ],
        MinRuns => vec![
            flag("--min-runs", "N", ""),
            flag("--samples", "N", "samples per case"),
            flag("--runs", "N", ""),
        ],
        MaxRuns => vec![flag("--max-runs", "N", "")],
        WarmupRuns => vec![flag("--warmup", "N", "warm-up runs"), WARMUP_MS],
        Prepare => vec![flag("--prepare", "CMD", "")],
        Setup => vec![flag("--setup", "CMD", "")],
        Cleanup => vec![flag("--cleanup", "CMD", "")],
        NoShell => vec![NO_SHELL],
        ExportJson => vec![
            flag("--export-json", "FILE", ""),
            flag("--json", "FILE", "the result document"),
        ],
        ExportMarkdown => vec![flag("--markdown", "FILE", "")],
        ExportCsv => vec![flag("--csv", "FILE", "")],
        CommandName => vec![flag("--command-name", "NAME", "")],
        IgnoreFailure => vec![],
        Parallel => vec![],
        OpsPerSample => vec![SAMPLE_TIME],
        Groups => vec![param("messaging", "groups", None)],
        Fds => vec![param("messaging", "fds", None)],
        Messages => vec![param("messaging", "loops", None)],
        DataSize => vec![param("messaging", "datasize", None)],
        Pipe => vec![param("messaging", "transport", Some("pipe"))],
        Threads => vec![param("messaging", "mode", Some("threads"))],
        Processes => vec![param("messaging", "mode", Some("processes"))],
        Interval => vec![param("timer", "interval_us", None)],
        WakeUps => vec![param("timer", "count", None)],
        Priority => vec![param("timer", "priority", None)],
        Affinity => vec![PIN],
        Tasks => vec![
            param("tlb", "threads", None),
            param("atomic", "threads", None),
        ],
    }
}

/// A tip: its line (`tip: …`), what it says to use as the line quotes it
/// (`--samples 5`), and the command line with it applied (both empty when
/// the tip only says there is nothing to use).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Tip {
    pub line: String,
    pub uses: String,
    pub applied: Vec<String>,
}

/// The command line around a refused flag: the words (the program's
/// first), the subcommand's path (`osbench fleet run`) and its clap
/// definition, and where the flag is.
struct Line<'a> {
    words: &'a [String],
    path: Vec<String>,
    cmd: &'a Command,
    at: usize,
    /// The flag as clap names it.
    refused: &'a str,
    /// The subcommand `submit` passes its options after `--` to (`run`, or
    /// `time` with `--time`).
    passes_to: Option<&'a Command>,
}

/// The tips for the flag `refused` (as clap names it: `-n`, `--runs`) that
/// the subcommand of `words` refused; `similar` is clap's similar flag.
pub(super) fn tips(
    root: &Command,
    words: &[String],
    refused: &str,
    similar: Option<&str>,
) -> Vec<Tip> {
    let Some(line) = Line::new(root, words, refused) else {
        return Vec::new();
    };
    let word = line.words[line.at].as_str();
    let meanings: Vec<&Known> = KNOWN
        .iter()
        .filter(|k| k.spellings.iter().any(|s| *s == refused || *s == word))
        .collect();
    if let Some(tip) = line.passed_on() {
        return vec![tip];
    }
    let mut tips = line.meant(&meanings);
    if tips.is_empty() {
        // A tip that names no flag to use: nothing applied.
        let note = |line: String| Tip {
            line,
            uses: String::new(),
            applied: Vec::new(),
        };
        let (what, sub) = (|k| described(k, word, refused), line.path.join(" "));
        if let Some((first, given)) = line.already_given(&meanings) {
            tips.push(note(format!(
                "tip: {} is {given} in `{sub}`, which this line already gives",
                what(first)
            )));
        } else if let Some(first) = meanings.first() {
            tips.push(note(format!(
                "tip: {} has no counterpart in `{sub}`",
                what(first)
            )));
        } else if let Some(tip) = line.similar(similar) {
            tips.push(tip);
        }
    }
    tips
}

/// "hyperfine's --runs (runs)", "-n (repetitions)": the flag as clap
/// names it (`refused`), or the word when that is the spelling known
/// (`--shell=none`).
fn described(known: &Known, word: &str, refused: &str) -> String {
    let spelling = if known.spellings.contains(&word) {
        word
    } else {
        refused
    };
    match known.tool {
        "" => format!("{spelling} ({})", known.what),
        tool => format!("{tool}'s {spelling} ({})", known.what),
    }
}

impl<'a> Line<'a> {
    fn new(root: &'a Command, words: &'a [String], refused: &'a str) -> Option<Self> {
        let mut cmd = root;
        let mut path = vec![root.get_name().to_string()];
        let mut start = 1;
        for (i, w) in words.iter().enumerate().skip(1) {
            if w == "--" {
                break;
            }
            if let Some(sub) = cmd.find_subcommand(w) {
                cmd = sub;
                path.push(sub.get_name().to_string());
                start = i + 1;
            }
        }
        let short = refused.len() == 2 && !refused.starts_with("--");
        let at = (start..words.len())
            .take_while(|&i| words[i] != "--")
            .find(|&i| {
                let w = &words[i];
                w == refused
                    || w.starts_with(&format!("{refused}="))
                    || (short && w.starts_with(refused))
            })?;
        let passes_to = (path.len() == 2 && path[1] == "submit").then(|| {
            let to = if words.iter().any(|w| w == "--time") {
                "time"
            } else {
                "run"
            };
            root.find_subcommand(to)
                .expect("run and time are subcommands")
        });
        Some(Self {
            words,
            path,
            cmd,
            at,
            refused,
            passes_to,
        })
    }

    /// The refused flag's value, if `known` takes one, and the words it and
    /// its value take.
    fn value(&self, known: &Known) -> (Option<String>, usize) {
        let word = &self.words[self.at];
        if known.value.is_none() {
            return (None, 1);
        }
        if let Some((_, v)) = word.split_once('=') {
            return (Some(v.to_string()), 1);
        }
        if !word.starts_with("--") && word.len() > 2 {
            return (Some(word[2..].to_string()), 1);
        }
        match self.words.get(self.at + 1) {
            Some(v) if !v.starts_with('-') => (Some(v.clone()), 2),
            _ => (None, 1),
        }
    }

    /// The command the options go to: `run` or `time` for `submit`, else this one.
    fn options_cmd(&self) -> &Command {
        self.passes_to.unwrap_or(self.cmd)
    }

    /// The benchmarks the selectors on the line name (`messaging` of
    /// `messaging:groups=20`), with each selector's position.
    fn selectors(&self) -> Vec<(usize, &str)> {
        if !self.takes_selectors() {
            return Vec::new();
        }
        let word = &self.words[self.at];
        let valued = KNOWN
            .iter()
            .any(|k| k.value.is_some() && k.spellings.contains(&self.refused));
        let value_at = (valued && word == self.refused).then_some(self.at + 1);
        positionals(self.cmd, self.words, self.path.len())
            .into_iter()
            .filter(|&i| i != self.at && Some(i) != value_at)
            .map(|i| (i, self.words[i].split([':', ' ']).next().unwrap_or("")))
            .collect()
    }

    fn takes_selectors(&self) -> bool {
        match &self.passes_to {
            Some(to) => to.get_name() == "run",
            None => self.cmd.get_arguments().any(|a| a.get_id() == "selectors"),
        }
    }

    /// Whether the line gives two or more configurations (or an experiment file).
    fn has_configurations(&self) -> bool {
        let given = |flag: &str| {
            self.words
                .iter()
                .filter(|w| *w == flag || w.starts_with(&format!("{flag}=")))
                .count()
        };
        given("--config") + given("--guest") >= 2 || given("--experiment") > 0
    }
}

/// The refused flag as one of its meanings reads it: its value (if the
/// meaning takes one and the line gives it), the words it takes, and how
/// a tip describes it.
struct Read<'k> {
    known: &'k Known,
    value: Option<String>,
    taken: usize,
    what: String,
}

/// The positions of the positional words of `words` after the subcommand
/// path (`skip` words), before any `--`: words that are neither flags nor
/// the values of flags that take one.
fn positionals(cmd: &Command, words: &[String], skip: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = skip;
    while i < words.len() && words[i] != "--" {
        let w = &words[i];
        if let Some(long) = w.strip_prefix("--") {
            let takes = !long.contains('=') && find_flag(cmd, w).is_some_and(takes_value);
            i += if takes { 2 } else { 1 };
        } else if w.starts_with('-') && w.len() > 1 {
            let takes = w.len() == 2 && find_flag(cmd, w).is_some_and(takes_value);
            i += if takes { 2 } else { 1 };
        } else {
            out.push(i);
            i += 1;
        }
    }
    out
}

/// The argument of `cmd` spelled `flag` (`--samples`, an alias, or `-S`).
fn find_flag<'c>(cmd: &'c Command, flag: &str) -> Option<&'c clap::Arg> {
    let flag = flag.split_once('=').map_or(flag, |(f, _)| f);
    cmd.get_arguments().find(|a| match flag.strip_prefix("--") {
        Some(long) => {
            a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|all| all.contains(&long))
        }
        None => flag.len() == 2 && a.get_short() == flag.chars().nth(1),
    })
}

fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values()
}

/// Whether `run` (and `fleet run`) would refuse `flag` after parsing on
/// this line: the checks of `run::refuse_idle_flags` that concern a flag a
/// tip could name.
fn refused_later(cmd: &Command, flag: &str, line: &Line) -> bool {
    if cmd.get_name() != "run" {
        return false;
    }
    let compares = [
        "--rounds",
        "--gate",
        "--equivalence",
        "--allow-undecided",
        "--bisect-exit",
    ];
    (compares.contains(&flag) && !line.has_configurations())
        || (flag == "--max-time" && !line.words.iter().any(|w| w == "--target-ci"))
}

impl Line<'_> {
    /// The tips for the meanings of the refused flag: each meaning's first
    /// target this subcommand takes, once each; when the line names the
    /// benchmark of a selector tip, those alone; when it names others,
    /// no selector tips unless nothing else is left. At most three.
    fn meant(&self, meanings: &[&Known]) -> Vec<Tip> {
        let benches = self.selectors();
        let named = |bench: &str| benches.iter().any(|(_, b)| *b == bench);
        let mut found: Vec<(Option<&str>, Tip)> = Vec::new();
        for known in meanings {
            let all = targets(known.intent);
            let preferred = all
                .iter()
                .filter(|t| matches!(t, Target::Param { bench, .. } if named(bench)));
            let tip = preferred
                .chain(&all)
                .find_map(|&t| self.tip(known, t).map(|tip| (bench_of(t), tip)));
            if let Some((bench, tip)) = tip
                && !found.iter().any(|(_, seen)| seen.applied == tip.applied)
            {
                found.push((bench, tip));
            }
        }
        if found.iter().any(|(b, _)| b.is_some_and(named)) {
            found.retain(|(b, _)| b.is_some_and(named));
        } else if !benches.is_empty() && found.iter().any(|(b, _)| b.is_none()) {
            found.retain(|(b, _)| b.is_none());
        }
        found.into_iter().take(3).map(|(_, tip)| tip).collect()
    }

    /// A meaning whose flag here is on the line already (`time --runs 5
    /// --samples 3`: --samples is --runs), with that flag.
    fn already_given<'k>(&self, meanings: &[&'k Known]) -> Option<(&'k Known, &'static str)> {
        meanings.iter().find_map(|known| {
            targets(known.intent).into_iter().find_map(|t| match t {
                Target::Flag { flag, .. }
                    if self.takes(flag)
                        && self
                            .words
                            .iter()
                            .any(|w| w == flag || w.starts_with(&format!("{flag}="))) =>
                {
                    Some((*known, flag))
                }
                _ => None,
            })
        })
    }

    /// Whether this subcommand has the option `flag` (`--runs`, `-S`).
    fn takes(&self, flag: &str) -> bool {
        self.cmd.get_arguments().any(|a| {
            flag.strip_prefix("--").map_or_else(
                || flag.strip_prefix('-').and_then(|f| f.chars().next()) == a.get_short(),
                |long| a.get_long() == Some(long),
            )
        })
    }

    /// The tip that `target` gives for `known` here, if this subcommand
    /// takes it on this line.
    fn tip(&self, known: &Known, target: Target) -> Option<Tip> {
        let (value, taken) = self.value(known);
        let read = Read {
            known,
            value,
            taken,
            what: described(known, &self.words[self.at], self.refused),
        };
        let mut applied: Vec<String> = self.words.to_vec();
        applied.drain(self.at..self.at + taken);
        let (line, uses) = match target {
            Target::Flag { .. } => self.flag_tip(&read, target, &mut applied)?,
            Target::Param { .. } => self.param_tip(&read, target, &mut applied)?,
            Target::Count => self.count_tip(&read, &mut applied)?,
        };
        self.parses_here(&applied, taken).then_some(Tip {
            line,
            uses,
            applied,
        })
    }

    /// A flag's tip and what it uses, `applied` changed to use it.
    fn flag_tip(
        &self,
        read: &Read,
        target: Target,
        applied: &mut Vec<String>,
    ) -> Option<(String, String)> {
        let Target::Flag {
            flag,
            value_name,
            given,
            note,
        } = target
        else {
            return None;
        };
        let cmd = self.options_cmd();
        let arg = find_flag(cmd, flag)?;
        let named = arg.get_value_names().and_then(|v| v.first());
        if !takes_value(arg) || named.is_none_or(|n| n != value_name) {
            return None;
        }
        if refused_later(cmd, flag, self) {
            return None;
        }
        let (shown, example) = match given {
            Given::Same => match &read.value {
                Some(v) => (v.clone(), v.clone()),
                None => (format!("<{value_name}>"), read.known.value?.to_string()),
            },
            Given::Fixed(v) => (v.to_string(), v.to_string()),
            Given::Other(shown, example) => (shown.to_string(), example.to_string()),
        };
        let what = &read.what;
        let words = [flag.to_string(), example];
        if self.passes_to.is_some() {
            // The job's options: `run`'s (or `time`'s), after `--`.
            let mut uses = format!("{flag} {shown}");
            if !applied.iter().any(|w| w == "--") {
                applied.push("--".into());
                uses = format!("-- {uses}");
            }
            applied.extend(words);
            return Some((format!("tip: for {what}, append '{uses}'"), uses));
        }
        applied.splice(self.at..self.at, words);
        let note = if note.is_empty() {
            String::new()
        } else {
            format!(" ({note})")
        };
        let line = format!("tip: for {what}, use '{flag} {shown}'{note}");
        Some((line, format!("{flag} {shown}")))
    }

    /// A selector parameter's tip and the selector, `applied` changed to
    /// use it (the line's selector of its benchmark changed, or a new one).
    fn param_tip(
        &self,
        read: &Read,
        target: Target,
        applied: &mut Vec<String>,
    ) -> Option<(String, String)> {
        let Target::Param { bench, key, fixed } = target else {
            return None;
        };
        if !self.takes_selectors() {
            return None;
        }
        let (shown, example) = match (fixed, &read.value) {
            (Some(v), _) => (v.to_string(), v.to_string()),
            (None, Some(v)) => (v.clone(), v.clone()),
            (None, None) => ("<N>".to_string(), read.known.value?.to_string()),
        };
        // Selectors are checked after parsing: check the value here.
        let def = osbench::bench::find(bench)?;
        let spec = def.params.iter().find(|p| p.name == key)?;
        if !spec.accepts(&example) {
            return None;
        }
        let (selector, applied_selector) = self.with_param(bench, key, &shown, &example);
        match self.selectors().into_iter().find(|(_, b)| *b == bench) {
            Some((i, _)) if selector_words(&self.words[i]) => {
                let i = if i > self.at { i - read.taken } else { i };
                applied[i] = applied_selector;
            }
            _ => applied.insert(self.at, applied_selector),
        }
        let line = format!("tip: for {}, select '{selector}'", read.what);
        Some((line, selector))
    }

    /// The tip to give a count as the subcommand's argument (`osbench loop 5`).
    fn count_tip(&self, read: &Read, applied: &mut Vec<String>) -> Option<(String, String)> {
        let counted = self
            .cmd
            .get_positionals()
            .any(|a| !a.is_hide_set() && a.get_value_names().is_some_and(|v| v[0] == "N"));
        let value = read.value.clone().filter(|_| counted)?;
        applied.insert(self.at, value.clone());
        let uses = format!("{} {value}", self.path.join(" "));
        let line = format!("tip: for {}, give the count alone: `{uses}`", read.what);
        Some((line, uses))
    }

    /// The selector that sets `key` of `bench`: the line's selector of
    /// `bench` (`messaging`, `messaging:transport=pipe`) with `key=value`
    /// added, or a new one; as shown, and as applied.
    fn with_param(&self, bench: &str, key: &str, shown: &str, example: &str) -> (String, String) {
        let existing = self
            .selectors()
            .into_iter()
            .find(|(i, b)| *b == bench && selector_words(&self.words[*i]))
            .map(|(i, _)| self.words[i].as_str());
        let make = |value: &str| match existing.and_then(|s| s.split_once(':')) {
            Some((_, pairs)) => {
                let kept = pairs
                    .split(',')
                    .filter(|p| p.split_once('=').is_none_or(|(k, _)| k != key));
                let pairs: Vec<String> = kept
                    .map(str::to_string)
                    .chain([format!("{key}={value}")])
                    .collect();
                format!("{bench}:{}", pairs.join(","))
            }
            None => format!("{bench}:{key}={value}"),
        };
        (make(shown), make(example))
    }

    /// clap's similar flag, when this command line would take it.
    fn similar(&self, similar: Option<&str>) -> Option<Tip> {
        let flag = similar?;
        find_flag(self.cmd, flag)?;
        if refused_later(self.cmd, flag, self) {
            return None;
        }
        let word = &self.words[self.at];
        let mut applied = self.words.to_vec();
        applied[self.at] = match word.split_once('=') {
            Some((_, v)) if word.starts_with("--") => format!("{flag}={v}"),
            _ => flag.to_string(),
        };
        self.parses_here(&applied, 1).then(|| Tip {
            line: format!("tip: a similar argument exists: '{flag}'"),
            uses: flag.to_string(),
            applied,
        })
    }

    /// For `submit`: a flag of the job's `run` (or `time`) moved after `--`.
    fn passed_on(&self) -> Option<Tip> {
        let to = self.passes_to?;
        let word = &self.words[self.at];
        let arg = find_flag(to, word)?;
        let taken = if takes_value(arg) && !word.contains('=') {
            2
        } else {
            1
        };
        let end = (self.at + taken).min(self.words.len());
        let moved: Vec<String> = self.words[self.at..end].to_vec();
        let mut applied = self.words.to_vec();
        applied.drain(self.at..end);
        if !applied.iter().any(|w| w == "--") {
            applied.push("--".into());
        }
        applied.extend(moved.iter().cloned());
        let uses = format!("-- {}", moved.join(" "));
        self.parses_here(&applied, moved.len()).then(|| Tip {
            line: format!(
                "tip: to pass '{word}' to `osbench {}`, put it after '--': '{uses}'",
                to.get_name(),
            ),
            uses,
            applied,
        })
    }

    /// Whether `applied` parses, or fails only as the line without the
    /// refused flag (and the `removed` words it took) fails too (a missing
    /// argument, another unknown flag): a tip must bring no conflict, no
    /// requirement and no refused value of its own (`-n old` is a name, not
    /// a number of samples).
    fn parses_here(&self, applied: &[String], removed: usize) -> bool {
        let kind = |words: &[String]| {
            super::command()
                .try_get_matches_from(words)
                .err()
                .map(|e| e.kind())
        };
        let passed_on = self.passes_to.is_none_or(|to| {
            // The job's own command line: `run OPTIONS`, `time OPTIONS true`.
            let options = applied.iter().skip_while(|w| *w != "--").skip(1);
            let mut job: Vec<String> = vec!["osbench".into(), to.get_name().into()];
            job.extend(options.cloned());
            if to.get_name() == "time" {
                job.push("true".into());
            }
            kind(&job).is_none()
        });
        passed_on
            && kind(applied).is_none_or(|k| {
                let mut base = self.words.to_vec();
                base.drain(self.at..self.at + removed);
                kind(&base) == Some(k)
            })
    }
}

/// The benchmark a target's selector is of.
fn bench_of(target: Target) -> Option<&'static str> {
    match target {
        Target::Param { bench, .. } => Some(bench),
        _ => None,
    }
}

/// Whether a selector is `BENCH` or `BENCH:key=value,…` (not a printed case
/// name), so a parameter can be added to it.
fn selector_words(selector: &str) -> bool {
    match selector.split_once(':') {
        None => !selector.contains(' '),
        Some((_, pairs)) => pairs.split(',').all(|p| p.contains('=')),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each subcommand's path with the least of a command line it parses.
    const LINES: &[(&str, &[&str])] = &[
        ("list", &[]),
        ("run", &[]),
        ("env", &[]),
        ("compare", &["a", "b"]),
        ("explain", &["a", "b"]),
        ("history", &[]),
        ("regressions", &[]),
        ("export", &["1"]),
        ("rm", &["1"]),
        ("relabel", &["1", "new"]),
        ("import", &["x.json"]),
        ("plot", &["--out", "d", "1"]),
        ("report", &["--html", "r.html", "1"]),
        ("time", &["true"]),
        ("agent", &[]),
        ("guest-image", &["--initramfs", "i.img"]),
        ("fleet run", &["--host", "a=b"]),
        ("submit", &["syscall", "--hosts", "a"]),
        ("jobs", &[]),
        ("worker", &["--name", "w"]),
        ("lava", &["plan.toml", "--initramfs", "i.cpio"]),
        (
            "bisect",
            &[
                "--good",
                "a",
                "--bad",
                "b",
                "--build",
                "make",
                "--command",
                "true",
            ],
        ),
        ("loop", &["5"]),
        ("sandbox", &["--seccomp", "3", "--", "true"]),
        ("completions", &["bash"]),
        ("man", &[]),
    ];

    fn words(path: &str, flag: &[&str], rest: &[&str]) -> Vec<String> {
        let path = path.split(' ');
        std::iter::once("osbench")
            .chain(path)
            .chain(flag.iter().copied())
            .chain(rest.iter().copied())
            .map(str::to_string)
            .collect()
    }

    fn parses(words: &[String]) -> Result<(), clap::Error> {
        super::super::command()
            .try_get_matches_from(words)
            .map(|_| ())
    }

    /// The tips the command line gets, as the binary prints them, with
    /// each tip's command line applied.
    fn tips_of(words: &[String]) -> Option<(Vec<String>, Vec<Tip>)> {
        use clap::error::{ContextKind, ContextValue};
        let e = parses(words).err()?;
        let (_, printed) = super::super::usage_error(&e, words);
        let Some(ContextValue::String(refused)) = e.get(ContextKind::InvalidArg) else {
            return Some((printed, Vec::new()));
        };
        let similar = match e.get(ContextKind::SuggestedArg) {
            Some(ContextValue::String(s)) => Some(s.as_str()),
            _ => None,
        };
        let tips = tips(&super::super::command(), words, refused, similar);
        Some((printed, tips))
    }

    #[test]
    fn every_subcommand_has_a_line() {
        let cli = super::super::command();
        let mut paths = Vec::new();
        for sub in cli.get_subcommands() {
            match sub
                .get_subcommands()
                .filter(|s| s.get_name() != "help")
                .count()
            {
                0 => paths.push(sub.get_name().to_string()),
                _ => paths.extend(
                    sub.get_subcommands()
                        .filter(|s| s.get_name() != "help")
                        .map(|s| format!("{} {}", sub.get_name(), s.get_name())),
                ),
            }
        }
        let lines: Vec<&str> = LINES.iter().map(|(p, _)| *p).collect();
        assert_eq!(paths.len(), lines.len(), "{paths:?}");
        for path in &paths {
            assert!(lines.contains(&path.as_str()), "no line for {path}");
        }
        for (path, rest) in LINES {
            parses(&words(path, &[], rest)).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
    }

    /// Every known flag on every subcommand: accepted, or refused with
    /// tips that name what to use, fit the screen, never suggest `--` but
    /// for `submit`'s options, and parse once applied.
    #[test]
    fn every_known_flag_on_every_subcommand_gets_tips_that_parse() {
        let mut suggested = 0;
        for (path, rest) in LINES {
            for known in KNOWN {
                for spelling in known.spellings {
                    let value = known.value.filter(|_| !spelling.contains('='));
                    let flag: Vec<&str> = std::iter::once(*spelling).chain(value).collect();
                    let line = words(path, &flag, rest);
                    let Some((printed, tips)) = tips_of(&line) else {
                        continue;
                    };
                    let printed_tips: Vec<&String> = printed.iter().collect();
                    assert_eq!(
                        printed_tips,
                        tips.iter().map(|t| &t.line).collect::<Vec<_>>(),
                        "{line:?}"
                    );
                    for tip in &tips {
                        assert!(
                            tip.line.chars().count() + 2 <= 100,
                            "{line:?}: too wide: {}",
                            tip.line
                        );
                        assert!(
                            !tip.line.contains("'-- ") || *path == "submit",
                            "{line:?}: {}",
                            tip.line
                        );
                        if tip.applied.is_empty() {
                            assert!(tip.line.contains("no counterpart"), "{}", tip.line);
                            continue;
                        }
                        assert!(
                            tip.line.contains(&format!("'{}'", tip.uses))
                                || tip.line.contains(&format!("`{}`", tip.uses)),
                            "{line:?}: {} does not quote {}",
                            tip.line,
                            tip.uses
                        );
                        let first = tip.uses.split(' ').find(|w| *w != "--" && *w != "osbench");
                        let first = first.unwrap_or(&tip.uses);
                        // A placeholder (`<N>`) is applied as an example value.
                        let (named, placeholder) = match first.split_once('<') {
                            Some((named, _)) => (named, true),
                            None => (first, false),
                        };
                        assert!(
                            tip.applied
                                .iter()
                                .any(|w| w == named || (placeholder && w.starts_with(named))),
                            "{line:?}: {} not in {:?}",
                            tip.line,
                            tip.applied
                        );
                        // Selectors are read after parsing: each must resolve.
                        for word in tip.applied.iter().filter(|w| w.contains(':')) {
                            use osbench::bench::util::select::{Selector, resolve};
                            let selector: Selector = word.parse().unwrap();
                            if osbench::bench::find(&selector.bench).is_some() {
                                resolve(&[selector]).unwrap_or_else(|e| panic!("{word}: {e}"));
                            }
                        }
                        parses(&tip.applied).unwrap_or_else(|e| {
                            panic!(
                                "{line:?}: {}: {:?} does not parse: {e}",
                                tip.line, tip.applied
                            )
                        });
                        suggested += 1;
                    }
                }
            }
        }
        assert!(suggested > 50, "only {suggested} tips");
    }

    fn only_tip(line: &[&str]) -> Tip {
        let words: Vec<String> = line.iter().map(|w| w.to_string()).collect();
        let (_, tips) = tips_of(&words).expect("refused");
        assert_eq!(tips.len(), 1, "{line:?}: {tips:?}");
        let tip = tips.into_iter().next().unwrap();
        assert!(
            tip.line.chars().count() + 2 <= 100,
            "too wide: {}",
            tip.line
        );
        tip
    }

    #[test]
    fn the_tips_a_newcomer_met_are_right() {
        let tip = only_tip(&["osbench", "run", "syscall", "-n", "5"]);
        assert_eq!(
            tip.line,
            "tip: for -n (repetitions), use '--samples 5' (samples per case)"
        );
        assert_eq!(tip.applied, ["osbench", "run", "syscall", "--samples", "5"]);
        let tip = only_tip(&["osbench", "run", "--runs", "5"]);
        assert!(tip.line.contains("'--samples 5'"), "{}", tip.line);
        let tip = only_tip(&[
            "osbench", "run", "--config", "a=", "--config", "b=", "--runs", "5",
        ]);
        assert!(tip.line.contains("'--rounds 5'"), "{}", tip.line);
        let words: Vec<String> = ["osbench", "history", "--width"].map(String::from).into();
        assert_eq!(tips_of(&words).unwrap().0, Vec::<String>::new());
        let tip = only_tip(&["osbench", "time", "--samples", "5", "true"]);
        assert!(tip.line.contains("'--runs 5'"), "{}", tip.line);
        let tip = only_tip(&["osbench", "time", "--shell=none", "true"]);
        assert_eq!(tip.applied, ["osbench", "time", "-S", "none", "true"]);
        let tip = only_tip(&["osbench", "loop", "-n", "5"]);
        assert_eq!(tip.applied, ["osbench", "loop", "5"]);
        let tip = only_tip(&["osbench", "submit", "syscall", "--hosts", "a", "-n", "5"]);
        assert_eq!(
            tip.applied,
            [
                "osbench",
                "submit",
                "syscall",
                "--hosts",
                "a",
                "--",
                "--samples",
                "5"
            ]
        );
        let tip = only_tip(&["osbench", "run", "messaging:transport=pipe", "-l", "1000"]);
        assert_eq!(
            tip.line,
            "tip: for hackbench's -l (messages per sender), \
             select 'messaging:transport=pipe,loops=1000'"
        );
        let tip = only_tip(&["osbench", "run", "messaging:transport=pipe", "-g", "50"]);
        assert_eq!(
            tip.applied,
            ["osbench", "run", "messaging:transport=pipe,groups=50"]
        );
        let tip = only_tip(&["osbench", "compare", "--export-json", "x.json", "a", "b"]);
        assert!(tip.line.contains("'--json x.json'"), "{}", tip.line);
        // clap's similar flag, only where the line would take it.
        let tip = only_tip(&["osbench", "run", "--sampels", "5"]);
        assert_eq!(tip.line, "tip: a similar argument exists: '--samples'");
        let words: Vec<String> = ["osbench", "run", "--round", "5"].map(String::from).into();
        assert_eq!(tips_of(&words).unwrap().1, Vec::<Tip>::new());
    }

    #[test]
    fn a_named_benchmark_chooses_among_meanings() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (_, all) = tips_of(&words(&["osbench", "run", "-l", "10"])).unwrap();
        assert_eq!(all.len(), 3, "{all:?}");
        let tip = only_tip(&["osbench", "run", "timer", "-l", "10"]);
        assert_eq!(tip.applied, ["osbench", "run", "timer:count=10"]);
        let tip = only_tip(&["osbench", "run", "syscall", "-l", "10"]);
        assert!(tip.line.contains("--sample-time"), "{}", tip.line);
        // A value the parameter refuses is no tip: `-p sync` is no priority.
        let tip = only_tip(&["osbench", "run", "-p", "sync"]);
        assert!(
            tip.line.contains("'messaging:transport=pipe'"),
            "{}",
            tip.line
        );
    }
}
