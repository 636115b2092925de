//! `driftwatch bench delivery`: how fast durable delivery is, next to the raw HTTP rate.
//!
//! One run measures, against the same local receiver and with the same HTTP client:
//! - the raw rate: each kind's request (signed for webhooks) with no database at all;
//! - durable delivery through the real outbox and worker, in one of three shapes:
//!   - **throughput** (default): events enqueued in batches while the worker drains them; the
//!     rate from the first enqueue to the last 2xx, and each delivery's enqueue-commit -> 2xx;
//!   - **backlog** (`--backlog N`): N deliveries enqueued first, then drained; the drain rate and
//!     the peak memory while draining;
//!   - **open loop** (`--open-loop RATE --seconds S`): one event per transaction at a fixed
//!     offered rate, latency percentiles at that rate.
//!
//! Each event fans out to `--endpoints K` endpoints (all at the receiver), so K deliveries per
//! event. Each event is a real `change.detected` payload (a watch `bench#N`, a two-line diff)
//! whose body is rendered at enqueue by the channels renderer for the endpoints' kind
//! (`--kind`): the payload itself for a signed webhook, Discord's embed, Telegram's HTML
//! message, ntfy's JSON publish. The receiver is a stand-in for that kind's API (driftwatch's
//! test-support `ChatServer` is a test-only crate, never linked into the binary): it checks
//! each request's path, credentials and the provider's documented limits, answers the way the
//! provider does, and a run in which it refused anything fails.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use driftwatch_core::{Clock as _, EndpointKind, EventType, IdKind, SystemClock, new_id};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy};
use driftwatch_store::outbox::NewEvent;
use driftwatch_store::render::{Recipient, Render as _, WatchFacts};
use driftwatch_store::{Backend, Endpoint, Event, PoolOptions, Store, accounts, deliveries, endpoints, outbox};
use futures_util::StreamExt as _;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{cpu_seconds, postgres_cpu_seconds};

/// The kinds a run can be made against: those the bench has a stand-in for.
const KINDS: [EndpointKind; 4] =
    [EndpointKind::Webhook, EndpointKind::Discord, EndpointKind::Telegram, EndpointKind::Ntfy];

/// The bot token of the Telegram endpoints (plaintext: the bench's sender has no keyring).
const TELEGRAM_TOKEN: &str = "1:bench";

/// What to measure.
#[derive(Debug, Clone)]
pub struct DeliveryBench {
    /// Deliveries (and raw requests). With `open_loop`, ignored: the rate and seconds decide.
    pub count: usize,
    /// Requests in flight at once, raw and durable.
    pub concurrency: usize,
    /// The database; a temporary SQLite file when absent. Use an empty database: the worker
    /// delivers whatever is due in it.
    pub database_url: Option<String>,
    /// Events enqueued per transaction (throughput and backlog shapes).
    pub batch: usize,
    /// Tasks enqueueing side by side (throughput and backlog shapes).
    pub producers: usize,
    /// Endpoints each event fans out to.
    pub endpoints: usize,
    /// Endpoints without `max_in_flight`: the outbox claim and the per-node cap serve them,
    /// instead of the cluster-wide claim of limited endpoints.
    pub unlimited: bool,
    /// Enqueue everything first, then drain.
    pub backlog: bool,
    /// Offer this many events per second, one per transaction, for `seconds`.
    pub open_loop: Option<f64>,
    /// How long the open loop offers events.
    pub seconds: f64,
    /// The endpoints' kind: `webhook`, `discord`, `telegram` or `ntfy`.
    pub kind: EndpointKind,
}

/// Which shape a run had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Enqueue in batches while the worker drains.
    Throughput,
    /// Enqueue everything, then drain.
    Backlog,
    /// A fixed offered rate.
    OpenLoop,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The run's shape.
    pub shape: Shape,
    /// Deliveries measured.
    pub count: usize,
    /// Endpoints per event.
    pub endpoints: usize,
    /// Whether the endpoints had no `max_in_flight`.
    pub unlimited: bool,
    /// The endpoints' kind.
    pub kind: EndpointKind,
    /// Raw requests per second, no database.
    pub raw_per_second: f64,
    /// Deliveries enqueued per second.
    pub enqueue_per_second: f64,
    /// Durable deliveries per second: first enqueue to last 2xx (throughput), first to last 2xx
    /// of the drain (backlog), deliveries offered per second (open loop).
    pub durable_per_second: f64,
    /// Enqueue commit -> 2xx percentiles (p50, p90, p99, max); not measured for a backlog.
    pub latency: Option<[Duration; 4]>,
    /// Process CPU per raw request, in microseconds (client and in-process receiver).
    pub raw_cpu_us: f64,
    /// Process CPU per durable delivery, in microseconds (enqueue, worker, client, receiver).
    pub durable_cpu_us: f64,
    /// PostgreSQL's own CPU per durable delivery (its processes on this machine), if it is the store.
    pub database_cpu_us: Option<f64>,
    /// Peak anonymous resident memory while draining, and before the drain (backlog only), in MiB.
    pub rss_mib: Option<(f64, f64)>,
    /// The claim's query plan, as the database planned it with the queue full (backlog only).
    pub claim_plan: Option<String>,
    /// Requests the durable run's receiver accepted (it refused none, or the run failed).
    pub accepted: usize,
    /// Mean bytes of a delivery's body as stored (what the renderer made for the kind).
    pub body_bytes: usize,
    /// Microseconds of CPU the stand-in spends checking and answering one request, timed alone
    /// on requests built as the sender builds them: the harness's own share of the CPU figures
    /// (it runs in this process, on the same cores), HTTP parsing aside.
    pub receiver_us: f64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape = match self.shape {
            Shape::Throughput => "throughput (enqueue while draining)",
            Shape::Backlog => "backlog (enqueue all, then drain)",
            Shape::OpenLoop => "open loop (fixed offered rate, one event per transaction)",
        };
        writeln!(f, "backend            {}", self.backend)?;
        writeln!(f, "shape              {shape}")?;
        let limit = if self.unlimited { "no limits: outbox claim" } else { "max_in_flight: cluster-wide claim" };
        writeln!(
            f,
            "deliveries         {} ({} {} endpoint(s) per event, {limit}; {} B bodies)",
            self.count, self.endpoints, self.kind, self.body_bytes
        )?;
        writeln!(f, "raw request rate   {:.0}/s (same client and receiver, no database)", self.raw_per_second)?;
        writeln!(f, "enqueue rate       {:.0} deliveries/s", self.enqueue_per_second)?;
        let what = match self.shape {
            Shape::Throughput => "first enqueue to last 2xx",
            Shape::Backlog => "drain: first claim to last 2xx",
            Shape::OpenLoop => "offered",
        };
        writeln!(f, "durable rate       {:.0}/s ({what})", self.durable_per_second)?;
        writeln!(f, "durable / raw      {:.2}", self.durable_per_second / self.raw_per_second)?;
        writeln!(
            f,
            "CPU per delivery   {:.0} us raw, {:.0} us durable (whole process, receiver included)",
            self.raw_cpu_us, self.durable_cpu_us
        )?;
        if let Some(db) = self.database_cpu_us {
            writeln!(f, "database CPU       {db:.0} us per durable delivery (PostgreSQL processes)")?;
        }
        if let Some((peak, before)) = self.rss_mib {
            writeln!(
                f,
                "anonymous RSS      {before:.1} MiB before the drain, {peak:.1} MiB peak while draining (heap; mapped database pages excluded)"
            )?;
        }
        if let Some([p50, p90, p99, max]) = self.latency {
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            writeln!(
                f,
                "enqueue -> 2xx     p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                ms(p50),
                ms(p90),
                ms(p99),
                ms(max)
            )?;
        }
        writeln!(
            f,
            "receiver           {} stand-in: {} requests accepted, none refused ({})",
            self.kind,
            self.accepted,
            standin::checked(self.kind)
        )?;
        writeln!(
            f,
            "receiver cost      {:.1} us per request to check and answer (timed alone; in-process, so inside the CPU figures)",
            self.receiver_us
        )?;
        if let Some(plan) = &self.claim_plan {
            writeln!(f, "claim plan:")?;
            for line in plan.lines() {
                writeln!(f, "  {line}")?;
            }
        }
        Ok(())
    }
}

/// The local receiver: the stand-in for one kind's API, on a loopback port of its own.
struct Receiver {
    /// `http://127.0.0.1:port`, no trailing slash.
    url: String,
    shared: Arc<Shared>,
}

/// What the receiver's handler and the run share.
struct Shared {
    kind: EndpointKind,
    endpoints: usize,
    /// Receipt times by slot (`n * endpoints + k`: event n's body, endpoint k's).
    received: Mutex<Vec<Option<Instant>>>,
    /// Requests accepted so far.
    accepted: watch::Sender<usize>,
    /// Requests refused so far, and the first refusal.
    refused: AtomicUsize,
    first_refusal: Mutex<Option<String>>,
    /// Numbers what the stand-in "created" (message ids).
    next_id: AtomicU64,
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
            next_id: AtomicU64::new(0),
        }
    }

    fn answer(
        &self,
        method: &axum::http::Method,
        uri: &axum::http::Uri,
        headers: &axum::http::HeaderMap,
        body: &[u8],
    ) -> axum::response::Response {
        let at = Instant::now();
        let request = standin::Incoming { method, path: uri.path(), query: uri.query().unwrap_or(""), headers, body };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        match standin::check(self.kind, &request, self.endpoints, id) {
            Ok((k, answer)) => {
                if let Some(n) = event_number(body) {
                    let mut all = self.received.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if let Some(slot) = all.get_mut(n * self.endpoints + k) {
                        slot.get_or_insert(at);
                    }
                }
                self.accepted.send_modify(|c| *c += 1);
                answer
            }
            Err(refusal) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                self.first_refusal
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_or_insert_with(|| format!("{method} {}: {} {}", uri.path(), refusal.status, refusal.reason));
                standin::refused(self.kind, &refusal)
            }
        }
    }

    fn accepted(&self) -> usize {
        *self.accepted.borrow()
    }

    fn refused(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }

    /// Fails when the stand-in refused anything: a run with refused requests measures nothing.
    fn ensure_none_refused(&self) -> anyhow::Result<()> {
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

/// The event number in a body: the digits after the watch name's `bench#`.
fn event_number(body: &[u8]) -> Option<usize> {
    let at = body.windows(6).position(|w| w == b"bench#")? + 6;
    let digits = body[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&body[at..at + digits]).ok()?.parse().ok()
}

async fn receiver(kind: EndpointKind, capacity: usize, endpoints: usize) -> anyhow::Result<Receiver> {
    let shared = Arc::new(Shared::new(kind, capacity, endpoints));
    let handler = Arc::clone(&shared);
    let app = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let shared = Arc::clone(&handler);
        async move {
            let (parts, body) = request.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
            shared.answer(&parts.method, &parts.uri, &parts.headers, &body)
        }
    });
    let addr = crate::serve(app).await?;
    Ok(Receiver { url: format!("http://{addr}"), shared })
}

/// Stand-ins for each kind's API: the request checked the way the provider checks it (its path,
/// the credentials driftwatch put in it, its documented fields and limits) and answered the way
/// the provider answers (Discord's created message for `?wait=true`, Telegram's `ok`/`result`,
/// ntfy's published message).
mod standin {
    use axum::http::{HeaderMap, Method, StatusCode};
    use axum::response::{IntoResponse as _, Response};
    use driftwatch_core::EndpointKind;
    use serde_json::{Map, Value, json};

    /// One request as received.
    pub(super) struct Incoming<'a> {
        pub(super) method: &'a Method,
        pub(super) path: &'a str,
        pub(super) query: &'a str,
        pub(super) headers: &'a HeaderMap,
        pub(super) body: &'a [u8],
    }

    impl Incoming<'_> {
        fn header(&self, name: &str) -> &str {
            self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
        }
    }

    /// Why the provider would refuse a request, and with which status.
    pub(super) struct Refusal {
        pub(super) status: u16,
        pub(super) reason: String,
    }

    impl Refusal {
        fn new(status: u16, reason: impl Into<String>) -> Refusal {
            Refusal { status, reason: reason.into() }
        }

        fn bad(reason: impl Into<String>) -> Refusal {
            Refusal::new(400, reason)
        }
    }

    /// The endpoint a request was for (its index), and the answer.
    type Checked = Result<(usize, Response), Refusal>;

    /// What the stand-in of `kind` checks, in a few words.
    pub(super) fn checked(kind: EndpointKind) -> &'static str {
        match kind {
            EndpointKind::Webhook => "path and Standard Webhooks headers",
            EndpointKind::Discord => "webhook path and token, ?wait=true, message and embed limits",
            EndpointKind::Telegram => "bot token, sendMessage, chat_id, HTML entities, 4,096 visible characters",
            EndpointKind::Ntfy => "topic, message bytes, priority, tags, URLs",
            _ => "nothing",
        }
    }

    /// Checks `req` as an endpoint of `kind` (one of `endpoints`) would be; `id` numbers what
    /// the provider creates.
    pub(super) fn check(kind: EndpointKind, req: &Incoming<'_>, endpoints: usize, id: u64) -> Checked {
        match kind {
            EndpointKind::Webhook => webhook(req, endpoints),
            EndpointKind::Discord => discord(req, endpoints, id),
            EndpointKind::Telegram => telegram(req, endpoints, id),
            EndpointKind::Ntfy => ntfy(req, endpoints, id),
            other => Err(Refusal::new(404, format!("the bench has no {other} stand-in"))),
        }
    }

    /// The provider's error answer.
    pub(super) fn refused(kind: EndpointKind, refusal: &Refusal) -> Response {
        let (status, reason) = (refusal.status, refusal.reason.as_str());
        let body = match kind {
            EndpointKind::Discord => match status {
                400 => json!({
                    "code": 50035,
                    "message": "Invalid Form Body",
                    "errors": {"_errors": [{"code": "BASE_TYPE_BAD_REQUEST", "message": reason}]},
                }),
                404 => json!({"code": 10015, "message": "Unknown Webhook"}),
                _ => json!({"code": 0, "message": format!("{status}: {reason}")}),
            },
            EndpointKind::Telegram => json!({"ok": false, "error_code": status, "description": reason}),
            EndpointKind::Ntfy => json!({"code": u32::from(status) * 100 + 1, "http": status, "error": reason}),
            _ => return (code(status), reason.to_owned()).into_response(),
        };
        answer(status, &body)
    }

    fn code(status: u16) -> StatusCode {
        StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST)
    }

    fn answer(status: u16, body: &Value) -> Response {
        (code(status), [(axum::http::header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
    }

    fn unix_now() -> i64 {
        chrono::Utc::now().timestamp()
    }

    /// Endpoint index of a 1-based id (`1` is endpoint 0), if it is one of the bench's.
    fn index(id: u64, endpoints: usize) -> Option<usize> {
        usize::try_from(id).ok().filter(|id| (1..=endpoints).contains(id)).map(|id| id - 1)
    }

    fn chars(s: &str) -> usize {
        s.chars().count()
    }

    fn post(req: &Incoming<'_>) -> Result<(), Refusal> {
        if *req.method == Method::POST {
            Ok(())
        } else {
            Err(Refusal::new(405, format!("{} is not allowed", req.method)))
        }
    }

    /// The body as a JSON object, sent as `application/json`.
    fn json_object(req: &Incoming<'_>) -> Result<Map<String, Value>, Refusal> {
        let mime = req.header("content-type").split(';').next().unwrap_or("").trim();
        if !mime.eq_ignore_ascii_case("application/json") {
            return Err(Refusal::new(415, format!("Content-Type {mime:?} is not application/json")));
        }
        match serde_json::from_slice(req.body) {
            Ok(Value::Object(fields)) => Ok(fields),
            Ok(_) => Err(Refusal::bad("the body is not a JSON object")),
            Err(e) => Err(Refusal::bad(format!("the body is not JSON: {e}"))),
        }
    }

    /// The string field `key`; null counts as absent.
    fn text<'a>(fields: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, Refusal> {
        match fields.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(Refusal::bad(format!("{key}: {other} is not a string"))),
        }
    }

    fn http_url(s: &str) -> bool {
        reqwest::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
    }

    /// `POST /hook/{k}` with the Standard Webhooks headers.
    fn webhook(req: &Incoming<'_>, endpoints: usize) -> Checked {
        let k = req
            .path
            .strip_prefix("/hook/")
            .and_then(|k| k.parse::<usize>().ok())
            .filter(|k| *k < endpoints)
            .ok_or_else(|| Refusal::new(404, "no such hook"))?;
        post(req)?;
        let timestamp = req.header("webhook-timestamp");
        if req.header("webhook-id").is_empty()
            || timestamp.is_empty()
            || !timestamp.bytes().all(|b| b.is_ascii_digit())
            || !req.header("webhook-signature").starts_with("v1,")
        {
            return Err(Refusal::new(401, "missing or malformed webhook-id, webhook-timestamp or webhook-signature"));
        }
        Ok((k, (StatusCode::OK, "ok").into_response()))
    }

    /// Discord's execute-webhook, `POST /api/webhooks/{id}/{token}`: its documented message and
    /// embed limits; with `?wait=true` (driftwatch always asks) the message it created.
    fn discord(req: &Incoming<'_>, endpoints: usize, id: u64) -> Checked {
        let unknown = || Refusal::new(404, "Unknown Webhook");
        let (webhook, token) =
            req.path.strip_prefix("/api/webhooks/").and_then(|r| r.split_once('/')).ok_or_else(unknown)?;
        let k = webhook.parse::<u64>().ok().and_then(|w| index(w, endpoints)).ok_or_else(unknown)?;
        if token != "bench" {
            return Err(Refusal::new(401, "Invalid Webhook Token"));
        }
        post(req)?;
        let fields = json_object(req)?;
        let content = text(&fields, "content")?;
        if let Some(content) = content
            && chars(content) > 2000
        {
            return Err(Refusal::bad(format!("content: {} characters, at most 2000", chars(content))));
        }
        let embeds = match fields.get("embeds") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(embeds)) => embeds.as_slice(),
            Some(other) => return Err(Refusal::bad(format!("embeds: {other} is not an array"))),
        };
        if embeds.len() > 10 {
            return Err(Refusal::bad(format!("embeds: {}, at most 10", embeds.len())));
        }
        if content.is_none_or(str::is_empty) && embeds.is_empty() {
            return Err(Refusal::bad("Cannot send an empty message"));
        }
        if let Some(username) = text(&fields, "username")?
            && !(1..=80).contains(&chars(username))
        {
            return Err(Refusal::bad(format!("username: {} characters, 1 to 80", chars(username))));
        }
        let mut total = 0;
        for (i, embed) in embeds.iter().enumerate() {
            total += discord_embed(i, embed)?;
        }
        if total > 6000 {
            return Err(Refusal::bad(format!("embeds: {total} characters in all, at most 6000")));
        }
        if !req.query.split('&').any(|p| p == "wait=true") {
            return Ok((k, StatusCode::NO_CONTENT.into_response()));
        }
        // The message Discord created, written straight from the request's fields (no copy of
        // them as a `Value`): the stand-in's own cost counts in the run's CPU and competes with
        // driftwatch for the cores, so it is kept small.
        let quoted = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let message = format!(
            concat!(
                r#"{{"id":"{id}","type":0,"channel_id":"1200000000000000001","webhook_id":"{webhook}","#,
                r#""author":{{"id":"{webhook}","username":{username},"bot":true}},"content":{content},"#,
                r#""embeds":{embeds},"attachments":[],"mentions":[],"pinned":false,"tts":false,"timestamp":"{at}"}}"#
            ),
            id = 1_300_000_000_000_000_000 + id,
            webhook = webhook,
            username = quoted(text(&fields, "username")?.unwrap_or("driftwatch")),
            content = quoted(content.unwrap_or("")),
            embeds = serde_json::to_string(embeds).unwrap_or_default(),
            at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false),
        );
        Ok((k, (StatusCode::OK, [(axum::http::header::CONTENT_TYPE, "application/json")], message).into_response()))
    }

    /// One embed's limits; returns the characters it counts towards the message's 6,000.
    fn discord_embed(i: usize, embed: &Value) -> Result<usize, Refusal> {
        let Value::Object(embed) = embed else {
            return Err(Refusal::bad(format!("embeds[{i}]: not an object")));
        };
        let mut total = 0;
        let mut limited = |fields: &Map<String, Value>, key: &str, max: usize, required: bool| -> Result<(), Refusal> {
            match text(fields, key)? {
                None | Some("") if required => Err(Refusal::bad(format!("embeds[{i}]: {key} is required"))),
                None => Ok(()),
                Some(s) if chars(s) > max => {
                    Err(Refusal::bad(format!("embeds[{i}].{key}: {} characters, at most {max}", chars(s))))
                }
                Some(s) => {
                    total += chars(s);
                    Ok(())
                }
            }
        };
        limited(embed, "title", 256, false)?;
        limited(embed, "description", 4096, false)?;
        let object = |key: &str| match embed.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(o)) => Ok(Some(o)),
            Some(_) => Err(Refusal::bad(format!("embeds[{i}].{key}: not an object"))),
        };
        if let Some(footer) = object("footer")? {
            limited(footer, "text", 2048, true)?;
        }
        if let Some(author) = object("author")? {
            limited(author, "name", 256, true)?;
        }
        let fields = match embed.get("fields") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(fields)) => fields.as_slice(),
            Some(_) => return Err(Refusal::bad(format!("embeds[{i}].fields: not an array"))),
        };
        if fields.len() > 25 {
            return Err(Refusal::bad(format!("embeds[{i}].fields: {}, at most 25", fields.len())));
        }
        for field in fields {
            let Value::Object(field) = field else {
                return Err(Refusal::bad(format!("embeds[{i}].fields: not an object")));
            };
            limited(field, "name", 256, true)?;
            limited(field, "value", 1024, true)?;
        }
        if let Some(url) = text(embed, "url")?
            && !http_url(url)
        {
            return Err(Refusal::bad(format!("embeds[{i}].url: {url:?} is not an http(s) URL")));
        }
        if let Some(stamp) = text(embed, "timestamp")?
            && chrono::DateTime::parse_from_rfc3339(stamp).is_err()
        {
            return Err(Refusal::bad(format!("embeds[{i}].timestamp: {stamp:?} is not ISO 8601")));
        }
        match embed.get("color") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_u64().is_some_and(|c| c <= 0xFF_FFFF) => {}
            Some(other) => return Err(Refusal::bad(format!("embeds[{i}].color: {other} is not 0 to 16777215"))),
        }
        Ok(total)
    }

    /// Telegram's `POST /bot{token}/sendMessage`: the bench's bot token, a chat id of the
    /// bench's, and at most 4,096 characters once the HTML is parsed.
    fn telegram(req: &Incoming<'_>, endpoints: usize, id: u64) -> Checked {
        let (token, method) = req
            .path
            .strip_prefix("/bot")
            .and_then(|r| r.split_once('/'))
            .ok_or_else(|| Refusal::new(404, "Not Found"))?;
        if token != super::TELEGRAM_TOKEN {
            return Err(Refusal::new(401, "Unauthorized"));
        }
        if method != "sendMessage" {
            return Err(Refusal::new(404, "Not Found"));
        }
        post(req)?;
        let fields = json_object(req)?;
        let chat = fields.get("chat_id").and_then(Value::as_u64);
        let k = chat.and_then(|c| index(c, endpoints)).ok_or_else(|| Refusal::bad("Bad Request: chat not found"))?;
        let message = text(&fields, "text")?.unwrap_or("");
        let visible = match text(&fields, "parse_mode")? {
            None | Some("") => message.to_owned(),
            Some("HTML") => telegram_visible(message)
                .map_err(|e| Refusal::bad(format!("Bad Request: can't parse entities: {e}")))?,
            Some(other) => return Err(Refusal::bad(format!("Bad Request: unsupported parse_mode {other:?}"))),
        };
        if visible.trim().is_empty() {
            return Err(Refusal::bad("Bad Request: message text is empty"));
        }
        if chars(&visible) > 4096 {
            return Err(Refusal::bad("Bad Request: message is too long"));
        }
        match fields.get("link_preview_options") {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(other) => return Err(Refusal::bad(format!("link_preview_options: {other} is not an object"))),
        }
        let result = json!({
            "message_id": id,
            "from": {"id": 1, "is_bot": true, "first_name": "bench", "username": "bench_bot"},
            "chat": {"id": chat, "first_name": "bench", "type": "private"},
            "date": unix_now(),
            "text": visible,
            "link_preview_options": {"is_disabled": true},
        });
        Ok((k, answer(200, &json!({"ok": true, "result": result}))))
    }

    /// The text of Telegram HTML as a reader sees it: only the tags Telegram supports, nested
    /// properly, and `&` only in the entities it knows.
    fn telegram_visible(html: &str) -> Result<String, String> {
        const TAGS: [&str; 16] = [
            "b",
            "strong",
            "i",
            "em",
            "u",
            "ins",
            "s",
            "strike",
            "del",
            "span",
            "tg-spoiler",
            "a",
            "code",
            "pre",
            "blockquote",
            "tg-emoji",
        ];
        let mut visible = String::with_capacity(html.len());
        let mut open: Vec<&str> = Vec::new();
        let mut rest = html;
        while let Some(c) = rest.chars().next() {
            match c {
                '<' => {
                    let end = rest.find('>').ok_or("a tag is not closed")?;
                    let tag = &rest[1..end];
                    let (closing, tag) = tag.strip_prefix('/').map_or((false, tag), |t| (true, t));
                    let name = tag.split_whitespace().next().unwrap_or("");
                    if !TAGS.contains(&name) {
                        return Err(format!("unsupported tag \"{name}\""));
                    }
                    if closing {
                        if open.pop() != Some(name) {
                            return Err(format!("unexpected end tag \"{name}\""));
                        }
                    } else {
                        open.push(name);
                    }
                    rest = &rest[end + 1..];
                }
                '&' => {
                    let end = rest.find(';').filter(|e| *e <= 10).ok_or("an & is not an entity")?;
                    let decoded = match &rest[1..end] {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "quot" => '"',
                        numeric => numeric
                            .strip_prefix('#')
                            .and_then(|n| match n.strip_prefix(['x', 'X']) {
                                Some(hex) => u32::from_str_radix(hex, 16).ok(),
                                None => n.parse().ok(),
                            })
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("unknown entity &{numeric};"))?,
                    };
                    visible.push(decoded);
                    rest = &rest[end + 1..];
                }
                c => {
                    visible.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        match open.last() {
            Some(name) => Err(format!("tag \"{name}\" is not closed")),
            None => Ok(visible),
        }
    }

    /// ntfy's JSON publish, `POST /` with the topic in the body: a topic of the bench's
    /// (`bench-{k+1}`), at most 4,096 bytes of message, its field types.
    fn ntfy(req: &Incoming<'_>, endpoints: usize, id: u64) -> Checked {
        if req.path != "/" {
            return Err(Refusal::new(404, "page not found"));
        }
        if *req.method != Method::POST && *req.method != Method::PUT {
            return Err(Refusal::new(405, format!("{} is not allowed", req.method)));
        }
        let fields = json_object(req)?;
        let topic = text(&fields, "topic")?.unwrap_or("");
        if !(1..=64).contains(&topic.len())
            || !topic.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(Refusal::bad(format!("invalid topic {topic:?}")));
        }
        let k = topic
            .strip_prefix("bench-")
            .and_then(|n| n.parse::<u64>().ok())
            .and_then(|n| index(n, endpoints))
            .ok_or_else(|| Refusal::bad(format!("topic {topic:?} is none of the bench's")))?;
        let message = text(&fields, "message")?.unwrap_or("");
        if message.len() > 4096 {
            return Err(Refusal::bad(format!("message: {} bytes, at most 4096", message.len())));
        }
        let title = text(&fields, "title")?;
        match fields.get("tags") {
            None | Some(Value::Null) => {}
            Some(Value::Array(tags)) if tags.iter().all(Value::is_string) => {}
            Some(other) => return Err(Refusal::bad(format!("tags: {other} is not an array of strings"))),
        }
        match fields.get("priority") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_i64().is_some_and(|p| (1..=5).contains(&p)) => {}
            Some(other) => return Err(Refusal::bad(format!("priority: {other} is not 1 to 5"))),
        }
        for key in ["click", "icon", "attach"] {
            if let Some(url) = text(&fields, key)?
                && !http_url(url)
                && !(key == "click" && url.starts_with("mailto:"))
            {
                return Err(Refusal::bad(format!("{key}: {url:?} is not a URL")));
            }
        }
        let now = unix_now();
        let mut published = json!({
            "id": format!("bench{id:010}"),
            "time": now,
            "expires": now + 43_200,
            "event": "message",
            "topic": topic,
            "message": if message.is_empty() { "triggered" } else { message },
        });
        if let Some(title) = title {
            published["title"] = json!(title);
        }
        Ok((k, answer(200, &published)))
    }
}

/// An endpoint of `kind` at the receiver `base`, the `k`-th of the account's: each kind's URL,
/// settings and (plaintext) secrets, as an operator would enter them for that provider.
fn endpoint(kind: EndpointKind, account_id: &str, base: &str, k: usize, max_in_flight: Option<usize>) -> Endpoint {
    let (url, settings, secrets) = match kind {
        EndpointKind::Discord => (format!("{base}/api/webhooks/{}/bench", k + 1), "{}".to_owned(), None),
        EndpointKind::Telegram => (
            base.to_owned(),
            serde_json::json!({"chat_id": k + 1}).to_string(),
            Some(serde_json::json!({"bot_token": TELEGRAM_TOKEN}).to_string()),
        ),
        EndpointKind::Ntfy => {
            (base.to_owned(), serde_json::json!({"topic": format!("bench-{}", k + 1)}).to_string(), None)
        }
        _ => (format!("{base}/hook/{k}"), "{}".to_owned(), None),
    };
    Endpoint {
        kind: kind.as_str().to_owned(),
        description: "bench".into(),
        max_in_flight: max_in_flight.map(|n| n as i32),
        settings,
        secrets,
        ..Endpoint::webhook(account_id, &url, SystemClock.now().naive_utc())
    }
}

/// Event `n`'s payload: a real `change.detected` about the watch `bench#n`.
fn change_payload(n: usize, event_id: &str) -> String {
    let change = driftwatch_diff::diff_texts(
        "Espresso machine\nPrice: 129.00 EUR\nIn stock\n",
        &format!("Espresso machine\nPrice: {n}.00 EUR\nIn stock\n"),
        "snp_a",
        "snp_b",
    );
    driftwatch_alert::change_payload(
        event_id,
        driftwatch_alert::WatchRef {
            id: "wat_bench",
            name: &format!("bench#{n}"),
            url: "https://shop.example/espresso",
        },
        &change,
        driftwatch_alert::SnapshotPair { previous: "snp_a", current: "snp_b" },
        chrono::Utc::now(),
    )
}

/// Event `n` of the account: a `change.detected` with its payload.
fn bench_event(n: usize, account_id: &str, now: chrono::NaiveDateTime) -> Event {
    let id = new_id(IdKind::Event);
    Event {
        payload: change_payload(n, &id),
        id,
        account_id: account_id.to_owned(),
        watch_id: None,
        endpoint_id: None,
        event_type: EventType::ChangeDetected.as_str().into(),
        previous_snapshot_id: None,
        snapshot_id: None,
        added: 1,
        removed: 1,
        created_at: now,
    }
}

/// Enqueues one event per `n` in `events`, to every endpoint of the account, in one transaction
/// (the way a batch of checks queues its changes).
fn enqueue_batch(
    c: &mut driftwatch_store::DbConn,
    render: &dyn driftwatch_store::render::Render,
    account_id: &str,
    events: std::ops::Range<usize>,
) -> driftwatch_store::StoreResult<()> {
    driftwatch_store::transaction(c, |c| {
        let now = SystemClock.now().naive_utc();
        let batch: Vec<_> = events.map(|n| NewEvent { event: bench_event(n, account_id, now) }).collect();
        let events: Vec<_> = batch.iter().map(|new| (new, 5, now)).collect();
        outbox::enqueue_many(c, render, &events)?;
        Ok(())
    })
}

/// The body the channels renderer makes of `event` for `to` (what the outbox stores).
fn render(channels: &driftwatch_channels::Channels, to: &Endpoint, event: &Event) -> Result<Vec<u8>, String> {
    let recipient = Recipient {
        id: &to.id,
        kind: &to.kind,
        settings: &to.settings,
        title_template: to.title_template.as_deref(),
        body_template: to.body_template.as_deref(),
    };
    channels.body(&recipient, event, WatchFacts::default())
}

/// The request the sender makes of event `n` for endpoint `k` of `kind` at `base`: the body
/// rendered by the channels renderer, method, URL and headers by `outgoing::request`, and for a
/// webhook the signature headers (placeholders: the stand-in checks their presence).
fn sample_request(
    kind: EndpointKind,
    n: usize,
    k: usize,
    base: &str,
) -> anyhow::Result<(axum::http::Method, axum::http::Uri, axum::http::HeaderMap, Vec<u8>)> {
    use axum::http::{HeaderMap, HeaderName, HeaderValue, Method};
    let to = endpoint(kind, "acc_bench", base, k, None);
    let event = bench_event(n, "acc_bench", SystemClock.now().naive_utc());
    let body = render(&driftwatch_channels::Channels::new(None), &to, &event).map_err(anyhow::Error::msg)?;
    let settings = driftwatch_channels::Settings::parse(&to.settings);
    let secrets = driftwatch_channels::Secrets::parse(to.secrets.as_deref().unwrap_or(""));
    let out = driftwatch_channels::outgoing::request(kind, &to.url, &settings, &secrets, "dlv_bench", &body)
        .map_err(anyhow::Error::msg)?;
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_str(&out.content_type)?);
    if out.signed {
        headers.insert("webhook-id", HeaderValue::from_static("dlv_bench"));
        headers.insert("webhook-timestamp", HeaderValue::from_static("1700000000"));
        headers.insert("webhook-signature", HeaderValue::from_static("v1,c2lnbmF0dXJl"));
    }
    for (name, value) in &out.headers {
        headers.insert(HeaderName::from_bytes(name.as_bytes())?, HeaderValue::from_str(value)?);
    }
    Ok((Method::from_bytes(out.method.as_bytes())?, out.url.parse()?, headers, out.body.into_owned()))
}

/// Microseconds of CPU the stand-in of `kind` takes to check and answer one request, timed
/// alone (one thread, nothing else running) over requests built as the sender builds them.
fn standin_cost(kind: EndpointKind) -> f64 {
    const N: usize = 2000;
    let Ok(requests) =
        (0..N).map(|n| sample_request(kind, n, 0, "http://127.0.0.1:9")).collect::<anyhow::Result<Vec<_>>>()
    else {
        return f64::NAN;
    };
    let shared = Shared::new(kind, N, 1);
    let started = Instant::now();
    for (method, uri, headers, body) in &requests {
        drop(std::hint::black_box(shared.answer(method, uri, headers, body)));
    }
    let elapsed = started.elapsed();
    if shared.refused() > 0 { f64::NAN } else { elapsed.as_secs_f64() * 1e6 / N as f64 }
}

/// The raw rate: the same client and the same kind's request (rendered, signed for webhooks),
/// straight at a receiver. Returns the rate, the CPU per request and the mean body size.
async fn raw(kind: EndpointKind, count: usize, concurrency: usize) -> anyhow::Result<(f64, f64, usize)> {
    let raw = receiver(kind, count, 1).await?;
    let sender = crate::sender()?;
    let channels = driftwatch_channels::Channels::new(None);
    let target = endpoint(kind, "acc_bench", &raw.url, 0, Some(concurrency));
    let bytes = AtomicUsize::new(0);
    let started = Instant::now();
    let cpu = cpu_seconds();
    let ok = futures_util::stream::iter(0..count)
        .map(|n| {
            let (sender, target, channels, bytes) = (&sender, &target, &channels, &bytes);
            async move {
                let event = bench_event(n, "acc_bench", SystemClock.now().naive_utc());
                let body = render(channels, target, &event)?;
                bytes.fetch_add(body.len(), Ordering::Relaxed);
                let id = new_id(IdKind::Delivery);
                Ok::<_, String>(
                    sender.send(target, &id, "change.detected", 1, &body, SystemClock.now().timestamp()).await,
                )
            }
        })
        .buffer_unordered(concurrency)
        .filter(|r| {
            std::future::ready(
                matches!(r, Ok(sent) if matches!(sent.outcome, driftwatch_delivery::Outcome::Status(200..=299))),
            )
        })
        .count()
        .await;
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu;
    raw.shared.ensure_none_refused()?;
    anyhow::ensure!(ok == count, "the raw run got {ok} of {count} 2xx answers");
    Ok((count as f64 / elapsed.as_secs_f64(), cpu * 1e6 / count as f64, bytes.into_inner() / count.max(1)))
}

/// Runs the benchmark.
pub async fn delivery(bench: &DeliveryBench) -> anyhow::Result<Report> {
    let kind = bench.kind;
    anyhow::ensure!(
        KINDS.contains(&kind),
        "the bench has no stand-in for {kind}: use one of {}",
        KINDS.map(EndpointKind::as_str).join(", ")
    );
    let concurrency = bench.concurrency.max(1);
    let fan_out = bench.endpoints.max(1);
    let unlimited = bench.unlimited;
    let shape = match (bench.open_loop, bench.backlog) {
        (Some(_), _) => Shape::OpenLoop,
        (None, true) => Shape::Backlog,
        (None, false) => Shape::Throughput,
    };
    let events = match bench.open_loop {
        Some(rate) => ((rate * bench.seconds).round() as usize).max(1),
        None => bench.count.max(1).div_ceil(fan_out),
    };
    let count = events * fan_out;
    let (raw_per_second, raw_cpu_us, body_bytes) = raw(kind, count.min(200_000), concurrency).await?;

    let dir = tempfile::tempdir()?;
    let url = match &bench.database_url {
        Some(url) => url.clone(),
        None => format!("sqlite://{}", dir.path().join("bench.db").display()),
    };
    // Bodies rendered at enqueue by the channels renderer, as the binary wires it.
    let store = Store::open(&url, &PoolOptions { max_size: 8, ..PoolOptions::default() })?
        .with_render(Arc::new(driftwatch_channels::Channels::new(None)));
    store.migrate().await?;
    let durable = receiver(kind, count, fan_out).await?;
    let base = durable.url.clone();
    let account_id = store
        .write(move |c| {
            let account = accounts::create_account(c, &new_id(IdKind::Account), SystemClock.now().naive_utc())?;
            for k in 0..fan_out {
                let max_in_flight = (!unlimited).then_some(concurrency);
                endpoints::insert_endpoint(c, &endpoint(kind, &account.id, &base, k, max_in_flight))?;
            }
            Ok(account.id)
        })
        .await?;
    let worker = DeliveryWorker::new(
        store.clone(),
        crate::sender()?,
        Arc::new(SystemClock),
        DeliveryConfig {
            concurrency,
            per_endpoint_concurrency: concurrency,
            batch_size: 200,
            retry: RetryPolicy { max_attempts: 5, ..RetryPolicy::default() },
            node_id: "bench".into(),
            ..DeliveryConfig::default()
        },
    );
    let shutdown = CancellationToken::new();
    let enqueued = Arc::new(Mutex::new(vec![None; events]));
    let mut running = None;
    if shape != Shape::Backlog {
        running = Some(tokio::spawn(worker.clone().run(shutdown.clone())));
    }
    let started = Instant::now();
    let cpu = cpu_seconds();
    let database_cpu = postgres_cpu_seconds();
    match bench.open_loop {
        Some(rate) => offer(&store, &worker, &account_id, events, rate, &enqueued).await?,
        None => produce(&store, &worker, &account_id, events, bench, &enqueued).await?,
    }
    let enqueue_elapsed = started.elapsed();
    let mut rss_mib = None;
    let mut claim_plan = None;
    let (drain_started, drain_cpu, drain_database_cpu) = if shape == Shape::Backlog {
        let now = SystemClock.now().naive_utc();
        claim_plan = Some(store.read(move |c| deliveries::explain_claim(c, now)).await?);
        let before = rss_mib_now();
        running = Some(tokio::spawn(worker.clone().run(shutdown.clone())));
        rss_mib = Some((before, before));
        (Instant::now(), cpu_seconds(), postgres_cpu_seconds())
    } else {
        (started, cpu, database_cpu)
    };
    let mut seen = durable.shared.accepted.subscribe();
    let mut peak = rss_mib.map_or(0.0, |(p, _)| p);
    let wait = async {
        // Progress: the last count accepted and when it moved.
        let mut progress = (0, Instant::now());
        loop {
            tokio::select! {
                changed = seen.wait_for(|n| *n >= count) => { changed?; return anyhow::Ok(()); }
                () = tokio::time::sleep(Duration::from_millis(250)) => {
                    peak = peak.max(rss_mib_now());
                    durable.shared.ensure_none_refused()?;
                    let accepted = durable.shared.accepted();
                    if accepted != progress.0 {
                        progress = (accepted, Instant::now());
                    } else if progress.1.elapsed() > Duration::from_secs(15) {
                        // Stalled: a body the renderer refused is dead-lettered at enqueue and
                        // never sent; say so rather than wait out the hour.
                        let account = account_id.clone();
                        let statuses = store.read(move |c| deliveries::count_by_status(c, &account)).await?;
                        let dead = statuses.iter().find(|(s, _)| s == "dead").map_or(0, |(_, n)| *n);
                        anyhow::ensure!(
                            dead == 0,
                            "{dead} deliveries were dead-lettered ({accepted} of {count} accepted): {statuses:?}"
                        );
                        progress.1 = Instant::now();
                    }
                }
            }
        }
    };
    let waited = tokio::time::timeout(Duration::from_secs(3600), wait)
        .await
        .context("the durable run did not finish in an hour")
        .and_then(|done| done);
    let durable_elapsed = drain_started.elapsed();
    let cpu = cpu_seconds() - if shape == Shape::Backlog { cpu } else { drain_cpu };
    let database_cpu = postgres_cpu_seconds() - if shape == Shape::Backlog { database_cpu } else { drain_database_cpu };
    if let Some((_, before)) = rss_mib {
        rss_mib = Some((peak.max(rss_mib_now()), before));
    }
    shutdown.cancel();
    if let Some(running) = running {
        let _ = running.await;
    }
    waited?;
    durable.shared.ensure_none_refused()?;

    let latency = (shape != Shape::Backlog).then(|| {
        let enqueued = enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let received = durable.shared.received.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut latencies: Vec<Duration> = received
            .iter()
            .enumerate()
            .filter_map(|(slot, r)| Some(r.as_ref()?.saturating_duration_since(*enqueued[slot / fan_out].as_ref()?)))
            .collect();
        latencies.sort();
        let pick =
            |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
        [pick(0.50), pick(0.90), pick(0.99), pick(1.0)]
    });
    let durable_per_second = match bench.open_loop {
        Some(rate) => rate * fan_out as f64,
        None => count as f64 / durable_elapsed.as_secs_f64(),
    };
    Ok(Report {
        backend: store.backend().as_str(),
        shape,
        count,
        endpoints: fan_out,
        unlimited,
        kind,
        raw_per_second,
        enqueue_per_second: count as f64 / enqueue_elapsed.as_secs_f64(),
        durable_per_second,
        latency,
        raw_cpu_us,
        durable_cpu_us: cpu * 1e6 / count as f64,
        database_cpu_us: (store.backend() == Backend::Postgres).then(|| database_cpu * 1e6 / count as f64),
        rss_mib,
        claim_plan,
        accepted: durable.shared.accepted(),
        body_bytes,
        receiver_us: standin_cost(kind),
    })
}

/// Enqueues `events` in batches from several producers, waking the worker after each.
async fn produce(
    store: &Store,
    worker: &DeliveryWorker,
    account_id: &str,
    events: usize,
    bench: &DeliveryBench,
    enqueued: &Arc<Mutex<Vec<Option<Instant>>>>,
) -> anyhow::Result<()> {
    let batch = bench.batch.max(1);
    let producers = bench.producers.max(1);
    let mut tasks = Vec::new();
    for p in 0..producers {
        let (store, worker, enqueued, account_id) =
            (store.clone(), worker.clone(), Arc::clone(enqueued), account_id.to_owned());
        tasks.push(tokio::spawn(async move {
            // Producer p takes every producers-th batch.
            for first in (p * batch..events).step_by(batch * producers) {
                let last = (first + batch).min(events);
                let account_id = account_id.clone();
                let render = store.render();
                store.write(move |c| enqueue_batch(c, &*render, &account_id, first..last)).await?;
                let at = Instant::now();
                enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[first..last].fill(Some(at));
                worker.wake();
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await?.context("enqueueing")?;
    }
    Ok(())
}

/// Offers one event per transaction at `rate` per second: each enqueue is its own task, so a
/// slow commit never lowers the offered rate.
async fn offer(
    store: &Store,
    worker: &DeliveryWorker,
    account_id: &str,
    events: usize,
    rate: f64,
    enqueued: &Arc<Mutex<Vec<Option<Instant>>>>,
) -> anyhow::Result<()> {
    anyhow::ensure!(rate > 0.0, "--open-loop needs a rate above 0");
    let start = tokio::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..events {
        tokio::time::sleep_until(start + Duration::from_secs_f64(n as f64 / rate)).await;
        let (store, worker, enqueued, account_id) =
            (store.clone(), worker.clone(), Arc::clone(enqueued), account_id.to_owned());
        tasks.spawn(async move {
            let render = store.render();
            store.write(move |c| enqueue_batch(c, &*render, &account_id, n..n + 1)).await?;
            enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[n] = Some(Instant::now());
            worker.wake();
            anyhow::Ok(())
        });
        while let Some(done) = tasks.try_join_next() {
            done?.context("enqueueing")?;
        }
    }
    while let Some(done) = tasks.join_next().await {
        done?.context("enqueueing")?;
    }
    Ok(())
}

/// Anonymous resident memory of this process now (heap and stacks: what loading rows would
/// grow), in MiB. The database file's pages mapped by SQLite (`RssFile`) are left out: they are
/// the page cache's, shared and reclaimable.
fn rss_mib_now() -> f64 {
    crate::status_mib("RssAnon")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, Method};
    use serde_json::{Value, json};

    fn ask(kind: EndpointKind, method: &Method, url: &str, headers: &HeaderMap, body: &[u8]) -> Result<usize, String> {
        let url = reqwest::Url::parse(url).expect("url");
        let req = standin::Incoming { method, path: url.path(), query: url.query().unwrap_or(""), headers, body };
        standin::check(kind, &req, 3, 1).map(|(k, _)| k).map_err(|r| format!("{} {}", r.status, r.reason))
    }

    /// The stand-in's verdict on the request the sender makes of event `n` for endpoint `k`
    /// of 3: the body rendered by the channels renderer, the request by `outgoing::request`.
    fn sent(kind: EndpointKind, n: usize, k: usize) -> Result<usize, String> {
        let (method, uri, headers, body) = sample_request(kind, n, k, "http://127.0.0.1:9").expect("request");
        assert_eq!(event_number(&body), Some(n), "{kind}: {}", String::from_utf8_lossy(&body));
        ask(kind, &method, &uri.to_string(), &headers, &body)
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

    #[tokio::test]
    async fn discord_answers_with_the_message_it_created() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", "application/json".parse().expect("header"));
        let sent = json!({"username": "driftwatch", "embeds": [{"title": "bench#7 \"changed\"", "color": 1}]});
        let body = sent.to_string();
        let url = reqwest::Url::parse("http://h/api/webhooks/2/bench?wait=true").expect("url");
        let req = standin::Incoming {
            method: &Method::POST,
            path: url.path(),
            query: url.query().unwrap_or(""),
            headers: &headers,
            body: body.as_bytes(),
        };
        let Ok((k, answer)) = standin::check(EndpointKind::Discord, &req, 3, 5) else { panic!("refused") };
        assert_eq!((k, answer.status().as_u16()), (1, 200));
        let bytes = axum::body::to_bytes(answer.into_body(), 1 << 20).await.expect("body");
        let message: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!((&message["embeds"], &message["webhook_id"]), (&sent["embeds"], &json!("2")));
        assert!(chrono::DateTime::parse_from_rfc3339(message["timestamp"].as_str().expect("timestamp")).is_ok());
    }

    #[test]
    fn provider_rules_bite() {
        let json_headers = || {
            let mut headers = HeaderMap::new();
            headers.insert("content-type", "application/json".parse().expect("header"));
            headers
        };
        let post = |kind, url: &str, body: Value| {
            ask(kind, &Method::POST, url, &json_headers(), body.to_string().as_bytes()).expect_err("refused")
        };
        let discord = "http://h/api/webhooks/1/bench?wait=true";
        assert!(post(EndpointKind::Discord, discord, json!({"embeds": [{"title": "t".repeat(257)}]})).contains("257"));
        assert!(post(EndpointKind::Discord, discord, json!({"content": ""})).contains("empty"));
        let total = json!({"embeds": [{"description": "d".repeat(4000)}, {"description": "d".repeat(4000)}]});
        assert!(post(EndpointKind::Discord, discord, total).contains("8000"));
        assert!(
            post(EndpointKind::Discord, "http://h/api/webhooks/1/other", json!({"content": "x"})).starts_with("401")
        );
        let telegram = "http://h/bot1:bench/sendMessage";
        let html = |text: &str| json!({"chat_id": 1, "text": text, "parse_mode": "HTML"});
        assert!(post(EndpointKind::Telegram, telegram, html("<div>x</div>")).contains("unsupported tag"));
        assert!(post(EndpointKind::Telegram, telegram, html("a & b")).contains("entity"));
        assert!(post(EndpointKind::Telegram, telegram, html("<b>x")).contains("not closed"));
        assert!(post(EndpointKind::Telegram, telegram, html(&"é".repeat(4097))).contains("too long"));
        assert!(post(EndpointKind::Telegram, "http://h/bot2:other/sendMessage", html("x")).starts_with("401"));
        assert!(post(EndpointKind::Ntfy, "http://h/", json!({"topic": "bench 1"})).contains("invalid topic"));
        assert!(post(EndpointKind::Ntfy, "http://h/", json!({"topic": "bench-1", "priority": 6})).contains("priority"));
        let text = ask(EndpointKind::Discord, &Method::POST, discord, &HeaderMap::new(), b"{\"content\":\"x\"}");
        assert!(text.expect_err("no content type").starts_with("415"));
    }
}
