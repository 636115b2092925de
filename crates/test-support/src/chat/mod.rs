//! Stand-ins for the chat and push services driftwatch delivers to, all on one loopback port:
//! each checks a request against its provider's documented shape and limits, records it, and
//! answers the way that provider does, or fails on cue. See [`ChatServer`] for the paths.

mod answer;
mod common;
mod discord;
mod gotify;
mod matrix;
mod mattermost;
mod ntfy;
mod provider;
mod pushover;
mod teams;
mod telegram;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use serde_json::Value;
use tokio::sync::watch;

pub use answer::ChatAnswer;
use common::Incoming;
pub use provider::Provider;

/// How the server answers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Mode {
    /// As the provider does: success for a valid request, its 400 (401, 404, …) shape otherwise.
    #[default]
    Ok,
    /// This status, in the provider's error shape, whatever the request.
    Status(u16),
    /// 429 in the provider's own shape: Discord's `retry_after` (seconds, float), Telegram's
    /// `parameters.retry_after` (whole seconds, rounded up), Matrix's `retry_after_ms`; a
    /// `Retry-After` header (whole seconds, rounded up) as [`ChatServer::set_retry_after_header`]
    /// says.
    RateLimited {
        /// How long the client is told to wait.
        retry_after_secs: f64,
    },
    /// No answer at all until [`ChatServer::release`] (then as [`Mode::Ok`]) or until the server
    /// is dropped (then the connection closes).
    Hang,
}

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Whose path it was sent to.
    pub provider: Provider,
    /// Its method.
    pub method: String,
    /// Its path as sent (percent-encoded), without the query.
    pub path: String,
    /// Its query as sent, without `?` (`""` if none).
    pub query: String,
    /// Its headers, names lower case.
    pub headers: HashMap<String, String>,
    /// Its body, byte for byte.
    pub body: Vec<u8>,
    /// Its body as JSON if it is JSON; a form body as an object of strings.
    pub json: Option<Value>,
    /// Why the provider would refuse it, if it would: set even when a steered failure answered
    /// it, so "no rejections" holds for every attempt.
    pub rejected: Option<String>,
    /// The status it was answered with.
    pub status: u16,
}

impl ChatRequest {
    /// The header `name` (lower case), or `""`.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    /// Whether it passed the checks and was answered with success.
    pub fn accepted(&self) -> bool {
        self.rejected.is_none() && (200..300).contains(&self.status)
    }

    /// One line saying what it was and how it went.
    fn summary(&self) -> String {
        let verdict = self.rejected.as_deref().map_or(String::new(), |r| format!(" rejected: {r}"));
        format!("{:?} {} {} -> {}{verdict}", self.provider, self.method, self.path, self.status)
    }
}

/// Credentials the test told the server to expect.
#[derive(Debug, Clone, Default)]
pub(super) struct Tokens {
    pub(super) ntfy: Option<String>,
    pub(super) gotify: Option<String>,
    pub(super) matrix: Option<String>,
}

/// How to answer, set by the test.
#[derive(Default)]
struct Steer {
    mode: Mode,
    next: VecDeque<Mode>,
    tokens: Tokens,
    retry_after_header: Option<bool>,
}

/// What was received.
#[derive(Default)]
struct Log {
    requests: Vec<ChatRequest>,
    /// Matrix transactions seen: (access token, room, txnId) to the event's number.
    transactions: HashMap<(String, String, String), u64>,
    matrix_duplicates: usize,
}

/// What the handler and the test share.
struct Shared {
    steer: Mutex<Steer>,
    log: Mutex<Log>,
    /// Bumped whenever something is recorded.
    recorded: watch::Sender<usize>,
    /// Bumped to release the requests held by [`Mode::Hang`].
    released: watch::Sender<u64>,
    /// How many requests are held now.
    hanging: watch::Sender<usize>,
    /// Set when the server is dropped.
    stop: watch::Sender<bool>,
}

/// Counts a held request for as long as it is held.
struct Held(Arc<Shared>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.hanging.send_modify(|n| *n -= 1);
    }
}

impl Shared {
    async fn handle(self: Arc<Self>, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let body = axum::body::to_bytes(body, 64 << 20).await.unwrap_or_default();
        let req = Incoming::new(parts, body);
        let provider = Provider::of(&req.path);
        let (mut mode, tokens, header) = {
            let mut steer = self.steer.lock().expect("lock");
            let mode = steer.next.pop_front().unwrap_or(steer.mode);
            (mode, steer.tokens.clone(), steer.retry_after_header)
        };
        if mode == Mode::Hang {
            let mut released = self.released.subscribe();
            self.hanging.send_modify(|n| *n += 1);
            let _held = Held(Arc::clone(&self));
            let _ = released.changed().await;
            mode = Mode::Ok;
        }
        let check = provider.check(&req, &tokens);
        let response = match (mode, &check) {
            (Mode::Status(status), _) => provider.error(status, None, common::canonical(status)),
            (Mode::RateLimited { retry_after_secs }, _) => {
                let mut response = provider.rate_limited(retry_after_secs);
                if header.unwrap_or(provider.sends_retry_after()) {
                    let secs = retry_after_secs.ceil().max(0.0) as u64;
                    response.headers_mut().insert("retry-after", secs.into());
                }
                response
            }
            (_, Err(reject)) => provider.error(reject.status, reject.code, &reject.reason),
            (_, Ok(())) => match self.matrix_duplicate(provider, &req) {
                Ok(id) => provider.ok(&req, id),
                Err(id) => {
                    self.recorded.send_modify(|n| *n += 1);
                    return matrix::ok(id);
                }
            },
        };
        let record = ChatRequest {
            provider,
            method: req.method.to_string(),
            path: req.path.clone(),
            query: req.query.clone(),
            headers: req
                .headers
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                .collect(),
            body: req.body.to_vec(),
            json: req.recorded_json(),
            rejected: check.err().map(|r| r.reason),
            status: response.status().as_u16(),
        };
        self.log.lock().expect("lock").requests.push(record);
        self.recorded.send_modify(|n| *n += 1);
        response
    }

    /// The number for what an accepted request creates, or `Err` with the number of the event
    /// a Matrix transaction already created (a duplicate, counted and not recorded again).
    fn matrix_duplicate(&self, provider: Provider, req: &Incoming) -> Result<u64, u64> {
        let id = common::next_id();
        let Some(key) = (provider == Provider::Matrix).then(|| matrix::transaction(req)).flatten() else {
            return Ok(id);
        };
        let mut log = self.log.lock().expect("lock");
        if let Some(&first) = log.transactions.get(&key) {
            log.matrix_duplicates += 1;
            return Err(first);
        }
        log.transactions.insert(key, id);
        Ok(id)
    }
}

/// The chat and push service stand-ins on one loopback port. Dropping it closes the port and
/// every connection, held ones included.
///
/// Which provider answers is told by the path:
///
/// | provider | request |
/// | --- | --- |
/// | [`Provider::Discord`] | `POST /api/webhooks/{id}/{token}` (also `/api/v10/…`; `?wait=true` answers the message) |
/// | [`Provider::Telegram`] | `POST /bot{token}/sendMessage` |
/// | [`Provider::Teams`] | `POST /teams/{anything}` |
/// | [`Provider::Mattermost`] | `POST /hooks/{id}` (26 lower-case letters and digits) |
/// | [`Provider::Ntfy`] | `POST /` (JSON publishing) |
/// | [`Provider::Pushover`] | `POST /1/messages.json` |
/// | [`Provider::Gotify`] | `POST /message` |
/// | [`Provider::Matrix`] | `PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}` |
/// | [`Provider::Generic`] | any method on `/hook` and below |
///
/// Anything else is [`Provider::Unknown`]: answered 404 and recorded as rejected.
pub struct ChatServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl ChatServer {
    /// Starts it on `127.0.0.1` and a port of its own, answering [`Mode::Ok`].
    pub async fn start() -> ChatServer {
        let shared = Arc::new(Shared {
            steer: Mutex::new(Steer::default()),
            log: Mutex::new(Log::default()),
            recorded: watch::channel(0).0,
            released: watch::channel(0).0,
            hanging: watch::channel(0).0,
            stop: watch::channel(false).0,
        });
        let handler = Arc::clone(&shared);
        let app = axum::Router::new().fallback(move |req: Request| Arc::clone(&handler).handle(req));
        let addr = serve(app, shared.stop.subscribe()).await;
        ChatServer { addr, shared }
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` (which starts with `/`) on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers every request in `mode` from now on (after any [`ChatServer::fail_next`]).
    pub fn set_mode(&self, mode: Mode) {
        self.shared.steer.lock().expect("lock").mode = mode;
    }

    /// Answers the next `n` requests, whatever their provider, in `mode`, then goes back to the
    /// mode [`ChatServer::set_mode`] set ([`Mode::Ok`] unless told otherwise). Calls add up.
    pub fn fail_next(&self, n: usize, mode: Mode) {
        self.shared.steer.lock().expect("lock").next.extend(std::iter::repeat_n(mode, n));
    }

    /// Lets every request held by [`Mode::Hang`] go on, answered as in [`Mode::Ok`].
    pub fn release(&self) {
        self.shared.released.send_modify(|generation| *generation += 1);
    }

    /// How many requests [`Mode::Hang`] holds now.
    pub fn hanging(&self) -> usize {
        *self.shared.hanging.borrow()
    }

    /// Waits until at least `n` requests are held by [`Mode::Hang`]; panics after `timeout`.
    pub async fn wait_hanging(&self, n: usize, timeout: Duration) {
        let mut hanging = self.shared.hanging.subscribe();
        if tokio::time::timeout(timeout, hanging.wait_for(|held| *held >= n)).await.is_err() {
            panic!("ChatServer: timed out after {timeout:?} waiting for {n} held requests; {} held", self.hanging());
        }
    }

    /// Requires `Authorization: Bearer {token}` on ntfy publishes (401 otherwise).
    pub fn expect_ntfy_token(&self, token: &str) {
        self.shared.steer.lock().expect("lock").tokens.ntfy = Some(token.to_owned());
    }

    /// Requires this Gotify application token (`X-Gotify-Key`, `?token=` or Bearer; 401
    /// otherwise). Without it any token passes, but one is still required, as Gotify does.
    pub fn expect_gotify_token(&self, token: &str) {
        self.shared.steer.lock().expect("lock").tokens.gotify = Some(token.to_owned());
    }

    /// Requires this Matrix access token (401 `M_UNKNOWN_TOKEN` otherwise). Without it any
    /// token passes, but one is still required (401 `M_MISSING_TOKEN`).
    pub fn expect_matrix_token(&self, token: &str) {
        self.shared.steer.lock().expect("lock").tokens.matrix = Some(token.to_owned());
    }

    /// Whether 429 answers carry a `Retry-After` header: `Some(true)` for all, `Some(false)`
    /// for none, `None` (the default) as each provider does (all but Telegram and Matrix).
    pub fn set_retry_after_header(&self, send: Option<bool>) {
        self.shared.steer.lock().expect("lock").retry_after_header = send;
    }

    /// Every request answered so far, in order (Matrix duplicates left out).
    pub fn received(&self) -> Vec<ChatRequest> {
        self.shared.log.lock().expect("lock").requests.clone()
    }

    /// The requests for `provider` that passed its checks and were answered with success.
    pub fn accepted(&self, provider: Provider) -> Vec<ChatRequest> {
        self.received().into_iter().filter(|r| r.provider == provider && r.accepted()).collect()
    }

    /// The requests that failed their provider's checks.
    pub fn rejected(&self) -> Vec<ChatRequest> {
        self.received().into_iter().filter(|r| r.rejected.is_some()).collect()
    }

    /// Panics, listing them, if any request failed its provider's checks.
    pub fn assert_no_rejections(&self) {
        let rejected = self.rejected();
        assert!(rejected.is_empty(), "ChatServer rejected:\n{}", summaries(&rejected));
    }

    /// How many Matrix sends repeated a transaction already accepted (answered with the first
    /// event's id, not recorded again).
    pub fn matrix_duplicates(&self) -> usize {
        self.shared.log.lock().expect("lock").matrix_duplicates
    }

    /// Waits until at least `n` requests for `provider` were accepted and returns them; panics
    /// after `timeout`, listing everything received.
    pub async fn wait_for(&self, provider: Provider, n: usize, timeout: Duration) -> Vec<ChatRequest> {
        let mut recorded = self.shared.recorded.subscribe();
        let enough = |_: &usize| self.accepted(provider).len() >= n;
        if tokio::time::timeout(timeout, recorded.wait_for(enough)).await.is_err() {
            let got = self.accepted(provider).len();
            panic!(
                "ChatServer: timed out after {timeout:?} waiting for {n} accepted {provider:?} requests; \
                 {got} accepted. Everything received:\n{}",
                summaries(&self.received())
            );
        }
        self.accepted(provider)
    }
}

impl Drop for ChatServer {
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
    }
}

/// One line per request.
fn summaries(requests: &[ChatRequest]) -> String {
    if requests.is_empty() {
        return "  (nothing)".to_owned();
    }
    requests.iter().map(|r| format!("  {}", r.summary())).collect::<Vec<_>>().join("\n")
}

/// Serves `app` on a loopback port of its own until `stop` turns true, then closes the port and
/// every connection, those with a request in hand included.
pub(crate) async fn serve(app: axum::Router, stop: watch::Receiver<bool>) -> SocketAddr {
    use tower::ServiceExt as _;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut stopping = stop.clone();
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
                _ = stopping.wait_for(|stop| *stop) => break,
            };
            let app = app.clone();
            let mut stop = stop.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    app.clone().oneshot(req.map(axum::body::Body::new))
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
                tokio::select! {
                    _ = connection => {}
                    _ = stop.wait_for(|stop| *stop) => {}
                }
            });
        }
    });
    addr
}
