//! Counts for `GET /stats`, `/metrics` and `/readyz`.

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

/// The whole database's operational state, for `/metrics`: no account filter, every figure from
/// an index (the due indexes for the lags and the outbox, `deliveries_finished` for dead
/// letters).
#[derive(Debug, Clone, Default)]
pub struct Operations {
    /// When the oldest due, unleased active watch fell due.
    pub oldest_due_watch: Option<NaiveDateTime>,
    /// Deliveries queued for a first attempt and not leased.
    pub pending: i64,
    /// Deliveries waiting for a retry and not leased.
    pub retrying: i64,
    /// Deliveries leased now (an attempt in flight).
    pub in_flight: i64,
    /// When the oldest due, unleased delivery fell due.
    pub oldest_due_delivery: Option<NaiveDateTime>,
    /// Dead deliveries.
    pub dead: i64,
    /// Enabled endpoints whose circuit is closed.
    pub circuits_closed: i64,
    /// Enabled endpoints whose circuit is open now.
    pub circuits_open: i64,
    /// Enabled endpoints past their open period, waiting for a probe to close the circuit.
    pub circuits_half_open: i64,
    /// Disabled endpoints.
    pub endpoints_disabled: i64,
    /// Recoveries pending or running.
    pub recoveries_running: i64,
}

/// The operational state at `now`.
pub fn operations(conn: &mut DbConn, now: NaiveDateTime) -> StoreResult<Operations> {
    use crate::schema::recoveries;
    let unleased_watch = watches::lease_until.is_null().or(watches::lease_until.le(now));
    let oldest_due_watch = watches::table
        .filter(watches::state.eq("active"))
        .filter(watches::next_run_at.le(now))
        .filter(unleased_watch)
        .order(watches::next_run_at)
        .select(watches::next_run_at)
        .first(conn)
        .optional()?;
    let owed = || deliveries::table.filter(deliveries::status.eq_any(["queued", "failed"]));
    let unleased = || deliveries::lease_until.is_null().or(deliveries::lease_until.le(now));
    let by_status: Vec<(String, i64)> =
        owed().filter(unleased()).group_by(deliveries::status).select((deliveries::status, count_star())).load(conn)?;
    let count_of = |status: &str| by_status.iter().find(|(s, _)| s == status).map_or(0, |(_, n)| *n);
    let in_flight = owed().filter(deliveries::lease_until.gt(now)).count().get_result(conn)?;
    let oldest_due_delivery = owed()
        .filter(deliveries::next_attempt_at.le(now))
        .filter(unleased())
        .order(deliveries::next_attempt_at)
        .select(deliveries::next_attempt_at)
        .first(conn)
        .optional()?;
    let dead = deliveries::table.filter(deliveries::status.eq("dead")).count().get_result(conn)?;
    let enabled = || endpoints::table.filter(endpoints::enabled.eq(true));
    let circuits_open = enabled().filter(endpoints::circuit_open_until.gt(now)).count().get_result(conn)?;
    let circuits_half_open = enabled().filter(endpoints::circuit_open_until.le(now)).count().get_result(conn)?;
    let circuits_closed = enabled().filter(endpoints::circuit_open_until.is_null()).count().get_result(conn)?;
    let endpoints_disabled = endpoints::table.filter(endpoints::enabled.eq(false)).count().get_result(conn)?;
    let recoveries_running =
        recoveries::table.filter(recoveries::state.eq_any(["pending", "running"])).count().get_result(conn)?;
    Ok(Operations {
        oldest_due_watch,
        pending: count_of("queued"),
        retrying: count_of("failed"),
        in_flight,
        oldest_due_delivery,
        dead,
        circuits_closed,
        circuits_open,
        circuits_half_open,
        endpoints_disabled,
        recoveries_running,
    })
}

/// Active watches (of every account) that render in the browser or may (`engine` `browser` or
/// `auto`): what a node without a browser cannot fully serve. Operators' question, not an
/// account's: `/readyz` and the start-up warning ask it.
///
/// Options are stored as compact JSON (`validate` writes them with `serde_json::to_string`)
/// and `engine` is always written, so the engine is matched in the text: a quote inside any
/// user-written value is escaped, so no value can spell `"engine":"auto"`.
pub fn rendering_watches(conn: &mut DbConn) -> StoreResult<i64> {
    let engine = watches::options.like("%\"engine\":\"browser\"%").or(watches::options.like("%\"engine\":\"auto\"%"));
    Ok(watches::table.filter(watches::state.eq("active")).filter(engine).count().get_result(conn)?)
}
