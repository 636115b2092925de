//! `ntfy`: a push notification to a topic on ntfy.sh or a server of one's own.

use driftwatch_core::FieldError;
use serde_json::{Map, Value, json};

use super::{EndpointKind, Field, Input, Kind, Message, Spec, Target, Transport, json_post};
use crate::apprise::{ImportError, Imported, Parts, fail, list, priority};
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
    credential_url: false,
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

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    let mut topics = p.targets();
    let host_ok = !p.host.is_empty() && url::Host::parse(&p.host).is_ok();
    // Apprise: a server when the host is one and topics follow it, else ntfy.sh with the host
    // as the first topic; `mode=` says which.
    let private = match p.query("mode").map(str::to_ascii_lowercase).as_deref() {
        Some("private") => true,
        Some("cloud") => false,
        Some(_) => return fail(scheme, "mode= is not cloud or private"),
        None => host_ok && !topics.is_empty(),
    };
    let url = if private {
        // The public server is https whatever the scheme said.
        p.base_url(p.scheme == "ntfys" || p.host.eq_ignore_ascii_case("ntfy.sh"), [])?
    } else {
        if !p.host.to_ascii_lowercase().contains("ntfy.sh") && !p.host.is_empty() {
            topics.insert(0, p.host.clone());
        }
        "https://ntfy.sh".to_owned()
    };
    let topic = match topics.as_slice() {
        [topic] => topic.clone(),
        [] => return fail(scheme, "no topic (ntfy://topic or ntfys://host/topic)"),
        _ => return fail(scheme, "only one topic per endpoint is supported: create one per topic"),
    };
    // Access tokens only: `?token=`, `token@host`, or `auth=token` with the token as user or
    // password. A user with a password is a basic sign-in.
    let auth = p.query("auth").map(str::to_ascii_lowercase);
    let token = match (p.query("token"), auth.as_deref()) {
        (Some(token), _) => Some(token.to_owned()),
        (None, Some("token")) if !p.password.is_empty() => Some(p.password.clone()),
        (None, Some("token")) if !p.user.is_empty() => Some(p.user.clone()),
        (None, Some("basic")) if !p.user.is_empty() => None,
        (None, _) if !p.user.is_empty() && p.password.is_empty() => Some(p.user.clone()),
        _ => None,
    };
    if token.is_none() && !p.user.is_empty() {
        return fail(
            scheme,
            "a user and password sign-in is not supported, only access tokens: ntfy://tk_…@host/topic or ?token=",
        );
    }
    let mut settings = Map::new();
    settings.insert("topic".into(), json!(topic));
    let map = [
        ("l", 2),
        ("mo", 2),
        ("n", 3),
        ("h", 4),
        ("e", 5),
        ("mi", 1),
        ("ma", 5),
        ("d", 3),
        ("1", 1),
        ("2", 2),
        ("3", 3),
        ("4", 4),
        ("5", 5),
    ];
    if let Some(prio) = priority(p.query("priority"), &map) {
        settings.insert("priority".into(), json!(prio));
    }
    let tags = list(p.query("xtags").or_else(|| p.query("tags")));
    if !tags.is_empty() {
        settings.insert("tags".into(), json!(tags));
    }
    let secrets = token.map_or_else(|| json!({}), |token| json!({"token": token}));
    Ok(Imported { kind: EndpointKind::Ntfy, url, settings: Value::Object(settings), secrets })
}
