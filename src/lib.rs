//! osbench: measures the primitives an operating system is made of — system
//! calls, atomic instructions, context switches, IPC round trips, task
//! creation, hackbench messaging, wake-up and timer latency — with the methods
//! of lmbench, hackbench, perf bench and cyclictest, and reports each result
//! with its uncertainty, its noise and the environment it was measured in.
//!
//! Data flows one way: `bench` (what to run) → `measure` (the harness: clocks
//! around batches, child supervision, placement, signals) → `experiment`
//! (order, one document) → `stats` (pure) → `store` / `compare` / `report`.
//! Decisions are recorded in docs/design-notes.md.

pub mod bench;
pub mod compare;
pub mod document;
pub mod env;
pub mod error;
pub mod experiment;
pub mod measure;
pub mod report;
pub mod stats;
pub mod store;

pub use error::{Error, Result};
