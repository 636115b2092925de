//! Values and conditions in the form: the quick path of tracking a price (the page's structured
//! price and availability, and a preset of when to alert) and, for everything else, the value
//! specs and the conditions as JSON. A stored watch's settings read back as they were: presets
//! are recognised only when they give back exactly what is stored, else the JSON shows it all.

use driftwatch_core::values::{AlertOn, Conditions, Match, Op, Rule, StructuredField, ValueKind, ValueSpec};
use driftwatch_validate::FieldError;
use serde_json::{Number, Value};

/// The presets of "Alert when…": value, label.
pub const PRESETS: [(&str, &str); 4] = [
    (ANY, "any change"),
    (PRICE_BELOW, "the price is below…"),
    (PRICE_DROP, "the price dropped by at least…"),
    (BACK_IN_STOCK, "it is back in stock"),
];
/// No preset: any change alerts, or the conditions written as JSON decide.
pub const ANY: &str = "any";
/// `price < amount`.
pub const PRICE_BELOW: &str = "price_below";
/// `price changed_by_percent -percent`.
pub const PRICE_DROP: &str = "price_drop";
/// `stock == in_stock`.
pub const BACK_IN_STOCK: &str = "back_in_stock";

/// The form fields of this section, as text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValueFields {
    /// Whether the structured price and availability are read.
    pub structured_data: bool,
    /// One of [`PRESETS`].
    pub alert_when: String,
    /// With [`PRICE_BELOW`]: the amount.
    pub price_below: String,
    /// With [`PRICE_DROP`]: the percent, positive.
    pub price_drop: String,
    /// The other values, a JSON array (empty: none).
    pub values_json: String,
    /// The conditions, a JSON object (empty: none), when no preset is chosen.
    pub conditions_json: String,
    /// With conditions: `change.detected` too for the change that makes them hold
    /// ([`AlertOn::ConditionsAndChanges`]).
    pub alert_on_changes: bool,
}

/// The value the structured-data checkbox adds as `price`.
fn price_spec() -> ValueSpec {
    ValueSpec {
        name: "price".into(),
        kind: ValueKind::Money,
        structured: Some(StructuredField::Price),
        ..ValueSpec::default()
    }
}

/// The value the structured-data checkbox adds as `stock`.
fn stock_spec() -> ValueSpec {
    ValueSpec {
        name: "stock".into(),
        kind: ValueKind::Availability,
        structured: Some(StructuredField::Availability),
        ..ValueSpec::default()
    }
}

impl ValueFields {
    /// The fields showing `values` and `conditions` as stored.
    pub fn of(values: &[ValueSpec], conditions: Option<&Conditions>) -> ValueFields {
        let mut fields = ValueFields { alert_when: ANY.to_owned(), ..ValueFields::default() };
        // The checkbox puts price and stock first: it stands for them only when they are
        // exactly that, so a save gives back the same values in the same order.
        let rest = match values {
            [price, stock, rest @ ..] if *price == price_spec() && *stock == stock_spec() => {
                fields.structured_data = true;
                rest
            }
            all => all,
        };
        fields.values_json = values_text(rest);
        let Some(stored) = conditions else { return fields };
        fields.alert_on_changes = stored.alert_on == AlertOn::ConditionsAndChanges;
        // The checkbox shows `alert_on`; the preset or the JSON shows the rest.
        let conditions = &Conditions { alert_on: AlertOn::default(), ..stored.clone() };
        if let Some((preset, amount)) = preset_of(conditions)
            && preset_conditions(preset, &amount).ok().as_ref() == Some(conditions)
        {
            fields.alert_when = preset.to_owned();
            match preset {
                PRICE_BELOW => fields.price_below = amount,
                PRICE_DROP => fields.price_drop = amount,
                _ => {}
            }
        } else {
            fields.conditions_json = conditions_text(conditions);
        }
        fields
    }

    /// How many values the checkbox puts before those of the JSON (for naming errors).
    fn prepended(&self, own: &[ValueSpec]) -> usize {
        if !self.structured_data {
            return 0;
        }
        [price_spec(), stock_spec()].iter().filter(|s| !own.iter().any(|o| o.name == s.name)).count()
    }

    /// The values and conditions the fields describe; errors name the form's fields
    /// (`options.values` for the JSON of values, `price_below`...).
    pub fn read(&self, errors: &mut Vec<FieldError>) -> (Vec<ValueSpec>, Option<Conditions>) {
        let (own, values_read) = match parse_json::<Vec<ValueSpec>>(&self.values_json, '[', "a list of values") {
            Ok(own) => (own.unwrap_or_default(), true),
            Err(message) => {
                errors.push(FieldError::new("options.values", message));
                (Vec::new(), false)
            }
        };
        let mut values = Vec::new();
        if self.structured_data {
            values.extend([price_spec(), stock_spec()].into_iter().filter(|s| !own.iter().any(|o| o.name == s.name)));
        }
        values.extend(own);
        let conditions = match self.alert_when.trim() {
            "" | ANY => match parse_json::<Conditions>(&self.conditions_json, '{', "an object of conditions") {
                Ok(conditions) => conditions,
                Err(message) => {
                    errors.push(FieldError::new("options.conditions", message));
                    None
                }
            },
            preset => {
                let amount = match preset {
                    PRICE_BELOW => &self.price_below,
                    PRICE_DROP => &self.price_drop,
                    _ => "",
                };
                match preset_conditions(preset, amount) {
                    Ok(conditions) => Some(conditions),
                    Err(e) => {
                        errors.push(e);
                        None
                    }
                }
            }
        };
        // Conditions over values that could not be read would only add confusing errors.
        let alert_on = if self.alert_on_changes { AlertOn::ConditionsAndChanges } else { AlertOn::Conditions };
        let conditions = conditions.filter(|_| values_read).map(|c| Conditions { alert_on, ..c });
        if let Some(subject) = conditions.as_ref().and_then(|_| self.preset_subject())
            && !values.iter().any(|v| v.name == subject)
        {
            errors.push(FieldError::new(
                "alert_when",
                format!(
                    "needs a value named {subject}: tick “Read price and availability” above, or add one to Values (JSON)"
                ),
            ));
            return (values, None);
        }
        (values, conditions)
    }

    /// The value a chosen preset is about.
    fn preset_subject(&self) -> Option<&'static str> {
        match self.alert_when.trim() {
            PRICE_BELOW | PRICE_DROP => Some("price"),
            BACK_IN_STOCK => Some("stock"),
            _ => None,
        }
    }

    /// Whether a preset is chosen (then errors of the conditions stand beside it).
    pub fn preset_chosen(&self) -> bool {
        !matches!(self.alert_when.trim(), "" | ANY)
    }

    /// Whether anything of this section is set (then it shows open).
    pub fn is_set(&self) -> bool {
        self.structured_data
            || self.preset_chosen()
            || !self.values_json.trim().is_empty()
            || !self.conditions_json.trim().is_empty()
            || self.alert_on_changes
    }

    /// An error of `options.values...` or `options.conditions...` saying which value or rule
    /// it is about: `value 1 (shown): regex: not a regex...`, `rule 2 (price <): ...`.
    pub fn message(&self, field: &str, message: String) -> String {
        let message = one_line(message);
        let index = |rest: &str| -> Option<(usize, String)> {
            let rest = rest.strip_prefix('[')?;
            let (i, after) = rest.split_once(']')?;
            Some((i.parse().ok()?, after.trim_start_matches('.').to_owned()))
        };
        if let Some(rest) = field.strip_prefix("options.values") {
            let Some((i, part)) = index(rest) else { return message };
            let own: Vec<ValueSpec> = parse_json(&self.values_json, '[', "").ok().flatten().unwrap_or_default();
            let before = self.prepended(&own);
            let (which, name) = match i.checked_sub(before) {
                Some(j) => (format!("value {}", j + 1), own.get(j).map(|v| v.name.clone()).unwrap_or_default()),
                None => ("the structured-data value".to_owned(), if i == 0 { "price" } else { "stock" }.to_owned()),
            };
            let name = if name.is_empty() { String::new() } else { format!(" ({name})") };
            let part = if part.is_empty() { String::new() } else { format!(" {part}:") };
            return format!("{which}{name}:{part} {message}");
        }
        if self.preset_chosen() {
            return message;
        }
        let Some(rest) = field.strip_prefix("options.conditions.rules") else { return message };
        let Some((i, part)) = index(rest) else { return message };
        let conditions: Option<Conditions> = parse_json(&self.conditions_json, '{', "").ok().flatten();
        let rule = conditions.and_then(|c| c.rules.get(i).map(|r| format!(" ({} {})", r.subject, r.op.as_str())));
        let part = if part.is_empty() { String::new() } else { format!(" {part}:") };
        format!("rule {}{}:{part} {message}", i + 1, rule.unwrap_or_default())
    }
}

/// A regex crate's error (the pattern on its own line, a caret under the fault, then what is
/// wrong) on one line, as a field's error shows: `not a regex: unclosed group (at character 4)`.
fn one_line(message: String) -> String {
    let Some((before, detail)) = message.split_once("regex parse error:") else { return message };
    let lines: Vec<&str> = detail.lines().collect();
    let Some(what) = lines.iter().find_map(|l| l.trim().strip_prefix("error: ")) else { return message };
    // Two lines (the pattern, the caret) when the pattern is one line; then the caret's column.
    let at = match lines.as_slice() {
        [_, pattern, caret, ..] if caret.trim() == "^" || caret.trim().chars().all(|c| c == '^') => {
            let indent = pattern.len() - pattern.trim_start().len();
            caret.find('^').and_then(|c| c.checked_sub(indent)).map(|c| format!(" (at character {})", c + 1))
        }
        _ => None,
    };
    format!("{before}{what}{}", at.unwrap_or_default())
}

/// A preset recognised in stored conditions, with its amount as shown.
fn preset_of(conditions: &Conditions) -> Option<(&'static str, String)> {
    let [rule] = conditions.rules.as_slice() else { return None };
    if conditions.match_ != Match::All {
        return None;
    }
    match (rule.subject.as_str(), rule.op, &rule.operand) {
        ("price", Op::Lt, Value::Number(n)) => Some((PRICE_BELOW, n.to_string())),
        ("price", Op::ChangedByPercent, Value::Number(n)) => Some((PRICE_DROP, negated(n)?.to_string())),
        ("stock", Op::Eq, Value::String(s)) if s == "in_stock" => Some((BACK_IN_STOCK, String::new())),
        _ => None,
    }
}

/// The conditions of a preset; the error names the preset's own field.
fn preset_conditions(preset: &str, amount: &str) -> Result<Conditions, FieldError> {
    let rule = |subject: &str, op, operand| {
        Conditions::of(Match::All, vec![Rule { subject: subject.to_owned(), op, operand }])
    };
    match preset {
        PRICE_BELOW => {
            let n =
                positive(amount).ok_or_else(|| FieldError::new(PRICE_BELOW, "enter an amount above 0, like 49.90"))?;
            Ok(rule("price", Op::Lt, Value::Number(n)))
        }
        PRICE_DROP => {
            // "dropped by 10" and "dropped by -10" both mean a fall of 10 %.
            let text = amount.trim().trim_end_matches('%').trim();
            let n = positive(text.strip_prefix('-').unwrap_or(text))
                .filter(|n| n.as_f64().is_some_and(|p| p <= 100.0))
                .and_then(|n| negated(&n))
                .ok_or_else(|| FieldError::new(PRICE_DROP, "enter a percentage between 0 and 100, like 10"))?;
            Ok(rule("price", Op::ChangedByPercent, Value::Number(n)))
        }
        BACK_IN_STOCK => Ok(rule("stock", Op::Eq, Value::String("in_stock".into()))),
        _ => Err(FieldError::new("alert_when", "choose one of the options")),
    }
}

/// A number above 0 as typed (`49.90`, or `49,90` with a decimal comma), kept whole when it is.
fn positive(text: &str) -> Option<Number> {
    let text = text.trim();
    let text = if text.contains('.') { text.to_owned() } else { text.replacen(',', ".", 1) };
    let n: Number = serde_json::from_str(&text).ok()?;
    n.as_f64().filter(|f| f.is_finite() && *f > 0.0).map(|_| n)
}

/// `-n`, whole when `n` is.
fn negated(n: &Number) -> Option<Number> {
    match (n.as_i64(), n.as_f64()) {
        (Some(i), _) => i.checked_neg().map(Number::from),
        (None, Some(f)) => Number::from_f64(-f),
        _ => None,
    }
}

/// A JSON field's content: `None` when empty; the error says where the text goes wrong, or
/// what shape it should have (a list starts with `[`, an object with `{`).
pub(super) fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
    opens: char,
    shape: &str,
) -> Result<Option<T>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    if !trimmed.starts_with(opens) && serde_json::from_str::<Value>(trimmed).is_ok() {
        return Err(format!("write {shape}, starting with {opens}"));
    }
    serde_json::from_str(text).map(Some).map_err(|e| json_error(&e))
}

/// A JSON error with its line and column, in words.
fn json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let said = e.to_string();
    let what = said.rsplit_once(" at line ").map_or(said.as_str(), |(what, _)| what);
    let at = format!("line {}, column {}", e.line(), e.column());
    match e.classify() {
        Category::Eof => format!("JSON ends too early at {at}: a bracket, brace or quote is not closed"),
        Category::Syntax => format!("JSON syntax error at {at}: {what}"),
        Category::Data | Category::Io => format!("at {at}: {what}"),
    }
}

/// Values as shown in the form: one a line, like the README writes them.
fn values_text(values: &[ValueSpec]) -> String {
    if values.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = values.iter().map(|v| format!("  {}", spaced(v))).collect();
    format!("[\n{}\n]", lines.join(",\n"))
}

/// Conditions as shown in the form: one rule a line.
fn conditions_text(conditions: &Conditions) -> String {
    let lines: Vec<String> = conditions.rules.iter().map(|r| format!("  {}", spaced(r))).collect();
    let match_ = spaced(&conditions.match_);
    if lines.is_empty() {
        return format!("{{\"match\": {match_}, \"rules\": []}}");
    }
    format!("{{\"match\": {match_}, \"rules\": [\n{}\n]}}", lines.join(",\n"))
}

/// Compact JSON with a space after each `:` and `,`, as people write it.
fn spaced<T: serde::Serialize>(value: &T) -> String {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, Spaced);
    match serde::Serialize::serialize(value, &mut serializer) {
        Ok(()) => String::from_utf8(out).unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The formatter of [`spaced`].
struct Spaced;

impl serde_json::ser::Formatter for Spaced {
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}
