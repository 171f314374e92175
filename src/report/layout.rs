//! The shapes a report's sections are built of: a table as cells, a block of
//! preformatted text, lines and tables in turn. Every section builder
//! (results, distributions, the anchors' layouts, the counters) fills them
//! in and every renderer (terminal, Markdown, HTML) lays them out; the list
//! of sections itself is [`super::sections`]'. Left out: widths, colours,
//! escaping (each renderer's own).

/// A table as cells: what every renderer lays out in its own way.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub header: Vec<&'static str>,
    /// Which columns are numbers (right-aligned).
    pub numeric: Vec<bool>,
    pub rows: Vec<Vec<String>>,
    /// Each row's case and configuration when the rows are cases (column 0
    /// the bench, column 1 both as `case [config]`), so a renderer can give
    /// the configuration its own column; empty otherwise.
    pub cases: Vec<(String, String)>,
}

/// What a section holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Table(Table),
    /// Preformatted lines, each ending in a newline (an anchor's own layout).
    Text(String),
    /// Lines and tables in turn (captions, notes): the counters.
    Blocks(Vec<Block>),
}

/// One part of a [`Body::Blocks`].
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Lines of prose, each ending in a newline.
    Text(String),
    Table(Table),
}
