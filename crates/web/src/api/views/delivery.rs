//! Deliveries and their attempts.

use chrono::{DateTime, Utc};
use driftwatch_core::{AttemptTrigger, DeliveryStatus, EventType};
use driftwatch_store as store;
use serde::Serialize;
use utoipa::ToSchema;

use super::utc;

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
    /// Why it waits past when it was due: `quiet_hours` (it goes at `next_attempt_at`, when
    /// they end).
    held: Option<String>,
    /// For a `digested` delivery: the digest's delivery it went out in.
    digest_id: Option<String>,
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
            held: d.held.filter(|_| pending),
            digest_id: d.digest_id,
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
