//! Properties and round trips of the result document and the statistics:
//! property tests, document fuzzing, the documented schema, invocations.

#[path = "../common/mod.rs"]
mod common;

mod document_fuzz;
mod invocations;
mod result_document;
mod stats_props;
