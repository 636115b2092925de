//! `ntfy`: a push notification to a topic on ntfy.sh or a server of one's own.

use driftwatch_core::FieldError;
use serde_json::json;

use super::{Field, Input, Kind, Message, Spec, Target, Transport, json_post};
use crate::apprise::{ImportError, Imported, Parts};
use crate::context::cut_chars;
use crate::message::{cut_bytes, default_text, parts};
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};

/// ntfy.
pub struct Ntfy;

static SPEC: Spec = Spec {
    label: "ntfy: a push notification to a topic",
    url_hint: "The ntfy server; leave empty for ntfy.sh.",
    default_url: Some("https://ntfy.sh"),
    fields: &[
        Field::setting("topic", "Topic", Input::Text, "Letters, digits, - and _.").required(),
        Field::setting(
            "priority",
            "Priority",
            Input::Number { min: 1, max: 5 },
            "1 (min) to 5 (max); empty for the default (3).",
        ),
        Field::setting(
            "tags",
            "Tags",
            Input::List { max: 10 },
            "Separated by commas; emoji short codes work (warning, tada).",
        ),
        Field::secret("token", "Access token", Input::Password, "For a protected topic; stored encrypted."),
    ],
    transport: Transport::Http,
    signed: false,
    apprise: &["ntfy", "ntfys"],
};

impl Kind for Ntfy {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn check(&self, _: &str, settings: &Settings, _: &Secrets) -> Result<(), FieldError> {
        let topic = settings.text("topic").unwrap_or_default();
        let valid = (1..=64).contains(&topic.len())
            && topic.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid {
            return Err(FieldError::new("settings.topic", "1 to 64 letters, digits, - or _"));
        }
        Ok(())
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let (parts, context, settings) = (parts(m.context, m.templates)?, m.context, m.settings);
        let message = parts.text.unwrap_or_else(|| default_text(context, 3500, 40));
        let mut body = json!({
            "topic": settings.text("topic").unwrap_or_default(),
            "title": cut_chars(&parts.title, 250),
            "message": cut_bytes(&message, 4096),
        });
        if !context.link.is_empty() {
            body["click"] = json!(context.link);
        }
        if let Some(priority) = settings.int("priority") {
            body["priority"] = json!(priority);
        }
        let tags = settings.list("tags");
        if !tags.is_empty() {
            body["tags"] = json!(tags);
        }
        Ok(body.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        let mut out = json_post(format!("{}/", to.url.trim_end_matches('/')), body);
        if let Some(token) = to.secrets.text("token") {
            out.headers.push(("Authorization".into(), format!("Bearer {token}")));
        }
        Ok(out)
    }

    fn from_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        crate::apprise::schemes::ntfy(parts)
    }
}
