//! The outbox: claiming due deliveries under a lease, recording attempts, reading history.

use std::collections::HashMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::DeliveryStatus;

use crate::endpoints::endpoints_by_ids;
use crate::schema::{deliveries, delivery_attempts};
use crate::{DbConn, Delivery, DeliveryAttempt, Endpoint, Page, StoreResult};

/// Filters of a delivery listing.
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    /// Only this status.
    pub status: Option<DeliveryStatus>,
    /// Only to this endpoint.
    pub endpoint_id: Option<String>,
    /// Only about this watch.
    pub watch_id: Option<String>,
}

/// The account's deliveries, newest first.
pub fn list_deliveries(
    conn: &mut DbConn,
    account_id: &str,
    filter: &DeliveryFilter,
    page: &Page,
) -> StoreResult<Vec<Delivery>> {
    let mut query = deliveries::table
        .filter(deliveries::account_id.eq(account_id))
        .select(Delivery::as_select())
        .into_boxed();
    if let Some(status) = filter.status {
        query = query.filter(deliveries::status.eq(status.as_str()));
    }
    if let Some(endpoint_id) = &filter.endpoint_id {
        query = query.filter(deliveries::endpoint_id.eq(endpoint_id));
    }
    if let Some(watch_id) = &filter.watch_id {
        query = query.filter(deliveries::watch_id.eq(watch_id));
    }
    if let Some(after) = &page.after {
        query = query.filter(deliveries::id.lt(after));
    }
    Ok(query
        .order(deliveries::id.desc())
        .limit(page.limit)
        .load(conn)?)
}

/// The account's delivery `id`.
pub fn get_delivery(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
) -> StoreResult<Option<Delivery>> {
    Ok(deliveries::table
        .filter(deliveries::account_id.eq(account_id))
        .filter(deliveries::id.eq(id))
        .select(Delivery::as_select())
        .first(conn)
        .optional()?)
}

/// The attempts of a delivery, first to last.
pub fn list_attempts(conn: &mut DbConn, delivery_id: &str) -> StoreResult<Vec<DeliveryAttempt>> {
    Ok(delivery_attempts::table
        .filter(delivery_attempts::delivery_id.eq(delivery_id))
        .order(delivery_attempts::attempt_number.asc())
        .select(DeliveryAttempt::as_select())
        .load(conn)?)
}

/// A claimed delivery with what it takes to send it.
#[derive(Debug, Clone)]
pub struct Job {
    /// The outbox row (under this worker's lease).
    pub delivery: Delivery,
    /// The exact bytes to POST.
    pub body: Vec<u8>,
    /// Where to.
    pub endpoint: Endpoint,
}

fn pending() -> [&'static str; 2] {
    [
        DeliveryStatus::Queued.as_str(),
        DeliveryStatus::Failed.as_str(),
    ]
}

/// Leases up to `limit` due deliveries to `owner` until `lease_until` and returns them with
/// their bodies and endpoints. One statement, so no delivery is claimed twice; on PostgreSQL
/// `SKIP LOCKED` lets workers on several nodes take disjoint batches.
pub fn claim_due(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    limit: i64,
) -> StoreResult<Vec<Job>> {
    let condition = "status IN ('queued', 'failed')";
    let claimed = crate::lease_due(
        conn,
        "deliveries",
        condition,
        "next_attempt_at",
        &crate::Lease {
            owner,
            now,
            until: lease_until,
            limit,
        },
    )?;
    if claimed == 0 {
        return Ok(Vec::new());
    }
    let rows: Vec<(Delivery, Vec<u8>)> = deliveries::table
        .filter(deliveries::lease_owner.eq(owner))
        .order(deliveries::next_attempt_at.asc())
        .select((Delivery::as_select(), deliveries::body))
        .load(conn)?;
    let endpoint_ids: Vec<String> = rows.iter().map(|(d, _)| d.endpoint_id.clone()).collect();
    let endpoints: HashMap<String, Endpoint> = endpoints_by_ids(conn, &endpoint_ids)?
        .into_iter()
        .map(|e| (e.id.clone(), e))
        .collect();
    Ok(rows
        .into_iter()
        .filter_map(|(delivery, body)| {
            let endpoint = endpoints.get(&delivery.endpoint_id)?.clone();
            Some(Job {
                delivery,
                body,
                endpoint,
            })
        })
        .collect())
}

/// How an attempt leaves its delivery.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The new status.
    pub status: DeliveryStatus,
    /// Attempts made, this one included.
    pub attempts: i32,
    /// When to try again (ignored unless `failed`).
    pub next_attempt_at: NaiveDateTime,
    /// The receiver's status code.
    pub last_status_code: Option<i32>,
    /// Why it failed.
    pub last_error: Option<String>,
    /// Now.
    pub now: NaiveDateTime,
}

/// Records an attempt and moves its delivery on, releasing the lease; only the lease holder
/// can do this (compare-and-set on the owner). Returns false, writing nothing, if the lease was
/// lost.
pub fn complete(
    conn: &mut DbConn,
    delivery_id: &str,
    owner: &str,
    completion: &Completion,
    attempt: &DeliveryAttempt,
) -> StoreResult<bool> {
    conn.transaction(|conn| {
        let finished = matches!(
            completion.status,
            DeliveryStatus::Sent | DeliveryStatus::Dead
        );
        let updated = diesel::update(
            deliveries::table
                .filter(deliveries::id.eq(delivery_id))
                .filter(deliveries::lease_owner.eq(owner)),
        )
        .set((
            deliveries::status.eq(completion.status.as_str()),
            deliveries::attempts.eq(completion.attempts),
            deliveries::next_attempt_at.eq(completion.next_attempt_at),
            deliveries::last_status_code.eq(completion.last_status_code),
            deliveries::last_error.eq(&completion.last_error),
            deliveries::lease_owner.eq(None::<String>),
            deliveries::lease_until.eq(None::<NaiveDateTime>),
            deliveries::updated_at.eq(completion.now),
            deliveries::finished_at.eq(finished.then_some(completion.now)),
        ))
        .execute(conn)?;
        if updated != 1 {
            return Ok(false);
        }
        diesel::insert_into(delivery_attempts::table)
            .values(attempt)
            .execute(conn)?;
        Ok(true)
    })
}

/// When the worker next has something to do: the earliest due time of an unleased pending
/// delivery, or the earliest expiry of a lease on one.
pub fn next_wake(conn: &mut DbConn, now: NaiveDateTime) -> StoreResult<Option<NaiveDateTime>> {
    let unleased: Option<NaiveDateTime> = deliveries::table
        .filter(deliveries::status.eq_any(pending()))
        .filter(
            deliveries::lease_until
                .is_null()
                .or(deliveries::lease_until.lt(now)),
        )
        .select(diesel::dsl::min(deliveries::next_attempt_at))
        .first(conn)?;
    let lease_expiry: Option<NaiveDateTime> = deliveries::table
        .filter(deliveries::status.eq_any(pending()))
        .filter(deliveries::lease_until.ge(now))
        .select(diesel::dsl::min(deliveries::lease_until))
        .first(conn)?;
    Ok(crate::earliest(unleased, lease_expiry))
}
