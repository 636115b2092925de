//! The limited claim: deliveries of endpoints whose limits hold across nodes (`max_in_flight`,
//! a rate, a half-open circuit), claimed per endpoint under its row lock.

use std::collections::HashSet;

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;

use super::job::{ClaimedRow, Job, with_endpoints};
use crate::predicates::{is_limited, pending_limited};
use crate::schema::{deliveries, endpoints};
use crate::{DbConn, StoreResult};

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

/// How much one [`claim_limited`] may take, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct LimitedCaps {
    /// How long a lease lasts past its delivery's send time.
    pub lease: chrono::TimeDelta,
    /// The cap of an endpoint without `max_in_flight` (deliveries in flight across the cluster).
    pub default_cap: i64,
    /// Most deliveries leased in this claim, over every endpoint.
    pub max_deliveries: i64,
    /// Most endpoints looked at in this claim.
    pub max_endpoints: i64,
}

/// A limited endpoint as `claim_limited` sees it: id, `max_in_flight`, `rate_limit_per_second`,
/// `circuit_open_until`, `paced_until`, and whether it still has a limit.
type Limits = (String, Option<i32>, Option<i32>, Option<NaiveDateTime>, Option<NaiveDateTime>, bool);

/// Claims, for at most `caps.max_endpoints` endpoints after `after` in id order (wrapping around),
/// the due deliveries their limits allow now, counting across every node: an endpoint's
/// `max_in_flight` (else `caps.default_cap`) against its deliveries leased anywhere, its
/// `rate_limit_per_second` through `endpoints.paced_until` (sends planned up to a second ahead,
/// `1/rate` apart), and a half-open circuit (past its open period, not yet closed by a success)
/// to one probe at a time. Each endpoint is locked while its claim is decided (`FOR NO KEY
/// UPDATE SKIP LOCKED` on PostgreSQL: another node takes the next endpoint instead of waiting,
/// and deliveries can still be inserted for it; SQLite has one writer), so two nodes never both
/// see a free slot. Leases last `caps.lease` past each delivery's send time.
///
/// A delivery flagged `limited` whose endpoint has lost its limits since (it was queued while
/// they were being removed) is handed back to the outbox claim here.
pub fn claim_limited(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    caps: &LimitedCaps,
    after: &str,
) -> StoreResult<LimitedClaim> {
    let LimitedCaps { lease, default_cap, max_deliveries, max_endpoints } = *caps;
    let horizon = now + chrono::TimeDelta::milliseconds(PACING_HORIZON_MS);
    let max_endpoints = max_endpoints.max(1);
    conn.transaction(|conn| {
        let limited = candidates(conn, now, horizon, after, max_endpoints)?;
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
            let allowed = (cap - in_flight(conn, &endpoint_id, cap, now)?).min(budget);
            let (allowed, send_times, gap) = match plan_sends(rate, paced_until, allowed, now, horizon) {
                Some((times, gap)) => (times.len() as i64, times, Some(gap)),
                None => (allowed, Vec::new(), None),
            };
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

/// Up to `max_endpoints` limited endpoints with work, starting after `after` and wrapping
/// around to the start; an endpoint already taken is not looked at twice.
fn candidates(
    conn: &mut DbConn,
    now: NaiveDateTime,
    horizon: NaiveDateTime,
    after: &str,
    max_endpoints: i64,
) -> StoreResult<Vec<Limits>> {
    let mut limited = limited_candidates(conn, now, horizon, after, max_endpoints)?;
    if (limited.len() as i64) < max_endpoints && !after.is_empty() {
        let wrapped = limited_candidates(conn, now, horizon, "", max_endpoints)?;
        let seen: HashSet<String> = limited.iter().map(|l| l.0.clone()).collect();
        let room = max_endpoints as usize - limited.len();
        limited.extend(wrapped.into_iter().filter(|l| !seen.contains(&l.0)).take(room));
    }
    Ok(limited)
}

/// How many of the endpoint's deliveries are in flight on any node. They are the front of its
/// pending rows in due order: a claim leases oldest due first, and whatever joins later (a new
/// event, a retry, a recovery) is due at or after the time it joins, so after every leased row.
/// Counting among the first rows is exact and costs O(cap), not O(backlog); the window leaves
/// room for expired leases and ties at the front.
fn in_flight(conn: &mut DbConn, endpoint_id: &str, cap: i64, now: NaiveDateTime) -> StoreResult<i64> {
    let front: Vec<Option<NaiveDateTime>> = deliveries::table
        .filter(deliveries::endpoint_id.eq(endpoint_id))
        .filter(pending_limited())
        .order((deliveries::next_attempt_at.asc(), deliveries::id.asc()))
        .limit(2 * cap + 64)
        .select(deliveries::lease_until)
        .load(conn)?;
    Ok(front.iter().filter(|until| until.is_some_and(|u| u >= now)).count() as i64)
}

/// The send times of a rate-limited endpoint's next deliveries: `1/rate` apart from its
/// `paced_until` (or now, if that has passed), at most `allowed` of them and all before
/// `horizon`; with the gap. `None` for an endpoint without a rate.
fn plan_sends(
    rate: Option<i32>,
    paced_until: Option<NaiveDateTime>,
    allowed: i64,
    now: NaiveDateTime,
    horizon: NaiveDateTime,
) -> Option<(Vec<NaiveDateTime>, chrono::TimeDelta)> {
    let gap = rate.filter(|r| *r > 0).map(|r| chrono::TimeDelta::microseconds(1_000_000 / i64::from(r)))?;
    let mut at = paced_until.map_or(now, |p| p.max(now));
    let mut times = Vec::new();
    while (times.len() as i64) < allowed && at < horizon {
        times.push(at);
        at += gap;
    }
    Some((times, gap))
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
            is_limited(),
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
pub(super) const CLAIM_ENDPOINT_PG: &str = "UPDATE deliveries SET lease_owner = $1, lease_until = $2, held = NULL WHERE id = ANY(ARRAY(\
    SELECT id FROM deliveries \
    WHERE endpoint_id = $5 AND status IN ('queued', 'failed') AND limited = TRUE AND next_attempt_at <= $3 \
    AND (lease_until IS NULL OR lease_until < $3) AND body_purged_at IS NULL \
    ORDER BY next_attempt_at, id LIMIT $4 FOR NO KEY UPDATE SKIP LOCKED)) RETURNING *";

/// [`CLAIM_ENDPOINT_PG`] for SQLite, whose single writer needs no row locks.
pub(super) const CLAIM_ENDPOINT_SQLITE: &str = "UPDATE deliveries SET lease_owner = ?1, lease_until = ?2, held = NULL WHERE id IN (\
    SELECT id FROM deliveries INDEXED BY deliveries_endpoint_due \
    WHERE endpoint_id = ?5 AND status IN ('queued', 'failed') AND limited = TRUE AND next_attempt_at <= ?3 \
    AND (lease_until IS NULL OR lease_until < ?3) AND body_purged_at IS NULL \
    ORDER BY next_attempt_at, id LIMIT ?4) RETURNING *";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_are_planned_a_gap_apart_within_the_horizon() {
        let now = chrono::DateTime::from_timestamp(1_700_000_000, 0).map(|t| t.naive_utc()).unwrap_or_default();
        let horizon = now + chrono::TimeDelta::milliseconds(PACING_HORIZON_MS);
        let ms = chrono::TimeDelta::milliseconds;
        let (times, gap) = plan_sends(Some(5), Some(now - ms(3_000)), 10, now, horizon).expect("a rate");
        assert_eq!(gap, ms(200));
        assert_eq!(times, (0..5).map(|i| now + ms(200 * i)).collect::<Vec<_>>(), "a stale pace starts now");
        let (times, _) = plan_sends(Some(5), Some(now + ms(500)), 10, now, horizon).expect("a rate");
        assert_eq!(times, vec![now + ms(500), now + ms(700), now + ms(900)], "paced ahead: fewer fit");
        let (times, _) = plan_sends(Some(5), None, 2, now, horizon).expect("a rate");
        assert_eq!(times.len(), 2, "never more than allowed");
        assert!(plan_sends(Some(5), None, -1, now, horizon).is_some_and(|(t, _)| t.is_empty()), "at its cap");
        assert!(plan_sends(None, None, 10, now, horizon).is_none(), "no rate: no plan");
    }
}
