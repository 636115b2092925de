//! The HTTP request that carries a stored body to each kind's API: method, URL and headers
//! built at send from the endpoint's settings and opened secrets (which are never stored in a
//! body), and how each provider says "slow down".

use std::borrow::Cow;
use std::time::Duration;

use driftwatch_core::EndpointKind;

use crate::settings::{Secrets, Settings};

/// One request, ready for the sender.
#[derive(Debug, Clone)]
pub struct Outgoing<'a> {
    /// `POST`, `PUT` or `PATCH`.
    pub method: &'static str,
    /// Where.
    pub url: String,
    /// Headers besides `Content-Type` (secret values included: never log them).
    pub headers: Vec<(String, String)>,
    /// `Content-Type`.
    pub content_type: String,
    /// The bytes sent: the stored body, or for Pushover the stored body with the credentials
    /// merged in.
    pub body: Cow<'a, [u8]>,
    /// Whether the Standard Webhooks signature headers go with it.
    pub signed: bool,
}

/// The request for a delivery of `body` to an endpoint of `kind` at `url`.
pub fn request<'a>(
    kind: EndpointKind,
    url: &str,
    settings: &Settings,
    secrets: &Secrets,
    delivery_id: &str,
    body: &'a [u8],
) -> Result<Outgoing<'a>, String> {
    let base = url.trim_end_matches('/');
    let json = "application/json".to_owned();
    let simple = |url: String| Outgoing {
        method: "POST",
        url,
        headers: Vec::new(),
        content_type: json.clone(),
        body: Cow::Borrowed(body),
        signed: false,
    };
    let need = |value: &Option<String>, name: &str| {
        value.clone().filter(|v| !v.is_empty()).ok_or_else(|| format!("the endpoint has no {name}"))
    };
    Ok(match kind {
        EndpointKind::Webhook => Outgoing { signed: true, ..simple(url.to_owned()) },
        EndpointKind::Slack | EndpointKind::Discord | EndpointKind::Teams => {
            let mut out = simple(url.to_owned());
            if kind == EndpointKind::Discord {
                // Wait for the message to be stored, so a 2xx means it exists.
                out.url = with_query(url, "wait=true");
            }
            out
        }
        EndpointKind::Http => {
            let mut headers: Vec<(String, String)> =
                settings.headers.iter().chain(&secrets.headers).map(|(k, v)| (k.clone(), v.clone())).collect();
            headers.push(("driftwatch-delivery-id".into(), delivery_id.to_owned()));
            Outgoing {
                method: match settings.method.as_deref() {
                    Some("PUT") => "PUT",
                    Some("PATCH") => "PATCH",
                    _ => "POST",
                },
                url: url.to_owned(),
                headers,
                content_type: settings.content_type.clone().unwrap_or(json),
                body: Cow::Borrowed(body),
                signed: false,
            }
        }
        EndpointKind::Telegram => {
            let token = need(&secrets.bot_token, "bot token")?;
            simple(format!("{base}/bot{token}/sendMessage"))
        }
        EndpointKind::Ntfy => {
            let mut out = simple(format!("{base}/"));
            if let Some(token) = secrets.token.as_deref().filter(|t| !t.is_empty()) {
                out.headers.push(("Authorization".into(), format!("Bearer {token}")));
            }
            out
        }
        EndpointKind::Pushover => {
            let token = need(&secrets.token, "application token")?;
            let user = need(&secrets.user_key, "user key")?;
            let mut value: serde_json::Value =
                serde_json::from_slice(body).map_err(|e| format!("the stored body is not JSON: {e}"))?;
            value["token"] = token.into();
            value["user"] = user.into();
            Outgoing { body: Cow::Owned(value.to_string().into_bytes()), ..simple(format!("{base}/1/messages.json")) }
        }
        EndpointKind::Gotify => {
            let token = need(&secrets.token, "application token")?;
            let mut out = simple(format!("{base}/message"));
            out.headers.push(("X-Gotify-Key".into(), token));
            out
        }
        EndpointKind::Matrix => {
            let token = need(&secrets.access_token, "access token")?;
            let room = settings.room_id.as_deref().ok_or("the endpoint has no room id")?;
            let room = url::form_urlencoded::byte_serialize(room.as_bytes()).collect::<String>();
            // The delivery id as the transaction id: a retry of a message the homeserver
            // already took is recognised and not posted twice.
            let mut out = simple(format!("{base}/_matrix/client/v3/rooms/{room}/send/m.room.message/{delivery_id}"));
            out.method = "PUT";
            out.headers.push(("Authorization".into(), format!("Bearer {token}")));
            out
        }
        EndpointKind::Email => return Err("email is sent over SMTP, not HTTP".to_owned()),
    })
}

fn with_query(url: &str, query: &str) -> String {
    if url.contains('?') { format!("{url}&{query}") } else { format!("{url}?{query}") }
}

/// How long a provider asked us to wait in its 429 body, when it says so there rather than
/// (or besides) in `Retry-After`: Discord's `retry_after` (seconds, fractional), Telegram's
/// `parameters.retry_after`, Matrix's `retry_after_ms`.
pub fn retry_after_in_body(kind: EndpointKind, status: u16, body: &str) -> Option<Duration> {
    if status != 429 {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let seconds = match kind {
        EndpointKind::Discord => value.get("retry_after")?.as_f64()?,
        EndpointKind::Telegram => value.get("parameters")?.get("retry_after")?.as_f64()?,
        EndpointKind::Matrix => value.get("retry_after_ms")?.as_f64()? / 1000.0,
        _ => value.get("retry_after").and_then(serde_json::Value::as_f64)?,
    };
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_gets_its_providers_request() {
        let secrets = Secrets {
            bot_token: Some("123:abc".into()),
            token: Some("t".repeat(30)),
            user_key: Some("u".repeat(30)),
            access_token: Some("syt_x".into()),
            ..Secrets::default()
        };
        let settings = Settings { room_id: Some("!room:example.org".into()), ..Settings::default() };
        let telegram =
            request(EndpointKind::Telegram, "https://api.telegram.org/", &settings, &secrets, "dlv_1", b"{}")
                .expect("telegram");
        assert_eq!(telegram.url, "https://api.telegram.org/bot123:abc/sendMessage");
        let matrix =
            request(EndpointKind::Matrix, "https://m.example", &settings, &secrets, "dlv_1", b"{}").expect("matrix");
        assert_eq!(matrix.method, "PUT");
        assert_eq!(
            matrix.url,
            "https://m.example/_matrix/client/v3/rooms/%21room%3Aexample.org/send/m.room.message/dlv_1"
        );
        let pushover = request(
            EndpointKind::Pushover,
            "https://api.pushover.net",
            &settings,
            &secrets,
            "dlv_1",
            br#"{"message":"m"}"#,
        )
        .expect("pushover");
        let sent: serde_json::Value = serde_json::from_slice(&pushover.body).expect("json");
        assert_eq!((sent["message"].as_str(), sent["user"].as_str()), (Some("m"), Some("u".repeat(30).as_str())));
        let missing =
            request(EndpointKind::Gotify, "https://g.example", &settings, &Secrets::default(), "dlv_1", b"{}");
        assert!(missing.expect_err("no token").contains("token"));
        assert!(
            request(EndpointKind::Webhook, "https://x.example", &settings, &secrets, "d", b"{}")
                .expect("webhook")
                .signed
        );
    }

    #[test]
    fn reads_throttling_from_each_providers_body() {
        let wait = |kind, body| retry_after_in_body(kind, 429, body);
        assert_eq!(
            wait(EndpointKind::Discord, r#"{"retry_after": 1.5, "global": false}"#),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            wait(EndpointKind::Telegram, r#"{"ok":false,"error_code":429,"parameters":{"retry_after":7}}"#),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            wait(EndpointKind::Matrix, r#"{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":2000}"#),
            Some(Duration::from_secs(2))
        );
        assert_eq!(wait(EndpointKind::Discord, "not json"), None);
        assert_eq!(retry_after_in_body(EndpointKind::Discord, 500, r#"{"retry_after": 1}"#), None);
        assert_eq!(wait(EndpointKind::Discord, r#"{"retry_after": -1}"#), None);
    }
}
