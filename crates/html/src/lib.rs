//! The one HTML reader every crate reads pages through. Pure: no IO.
//!
//! - **Streaming** ([`build`]): a tokenizer (`lexer`: the HTML tokenizer's common states) and a
//!   tree builder that keeps the stack of open elements html5ever would keep, for the insertion
//!   modes and tags whose effect is a plain push or pop. It builds no tree: a [`Sink`] sees each
//!   element open (with its ancestors), each text and each close. Whatever it cannot reproduce
//!   exactly (implicit ends, the adoption agency, foster parenting, foreign content, irregular
//!   character references, …) is a [`Bail`], and the caller reads the page through the DOM.
//! - **The DOM** ([`parse`]): html5ever's full tree (through scraper), bounded: past
//!   [`MAX_DEPTH`] the parse stops with [`TooDeep`] (html5ever's tree builder is quadratic in
//!   nesting).
//! - **Element categories** ([`Kind`]): html5ever's special, void, table and `p`-closing sets,
//!   and text extraction's blocks and skipped elements, one table decided once per tag.
//! - **Structured data** ([`scripts`]): the JSON-LD scripts of a page and whether it has
//!   microdata, read by a [`Sink`] so that it can ride another reader's pass.
//!
//! `driftwatch-scrape` extracts a page's text through this crate and `driftwatch-values` reads
//! structured data and attribute selectors through it, so both see the same document.

use std::borrow::Cow;

mod bounded;
mod lexer;
pub mod scripts;
mod tags;
mod tree;

pub use bounded::parse;
pub use lexer::{Attrs, Bail};
pub use tags::{BLOCKS, Kind, SKIPPED};
pub use tree::{Element, Sink, build};

/// How deep elements may nest (`html` is at depth 1). Real pages stay under a few hundred. Both
/// readers hold it: the streaming builder bails at it, the DOM parse fails past it.
pub const MAX_DEPTH: usize = 1024;

/// A page nests elements deeper than [`MAX_DEPTH`]: [`parse`] refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep;

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the page nests elements more than {MAX_DEPTH} deep")
    }
}

impl std::error::Error for TooDeep {}

/// The tokenizer's input preprocessing, for [`build`]: CR LF and lone CR become LF; a leading
/// byte-order mark goes. (A NUL is the caller's to refuse or replace first.)
pub fn prepare(body: &str) -> Cow<'_, str> {
    let body = if body.contains('\r') {
        Cow::Owned(body.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(body)
    };
    match body {
        Cow::Borrowed(text) => Cow::Borrowed(text.strip_prefix('\u{feff}').unwrap_or(text)),
        Cow::Owned(text) => match text.strip_prefix('\u{feff}') {
            Some(rest) => Cow::Owned(rest.to_owned()),
            None => Cow::Owned(text),
        },
    }
}
