//! A value as read on one check, and how two readings compare.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::parse::Availability;

/// A value read on one check, typed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Typed {
    /// A number.
    Number {
        /// The number.
        value: f64,
    },
    /// An amount of money.
    Money {
        /// The amount.
        amount: f64,
        /// ISO 4217, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        currency: Option<String>,
    },
    /// Whether something can be bought.
    Availability {
        /// In stock, out of stock...
        value: Availability,
    },
    /// True or false.
    Boolean {
        /// The flag.
        value: bool,
    },
    /// Text.
    Text {
        /// The text.
        value: String,
    },
}

impl Typed {
    /// The number a chart and `<`, `>`, `changed_by_percent` use: a number, an amount, a
    /// boolean as 0/1, availability as 1 when available; none for text.
    pub fn number(&self) -> Option<f64> {
        match self {
            Typed::Number { value } => Some(*value),
            Typed::Money { amount, .. } => Some(*amount),
            Typed::Boolean { value } => Some(f64::from(u8::from(*value))),
            Typed::Availability { value } => Some(f64::from(u8::from(value.is_available()))),
            Typed::Text { .. } => None,
        }
    }

    /// As people read it: `67.00 EUR`, `in_stock`, `true`, the text.
    pub fn display(&self) -> String {
        match self {
            Typed::Number { value } => trim_number(*value),
            Typed::Money { amount, currency: Some(c) } => format!("{} {c}", amount_text(*amount)),
            Typed::Money { amount, currency: None } => amount_text(*amount),
            Typed::Availability { value } => value.as_str().to_owned(),
            Typed::Boolean { value } => value.to_string(),
            Typed::Text { value } => value.clone(),
        }
    }

    /// The plain JSON of the value: a number, text or boolean (availability as its name).
    pub fn plain(&self) -> serde_json::Value {
        match self {
            Typed::Number { value } | Typed::Money { amount: value, .. } => {
                serde_json::Number::from_f64(*value).map_or(serde_json::Value::Null, serde_json::Value::Number)
            }
            Typed::Availability { value } => serde_json::Value::String(value.as_str().to_owned()),
            Typed::Boolean { value } => serde_json::Value::Bool(*value),
            Typed::Text { value } => serde_json::Value::String(value.clone()),
        }
    }

    /// The currency of an amount.
    pub fn currency(&self) -> Option<&str> {
        match self {
            Typed::Money { currency, .. } => currency.as_deref(),
            _ => None,
        }
    }
}

/// `12`, `12.5`, `0.333333` (at most six decimals, no trailing zeros).
/// An amount of money as people read it, whoever shows it: two decimals (`67.00`).
fn amount_text(amount: f64) -> String {
    format!("{amount:.2}")
}

fn trim_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{value:.0}");
    }
    let text = format!("{value:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// Every value of one check, by name.
pub type Values = BTreeMap<String, Typed>;

/// How one value moved between two checks, as payloads carry it:
/// `{"name": "price", "from": 89.99, "to": 67.0, "currency": "EUR", "change_percent": -25.55}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadValueChange)]
pub struct ValueChange {
    /// The value's name.
    pub name: String,
    /// Before (null when it was not read): a number, an amount, text, `in_stock`...
    #[schema(value_type = Value)]
    pub from: serde_json::Value,
    /// After (null when it could not be read).
    #[schema(value_type = Value)]
    pub to: serde_json::Value,
    /// The currency of a money value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// The change in percent of `from`, for numbers (none from zero).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_percent: Option<f64>,
}

impl ValueChange {
    /// `from` as people read it, as [`Typed::display`] shows it: an amount with two decimals
    /// (`67.00`, its currency said once after both ends), a number without trailing zeros,
    /// `none` for a value not read.
    pub fn from_text(&self) -> String {
        self.shown(&self.from)
    }

    /// `to` as people read it (see [`ValueChange::from_text`]).
    pub fn to_text(&self) -> String {
        self.shown(&self.to)
    }

    fn shown(&self, value: &serde_json::Value) -> String {
        match value {
            serde_json::Value::Null => "none".to_owned(),
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => match (n.as_f64(), &self.currency) {
                (Some(amount), Some(_)) => amount_text(amount),
                (Some(number), None) => trim_number(number),
                (None, _) => n.to_string(),
            },
            other => other.to_string(),
        }
    }
}

/// The values that differ between two checks, by name; a value only on one side counts.
pub fn changes(before: &Values, after: &Values) -> Vec<ValueChange> {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (from, to) = (before.get(name), after.get(name));
            if from == to {
                return None;
            }
            let change_percent = match (from.and_then(Typed::number), to.and_then(Typed::number)) {
                (Some(a), Some(b)) => percent(a, b),
                _ => None,
            };
            Some(ValueChange {
                name: name.clone(),
                from: from.map_or(serde_json::Value::Null, Typed::plain),
                to: to.map_or(serde_json::Value::Null, Typed::plain),
                currency: to.or(from).and_then(Typed::currency).map(str::to_owned),
                change_percent,
            })
        })
        .collect()
}

/// The change from `a` to `b` in percent of `a`, rounded to two decimals; none from zero.
pub fn percent(a: f64, b: f64) -> Option<f64> {
    if a == 0.0 || !a.is_finite() || !b.is_finite() {
        return None;
    }
    Some(((b - a) / a.abs() * 10_000.0).round() / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn money(amount: f64) -> Typed {
        Typed::Money { amount, currency: Some("EUR".into()) }
    }

    #[test]
    fn changes_name_what_moved_with_the_percentage() {
        let before = Values::from([("price".into(), money(89.99)), ("sku".into(), Typed::Text { value: "A".into() })]);
        let after = Values::from([("price".into(), money(67.0)), ("sku".into(), Typed::Text { value: "A".into() })]);
        let moved = changes(&before, &after);
        assert_eq!(moved.len(), 1);
        let json = serde_json::to_value(&moved[0]).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"name": "price", "from": 89.99, "to": 67.0, "currency": "EUR", "change_percent": -25.55})
        );
        assert_eq!((moved[0].from_text(), moved[0].to_text()), ("89.99".into(), "67.00".into()), "as display shows it");
        assert!(changes(&after, &after).is_empty());
        let gone = changes(&before, &Values::new());
        assert_eq!(gone.len(), 2);
        assert!(gone.iter().all(|c| c.to.is_null()));
        assert_eq!(gone[0].to_text(), "none");
    }

    #[test]
    fn display_and_numbers() {
        assert_eq!(money(67.0).display(), "67.00 EUR");
        assert_eq!(Typed::Number { value: 12.5 }.display(), "12.5");
        assert_eq!(Typed::Number { value: 3.0 }.display(), "3");
        assert_eq!(Typed::Availability { value: Availability::InStock }.number(), Some(1.0));
        assert_eq!(Typed::Text { value: "x".into() }.number(), None);
        assert_eq!(percent(0.0, 5.0), None);
        assert_eq!(percent(50.0, 45.0), Some(-10.0));
    }

    #[test]
    fn round_trips_as_stored() {
        let values = Values::from([
            ("price".into(), money(12.5)),
            ("stock".into(), Typed::Availability { value: Availability::OutOfStock }),
        ]);
        let text = serde_json::to_string(&values).expect("json");
        assert_eq!(serde_json::from_str::<Values>(&text).expect("parse"), values);
    }
}
