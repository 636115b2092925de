//! Endpoints: where an account's events are delivered.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::outbox::Target;
use crate::predicates::{is_limited, pending};
use crate::schema::endpoints;
use crate::{DbConn, Endpoint, Event, Page, StoreResult};

/// What an attempt says about its endpoint's health.
#[derive(Debug, Clone)]
pub enum Health {
    /// Nothing (the request was never sent: a configuration problem, not the receiver's).
    Unchanged,
    /// The receiver answered 2xx: the failure streak ends and the circuit closes.
    Success,
    /// A failure: the streak grows; at `threshold` the circuit opens for `open_for`; a streak
    /// older than `disable_after` disables the endpoint.
    Failure {
        /// Consecutive failures that open the circuit.
        threshold: i32,
        /// How long the circuit stays open.
        open_for: chrono::TimeDelta,
        /// A failure streak this long disables the endpoint.
        disable_after: chrono::TimeDelta,
    },
    /// 410 Gone: the receiver asks never to be called again; the endpoint is disabled.
    Gone,
}

/// The endpoint was disabled by this attempt: the caller's `event` builds the
/// `endpoint.disabled` event, and `render` renders it for the account's other endpoints.
#[derive(Clone, Copy)]
pub struct DisabledEvent<'a> {
    /// Builds the event for the endpoint and the reason.
    pub event: &'a dyn Fn(&Endpoint, &str) -> Event,
    /// Renders its bodies.
    pub render: &'a dyn crate::render::Render,
}

/// The account's enabled endpoints that `watch`'s events are routed to (whatever their event
/// types), oldest first.
pub fn routed_to(conn: &mut DbConn, account_id: &str, watch: &crate::Watch) -> StoreResult<Vec<Endpoint>> {
    let all: Vec<Endpoint> = endpoints::table
        .filter(endpoints::account_id.eq(account_id))
        .filter(endpoints::enabled.eq(true))
        .order(endpoints::id.asc())
        .select(Endpoint::as_select())
        .load(conn)?;
    Ok(all
        .into_iter()
        .filter(|e| crate::models::routes(e.route_tags.as_deref(), e.route_watches.as_deref(), &watch.id, &watch.tags))
        .collect())
}

/// Inserts a new endpoint.
pub fn insert_endpoint(conn: &mut DbConn, endpoint: &Endpoint) -> StoreResult<()> {
    diesel::insert_into(endpoints::table).values(endpoint).execute(conn)?;
    Ok(())
}

/// The account's endpoint `id`.
pub fn get_endpoint(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Endpoint>> {
    Ok(endpoints::table
        .filter(endpoints::account_id.eq(account_id))
        .filter(endpoints::id.eq(id))
        .select(Endpoint::as_select())
        .first(conn)
        .optional()?)
}

/// The account's endpoints in creation order.
pub fn list_endpoints(conn: &mut DbConn, account_id: &str, page: &Page) -> StoreResult<Vec<Endpoint>> {
    let mut query =
        endpoints::table.filter(endpoints::account_id.eq(account_id)).select(Endpoint::as_select()).into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(endpoints::id.gt(after));
    }
    Ok(query.order(endpoints::id.asc()).limit(page.limit).load(conn)?)
}

/// Endpoints by id, whatever their account (for the delivery worker, which acts for all).
pub fn endpoints_by_ids(conn: &mut DbConn, ids: &[String]) -> StoreResult<Vec<Endpoint>> {
    Ok(endpoints::table.filter(endpoints::id.eq_any(ids)).select(Endpoint::as_select()).load(conn)?)
}

/// Ends the failure streak and closes the circuit of each of `ids` that has either, after
/// attempts that all succeeded (inside their transaction). Reads first, so the usual case (all
/// healthy already) takes no row lock; the few to change are updated one by one in id order,
/// the global lock order of the outbox's writers.
pub(crate) fn record_successes(conn: &mut DbConn, ids: &[&str]) -> StoreResult<()> {
    let mut unhealthy: Vec<String> = endpoints::table
        .filter(endpoints::id.eq_any(ids))
        .filter(endpoints::consecutive_failures.gt(0).or(endpoints::circuit_open_until.is_not_null()))
        .select(endpoints::id)
        .load(conn)?;
    unhealthy.sort();
    for id in &unhealthy {
        end_failure_streak(conn, id)?;
    }
    Ok(())
}

/// Updates an endpoint's failure streak and circuit after an attempt (inside the attempt's
/// transaction). The increment is a single statement, so concurrent completions on several
/// nodes never lose a failure.
pub(crate) fn record_health(
    conn: &mut DbConn,
    endpoint_id: &str,
    health: &Health,
    (now, default_max_attempts): (NaiveDateTime, i32),
    on_disabled: DisabledEvent<'_>,
) -> StoreResult<()> {
    let target = endpoints::table.find(endpoint_id);
    match health {
        Health::Unchanged => {}
        Health::Success => end_failure_streak(conn, endpoint_id)?,
        Health::Failure { threshold, open_for, disable_after } => {
            diesel::update(target)
                .set(endpoints::consecutive_failures.eq(endpoints::consecutive_failures + 1))
                .execute(conn)?;
            diesel::update(target.filter(endpoints::failing_since.is_null()))
                .set(endpoints::failing_since.eq(now))
                .execute(conn)?;
            let endpoint: Endpoint = target.select(Endpoint::as_select()).first(conn)?;
            if endpoint.consecutive_failures >= *threshold {
                diesel::update(target).set(endpoints::circuit_open_until.eq(now + *open_for)).execute(conn)?;
                if endpoint.circuit_open_until.is_none() {
                    sync_limited(conn, endpoint_id)?; // the circuit opened: its deliveries wait for the probe
                }
            }
            if endpoint.enabled && endpoint.failing_since.is_some_and(|since| now - since >= *disable_after) {
                let reason = format!(
                    "failing continuously since {} UTC",
                    endpoint.failing_since.unwrap_or(now).format("%Y-%m-%d %H:%M:%S")
                );
                disable(conn, &endpoint, &reason, (now, default_max_attempts), on_disabled)?;
            }
        }
        Health::Gone => {
            let endpoint: Endpoint = target.select(Endpoint::as_select()).first(conn)?;
            if endpoint.enabled {
                disable(conn, &endpoint, "the receiver answered 410 Gone", (now, default_max_attempts), on_disabled)?;
            }
        }
    }
    Ok(())
}

/// A success: the failure streak ends and the circuit closes (no write when already so).
fn end_failure_streak(conn: &mut DbConn, endpoint_id: &str) -> StoreResult<()> {
    diesel::update(
        endpoints::table
            .find(endpoint_id)
            .filter(endpoints::consecutive_failures.gt(0).or(endpoints::circuit_open_until.is_not_null())),
    )
    .set((
        endpoints::consecutive_failures.eq(0),
        endpoints::failing_since.eq(None::<NaiveDateTime>),
        endpoints::circuit_open_until.eq(None::<NaiveDateTime>),
    ))
    .execute(conn)?;
    sync_limited(conn, endpoint_id)?;
    Ok(())
}

fn disable(
    conn: &mut DbConn,
    endpoint: &Endpoint,
    reason: &str,
    (now, default_max_attempts): (NaiveDateTime, i32),
    on_disabled: DisabledEvent<'_>,
) -> StoreResult<()> {
    // Only the transaction that flips it raises the event (two concurrent 410s raise one).
    let flipped = diesel::update(endpoints::table.find(&endpoint.id).filter(endpoints::enabled.eq(true)))
        .set((endpoints::enabled.eq(false), endpoints::disabled_reason.eq(reason), endpoints::updated_at.eq(now)))
        .execute(conn)?;
    if flipped == 0 {
        return Ok(());
    }
    let event = (on_disabled.event)(endpoint, reason);
    let except = Target::AllEnabledExcept(&endpoint.id);
    crate::outbox::enqueue(conn, on_disabled.render, &event, except, default_max_attempts, now)?;
    tracing::warn!(endpoint.id = %endpoint.id, reason, "endpoint disabled");
    Ok(())
}

/// Enables or disables the account's endpoint `id` by request. Enabling clears the failure
/// streak and the circuit, so its waiting deliveries resume. `None` when there is no such
/// endpoint.
pub fn set_enabled(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    enabled: bool,
    now: NaiveDateTime,
) -> StoreResult<Option<Endpoint>> {
    let target = endpoints::table.filter(endpoints::account_id.eq(account_id)).filter(endpoints::id.eq(id));
    let changed = if enabled {
        diesel::update(target)
            .set((
                endpoints::enabled.eq(true),
                endpoints::disabled_reason.eq(None::<String>),
                endpoints::consecutive_failures.eq(0),
                endpoints::failing_since.eq(None::<NaiveDateTime>),
                endpoints::circuit_open_until.eq(None::<NaiveDateTime>),
                endpoints::updated_at.eq(now),
            ))
            .execute(conn)?
    } else {
        diesel::update(target)
            .set((
                endpoints::enabled.eq(false),
                endpoints::disabled_reason.eq("disabled by request"),
                endpoints::updated_at.eq(now),
            ))
            .execute(conn)?
    };
    if changed == 0 {
        return Ok(None);
    }
    sync_limited(conn, id)?;
    get_endpoint(conn, account_id, id)
}

/// Replaces the account's endpoint's secret with `secret`; the old one keeps signing until
/// `overlap_until`. `None` when there is no such endpoint.
pub fn rotate_secret(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    secret: &str,
    overlap_until: NaiveDateTime,
    now: NaiveDateTime,
) -> StoreResult<Option<Endpoint>> {
    conn.transaction(|conn| {
        let Some(current) = get_endpoint(conn, account_id, id)? else { return Ok(None) };
        diesel::update(endpoints::table.find(id))
            .set((
                endpoints::secret.eq(secret),
                endpoints::previous_secret.eq(&current.secret),
                endpoints::previous_secret_expires_at.eq(overlap_until),
                endpoints::updated_at.eq(now),
            ))
            .execute(conn)?;
        get_endpoint(conn, account_id, id)
    })
}

/// The changes `PATCH /endpoints/{id}` may make; `None` leaves a column as it is.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = endpoints)]
pub struct EndpointChanges {
    /// New URL (masked when it is a credential).
    pub url: Option<String>,
    /// New sealed credential URL (`Some(None)`: `url` is the real one).
    pub url_secret: Option<Option<String>>,
    /// New description.
    pub description: Option<String>,
    /// New retry schedule (`Some(None)` returns to the global one).
    pub retry_schedule: Option<Option<String>>,
    /// New attempt budget (`Some(None)`: the global one).
    pub max_attempts: Option<Option<i32>>,
    /// New rate limit (`Some(None)`: none).
    pub rate_limit_per_second: Option<Option<i32>>,
    /// New concurrency cap (`Some(None)`: the global one).
    pub max_in_flight: Option<Option<i32>>,
    /// New event types, comma-separated (`Some(None)`: all of them).
    pub event_types: Option<Option<String>>,
    /// New settings.
    pub settings: Option<String>,
    /// New secrets, sealed (`Some(None)`: none).
    pub secrets: Option<Option<String>>,
    /// New title template (`Some(None)`: the default).
    pub title_template: Option<Option<String>>,
    /// New body template (`Some(None)`: the default).
    pub body_template: Option<Option<String>>,
    /// New route tags (`Some(None)`: not by tag).
    pub route_tags: Option<Option<String>>,
    /// New routed watches (`Some(None)`: not by watch).
    pub route_watches: Option<Option<String>>,
    /// New delivery mode JSON (`Some(None)`: at once).
    pub delivery: Option<Option<String>>,
    /// New quiet hours JSON (`Some(None)`: the account's).
    pub quiet_hours: Option<Option<String>>,
    /// New end of the open digest period (`Some(None)`: it gathers no more).
    pub digest_due_at: Option<Option<NaiveDateTime>>,
    /// New start of the open digest period.
    pub digest_since: Option<Option<NaiveDateTime>>,
    /// Now.
    pub updated_at: Option<NaiveDateTime>,
}

/// Applies `changes` to the account's endpoint `id`; `None` when there is no such endpoint.
pub fn update_endpoint(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    changes: &EndpointChanges,
) -> StoreResult<Option<Endpoint>> {
    let updated =
        diesel::update(endpoints::table.filter(endpoints::account_id.eq(account_id)).filter(endpoints::id.eq(id)))
            .set(changes)
            .execute(conn)?;
    if updated == 0 {
        return Ok(None);
    }
    sync_limited(conn, id)?;
    get_endpoint(conn, account_id, id)
}

/// Deletes the account's endpoint `id` with its deliveries; false when there is no such endpoint.
pub fn delete_endpoint(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<bool> {
    let deleted =
        diesel::delete(endpoints::table.filter(endpoints::account_id.eq(account_id)).filter(endpoints::id.eq(id)))
            .execute(conn)?;
    Ok(deleted == 1)
}

/// Brings the `limited` flag of the endpoint's pending deliveries in line with the endpoint
/// (after its limits or its circuit changed), in the caller's transaction.
///
/// On PostgreSQL a row another transaction holds is skipped, never waited for: callers hold the
/// endpoint's row, and a batch of completions locks its deliveries before their endpoints, so
/// waiting could deadlock. A row left stale is set right when it is next claimed (the worker
/// flags an unlimited row of a limited endpoint; `claim_limited` hands back the reverse).
pub fn sync_limited(conn: &mut DbConn, endpoint_id: &str) -> StoreResult<usize> {
    use crate::schema::deliveries;
    let limited: bool =
        endpoints::table.find(endpoint_id).select(is_limited()).first(conn).optional()?.unwrap_or(false);
    let stale = deliveries::table
        .filter(deliveries::endpoint_id.eq(endpoint_id))
        .filter(pending())
        .filter(deliveries::limited.ne(limited));
    Ok(match conn {
        DbConn::Pg(pg) => {
            let ids: Vec<String> = stale.select(deliveries::id).for_no_key_update().skip_locked().load(pg)?;
            diesel::update(deliveries::table.filter(deliveries::id.eq_any(&ids)))
                .set(deliveries::limited.eq(limited))
                .execute(pg)?
        }
        DbConn::Sqlite(sqlite) => diesel::update(stale).set(deliveries::limited.eq(limited)).execute(sqlite)?,
    })
}
