//! Tables of real-world texts for every reader, the refusals with their messages, and odd inputs
//! that must not panic.

use super::*;

mod money;
mod words;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn booleans() {
    for text in ["true", "Yes", " 1 ", "on", "JA", "oui", "si", "Sí", "yes!"] {
        assert_eq!(boolean(text), Ok(true), "{text:?}");
    }
    for text in ["false", "No", "0", "OFF", "nein", "non", "no."] {
        assert_eq!(boolean(text), Ok(false), "{text:?}");
    }
    for text in ["", "maybe", "2", "yes no", "truee"] {
        assert!(boolean(text).is_err(), "{text:?}");
    }
    assert_eq!(
        boolean("maybe").map_err(|e| e.message),
        Err("\"maybe\" is neither yes nor no (such as true/yes/1/on or false/no/0/off)".to_owned())
    );
}

#[test]
fn money_serialises() {
    let price = Money { amount: 12.5, currency: Some("EUR".into()) };
    let json = serde_json::to_string(&price).expect("serialises");
    assert_eq!(json, r#"{"amount":12.5,"currency":"EUR"}"#);
    assert_eq!(serde_json::from_str::<Money>(&json).expect("deserialises"), price);
}

/// Every reader on odd inputs: no panic, and any number read is finite.
fn check_all(text: &str) {
    if let Ok(m) = money(text, Some("SEK")) {
        assert!(m.amount.is_finite(), "{text:?}");
    }
    if let Ok(m) = money(text, None) {
        assert!(m.amount.is_finite(), "{text:?}");
    }
    if let Ok(n) = number(text) {
        assert!(n.is_finite(), "{text:?}");
    }
    let _ = availability(text, &["x".to_owned(), String::new()], &[" ".to_owned()]);
    let _ = boolean(text);
}

#[test]
fn odd_inputs_do_not_panic() {
    let fixed = [
        String::new(),
        "-".into(),
        ".".into(),
        "-.-".into(),
        "1.-".into(),
        ",-".into(),
        "1e309".into(),
        "NaN".into(),
        "inf".into(),
        "\u{0}".into(),
        "١٬٢٣٤٫٥".into(),
        "￥".into(),
        "ÿ̶̢̛͉ͅ1̴".into(),
        "9".repeat(100_000),
        "1,".repeat(50_000),
        "1 000 ".repeat(20_000),
        "€".repeat(10_000),
        "$1 ".repeat(20_000),
        "- ".repeat(20_000),
        "Only 99999999999999999999999999 left".into(),
        format!("{}1", "0".repeat(50_000)),
        format!("0.{}1", "0".repeat(50_000)),
    ];
    for text in &fixed {
        check_all(text);
    }
    // A fixed pseudo-random walk over characters that matter to the readers.
    let alphabet: Vec<char> =
        "0123456789.,'’ -–—−$€£¥￥₹kKMr zł Kč CHF Fr. US$ R$ EUR USD\u{a0}\u{202f}%()özA".chars().collect();
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    for _ in 0..3000 {
        let mut text = String::new();
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let len = state % 24;
        for _ in 0..len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let index = usize::try_from(state % alphabet.len() as u64).expect("small");
            text.push(alphabet[index]);
        }
        check_all(&text);
    }
}
