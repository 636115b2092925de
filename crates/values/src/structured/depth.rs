//! An estimate of how deep html5ever's stack of open elements grows on a page, from its tags
//! alone, so that the DOM is built only for pages it builds in reasonable time (its tree builder
//! scans that stack for most start tags: quadratic in nesting).
//!
//! The tree construction rules that matter for depth are followed roughly: start tags push
//! (void elements and self-closing foreign ones do not), the common implied end tags pop (`p`
//! before a block, `li`, `dd`/`dt`, `option`, table rows and cells, headings), end tags pop to
//! their element unless a special element is in the way, and formatting elements popped by
//! another element's end tag are still counted, since html5ever reopens them (the list of active
//! formatting elements, with its markers and its limit of three alike). Reopening creates a new
//! element each time, so the number reopened is bounded too ([`MAX_REOPENED`]): a few hundred
//! distinct `<b>`s closed by a `</div>`, then `<p>x` repeated, would otherwise make millions of
//! elements out of a small page.
//!
//! The estimate errs high. On the scrape crate's HTML corpus and the Rust toolchain's 159,000
//! documentation pages it was never below the parsed DOM's depth by more than the three elements
//! a parser may imply (`html`, `head`, `body`), which it adds. A page that fails it is not parsed.

use std::collections::HashMap;

pub(super) use super::elements::is_raw_text;
use super::elements::{CLOSES_P, FORMATTING, HEADINGS, MARKERS, SPECIAL, breaks_out, is_integration_point, is_void};

/// A page on which html5ever would reopen more formatting elements than this is not parsed: each
/// reopening creates an element, and a few hundred distinct ones reopened before every paragraph
/// make millions.
const MAX_REOPENED: usize = 200_000;

/// An element on the simulated stack.
struct Open {
    name: String,
    /// In SVG or MathML.
    foreign: bool,
    /// A marker of the list of active formatting elements (`td`, `caption`, …): the number of
    /// pending formatting elements when it opened.
    marker: Option<usize>,
    /// A formatting element: its name and attributes, which html5ever compares.
    key: Option<String>,
}

/// The simulated stack of open elements.
pub(super) struct Depth {
    stack: Vec<Open>,
    /// The `marker` of each marker on the stack, innermost last.
    marks: Vec<usize>,
    /// Formatting elements html5ever has reopened so far (it creates a new element each time).
    reopened: usize,
    /// Formatting elements popped by another element's end tag: (name, key), in order.
    pending: Vec<(String, String)>,
    /// How many of `pending` have each key.
    alike: HashMap<String, usize>,
    limit: usize,
    exceeded: bool,
}

impl Depth {
    /// A simulation that gives up once the estimate passes `limit`.
    pub(super) fn new(limit: usize) -> Self {
        Depth {
            stack: Vec::new(),
            marks: Vec::new(),
            reopened: 0,
            pending: Vec::new(),
            alike: HashMap::new(),
            limit,
            exceeded: false,
        }
    }

    /// Whether the estimate passed the limit.
    pub(super) fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// A start tag (`name` in ASCII lowercase, `attributes` its raw text). Returns whether it is
    /// an HTML element (not SVG or MathML), whose raw text rules (`script`, `style`, …) apply.
    pub(super) fn start(&mut self, name: &str, attributes: &str, self_closing: bool) -> bool {
        if self.exceeded {
            // No longer followed: take every element as HTML, as most are.
            return true;
        }
        let mut foreign = self.in_foreign();
        if foreign && breaks_out(name, attributes) {
            while self.in_foreign() {
                self.pop(false);
            }
            foreign = false;
        }
        if foreign || matches!(name, "svg" | "math") {
            if !self_closing {
                self.push(name, true, None, None);
            }
            return !foreign;
        }
        if is_raw_text(name) {
            return true;
        }
        if reopens_formatting(name) {
            self.reopen();
        }
        if is_void(name) {
            if name == "hr" {
                self.close_p();
            }
            return true;
        }
        match name {
            "html" if !self.stack.is_empty() => return true,
            "head" if self.has("head") || self.has("body") => return true,
            "body" if self.has("body") => return true,
            "li" => {
                self.close_item(&["li"]);
                self.close_p();
            }
            "dd" | "dt" => {
                self.close_item(&["dd", "dt"]);
                self.close_p();
            }
            "option" => self.pop_if_top(&["option"]),
            "optgroup" => {
                self.pop_if_top(&["option"]);
                self.pop_if_top(&["optgroup"]);
            }
            "button" => {
                if let Some(at) = self.in_scope(&["button"], Scope::Default) {
                    self.pop_to(at, false);
                }
            }
            "caption" | "colgroup" | "tbody" | "thead" | "tfoot" => {
                let Some(table) = self.table() else { return true };
                self.pop_to(table + 1, false);
            }
            "tr" => {
                let Some(table) = self.table() else { return true };
                match self.nearest_above(table, &["tbody", "thead", "tfoot"]) {
                    Some(section) => self.pop_to(section + 1, false),
                    None => {
                        self.pop_to(table + 1, false);
                        self.push("tbody", false, None, None);
                    }
                }
            }
            "td" | "th" => {
                let Some(table) = self.table() else { return true };
                match self.nearest_above(table, &["tr", "tbody", "thead", "tfoot"]) {
                    Some(row) if self.stack.get(row).is_some_and(|o| o.name == "tr") => self.pop_to(row + 1, false),
                    Some(section) => {
                        self.pop_to(section + 1, false);
                        self.push("tr", false, None, None);
                    }
                    None => {
                        self.pop_to(table + 1, false);
                        self.push("tbody", false, None, None);
                        self.push("tr", false, None, None);
                    }
                }
            }
            _ if HEADINGS.contains(&name) => {
                self.close_p();
                self.pop_if_top(HEADINGS);
            }
            _ if CLOSES_P.contains(&name) => self.close_p(),
            _ => {}
        }
        let marker = MARKERS.contains(&name).then_some(self.pending.len());
        let key = FORMATTING.contains(&name).then(|| format!("{name} {}", attributes.trim()));
        self.push(name, false, marker, key);
        true
    }

    /// An end tag (`name` in ASCII lowercase).
    pub(super) fn end(&mut self, name: &str) {
        if self.exceeded {
            return;
        }
        // In foreign content an end tag closes the nearest foreign element of that name.
        let mut at = self.stack.len();
        while at > 0 && self.stack.get(at - 1).is_some_and(|o| o.foreign) {
            at -= 1;
            if self.stack.get(at).is_some_and(|o| o.name == name) {
                self.pop_to(at, false);
                return;
            }
        }
        let found = match name {
            "body" | "html" | "br" | "form" => None,
            "p" => self.in_scope(&["p"], Scope::Button),
            "li" => self.in_scope(&["li"], Scope::ListItem),
            "option" | "optgroup" => {
                self.pop_if_top(&[name]);
                None
            }
            "table" | "tbody" | "thead" | "tfoot" | "tr" | "td" | "th" | "caption" | "colgroup" => {
                self.in_scope(&[name], Scope::Table)
            }
            _ if HEADINGS.contains(&name) => self.in_scope(HEADINGS, Scope::Default),
            _ if FORMATTING.contains(&name) => {
                match self.stack.iter().rposition(|o| !o.foreign && o.name == name) {
                    None => self.forget_pending(name),
                    Some(at) => {
                        let blocked = self.stack.get(at + 1..).is_some_and(|above| above.iter().any(is_special));
                        if !blocked {
                            self.pop_to(at, true);
                        }
                    }
                }
                None
            }
            _ if CLOSES_P.contains(&name)
                || matches!(name, "dd" | "dt" | "button" | "applet" | "marquee" | "object" | "template" | "select") =>
            {
                self.in_scope(&[name], Scope::Default)
            }
            _ => {
                let mut found = None;
                for (at, open) in self.stack.iter().enumerate().rev() {
                    if !open.foreign && open.name == name {
                        found = Some(at);
                        break;
                    }
                    if is_special(open) {
                        break;
                    }
                }
                found
            }
        };
        if let Some(at) = found {
            self.pop_to(at, false);
        }
    }

    /// Text (outside raw text elements): in HTML content it reopens the formatting elements.
    pub(super) fn text(&mut self) {
        if !self.exceeded && !self.in_foreign() {
            self.reopen();
        }
    }

    /// Reopens the pending formatting elements since the innermost marker, as html5ever does
    /// before text and most inline start tags ("reconstruct the active formatting elements").
    fn reopen(&mut self) {
        let from = self.marks.last().copied().unwrap_or(0).min(self.pending.len());
        if from == self.pending.len() {
            return;
        }
        let reopened: Vec<_> = self.pending.drain(from..).collect();
        self.reopened = self.reopened.saturating_add(reopened.len());
        for (name, key) in reopened {
            forget(&mut self.alike, &key);
            self.stack.push(Open { name, foreign: false, marker: None, key: Some(key) });
        }
        self.check();
    }

    /// Whether the current node is foreign (not an HTML integration point).
    fn in_foreign(&self) -> bool {
        self.stack.last().is_some_and(|top| top.foreign && !is_integration_point(&top.name))
    }

    fn has(&self, name: &str) -> bool {
        self.stack.iter().any(|o| !o.foreign && o.name == name)
    }

    /// The nearest `table` on the stack.
    fn table(&self) -> Option<usize> {
        self.stack.iter().rposition(|o| !o.foreign && o.name == "table")
    }

    /// The nearest element named one of `names` above position `floor`.
    fn nearest_above(&self, floor: usize, names: &[&str]) -> Option<usize> {
        self.stack
            .iter()
            .enumerate()
            .skip(floor + 1)
            .rev()
            .find(|(_, o)| !o.foreign && names.contains(&o.name.as_str()))
            .map(|(at, _)| at)
    }

    /// The position of the nearest HTML element named one of `names`, if it is in `scope`.
    fn in_scope(&self, names: &[&str], scope: Scope) -> Option<usize> {
        for (at, open) in self.stack.iter().enumerate().rev() {
            if !open.foreign && names.contains(&open.name.as_str()) {
                return Some(at);
            }
            if scope.bounded_by(open) {
                return None;
            }
        }
        None
    }

    /// Closes an open `p` in button scope.
    fn close_p(&mut self) {
        if let Some(at) = self.in_scope(&["p"], Scope::Button) {
            self.pop_to(at, false);
        }
    }

    /// Closes the nearest `li` (or `dd`/`dt`) unless a special element other than `address`,
    /// `div` or `p` is in the way.
    fn close_item(&mut self, names: &[&str]) {
        let mut found = None;
        for (at, open) in self.stack.iter().enumerate().rev() {
            if !open.foreign && names.contains(&open.name.as_str()) {
                found = Some(at);
                break;
            }
            let passable = !open.foreign && matches!(open.name.as_str(), "address" | "div" | "p");
            if is_special(open) && !passable {
                break;
            }
        }
        if let Some(at) = found {
            self.pop_to(at, false);
        }
    }

    fn pop_if_top(&mut self, names: &[&str]) {
        if self.stack.last().is_some_and(|o| !o.foreign && names.contains(&o.name.as_str())) {
            self.pop(false);
        }
    }

    fn push(&mut self, name: &str, foreign: bool, marker: Option<usize>, key: Option<String>) {
        self.marks.extend(marker);
        self.stack.push(Open { name: name.to_owned(), foreign, marker, key });
        self.check();
    }

    /// Pops down to `len` elements; `own`: the last one popped is closed by its own end tag.
    fn pop_to(&mut self, len: usize, own: bool) {
        while self.stack.len() > len {
            let last = self.stack.len() == len + 1;
            self.pop(own && last);
        }
    }

    fn pop(&mut self, own: bool) {
        let Some(open) = self.stack.pop() else { return };
        if let Some(mark) = open.marker {
            self.marks.pop();
            for (_, key) in self.pending.drain(mark.min(self.pending.len())..) {
                forget(&mut self.alike, &key);
            }
        }
        if let Some(key) = open.key
            && !own
        {
            let count = self.alike.entry(key.clone()).or_insert(0);
            if *count < 3 {
                *count += 1;
                self.pending.push((open.name, key));
                self.check();
            }
        }
    }

    /// An end tag for a formatting element no longer open: html5ever drops it from its list.
    fn forget_pending(&mut self, name: &str) {
        if let Some(at) = self.pending.iter().rposition(|(n, _)| n == name) {
            let (_, key) = self.pending.remove(at);
            forget(&mut self.alike, &key);
        }
    }

    fn check(&mut self) {
        // html, head and body may be implied.
        if self.stack.len() + self.pending.len() + 3 > self.limit || self.reopened > MAX_REOPENED {
            self.exceeded = true;
        }
    }
}

fn forget(alike: &mut HashMap<String, usize>, key: &str) {
    if let Some(count) = alike.get_mut(key) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            alike.remove(key);
        }
    }
}

/// Whether a start tag makes html5ever reopen the formatting elements first: not blocks, table
/// parts, the document's structure, or raw text elements.
fn reopens_formatting(name: &str) -> bool {
    !(CLOSES_P.contains(&name)
        || HEADINGS.contains(&name)
        || is_raw_text(name)
        || matches!(
            name,
            "li" | "dd"
                | "dt"
                | "html"
                | "head"
                | "body"
                | "hr"
                | "table"
                | "caption"
                | "colgroup"
                | "col"
                | "tbody"
                | "thead"
                | "tfoot"
                | "tr"
                | "td"
                | "th"
                | "frameset"
                | "template"
        ))
}

/// The kinds of "has an element in scope".
#[derive(Clone, Copy)]
enum Scope {
    Default,
    Button,
    ListItem,
    Table,
}

impl Scope {
    fn bounded_by(self, open: &Open) -> bool {
        let name = open.name.as_str();
        if open.foreign {
            return !matches!(self, Scope::Table) && is_integration_point(name);
        }
        match self {
            Scope::Table => matches!(name, "html" | "table" | "template"),
            _ => {
                matches!(
                    name,
                    "applet" | "caption" | "html" | "table" | "td" | "th" | "marquee" | "object" | "template"
                ) || (matches!(self, Scope::Button) && name == "button")
                    || (matches!(self, Scope::ListItem) && matches!(name, "ol" | "ul"))
            }
        }
    }
}

fn is_special(open: &Open) -> bool {
    if open.foreign {
        return is_integration_point(&open.name);
    }
    SPECIAL.contains(&open.name.as_str())
}
