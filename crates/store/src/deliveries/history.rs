//! Reading the outbox's history: deliveries and their attempts, as the API and the UI list them.

use std::collections::HashMap;

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::DeliveryStatus;

use crate::schema::{deliveries, delivery_attempts};
use crate::{DbConn, Delivery, DeliveryAttempt, Page, StoreResult};

/// Filters of a delivery listing.
#[derive(Debug, Clone, Default)]
pub struct DeliveryFilter {
    /// Only this status.
    pub status: Option<DeliveryStatus>,
    /// Only to this endpoint.
    pub endpoint_id: Option<String>,
    /// Only about this watch.
    pub watch_id: Option<String>,
    /// Only created at or after this.
    pub since: Option<NaiveDateTime>,
    /// Only created before this.
    pub until: Option<NaiveDateTime>,
}

/// The account's deliveries, newest first.
pub fn list_deliveries(
    conn: &mut DbConn,
    account_id: &str,
    filter: &DeliveryFilter,
    page: &Page,
) -> StoreResult<Vec<Delivery>> {
    let mut query =
        deliveries::table.filter(deliveries::account_id.eq(account_id)).select(Delivery::as_select()).into_boxed();
    if let Some(status) = filter.status {
        query = query.filter(deliveries::status.eq(status.as_str()));
    }
    if let Some(endpoint_id) = &filter.endpoint_id {
        query = query.filter(deliveries::endpoint_id.eq(endpoint_id));
    }
    if let Some(watch_id) = &filter.watch_id {
        query = query.filter(deliveries::watch_id.eq(watch_id));
    }
    if let Some(since) = filter.since {
        query = query.filter(deliveries::created_at.ge(since));
    }
    if let Some(until) = filter.until {
        query = query.filter(deliveries::created_at.lt(until));
    }
    if let Some(after) = &page.after {
        query = query.filter(deliveries::id.lt(after));
    }
    Ok(query.order(deliveries::id.desc()).limit(page.limit).load(conn)?)
}

/// The exact body of the account's delivery `id` (empty once retention purged it); `None` when
/// there is no such delivery.
pub fn delivery_body(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Vec<u8>>> {
    Ok(deliveries::table
        .filter(deliveries::account_id.eq(account_id))
        .filter(deliveries::id.eq(id))
        .select(deliveries::body)
        .first(conn)
        .optional()?)
}

/// The last attempt of each of `ids` (for the dead-letter view).
pub fn last_attempts(conn: &mut DbConn, ids: &[String]) -> StoreResult<HashMap<String, DeliveryAttempt>> {
    let rows: Vec<DeliveryAttempt> = delivery_attempts::table
        .filter(delivery_attempts::delivery_id.eq_any(ids))
        .order((delivery_attempts::delivery_id.asc(), delivery_attempts::attempt_number.asc()))
        .select(DeliveryAttempt::as_select())
        .load(conn)?;
    Ok(rows.into_iter().map(|a| (a.delivery_id.clone(), a)).collect())
}

/// The account's delivery `id`.
pub fn get_delivery(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Delivery>> {
    Ok(deliveries::table
        .filter(deliveries::account_id.eq(account_id))
        .filter(deliveries::id.eq(id))
        .select(Delivery::as_select())
        .first(conn)
        .optional()?)
}

/// The attempts of the account's delivery `delivery_id`, first to last (none for another
/// account's).
pub fn list_attempts(conn: &mut DbConn, account_id: &str, delivery_id: &str) -> StoreResult<Vec<DeliveryAttempt>> {
    Ok(delivery_attempts::table
        .inner_join(deliveries::table)
        .filter(deliveries::account_id.eq(account_id))
        .filter(delivery_attempts::delivery_id.eq(delivery_id))
        .order(delivery_attempts::attempt_number.asc())
        .select(DeliveryAttempt::as_select())
        .load(conn)?)
}

/// The account's deliveries counted by status.
pub fn count_by_status(conn: &mut DbConn, account_id: &str) -> StoreResult<Vec<(String, i64)>> {
    Ok(deliveries::table
        .filter(deliveries::account_id.eq(account_id))
        .group_by(deliveries::status)
        .select((deliveries::status, diesel::dsl::count_star()))
        .load(conn)?)
}
