//! Progress of a run on stderr: an indicatif bar when stderr is a terminal
//! and the run lasts more than a second, otherwise one line per case
//! (`[i/n] round r/R CONFIG: bench case ... result`; `osbench time` a line
//! per round at most every few seconds), nothing with `--quiet`. A case's
//! warnings wait for [`Progress::digest`], which says after the results
//! each distinct warning once, with the cases that gave it and in how many
//! of their rounds ([`osbench::report::digest`]); with `--verbose` each is
//! also said once per case as it comes. Findings about the run itself (load,
//! busy processes) are said when found. Everything here runs between cases,
//! never inside a timed region: the bar is redrawn only when a case starts
//! or ends (no ticking thread).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use osbench::bench::util::select::Case;
use osbench::document::Series;
use osbench::experiment::Observer;
use osbench::report::digest::{CaseWarning, digest, group_lines};
use osbench::report::{blank_numbers, fmt_pct, fmt_sig};
use osbench::stats::noise::shared_shift;

/// Runs shorter than this get no bar.
const BAR_AFTER: Duration = Duration::from_secs(1);

/// Off a terminal, `osbench time` says its round at most this often.
const ROUND_LINE_EVERY: Duration = Duration::from_secs(5);

/// Reports progress of a run.
pub struct Progress {
    mode: Mode,
    /// Say each case's warnings as they come, not only in the digest.
    verbose: bool,
    /// The bar counts rounds (`osbench time`), not cases.
    counts_rounds: bool,
    /// The round (from 0), rounds planned and configuration of the case
    /// being measured (runs with configurations).
    step: Option<(usize, usize, String)>,
    /// The warnings of the run, each once per case ([`Warned`]).
    warned: Vec<Warned>,
    /// How many times each case (bench, case, configuration) finished.
    finished: BTreeMap<String, usize>,
    /// When `osbench time` last said its round off a terminal.
    round_said: Option<Instant>,
    /// Every finished case in run order: (index into `finished`'s keys as
    /// first seen, its median), for [`shared_shift`].
    run_order: Vec<(usize, f64)>,
    cases_seen: Vec<String>,
}

/// One warning of one case: its first wording and how many of the case's
/// rounds (or invocations) gave it.
struct Warned {
    case: String,
    /// The warning with its numbers blanked: the same warning in every round.
    kind: String,
    text: String,
    count: usize,
}

enum Mode {
    Quiet,
    Lines,
    /// The bar is hidden until the run is expected to, or does, last [`BAR_AFTER`].
    Bar {
        bar: ProgressBar,
        started: Instant,
        shown: bool,
    },
}

impl Progress {
    /// `total` is the number of cases to run (all rounds and configurations),
    /// or 0 when the bar counts rounds whose number is learnt as they end;
    /// `expected` a rough estimate of the run's length (it decides whether the
    /// bar shows from the start; otherwise it appears once a second has passed).
    pub fn new(quiet: bool, verbose: bool, total: usize, expected: Duration) -> Self {
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::hidden());
            bar.set_style(
                ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
                    .expect("a valid template")
                    .progress_chars("=> "),
            );
            let mut mode = Mode::Bar {
                bar,
                started: Instant::now(),
                shown: false,
            };
            if expected >= BAR_AFTER {
                show(&mut mode);
            }
            mode
        } else {
            Mode::Lines
        };
        let mut progress = Self::with_mode(mode, total == 0);
        progress.verbose = verbose;
        progress
    }

    fn with_mode(mode: Mode, counts_rounds: bool) -> Self {
        Self {
            mode,
            verbose: false,
            counts_rounds,
            step: None,
            warned: Vec::new(),
            finished: BTreeMap::new(),
            round_said: None,
            run_order: Vec::new(),
            cases_seen: Vec::new(),
        }
    }

    /// After the results: every case warning of the run once, grouped by
    /// what it says, with the cases that gave it and in how many of their
    /// rounds; and whether the cases' medians shifted together (nothing
    /// when quiet or when no case warned).
    pub fn digest(&self) {
        if let Some(text) = self.digest_text() {
            self.say(&text);
        }
    }

    /// What [`Progress::digest`] says.
    fn digest_text(&self) -> Option<String> {
        let cases: Vec<CaseWarning> = self
            .warned
            .iter()
            .filter(|w| !w.case.is_empty())
            .map(|w| CaseWarning {
                case: w.case.clone(),
                text: w.text.clone(),
                count: w.count,
                of: self.finished.get(&w.case).copied().unwrap_or(1),
            })
            .collect();
        if matches!(self.mode, Mode::Quiet) || cases.is_empty() {
            return None;
        }
        let what = if self.step.is_some() {
            "rounds"
        } else {
            "invocations"
        };
        let groups = digest(&cases, what);
        let concerned: std::collections::BTreeSet<&str> =
            cases.iter().map(|w| w.case.as_str()).collect();
        let shown = if self.verbose {
            "each said above"
        } else {
            "-v says each as it comes"
        };
        let mut out = format!(
            "osbench: {} warning{} about {} case{} ({shown}):\n",
            groups.len(),
            if groups.len() == 1 { "" } else { "s" },
            concerned.len(),
            if concerned.len() == 1 { "" } else { "s" },
        );
        for line in group_lines(&groups) {
            out.push_str(&format!("  {line}\n"));
        }
        if let Some(shift) = shared_shift(&self.run_order) {
            out.push_str(&format!(
                "  the cases' medians moved together in run order (lag-one correlation {:.2} over \
                 {} consecutive cases, each against its own median): the host's speed shifted \
                 during the run, hitting every case measured at the time; that, not the cases, \
                 explains spread and two clusters seen together\n",
                shift.correlation, shift.pairs
            ));
        }
        Some(out.trim_end().to_string())
    }

    /// Notes `warning` of `case`; true the first time it comes for that case.
    fn first_time(&mut self, case: &str, warning: &str) -> bool {
        let kind = blank_numbers(warning);
        if let Some(w) = self
            .warned
            .iter_mut()
            .find(|w| w.case == case && w.kind == kind)
        {
            w.count += 1;
            return false;
        }
        self.warned.push(Warned {
            case: case.to_string(),
            kind,
            text: warning.to_string(),
            count: 1,
        });
        true
    }

    /// "round 3/10 a: " while configurations are compared, else nothing.
    fn step_words(&self) -> String {
        match &self.step {
            Some((round, rounds, config)) => format!("round {}/{rounds} {config}: ", round + 1),
            None => String::new(),
        }
    }

    /// Removes the bar (before the results are printed).
    pub fn finish(&self) {
        if let Mode::Bar { bar, .. } = &self.mode {
            bar.finish_and_clear();
        }
    }

    /// Prints a line on stderr without breaking the bar.
    fn say(&self, line: &str) {
        match &self.mode {
            Mode::Quiet => {}
            Mode::Lines => eprintln!("{line}"),
            Mode::Bar { bar, .. } => bar.suspend(|| super::eprint_wrapped(line)),
        }
    }
}

/// Makes the bar visible once the run has lasted a second.
fn show(mode: &mut Mode) {
    if let Mode::Bar {
        bar,
        started,
        shown,
    } = mode
        && !*shown
    {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_elapsed(started.elapsed());
        *shown = true;
    }
}

impl Observer for Progress {
    fn step(&mut self, round: usize, rounds: usize, config: &str) {
        self.step = Some((round, rounds, config.to_string()));
    }

    fn round_finished(&mut self, done: usize, planned: usize) {
        if !self.counts_rounds {
            return;
        }
        if let Mode::Lines = self.mode {
            let due = self
                .round_said
                .is_none_or(|at| at.elapsed() >= ROUND_LINE_EVERY);
            if due || done >= planned {
                eprintln!("osbench: round {done} of {planned}");
                self.round_said = Some(Instant::now());
            }
        }
        if let Mode::Bar { started, .. } = &self.mode
            && started.elapsed() >= BAR_AFTER
        {
            show(&mut self.mode);
        }
        if let Mode::Bar { bar, .. } = &self.mode {
            // Not forced: indicatif limits redraws, and rounds can be sub-millisecond.
            bar.set_length(planned as u64);
            bar.set_position(done as u64);
            bar.set_message("rounds");
        }
    }

    fn case_started(&mut self, index: usize, total: usize, case: &Case) {
        if let Mode::Bar { started, .. } = &self.mode
            && started.elapsed() >= BAR_AFTER
        {
            show(&mut self.mode);
        }
        match &self.mode {
            Mode::Quiet => {}
            Mode::Lines => eprint!(
                "[{}/{}] {}{} {} ... ",
                index + 1,
                total,
                self.step_words(),
                case.def.name,
                case.name()
            ),
            Mode::Bar { bar, .. } => {
                bar.set_length(total as u64);
                bar.set_position(index as u64);
                bar.set_message(format!(
                    "{}{} {}",
                    self.step_words(),
                    case.def.name,
                    case.name()
                ));
                // Drawn now: the rate limiter must not leave the previous case showing.
                bar.force_draw();
            }
        }
    }

    fn case_finished(&mut self, s: &Series) {
        if let Mode::Lines = self.mode {
            let unit = s.unit.symbol();
            match s.quantiles {
                Some(q) => eprintln!(
                    "p50 {} {unit}, p99 {} {unit}",
                    fmt_sig(q.p50),
                    fmt_sig(q.p99)
                ),
                None => eprintln!(
                    "{} {unit} (CV {})",
                    fmt_sig(s.summary.median),
                    fmt_pct(s.summary.cv)
                ),
            }
        }
        if let Mode::Bar { bar, .. } = &self.mode {
            bar.inc(1);
        }
        let case = s.key.to_string();
        *self.finished.entry(case.clone()).or_default() += 1;
        let id = match self.cases_seen.iter().position(|c| *c == case) {
            Some(id) => id,
            None => {
                self.cases_seen.push(case.clone());
                self.cases_seen.len() - 1
            }
        };
        self.run_order.push((id, s.summary.median));
        for w in &s.warnings {
            if self.first_time(&case, w) && self.verbose {
                self.say(&format!("osbench: warning: {case}: {w}"));
            }
        }
    }

    fn audit(&mut self, finding: &str) {
        if self.first_time("", finding) {
            self.say(&format!("osbench: warning: {finding}"));
        }
    }

    fn case_failed(&mut self, error: &osbench::Error) {
        if let Mode::Lines = self.mode {
            let what = if matches!(error, osbench::Error::Interrupted) {
                "interrupted"
            } else {
                "failed"
            };
            eprintln!("{what}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use osbench::document::Unit;

    /// Case `case` of configuration `config` with `warnings`, as one round measured it.
    fn measured(case: &str, config: &str, warnings: &[String]) -> Series {
        let summary = osbench::stats::summarize(&[100.0]).unwrap();
        let mut s = Series::new("syscall", case.into(), Unit::Ns, vec![100.0], summary);
        s.key.config = config.into();
        s.warnings = warnings.to_vec();
        s
    }

    #[test]
    fn a_warning_of_every_round_is_said_once_and_counted_at_the_end() {
        let mut progress = Progress::with_mode(Mode::Lines, false);
        for round in 0..4 {
            // Every round of [a] warns, with its own CV; [b] in rounds 1 and 3 only.
            let spread = format!("high spread between samples (CV {}.5%); re-run", 11 + round);
            for (config, warns) in [("a", true), ("b", round % 2 == 1)] {
                progress.step(round, 4, config);
                let warnings = if warns {
                    vec![spread.clone()]
                } else {
                    Vec::new()
                };
                progress.case_finished(&measured("read", config, &warnings));
            }
        }
        // One entry a case: the warning was printed the first time only.
        assert_eq!(progress.warned.len(), 2);
        assert_eq!(progress.warned[0].count, 4);
        let digest = progress.digest_text().unwrap();
        assert_eq!(
            digest,
            "osbench: 1 warning about 2 cases (-v says each as it comes):\n  \
             high spread between samples (CV …): syscall read [a] 11.5% (4 of 4 rounds), \
             syscall read [b] 12.5% (2 of 4 rounds) — re-run"
        );
        assert_eq!(Progress::with_mode(Mode::Quiet, false).digest_text(), None);
    }

    #[test]
    fn the_quick_suites_digest_fits_ten_lines_of_100_columns() {
        // Every case of the quick suite warns of spread, half set samples
        // aside and two wake each other across CPUs in two clusters: worse
        // than the runs seen here (at most four cases warned of spread).
        let cases = [
            ("syscall", "null"),
            ("ctx", "2p/0K"),
            ("ctx", "2p/16K"),
            ("ipc", "pipe"),
            ("proc", "fork"),
            ("fault", "anon/2048p"),
            ("messaging", "g10/socket/processes"),
            ("wakeup", "futex/threads"),
        ];
        let mut progress = Progress::with_mode(Mode::Lines, false);
        for (i, (bench, case)) in cases.iter().enumerate() {
            let mut warnings = vec![format!(
                "high spread between samples (CV {}.{i}%); trust only large differences, or take \
                 more --samples",
                11 + i
            )];
            if i % 2 == 0 {
                warnings.push(format!(
                    "{} of {} samples set aside: outside 0.9–1.5 × the target time (kept in the \
                     document as \"rejected\")",
                    3 + i,
                    14 + i
                ));
            }
            if i == 1 || i == 3 {
                warnings.push(format!(
                    "samples in two clusters (5 near {i}.195, 6 near 6{i}.54 µs); the machine \
                     switched modes: cross-CPU wake-ups on a VM (try --pin same) or the host's \
                     slow phases"
                ));
            }
            let mut s = measured(case, "default", &warnings);
            s.key.bench = bench.to_string();
            progress.case_finished(&s);
        }
        let digest = progress.digest_text().unwrap();
        let wrapped = osbench::report::fit::wrap_prose(&digest, Some(100));
        assert!(wrapped.lines().count() <= 10, "{wrapped}");
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 100),
            "{wrapped}"
        );
        // Each warning once, each case's own numbers kept.
        assert_eq!(wrapped.matches("high spread").count(), 1, "{wrapped}");
        assert!(digest.contains("ctx 2p/0K 12.1%"), "{digest}");
        assert!(
            digest.contains("ipc pipe 5 near 3.195, 6 near 63.54"),
            "{digest}"
        );
    }
}
