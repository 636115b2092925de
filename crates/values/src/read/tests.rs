//! The reader's tests: each source, the streaming answers, the checks of specs.

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
    let stock = ValueSpec { structured: Some(StructuredField::Availability), ..spec("stock", ValueKind::Availability) };
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
        ValueSpec { selector: Some("#p".into()), attribute: Some("content".into()), ..spec("p", ValueKind::Number) },
    ];
    let page = r#"<p class="price">12 €</p><span id="p" content="7">seven</span>"#;
    let asked = std::cell::RefCell::new(Vec::new());
    let text_of = |selector: &str| {
        asked.borrow_mut().push(selector.to_owned());
        Some(Ok("  $ 3.50\n".to_owned()))
    };
    let read = Reader::new(&specs).expect("valid").read_with(page, &text_of, None);
    assert_eq!(read.values["price"], money(3.5, "USD"), "the streaming answer is used");
    assert_eq!(read.values["p"], Typed::Number { value: 7.0 }, "attributes come from the DOM");
    assert_eq!(*asked.borrow(), [".price"]);
    let missing =
        Reader::new(&specs[..1]).expect("valid").read_with(page, &|_| Some(Err("matched nothing".into())), None);
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
    assert_eq!(bad(ValueSpec { selector: Some("#p".into()), ..spec("text", ValueKind::Text) }).field, "values[0].name");
    let e = bad(ValueSpec { structured: Some(StructuredField::Availability), ..spec("s", ValueKind::Money) });
    assert_eq!(e.field, "values[0].type");
    let e =
        bad(ValueSpec { selector: Some("#p".into()), currency: Some("euro".into()), ..spec("p", ValueKind::Money) });
    assert_eq!(e.field, "values[0].currency");
    // Three capitals are not enough: the code must exist.
    let money_in = |code: &str| ValueSpec {
        selector: Some("#p".into()),
        currency: Some(code.into()),
        ..spec("p", ValueKind::Money)
    };
    let e = bad(money_in("ZZZ"));
    assert_eq!(e.field, "values[0].currency");
    assert!(e.message.contains("`ZZZ` is not an ISO 4217"), "{e}");
    for code in ["EUR", "CHF", "JPY", "GEL", "TOP"] {
        Reader::new(&[money_in(code)]).unwrap_or_else(|e| panic!("{code}: {e}"));
    }
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
