//! osbench: measures the primitives an operating system is made of (system
//! calls today; context switches, IPC, process creation and more to come) with
//! the methods of lmbench, hackbench and perf bench, and reports each result
//! with its uncertainty and the environment it was measured in.
//!
//! Data flows one way: `bench` (what to run) → `measure` (the harness, the
//! only code that reads clocks) → `experiment` (order, one document) →
//! `stats` (pure) → `store` / `report`. See DESIGN.md.

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
