//! One pass over a page's tags without building a DOM: the text of its JSON-LD scripts, whether
//! any element has `itemscope`, and whether html5ever would build its DOM in reasonable time.
//!
//! The tokenizer follows the HTML rules that decide where a script's text is: comments
//! (`<!-- … -->`, `<!…>`, `<?…>`), quoted attribute values (a `>` inside one does not end the tag),
//! the raw text of `script` (with its `<!--`/`<script>` escapes), `style`, `textarea`, `title`,
//! `xmp`, `iframe`, `noembed`, `noframes` and `noscript` (as html5ever reads it, scripting on:
//! a script inside `noscript` is text), `plaintext`, and SVG/MathML content, where those elements
//! are not raw. Character references in attribute values are not decoded.

use std::borrow::Cow;
use std::ops::Range;

use super::depth::{Depth, is_raw_text};

/// A page whose estimated nesting passes this is not parsed into a DOM (the scrape crate's DOM
/// path refuses pages nested deeper than the same figure).
pub(super) const MAX_HTML_DEPTH: usize = 1024;

/// What one pass over the tags found.
pub(super) struct Scan<'a> {
    /// The text of each `application/ld+json` script, in document order.
    pub(super) jsonld: Vec<&'a str>,
    /// Whether a start tag has an `itemscope` attribute.
    pub(super) itemscope: bool,
    too_deep: bool,
    /// The tree was followed, so `too_deep` is known.
    followed_tree: bool,
}

impl Scan<'_> {
    /// Whether html5ever builds this page's DOM in reasonable time.
    /// Not known (false) after a scan of [`Follow::Scripts`].
    pub(super) fn dom_is_cheap(&self) -> bool {
        self.followed_tree && !self.too_deep
    }
}

/// What a scan follows besides the scripts and `itemscope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follow {
    /// The tree html5ever would build, for [`Scan::dom_is_cheap`] (and for SVG and MathML,
    /// where `script` and friends are not raw text).
    Tree,
    /// Only what finding the scripts needs: the tree when the page may have SVG or MathML
    /// content, else nothing (every element is HTML then). [`Scan::dom_is_cheap`] is not known.
    Scripts,
}

/// Scans the page's tags.
pub(super) fn scan(html: &str, follow: Follow) -> Scan<'_> {
    let bytes = html.as_bytes();
    let tree = follow == Follow::Tree || may_be_foreign(bytes);
    let mut depth = Depth::new(MAX_HTML_DEPTH);
    let mut out = Scan { jsonld: Vec::new(), itemscope: false, too_deep: false, followed_tree: tree };
    let mut at = 0;
    while let Some(lt) = find(bytes, at, b'<') {
        if tree && lt > at {
            depth.text();
        }
        at = match bytes.get(lt + 1).copied() {
            None => break,
            Some(b'!') if bytes[lt..].starts_with(b"<!--") => comment_end(bytes, lt + 4),
            Some(b'!' | b'?') => after_gt(bytes, lt + 2),
            Some(b'/') => match bytes.get(lt + 2) {
                Some(c) if c.is_ascii_alphabetic() => {
                    let Some(end) = tag(html, lt + 2) else { break };
                    if tree {
                        depth.end(&end.name);
                    }
                    end.end
                }
                Some(b'>') => lt + 3,
                Some(_) => after_gt(bytes, lt + 2),
                None => break,
            },
            Some(c) if c.is_ascii_alphabetic() => {
                let Some(start) = tag(html, lt + 1) else { break };
                out.itemscope |= start.itemscope;
                let attributes = html.get(start.attributes.clone()).unwrap_or_default();
                let html_element = !tree || depth.start(&start.name, attributes, start.self_closing);
                if !(html_element && is_raw_text(&start.name)) {
                    start.end
                } else if start.name == "plaintext" {
                    break;
                } else {
                    let close = if start.name == "script" {
                        script_end(bytes, start.end)
                    } else {
                        raw_text_end(bytes, start.end, start.name.as_bytes())
                    };
                    if start.json_ld
                        && let Some(text) = html.get(start.end..close)
                    {
                        out.jsonld.push(text);
                    }
                    match tag(html, close + 2) {
                        Some(end) => end.end,
                        None => break,
                    }
                }
            }
            Some(_) => lt + 1,
        };
    }
    out.too_deep = depth.exceeded();
    out
}

/// A start or end tag.
struct Tag<'a> {
    /// In ASCII lowercase (borrowed from the page when it is written so, as most are).
    name: Cow<'a, str>,
    /// The raw text between the name and the closing `>` (or `/>`).
    attributes: Range<usize>,
    self_closing: bool,
    /// Just past the closing `>`.
    end: usize,
    itemscope: bool,
    /// Its (first) `type` attribute is `application/ld+json`, parameters allowed.
    json_ld: bool,
}

/// The tag whose name starts at `at`, or `None` when the page ends inside it (then html5ever
/// drops it, and nothing follows).
fn tag(html: &str, at: usize) -> Option<Tag<'_>> {
    let bytes = html.as_bytes();
    let mut i = at;
    while bytes.get(i).is_some_and(|&c| !is_space(c) && c != b'/' && c != b'>') {
        i += 1;
    }
    let mut tag = Tag {
        name: lowercase(html.get(at..i)?),
        attributes: i..i,
        self_closing: false,
        end: 0,
        itemscope: false,
        json_ld: false,
    };
    let attributes_start = i;
    let mut seen_type = false;
    loop {
        while bytes.get(i).is_some_and(|&c| is_space(c)) {
            i += 1;
        }
        match *bytes.get(i)? {
            b'>' => {
                tag.attributes = attributes_start..i;
                tag.end = i + 1;
                return Some(tag);
            }
            b'/' if bytes.get(i + 1) == Some(&b'>') => {
                tag.attributes = attributes_start..i;
                tag.self_closing = true;
                tag.end = i + 2;
                return Some(tag);
            }
            b'/' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        // An attribute: its name (a leading `=` belongs to it), then perhaps `=` and a value.
        let name_start = i;
        i += 1;
        while bytes.get(i).is_some_and(|&c| !is_space(c) && !matches!(c, b'/' | b'>' | b'=')) {
            i += 1;
        }
        let name = bytes.get(name_start..i).unwrap_or_default();
        while bytes.get(i).is_some_and(|&c| is_space(c)) {
            i += 1;
        }
        let mut value = None;
        if bytes.get(i) == Some(&b'=') {
            i += 1;
            while bytes.get(i).is_some_and(|&c| is_space(c)) {
                i += 1;
            }
            match bytes.get(i) {
                Some(&quote @ (b'"' | b'\'')) => {
                    let close = find(bytes, i + 1, quote)?;
                    value = Some(i + 1..close);
                    i = close + 1;
                }
                Some(b'>') | None => {}
                Some(_) => {
                    let start = i;
                    while bytes.get(i).is_some_and(|&c| !is_space(c) && c != b'>') {
                        i += 1;
                    }
                    value = Some(start..i);
                }
            }
        }
        if name.eq_ignore_ascii_case(b"itemscope") {
            tag.itemscope = true;
        } else if name.eq_ignore_ascii_case(b"type") && !seen_type {
            seen_type = true;
            let value = value.and_then(|range| html.get(range)).unwrap_or_default();
            let essence = value.split(';').next().unwrap_or_default().trim();
            tag.json_ld = essence.eq_ignore_ascii_case("application/ld+json");
        }
    }
}

/// Where a script's text ends (the `<` of its `</script`), by the script data states: after
/// `<!--` a `<script>` opens a "double escaped" part whose `</script>` does not end the script,
/// until `-->`.
fn script_end(bytes: &[u8], from: usize) -> usize {
    #[derive(PartialEq)]
    enum State {
        Data,
        Escaped,
        DoubleEscaped,
    }
    let mut state = State::Data;
    let mut i = from;
    while let Some(at) = bytes.get(i..).and_then(|rest| rest.iter().position(|&c| c == b'<' || c == b'-')) {
        let at = i + at;
        i = at + 1;
        if bytes.get(at) == Some(&b'-') {
            if state != State::Data && bytes[at..].starts_with(b"-->") {
                state = State::Data;
                i = at + 3;
            }
            continue;
        }
        if starts_with_ignore_case(bytes, at + 1, b"/script") && ends_name(bytes, at + 8) {
            if state == State::DoubleEscaped {
                state = State::Escaped;
                i = at + 8;
                continue;
            }
            return at;
        }
        if state == State::Data && bytes[at..].starts_with(b"<!--") {
            // Past `<!`, so that `<!-->` ends the escape at once.
            state = State::Escaped;
            i = at + 2;
        } else if state == State::Escaped
            && starts_with_ignore_case(bytes, at + 1, b"script")
            && ends_name(bytes, at + 7)
        {
            state = State::DoubleEscaped;
            i = at + 7;
        }
    }
    bytes.len()
}

/// Where the raw text of element `name` ends (the `<` of its end tag).
fn raw_text_end(bytes: &[u8], from: usize, name: &[u8]) -> usize {
    let mut i = from;
    while let Some(lt) = find(bytes, i, b'<') {
        if bytes.get(lt + 1) == Some(&b'/')
            && starts_with_ignore_case(bytes, lt + 2, name)
            && ends_name(bytes, lt + 2 + name.len())
        {
            return lt;
        }
        i = lt + 1;
    }
    bytes.len()
}

/// Just past the end of a comment whose text starts at `from`: `-->` (or `--!>`; `<!-->` and
/// `<!--->` are empty comments). The rest of the page when it never ends.
fn comment_end(bytes: &[u8], from: usize) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    if rest.starts_with(b">") {
        return from + 1;
    }
    if rest.starts_with(b"->") {
        return from + 2;
    }
    let mut i = from;
    while let Some(dash) = find(bytes, i, b'-') {
        if bytes[dash..].starts_with(b"-->") {
            return dash + 3;
        }
        if bytes[dash..].starts_with(b"--!>") {
            return dash + 4;
        }
        i = dash + 1;
    }
    bytes.len()
}

/// `name` in ASCII lowercase, copied only when it is not already.
fn lowercase(name: &str) -> Cow<'_, str> {
    match name.bytes().any(|b| b.is_ascii_uppercase()) {
        true => Cow::Owned(name.to_ascii_lowercase()),
        false => Cow::Borrowed(name),
    }
}

/// Whether the page may hold SVG or MathML content: `<svg` or `<math` anywhere, in any case
/// (in a comment or a script too: a false yes only costs the full simulation).
fn may_be_foreign(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'<', bytes)
        .any(|lt| starts_with_ignore_case(bytes, lt + 1, b"svg") || starts_with_ignore_case(bytes, lt + 1, b"math"))
}

/// Just past the next `>`, or the end of the page.
fn after_gt(bytes: &[u8], from: usize) -> usize {
    find(bytes, from, b'>').map_or(bytes.len(), |gt| gt + 1)
}

fn find(bytes: &[u8], from: usize, byte: u8) -> Option<usize> {
    Some(from + memchr::memchr(byte, bytes.get(from..)?)?)
}

fn starts_with_ignore_case(bytes: &[u8], at: usize, pattern: &[u8]) -> bool {
    bytes.get(at..at + pattern.len()).is_some_and(|s| s.eq_ignore_ascii_case(pattern))
}

/// Whether a tag name ends at `at` (white space, `/`, `>` or the end of the page).
fn ends_name(bytes: &[u8], at: usize) -> bool {
    bytes.get(at).is_none_or(|&c| is_space(c) || c == b'/' || c == b'>')
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c')
}
