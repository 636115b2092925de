//! `http`: any HTTP API (n8n, Home Assistant, Zapier): a method, headers, and a body of the
//! endpoint's own template (the payload when it has none).

use std::borrow::Cow;

use driftwatch_core::FieldError;

use super::{Field, Input, Kind, Message, Spec, Target, Transport};
use crate::apprise::{ImportError, Imported, Parts};
use crate::message::parts;
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};

/// Any HTTP API.
pub struct Http;

static SPEC: Spec = Spec {
    label: "HTTP: a request with a body of your own (n8n, Home Assistant, Zapier)",
    url_hint: "Where to send: http:// or https://.",
    default_url: None,
    fields: &[
        Field::setting("method", "Method", Input::Select(&[("POST", "POST"), ("PUT", "PUT"), ("PATCH", "PATCH")]), ""),
        Field::setting("content_type", "Content type", Input::Text, "Empty for application/json."),
        Field::setting("headers", "Headers", Input::Headers, "One per line, Name: value."),
        Field::secret(
            "headers",
            "Secret headers",
            Input::Headers,
            "Like Authorization: Bearer …; stored encrypted, never shown again.",
        ),
    ],
    transport: Transport::Http,
    signed: false,
    apprise: &["json", "jsons"],
};

impl Kind for Http {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn check(&self, _: &str, settings: &Settings, _: &Secrets) -> Result<(), FieldError> {
        if let Some(ct) = settings.value("content_type").and_then(|v| v.as_str())
            && (ct.is_empty() || ct.bytes().any(|b| b.is_ascii_control()))
        {
            return Err(FieldError::new("settings.content_type", "not a media type"));
        }
        Ok(())
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        Ok(match parts(m.context, m.templates)?.text {
            Some(text) => text.into_bytes(),
            None => m.context.payload.to_string().into_bytes(),
        })
    }

    fn request<'a>(&self, to: Target<'_>, delivery_id: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        let mut headers: Vec<(String, String)> =
            to.settings.pairs("headers").into_iter().chain(to.secrets.pairs("headers")).collect();
        headers.push(("driftwatch-delivery-id".into(), delivery_id.to_owned()));
        Ok(Outgoing {
            method: match to.settings.text("method") {
                Some("PUT") => "PUT",
                Some("PATCH") => "PATCH",
                _ => "POST",
            },
            url: to.url.to_owned(),
            headers,
            content_type: to.settings.text("content_type").unwrap_or("application/json").to_owned(),
            body: Cow::Borrowed(body),
            signed: false,
        })
    }

    fn from_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        crate::apprise::schemes::http(parts)
    }
}
