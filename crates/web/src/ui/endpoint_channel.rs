//! The endpoint form's kind-specific part: each kind's settings and secrets as form fields,
//! its templates, its route, and the preview of its message.

use std::collections::BTreeMap;

use driftwatch_channels::{Channels, Context, Secrets, Settings, Templates};
use driftwatch_core::EndpointKind;
use driftwatch_store::Endpoint;
use driftwatch_validate::{ChannelInput, FieldError, RouteInput};
use serde_json::{Value, json};

use super::form::{self, pairs};

/// The kinds offered, with what each is for.
pub const KINDS: [(&str, &str); 11] = [
    ("webhook", "Webhook: a signed JSON POST (Standard Webhooks)"),
    ("slack", "Slack: a message to an incoming-webhook URL"),
    ("email", "Email over SMTP"),
    ("discord", "Discord: a message to a channel webhook"),
    ("telegram", "Telegram: a bot's message to a chat"),
    ("teams", "Microsoft Teams: a Workflows webhook"),
    ("ntfy", "ntfy: a push notification to a topic"),
    ("pushover", "Pushover"),
    ("gotify", "Gotify"),
    ("matrix", "Matrix: a message to a room"),
    ("http", "HTTP: a request with a body of your own (n8n, Home Assistant, Zapier)"),
];

/// What the URL field means for a kind.
pub fn url_hint(kind: &str) -> &'static str {
    match kind {
        "email" => "The SMTP server: smtp://host:port.",
        "telegram" => "The Bot API server; leave empty for api.telegram.org.",
        "ntfy" => "The ntfy server; leave empty for ntfy.sh.",
        "pushover" => "The API server; leave empty for api.pushover.net.",
        "gotify" => "Your Gotify server, like https://gotify.example.com.",
        "matrix" => "Your homeserver, like https://matrix.example.org.",
        "" => {
            "The webhook URL (https://…); for email the SMTP server (smtp://host:port); for Telegram, ntfy and Pushover leave empty for the public service."
        }
        _ => "Where to send: the webhook URL, http:// or https://.",
    }
}

/// The kind-specific fields as posted: every one as text, so what was typed comes back.
#[derive(Debug, Clone, Default)]
pub struct ChannelForm {
    /// `field name -> value` for the settings and secret fields below.
    pub values: BTreeMap<&'static str, String>,
    /// The title template.
    pub title_template: String,
    /// The body template.
    pub body_template: String,
    /// `all`, `tags` or `watches`.
    pub route: String,
    /// Comma-separated tags.
    pub route_tags: String,
    /// Chosen watch ids.
    pub route_watches: Vec<String>,
    /// Which secret fields are stored (shown as "set; leave empty to keep").
    pub secrets_set: Vec<&'static str>,
}

/// One kind-specific field: (form name, label, input type, hint, secret).
pub type FieldSpec = (&'static str, &'static str, &'static str, &'static str, bool);

/// Each kind's fields.
pub fn fields(kind: &str) -> &'static [FieldSpec] {
    match kind {
        "email" => &[
            ("email_from", "From", "text", "The sender, like driftwatch <alerts@example.com>.", false),
            ("email_to", "To", "text", "Recipients, separated by commas.", false),
            (
                "email_security",
                "Security",
                "select",
                "STARTTLS (587), TLS (465), or none for a local relay (25).",
                false,
            ),
            ("email_username", "SMTP user", "text", "Leave empty when the server needs no sign-in.", false),
            ("email_password", "SMTP password", "password", "Stored encrypted; never shown again.", true),
        ],
        "telegram" => &[
            ("telegram_chat_id", "Chat id", "text", "A number like -1001234567890, or @channelname.", false),
            (
                "telegram_bot_token",
                "Bot token",
                "password",
                "From @BotFather, like 123456:ABC…; stored encrypted.",
                true,
            ),
        ],
        "ntfy" => &[
            ("ntfy_topic", "Topic", "text", "Letters, digits, - and _.", false),
            ("ntfy_priority", "Priority", "number", "1 (min) to 5 (max); empty for the default (3).", false),
            ("ntfy_tags", "Tags", "text", "Separated by commas; emoji short codes work (warning, tada).", false),
            ("ntfy_token", "Access token", "password", "For a protected topic; stored encrypted.", true),
        ],
        "pushover" => &[
            (
                "pushover_user_key",
                "User key",
                "password",
                "Your user or group key (30 characters); stored encrypted.",
                true,
            ),
            (
                "pushover_token",
                "Application token",
                "password",
                "Your application's API token; stored encrypted.",
                true,
            ),
            ("pushover_priority", "Priority", "number", "-2 to 1; empty for normal.", false),
            ("pushover_device", "Device", "text", "One device only; empty for all.", false),
        ],
        "gotify" => &[
            ("gotify_token", "Application token", "password", "Stored encrypted.", true),
            ("gotify_priority", "Priority", "number", "0 to 10; empty for 5.", false),
        ],
        "matrix" => &[
            ("matrix_room_id", "Room id", "text", "Like !abcdef:example.org (Room settings › Advanced).", false),
            (
                "matrix_access_token",
                "Access token",
                "password",
                "The bot account's access token; stored encrypted.",
                true,
            ),
        ],
        "http" => &[
            ("http_method", "Method", "select", "", false),
            ("http_content_type", "Content type", "text", "Empty for application/json.", false),
            ("http_headers", "Headers", "textarea", "One per line, Name: value.", false),
            (
                "http_secret_headers",
                "Secret headers",
                "textarea",
                "Like Authorization: Bearer …; stored encrypted, never shown again.",
                true,
            ),
        ],
        _ => &[],
    }
}

/// Every kind-specific field name.
fn all_fields() -> impl Iterator<Item = &'static FieldSpec> {
    KINDS.iter().flat_map(|(kind, _)| fields(kind).iter())
}

impl ChannelForm {
    /// Reads the posted pairs.
    pub fn from_pairs(pairs: &[(String, String)]) -> ChannelForm {
        let get = |name: &str| form::value(pairs, name);
        ChannelForm {
            values: all_fields().map(|(name, ..)| (*name, get(name))).collect(),
            title_template: get("title_template"),
            body_template: get("body_template"),
            route: get("route"),
            route_tags: get("route_tags"),
            route_watches: pairs.iter().filter(|(k, _)| k == "route_watches").map(|(_, v)| v.clone()).collect(),
            secrets_set: Vec::new(),
        }
    }

    /// The form of a stored endpoint (secret fields empty; which are set is noted).
    pub fn of(e: &Endpoint, secrets: Option<&str>) -> ChannelForm {
        let s = Settings::parse(&e.settings);
        let secrets = Secrets::parse(secrets.unwrap_or_default());
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        let number = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
        let chat_id = match &s.chat_id {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let header_lines =
            |h: &BTreeMap<String, String>| h.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join("\n");
        let mut values: BTreeMap<&'static str, String> =
            all_fields().map(|(name, ..)| (*name, String::new())).collect();
        for (name, value) in [
            ("email_from", text(&s.from)),
            ("email_to", s.to.join(", ")),
            ("email_security", s.security.map(|s| format!("{s:?}").to_lowercase()).unwrap_or_default()),
            ("email_username", text(&s.username)),
            ("telegram_chat_id", chat_id),
            ("ntfy_topic", text(&s.topic)),
            ("ntfy_priority", number(s.priority)),
            ("ntfy_tags", s.tags.join(", ")),
            ("pushover_priority", number(s.priority)),
            ("pushover_device", text(&s.device)),
            ("gotify_priority", number(s.priority)),
            ("matrix_room_id", text(&s.room_id)),
            ("http_method", text(&s.method)),
            ("http_content_type", text(&s.content_type)),
            ("http_headers", header_lines(&s.headers)),
        ] {
            values.insert(name, value);
        }
        let set: Vec<&'static str> = [
            ("email_password", secrets.password.is_some()),
            ("telegram_bot_token", secrets.bot_token.is_some()),
            ("ntfy_token", secrets.token.is_some() && e.kind == "ntfy"),
            ("pushover_token", secrets.token.is_some() && e.kind == "pushover"),
            ("pushover_user_key", secrets.user_key.is_some()),
            ("gotify_token", secrets.token.is_some() && e.kind == "gotify"),
            ("matrix_access_token", secrets.access_token.is_some()),
            ("http_secret_headers", !secrets.headers.is_empty()),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect();
        let split = |v: &Option<String>| -> Vec<String> {
            v.as_deref().unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
        };
        ChannelForm {
            values,
            title_template: text(&e.title_template),
            body_template: text(&e.body_template),
            route: match (&e.route_tags, &e.route_watches) {
                (None, None) => "all",
                (Some(_), _) => "tags",
                (None, Some(_)) => "watches",
            }
            .to_owned(),
            route_tags: split(&e.route_tags).join(", "),
            route_watches: split(&e.route_watches),
            secrets_set: set,
        }
    }

    fn get(&self, name: &str) -> &str {
        self.values.get(name).map_or("", |v| v.trim())
    }

    /// The settings and secrets of `kind` as the API takes them. `stored` is the endpoint's
    /// opened secrets when editing: a secret field left empty keeps its stored value, and
    /// `None` comes back for secrets when nothing secret was typed.
    pub fn channel(&self, kind: &str, stored: Option<&str>, errors: &mut Vec<FieldError>) -> ChannelInput {
        let mut settings = serde_json::Map::new();
        let mut secrets = serde_json::Map::new();
        let mut typed_secret = false;
        let put = |map: &mut serde_json::Map<String, Value>, key: &str, value: Value| {
            map.insert(key.to_owned(), value);
        };
        let opt = |name: &str| Some(self.get(name)).filter(|v| !v.is_empty());
        let int = |name: &str, errors: &mut Vec<FieldError>| -> Option<i64> {
            form::number::<i64>(name, self.get(name), errors)
        };
        for (name, .., secret) in fields(kind) {
            if *secret && !self.get(name).is_empty() {
                typed_secret = true;
            }
        }
        match kind {
            "email" => {
                if let Some(v) = opt("email_from") {
                    put(&mut settings, "from", json!(v));
                }
                let to: Vec<&str> =
                    self.get("email_to").split([',', ';', '\n']).map(str::trim).filter(|t| !t.is_empty()).collect();
                if !to.is_empty() {
                    put(&mut settings, "to", json!(to));
                }
                put(&mut settings, "security", json!(opt("email_security").unwrap_or("starttls")));
                if let Some(v) = opt("email_username") {
                    put(&mut settings, "username", json!(v));
                }
                if let Some(v) = opt("email_password") {
                    put(&mut secrets, "password", json!(v));
                }
            }
            "telegram" => {
                if let Some(v) = opt("telegram_chat_id") {
                    let id = v.parse::<i64>().map_or_else(|_| json!(v), |n| json!(n));
                    put(&mut settings, "chat_id", id);
                }
                if let Some(v) = opt("telegram_bot_token") {
                    put(&mut secrets, "bot_token", json!(v));
                }
            }
            "ntfy" => {
                if let Some(v) = opt("ntfy_topic") {
                    put(&mut settings, "topic", json!(v));
                }
                if let Some(p) = int("ntfy_priority", errors) {
                    put(&mut settings, "priority", json!(p));
                }
                let tags: Vec<&str> =
                    self.get("ntfy_tags").split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
                if !tags.is_empty() {
                    put(&mut settings, "tags", json!(tags));
                }
                if let Some(v) = opt("ntfy_token") {
                    put(&mut secrets, "token", json!(v));
                }
            }
            "pushover" => {
                if let Some(p) = int("pushover_priority", errors) {
                    put(&mut settings, "priority", json!(p));
                }
                if let Some(v) = opt("pushover_device") {
                    put(&mut settings, "device", json!(v));
                }
                if let Some(v) = opt("pushover_token") {
                    put(&mut secrets, "token", json!(v));
                }
                if let Some(v) = opt("pushover_user_key") {
                    put(&mut secrets, "user_key", json!(v));
                }
            }
            "gotify" => {
                if let Some(p) = int("gotify_priority", errors) {
                    put(&mut settings, "priority", json!(p));
                }
                if let Some(v) = opt("gotify_token") {
                    put(&mut secrets, "token", json!(v));
                }
            }
            "matrix" => {
                if let Some(v) = opt("matrix_room_id") {
                    put(&mut settings, "room_id", json!(v));
                }
                if let Some(v) = opt("matrix_access_token") {
                    put(&mut secrets, "access_token", json!(v));
                }
            }
            "http" => {
                if let Some(v) = opt("http_method") {
                    put(&mut settings, "method", json!(v));
                }
                if let Some(v) = opt("http_content_type") {
                    put(&mut settings, "content_type", json!(v));
                }
                let headers = pairs("http_headers", self.get("http_headers"), ':', errors);
                if !headers.is_empty() {
                    put(&mut settings, "headers", json!(headers));
                }
                let secret_headers = pairs("http_secret_headers", self.get("http_secret_headers"), ':', errors);
                if !secret_headers.is_empty() {
                    put(&mut secrets, "headers", json!(secret_headers));
                }
            }
            _ => {}
        }
        // Editing: what was not typed again keeps its stored value.
        let secrets = match stored.and_then(|s| serde_json::from_str::<Value>(s).ok()) {
            Some(Value::Object(mut kept)) if typed_secret => {
                kept.extend(secrets);
                Some(Value::Object(kept))
            }
            Some(_) if !typed_secret => None,
            _ => (!secrets.is_empty()).then_some(Value::Object(secrets)),
        };
        ChannelInput {
            settings: Some(Value::Object(settings)),
            secrets,
            title_template: Some(self.title_template.clone()),
            body_template: Some(self.body_template.clone()),
        }
    }

    /// The route as the API takes it: `None` for every watch.
    pub fn route(&self) -> Option<RouteInput> {
        match self.route.as_str() {
            "tags" => Some(RouteInput {
                tags: Some(
                    self.route_tags.split([',', ' ']).map(str::to_owned).filter(|t| !t.trim().is_empty()).collect(),
                ),
                watches: None,
            }),
            "watches" => Some(RouteInput { tags: None, watches: Some(self.route_watches.clone()) }),
            _ => None,
        }
    }
}

/// The form field that shows an error about validation field `field` of a `kind` endpoint.
pub fn form_field(kind: &str, field: &str) -> String {
    let base = field.split('[').next().unwrap_or(field);
    let (group, name) = match base.split_once('.') {
        Some((group, rest)) => (group, rest.split('.').next().unwrap_or(rest)),
        None => ("", base),
    };
    match (group, name) {
        ("route", "tags") => "route_tags".into(),
        ("route", _) => "route_watches".into(),
        ("settings", "headers") => "http_headers".into(),
        ("secrets", "headers") => "http_secret_headers".into(),
        ("settings" | "secrets", "") | ("", "settings" | "secrets") => format!("{kind}_fields"),
        ("settings" | "secrets", name) => {
            let candidate = format!("{kind}_{name}");
            if fields(kind).iter().any(|(n, ..)| *n == candidate) { candidate } else { format!("{kind}_fields") }
        }
        _ => base.to_owned(),
    }
}

/// What a preview shows: the title (or subject) and the body as the receiver gets it (an
/// email's text part; a JSON body indented).
#[derive(Debug, Clone, Default)]
pub struct Preview {
    /// Whether it is the account's latest real event (or the sample).
    pub real_event: bool,
    /// The body as sent.
    pub body: String,
    /// Why it cannot be rendered (the delivery would be dead-lettered with this).
    pub error: Option<String>,
}

/// Renders the message an endpoint of `kind` would send for `context`.
pub fn preview(
    channels: &Channels,
    kind: EndpointKind,
    input: &ChannelInput,
    context: &Context,
    real: bool,
) -> Preview {
    let settings: Settings = input.settings.clone().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default();
    let templates = Templates {
        title: input.title_template.as_deref().filter(|t| !t.trim().is_empty()),
        body: input.body_template.as_deref().filter(|t| !t.trim().is_empty()),
    };
    let body = match kind {
        EndpointKind::Email => driftwatch_channels::email::preview(context, templates),
        kind => channels.render_body(kind, "end_preview", &settings, context, templates).map(|bytes| {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or(text)
        }),
    };
    match body {
        Ok(body) => Preview { real_event: real, body, error: None },
        Err(e) => Preview { real_event: real, body: String::new(), error: Some(e) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_land_beside_their_fields() {
        assert_eq!(form_field("telegram", "settings.chat_id"), "telegram_chat_id");
        assert_eq!(form_field("telegram", "secrets.bot_token"), "telegram_bot_token");
        assert_eq!(form_field("email", "settings.to[1]"), "email_to");
        assert_eq!(form_field("http", "secrets.headers.Authorization"), "http_secret_headers");
        assert_eq!(form_field("ntfy", "settings.colour"), "ntfy_fields");
        assert_eq!(form_field("http", "route.watches[0]"), "route_watches");
        assert_eq!(form_field("http", "body_template"), "body_template");
    }

    #[test]
    fn empty_secret_fields_keep_what_is_stored() {
        let mut form = ChannelForm::default();
        form.values.insert("pushover_token", "t".repeat(30));
        let stored = r#"{"token":"old","user_key":"kept"}"#;
        let input = form.channel("pushover", Some(stored), &mut Vec::new());
        assert_eq!(input.secrets, Some(json!({"token": "t".repeat(30), "user_key": "kept"})));
        let untouched = ChannelForm::default().channel("pushover", Some(stored), &mut Vec::new());
        assert_eq!(untouched.secrets, None, "nothing typed: the stored secrets stay as they are");
    }
}
