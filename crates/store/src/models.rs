//! Rows as Rust structs. Times are naive UTC (`TIMESTAMP` on both backends).

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::*;

/// An owner of watches, endpoints and everything that follows from them.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = accounts)]
pub struct Account {
    /// `acc_...`
    pub id: String,
    /// Unique, chosen by the operator.
    pub name: String,
    /// When it was created.
    pub created_at: NaiveDateTime,
}

/// An API token; only the SHA-256 of the secret is kept.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = api_tokens)]
pub struct ApiToken {
    /// `tok_...`
    pub id: String,
    /// The account the token acts for.
    pub account_id: String,
    /// A label.
    pub name: String,
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    /// The first characters of the token, to recognise it in lists.
    pub prefix: String,
    /// Space-separated scopes (`read write`).
    pub scopes: String,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last authenticated use (updated at most once a minute).
    pub last_used_at: Option<NaiveDateTime>,
    /// Set when revoked; a revoked token authenticates nothing.
    pub revoked_at: Option<NaiveDateTime>,
}

/// A person who signs in to the browser UI; one of an account's users.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = users)]
pub struct User {
    /// `usr_...`
    pub id: String,
    /// The account whose data the user sees.
    pub account_id: String,
    /// Lower-case; how the user signs in.
    pub email: String,
    /// Argon2id PHC string; never shown or logged.
    pub password_hash: String,
    /// IANA time zone for displayed times.
    pub time_zone: String,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last change (password, time zone).
    pub updated_at: NaiveDateTime,
}

/// A signed-in browser session; the cookie's id is kept only as its hash.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = sessions)]
pub struct Session {
    /// SHA-256 (hex) of the cookie's session id.
    pub id_hash: String,
    /// Who is signed in.
    pub user_id: String,
    /// The token every state-changing form of this session carries.
    pub csrf_token: String,
    /// Sign-in time.
    pub created_at: NaiveDateTime,
    /// Last request (refreshed at most once a minute).
    pub last_seen_at: NaiveDateTime,
    /// Absolute expiry.
    pub expires_at: NaiveDateTime,
    /// A message for the next page shown.
    pub flash: Option<String>,
}

/// A page to watch and how.
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = watches)]
pub struct Watch {
    /// `wat_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// A label (defaults to the URL).
    pub name: String,
    /// The page.
    pub url: String,
    /// CSS selector of the part that matters; the whole page when absent.
    pub selector: Option<String>,
    /// Seconds between checks (interval schedules).
    pub interval_seconds: Option<i64>,
    /// Cron expression, seconds optional (cron schedules).
    pub cron: Option<String>,
    /// IANA time zone the cron expression is read in (UTC when absent).
    pub time_zone: Option<String>,
    /// `active` or `paused` ([`driftwatch_core::WatchState`]).
    pub state: String,
    /// `ok`, `failing` or `selector_missing` ([`driftwatch_core::WatchHealth`]).
    pub health: String,
    /// [`driftwatch_core::WatchOptions`] as JSON.
    pub options: String,
    /// `ETag` of the last page fetched (conditional GET).
    pub etag: Option<String>,
    /// `Last-Modified` of the last page fetched (conditional GET).
    pub last_modified: Option<String>,
    /// What is fetched or extracted changed: the next check records a baseline, no alert.
    pub rebaseline: bool,
    /// When the runner should check next.
    pub next_run_at: NaiveDateTime,
    /// When it was last checked.
    pub last_run_at: Option<NaiveDateTime>,
    /// Failed checks in a row.
    pub consecutive_failures: i32,
    /// Lease holder while a check is under way.
    pub lease_owner: Option<String>,
    /// Lease expiry; after it another runner may claim the watch.
    pub lease_until: Option<NaiveDateTime>,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last change to its settings or schedule.
    pub updated_at: NaiveDateTime,
    /// Tags, stored as `,a,b,` (lower case, sorted, once each; empty for none).
    pub tags: String,
}

/// Extracted content of a watch at one moment; written only when it differs from the last.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = snapshots)]
pub struct Snapshot {
    /// `snp_...`
    pub id: String,
    /// The watch.
    pub watch_id: String,
    /// Hex SHA-256 of `content`.
    pub content_hash: String,
    /// The normalised text.
    pub content: String,
    /// When it was fetched.
    pub created_at: NaiveDateTime,
}

/// One check of a watch, whatever its outcome.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = runs)]
pub struct Run {
    /// `run_...`
    pub id: String,
    /// The watch.
    pub watch_id: String,
    /// When the fetch started.
    pub started_at: NaiveDateTime,
    /// When the result was known.
    pub finished_at: NaiveDateTime,
    /// [`driftwatch_core::RunOutcome`].
    pub outcome: String,
    /// The page's HTTP status, when one was received.
    pub http_status: Option<i32>,
    /// Fetch and extraction time.
    pub duration_ms: i64,
    /// Body bytes read.
    pub bytes: i64,
    /// Why it failed.
    pub error: Option<String>,
    /// Why a change raised no alert (noise rules), when it did not.
    pub note: Option<String>,
    /// The snapshot written (baseline or change).
    pub snapshot_id: Option<String>,
    /// The event raised.
    pub event_id: Option<String>,
}

/// Something that happened to a watch, delivered to endpoints.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = events)]
pub struct Event {
    /// `evt_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The watch, for watch events.
    pub watch_id: Option<String>,
    /// The endpoint, for endpoint events (`endpoint.disabled`, `endpoint.test`).
    pub endpoint_id: Option<String>,
    /// [`driftwatch_core::EventType`].
    pub event_type: String,
    /// The snapshot before the change.
    pub previous_snapshot_id: Option<String>,
    /// The snapshot after the change.
    pub snapshot_id: Option<String>,
    /// Lines added.
    pub added: i32,
    /// Lines removed.
    pub removed: i32,
    /// The JSON payload, exactly as delivered.
    pub payload: String,
    /// When it was raised.
    pub created_at: NaiveDateTime,
}

/// Where an account's events go.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = endpoints)]
pub struct Endpoint {
    /// `end_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// [`driftwatch_core::EndpointKind`].
    pub kind: String,
    /// Receiver URL.
    pub url: String,
    /// A label.
    pub description: String,
    /// Signing secret (`whsec_...`). Never logged, shown once at creation.
    pub secret: String,
    /// Disabled endpoints get no new deliveries, and their queued ones wait.
    pub enabled: bool,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last change.
    pub updated_at: NaiveDateTime,
    /// The secret before the last rotation; still signs until `previous_secret_expires_at`.
    pub previous_secret: Option<String>,
    /// End of the rotation overlap.
    pub previous_secret_expires_at: Option<NaiveDateTime>,
    /// Retry schedule overriding the global one (`1m,5m,...`).
    pub retry_schedule: Option<String>,
    /// Attempt budget overriding the global one.
    pub max_attempts: Option<i32>,
    /// Most requests per second to this endpoint.
    pub rate_limit_per_second: Option<i32>,
    /// Most deliveries in flight to this endpoint (per node) overriding the global cap.
    pub max_in_flight: Option<i32>,
    /// Failed attempts in a row (any node).
    pub consecutive_failures: i32,
    /// Start of the current failure streak.
    pub failing_since: Option<NaiveDateTime>,
    /// While in the future the circuit is open: nothing is sent. Past it, one probe goes out
    /// (half-open) as long as `consecutive_failures` is at the threshold.
    pub circuit_open_until: Option<NaiveDateTime>,
    /// Why it was disabled (by a person, a 410, or a long failure streak).
    pub disabled_reason: Option<String>,
    /// The event types it receives, comma-separated; `None` for all of them.
    pub event_types: Option<String>,
}

/// An endpoint's circuit breaker at a given moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Circuit {
    /// Deliveries flow.
    Closed,
    /// Holding deliveries until `circuit_open_until`.
    Open,
    /// Past its open period: one probe at a time decides whether it closes.
    HalfOpen,
}

impl Endpoint {
    /// Its circuit at `now`: the one rule the API's view and the UI's page both show.
    pub fn circuit(&self, now: NaiveDateTime) -> Circuit {
        match self.circuit_open_until {
            Some(until) if until > now => Circuit::Open,
            Some(_) => Circuit::HalfOpen,
            None => Circuit::Closed,
        }
    }

    /// Whether events of `event_type` are delivered here (a test event sent to it always is).
    pub fn receives(&self, event_type: &str) -> bool {
        receives(self.event_types.as_deref(), event_type)
    }
}

/// Whether a subscription (comma-separated event types, `None` for all) takes `event_type`.
pub fn receives(event_types: Option<&str>, event_type: &str) -> bool {
    event_types.is_none_or(|types| types.split(',').any(|t| t == event_type))
}

/// An outbox row without its body (lists and state changes never need the bytes).
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable)]
#[diesel(table_name = deliveries)]
pub struct Delivery {
    /// `dlv_...`; also the `webhook-id`, stable across attempts.
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The event delivered.
    pub event_id: String,
    /// The receiver.
    pub endpoint_id: String,
    /// The watch the event is about.
    pub watch_id: Option<String>,
    /// The event's type.
    pub event_type: String,
    /// [`driftwatch_core::DeliveryStatus`].
    pub status: String,
    /// Attempts made so far.
    pub attempts: i32,
    /// Attempts allowed before the delivery is dead.
    pub max_attempts: i32,
    /// When the next attempt is due.
    pub next_attempt_at: NaiveDateTime,
    /// Lease holder while an attempt is in flight.
    pub lease_owner: Option<String>,
    /// Lease expiry.
    pub lease_until: Option<NaiveDateTime>,
    /// Status code of the last attempt.
    pub last_status_code: Option<i32>,
    /// Error of the last attempt.
    pub last_error: Option<String>,
    /// When it was queued.
    pub created_at: NaiveDateTime,
    /// Last change.
    pub updated_at: NaiveDateTime,
    /// When it became `sent` or `dead`.
    pub finished_at: Option<NaiveDateTime>,
    /// Attempts made under earlier budgets (before a redelivery of a dead delivery).
    pub retry_base: i32,
    /// Why the next attempt will be made ([`driftwatch_core::AttemptTrigger`]).
    pub next_trigger: String,
    /// Set when retention removed the body.
    pub body_purged_at: Option<NaiveDateTime>,
}

/// A new outbox row, body included.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = deliveries)]
pub struct NewDelivery {
    /// `dlv_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The event.
    pub event_id: String,
    /// The receiver.
    pub endpoint_id: String,
    /// The watch.
    pub watch_id: Option<String>,
    /// The event's type.
    pub event_type: String,
    /// The exact bytes to POST, on every attempt.
    pub body: Vec<u8>,
    /// Initially `queued`.
    pub status: String,
    /// Initially 0.
    pub attempts: i32,
    /// Attempt budget.
    pub max_attempts: i32,
    /// Initially now.
    pub next_attempt_at: NaiveDateTime,
    /// Creation time.
    pub created_at: NaiveDateTime,
    /// Creation time.
    pub updated_at: NaiveDateTime,
    /// Its endpoint has a limit that holds across nodes (`claim_limited` takes it).
    pub limited: bool,
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = delivery_attempts)]
pub struct DeliveryAttempt {
    /// `att_...`
    pub id: String,
    /// The delivery.
    pub delivery_id: String,
    /// 1 for the first attempt.
    pub attempt_number: i32,
    /// When the request started.
    pub started_at: NaiveDateTime,
    /// Until the response (or failure).
    pub duration_ms: i64,
    /// The receiver's status code.
    pub status_code: Option<i32>,
    /// `timeout`, `connect`, `http`, ... when it failed.
    pub error_kind: Option<String>,
    /// A human-readable reason.
    pub error: Option<String>,
    /// The start of the response body (bounded).
    pub response_snippet: Option<String>,
    /// [`driftwatch_core::AttemptTrigger`].
    pub trigger: String,
}

/// A bulk re-queue of an endpoint's failed or dead deliveries, processed in pages.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = recoveries)]
pub struct Recovery {
    /// `rec_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The endpoint whose deliveries are re-queued.
    pub endpoint_id: String,
    /// Deliveries created at or after this.
    pub since: NaiveDateTime,
    /// Deliveries created before this, if set.
    pub until: Option<NaiveDateTime>,
    /// Comma-separated statuses to match (`failed,dead`).
    pub statuses: String,
    /// Count only.
    pub dry_run: bool,
    /// `pending`, `running` or `done`.
    pub state: String,
    /// Deliveries that matched so far.
    pub matched: i64,
    /// Deliveries re-queued so far.
    pub requeued: i64,
    /// The last delivery id processed (progress survives restarts).
    pub cursor: Option<String>,
    /// Lease holder while a page is processed.
    pub lease_owner: Option<String>,
    /// Lease expiry.
    pub lease_until: Option<NaiveDateTime>,
    /// When it was requested.
    pub created_at: NaiveDateTime,
    /// Last progress.
    pub updated_at: NaiveDateTime,
    /// When it completed.
    pub finished_at: Option<NaiveDateTime>,
}

impl Watch {
    /// When this watch is due (a watch whose stored schedule somehow does not parse is checked
    /// hourly).
    pub fn timing(&self) -> driftwatch_core::Timing {
        driftwatch_core::Timing::stored(self.interval_seconds, self.cron.as_deref(), self.time_zone.as_deref())
    }

    /// A new active watch of `url` for `account_id`, checked hourly, due at once (the baseline),
    /// with no selector or options; callers set what differs.
    pub fn new(account_id: &str, url: &str, now: NaiveDateTime) -> Watch {
        Watch {
            id: driftwatch_core::new_id(driftwatch_core::IdKind::Watch),
            account_id: account_id.to_owned(),
            name: url.to_owned(),
            url: url.to_owned(),
            selector: None,
            interval_seconds: Some(3600),
            cron: None,
            time_zone: None,
            state: driftwatch_core::WatchState::Active.as_str().to_owned(),
            health: driftwatch_core::WatchHealth::Ok.as_str().to_owned(),
            options: "{}".to_owned(),
            etag: None,
            last_modified: None,
            rebaseline: false,
            next_run_at: now,
            last_run_at: None,
            consecutive_failures: 0,
            lease_owner: None,
            lease_until: None,
            created_at: now,
            updated_at: now,
            tags: String::new(),
        }
    }

    /// The watch's tags.
    pub fn tag_list(&self) -> Vec<&str> {
        self.tags.split(',').filter(|t| !t.is_empty()).collect()
    }
}

/// The stored form of a set of tags: `,a,b,` (already normalised), or empty for none.
pub fn stored_tags<S: AsRef<str>>(tags: &[S]) -> String {
    if tags.is_empty() {
        return String::new();
    }
    format!(",{},", tags.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(","))
}

impl Endpoint {
    /// A new enabled webhook endpoint with a fresh secret, healthy, with no overrides.
    pub fn webhook(account_id: &str, url: &str, now: NaiveDateTime) -> Endpoint {
        Endpoint {
            id: driftwatch_core::new_id(driftwatch_core::IdKind::Endpoint),
            account_id: account_id.to_owned(),
            kind: driftwatch_core::EndpointKind::Webhook.as_str().to_owned(),
            url: url.to_owned(),
            description: String::new(),
            secret: driftwatch_core::new_webhook_secret(),
            enabled: true,
            created_at: now,
            updated_at: now,
            previous_secret: None,
            previous_secret_expires_at: None,
            retry_schedule: None,
            max_attempts: None,
            rate_limit_per_second: None,
            max_in_flight: None,
            consecutive_failures: 0,
            failing_since: None,
            circuit_open_until: None,
            disabled_reason: None,
            event_types: None,
        }
    }
}

impl Event {
    /// An event about a watch that carries no diff (`check.failed`, `check.recovered`, ...).
    pub fn about_watch(
        id: String,
        watch: &Watch,
        event_type: driftwatch_core::EventType,
        payload: String,
        at: NaiveDateTime,
    ) -> Event {
        Event {
            watch_id: Some(watch.id.clone()),
            endpoint_id: None,
            ..Event::bare(id, &watch.account_id, event_type, payload, at)
        }
    }

    /// An event about an endpoint (`endpoint.disabled`, `endpoint.test`) with its payload.
    pub fn about_endpoint(
        id: String,
        endpoint: &Endpoint,
        event_type: driftwatch_core::EventType,
        payload: String,
        at: NaiveDateTime,
    ) -> Event {
        Event {
            endpoint_id: Some(endpoint.id.clone()),
            ..Event::bare(id, &endpoint.account_id, event_type, payload, at)
        }
    }

    fn bare(
        id: String,
        account_id: &str,
        event_type: driftwatch_core::EventType,
        payload: String,
        at: NaiveDateTime,
    ) -> Event {
        Event {
            id,
            account_id: account_id.to_owned(),
            watch_id: None,
            endpoint_id: None,
            event_type: event_type.as_str().to_owned(),
            previous_snapshot_id: None,
            snapshot_id: None,
            added: 0,
            removed: 0,
            payload,
            created_at: at,
        }
    }
}
