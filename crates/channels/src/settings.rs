//! Each kind's settings (stored as a JSON object beside the endpoint's URL) and secrets (a
//! JSON object stored sealed), checked when an endpoint is created or changed.
//!
//! The endpoint's `url` is where its messages go: the webhook URL for `webhook`, `slack`,
//! `discord`, `teams` and `http`; the API server for `telegram`, `ntfy`, `pushover`, `gotify`
//! and `matrix` (the public one by default, any compatible server when set); the SMTP server
//! (`smtp://host:port`) for `email`.

use std::collections::BTreeMap;

use driftwatch_core::EndpointKind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A field at fault and why, named as the API names it (`settings.chat_id`, `secrets.bot_token`, `url`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// The field.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn bad(field: impl Into<String>, message: impl Into<String>) -> FieldError {
    FieldError { field: field.into(), message: message.into() }
}

/// How an email endpoint talks to its SMTP server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// Plain connection upgraded with STARTTLS, which is required (port 587).
    #[default]
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No TLS at all: only for a relay on the same machine or network (port 25).
    Plain,
}

/// Every kind's settings in one shape; [`validate`] says which fields a kind takes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// email: the sender address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// email: the recipients.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub to: Vec<String>,
    /// email: how to connect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<Security>,
    /// email: the SMTP user (its password is a secret).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// telegram: the chat (`-100…` or `@channel`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<Value>,
    /// ntfy: the topic.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// ntfy (1–5), pushover (-2–1), gotify (0–10): the message priority.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// ntfy: tags (emoji short codes work).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// pushover: one device instead of all the user's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// matrix: the room id (`!abc:example.org`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room_id: Option<String>,
    /// http: `POST` (default), `PUT` or `PATCH`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// http: extra headers (secret ones go in `secrets.headers`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// http: the body's `Content-Type` (default `application/json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

impl Settings {
    /// Parses stored settings (an empty or unreadable value reads as none).
    pub fn parse(stored: &str) -> Settings {
        serde_json::from_str(stored).unwrap_or_default()
    }

    /// The stored form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// Secrets in one shape; stored sealed, read at send, never shown again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Secrets {
    /// email: the SMTP password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// telegram: the bot token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bot_token: Option<String>,
    /// ntfy, pushover (application token), gotify (application token).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// pushover: the user or group key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_key: Option<String>,
    /// matrix: the access token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// http: headers whose values are secret (`Authorization`, say).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl Secrets {
    /// Parses opened secrets (none when empty).
    pub fn parse(opened: &str) -> Secrets {
        if opened.trim().is_empty() {
            return Secrets::default();
        }
        serde_json::from_str(opened).unwrap_or_default()
    }

    /// The stored form before sealing; `None` when there is nothing secret.
    pub fn to_json(&self) -> Option<String> {
        (*self != Secrets::default()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// Names of the secrets that are set (for views: `["bot_token"]`).
    pub fn names(&self) -> Vec<String> {
        let Ok(Value::Object(map)) = serde_json::to_value(self) else { return Vec::new() };
        map.into_iter()
            .flat_map(|(k, v)| match v {
                Value::Object(headers) => headers.keys().map(|h| format!("headers.{h}")).collect::<Vec<_>>(),
                _ => vec![k],
            })
            .collect()
    }
}

/// Which settings and secrets a kind takes, and which it requires.
struct Shape {
    settings: &'static [&'static str],
    required: &'static [&'static str],
    secrets: &'static [&'static str],
    required_secrets: &'static [&'static str],
    /// The URL when none is given.
    default_url: Option<&'static str>,
}

fn shape(kind: EndpointKind) -> Shape {
    let none: &'static [&'static str] = &[];
    let s = |settings, required, secrets, required_secrets, default_url| Shape {
        settings,
        required,
        secrets,
        required_secrets,
        default_url,
    };
    match kind {
        EndpointKind::Webhook | EndpointKind::Slack | EndpointKind::Discord | EndpointKind::Teams => {
            s(none, none, none, none, None)
        }
        EndpointKind::Email => s(&["from", "to", "security", "username"], &["from", "to"], &["password"], none, None),
        EndpointKind::Telegram => {
            s(&["chat_id"], &["chat_id"], &["bot_token"], &["bot_token"], Some("https://api.telegram.org"))
        }
        EndpointKind::Ntfy => s(&["topic", "priority", "tags"], &["topic"], &["token"], none, Some("https://ntfy.sh")),
        EndpointKind::Pushover => s(
            &["priority", "device"],
            none,
            &["token", "user_key"],
            &["token", "user_key"],
            Some("https://api.pushover.net"),
        ),
        EndpointKind::Gotify => s(&["priority"], none, &["token"], &["token"], None),
        EndpointKind::Matrix => s(&["room_id"], &["room_id"], &["access_token"], &["access_token"], None),
        EndpointKind::Http => s(&["method", "headers", "content_type"], none, &["headers"], none, None),
    }
}

/// The URL a kind uses when the request gives none (`https://api.telegram.org`, ...).
pub fn default_url(kind: EndpointKind) -> Option<&'static str> {
    shape(kind).default_url
}

/// Checks a kind's settings and secrets as given (JSON objects, either absent): unknown and
/// missing fields, types, ranges. Returns them parsed.
pub fn validate(
    kind: EndpointKind,
    url: &str,
    settings: Option<&Value>,
    secrets: Option<&Value>,
) -> Result<(Settings, Secrets), FieldError> {
    let shape = shape(kind);
    let empty = Map::new();
    let settings_map = object(settings, "settings")?.unwrap_or(&empty);
    let secrets_map = object(secrets, "secrets")?.unwrap_or(&empty);
    for key in settings_map.keys() {
        if !shape.settings.contains(&key.as_str()) {
            return Err(unknown("settings", key, kind, shape.settings));
        }
    }
    for key in secrets_map.keys() {
        if !shape.secrets.contains(&key.as_str()) {
            return Err(unknown("secrets", key, kind, shape.secrets));
        }
    }
    for key in shape.required {
        if settings_map.get(*key).is_none_or(Value::is_null) {
            return Err(bad(format!("settings.{key}"), format!("required for {kind} endpoints")));
        }
    }
    for key in shape.required_secrets {
        if secrets_map.get(*key).is_none_or(|v| v.as_str().is_none_or(|s| s.trim().is_empty())) {
            return Err(bad(format!("secrets.{key}"), format!("required for {kind} endpoints")));
        }
    }
    let parsed: Settings = serde_json::from_value(Value::Object(settings_map.clone()))
        .map_err(|e| bad("settings", format!("not valid settings: {e}")))?;
    let secret: Secrets = serde_json::from_value(Value::Object(secrets_map.clone()))
        .map_err(|e| bad("secrets", format!("not valid secrets: {e}")))?;
    check_values(kind, url, &parsed, &secret)?;
    Ok((parsed, secret))
}

fn object<'a>(value: Option<&'a Value>, field: &str) -> Result<Option<&'a Map<String, Value>>, FieldError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(bad(field, "must be a JSON object")),
    }
}

fn unknown(group: &str, key: &str, kind: EndpointKind, allowed: &[&str]) -> FieldError {
    let takes = if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") };
    bad(format!("{group}.{key}"), format!("not one of the {group} of {kind} endpoints (they take: {takes})"))
}

fn check_values(kind: EndpointKind, url: &str, settings: &Settings, secrets: &Secrets) -> Result<(), FieldError> {
    match kind {
        EndpointKind::Email => {
            let parsed = url::Url::parse(url).map_err(|e| bad("url", format!("not a URL: {e}")))?;
            if parsed.scheme() != "smtp" || parsed.host_str().is_none_or(str::is_empty) {
                return Err(bad("url", "an email endpoint's URL is its SMTP server: smtp://host:port"));
            }
            let from = settings.from.as_deref().unwrap_or_default();
            from.parse::<lettre::message::Mailbox>()
                .map_err(|e| bad("settings.from", format!("not an email address: {e}")))?;
            if settings.to.is_empty() || settings.to.len() > 50 {
                return Err(bad("settings.to", "one to 50 recipients"));
            }
            for (i, to) in settings.to.iter().enumerate() {
                to.parse::<lettre::message::Mailbox>()
                    .map_err(|e| bad(format!("settings.to[{i}]"), format!("not an email address: {e}")))?;
            }
            if secrets.password.is_some() && settings.username.is_none() {
                return Err(bad("settings.username", "a password needs a username"));
            }
        }
        EndpointKind::Telegram => match &settings.chat_id {
            Some(Value::Number(n)) if n.is_i64() => {}
            Some(Value::String(s)) if s.starts_with('@') && s.len() > 1 || s.parse::<i64>().is_ok() => {}
            _ => return Err(bad("settings.chat_id", "a chat id (a number such as -1001234567890) or @channelname")),
        },
        EndpointKind::Ntfy => {
            let topic = settings.topic.as_deref().unwrap_or_default();
            let valid = (1..=64).contains(&topic.len())
                && topic.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !valid {
                return Err(bad("settings.topic", "1 to 64 letters, digits, - or _"));
            }
            if settings.priority.is_some_and(|p| !(1..=5).contains(&p)) {
                return Err(bad("settings.priority", "1 (min) to 5 (max)"));
            }
            if settings.tags.len() > 10 {
                return Err(bad("settings.tags", "at most 10 tags"));
            }
        }
        EndpointKind::Pushover => {
            if settings.priority.is_some_and(|p| !(-2..=1).contains(&p)) {
                return Err(bad(
                    "settings.priority",
                    "-2 to 1 (emergency priority 2 needs acknowledgement, which driftwatch does not do)",
                ));
            }
            for (name, value) in [("token", &secrets.token), ("user_key", &secrets.user_key)] {
                let v = value.as_deref().unwrap_or_default();
                if v.len() != 30 || !v.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(bad(format!("secrets.{name}"), "30 letters and digits, as Pushover shows it"));
                }
            }
        }
        EndpointKind::Gotify => {
            if settings.priority.is_some_and(|p| !(0..=10).contains(&p)) {
                return Err(bad("settings.priority", "0 to 10"));
            }
        }
        EndpointKind::Matrix => {
            let room = settings.room_id.as_deref().unwrap_or_default();
            if !room.starts_with('!') || !room.contains(':') {
                return Err(bad("settings.room_id", "a room id such as !abcdef:example.org (not an alias)"));
            }
        }
        EndpointKind::Http => {
            if let Some(method) = &settings.method
                && !matches!(method.as_str(), "POST" | "PUT" | "PATCH")
            {
                return Err(bad("settings.method", "POST, PUT or PATCH"));
            }
            for (group, headers) in [("settings", &settings.headers), ("secrets", &secrets.headers)] {
                for (name, value) in headers {
                    let field = format!("{group}.headers.{name}");
                    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b)) {
                        return Err(bad(field, "not a header name"));
                    }
                    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                        return Err(bad(field, "set by driftwatch; it cannot be overridden"));
                    }
                    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                        return Err(bad(field, "a header value cannot hold line breaks"));
                    }
                }
            }
            if let Some(ct) = &settings.content_type
                && (ct.is_empty() || ct.bytes().any(|b| b.is_ascii_control()))
            {
                return Err(bad("settings.content_type", "not a media type"));
            }
        }
        EndpointKind::Webhook | EndpointKind::Slack | EndpointKind::Discord | EndpointKind::Teams => {}
    }
    Ok(())
}

/// Headers the http kind may not set.
const RESERVED_HEADERS: &[&str] = &["host", "content-length", "transfer-encoding", "connection", "content-type"];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_kind_names_the_field_at_fault() {
        let v =
            |kind, url, s: Value, x: Value| validate(kind, url, Some(&s), Some(&x)).map(|_| ()).map_err(|e| e.field);
        assert_eq!(
            v(EndpointKind::Telegram, "https://api.telegram.org", json!({}), json!({})),
            Err("settings.chat_id".into())
        );
        assert_eq!(
            v(EndpointKind::Telegram, "https://api.telegram.org", json!({"chat_id": -100}), json!({})),
            Err("secrets.bot_token".into())
        );
        assert!(v(EndpointKind::Telegram, "u", json!({"chat_id": "@news"}), json!({"bot_token": "1:x"})).is_ok());
        assert_eq!(v(EndpointKind::Ntfy, "u", json!({"topic": "a b"}), json!({})), Err("settings.topic".into()));
        assert_eq!(
            v(EndpointKind::Ntfy, "u", json!({"topic": "ab", "colour": 1}), json!({})),
            Err("settings.colour".into())
        );
        assert_eq!(v(EndpointKind::Discord, "u", json!({}), json!({"token": "x"})), Err("secrets.token".into()));
        assert_eq!(
            v(EndpointKind::Pushover, "u", json!({}), json!({"token": "short", "user_key": "u".repeat(30)})),
            Err("secrets.token".into())
        );
        assert_eq!(
            v(EndpointKind::Matrix, "u", json!({"room_id": "#alias:x"}), json!({"access_token": "t"})),
            Err("settings.room_id".into())
        );
        assert_eq!(
            v(
                EndpointKind::Email,
                "smtp://mail.example:587",
                json!({"from": "a@b.example", "to": ["nope"]}),
                json!({})
            ),
            Err("settings.to[0]".into())
        );
        assert_eq!(
            v(
                EndpointKind::Email,
                "https://mail.example",
                json!({"from": "a@b.example", "to": ["c@d.example"]}),
                json!({})
            ),
            Err("url".into())
        );
        assert_eq!(
            v(EndpointKind::Http, "u", json!({"headers": {"Host": "x"}}), json!({})),
            Err("settings.headers.Host".into())
        );
        assert_eq!(
            v(EndpointKind::Http, "u", json!({}), json!({"headers": {"Authorization": "a\r\nb"}})),
            Err("secrets.headers.Authorization".into())
        );
        assert_eq!(v(EndpointKind::Http, "u", json!([]), json!({})), Err("settings".into()));
    }

    #[test]
    fn secrets_name_what_is_set_without_values() {
        let secrets = Secrets {
            bot_token: Some("123:abc".into()),
            headers: BTreeMap::from([("Authorization".into(), "Bearer x".into())]),
            ..Secrets::default()
        };
        assert_eq!(secrets.names(), vec!["bot_token", "headers.Authorization"]);
        assert_eq!(Secrets::parse(&secrets.to_json().expect("some")), secrets);
        assert_eq!(Secrets::default().to_json(), None);
    }
}
