//! The counters and energy of a series: per-operation values of each sample
//! (from the harness's [`MeterDelta`]s) and their summaries, kept in step when
//! the rounds of a configuration run are merged.

use std::collections::BTreeMap;

use crate::document::Series;
use crate::measure::RawSample;
use crate::measure::energy::EnergyDomain;
use crate::measure::meters::{self, MeterDelta, Meters};
use crate::stats::summarize;

/// Sets the series' counters, energy and their unavailability reasons.
pub(super) fn attach(
    series: &mut Series,
    meters: &Meters,
    deltas: &[MeterDelta],
    raw: &[RawSample],
    ops_per_iter: f64,
) {
    let domains = meters.energy_domains();
    let per_op = meters::per_op(deltas, raw, ops_per_iter, &domains);
    series.counter_samples = per_op.counters;
    series.counters_unavailable = meters.counters_unavailable().clone();
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

/// Appends `new`'s per-sample counter and energy values to `into`'s (the same case, a later round).
pub(super) fn merge(into: &mut Series, new: &Series) {
    for (name, values) in &new.counter_samples {
        into.counter_samples
            .entry(name.clone())
            .or_default()
            .extend(values);
    }
    // A counter missing from one round would misalign the samples: drop it.
    into.counter_samples
        .retain(|name, _| new.counter_samples.contains_key(name));
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
