//! JSON-LD: one script's text to offers.
//!
//! The script may be wrapped in an HTML comment or CDATA section (`<!-- … -->`,
//! `//<![CDATA[ … //]]>`); raw control characters inside strings (a newline in a description)
//! are escaped when the text does not parse as it is. Anything else invalid skips the script.
//! A node that is only a reference (`{"@id": …}`, perhaps with `@type`) stands for the node with that `@id` in the same
//! script, so `@graph` pages that link their offers and variants by id read the same as nested
//! ones; a node referenced as an offer or a variant is not read again on its own.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Number, Value};

use super::{Item, Kind, MAX_DEPTH, Sink, Val, kind, local_name};

/// Scripts nested deeper than this are skipped unparsed (serde_json's own limit, held here
/// whatever features it is built with).
const MAX_JSON_NESTING: usize = 128;

/// Reads the offers of one JSON-LD script's text into `sink`.
pub(super) fn read(script: &str, sink: &mut Sink) {
    let Some(value) = parse(script) else { return };
    let mut doc = Doc::default();
    doc.index(&value, 0);
    walk(&value, &doc, 0, sink);
}

/// The JSON in a script's text, or `None` when there is none or it is invalid.
fn parse(script: &str) -> Option<Value> {
    let body = unwrap(script);
    if body.is_empty() || !nesting_within(body, MAX_JSON_NESTING) {
        return None;
    }
    serde_json::from_str(body).ok().or_else(|| serde_json::from_str(&escape_controls(body)?).ok())
}

/// The text inside the HTML comment or CDATA wrappers pages put around scripts.
fn unwrap(script: &str) -> &str {
    const OPEN: &[&str] = &["/*<![CDATA[*/", "//<![CDATA[", "<![CDATA[", "<!--"];
    const CLOSE: &[&str] = &["/*]]>*/", "//]]>", "]]>", "//-->", "-->"];
    let mut body = script;
    loop {
        let before = body.len();
        body = body.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if let Some(rest) = OPEN.iter().find_map(|open| body.strip_prefix(open)) {
            body = rest;
        }
        if let Some(rest) = CLOSE.iter().find_map(|close| body.strip_suffix(close)) {
            body = rest;
        }
        if body.len() == before {
            return body;
        }
    }
}

/// Whether arrays and objects nest at most `limit` deep in this JSON text (strings skipped).
fn nesting_within(text: &str, limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

/// The text with raw control characters inside strings escaped, or `None` when it has none.
fn escape_controls(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut changed = false;
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            } else if c < ' ' {
                changed = true;
                match c {
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    _ => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                }
                continue;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    changed.then_some(out)
}

/// What one script says about its nodes: each `@id`'s node, and the ids referenced as an offer or
/// a variant (read through their product, not on their own).
#[derive(Default)]
struct Doc<'a> {
    nodes: HashMap<&'a str, &'a Map<String, Value>>,
    referenced: HashSet<&'a str>,
}

impl<'a> Doc<'a> {
    fn index(&mut self, value: &'a Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Array(values) => values.iter().for_each(|v| self.index(v, depth + 1)),
            Value::Object(map) => {
                if let Some(id) = map.get("@id").and_then(Value::as_str)
                    && reference(map).is_none()
                {
                    self.nodes.entry(id).or_insert(map);
                }
                for (key, v) in map {
                    if matches!(local_name(key), "offers" | "hasVariant") {
                        self.note_references(v);
                    }
                    self.index(v, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn note_references(&mut self, value: &'a Value) {
        let refs: &[Value] = match value {
            Value::Array(values) => values,
            other => std::slice::from_ref(other),
        };
        self.referenced.extend(refs.iter().filter_map(|v| reference(v.as_object()?)));
    }

    /// Whether this node is read through a product that references it.
    fn is_referenced(&self, map: &Map<String, Value>) -> bool {
        map.get("@id").and_then(Value::as_str).is_some_and(|id| self.referenced.contains(id))
    }
}

/// The id of a node that is only a reference: `{"@id": "…"}`, perhaps with its `@type`.
fn reference(map: &Map<String, Value>) -> Option<&str> {
    let id = map.get("@id")?.as_str()?;
    map.keys().all(|key| key == "@id" || key == "@type").then_some(id)
}

/// Finds the products and lone offers in a value, in order. Does not look inside them.
fn walk(value: &Value, doc: &Doc<'_>, depth: usize, sink: &mut Sink) {
    if depth > MAX_DEPTH || !sink.step() {
        return;
    }
    match value {
        Value::Array(values) => {
            for v in values {
                if sink.done() {
                    return;
                }
                walk(v, doc, depth + 1, sink);
            }
        }
        Value::Object(map) => {
            let node = Node { map, doc };
            match kind(&node.types()) {
                Kind::Product if !doc.is_referenced(map) => super::product(&node, None, depth, sink),
                Kind::Offer if !doc.is_referenced(map) => super::lone_offer(&node, depth, sink),
                Kind::Product | Kind::Offer => {}
                Kind::Other => {
                    for (key, v) in map {
                        if sink.done() {
                            return;
                        }
                        if key != "@context" {
                            walk(v, doc, depth + 1, sink);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// A JSON-LD node.
struct Node<'a> {
    map: &'a Map<String, Value>,
    doc: &'a Doc<'a>,
}

impl<'a> Node<'a> {
    /// The values in `value` (an array's items, a `@list`, a `@value`), in order.
    fn collect(&self, value: &'a Value, depth: usize, out: &mut Vec<Val<Self>>) {
        match value {
            Value::String(s) => out.push(Val::Text(s.clone())),
            Value::Number(n) => out.push(Val::Text(number_text(n))),
            Value::Array(values) if depth < 2 => {
                for v in values {
                    self.collect(v, depth + 1, out);
                }
            }
            Value::Object(map) => {
                if let Some(inner) = map.get("@value").or_else(|| map.get("@list")).or_else(|| map.get("@set")) {
                    if depth < 2 {
                        self.collect(inner, depth + 1, out);
                    }
                } else if let Some(id) = reference(map) {
                    match self.doc.nodes.get(id) {
                        Some(node) => out.push(Val::Item(Node { map: node, doc: self.doc })),
                        None if map.len() == 1 => out.push(Val::Text(id.to_owned())),
                        None => out.push(Val::Item(Node { map, doc: self.doc })),
                    }
                } else {
                    out.push(Val::Item(Node { map, doc: self.doc }));
                }
            }
            _ => {}
        }
    }
}

impl Item for Node<'_> {
    fn types(&self) -> Vec<String> {
        let mut types = Vec::new();
        match self.map.get("@type") {
            Some(Value::String(t)) => types.push(local_name(t).to_ascii_lowercase()),
            Some(Value::Array(ts)) => {
                types.extend(ts.iter().filter_map(Value::as_str).map(|t| local_name(t).to_ascii_lowercase()));
            }
            _ => {}
        }
        types
    }

    fn values(&self, prop: &str) -> Vec<Val<Self>> {
        let value = self.map.get(prop).or_else(|| {
            self.map.iter().find(|(key, _)| key.contains([':', '/', '#']) && local_name(key) == prop).map(|(_, v)| v)
        });
        let mut out = Vec::new();
        if let Some(value) = value {
            self.collect(value, 0, &mut out);
        }
        out
    }

    fn id(&self) -> Option<String> {
        self.map.get("@id").and_then(Value::as_str).map(str::to_owned)
    }
}

/// A JSON number as decimal text: `1299`, `12.5`, never an exponent.
fn number_text(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        u.to_string()
    } else if let Some(f) = n.as_f64() {
        format!("{f}")
    } else {
        n.to_string()
    }
}
