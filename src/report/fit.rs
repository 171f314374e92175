//! Tables and prose fitted to a terminal's width: headers and text cells
//! wrap within their columns, a long last text column (the results' `op`)
//! moves to a legend under the table when it has too little room, and
//! overlong prose lines wrap at words with a hanging indent. Lines break at
//! spaces only: a word is cut (after a `/`, `,` or `|`, else anywhere) only
//! when it is wider than the line or column it is in. Without a width
//! (a pipe, a file, `--wide`) nothing changes: one line per row, as
//! `report::align` lays it out. Left out: finding the width (the command
//! line asks the terminal, as clap does for `--help`) and colour.

use super::display_width;
use super::layout::Table;

/// The narrowest a wrapping text column gets.
const TEXT_FLOOR: usize = 10;
/// The narrowest the last text column may wrap to before it moves to a legend.
const LAST_FLOOR: usize = 24;

impl Table {
    /// The table laid out for `width` columns (`None`: unlimited, one line per row).
    pub fn to_text_within(&self, width: Option<usize>) -> String {
        let grid = Grid {
            header: self.header.clone(),
            numeric: self.numeric.clone(),
            rows: self.rows.clone(),
            cases: self.cases.clone(),
        };
        match width {
            Some(w) if line_width(&natural_widths(&grid), grid.header.len()) > w => fit(&grid, w),
            _ => self.to_text(),
        }
    }
}

/// Columns whose headers are not known until run time (`history --by
/// host`'s hosts) laid out for `width` columns as [`Table::to_text_within`]
/// lays out a table (`None`: one line per row, as `report::align`).
pub fn columns_within(
    header: &[&str],
    numeric: &[bool],
    rows: &[Vec<String>],
    width: Option<usize>,
) -> String {
    let grid = Grid {
        header: header.to_vec(),
        numeric: numeric.to_vec(),
        rows: rows.to_vec(),
        cases: Vec::new(),
    };
    match width {
        Some(w) if line_width(&natural_widths(&grid), grid.header.len()) > w => fit(&grid, w),
        _ => super::align(header, numeric, rows),
    }
}

/// A [`Table`] whose headers may be borrowed for less than the program's
/// life: what the layout below works on.
struct Grid<'a> {
    header: Vec<&'a str>,
    numeric: Vec<bool>,
    rows: Vec<Vec<String>>,
    cases: Vec<(String, String)>,
}

/// `text`'s lines, each longer than `width` (when given) wrapped at words,
/// its continuation lines indented two more than the line itself.
pub fn wrap_prose(text: &str, width: Option<usize>) -> String {
    wrap_lines(text, width, |indent| indent + 2)
}

/// `text`'s lines, each longer than `width` (when given) wrapped at words,
/// its continuation lines indented `hang` columns (at most half the width):
/// `key  value` lines whose values continue under the values.
pub fn wrap_hanging(text: &str, width: Option<usize>, hang: usize) -> String {
    wrap_lines(text, width, |_| hang)
}

/// [`wrap_prose`] with the continuation lines' indent `hang` gives for a
/// line's own.
fn wrap_lines(text: &str, width: Option<usize>, hang: impl Fn(usize) -> usize) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if display_width(body) <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let hang = " ".repeat(hang(indent).min(width / 2));
        let widths = (
            width.saturating_sub(indent),
            width.saturating_sub(hang.len()),
        );
        let lines = wrap_pieces(body.trim_start(), widths, false);
        for (i, piece) in lines.iter().enumerate() {
            if i == 0 || !piece.is_empty() {
                out.push_str(if i == 0 { &body[..indent] } else { &hang });
                out.push_str(piece);
                out.push('\n');
            }
        }
        if newline.is_empty() && out.ends_with('\n') {
            out.pop();
        }
    }
    out
}

/// Each column's widest cell or header.
fn natural_widths(t: &Grid) -> Vec<usize> {
    (0..t.header.len())
        .map(|i| {
            t.rows
                .iter()
                .map(|r| display_width(&r[i]))
                .chain([display_width(t.header[i])])
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// A line of columns this wide, two spaces apart.
fn line_width(widths: &[usize], columns: usize) -> usize {
    spaced_width(widths, columns, 2)
}

/// A line of columns this wide, `sep` spaces apart.
fn spaced_width(widths: &[usize], columns: usize, sep: usize) -> usize {
    widths.iter().sum::<usize>() + sep * columns.saturating_sub(1)
}

/// How tightly a table is laid out, the loosest that fits first.
#[derive(Clone, Copy)]
struct Squeeze {
    /// Intervals and spreads without spaces (`1.2–1.5`, `1.3±0.1`).
    tight_numbers: bool,
    /// Numbers wrap at spaces (`1.2–1.5` above `(75% only)`).
    wrap_numbers: bool,
    /// Spaces between columns.
    sep: usize,
}

#[rustfmt::skip]
const SQUEEZES: [Squeeze; 4] = [
    Squeeze { tight_numbers: false, wrap_numbers: false, sep: 2 },
    Squeeze { tight_numbers: true, wrap_numbers: false, sep: 2 },
    Squeeze { tight_numbers: true, wrap_numbers: true, sep: 2 },
    Squeeze { tight_numbers: true, wrap_numbers: true, sep: 1 },
];

/// The table in `width` columns, squeezed no more than it needs: headers
/// wrapped at words, the last text column narrowed (or moved to a legend),
/// the other text columns narrowed, each no further than its floor; then
/// numbers tightened and wrapped, then columns one space apart; and when
/// even that is too wide, the columns in groups one under the other, each
/// group with the row's names (its first columns) again.
fn fit(t: &Grid, width: usize) -> String {
    let laid = SQUEEZES.iter().find_map(|&squeeze| {
        let layout = layout(t, width, squeeze);
        let fits = spaced_width(&layout.widths, layout.widths.len(), squeeze.sep) <= width;
        fits.then_some((layout, squeeze))
    });
    let Some((layout, squeeze)) = laid else {
        return in_groups(t, width);
    };
    let columns = layout.widths.len();
    let mut out = String::new();
    let header: Vec<String> = t.header[..columns].iter().map(|h| h.to_string()).collect();
    let row = |out: &mut String, cells: &[String], header: bool| {
        let wrap_numbers = header || squeeze.wrap_numbers;
        push_row(
            out,
            cells,
            &layout.widths,
            &t.numeric,
            wrap_numbers,
            squeeze.sep,
        )
    };
    row(&mut out, &header, true);
    for r in &layout.rows {
        row(&mut out, &r[..columns], false);
    }
    if layout.legend {
        out.push_str(&legend_lines(t, width));
    }
    out
}

/// `t`'s columns in groups that each fit `width` with the key columns (the
/// bench and case, or the first) before them, one group under the other;
/// the last text column, when it is long, as a legend under them all.
fn in_groups(t: &Grid, width: usize) -> String {
    let n = t.header.len();
    let keys = if t.cases.is_empty() { 1 } else { 2 }.min(n);
    let squeeze = SQUEEZES[2];
    let full = layout(t, width, squeeze);
    let columns = full.widths.len();
    let key_width = spaced_width(&full.widths[..keys], keys, squeeze.sep);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new()];
    let mut used = key_width;
    for i in keys..columns {
        let w = full.widths[i] + squeeze.sep;
        let current = groups.last_mut().expect("a group");
        if used + w > width && !current.is_empty() {
            groups.push(vec![i]);
            used = key_width + w;
        } else {
            current.push(i);
            used += w;
        }
    }
    let mut out = String::new();
    for (g, group) in groups.iter().enumerate() {
        let chosen: Vec<usize> = (0..keys).chain(group.iter().copied()).collect();
        let part = Grid {
            header: chosen.iter().map(|&i| t.header[i]).collect(),
            numeric: chosen.iter().map(|&i| t.numeric[i]).collect(),
            rows: t
                .rows
                .iter()
                .map(|r| chosen.iter().map(|&i| r[i].clone()).collect())
                .collect(),
            cases: t.cases.clone(),
        };
        if g > 0 {
            out.push('\n');
        }
        let laid = layout(&part, width, squeeze);
        let header: Vec<String> = part.header.iter().map(|h| h.to_string()).collect();
        for cells in std::iter::once(&header).chain(&laid.rows) {
            push_row(
                &mut out,
                cells,
                &laid.widths,
                &part.numeric,
                true,
                squeeze.sep,
            );
        }
        if laid.legend {
            out.push_str(&legend_lines(&part, width));
        }
    }
    if full.legend {
        out.push_str(&legend_lines(t, width));
    }
    out
}

/// Column widths (the legend's column left out) and the cells to lay out.
struct Layout {
    widths: Vec<usize>,
    legend: bool,
    rows: Vec<Vec<String>>,
}

fn layout(t: &Grid, width: usize, squeeze: Squeeze) -> Layout {
    let n = t.header.len();
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(i, c)| match t.numeric[i] && squeeze.tight_numbers {
                    true => c.replace(" – ", "–").replace(" ± ", "±"),
                    false => c.clone(),
                })
                .collect()
        })
        .collect();
    let cells_width = |i: usize| rows.iter().map(|r| display_width(&r[i])).max();
    let header_floor = |i: usize| longest_word(t.header[i]);
    // Headers wrap first: a column is as wide as its widest cell or header word.
    let mut widths: Vec<usize> = (0..n)
        .map(|i| cells_width(i).unwrap_or(0).max(header_floor(i)))
        .collect();
    // A long last text column (the results' op) wraps in what room is left
    // or moves to a legend; a short one narrows as the others do.
    let last_text = n > 2 && !t.numeric[n - 1] && widths[n - 1] > LAST_FLOOR;
    let mut legend = false;
    if last_text {
        let others = spaced_width(&widths[..n - 1], n - 1, squeeze.sep) + squeeze.sep;
        let room = width.saturating_sub(others);
        if room >= LAST_FLOOR.min(widths[n - 1]) {
            widths[n - 1] = widths[n - 1].min(room);
        } else {
            legend = true;
            widths.pop();
        }
    }
    // Then the other text columns, the rightmost first, no narrower than
    // their longest word (up to half the width: a longer one breaks at its
    // separators); then the numbers, if they may wrap.
    let words = |i: usize| rows.iter().map(|r| longest_word(&r[i])).max();
    let floor = |i: usize| match t.numeric[i] {
        false if !(last_text && i == n - 1) => {
            let longest = words(i).unwrap_or(0).min(width / 2);
            Some(TEXT_FLOOR.max(header_floor(i)).max(longest))
        }
        true if squeeze.wrap_numbers => words(i),
        _ => None,
    };
    for numbers in [false, true] {
        for i in (0..widths.len()).rev().filter(|&i| t.numeric[i] == numbers) {
            let excess = spaced_width(&widths, widths.len(), squeeze.sep).saturating_sub(width);
            if let Some(floor) = floor(i).map(|f| f.max(header_floor(i)).min(widths[i])) {
                widths[i] -= excess.min(widths[i] - floor);
            }
        }
    }
    Layout {
        widths,
        legend,
        rows,
    }
}

/// One row: each cell wrapped to its column (numbers only with
/// `wrap_numbers`), numbers right-aligned line by line, as many lines as its
/// tallest cell.
fn push_row(
    out: &mut String,
    cells: &[String],
    widths: &[usize],
    numeric: &[bool],
    wrap_numbers: bool,
    sep: usize,
) {
    let wrapped: Vec<Vec<String>> = cells
        .iter()
        .zip(widths)
        .enumerate()
        .map(|(i, (c, &w))| {
            if numeric[i] && !wrap_numbers {
                vec![c.clone()]
            } else {
                wrap(c, w)
            }
        })
        .collect();
    let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
    for line in 0..height {
        let mut text = String::new();
        for (i, pieces) in wrapped.iter().enumerate() {
            let cell = pieces.get(line).map_or("", String::as_str);
            let pad = " ".repeat(widths[i].saturating_sub(display_width(cell)));
            if numeric[i] {
                text.push_str(&pad);
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&pad);
            }
            text.push_str(&" ".repeat(sep));
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
}

/// The last column's texts under the table, each once, named by the row's
/// first cell, or by its bench and case without a configuration tag when
/// the rows are cases (`syscall null: one getppid() system call`), wrapped
/// with a hanging indent.
fn legend_lines(t: &Grid, width: usize) -> String {
    let n = t.header.len();
    let mut seen: Vec<(String, &str)> = Vec::new();
    for (i, r) in t.rows.iter().enumerate() {
        let key = match t.cases.get(i) {
            Some((case, _)) => format!("{} {case}", r[0]),
            None => r[0].clone(),
        };
        if !seen.iter().any(|(k, text)| *k == key && *text == r[n - 1]) {
            seen.push((key, &r[n - 1]));
        }
    }
    let mut text = format!("{}:\n", t.header[n - 1]);
    for (key, what) in seen {
        text.push_str(&format!("  {key}: {what}\n"));
    }
    wrap_prose(&text, Some(width))
}

/// The widest piece of `text` (what a column of it cannot wrap below).
fn longest_word(text: &str) -> usize {
    pieces(text, true)
        .into_iter()
        .map(|p| display_width(p.trim()))
        .max()
        .unwrap_or(0)
}

/// `text` in lines of at most `width` columns: broken at spaces (dropped),
/// not inside parentheses; a word wider than a line alone after `/`, `,`
/// and `|` (kept), and mid-word only when a part alone is still wider.
fn wrap(text: &str, width: usize) -> Vec<String> {
    wrap_pieces(text, (width, width), true)
}

/// [`wrap`] with the first line `widths.0` wide and the others `widths.1`,
/// parentheses kept whole only with `whole_parens` (cells, not prose).
fn wrap_pieces(text: &str, widths: (usize, usize), whole_parens: bool) -> Vec<String> {
    let room = |lines: &[String]| if lines.is_empty() { widths.0 } else { widths.1 }.max(1);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for piece in pieces(text, whole_parens) {
        let joined = if line.is_empty() {
            piece.trim_start().to_string()
        } else {
            format!("{line}{piece}")
        };
        if display_width(joined.trim_end()) <= room(&lines) {
            line = joined;
            continue;
        }
        if !line.trim_end().is_empty() {
            lines.push(line.trim_end().to_string());
        }
        // The word on a line of its own; too wide for that, at its
        // separators, then mid-word.
        line = String::new();
        for part in parts(piece.trim()) {
            if display_width(&line) + display_width(part) <= room(&lines) {
                line.push_str(part);
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            line = part.to_string();
            while display_width(&line) > room(&lines) {
                let (head, tail) = split_at_width(&line, room(&lines));
                lines.push(head);
                line = tail;
            }
        }
    }
    if !line.trim_end().is_empty() || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// `text` cut into the words that may start a new line, each with the
/// space before it; with `whole_parens`, never inside parentheses
/// (`(75% only)` stays whole).
fn pieces(text: &str, whole_parens: bool) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if whole_parens && depth > 0 {
            continue;
        }
        if c == ' ' && i > start && !text[start..i].trim().is_empty() {
            out.push(&text[start..i]);
            start = i;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// A word cut after each `/`, `,` and `|` (`g10/`, `socket/`, `processes`).
fn parts(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in word.char_indices() {
        let end = i + c.len_utf8();
        if matches!(c, '/' | ',' | '|') && end < word.len() {
            out.push(&word[start..end]);
            start = end;
        }
    }
    if start < word.len() {
        out.push(&word[start..]);
    }
    out
}

/// The first `width` columns of `text` and the rest.
fn split_at_width(text: &str, width: usize) -> (String, String) {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        let w = display_width(c.encode_utf8(&mut [0; 4]));
        if used + w > width && i > 0 {
            return (text[..i].to_string(), text[i..].to_string());
        }
        used += w;
    }
    (text.to_string(), String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[[&str; 3]]) -> Table {
        Table {
            header: vec!["case", "median", "op"],
            numeric: vec![false, true, false],
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
            cases: Vec::new(),
        }
    }

    #[test]
    fn words_wrap_at_spaces_and_slashes() {
        assert_eq!(
            wrap("one getppid() system call", 13),
            ["one getppid()", "system call"]
        );
        assert_eq!(
            wrap("g10/socket/processes", 11),
            ["g10/socket/", "processes"]
        );
        assert_eq!(wrap("abcdefgh", 3), ["abc", "def", "gh"]);
        assert_eq!(wrap("", 5), [""]);
    }

    #[test]
    fn a_word_breaks_at_its_separators_only_when_wider_than_a_line() {
        assert_eq!(
            wrap("wakeup futex/threads [base]", 15),
            ["wakeup", "futex/threads", "[base]"]
        );
        assert_eq!(
            wrap("allowed a|bb|ccc|dddd", 9),
            ["allowed", "a|bb|ccc|", "dddd"]
        );
        let prose = wrap_prose(
            "see /sys/kernel/mm/transparent_hugepage/enabled\n",
            Some(30),
        );
        assert_eq!(
            prose,
            "see\n  /sys/kernel/mm/\n  transparent_hugepage/enabled\n"
        );
    }

    #[test]
    fn hanging_lines_continue_under_their_values() {
        let text = "cmdline  quiet splash mitigations=off\narch     x86_64\n";
        assert_eq!(
            wrap_hanging(text, Some(24), 9),
            "cmdline  quiet splash\n         mitigations=off\narch     x86_64\n"
        );
        assert_eq!(wrap_hanging(text, None, 9), text);
    }

    #[test]
    fn a_short_last_text_column_wraps_in_place() {
        let t = Table {
            header: vec!["id", "started (UTC)", "benchmarks"],
            numeric: vec![true, false, false],
            rows: vec![vec![
                "1".into(),
                "2026-11-01T02:00:00Z".into(),
                "syscall, wakeup".into(),
            ]],
            cases: Vec::new(),
        };
        let text = t.to_text_within(Some(36));
        assert_eq!(
            text,
            "id  started (UTC)         benchmarks\n 1  2026-11-01T02:00:00Z  syscall,\n                          wakeup\n"
        );
    }

    #[test]
    fn a_table_that_fits_is_left_as_it_is() {
        let t = table(&[["null", "12.5", "one call"]]);
        assert_eq!(t.to_text_within(Some(80)), t.to_text());
        assert_eq!(t.to_text_within(None), t.to_text());
    }

    #[test]
    fn the_last_column_wraps_in_its_column_or_moves_to_a_legend() {
        let op = "one round trip of a message through a pipe between two processes";
        let t = table(&[["pipe", "4.25", op], ["null", "0.1", "one call"]]);
        let at40 = t.to_text_within(Some(40));
        assert!(at40.lines().all(|l| display_width(l) <= 40), "{at40}");
        assert!(!at40.contains("op:"), "{at40}");
        assert!(at40.contains("round trip"), "{at40}");
        let at25 = t.to_text_within(Some(25));
        assert!(at25.lines().all(|l| display_width(l) <= 25), "{at25}");
        assert!(at25.contains("op:\n  pipe: one round"), "{at25}");
    }

    #[test]
    fn prose_wraps_with_a_hanging_indent() {
        let text = "  Not counted: cycles, instructions: perf_event_open is not permitted\nshort\n";
        let wrapped = wrap_prose(text, Some(30));
        assert!(wrapped.lines().all(|l| display_width(l) <= 30), "{wrapped}");
        assert!(wrapped.starts_with("  Not counted:"), "{wrapped}");
        assert!(
            wrapped.lines().nth(1).unwrap().starts_with("    "),
            "{wrapped}"
        );
        assert!(wrapped.ends_with("short\n"), "{wrapped}");
        assert_eq!(wrap_prose(text, None), text);
    }

    #[test]
    fn a_run_fits_80_and_100_columns_and_is_unchanged_without_a_width() {
        let mut doc = crate::report::fixture();
        // A long noise column and configuration tags, as an A/A run has.
        for s in &mut doc.series {
            s.noise = vec!["high-cv".into(), "bimodal".into(), "drift".into()];
        }
        for width in [80, 100] {
            let text = crate::report::render_run_within(&doc, Some(width));
            let long: Vec<&str> = text.lines().filter(|l| display_width(l) > width).collect();
            assert!(long.is_empty(), "{width}:\n{}", long.join("\n"));
            assert!(text.contains("[a]") || text.contains("[b]"), "{text}");
        }
        let wide = crate::report::render_run_within(&doc, None);
        assert_eq!(wide, crate::report::render_run(&doc));
        assert!(wide.lines().any(|l| display_width(l) > 100), "{wide}");
    }
}
