//! osbench: measures the primitives an operating system is made of — system
//! calls, atomic instructions, context switches, IPC round trips, task
//! creation, hackbench messaging, wake-up and timer latency — with the methods
//! of lmbench, hackbench, perf bench and cyclictest, and reports each result
//! with its uncertainty, its noise and the environment it was measured in.
//!
//! Data flows one way: `bench` (what to run, implementing the harness's
//! `measure::Workload`) → `measure` (the harness: clocks around batches, child
//! supervision, placement, signals) → `experiment` (rounds, order, one
//! `document`) → `stats` (pure) → `store` / `compare` / `report`. The
//! `document` is the bottom layer every other module reads. Decisions are
//! recorded in docs/design-notes.md; adding a benchmark family in
//! docs/adding-a-benchmark.md.

pub mod bench;
pub mod compare;
pub mod document;
pub mod env;
pub mod envelope;
pub mod error;
pub mod experiment;
pub mod fleet;
pub mod guest;
pub mod lab;
pub mod measure;
pub mod queue;
pub mod report;
pub mod rng;
pub mod stats;
pub mod stop;
pub mod store;
pub mod text;

pub use error::{Error, Result};

/// docs/adding-a-benchmark.md, compiled and run by `cargo test --doc` so its example stays true.
#[cfg(doctest)]
#[doc = include_str!("../docs/adding-a-benchmark.md")]
pub struct AddingABenchmark;
