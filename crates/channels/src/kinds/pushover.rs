//! `pushover`: a Pushover message; the credentials are merged into the stored body at send.

use std::borrow::Cow;

use driftwatch_core::FieldError;
use serde_json::{Map, Value, json};

use super::{EndpointKind, Field, Input, Kind, Message, Spec, Target, Transport, json_post, need};
use crate::apprise::{ImportError, Imported, Parts, fail, priority};
use crate::context::cut_chars;
use crate::message::{default_text, parts};
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};

/// Pushover.
pub struct Pushover;

static SPEC: Spec = Spec {
    label: "Pushover",
    url_hint: "The API server; leave empty for api.pushover.net.",
    default_url: Some("https://api.pushover.net"),
    fields: &[
        Field::secret(
            "user_key",
            "User key",
            Input::Password,
            "Your user or group key (30 characters); stored encrypted.",
        )
        .required(),
        Field::secret("token", "Application token", Input::Password, "Your application's API token; stored encrypted.")
            .required(),
        Field::setting(
            "priority",
            "Priority",
            Input::Number { min: -2, max: 1 },
            "-2 to 1; empty for normal (emergency priority 2 needs acknowledgement, which driftwatch does not do).",
        ),
        Field::setting("device", "Device", Input::Text, "One device only; empty for all."),
    ],
    transport: Transport::Http,
    signed: false,
    credential_url: false,
    apprise: &["pover"],
};

impl Kind for Pushover {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn check(&self, _: &str, _: &Settings, secrets: &Secrets) -> Result<(), FieldError> {
        for name in ["token", "user_key"] {
            let v = secrets.text(name).unwrap_or_default();
            if v.len() != 30 || !v.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Err(FieldError::new(format!("secrets.{name}"), "30 letters and digits, as Pushover shows it"));
            }
        }
        Ok(())
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let (parts, context, settings) = (parts(m.context, m.templates)?, m.context, m.settings);
        let message = parts.text.unwrap_or_else(|| default_text(context, 1024, 15));
        let mut body = json!({"title": cut_chars(&parts.title, 250), "message": cut_chars(&message, 1024)});
        if context.link.starts_with("http") && context.link.chars().count() <= 512 {
            body["url"] = json!(context.link);
            let words = if context.event.event_type == "digest" { "Open the changes" } else { "Open the change" };
            body["url_title"] = json!(words);
        }
        if let Some(priority) = settings.int("priority") {
            body["priority"] = json!(priority);
        }
        if let Some(device) = settings.text("device") {
            body["device"] = json!(device);
        }
        Ok(body.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        let token = need(to.secrets, "token", "application token")?;
        let user = need(to.secrets, "user_key", "user key")?;
        let mut value: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("the stored body is not JSON: {e}"))?;
        value["token"] = token.into();
        value["user"] = user.into();
        let url = format!("{}/1/messages.json", to.url.trim_end_matches('/'));
        Ok(Outgoing { body: Cow::Owned(value.to_string().into_bytes()), ..json_post(url, body) })
    }

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    // pover://user_key@app_token[/device…]
    if p.user.is_empty() || p.host.is_empty() {
        return fail(scheme, "expected pover://user_key@app_token");
    }
    let mut devices = Vec::new();
    for target in p.targets() {
        if target.starts_with('#') || target.starts_with("%23") {
            return fail(scheme, "delivery groups (#…) are not supported: give the group key as the user key");
        }
        let device_ok =
            target.len() <= 25 && target.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !device_ok {
            return fail(scheme, "a device is not 1 to 25 letters, digits, - or _");
        }
        devices.push(target);
    }
    let mut settings = Map::new();
    if !devices.is_empty() {
        // Pushover takes several devices comma-separated.
        settings.insert("device".into(), json!(devices.join(",")));
    }
    let map =
        [("l", -2), ("m", -1), ("n", 0), ("h", 1), ("e", 2), ("-2", -2), ("-1", -1), ("0", 0), ("1", 1), ("2", 2)];
    if let Some(prio) = priority(p.query("priority"), &map) {
        settings.insert("priority".into(), json!(prio));
    }
    Ok(Imported {
        kind: EndpointKind::Pushover,
        url: "https://api.pushover.net".to_owned(),
        settings: Value::Object(settings),
        secrets: json!({"token": p.host, "user_key": p.user}),
    })
}
