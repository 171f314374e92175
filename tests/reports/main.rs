//! What osbench writes and reads back: output formats, readers of other
//! tools' files, HTML in a browser, the report command, history and change
//! points, nightly regressions, and bisecting.

#[path = "../common/mod.rs"]
mod common;

mod bisect;
mod explain_cli;
mod history_changes;
mod html_browser;
mod one_answer;
mod outputs;
mod readers;
mod regressions;
mod report_cli;
mod scoring;
