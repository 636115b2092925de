//! A restock/price watch (cd's `restock_diff` processor) as values and conditions: `price` and
//! `stock` read from the page's structured data, and rules for what cd alerted on (back in
//! stock, below or above a price, a change by a share). Its settings live in the watch's
//! `restock_diff.json` (`{"restock_diff": {...}}`), or in older backups in `restock_settings`.

use driftwatch_core::WatchOptions;
use driftwatch_core::values::{Conditions, Match, Op, Rule, StructuredField, ValueKind, ValueSpec};
use serde_json::{Value, json};

/// Adds the values and conditions of a restock watch to `options`.
pub(crate) fn map(watch: &Value, config: Option<&Value>, options: &mut WatchOptions, note: &mut impl FnMut(String)) {
    let settings = config.and_then(|c| c.get("restock_diff")).or_else(|| watch.get("restock_settings"));
    let get = |key: &str| settings.and_then(|s| s.get(key));
    let number = |key: &str| get(key).and_then(|v| v.as_f64().or_else(|| v.as_str()?.trim().parse().ok()));
    let follow_price = get("follow_price_changes").and_then(Value::as_bool).unwrap_or(true);
    let stock_mode = get("in_stock_processing").and_then(Value::as_str).unwrap_or("in_stock_only");

    let value = |name: &str, kind, field| ValueSpec {
        name: name.into(),
        kind,
        structured: Some(field),
        ..ValueSpec::default()
    };
    options.values.push(value("price", ValueKind::Money, StructuredField::Price));
    options.values.push(value("stock", ValueKind::Availability, StructuredField::Availability));

    let mut rules = Vec::new();
    let rule = |subject: &str, op, operand| Rule { subject: subject.into(), op, operand };
    match stock_mode {
        "in_stock_only" => rules.push(rule("stock", Op::Eq, json!("in_stock"))),
        "all_changes" => note("\"any availability change\": every change of `stock` is a change of the watch".into()),
        _ => {}
    }
    if follow_price {
        if let Some(min) = number("price_change_min") {
            rules.push(rule("price", Op::Lt, json!(min)));
        }
        if let Some(max) = number("price_change_max") {
            rules.push(rule("price", Op::Gt, json!(max)));
        }
        if let Some(percent) = number("price_change_threshold_percent").filter(|p| *p > 0.0) {
            rules.push(rule("price", Op::ChangedByPercent, json!(percent)));
            rules.push(rule("price", Op::ChangedByPercent, json!(-percent)));
        }
    }
    if !rules.is_empty() {
        options.conditions = Some(Conditions { match_: Match::Any, rules, ..Conditions::default() });
    }
    note("restock and price detection became the values `price` and `stock` with conditions; the page's other text changes are compared too".into());
}
