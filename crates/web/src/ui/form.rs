//! Reading forms, shared by every page with one: a field's value and the error beside it, and
//! the parsers of what people type (lines, numbers, `name: value` pairs, checkboxes).

use std::collections::BTreeMap;

use driftwatch_validate::FieldError;

/// A form field's value and the error shown beside it.
#[derive(Debug, Clone, Default)]
pub struct Field {
    /// What was typed (kept on error; never for passwords).
    pub value: String,
    /// The message shown beside the field.
    pub error: Option<String>,
}

impl Field {
    /// The field as typed, without an error.
    pub fn of(value: &str) -> Field {
        Field { value: value.to_owned(), error: None }
    }
}

/// The value of `name` in a form read as pairs (empty when absent): for forms whose fields
/// repeat (`ids`, `event_types`), read as a list of pairs rather than a struct.
pub fn value(pairs: &[(String, String)], name: &str) -> String {
    pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default()
}

/// The non-empty lines of a textarea, trimmed.
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

/// The text trimmed, or `None` when empty.
pub fn optional(text: &str) -> Option<String> {
    Some(text.trim().to_owned()).filter(|t| !t.is_empty())
}

/// A number typed in a field: `None` when empty; an error for `field` when it is not one.
pub fn number<T: std::str::FromStr>(field: &str, text: &str, errors: &mut Vec<FieldError>) -> Option<T> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    match text.parse() {
        Ok(n) => Some(n),
        Err(_) => {
            errors.push(FieldError::new(field, "enter a number"));
            None
        }
    }
}

/// `Name: value` lines (headers) or `name=value` lines (cookies).
pub fn pairs(field: &str, text: &str, separator: char, errors: &mut Vec<FieldError>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for line in lines(text) {
        match line.split_once(separator) {
            Some((k, v)) if !k.trim().is_empty() => {
                map.insert(k.trim().to_owned(), v.trim().to_owned());
            }
            _ => errors.push(FieldError::new(field, format!("write each as name{separator}value: {line}"))),
        }
    }
    map
}

/// A checkbox's form value.
pub fn checked(value: bool) -> Option<String> {
    value.then(|| "on".to_owned())
}
