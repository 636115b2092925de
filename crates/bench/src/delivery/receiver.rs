//! The local receiver of a delivery run: test-support's chat stand-in for the run's kind
//! ([`ChatServer::answer`]: the provider's checks and answers) behind the bench's own
//! addressing, which tells which of the run's endpoints each request was for and when it came.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse as _, Response};
use driftwatch_channels::EndpointKind;
use driftwatch_test_support::{ChatServer, Provider};
use tokio::sync::watch;

use super::TELEGRAM_TOKEN;

/// Why a request is refused: the status answered and the reason.
type Refusal = (u16, String);

/// The receiver: the stand-in for one kind's API, on a loopback port of its own.
pub(super) struct Receiver {
    /// `http://127.0.0.1:port`, no trailing slash.
    pub(super) url: String,
    pub(super) shared: Arc<Shared>,
}

/// What the receiver's handler and the run share.
pub(super) struct Shared {
    kind: EndpointKind,
    endpoints: usize,
    /// Receipt times by slot (`n * endpoints + k`: event n's body, endpoint k's).
    pub(super) received: Mutex<Vec<Option<Instant>>>,
    /// Requests accepted so far.
    pub(super) accepted: watch::Sender<usize>,
    /// Requests refused so far, and the first refusal.
    refused: AtomicUsize,
    first_refusal: Mutex<Option<String>>,
}

impl Shared {
    fn new(kind: EndpointKind, capacity: usize, endpoints: usize) -> Shared {
        Shared {
            kind,
            endpoints,
            received: Mutex::new(vec![None; capacity]),
            accepted: watch::channel(0).0,
            refused: AtomicUsize::new(0),
            first_refusal: Mutex::new(None),
        }
    }

    /// Checks and answers one request: the endpoint it names, then the provider's stand-in.
    fn answer(&self, request: Request<Bytes>) -> Response {
        let at = Instant::now();
        let (path, event) = (request.uri().path().to_owned(), event_number(request.body()));
        let k = match endpoint_of(self.kind, &path, request.headers(), request.body(), self.endpoints) {
            Ok(k) => k,
            Err(refusal) => return self.refuse(&path, refusal, None),
        };
        let answer = ChatServer::answer(request);
        if let Some(refusal) = answer.refused {
            return self.refuse(&path, refusal, Some(answer.response));
        }
        if answer.provider != provider(self.kind) {
            return self.refuse(&path, (404, format!("a {:?} path, not {}", answer.provider, self.kind)), None);
        }
        if let Some(n) = event {
            let mut all = self.received.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(slot) = all.get_mut(n * self.endpoints + k) {
                slot.get_or_insert(at);
            }
        }
        self.accepted.send_modify(|c| *c += 1);
        answer.response
    }

    /// Counts a refusal of the request to `path` and answers it: with the stand-in's `response`
    /// (the provider's error shape) where it refused, else plain text.
    fn refuse(&self, path: &str, (status, reason): Refusal, response: Option<Response>) -> Response {
        self.refused.fetch_add(1, Ordering::Relaxed);
        self.first_refusal
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert_with(|| format!("{path}: {status} {reason}"));
        response.unwrap_or_else(|| {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            (status, reason).into_response()
        })
    }

    pub(super) fn accepted(&self) -> usize {
        *self.accepted.borrow()
    }

    fn refused(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }

    /// Fails when the stand-in refused anything: a run with refused requests measures nothing.
    pub(super) fn ensure_none_refused(&self) -> anyhow::Result<()> {
        let refused = self.refused();
        if refused > 0 {
            let first = self.first_refusal.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
            anyhow::bail!(
                "the {} stand-in refused {refused} request(s) (and accepted {}); the first: {}",
                self.kind,
                self.accepted(),
                first.unwrap_or_default()
            );
        }
        Ok(())
    }
}

/// Starts the receiver for `capacity` deliveries to `endpoints` endpoints of `kind`.
pub(super) async fn receiver(kind: EndpointKind, capacity: usize, endpoints: usize) -> anyhow::Result<Receiver> {
    let shared = Arc::new(Shared::new(kind, capacity, endpoints));
    let handler = Arc::clone(&shared);
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let shared = Arc::clone(&handler);
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
            shared.answer(Request::from_parts(parts, body))
        }
    });
    let addr = crate::serve(app).await?;
    Ok(Receiver { url: format!("http://{addr}"), shared })
}

/// The stand-in that answers `kind` (the plain hook for a webhook).
fn provider(kind: EndpointKind) -> Provider {
    match kind {
        EndpointKind::Discord => Provider::Discord,
        EndpointKind::Telegram => Provider::Telegram,
        EndpointKind::Ntfy => Provider::Ntfy,
        _ => Provider::Generic,
    }
}

/// What the receiver checks for `kind`, in a few words: the bench's addressing, then the
/// stand-in's provider rules.
pub(super) fn checked(kind: EndpointKind) -> &'static str {
    match kind {
        EndpointKind::Webhook => "path and Standard Webhooks headers",
        EndpointKind::Discord => "webhook path and token, then test-support's Discord message and embed limits",
        EndpointKind::Telegram => {
            "bot token and chat, then test-support's sendMessage, HTML entities, 4,096 visible characters"
        }
        EndpointKind::Ntfy => "topic, then test-support's ntfy message bytes, priority, tags, URLs",
        _ => "nothing",
    }
}

/// Which of the run's `endpoints` a request is for (its index), told by what the bench gave
/// each endpoint: the hook or webhook id in the path, a chat id, a topic; with the bench's
/// credentials (the webhook's signature headers, Discord's webhook token, the bot token). Or
/// the status and reason it is none of them.
pub(super) fn endpoint_of(
    kind: EndpointKind,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
    endpoints: usize,
) -> Result<usize, Refusal> {
    let refuse = |status: u16, reason: &str| Err((status, reason.to_owned()));
    let index = |id: Option<u64>| {
        id.and_then(|id| usize::try_from(id).ok()).filter(|id| (1..=endpoints).contains(id)).map(|id| id - 1)
    };
    match kind {
        EndpointKind::Webhook => {
            let Some(k) = path.strip_prefix("/hook/").and_then(|k| k.parse::<usize>().ok()).filter(|k| *k < endpoints)
            else {
                return refuse(404, "no such hook");
            };
            let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
            let timestamp = header("webhook-timestamp");
            if header("webhook-id").is_empty()
                || timestamp.is_empty()
                || !timestamp.bytes().all(|b| b.is_ascii_digit())
                || !header("webhook-signature").starts_with("v1,")
            {
                return refuse(401, "missing or malformed webhook-id, webhook-timestamp or webhook-signature");
            }
            Ok(k)
        }
        EndpointKind::Discord => {
            let Some((id, token)) = path.strip_prefix("/api/webhooks/").and_then(|r| r.split_once('/')) else {
                return refuse(404, "Unknown Webhook");
            };
            match (index(id.parse().ok()), token) {
                (None, _) => refuse(404, "Unknown Webhook"),
                (Some(_), token) if token != "bench" => refuse(401, "Invalid Webhook Token"),
                (Some(k), _) => Ok(k),
            }
        }
        EndpointKind::Telegram => match path.strip_prefix("/bot").and_then(|r| r.split_once('/')) {
            Some((token, _)) if token != TELEGRAM_TOKEN => refuse(401, "Unauthorized"),
            Some(_) => index(number_after(body, b"\"chat_id\":")).map_or_else(|| refuse(400, "chat not found"), Ok),
            None => refuse(404, "Not Found"),
        },
        EndpointKind::Ntfy => index(number_after(body, b"\"topic\":\"bench-"))
            .map_or_else(|| refuse(400, "a topic none of the bench's"), Ok),
        other => refuse(404, &format!("the bench has no {other} stand-in")),
    }
}

/// The event number in a body: the digits after the watch name's `bench#`.
pub(super) fn event_number(body: &[u8]) -> Option<usize> {
    number_after(body, b"bench#").and_then(|n| usize::try_from(n).ok())
}

/// The digits right after the first `marker` in `body`, as a number.
fn number_after(body: &[u8], marker: &[u8]) -> Option<u64> {
    let at = body.windows(marker.len()).position(|w| w == marker)? + marker.len();
    let digits = body[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&body[at..at + digits]).ok()?.parse().ok()
}

/// Microseconds of CPU the receiver of `kind` takes to check and answer one request, timed
/// alone (one thread, nothing else running) over requests built as the sender builds them.
pub(super) fn standin_cost(kind: EndpointKind) -> f64 {
    const N: usize = 2000;
    let Ok(requests) = (0..N)
        .map(|n| super::traffic::sample_request(kind, n, 0, "http://127.0.0.1:9"))
        .collect::<anyhow::Result<Vec<_>>>()
    else {
        return f64::NAN;
    };
    let shared = Shared::new(kind, N, 1);
    let started = Instant::now();
    for request in requests {
        drop(std::hint::black_box(shared.answer(request)));
    }
    let elapsed = started.elapsed();
    if shared.refused() > 0 { f64::NAN } else { elapsed.as_secs_f64() * 1e6 / N as f64 }
}

#[cfg(test)]
mod tests {
    use super::super::KINDS;
    use super::super::traffic::sample_request;
    use super::*;

    /// The receiver's verdict on `request` as one of 3 endpoints: the endpoint, or the refusal.
    fn ask(kind: EndpointKind, request: Request<Bytes>) -> Result<usize, String> {
        let shared = Shared::new(kind, 1, 3);
        let k = endpoint_of(kind, request.uri().path(), request.headers(), request.body(), 3);
        shared.answer(request);
        shared.ensure_none_refused().map_err(|e| e.to_string())?;
        k.map_err(|(status, reason)| format!("{status} {reason}"))
    }

    /// The verdict on the request the sender makes of event `n` for endpoint `k` of 3: the body
    /// rendered by the channels renderer, the request by `outgoing::request`.
    fn sent(kind: EndpointKind, n: usize, k: usize) -> Result<usize, String> {
        let request = sample_request(kind, n, k, "http://127.0.0.1:9").expect("request");
        assert_eq!(event_number(request.body()), Some(n), "{kind}: {:?}", request.body());
        ask(kind, request)
    }

    #[test]
    fn each_kinds_rendered_request_is_accepted_for_its_endpoint() {
        for kind in KINDS {
            for k in 0..3 {
                assert_eq!(sent(kind, 1234, k), Ok(k), "{kind} endpoint {k}");
            }
            assert!(sent(kind, 1, 3).is_err(), "{kind}: an endpoint that is not the bench's");
        }
    }

    #[test]
    fn the_bench_credentials_and_the_provider_rules_both_bite() {
        let post = |path: &str, body: &str| {
            Request::post(path)
                .header("content-type", "application/json")
                .body(Bytes::from(body.to_owned()))
                .expect("request")
        };
        let discord = |token: &str, body: &str| {
            ask(EndpointKind::Discord, post(&format!("/api/webhooks/1/{token}?wait=true"), body))
        };
        assert!(discord("other", r#"{"content":"x"}"#).expect_err("token").contains("401"));
        assert!(discord("bench", r#"{"content":""}"#).expect_err("empty").contains("empty message"));
        let telegram = |token: &str, text: &str| {
            let body = serde_json::json!({"chat_id": 1, "text": text, "parse_mode": "HTML"}).to_string();
            ask(EndpointKind::Telegram, post(&format!("/bot{token}/sendMessage"), &body))
        };
        assert!(telegram("2:other", "x").expect_err("token").contains("401"));
        assert!(telegram(TELEGRAM_TOKEN, "<div>x</div>").expect_err("tag").contains("div"));
        assert_eq!(telegram(TELEGRAM_TOKEN, "<b>x</b>"), Ok(0));
        let ntfy = |body: &str| ask(EndpointKind::Ntfy, post("/", body));
        assert!(ntfy(r#"{"topic":"bench-2","priority":6}"#).expect_err("priority").contains("priority"));
        assert_eq!(ntfy(r#"{"topic":"bench-2","message":"m"}"#), Ok(1));
    }
}
