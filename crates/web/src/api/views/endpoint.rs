//! Endpoints, their health and circuit, and recoveries.

use chrono::{DateTime, NaiveDateTime, Utc};
use driftwatch_channels::EndpointKind;
use driftwatch_core::{DeliveryStatus, EventType, RecoveryState};
use driftwatch_store as store;
use serde::Serialize;
use utoipa::ToSchema;

use super::utc;

/// An endpoint; `secret` only in the answers to its creation and rotation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Endpoint {
    /// `end_...`.
    id: String,
    /// What it is: `webhook`, `slack`, `email`, `discord`, `telegram`, `teams`, `ntfy`,
    /// `pushover`, `gotify`, `matrix` or `http`.
    #[schema(value_type = EndpointKind)]
    kind: String,
    /// Where deliveries are sent; masked (`https://discord.com/api/webhooks/1234/••••`) for
    /// kinds whose URL is itself a credential (Discord, Slack, Teams, Mattermost), which is
    /// stored encrypted.
    url: String,
    /// A note for people.
    description: String,
    /// Whether deliveries are sent.
    enabled: bool,
    /// Why it was disabled (by request, 410 Gone, or failing too long).
    disabled_reason: Option<String>,
    /// The signing secret (`whsec_...`); only in the answers to creation and rotation, and only
    /// for kinds whose requests are signed (`webhook`). Shown once: an idempotent replay of the
    /// answer leaves it out.
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
    /// The kind's settings (a chat id, a topic, an SMTP sender...).
    #[schema(value_type = Object)]
    settings: serde_json::Value,
    /// Whether it holds secrets (a bot token, a password...); they are never shown.
    secrets_set: bool,
    /// Its title template; null for the kind's default.
    title_template: Option<String>,
    /// Its body template; null for the kind's default.
    body_template: Option<String>,
    /// Which watches it receives; null for every watch.
    route: Option<Route>,
    /// How its events go out: `null` at once, else a digest per period (`{"mode": "digest",
    /// "cron": "0 8 * * *", "time_zone": "Europe/Berlin"}` or `"every": "1d"`).
    delivery: Option<driftwatch_core::DeliveryMode>,
    /// Its own quiet hours (`null`: the account's, see `GET /account/quiet_hours`).
    quiet_hours: Option<driftwatch_core::QuietHours>,
    /// When its open digest period ends and the digest goes out (`null` unless it gathers).
    next_digest_at: Option<DateTime<Utc>>,
    /// When its open digest period started.
    digest_since: Option<DateTime<Utc>>,
    /// Its circuit breaker and failure streak.
    health: EndpointHealth,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last change.
    updated_at: DateTime<Utc>,
}

/// Which watches an endpoint receives: those with any of `tags`, and those in `watches`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Route {
    /// Watches with any of these tags.
    tags: Vec<String>,
    /// These watches.
    watches: Vec<String>,
}

impl Route {
    /// The route of `e`, if it has one.
    pub fn of(e: &store::Endpoint) -> Option<Route> {
        let split = |s: &Option<String>| -> Vec<String> {
            s.as_deref().unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
        };
        (e.route_tags.is_some() || e.route_watches.is_some())
            .then(|| Route { tags: split(&e.route_tags), watches: split(&e.route_watches) })
    }
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

impl super::ShownOnce for Endpoint {
    const SHOWN_ONCE: &'static [&'static str] = &["secret"];
}

impl Endpoint {
    /// The view with the signing secret, for the creation and rotation responses only.
    pub fn with_secret(e: store::Endpoint, now: NaiveDateTime) -> Endpoint {
        let secret = Some(e.secret.clone()).filter(|s| !s.is_empty());
        Endpoint { secret, ..Endpoint::at(e, now) }
    }

    /// The view of `e` at `now` (the injected clock's): its circuit and whether a rotated-out
    /// secret still signs depend on the time.
    pub fn at(e: store::Endpoint, now: NaiveDateTime) -> Endpoint {
        let circuit = match e.circuit(now) {
            store::Circuit::Closed => Circuit::Closed,
            store::Circuit::Open => Circuit::Open,
            store::Circuit::HalfOpen => Circuit::HalfOpen,
        };
        let route = Route::of(&e);
        Endpoint {
            delivery: e.delivery.as_deref().and_then(|d| driftwatch_core::DeliveryMode::parse(d).ok()),
            quiet_hours: e.quiet_hours.as_deref().and_then(|q| driftwatch_core::QuietHours::parse(q).ok()),
            next_digest_at: e.digest_due_at.map(utc),
            digest_since: e.digest_due_at.and(e.digest_since).map(utc),
            settings: serde_json::from_str(&e.settings).unwrap_or_else(|_| serde_json::json!({})),
            secrets_set: e.secrets.is_some(),
            title_template: e.title_template,
            body_template: e.body_template,
            route,
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
