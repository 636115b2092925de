//! `http`: any HTTP API (n8n, Home Assistant, Zapier): a method, headers, and a body of the
//! endpoint's own template (the payload when it has none).

use std::borrow::Cow;

use driftwatch_core::FieldError;

use super::{EndpointKind, Field, Input, Kind, Message, Spec, Target, Transport};
use crate::apprise::{ImportError, Imported, Parts, fail};
use crate::message::parts;
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};
use base64::Engine as _;
use serde_json::{Map, Value, json};

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
    credential_url: false,
    // changedetection.io's own `post://`/`put://` (and `s` for https) send the message to a URL.
    apprise: &["json", "jsons", "post", "posts", "put", "puts"],
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

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

/// Whether a header's value is likely secret, so kept sealed.
fn secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["authorization", "cookie"].contains(&name.as_str())
        || ["auth", "token", "key", "secret", "pass", "session", "signature"].iter().any(|s| name.contains(s))
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    let mut segments = p.path.clone();
    if p.trailing_slash && !segments.is_empty() {
        segments.push(String::new());
    }
    let mut url = p.http_url(p.scheme.ends_with('s'), &segments)?;
    let mut settings = Map::new();
    let mut headers = Map::new();
    let mut secret_headers = Map::new();
    for (key, value) in &p.query {
        if let Some(name) = key.strip_prefix('+') {
            // `+Header=value`: a header.
            if name.eq_ignore_ascii_case("content-type") {
                settings.insert("content_type".into(), json!(value));
            } else if secret_header(name) {
                secret_headers.insert(name.to_owned(), json!(value));
            } else {
                headers.insert(name.to_owned(), json!(value));
            }
        } else if let Some(name) = key.strip_prefix('-') {
            // `-param=value`: a query parameter of the request.
            url.query_pairs_mut().append_pair(name, value);
        }
        // `:key=value` reshapes Apprise's own payload: driftwatch sends its body template.
    }
    let method =
        p.query("method").map(str::to_ascii_uppercase).or_else(|| scheme.starts_with("put").then(|| "PUT".into()));
    match method.as_deref() {
        None | Some("POST") => {}
        Some(method @ ("PUT" | "PATCH")) => {
            settings.insert("method".into(), json!(method));
        }
        Some(_) => return fail(scheme, "method= is not POST, PUT or PATCH, the methods driftwatch sends with"),
    }
    if !p.user.is_empty() {
        // Basic authentication wins over an Authorization header, as in Apprise.
        let basic = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", p.user, p.password));
        secret_headers.retain(|name, _| !name.eq_ignore_ascii_case("authorization"));
        secret_headers.insert("Authorization".into(), json!(format!("Basic {basic}")));
    }
    if !headers.is_empty() {
        settings.insert("headers".into(), Value::Object(headers));
    }
    let mut secrets = Map::new();
    if !secret_headers.is_empty() {
        secrets.insert("headers".into(), Value::Object(secret_headers));
    }
    Ok(Imported {
        kind: EndpointKind::Http,
        url: url.into(),
        settings: Value::Object(settings),
        secrets: Value::Object(secrets),
    })
}
