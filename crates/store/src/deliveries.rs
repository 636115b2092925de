//! The outbox: claiming due deliveries under a lease, recording attempts, reading history.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use driftwatch_core::{AttemptTrigger, DeliveryStatus};

use crate::endpoints::endpoints_by_ids;
use crate::outbox::NewEvent;
use crate::schema::{deliveries, delivery_attempts, endpoints};
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

/// `status IN ('queued', 'failed')`, written out rather than bound: only a literal lets SQLite and
/// PostgreSQL match the partial indexes over pending deliveries (`deliveries_due`,
/// `deliveries_endpoint_due`). With bound parameters both planners fall back to
/// `deliveries_endpoint` and walk every delivery the endpoint ever had.
pub(crate) fn pending() -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    const _: () = assert!(
        matches!(DeliveryStatus::Queued.as_str().as_bytes(), b"queued")
            && matches!(DeliveryStatus::Failed.as_str().as_bytes(), b"failed")
    );
    diesel::dsl::sql("deliveries.status IN ('queued', 'failed')")
}

/// [`pending`] and flagged `limited`: the predicate of `deliveries_endpoint_due`, written as the
/// index writes it.
fn pending_limited() -> diesel::expression::SqlLiteral<diesel::sql_types::Bool> {
    diesel::dsl::sql("deliveries.status IN ('queued', 'failed') AND deliveries.limited = TRUE")
}

/// Leases up to `limit` due deliveries to `owner` until `lease_until` and returns them with
/// their bodies and endpoints, oldest due first. One statement leases and returns the rows
/// (`UPDATE … RETURNING`), so no delivery is claimed twice; on PostgreSQL `SKIP LOCKED` lets
/// workers on several nodes take disjoint batches.
///
/// Deliveries wait, unclaimed and without spending attempts, while their endpoint is disabled
/// or its circuit is open, and while their endpoint is in `skip_endpoints` (this worker's
/// endpoints at their per-node concurrency cap). The skipped ids are bound as one parameter: an
/// array on PostgreSQL, a JSON array on SQLite. Endpoints with a limit that holds across nodes
/// (`max_in_flight`, `rate_limit_per_second`, or a circuit past its open period waiting for its
/// probe) are left to [`claim_limited`].
pub fn claim_due(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    limit: i64,
    skip_endpoints: &[String],
) -> StoreResult<Vec<Job>> {
    use diesel::sql_types::{Array, BigInt, Text, Timestamp};
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
/// endpoints to skip (an array).
///
/// The due ids are gathered once (`ARRAY(…)`, an init plan) and then updated through the
/// primary key, so the planner cannot pick a hash join over the whole outbox for the update.
const CLAIM_PG: &str = "UPDATE deliveries SET lease_owner = $1, lease_until = $2 WHERE id = ANY(ARRAY(\
    SELECT id FROM deliveries \
    WHERE status IN ('queued', 'failed') AND next_attempt_at <= $3 \
    AND (lease_until IS NULL OR lease_until < $3) AND body_purged_at IS NULL \
    AND limited = FALSE AND endpoint_id NOT IN (SELECT id FROM endpoints WHERE enabled = false) \
    AND endpoint_id <> ALL($5) \
    ORDER BY next_attempt_at LIMIT $4 FOR NO KEY UPDATE SKIP LOCKED)) RETURNING *";

/// The claim on SQLite, with the same parameters (`$5` a JSON array). SQLite has one writer at
/// a time, so the single statement is already exclusive; without statistics its planner would
/// rather sort every pending row than walk the due index, so the index is named.
const CLAIM_SQLITE: &str = "UPDATE deliveries SET lease_owner = ?1, lease_until = ?2 WHERE id IN (\
    SELECT id FROM deliveries INDEXED BY deliveries_due \
    WHERE status IN ('queued', 'failed') AND next_attempt_at <= ?3 \
    AND (lease_until IS NULL OR lease_until < ?3) AND body_purged_at IS NULL \
    AND limited = FALSE AND endpoint_id NOT IN (SELECT id FROM endpoints WHERE enabled = false) \
    AND endpoint_id NOT IN (SELECT value FROM json_each(?5)) \
    ORDER BY next_attempt_at LIMIT ?4) RETURNING *";

/// A delivery of a limited endpoint, claimed with the time it may be sent.
#[derive(Debug, Clone)]
pub struct PacedJob {
    /// The delivery, its body and endpoint.
    pub job: Job,
    /// Not before this (a rate-limited endpoint's deliveries are spaced `1/rate` apart).
    pub send_at: NaiveDateTime,
}

/// How far ahead a rate-limited endpoint's sends are planned in one claim.
const PACING_HORIZON_MS: i64 = 1_000;

/// What one [`claim_limited`] leased, and where the next one starts looking.
#[derive(Debug, Clone, Default)]
pub struct LimitedClaim {
    /// The deliveries leased, each with its send time.
    pub jobs: Vec<PacedJob>,
    /// The last endpoint looked at: pass it as `after` next time, so every limited endpoint
    /// with work gets its turn however many are at their cap.
    pub cursor: String,
}

/// A limited endpoint as `claim_limited` sees it: id, `max_in_flight`, `rate_limit_per_second`,
/// `circuit_open_until`, `paced_until`, and whether it still has a limit.
type Limits = (String, Option<i32>, Option<i32>, Option<NaiveDateTime>, Option<NaiveDateTime>, bool);

/// Claims, for at most `max_endpoints` endpoints after `after` in id order (wrapping around),
/// the due deliveries their limits allow now, counting across every node: an endpoint's
/// `max_in_flight` (else `default_cap`) against its deliveries leased anywhere, its
/// `rate_limit_per_second` through `endpoints.paced_until` (sends planned up to a second ahead,
/// `1/rate` apart), and a half-open circuit (past its open period, not yet closed by a success)
/// to one probe at a time. Each endpoint is locked while its claim is decided (`FOR NO KEY
/// UPDATE SKIP LOCKED` on PostgreSQL: another node takes the next endpoint instead of waiting,
/// and deliveries can still be inserted for it; SQLite has one writer), so two nodes never both
/// see a free slot. Leases last `lease` past each delivery's send time.
///
/// A delivery flagged `limited` whose endpoint has lost its limits since (it was queued while
/// they were being removed) is handed back to the outbox claim here.
#[allow(clippy::too_many_arguments)]
pub fn claim_limited(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease: chrono::TimeDelta,
    default_cap: i64,
    max_deliveries: i64,
    max_endpoints: i64,
    after: &str,
) -> StoreResult<LimitedClaim> {
    let horizon = now + chrono::TimeDelta::milliseconds(PACING_HORIZON_MS);
    let max_endpoints = max_endpoints.max(1);
    conn.transaction(|conn| {
        let mut limited = limited_candidates(conn, now, horizon, after, max_endpoints)?;
        if (limited.len() as i64) < max_endpoints && !after.is_empty() {
            // Wrap around to the start; an endpoint already taken is not looked at twice.
            let wrapped = limited_candidates(conn, now, horizon, "", max_endpoints)?;
            let seen: HashSet<String> = limited.iter().map(|l| l.0.clone()).collect();
            let room = max_endpoints as usize - limited.len();
            limited.extend(wrapped.into_iter().filter(|l| !seen.contains(&l.0)).take(room));
        }
        if limited.is_empty() {
            // The common case (no endpoint has a limit): one query, no session settings.
            return Ok(LimitedClaim { jobs: Vec::new(), cursor: after.to_owned() });
        }
        if let DbConn::Pg(pg) = conn {
            // Walk `deliveries_endpoint_due` in due order, as the outbox claim walks its index.
            pg.batch_execute(crate::INDEX_ORDER_ONLY)?;
        }
        let mut claim = LimitedClaim { jobs: Vec::new(), cursor: after.to_owned() };
        let mut budget = max_deliveries;
        for (endpoint_id, max_in_flight, rate, circuit, paced_until, still_limited) in limited {
            if budget <= 0 {
                break;
            }
            claim.cursor.clone_from(&endpoint_id);
            if !still_limited {
                crate::endpoints::sync_limited(conn, &endpoint_id)?;
                continue;
            }
            // Past its open period and not yet closed by a success: one probe at a time.
            let cap = if circuit.is_some() { 1 } else { max_in_flight.map_or(default_cap, |n| i64::from(n.max(1))) };
            // The deliveries in flight are the front of the endpoint's pending rows in due
            // order: this claim leases oldest due first, and whatever joins later (a new event,
            // a retry, a recovery) is due at or after the time it joins, so after every leased
            // row. Counting among the first rows is exact and costs O(cap), not O(backlog); the
            // window leaves room for expired leases and ties at the front.
            let front: Vec<Option<NaiveDateTime>> = deliveries::table
                .filter(deliveries::endpoint_id.eq(&endpoint_id))
                .filter(pending_limited())
                .order((deliveries::next_attempt_at.asc(), deliveries::id.asc()))
                .limit(2 * cap + 64)
                .select(deliveries::lease_until)
                .load(conn)?;
            let in_flight = front.iter().filter(|until| until.is_some_and(|u| u >= now)).count() as i64;
            let mut allowed = (cap - in_flight).min(budget);
            let mut send_times = Vec::new();
            let start = paced_until.map_or(now, |p| p.max(now));
            let gap = rate.filter(|r| *r > 0).map(|r| chrono::TimeDelta::microseconds(1_000_000 / i64::from(r)));
            if let Some(gap) = gap {
                let mut at = start;
                while allowed > 0 && at < horizon {
                    send_times.push(at);
                    at += gap;
                    allowed -= 1;
                }
                allowed = send_times.len() as i64;
            }
            if allowed <= 0 {
                continue;
            }
            let until = send_times.last().copied().unwrap_or(now) + lease;
            let rows = claim_endpoint(conn, owner, &endpoint_id, now, until, allowed)?;
            if let Some(gap) = gap
                && !rows.is_empty()
            {
                let next = send_times[rows.len() - 1] + gap;
                diesel::update(endpoints::table.find(&endpoint_id))
                    .set(endpoints::paced_until.eq(next))
                    .execute(conn)?;
            }
            budget -= rows.len() as i64;
            let jobs = with_endpoints(conn, rows.into_iter().map(|r| (r.delivery, r.body)).collect())?;
            claim.jobs.extend(
                jobs.into_iter()
                    .enumerate()
                    .map(|(i, job)| PacedJob { job, send_at: send_times.get(i).copied().unwrap_or(now) }),
            );
        }
        Ok(claim)
    })
}

/// Up to `limit` enabled endpoints after `after` in id order that have a `limited` delivery
/// due now, are not waiting out an open circuit and are not paced past the horizon; locked
/// (`FOR NO KEY UPDATE SKIP LOCKED`) on PostgreSQL.
fn limited_candidates(
    conn: &mut DbConn,
    now: NaiveDateTime,
    horizon: NaiveDateTime,
    after: &str,
    limit: i64,
) -> StoreResult<Vec<Limits>> {
    let due = deliveries::table
        .filter(deliveries::endpoint_id.eq(endpoints::id))
        .filter(pending_limited())
        .filter(deliveries::next_attempt_at.le(now))
        .filter(deliveries::lease_until.is_null().or(deliveries::lease_until.lt(now)))
        .filter(deliveries::body_purged_at.is_null());
    let candidates = endpoints::table
        .filter(endpoints::id.gt(after))
        .filter(endpoints::enabled.eq(true))
        .filter(endpoints::circuit_open_until.is_null().or(endpoints::circuit_open_until.le(now)))
        .filter(endpoints::paced_until.is_null().or(endpoints::paced_until.lt(horizon)))
        .filter(diesel::dsl::exists(due))
        .order(endpoints::id)
        .limit(limit)
        .select((
            endpoints::id,
            endpoints::max_in_flight,
            endpoints::rate_limit_per_second,
            endpoints::circuit_open_until,
            endpoints::paced_until,
            crate::endpoints::is_limited(),
        ));
    Ok(match conn {
        DbConn::Pg(pg) => candidates.for_no_key_update().skip_locked().load(pg)?,
        DbConn::Sqlite(sqlite) => candidates.load(sqlite)?,
    })
}

/// Leases up to `limit` due deliveries of one endpoint, oldest due first.
fn claim_endpoint(
    conn: &mut DbConn,
    owner: &str,
    endpoint_id: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    limit: i64,
) -> StoreResult<Vec<ClaimedRow>> {
    use diesel::sql_types::{BigInt, Text, Timestamp};
    let mut rows: Vec<ClaimedRow> = match conn {
        DbConn::Pg(pg) => diesel::sql_query(CLAIM_ENDPOINT_PG)
            .bind::<Text, _>(owner)
            .bind::<Timestamp, _>(lease_until)
            .bind::<Timestamp, _>(now)
            .bind::<BigInt, _>(limit)
            .bind::<Text, _>(endpoint_id)
            .load(pg)?,
        DbConn::Sqlite(sqlite) => diesel::sql_query(CLAIM_ENDPOINT_SQLITE)
            .bind::<Text, _>(owner)
            .bind::<Timestamp, _>(lease_until)
            .bind::<Timestamp, _>(now)
            .bind::<BigInt, _>(limit)
            .bind::<Text, _>(endpoint_id)
            .load(sqlite)?,
    };
    rows.sort_by(|a, b| {
        (a.delivery.next_attempt_at, &a.delivery.id).cmp(&(b.delivery.next_attempt_at, &b.delivery.id))
    });
    Ok(rows)
}

/// One endpoint's claim (`$5`), through `deliveries_endpoint_due`. On PostgreSQL the ids are
/// gathered first (`= ANY(ARRAY(…))`, locked `SKIP LOCKED`) and updated by key, as in the outbox
/// claim: `IN (…)` may become a semi-join that reads the endpoint's whole backlog.
const CLAIM_ENDPOINT_PG: &str = "UPDATE deliveries SET lease_owner = $1, lease_until = $2 WHERE id = ANY(ARRAY(\
    SELECT id FROM deliveries \
    WHERE endpoint_id = $5 AND status IN ('queued', 'failed') AND limited = TRUE AND next_attempt_at <= $3 \
    AND (lease_until IS NULL OR lease_until < $3) AND body_purged_at IS NULL \
    ORDER BY next_attempt_at, id LIMIT $4 FOR NO KEY UPDATE SKIP LOCKED)) RETURNING *";

/// [`CLAIM_ENDPOINT_PG`] for SQLite, whose single writer needs no row locks.
const CLAIM_ENDPOINT_SQLITE: &str = "UPDATE deliveries SET lease_owner = ?1, lease_until = ?2 WHERE id IN (\
    SELECT id FROM deliveries INDEXED BY deliveries_endpoint_due \
    WHERE endpoint_id = ?5 AND status IN ('queued', 'failed') AND limited = TRUE AND next_attempt_at <= ?3 \
    AND (lease_until IS NULL OR lease_until < ?3) AND body_purged_at IS NULL \
    ORDER BY next_attempt_at, id LIMIT ?4) RETURNING *";

/// One line of PostgreSQL's `EXPLAIN`.
#[derive(QueryableByName)]
struct PgLine {
    #[diesel(sql_type = diesel::sql_types::Text, column_name = "QUERY PLAN")]
    line: String,
}

/// One line of SQLite's `EXPLAIN QUERY PLAN`.
#[derive(QueryableByName)]
struct SqliteLine {
    #[diesel(sql_type = diesel::sql_types::Text)]
    detail: String,
}

/// The query plan of the claim, as the database would run it now (for tests and benchmarks:
/// it must walk `deliveries_due`, never scan or sort the outbox).
pub fn explain_claim(conn: &mut DbConn, now: NaiveDateTime) -> StoreResult<String> {
    use diesel::sql_types::{Array, BigInt, Text, Timestamp};
    let skip: Vec<String> = Vec::new();
    Ok(match conn {
        DbConn::Pg(pg) => pg.transaction(|pg| {
            pg.batch_execute(crate::INDEX_ORDER_ONLY)?;
            let lines: Vec<PgLine> = diesel::sql_query(format!("EXPLAIN {CLAIM_PG}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(100)
                .bind::<Array<Text>, _>(&skip)
                .load(pg)?;
            diesel::QueryResult::Ok(lines.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n"))
        })?,
        DbConn::Sqlite(sqlite) => {
            let lines: Vec<SqliteLine> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {CLAIM_SQLITE}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(100)
                .bind::<Text, _>("[]")
                .load(sqlite)?;
            lines.into_iter().map(|l| l.detail).collect::<Vec<_>>().join("\n")
        }
    })
}

/// The query plan of one limited endpoint's claim, as the database would run it now (for tests
/// and benchmarks: it must walk `deliveries_endpoint_due`, never the endpoint's whole history).
pub fn explain_endpoint_claim(conn: &mut DbConn, endpoint_id: &str, now: NaiveDateTime) -> StoreResult<String> {
    use diesel::sql_types::{BigInt, Text, Timestamp};
    Ok(match conn {
        DbConn::Pg(pg) => pg.transaction(|pg| {
            pg.batch_execute(crate::INDEX_ORDER_ONLY)?;
            let lines: Vec<PgLine> = diesel::sql_query(format!("EXPLAIN {CLAIM_ENDPOINT_PG}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(10)
                .bind::<Text, _>(endpoint_id)
                .load(pg)?;
            diesel::QueryResult::Ok(lines.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n"))
        })?,
        DbConn::Sqlite(sqlite) => {
            let lines: Vec<SqliteLine> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {CLAIM_ENDPOINT_SQLITE}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(10)
                .bind::<Text, _>(endpoint_id)
                .load(sqlite)?;
            lines.into_iter().map(|l| l.detail).collect::<Vec<_>>().join("\n")
        }
    })
}

/// The query plan of a batch's completion (the compare-and-set move of its deliveries, and
/// on PostgreSQL the attempts' insert with it): it must find each delivery by its key.
pub fn explain_completion(conn: &mut DbConn) -> StoreResult<String> {
    Ok(match conn {
        DbConn::Pg(pg) => {
            // Parameters as text literals: EXPLAIN plans them like the bound arrays.
            let mut sql = format!("EXPLAIN {MOVE_ON_PG}");
            for n in (1..=18).rev() {
                sql = sql.replace(&format!("${n}::"), "'{}'::");
            }
            let lines: Vec<PgLine> = diesel::sql_query(sql).load(pg)?;
            lines.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n")
        }
        DbConn::Sqlite(sqlite) => {
            let lines: Vec<SqliteLine> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {MOVE_ON_SQLITE}"))
                .bind::<diesel::sql_types::Text, _>("[]")
                .load(sqlite)?;
            lines.into_iter().map(|l| l.detail).collect::<Vec<_>>().join("\n")
        }
    })
}

/// A claimed outbox row as `UPDATE … RETURNING *` gives it.
#[derive(QueryableByName)]
#[diesel(table_name = deliveries)]
struct ClaimedRow {
    #[diesel(embed)]
    delivery: Delivery,
    body: Vec<u8>,
}

/// Delivery `id` with its body and endpoint, when `owner` holds its lease.
fn leased_job(conn: &mut DbConn, id: &str, owner: &str) -> StoreResult<Option<Job>> {
    let rows: Vec<(Delivery, Vec<u8>)> = deliveries::table
        .filter(deliveries::id.eq(id))
        .filter(deliveries::lease_owner.eq(owner))
        .select((Delivery::as_select(), deliveries::body))
        .load(conn)?;
    Ok(with_endpoints(conn, rows)?.pop())
}

/// Pairs claimed rows with their endpoints (one query for the batch).
fn with_endpoints(conn: &mut DbConn, rows: Vec<(Delivery, Vec<u8>)>) -> StoreResult<Vec<Job>> {
    let mut endpoint_ids: Vec<String> = rows.iter().map(|(d, _)| d.endpoint_id.clone()).collect();
    endpoint_ids.sort();
    endpoint_ids.dedup();
    let endpoints: HashMap<String, Endpoint> =
        endpoints_by_ids(conn, &endpoint_ids)?.into_iter().map(|e| (e.id.clone(), e)).collect();
    Ok(rows
        .into_iter()
        .filter_map(|(delivery, body)| {
            let endpoint = endpoints.get(&delivery.endpoint_id)?.clone();
            Some(Job { delivery, body, endpoint })
        })
        .collect())
}

/// What a redelivery request found.
#[derive(Debug)]
pub enum Redelivery {
    /// No such delivery in the account.
    NotFound,
    /// An attempt of it is in flight.
    Busy,
    /// Its endpoint is disabled.
    EndpointDisabled,
    /// Retention removed its body.
    Purged,
    /// Leased to the caller, to be attempted now.
    Claimed(Box<Job>),
}

/// Leases the account's delivery `id` for a redelivery on request, whatever its status, unless
/// an attempt is in flight, its endpoint is disabled or its body was purged (then nothing is
/// written). A `sent` or `dead` delivery gets a fresh attempt budget (the endpoint's, else
/// `budget`).
pub fn claim_for_redelivery(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    budget: i32,
) -> StoreResult<Redelivery> {
    conn.transaction(|conn| {
        let enabled_endpoints = endpoints::table.select(endpoints::id).filter(endpoints::enabled.eq(true));
        let claimed = diesel::update(
            deliveries::table
                .filter(deliveries::account_id.eq(account_id))
                .filter(deliveries::id.eq(id))
                .filter(deliveries::body_purged_at.is_null())
                .filter(deliveries::endpoint_id.eq_any(enabled_endpoints))
                .filter(deliveries::lease_until.is_null().or(deliveries::lease_until.lt(now))),
        )
        .set((
            deliveries::lease_owner.eq(owner),
            deliveries::lease_until.eq(lease_until),
            deliveries::next_trigger.eq(AttemptTrigger::Manual.as_str()),
        ))
        .execute(conn)?;
        let Some(delivery) = get_delivery(conn, account_id, id)? else { return Ok(Redelivery::NotFound) };
        if claimed == 0 {
            let enabled: bool = endpoints::table.find(&delivery.endpoint_id).select(endpoints::enabled).first(conn)?;
            return Ok(if delivery.body_purged_at.is_some() {
                Redelivery::Purged
            } else if !enabled {
                Redelivery::EndpointDisabled
            } else {
                Redelivery::Busy
            });
        }
        if finished(&delivery.status) {
            fresh_budget(conn, &delivery.id, delivery.attempts, budget, now)?;
        }
        Ok(match leased_job(conn, &delivery.id, owner)? {
            Some(job) => Redelivery::Claimed(Box::new(job)),
            None => Redelivery::NotFound,
        })
    })
}

fn finished(status: &str) -> bool {
    status == DeliveryStatus::Sent.as_str() || status == DeliveryStatus::Dead.as_str()
}

/// Re-opens a finished delivery with its endpoint's attempt budget (or `default_budget`) more
/// attempts, numbered on from `attempts`.
fn fresh_budget(
    conn: &mut DbConn,
    id: &str,
    attempts: i32,
    default_budget: i32,
    now: NaiveDateTime,
) -> StoreResult<()> {
    let own: Option<i32> = deliveries::table
        .inner_join(endpoints::table)
        .filter(deliveries::id.eq(id))
        .select(endpoints::max_attempts)
        .first(conn)?;
    let budget = own.unwrap_or(default_budget);
    diesel::update(deliveries::table.find(id))
        .set((
            deliveries::status.eq(DeliveryStatus::Failed.as_str()),
            deliveries::retry_base.eq(attempts),
            deliveries::max_attempts.eq(attempts + budget.max(1)),
            deliveries::finished_at.eq(None::<NaiveDateTime>),
            deliveries::next_attempt_at.eq(now),
            deliveries::updated_at.eq(now),
        ))
        .execute(conn)?;
    Ok(())
}

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
    /// Attempt budget of deliveries of an `endpoint.disabled` event this may raise.
    pub default_max_attempts: i32,
}

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

/// The endpoint was disabled by this attempt; the caller renders the `endpoint.disabled` event.
pub type DisabledEvent<'a> = &'a dyn Fn(&Endpoint, &str) -> NewEvent;

/// One finished attempt, to be recorded.
#[derive(Debug, Clone)]
pub struct AttemptRecord {
    /// The delivery.
    pub delivery_id: String,
    /// Its endpoint.
    pub endpoint_id: String,
    /// The lease under which the attempt was made.
    pub owner: String,
    /// How the delivery moves on.
    pub completion: Completion,
    /// The attempt row.
    pub attempt: DeliveryAttempt,
    /// What the attempt says about the endpoint.
    pub health: Health,
}

/// Records finished attempts in one transaction: for each, moves its delivery on, inserts the
/// attempt row and updates its endpoint's health, releasing the lease. Only the lease holder
/// can record (compare-and-set on the owner); the result says, per record, whether it was
/// recorded (false: the lease was lost and nothing was written for it).
///
/// Batching is what makes the outbox fast: one commit for many attempts, and few statements.
/// On PostgreSQL one statement moves every delivery on and inserts the attempts of those whose
/// lease held (arrays bound as parameters, `UNNEST`ed); on SQLite, which has no round trips,
/// cached per-row statements do the same. Endpoints whose attempts in the batch all succeeded
/// get one statement between them; an endpoint with a failure in the batch has its attempts'
/// health applied one by one, in order, exactly as if recorded alone. When an endpoint gets
/// disabled, `on_disabled` renders an `endpoint.disabled` event, queued for the account's other
/// enabled endpoints in the same transaction.
pub fn complete_all(
    conn: &mut DbConn,
    records: &[AttemptRecord],
    on_disabled: DisabledEvent<'_>,
) -> StoreResult<Vec<bool>> {
    // One global order (endpoint, delivery) for every lock taken, so concurrent batches on
    // PostgreSQL cannot deadlock on each other's rows.
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by(|&a, &b| {
        (&records[a].endpoint_id, &records[a].delivery_id).cmp(&(&records[b].endpoint_id, &records[b].delivery_id))
    });
    conn.transaction(|conn| {
        let recorded = move_on(conn, records, &order)?;
        // Health: endpoints whose recorded attempts all succeeded, at once; the others in order.
        let mut healthy: Vec<&str> = Vec::new();
        let mut mixed: HashSet<&str> = HashSet::new();
        for &i in &order {
            let record = &records[i];
            if !recorded[i] {
                continue;
            }
            match record.health {
                Health::Unchanged => {}
                Health::Success => healthy.push(&record.endpoint_id),
                Health::Failure { .. } | Health::Gone => {
                    mixed.insert(&record.endpoint_id);
                }
            }
        }
        healthy.retain(|id| !mixed.contains(id));
        healthy.dedup();
        if !healthy.is_empty() {
            crate::endpoints::record_successes(conn, &healthy)?;
        }
        for &i in &order {
            let record = &records[i];
            if recorded[i] && mixed.contains(record.endpoint_id.as_str()) {
                let completion = &record.completion;
                crate::endpoints::record_health(
                    conn,
                    &record.endpoint_id,
                    &record.health,
                    (completion.now, completion.default_max_attempts),
                    on_disabled,
                )?;
            }
        }
        Ok(recorded)
    })
}

/// Moves each record's delivery on and inserts its attempt, where its lease still holds;
/// returns which did, by index into `records`.
fn move_on(conn: &mut DbConn, records: &[AttemptRecord], order: &[usize]) -> StoreResult<Vec<bool>> {
    let mut recorded = vec![false; records.len()];
    match conn {
        DbConn::Pg(pg) => {
            use diesel::sql_types::{Array, BigInt, Integer, Nullable, Text, Timestamp};
            let ordered = || order.iter().map(|&i| &records[i]);
            let ids: Vec<&str> = ordered().map(|r| r.delivery_id.as_str()).collect();
            let owners: Vec<&str> = ordered().map(|r| r.owner.as_str()).collect();
            let statuses: Vec<&str> = ordered().map(|r| r.completion.status.as_str()).collect();
            let attempts: Vec<i32> = ordered().map(|r| r.completion.attempts).collect();
            let next: Vec<NaiveDateTime> = ordered().map(|r| r.completion.next_attempt_at).collect();
            let codes: Vec<Option<i32>> = ordered().map(|r| r.completion.last_status_code).collect();
            let errors: Vec<Option<String>> = ordered().map(|r| r.completion.last_error.clone()).collect();
            let nows: Vec<NaiveDateTime> = ordered().map(|r| r.completion.now).collect();
            let finished: Vec<Option<NaiveDateTime>> = ordered()
                .map(|r| {
                    matches!(r.completion.status, DeliveryStatus::Sent | DeliveryStatus::Dead)
                        .then_some(r.completion.now)
                })
                .collect();
            let attempt_ids: Vec<&str> = ordered().map(|r| r.attempt.id.as_str()).collect();
            let numbers: Vec<i32> = ordered().map(|r| r.attempt.attempt_number).collect();
            let attempt_codes: Vec<Option<i32>> = ordered().map(|r| r.attempt.status_code).collect();
            let attempt_errors: Vec<Option<String>> = ordered().map(|r| r.attempt.error.clone()).collect();
            let started: Vec<NaiveDateTime> = ordered().map(|r| r.attempt.started_at).collect();
            let durations: Vec<i64> = ordered().map(|r| r.attempt.duration_ms).collect();
            let kinds: Vec<Option<String>> = ordered().map(|r| r.attempt.error_kind.clone()).collect();
            let snippets: Vec<Option<String>> = ordered().map(|r| r.attempt.response_snippet.clone()).collect();
            let triggers: Vec<&str> = ordered().map(|r| r.attempt.trigger.as_str()).collect();
            #[derive(QueryableByName)]
            struct Moved {
                #[diesel(sql_type = Text)]
                attempt_id: String,
            }
            let moved: Vec<Moved> = diesel::sql_query(MOVE_ON_PG)
                .bind::<Array<Text>, _>(&ids)
                .bind::<Array<Text>, _>(&owners)
                .bind::<Array<Text>, _>(&statuses)
                .bind::<Array<Integer>, _>(&attempts)
                .bind::<Array<Timestamp>, _>(&next)
                .bind::<Array<Nullable<Integer>>, _>(&codes)
                .bind::<Array<Nullable<Text>>, _>(&errors)
                .bind::<Array<Timestamp>, _>(&nows)
                .bind::<Array<Nullable<Timestamp>>, _>(&finished)
                .bind::<Array<Text>, _>(&attempt_ids)
                .bind::<Array<Timestamp>, _>(&started)
                .bind::<Array<BigInt>, _>(&durations)
                .bind::<Array<Nullable<Text>>, _>(&kinds)
                .bind::<Array<Nullable<Text>>, _>(&snippets)
                .bind::<Array<Text>, _>(&triggers)
                .bind::<Array<Integer>, _>(&numbers)
                .bind::<Array<Nullable<Integer>>, _>(&attempt_codes)
                .bind::<Array<Nullable<Text>>, _>(&attempt_errors)
                .load(pg)?;
            // By attempt id: two records of one delivery (one under a lost lease) stay apart.
            let moved: HashSet<String> = moved.into_iter().map(|m| m.attempt_id).collect();
            for (i, record) in records.iter().enumerate() {
                recorded[i] = moved.contains(&record.attempt.id);
            }
        }
        DbConn::Sqlite(sqlite) => {
            let mut ids: Vec<&str> = records.iter().map(|r| r.delivery_id.as_str()).collect();
            ids.sort_unstable();
            ids.dedup();
            if ids.len() < records.len() {
                // Two records of one delivery (one under a lost lease): one at a time keeps
                // them apart.
                for &i in order {
                    recorded[i] = move_on_one(conn, &records[i])?;
                }
                return Ok(recorded);
            }
            recorded = move_on_sqlite(sqlite, records, order)?;
        }
    }
    Ok(recorded)
}

/// One statement for a batch on PostgreSQL: the deliveries move on under a compare-and-set on
/// their lease owner, and the attempts of those that moved are inserted.
const MOVE_ON_PG: &str = "\
WITH v AS (
  SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int4[], $5::timestamp[], $6::int4[], $7::text[],
                       $8::timestamp[], $9::timestamp[], $10::text[], $11::timestamp[], $12::int8[], $13::text[],
                       $14::text[], $15::text[], $16::int4[], $17::int4[], $18::text[])
    AS v(id, owner, status, attempts, next_attempt_at, last_status_code, last_error, now, finished_at,
         attempt_id, started_at, duration_ms, error_kind, response_snippet, trigger, attempt_number,
         status_code, error)
), moved AS (
  UPDATE deliveries d SET status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
    last_status_code = v.last_status_code, last_error = v.last_error, lease_owner = NULL, lease_until = NULL,
    next_trigger = 'scheduled', updated_at = v.now, finished_at = v.finished_at
  FROM v WHERE d.id = v.id AND d.lease_owner = v.owner
  RETURNING v.attempt_id
), attempts AS (
  INSERT INTO delivery_attempts (id, delivery_id, attempt_number, started_at, duration_ms, status_code, error_kind,
                                 error, response_snippet, trigger)
  SELECT v.attempt_id, v.id, v.attempt_number, v.started_at, v.duration_ms, v.status_code, v.error_kind,
         v.error, v.response_snippet, v.trigger
  FROM v JOIN moved ON moved.attempt_id = v.attempt_id
)
SELECT attempt_id FROM moved";

/// The batch on SQLite in two statements: the records travel as one JSON parameter, the
/// deliveries move on under a compare-and-set on their owner (`UPDATE … FROM json_each`), and
/// the attempts of those that moved are inserted. Delivery ids must be distinct.
fn move_on_sqlite(
    conn: &mut diesel::SqliteConnection,
    records: &[AttemptRecord],
    order: &[usize],
) -> StoreResult<Vec<bool>> {
    use diesel::sql_types::Text;
    // Times as diesel writes them on SQLite, so comparisons with other rows hold.
    let time = |t: NaiveDateTime| t.format("%F %T%.f").to_string();
    let rows: Vec<serde_json::Value> = order
        .iter()
        .map(|&i| {
            let r = &records[i];
            let c = &r.completion;
            let done = matches!(c.status, DeliveryStatus::Sent | DeliveryStatus::Dead);
            serde_json::json!({
                "id": r.delivery_id, "owner": r.owner, "status": c.status.as_str(), "attempts": c.attempts,
                "next": time(c.next_attempt_at), "code": c.last_status_code, "error": c.last_error,
                "now": time(c.now), "finished": done.then(|| time(c.now)),
            })
        })
        .collect();
    #[derive(QueryableByName)]
    struct Moved {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let moved: Vec<Moved> =
        diesel::sql_query(MOVE_ON_SQLITE).bind::<Text, _>(serde_json::Value::Array(rows).to_string()).load(conn)?;
    let moved: HashSet<String> = moved.into_iter().map(|m| m.id).collect();
    let recorded: Vec<bool> = records.iter().map(|r| moved.contains(&r.delivery_id)).collect();
    let attempts: Vec<serde_json::Value> = order
        .iter()
        .filter(|&&i| recorded[i])
        .map(|&i| {
            let a = &records[i].attempt;
            serde_json::json!({
                "id": a.id, "delivery_id": a.delivery_id, "number": a.attempt_number, "started": time(a.started_at),
                "ms": a.duration_ms, "code": a.status_code, "kind": a.error_kind, "error": a.error,
                "snippet": a.response_snippet, "trigger": a.trigger,
            })
        })
        .collect();
    if !attempts.is_empty() {
        diesel::sql_query(INSERT_ATTEMPTS_SQLITE)
            .bind::<Text, _>(serde_json::Value::Array(attempts).to_string())
            .execute(conn)?;
    }
    Ok(recorded)
}

const MOVE_ON_SQLITE: &str = "\
UPDATE deliveries SET status = v.status, attempts = v.attempts, next_attempt_at = v.next,
  last_status_code = v.code, last_error = v.error, lease_owner = NULL, lease_until = NULL,
  next_trigger = 'scheduled', updated_at = v.now, finished_at = v.finished
FROM (SELECT json_extract(value, '$.id') AS id, json_extract(value, '$.owner') AS owner,
        json_extract(value, '$.status') AS status, json_extract(value, '$.attempts') AS attempts,
        json_extract(value, '$.next') AS next, json_extract(value, '$.code') AS code,
        json_extract(value, '$.error') AS error, json_extract(value, '$.now') AS now,
        json_extract(value, '$.finished') AS finished
      FROM json_each(?1)) AS v
WHERE deliveries.id = v.id AND deliveries.lease_owner = v.owner
RETURNING deliveries.id";

const INSERT_ATTEMPTS_SQLITE: &str = "\
INSERT INTO delivery_attempts (id, delivery_id, attempt_number, started_at, duration_ms, status_code, error_kind,
                               error, response_snippet, trigger)
SELECT json_extract(value, '$.id'), json_extract(value, '$.delivery_id'), json_extract(value, '$.number'),
       json_extract(value, '$.started'), json_extract(value, '$.ms'), json_extract(value, '$.code'),
       json_extract(value, '$.kind'), json_extract(value, '$.error'), json_extract(value, '$.snippet'),
       json_extract(value, '$.trigger')
FROM json_each(?1)";

/// Moves one delivery on and inserts its attempt, if its lease holds.
fn move_on_one(conn: &mut DbConn, record: &AttemptRecord) -> StoreResult<bool> {
    let completion = &record.completion;
    let done = matches!(completion.status, DeliveryStatus::Sent | DeliveryStatus::Dead);
    let updated = diesel::update(
        deliveries::table
            .filter(deliveries::id.eq(&record.delivery_id))
            .filter(deliveries::lease_owner.eq(&record.owner)),
    )
    .set((
        deliveries::status.eq(completion.status.as_str()),
        deliveries::attempts.eq(completion.attempts),
        deliveries::next_attempt_at.eq(completion.next_attempt_at),
        deliveries::last_status_code.eq(completion.last_status_code),
        deliveries::last_error.eq(&completion.last_error),
        deliveries::lease_owner.eq(None::<String>),
        deliveries::lease_until.eq(None::<NaiveDateTime>),
        deliveries::next_trigger.eq(AttemptTrigger::Scheduled.as_str()),
        deliveries::updated_at.eq(completion.now),
        deliveries::finished_at.eq(done.then_some(completion.now)),
    ))
    .execute(conn)?;
    if updated != 1 {
        return Ok(false);
    }
    diesel::insert_into(delivery_attempts::table).values(&record.attempt).execute(conn)?;
    Ok(true)
}

/// When the worker next has something to do: the earliest due time of an unleased pending
/// delivery whose endpoint can take it, the earliest expiry of a lease on one, or the earliest
/// end of an open circuit.
pub fn next_wake(
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

/// Re-queues up to `limit` of the endpoint's deliveries matching a recovery, after `cursor`
/// in id order; finished ones get a fresh budget of `budget` attempts. With `dry_run` nothing
/// changes. Returns the ids matched, in order.
pub fn requeue_page(
    conn: &mut DbConn,
    recovery: &crate::Recovery,
    budget: i32,
    limit: i64,
    now: NaiveDateTime,
) -> StoreResult<Vec<String>> {
    let statuses: Vec<&str> = recovery.statuses.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let mut query = deliveries::table
        .filter(deliveries::endpoint_id.eq(&recovery.endpoint_id))
        .filter(deliveries::account_id.eq(&recovery.account_id))
        .filter(deliveries::status.eq_any(&statuses))
        .filter(deliveries::created_at.ge(recovery.since))
        .filter(deliveries::body_purged_at.is_null())
        .select((deliveries::id, deliveries::status, deliveries::attempts))
        .order(deliveries::id.asc())
        .limit(limit)
        .into_boxed();
    if let Some(until) = recovery.until {
        query = query.filter(deliveries::created_at.lt(until));
    }
    if let Some(cursor) = &recovery.cursor {
        query = query.filter(deliveries::id.gt(cursor));
    }
    let rows: Vec<(String, String, i32)> = query.load(conn)?;
    if recovery.dry_run {
        return Ok(rows.into_iter().map(|(id, _, _)| id).collect());
    }
    for (id, status, attempts) in &rows {
        if finished(status) {
            fresh_budget(conn, id, *attempts, budget, now)?;
        } else {
            // Not one in flight: its attempt reschedules it, and a limited endpoint counts
            // its deliveries in flight at the front of its due order.
            diesel::update(
                deliveries::table
                    .find(id)
                    .filter(deliveries::lease_until.is_null().or(deliveries::lease_until.lt(now))),
            )
            .set((deliveries::next_attempt_at.eq(now), deliveries::updated_at.eq(now)))
            .execute(conn)?;
        }
        diesel::update(deliveries::table.find(id))
            .set(deliveries::next_trigger.eq(AttemptTrigger::Manual.as_str()))
            .execute(conn)?;
    }
    Ok(rows.into_iter().map(|(id, _, _)| id).collect())
}

/// The account's deliveries counted by status.
pub fn count_by_status(conn: &mut DbConn, account_id: &str) -> StoreResult<Vec<(String, i64)>> {
    Ok(deliveries::table
        .filter(deliveries::account_id.eq(account_id))
        .group_by(deliveries::status)
        .select((deliveries::status, diesel::dsl::count_star()))
        .load(conn)?)
}
