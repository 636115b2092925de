//! Prices: an amount and its currency, from texts such as `1.299,00 €`, `US$ 1,299`,
//! `CHF 1'299.–`, `₹1,23,456.00` or `Price: $12.99 (incl. VAT)`.
//!
//! - The digits are read by the rules of `number.rs` (decimal or thousands separator, sign,
//!   zero-cents dash, refusals); the currency markers are those of `currency.rs`.
//! - Which amount, when the text holds several: the first number with a currency marker next to
//!   it (before or after, across spaces only), else the first number. So `Was $20, now $15` is
//!   20 USD, `Now $15 (was $20)` is 15 USD, and `Model X200, $1,299` is 1299 USD. A watch narrows
//!   the text with its regex when another amount is wanted.
//! - Which currency: the marker next to the amount, the one before it first unless that one
//!   names several currencies and a marker after it names one (`$1,299.00 MXN` is MXN). With no
//!   marker next to it, the first marker anywhere in the text; with no marker at all, the
//!   default currency (upper-cased), else none. The default also settles which currency an
//!   ambiguous symbol names (`$`, `¥`, `kr`, `£`, `Rs`; see `currency.rs`).
//! - A `-` right before the marker that precedes the amount makes it negative: `-€5.00`.
//! - No digits at all (`Free`, `Call for price`) is refused: `no amount in "Free"`.

use serde::{Deserialize, Serialize};

use super::currency::{self, Marker, Names};
use super::number::{self, Token};
use super::{ParseError, quote};

/// An amount and its currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Money {
    /// The amount, negative for a discount or a refund written with a minus.
    pub amount: f64,
    /// The ISO 4217 code, upper case; `None` when neither the text nor the caller named one.
    pub currency: Option<String>,
}

/// Reads the price in `text`; `default_currency` (an ISO code) applies when the text names no
/// currency, and settles which currency an ambiguous symbol such as `$` or `kr` names. See the
/// module documentation for the rules.
///
/// ```
/// use driftwatch_values::parse::money;
/// let price = money("1.299,00 €", None).expect("a price");
/// assert_eq!((price.amount, price.currency.as_deref()), (1299.0, Some("EUR")));
/// assert_eq!(money("$1,299", Some("CAD")).expect("a price").currency.as_deref(), Some("CAD"));
/// assert!(money("Call for price", None).is_err());
/// ```
pub fn money(text: &str, default_currency: Option<&str>) -> Result<Money, ParseError> {
    let chars = number::fold(text);
    let markers = currency::markers(&chars);
    let default = default_currency.map(str::trim).filter(|c| !c.is_empty()).map(str::to_ascii_uppercase);
    let found = pick(&chars, &markers).ok_or_else(|| ParseError::new(format!("no amount in {}", quote(text))))?;
    let currency = found.marker.map(|m| m.names.resolve(default.as_deref())).or(default);
    let three_decimals = currency.as_deref().is_some_and(currency::has_three_minor_digits);
    let amount = number::read(&chars, &found.token, three_decimals, text)?;
    let amount = if found.minus_before_marker && amount != 0.0 { -amount } else { amount };
    Ok(Money { amount, currency })
}

/// The amount chosen and the marker that names its currency.
struct Found<'a> {
    token: Token,
    marker: Option<&'a Marker>,
    /// A `-` before a marker that precedes the amount (`-€5`).
    minus_before_marker: bool,
}

/// The first number with a marker next to it, else the first number and the first marker.
fn pick<'a>(chars: &[char], markers: &'a [Marker]) -> Option<Found<'a>> {
    let mut first = None;
    let mut from = 0;
    while let Some(token) = number::next_token(chars, from) {
        from = token.end;
        let before = marker_ending_at(markers, skip_spaces_back(chars, token.start));
        let after = marker_starting_at(markers, skip_spaces(chars, token.end));
        let marker = match (before, after) {
            (Some(b), Some(a)) if matches!(b.names, Names::OneOf(_)) && matches!(a.names, Names::One(_)) => Some(a),
            (Some(b), _) => Some(b),
            (None, a) => a,
        };
        if let Some(marker) = marker {
            let minus_before_marker = !token.negative && marker.end <= token.start && minus_at(chars, marker.start);
            return Some(Found { token, marker: Some(marker), minus_before_marker });
        }
        first.get_or_insert(token);
    }
    first.map(|token| Found { token, marker: markers.first(), minus_before_marker: false })
}

/// Whether a sign stands right before `at` (and not after a letter or digit, as in `X-€`).
fn minus_at(chars: &[char], at: usize) -> bool {
    at >= 1 && chars[at - 1] == '-' && (at < 2 || !chars[at - 2].is_alphanumeric())
}

fn skip_spaces_back(chars: &[char], mut at: usize) -> usize {
    while at > 0 && chars[at - 1].is_whitespace() {
        at -= 1;
    }
    at
}

fn skip_spaces(chars: &[char], mut at: usize) -> usize {
    while chars.get(at).is_some_and(|c| c.is_whitespace()) {
        at += 1;
    }
    at
}

/// Markers are in order and do not overlap, so both their starts and their ends are sorted.
fn marker_ending_at(markers: &[Marker], end: usize) -> Option<&Marker> {
    markers.binary_search_by_key(&end, |m| m.end).ok().and_then(|i| markers.get(i))
}

fn marker_starting_at(markers: &[Marker], start: usize) -> Option<&Marker> {
    markers.binary_search_by_key(&start, |m| m.start).ok().and_then(|i| markers.get(i))
}
