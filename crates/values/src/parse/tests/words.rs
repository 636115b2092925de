//! Numbers and availability: their tables and refusals.

use super::*;

/// (text, value)
const NUMBERS: &[(&str, f64)] = &[
    ("12,5 %", 12.5),
    ("12.5%", 12.5),
    ("1,299", 1299.0),
    ("1.299", 1299.0),
    ("12.5", 12.5),
    ("-3", -3.0),
    ("−3,5", -3.5),
    ("0.125", 0.125),
    ("1234.567", 1234.567),
    ("1 234 567", 1_234_567.0),
    ("1\u{202F}234,5", 1234.5),
    ("4.5 out of 5 stars", 4.5),
    ("1,234 reviews", 1234.0),
    ("1.234 Bewertungen", 1234.0),
    ("SKU-12", 12.0),
    ("10-20", 10.0),
    ("12 kg", 12.0),
    ("12m", 12.0),
    ("1,23,456", 123_456.0),
    ("١٢٣", 123.0),
    ("٣٫٥", 3.5),
    ("000012", 12.0),
    ("0", 0.0),
    ("-0", 0.0),
    ("Rating: 4,7/5", 4.7),
    ("1'000'000", 1_000_000.0),
    ("999999999999999999", 999_999_999_999_999_999.0),
    ("0.000000000000000000000000001", 1e-27),
    ("1..2", 1.0),
];

#[test]
fn number_table() {
    for &(text, value) in NUMBERS {
        let got = number(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(close(got, value), "{text:?}: expected {value}, got {got}");
    }
}

#[test]
fn number_refusals() {
    let refused = [
        ("1.5k", "cannot read \"1.5k\": abbreviations such as k or M are not read; give the whole number"),
        ("abc", "no number in \"abc\""),
        ("", "no number in \"\""),
        ("%", "no number in \"%\""),
        (
            "1000000000000000000000",
            "too many digits in \"1000000000000000000000\": at most 18 significant digits are read",
        ),
        (
            "12.03.2024",
            "cannot read \"12.03.2024\" as a number: the digit groups between its separators are not thousands \
             (groups of three)",
        ),
    ];
    for (text, message) in refused {
        assert_eq!(number(text).map_err(|e| e.message), Err(message.to_owned()), "{text:?}");
    }
}

/// (text, availability), with no configured words.
const AVAILABILITY: &[(&str, Availability)] = &[
    ("https://schema.org/InStock", Availability::InStock),
    ("http://schema.org/OutOfStock", Availability::OutOfStock),
    ("InStock", Availability::InStock),
    ("schema:PreOrder", Availability::PreOrder),
    ("https://schema.org/SoldOut", Availability::OutOfStock),
    ("http://schema.org/LimitedAvailability", Availability::Limited),
    ("https://schema.org/PreSale", Availability::PreOrder),
    ("https://schema.org/BackOrder", Availability::BackOrder),
    ("https://schema.org/Discontinued", Availability::Discontinued),
    ("https://schema.org/InStoreOnly", Availability::InStock),
    ("OnlineOnly", Availability::InStock),
    ("https://schema.org/MadeToOrder", Availability::BackOrder),
    ("out_of_stock", Availability::OutOfStock),
    ("back_order", Availability::BackOrder),
    // English
    ("In stock", Availability::InStock),
    ("  IN   STOCK  ", Availability::InStock),
    ("Available", Availability::InStock),
    ("Add to cart", Availability::InStock),
    ("Out of stock", Availability::OutOfStock),
    ("Sold out", Availability::OutOfStock),
    ("Currently unavailable.", Availability::OutOfStock),
    ("Not in stock", Availability::OutOfStock),
    ("Not available", Availability::OutOfStock),
    ("Not currently available", Availability::OutOfStock),
    ("Only 3 left in stock - order soon.", Availability::Limited),
    ("Only 0 left", Availability::OutOfStock),
    ("Low stock", Availability::Limited),
    ("Pre-order now", Availability::PreOrder),
    ("Pre‑order", Availability::PreOrder),
    ("Available for pre-order", Availability::PreOrder),
    ("On backorder", Availability::BackOrder),
    ("Discontinued", Availability::Discontinued),
    ("This item is no longer available", Availability::Discontinued),
    ("No worries: in stock", Availability::InStock),
    // German
    ("Auf Lager", Availability::InStock),
    ("Sofort lieferbar", Availability::InStock),
    ("Ausverkauft", Availability::OutOfStock),
    ("Nicht verfügbar", Availability::OutOfStock),
    ("Derzeit nicht lieferbar", Availability::OutOfStock),
    ("Vorbestellen", Availability::PreOrder),
    ("Nur noch 2 Stück auf Lager", Availability::Limited),
    ("Fast ausverkauft", Availability::Limited),
    // French
    ("En stock", Availability::InStock),
    ("Épuisé", Availability::OutOfStock),
    ("Rupture de stock", Availability::OutOfStock),
    ("Disponible", Availability::InStock),
    ("Indisponible", Availability::OutOfStock),
    ("Plus que 2 en stock", Availability::Limited),
    ("Précommande", Availability::PreOrder),
    // Spanish
    ("Agotado", Availability::OutOfStock),
    ("Disponible en tienda", Availability::InStock),
    ("No disponible", Availability::OutOfStock),
    // Italian
    ("Esaurito", Availability::OutOfStock),
    ("Disponibile", Availability::InStock),
    ("Non disponibile", Availability::OutOfStock),
    // Dutch
    ("Op voorraad", Availability::InStock),
    ("Uitverkocht", Availability::OutOfStock),
    ("Niet op voorraad", Availability::OutOfStock),
    ("Bijna uitverkocht", Availability::Limited),
];

#[test]
fn availability_table() {
    assert!(AVAILABILITY.len() >= 30);
    let mut wrong = Vec::new();
    for &(text, expected) in AVAILABILITY {
        let got = availability(text, &[], &[]);
        if got != Ok(expected) {
            wrong.push(format!("{text:?}: expected {expected:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn configured_words_come_first() {
    let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let (in_words, out_words) = (words(&["Ships in 2 days", "lieferbar"]), words(&["Coming soon", ""]));
    let read = |text: &str| availability(text, &in_words, &out_words);
    assert_eq!(read("SHIPS IN 2 DAYS"), Ok(Availability::InStock));
    assert_eq!(read("Coming soon"), Ok(Availability::OutOfStock));
    // Out words before in words, and before the built-ins.
    assert_eq!(read("Coming soon, ships in 2 days"), Ok(Availability::OutOfStock));
    assert_eq!(read("Sold out! Ships in 2 days"), Ok(Availability::InStock));
    // A negated in word is out of stock.
    assert_eq!(read("Nicht lieferbar"), Ok(Availability::OutOfStock));
    // The empty word matches nothing; the built-ins still apply.
    assert_eq!(read("Auf Lager"), Ok(Availability::InStock));
    assert_eq!(read("Ausverkauft"), Ok(Availability::OutOfStock));
    // A negated occurrence does not hide a plain one.
    assert_eq!(read("nicht lieferbar in Berlin, lieferbar in Hamburg"), Ok(Availability::InStock));
    // Words match whole.
    assert_eq!(availability("Lieferbarkeit unbekannt", &in_words, &[]).map_err(|_| ()), Err(()));
}

#[test]
fn availability_refusals() {
    let message = availability("Call us", &[], &[]).expect_err("unknown").message;
    assert_eq!(
        message,
        "cannot tell the availability from \"Call us\"; add a word of it to in_stock_words or out_of_stock_words"
    );
    assert!(availability("", &[], &[]).is_err());
    assert!(availability("https://schema.org/Maybe", &[], &[]).is_err());
    // `available` is not a word of `unavailability`.
    assert!(availability("availability", &[], &[]).is_err());
}

#[test]
fn availability_names() {
    let all = [
        Availability::InStock,
        Availability::Limited,
        Availability::PreOrder,
        Availability::BackOrder,
        Availability::OutOfStock,
        Availability::Discontinued,
    ];
    for a in all {
        let json = serde_json::to_value(a).expect("serialises");
        assert_eq!(json, serde_json::Value::String(a.as_str().to_owned()));
        assert_eq!(Availability::from_name(a.as_str()), Some(a));
        assert_eq!(availability(a.as_str(), &[], &[]), Ok(a));
        assert_eq!(a.is_available(), matches!(a, Availability::InStock | Availability::Limited));
    }
    assert_eq!(Availability::from_name("InStock"), None);
    assert_eq!(Availability::from_name(""), None);
}
