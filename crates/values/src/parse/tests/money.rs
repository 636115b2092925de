//! Money: the table of real-world prices, the ambiguous separators, the refusals.

use super::*;

const NBSP: char = '\u{00A0}';
const NNBSP: char = '\u{202F}';

/// (text, default currency, amount, currency)
const MONEY: &[(&str, Option<&str>, f64, Option<&str>)] = &[
    // United States
    ("$1,299.00", None, 1299.0, Some("USD")),
    ("$12.99", None, 12.99, Some("USD")),
    ("US$ 1,299", None, 1299.0, Some("USD")),
    ("Price: $12.99 (incl. VAT)", None, 12.99, Some("USD")),
    ("12.99 USD", None, 12.99, Some("USD")),
    ("USD 1,299.99", None, 1299.99, Some("USD")),
    ("$0.99", None, 0.99, Some("USD")),
    ("-$5.00", None, -5.0, Some("USD")),
    ("$1,299,999.95", None, 1_299_999.95, Some("USD")),
    // Two amounts: the first one with a currency.
    ("Was $20, now $15", None, 20.0, Some("USD")),
    ("Now $15 (was $20)", None, 15.0, Some("USD")),
    ("Model X200 - $1,299", None, 1299.0, Some("USD")),
    ("2 for $5", None, 5.0, Some("USD")),
    // A bare `$` is the default currency when that writes `$`, else USD.
    ("$12", Some("EUR"), 12.0, Some("USD")),
    // United Kingdom
    ("£12.99", None, 12.99, Some("GBP")),
    ("£1,299", None, 1299.0, Some("GBP")),
    ("Now £9.99 inc. VAT", None, 9.99, Some("GBP")),
    ("12.99 GBP", None, 12.99, Some("GBP")),
    // Germany
    ("1.299,00 €", None, 1299.0, Some("EUR")),
    ("€1.299,00", None, 1299.0, Some("EUR")),
    ("12,99 €", None, 12.99, Some("EUR")),
    ("12,-", Some("EUR"), 12.0, Some("EUR")),
    ("12,-", None, 12.0, None),
    ("1.299,- €", None, 1299.0, Some("EUR")),
    ("Preis: 49,95 EUR inkl. MwSt.", None, 49.95, Some("EUR")),
    ("-12.50 €", None, -12.5, Some("EUR")),
    ("12,99 € statt 19,99 €", None, 12.99, Some("EUR")),
    ("12,99 Euro", None, 12.99, Some("EUR")),
    // France
    ("1 299,00 €", None, 1299.0, Some("EUR")),
    ("1\u{00A0}299,99\u{00A0}€", None, 1299.99, Some("EUR")),
    ("1\u{202F}299,99 €", None, 1299.99, Some("EUR")),
    ("Prix : 1 234 567,89 €", None, 1_234_567.89, Some("EUR")),
    ("12,50 €", None, 12.5, Some("EUR")),
    // Switzerland
    ("CHF 1'299.–", None, 1299.0, Some("CHF")),
    ("CHF 1’299.50", None, 1299.5, Some("CHF")),
    ("Fr. 12.50", None, 12.5, Some("CHF")),
    ("12.50 Fr.", None, 12.5, Some("CHF")),
    ("SFr. 1'234.-", None, 1234.0, Some("CHF")),
    ("CHF 12.–", None, 12.0, Some("CHF")),
    // Italy
    ("€ 1.299,99", None, 1299.99, Some("EUR")),
    ("Prezzo: 24,90 €", None, 24.9, Some("EUR")),
    // Spain
    ("1.234,56 €", None, 1234.56, Some("EUR")),
    ("Precio: 1.299 €", None, 1299.0, Some("EUR")),
    // Netherlands
    ("€ 1.299,-", None, 1299.0, Some("EUR")),
    ("€ 12,95", None, 12.95, Some("EUR")),
    // Sweden, Norway, Denmark: `kr` is the default krona/krone, else SEK.
    ("1 299 kr", None, 1299.0, Some("SEK")),
    ("1\u{00A0}299\u{00A0}kr", None, 1299.0, Some("SEK")),
    ("kr 1 299,00", None, 1299.0, Some("SEK")),
    ("1 299,00 kr", Some("NOK"), 1299.0, Some("NOK")),
    ("kr. 499,95", Some("DKK"), 499.95, Some("DKK")),
    ("1.299 kr", Some("EUR"), 1299.0, Some("SEK")),
    ("NOK 1 299,00", None, 1299.0, Some("NOK")),
    ("DKK 1.299,00", None, 1299.0, Some("DKK")),
    ("1 299 kronor", None, 1299.0, Some("SEK")),
    ("1.299 kroner", Some("DKK"), 1299.0, Some("DKK")),
    // Poland
    ("1 299,99 zł", None, 1299.99, Some("PLN")),
    ("12,50 zł", None, 12.5, Some("PLN")),
    ("PLN 1 299,00", None, 1299.0, Some("PLN")),
    // Czechia
    ("1 299 Kč", None, 1299.0, Some("CZK")),
    ("12,50 Kč", None, 12.5, Some("CZK")),
    // Brazil
    ("R$ 1.234,56", None, 1234.56, Some("BRL")),
    ("R$ 12,90", None, 12.9, Some("BRL")),
    ("R$1.299", None, 1299.0, Some("BRL")),
    // India: Indian grouping.
    ("₹1,23,456.00", None, 123_456.0, Some("INR")),
    ("₹ 12,34,56,789", None, 123_456_789.0, Some("INR")),
    ("Rs. 1,299", None, 1299.0, Some("INR")),
    ("₹499", None, 499.0, Some("INR")),
    // Japan
    ("¥1299", None, 1299.0, Some("JPY")),
    ("￥1,299", None, 1299.0, Some("JPY")),
    ("1,299円", None, 1299.0, Some("JPY")),
    ("¥1,299（税込）", None, 1299.0, Some("JPY")),
    ("￥１，２９９", None, 1299.0, Some("JPY")),
    // China: `¥` is the yen unless the default is CNY.
    ("CN¥ 1,299.00", None, 1299.0, Some("CNY")),
    ("RMB 1,299", None, 1299.0, Some("CNY")),
    ("1299元", None, 1299.0, Some("CNY")),
    ("价格：1299元起", None, 1299.0, Some("CNY")),
    ("¥1299", Some("CNY"), 1299.0, Some("CNY")),
    // Korea
    ("₩1,299,000", None, 1_299_000.0, Some("KRW")),
    ("1,299,000원", None, 1_299_000.0, Some("KRW")),
    // Russia
    ("1 299 ₽", None, 1299.0, Some("RUB")),
    ("1 299,50 руб.", None, 1299.5, Some("RUB")),
    ("RUB 1 299", None, 1299.0, Some("RUB")),
    // Turkey
    ("₺1.299,90", None, 1299.9, Some("TRY")),
    ("1.299,90 TL", None, 1299.9, Some("TRY")),
    // Mexico
    ("MX$1,299.00", None, 1299.0, Some("MXN")),
    ("$1,299.00 MXN", None, 1299.0, Some("MXN")),
    ("$1,299", Some("MXN"), 1299.0, Some("MXN")),
    // Canada
    ("CA$1,299.99", None, 1299.99, Some("CAD")),
    ("C$ 12.99", None, 12.99, Some("CAD")),
    ("$1,299", Some("CAD"), 1299.0, Some("CAD")),
    ("12,99 $", Some("CAD"), 12.99, Some("CAD")),
    // Australia, New Zealand, Asia
    ("A$1,299.95", None, 1299.95, Some("AUD")),
    ("AU$ 49.95", None, 49.95, Some("AUD")),
    ("$49.95 AUD", None, 49.95, Some("AUD")),
    ("NZ$ 99", None, 99.0, Some("NZD")),
    ("HK$ 1,299", None, 1299.0, Some("HKD")),
    ("S$ 12.90", None, 12.9, Some("SGD")),
    ("NT$1,299", None, 1299.0, Some("TWD")),
    // Elsewhere
    ("12 990 Ft", None, 12990.0, Some("HUF")),
    ("Rp 15.000", None, 15000.0, Some("IDR")),
    ("129,99 lei", None, 129.99, Some("RON")),
    ("₪ 49.90", None, 49.9, Some("ILS")),
    ("1.299.000 ₫", None, 1_299_000.0, Some("VND")),
    ("19.990 CLP", None, 19990.0, Some("CLP")),
    ("$19.990", Some("CLP"), 19990.0, Some("CLP")),
    // Three minor digits: a lone separator before three digits is decimal.
    ("KWD 1.250", None, 1.25, Some("KWD")),
    ("1,250 KWD", None, 1.25, Some("KWD")),
    ("BHD 12.500", None, 12.5, Some("BHD")),
    // No currency in the text: the default, upper-cased, else none.
    ("12.99", Some("eur"), 12.99, Some("EUR")),
    ("12.99", None, 12.99, None),
    ("Total: 1,299.00", None, 1299.0, None),
    ("EUR12.99", None, 12.99, Some("EUR")),
    ("-€5.00", None, -5.0, Some("EUR")),
    ("€-5.00", None, -5.0, Some("EUR")),
    ("Price: 12.99 (incl. VAT) EUR", None, 12.99, Some("EUR")),
    // A date before the price has no currency next to it, so the price is read.
    ("Lieferung 12.03.2024: 12,99 €", None, 12.99, Some("EUR")),
];

/// The ambiguous cases, each named: a lone `.`/`,` before exactly three digits.
const AMBIGUOUS: &[(&str, Option<&str>, f64)] = &[
    // Three digits after a lone separator: thousands, whatever the separator or currency.
    ("$1,299", None, 1299.0),
    ("1,299 €", None, 1299.0),
    ("€1,299", None, 1299.0),
    ("1.299 €", None, 1299.0),
    ("$1.299", None, 1299.0),
    // Known loss: fuel prices in thousandths.
    ("$3.499", None, 3499.0),
    ("1,799 €", None, 1799.0),
    // Not three digits: decimal.
    ("1,29 €", None, 1.29),
    ("1.2999 €", None, 1.2999),
    ("$1.5", None, 1.5),
    // Three digits, but the integer part starts with 0 or has more than three digits: decimal.
    ("0,299 €", None, 0.299),
    ("$0.125", None, 0.125),
    ("1234.567 €", None, 1234.567),
    // Three digits in a three-minor-digit currency: decimal.
    ("1.299", Some("KWD"), 1.299),
    ("1.299", Some("EUR"), 1299.0),
    // Different separators: the last is decimal, whatever follows it.
    ("1,299.000 €", None, 1299.0),
    ("1.299,000 €", None, 1299.0),
];

fn run_money(text: &str, default: Option<&str>) -> Money {
    money(text, default).unwrap_or_else(|e| panic!("{text:?} with {default:?}: {e}"))
}

#[test]
fn money_table() {
    assert!(MONEY.len() >= 60, "{} rows", MONEY.len());
    let mut wrong = Vec::new();
    for &(text, default, amount, currency) in MONEY {
        match money(text, default) {
            Ok(m) if close(m.amount, amount) && m.currency.as_deref() == currency => {}
            other => wrong.push(format!("{text:?} with {default:?}: expected {amount} {currency:?}, got {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn money_ambiguous_separators() {
    for &(text, default, amount) in AMBIGUOUS {
        let got = run_money(text, default).amount;
        assert!(close(got, amount), "{text:?} with {default:?}: expected {amount}, got {got}");
    }
}

#[test]
fn money_spaces_of_every_kind_group_thousands() {
    for space in [' ', NBSP, NNBSP, '\u{2009}'] {
        let text = format!("1{space}299{space}000,50{space}kr");
        let got = run_money(&text, None);
        assert_eq!((got.amount, got.currency.as_deref()), (1_299_000.5, Some("SEK")), "{text:?}");
    }
    // A space between groups that are not thousands ends the number.
    assert_eq!(number("12 99"), Ok(12.0));
    assert_eq!(number("1234 567"), Ok(1234.0));
    // ... and money then reads the number next to the currency.
    assert_eq!(run_money("12 99 €", None).amount, 99.0);
}

#[test]
fn money_negative_zero_is_zero() {
    let zero = run_money("-0,00 €", None).amount;
    assert!(zero == 0.0 && zero.is_sign_positive());
}

/// (text, default currency, the whole message)
const MONEY_REFUSED: &[(&str, Option<&str>, &str)] = &[
    ("Free", None, "no amount in \"Free\""),
    ("Call for price", Some("EUR"), "no amount in \"Call for price\""),
    ("", None, "no amount in \"\""),
    ("   ", None, "no amount in \"\""),
    ("€", None, "no amount in \"€\""),
    ("$$$ ,.- €€", None, "no amount in \"$$$ ,.- €€\""),
    ("Gratis\nVersand", None, "no amount in \"Gratis Versand\""),
    (
        "1234567890123456789 €",
        None,
        "too many digits in \"1234567890123456789\" in \"1234567890123456789 €\": at most 18 significant \
         digits are read",
    ),
    (
        "12.03.2024",
        None,
        "cannot read \"12.03.2024\" as a number: the digit groups between its separators are not thousands \
         (groups of three)",
    ),
    (
        "Lieferung am 12.03.2024",
        Some("EUR"),
        "cannot read \"12.03.2024\" in \"Lieferung am 12.03.2024\" as a number: the digit groups between its \
         separators are not thousands (groups of three)",
    ),
    (
        "1.299'000 €",
        None,
        "cannot read \"1.299'000\" in \"1.299'000 €\" as a number: it mixes two thousands separators",
    ),
    (
        "1.299.– €",
        None,
        "cannot read \"1.299.–\" in \"1.299.– €\" as a number: it uses \".\" both for thousands and for decimals",
    ),
    (
        "$1.5k",
        None,
        "cannot read \"1.5k\" in \"$1.5k\": abbreviations such as k or M are not read; give the whole number",
    ),
    ("2M €", None, "cannot read \"2M\" in \"2M €\": abbreviations such as k or M are not read; give the whole number"),
    (
        "1,2,3 €",
        None,
        "cannot read \"1,2,3\" in \"1,2,3 €\" as a number: the digit groups between its separators are not thousands (groups of three)",
    ),
];

#[test]
fn money_refusals() {
    for &(text, default, message) in MONEY_REFUSED {
        match money(text, default) {
            Err(e) => {
                assert_eq!(e.message, message, "{text:?}");
                assert_eq!(e.to_string(), message);
            }
            Ok(m) => panic!("{text:?} read as {m:?}"),
        }
    }
}

#[test]
fn messages_quote_a_bounded_prefix() {
    let long = "x".repeat(10_000);
    let message = money(&long, None).expect_err("no digits").message;
    assert_eq!(message, format!("no amount in \"{}…\"", "x".repeat(60)));
    let digits = "9".repeat(100_000);
    let message = number(&digits).expect_err("too many digits").message;
    assert!(message.chars().count() < 160, "{message}");
    assert!(message.starts_with("too many digits in \"999"), "{message}");
}
