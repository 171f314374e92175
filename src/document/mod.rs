//! The result document: what `osbench run --json FILE` writes and what later
//! commands (compare, report, history) read. Schema `osbench/1`, specified
//! field by field in `docs/result-document.md`; keep the two in step.
//!
//! The bottom layer: plain data that every other module reads. Its types come
//! from nothing above it (only `stats` summaries and the `env` capture).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::env::Environment;
use crate::stats::Summary;
use crate::stats::histogram::{Buckets, Quantiles};

mod case_key;
mod config;
pub mod explanation;
mod flags;
mod invocation;
mod knob;
mod load;
pub mod meta;
pub mod number;
mod observers;
mod pin;
pub mod profile;
mod sample;
mod unit;
pub mod validate;

pub use case_key::CaseKey;
pub use config::{
    BootParameter, Config, DEFAULT_CONFIG, GuestInfo, GuestSpec, InitHandOff, Override, TimeInfo,
};
pub use explanation::{Explanation, MissingProfile};
pub use flags::{Direction, NoiseFlag};
pub use invocation::{Invocation, InvocationSpread, ReplicateUnit, Replication, SentinelReading};
pub use knob::{
    Knob, KnobRecord, KnobSetting, SCHED_FEATURES_PATH, SYSCTL_ROOT, TYPED_KNOBS, TypedKnob,
    knob_names,
};
pub use load::{LOAD_KINDS, LoadKind, LoadRun, LoadSpec, load_rates};
pub use observers::{Observers, ProbeSpec};
pub use pin::Pin;
pub use profile::{Profile, ProfileOutcome, ProfilePass};
pub use sample::{CommandRun, EnergyDomain, Overhead, Policy, RawSample};
pub use unit::{SeriesKind, Unit};

/// The schema identifier written into every document.
pub const SCHEMA: &str = "osbench/1";

/// The benchmark name of the series `osbench time` writes (one per command).
pub const COMMAND_BENCH: &str = "command";

/// One run's results: environment, settings, and one series per case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub schema: String,
    pub tool: Tool,
    pub env: Environment,
    pub run: RunInfo,
    pub series: Vec<Series>,
    /// Runs with configurations: each candidate configuration against the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<ComparisonRecord>,
}

impl Document {
    /// A document of this osbench with no comparisons yet.
    pub fn new(env: Environment, run: RunInfo, series: Vec<Series>) -> Self {
        Self {
            schema: SCHEMA.into(),
            tool: Tool::this(),
            env,
            run,
            series,
            comparisons: Vec::new(),
        }
    }

    /// The host the run is filed under: its fleet name, else its hostname.
    pub fn host(&self) -> &str {
        self.run.host.as_deref().unwrap_or(&self.env.hostname)
    }
}

/// One comparison as written into a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRecord {
    pub bench: String,
    pub case: String,
    pub baseline: String,
    pub candidate: String,
    /// Candidate ÷ baseline (above 1: the candidate takes longer).
    pub ratio: f64,
    /// The interval the verdict was judged on, at `ci_level`: the 95 % one
    /// widened to agree with the Holm-adjusted p (0.95 with one comparison).
    pub ci_low: f64,
    pub ci_high: f64,
    /// The confidence level of `ci_low`–`ci_high`; absent from documents
    /// before it, whose interval is the unadjusted 95 % one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_level: Option<f64>,
    /// Holm-adjusted.
    pub p_value: f64,
    /// Written as "faster", "slower", "faster-within-margin",
    /// "slower-within-margin", "equivalent", "inconclusive", "too-few"
    /// ("no-change" in documents before them).
    pub verdict: crate::stats::verdict::Verdict,
    /// The verdict in the words the terminal shows ("slower, +1.0%, within ±1%");
    /// absent from documents before it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub verdict_words: String,
    /// What the test was replicated over; absent from documents before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicated: Option<Replication>,
    /// Where the change went (`compare --explain`, and significant changes
    /// of profiled runs); absent otherwise and from documents before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
}

impl ComparisonRecord {
    /// The verdict in words: as the terminal showed it, or its value in
    /// documents written before the words were kept.
    pub fn words(&self) -> &str {
        if self.verdict_words.is_empty() {
            self.verdict.as_str()
        } else {
            &self.verdict_words
        }
    }
}

/// A case sampled to a precision target (`run --target-ci` without configurations).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetOutcome {
    /// The relative half-width of the median's 95 % interval asked for (0.01: ±1 %).
    pub target: f64,
    /// Whether the series' interval is within it.
    pub reached: bool,
    /// What ended the sampling, in words ("reached ±0.41% with 37 samples").
    pub stopped_by: String,
}

/// A run that kept adding rounds (or invocations) until a change of a given
/// size was detectable with 80 % power, or its time budget ended
/// (`time --target-mde`, `run --target-mde`): what was targeted and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetMde {
    /// The change to detect, a fraction (0.02: ±2 %).
    pub target: f64,
    /// The time budget, in seconds.
    pub budget_s: f64,
    /// Whether that change was detectable when the run stopped adding.
    pub reached: bool,
    /// The smallest change detectable with 80 % power then, a fraction;
    /// absent when there were too few rounds to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detectable: Option<f64>,
    /// Rounds (or invocations) run, and which: "rounds" or "invocations".
    pub n: usize,
    pub unit: String,
    /// Seconds from the start of the rounds to the stop.
    pub elapsed_s: f64,
    /// The level each comparison was judged at: α ÷ the comparisons (Holm's
    /// first step, the strictest).
    pub alpha: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn this() -> Self {
        Self {
            name: "osbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// How the run was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// UTC, RFC 3339.
    pub started: String,
    pub finished: String,
    /// Seed of every random choice (the case order).
    pub seed: u64,
    pub policy: Policy,
    /// Cases in the order they were run, as "bench case".
    pub order: Vec<String>,
    /// False when the run stopped early; `stopped_because` then says why and
    /// `series` holds only the cases that completed.
    pub complete: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_because: Option<String>,
    /// `osbench time` runs: warm-up, hooks, and the floor of starting a process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeInfo>,
    /// The configurations compared (empty: one implicit "default").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<Config>,
    /// With a precision target: why no more rounds were run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// The configuration order of each round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<Vec<String>>,
    /// Noise audit: what on the machine may disturb the results (also printed on stderr).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit: Vec<String>,
    /// Cases asked for that this machine's kernel refused, each as "BENCH
    /// CASE: why" (io_uring disabled, a missing system call): skipped, never
    /// measured as zero; empty in documents before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Runs with configurations: environment keys each configuration's set-up
    /// changed (read after its first set-up), key → value per configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_env_diff: Vec<(String, Vec<String>)>,
    /// Configurations that ran in guests: their boot time and environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guests: Vec<GuestInfo>,
    /// The files the configurations' knobs set: each one's value found,
    /// the value set per configuration, and whether it was restored; empty
    /// in documents before knobs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub knobs: Vec<KnobRecord>,
    /// A name the user gave the run (`--label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// What the run measured, as the user names it (`--meta KEY=VALUE`): the
    /// revision under test by convention (`commit`, `branch`, `build`); empty
    /// in documents before it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    /// `fleet run`: the host's name in the fleet (`--host NAME=…`), which the
    /// store files the run under instead of `env.hostname`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The invocations the run was measured in (`--invocations`), with their
    /// layouts and drift sentinels; empty in documents before them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invocations: Vec<Invocation>,
    /// How long the run waited at its end for the kernel's perf hooks to
    /// switch off after its counting pass, so that they slow nothing timed
    /// next (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_hooks_wait_ms: Option<f64>,
    /// `--target-mde`: the change targeted and whether it became detectable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_mde: Option<TargetMde>,
}

/// Who ran a run and what it measured, stamped on its record once it ends:
/// `--label`, the host it is filed under (a worker's or a fleet host's
/// name; `None` keeps what the run recorded), `--meta`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunIdentity {
    pub label: Option<String>,
    pub host: Option<String>,
    pub meta: BTreeMap<String, String>,
}

impl RunInfo {
    /// Seconds from the run's start to its end, when both times read back
    /// ([`unix_seconds`]) and are not the same whole second.
    pub fn wall_seconds(&self) -> Option<f64> {
        let start = unix_seconds(&self.started)?;
        let end = unix_seconds(&self.finished)?;
        // Whole seconds: a run that began and ended within one has no length to tell.
        (end > start).then_some(end - start)
    }

    /// The one constructor of a run's record: begun at `started` with
    /// `seed` and `policy`, finished now, complete, nothing else recorded
    /// yet (the caller fills in what its kind of run has).
    pub fn new(started: String, seed: u64, policy: Policy) -> Self {
        RunInfo {
            started,
            finished: utc_now(),
            seed,
            policy,
            order: Vec::new(),
            complete: true,
            stopped_because: None,
            time: None,
            configs: Vec::new(),
            stopped_by: None,
            schedule: Vec::new(),
            audit: Vec::new(),
            skipped: Vec::new(),
            config_env_diff: Vec::new(),
            guests: Vec::new(),
            knobs: Vec::new(),
            label: None,
            meta: BTreeMap::new(),
            host: None,
            invocations: Vec::new(),
            perf_hooks_wait_ms: None,
            target_mde: None,
        }
    }

    /// This record, ended by `error` (or not): `complete`, and why it stopped.
    pub fn ended_by(mut self, error: Option<&dyn std::fmt::Display>) -> Self {
        self.complete = error.is_none();
        self.stopped_because = error.map(|e| e.to_string());
        self
    }

    /// Stamps who ran it: the label and meta as given, the host when given.
    pub fn stamp(&mut self, identity: &RunIdentity) {
        self.label = identity.label.clone();
        if let Some(host) = &identity.host {
            self.host = Some(host.clone());
        }
        self.meta = identity.meta.clone();
    }
}

/// Everything measured for one case under one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Benchmark, case and configuration, written as the fields `bench`,
    /// `case` and `config` (the configuration's name; [`DEFAULT_CONFIG`] in a
    /// run without configurations).
    #[serde(flatten)]
    pub key: CaseKey,
    pub params: Map<String, Value>,
    /// Written "ns", "us" or "s".
    pub unit: Unit,
    /// What one operation is.
    pub op: String,
    /// The anchor command that measures the same thing (e.g. "hackbench -g 10").
    pub anchor: String,
    /// Placement of the tasks: "none" (the scheduler's choice), "same" (all on
    /// one CPU) or "spread" (round robin over the allowed CPUs).
    pub pin: Pin,
    /// The CPUs the tasks were pinned to (empty for "none").
    pub cpus: Vec<usize>,
    /// Per-operation value of each accepted sample, overheads subtracted, in run order.
    pub samples: Vec<f64>,
    pub summary: Summary,
    /// The accepted samples as timed (iterations, elapsed ns), same order as `samples`.
    pub raw: Vec<RawSample>,
    /// Samples outside the acceptance window, in run order.
    pub rejected: Vec<RawSample>,
    pub overhead: Overhead,
    /// Operations per harness iteration (the divisor between `raw` and `samples`).
    pub ops_per_iter: f64,
    /// Bandwidth series: the bytes one operation moves. `samples` stay time
    /// per operation; tables show `bytes_per_op` ÷ time as MB/s (10^6 B/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_op: Option<f64>,
    /// Runs with configurations: which selected case this is (the same for every
    /// configuration, even when a configuration changed its parameters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<usize>,
    /// The median of each round, in round order (runs with configurations).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<f64>,
    /// How many of `samples` each round contributed, in round order (the
    /// samples are stored round after round).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_samples: Vec<usize>,
    /// The median of each invocation, in invocation order (runs of several
    /// invocations): the replicates a comparison of saved runs tests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invocations: Vec<f64>,
    /// How many of `samples` each invocation contributed (stored invocation after invocation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub invocation_samples: Vec<usize>,
    /// With several invocations: the spread between them and within them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation_spread: Option<InvocationSpread>,
    /// "samples" (each sample times many operations) or "distribution" (each
    /// sample is one event's latency; see `quantiles` and `histogram`).
    #[serde(default)]
    pub kind: SeriesKind,
    /// Distribution series: p50, p90, p99, p99.9 and max from the histogram, in `unit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantiles: Option<Quantiles>,
    /// Distribution series: the HDR histogram's non-empty buckets (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Buckets>,
    /// CPU time all tasks of the case used per operation, in `unit`, where measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_op: Option<f64>,
    /// The stand-in subtracted from every sample (lmbench's `ovr`), for families
    /// that define one. Not a comparison's baseline: the key name is historical.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<ReferenceSeries>,
    /// Noise flags: "high-cv" (CV above 10 %), "bimodal" (two clusters of samples),
    /// "interrupted" (fewer samples than asked for), "failed" (an error
    /// stopped the case after these samples).
    #[serde(default)]
    pub noise: Vec<NoiseFlag>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// `command` series (`osbench time`): what each run cost, in run order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<CommandRun>,
    /// OS counters per operation: name (`user_ns`, `voluntary_switches`, …) →
    /// summary over the samples, same fields as `summary`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, Summary>,
    /// Each counter's per-operation value of each sample, in sample order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counter_samples: BTreeMap<String, Vec<f64>>,
    /// Counters that could not be read → why.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters_unavailable: BTreeMap<String, String>,
    /// The perf counting pass the perf counters come from (run after the
    /// timed samples with the perf events enabled): each batch as run,
    /// elapsed with counting on. Their `counter_samples` follow this order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub perf_pass: Vec<RawSample>,
    /// Perf counters the kernel multiplexed during the counting pass → the
    /// smallest fraction of its enabled time one counted in a batch; their
    /// values were scaled up by enabled ÷ running time, as `perf stat` does.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub perf_scaled: BTreeMap<String, f64>,
    /// With `run --target-ci` (no configurations): whether this case's
    /// interval reached the target, and what ended its sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetOutcome>,
    /// RAPL energy per zone (`package-0`, `package-0/core`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub energy: BTreeMap<String, EnergyDomain>,
    /// Why energy could not be read ("unavailable: no powercap").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_unavailable: Option<String>,
    /// With `--profile`: where the case's time went, sampled in passes of
    /// its own after the timed samples, or why it could not be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileOutcome>,
    /// The background loads that ran beside this case (`run --load`, a
    /// configuration's `load`): what each did, once per round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loads: Vec<LoadRun>,
}

impl Series {
    /// The replicates a comparison of saved runs tests: each invocation's
    /// median, or the one median of a run measured in one invocation.
    pub fn replicates(&self) -> Vec<f64> {
        if self.invocations.is_empty() {
            vec![self.summary.median]
        } else {
            self.invocations.clone()
        }
    }

    /// A series of `samples` (per operation, in `unit`) summarized by
    /// `summary`, under no configuration, with everything else empty: one
    /// operation per iteration, no placement, nothing subtracted.
    pub fn new(bench: &str, case: String, unit: Unit, samples: Vec<f64>, summary: Summary) -> Self {
        Self {
            key: CaseKey::new(bench, case, DEFAULT_CONFIG),
            params: Map::new(),
            unit,
            op: String::new(),
            anchor: String::new(),
            pin: Pin::None,
            cpus: Vec::new(),
            samples,
            summary,
            raw: Vec::new(),
            rejected: Vec::new(),
            overhead: Overhead::ZERO,
            ops_per_iter: 1.0,
            bytes_per_op: None,
            slot: None,
            rounds: Vec::new(),
            round_samples: Vec::new(),
            invocations: Vec::new(),
            invocation_samples: Vec::new(),
            invocation_spread: None,
            kind: SeriesKind::Samples,
            quantiles: None,
            histogram: None,
            cpu_per_op: None,
            baseline: None,
            noise: Vec::new(),
            warnings: Vec::new(),
            runs: Vec::new(),
            counters: BTreeMap::new(),
            counter_samples: BTreeMap::new(),
            counters_unavailable: BTreeMap::new(),
            perf_scaled: BTreeMap::new(),
            target: None,
            perf_pass: Vec::new(),
            energy: BTreeMap::new(),
            energy_unavailable: None,
            profile: None,
            loads: Vec::new(),
        }
    }
}

impl Series {
    /// A per-operation value of this series (in `unit`) as MB/s (10^6 B/s,
    /// lmbench's MB), for bandwidth series; `None` for the others. The
    /// conversion is monotone, so a median and its interval convert exactly
    /// (the interval's ends swap).
    pub fn mb_per_s(&self, per_op: f64) -> Option<f64> {
        Some(self.unit.mb_per_s(self.bytes_per_op?, per_op))
    }
}

/// A reference measured beside a case, in the case's unit: the stand-in whose
/// median is subtracted from every sample (lmbench's `ovr`, `Series::baseline`),
/// or the empty command of `osbench time` (`TimeInfo::floor`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceSeries {
    /// What one of its operations is.
    pub op: String,
    /// Per-operation value of each sample (for a stand-in, the median is what was subtracted).
    pub samples: Vec<f64>,
    pub summary: Summary,
    pub raw: Vec<RawSample>,
}

/// Now, as an RFC 3339 UTC timestamp with second precision.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

/// A span of time as people write it — "30s", "90m", "24h", "7d", "2w" —
/// in seconds; `None` for anything else (a bare number included).
pub fn span_secs(s: &str) -> Option<u64> {
    let unit = match s.chars().last()? {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => return None,
    };
    let n: u64 = s[..s.len() - 1].parse().ok()?;
    n.checked_mul(unit)
}

/// `YYYY-MM-DDThh:mm:ss[.fff]Z` (as [`rfc3339`] writes it) as seconds since
/// the Unix epoch; `None` for any other shape.
pub fn unix_seconds(text: &str) -> Option<f64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date = date.splitn(3, '-').map(|f| f.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let mut time = time.splitn(3, ':');
    let hour: i64 = time.next()?.parse().ok()?;
    let minute: i64 = time.next()?.parse().ok()?;
    let second: f64 = time.next()?.parse().ok()?;
    let whole = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60;
    Some(whole as f64 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
pub(crate) fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Seconds since the Unix epoch as `YYYY-MM-DDThh:mm:ssZ`.
pub fn rfc3339(unix_secs: u64) -> String {
    let days = (unix_secs / 86_400) as i64;
    let rem = unix_secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant, "chrono-Compatible
    // Low-Level Date Algorithms", days_from_civil inverse).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // `date -u -d @951782400` → 2000-02-29 00:00:00 (a leap day in a century year).
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        // `date -u -d @1796000000` → Mon Nov 30 00:53:20 UTC 2026.
        assert_eq!(rfc3339(1_796_000_000), "2026-11-30T00:53:20Z");
    }

    #[test]
    fn reads_back_what_it_writes() {
        for secs in [0, 951_782_400, 1_796_000_000] {
            assert_eq!(unix_seconds(&rfc3339(secs)), Some(secs as f64));
        }
        assert_eq!(
            unix_seconds("2026-11-30T00:53:20.25Z"),
            Some(1_796_000_000.25)
        );
        assert_eq!(unix_seconds("2026-11-30 00:53:20"), None);
    }
}
