//! Whole commands (`osbench time`): what to run, parsed from one string per
//! command the way hyperfine users write them.
//!
//! A command line is split into words like a POSIX shell splits them — blanks
//! separate words, single quotes keep everything literal, double quotes keep
//! everything but `\"`, `\\`, `\$` and `` \` ``, a backslash outside quotes
//! escapes the next character, `''` is an empty word — and then executed
//! directly, with no shell in between (hyperfine's `-N`). Left out on purpose:
//! variables, globs, pipes and redirections; `--shell` runs the line with
//! `sh -c` for those. Timing the runs is `measure::command`'s job.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The benchmark name of command series in documents.
pub const BENCH: &str = "command";

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
        })
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
