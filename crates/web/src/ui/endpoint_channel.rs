//! The endpoint form's kind-specific part: each kind's settings and secrets as form fields,
//! its templates, its route, and the preview of its message.

use std::collections::BTreeMap;

use driftwatch_channels::kinds::{Field, Input};
use driftwatch_channels::{Context, EndpointKind, Secrets, Settings, Templates};
use driftwatch_store::Endpoint;
use driftwatch_validate::{ChannelInput, FieldError, RouteInput};
use serde_json::{Value, json};

use super::error::UiError;
use super::form::{self, pairs};
use super::session::Viewer;
use crate::AppState;
use driftwatch_core::EventType;

/// The kinds offered, with what each is for: every kind's spec, in order.
pub fn kinds() -> Vec<(&'static str, &'static str)> {
    EndpointKind::ALL.iter().map(|k| (k.as_str(), k.spec().label)).collect()
}

/// What the URL field means for a kind (`None`: the kind is still to be chosen).
pub fn url_hint(kind: Option<EndpointKind>) -> &'static str {
    match kind {
        Some(kind) => kind.spec().url_hint,
        None => {
            "The webhook URL (https://…); for email the SMTP server (smtp://host:port); for Telegram, ntfy and Pushover leave empty for the public service."
        }
    }
}

/// The kind-specific fields as posted: every one as text, so what was typed comes back.
#[derive(Debug, Clone, Default)]
pub struct ChannelForm {
    /// `form field name -> value` for every kind's settings and secret fields.
    pub values: BTreeMap<String, String>,
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
    pub secrets_set: Vec<String>,
}

/// One field as the form shows it, from its kind's spec.
#[derive(Debug, Clone)]
pub struct FormField {
    /// The form name: `{kind}_{key}`.
    pub name: String,
    /// The label.
    pub label: &'static str,
    /// `text`, `password`, `number`, `select` or `textarea`.
    pub input: &'static str,
    /// For a select: `(value, label)`.
    pub choices: &'static [(&'static str, &'static str)],
    /// The hint.
    pub hint: &'static str,
    /// A secret.
    pub secret: bool,
}

/// Each kind's fields, as the form shows them.
pub fn fields(kind: EndpointKind) -> Vec<FormField> {
    kind.spec()
        .fields
        .iter()
        .map(|f| FormField {
            name: kind.form_name(f),
            label: f.label,
            input: match f.input {
                Input::Password => "password",
                Input::Number { .. } => "number",
                Input::Select(_) => "select",
                Input::Headers => "textarea",
                Input::Text | Input::List { .. } | Input::NumberOrText => "text",
            },
            choices: match f.input {
                Input::Select(choices) => choices,
                _ => &[],
            },
            hint: f.hint,
            secret: f.secret,
        })
        .collect()
}

/// Every kind's fields with their form names.
fn all_fields() -> impl Iterator<Item = (EndpointKind, &'static Field, String)> {
    EndpointKind::ALL.iter().flat_map(|k| k.spec().fields.iter().map(move |f| (*k, f, k.form_name(f))))
}

/// A stored value as the form shows it: text as it is, a list joined by commas, headers a line each.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(shown).collect::<Vec<_>>().join(", "),
        Value::Object(map) => map.iter().map(|(k, v)| format!("{k}: {}", shown(v))).collect::<Vec<_>>().join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl ChannelForm {
    /// Reads the posted pairs.
    pub fn from_pairs(pairs: &[(String, String)]) -> ChannelForm {
        let get = |name: &str| form::value(pairs, name);
        ChannelForm {
            values: all_fields().map(|(.., name)| (name.clone(), get(&name))).collect(),
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
        let settings = Settings::parse(&e.settings);
        let secrets = Secrets::parse(secrets.unwrap_or_default());
        let kind = e.kind.parse::<EndpointKind>().ok();
        let mut values = BTreeMap::new();
        let mut secrets_set = Vec::new();
        for (of, field, name) in all_fields() {
            let mine = Some(of) == kind;
            let value = if mine && !field.secret { settings.value(field.key).map(shown) } else { None };
            if mine && field.secret && secrets.has(field.key) {
                secrets_set.push(name.clone());
            }
            values.insert(name, value.unwrap_or_default());
        }
        let split = |v: &Option<String>| -> Vec<String> {
            v.as_deref().unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
        };
        ChannelForm {
            values,
            title_template: e.title_template.clone().unwrap_or_default(),
            body_template: e.body_template.clone().unwrap_or_default(),
            route: match (&e.route_tags, &e.route_watches) {
                (None, None) => "all",
                (Some(_), _) => "tags",
                (None, Some(_)) => "watches",
            }
            .to_owned(),
            route_tags: split(&e.route_tags).join(", "),
            route_watches: split(&e.route_watches),
            secrets_set,
        }
    }

    fn get(&self, name: &str) -> &str {
        self.values.get(name).map_or("", |v| v.trim())
    }

    /// The settings and secrets of `kind` as the API takes them, read field by field as the
    /// kind's spec says. `stored` is the endpoint's opened secrets when editing: a secret field
    /// left empty keeps its stored value, and `None` comes back for secrets when nothing secret
    /// was typed.
    pub fn channel(&self, kind: EndpointKind, stored: Option<&str>, errors: &mut Vec<FieldError>) -> ChannelInput {
        let mut settings = serde_json::Map::new();
        let mut secrets = serde_json::Map::new();
        let mut typed_secret = false;
        for field in kind.spec().fields {
            let name = kind.form_name(field);
            let text = self.get(&name);
            if text.is_empty() {
                continue;
            }
            typed_secret |= field.secret;
            let value = match field.input {
                Input::Text | Input::Password | Input::Select(_) => Some(json!(text)),
                Input::Number { .. } => form::number::<i64>(&name, text, errors).map(|n| json!(n)),
                Input::NumberOrText => Some(text.parse::<i64>().map_or_else(|_| json!(text), |n| json!(n))),
                Input::List { .. } => {
                    let items: Vec<&str> =
                        text.split([',', ';', '\n']).map(str::trim).filter(|t| !t.is_empty()).collect();
                    (!items.is_empty()).then(|| json!(items))
                }
                Input::Headers => {
                    let headers = pairs(&name, text, ':', errors);
                    (!headers.is_empty()).then(|| json!(headers))
                }
            };
            if let Some(value) = value {
                let group = if field.secret { &mut secrets } else { &mut settings };
                group.insert(field.key.to_owned(), value);
            }
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
pub fn form_field(kind: EndpointKind, field: &str) -> String {
    let base = field.split('[').next().unwrap_or(field);
    let (group, name) = match base.split_once('.') {
        Some((group, rest)) => (group, rest.split('.').next().unwrap_or(rest)),
        None => ("", base),
    };
    match (group, name) {
        ("route", "tags") => "route_tags".into(),
        ("route", _) => "route_watches".into(),
        ("settings" | "secrets", "") | ("", "settings" | "secrets") => format!("{kind}_fields"),
        ("settings" | "secrets", name) => kind
            .spec()
            .fields
            .iter()
            .find(|f| f.key == name && f.secret == (group == "secrets"))
            .map_or_else(|| format!("{kind}_fields"), |f| kind.form_name(f)),
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
pub fn preview(kind: EndpointKind, input: &ChannelInput, context: &Context, real: bool) -> Preview {
    let settings = match &input.settings {
        Some(Value::Object(map)) => Settings::from_map(map.clone()),
        _ => Settings::default(),
    };
    let templates = Templates {
        title: input.title_template.as_deref().filter(|t| !t.trim().is_empty()),
        body: input.body_template.as_deref().filter(|t| !t.trim().is_empty()),
    };
    let message =
        driftwatch_channels::kinds::Message { endpoint_id: "end_preview", settings: &settings, context, templates };
    match kind.kind().preview(message) {
        Ok(body) => Preview { real_event: real, body, error: None },
        Err(e) => Preview { real_event: real, body: String::new(), error: Some(e) },
    }
}

/// The message the form's endpoint would send for the account's latest change (or a sample).
pub(super) async fn preview_of(
    state: &AppState,
    viewer: &Viewer,
    kind: EndpointKind,
    input: &ChannelInput,
) -> Result<Preview, UiError> {
    let account = viewer.account_id().to_owned();
    let latest = state
        .store
        .read(move |c| {
            let page = driftwatch_store::Page { after: None, limit: 1 };
            let events =
                driftwatch_store::events::list_events(c, &account, None, Some(EventType::ChangeDetected), &page)?;
            let Some(event) = events.into_iter().next() else { return Ok(None) };
            let tags = match &event.watch_id {
                Some(w) => driftwatch_store::watches::get_watch(c, &account, w)?.map(|w| w.tags).unwrap_or_default(),
                None => String::new(),
            };
            Ok(Some((event, tags)))
        })
        .await?;
    let channels = driftwatch_channels::Channels::new(state.ui.public_url.clone());
    Ok(match latest {
        Some((event, tags)) => {
            let event = driftwatch_core::render::EventRef {
                id: &event.id,
                event_type: &event.event_type,
                payload: &event.payload,
            };
            preview(kind, input, &channels.context(event, &tags), true)
        }
        None => preview(kind, input, &channels.sample(), false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_land_beside_their_fields() {
        use EndpointKind::{Email, Http, Ntfy, Telegram};
        assert_eq!(form_field(Telegram, "settings.chat_id"), "telegram_chat_id");
        assert_eq!(form_field(Telegram, "secrets.bot_token"), "telegram_bot_token");
        assert_eq!(form_field(Email, "settings.to[1]"), "email_to");
        assert_eq!(form_field(Http, "settings.headers.X-A"), "http_headers");
        assert_eq!(form_field(Http, "secrets.headers.Authorization"), "http_secret_headers");
        assert_eq!(form_field(Ntfy, "settings.colour"), "ntfy_fields");
        assert_eq!(form_field(Http, "route.watches[0]"), "route_watches");
        assert_eq!(form_field(Http, "body_template"), "body_template");
    }

    #[test]
    fn empty_secret_fields_keep_what_is_stored() {
        let mut form = ChannelForm::default();
        form.values.insert("pushover_token".to_owned(), "t".repeat(30));
        let stored = r#"{"token":"old","user_key":"kept"}"#;
        let input = form.channel(EndpointKind::Pushover, Some(stored), &mut Vec::new());
        assert_eq!(input.secrets, Some(json!({"token": "t".repeat(30), "user_key": "kept"})));
        let untouched = ChannelForm::default().channel(EndpointKind::Pushover, Some(stored), &mut Vec::new());
        assert_eq!(untouched.secrets, None, "nothing typed: the stored secrets stay as they are");
    }
}
