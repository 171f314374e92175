//! The documentation checked against the repository and the command line:
//! every relative link in README.md, CONTRIBUTING.md and docs/**/*.md points
//! at a file that exists (and a `#anchor` into a Markdown file at one of its
//! headings, slugged as GitHub does), and every `osbench …` command line in
//! the code blocks of README.md, CONTRIBUTING.md and docs/guide/*.md parses
//! with the current command line. Parsing runs the binary with
//! `OSBENCH_PARSE_ONLY=1` (src/cli/mod.rs), which stops after clap: nothing
//! is measured, stored or written. A block that shows a wrong command on
//! purpose is marked `<!-- no-check -->` on a line before its fence.
//! Self-contained on purpose: no tests/common, no other test file.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// Marks a code block whose command lines are not checked (a wrong example).
const NO_CHECK: &str = "<!-- no-check -->";
/// What a shell variable or `$(…)` becomes: one word, which every option
/// that takes a path, a number or a name accepts.
const PLACEHOLDER: &str = "1";

/// README.md, CONTRIBUTING.md and every Markdown file under docs/.
fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let root = Path::new(ROOT);
    let mut files: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md"]
        .iter()
        .map(|f| root.join(f))
        .filter(|p| p.exists())
        .collect();
    walk(&root.join("docs"), &mut files);
    files.sort();
    files
}

/// The files whose code blocks' command lines are checked.
fn command_files() -> Vec<PathBuf> {
    markdown_files()
        .into_iter()
        .filter(|p| {
            let rel = p.strip_prefix(ROOT).unwrap();
            rel.parent() == Some(Path::new("")) || rel.starts_with("docs/guide")
        })
        .collect()
}

/// A line of a Markdown file and whether it is inside a fenced code block
/// (the fence lines themselves count as inside).
fn lines_with_fences(text: &str) -> Vec<(&str, bool)> {
    let mut inside = false;
    text.lines()
        .map(|line| {
            let fence = line.trim_start().starts_with("```");
            if fence {
                inside = !inside;
                return (line, true);
            }
            (line, inside)
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces
/// as hyphens; a repeated slug gets `-1`, `-2`, ….
fn slugs(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for (line, code) in lines_with_fences(text) {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if code || !title.starts_with(' ') {
            continue;
        }
        let title = unlink(title.trim());
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 1;
        while !seen.insert(unique.clone()) {
            unique = format!("{slug}-{n}");
            n += 1;
        }
    }
    seen
}

/// A heading's text as rendered: `[text](target)` becomes `text`.
fn unlink(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A line without its inline code spans (`…`), where `](` is not a link.
fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The link targets of a Markdown text, outside code: `[text](target)`.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    for (n, (line, code)) in lines_with_fences(text).into_iter().enumerate() {
        if code {
            continue;
        }
        let line = without_code_spans(line);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            targets.push((n + 1, target.trim_matches(['<', '>']).to_string()));
            rest = &rest[end..];
        }
    }
    targets
}

/// What is wrong with one relative link of `file`, if anything.
fn broken(file: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(path)
    };
    if !resolved.exists() {
        return Some(format!("{} does not exist", resolved.display()));
    }
    let anchor = anchor.filter(|_| resolved.extension().is_some_and(|e| e == "md"))?;
    let headings = slugs(&fs::read_to_string(&resolved).unwrap());
    (!headings.contains(anchor)).then(|| {
        format!(
            "{} has no heading #{anchor} (its anchors: {})",
            resolved.display(),
            headings.into_iter().collect::<Vec<_>>().join(", ")
        )
    })
}

#[test]
fn every_relative_link_resolves() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let text = fs::read_to_string(&file).unwrap();
        for (line, target) in link_targets(&text) {
            checked += 1;
            if let Some(why) = broken(&file, &target) {
                let rel = file.strip_prefix(ROOT).unwrap().display();
                problems.push(format!("{rel}:{line}: ({target}): {why}"));
            }
        }
    }
    eprintln!("links checked: {checked}");
    assert!(
        checked > 50,
        "only {checked} links found: is the link scanner broken?"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn slugs_are_githubs() {
    let slugs = slugs("# Dashboards: the `osbench_results` view\n## A (b), c\n## A (b), c\n");
    let want = ["dashboards-the-osbench_results-view", "a-b-c", "a-b-c-1"];
    assert_eq!(slugs, want.iter().map(|s| s.to_string()).collect());
}

/// A command line found in a code block: where, and its words.
struct Found {
    at: String,
    line: String,
    words: Result<Vec<String>, String>,
}

/// The code blocks of a Markdown text not marked [`NO_CHECK`]: the number
/// of each block's first line, its language (the fence's info string) and
/// its lines (fences left out).
fn code_blocks(text: &str) -> Vec<(usize, &str, Vec<&str>)> {
    let lines = lines_with_fences(text);
    let mut blocks = Vec::new();
    let mut current: Option<(usize, &str, Vec<&str>)> = None;
    for (n, &(line, _)) in lines.iter().enumerate() {
        let Some(lang) = line.trim_start().strip_prefix("```") else {
            if let Some((_, _, block)) = current.as_mut() {
                block.push(line);
            }
            continue;
        };
        match current.take() {
            Some(block) => blocks.push(block),
            None => current = Some((n + 2, lang.trim(), Vec::new())),
        }
        if current.is_some() && marked(&lines[..n]) {
            current = Some((0, "", Vec::new()));
        }
    }
    blocks.retain(|(start, _, _)| *start != 0);
    blocks
}

/// The `osbench …` command lines of a Markdown text's code blocks, `\`
/// continuations joined. In a transcript (a block with `$ ` prompts) only
/// the prompted lines and their `> ` continuations are shell; the rest is
/// output.
fn command_lines(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (first, lang, block) in code_blocks(text) {
        let transcript = block.iter().any(|l| l.trim_start().starts_with("$ "));
        if !transcript && !["sh", "bash", "shell", "console"].contains(&lang) {
            continue; // output, TOML, SQL
        }
        let mut n = 0;
        while n < block.len() {
            let start = first + n;
            let mut joined = block[n].trim().to_string();
            while joined.ends_with('\\') && n + 1 < block.len() {
                joined.pop();
                n += 1;
                let next = block[n].trim();
                joined.push(' ');
                joined.push_str(
                    next.strip_prefix("> ")
                        .filter(|_| transcript)
                        .unwrap_or(next),
                );
            }
            n += 1;
            let shell = match ["$ ", "> "].iter().find_map(|p| joined.strip_prefix(p)) {
                Some(shell) => shell,
                None if transcript => continue,
                None => &joined,
            };
            let shell = shell.replace("cargo run --release -- ", "osbench ");
            found.extend(commands_in(&shell).into_iter().map(|c| (start, c)));
        }
    }
    found
}

/// The `osbench …` commands of one shell line: each from where it starts
/// a command (the line's start, after `;`, `&&`, `|`, `do`, `then`, `sudo`,
/// variable assignments or a cron schedule) to the line's end — or, inside
/// a quoted `sh -c '…'`, to its closing quote. Comments are left out.
fn commands_in(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut quote: Option<(char, usize)> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        let word_start = i == 0 || line[..i].ends_with([' ', ';', '(', '\'', '"']);
        if word_start && !escaped && line[i..].starts_with("osbench ") {
            let from = quote.map_or(0, |(_, at)| at + 1);
            if starts_command(line[from..i].trim_end()) {
                let end = match quote {
                    Some((q, _)) => closing(line, i, q),
                    None => line.len(),
                };
                found.push(line[i..end].to_string());
            }
        }
        match (c, quote) {
            _ if escaped => escaped = false,
            ('\\', q) if q.is_none_or(|(q, _)| q == '"') => escaped = true,
            ('#', None) if word_start => break,
            ('\'' | '"', None) => quote = Some((c, i)),
            (c, Some((q, _))) if c == q => quote = None,
            _ => {}
        }
    }
    found
}

/// Where the quote `q` that is open at `from` closes (the line's end if it
/// does not).
fn closing(line: &str, from: usize, q: char) -> usize {
    let mut escaped = false;
    for (i, c) in line[from..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if q == '"' => escaped = true,
            c if c == q => return from + i,
            _ => {}
        }
    }
    line.len()
}

/// Whether a command starts after `prefix` (the shell text before it).
fn starts_command(prefix: &str) -> bool {
    let words: Vec<&str> = prefix.split_whitespace().collect();
    let assignment = |w: &&str| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    let cron = words.len() == 5
        && words
            .iter()
            .all(|w| w.chars().all(|c| c.is_ascii_digit() || "*/,-".contains(c)));
    prefix.is_empty()
        || prefix.ends_with([';', '&', '|', '('])
        || words
            .last()
            .is_some_and(|w| ["do", "then", "else", "sudo", "exec"].contains(w))
        || words.iter().all(assignment)
        || cron
}

#[test]
fn commands_are_found_where_the_shell_starts_them() {
    let found = |line: &str| commands_in(line);
    assert_eq!(
        found("osbench run x # osbench y"),
        ["osbench run x # osbench y"]
    );
    assert_eq!(found("sleep 1; osbench jobs"), ["osbench jobs"]);
    assert_eq!(found("X=1 Y=2 osbench run"), ["osbench run"]);
    assert_eq!(
        found("0 6 * * *  osbench regressions"),
        ["osbench regressions"]
    );
    assert_eq!(
        found("sh -c 'make && osbench time \"a b\" ./p' x"),
        ["osbench time \"a b\" ./p"]
    );
    assert!(found("Dismiss one with osbench regressions --ack ID").is_empty());
    assert!(found("ssh HOST osbench agent").is_empty());
}

/// Whether the last non-blank line before a fence is the [`NO_CHECK`] mark.
fn marked(before: &[(&str, bool)]) -> bool {
    before
        .iter()
        .rev()
        .map(|l| l.0.trim())
        .find(|l| !l.is_empty())
        .is_some_and(|l| l == NO_CHECK)
}

/// Reads a `$…` expansion at the start of `chars` (after the `$`):
/// `$NAME`, `${…}` or `$(…)`, nested parentheses included.
fn skip_expansion(chars: &mut std::iter::Peekable<std::str::Chars>) {
    match chars.peek() {
        Some('(') | Some('{') => {
            let (open, close) = if chars.next() == Some('(') {
                ('(', ')')
            } else {
                ('{', '}')
            };
            let mut depth = 1;
            for c in chars.by_ref() {
                depth += i32::from(c == open) - i32::from(c == close);
                if depth == 0 {
                    break;
                }
            }
        }
        _ => {
            while chars
                .peek()
                .is_some_and(|c| c.is_alphanumeric() || *c == '_')
            {
                chars.next();
            }
        }
    }
}

/// A shell line's first command as words: quotes and backslashes as sh
/// reads them, `$VAR`/`$(…)` as [`PLACEHOLDER`], a comment dropped, the
/// command ended at `|`, `;` or `&`, redirections (`> FILE`, `2>&1`) left
/// out. An unterminated quote is an error.
fn split(line: &str) -> Result<Vec<String>, String> {
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut redirect = false;
    let mut chars = line.chars().peekable();
    let push = |word: &mut Option<String>, words: &mut Vec<String>, redirect: &mut bool| {
        if let Some(w) = word.take()
            && !std::mem::take(redirect)
        {
            words.push(w);
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => push(&mut word, &mut words, &mut redirect),
            '#' if word.is_none() => break,
            '|' | ';' | '&' => break,
            '>' | '<' => {
                if word
                    .as_deref()
                    .is_some_and(|w| w.chars().all(|c| c.is_ascii_digit()))
                {
                    word = None;
                } else {
                    push(&mut word, &mut words, &mut redirect);
                }
                while chars.next_if(|c| matches!(c, '>' | '&')).is_some() {}
                redirect = true;
                while chars.next_if(|c| *c == ' ').is_some() {}
            }
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("unterminated '".into()),
                    }
                }
            }
            '"' => double_quoted(&mut chars, word.get_or_insert_with(String::new))?,
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            '$' => {
                skip_expansion(&mut chars);
                word.get_or_insert_with(String::new).push_str(PLACEHOLDER);
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    push(&mut word, &mut words, &mut redirect);
    Ok(words)
}

/// The rest of a `"…"` word: `\"`, `\\`, `\$` escaped, `$…` expanded.
fn double_quoted(
    chars: &mut std::iter::Peekable<std::str::Chars>,
    word: &mut String,
) -> Result<(), String> {
    loop {
        match chars.next() {
            Some('"') => return Ok(()),
            Some('\\') if chars.peek().is_some_and(|c| matches!(c, '"' | '\\' | '$')) => {
                word.extend(chars.next())
            }
            Some('$') => {
                skip_expansion(chars);
                word.push_str(PLACEHOLDER);
            }
            Some(c) => word.push(c),
            None => return Err("unterminated \"".into()),
        }
    }
}

#[test]
fn the_splitter_reads_lines_as_sh_does() {
    let cases: [(&str, &[&str]); 7] = [
        (
            "osbench run a 'b c' \"d e\"",
            &["osbench", "run", "a", "b c", "d e"],
        ),
        ("osbench run x   # a comment", &["osbench", "run", "x"]),
        (
            "osbench run --json - | jq .x",
            &["osbench", "run", "--json", "-"],
        ),
        (
            "osbench completions bash > /tmp/f",
            &["osbench", "completions", "bash"],
        ),
        ("osbench x 2>&1 --y", &["osbench", "x", "--y"]),
        (
            "osbench run --meta c=$(git rev-parse HEAD)",
            &["osbench", "run", "--meta", "c=1"],
        ),
        (
            "osbench run --config a='echo 1 > /f' \"$A\"",
            &["osbench", "run", "--config", "a=echo 1 > /f", "1"],
        ),
    ];
    for (line, want) in cases {
        assert_eq!(split(line).unwrap(), want, "{line}");
    }
    assert!(split("osbench run 'open").is_err());
}

/// Every command line of the checked files, split.
fn all_command_lines() -> Vec<Found> {
    let mut all = Vec::new();
    for file in command_files() {
        let rel = file.strip_prefix(ROOT).unwrap().display().to_string();
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in command_lines(&text) {
            let words = split(&line);
            all.push(Found {
                at: format!("{rel}:{n}"),
                line,
                words,
            });
        }
    }
    all
}

/// Whether osbench parses `words` (after `osbench`), and clap's message if not.
fn parses(words: &[String]) -> Result<(), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_osbench"))
        .args(&words[1..])
        .env("OSBENCH_PARSE_ONLY", "1")
        .env(
            "OSBENCH_STORE",
            "/nonexistent/parse-only-never-opens-it.sqlite",
        )
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    if out.status.success() {
        return Ok(());
    }
    Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
}

#[test]
fn every_documented_command_line_parses() {
    let (mut checked, mut skipped, mut failures) = (0, Vec::new(), Vec::new());
    for found in all_command_lines() {
        let words = match found.words {
            Ok(words) => words,
            Err(why) => {
                skipped.push(format!("{}: {why}: {}", found.at, found.line));
                continue;
            }
        };
        checked += 1;
        if let Err(message) = parses(&words) {
            failures.push(format!("{}: {}\n    {message}", found.at, found.line));
        }
    }
    eprintln!(
        "command lines checked: {checked}, skipped: {}",
        skipped.len()
    );
    for s in &skipped {
        eprintln!("skipped {s}");
    }
    assert!(
        checked > 100,
        "only {checked} command lines found: is the scanner broken?"
    );
    assert!(
        skipped.len() <= 3,
        "too many command lines skipped:\n{}",
        skipped.join("\n")
    );
    assert!(
        failures.is_empty(),
        "documented command lines that no longer parse (fix the docs, or mark a block that \
         shows a wrong command on purpose with {NO_CHECK} before its fence):\n{}",
        failures.join("\n")
    );
}

#[test]
fn a_marked_block_and_output_are_not_checked() {
    let text = "```sh\nosbench run a\n```\n\n<!-- no-check -->\n```sh\nosbench run --wrong\n```\n\
                ```\nosbench run b\n```\n```\n$ osbench run c\nosbench regressions: 1 slowdown\n```\n";
    let lines: Vec<String> = command_lines(text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(lines, ["osbench run a", "osbench run c"]);
}
