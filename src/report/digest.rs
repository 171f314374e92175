//! The warning digest: every distinct warning of a run once, with the cases
//! it concerns and each case's own numbers, instead of one line per case and
//! round. The terminal's end-of-run digest (`cli::progress`), the HTML
//! report and the Markdown export all render [`digest`]'s groups, so the
//! three say the same.
//!
//! Two warnings are the same when they differ only in their numbers
//! ([`super::blank_numbers`]); within a group, the numbers that differ
//! between cases are cut out of the wording ("CV …") and shown beside each
//! case ("ipc pipe 77.4%"). Left out: run-level findings (load, busy
//! processes), which are said when found and are not per case.

use crate::document::Series;

/// One case's warning, as a run gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseWarning {
    /// `ipc pipe`, or `ipc pipe [off]` with configurations.
    pub case: String,
    /// The warning in full.
    pub text: String,
    /// In how many of the case's rounds or invocations it came.
    pub count: usize,
    /// How many rounds or invocations the case had (1: a single series).
    pub of: usize,
}

/// A warning and the cases that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct WarningGroup {
    /// The wording, with the numbers that differ between cases cut out ("…").
    pub wording: String,
    /// The advice after the first "; " of the wording, if any.
    pub advice: Option<String>,
    /// Each case with its own numbers ("ipc pipe 77.4%") and its rounds ("2 of 6 rounds").
    pub cases: Vec<String>,
}

/// Groups `warnings` (in the order given) into one entry per distinct warning.
/// `rounds` names what `of` counts ("rounds", "invocations").
pub fn digest(warnings: &[CaseWarning], rounds: &str) -> Vec<WarningGroup> {
    let mut kinds: Vec<(String, Vec<&CaseWarning>)> = Vec::new();
    for w in warnings {
        let kind = super::blank_numbers(&w.text);
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, members)) => members.push(w),
            None => kinds.push((kind, vec![w])),
        }
    }
    kinds
        .into_iter()
        .map(|(_, members)| group(&members, rounds))
        .collect()
}

/// One group: the wording with the differing numbers cut out, each case with them.
fn group(members: &[&CaseWarning], rounds: &str) -> WarningGroup {
    let text = &members[0].text;
    let short = text.find("; ").unwrap_or(text.len());
    let advice = text.get(short + 2..).map(str::to_string);
    let varying = varying_numbers(members, short);
    let wording = match varying {
        Some((a, b)) => {
            let (from, to) = own_span(text, a, b);
            format!("{}…{}", &text[..from], &text[to..short])
        }
        None => text[..short].to_string(),
    };
    let cases = members
        .iter()
        .map(|w| {
            let mut case = w.case.clone();
            if let Some((a, b)) = varying {
                let (from, to) = own_span(&w.text, a, b);
                case = format!("{case} {}", &w.text[from..to]);
            }
            if w.of > 1 {
                case = format!("{case} ({} of {} {rounds})", w.count, w.of);
            }
            case
        })
        .collect();
    WarningGroup {
        wording,
        advice,
        cases,
    }
}

/// The bytes of `text` from its `a`-th number's start to its `b`-th
/// number's end, with the unit or percent sign that follows the last one
/// ("77.4%", "10 of 21").
fn own_span(text: &str, a: usize, b: usize) -> (usize, usize) {
    let found = numbers(text);
    let (from, end) = (found[a].0, found[b].1);
    let tail = text[end..]
        .find(|c: char| c.is_whitespace() || matches!(c, ')' | ',' | ';' | ':'))
        .unwrap_or(text.len() - end);
    (from, end + tail)
}

/// The first and last of the numbers that differ between `members` in the
/// first `short` bytes of their wording (the same warning has the same
/// count of numbers in each); `None` when they have the same numbers.
fn varying_numbers(members: &[&CaseWarning], short: usize) -> Option<(usize, usize)> {
    let text = &members[0].text;
    let found = numbers(text);
    let values: Vec<Vec<&str>> = members
        .iter()
        .map(|w| {
            numbers(&w.text)
                .iter()
                .map(|&(a, b)| &w.text[a..b])
                .collect()
        })
        .collect();
    let in_short = found.iter().take_while(|n| n.1 <= short).count();
    let differs: Vec<usize> = (0..in_short)
        .filter(|&i| values.iter().any(|v| v.get(i) != values[0].get(i)))
        .collect();
    let (first, last) = (*differs.first()?, *differs.last()?);
    // Widened to every number of the phrases they are in ("(5 near 1.2, 6
    // near 3.4 µs)": the counts go with the values even where they agree).
    let phrase = |i: usize| {
        text[..found[i].0]
            .rfind(['(', ':', ';'])
            .map_or(0, |at| at + 1)
    };
    let first = (0..first)
        .find(|&i| phrase(i) == phrase(first))
        .unwrap_or(first);
    let last = (last + 1..in_short)
        .take_while(|&i| phrase(i) == phrase(last))
        .last()
        .unwrap_or(last);
    Some((first, last))
}

/// The byte ranges of the numbers in `text` (digits, with a decimal point inside).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let inside = b.is_ascii_digit()
            || (b == b'.' && start.is_some() && bytes.get(i + 1).is_some_and(u8::is_ascii_digit));
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// The case warnings of a document's `series`: each series' warnings once,
/// with the rounds or invocations that gave it (a merged series prefixes
/// later rounds' warnings with "round N: " or "invocation N: ").
pub fn case_warnings(series: &[Series]) -> Vec<CaseWarning> {
    series.iter().flat_map(series_warnings).collect()
}

fn series_warnings(s: &Series) -> Vec<CaseWarning> {
    let of = s.rounds.len().max(s.invocations.len()).max(1);
    let case = s.key.to_string();
    let mut out: Vec<(String, CaseWarning)> = Vec::new();
    for w in &s.warnings {
        let text = strip_repeat_label(w);
        let kind = super::blank_numbers(text);
        match out.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, seen)) => seen.count += 1,
            None => out.push((
                kind,
                CaseWarning {
                    case: case.clone(),
                    text: text.to_string(),
                    count: 1,
                    of,
                },
            )),
        }
    }
    out.into_iter().map(|(_, w)| w).collect()
}

/// `w` without a "round 3: " or "invocation 2: " label.
fn strip_repeat_label(w: &str) -> &str {
    for label in ["round ", "invocation "] {
        if let Some(rest) = w.strip_prefix(label)
            && let Some((n, text)) = rest.split_once(": ")
            && n.bytes().all(|b| b.is_ascii_digit())
        {
            return text;
        }
    }
    w
}

/// The groups as lines of text: "wording: case, case — advice", each one
/// line (callers wrap them to a width).
pub fn group_lines(groups: &[WarningGroup]) -> Vec<String> {
    groups
        .iter()
        .map(|g| {
            let advice = g
                .advice
                .as_ref()
                .map(|a| format!(" — {a}"))
                .unwrap_or_default();
            format!("{}: {}{advice}", g.wording, g.cases.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warned(case: &str, text: &str) -> CaseWarning {
        CaseWarning {
            case: case.into(),
            text: text.into(),
            count: 1,
            of: 1,
        }
    }

    fn spread(cv: &str) -> String {
        format!("high spread between samples (CV {cv}%); re-run or take more --samples")
    }

    #[test]
    fn a_warning_of_several_cases_is_said_once_with_each_cases_numbers() {
        let aside =
            |n, m| format!("{n} of {m} samples set aside: outside 0.9–1.5 × the target time");
        let warnings = [
            warned("ipc pipe", &spread("77.4")),
            warned("ipc pipe", &aside(10, 21)),
            warned("ctx 2p/0K", &spread("16.1")),
            warned("proc fork", &aside(5, 16)),
        ];
        let lines = group_lines(&digest(&warnings, "rounds"));
        assert_eq!(
            lines,
            [
                "high spread between samples (CV …): ipc pipe 77.4%, ctx 2p/0K 16.1% — re-run \
                 or take more --samples",
                "… samples set aside: outside 0.9–1.5 × the target time: ipc pipe 10 of 21, \
                 proc fork 5 of 16",
            ]
        );
    }

    #[test]
    fn one_case_or_equal_numbers_keep_the_wording_whole() {
        let lines = group_lines(&digest(&[warned("ctx 2p/0K", &spread("16.1"))], "rounds"));
        assert_eq!(
            lines,
            ["high spread between samples (CV 16.1%): ctx 2p/0K — re-run or take more --samples"]
        );
        let same = [warned("a x", "interrupted"), warned("b y", "interrupted")];
        assert_eq!(
            group_lines(&digest(&same, "rounds")),
            ["interrupted: a x, b y"]
        );
    }

    #[test]
    fn a_documents_rounds_are_counted_and_configurations_kept() {
        let summary = crate::stats::summarize(&[1.0, 2.0]).unwrap();
        let mut s = Series::new(
            "ipc",
            "pipe".into(),
            crate::document::Unit::Us,
            vec![1.0],
            summary,
        );
        s.key.config = "off".into();
        s.rounds = vec![1.0, 1.1, 1.2];
        s.warnings = vec![spread("12.0"), format!("round 3: {}", spread("30.5"))];
        let lines = group_lines(&digest(&case_warnings(&[s]), "rounds"));
        assert_eq!(
            lines,
            [
                "high spread between samples (CV 12.0%): ipc pipe [off] (2 of 3 rounds) — re-run or \
              take more --samples"
            ]
        );
    }
}
