//! Turning a page body into the text that is compared between checks.
//!
//! HTML is read by one of two paths that give the same result:
//!
//! - The **DOM path** ([`extract_with_dom`]) builds the full tree with html5ever (through
//!   scraper), detaches the remove selectors' matches, then walks the document or each match
//!   of the selector. It is the reference.
//! - The **streaming path** (`lexer`, `tree`, `matching`, `stream`) tokenizes the page itself,
//!   keeps the stack of open elements html5ever would keep, matches selectors against that
//!   stack with scraper's own parser and the same `selectors` engine, and collects text as
//!   elements open and close. No tree is built. [`extract_with`] tries it first.
//!
//! The streaming path gives up (and the DOM path reads the page, costing both) whenever it
//! cannot be sure of the DOM's answer. It falls back on:
//!
//! - **Selectors** (main or remove) that need more than the element and its ancestors:
//!   sibling combinators, `:nth-*`, `:first-child` and the like, `:empty`, `:has()`,
//!   `:scope`; a remove selector matching the root element when reading the whole page.
//! - **Input**: a NUL character; an irregular character reference (a legacy one without `;`,
//!   `&#` without digits or `;`, numeric references html5ever replaces: 0, surrogates, C1
//!   controls, non-characters, out of range); `<!-->` and `<!--->`; a comment closed by
//!   `--!>`; `<!--` inside a script (the script escape states); `=` before an attribute name;
//!   `</` not followed by a letter or `>`; end of file inside a tag, comment, declaration or
//!   raw text element.
//! - **Tree construction** beyond a plain push or pop of the current node: any implicit end
//!   (`<p>` closed by a block, `hr`, `table` and the like; `<li>`, `<dd>`, `<dt>`, `<option>`
//!   closing a sibling; a heading inside a heading); nested `a`, `nobr`, `button` or `form`
//!   (the adoption agency and friends); an end tag that is not for the current node, except
//!   one html5ever ignores (an unknown name with a special element in between, `</body>`,
//!   `</html>`, or `</head>` after the head); `</br>`, `</p>` without a `<p>` and the like;
//!   tables except the well-nested subset (`caption`, `colgroup`/`col`, implied `tbody` and
//!   `tr`, a cell or row closed by the next one or by the table's end tag), so no foster
//!   parenting; elements with their own insertion mode or parsing (`template`, `select`,
//!   `frameset`, `plaintext`, `xmp`, `noembed`, ruby's `rb`/`rt`/`rp`/`rtc`, `image`); foreign
//!   content (`svg`, `math`); a second `html`, `head` or `body` (attribute merging); head
//!   elements between `</head>` and the body.
//!
//! What the streaming path keeps exactly: implied `html`, `head` and `body` (also for empty
//! pages, so `head` and `body` selectors still match); text in the head moving the page into
//! the body; content after `</body>` and `</html>` staying in the current element; elements
//! left open at the end of the file; raw text in `script`, `style`, `noscript` (scripting is on
//! in html5ever), `iframe`, `noframes`, RCDATA in `title` and `textarea`; the line feed dropped
//! after `<pre>`, `<listing>` and `<textarea>`; CR LF normalisation and a leading BOM;
//! duplicate attributes (the first wins); `/>` ignored on HTML elements; the DOM path's quirks
//! (matches in document order, a nested match's text once in the outer match and again on its
//! own, matches inside a removed element still counted, with the removed element as their
//! root).
//!
//! `tests/differential.rs` runs both paths over real, hand-written and generated pages and
//! requires identical results.

use ego_tree::iter::Edge;
use scraper::{ElementRef, Html, Node, Selector};

use driftwatch_core::ExtractOptions;

use crate::Page;

mod lexer;
mod matching;
mod stream;
mod tags;
mod tree;

/// Why a page yielded no text to compare.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ExtractError {
    /// The CSS selector does not parse.
    #[error("invalid CSS selector `{selector}`: {reason}")]
    InvalidSelector {
        /// The selector as given.
        selector: String,
        /// The parser's complaint.
        reason: String,
    },
    /// The selector matched no element.
    #[error("selector `{0}` matched nothing on the page")]
    SelectorMissing(String),
    /// The body declared JSON but does not parse.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// After extraction nothing was left (an empty or blank page).
    #[error("the page has no text")]
    Empty,
}

/// Checks that `selector` parses, for validating input before it is stored.
pub fn validate_selector(selector: &str) -> Result<(), ExtractError> {
    parse_selector(selector).map(|_| ())
}

fn parse_selector(selector: &str) -> Result<Selector, ExtractError> {
    Selector::parse(selector).map_err(|e| {
        // scraper words some parse errors as its own bug ("Unexpected error occurred. Please
        // report this to the developer\nEmptySelector"): keep only the error's name.
        let message = e.to_string();
        let reason = match message.split_once("report this to the developer") {
            Some((_, name)) => format!("not a selector ({})", name.trim()),
            None => message,
        };
        ExtractError::InvalidSelector { selector: selector.to_owned(), reason }
    })
}

/// The normalised text of a page: what is stored in snapshots and compared.
///
/// JSON bodies (by content type) are canonicalised (sorted keys, pretty-printed), so key order
/// never fakes a change; `text/plain` is normalised line by line; anything else is treated as
/// HTML, narrowed by `selector` when given (every match, in document order).
pub fn extract(page: &Page, selector: Option<&str>) -> Result<String, ExtractError> {
    extract_with(page, selector, &ExtractOptions::default())
}

/// [`extract`] with a watch's extraction options: elements removed first, links kept, a JSON
/// Pointer into JSON bodies.
pub fn extract_with(page: &Page, selector: Option<&str>, options: &ExtractOptions) -> Result<String, ExtractError> {
    extract_with_path(page, selector, options).0
}

/// How [`extract_with_path`] read a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractPath {
    /// HTML, read by the streaming extractor without building a tree.
    Streaming,
    /// HTML the streaming extractor could not be sure of, read through the DOM; says why.
    Fallback(&'static str),
    /// JSON or plain text: no HTML to read.
    NotHtml,
}

/// [`extract_with`], also telling which path read the page (for benchmarks and tests).
pub fn extract_with_path(
    page: &Page,
    selector: Option<&str>,
    options: &ExtractOptions,
) -> (Result<String, ExtractError>, ExtractPath) {
    let (body, kind) = decode_page(page);
    let (text, path) = match kind {
        BodyKind::Html => match stream::html_text(&body, selector, &options.remove_selectors, options.keep_links) {
            Ok(text) => (text, ExtractPath::Streaming),
            Err(bail) => (dom_text(&body, selector, options), ExtractPath::Fallback(bail.0)),
        },
        _ => (other_text(&body, kind, options), ExtractPath::NotHtml),
    };
    (text.and_then(non_empty), path)
}

/// [`extract_with`] with HTML always read through a full DOM (html5ever's tree builder): the
/// reference the streaming extractor is tested against.
pub fn extract_with_dom(page: &Page, selector: Option<&str>, options: &ExtractOptions) -> Result<String, ExtractError> {
    let (body, kind) = decode_page(page);
    let text = match kind {
        BodyKind::Html => dom_text(&body, selector, options),
        _ => other_text(&body, kind, options),
    };
    text.and_then(non_empty)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Json,
    Plain,
    Html,
}

fn decode_page(page: &Page) -> (String, BodyKind) {
    let content_type = page.content_type.as_deref().unwrap_or("").to_ascii_lowercase();
    let kind = if content_type.contains("json") {
        BodyKind::Json
    } else if content_type.starts_with("text/plain") {
        BodyKind::Plain
    } else {
        BodyKind::Html
    };
    // A NUL cannot be stored (see `driftwatch_core::storable`): replaced here, before either
    // reader sees the text, so both read the same and the hash matches what is stored.
    let text = decode(&page.body, &content_type);
    let text = match driftwatch_core::storable(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(replaced) => replaced,
    };
    (text, kind)
}

fn non_empty(text: String) -> Result<String, ExtractError> {
    if text.trim().is_empty() { Err(ExtractError::Empty) } else { Ok(text) }
}

fn other_text(body: &str, kind: BodyKind, options: &ExtractOptions) -> Result<String, ExtractError> {
    if kind == BodyKind::Plain {
        return Ok(normalise(body));
    }
    let mut value: serde_json::Value =
        serde_json::from_str(body).map_err(|e| ExtractError::InvalidJson(e.to_string()))?;
    if let Some(pointer) = options.json_pointer.as_deref().filter(|p| !p.is_empty()) {
        value = value.pointer(pointer).cloned().ok_or_else(|| ExtractError::SelectorMissing(pointer.to_owned()))?;
    }
    let mut pretty = serde_json::to_string_pretty(&canonical(value)).unwrap_or_default();
    pretty.push('\n');
    Ok(pretty)
}

fn dom_text(body: &str, selector: Option<&str>, options: &ExtractOptions) -> Result<String, ExtractError> {
    let mut document = Html::parse_document(body);
    for remove in &options.remove_selectors {
        let parsed = parse_selector(remove)?;
        let doomed: Vec<_> = document.select(&parsed).map(|e| e.id()).collect();
        for id in doomed {
            if let Some(mut node) = document.tree.get_mut(id) {
                node.detach();
            }
        }
    }
    let links = options.keep_links;
    match selector {
        None => {
            // A remove selector matching the root element leaves no text (scraper's
            // `root_element` would panic).
            let Some(root) = document.tree.root().children().find_map(ElementRef::wrap) else {
                return Ok(String::new());
            };
            let mut raw = String::new();
            push_text(root, &mut raw, links);
            Ok(normalise(&raw))
        }
        Some(selector) => {
            let parsed = parse_selector(selector)?;
            let mut raw = String::new();
            let mut matched = false;
            for element in document.select(&parsed) {
                matched = true;
                push_text(element, &mut raw, links);
                raw.push('\n');
            }
            if !matched {
                return Err(ExtractError::SelectorMissing(selector.to_owned()));
            }
            Ok(normalise(&raw))
        }
    }
}

/// Decodes the body with the charset of the `Content-Type`, else of a `<meta charset>` near the
/// start, else UTF-8 (invalid bytes replaced, never an error). A byte-order mark wins over all.
fn decode(body: &[u8], content_type: &str) -> String {
    let label = charset_param(content_type).or_else(|| sniff_meta_charset(body));
    let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes())).unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|param| {
        let (key, value) = param.split_once('=')?;
        (key.trim() == "charset").then(|| value.trim().trim_matches('"').to_owned())
    })
}

fn sniff_meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'']);
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_')).unwrap_or(rest.len());
    (end > 0).then(|| rest[..end].to_owned())
}

fn canonical(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, canonical(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// Elements whose content is never page text.
const SKIPPED: &[&str] = &["script", "style", "noscript", "template", "head", "title", "svg", "iframe", "object"];

/// Elements that start and end a line of text.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "caption",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "html",
    "legend",
    "li",
    "main",
    "nav",
    "ol",
    "option",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "thead",
    "tfoot",
    "tr",
    "ul",
];

/// Appends the text under `root`, with a line break around each block element and a space
/// between table cells. Iterative, so a deeply nested page cannot overflow the stack.
fn push_text(root: ElementRef<'_>, out: &mut String, links: bool) {
    let mut skipping = 0usize;
    let mut preformatted = 0usize;
    let mut hrefs: Vec<Option<String>> = Vec::new();
    for edge in root.traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(el) => {
                    let name = el.name();
                    if skipping > 0 || SKIPPED.contains(&name) {
                        skipping += 1;
                        continue;
                    }
                    if name == "pre" {
                        preformatted += 1;
                    }
                    if links && name == "a" {
                        hrefs.push(el.attr("href").map(str::to_owned));
                    }
                    if name == "br" || BLOCKS.contains(&name) {
                        out.push('\n');
                    }
                }
                // Source line breaks are plain whitespace in HTML, except inside <pre>.
                Node::Text(text) if skipping == 0 && preformatted > 0 => out.push_str(text),
                Node::Text(text) if skipping == 0 => out.extend(text.chars().map(|c| if c == '\n' { ' ' } else { c })),
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(el) = node.value() {
                    if skipping > 0 {
                        skipping -= 1;
                        continue;
                    }
                    if el.name() == "pre" {
                        preformatted = preformatted.saturating_sub(1);
                    }
                    if links
                        && el.name() == "a"
                        && let Some(Some(href)) = hrefs.pop()
                    {
                        out.push_str(&format!(" ({href})"));
                    }
                    if BLOCKS.contains(&el.name()) {
                        out.push('\n');
                    } else if matches!(el.name(), "td" | "th") {
                        out.push(' ');
                    }
                }
            }
        }
    }
}

/// Collapses whitespace within lines, trims them and drops empty ones; ends with a newline.
fn normalise(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for line in raw.lines() {
        let mut words = line.split_whitespace();
        if let Some(first) = words.next() {
            out.push_str(first);
            for word in words {
                out.push(' ');
                out.push_str(word);
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(content_type: &str, body: &[u8], selector: Option<&str>, expected: Result<&str, ExtractError>) {
        let page =
            Page { status: 200, content_type: Some(content_type.to_owned()), body: body.to_vec(), ..Page::default() };
        assert_eq!(extract(&page, selector).as_deref().map_err(Clone::clone), expected);
    }

    const HTML: &str = "text/html";

    #[test]
    fn html_text_keeps_blocks_and_collapses_whitespace() {
        check(HTML, b"<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1>\n<p>Hello   <b>big</b>\n world</p><script>x()</script><ul><li>a</li><li>b</li></ul>line<br>break</body></html>",
            None, Ok("Title\nHello big world\na\nb\nline\nbreak\n"));
        check(HTML, b"<pre>a\n  b</pre>", None, Ok("a\nb\n"));
        check(HTML, b"<table><tr><td>1</td><td>2</td></tr><tr><td>3</td></tr></table>", None, Ok("1 2\n3\n"));
        check(HTML, "<p>caf\u{e9}&nbsp;&amp;\u{a0}co</p>".as_bytes(), None, Ok("caf\u{e9} & co\n"));
    }

    #[test]
    fn selectors_narrow_the_text() {
        let page = b"<div id=nav>Menu</div><div class=price>10 EUR</div><div class=price>12 EUR</div>";
        check(HTML, page, Some(".price"), Ok("10 EUR\n12 EUR\n"));
        check(HTML, page, Some("#missing"), Err(ExtractError::SelectorMissing("#missing".into())));
        assert!(matches!(validate_selector("div[["), Err(ExtractError::InvalidSelector { .. })));
    }

    #[test]
    fn charsets_are_honoured() {
        check("text/html; charset=ISO-8859-1", b"<p>caf\xe9</p>", None, Ok("caf\u{e9}\n"));
        check(HTML, b"<meta charset=\"windows-1252\"><p>\x93quoted\x94</p>", None, Ok("\u{201c}quoted\u{201d}\n"));
        check(HTML, b"<p>bad \xff byte</p>", None, Ok("bad \u{fffd} byte\n"));
    }

    #[test]
    fn json_is_canonical_and_text_is_normalised() {
        let a = br#"{"b": 1, "a": {"d": [1, 2], "c": null}}"#;
        let b = br#"{"a": {"c": null, "d": [1, 2]}, "b": 1}"#;
        let page = |body: &[u8]| Page {
            status: 200,
            content_type: Some("application/json".into()),
            body: body.to_vec(),
            ..Page::default()
        };
        assert_eq!(extract(&page(a), None), extract(&page(b), None));
        assert!(matches!(extract(&page(b"{oops"), None), Err(ExtractError::InvalidJson(_))));
        check("text/plain", b"  one  two \n\n three\n", None, Ok("one two\nthree\n"));
        check(HTML, b"<html><body>  </body></html>", None, Err(ExtractError::Empty));
    }

    #[track_caller]
    fn check_with(content_type: &str, body: &str, options: ExtractOptions, expected: Result<&str, ExtractError>) {
        let page = Page {
            status: 200,
            content_type: Some(content_type.to_owned()),
            body: body.as_bytes().to_vec(),
            ..Page::default()
        };
        assert_eq!(extract_with(&page, None, &options).as_deref().map_err(Clone::clone), expected);
    }

    #[test]
    fn extraction_options() {
        let remove = |s: &[&str]| ExtractOptions {
            remove_selectors: s.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        check_with(
            HTML,
            "<p>price 10</p><p class=ad>buy now</p><span id=n>42 visitors</span>",
            remove(&[".ad", "#n"]),
            Ok("price 10\n"),
        );
        let page = Page { status: 200, content_type: Some(HTML.into()), body: b"<p>x</p>".to_vec(), ..Page::default() };
        assert!(matches!(extract_with(&page, None, &remove(&["[["])), Err(ExtractError::InvalidSelector { .. })));
        let links = ExtractOptions { keep_links: true, ..Default::default() };
        check_with(HTML, "<p>see <a href=\"/docs\">the docs</a></p>", links, Ok("see the docs (/docs)\n"));
        let pointer = |p: &str| ExtractOptions { json_pointer: Some(p.into()), ..Default::default() };
        check_with("application/json", r#"{"data": {"price": 10, "ts": 99}}"#, pointer("/data/price"), Ok("10\n"));
        check_with(
            "application/json",
            r#"{"data": {}}"#,
            pointer("/data/price"),
            Err(ExtractError::SelectorMissing("/data/price".into())),
        );
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let body = format!("{}deep{}", "<div>".repeat(2_000), "</div>".repeat(2_000));
        check(HTML, body.as_bytes(), None, Ok("deep\n"));
    }
}
