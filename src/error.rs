//! The library's error type. Every message says what went wrong and, where
//! there is one, what to do about it; the CLI prints it on one line and exits 2.

use std::io;

/// "did you mean 'X'? " before a list of the valid names, when one is near.
fn did_you_mean(mean: &Option<String>) -> String {
    mean.as_ref()
        .map_or(String::new(), |m| format!("did you mean '{m}'? "))
}

/// Everything that can go wrong inside the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown benchmark '{name}'; {}valid benchmarks: {valid}", did_you_mean(.mean))]
    UnknownBench {
        name: String,
        valid: String,
        /// The benchmark nearest to `name` (by edit distance, or by the
        /// other tool's name it goes by), if one is near.
        mean: Option<String>,
    },

    #[error(
        "benchmark '{bench}' has no parameter '{key}'; {}valid parameters: {valid}",
        did_you_mean(.mean)
    )]
    UnknownParam {
        bench: String,
        key: String,
        valid: String,
        /// The parameter nearest to `key`, if one is near.
        mean: Option<String>,
    },

    #[error(
        "invalid value '{value}' for {bench}:{key}; {}allowed: {allowed}",
        did_you_mean(.mean)
    )]
    BadValue {
        bench: String,
        key: String,
        value: String,
        allowed: String,
        /// The allowed word nearest to `value`, if one is near.
        mean: Option<String>,
    },

    #[error(
        "malformed selector '{selector}': {why}; expected BENCH, BENCH:key=value[,key=value...] or BENCH:CASE as the tables print it"
    )]
    BadSelector { selector: String, why: String },

    #[error("{context}: {cause}")]
    Io { context: String, cause: io::Error },

    #[error("{bench} {case}: {message}")]
    Bench {
        bench: String,
        case: String,
        message: String,
    },

    #[error("{0}")]
    Measure(String),

    /// The command line or a file asks for something that cannot be done.
    #[error("{0}")]
    Usage(String),

    #[error("interrupted by a signal")]
    Interrupted,

    /// A knob a configuration sets cannot be read, takes no such value, or
    /// cannot be written; `place` is empty here, else "guest 'vm': ";
    /// `at` is " (PATH)" when the knob is not named by its path, else empty.
    #[error("{place}knob {knob}{at}: {message}")]
    Knob {
        place: String,
        knob: String,
        at: String,
        message: String,
    },

    /// A guest (a configuration or a fleet host that runs elsewhere) failed
    /// to start, answer or run; `who` names it ("configuration 'uml'", "host 'a'").
    #[error("{who}: {message}")]
    Guest { who: String, message: String },

    /// A file osbench reads is malformed; `what` names the kind ("an osbench result document").
    #[error("{path}: not {what}: {message}")]
    BadDocument {
        path: String,
        what: &'static str,
        message: String,
    },

    /// A document that parses but cannot be right (an empty series, counts
    /// that disagree, an impossible time): `problem` names the series.
    #[error(
        "{path}: {problem}; osbench cannot use this document: restore or re-export it, or re-run \
         the benchmark (the rules: docs/result-document.md, \"What a reader checks\")"
    )]
    InvalidDocument { path: String, problem: String },

    /// The results store cannot be opened, read or written.
    #[error("results store {path}: {message}")]
    Store { path: String, message: String },

    /// A run named on the command line is neither a file, a run id nor a label.
    #[error(
        "'{arg}' is not a file, nor a run id or label in the results store {store}; \
         `osbench history` lists the stored runs"
    )]
    UnknownRun { arg: String, store: String },

    /// A kernel-boot job cannot be checked, staged or booted
    /// (`queue::boot`): a missing kernel file, no way to boot, a failed command.
    #[error("{0}")]
    Boot(String),

    /// The kernel that booted is not the one a job asked for: each
    /// mismatch names what was asked and what is running.
    #[error(
        "the running kernel is not the one the job asked for: {}; the boot may have fallen \
         back to another kernel (a kexec or one-shot boot entry that did not take): check the \
         host's boot log, then queue the job again",
        .mismatches.join("; ")
    )]
    KernelMismatch { mismatches: Vec<String> },

    /// A lab's job cannot be made from a plan, or a lab's log holds no
    /// usable result (`lab`): what is wrong and what to do.
    #[error("{0}")]
    Lab(String),

    /// A plot could not be drawn or rasterised; `what` names the plot.
    #[error("cannot draw the plot '{what}': {message}")]
    Plot { what: String, message: String },
}

impl Error {
    /// An I/O error with what was being attempted.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            cause: source,
        }
    }

    /// The last OS error (errno), with what was being attempted.
    pub fn last_os(context: impl Into<String>) -> Self {
        Error::io(context, io::Error::last_os_error())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
