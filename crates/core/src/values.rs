//! Named values a watch reads from its page on every check (a price, a stock level), and the
//! conditions over them that decide an alert. Pure data, stored in [`crate::WatchOptions`];
//! `driftwatch-values` reads, parses and evaluates them, `driftwatch-validate` checks them.

use serde::{Deserialize, Serialize};

/// A value read from the page on every check: from exactly one source (`selector`,
/// `json_pointer`, `jsonpath`, `jq` or `structured`), then narrowed by `regex`, then parsed as
/// its `type`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    /// Its name in conditions, payloads, the API and the chart: 1-32 of `a-z`, `0-9`, `_`,
    /// starting with a letter.
    #[schema(pattern = "^[a-z][a-z0-9_]{0,31}$")]
    pub name: String,
    /// How its text is read (`money` when left out).
    #[serde(rename = "type", default)]
    pub kind: ValueKind,
    /// A CSS selector on an HTML page: the text of what it matches (every match, in order), or
    /// the first match's `attribute`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// With `selector`: read this attribute (`content`, `data-price`) instead of the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    /// A JSON Pointer (RFC 6901) into a JSON page: `/data/price`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json_pointer: Option<String>,
    /// A JSONPath query (RFC 9535) into a JSON page; the first node is read: `$.items[0].price`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jsonpath: Option<String>,
    /// A jq program over a JSON page; its first output is read: `.items | map(.price) | min`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jq: Option<String>,
    /// A field of the page's structured data (schema.org `Product`/`Offer` in JSON-LD or
    /// microdata).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<StructuredField>,
    /// Narrows the text found: the first capture group (or the whole match) of this regex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// `money`: the currency (ISO 4217, `EUR`) when the text names none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// `availability`: words that mean in stock, beside the built-in ones (any case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_stock_words: Vec<String>,
    /// `availability`: words that mean out of stock, beside the built-in ones (any case).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_stock_words: Vec<String>,
}

/// How a value's text is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValueKind {
    /// A number, in any locale's grouping (`1.299,5`, `1,299.5`, `1'299.5`).
    Number,
    /// An amount and a currency (`1.299,00 €`, `$1,299.00`, `CHF 1'299.–`).
    #[default]
    Money,
    /// In stock, out of stock, pre-order... from schema.org values and words.
    Availability,
    /// True or false (`true`, `yes`, `1`, `on`; `false`, `no`, `0`, `off`).
    Boolean,
    /// The text itself, trimmed.
    Text,
}

impl ValueKind {
    /// The name used in options and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ValueKind::Number => "number",
            ValueKind::Money => "money",
            ValueKind::Availability => "availability",
            ValueKind::Boolean => "boolean",
            ValueKind::Text => "text",
        }
    }
}

/// A field of a page's structured data (the first `Product`'s first `Offer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StructuredField {
    /// `offers.price` with `offers.priceCurrency` (or `lowPrice` of an `AggregateOffer`).
    Price,
    /// `offers.availability`.
    Availability,
    /// The product's `name`.
    Name,
}

/// When a watch with conditions alerts: a change alerts only when they hold, and
/// `condition.met` / `condition.cleared` are raised when they start and stop holding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Conditions {
    /// `all` rules must hold (the default) or `any` one.
    #[serde(rename = "match")]
    pub match_: Match,
    /// The rules (at most 20).
    #[schema(max_items = 20)]
    pub rules: Vec<Rule>,
    /// Instead of `rules`, a preset for a common case; it is saved as the rules it stands for
    /// (and reads back as them):
    ///
    /// - `price_below` with `amount`: `price < amount`.
    /// - `price_dropped_by` with `percent` (0-100): the price fell by at least that much since
    ///   the last check (`price changed_by_percent -percent`).
    /// - `back_in_stock`: `stock == in_stock`.
    ///
    /// `value` names the value it is about (`price` or `stock` when left out); a preset about
    /// `price` or `stock` on a watch with no value of that name adds it, read from the page's
    /// structured data (schema.org `Offer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<Preset>,
    /// With `price_below`: the amount, above 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0)]
    pub amount: Option<f64>,
    /// With `price_dropped_by`: the percentage, above 0 and at most 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(exclusive_minimum = 0, maximum = 100)]
    pub percent: Option<f64>,
    /// With a preset: the value it is about, when not `price` (or `stock`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// What a change alerts with. `conditions` (the default): one alert per change, so a
    /// change that makes the conditions hold is told by `condition.met` alone (carrying the
    /// change), and `change.detected` is sent for the changes after it while they still hold.
    /// `conditions_and_changes`: `change.detected` too, for that first change.
    #[serde(skip_serializing_if = "AlertOn::is_default")]
    pub alert_on: AlertOn,
}

/// What a watch with conditions alerts with; see [`Conditions::alert_on`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AlertOn {
    /// One alert per change: the crossing's `condition.met` carries the change that made it.
    #[default]
    Conditions,
    /// The crossing's `condition.met` and that change's own `change.detected`.
    ConditionsAndChanges,
}

impl AlertOn {
    /// Whether this is the default (left out of stored options).
    pub fn is_default(&self) -> bool {
        *self == AlertOn::default()
    }

    /// The name used in options and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertOn::Conditions => "conditions",
            AlertOn::ConditionsAndChanges => "conditions_and_changes",
        }
    }
}

/// The presets of [`Conditions::preset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// The price is below `amount`.
    PriceBelow,
    /// The price fell by at least `percent` since the last check.
    PriceDroppedBy,
    /// The stock is back: `in_stock`.
    BackInStock,
}

impl Conditions {
    /// Conditions of `rules` combined by `match_`.
    pub fn of(match_: Match, rules: Vec<Rule>) -> Conditions {
        Conditions { match_, rules, ..Conditions::default() }
    }

    /// Whether a preset or one of its fields is given (stored conditions never have them).
    pub fn names_a_preset(&self) -> bool {
        self.preset.is_some() || self.amount.is_some() || self.percent.is_some() || self.value.is_some()
    }
}

/// How rules combine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// Every rule holds.
    #[default]
    All,
    /// At least one rule holds.
    Any,
}

/// One rule: `subject op operand`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// A value's name, or `text` (the extracted text), `added` / `removed` (the changed lines'
    /// text) or `change_size` (added plus removed lines).
    pub subject: String,
    /// The comparison.
    pub op: Op,
    /// A number for `<` `<=` `>` `>=` and `changed_by_percent` (negative: dropped by at least
    /// that much; positive: rose by at least that much); text for `contains` and `matches` (a
    /// regex); for `==` and `!=` what the subject holds (a number, text, `in_stock`...).
    pub operand: serde_json::Value,
}

/// A rule's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub enum Op {
    /// Less than.
    #[serde(rename = "<")]
    Lt,
    /// Less than or equal.
    #[serde(rename = "<=")]
    Le,
    /// Greater than.
    #[serde(rename = ">")]
    Gt,
    /// Greater than or equal.
    #[serde(rename = ">=")]
    Ge,
    /// Equal.
    #[serde(rename = "==")]
    Eq,
    /// Not equal.
    #[serde(rename = "!=")]
    Ne,
    /// Text contains the operand (any case).
    #[serde(rename = "contains")]
    Contains,
    /// Text matches the operand, a regex.
    #[serde(rename = "matches")]
    Matches,
    /// The value moved by at least this percentage since the last check.
    #[serde(rename = "changed_by_percent")]
    ChangedByPercent,
}

impl Op {
    /// As written in options and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
            Op::Ne => "!=",
            Op::Contains => "contains",
            Op::Matches => "matches",
            Op::ChangedByPercent => "changed_by_percent",
        }
    }
}
