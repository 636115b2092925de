//! The JSON shapes of resources. Times are RFC 3339 UTC; leases and secrets stay inside.

use chrono::{DateTime, NaiveDateTime, Utc};
use driftwatch_core::{
    AttemptTrigger, DeliveryStatus, EndpointKind, EventType, RecoveryState, RunOutcome, WatchHealth, WatchState,
};
use driftwatch_store as store;
use serde::Serialize;
use utoipa::ToSchema;

fn utc(t: NaiveDateTime) -> DateTime<Utc> {
    t.and_utc()
}

/// A page of a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct List<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<String>,
}

/// A watch.
#[derive(Debug, Serialize, ToSchema)]
pub struct Watch {
    /// `wat_...`.
    id: String,
    /// A name for people.
    name: String,
    /// The page.
    url: String,
    /// CSS selector of the part that matters; null for the whole page.
    selector: Option<String>,
    /// Checked every this many seconds (null with a cron schedule).
    interval_seconds: Option<i64>,
    /// Cron schedule (null with an interval).
    cron: Option<String>,
    /// Time zone of the cron schedule.
    time_zone: Option<String>,
    /// `active` (checked on schedule) or `paused`.
    #[schema(value_type = WatchState)]
    state: String,
    /// Whether recent checks succeed.
    #[schema(value_type = WatchHealth)]
    health: String,
    /// How the page is fetched, extracted and compared.
    options: driftwatch_core::WatchOptions,
    /// When the next scheduled check is due.
    next_run_at: DateTime<Utc>,
    /// When it was last checked.
    last_run_at: Option<DateTime<Utc>>,
    /// Failed checks in a row.
    consecutive_failures: i32,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last change by a request.
    updated_at: DateTime<Utc>,
    /// Tags, sorted.
    tags: Vec<String>,
}

impl From<store::Watch> for Watch {
    fn from(w: store::Watch) -> Watch {
        Watch {
            tags: w.tag_list().into_iter().map(str::to_owned).collect(),
            id: w.id,
            name: w.name,
            url: w.url,
            selector: w.selector,
            interval_seconds: w.interval_seconds,
            cron: w.cron,
            time_zone: w.time_zone,
            state: w.state,
            health: w.health,
            options: serde_json::from_str(&w.options).unwrap_or_default(),
            next_run_at: utc(w.next_run_at),
            last_run_at: w.last_run_at.map(utc),
            consecutive_failures: w.consecutive_failures,
            created_at: utc(w.created_at),
            updated_at: utc(w.updated_at),
        }
    }
}

/// One check of a watch.
#[derive(Debug, Serialize, ToSchema)]
pub struct Run {
    /// `run_...`.
    id: String,
    /// The watch checked.
    watch_id: String,
    /// What the check found.
    #[schema(value_type = RunOutcome)]
    outcome: String,
    /// The page's HTTP status, when one came.
    http_status: Option<i32>,
    /// How long the check took.
    duration_ms: i64,
    /// Size of the page body.
    bytes: i64,
    /// Why the check failed.
    error: Option<String>,
    /// Why a change raised no alert (noise rules), or other detail.
    note: Option<String>,
    /// The snapshot the check recorded (baseline or change).
    snapshot_id: Option<String>,
    /// The event the check raised.
    event_id: Option<String>,
    /// Start time.
    started_at: DateTime<Utc>,
    /// End time.
    finished_at: DateTime<Utc>,
}

impl From<store::Run> for Run {
    fn from(r: store::Run) -> Run {
        Run {
            id: r.id,
            watch_id: r.watch_id,
            outcome: r.outcome,
            http_status: r.http_status,
            duration_ms: r.duration_ms,
            bytes: r.bytes,
            error: r.error,
            note: r.note,
            snapshot_id: r.snapshot_id,
            event_id: r.event_id,
            started_at: utc(r.started_at),
            finished_at: utc(r.finished_at),
        }
    }
}

/// An event, with the payload its deliveries carry.
#[derive(Debug, Serialize, ToSchema)]
pub struct Event {
    /// `evt_...`; also a cursor of `GET /changes`.
    id: String,
    /// What happened.
    #[serde(rename = "type")]
    #[schema(value_type = EventType)]
    event_type: String,
    /// The watch it is about, if any.
    watch_id: Option<String>,
    /// The endpoint it is about, if any.
    endpoint_id: Option<String>,
    /// For a change: the snapshot before.
    previous_snapshot_id: Option<String>,
    /// For a change: the snapshot after.
    snapshot_id: Option<String>,
    /// Lines added.
    added: i32,
    /// Lines removed.
    removed: i32,
    /// The JSON body its webhooks carry (with the diff for a change).
    payload: serde_json::Value,
    /// When it happened.
    created_at: DateTime<Utc>,
}

impl From<store::Event> for Event {
    fn from(e: store::Event) -> Event {
        Event {
            id: e.id,
            event_type: e.event_type,
            watch_id: e.watch_id,
            endpoint_id: e.endpoint_id,
            previous_snapshot_id: e.previous_snapshot_id,
            snapshot_id: e.snapshot_id,
            added: e.added,
            removed: e.removed,
            payload: serde_json::from_str(&e.payload).unwrap_or(serde_json::Value::Null),
            created_at: utc(e.created_at),
        }
    }
}

/// An endpoint; `secret` only in the answers to its creation and rotation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Endpoint {
    /// `end_...`.
    id: String,
    /// Webhook or Slack.
    #[schema(value_type = EndpointKind)]
    kind: String,
    /// Where deliveries are sent.
    url: String,
    /// A note for people.
    description: String,
    /// Whether deliveries are sent.
    enabled: bool,
    /// Why it was disabled (by request, 410 Gone, or failing too long).
    disabled_reason: Option<String>,
    /// The signing secret (`whsec_...`); only in the answers to creation and rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
    /// After a rotation: until when the previous secret also signs.
    previous_secret_expires_at: Option<DateTime<Utc>>,
    /// Its retry delays; null for the global schedule.
    retry_schedule: Option<String>,
    /// Its attempt budget; null for the global one.
    max_attempts: Option<i32>,
    /// Its request rate limit; null for none.
    rate_limit_per_second: Option<i32>,
    /// Its cap on concurrent requests; null for the global one.
    max_in_flight: Option<i32>,
    /// The event types it receives; null for all of them.
    #[schema(value_type = Option<Vec<EventType>>)]
    event_types: Option<Vec<String>>,
    /// Its circuit breaker and failure streak.
    health: EndpointHealth,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last change.
    updated_at: DateTime<Utc>,
}

/// An endpoint's circuit breaker and failure streak.
#[derive(Debug, Serialize, ToSchema)]
pub struct EndpointHealth {
    /// `closed` (sending), `open` (holding deliveries) or `half_open` (one probe at a time).
    circuit: Circuit,
    /// While open: when a probe may go.
    circuit_open_until: Option<DateTime<Utc>>,
    /// Failed attempts in a row.
    consecutive_failures: i32,
    /// Start of the current failure streak.
    failing_since: Option<DateTime<Utc>>,
}

/// An endpoint's circuit breaker.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Circuit {
    /// Sending.
    Closed,
    /// Holding deliveries until `circuit_open_until`.
    Open,
    /// One probe at a time decides whether it closes.
    HalfOpen,
}

impl Endpoint {
    /// The view with the signing secret, for the creation and rotation responses only.
    pub fn with_secret(e: store::Endpoint, now: NaiveDateTime) -> Endpoint {
        let secret = e.secret.clone();
        Endpoint { secret: Some(secret), ..Endpoint::at(e, now) }
    }

    /// The view of `e` at `now` (the injected clock's): its circuit and whether a rotated-out
    /// secret still signs depend on the time.
    pub fn at(e: store::Endpoint, now: NaiveDateTime) -> Endpoint {
        let circuit = match e.circuit(now) {
            store::Circuit::Closed => Circuit::Closed,
            store::Circuit::Open => Circuit::Open,
            store::Circuit::HalfOpen => Circuit::HalfOpen,
        };
        Endpoint {
            id: e.id,
            kind: e.kind,
            url: e.url,
            description: e.description,
            enabled: e.enabled,
            disabled_reason: e.disabled_reason,
            secret: None,
            previous_secret_expires_at: e.previous_secret_expires_at.filter(|t| *t > now).map(utc),
            retry_schedule: e.retry_schedule,
            max_attempts: e.max_attempts,
            rate_limit_per_second: e.rate_limit_per_second,
            max_in_flight: e.max_in_flight,
            event_types: e.event_types.map(|t| t.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()),
            health: EndpointHealth {
                circuit,
                circuit_open_until: e.circuit_open_until.map(utc),
                consecutive_failures: e.consecutive_failures,
                failing_since: e.failing_since.map(utc),
            },
            created_at: utc(e.created_at),
            updated_at: utc(e.updated_at),
        }
    }
}

/// A recovery (bulk re-queue) and its progress.
#[derive(Debug, Serialize, ToSchema)]
pub struct Recovery {
    /// `rec_...`.
    id: String,
    /// The endpoint whose deliveries are re-queued.
    endpoint_id: String,
    /// Deliveries created at or after this time...
    since: DateTime<Utc>,
    /// ...and before this time.
    until: Option<DateTime<Utc>>,
    /// Which deliveries: `failed`, `dead` or both.
    #[schema(value_type = Vec<DeliveryStatus>)]
    statuses: Vec<String>,
    /// Only counted, nothing re-queued.
    dry_run: bool,
    /// Progress.
    #[schema(value_type = RecoveryState)]
    state: String,
    /// Deliveries found so far.
    matched: i64,
    /// Deliveries re-queued so far.
    requeued: i64,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last progress.
    updated_at: DateTime<Utc>,
    /// When it finished.
    finished_at: Option<DateTime<Utc>>,
}

impl From<store::Recovery> for Recovery {
    fn from(r: store::Recovery) -> Recovery {
        Recovery {
            id: r.id,
            endpoint_id: r.endpoint_id,
            since: utc(r.since),
            until: r.until.map(utc),
            statuses: r.statuses.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect(),
            dry_run: r.dry_run,
            state: r.state,
            matched: r.matched,
            requeued: r.requeued,
            created_at: utc(r.created_at),
            updated_at: utc(r.updated_at),
            finished_at: r.finished_at.map(utc),
        }
    }
}

/// A delivery; `attempt_log` only on the single-resource read, `last_attempt` only in the dead-letter queue.
#[derive(Debug, Serialize, ToSchema)]
pub struct Delivery {
    /// `dlv_...`; also its `webhook-id`.
    id: String,
    /// The event delivered.
    event_id: String,
    /// Where to.
    endpoint_id: String,
    /// The watch the event is about, if any.
    watch_id: Option<String>,
    /// The event's type.
    #[schema(value_type = EventType)]
    event_type: String,
    /// `queued`, `failed` (retrying), `sent` or `dead`.
    #[schema(value_type = DeliveryStatus)]
    status: String,
    /// Attempts so far.
    attempts: i32,
    /// Its attempt budget.
    max_attempts: i32,
    /// While pending: when the next attempt is due.
    next_attempt_at: Option<DateTime<Utc>>,
    /// The receiver's last HTTP status.
    last_status_code: Option<i32>,
    /// The last failure.
    last_error: Option<String>,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last change.
    updated_at: DateTime<Utc>,
    /// When it was sent or went dead.
    finished_at: Option<DateTime<Utc>>,
    /// Whether retention removed its stored body (it can no longer be resent).
    body_purged: bool,
    /// Every attempt, oldest first; only on `GET /deliveries/{id}` and redelivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt_log: Option<Vec<Attempt>>,
    /// The last attempt; only in the dead-letter queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    last_attempt: Option<Attempt>,
}

impl Delivery {
    /// The view with its attempts.
    pub fn with_attempts(d: store::Delivery, attempts: Vec<store::DeliveryAttempt>) -> Delivery {
        Delivery { attempt_log: Some(attempts.into_iter().map(Attempt::from).collect()), ..Delivery::from(d) }
    }
}

impl Delivery {
    /// The dead-letter view: with its last attempt.
    pub fn with_last_attempt(d: store::Delivery, last: Option<store::DeliveryAttempt>) -> Delivery {
        Delivery { last_attempt: last.map(Attempt::from), ..Delivery::from(d) }
    }
}

impl From<store::Delivery> for Delivery {
    fn from(d: store::Delivery) -> Delivery {
        let pending = d.finished_at.is_none();
        Delivery {
            id: d.id,
            event_id: d.event_id,
            endpoint_id: d.endpoint_id,
            watch_id: d.watch_id,
            event_type: d.event_type,
            status: d.status,
            attempts: d.attempts,
            max_attempts: d.max_attempts,
            next_attempt_at: pending.then(|| utc(d.next_attempt_at)),
            last_status_code: d.last_status_code,
            last_error: d.last_error,
            created_at: utc(d.created_at),
            updated_at: utc(d.updated_at),
            finished_at: d.finished_at.map(utc),
            body_purged: d.body_purged_at.is_some(),
            attempt_log: None,
            last_attempt: None,
        }
    }
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, ToSchema)]
pub struct Attempt {
    /// `att_...`.
    id: String,
    /// 1 for the first.
    attempt_number: i32,
    /// Start time.
    started_at: DateTime<Utc>,
    /// How long it took.
    duration_ms: i64,
    /// The receiver's HTTP status.
    status_code: Option<i32>,
    /// Why it failed: `http`, `redirect`, `timeout`, `connect`, `dns`, `tls`, `blocked`, ...
    error_kind: Option<String>,
    /// What failed.
    error: Option<String>,
    /// The start of the receiver's answer.
    response_snippet: Option<String>,
    /// What made the attempt.
    #[schema(value_type = AttemptTrigger)]
    trigger: String,
}

impl From<store::DeliveryAttempt> for Attempt {
    fn from(a: store::DeliveryAttempt) -> Attempt {
        Attempt {
            id: a.id,
            attempt_number: a.attempt_number,
            started_at: utc(a.started_at),
            duration_ms: a.duration_ms,
            status_code: a.status_code,
            error_kind: a.error_kind,
            error: a.error,
            response_snippet: a.response_snippet,
            trigger: a.trigger,
        }
    }
}

/// A snapshot; `content` only on the single-resource read.
#[derive(Debug, Serialize, ToSchema)]
pub struct Snapshot {
    /// `snp_...`.
    id: String,
    /// The watch.
    watch_id: String,
    /// SHA-256 of the content.
    content_hash: String,
    /// The extracted text; only on `GET /snapshots/{id}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// When it was recorded.
    created_at: DateTime<Utc>,
}

impl From<store::Snapshot> for Snapshot {
    fn from(s: store::Snapshot) -> Snapshot {
        Snapshot {
            id: s.id,
            watch_id: s.watch_id,
            content_hash: s.content_hash,
            content: Some(s.content),
            created_at: utc(s.created_at),
        }
    }
}

impl From<store::watches::SnapshotInfo> for Snapshot {
    fn from(s: store::watches::SnapshotInfo) -> Snapshot {
        Snapshot {
            id: s.id,
            watch_id: s.watch_id,
            content_hash: s.content_hash,
            content: None,
            created_at: utc(s.created_at),
        }
    }
}

/// The difference between two snapshots of a watch.
#[derive(Debug, Serialize, ToSchema)]
pub struct Diff {
    /// The older snapshot.
    pub from: String,
    /// The newer snapshot.
    pub to: String,
    /// Lines, hunks and the unified text.
    #[serde(flatten)]
    pub change: driftwatch_diff::TextChange,
}

/// An API token; `token` (the secret) only in the answer to its creation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Token {
    /// `tok_...`.
    id: String,
    /// What it is for.
    name: String,
    /// The token's first characters, to recognise it.
    prefix: String,
    /// `read`, `write`.
    scopes: Vec<String>,
    /// The token itself; only in the answer to its creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last use.
    last_used_at: Option<DateTime<Utc>>,
    /// When it was revoked.
    revoked_at: Option<DateTime<Utc>>,
}

impl Token {
    /// The view with the plaintext token, for the creation response only.
    pub fn with_secret(t: store::ApiToken, plaintext: String) -> Token {
        Token { token: Some(plaintext), ..Token::from(t) }
    }
}

impl From<store::ApiToken> for Token {
    fn from(t: store::ApiToken) -> Token {
        Token {
            id: t.id,
            name: t.name,
            prefix: t.prefix,
            scopes: t.scopes.split_whitespace().map(str::to_owned).collect(),
            token: None,
            created_at: utc(t.created_at),
            last_used_at: t.last_used_at.map(utc),
            revoked_at: t.revoked_at.map(utc),
        }
    }
}
