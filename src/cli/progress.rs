//! Progress of a run on stderr: an indicatif bar when stderr is a terminal
//! and the run lasts more than a second, otherwise one line per case
//! (`[i/n] bench case ... result`; `osbench time` prints no line per round),
//! nothing with `--quiet`. Everything here runs
//! between cases, never inside a timed region: the bar is redrawn only when a
//! case starts or ends (no ticking thread).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use osbench::bench::util::select::Case;
use osbench::document::Series;
use osbench::experiment::Observer;
use osbench::report::{fmt_pct, fmt_sig};

/// Runs shorter than this get no bar.
const BAR_AFTER: Duration = Duration::from_secs(1);

/// Reports progress of a run.
pub struct Progress {
    mode: Mode,
    /// The bar counts rounds (`osbench time`), not cases.
    counts_rounds: bool,
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
    pub fn new(quiet: bool, total: usize, expected: Duration) -> Self {
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
        Self {
            mode,
            counts_rounds: total == 0,
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
            Mode::Bar { bar, .. } => bar.suspend(|| eprintln!("{line}")),
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
    fn round_finished(&mut self, done: usize, planned: usize) {
        if !self.counts_rounds {
            return;
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
                "[{}/{}] {} {} ... ",
                index + 1,
                total,
                case.def.name,
                case.name()
            ),
            Mode::Bar { bar, .. } => {
                bar.set_length(total as u64);
                bar.set_position(index as u64);
                bar.set_message(format!("{} {}", case.def.name, case.name()));
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
        for w in &s.warnings {
            self.say(&format!("osbench: warning: {} {}: {w}", s.bench, s.case));
        }
    }

    fn audit(&mut self, finding: &str) {
        self.say(&format!("osbench: warning: {finding}"));
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
