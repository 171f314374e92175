//! One case of a run: placed, set up, measured by the harness by its
//! family's sampling method, torn down, and turned into a [`Series`] — per
//! operation, in the family's unit, with the stand-in subtracted, noise
//! flagged, counters and energy attached. Also how the series of one case's
//! rounds are merged. No ordering, no rounds, no output: that is the run's.

use super::series_meters;
use crate::bench::util::select::Case;
use crate::bench::{self, BenchDef, Params, StandIn};
use crate::document::{
    LoadRun, LoadSpec, NoiseFlag, ReferenceSeries, Series, SeriesKind, TargetOutcome,
};
use crate::error::{Error, Result};
use crate::measure::load::{Loads, unix_ns};
use crate::measure::placement::{Pin, PinGuard, Placement, pin_current_thread};
use crate::measure::{
    Clock, Events, Harness, Measured, Measurement, Meters, PerfPass, RawSample, SampleMethod,
    Workload,
};
use crate::stats::replicates::round_interval;
use crate::stats::{bimodal, histogram, summarize};

/// Above this coefficient of variation a series is flagged "high-cv".
pub const NOISY_CV: f64 = 0.10;

/// Adds one round's series to the series of the same configuration and case.
pub(super) fn merge(
    done: &mut Vec<((usize, usize), Series)>,
    key: (usize, usize),
    mut new: Series,
) {
    new.rounds = vec![new.summary.median];
    new.round_samples = vec![new.samples.len()];
    let Some((_, s)) = done.iter_mut().find(|(k, _)| *k == key) else {
        done.push((key, new));
        return;
    };
    s.rounds.push(new.summary.median);
    s.round_samples.push(new.samples.len());
    let label = format!("round {}", s.rounds.len());
    append(s, new, &label);
}

/// Appends `new`'s samples, counters, noise flags, warnings (prefixed
/// with `label`: "round 3"), command runs (`time`'s, merged over boots)
/// and load runs to `s`, the same case measured earlier.
pub(super) fn append(s: &mut Series, new: Series, label: &str) {
    series_meters::merge(s, &new);
    if let (Some(a), Some(b)) = (s.cpu_per_op, new.cpu_per_op) {
        let (na, nb) = (s.samples.len() as f64, new.samples.len() as f64);
        s.cpu_per_op = Some((a * na + b * nb) / (na + nb));
    }
    s.samples.extend(new.samples);
    s.raw.extend(new.raw);
    s.rejected.extend(new.rejected);
    s.runs.extend(new.runs);
    s.loads.extend(new.loads);
    for flag in new.noise {
        if !s.noise.contains(&flag) {
            s.noise.push(flag);
        }
    }
    s.warnings
        .extend(new.warnings.into_iter().map(|w| format!("{label}: {w}")));
}

/// Recomputes the summary (and quantiles) of a series merged over several
/// rounds or invocations; with rounds, the median's interval is the one
/// over the round medians ([`round_interval`]).
pub(super) fn resummarize(mut s: Series) -> Series {
    if s.rounds.len() < 2 && s.invocations.len() < 2 {
        return s;
    }
    if let Some(summary) = summarize(&s.samples) {
        s.summary = summary;
    }
    // Samples of one round share its conditions: the rounds are the replicates
    // of the interval (invocations set theirs afterwards, from their medians).
    if s.rounds.len() >= 2
        && let Some((lo, hi)) = round_interval(s.summary.median, &s.rounds)
    {
        (s.summary.ci_low, s.summary.ci_high) = (lo, hi);
        s.summary.ci_coverage = s.summary.ci_level;
    }
    series_meters::summarize_counters(&mut s);
    if s.kind == SeriesKind::Distribution {
        // Every event of every round is in `samples`: rebuild the distribution from them.
        let unit_ns = s.unit.ns();
        let events: Vec<u64> = s
            .samples
            .iter()
            .map(|v| (v * unit_ns).round() as u64)
            .collect();
        set_distribution(&mut s, &events, unit_ns);
    }
    s
}

/// Quantiles (in the series' unit) and histogram buckets of `events_ns`.
fn set_distribution(series: &mut Series, events_ns: &[u64], unit_ns: f64) {
    let hist = histogram::histogram(events_ns);
    series.quantiles = Some(histogram::quantiles(&hist).scaled(1.0 / unit_ns));
    series.histogram = Some(histogram::buckets(&hist));
}

/// How a measured case ended.
#[derive(Debug)]
pub(super) enum CaseEnd {
    /// Its planned samples are in.
    Done,
    /// A signal cut it short; the series holds what was taken.
    Interrupted,
    /// It failed after some samples, which the series holds; the run stops with the error.
    Failed(Error),
}

/// Places, sets up, measures and tears down one case with `loads` running
/// beside it (started before its set-up, while this thread is not yet
/// pinned, so they inherit no placement of the case's; stopped after its
/// tear-down), and says how it ended.
pub(super) fn run_case<C: Clock>(
    case: &Case,
    pin: Option<Pin>,
    harness: &Harness<C>,
    loads: &[LoadSpec],
) -> Result<(Series, CaseEnd)> {
    let def = case.def;
    let threads = match case.params.get_opt("mode") {
        Some("threads") => (def.tasks)(&case.params),
        _ => 0,
    };
    let what = format!("{} {}", def.name, case.name());
    crate::measure::limits::check_address_space(&what, threads)?;
    // Dropped on an error below: the loads are killed and reaped.
    let running = Loads::start(loads);
    let (mut series, end, window) = measure_case(case, pin, harness)?;
    let runs = running.stop(window);
    attach_loads(&mut series, runs);
    Ok((series, end))
}

/// The loads' runs in `series`: a load that did not run throughout flags
/// it `load-failed`, one that had to be killed is a warning.
fn attach_loads(series: &mut Series, runs: Vec<LoadRun>) {
    for run in &runs {
        if let Some(why) = &run.failed {
            if !series.noise.contains(&NoiseFlag::LoadFailed) {
                series.noise.push(NoiseFlag::LoadFailed);
            }
            series.warnings.push(why.clone());
        }
        series.warnings.extend(run.killed.clone());
    }
    series.loads.extend(runs);
}

/// [`run_case`] without its loads: the series, how it ended, and the
/// window (Unix ns) in which the harness measured.
fn measure_case<C: Clock>(
    case: &Case,
    pin: Option<Pin>,
    harness: &Harness<C>,
) -> Result<(Series, CaseEnd, (u64, u64))> {
    let def = case.def;
    let (placement, _timing_thread) = place(case, pin)?;
    harness
        .meters()
        .count_tlb_shootdowns(def.counts_tlb_shootdowns);
    let mut workload = set_up(case, &placement)?;
    // Copies count their iterations with the loop's cost in, as will-it-scale does.
    let stand_in_def = match (&def.sampling, case.copies) {
        (bench::Sampling::Batched { stand_in }, None) => stand_in.as_ref(),
        _ => None,
    };
    // Dropping `workload` on an error here tears it down.
    let mut stand_in = stand_in_def.map(|s| (s.setup)(&case.params)).transpose()?;
    let how = sampling(
        case,
        stand_in.as_mut().map(|w| w.as_mut() as &mut dyn Workload),
        (def.ops_per_iter)(&case.params),
    );
    let from = unix_ns();
    let measured = harness.sample(workload.as_mut(), how);
    let window = (from, unix_ns());
    // Tear down even when measuring failed; the measuring error wins.
    let torn_down = workload
        .teardown()
        .and(stand_in.map_or(Ok(()), Workload::teardown));
    let measured = measured?;
    torn_down?;
    let (mut series, end, stop) = match measured {
        Measured::Samples { case: m, stand_in } => {
            let stand_in = stand_in.map(|m| *m).zip(stand_in_def);
            let stop = m.target_stop.clone();
            let end = match (&m.failed, m.interrupted) {
                (Some(e), _) => CaseEnd::Failed(Error::Measure(e.clone())),
                (None, true) => CaseEnd::Interrupted,
                (None, false) => CaseEnd::Done,
            };
            let series = sampled(case, &placement, harness.meters(), m, stand_in)?;
            (series, end, stop)
        }
        Measured::Events(e) => {
            let (series, interrupted) = distribution(case, &placement, harness, e)?;
            let why = "not sampled to the target: a latency distribution records its set \
                       number of events";
            let end = if interrupted {
                CaseEnd::Interrupted
            } else {
                CaseEnd::Done
            };
            (series, end, Some(why.to_string()))
        }
    };
    if let Some(target) = harness.target() {
        let s = &series.summary;
        let half = (s.ci_high - s.ci_low) / 2.0 / s.median.abs();
        series.target = Some(TargetOutcome {
            target: target.ci,
            reached: half <= target.ci,
            stopped_by: stop.unwrap_or_else(|| "interrupted".into()),
        });
    }
    Ok((series, end, window))
}

/// How the harness samples `case`: its family's method for its parameters.
pub(super) fn sampling<'a>(
    case: &Case,
    stand_in: Option<&'a mut dyn Workload>,
    ops_per_iter: f64,
) -> SampleMethod<'a> {
    let batched = |stand_in, own_loop| SampleMethod::Batched {
        stand_in,
        ops_per_iter,
        own_loop,
    };
    if case.copies.is_some() {
        // The copies count their own iterations; the window is timed whole.
        return batched(None, false);
    }
    let own_loop = (case.def.own_loop)(&case.params);
    match case.def.sampling {
        bench::Sampling::WholeRuns => SampleMethod::WholeRuns {
            samples: case.samples,
        },
        bench::Sampling::Events(count) => SampleMethod::Events(count(&case.params)),
        bench::Sampling::EventsFor(count) => match count(&case.params) {
            Some(events) => SampleMethod::Events(events),
            None => batched(stand_in, own_loop),
        },
        bench::Sampling::Batched { .. } => batched(stand_in, own_loop),
    }
}

/// Where `case` runs under `pin` (when none is given: the family's default
/// placement, else one-task cases on one CPU), with this (the timing)
/// thread pinned to its first CPU until the guard drops.
/// A sweep's copies are placed by their own placement ([`super::sweep`]).
pub(super) fn place(case: &Case, pin: Option<Pin>) -> Result<(Placement, Option<PinGuard>)> {
    if let Some(copies) = &case.copies {
        return Ok((super::sweep::placement(copies)?, None));
    }
    let placement = match pin.or(case.def.default_pin) {
        Some(p) => Placement::new(p)?,
        None if (case.def.tasks)(&case.params) == 1 => Placement::new(Pin::Same)?,
        None => Placement::unpinned(),
    };
    let guard = placement.cpu_of(0).map(pin_current_thread).transpose()?;
    Ok((placement, guard))
}

/// Sets `case` up where `placement` says: its family's set-up, or N copies
/// of it when swept.
pub(super) fn set_up(case: &Case, placement: &Placement) -> Result<Box<dyn Workload>> {
    match case.copies {
        Some(copies) => super::sweep::start(case, copies),
        None => (case.def.setup)(&case.params, placement),
    }
}

/// All the tasks `case` runs: its family's, times its copies.
fn all_tasks(case: &Case) -> usize {
    (case.def.tasks)(&case.params) * case.copies.map_or(1, |c| c.n)
}

/// The perf counting pass of `case` alone ([`Harness::count`]): placed and
/// set up as for its samples, counted, torn down. For a run that counts
/// each configuration × case once, after its rounds.
pub(super) fn count_case<C: Clock>(
    case: &Case,
    pin: Option<Pin>,
    harness: &Harness<C>,
) -> Result<PerfPass> {
    let (placement, _timing_thread) = place(case, pin)?;
    let mut workload = set_up(case, &placement)?;
    let how = sampling(case, None, 1.0);
    let counted = harness.count(workload.as_mut(), how);
    let torn_down = workload.teardown();
    let counted = counted?;
    torn_down?;
    Ok(counted)
}

/// A series of samples that each time many operations (less the stand-in's
/// median, when the family has one) or one whole run.
fn sampled(
    case: &Case,
    placement: &Placement,
    meters: &Meters,
    m: Measurement,
    stand_in: Option<(Measurement, &StandIn)>,
) -> Result<Series> {
    let def = case.def;
    let ops_per_iter = (def.ops_per_iter)(&case.params);
    let in_unit = |m: &Measurement, ops: f64| -> Vec<f64> {
        m.per_op_ns(ops)
            .iter()
            .map(|ns| ns / def.unit.ns())
            .collect()
    };
    let stand_in = match stand_in {
        Some((sm, s)) => {
            let samples = in_unit(&sm, 1.0);
            let summary = summarize(&samples).ok_or_else(|| not_finite(def, &case.params))?;
            Some(ReferenceSeries {
                op: (s.op)(&case.params),
                samples,
                summary,
                raw: sm.accepted,
            })
        }
        None => None,
    };
    let subtract = stand_in.as_ref().map_or(0.0, |b| b.summary.median);
    let samples: Vec<f64> = in_unit(&m, ops_per_iter)
        .iter()
        .map(|v| v - subtract)
        .collect();
    let mut series = new_series(case, placement, samples)?;
    series.warnings = m.warnings;
    flag_noise(&mut series, def, m.interrupted, all_tasks(case));
    if m.failed.is_some() {
        series.noise.push(NoiseFlag::Failed);
    }
    if series.samples.iter().any(|&v| v <= 0.0) {
        series.warnings.push(
            "some samples are not positive after subtracting the measured overhead; \
             the operation is too cheap for this method"
                .into(),
        );
    }
    series_meters::attach(
        &mut series,
        meters,
        &m.meters,
        &m.accepted,
        ops_per_iter,
        &m.perf,
    );
    if !m.run_counters.is_empty() {
        series.counter_samples.extend(m.run_counters);
        series_meters::summarize_counters(&mut series);
    }
    series.raw = m.accepted;
    series.rejected = m.rejected;
    series.overhead = m.overhead;
    series.ops_per_iter = ops_per_iter;
    series.baseline = stand_in;
    Ok(series)
}

/// A distribution of single-event latencies.
fn distribution<C: Clock>(
    case: &Case,
    placement: &Placement,
    harness: &Harness<C>,
    e: Events,
) -> Result<(Series, bool)> {
    let def = case.def;
    let unit_ns = def.unit.ns();
    let samples: Vec<f64> = e
        .latencies_ns
        .iter()
        .map(|&ns| ns as f64 / unit_ns)
        .collect();
    let mut series = new_series(case, placement, samples)?;
    series.kind = SeriesKind::Distribution;
    set_distribution(&mut series, &e.latencies_ns, unit_ns);
    series.cpu_per_op = e
        .cpu_ns
        .map(|cpu| cpu as f64 / e.latencies_ns.len() as f64 / unit_ns);
    series.overhead = harness.overhead();
    // One reading over the whole recording, divided by the events recorded.
    let whole = RawSample {
        iters: e.latencies_ns.len() as u64,
        elapsed_ns: e.wall_ns,
    };
    series_meters::attach(
        &mut series,
        harness.meters(),
        &[e.meters],
        &[whole],
        1.0,
        &e.perf,
    );
    if e.interrupted {
        series.noise.push(NoiseFlag::Interrupted);
        series.warnings.push(format!(
            "interrupted after {} of {} events",
            e.latencies_ns.len(),
            e.wanted
        ));
    }
    Ok((series, e.interrupted))
}

/// A series with its identity, placement, samples and summary; the rest empty.
fn new_series(case: &Case, placement: &Placement, samples: Vec<f64>) -> Result<Series> {
    let (def, params) = (case.def, &case.params);
    let summary = summarize(&samples).ok_or_else(|| not_finite(def, params))?;
    let mut series = Series::new(def.name, case.name(), def.unit, samples, summary);
    series.params = params.to_json(def);
    series.params.extend(
        (def.recorded)(params)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v)),
    );
    series.op = (def.op)(params);
    series.anchor = (def.anchor)(params);
    series.bytes_per_op = (def.bytes_per_op)(params);
    series.pin = placement.pin;
    series.cpus = placement.cpus_used(all_tasks(case));
    if let Some(copies) = &case.copies {
        series.params.extend(
            copies
                .recorded()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v)),
        );
        // A whole-run family's preparation is inside the loop the copies count.
        let prepared = match def.sampling {
            bench::Sampling::WholeRuns => "; each run's untimed preparation timed in",
            _ => "",
        };
        series.op = format!("{} (per task; {copies}{prepared})", series.op);
    }
    Ok(series)
}

/// Flags and explains spread the median hides: high CV, two clusters, an
/// interrupt. The family, `tasks` and the placement decide what two clusters
/// can come from.
fn flag_noise(series: &mut Series, def: &BenchDef, interrupted: bool, tasks: usize) {
    let unit = def.unit.symbol();
    if interrupted {
        series.noise.push(NoiseFlag::Interrupted);
    }
    let cv = series.summary.cv;
    if cv > NOISY_CV {
        series.noise.push(NoiseFlag::HighCv);
        series.warnings.push(format!(
            "high spread between samples (CV {:.1}%); trust only large differences, or take more \
             --samples",
            cv * 100.0
        ));
    }
    if let Some(modes) = bimodal(&series.samples) {
        series.noise.push(NoiseFlag::Bimodal);
        let machine = format!(
            "the machine switched modes: {}",
            two_cluster_causes(tasks, series.pin, one_cpu_allowed())
        );
        let causes = match def.two_clusters {
            Some(own) => format!("{own}; or {machine}"),
            None => machine,
        };
        series.warnings.push(format!(
            "samples in two clusters ({} near {}, {} near {} {unit}); {causes}",
            modes.low_count,
            crate::document::number::fmt_sig(modes.low),
            modes.high_count,
            crate::document::number::fmt_sig(modes.high),
        ));
    }
}

/// What can put a case's samples in two clusters: cross-CPU wake-ups only
/// where tasks wake each other across CPUs (more than one task, not all on
/// one CPU, whether by `--pin same` or by an affinity mask of one CPU, as
/// under `taskset -c 0`); the host's slow phases always.
pub(super) fn two_cluster_causes(tasks: usize, pin: Pin, one_cpu: bool) -> String {
    const PHASES: &str = "the host's slow phases, which hit every case measured then";
    match (tasks, pin) {
        (1, _) => format!("not cross-CPU wake-ups (it runs one task) but {PHASES}"),
        (_, Pin::Same) => {
            format!("not cross-CPU wake-ups (its tasks share one CPU, --pin same) but {PHASES}")
        }
        _ if one_cpu => format!(
            "not cross-CPU wake-ups (osbench may run on one CPU only: its affinity mask) but \
             {PHASES}"
        ),
        _ => "cross-CPU wake-ups on a VM (try --pin same) or the host's slow phases".to_string(),
    }
}

/// Whether this process may run on one CPU only (`taskset -c 0`).
fn one_cpu_allowed() -> bool {
    crate::measure::placement::allowed_cpus().is_ok_and(|cpus| cpus.len() == 1)
}

fn not_finite(def: &BenchDef, params: &Params) -> Error {
    Error::Bench {
        bench: def.name.to_string(),
        case: (def.case_name)(params),
        message: "a sample was not a finite number".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_clusters_blame_wake_ups_only_where_tasks_wake_across_cpus() {
        for pin in [Pin::None, Pin::Same, Pin::Spread] {
            let one = two_cluster_causes(1, pin, false);
            assert!(
                !one.contains("try --pin same") && one.contains("one task"),
                "{one}"
            );
        }
        let same = two_cluster_causes(2, Pin::Same, false);
        assert!(
            !same.contains("try --pin same") && same.contains("slow phases"),
            "{same}"
        );
        for pin in [Pin::None, Pin::Spread] {
            let two = two_cluster_causes(2, pin, false);
            assert!(
                two.contains("try --pin same") && two.contains("slow phases"),
                "{two}"
            );
            let masked = two_cluster_causes(2, pin, true);
            assert!(
                !masked.contains("try --pin same") && masked.contains("affinity mask"),
                "{masked}"
            );
        }
    }

    #[test]
    fn only_a_case_with_its_own_loop_is_sampled_without_the_empty_loop() {
        let own_loop = |case: &str, copies: Option<crate::measure::copies::Copies>| {
            let def = &bench::rseq::DEF;
            let case = Case {
                def,
                params: Params::new(def, &[("case", case)]),
                samples: None,
                copies,
            };
            match sampling(&case, None, 1.0) {
                SampleMethod::Batched { own_loop, .. } => own_loop,
                _ => panic!("rseq is batched"),
            }
        };
        assert!(own_loop("rseq", None));
        assert!(!own_loop("lock", None));
        // Copies count their own iterations; their windows are timed whole.
        let two = crate::measure::copies::Copies {
            n: 2,
            mode: crate::measure::copies::Mode::Processes,
            place: crate::measure::copies::Place::Spread,
        };
        assert!(!own_loop("rseq", Some(two)));
    }

    #[test]
    fn a_family_that_names_its_own_cause_of_two_clusters_is_named_first() {
        let samples = vec![1.7, 2.0, 1.7, 2.0, 1.7, 2.0, 1.7, 2.0, 1.7, 2.0, 1.7];
        let bimodal_series = || {
            let summary = summarize(&samples).unwrap();
            Series::new(
                "memlat",
                "128K/128B".into(),
                crate::bench::Unit::Ns,
                samples.clone(),
                summary,
            )
        };
        let mut series = bimodal_series();
        flag_noise(&mut series, &bench::memlat::DEF, false, 1);
        assert!(series.noise.contains(&NoiseFlag::Bimodal));
        let said = series.warnings.join("\n");
        assert!(said.contains("; the pages under its buffers"), "{said}");
        assert!(said.contains("or the machine switched modes"), "{said}");
        let mut series = bimodal_series();
        flag_noise(&mut series, &bench::syscall::DEF, false, 1);
        let said = series.warnings.join("\n");
        assert!(
            said.contains("; the machine switched modes") && !said.contains("pages"),
            "{said}"
        );
    }
}
