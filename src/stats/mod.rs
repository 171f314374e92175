//! Pure statistics: summaries of raw samples, confidence intervals, a
//! bimodality check, histograms, unpaired and paired comparisons and their
//! verdicts, replicate intervals, the power and minimum detectable effect of
//! the t-tests on logs, change points and drift in a history, the differential of two
//! sampled profiles (their seeded generator is
//! [`crate::rng`]: an RNG is not statistics).
//!
//! Nothing here does I/O or knows about benchmarks; every function takes plain
//! numbers and returns plain numbers, so each can be checked against values
//! worked out independently (see the unit tests next to each function).

pub mod changepoint;
pub mod ci;
pub mod differential;
pub mod histogram;
pub mod noise;
pub mod paired;
pub mod power;
pub mod replicates;
pub mod scaling;
pub mod summary;
pub mod trend;
pub mod unpaired;
pub mod verdict;

pub use ci::{MedianCi, median_ci};
pub use noise::{Modes, bimodal};
pub use summary::{Summary, summarize};
