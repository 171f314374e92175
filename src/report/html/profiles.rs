//! The HTML report's flame graphs: under a comparison, "Where the time
//! went" (per compared case whose sides were both profiled, the
//! differential flame graph and each side's, folded); in a run's section,
//! "Profiles": the differential of each comparison of its configurations
//! both of whose series were profiled, then each profiled series' flame
//! graph, folded. A case or series without a profile gets one line saying
//! why, or how to get one. Documents without profiles get nothing, so
//! their pages are as they were.
//!
//! The graphs are [`crate::report::flame`]'s, inlined; what a difference of
//! two profiles means, with its interval, is left to `stats::differential`
//! and the comparison's text. Left out: stacks and numbers as tables.

use std::fmt::Write;

use super::escape;
use crate::compare::Comparison;
use crate::document::{Document, Profile, ProfileOutcome, Series};
use crate::report::flame;

/// How to get a profile, for a side or a series without one.
const HOW: &str = "run it with `osbench run … --profile`";

/// "Where the time went" for each compared case of `c` some side of which
/// has a profile; nothing when none has (or `docs` are not the compared
/// documents, baseline first).
pub(super) fn comparison(out: &mut String, c: &Comparison, docs: &[(String, Document)]) {
    if docs.len() != c.labels.len() {
        return;
    }
    let letters: Vec<String> = (0..c.labels.len()).map(crate::compare::letter).collect();
    let mut body = String::new();
    for (r, row) in c.rows.iter().enumerate() {
        let outcome = |d: usize| {
            docs[d]
                .1
                .series
                .iter()
                .find(|s| s.key == row.key)
                .and_then(|s| s.profile.as_ref())
        };
        for k in 1..docs.len() {
            let sides = [(&letters[0], outcome(0)), (&letters[k], outcome(k))];
            let id = format!("profile-{r}-{k}");
            case_profiles(&mut body, &id, &row.key.to_string(), sides);
        }
    }
    if !body.is_empty() {
        out.push_str(
            "<h3 id=\"where-the-time-went\">Where the time went</h3>\n<p class=\"meta\">Flame \
             graphs of the profiles sampled after the timed samples (<code>--profile</code>), each \
             side's passes summed; hover over a frame for its samples.</p>\n",
        );
        out.push_str(&body);
    }
}

/// One compared case, `key` ("bench case [config]"), whose sides (letter,
/// profile outcome) are `sides`, baseline first: the differential and each
/// side's flame graph when both were profiled, else a line saying which
/// side has no profile and why.
fn case_profiles(
    out: &mut String,
    id: &str,
    key: &str,
    sides: [(&String, Option<&ProfileOutcome>); 2],
) {
    let [(a, base), (b, cand)] = sides;
    let case = format!("{key}: {b} against {a}");
    let (Some(ProfileOutcome::Profiled(pa)), Some(ProfileOutcome::Profiled(pb))) = (base, cand)
    else {
        if let Some(line) = missing_line(&case, sides) {
            let _ = writeln!(out, "<p class=\"warn\">{}</p>", escape(&line));
        }
        return;
    };
    differential(out, id, &case, (a, pa), (b, pb));
    for (letter, profile, role) in [(a, pa, " (baseline)"), (b, pb, "")] {
        let summary = format!("{letter}'s flame graph{role}");
        let _ = writeln!(out, "<details><summary>{}</summary>", escape(&summary));
        let title = format!("{key}: {letter}");
        let side_id = format!("{id}-{}", letter.to_lowercase());
        figure(
            out,
            &side_id,
            flame::flame_graph(&title, profile),
            &caption_of(profile),
        );
        out.push_str("</details>\n");
    }
    notes(out, [(a.as_str(), pa), (b.as_str(), pb)]);
}

/// The differential flame graph `case` ("… B against A") of side `b`
/// against the baseline `a` (each its name and profile), under a heading,
/// with how to read it.
fn differential(out: &mut String, id: &str, case: &str, a: (&str, &Profile), b: (&str, &Profile)) {
    let ((a, pa), (b, pb)) = (a, b);
    let _ = writeln!(out, "<h4>{}</h4>", escape(case));
    let caption = format!(
        "{b}'s stacks, as wide as its samples. A frame's colour is the change in the samples \
         that fell in that function itself (it the innermost frame) against {a}'s, {a}'s counts \
         scaled to {b}'s total: red more, blue fewer, the deeper the larger; white, none. \
         Functions only {a} ran are not drawn: see {a}'s own graph."
    );
    figure(
        out,
        id,
        flame::differential_flame_graph(case, pa, pb),
        &caption,
    );
}

/// The line for a compared case some side of which has no profile: which
/// side, and why (or how to get one); `None` when neither side has one or
/// says why.
fn missing_line(case: &str, sides: [(&String, Option<&ProfileOutcome>); 2]) -> Option<String> {
    let has = |o: Option<&ProfileOutcome>| o.and_then(ProfileOutcome::profile).is_some();
    if sides.iter().all(|(_, o)| o.is_none()) {
        return None;
    }
    let lacking: Vec<String> = sides
        .iter()
        .filter(|(_, o)| !has(*o))
        .map(|(letter, o)| match o {
            Some(ProfileOutcome::Unavailable(why)) => {
                format!("{letter} has no profile: {why}")
            }
            _ => format!("{letter} has no profile ({HOW})"),
        })
        .collect();
    let profiled: Vec<&str> = sides
        .iter()
        .filter(|(_, o)| has(*o))
        .map(|(l, _)| l.as_str())
        .collect();
    let tail = match profiled.as_slice() {
        [] => String::new(),
        [one] => format!("; {one} has one, so there is no differential"),
        _ => String::new(),
    };
    Some(format!("{case}: {}{tail}.", lacking.join("; ")))
}

/// Each profiled series of `doc` (its section number `i`): its flame
/// graph, folded, with the profile's notes; a line for each series whose
/// profile was unavailable.
pub(super) fn document(out: &mut String, i: usize, doc: &Document) {
    let with: Vec<(usize, &Series, &ProfileOutcome)> = doc
        .series
        .iter()
        .enumerate()
        .filter_map(|(j, s)| s.profile.as_ref().map(|p| (j, s, p)))
        .collect();
    if with.is_empty() {
        return;
    }
    out.push_str("<h3>Profiles</h3>\n");
    configurations(out, i, doc);
    for (j, s, outcome) in with {
        let name = s.key.to_string();
        match outcome {
            ProfileOutcome::Profiled(p) => {
                let _ = writeln!(
                    out,
                    "<details><summary>Flame graph: {}</summary>",
                    escape(&name)
                );
                let id = format!("doc-{i}-flame-{j}");
                figure(out, &id, flame::flame_graph(&name, p), &caption_of(p));
                out.push_str("</details>\n");
                notes(out, [(name.as_str(), p)]);
            }
            ProfileOutcome::Unavailable(why) => {
                let line = format!("{name}: no profile: {why}");
                let _ = writeln!(out, "<p class=\"warn\">{}</p>", escape(&line));
            }
        }
    }
}

/// The differential flame graph of each comparison of `doc`'s
/// configurations (its section number `i`) both of whose series were
/// profiled; each series' own graph follows, in the list of them.
fn configurations(out: &mut String, i: usize, doc: &Document) {
    let profile = |bench: &str, case: &str, config: &str| {
        doc.series
            .iter()
            .find(|s| s.key.bench == bench && s.key.case == case && s.key.config == config)
            .and_then(|s| s.profile.as_ref())
            .and_then(ProfileOutcome::profile)
    };
    for (r, rec) in doc.comparisons.iter().enumerate() {
        let (Some(pa), Some(pb)) = (
            profile(&rec.bench, &rec.case, &rec.baseline),
            profile(&rec.bench, &rec.case, &rec.candidate),
        ) else {
            continue;
        };
        let case = format!(
            "{} {}: {} against {}",
            rec.bench, rec.case, rec.candidate, rec.baseline
        );
        let id = format!("doc-{i}-differential-{r}");
        differential(out, &id, &case, (&rec.baseline, pa), (&rec.candidate, pb));
    }
}

/// How to read a flame graph of `p`, for its caption.
fn caption_of(p: &Profile) -> String {
    format!(
        "Each frame as wide as the samples with it on the stack, callers below their callees. \
         Sampled: {}.",
        p.scope
    )
}

/// The profiles' notes (what is missing from them), each under its `who`.
fn notes<const N: usize>(out: &mut String, profiles: [(&str, &Profile); N]) {
    let lines: Vec<String> = profiles
        .iter()
        .flat_map(|(who, p)| p.notes.iter().map(move |n| format!("{who}: {n}")))
        .collect();
    if !lines.is_empty() {
        out.push_str("<ul class=\"warnings\">\n");
        for line in &lines {
            let _ = writeln!(out, "<li>{}</li>", escape(line));
        }
        out.push_str("</ul>\n");
    }
}

/// A flame graph inline as element `id`, with `caption`; one that could
/// not be drawn is a line saying why (the rest of the page stands).
fn figure(out: &mut String, id: &str, svg: crate::error::Result<String>, caption: &str) {
    match svg {
        Ok(svg) => {
            let _ = writeln!(
                out,
                "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>",
                escape(id),
                flame::inline(&svg, id).trim(),
                escape(caption)
            );
        }
        Err(e) => {
            let _ = writeln!(out, "<p class=\"warn\">{}</p>", escape(&e.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;
    use crate::report::flame::tests::profile;

    fn profiled(stacks: &[(&str, u64)]) -> Option<ProfileOutcome> {
        Some(ProfileOutcome::Profiled(profile(&[(stacks, 0)])))
    }

    #[test]
    fn a_document_without_profiles_adds_nothing() {
        let mut out = String::new();
        document(&mut out, 0, &fixture());
        assert_eq!(out, "");
        let docs = [("a".to_string(), fixture()), ("b".to_string(), fixture())];
        let c = crate::compare::compare(&docs, Default::default()).unwrap();
        comparison(&mut out, &c, &docs);
        assert_eq!(out, "");
    }

    #[test]
    fn a_run_lists_each_profile_or_why_there_is_none() {
        let mut doc = fixture();
        doc.series[0].profile = profiled(&[("main;<f>", 3)]);
        doc.series[1].profile = Some(ProfileOutcome::Unavailable("kptr_restrict is 2".into()));
        if let Some(ProfileOutcome::Profiled(p)) = &mut doc.series[0].profile {
            p.notes.push("a pass was cut short".into());
        }
        let mut out = String::new();
        document(&mut out, 4, &doc);
        assert!(out.starts_with(
            "<h3>Profiles</h3>\n<details><summary>Flame graph: ctx 2p/0K</summary>\n\
             <figure id=\"doc-4-flame-0\">\n<svg class=\"flame\" "
        ));
        assert!(
            out.contains("<title>&lt;f&gt; (3 samples, 100.00%)</title>"),
            "{out}"
        );
        assert!(out.contains("<li>ctx 2p/0K: a pass was cut short</li>"));
        assert!(out.contains("<p class=\"warn\">ctx 2p/16K: no profile: kptr_restrict is 2</p>"));
        assert_eq!(out.matches("<figure").count(), 1);
    }

    #[test]
    fn a_run_with_profiled_configurations_gets_their_differential_first() {
        let mut doc = fixture();
        let rec = &doc.comparisons[1];
        assert_eq!(
            (
                rec.bench.as_str(),
                rec.case.as_str(),
                rec.baseline.as_str(),
                rec.candidate.as_str()
            ),
            ("syscall", "null", "a", "b")
        );
        for (s, stacks) in [
            (7, [("main;getpid", 10), ("main;filter", 0)]),
            (8, [("main;getpid", 10), ("main;filter", 30)]),
        ] {
            assert_eq!(doc.series[s].key.config, ["a", "b"][s - 7]);
            doc.series[s].profile = profiled(&stacks);
        }
        let mut out = String::new();
        document(&mut out, 2, &doc);
        assert!(
            out.starts_with(
                "<h3>Profiles</h3>\n<h4>syscall null: b against a</h4>\n\
             <figure id=\"doc-2-differential-1\">\n<svg class=\"flame\" "
            ),
            "{out}"
        );
        assert!(
            out.contains("<title>filter (30 samples, 75.00%; +75.00%)</title>"),
            "{out}"
        );
        let (diff, list) = (
            out.find("doc-2-differential-1").unwrap(),
            out.find("<details><summary>Flame graph: syscall null [a]</summary>")
                .unwrap(),
        );
        assert!(diff < list);
        assert_eq!(out.matches("<figure").count(), 3);
        // One side unprofiled: no differential, each series as it is.
        doc.series[7].profile = None;
        let mut out = String::new();
        document(&mut out, 2, &doc);
        assert!(!out.contains("differential"), "{out}");
        assert_eq!(out.matches("<figure").count(), 1);
    }

    #[test]
    fn a_profile_without_samples_is_a_line_not_a_failed_page() {
        let mut doc = fixture();
        doc.series[0].profile = Some(ProfileOutcome::Profiled(profile(&[(&[], 0)])));
        let mut out = String::new();
        document(&mut out, 0, &doc);
        assert!(out.contains(
            "<p class=\"warn\">cannot draw the plot &#39;flame graph ctx 2p/0K&#39;: the profile \
             has no samples</p>"
        ), "{out}");
    }

    #[test]
    fn sides_without_a_profile_are_named_with_why_or_how() {
        let (a, b) = ("A".to_string(), "B".to_string());
        let unavailable = Some(ProfileOutcome::Unavailable("no permission".into()));
        let has = profiled(&[("main", 1)]);
        let line = |x: &Option<ProfileOutcome>, y: &Option<ProfileOutcome>| {
            missing_line("c: B against A", [(&a, x.as_ref()), (&b, y.as_ref())])
        };
        assert_eq!(line(&None, &None), None);
        assert_eq!(
            line(&has, &None).unwrap(),
            "c: B against A: B has no profile (run it with `osbench run … --profile`); A has \
             one, so there is no differential."
        );
        assert_eq!(
            line(&unavailable, &unavailable).unwrap(),
            "c: B against A: A has no profile: no permission; B has no profile: no permission."
        );
    }
}
