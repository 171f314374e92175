//! Explaining a compared change by the two sides' profiles: each side's
//! profiling passes (from every run of the side that has the case, with
//! `run --profile`) and its centre — the value the comparison's ratio is of
//! — go to `stats::differential`, whose measured change is then the very
//! difference the verdict talks about (candidate − baseline, in the series'
//! unit). A side without a profile is recorded with why (never profiled, or
//! profiling unavailable and the reason), for `explain` to say. Which
//! explanations are shown is [`crate::compare::Comparison::explanation`]'s.
//! Left out: the statistics (`stats::differential`), rendering (`report`).

use crate::document::{Explanation, MissingProfile, Profile, ProfileOutcome, ProfilePass, Series};
use crate::stats::differential::{DifferentialOptions, PassCounts, SideProfile, differential};

/// One side of a change: its label, its series of the case (one per run
/// that has it) and its centre (time per op, the series' unit).
#[derive(Debug, Clone, Copy)]
pub struct ChangeSide<'a> {
    pub label: &'a str,
    pub series: &'a [&'a Series],
    pub centre: f64,
}

/// The profiles of a side's series; `Err` with what is missing when none has one.
fn profiles<'a>(side: &ChangeSide<'a>, role: &str) -> Result<Vec<&'a Profile>, MissingProfile> {
    let outcomes = side.series.iter().filter_map(|s| s.profile.as_ref());
    let profiles: Vec<&Profile> = outcomes
        .clone()
        .filter_map(ProfileOutcome::profile)
        .collect();
    if !profiles.is_empty() {
        return Ok(profiles);
    }
    let unavailable = outcomes
        .filter_map(|o| match o {
            ProfileOutcome::Unavailable(why) => Some(why.clone()),
            ProfileOutcome::Profiled(_) => None,
        })
        .next();
    Err(MissingProfile {
        side: role.to_string(),
        label: side.label.to_string(),
        unavailable,
    })
}

/// Where the change from `baseline` to `candidate` went, judged at the
/// family-wise level `alpha`; or which side has no profile.
pub fn explain_change(baseline: ChangeSide, candidate: ChangeSide, alpha: f64) -> Explanation {
    let (a, b) = (
        profiles(&baseline, "baseline"),
        profiles(&candidate, "candidate"),
    );
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            return Explanation::NoProfile([a.err(), b.err()].into_iter().flatten().collect());
        }
    };
    let options = DifferentialOptions {
        alpha,
        ..Default::default()
    };
    let scale = pass_scale(&a, &b, (baseline.centre, candidate.centre));
    let mut d = differential(
        &side_profile(&a, baseline.centre, scale),
        &side_profile(&b, candidate.centre, scale),
        options,
    );
    d.notes.extend(profile_notes(&a, &b));
    Explanation::Differential(d)
}

/// A side's passes, from every profile of it, and its centre. A pass's
/// total is its samples, at least those its stacks and `other` hold; its
/// time per op is its own ([`sampled_time_per_op`]) times `scale`, or,
/// without a scale, the side's centre.
fn side_profile<'a>(profiles: &[&'a Profile], centre: f64, scale: Option<f64>) -> SideProfile<'a> {
    SideProfile {
        passes: passes(profiles)
            .map(|(profile, pass)| PassCounts {
                stacks: &pass.stacks,
                total: pass_total(pass),
                time_per_op: scale.map_or(centre, |k| {
                    k * sampled_time_per_op(profile, pass).unwrap_or(0.0)
                }),
            })
            .collect(),
        time_per_op: centre,
    }
}

/// Every pass of `profiles`, with the profile it is of.
fn passes<'a>(profiles: &[&'a Profile]) -> impl Iterator<Item = (&'a Profile, &'a ProfilePass)> {
    profiles
        .iter()
        .flat_map(|p| p.passes.iter().map(move |pass| (*p, pass)))
}

/// A pass's samples, at least those its stacks and `other` hold.
fn pass_total(pass: &ProfilePass) -> u64 {
    let named: u64 = pass.stacks.values().sum();
    pass.samples.max(named + pass.other)
}

/// A pass's sampled time per op (in the period's unit, ns for
/// `cpu-clock`): its samples × the sampling period ÷ the operations it
/// completed — the time the case's tasks (and the idle task on their CPUs)
/// were seen to spend per operation. Not the pass's wall time: on a busy
/// machine a pass is descheduled for a varying part of it, which is no
/// time of the case's. `None` when the pass does not say its operations.
fn sampled_time_per_op(profile: &Profile, pass: &ProfilePass) -> Option<f64> {
    let total = pass_total(pass);
    (pass.ops > 0.0 && total > 0 && profile.period > 0)
        .then(|| total as f64 * profile.period as f64 / pass.ops)
}

/// The one factor, common to both sides, that turns the passes' own times
/// per op into the unit and level of the timed centres: the centres' sum
/// over the mean pass times' sum. Each pass then weighs its shares by the
/// time per op it sampled itself, so a function's difference comes from the
/// interleaved passes alone — the timed comparison's own spread (a ratio
/// its test may call noise) does not enter it, and an A/A comparison names
/// nothing; the profiler's overhead, alike on both sides, is scaled away.
/// `None` (each pass takes its side's centre) when a pass does not say
/// its operations.
fn pass_scale(a: &[&Profile], b: &[&Profile], centres: (f64, f64)) -> Option<f64> {
    let mean_time = |side: &[&Profile]| -> Option<f64> {
        let times: Vec<f64> = passes(side)
            .map(|(profile, pass)| sampled_time_per_op(profile, pass))
            .collect::<Option<_>>()?;
        (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64)
    };
    let sum = mean_time(a)? + mean_time(b)?;
    let k = (centres.0 + centres.1) / sum;
    (k.is_finite() && k > 0.0).then_some(k)
}

/// What the profiles themselves say is missing, each side's once, and
/// whether they were sampled on different events.
fn profile_notes(a: &[&Profile], b: &[&Profile]) -> Vec<String> {
    let side_notes = |side: &[&Profile]| -> Vec<String> {
        let mut notes: Vec<String> = Vec::new();
        for note in side.iter().flat_map(|p| &p.notes) {
            if !notes.contains(note) {
                notes.push(note.clone());
            }
        }
        notes
    };
    let (on_a, on_b) = (side_notes(a), side_notes(b));
    let mut notes: Vec<String> = Vec::new();
    for note in &on_a {
        let role = if on_b.contains(note) {
            "both sides"
        } else {
            "baseline"
        };
        notes.push(format!("{role}: {note}"));
    }
    notes.extend(
        on_b.iter()
            .filter(|n| !on_a.contains(n))
            .map(|n| format!("candidate: {n}")),
    );
    let mut events: Vec<&str> = a.iter().chain(b).map(|p| p.event.as_str()).collect();
    events.sort_unstable();
    events.dedup();
    if events.len() > 1 {
        notes.push(format!(
            "the profiles were sampled on different events ({}): shares of one are compared \
             with shares of another",
            events.join(", ")
        ));
    }
    notes
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::document::ProfilePass;

    /// A profile of `passes` passes in which `planted` takes `share` of the
    /// samples and the rest the others, each pass a little different; the
    /// rest costs 90 ns per op whatever the share (so the operations a pass
    /// completes fall as the planted function grows, as they would).
    pub(crate) fn profile(planted: &str, share: f64, passes: usize) -> ProfileOutcome {
        let passes = (0..passes)
            .map(|i| {
                let samples = 1000 + 37 * i as u64;
                let hot = (share * samples as f64).round() as u64 + (i as u64 * 7) % 5;
                let mut stacks = BTreeMap::new();
                stacks.insert(format!("main;syscall;entry_SYSCALL_64;{planted}"), hot);
                stacks.insert("main;syscall;entry_SYSCALL_64".to_string(), samples - hot);
                let time_per_op_ns = 90.0 / (1.0 - share);
                ProfilePass {
                    ops: samples as f64 * 100_000.0 / time_per_op_ns,
                    wall_ns: 100_000_000,
                    samples,
                    lost: 0,
                    stacks,
                    other: 0,
                }
            })
            .collect();
        ProfileOutcome::Profiled(Profile {
            event: "cpu-clock".into(),
            period: 100_000,
            scope: "the case's tasks".into(),
            passes,
            notes: Vec::new(),
        })
    }

    fn series(profile: Option<ProfileOutcome>) -> Series {
        let mut s = crate::report::fixture().series[0].clone();
        s.profile = profile;
        s
    }

    fn side<'a>(label: &'a str, series: &'a [&'a Series], centre: f64) -> ChangeSide<'a> {
        ChangeSide {
            label,
            series,
            centre,
        }
    }

    #[test]
    fn a_planted_function_is_the_top_row_of_the_centres_difference() {
        let a = series(Some(profile("audit_filter_syscall", 0.10, 5)));
        let b = series(Some(profile("audit_filter_syscall", 0.31, 5)));
        let (a, b) = ([&a], [&b]);
        let explained = explain_change(side("a", &a, 170.0), side("b", &b, 221.0), 0.05);
        let Explanation::Differential(d) = explained else {
            panic!("{explained:?}")
        };
        assert_eq!(d.measured_change, 51.0);
        assert_eq!(d.rows[0].function, "audit_filter_syscall");
        assert!(d.rows[0].significant, "{d:#?}");
    }

    #[test]
    fn centres_apart_by_noise_alone_name_no_function() {
        // A/A: the same profile on both sides, the timed centres 12 % apart
        // (a ratio the timed test may call noise). Weighed by the centres,
        // every function would differ by 12 %; weighed by the passes' own
        // times per op, none does.
        let a = series(Some(profile("getppid", 0.4, 5)));
        let b = series(Some(profile("getppid", 0.4, 5)));
        let (a, b) = ([&a], [&b]);
        let explained = explain_change(side("a", &a, 100.0), side("b", &b, 112.0), 0.05);
        let Explanation::Differential(d) = explained else {
            panic!("{explained:?}")
        };
        assert_eq!(d.measured_change, 12.0);
        assert_eq!(d.significant, 0, "{d:#?}");
        assert!(d.rows.iter().all(|r| r.self_time.difference.abs() < 1e-9));
        assert!(
            (d.unexplained - 12.0).abs() < 1e-9,
            "the timed change stays unexplained"
        );
    }

    #[test]
    fn a_side_without_a_profile_is_named_with_why() {
        let profiled = series(Some(profile("f", 0.5, 3)));
        let unprofiled = series(None);
        let unavailable = series(Some(ProfileOutcome::Unavailable(
            "perf_event_paranoid is 3; set it to 1".into(),
        )));
        let (profiled, unprofiled, unavailable) = ([&profiled], [&unprofiled], [&unavailable]);
        let none = side("a.json", &unprofiled, 100.0);
        let explained = explain_change(none, side("b.json", &profiled, 100.0), 0.05);
        let Explanation::NoProfile(missing) = &explained else {
            panic!("{explained:?}")
        };
        assert_eq!(missing.len(), 1);
        assert_eq!(
            (missing[0].side.as_str(), missing[0].label.as_str()),
            ("baseline", "a.json")
        );
        assert!(missing[0].words().contains("--profile"));
        assert!(explained.profiling_asked());
        let explained = explain_change(none, side("b.json", &unavailable, 100.0), 0.05);
        let Explanation::NoProfile(missing) = &explained else {
            panic!("{explained:?}")
        };
        assert_eq!(missing.len(), 2);
        assert!(
            missing[1].words().contains("perf_event_paranoid"),
            "{missing:?}"
        );
        assert!(explained.profiling_asked());
        let neither = explain_change(none, none, 0.05);
        assert!(!neither.profiling_asked());
    }

    #[test]
    fn the_measured_change_is_the_difference_of_the_centres_the_verdict_compares() {
        // Configurations of one run (paired) and two saved documents
        // (unpaired): each explanation's sides are the row's centres.
        let mut doc = crate::report::fixture();
        for s in doc.series.iter_mut().filter(|s| s.key.bench == "syscall") {
            let share = if s.key.config == "a" { 0.1 } else { 0.3 };
            s.profile = Some(profile("audit_filter_syscall", share, 4));
        }
        let paired = crate::compare::paired(&doc, Default::default()).unwrap();
        let docs = [("a".to_string(), doc.clone()), ("b".to_string(), doc)];
        let saved = crate::compare::compare(&docs, Default::default()).unwrap();
        for c in [&paired, &saved] {
            let row = c.rows.iter().find(|r| r.key.bench == "syscall").unwrap();
            assert_eq!(row.explanations.len(), row.changes.len());
            let Explanation::Differential(d) = &row.explanations[0] else {
                panic!("{:?}", row.explanations)
            };
            let (a, b) = (row.summaries[0].median, row.summaries[1].median);
            assert_eq!((d.baseline_per_op, d.candidate_per_op), (a, b));
            assert!((d.measured_change - (b - a)).abs() < 1e-9);
        }
        // Saved runs' cases without profiles: both sides named, never profiled.
        let other = saved.rows.iter().find(|r| r.key.bench == "ctx").unwrap();
        assert!(matches!(&other.explanations[0], Explanation::NoProfile(m) if m.len() == 2));
        assert!(!other.explanations[0].profiling_asked());
        let row = paired
            .rows
            .iter()
            .find(|r| r.key.bench == "syscall")
            .unwrap();
        let Explanation::Differential(d) = &row.explanations[0] else {
            unreachable!()
        };
        assert_eq!(d.rows[0].function, "audit_filter_syscall");
        assert!(d.rows[0].self_time.difference > 0.0);
    }
}
