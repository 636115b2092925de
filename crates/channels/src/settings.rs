//! An endpoint's settings (a JSON object stored beside its URL) and secrets (a JSON object
//! stored sealed), checked against its kind's [`Spec`](crate::kinds::Spec) when an endpoint is
//! created or changed.
//!
//! Both are kept as the objects they are, keyed by the names each kind declares in its spec,
//! so that a kind with fields of its own needs no change here: the kind reads its fields by
//! name ([`Settings::text`], [`Settings::int`], ...).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::kinds::{EndpointKind, Field, Input};

pub use driftwatch_core::FieldError;

fn bad(field: impl Into<String>, message: impl Into<String>) -> FieldError {
    FieldError::new(field, message)
}

/// A kind's settings: the checked JSON object, read by field name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings(Map<String, Value>);

/// A kind's secrets, once opened: the checked JSON object, read by field name. Never logged,
/// never shown again.
#[derive(Clone, Default, PartialEq)]
pub struct Secrets(Map<String, Value>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({:?})", self.names())
    }
}

/// Reading an object's fields by name; shared by [`Settings`] and [`Secrets`].
macro_rules! readers {
    ($name:ident) => {
        impl $name {
            /// Parses a stored (or opened) object; anything else reads as none.
            pub fn parse(stored: &str) -> $name {
                match serde_json::from_str(stored) {
                    Ok(Value::Object(map)) => $name(map),
                    _ => $name::default(),
                }
            }

            /// Wraps a checked object.
            pub fn from_map(map: Map<String, Value>) -> $name {
                $name(map)
            }

            /// The value of `key`, when set.
            pub fn value(&self, key: &str) -> Option<&Value> {
                self.0.get(key).filter(|v| !v.is_null())
            }

            /// The text of `key`, when set and not empty.
            pub fn text(&self, key: &str) -> Option<&str> {
                self.value(key).and_then(Value::as_str).filter(|s| !s.is_empty())
            }

            /// The whole number of `key`, when set.
            pub fn int(&self, key: &str) -> Option<i64> {
                self.value(key).and_then(Value::as_i64)
            }

            /// The texts of the list `key` (empty when unset).
            pub fn list(&self, key: &str) -> Vec<&str> {
                self.value(key)
                    .and_then(Value::as_array)
                    .map(|items| items.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default()
            }

            /// The `name: value` pairs of the object `key` (empty when unset).
            pub fn pairs(&self, key: &str) -> BTreeMap<String, String> {
                self.value(key)
                    .and_then(Value::as_object)
                    .map(|o| o.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
                    .unwrap_or_default()
            }

            /// The object as it is.
            pub fn as_map(&self) -> &Map<String, Value> {
                &self.0
            }
        }
    };
}

readers!(Settings);
readers!(Secrets);

impl Settings {
    /// The stored form.
    pub fn to_json(&self) -> String {
        Value::Object(self.0.clone()).to_string()
    }
}

impl Secrets {
    /// The stored form before sealing; `None` when there is nothing secret.
    pub fn to_json(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| Value::Object(self.0.clone()).to_string())
    }

    /// Names of the secrets that are set (for views: `["bot_token"]`, `["headers.Authorization"]`).
    pub fn names(&self) -> Vec<String> {
        self.0
            .iter()
            .flat_map(|(k, v)| match v {
                Value::Object(headers) => headers.keys().map(|h| format!("{k}.{h}")).collect::<Vec<_>>(),
                _ => vec![k.clone()],
            })
            .collect()
    }

    /// Whether `key` holds a secret.
    pub fn has(&self, key: &str) -> bool {
        match self.value(key) {
            Some(Value::Object(map)) => !map.is_empty(),
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
            None => false,
        }
    }
}

/// Checks a kind's settings and secrets as given (JSON objects, either absent) against its
/// spec (unknown and missing fields, types, ranges), then the kind's own rules. Returns them
/// parsed.
pub fn validate(
    kind: EndpointKind,
    url: &str,
    settings: Option<&Value>,
    secrets: Option<&Value>,
) -> Result<(Settings, Secrets), FieldError> {
    let settings = checked(kind, "settings", settings, false)?;
    let secrets = checked(kind, "secrets", secrets, true)?;
    let (settings, secrets) = (Settings(settings), Secrets(secrets));
    kind.kind().check(url, &settings, &secrets)?;
    Ok((settings, secrets))
}

/// One group (`settings` or `secrets`) checked against the kind's fields of that group.
fn checked(
    kind: EndpointKind,
    group: &str,
    given: Option<&Value>,
    secret: bool,
) -> Result<Map<String, Value>, FieldError> {
    let map = match given {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => return Err(bad(group, "must be a JSON object")),
    };
    let fields: Vec<&Field> = kind.spec().fields.iter().filter(|f| f.secret == secret).collect();
    for key in map.keys() {
        if !fields.iter().any(|f| f.key == key) {
            let takes: Vec<&str> = fields.iter().map(|f| f.key).collect();
            let takes = if takes.is_empty() { "none".to_owned() } else { takes.join(", ") };
            return Err(bad(
                format!("{group}.{key}"),
                format!("not one of the {group} of {kind} endpoints (they take: {takes})"),
            ));
        }
    }
    let mut out = Map::new();
    for field in fields {
        let name = format!("{group}.{}", field.key);
        match map.get(field.key).filter(|v| !v.is_null()) {
            None if field.required => return Err(bad(name, format!("required for {kind} endpoints"))),
            None => {}
            Some(value) => {
                let value = typed(&name, field, value)?;
                if field.required && value.as_str().is_some_and(|s| s.trim().is_empty()) {
                    return Err(bad(name, format!("required for {kind} endpoints")));
                }
                out.insert(field.key.to_owned(), value);
            }
        }
    }
    Ok(out)
}

/// `value` checked against the field's input: its JSON type, range or choices.
fn typed(name: &str, field: &Field, value: &Value) -> Result<Value, FieldError> {
    let text = || value.as_str().map(str::to_owned).ok_or_else(|| bad(name, "must be a string"));
    Ok(match field.input {
        Input::Text | Input::Password => Value::String(text()?),
        Input::Select(choices) => {
            let chosen = text()?;
            if !choices.iter().any(|(v, _)| *v == chosen) {
                let words: Vec<&str> = choices.iter().map(|(v, _)| *v).collect();
                return Err(bad(name, format!("one of: {}", words.join(", "))));
            }
            Value::String(chosen)
        }
        Input::Number { min, max } => match value.as_i64() {
            Some(n) if (min..=max).contains(&n) => value.clone(),
            // The hint says the range in the kind's own words.
            _ if !field.hint.is_empty() => return Err(bad(name, field.hint.trim_end_matches('.'))),
            _ => return Err(bad(name, format!("a whole number from {min} to {max}"))),
        },
        Input::List { max } => {
            let items = value.as_array().ok_or_else(|| bad(name, "must be a list of strings"))?;
            if items.len() > max {
                return Err(bad(name, format!("at most {max}")));
            }
            if items.iter().any(|v| !v.is_string()) {
                return Err(bad(name, "must be a list of strings"));
            }
            value.clone()
        }
        Input::Headers => {
            let object = value.as_object().ok_or_else(|| bad(name, "must be an object of header names and values"))?;
            for (header, v) in object {
                check_header(&format!("{name}.{header}"), header, v.as_str())?;
            }
            value.clone()
        }
        Input::NumberOrText => match value {
            Value::Number(n) if n.is_i64() => value.clone(),
            Value::String(_) => value.clone(),
            _ => return Err(bad(name, "a number or a name")),
        },
    })
}

/// A header an endpoint sends: a token for a name, no line breaks in the value, and none of
/// the headers driftwatch sets itself.
fn check_header(field: &str, name: &str, value: Option<&str>) -> Result<(), FieldError> {
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
        return Err(bad(field, "not a header name"));
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(bad(field, "set by driftwatch; it cannot be overridden"));
    }
    match value {
        None => Err(bad(field, "a header value must be a string")),
        Some(v) if v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) => {
            Err(bad(field, "a header value cannot hold line breaks"))
        }
        Some(_) => Ok(()),
    }
}

/// Headers an endpoint may not set.
const RESERVED_HEADERS: &[&str] = &["host", "content-length", "transfer-encoding", "connection", "content-type"];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secrets_name_what_is_set_without_values() {
        let secrets = Secrets::parse(r#"{"bot_token":"123:abc","headers":{"Authorization":"Bearer x"}}"#);
        assert_eq!(secrets.names(), vec!["bot_token", "headers.Authorization"]);
        assert_eq!(Secrets::parse(&secrets.to_json().expect("some")), secrets);
        assert_eq!(Secrets::default().to_json(), None);
        assert!(!format!("{secrets:?}").contains("abc"), "Debug never shows a value");
    }

    #[test]
    fn fields_are_checked_by_their_input() {
        let v = |kind, s: Value| validate(kind, "https://x.example", Some(&s), None).map(|_| ()).map_err(|e| e.field);
        assert_eq!(v(EndpointKind::Ntfy, json!({"topic": "t", "priority": 9})), Err("settings.priority".into()));
        assert_eq!(v(EndpointKind::Ntfy, json!({"topic": "t", "tags": [1]})), Err("settings.tags".into()));
        assert_eq!(v(EndpointKind::Http, json!({"method": "GET"})), Err("settings.method".into()));
        assert_eq!(v(EndpointKind::Http, json!({"headers": {"X-A": 1}})), Err("settings.headers.X-A".into()));
        assert_eq!(v(EndpointKind::Ntfy, json!({"topic": 5})), Err("settings.topic".into()));
    }
}
