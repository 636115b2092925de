//! The outbox: deliveries and their attempts.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::*;

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
    /// Why a pending delivery waits past when it was due (`quiet_hours`).
    pub held: Option<String>,
    /// The digest's delivery a `digested` one went out in.
    pub digest_id: Option<String>,
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
    /// Set when it is dead from the start (its body could not be rendered).
    pub last_error: Option<String>,
    /// Set when it is dead from the start.
    pub finished_at: Option<NaiveDateTime>,
    /// Why it waits past `created_at` (`quiet_hours`).
    pub held: Option<String>,
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

impl DeliveryAttempt {
    /// The attempt as both backends store it: the receiver's answer and the error it caused,
    /// without NUL (see [`driftwatch_core::storable`]).
    pub fn storable(&self) -> std::borrow::Cow<'_, DeliveryAttempt> {
        if !driftwatch_core::text::any_nul([&self.error, &self.response_snippet]) {
            return std::borrow::Cow::Borrowed(self);
        }
        std::borrow::Cow::Owned(DeliveryAttempt {
            error: driftwatch_core::storable_opt(self.error.clone()),
            response_snippet: driftwatch_core::storable_opt(self.response_snippet.clone()),
            ..self.clone()
        })
    }
}
