//! The outbox claim: due deliveries of endpoints without limits, leased in one statement; giving
//! them back; when the worker next has something to do.

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;

use super::job::{ClaimedRow, Job, with_endpoints};
use crate::predicates::pending;
use crate::schema::{deliveries, endpoints};
use crate::{DbConn, StoreResult};

/// How many deliveries a claim may take per endpoint: this node sends at most `per_endpoint` to
/// one endpoint at a time, and already sends `in_flight` to some. A claim takes no more than
/// what is left, so it never leases a delivery only to give it back.
#[derive(Debug, Clone, Copy)]
pub struct Room<'a> {
    /// Most deliveries in flight to one endpoint.
    pub per_endpoint: i64,
    /// Endpoints with deliveries in flight, and how many.
    pub in_flight: &'a [(String, i64)],
}

impl Room<'_> {
    /// No cap: every due delivery may be claimed.
    pub const ANY: Room<'static> = Room { per_endpoint: i64::MAX, in_flight: &[] };

    /// The in-flight counts as a JSON object, one parameter on both backends.
    fn in_flight_json(&self) -> String {
        let map: serde_json::Map<String, serde_json::Value> =
            self.in_flight.iter().map(|(id, n)| (id.clone(), (*n).into())).collect();
        serde_json::Value::Object(map).to_string()
    }

    /// How many due rows one claim of `limit` looks at: enough that a backlog of one endpoint
    /// ahead of the others leaves room for theirs, few enough to stay a short walk of the index.
    fn candidates(limit: i64) -> i64 {
        limit.saturating_mul(4).clamp(1, 4_000)
    }
}

/// Leases up to `limit` due deliveries to `owner` until `lease_until` and returns them with
/// their bodies and endpoints, oldest due first. One statement leases and returns the rows
/// (`UPDATE … RETURNING`), so no delivery is claimed twice; on PostgreSQL `SKIP LOCKED` lets
/// workers on several nodes take disjoint batches.
///
/// Deliveries wait, unclaimed and without spending attempts, while their endpoint is disabled
/// or its circuit is open, and while their endpoint is in `skip_endpoints` (this worker's
/// endpoints at their per-node concurrency cap). The skipped ids are bound as one parameter: an
/// array on PostgreSQL, a JSON array on SQLite. Of the oldest due rows (a few times `limit`),
/// each endpoint gets no more than its `room` (a window function ranks them per endpoint).
/// Endpoints with a limit that holds across nodes (`max_in_flight`, `rate_limit_per_second`, or
/// a circuit past its open period waiting for its probe) are left to [`super::claim_limited`].
pub fn claim_due(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    limit: i64,
    skip_endpoints: &[String],
    room: &Room<'_>,
) -> StoreResult<Vec<Job>> {
    use diesel::sql_types::{Array, BigInt, Text, Timestamp};
    let (candidates, in_flight) = (Room::candidates(limit), room.in_flight_json());
    let mut rows: Vec<ClaimedRow> = match conn {
        // Walking `deliveries_due` in due order stops after `limit` rows and marks the index
        // entries of finished rows dead as it passes them; a bitmap scan (which the planner
        // picks when its statistics lag behind a growing queue) reads every due entry, dead
        // ones included, on every claim. So the claim forbids it, for its own transaction only
        // (and JIT, which would compile this small statement afresh every time).
        DbConn::Pg(pg) => pg.transaction(|pg| {
            pg.batch_execute(crate::INDEX_ORDER_ONLY)?;
            diesel::sql_query(CLAIM_PG)
                .bind::<Text, _>(owner)
                .bind::<Timestamp, _>(lease_until)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(limit)
                .bind::<Array<Text>, _>(skip_endpoints)
                .bind::<BigInt, _>(candidates)
                .bind::<BigInt, _>(room.per_endpoint)
                .bind::<Text, _>(&in_flight)
                .load(pg)
        })?,
        DbConn::Sqlite(sqlite) => {
            let skip = serde_json::to_string(skip_endpoints).unwrap_or_else(|_| "[]".into());
            diesel::sql_query(CLAIM_SQLITE)
                .bind::<Text, _>(owner)
                .bind::<Timestamp, _>(lease_until)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(limit)
                .bind::<Text, _>(skip)
                .bind::<BigInt, _>(candidates)
                .bind::<BigInt, _>(room.per_endpoint)
                .bind::<Text, _>(&in_flight)
                .load(sqlite)?
        }
    };
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    rows.sort_by(|a, b| {
        (a.delivery.next_attempt_at, &a.delivery.id).cmp(&(b.delivery.next_attempt_at, &b.delivery.id))
    });
    with_endpoints(conn, rows.into_iter().map(|r| (r.delivery, r.body)).collect())
}

/// The claim on PostgreSQL: `$1` owner, `$2` lease expiry, `$3` now, `$4` limit, `$5` the
/// endpoints to skip (an array), `$6` the due rows looked at, `$7` the cap per endpoint, `$8`
/// the deliveries in flight per endpoint (a JSON object).
///
/// The due ids are gathered once (`ARRAY(…)`, an init plan) and then updated through the
/// primary key, so the planner cannot pick a hash join over the whole outbox for the update.
/// The rows looked at are locked (`SKIP LOCKED`) for the statement's short transaction, those
/// over their endpoint's room included.
pub(super) const CLAIM_PG: &str = "UPDATE deliveries SET lease_owner = $1, lease_until = $2, held = NULL WHERE id = ANY(ARRAY(\
    SELECT ranked.id FROM (SELECT due.id, due.endpoint_id, due.next_attempt_at, \
    row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at, due.id) AS nth FROM (\
    SELECT id, endpoint_id, next_attempt_at FROM deliveries \
    WHERE status IN ('queued', 'failed') AND next_attempt_at <= $3 \
    AND (lease_until IS NULL OR lease_until < $3) AND body_purged_at IS NULL \
    AND limited = FALSE AND endpoint_id NOT IN (SELECT id FROM endpoints WHERE enabled = false) \
    AND endpoint_id <> ALL($5) \
    ORDER BY next_attempt_at LIMIT $6 FOR NO KEY UPDATE SKIP LOCKED) due) ranked \
    LEFT JOIN jsonb_each_text($8::jsonb) AS busy ON busy.key = ranked.endpoint_id \
    WHERE ranked.nth <= $7 - COALESCE(busy.value::bigint, 0) \
    ORDER BY ranked.next_attempt_at LIMIT $4)) RETURNING *";

/// The claim on SQLite, with the same parameters (`$5` a JSON array). SQLite has one writer at
/// a time, so the single statement is already exclusive; without statistics its planner would
/// rather sort every pending row than walk the due index, so the index is named.
pub(super) const CLAIM_SQLITE: &str = "UPDATE deliveries SET lease_owner = ?1, lease_until = ?2, held = NULL WHERE id IN (\
    SELECT ranked.id FROM (SELECT due.id, due.endpoint_id, due.next_attempt_at, \
    row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at, due.id) AS nth FROM (\
    SELECT id, endpoint_id, next_attempt_at FROM deliveries INDEXED BY deliveries_due \
    WHERE status IN ('queued', 'failed') AND next_attempt_at <= ?3 \
    AND (lease_until IS NULL OR lease_until < ?3) AND body_purged_at IS NULL \
    AND limited = FALSE AND endpoint_id NOT IN (SELECT id FROM endpoints WHERE enabled = false) \
    AND endpoint_id NOT IN (SELECT value FROM json_each(?5)) \
    ORDER BY next_attempt_at LIMIT ?6) due) ranked \
    LEFT JOIN json_each(?8) AS busy ON busy.key = ranked.endpoint_id \
    WHERE ranked.nth <= ?7 - COALESCE(busy.value, 0) \
    ORDER BY ranked.next_attempt_at LIMIT ?4) RETURNING *";

/// Gives claimed deliveries back without attempting them (their endpoint is busy, paced or
/// half-open), optionally not before `not_before`. Only the lease holder can.
pub fn release(
    conn: &mut DbConn,
    ids: &[String],
    owner: &str,
    not_before: Option<NaiveDateTime>,
) -> StoreResult<usize> {
    let target = deliveries::table.filter(deliveries::id.eq_any(ids)).filter(deliveries::lease_owner.eq(owner));
    let cleared = (deliveries::lease_owner.eq(None::<String>), deliveries::lease_until.eq(None::<NaiveDateTime>));
    Ok(match not_before {
        Some(at) => diesel::update(target).set((cleared, deliveries::next_attempt_at.eq(at))).execute(conn)?,
        None => diesel::update(target).set(cleared).execute(conn)?,
    })
}

/// Gives claimed deliveries back to wait until `until`, saying why (`held`: quiet hours). Only
/// the lease holder can.
pub fn hold(conn: &mut DbConn, ids: &[String], owner: &str, until: NaiveDateTime, why: &str) -> StoreResult<usize> {
    Ok(diesel::update(deliveries::table.filter(deliveries::id.eq_any(ids)).filter(deliveries::lease_owner.eq(owner)))
        .set((
            deliveries::lease_owner.eq(None::<String>),
            deliveries::lease_until.eq(None::<NaiveDateTime>),
            deliveries::next_attempt_at.eq(until),
            deliveries::held.eq(why),
        ))
        .execute(conn)?)
}

/// When the worker next has something to do: the earliest due time of an unleased pending
/// delivery whose endpoint can take it, the earliest expiry of a lease on one, or the earliest
/// end of an open circuit.
///
/// On PostgreSQL the four reads share one transaction that walks indexes in order: a bitmap
/// scan would revisit every dead index entry a busy outbox leaves behind (milliseconds per wake
/// on a table of delivered rows), where an ordered scan marks them dead once and then skips them.
pub fn next_wake(
    conn: &mut DbConn,
    now: NaiveDateTime,
    skip_endpoints: &[String],
) -> StoreResult<Option<NaiveDateTime>> {
    crate::in_index_order(conn, |conn| next_wake_in(conn, now, skip_endpoints))
}

fn next_wake_in(
    conn: &mut DbConn,
    now: NaiveDateTime,
    skip_endpoints: &[String],
) -> StoreResult<Option<NaiveDateTime>> {
    let blocked = endpoints::table
        .select(endpoints::id)
        .filter(endpoints::enabled.eq(false).or(endpoints::circuit_open_until.gt(now)));
    // A limited endpoint's deliveries already due were offered to the last `claim_limited`:
    // what holds them (its cap, its pacing, its probe) ends with a completion, a lease expiry,
    // `paced_until` or the poll, not now. Only their future due times count here.
    let unleased: Option<NaiveDateTime> = deliveries::table
        .filter(pending())
        .filter(deliveries::lease_until.is_null().or(deliveries::lease_until.lt(now)))
        .filter(deliveries::endpoint_id.ne_all(blocked))
        .filter(deliveries::endpoint_id.ne_all(skip_endpoints))
        .filter(deliveries::limited.eq(false).or(deliveries::next_attempt_at.gt(now)))
        .select(diesel::dsl::min(deliveries::next_attempt_at))
        .first(conn)?;
    let paced: Option<NaiveDateTime> = endpoints::table
        .filter(endpoints::enabled.eq(true))
        .filter(endpoints::paced_until.gt(now))
        .select(diesel::dsl::min(endpoints::paced_until))
        .first(conn)?;
    let lease_expiry: Option<NaiveDateTime> = deliveries::table
        .filter(pending())
        .filter(deliveries::lease_until.ge(now))
        .select(diesel::dsl::min(deliveries::lease_until))
        .first(conn)?;
    let circuit_close: Option<NaiveDateTime> = endpoints::table
        .filter(endpoints::enabled.eq(true))
        .filter(endpoints::circuit_open_until.gt(now))
        .select(diesel::dsl::min(endpoints::circuit_open_until))
        .first(conn)?;
    Ok(crate::earliest(crate::earliest(crate::earliest(unleased, lease_expiry), circuit_close), paced))
}
