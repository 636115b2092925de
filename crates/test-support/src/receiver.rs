//! A webhook receiver: records every request and answers as the test says, when it says.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use driftwatch_core::{Clock as _, SystemClock};
use serde_json::Value;
use tokio::sync::watch;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// Its headers, names lower case.
    pub headers: HashMap<String, String>,
    /// Its body, byte for byte.
    pub body: Bytes,
    /// When it arrived (passed the gate).
    pub at: std::time::Instant,
}

impl Received {
    /// The header `name` (lower case), or `""`.
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("webhook body is JSON")
    }

    /// Verifies the Standard Webhooks signature with `secret`.
    pub fn verify(&self, secret: &str) -> Result<(), driftwatch_delivery::VerifyError> {
        driftwatch_delivery::verify(
            secret,
            self.header("webhook-id"),
            self.header("webhook-timestamp"),
            self.header("webhook-signature"),
            &self.body,
            SystemClock.now().timestamp(),
            300,
        )
    }
}

/// A check of every request a receiver gets: `Err` says what is wrong with it.
pub type BodyCheck = fn(&Received) -> Result<(), String>;

/// The check every receiver of this process runs, once a suite installed one.
static BODY_CHECK: std::sync::OnceLock<BodyCheck> = std::sync::OnceLock::new();

/// Has every [`Receiver`] of this process run `check` on each request it gets (the e2e suite
/// holds webhook bodies to the OpenAPI document's `webhooks` this way). A failed check fails
/// the test when it reads what the receiver got, or drops the receiver. The first check
/// installed stays.
pub fn check_every_request(check: BodyCheck) {
    let _ = BODY_CHECK.set(check);
}

/// How the receiver answers, set on cue.
#[derive(Debug, Clone)]
struct Answer {
    status: u16,
    body: Vec<u8>,
    retry_after: Option<String>,
    delay: Duration,
}

/// What the handler and the test share.
struct Shared {
    answer: Mutex<Answer>,
    /// Open to let requests through.
    gate: watch::Sender<bool>,
    /// Every request that passed the gate, in order.
    received: Mutex<Vec<Received>>,
    /// What the installed [`BodyCheck`] found wrong, one line per request.
    faults: Mutex<Vec<String>>,
    /// How many passed the gate.
    arrived: watch::Sender<usize>,
    /// The `webhook-id` of every request answered, in order, repeats included.
    answered: Mutex<Vec<String>>,
    /// The distinct ids answered, so waiting for all of them costs nothing per request.
    distinct: Mutex<HashSet<String>>,
    /// How many distinct ids were answered.
    answered_distinct: watch::Sender<usize>,
}

impl Shared {
    async fn handle(&self, headers: HeaderMap, body: Bytes) -> Response {
        let _ = self.gate.subscribe().wait_for(|open| *open).await;
        let headers: HashMap<String, String> =
            headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect();
        let id = headers.get("webhook-id").cloned().unwrap_or_default();
        // Decide the answer before anyone can see this request arrived.
        let answer = self.answer.lock().expect("lock").clone();
        let received = Received { headers, body, at: std::time::Instant::now() };
        if let Some(Err(fault)) = BODY_CHECK.get().map(|check| check(&received)) {
            self.faults.lock().expect("lock").push(fault);
        }
        let n = {
            let mut all = self.received.lock().expect("lock");
            all.push(received);
            all.len()
        };
        self.arrived.send_replace(n);
        if !answer.delay.is_zero() {
            tokio::time::sleep(answer.delay).await;
        }
        self.answered.lock().expect("lock").push(id.clone());
        let distinct = {
            let mut distinct = self.distinct.lock().expect("lock");
            distinct.insert(id);
            distinct.len()
        };
        self.answered_distinct.send_replace(distinct);
        let mut response = (StatusCode::from_u16(answer.status).expect("status"), answer.body).into_response();
        if let Some(value) = answer.retry_after {
            response.headers_mut().insert("retry-after", value.parse().expect("header value"));
        }
        response
    }
}

/// A webhook receiver on loopback that records every request and answers with a status set on
/// cue. It can answer late ([`Receiver::set_delay`]) and hold requests at a gate until the test
/// opens it ([`Receiver::close_gate`]), to keep many deliveries in flight at once.
///
/// A request *arrives* when it passes the gate ([`Receiver::received`]) and is *answered* once
/// the delay has passed ([`Receiver::answered`]).
pub struct Receiver {
    /// The hook's URL.
    pub url: String,
    shared: Arc<Shared>,
}

impl Receiver {
    /// Starts it, answering `status` at once, its gate open.
    pub async fn start(status: u16) -> Receiver {
        let shared = Arc::new(Shared {
            answer: Mutex::new(Answer {
                status,
                body: b"receiver says hi".to_vec(),
                retry_after: None,
                delay: Duration::ZERO,
            }),
            gate: watch::channel(true).0,
            received: Mutex::new(Vec::new()),
            faults: Mutex::new(Vec::new()),
            arrived: watch::channel(0).0,
            answered: Mutex::new(Vec::new()),
            distinct: Mutex::new(HashSet::new()),
            answered_distinct: watch::channel(0).0,
        });
        let handler = Arc::clone(&shared);
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap, body: Bytes| {
                let shared = Arc::clone(&handler);
                async move { shared.handle(headers, body).await }
            }),
        );
        let addr = crate::serve(app).await;
        Receiver { url: format!("http://{addr}/hook"), shared }
    }

    /// Answers with `status` from now on.
    pub fn set_status(&self, status: u16) {
        self.shared.answer.lock().expect("lock").status = status;
    }

    /// Answers with these bytes from now on (any bytes: NUL, invalid UTF-8).
    pub fn set_body(&self, body: &[u8]) {
        self.shared.answer.lock().expect("lock").body = body.to_vec();
    }

    /// Sends `Retry-After: value` with every answer (or none).
    pub fn set_retry_after(&self, value: Option<&str>) {
        self.shared.answer.lock().expect("lock").retry_after = value.map(str::to_owned);
    }

    /// Answers only after `delay` (a slow or hanging receiver).
    pub fn set_delay(&self, delay: Duration) {
        self.shared.answer.lock().expect("lock").delay = delay;
    }

    /// Holds every request at the gate until [`Receiver::open_gate`].
    pub fn close_gate(&self) {
        self.shared.gate.send_replace(false);
    }

    /// Lets the held requests, and every one after them, through.
    pub fn open_gate(&self) {
        self.shared.gate.send_replace(true);
    }

    /// Every request that arrived so far, in order. Panics when one failed the installed
    /// check ([`check_every_request`]).
    pub fn received(&self) -> Vec<Received> {
        self.assert_checked();
        self.shared.received.lock().expect("lock").clone()
    }

    /// Panics with what the installed check found wrong, if anything.
    fn assert_checked(&self) {
        let faults = self.shared.faults.lock().expect("lock").clone();
        assert!(faults.is_empty(), "the receiver at {} got requests that fail the check: {faults:#?}", self.url);
    }

    /// The `webhook-id` of every request answered so far, in order, repeats included.
    pub fn answered(&self) -> Vec<String> {
        self.shared.answered.lock().expect("lock").clone()
    }

    /// Waits until at least `n` requests arrived (at most 15 seconds); returns all so far.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        self.wait_for_within(n, Duration::from_secs(15)).await
    }

    /// Waits until at least `n` requests arrived (at most `limit`); returns all so far.
    pub async fn wait_for_within(&self, n: usize, limit: Duration) -> Vec<Received> {
        let mut arrived = self.shared.arrived.subscribe();
        tokio::time::timeout(limit, arrived.wait_for(|a| *a >= n))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {n} webhooks; got {}", self.received().len()))
            .expect("receiver alive");
        self.received()
    }

    /// Waits (at most `limit`) until at least `n` requests are held: arrived, not yet answered.
    pub async fn wait_in_flight(&self, n: usize, limit: Duration) {
        let mut arrived = self.shared.arrived.subscribe();
        let answered = || self.shared.answered.lock().expect("lock").len();
        tokio::time::timeout(limit, arrived.wait_for(|a| a.saturating_sub(answered()) >= n))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {n} requests in flight"))
            .expect("receiver alive");
    }

    /// Waits (at most `limit`) until `n` distinct webhook ids were answered; panics naming
    /// `what` when it runs out.
    pub async fn wait_answered(&self, n: usize, limit: Duration, what: &str) {
        let mut distinct = self.shared.answered_distinct.subscribe();
        tokio::time::timeout(limit, distinct.wait_for(|seen| *seen >= n))
            .await
            .unwrap_or_else(|_| panic!("{what}: {} of {n} arrived", *self.shared.answered_distinct.borrow()))
            .expect("receiver alive");
    }
}

impl Drop for Receiver {
    /// A test that never read what it got is still failed by a request that fails the check.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.assert_checked();
        }
    }
}
