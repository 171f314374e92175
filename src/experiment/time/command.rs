//! Whole commands (`osbench time`): what to run, parsed from one string per
//! command the way hyperfine users write them.
//!
//! A command line is split into words like a POSIX shell splits them — blanks
//! separate words, single quotes keep everything literal, double quotes keep
//! everything but `\"`, `\\`, `\$` and `` \` ``, a backslash outside quotes
//! escapes the next character, `''` is an empty word — and then executed
//! directly, with no shell in between (hyperfine's `-N`). Left out on purpose:
//! variables, globs, pipes and redirections; `--shell` runs the line with
//! `sh -c` for those. Timing the runs is `measure::spawn`'s job.
//!
//! hyperfine's parameter scans (`-P NAME MIN MAX [-D STEP]`, `-L NAME a,b`)
//! expand the command templates here, before parsing, in hyperfine's order;
//! the values are substituted for `{NAME}` in the commands and their names
//! (`-n`) only, not in the hooks. A command that does not use a parameter is
//! timed once, not once per value as hyperfine does (see [`build`]).

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Shell metacharacters that mean something only to a shell; a command that
/// contains them unquoted is probably meant for `--shell`.
const SHELL_ONLY: &[char] = &['|', '&', ';', '<', '>', '$', '`', '*', '?', '(', ')'];

/// One command to time.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandSpec {
    /// The command line as the user wrote it.
    pub line: String,
    /// What is executed: the words of `line`, or `sh -c line`.
    pub argv: Vec<String>,
    /// Whether `line` runs through `sh -c`.
    pub shell: bool,
    /// The parameter values substituted into it (`--parameter-scan`/`-list`).
    pub parameters: ParameterValues,
    /// What tables and documents call it (`--command-name`), if not its line.
    pub name: Option<String>,
}

impl CommandSpec {
    /// Parses `line`; with `shell`, it is handed to `sh -c` unsplit.
    pub fn parse(line: &str, shell: bool) -> Result<Self> {
        let argv = if shell {
            vec!["sh".into(), "-c".into(), line.into()]
        } else {
            split_words(line)?
        };
        if argv.first().is_none_or(String::is_empty) {
            return Err(Error::Measure(format!(
                "command '{line}' is empty; give the program to run"
            )));
        }
        Ok(Self {
            line: line.to_string(),
            argv,
            shell,
            parameters: Vec::new(),
            name: None,
        })
    }

    /// Its name, or its command line when it has none.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.line)
    }

    /// Unquoted shell syntax in a command that runs without a shell (it would
    /// reach the program as plain arguments), for a warning.
    pub fn shell_syntax(&self) -> Option<char> {
        if self.shell {
            return None;
        }
        let mut quote = None;
        let mut escaped = false;
        for c in self.line.chars() {
            match (quote, c) {
                _ if escaped => escaped = false,
                (None | Some('"'), '\\') => escaped = true,
                (None, '\'' | '"') => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                (None, _) if SHELL_ONLY.contains(&c) => return Some(c),
                _ => {}
            }
        }
        None
    }

    /// The program's path: as given when it contains a `/` (relative to `cwd`
    /// when one is set), otherwise found in `path_var` (`$PATH`) like execvp
    /// does. An error names the program when it is missing or not executable.
    pub fn resolve(&self, path_var: Option<&OsString>, cwd: Option<&Path>) -> Result<PathBuf> {
        let program = &self.argv[0];
        let executable = |p: &Path| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        if program.contains('/') {
            let p = match cwd {
                Some(dir) if !program.starts_with('/') => dir.join(program),
                _ => PathBuf::from(program),
            };
            return if executable(&p) {
                Ok(p)
            } else if p.exists() {
                Err(Error::Measure(format!(
                    "command '{program}' is not an executable file"
                )))
            } else {
                Err(Error::Measure(format!(
                    "command '{program}' does not exist"
                )))
            };
        }
        let dirs = path_var.map(std::env::split_paths);
        dirs.into_iter()
            .flatten()
            .map(|d| d.join(program))
            .find(|p| executable(p))
            .ok_or_else(|| {
                Error::Measure(format!(
                    "command '{program}' was not found in PATH; give its path, or use --shell for \
                     shell built-ins"
                ))
            })
    }
}

/// (name, value) of each parameter substituted into one command.
pub type ParameterValues = Vec<(String, String)>;

/// A parameter of hyperfine's scans: `{name}` in a command stands for each value in turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub values: Vec<String>,
}

/// At most this many commands from a scan: each is timed in every round.
const MAX_EXPANDED: usize = 1_000;

impl Parameter {
    /// `--parameter-list NAME a,b,c`.
    pub fn list(name: &str, values: &str) -> Result<Self> {
        let values: Vec<String> = values.split(',').map(str::to_string).collect();
        Self::named(name, values)
    }

    /// `--parameter-scan NAME MIN MAX [-D STEP]`: MIN, MIN+STEP, … up to MAX
    /// (STEP 1 by default). Decimals are counted exactly (0.3 0.7 step 0.2 is
    /// 0.3, 0.5, 0.7) and printed with the most decimals of the three.
    pub fn scan(name: &str, min: &str, max: &str, step: Option<&str>) -> Result<Self> {
        let step = step.unwrap_or("1");
        let decimals = [min, max, step]
            .iter()
            .map(|v| v.split_once('.').map_or(0, |(_, f)| f.len()))
            .max()
            .unwrap_or(0);
        if decimals > 9 {
            return Err(Error::Measure(format!(
                "parameter scan {name}: at most 9 decimals, please"
            )));
        }
        let scaled = |what: &str, v: &str| -> Result<i64> {
            let bad = || {
                Error::Measure(format!(
                    "parameter scan {name}: {what} '{v}' is not a decimal number"
                ))
            };
            let (int, frac) = v.split_once('.').unwrap_or((v, ""));
            let digits = format!("{int}{frac:0<decimals$}");
            if frac.contains(['-', '+']) || int.is_empty() && frac.is_empty() {
                return Err(bad());
            }
            digits.parse::<i64>().map_err(|_| bad())
        };
        let (lo, hi, delta) = (
            scaled("MIN", min)?,
            scaled("MAX", max)?,
            scaled("step", step)?,
        );
        if delta <= 0 {
            return Err(Error::Measure(format!(
                "parameter scan {name}: the step must be above zero, not '{step}'"
            )));
        }
        if hi < lo {
            return Err(Error::Measure(format!(
                "parameter scan {name}: MAX {max} is below MIN {min}"
            )));
        }
        let count = (hi - lo) / delta + 1;
        if count as usize > MAX_EXPANDED {
            return Err(Error::Measure(format!(
                "parameter scan {name} has {count} values, more than {MAX_EXPANDED}; use a larger step"
            )));
        }
        let format = |v: i64| {
            if decimals == 0 {
                return v.to_string();
            }
            let scale = 10i64.pow(decimals as u32);
            let sign = if v < 0 { "-" } else { "" };
            let (int, frac) = (v.abs() / scale, v.abs() % scale);
            format!("{sign}{int}.{frac:0decimals$}")
        };
        let values = (0..count).map(|i| format(lo + i * delta)).collect();
        Self::named(name, values)
    }

    fn named(name: &str, values: Vec<String>) -> Result<Self> {
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(Error::Measure(format!(
                "parameter name '{name}' must be letters, digits and '_' (it is written {{{name}}} \
                 in the commands)"
            )));
        }
        if values.iter().any(String::is_empty) {
            return Err(Error::Measure(format!(
                "parameter {name} has an empty value; list values separated by single commas"
            )));
        }
        Ok(Self {
            name: name.to_string(),
            values,
        })
    }
}

/// The commands to time: `templates` expanded over `parameters` (when there
/// are any), parsed (through `sh -c` with `shell`), and named by `names`, one
/// per template (`{name}` substituted as in the commands).
pub fn build(
    templates: &[String],
    names: &[String],
    parameters: &[Parameter],
    shell: bool,
) -> Result<Vec<CommandSpec>> {
    if names.len() > templates.len() {
        return Err(Error::Measure(format!(
            "{} --command-name values for {} commands: give at most one name per command",
            names.len(),
            templates.len()
        )));
    }
    expand(templates, names, parameters)?
        .into_iter()
        .map(|(template, line, values)| {
            let mut spec = CommandSpec::parse(&line, shell)?;
            spec.name = names.get(template).map(|n| substitute(n, &values));
            spec.parameters = values;
            Ok(spec)
        })
        .collect()
}

/// The parameters that no command and no name uses (`{name}` appears
/// nowhere): each command is then timed once, not once per value.
pub fn unused<'a>(
    templates: &[String],
    names: &[String],
    parameters: &'a [Parameter],
) -> Vec<&'a str> {
    parameters
        .iter()
        .filter(|p| !templates.iter().chain(names).any(|t| uses(t, &p.name)))
        .map(|p| p.name.as_str())
        .collect()
}

/// The `{NAME}` placeholders (NAME a word: letters, digits, `_`) of the
/// commands and names that no parameter defines, each once: hyperfine
/// would run them as literal text, which is never what was meant.
pub fn undefined(templates: &[String], names: &[String], parameters: &[Parameter]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for text in templates.iter().chain(names) {
        for (start, _) in text.match_indices('{') {
            let rest = &text[start + 1..];
            let Some(end) = rest.find('}') else { continue };
            let name = &rest[..end];
            let word = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if word && !parameters.iter().any(|p| p.name == name) && !out.iter().any(|n| n == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Whether `text` has `{name}` in it.
fn uses(text: &str, name: &str) -> bool {
    text.contains(&format!("{{{name}}}"))
}

/// `text` with every `{name}` of `values` replaced by its value.
fn substitute(text: &str, values: &ParameterValues) -> String {
    values.iter().fold(text.to_string(), |text, (name, value)| {
        text.replace(&format!("{{{name}}}"), value)
    })
}

/// Every command of `templates` for every combination of the parameters'
/// values, `{name}` replaced by the value: combinations in hyperfine's order
/// (the first parameter varies fastest), each with every template in turn.
/// Unlike hyperfine, a command is timed once per distinct name: one whose
/// template and name (`names`, by template) do not use a parameter is not
/// repeated for its values, and records only the parameters it uses — its
/// runs would be the same measurement under the same name, which documents
/// and comparisons could not tell apart. Each result carries its template's
/// index and its values. Without parameters: the templates as they are.
fn expand(
    templates: &[String],
    names: &[String],
    parameters: &[Parameter],
) -> Result<Vec<(usize, String, ParameterValues)>> {
    for (i, p) in parameters.iter().enumerate() {
        if parameters[..i].iter().any(|q| q.name == p.name) {
            return Err(Error::Measure(format!(
                "parameter {} is given twice",
                p.name
            )));
        }
    }
    let combinations: usize = parameters.iter().map(|p| p.values.len()).product();
    if combinations.saturating_mul(templates.len()) > MAX_EXPANDED {
        return Err(Error::Measure(format!(
            "the parameters make {} commands, more than {MAX_EXPANDED}; use fewer values",
            combinations.saturating_mul(templates.len())
        )));
    }
    let mut out: Vec<(usize, String, ParameterValues)> = Vec::new();
    let mut labels: Vec<(usize, String)> = Vec::new();
    for k in 0..combinations {
        // Mixed-radix digits of k, the first parameter varying fastest.
        let mut rest = k;
        let chosen: ParameterValues = parameters
            .iter()
            .map(|p| {
                let value = p.values[rest % p.values.len()].clone();
                rest /= p.values.len();
                (p.name.clone(), value)
            })
            .collect();
        for (i, t) in templates.iter().enumerate() {
            let name = names.get(i);
            let used: ParameterValues = chosen
                .iter()
                .filter(|(p, _)| uses(t, p) || name.is_some_and(|n| uses(n, p)))
                .cloned()
                .collect();
            let line = substitute(t, &used);
            let label = name.map_or_else(|| line.clone(), |n| substitute(n, &used));
            if !labels.contains(&(i, label.clone())) {
                labels.push((i, label));
                out.push((i, line, used));
            }
        }
    }
    Ok(out)
}

/// Splits `line` into words like a POSIX shell (see the module comment).
pub fn split_words(line: &str) -> Result<Vec<String>> {
    let unterminated = |what: &str| {
        Error::Measure(format!(
            "command '{line}' has an unterminated {what}; close it, or quote it differently"
        ))
    };
    let mut words = Vec::new();
    let mut word = String::new();
    // True once the current word has begun, even if it is empty so far ('').
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(unterminated("single quote")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(unterminated("double quote")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(unterminated("double quote")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err(unterminated("escape (a trailing backslash)")),
            },
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<String> {
        split_words(s).unwrap()
    }

    fn values(p: Result<Parameter>) -> Vec<String> {
        p.unwrap().values
    }

    #[test]
    fn scans_count_decimals_exactly() {
        assert_eq!(
            values(Parameter::scan("n", "1", "4", None)),
            ["1", "2", "3", "4"]
        );
        assert_eq!(
            values(Parameter::scan("n", "0", "10", Some("5"))),
            ["0", "5", "10"]
        );
        // hyperfine's example; in binary floating point 0.3 + 0.2 + 0.2 misses 0.7.
        assert_eq!(
            values(Parameter::scan("t", "0.3", "0.7", Some("0.2"))),
            ["0.3", "0.5", "0.7"]
        );
        assert_eq!(
            values(Parameter::scan("t", "-1", "1", Some("0.5"))),
            ["-1.0", "-0.5", "0.0", "0.5", "1.0"]
        );
        // MAX need not be on the grid.
        assert_eq!(
            values(Parameter::scan("n", "1", "6", Some("2"))),
            ["1", "3", "5"]
        );
        for (min, max, step) in [
            ("1", "x", None),
            ("3", "1", None),
            ("1", "3", Some("0")),
            ("1", "3", Some("-1")),
            ("1e3", "2e3", None),
            ("0", "1000000", None),
        ] {
            assert!(
                Parameter::scan("n", min, max, step).is_err(),
                "{min} {max} {step:?}"
            );
        }
    }

    #[test]
    fn lists_and_names_are_checked() {
        assert_eq!(values(Parameter::list("cc", "gcc,clang")), ["gcc", "clang"]);
        assert!(Parameter::list("cc", "gcc,,clang").is_err());
        assert!(Parameter::list("c c", "a").is_err());
        assert!(Parameter::list("", "a").is_err());
    }

    #[test]
    fn expansion_substitutes_every_combination_in_hyperfine_order() {
        let params = [
            Parameter::list("cc", "gcc,clang").unwrap(),
            Parameter::list("o", "0,2").unwrap(),
        ];
        let templates = ["{cc} -O{o} a.c".to_string(), "true {cc}".to_string()];
        let expanded = expand(&templates, &[], &params).unwrap();
        let lines: Vec<&str> = expanded.iter().map(|(_, line, _)| line.as_str()).collect();
        // hyperfine 1.15's order (`-L cc gcc,clang -L o 0,2`): the first
        // parameter varies fastest; "true {cc}" does not use o: once per cc.
        assert_eq!(
            lines,
            [
                "gcc -O0 a.c",
                "true gcc",
                "clang -O0 a.c",
                "true clang",
                "gcc -O2 a.c",
                "clang -O2 a.c",
            ]
        );
        let (template, _, chosen) = &expanded[4];
        assert_eq!(*template, 0);
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(chosen, &[pair("cc", "gcc"), pair("o", "2")]);
        // A command records only the parameters it uses.
        assert_eq!(expanded[3].2, [pair("cc", "clang")]);
    }

    #[test]
    fn a_template_without_the_parameter_is_timed_once_and_unlabelled() {
        let n = Parameter::list("n", "1,2").unwrap();
        let templates = ["sleep {n}".to_string(), "sleep 0".to_string()];
        let expanded = expand(&templates, &[], std::slice::from_ref(&n)).unwrap();
        let lines: Vec<(usize, &str, usize)> = expanded
            .iter()
            .map(|(i, line, values)| (*i, line.as_str(), values.len()))
            .collect();
        assert_eq!(
            lines,
            [(0, "sleep 1", 1), (1, "sleep 0", 0), (0, "sleep 2", 1)]
        );
        // A name that uses it makes each value its own command.
        let names = ["a".to_string(), "zero {n}".to_string()];
        let built = build(&templates, &names, std::slice::from_ref(&n), false).unwrap();
        let labels: Vec<&str> = built.iter().map(CommandSpec::label).collect();
        assert_eq!(labels, ["a", "zero 1", "zero 2"]);
    }

    #[test]
    fn a_parameter_no_command_uses_times_each_command_once() {
        let n = Parameter::list("n", "1,2").unwrap();
        let templates = ["sleep 1".to_string()];
        let lines: Vec<String> = expand(&templates, &[], std::slice::from_ref(&n))
            .unwrap()
            .into_iter()
            .map(|(_, line, values)| format!("{line} {values:?}"))
            .collect();
        assert_eq!(lines, ["sleep 1 []"]);
        assert_eq!(unused(&templates, &[], std::slice::from_ref(&n)), ["n"]);
        assert!(unused(&templates, &["{n}".into()], std::slice::from_ref(&n)).is_empty());
        assert!(expand(&["sleep {n}".to_string()], &[], &[n.clone(), n]).is_err());
    }

    #[test]
    fn blanks_separate_words() {
        assert_eq!(split("make  -j1\tkernel/\n"), ["make", "-j1", "kernel/"]);
        assert!(split("   ").is_empty());
    }

    #[test]
    fn quotes_group_and_keep_literally() {
        assert_eq!(
            split("sh -c 'echo $HOME | wc'"),
            ["sh", "-c", "echo $HOME | wc"]
        );
        assert_eq!(split(r#"grep "a b" f"#), ["grep", "a b", "f"]);
        assert_eq!(split(r#"a"b"'c'd"#), ["abcd"]);
        assert_eq!(split(r#"echo 'it'\''s'"#), ["echo", "it's"]);
    }

    #[test]
    fn empty_quotes_are_empty_words() {
        assert_eq!(split("prog '' \"\" x"), ["prog", "", "", "x"]);
        assert_eq!(split("''"), [""]);
    }

    #[test]
    fn escapes_follow_the_shell() {
        assert_eq!(split(r"a\ b c\\d"), ["a b", r"c\d"]);
        assert_eq!(split(r#""q\"x\\y\$z\n""#), [r#"q"x\y$z\n"#]);
        assert_eq!(split("a\\\nb"), ["ab"]);
        assert_eq!(split(r"'back\slash'"), [r"back\slash"]);
    }

    #[test]
    fn unterminated_quotes_and_escapes_are_errors() {
        for bad in ["echo 'x", "echo \"x", "echo x\\", "\"a\\"] {
            let e = split_words(bad).unwrap_err().to_string();
            assert!(e.contains("unterminated"), "{bad}: {e}");
        }
    }

    #[test]
    fn shell_mode_passes_the_line_whole() {
        let c = CommandSpec::parse("sleep 1 | cat", true).unwrap();
        assert_eq!(c.argv, ["sh", "-c", "sleep 1 | cat"]);
        assert_eq!(c.shell_syntax(), None);
    }

    #[test]
    fn unquoted_shell_syntax_is_noticed() {
        let syntax = |s: &str| CommandSpec::parse(s, false).unwrap().shell_syntax();
        assert_eq!(syntax("ls | wc"), Some('|'));
        assert_eq!(syntax("echo $HOME"), Some('$'));
        assert_eq!(syntax("echo '$HOME' \"a|b\" c\\;"), None);
        assert_eq!(syntax("make -j1"), None);
    }

    #[test]
    fn empty_commands_are_refused() {
        assert!(CommandSpec::parse("", false).is_err());
        assert!(CommandSpec::parse("'' x", false).is_err());
    }

    #[test]
    fn programs_resolve_through_path_or_not_at_all() {
        let path = Some(OsString::from("/nonexistent:/bin:/usr/bin"));
        let sh = CommandSpec::parse("sh -c true", false).unwrap();
        assert!(sh.resolve(path.as_ref(), None).unwrap().ends_with("sh"));
        let e = CommandSpec::parse("no-such-program-xyz", false)
            .unwrap()
            .resolve(path.as_ref(), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("'no-such-program-xyz' was not found in PATH"),
            "{e}"
        );
        let e = CommandSpec::parse("/no/such/prog", false)
            .unwrap()
            .resolve(path.as_ref(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("'/no/such/prog' does not exist"), "{e}");
        let plain = tempfile::NamedTempFile::new().unwrap(); // mode 0600
        let e = CommandSpec::parse(&plain.path().display().to_string(), false)
            .unwrap()
            .resolve(path.as_ref(), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not an executable file"), "{e}");
    }
}
