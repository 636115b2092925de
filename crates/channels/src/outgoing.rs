//! The HTTP request that carries a stored body to each kind's API: method, URL and headers
//! built at send from the endpoint's settings and opened secrets (which are never stored in a
//! body), and how each provider says "slow down".

use std::borrow::Cow;
use std::time::Duration;

use crate::kinds::{EndpointKind, Target};
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
    kind.kind().request(Target { url, settings, secrets }, delivery_id, body)
}

/// How long a provider asked us to wait in its 429 body, when it says so there rather than
/// (or besides) in `Retry-After`: Discord's `retry_after` (seconds, fractional), Telegram's
/// `parameters.retry_after`, Matrix's `retry_after_ms`; each kind reads its own.
pub fn retry_after_in_body(kind: EndpointKind, status: u16, body: &str) -> Option<Duration> {
    if status != 429 {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    let seconds = kind.kind().retry_after_in_body(&value)?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)))
}
