//! Turning a page body into the text that is compared between checks.
//!
//! HTML is read by one of two paths that give the same result:
//!
//! - The **DOM path** ([`extract_with_dom`]) builds the full tree with html5ever (through
//!   scraper), detaches the remove selectors' matches, then walks the document or each match
//!   of the selector. It is the reference.
//! - The **streaming path** (`driftwatch_html::build`, then `matching` and `stream` here)
//!   tokenizes the page itself,
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
//! Both paths are bounded, so that hostile markup costs time and memory linear in the page:
//!
//! - **Nesting**: an element inserted more than [`MAX_DEPTH`] elements deep fails the read with
//!   [`ExtractError::TooDeep`]. The streaming path falls back at that depth; the DOM path feeds
//!   html5ever in chunks and stops after the chunk that went too deep (html5ever scans its
//!   stack of open elements for each block start tag, so unbounded depth is quadratic).
//! - **Selected text**: nested matches repeat their text (the outer match's text, then the
//!   inner's), so a selector matching every level of a deep nest selects text quadratic in the
//!   page. The text collected plus one per element visited, over all matches, may not pass
//!   [`text_limit`] of the page (16 MiB plus four times its size): beyond, the read fails with
//!   [`ExtractError::TooMuchText`].
//!
//! `tests/differential.rs` runs both paths over real, hand-written and generated pages and
//! requires identical results.

use ego_tree::iter::Edge;
use scraper::{ElementRef, Node, Selector};

use driftwatch_core::ExtractOptions;
use driftwatch_html::scripts::Scripts;
use driftwatch_html::{BLOCKS, SKIPPED};

use crate::Page;

mod matching;
mod stream;

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
    /// An element is nested deeper than [`MAX_DEPTH`] elements.
    #[error("the page nests elements more than {0} deep")]
    TooDeep(usize),
    /// The selected text is over [`text_limit`] (nested matches repeat their text).
    #[error("the selected text is over {0} bytes (each match nested in another repeats its text)")]
    TooMuchText(usize),
}

pub use driftwatch_html::MAX_DEPTH;

/// The most text (bytes collected plus one per element visited, summed over matches) a page of
/// `body_len` bytes may select: 16 MiB plus four times the page.
pub fn text_limit(body_len: usize) -> usize {
    (16 << 20) + 4 * body_len
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

/// What [`extract_also`] reads besides the page text.
#[derive(Debug, Clone, Copy, Default)]
pub struct Also<'a> {
    /// Selectors whose matches' text to read (a watch's values read by selector).
    pub selectors: &'a [&'a str],
    /// Whether to collect where the page states structured data (its JSON-LD scripts, whether
    /// it has microdata), for a watch's structured values.
    pub scripts: bool,
}

impl<'a> Also<'a> {
    /// The text of each of `selectors`, nothing else.
    pub fn selectors(selectors: &'a [&'a str]) -> Self {
        Also { selectors, scripts: false }
    }
}

/// What [`extract_also`] read in its one pass over a page.
#[derive(Debug)]
pub struct Extracted {
    /// The page's text, as [`extract_with`] gives it.
    pub text: Result<String, ExtractError>,
    /// The text of each extra selector's matches (read with default options), in the order
    /// asked; empty when the page is not HTML (JSON and plain text have no elements).
    pub also: Vec<Result<String, ExtractError>>,
    /// The page's structured data scripts, when asked for and the page was read in one
    /// streaming pass (else `None`: the caller reads them itself, see
    /// [`driftwatch_html::scripts::Scripts::read`]).
    pub scripts: Option<Scripts>,
    /// The body as text, decoded as extraction decodes it (see [`decoded_body`]).
    pub body: String,
}

/// [`extract_with`], and in the same pass over the page what `also` asks for: the text of each
/// selector (a watch's values read by selector) and the structured data's scripts. The page is
/// decoded and tokenized once, not once per selector. Each text is what [`extract_with`]
/// would give for it alone.
pub fn extract_also(page: &Page, selector: Option<&str>, options: &ExtractOptions, also: Also<'_>) -> Extracted {
    let (body, kind) = decode_page(page);
    if kind != BodyKind::Html {
        let text = other_text(&body, kind, options).and_then(non_empty);
        return Extracted { text, also: Vec::new(), scripts: None, body };
    }
    let mut reads = vec![stream::Read { selector, remove: &options.remove_selectors, links: options.keep_links }];
    reads.extend(also.selectors.iter().map(|s| stream::Read { selector: Some(s), remove: &[], links: false }));
    let mut scripts = also.scripts.then(Scripts::default);
    let mut texts = match stream::html_texts(&body, &reads, scripts.as_mut()) {
        Ok(texts) => texts,
        // One read the streaming path cannot be sure of: each on its own, as extract_with does.
        Err(_) => {
            scripts = None;
            let defaults = ExtractOptions::default();
            reads
                .iter()
                .enumerate()
                .map(|(i, read)| match stream::html_text(&body, read.selector, read.remove, read.links) {
                    Ok(text) => text,
                    Err(_) => dom_text(&body, read.selector, if i == 0 { options } else { &defaults }),
                })
                .collect()
        }
    }
    .into_iter()
    .map(|text| text.and_then(non_empty));
    let text = texts.next().unwrap_or(Err(ExtractError::Empty));
    Extracted { text, also: texts.collect(), scripts, body }
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

/// The page's body as text: decoded by its charset as extraction decodes it (NULs replaced).
pub fn decoded_body(page: &Page) -> String {
    decode_page(page).0
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
    let mut document = driftwatch_html::parse(body).map_err(|_| ExtractError::TooDeep(MAX_DEPTH))?;
    let mut budget = Budget { elements: 0, limit: text_limit(body.len()) };
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
            push_text(root, &mut raw, links, &mut budget)?;
            Ok(normalise(&raw))
        }
        Some(selector) => {
            let parsed = parse_selector(selector)?;
            let mut raw = String::new();
            let mut matched = false;
            for element in document.select(&parsed) {
                matched = true;
                push_text(element, &mut raw, links, &mut budget)?;
                raw.push('\n');
                budget.check(&raw)?;
            }
            if !matched {
                return Err(ExtractError::SelectorMissing(selector.to_owned()));
            }
            Ok(normalise(&raw))
        }
    }
}

/// The selected text so far, against [`text_limit`].
struct Budget {
    /// Elements visited, over all matches.
    elements: usize,
    limit: usize,
}

impl Budget {
    fn check(&self, raw: &str) -> Result<(), ExtractError> {
        if raw.len() + self.elements > self.limit { Err(ExtractError::TooMuchText(self.limit)) } else { Ok(()) }
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

/// Appends the text under `root`, with a line break around each block element and a space
/// between table cells. Iterative, so a deeply nested page cannot overflow the stack. Fails once
/// `out` and the elements visited pass the budget.
fn push_text(root: ElementRef<'_>, out: &mut String, links: bool, budget: &mut Budget) -> Result<(), ExtractError> {
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
                    budget.elements += 1;
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
        budget.check(out)?;
    }
    Ok(())
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
mod tests;
