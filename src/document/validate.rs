//! The checks every document passes when it is read (`store::parse_document`,
//! so files and stored runs alike, for `compare`, `report`, `plot`, `export`
//! and `import`): what the statistics and the reports take for granted. A
//! document osbench wrote always passes; one that was edited, truncated by
//! hand or written by something else may not, and is then refused with the
//! series and the problem named, instead of crashing a reader or giving an
//! absurd comparison. The rules are listed in docs/result-document.md
//! ("What a reader checks"); keep the two in step.

use super::{ComparisonRecord, Document, ReferenceSeries, Series, SeriesKind, Unit};
use crate::stats::Summary;

/// The largest magnitude any per-operation time may have: 10⁶ s (11.6 days).
pub const MAX_SECONDS: f64 = 1e6;

/// The names a document gives its run (label, host, the environment's
/// host name) as `--label` takes them: no control characters (ESC, BEL,
/// NUL, CR, LF…), which a terminal would obey when `history` shows them.
/// Checked where documents come in from outside (`import`), not on every
/// read, so runs already stored stay readable (their names are shown
/// escaped: [`crate::text::printable`]).
pub fn names(doc: &Document) -> Result<(), String> {
    let names = [
        ("run.label", doc.run.label.as_deref()),
        ("run.host", doc.run.host.as_deref()),
        ("env.hostname", Some(doc.env.hostname.as_str())),
    ];
    for (field, name) in names {
        if let Some(name) = name.filter(|n| n.chars().any(char::is_control)) {
            return Err(format!(
                "{field} '{}' contains control characters (line breaks, escapes), which \
                 `--label` refuses too; fix the document",
                crate::text::printable(name)
            ));
        }
    }
    Ok(())
}

/// Checks `doc`; the error names the series (or comparison) and the problem.
pub fn validate(doc: &Document) -> Result<(), String> {
    super::meta::check(&doc.run.meta)?;
    for (i, s) in doc.series.iter().enumerate() {
        series(s).map_err(|problem| {
            format!(
                "series {} (bench {}, case {}, config {}): {problem}",
                i + 1,
                s.key.bench,
                s.key.case,
                s.key.config
            )
        })?;
    }
    if let Some(floor) = doc.run.time.as_ref().and_then(|t| t.floor.as_ref()) {
        reference(floor, Unit::S, 0.0).map_err(|p| format!("run.time.floor: {p}"))?;
    }
    for (i, c) in doc.comparisons.iter().enumerate() {
        comparison(c).map_err(|problem| {
            format!(
                "comparison {} ({} {}, {} against {}): {problem}",
                i + 1,
                c.bench,
                c.case,
                c.candidate,
                c.baseline
            )
        })?;
    }
    Ok(())
}

/// The largest magnitude of a time in `unit`.
fn limit(unit: Unit) -> f64 {
    MAX_SECONDS * 1e9 / unit.ns()
}

/// `value` is a finite time in `unit` no larger in magnitude than
/// [`MAX_SECONDS`] (a unit this osbench does not know: than 10⁶ s in ns), for
/// readers of values stored outside a document (a store's medians).
pub fn plausible_time(what: &str, value: f64, unit: Option<Unit>) -> Result<(), String> {
    time(what, value, unit.unwrap_or(Unit::Ns), f64::INFINITY)
}

/// `value` is a finite time in `unit` no further below zero than `allowance`
/// and no larger than [`MAX_SECONDS`].
fn time(what: &str, value: f64, unit: Unit, allowance: f64) -> Result<(), String> {
    if !value.is_finite() {
        return Err(format!("{what} is not a finite number"));
    }
    if value.abs() > limit(unit) {
        return Err(format!(
            "{what} is {value:e} {unit}, more than {MAX_SECONDS:e} s per operation"
        ));
    }
    // A little slack for rounding in the subtraction that made the value.
    if value < -(allowance * (1.0 + 1e-9) + 1e-12 * limit(unit) / MAX_SECONDS) {
        return Err(if allowance > 0.0 {
            format!(
                "{what} is {value} {unit}, further below zero than the {allowance} {unit} \
                 subtracted from it"
            )
        } else {
            format!(
                "{what} is {value} {unit}; nothing was subtracted from it, so it cannot be negative"
            )
        });
    }
    Ok(())
}

/// A non-negative finite number (an overhead, a count, a spread).
fn non_negative(what: &str, value: f64) -> Result<(), String> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(format!("{what} is {value}; it must be a finite number ≥ 0"))
    }
}

fn times(what: &str, values: &[f64], unit: Unit, allowance: f64) -> Result<(), String> {
    for (k, &v) in values.iter().enumerate() {
        time(&format!("{what}[{k}]"), v, unit, allowance)?;
    }
    Ok(())
}

/// A summary's fields are finite, in order, and it counts `n` values.
fn summary(what: &str, s: &Summary, n: usize) -> Result<(), String> {
    if s.n != n {
        return Err(format!("{what}.n is {} but there are {n} samples", s.n));
    }
    summary_values(what, s)
}

fn summary_values(what: &str, s: &Summary) -> Result<(), String> {
    let fields = [
        ("median", s.median),
        ("mean", s.mean),
        ("stddev", s.stddev),
        ("min", s.min),
        ("max", s.max),
        ("cv", s.cv),
        ("mad", s.mad),
        ("ci_low", s.ci_low),
        ("ci_high", s.ci_high),
        ("ci_level", s.ci_level),
        ("ci_coverage", s.ci_coverage),
    ];
    for (name, v) in fields {
        if !v.is_finite() {
            return Err(format!("{what}.{name} is not a finite number"));
        }
    }
    for (name, v) in [("stddev", s.stddev), ("cv", s.cv), ("mad", s.mad)] {
        non_negative(&format!("{what}.{name}"), v)?;
    }
    if !(s.min <= s.median && s.median <= s.max) {
        return Err(format!(
            "{what} is out of order (min {}, median {}, max {})",
            s.min, s.median, s.max
        ));
    }
    Ok(())
}

/// A reference (a stand-in whose median was subtracted, or `osbench time`'s floor).
fn reference(r: &ReferenceSeries, unit: Unit, allowance: f64) -> Result<(), String> {
    if r.samples.is_empty() {
        return Err("samples is empty; a reference needs at least one sample".into());
    }
    times("samples", &r.samples, unit, allowance)?;
    summary("summary", &r.summary, r.samples.len())?;
    for name in ["median", "min", "max"] {
        let v = match name {
            "median" => r.summary.median,
            "min" => r.summary.min,
            _ => r.summary.max,
        };
        time(&format!("summary.{name}"), v, unit, allowance)?;
    }
    Ok(())
}

/// Checks one series (a guest's reply is checked this way before it joins
/// the run's document).
pub fn series(s: &Series) -> Result<(), String> {
    let allowance = allowance(s)?;
    let n = samples_and_summary(s, allowance)?;
    parts(s, n, allowance)?;
    measures(s)
}

/// Checks the overheads and the stand-in, and returns how far below zero a
/// per-operation value may lie once they were subtracted.
fn allowance(s: &Series) -> Result<f64, String> {
    let unit = s.unit;
    if !(s.ops_per_iter.is_finite() && s.ops_per_iter > 0.0) {
        return Err(format!(
            "ops_per_iter is {}; it must be a positive number",
            s.ops_per_iter
        ));
    }
    if let Some(b) = s.bytes_per_op
        && !(b.is_finite() && b > 0.0)
    {
        return Err(format!(
            "bytes_per_op is {b}; a bandwidth series moves a positive number of bytes per op"
        ));
    }
    non_negative("overhead.timer_ns", s.overhead.timer_ns)?;
    non_negative("overhead.loop_ns_per_iter", s.overhead.loop_ns_per_iter)?;
    // What was subtracted from each sample, per operation: the clock read (once
    // per sample of at least one iteration) and the loop, in the unit; the
    // stand-in's samples had the same subtracted, one operation per iteration.
    let per_iter = (s.overhead.timer_ns + s.overhead.loop_ns_per_iter) / unit.ns();
    time("overhead", per_iter, unit, 0.0)?;
    let stand_in = match &s.baseline {
        Some(b) => {
            reference(b, unit, per_iter).map_err(|p| format!("baseline.{p}"))?;
            b.summary.median.max(0.0)
        }
        None => 0.0,
    };
    let allowance = match s.kind {
        // One event's latency each: nothing is subtracted.
        SeriesKind::Distribution => 0.0,
        SeriesKind::Samples => per_iter / s.ops_per_iter + stand_in,
    };

    Ok(allowance)
}

/// Checks the samples and their summary; returns how many samples there are.
fn samples_and_summary(s: &Series, allowance: f64) -> Result<usize, String> {
    let unit = s.unit;
    if s.samples.is_empty() {
        return Err("samples is empty; a series needs at least one sample".into());
    }
    times("samples", &s.samples, unit, allowance)?;
    let n = s.samples.len();
    let histogram_events = s.histogram.as_ref().map(|h| {
        h.ns.iter()
            .try_fold(0u64, |sum, [_, count]| sum.checked_add(*count))
    });
    if let Some(None) = histogram_events {
        return Err("histogram counts more events than a 64-bit count holds".into());
    }
    match histogram_events.flatten() {
        // A distribution may keep an excerpt of its events as samples when its
        // histogram counts them all.
        Some(events) if s.kind == SeriesKind::Distribution && s.summary.n > n => {
            if events != s.summary.n as u64 {
                return Err(format!(
                    "summary.n is {} but there are {n} samples and the histogram counts {events} events",
                    s.summary.n
                ));
            }
            summary_values("summary", &s.summary)?;
        }
        _ => summary("summary", &s.summary, n)?,
    }
    for (name, v) in [
        ("median", s.summary.median),
        ("mean", s.summary.mean),
        ("min", s.summary.min),
        ("max", s.summary.max),
    ] {
        time(&format!("summary.{name}"), v, unit, allowance)?;
    }
    // The interval's bounds are not times: over two rounds whose medians differ
    // tenfold, t(0.975, 1) = 12.7 on the logs puts the upper bound beyond any
    // plausible time, and a plain t interval may reach below zero. They need
    // only be finite (checked above), in order, and a finite width apart.
    let (low, high) = (s.summary.ci_low, s.summary.ci_high);
    if low > high {
        return Err(format!(
            "summary.ci_low {low} is above summary.ci_high {high}"
        ));
    }
    if !(high - low).is_finite() {
        return Err(format!(
            "summary's interval {low:e} – {high:e} {unit} is wider than a number holds"
        ));
    }
    Ok(n)
}

/// Checks how the `n` samples divide into raw samples, rounds and invocations.
fn parts(s: &Series, n: usize, allowance: f64) -> Result<(), String> {
    if !s.raw.is_empty() && s.raw.len() != n {
        return Err(format!(
            "raw has {} samples but samples has {n}",
            s.raw.len()
        ));
    }
    if let Some(k) = s.raw.iter().position(|r| r.iters == 0) {
        return Err(format!("raw[{k}] has 0 iterations"));
    }
    counts_add_up("round_samples", &s.round_samples, n)?;
    if !s.round_samples.is_empty()
        && !s.rounds.is_empty()
        && s.rounds.len() != s.round_samples.len()
    {
        return Err(format!(
            "rounds has {} medians but round_samples {} rounds",
            s.rounds.len(),
            s.round_samples.len()
        ));
    }
    counts_add_up("invocation_samples", &s.invocation_samples, n)?;
    if !s.invocations.is_empty() && s.invocations.len() != s.invocation_samples.len() {
        return Err(format!(
            "invocations has {} medians but invocation_samples {} invocations",
            s.invocations.len(),
            s.invocation_samples.len()
        ));
    }
    times("rounds", &s.rounds, s.unit, allowance)?;
    times("invocations", &s.invocations, s.unit, allowance)?;
    Ok(())
}

/// `counts` (samples per round or invocation), when given, add up to `n`.
fn counts_add_up(name: &str, counts: &[usize], n: usize) -> Result<(), String> {
    if counts.is_empty() {
        return Ok(());
    }
    let total = counts.iter().try_fold(0usize, |sum, &k| sum.checked_add(k));
    if total != Some(n) {
        return Err(format!(
            "{name} adds up to {} but samples has {n}",
            total.map_or_else(|| "more than can be counted".into(), |t| t.to_string())
        ));
    }
    Ok(())
}

/// Checks the quantiles, CPU time, counters, energy and command runs.
fn measures(s: &Series) -> Result<(), String> {
    let unit = s.unit;
    if let Some(q) = &s.quantiles {
        for (name, v) in [
            ("p50", q.p50),
            ("p90", q.p90),
            ("p99", q.p99),
            ("p99.9", q.p99_9),
            ("max", q.max),
        ] {
            time(&format!("quantiles.{name}"), v, unit, 0.0)?;
        }
    }
    if let Some(cpu) = s.cpu_per_op {
        time("cpu_per_op", cpu, unit, 0.0)?;
    }
    for (name, c) in &s.counters {
        summary_values(&format!("counters.{name}"), c)?;
    }
    for (name, values) in &s.counter_samples {
        if let Some(k) = values.iter().position(|v| !v.is_finite()) {
            return Err(format!(
                "counter_samples.{name}[{k}] is not a finite number"
            ));
        }
    }
    for (zone, e) in &s.energy {
        summary_values(&format!("energy.{zone}.joules_per_op"), &e.joules_per_op)?;
        summary_values(&format!("energy.{zone}.watts"), &e.watts)?;
        let all = e.samples_joules_per_op.iter().chain(&e.samples_watts);
        if all.into_iter().any(|v| !v.is_finite()) {
            return Err(format!(
                "energy.{zone} has a sample that is not a finite number"
            ));
        }
    }
    for (k, r) in s.runs.iter().enumerate() {
        for (name, v) in [
            ("wall_s", r.wall_s),
            ("user_s", r.user_s),
            ("sys_s", r.sys_s),
        ] {
            time(&format!("runs[{k}].{name}"), v, Unit::S, 0.0)?;
        }
    }
    Ok(())
}

fn comparison(c: &ComparisonRecord) -> Result<(), String> {
    for (name, v) in [
        ("ratio", c.ratio),
        ("ci_low", c.ci_low),
        ("ci_high", c.ci_high),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(format!("{name} is {v}; a ratio of times must be positive"));
        }
    }
    if !(c.ci_low <= c.ratio && c.ratio <= c.ci_high) {
        return Err(format!(
            "the ratio {} is outside its interval {} – {}",
            c.ratio, c.ci_low, c.ci_high
        ));
    }
    if !(0.0..=1.0).contains(&c.p_value) {
        return Err(format!("p_value is {}; it must be in 0 – 1", c.p_value));
    }
    Ok(())
}
