//! Every notification kind, each in its own file behind one trait.
//!
//! A kind is one value implementing [`Kind`]: its [`Spec`] (label, what its URL means, its
//! default URL, its fields with label, input, hint, secret or not, required, range; its
//! Apprise schemes; HTTP or SMTP; signed or not), its message, the request that carries the
//! message, how a 429 body says when to retry, and how an Apprise URL describes it. The UI's
//! form, the API's kind list and descriptions and the OpenAPI document are made from the specs.
//!
//! A new kind is one file here, one line in [`kinds!`](crate::kinds), a stand-in in
//! `test-support` and a row in the kinds test.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use driftwatch_core::{FieldError, ParseEnumError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::apprise::{ImportError, Imported, Parts};
use crate::context::Context;
use crate::message::Templates;
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};

pub(crate) mod discord;
pub(crate) mod email;
mod gotify;
mod http;
mod matrix;
mod mattermost;
mod ntfy;
mod pushover;
mod slack;
mod teams;
mod telegram;
mod webhook;

pub use email::Security;
pub use slack::slack_message;

/// How a kind's messages travel; the delivery crate does the sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// An HTTP request built by [`Kind::request`].
    Http,
    /// A whole email message over SMTP to the endpoint's server.
    Smtp,
}

/// What a form field takes, which also decides its JSON type in the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Text, stored as a string.
    Text,
    /// A secret text: a password field, stored sealed.
    Password,
    /// A whole number within a range.
    Number {
        /// The least.
        min: i64,
        /// The most.
        max: i64,
    },
    /// A list of texts, typed separated by commas.
    List {
        /// Most entries.
        max: usize,
    },
    /// One of some choices: `(value, label)`, the first the default.
    Select(&'static [(&'static str, &'static str)]),
    /// HTTP headers, typed one per line as `Name: value`; stored as an object.
    Headers,
    /// A number, or a name (a Telegram chat: `-100…` or `@channel`).
    NumberOrText,
}

/// One setting or secret of a kind.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// Its key in `settings` or `secrets`.
    pub key: &'static str,
    /// The form's label.
    pub label: &'static str,
    /// What it takes.
    pub input: Input,
    /// The hint under it, in the form and in the API's description.
    pub hint: &'static str,
    /// A secret: stored sealed, never shown again.
    pub secret: bool,
    /// Required.
    pub required: bool,
}

impl Field {
    /// A setting that may be left out.
    pub const fn setting(key: &'static str, label: &'static str, input: Input, hint: &'static str) -> Field {
        Field { key, label, input, hint, secret: false, required: false }
    }

    /// A secret that may be left out.
    pub const fn secret(key: &'static str, label: &'static str, input: Input, hint: &'static str) -> Field {
        Field { key, label, input, hint, secret: true, required: false }
    }

    /// The same field, required.
    pub const fn required(self) -> Field {
        Field { required: true, ..self }
    }
}

/// What a kind is, as people and documents see it.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// What it is, for the kind picker: "ntfy: a push notification to a topic".
    pub label: &'static str,
    /// What its URL is, for the URL field and the API.
    pub url_hint: &'static str,
    /// The URL when none is given (a public service's API).
    pub default_url: Option<&'static str>,
    /// Its settings and secrets, in the form's order.
    pub fields: &'static [Field],
    /// How it travels.
    pub transport: Transport,
    /// Whether its requests carry the Standard Webhooks signature (and so it has a signing secret).
    pub signed: bool,
    /// Whether its URL is itself a credential (a chat service's webhook URL carries the key
    /// that lets anyone post): stored sealed, shown only masked ([`crate::masked_url`]).
    pub credential_url: bool,
    /// The Apprise URL schemes that describe it.
    pub apprise: &'static [&'static str],
}

impl Spec {
    /// Its name alone, the label before its colon: "ntfy", "Email over SMTP".
    pub fn name(&self) -> &'static str {
        self.label.split_once(':').map_or(self.label, |(name, _)| name).trim()
    }
}

/// Where a message goes: an endpoint's URL, settings and opened secrets.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The endpoint's URL (the webhook, the API server, `smtp://host:port`).
    pub url: &'a str,
    /// Its settings.
    pub settings: &'a Settings,
    /// Its opened secrets (empty when rendering: bodies never hold secrets).
    pub secrets: &'a Secrets,
}

/// What a message is made from.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// `end_...` (email's `Message-ID` is unique per endpoint).
    pub endpoint_id: &'a str,
    /// The endpoint's settings.
    pub settings: &'a Settings,
    /// The event's variables.
    pub context: &'a Context,
    /// The endpoint's templates.
    pub templates: Templates<'a>,
}

/// One notification kind. Each lives in its own file under `kinds/`.
pub trait Kind: Send + Sync + 'static {
    /// What it is.
    fn spec(&self) -> &'static Spec;

    /// Its own rules beyond the spec's types and ranges (an address that must parse, a topic's
    /// letters), checked at save.
    fn check(&self, _url: &str, _settings: &Settings, _secrets: &Secrets) -> Result<(), FieldError> {
        Ok(())
    }

    /// The body stored for one event: rendered once at enqueue and sent byte for byte.
    fn message(&self, message: Message<'_>) -> Result<Vec<u8>, String>;

    /// What the form's preview shows of a message: JSON indented, text as it is.
    fn preview(&self, message: Message<'_>) -> Result<String, String> {
        let bytes = self.message(message)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Ok(serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or(text))
    }

    /// The request that carries a stored `body`, built at send with the opened secrets.
    fn request<'a>(&self, to: Target<'_>, delivery_id: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String>;

    /// Seconds to wait that a 429's JSON body asks for, where the provider says so there.
    fn retry_after_in_body(&self, body: &Value) -> Option<f64> {
        body.get("retry_after")?.as_f64()
    }

    /// The endpoint an Apprise URL of one of [`Spec::apprise`]'s schemes describes.
    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        Err(ImportError(format!("`{}://` cannot be imported", parts.scheme)))
    }
}

/// Declares the kinds: the stored name and the value of each, in the order they are offered.
macro_rules! kinds {
    ($($(#[$meta:meta])* $variant:ident => $name:literal, $value:path;)+) => {
        /// How an endpoint receives events. Stored as its name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum EndpointKind {
            $($(#[$meta])* $variant),+
        }

        impl EndpointKind {
            /// Every kind, in the order they are offered.
            pub const ALL: &'static [EndpointKind] = &[$(EndpointKind::$variant),+];

            /// The stored and serialised name.
            pub const fn as_str(self) -> &'static str {
                match self { $(EndpointKind::$variant => $name),+ }
            }

            /// What this kind does.
            pub fn kind(self) -> &'static dyn Kind {
                match self { $(EndpointKind::$variant => &$value),+ }
            }
        }

        impl FromStr for EndpointKind {
            type Err = ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok(EndpointKind::$variant),)+
                    _ => Err(ParseEnumError::new("EndpointKind", s)),
                }
            }
        }
    };
}

kinds! {
    /// A Standard Webhooks signed POST of the event payload.
    Webhook => "webhook", webhook::Webhook;
    /// A Slack incoming webhook.
    Slack => "slack", slack::Slack;
    /// An email over SMTP.
    Email => "email", email::Email;
    /// A Discord webhook.
    Discord => "discord", discord::Discord;
    /// A Telegram bot message.
    Telegram => "telegram", telegram::Telegram;
    /// A Microsoft Teams Workflows webhook.
    Teams => "teams", teams::Teams;
    /// A Mattermost incoming webhook.
    Mattermost => "mattermost", mattermost::Mattermost;
    /// An ntfy topic.
    Ntfy => "ntfy", ntfy::Ntfy;
    /// A Pushover message.
    Pushover => "pushover", pushover::Pushover;
    /// A Gotify message.
    Gotify => "gotify", gotify::Gotify;
    /// A Matrix room message.
    Matrix => "matrix", matrix::Matrix;
    /// Any HTTP API with a body of the endpoint's own.
    Http => "http", http::Http;
}

impl EndpointKind {
    /// Its spec.
    pub fn spec(self) -> &'static Spec {
        self.kind().spec()
    }

    /// The kind an Apprise scheme names.
    pub fn of_apprise_scheme(scheme: &str) -> Option<EndpointKind> {
        EndpointKind::ALL.iter().copied().find(|k| k.spec().apprise.contains(&scheme))
    }

    /// The form field of `field`: `{kind}_{key}`, or `{kind}_secret_{key}` for a secret whose
    /// key also names a setting (`http_secret_headers`).
    pub fn form_name(self, field: &Field) -> String {
        let shadowed = field.secret && self.spec().fields.iter().any(|f| !f.secret && f.key == field.key);
        if shadowed { format!("{self}_secret_{}", field.key) } else { format!("{self}_{}", field.key) }
    }
}

impl fmt::Display for EndpointKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EndpointKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EndpointKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Cow::<str>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

// The OpenAPI schema: the names, and a description made from the specs.
impl utoipa::PartialSchema for EndpointKind {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        let described: Vec<String> = EndpointKind::ALL
            .iter()
            .map(|k| format!("- `{k}`: {}. URL: {}", k.spec().label, k.spec().url_hint))
            .collect();
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(EndpointKind::ALL.iter().map(|k| k.as_str())))
            .description(Some(format!("How an endpoint receives events:\n{}", described.join("\n"))))
            .into()
    }
}

impl utoipa::ToSchema for EndpointKind {}

/// The API schema of an endpoint's `settings` and `secrets`: a JSON object whose fields depend
/// on the kind, described from the specs.
#[derive(Debug, Clone, Copy)]
pub struct KindFields;

impl utoipa::PartialSchema for KindFields {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Object)
            .description(Some(fields_description()))
            .into()
    }
}

impl utoipa::ToSchema for KindFields {}

/// The documentation of every kind's settings and secrets, for the API's `Endpoint` schema.
pub fn fields_description() -> String {
    let mut out = String::from("Each kind's settings and secrets:\n");
    for kind in EndpointKind::ALL {
        let fields = kind.spec().fields;
        if fields.is_empty() {
            continue;
        }
        let listed: Vec<String> = fields
            .iter()
            .map(|f| {
                let group = if f.secret { "secrets" } else { "settings" };
                let required = if f.required { ", required" } else { "" };
                format!("`{group}.{}` ({}{required})", f.key, f.label)
            })
            .collect();
        out.push_str(&format!("- `{kind}`: {}\n", listed.join(", ")));
    }
    out
}

/// Wraps `url` with a query parameter.
pub(crate) fn with_query(url: &str, query: &str) -> String {
    if url.contains('?') { format!("{url}&{query}") } else { format!("{url}?{query}") }
}

/// A plain JSON POST of `body` to `url`.
pub(crate) fn json_post(url: String, body: &[u8]) -> Outgoing<'_> {
    Outgoing {
        method: "POST",
        url,
        headers: Vec::new(),
        content_type: "application/json".to_owned(),
        body: Cow::Borrowed(body),
        signed: false,
    }
}

/// The secret `key`, or an error naming what is missing.
pub(crate) fn need<'a>(secrets: &'a Secrets, key: &str, name: &str) -> Result<&'a str, String> {
    secrets.text(key).ok_or_else(|| format!("the endpoint has no {name}"))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_events;
