//! `matrix`: a message to a room, sent with the delivery id as the transaction id so that a
//! retry the homeserver already took is not posted twice.

use driftwatch_core::FieldError;
use serde_json::{Value, json};

use super::{EndpointKind, Field, Input, Kind, Message, Spec, Target, Transport, json_post, need};
use crate::apprise::{ImportError, Imported, Parts, fail};
use crate::digest::{self, Style};
use crate::message::{default_text, escape_html, parts};
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};

/// Matrix.
pub struct Matrix;

static SPEC: Spec = Spec {
    label: "Matrix: a message to a room",
    url_hint: "Your homeserver, like https://matrix.example.org.",
    default_url: None,
    fields: &[
        Field::setting("room_id", "Room id", Input::Text, "Like !abcdef:example.org (Room settings › Advanced).")
            .required(),
        Field::secret(
            "access_token",
            "Access token",
            Input::Password,
            "The bot account's access token; stored encrypted.",
        )
        .required(),
    ],
    transport: Transport::Http,
    signed: false,
    credential_url: false,
    apprise: &["matrix", "matrixs"],
};

impl Kind for Matrix {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn check(&self, _: &str, settings: &Settings, _: &Secrets) -> Result<(), FieldError> {
        let room = settings.text("room_id").unwrap_or_default();
        if !room.starts_with('!') || !room.contains(':') {
            return Err(FieldError::new("settings.room_id", "a room id such as !abcdef:example.org (not an alias)"));
        }
        Ok(())
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let parts = parts(m.context, m.templates)?;
        let (context_is_digest, templated) = (m.context.event.event_type == "digest", parts.text.is_some());
        let text = parts.text.unwrap_or_else(|| default_text(m.context, 16_000, 200));
        let shown = match (context_is_digest, templated) {
            // A digest's watches linked by name, a line per event.
            (true, false) => digest::text(m.context, Style::Html, 16_000).replace('\n', "<br>"),
            _ => format!("<pre>{}</pre>", escape_html(&text)),
        };
        let html = format!("<strong>{}</strong><br>{shown}", escape_html(&parts.title));
        let body = json!({
            "msgtype": "m.text",
            "body": format!("{}\n{text}", parts.title),
            "format": "org.matrix.custom.html",
            "formatted_body": html,
        });
        Ok(body.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, delivery_id: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        let token = need(to.secrets, "access_token", "access token")?;
        let room = to.settings.text("room_id").ok_or("the endpoint has no room id")?;
        let room = url::form_urlencoded::byte_serialize(room.as_bytes()).collect::<String>();
        let base = to.url.trim_end_matches('/');
        let mut out =
            json_post(format!("{base}/_matrix/client/v3/rooms/{room}/send/m.room.message/{delivery_id}"), body);
        out.method = "PUT";
        out.headers.push(("Authorization".into(), format!("Bearer {token}")));
        Ok(out)
    }

    fn retry_after_in_body(&self, body: &Value) -> Option<f64> {
        Some(body.get("retry_after_ms")?.as_f64()? / 1000.0)
    }

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    match p.query("mode").map(str::to_ascii_lowercase).as_deref() {
        None | Some("off") => {}
        Some(_) => return fail(scheme, "webhook modes (mode=) are not supported: give an access token and a room id"),
    }
    if p.host.is_empty() {
        return fail(scheme, "no homeserver (matrixs://token@host/!room:server)");
    }
    // The access token: ?token=, `token@host`, or `user:token@host`.
    let token = p
        .query("token")
        .map(str::to_owned)
        .unwrap_or_else(|| if p.password.is_empty() { p.user.clone() } else { p.password.clone() });
    let rooms = p.targets();
    if token.is_empty() {
        return fail(scheme, "no access token (matrixs://token@host/!room:server or ?token=)");
    }
    let room = match rooms.as_slice() {
        [room] => room.trim(),
        [] => return fail(scheme, "no room (matrixs://token@host/!room:server)"),
        _ => return fail(scheme, "only one room per endpoint is supported: create one per room"),
    };
    let room = room.strip_prefix("%21").map_or_else(|| room.to_owned(), |r| format!("!{r}"));
    if room.starts_with('@') || room.starts_with("%40") {
        return fail(scheme, "direct messages to a user are not supported: give the room id (!…:server)");
    }
    if !room.starts_with('!') {
        return fail(
            scheme,
            "a room alias (#…) cannot be resolved when importing: give the room id (!…:server, in the room's settings)",
        );
    }
    // Apprise adds the homeserver to a room id without one.
    let room = if room.contains(':') { room } else { format!("{room}:{}", p.host) };
    Ok(Imported {
        kind: EndpointKind::Matrix,
        url: p.base_url(p.scheme == "matrixs", [])?,
        settings: json!({"room_id": room}),
        secrets: json!({"access_token": token}),
    })
}
