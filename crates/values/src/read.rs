//! Reading a watch's values from a page: each spec's source, its regex, then its type.
//!
//! [`Reader::new`] checks and compiles the specs (at save, and once per check); [`Reader::read`]
//! reads them from a page body. The page is parsed at most once as HTML (for selectors and
//! structured data) and once as JSON (for pointers, JSONPath and jq), and only when a spec
//! needs it.

use std::sync::Arc;

use driftwatch_core::values::{StructuredField, ValueKind, ValueSpec};
use regex::Regex;
use scraper::{Html, Selector};
use serde_json::Value;

use crate::FieldError;
use crate::conditions::BUILT_IN_SUBJECTS;
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

    /// Reads every value from a page body (HTML or JSON). Never panics on what a page holds.
    pub fn read(&self, body: &str) -> Readings {
        self.read_with(body, &|_| None)
    }

    /// [`Reader::read`], with the text of a selector's matches (in order, whitespace collapsed)
    /// given by `text_of` when it can (a streaming reader that builds no DOM, much cheaper than
    /// the DOM this falls back on when it answers `None`). Attributes always come from the DOM.
    pub fn read_with(&self, body: &str, text_of: &dyn Fn(&str) -> Option<Result<String, String>>) -> Readings {
        let mut readings = Readings::default();
        let mut html: Option<Html> = None;
        let mut json: Option<Result<Value, String>> = None;
        let mut offer: Option<Option<structured::Offer>> = None;
        for compiled in self.specs.iter() {
            let spec = &compiled.spec;
            let raw = match &compiled.source {
                Source::Css { source, attribute: None, .. } if let Some(found) = text_of(source) => {
                    found.map(|text| Raw::Text(collapse(&text)))
                }
                Source::Css { selector, attribute, .. } => {
                    if html.is_none() && !structured::dom_is_cheap(body) {
                        Err("the page nests too deeply to read values with selectors safely".to_owned())
                    } else {
                        let document = html.get_or_insert_with(|| Html::parse_document(body));
                        css(document, selector, attribute.as_deref())
                    }
                }
                Source::Json(query) => match json.get_or_insert_with(|| parse_json(body)) {
                    Ok(value) => query.first(value, &self.limits).and_then(|found| {
                        found.ok_or_else(|| "the query found nothing in the page's JSON".to_owned()).map(Raw::Json)
                    }),
                    Err(e) => Err(e.clone()),
                },
                Source::Structured(field) => {
                    let offer = offer.get_or_insert_with(|| structured::first_offer(body));
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
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(FieldError::new("currency", "an ISO 4217 code such as EUR, USD or CHF"));
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
mod tests {
    use driftwatch_core::values::{StructuredField, ValueKind, ValueSpec};

    use super::*;
    use crate::parse::Availability;

    fn spec(name: &str, kind: ValueKind) -> ValueSpec {
        ValueSpec { name: name.into(), kind, ..ValueSpec::default() }
    }

    fn money(amount: f64, currency: &str) -> Typed {
        Typed::Money { amount, currency: Some(currency.into()) }
    }

    const JSONLD: &str = r#"<html><head><script type="application/ld+json">
        {"@context": "https://schema.org", "@type": "Product", "name": "Kettle",
         "offers": {"@type": "Offer", "price": 1299, "priceCurrency": "SEK", "availability": "https://schema.org/InStock"}}
        </script></head><body><p>Kettle</p></body></html>"#;

    const MICRODATA: &str = r#"<div itemscope itemtype="https://schema.org/Product">
        <h1 itemprop="name">Kettle</h1>
        <div itemprop="offers" itemscope itemtype="https://schema.org/Offer">
          <span itemprop="price" content="1299.00">1.299,00 €</span><meta itemprop="priceCurrency" content="EUR">
          <link itemprop="availability" href="https://schema.org/OutOfStock">Sold out</div></div>"#;

    const TEXT_ONLY: &str = r#"<div class="buy"><p class="price">Now only CHF 1'299.– incl. VAT</p>
        <p class="stock">Nur noch 3 auf Lager</p><p class="count">Sold: 1.234 units</p></div>"#;

    const API: &str = r#"{"items": [{"sku": "A1", "price": 19.5, "stock": 0, "name": "Cup"},
        {"sku": "B2", "price": "12,50 €", "stock": 4, "name": "Mug"}], "open": true}"#;

    #[test]
    fn structured_data_from_json_ld_and_from_microdata() {
        let price = ValueSpec { structured: Some(StructuredField::Price), ..spec("price", ValueKind::Money) };
        let stock =
            ValueSpec { structured: Some(StructuredField::Availability), ..spec("stock", ValueKind::Availability) };
        let name = ValueSpec { structured: Some(StructuredField::Name), ..spec("name", ValueKind::Text) };
        let reader = Reader::new(&[price, stock, name]).expect("valid");
        let read = reader.read(JSONLD);
        assert!(read.failures.is_empty(), "{:?}", read.failures);
        assert_eq!(read.values["price"], money(1299.0, "SEK"));
        assert_eq!(read.values["stock"], Typed::Availability { value: Availability::InStock });
        assert_eq!(read.values["name"], Typed::Text { value: "Kettle".into() });
        let read = reader.read(MICRODATA);
        assert_eq!(read.values["price"], money(1299.0, "EUR"), "the content attribute, not the shown text");
        assert_eq!(read.values["stock"], Typed::Availability { value: Availability::OutOfStock });
        let none = reader.read(TEXT_ONLY);
        assert!(none.values.is_empty());
        assert_eq!(none.failures.len(), 3);
        assert!(none.note().is_some_and(|n| n.starts_with("price: the page states no product")), "{:?}", none.note());
    }

    #[test]
    fn text_with_selectors_and_regexes() {
        let specs = [
            ValueSpec { selector: Some(".price".into()), ..spec("price", ValueKind::Money) },
            ValueSpec { selector: Some(".stock".into()), ..spec("stock", ValueKind::Availability) },
            ValueSpec {
                selector: Some(".count".into()),
                regex: Some(r"Sold: ([\d.]+)".into()),
                ..spec("sold", ValueKind::Number)
            },
            ValueSpec { selector: Some(".missing".into()), ..spec("gone", ValueKind::Text) },
        ];
        let read = Reader::new(&specs).expect("valid").read(TEXT_ONLY);
        assert_eq!(read.values["price"], money(1299.0, "CHF"));
        assert_eq!(read.values["stock"], Typed::Availability { value: Availability::Limited });
        assert_eq!(read.values["sold"], Typed::Number { value: 1234.0 });
        assert_eq!(read.failures, [("gone".to_owned(), "the selector matched nothing".to_owned())]);
    }

    #[test]
    fn a_streaming_reader_answers_for_selector_text_and_the_dom_for_attributes() {
        let specs = [
            ValueSpec { selector: Some(".price".into()), ..spec("price", ValueKind::Money) },
            ValueSpec {
                selector: Some("#p".into()),
                attribute: Some("content".into()),
                ..spec("p", ValueKind::Number)
            },
        ];
        let page = r#"<p class="price">12 €</p><span id="p" content="7">seven</span>"#;
        let asked = std::cell::RefCell::new(Vec::new());
        let text_of = |selector: &str| {
            asked.borrow_mut().push(selector.to_owned());
            Some(Ok("  $ 3.50\n".to_owned()))
        };
        let read = Reader::new(&specs).expect("valid").read_with(page, &text_of);
        assert_eq!(read.values["price"], money(3.5, "USD"), "the streaming answer is used");
        assert_eq!(read.values["p"], Typed::Number { value: 7.0 }, "attributes come from the DOM");
        assert_eq!(*asked.borrow(), [".price"]);
        let missing =
            Reader::new(&specs[..1]).expect("valid").read_with(page, &|_| Some(Err("matched nothing".into())));
        assert_eq!(missing.failures, [("price".to_owned(), "matched nothing".to_owned())]);
    }

    #[test]
    fn json_pages_through_pointer_jsonpath_and_jq() {
        let specs = [
            ValueSpec {
                json_pointer: Some("/items/0/price".into()),
                currency: Some("EUR".into()),
                ..spec("first", ValueKind::Money)
            },
            ValueSpec { jsonpath: Some("$.items[?@.sku=='B2'].price".into()), ..spec("mug", ValueKind::Money) },
            ValueSpec {
                jq: Some("[.items[] | select(.stock > 0) | .name] | first".into()),
                ..spec("available", ValueKind::Text)
            },
            ValueSpec { jq: Some(".items | map(.stock) | add".into()), ..spec("stock", ValueKind::Number) },
            ValueSpec { json_pointer: Some("/open".into()), ..spec("open", ValueKind::Boolean) },
        ];
        let read = Reader::new(&specs).expect("valid").read(API);
        assert!(read.failures.is_empty(), "{:?}", read.failures);
        assert_eq!(read.values["first"], money(19.5, "EUR"));
        assert_eq!(read.values["mug"], money(12.5, "EUR"));
        assert_eq!(read.values["available"], Typed::Text { value: "Mug".into() });
        assert_eq!(read.values["stock"], Typed::Number { value: 4.0 });
        assert_eq!(read.values["open"], Typed::Boolean { value: true });
        let html = Reader::new(&specs[..1]).expect("valid").read(TEXT_ONLY);
        assert!(html.failures[0].1.starts_with("the page is not JSON"), "{:?}", html.failures);
    }

    #[test]
    fn specs_are_checked_naming_the_field() {
        let bad = |spec: ValueSpec| Reader::new(&[spec]).expect_err("refused");
        let e = bad(ValueSpec { jsonpath: Some("$.items[?".into()), ..spec("p", ValueKind::Money) });
        assert_eq!(e.field, "values[0].jsonpath");
        let e = bad(ValueSpec { jq: Some(".items | nosuchfn".into()), ..spec("p", ValueKind::Money) });
        assert_eq!(e.field, "values[0].jq");
        let e = bad(ValueSpec { selector: Some("#p".into()), regex: Some("(".into()), ..spec("p", ValueKind::Money) });
        assert_eq!(e.field, "values[0].regex");
        let e = bad(ValueSpec { selector: Some("#p".into()), jq: Some(".".into()), ..spec("p", ValueKind::Money) });
        assert_eq!(e.field, "values[0].jq", "{e}");
        assert_eq!(bad(spec("p", ValueKind::Money)).field, "values[0].selector");
        assert_eq!(
            bad(ValueSpec { selector: Some("#p".into()), ..spec("Price!", ValueKind::Money) }).field,
            "values[0].name"
        );
        assert_eq!(
            bad(ValueSpec { selector: Some("#p".into()), ..spec("text", ValueKind::Text) }).field,
            "values[0].name"
        );
        let e = bad(ValueSpec { structured: Some(StructuredField::Availability), ..spec("s", ValueKind::Money) });
        assert_eq!(e.field, "values[0].type");
        let e = bad(ValueSpec {
            selector: Some("#p".into()),
            currency: Some("euro".into()),
            ..spec("p", ValueKind::Money)
        });
        assert_eq!(e.field, "values[0].currency");
        let twice = ValueSpec { selector: Some("#p".into()), ..spec("p", ValueKind::Money) };
        assert_eq!(Reader::new(&[twice.clone(), twice]).expect_err("twice").field, "values[1].name");
    }

    #[test]
    fn a_runaway_jq_program_is_a_failure_of_its_value_only() {
        let specs = [
            ValueSpec { jq: Some("def f: f; f".into()), ..spec("loop", ValueKind::Number) },
            ValueSpec { json_pointer: Some("/items/1/stock".into()), ..spec("stock", ValueKind::Number) },
        ];
        let read = Reader::new(&specs).expect("valid").read(API);
        assert_eq!(read.values["stock"], Typed::Number { value: 4.0 });
        assert_eq!(read.failures.len(), 1);
        assert_eq!(read.failures[0].0, "loop");
    }
}
