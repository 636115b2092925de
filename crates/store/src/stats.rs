//! Counts for `GET /stats`.

use chrono::NaiveDateTime;
use diesel::dsl::count_star;
use diesel::prelude::*;

use crate::schema::{deliveries, endpoints, events, watches};
use crate::{DbConn, StoreResult};

/// An account at a glance.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// Watches by (state, health).
    pub watches: Vec<(String, String, i64)>,
    /// Events raised since `since`.
    pub events_since: i64,
    /// Deliveries by status.
    pub deliveries: Vec<(String, i64)>,
    /// Enabled endpoints whose circuit is open now.
    pub open_circuits: i64,
    /// Disabled endpoints.
    pub disabled_endpoints: i64,
}

/// The account's counts; events are counted from `since`, circuits at `now`.
pub fn stats(conn: &mut DbConn, account_id: &str, since: NaiveDateTime, now: NaiveDateTime) -> StoreResult<Stats> {
    let watches = watches::table
        .filter(watches::account_id.eq(account_id))
        .group_by((watches::state, watches::health))
        .select((watches::state, watches::health, count_star()))
        .load(conn)?;
    let events_since = events::table
        .filter(events::account_id.eq(account_id))
        .filter(events::created_at.ge(since))
        .count()
        .get_result(conn)?;
    let deliveries = deliveries::table
        .filter(deliveries::account_id.eq(account_id))
        .group_by(deliveries::status)
        .select((deliveries::status, count_star()))
        .load(conn)?;
    let mine = endpoints::table.filter(endpoints::account_id.eq(account_id));
    let open_circuits = mine
        .filter(endpoints::enabled.eq(true))
        .filter(endpoints::circuit_open_until.gt(now))
        .count()
        .get_result(conn)?;
    let disabled_endpoints = mine.filter(endpoints::enabled.eq(false)).count().get_result(conn)?;
    Ok(Stats { watches, events_since, deliveries, open_circuits, disabled_endpoints })
}
