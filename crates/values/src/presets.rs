//! Presets: the common conditions by name (`price_below`, `price_dropped_by`, `back_in_stock`),
//! expanded at save into the rules they stand for, so that a watch stores, shows and evaluates
//! rules only. The API and the watch form share them.

use driftwatch_core::values::{Conditions, Match, Op, Preset, Rule, StructuredField, ValueKind, ValueSpec};
use serde_json::{Number, Value};

use crate::FieldError;

/// Replaces a preset in `conditions` by its rules; a preset about `price` or `stock` on a watch
/// that reads no value of that name adds it to `values` (from the page's structured data). The
/// error names the field within the conditions (`amount`, `value`...).
pub fn expand(conditions: &mut Conditions, values: &mut Vec<ValueSpec>) -> Result<(), FieldError> {
    let Some(preset) = conditions.preset.take() else {
        for (field, given) in [
            ("amount", conditions.amount.is_some()),
            ("percent", conditions.percent.is_some()),
            ("value", conditions.value.is_some()),
        ] {
            if given {
                return Err(FieldError::new(
                    field,
                    "goes with a preset: price_below, price_dropped_by or back_in_stock",
                ));
            }
        }
        return Ok(());
    };
    if !conditions.rules.is_empty() {
        return Err(FieldError::new("rules", "a preset stands for its own rules: give a preset or rules, not both"));
    }
    if conditions.match_ != Match::All {
        return Err(FieldError::new("match", "a preset is one rule: leave `match` out"));
    }
    let (amount, percent) = (conditions.amount.take(), conditions.percent.take());
    let refuse = |field: &str, given: bool| match given {
        true => Err(FieldError::new(field, format!("`{field}` does not go with {}", name(preset)))),
        false => Ok(()),
    };
    let default_subject = match preset {
        Preset::PriceBelow | Preset::PriceDroppedBy => "price",
        Preset::BackInStock => "stock",
    };
    let named = conditions.value.take();
    let subject = named.clone().unwrap_or_else(|| default_subject.to_owned());
    let (op, operand) = match preset {
        Preset::PriceBelow => {
            refuse("percent", percent.is_some())?;
            let amount = amount
                .filter(|a| a.is_finite() && *a > 0.0)
                .ok_or_else(|| FieldError::new("amount", "price_below needs an amount above 0, like 49.90"))?;
            (Op::Lt, number(amount))
        }
        Preset::PriceDroppedBy => {
            refuse("amount", amount.is_some())?;
            let percent = percent.filter(|p| p.is_finite() && *p > 0.0 && *p <= 100.0).ok_or_else(|| {
                FieldError::new("percent", "price_dropped_by needs a percentage above 0 and at most 100, like 10")
            })?;
            (Op::ChangedByPercent, number(-percent))
        }
        Preset::BackInStock => {
            refuse("amount", amount.is_some())?;
            refuse("percent", percent.is_some())?;
            (Op::Eq, Value::String("in_stock".into()))
        }
    };
    match values.iter().find(|spec| spec.name == subject) {
        Some(spec) => {
            let fits = match preset {
                Preset::PriceBelow | Preset::PriceDroppedBy => {
                    matches!(spec.kind, ValueKind::Money | ValueKind::Number)
                }
                Preset::BackInStock => spec.kind == ValueKind::Availability,
            };
            if !fits {
                let wants = if preset == Preset::BackInStock { "an availability" } else { "a money or number" };
                return Err(FieldError::new(
                    "value",
                    format!("{} is about {wants} value; `{subject}` is not", name(preset)),
                ));
            }
        }
        None if named.is_none() => values.push(structured(preset)),
        None => return Err(FieldError::new("value", format!("no value is named `{subject}`"))),
    }
    conditions.rules = vec![Rule { subject, op, operand }];
    Ok(())
}

/// The value a preset reads when the watch has none of its name: the page's structured data.
fn structured(preset: Preset) -> ValueSpec {
    let (name, kind, field) = match preset {
        Preset::PriceBelow | Preset::PriceDroppedBy => ("price", ValueKind::Money, StructuredField::Price),
        Preset::BackInStock => ("stock", ValueKind::Availability, StructuredField::Availability),
    };
    ValueSpec { name: name.into(), kind, structured: Some(field), ..ValueSpec::default() }
}

/// As written in the API.
fn name(preset: Preset) -> &'static str {
    match preset {
        Preset::PriceBelow => "price_below",
        Preset::PriceDroppedBy => "price_dropped_by",
        Preset::BackInStock => "back_in_stock",
    }
}

/// `n` as JSON, whole when it is (`50`, not `50.0`).
fn number(n: f64) -> Value {
    #[allow(clippy::cast_possible_truncation)]
    let whole = (n.fract() == 0.0 && n.abs() < 1e15).then_some(n as i64);
    whole.map(Number::from).or_else(|| Number::from_f64(n)).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(preset: Preset) -> Conditions {
        Conditions { preset: Some(preset), ..Conditions::default() }
    }

    #[test]
    fn presets_become_their_rules_and_add_the_structured_value() {
        let mut values = Vec::new();
        let mut below = Conditions { amount: Some(49.9), ..preset(Preset::PriceBelow) };
        expand(&mut below, &mut values).expect("valid");
        assert_eq!(
            below,
            Conditions::of(Match::All, vec![Rule { subject: "price".into(), op: Op::Lt, operand: 49.9.into() }])
        );
        assert_eq!(values, [structured(Preset::PriceBelow)]);
        let mut dropped = Conditions { percent: Some(10.0), ..preset(Preset::PriceDroppedBy) };
        expand(&mut dropped, &mut values).expect("valid");
        assert_eq!(dropped.rules[0].operand, Value::from(-10), "whole, and negative: a fall");
        assert_eq!(values.len(), 1, "the price is read once");
        let mut stock = preset(Preset::BackInStock);
        expand(&mut stock, &mut values).expect("valid");
        assert_eq!(stock.rules[0], Rule { subject: "stock".into(), op: Op::Eq, operand: "in_stock".into() });
        assert_eq!(values[1].structured, Some(StructuredField::Availability));
        crate::conditions::check(&stock, &values).expect("the rules it stands for are valid");
        // A value of the watch's own, by name.
        let own = ValueSpec { name: "total".into(), selector: Some("#total".into()), ..ValueSpec::default() };
        let mut values = vec![own];
        let mut named = Conditions { amount: Some(20.0), value: Some("total".into()), ..preset(Preset::PriceBelow) };
        expand(&mut named, &mut values).expect("valid");
        assert_eq!(named.rules[0].subject, "total");
        assert_eq!(values.len(), 1);
        // Without a preset nothing moves.
        let mut rules =
            Conditions::of(Match::Any, vec![Rule { subject: "text".into(), op: Op::Contains, operand: "x".into() }]);
        let before = rules.clone();
        expand(&mut rules, &mut values).expect("valid");
        assert_eq!(rules, before);
    }

    #[test]
    fn bad_presets_name_the_field() {
        let bad = |mut conditions: Conditions, values: &[ValueSpec]| {
            expand(&mut conditions, &mut values.to_vec()).expect_err("refused").field
        };
        assert_eq!(bad(preset(Preset::PriceBelow), &[]), "amount");
        assert_eq!(bad(Conditions { amount: Some(-3.0), ..preset(Preset::PriceBelow) }, &[]), "amount");
        assert_eq!(bad(Conditions { percent: Some(120.0), ..preset(Preset::PriceDroppedBy) }, &[]), "percent");
        assert_eq!(bad(Conditions { amount: Some(3.0), ..preset(Preset::BackInStock) }, &[]), "amount");
        assert_eq!(bad(Conditions { amount: Some(3.0), ..Conditions::default() }, &[]), "amount");
        let with_rules = Conditions {
            rules: vec![Rule { subject: "text".into(), op: Op::Contains, operand: "x".into() }],
            ..preset(Preset::BackInStock)
        };
        assert_eq!(bad(with_rules, &[]), "rules");
        assert_eq!(bad(Conditions { value: Some("nope".into()), ..preset(Preset::BackInStock) }, &[]), "value");
        let text = ValueSpec {
            name: "stock".into(),
            kind: ValueKind::Text,
            selector: Some("#s".into()),
            ..ValueSpec::default()
        };
        assert_eq!(bad(preset(Preset::BackInStock), &[text]), "value");
    }
}
