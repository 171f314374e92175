//! Flame graphs of a series' profile, and the differential flame graph of
//! two, as SVG for the HTML report: Brendan Gregg's flame graphs (2011) and
//! differential flame graphs (2014), drawn by the `inferno` crate from the
//! folded stacks the document stores.
//!
//! A flame graph here is the profile's stacks summed over its passes (a
//! display sum; no statistic), with the samples of stacks not kept by name
//! as one frame, [`OTHER_FRAME`], so that every frame's width is its true
//! share. The differential is inferno's: the baseline's counts scaled to the
//! candidate's total (its `normalize`), drawn with the candidate's stacks,
//! each frame coloured by the change in its own samples (those with it the
//! innermost frame, as in Gregg's `flamegraph.pl`): red more, blue fewer.
//!
//! Left out: inferno's script (zoom and search). The report promises a page
//! without script, and the script finds its elements by fixed ids, so it
//! cannot serve several graphs on one page; each frame keeps its `<title>`,
//! which browsers show on hover (function, samples, share, change). Colours
//! are chosen from the function's name, never at random, so the same
//! profile gives the same SVG. What a difference of two profiles means, with
//! its interval, is `stats::differential`'s, not this file's.

use std::collections::BTreeMap;

use inferno::differential;
use inferno::flamegraph::{self, Options};

use crate::document::Profile;
use crate::error::{Error, Result};

/// The frame that stands for the samples of stacks beyond the document's
/// bound ([`crate::document::profile::MAX_STACKS_PER_PASS`]), kept only as
/// a count.
pub const OTHER_FRAME: &str = "[other stacks]";

/// The flame graph of `profile` under `title`: its passes' stacks summed,
/// as a standalone SVG document without script.
pub fn flame_graph(title: &str, profile: &Profile) -> Result<String> {
    let stacks = summed(profile);
    let total: u64 = stacks.values().sum();
    if total == 0 {
        return Err(failed(title, "the profile has no samples"));
    }
    let lost: u64 = profile.passes.iter().map(|p| p.lost).sum();
    let subtitle = format!(
        "{}; {} {}, {} samples{}",
        sampling(profile),
        profile.passes.len(),
        if profile.passes.len() == 1 {
            "pass"
        } else {
            "passes"
        },
        thousands(total),
        if lost > 0 {
            format!(
                " ({} more lost: the kernel's buffer was full)",
                thousands(lost)
            )
        } else {
            String::new()
        }
    );
    let folded = folded(&stacks);
    draw(title, subtitle, folded.lines())
}

/// The differential flame graph of `candidate` against `baseline` under
/// `title`: the candidate's stacks (its widths), each frame coloured by how
/// many more or fewer samples fell in it itself (it the innermost frame)
/// than in the baseline scaled to the candidate's total: red more (grew),
/// blue fewer (shrank), white the same. Frames only the baseline has are
/// not drawn (they have no width in the candidate).
pub fn differential_flame_graph(
    title: &str,
    baseline: &Profile,
    candidate: &Profile,
) -> Result<String> {
    let before = summed(baseline);
    let after = summed(candidate);
    for (side, stacks) in [("baseline", &before), ("candidate", &after)] {
        if stacks.values().sum::<u64>() == 0 {
            return Err(failed(
                title,
                &format!("the {side}'s profile has no samples"),
            ));
        }
    }
    let mut diff = Vec::new();
    let options = differential::Options {
        normalize: true,
        ..Default::default()
    };
    differential::from_readers(
        options,
        folded(&before).as_bytes(),
        folded(&after).as_bytes(),
        &mut diff,
    )
    .map_err(|e| failed(title, &format!("inferno's differential: {e}")))?;
    let diff = String::from_utf8(diff)
        .map_err(|e| failed(title, &format!("inferno's differential: {e}")))?;
    let subtitle = format!(
        "widths: the candidate's {} samples; red: more samples in the frame itself than \
         the baseline's (scaled to the same total), blue: fewer",
        thousands(after.values().sum())
    );
    draw(title, subtitle, diff.lines())
}

/// The SVG of `lines` (folded stacks with one count, or two for a
/// differential) as a standalone document without script.
fn draw<'a>(
    title: &str,
    subtitle: String,
    lines: impl IntoIterator<Item = &'a str>,
) -> Result<String> {
    let mut options = Options::default();
    options.title = title.to_string();
    options.subtitle = Some(subtitle);
    options.count_name = "samples".into();
    // Colours from a hash of the function's name (FNV): the same input, the same SVG.
    options.deterministic = true;
    let mut svg = Vec::new();
    flamegraph::from_lines(&mut options, lines, &mut svg)
        .map_err(|e| failed(title, &format!("inferno: {e}")))?;
    let svg = String::from_utf8(svg).map_err(|e| failed(title, &format!("inferno: {e}")))?;
    Ok(without_script(&svg))
}

/// The error of drawing the flame graph `title`.
fn failed(title: &str, message: &str) -> Error {
    Error::Plot {
        what: format!("flame graph {title}"),
        message: message.to_string(),
    }
}

/// Each stack's samples summed over `profile`'s passes, the stacks not kept
/// by name as [`OTHER_FRAME`].
fn summed(profile: &Profile) -> BTreeMap<&str, u64> {
    let mut stacks: BTreeMap<&str, u64> = BTreeMap::new();
    for pass in &profile.passes {
        for (stack, n) in &pass.stacks {
            *stacks.entry(stack.as_str()).or_default() += n;
        }
        if pass.other > 0 {
            *stacks.entry(OTHER_FRAME).or_default() += pass.other;
        }
    }
    stacks.retain(|_, n| *n > 0);
    stacks
}

/// `stacks` as folded lines, "stack count".
fn folded(stacks: &BTreeMap<&str, u64>) -> String {
    stacks
        .iter()
        .map(|(stack, n)| format!("{stack} {n}\n"))
        .collect()
}

/// How `profile` sampled, in words: "cpu-clock, one sample every 100,000 ns".
fn sampling(profile: &Profile) -> String {
    let every = if profile.event == "cpu-clock" {
        format!("{} ns", thousands(profile.period))
    } else {
        format!("{} events", thousands(profile.period))
    };
    format!("{}, one sample every {every}", profile.event)
}

/// `n` with thousands separated by commas, as inferno writes its counts.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// inferno's SVG without what only its script uses: the script, the call
/// to it on load, and the texts it fills in or acts on (details, search,
/// reset zoom, matched).
fn without_script(svg: &str) -> String {
    let mut out = cut_element(svg, "<script", "</script>");
    out = out.replacen(" onload=\"init(evt)\"", "", 1);
    for id in ["details", "unzoom", "search", "matched"] {
        out = cut_element(&out, &format!("<text id=\"{id}\""), "</text>");
    }
    out
}

/// `text` without the first element that opens with `open` and closes with `close`.
fn cut_element(text: &str, open: &str, close: &str) -> String {
    let Some(start) = text.find(open) else {
        return text.to_string();
    };
    match text[start..].find(close) {
        Some(end) => format!("{}{}", &text[..start], &text[start + end + close.len()..]),
        None => text.to_string(),
    }
}

/// `svg` (from [`flame_graph`] or [`differential_flame_graph`]) made fit to
/// sit inside an HTML page beside others, as element `id`: without the XML
/// prolog, comments and namespaces; its ids made the page's (`id`-prefixed)
/// or classes; its style scoped to flame graphs, where inferno's applies to
/// every `text` of the page.
pub fn inline(svg: &str, id: &str) -> String {
    let body = &svg[svg.find("<svg").unwrap_or(0)..];
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("-->")
            .map_or("", |end| &rest[start + end + 3..]);
    }
    out.push_str(rest);
    for namespace in [
        " xmlns=\"http://www.w3.org/2000/svg\"",
        " xmlns:xlink=\"http://www.w3.org/1999/xlink\"",
        " xmlns:fg=\"http://github.com/jonhoo/inferno\"",
    ] {
        out = out.replacen(namespace, "", 1);
    }
    cut_element(&out, "<style", "</style>")
        .replacen("<svg ", "<svg class=\"flame\" ", 1)
        .replacen(
            "</defs>",
            &format!("</defs><style>{INLINE_STYLE}</style>"),
            1,
        )
        .replacen("id=\"background\"", &format!("id=\"{id}-background\""), 1)
        .replacen(
            "fill=\"url(#background)\"",
            &format!("fill=\"url(#{id}-background)\""),
            1,
        )
        .replacen("<text id=\"title\"", "<text class=\"title\"", 1)
        .replacen("<text id=\"subtitle\"", "<text class=\"subtitle\"", 1)
        .replacen("<svg id=\"frames\"", "<svg class=\"frames\"", 1)
}

/// inferno's style for its text and frames, for flame graphs only.
const INLINE_STYLE: &str = "svg.flame text { font-family: monospace; font-size: 12px; } svg.flame .title { text-anchor: middle; font-size: 17px; } \
     svg.flame .subtitle { text-anchor: middle; } \
     svg.flame .frames > g:hover > rect { stroke: black; stroke-width: 0.5; }";

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::document::ProfilePass;

    /// A profile of `passes`, each given as (stack, samples) pairs and the
    /// samples of stacks not kept by name.
    pub(crate) fn profile(passes: &[(&[(&str, u64)], u64)]) -> Profile {
        Profile {
            event: "cpu-clock".into(),
            period: 100_000,
            scope: "the case's tasks".into(),
            passes: passes
                .iter()
                .map(|(stacks, other)| ProfilePass {
                    ops: 1000.0,
                    wall_ns: 50_000_000,
                    samples: stacks.iter().map(|(_, n)| n).sum::<u64>() + other,
                    lost: 0,
                    stacks: stacks.iter().map(|(s, n)| (s.to_string(), *n)).collect(),
                    other: *other,
                })
                .collect(),
            notes: Vec::new(),
        }
    }

    /// The `rect` of the frame whose tooltip starts with `function`.
    fn frame_fill<'a>(svg: &'a str, function: &str) -> &'a str {
        let at = svg
            .find(&format!("<title>{function} ("))
            .unwrap_or_else(|| panic!("no frame {function}"));
        let rect = &svg[at..];
        let fill = &rect[rect.find("fill=\"").unwrap() + 6..];
        &fill[..fill.find('"').unwrap()]
    }

    #[test]
    fn a_flame_graph_sums_the_passes_and_names_every_function() {
        let p = profile(&[
            (
                &[("main;run_case;getpid", 30), ("main;run_case;<b>&x", 10)],
                0,
            ),
            (&[("main;run_case;getpid", 50)], 10),
        ]);
        let svg = flame_graph("syscall null", &p).unwrap();
        assert!(!svg.contains("lost"));
        let mut lossy = p.clone();
        lossy.passes[1].lost = 1234;
        let with_lost = flame_graph("syscall null", &lossy).unwrap();
        assert!(
            with_lost.contains("100 samples (1,234 more lost: the kernel&apos;s buffer was full)")
        );
        assert!(svg.starts_with("<?xml"), "{}", &svg[..80]);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<svg").count(), svg.matches("</svg>").count());
        for text in [
            ">syscall null</text>",
            "cpu-clock, one sample every 100,000 ns; 2 passes, 100 samples",
            "<title>getpid (80 samples, 80.00%)</title>",
            "<title>[other stacks] (10 samples, 10.00%)</title>",
            "<title>&lt;b&gt;&amp;x (10 samples, 10.00%)</title>",
            "<title>run_case (90 samples, 90.00%)</title>",
        ] {
            assert!(svg.contains(text), "lacks {text}");
        }
        assert!(
            !svg.contains("<script") && !svg.contains("onload"),
            "a script"
        );
        assert!(!svg.contains("<b>"), "a name is text");
        // The same profile, the same picture.
        assert_eq!(svg, flame_graph("syscall null", &p).unwrap());
    }

    #[test]
    fn a_profile_without_samples_is_an_error_naming_the_graph() {
        let e = flame_graph("ctx 2p/0K", &profile(&[(&[], 0)])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot draw the plot 'flame graph ctx 2p/0K': the profile has no samples"
        );
        let some = profile(&[(&[("main", 1)], 0)]);
        let e = differential_flame_graph("d", &some, &profile(&[])).unwrap_err();
        assert!(
            e.to_string()
                .contains("the candidate's profile has no samples"),
            "{e}"
        );
    }

    #[test]
    fn the_differential_is_red_where_a_function_grew_and_blue_where_it_shrank() {
        // The candidate spends five times the baseline's samples in
        // `grown`, as many in `same`: normalised (the baseline's 100
        // samples scaled to the candidate's 200), `grown` gained 90 of 200
        // and `same` lost 50.
        let baseline = profile(&[(&[("main;grown", 30), ("main;same", 50)], 20)]);
        let candidate = profile(&[(&[("main;grown", 150), ("main;same", 50)], 0)]);
        let svg =
            differential_flame_graph("syscall null: B against A", &baseline, &candidate).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(
            svg.contains(">widths: the candidate&apos;s 200 samples; red: more samples in"),
            "{svg}"
        );
        let grown = frame_fill(&svg, "grown");
        let same = frame_fill(&svg, "same");
        let parse = |fill: &str| -> Vec<u8> {
            fill.trim_start_matches("rgb(")
                .trim_end_matches(')')
                .split(',')
                .map(|c| c.parse().unwrap())
                .collect()
        };
        let (g, s) = (parse(grown), parse(same));
        assert!(g[0] == 255 && g[1] == g[2] && g[1] < 250, "grown: {grown}");
        assert!(s[2] == 255 && s[0] == s[1] && s[0] < 250, "same: {same}");
        // `main` holds every sample on both sides: no change, near white.
        assert_eq!(frame_fill(&svg, "main"), "rgb(250,250,250)");
        assert!(svg.contains("<title>grown (150 samples, 75.00%; +45.00%)</title>"));
        assert!(svg.contains("<title>same (50 samples, 25.00%; -25.00%)</title>"));
        assert!(!svg.contains("<script"));
        let again =
            differential_flame_graph("syscall null: B against A", &baseline, &candidate).unwrap();
        assert_eq!(svg, again);
    }

    #[test]
    fn inline_graphs_keep_their_ids_and_style_to_themselves() {
        let svg = flame_graph("t", &profile(&[(&[("main;f", 3)], 0)])).unwrap();
        let page = inline(&svg, "fig-1");
        assert!(page.starts_with("<svg class=\"flame\" "), "{}", &page[..80]);
        for gone in [
            "<?xml",
            "<!DOCTYPE",
            "<!--",
            "xmlns",
            "http",
            "id=\"title\"",
            "id=\"frames\"",
        ] {
            assert!(!page.contains(gone), "{gone} in {page}");
        }
        assert!(page.contains("id=\"fig-1-background\""));
        assert!(page.contains("fill=\"url(#fig-1-background)\""));
        assert_eq!(page.matches("<style").count(), 1);
        assert!(page.contains("<style>svg.flame text {"), "{page}");
        assert!(page.contains("<title>f (3 samples, 100.00%)</title>"));
    }
}
