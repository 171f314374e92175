//! A run's sections for the terminal: tables as aligned columns, the
//! anchors' layouts and the counters as they are (the sections themselves
//! come from [`super::sections`]). Left out: the comparison
//! ([`super::compare`]), plots, and `osbench list` (the command line renders
//! the registry). Fitting to a width is [`super::fit`]'s.

use super::align;
use super::fit::wrap_prose;
use super::layout::{Block, Body, Table};
use super::sections;
use crate::document::Document;

impl Table {
    /// Columns two spaces apart, numbers right-aligned.
    pub fn to_text(&self) -> String {
        align(&self.header, &self.numeric, &self.rows)
    }
}

/// The sections of a run as text, one line per row. The results table opens
/// the output; every other section follows a blank line, so it stands apart
/// from what was printed before even when there is no results table.
pub fn render_run(doc: &Document) -> String {
    render_run_within(doc, None)
}

/// The sections of a run fitted to `width` columns ([`super::fit`]; `None`:
/// one line per row, as [`render_run`]).
pub fn render_run_within(doc: &Document, width: Option<usize>) -> String {
    let table = |t: &Table| t.to_text_within(width);
    let prose = |text: &str| wrap_prose(text, width);
    let mut out = String::new();
    for section in sections::of(doc) {
        if section.name != sections::RESULTS {
            out.push('\n');
        }
        match &section.body {
            Body::Table(t) => out.push_str(&table(t)),
            Body::Text(text) => out.push_str(&prose(text)),
            Body::Blocks(blocks) => {
                for block in blocks {
                    match block {
                        Block::Text(text) => out.push_str(&prose(text)),
                        Block::Table(t) => out.push_str(&table(t)),
                    }
                }
            }
        }
    }
    out
}
