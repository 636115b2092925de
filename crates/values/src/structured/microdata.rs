//! Microdata: the items of the DOM (`itemscope`, `itemtype`, `itemprop`) to offers.
//!
//! An item's properties are the `itemprop` elements inside it that no nested `itemscope` owns
//! (`itemref` is not followed). Types are read from schema.org `itemtype` URLs only (http or
//! https, `www.` or not, a trailing slash or not); type and property names compare ASCII
//! case-insensitively, so `itemprop="Price"` reads as `price`.

use scraper::{ElementRef, Html};

use super::{Item, Kind, Sink, Val, kind, local_name};

/// A text value longer than this is cut (at a character boundary).
const MAX_TEXT_BYTES: usize = 4096;

/// Reads the offers of the page's microdata items into `sink`, in document order.
pub(super) fn read(document: &Html, sink: &mut Sink) {
    // Depth first, in document order. The flag: whether an item property here belongs to a
    // product or an offer (directly, or through items that are its properties), so that an item
    // here is read through that product, not on its own.
    let mut stack = vec![(document.tree.root(), false)];
    while let Some((node, owned)) = stack.pop() {
        if sink.done() {
            return;
        }
        let mut inner = owned;
        if let Some(element) = ElementRef::wrap(node)
            && element.value().attr("itemscope").is_some()
        {
            let here = kind(&types(element));
            let is_property = element.value().attr("itemprop").is_some();
            let read_here = !(is_property && owned);
            match here {
                Kind::Product if read_here => super::product(&Element::new(element), None, 0, sink),
                Kind::Offer if read_here => super::lone_offer(&Element::new(element), 0, sink),
                _ => {}
            }
            inner = (is_property && owned) || here != Kind::Other;
        }
        stack.extend(node.children().rev().map(|child| (child, inner)));
    }
}

/// A microdata item, with the elements of its properties.
struct Element<'a> {
    element: ElementRef<'a>,
    properties: Vec<ElementRef<'a>>,
}

impl<'a> Element<'a> {
    fn new(element: ElementRef<'a>) -> Self {
        let mut properties = Vec::new();
        let mut stack: Vec<_> = element.children().rev().collect();
        while let Some(node) = stack.pop() {
            let Some(child) = ElementRef::wrap(node) else { continue };
            if child.value().attr("itemprop").is_some() {
                properties.push(child);
            }
            if child.value().attr("itemscope").is_none() {
                stack.extend(node.children().rev());
            }
        }
        Element { element, properties }
    }
}

impl Item for Element<'_> {
    fn types(&self) -> Vec<String> {
        types(self.element)
    }

    fn values(&self, prop: &str) -> Vec<Val<Self>> {
        self.properties
            .iter()
            .filter(|element| {
                let names = element.value().attr("itemprop").unwrap_or_default();
                names.split_ascii_whitespace().any(|name| local_name(name).eq_ignore_ascii_case(prop))
            })
            .map(|element| {
                if element.value().attr("itemscope").is_some() {
                    Val::Item(Element::new(*element))
                } else {
                    Val::Text(value(*element))
                }
            })
            .collect()
    }

    fn id(&self) -> Option<String> {
        self.element.value().attr("itemid").map(str::to_owned)
    }
}

/// The schema.org types of an item (lowercase local names).
fn types(element: ElementRef<'_>) -> Vec<String> {
    let itemtype = element.value().attr("itemtype").unwrap_or_default();
    itemtype.split_ascii_whitespace().filter_map(schema_type).collect()
}

/// The lowercase local name of a schema.org type URL (`https://schema.org/Product/` →
/// `product`), or `None` for another vocabulary.
fn schema_type(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let rest = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://"))?;
    let rest = rest.strip_prefix("www.").unwrap_or(rest);
    let name = rest.strip_prefix("schema.org/")?.trim_end_matches('/');
    (!name.is_empty() && !name.contains('/')).then(|| name.to_owned())
}

/// A property's value by the microdata rules: the `content` attribute first, then by element:
/// `meta` → `content`; `a`, `area`, `link` → `href`; `audio`, `embed`, `iframe`, `img`, `source`,
/// `track`, `video` → `src`; `object` → `data`; `data`, `meter` → `value`; `time` → `datetime`
/// (else its text); any other → its text, trimmed, ASCII whitespace collapsed.
fn value(element: ElementRef<'_>) -> String {
    let el = element.value();
    if let Some(content) = el.attr("content") {
        return content.to_owned();
    }
    let attr = match el.name() {
        "meta" => Some("content"),
        "a" | "area" | "link" => Some("href"),
        "audio" | "embed" | "iframe" | "img" | "source" | "track" | "video" => Some("src"),
        "object" => Some("data"),
        "data" | "meter" => Some("value"),
        "time" if el.attr("datetime").is_some() => Some("datetime"),
        _ => None,
    };
    match attr {
        Some(attr) => el.attr(attr).unwrap_or_default().to_owned(),
        None => text(element),
    }
}

/// An element's text, ASCII whitespace collapsed to one space and trimmed, at most
/// [`MAX_TEXT_BYTES`].
fn text(element: ElementRef<'_>) -> String {
    let mut out = String::new();
    let mut space = false;
    'text: for piece in element.text() {
        for c in piece.chars() {
            if c.is_ascii_whitespace() {
                space = !out.is_empty();
                continue;
            }
            if out.len() + c.len_utf8() + usize::from(space) > MAX_TEXT_BYTES {
                break 'text;
            }
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    out
}
