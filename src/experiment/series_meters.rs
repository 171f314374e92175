//! The counters and energy of a series: per-operation values of each sample
//! (rusage and energy from the harness's [`MeterDelta`]s of the timed
//! samples, perf from its counting pass — right after the samples, or once
//! for the whole run after its rounds) and their summaries, kept in step
//! when the rounds of a configuration run are merged.

use std::collections::BTreeMap;

use crate::document::Series;
use crate::measure::RawSample;
use crate::measure::energy::EnergyDomain;
use crate::measure::meters::{self, MeterDelta, Meters, PerfPass};
use crate::stats::summarize;

/// Sets the series' counters, energy and their unavailability reasons:
/// rusage and energy per timed sample (`deltas`, `raw`), perf per batch of
/// the counting pass (`perf`).
pub(super) fn attach(
    series: &mut Series,
    meters: &Meters,
    deltas: &[MeterDelta],
    raw: &[RawSample],
    ops_per_iter: f64,
    perf: &PerfPass,
) {
    let domains = meters.energy_domains();
    let per_op = meters::per_op(deltas, raw, ops_per_iter, &domains);
    series.counter_samples = per_op.counters;
    series.counters_unavailable.clear();
    if let Some(why) = meters.tlb_unavailable() {
        series
            .counters_unavailable
            .insert("tlb_shootdowns".into(), why);
    }
    // A pass counted later is attached then; asking now would probe the events.
    if *perf != PerfPass::Later {
        attach_perf(series, meters, ops_per_iter, perf);
    }
    series.energy = per_op
        .energy
        .into_iter()
        .filter_map(|(zone, (per_op, watts))| Some((zone, energy_domain(per_op, watts)?)))
        .collect();
    series.energy_unavailable = meters.energy_unavailable().map(str::to_string);
    if series.energy_unavailable.is_none() && !domains.is_empty() && series.energy.is_empty() {
        series.energy_unavailable =
            Some("unavailable: a RAPL zone could not be read during the case".into());
    }
    summarize_counters(series);
}

/// Sets the series' perf counters from a counting pass (per batch), the
/// fraction of time multiplexed ones counted, and why the others are
/// missing; then summarizes every counter.
pub(super) fn attach_perf(
    series: &mut Series,
    meters: &Meters,
    ops_per_iter: f64,
    perf: &PerfPass,
) {
    match perf {
        PerfPass::Counted { raw, deltas } => {
            let counted = meters::per_op(deltas, raw, ops_per_iter, &[]);
            series.counter_samples.extend(counted.counters);
            series.perf_pass = raw.clone();
            for (name, running) in deltas.iter().flat_map(|d| &d.perf_running) {
                note_scaled(series, name, *running);
                if *running == 0.0 {
                    let why = "not counted: the kernel multiplexed the PMU's counters and this \
                               event never ran in a batch of the counting pass";
                    series
                        .counters_unavailable
                        .insert(name.to_string(), why.into());
                }
            }
        }
        PerfPass::Skipped(why) => {
            for name in meters.perf_names() {
                series.counters_unavailable.insert(name.into(), why.clone());
            }
        }
        PerfPass::NotRun | PerfPass::Later => {}
    }
    for (name, why) in meters.counters_unavailable() {
        series.counters_unavailable.entry(name).or_insert(why);
    }
    summarize_counters(series);
}

/// The perf counters, counting pass and scaling of `from` (a guest's series
/// of the same case, measured with perf on) in place of `into`'s.
pub(super) fn take_perf(into: &mut Series, from: &Series) {
    let is_perf = |name: &str| crate::measure::counters::PERF_NAMES.contains(&name);
    into.counter_samples.retain(|name, _| !is_perf(name));
    into.counters_unavailable.retain(|name, _| !is_perf(name));
    for (name, values) in from.counter_samples.iter().filter(|(n, _)| is_perf(n)) {
        into.counter_samples.insert(name.clone(), values.clone());
    }
    for (name, why) in from.counters_unavailable.iter().filter(|(n, _)| is_perf(n)) {
        into.counters_unavailable.insert(name.clone(), why.clone());
    }
    into.perf_pass = from.perf_pass.clone();
    into.perf_scaled = from.perf_scaled.clone();
    summarize_counters(into);
}

/// Records that perf counter `name` counted only `running` of its enabled
/// time in some batch (the smallest such fraction is kept).
fn note_scaled(series: &mut Series, name: &str, running: f64) {
    let least = series
        .perf_scaled
        .entry(name.to_string())
        .or_insert(running);
    *least = least.min(running);
}

/// Appends `new`'s per-sample counter and energy values to `into`'s (the same case, a later round).
pub(super) fn merge(into: &mut Series, new: &Series) {
    // A counter missing from either side would misalign the samples: drop it.
    into.counter_samples
        .retain(|name, _| new.counter_samples.contains_key(name));
    for (name, values) in into.counter_samples.iter_mut() {
        values.extend(&new.counter_samples[name]);
    }
    // A dropped counter keeps its reason (a round interrupted before its counting pass).
    for (name, why) in &new.counters_unavailable {
        if !into.counter_samples.contains_key(name) {
            into.counters_unavailable
                .entry(name.clone())
                .or_insert_with(|| why.clone());
        }
    }
    if into.perf_pass.is_empty() || new.perf_pass.is_empty() {
        into.perf_pass.clear();
    } else {
        into.perf_pass.extend(&new.perf_pass);
    }
    for (name, running) in &new.perf_scaled {
        note_scaled(into, name, *running);
    }
    let zones: Vec<String> = into.energy.keys().cloned().collect();
    for zone in zones {
        let merged = new.energy.get(&zone).and_then(|n| {
            let old = &into.energy[&zone];
            let per_op = [&old.samples_joules_per_op[..], &n.samples_joules_per_op[..]].concat();
            let watts = [&old.samples_watts[..], &n.samples_watts[..]].concat();
            energy_domain(per_op, watts)
        });
        match merged {
            Some(d) => {
                into.energy.insert(zone, d);
            }
            None => {
                into.energy.remove(&zone);
            }
        }
    }
}

/// Recomputes the counter summaries from the per-sample values.
pub(super) fn summarize_counters(series: &mut Series) {
    series.counters = series
        .counter_samples
        .iter()
        .filter_map(|(name, values)| Some((name.clone(), summarize(values)?)))
        .collect::<BTreeMap<_, _>>();
}

fn energy_domain(per_op: Vec<f64>, watts: Vec<f64>) -> Option<EnergyDomain> {
    Some(EnergyDomain {
        joules_per_op: summarize(&per_op)?,
        watts: summarize(&watts)?,
        samples_joules_per_op: per_op,
        samples_watts: watts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series_with(counters: &[(&str, Vec<f64>)]) -> Series {
        let doc = r#"{"bench":"b","case":"c","config":"default","params":{},"unit":"ns","op":"o",
            "anchor":"","pin":"none","cpus":[],"samples":[1.0],"summary":{"n":1,"median":1.0,"mean":1.0,
            "stddev":0.0,"min":1.0,"max":1.0,"cv":0.0,"mad":0.0,"ci_low":1.0,"ci_high":1.0,"ci_level":0.95,
            "ci_coverage":0.5},"raw":[],"rejected":[],"overhead":{"timer_ns":0.0,"loop_ns_per_iter":0.0},
            "ops_per_iter":1.0}"#;
        let mut s: Series = serde_json::from_str(doc).unwrap();
        s.counter_samples = counters
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect();
        summarize_counters(&mut s);
        s
    }

    #[test]
    fn rounds_merge_counters_present_in_both() {
        let mut a = series_with(&[("user_ns", vec![1.0, 2.0]), ("cycles", vec![5.0, 5.0])]);
        let b = series_with(&[("user_ns", vec![3.0]), ("page_faults", vec![9.0])]);
        merge(&mut a, &b);
        summarize_counters(&mut a);
        assert_eq!(a.counter_samples.len(), 1, "{:?}", a.counter_samples);
        assert_eq!(a.counter_samples["user_ns"], [1.0, 2.0, 3.0]);
        assert_eq!(a.counters["user_ns"].median, 2.0);
        assert_eq!(a.counters["user_ns"].n, 3);
    }

    #[test]
    fn rounds_append_their_counting_passes_or_say_why_perf_is_missing() {
        let batch = RawSample {
            iters: 10,
            elapsed_ns: 100,
        };
        let mut a = series_with(&[("context_switches", vec![2.0])]);
        a.perf_pass = vec![batch];
        let mut b = series_with(&[("context_switches", vec![2.5])]);
        b.perf_pass = vec![batch];
        merge(&mut a, &b);
        assert_eq!(a.perf_pass.len(), 2);
        assert_eq!(a.counter_samples["context_switches"], [2.0, 2.5]);
        // A round interrupted before its pass: perf is dropped, with the reason.
        let mut c = series_with(&[]);
        c.counters_unavailable
            .insert("context_switches".into(), "not counted: interrupted".into());
        merge(&mut a, &c);
        assert!(a.perf_pass.is_empty());
        assert!(!a.counter_samples.contains_key("context_switches"));
        assert_eq!(
            a.counters_unavailable["context_switches"],
            "not counted: interrupted"
        );
    }
}
