//! `gotify`: a message to a Gotify server, with a click-through link.

use serde_json::{Map, Value, json};

use super::{EndpointKind, Field, Input, Kind, Message, Spec, Target, Transport, json_post, need};
use crate::apprise::{ImportError, Imported, Parts, fail, priority};
use crate::message::{default_text, parts};
use crate::outgoing::Outgoing;

/// Gotify.
pub struct Gotify;

static SPEC: Spec = Spec {
    label: "Gotify",
    url_hint: "Your Gotify server, like https://gotify.example.com.",
    default_url: None,
    fields: &[
        Field::secret("token", "Application token", Input::Password, "Stored encrypted.").required(),
        Field::setting("priority", "Priority", Input::Number { min: 0, max: 10 }, "0 to 10; empty for 5."),
    ],
    transport: Transport::Http,
    signed: false,
    credential_url: false,
    apprise: &["gotify", "gotifys"],
};

impl Kind for Gotify {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let (parts, context) = (parts(m.context, m.templates)?, m.context);
        let message = parts.text.unwrap_or_else(|| default_text(context, 8000, 80));
        let priority = m.settings.int("priority").unwrap_or(5);
        let mut body = json!({"title": parts.title, "message": message, "priority": priority});
        if context.link.starts_with("http") {
            body["extras"] = json!({"client::notification": {"click": {"url": context.link}}});
        }
        Ok(body.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        let token = need(to.secrets, "token", "application token")?;
        let mut out = json_post(format!("{}/message", to.url.trim_end_matches('/')), body);
        out.headers.push(("X-Gotify-Key".into(), token.to_owned()));
        Ok(out)
    }

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    // gotify://host[:port][/path]/app_token
    let Some((token, prefix)) = p.path.split_last() else {
        return fail(scheme, "no application token (gotify://host/app_token)");
    };
    let url = p.base_url(p.scheme == "gotifys", prefix)?;
    let mut settings = Map::new();
    let map = [
        ("l", 0),
        ("m", 3),
        ("n", 5),
        ("h", 8),
        ("e", 10),
        ("10", 10),
        ("0", 0),
        ("1", 0),
        ("2", 0),
        ("3", 3),
        ("4", 3),
        ("5", 5),
        ("6", 5),
        ("7", 5),
        ("8", 8),
        ("9", 8),
    ];
    if let Some(prio) = priority(p.query("priority"), &map) {
        settings.insert("priority".into(), json!(prio));
    }
    Ok(Imported {
        kind: EndpointKind::Gotify,
        url,
        settings: Value::Object(settings),
        secrets: json!({"token": token}),
    })
}
