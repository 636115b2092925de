//! Reading a watch's values from a page: each spec's source, its regex, then its type.
//!
//! [`Reader::new`] checks and compiles the specs (at save, and once per check); [`Reader::read`]
//! reads them from a page body. The page is read through `driftwatch_html` (see `Document`):
//! its structured data's scripts in a streaming pass (or the one a caller already made), its
//! DOM (bounded) at most once for attributes and microdata; and at most once as JSON (for
//! pointers, JSONPath and jq); each only when a spec needs it.

use std::sync::Arc;

use driftwatch_core::values::{StructuredField, ValueKind, ValueSpec};
use driftwatch_html::scripts::Scripts;
use regex::Regex;
use scraper::{Html, Selector};
use serde_json::Value;

use crate::FieldError;
use crate::conditions::BUILT_IN_SUBJECTS;
use crate::document::Document;
use crate::json::{JqLimits, JsonQuery};
use crate::parse;
use crate::structured;
use crate::typed::{Typed, Values};

/// Most values one watch reads.
pub const MAX_VALUES: usize = 10;

/// Where one value comes from, compiled.
#[derive(Debug, Clone)]
enum Source {
    Css { selector: Selector, source: String, attribute: Option<String> },
    Json(JsonQuery),
    Structured(StructuredField),
}

#[derive(Debug, Clone)]
struct Compiled {
    spec: ValueSpec,
    source: Source,
    regex: Option<Regex>,
}

/// A watch's value specs, checked and compiled. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Reader {
    specs: Arc<Vec<Compiled>>,
    limits: JqLimits,
}

/// What one read found: the values read, and for each value that could not be, why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    /// The values read, by name.
    pub values: Values,
    /// `(name, why)` for each value that could not be read, in spec order.
    pub failures: Vec<(String, String)>,
}

impl Readings {
    /// The failures as one note for the run: `price: no amount in "Call us"; stock: ...`.
    pub fn note(&self) -> Option<String> {
        (!self.failures.is_empty())
            .then(|| self.failures.iter().map(|(name, why)| format!("{name}: {why}")).collect::<Vec<_>>().join("; "))
    }
}

impl Reader {
    /// Checks and compiles `specs`; the error names the field (`values[1].jsonpath`).
    pub fn new(specs: &[ValueSpec]) -> Result<Reader, FieldError> {
        if specs.len() > MAX_VALUES {
            return Err(FieldError::new("values", format!("at most {MAX_VALUES} values")));
        }
        let mut compiled = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let at = format!("values[{i}]");
            if specs[..i].iter().any(|s| s.name == spec.name) {
                return Err(FieldError::new("name", format!("`{}` is named twice", spec.name)).within(&at));
            }
            compiled.push(compile(spec).map_err(|e| e.within(&at))?);
        }
        Ok(Reader { specs: Arc::new(compiled), limits: JqLimits::default() })
    }

    /// The selectors of the values read as text (not an attribute), which a caller may read in
    /// its own pass over the page and hand to [`Reader::read_with`].
    pub fn text_selectors(&self) -> impl Iterator<Item = &str> {
        self.specs.iter().filter_map(|c| match &c.source {
            Source::Css { source, attribute: None, .. } => Some(source.as_str()),
            _ => None,
        })
    }

    /// Whether a value reads schema.org structured data, whose scripts a caller's own pass over
    /// the page may collect for [`Reader::read_with`].
    pub fn reads_structured_data(&self) -> bool {
        self.specs.iter().any(|c| matches!(c.source, Source::Structured(_)))
    }

    /// Reads every value from a page body (HTML or JSON). Never panics on what a page holds.
    pub fn read(&self, body: &str) -> Readings {
        self.read_with(body, &|_| None, None)
    }

    /// [`Reader::read`], with what a caller's own pass over the page already read: the text of
    /// a selector's matches (in order, whitespace collapsed) given by `text_of` when it can (a
    /// streaming reader that builds no DOM, much cheaper than the DOM this falls back on when
    /// it answers `None`), and the page's structured data `scripts` when that pass collected
    /// them. Attributes always come from the DOM.
    pub fn read_with(
        &self,
        body: &str,
        text_of: &dyn Fn(&str) -> Option<Result<String, String>>,
        scripts: Option<Scripts>,
    ) -> Readings {
        let mut readings = Readings::default();
        let document = Document::new(body, scripts);
        let mut json: Option<Result<Value, String>> = None;
        let mut offer: Option<Option<structured::Offer>> = None;
        for compiled in self.specs.iter() {
            let spec = &compiled.spec;
            let raw = match &compiled.source {
                Source::Css { source, attribute: None, .. } if let Some(found) = text_of(source) => {
                    found.map(|text| Raw::Text(collapse(&text)))
                }
                Source::Css { selector, attribute, .. } => match document.dom() {
                    Ok(dom) => css(dom, selector, attribute.as_deref()),
                    Err(_) => Err("the page nests too deeply to read values with selectors safely".to_owned()),
                },
                Source::Json(query) => match json.get_or_insert_with(|| parse_json(body)) {
                    Ok(value) => query.first(value, &self.limits).and_then(|found| {
                        found.ok_or_else(|| "the query found nothing in the page's JSON".to_owned()).map(Raw::Json)
                    }),
                    Err(e) => Err(e.clone()),
                },
                Source::Structured(field) => {
                    let offer = offer.get_or_insert_with(|| document.first_offer());
                    from_offer(offer.as_ref(), *field)
                }
            };
            match raw.and_then(|raw| typed(spec, compiled.regex.as_ref(), raw)) {
                Ok(value) => {
                    readings.values.insert(spec.name.clone(), value);
                }
                Err(why) => readings.failures.push((spec.name.clone(), why)),
            }
        }
        readings
    }
}

/// What a source found, before the regex and the type.
enum Raw {
    Text(String),
    Json(Value),
    /// A money value that structured data states in two fields.
    Price {
        amount: String,
        currency: Option<String>,
    },
}

fn parse_json(body: &str) -> Result<Value, String> {
    serde_json::from_str(body.trim_start_matches('\u{feff}')).map_err(|e| format!("the page is not JSON ({e})"))
}

/// The text of every match (as the streaming reader gives it), or the first match's attribute.
fn css(document: &Html, selector: &Selector, attribute: Option<&str>) -> Result<Raw, String> {
    let mut matches = document.select(selector).peekable();
    let first = *matches.peek().ok_or_else(|| "the selector matched nothing".to_owned())?;
    match attribute {
        Some(name) => first
            .value()
            .attr(name)
            .map(|v| Raw::Text(v.to_owned()))
            .ok_or_else(|| format!("the element has no `{name}` attribute")),
        None => Ok(Raw::Text(collapse(&matches.flat_map(|m| m.text()).collect::<Vec<_>>().join(" ")))),
    }
}

fn from_offer(offer: Option<&structured::Offer>, field: StructuredField) -> Result<Raw, String> {
    let offer = offer.ok_or_else(|| "the page states no product (schema.org JSON-LD or microdata)".to_owned())?;
    let missing = |what: &str| format!("the page's product states no {what}");
    match field {
        StructuredField::Price => offer
            .price
            .clone()
            .map(|amount| Raw::Price { amount, currency: offer.currency.clone() })
            .ok_or_else(|| missing("price")),
        StructuredField::Availability => {
            offer.availability.clone().map(Raw::Text).ok_or_else(|| missing("availability"))
        }
        StructuredField::Name => offer.name.clone().map(Raw::Text).ok_or_else(|| missing("name")),
    }
}

/// Whitespace runs made one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A bounded prefix of `text` for messages.
fn quote(text: &str) -> String {
    let mut cut: String = text.chars().take(60).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    format!("\"{cut}\"")
}

/// The raw find, narrowed by the regex and read as the spec's type.
fn typed(spec: &ValueSpec, regex: Option<&Regex>, raw: Raw) -> Result<Typed, String> {
    let (text, currency) = match raw {
        // A JSON number is exact already; money takes the spec's currency.
        Raw::Json(Value::Number(n)) if regex.is_none() && matches!(spec.kind, ValueKind::Number | ValueKind::Money) => {
            let value = n.as_f64().ok_or_else(|| format!("{n} is not a usable number"))?;
            return Ok(match spec.kind {
                ValueKind::Money => Typed::Money { amount: value, currency: spec.currency.clone() },
                _ => Typed::Number { value },
            });
        }
        Raw::Json(Value::Bool(b)) if regex.is_none() && spec.kind == ValueKind::Boolean => {
            return Ok(Typed::Boolean { value: b });
        }
        Raw::Json(Value::String(s)) => (s, None),
        Raw::Json(Value::Null) => return Err("the query found null".to_owned()),
        Raw::Json(other) => (other.to_string(), None),
        Raw::Text(text) => (text, None),
        Raw::Price { amount, currency } => (amount, currency),
    };
    let text = match regex {
        Some(re) => {
            let found = re.captures(&text).ok_or_else(|| format!("the regex does not match {}", quote(&text)))?;
            found.get(1).or_else(|| found.get(0)).map(|m| m.as_str().to_owned()).unwrap_or_default()
        }
        None => text,
    };
    let error = |e: parse::ParseError| e.message;
    Ok(match spec.kind {
        ValueKind::Number => Typed::Number { value: parse::number(&text).map_err(error)? },
        ValueKind::Money => {
            let default = currency.as_deref().or(spec.currency.as_deref());
            let money = parse::money(&text, default).map_err(error)?;
            Typed::Money { amount: money.amount, currency: money.currency.or_else(|| default.map(str::to_owned)) }
        }
        ValueKind::Availability => Typed::Availability {
            value: parse::availability(&text, &spec.in_stock_words, &spec.out_of_stock_words).map_err(error)?,
        },
        ValueKind::Boolean => Typed::Boolean { value: parse::boolean(&text).map_err(error)? },
        ValueKind::Text => {
            let value = collapse(&text);
            if value.is_empty() {
                return Err("the text is empty".to_owned());
            }
            Typed::Text { value: value.chars().take(1000).collect() }
        }
    })
}

/// Checks one spec and compiles its source and regex; fields are named within the spec.
fn compile(spec: &ValueSpec) -> Result<Compiled, FieldError> {
    let name = spec.name.as_str();
    let valid_name = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid_name {
        return Err(FieldError::new("name", "1 to 32 of a-z, 0-9 and _, starting with a letter"));
    }
    if BUILT_IN_SUBJECTS.contains(&name) {
        return Err(FieldError::new("name", format!("`{name}` is taken by the conditions: choose another name")));
    }
    let sources = [
        ("selector", spec.selector.is_some()),
        ("json_pointer", spec.json_pointer.is_some()),
        ("jsonpath", spec.jsonpath.is_some()),
        ("jq", spec.jq.is_some()),
        ("structured", spec.structured.is_some()),
    ];
    let given: Vec<&str> = sources.iter().filter(|(_, set)| *set).map(|(n, _)| *n).collect();
    let source = match given.as_slice() {
        [] => {
            return Err(FieldError::new(
                "selector",
                "say where the value is: selector, json_pointer, jsonpath, jq or structured",
            ));
        }
        [_] => source(spec)?,
        [_, second, ..] => {
            return Err(FieldError::new(*second, format!("one source per value; this one already has {}", given[0])));
        }
    };
    if spec.attribute.is_some() && spec.selector.is_none() {
        return Err(FieldError::new("attribute", "an attribute is read from the element a selector finds"));
    }
    let regex = match &spec.regex {
        Some(pattern) => Some(
            driftwatch_core::compiled_regex(pattern)
                .map_err(|e| FieldError::new("regex", format!("not a regex: {e}")))?,
        ),
        None => None,
    };
    if let Some(currency) = &spec.currency {
        if spec.kind != ValueKind::Money {
            return Err(FieldError::new("currency", "only a money value has a currency"));
        }
        if !crate::parse::is_iso_4217(currency) {
            return Err(FieldError::new(
                "currency",
                format!("`{currency}` is not an ISO 4217 currency code: use one such as EUR, USD or CHF"),
            ));
        }
    }
    if spec.kind != ValueKind::Availability && !(spec.in_stock_words.is_empty() && spec.out_of_stock_words.is_empty()) {
        return Err(FieldError::new("in_stock_words", "words are for availability values"));
    }
    if let Some(field) = spec.structured {
        let fits = match field {
            StructuredField::Price => matches!(spec.kind, ValueKind::Money | ValueKind::Number),
            StructuredField::Availability => spec.kind == ValueKind::Availability,
            StructuredField::Name => spec.kind == ValueKind::Text,
        };
        if !fits {
            let wants = match field {
                StructuredField::Price => "money or number",
                StructuredField::Availability => "availability",
                StructuredField::Name => "text",
            };
            return Err(FieldError::new("type", format!("structured {field:?} is read as {wants}").to_lowercase()));
        }
    }
    Ok(Compiled { spec: spec.clone(), source, regex })
}

fn source(spec: &ValueSpec) -> Result<Source, FieldError> {
    let query = |field: &str, made: Result<JsonQuery, crate::json::QueryError>| {
        made.map(Source::Json).map_err(|e| {
            let at = e.column.map(|c| format!(" (column {c})")).unwrap_or_default();
            FieldError::new(field, format!("{}{at}", e.message))
        })
    };
    if let Some(selector) = &spec.selector {
        let selector =
            Selector::parse(selector).map_err(|e| FieldError::new("selector", format!("not a CSS selector: {e}")))?;
        let attribute = spec.attribute.clone();
        if let Some(a) = &attribute
            && (a.is_empty() || a.contains(|c: char| c.is_whitespace() || "\"'>/=".contains(c)))
        {
            return Err(FieldError::new("attribute", "not an attribute name"));
        }
        return Ok(Source::Css { selector, source: spec.selector.clone().unwrap_or_default(), attribute });
    }
    if let Some(pointer) = &spec.json_pointer {
        return query("json_pointer", JsonQuery::pointer(pointer));
    }
    if let Some(path) = &spec.jsonpath {
        return query("jsonpath", JsonQuery::jsonpath(path));
    }
    if let Some(program) = &spec.jq {
        return query("jq", JsonQuery::jq(program));
    }
    match spec.structured {
        Some(field) => Ok(Source::Structured(field)),
        None => Err(FieldError::new("selector", "no source")),
    }
}

#[cfg(test)]
mod tests;
