//! Where a page states structured data: the text of each JSON-LD script and whether any element
//! has `itemscope` (microdata). [`Scripts`] is a [`Sink`], so it can ride another reader's
//! streaming pass; [`Scripts::read`] reads a page on its own.
//!
//! A script is JSON-LD when its first `type` attribute is `application/ld+json` (ASCII
//! case-insensitive, parameters allowed). Only HTML `script` elements count: not one in a
//! comment, an attribute, `noscript` (raw text with scripting on), SVG or MathML.

use ego_tree::iter::Edge;
use scraper::{Html, Node};

use crate::{Bail, Element, Sink};

const HTML_NAMESPACE: &str = "http://www.w3.org/1999/xhtml";

/// The structured data a page states, before it is parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scripts {
    /// The text of each JSON-LD script, in document order.
    pub jsonld: Vec<String>,
    /// Whether an element has an `itemscope` attribute (the page may have microdata).
    pub itemscope: bool,
    /// The stack depth of the JSON-LD script being read, while one is open.
    open: Option<usize>,
}

impl Scripts {
    /// Reads `body` on its own: streaming when the tree builder can, else through the bounded
    /// DOM ([`crate::parse`]). A page too deep for the DOM keeps what the streaming pass read
    /// before it gave up (JSON-LD usually sits in the head), never more.
    pub fn read(body: &str) -> Scripts {
        Scripts::streamed(body).unwrap_or_else(|partial| match crate::parse(body) {
            Ok(document) => Scripts::of(&document),
            Err(_) => partial,
        })
    }

    /// Reads `body` in a streaming pass alone: `Err` with what was read before the pass gave
    /// up (see [`crate::build`]) when it could not read the whole page.
    pub fn streamed(body: &str) -> Result<Scripts, Scripts> {
        let mut scripts = Scripts::default();
        if body.contains('\0') {
            return Err(scripts);
        }
        match crate::build(&crate::prepare(body), &mut scripts) {
            Ok(()) => Ok(scripts),
            Err(_) => {
                // A script left open when the pass gave up holds only part of its text.
                if scripts.open.take().is_some() {
                    scripts.jsonld.pop();
                }
                Err(scripts)
            }
        }
    }

    /// Reads an already parsed document.
    pub fn of(document: &Html) -> Scripts {
        let mut scripts = Scripts::default();
        let mut script: Option<String> = None;
        for edge in document.tree.root().traverse() {
            match edge {
                Edge::Open(node) => match node.value() {
                    Node::Element(element) => {
                        scripts.itemscope |= element.attr("itemscope").is_some();
                        if element.name() == "script"
                            && &*element.name.ns == HTML_NAMESPACE
                            && is_json_ld(element.attr("type"))
                        {
                            script = Some(String::new());
                        }
                    }
                    Node::Text(text) => {
                        if let Some(script) = &mut script {
                            script.push_str(text);
                        }
                    }
                    _ => {}
                },
                Edge::Close(node) => {
                    if node.value().as_element().is_some_and(|e| e.name() == "script")
                        && let Some(text) = script.take()
                    {
                        scripts.jsonld.push(text);
                    }
                }
            }
        }
        scripts
    }
}

impl<'s> Sink<'s> for Scripts {
    fn open(&mut self, stack: &mut [Element<'s>]) -> Result<(), Bail> {
        let Some(element) = stack.last() else { return Ok(()) };
        self.itemscope |= element.attr("itemscope").is_some();
        if element.name == "script" && is_json_ld(element.attr("type")) {
            self.open = Some(stack.len());
            self.jsonld.push(String::new());
        }
        Ok(())
    }

    fn text(&mut self, text: &str) {
        if self.open.is_some()
            && let Some(script) = self.jsonld.last_mut()
        {
            script.push_str(text);
        }
    }

    fn close(&mut self, stack: &[Element<'s>]) {
        if self.open == Some(stack.len()) {
            self.open = None;
        }
    }
}

/// Whether a `type` attribute says JSON-LD: its essence (before any `;`) is
/// `application/ld+json`, in any case.
fn is_json_ld(kind: Option<&str>) -> bool {
    let essence = kind.unwrap_or_default().split(';').next().unwrap_or_default();
    essence.trim().eq_ignore_ascii_case("application/ld+json")
}

#[cfg(test)]
mod tests {
    use super::Scripts;

    /// Both readers (streaming, and the DOM it falls back on) find the same scripts.
    #[track_caller]
    fn check(page: &str, jsonld: &[&str], itemscope: bool) {
        let streamed = Scripts::read(page);
        assert_eq!(streamed.jsonld, jsonld, "{page}");
        assert_eq!(streamed.itemscope, itemscope, "{page}");
        let dom = crate::parse(page).map(|d| Scripts::of(&d)).unwrap_or_default();
        assert_eq!(dom, streamed, "{page}");
    }

    #[test]
    fn json_ld_scripts_and_itemscope() {
        check("<script type='application/ld+json'>{\"a\":1}</script><p>x", &["{\"a\":1}"], false);
        check("<SCRIPT TYPE='Application/LD+JSON; charset=utf-8'>[]</SCRIPT>", &["[]"], false);
        check("<script type=application/json>{}</script><div itemscope>", &[], true);
        check("<!-- <script type=application/ld+json>{}</script> -->", &[], false);
        check("<noscript><script type=application/ld+json>{}</script></noscript>", &[], false);
        check("<div title='<script type=application/ld+json>{}</script>'></div>", &[], false);
        check("<svg><script type=application/ld+json>{}</script></svg>", &[], false);
        // Not streamed (`<!--` in a script, an implicit `</p>`): the DOM reads them.
        check("<script type=application/ld+json><!-- {} --></script>", &["<!-- {} -->"], false);
        check("<p>a<div itemscope><script type=application/ld+json>1</script>", &["1"], true);
        check("", &[], false);
    }

    #[test]
    fn a_page_too_deep_keeps_what_came_before() {
        let page = format!("<script type=application/ld+json>1</script>{}", "<div>".repeat(5_000));
        assert_eq!(Scripts::read(&page).jsonld, ["1"]);
        let page = format!("{}<script type=application/ld+json>1</script>", "<div>".repeat(5_000));
        assert!(Scripts::read(&page).jsonld.is_empty());
    }
}
