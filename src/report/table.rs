//! A run's sections for the terminal: tables as aligned columns, the
//! anchors' layouts and the counters as they are (the sections themselves
//! come from [`super::sections`]). Left out: the comparison
//! ([`super::compare`]), plots, and `osbench list` (the command line renders
//! the registry).

use super::align;
use super::sections::{self, Block, Body, Table};
use crate::document::Document;

impl Table {
    /// Columns two spaces apart, numbers right-aligned.
    pub fn to_text(&self) -> String {
        align(&self.header, &self.numeric, &self.rows)
    }
}

/// The sections of a run as text. The results table opens the output; every
/// other section follows a blank line, so it stands apart from what was
/// printed before even when there is no results table.
pub fn render_run(doc: &Document) -> String {
    let mut out = String::new();
    for section in sections::of(doc) {
        if section.name != sections::RESULTS {
            out.push('\n');
        }
        match &section.body {
            Body::Table(t) => out.push_str(&t.to_text()),
            Body::Text(text) => out.push_str(text),
            Body::Blocks(blocks) => {
                for block in blocks {
                    match block {
                        Block::Text(text) => out.push_str(text),
                        Block::Table(t) => out.push_str(&t.to_text()),
                    }
                }
            }
        }
    }
    out
}
