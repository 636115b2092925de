//! Digests: closing an endpoint's period. What a digest gathers are the endpoint's `gathering`
//! deliveries ([`crate::outbox`] queues them); closing marks the period done, queues the digest
//! as one event and one delivery, and marks what it carries `digested`, all in one transaction,
//! so a period is closed once across nodes, restarts and crashes.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use driftwatch_core::DeliveryStatus;

use crate::render::Render;
use crate::schema::{deliveries, endpoints, events};
use crate::{DbConn, Endpoint, Event, StoreResult};

/// Endpoints whose open digest period ended by `now`, the longest overdue first.
pub fn due(conn: &mut DbConn, now: NaiveDateTime, limit: i64) -> StoreResult<Vec<Endpoint>> {
    Ok(endpoints::table
        .filter(endpoints::digest_due_at.le(now))
        .order(endpoints::digest_due_at.asc())
        .limit(limit)
        .select(Endpoint::as_select())
        .load(conn)?)
}

/// The earliest end of an open digest period, for the loop's sleep.
pub fn next_due(conn: &mut DbConn) -> StoreResult<Option<NaiveDateTime>> {
    Ok(endpoints::table.select(diesel::dsl::min(endpoints::digest_due_at)).first(conn)?)
}

/// One gathered event, as the digest's builder reads it.
#[derive(Debug, Clone, Queryable)]
pub struct Gathered {
    /// The event's id.
    pub event_id: String,
    /// Its type.
    pub event_type: String,
    /// Its stored payload, the body it would have had alone.
    pub payload: String,
    /// When it was gathered.
    pub created_at: NaiveDateTime,
}

/// What the builder is given: the period and what it gathered.
#[derive(Debug)]
pub struct Period<'a> {
    /// The endpoint.
    pub endpoint: &'a Endpoint,
    /// The start of the period.
    pub since: NaiveDateTime,
    /// Its end.
    pub until: NaiveDateTime,
    /// Everything it gathered.
    pub count: usize,
    /// The oldest of them, at most the builder's cap.
    pub events: Vec<Gathered>,
}

/// How a close went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    /// Another node (or an edit of the endpoint) moved the period first: nothing was written.
    Moved,
    /// The period gathered nothing and asked for no note: only the period moved on.
    Empty,
    /// The digest was queued as this delivery, carrying `events` gathered events.
    Queued {
        /// The digest's delivery.
        delivery_id: String,
        /// How many gathered deliveries it carries.
        events: usize,
    },
}

/// The oldest `cap` events `endpoint_id` gathered up to `due`, read without closing anything
/// (for a model's summary, asked before the period is closed).
pub fn peek(conn: &mut DbConn, endpoint_id: &str, due: NaiveDateTime, cap: usize) -> StoreResult<Vec<Gathered>> {
    Ok(deliveries::table
        .filter(deliveries::endpoint_id.eq(endpoint_id))
        .filter(deliveries::status.eq(DeliveryStatus::Gathering.as_str()))
        .filter(deliveries::created_at.le(due))
        .inner_join(events::table)
        .order((deliveries::created_at.asc(), deliveries::id.asc()))
        .limit(i64::try_from(cap).unwrap_or(i64::MAX))
        .select((events::id, events::event_type, events::payload, deliveries::created_at))
        .load(conn)?)
}

/// Most ids marked in one statement (PostgreSQL binds at most 65,535 parameters).
const MARK_CHUNK: usize = 5_000;

/// Closes `endpoint`'s period that ended at `due`: moves the period on to `next_due` (`None`:
/// it gathers no more), and unless the period is empty and `build` says nothing, queues the
/// digest `build` makes of its oldest `cap` events to the endpoint, with the rest counted. One
/// transaction: the move is a compare-and-set on `digest_due_at`, so only one close of a period
/// ever commits.
#[allow(clippy::too_many_arguments)]
pub fn close(
    conn: &mut DbConn,
    render: &dyn Render,
    endpoint: &Endpoint,
    due: NaiveDateTime,
    next_due: Option<NaiveDateTime>,
    cap: usize,
    build: &dyn Fn(&Period<'_>) -> Option<Event>,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<Closed> {
    conn.transaction(|conn| {
        let moved = diesel::update(
            endpoints::table.filter(endpoints::id.eq(&endpoint.id)).filter(endpoints::digest_due_at.eq(due)),
        )
        .set((endpoints::digest_due_at.eq(next_due), endpoints::digest_since.eq(next_due.map(|_| due))))
        .execute(conn)?;
        if moved == 0 {
            return Ok(Closed::Moved);
        }
        let gathered = || {
            deliveries::table
                .filter(deliveries::endpoint_id.eq(&endpoint.id))
                .filter(deliveries::status.eq(DeliveryStatus::Gathering.as_str()))
                .filter(deliveries::created_at.le(due))
        };
        let ids: Vec<String> =
            gathered().order((deliveries::created_at.asc(), deliveries::id.asc())).select(deliveries::id).load(conn)?;
        let events = peek(conn, &endpoint.id, due, cap)?;
        let period = Period {
            endpoint,
            since: endpoint.digest_since.unwrap_or(endpoint.created_at),
            until: due,
            count: ids.len(),
            events,
        };
        let Some(event) = build(&period) else { return Ok(Closed::Empty) };
        crate::outbox::enqueue(
            conn,
            render,
            &event,
            crate::outbox::Target::One(&endpoint.id),
            default_max_attempts,
            now,
        )?;
        let delivery_id: String = deliveries::table
            .filter(deliveries::event_id.eq(&event.id))
            .filter(deliveries::endpoint_id.eq(&endpoint.id))
            .select(deliveries::id)
            .first(conn)?;
        for chunk in ids.chunks(MARK_CHUNK) {
            diesel::update(deliveries::table.filter(deliveries::id.eq_any(chunk)))
                .set((
                    deliveries::status.eq(DeliveryStatus::Digested.as_str()),
                    deliveries::digest_id.eq(&delivery_id),
                    deliveries::finished_at.eq(now),
                    deliveries::updated_at.eq(now),
                ))
                .execute(conn)?;
        }
        Ok(Closed::Queued { delivery_id, events: ids.len() })
    })
}

/// What an endpoint's open period has gathered so far: how many, and the newest `limit` of
/// them (for the endpoint's page). The account id scopes it.
pub fn waiting(
    conn: &mut DbConn,
    account_id: &str,
    endpoint_id: &str,
    limit: i64,
) -> StoreResult<(i64, Vec<crate::Delivery>)> {
    let gathering = || {
        deliveries::table
            .filter(deliveries::account_id.eq(account_id))
            .filter(deliveries::endpoint_id.eq(endpoint_id))
            .filter(deliveries::status.eq(DeliveryStatus::Gathering.as_str()))
    };
    let count: i64 = gathering().count().get_result(conn)?;
    let newest = gathering()
        .order((deliveries::created_at.desc(), deliveries::id.desc()))
        .limit(limit)
        .select(crate::Delivery::as_select())
        .load(conn)?;
    Ok((count, newest))
}

/// How many of the account's pending deliveries to `endpoint_id` quiet hours hold, and the
/// earliest release.
pub fn held(conn: &mut DbConn, account_id: &str, endpoint_id: &str) -> StoreResult<(i64, Option<NaiveDateTime>)> {
    let held = || {
        deliveries::table
            .filter(deliveries::account_id.eq(account_id))
            .filter(deliveries::endpoint_id.eq(endpoint_id))
            .filter(crate::predicates::pending())
            .filter(deliveries::held.is_not_null())
    };
    let count: i64 = held().count().get_result(conn)?;
    let first: Option<NaiveDateTime> = held().select(diesel::dsl::min(deliveries::next_attempt_at)).first(conn)?;
    Ok((count, first))
}
