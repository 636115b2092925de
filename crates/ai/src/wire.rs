//! One HTTP exchange with the model's server: the address guard on every hop, redirects
//! followed only within the configured origin, a bounded body, error statuses read.

use std::error::Error as _;
use std::time::{Duration, SystemTime};

use reqwest::Method;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use serde_json::Value;
use url::Url;

use crate::CallError;

/// The most redirects followed in one exchange.
const MAX_REDIRECTS: usize = 3;
/// The most bytes of an error status's body read for its message.
const MAX_ERROR_BODY: usize = 64 << 10;
/// The most characters of a server's error message kept.
const MAX_DETAIL_CHARS: usize = 200;
/// The longest `Retry-After` believed.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// Where and how to send.
pub(crate) struct Wire<'a> {
    pub http: &'a reqwest::Client,
    /// The configured base URL: only its origin is followed to, and sent the key.
    pub base: &'a Url,
    pub key: Option<&'a str>,
    pub policy: driftwatch_net::TargetPolicy,
    pub max_body: usize,
}

/// What came back, once no redirect was left to follow.
pub(crate) struct Exchange {
    pub status: u16,
    pub retry_after: Option<Duration>,
    pub body: Vec<u8>,
}

impl Exchange {
    /// Whether it is a success.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The error it is, for a status that is not a success.
    pub fn into_error(self) -> CallError {
        CallError::Status { status: self.status, retry_after: self.retry_after, detail: detail(&self.body) }
    }

    /// Whether the server refused the `response_format` (a 400 or 422 naming it or the schema).
    pub fn refuses_format(&self) -> bool {
        if !matches!(self.status, 400 | 422) {
            return false;
        }
        let text = String::from_utf8_lossy(&self.body).to_ascii_lowercase();
        text.contains("response_format") || text.contains("json_schema")
    }
}

impl Wire<'_> {
    /// Sends `body` (JSON) to `url`, following same-origin redirects; reads the answer.
    pub async fn send(&self, method: Method, url: Url, body: Option<&Value>) -> Result<Exchange, CallError> {
        let payload = body.map(serde_json::to_vec).transpose().map_err(|e| CallError::Transport(e.to_string()))?;
        let (mut method, mut url, mut payload) = (method, url, payload);
        for hop in 0..=MAX_REDIRECTS {
            driftwatch_net::check_url(&url, self.policy).map_err(|e| CallError::Transport(e.to_string()))?;
            let mut request = self.http.request(method.clone(), url.clone());
            if let Some(bytes) = &payload {
                request = request.header(CONTENT_TYPE, "application/json").body(bytes.clone());
            }
            if let Some(key) = self.key {
                // Every hop is within the configured origin (checked below before following).
                request = request.bearer_auth(key);
            }
            let response = request.send().await.map_err(transport)?;
            let status = response.status().as_u16();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                return self.read(response).await;
            }
            let next = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|location| url.join(location).ok())
                .ok_or_else(|| {
                    CallError::Transport(format!("the model's server answered {status} without a usable Location"))
                })?;
            if next.origin() != self.base.origin() {
                return Err(CallError::Transport(format!(
                    "the model's server redirected to another host ({}); set the base URL to it",
                    authority(&next)
                )));
            }
            if hop == MAX_REDIRECTS {
                break;
            }
            if status != 307 && status != 308 && method == Method::POST {
                // As browsers do: 301, 302 and 303 turn a POST into a GET without its body.
                method = Method::GET;
                payload = None;
            }
            url = next;
        }
        Err(CallError::Transport(format!("the model's server redirected more than {MAX_REDIRECTS} times")))
    }

    /// The status, `Retry-After` and body of `response`; a success's body at most
    /// `max_body` bytes (else [`CallError::TooLarge`]), an error's first bytes only.
    async fn read(&self, mut response: reqwest::Response) -> Result<Exchange, CallError> {
        let status = response.status().as_u16();
        let retry_after = response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(retry_after);
        let success = (200..300).contains(&status);
        let limit = if success { self.max_body } else { self.max_body.min(MAX_ERROR_BODY) };
        let declared = response.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if success && declared.is_some_and(|len| len > limit as u64) {
            return Err(CallError::TooLarge(limit));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > limit {
                if success {
                    return Err(CallError::TooLarge(limit));
                }
                body.extend_from_slice(&chunk[..limit - body.len()]);
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Exchange { status, retry_after, body })
    }
}

/// `host[:port]` of a URL, as the operator would type it.
fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or("?");
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// A transport failure, without the URL (it may carry credentials) and with its causes.
fn transport(err: reqwest::Error) -> CallError {
    if let Some(reason) = driftwatch_net::blocked_reason(&err) {
        return CallError::Transport(reason);
    }
    let err = err.without_url();
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    CallError::Transport(message)
}

/// `Retry-After` as seconds or as an HTTP date (a past date is zero), at most a day.
pub(crate) fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    let wait = match value.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => {
            let at = httpdate::parse_http_date(value).ok()?;
            at.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_RETRY_AFTER))
}

/// The start of the server's error message: OpenAI's `error.message`, or the `error`, `message`
/// or `detail` text other servers send.
pub(crate) fn detail(body: &[u8]) -> Option<String> {
    let json: Value = serde_json::from_slice(body).ok()?;
    let message = [&json["error"]["message"], &json["error"], &json["message"], &json["detail"]]
        .into_iter()
        .find_map(Value::as_str)?;
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    (!message.is_empty()).then(|| crate::answer::cut(&message, MAX_DETAIL_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(retry_after(" 30 "), Some(Duration::from_secs(30)));
        assert_eq!(retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        let wait = retry_after(&later).expect("a date");
        assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120), "{wait:?}");
        assert_eq!(retry_after("99999999"), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after("soon"), None);
    }

    #[test]
    fn detail_reads_the_shapes_servers_send() {
        let openai = br#"{"error":{"message":"Rate   limit\nreached","type":"requests"}}"#;
        assert_eq!(detail(openai).as_deref(), Some("Rate limit reached"));
        assert_eq!(detail(br#"{"error":"model 'x' not found"}"#).as_deref(), Some("model 'x' not found"));
        assert_eq!(detail(br#"{"detail":"Not Found"}"#).as_deref(), Some("Not Found"));
        assert_eq!(detail(b"<html>Bad gateway</html>"), None);
        let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(500));
        assert_eq!(detail(long.as_bytes()).map(|d| d.chars().count()), Some(MAX_DETAIL_CHARS + 1));
    }
}
