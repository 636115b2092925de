//! One attempt on the wire: a stored body carried to the endpoint the way its kind is spoken.

use std::time::{Duration, Instant};

use std::str::FromStr as _;

use driftwatch_channels::outgoing::Outgoing;
use driftwatch_channels::{EndpointKind, Secrets, Settings, Transport};
use driftwatch_core::AttemptErrorKind;
use driftwatch_net::{ClientOptions, Redirects, TargetPolicy, blocked_reason, vet_url};
use driftwatch_store::Endpoint;

use crate::policy::{Outcome, SendResult, failed};
use crate::signing::sign;

/// Settings of the webhook HTTP client.
#[derive(Debug, Clone)]
pub struct SenderOptions {
    /// Which targets may receive webhooks.
    pub policy: TargetPolicy,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Most response-body bytes read.
    pub max_response_bytes: usize,
    /// Most response-body characters kept in the attempt row.
    pub snippet_chars: usize,
    /// `User-Agent`.
    pub user_agent: String,
    /// The proxy webhooks go through (never one from the environment); see
    /// [`driftwatch_net::ClientOptions::proxy`] for what the guard can promise behind it.
    pub proxy: Option<url::Url>,
    /// Opens sealed secrets (signing secrets, bot tokens, passwords). Without it only
    /// plaintext secrets can be used; a sealed one fails the attempt as `secret`.
    pub keyring: Option<driftwatch_core::Keyring>,
    /// Certificates trusted for SMTP TLS beside the system's.
    pub smtp_roots: crate::smtp::SmtpRoots,
}

impl Default for SenderOptions {
    fn default() -> Self {
        SenderOptions {
            policy: TargetPolicy::default(),
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(30),
            max_response_bytes: 64 * 1024,
            snippet_chars: 1024,
            user_agent: format!("driftwatch-webhooks/{}", env!("CARGO_PKG_VERSION")),
            proxy: None,
            keyring: None,
            smtp_roots: crate::smtp::SmtpRoots::default(),
        }
    }
}

/// Sends signed webhooks. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Sender {
    client: reqwest::Client,
    options: SenderOptions,
}

impl Sender {
    /// Builds the client: redirects are never followed (a 3xx is the receiver's answer).
    pub fn new(options: SenderOptions) -> Result<Sender, reqwest::Error> {
        let client = driftwatch_net::client_builder(&ClientOptions {
            policy: options.policy,
            connect_timeout: options.connect_timeout,
            timeout: options.timeout,
            user_agent: options.user_agent.clone(),
            redirects: Redirects::None,
            proxy: options.proxy.clone(),
        })?
        .build()?;
        Ok(Sender { client, options })
    }

    /// The settings in use.
    pub fn options(&self) -> &SenderOptions {
        &self.options
    }

    /// Sends `body` to the endpoint the way its kind is spoken: a signed POST for webhooks,
    /// each provider's API request for chat kinds (secrets opened here, at send), SMTP for
    /// email. `timestamp` (unix seconds) is the attempt's time, used for signatures and to
    /// judge a rotation's overlap.
    pub async fn send(
        &self,
        endpoint: &Endpoint,
        delivery_id: &str,
        event_type: &str,
        attempt: u32,
        body: &[u8],
        timestamp: i64,
    ) -> SendResult {
        let started = Instant::now();
        let kind = EndpointKind::from_str(&endpoint.kind).unwrap_or(EndpointKind::Webhook);
        let secrets = match endpoint.secrets.as_deref().map(|s| self.open(s)).transpose() {
            Ok(opened) => Secrets::parse(opened.as_deref().unwrap_or_default()),
            Err(e) => return failed(AttemptErrorKind::Secret, e, started),
        };
        let settings = Settings::parse(&endpoint.settings);
        if kind.spec().transport == Transport::Smtp {
            let server = crate::smtp::Connection {
                policy: self.options.policy,
                timeout: self.options.timeout,
                roots: &self.options.smtp_roots,
            };
            return crate::smtp::send(&server, endpoint, &settings, &secrets, body, started).await;
        }
        // A credential URL is stored sealed (and `url` masked): opened here, at send.
        let url = match endpoint.url_secret.as_deref().map(|s| self.open(s)).transpose() {
            Ok(opened) => opened.unwrap_or_else(|| endpoint.url.clone()),
            Err(e) => return failed(AttemptErrorKind::Secret, e, started),
        };
        let outgoing = match driftwatch_channels::outgoing::request(kind, &url, &settings, &secrets, delivery_id, body)
        {
            Ok(outgoing) => outgoing,
            Err(e) => return failed(AttemptErrorKind::Secret, e, started),
        };
        let meta = Meta { delivery_id, event_type, attempt, timestamp };
        let request = match self.request(endpoint, outgoing, &meta).await {
            Ok(request) => request,
            Err((kind, e)) => return failed(kind, e, started),
        };
        match request.send().await {
            Ok(response) => self.answer(response, kind, timestamp, started).await,
            Err(e) => {
                // The URL can hold a secret (a bot token, a webhook's key): never in the error.
                let (kind, message) = classify(&e.without_url());
                failed(kind, message, started)
            }
        }
    }

    /// The HTTP request for `outgoing`: its URL vetted, driftwatch's headers, the signature
    /// when the kind signs, the kind's own headers.
    async fn request(
        &self,
        endpoint: &Endpoint,
        outgoing: Outgoing<'_>,
        meta: &Meta<'_>,
    ) -> Result<reqwest::RequestBuilder, (AttemptErrorKind, String)> {
        let url = url::Url::parse(&outgoing.url)
            .map_err(|e| (AttemptErrorKind::Url, format!("invalid endpoint URL: {e}")))?;
        vet_url(&url, self.options.policy, self.options.proxy.is_some())
            .await
            .map_err(|e| (AttemptErrorKind::Blocked, e.to_string()))?;
        let method = reqwest::Method::from_bytes(outgoing.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let mut request = self
            .client
            .request(method, url)
            .header(reqwest::header::CONTENT_TYPE, &outgoing.content_type)
            .header("driftwatch-event-type", meta.event_type)
            .header("driftwatch-attempt", meta.attempt.to_string());
        if outgoing.signed {
            let signature = self
                .signatures(endpoint, meta.delivery_id, meta.timestamp, &outgoing.body)
                .map_err(|e| (AttemptErrorKind::Secret, e))?;
            request = request
                .header("webhook-id", meta.delivery_id)
                .header("webhook-timestamp", meta.timestamp.to_string())
                .header("webhook-signature", signature);
        }
        for (name, value) in &outgoing.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        Ok(request.body(outgoing.body.into_owned()))
    }

    /// What the receiver's answer means: its status, a snippet of its body, and how long it
    /// asked us to wait (`Retry-After`, or the provider's 429 body).
    async fn answer(
        &self,
        mut response: reqwest::Response,
        kind: EndpointKind,
        timestamp: i64,
        started: Instant,
    ) -> SendResult {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            // The attempt's own time (the injected clock's), not a fresh read of the system's.
            .and_then(|v| {
                let now = std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(timestamp).unwrap_or(0));
                parse_retry_after(v, now)
            });
        let snippet = self.snippet(&mut response).await;
        // Discord, Telegram and Matrix say how long to wait in the 429's body.
        let retry_after =
            retry_after.or_else(|| driftwatch_channels::outgoing::retry_after_in_body(kind, status, &snippet));
        let (error_kind, error) = match status {
            200..=299 => (None, None),
            300..=399 => {
                (Some(AttemptErrorKind::Redirect), Some(format!("HTTP {status} (redirects are not followed)")))
            }
            _ => (Some(AttemptErrorKind::Http), Some(format!("HTTP {status}"))),
        };
        SendResult {
            outcome: Outcome::Status(status),
            error_kind,
            error,
            snippet: (!snippet.is_empty()).then_some(snippet),
            duration: started.elapsed(),
            retry_after,
        }
    }

    /// The plaintext of a stored secret: opened with the keyring, or as it is when plaintext.
    fn open(&self, stored: &str) -> Result<String, String> {
        match &self.options.keyring {
            Some(keyring) => keyring.open(stored).map_err(|e| format!("the endpoint's secret cannot be opened: {e}")),
            None if driftwatch_core::is_sealed(stored) => {
                Err("the endpoint's secret is encrypted and this process has no secret key".to_owned())
            }
            None => Ok(stored.to_owned()),
        }
    }

    /// The `webhook-signature` header: a signature with the endpoint's secret and, during a
    /// rotation's overlap (until `previous_secret_expires_at`, judged at `timestamp`), one with
    /// its previous secret too, space-separated.
    fn signatures(
        &self,
        endpoint: &Endpoint,
        delivery_id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Result<String, String> {
        let now = chrono::DateTime::from_timestamp(timestamp, 0).map(|t| t.naive_utc());
        let previous = endpoint
            .previous_secret
            .as_deref()
            .filter(|_| endpoint.previous_secret_expires_at.zip(now).is_some_and(|(until, now)| until > now));
        let signed: Result<Vec<String>, String> = std::iter::once(endpoint.secret.as_str())
            .chain(previous)
            .map(|stored| {
                let secret = self.open(stored)?;
                sign(&secret, delivery_id, timestamp, body).map_err(|e| e.to_string())
            })
            .collect();
        signed.map(|s| s.join(" "))
    }
}

impl Sender {
    /// The start of the receiver's answer, for diagnosis only: a bounded prefix is read and the
    /// rest left unread.
    async fn snippet(&self, response: &mut reqwest::Response) -> String {
        let mut read = Vec::new();
        while read.len() < self.options.max_response_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => read.extend_from_slice(&chunk),
                Ok(None) | Err(_) => break,
            }
        }
        String::from_utf8_lossy(&read).chars().take(self.options.snippet_chars).collect()
    }
}

/// A `Retry-After` value: delay seconds, or an HTTP date (a date in the past means now).
pub fn parse_retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

pub(crate) fn classify(err: &reqwest::Error) -> (AttemptErrorKind, String) {
    if let Some(reason) = blocked_reason(err) {
        return (AttemptErrorKind::Blocked, reason);
    }
    let mut chain = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        chain.push_str(": ");
        chain.push_str(&e.to_string());
        source = e.source();
    }
    let kind = if err.is_timeout() {
        AttemptErrorKind::Timeout
    } else if chain.contains("dns error") || chain.contains("failed to lookup") {
        AttemptErrorKind::Dns
    } else if chain.to_ascii_lowercase().contains("certificate") || chain.contains("tls") {
        AttemptErrorKind::Tls
    } else if err.is_connect() {
        AttemptErrorKind::Connect
    } else {
        AttemptErrorKind::Request
    };
    (kind, chain)
}

/// What an attempt's headers say about it.
struct Meta<'a> {
    delivery_id: &'a str,
    event_type: &'a str,
    attempt: u32,
    timestamp: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_retry_after_seconds_and_dates() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            parse_retry_after(&httpdate::fmt_http_date(now + Duration::from_secs(30)), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after(&httpdate::fmt_http_date(now - Duration::from_secs(30)), now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }
}
