//! Recoveries: durable bulk re-queues of an endpoint's failed or dead deliveries.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::{AttemptTrigger, RecoveryState};

use crate::db::MultiBackend;
use crate::deliveries::redeliver::{finished, fresh_budget};
use crate::schema::{deliveries, recoveries};
use crate::{DbConn, Page, Recovery, StoreError, StoreResult};

/// Inserts a recovery request.
pub fn insert_recovery(conn: &mut DbConn, recovery: &Recovery) -> StoreResult<()> {
    diesel::insert_into(recoveries::table).values(recovery).execute(conn)?;
    Ok(())
}

/// The account's recovery `id`.
pub fn get_recovery(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Recovery>> {
    Ok(recoveries::table
        .filter(recoveries::account_id.eq(account_id))
        .filter(recoveries::id.eq(id))
        .select(Recovery::as_select())
        .first(conn)
        .optional()?)
}

/// The account's recoveries, newest first, optionally of one endpoint.
pub fn list_recoveries(
    conn: &mut DbConn,
    account_id: &str,
    endpoint_id: Option<&str>,
    page: &Page,
) -> StoreResult<Vec<Recovery>> {
    let mut query =
        recoveries::table.filter(recoveries::account_id.eq(account_id)).select(Recovery::as_select()).into_boxed();
    if let Some(endpoint_id) = endpoint_id {
        query = query.filter(recoveries::endpoint_id.eq(endpoint_id));
    }
    if let Some(after) = &page.after {
        query = query.filter(recoveries::id.lt(after));
    }
    Ok(query.order(recoveries::id.desc()).limit(page.limit).load(conn)?)
}

/// Leases one unfinished recovery to `owner` (any node may continue one a dead node started).
pub fn claim_next(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
) -> StoreResult<Option<Recovery>> {
    let condition = format!("state IN ('{}', '{}')", RecoveryState::Pending.as_str(), RecoveryState::Running.as_str());
    let lease = crate::Lease { owner, now, until: lease_until, limit: 1 };
    if crate::lease_due(conn, "recoveries", &condition, "created_at", &lease)? == 0 {
        return Ok(None);
    }
    Ok(recoveries::table
        .filter(recoveries::lease_owner.eq(owner))
        .select(Recovery::as_select())
        .first(conn)
        .optional()?)
}

/// Processes one page of a leased recovery: re-queues (or, for a dry run, counts) up to `limit`
/// matching deliveries and saves the progress in the same transaction, so a restart resumes
/// after the last page written. Returns the recovery as saved.
pub fn advance(
    conn: &mut DbConn,
    recovery: &Recovery,
    owner: &str,
    budget: i32,
    limit: i64,
    now: NaiveDateTime,
) -> StoreResult<Recovery> {
    conn.transaction(|conn| {
        // Write first (SQLite lock order) and prove the lease is still ours.
        let held = diesel::update(
            recoveries::table.filter(recoveries::id.eq(&recovery.id)).filter(recoveries::lease_owner.eq(owner)),
        )
        .set(recoveries::updated_at.eq(now))
        .execute(conn)?;
        if held != 1 {
            return Err(StoreError::LeaseLost);
        }
        let ids = requeue_page(conn, recovery, budget, limit, now)?;
        let n = ids.len() as i64;
        let done = n < limit;
        let state = if done { RecoveryState::Done } else { RecoveryState::Running };
        diesel::update(recoveries::table.find(&recovery.id))
            .set((
                recoveries::state.eq(state.as_str()),
                recoveries::matched.eq(recovery.matched + n),
                recoveries::requeued.eq(recovery.requeued + if recovery.dry_run { 0 } else { n }),
                recoveries::cursor.eq(ids.last().or(recovery.cursor.as_ref())),
                recoveries::lease_owner.eq(None::<String>),
                recoveries::lease_until.eq(None::<NaiveDateTime>),
                recoveries::finished_at.eq(done.then_some(now)),
            ))
            .execute(conn)?;
        Ok(recoveries::table.find(&recovery.id).select(Recovery::as_select()).first(conn)?)
    })
}

/// The deliveries a recovery matches: its endpoint's, in its account, with one of its statuses,
/// created in its window, with a body still to send. Its cursor is the caller's to apply.
fn matching<'a>(recovery: &'a Recovery, statuses: &'a [&'a str]) -> deliveries::BoxedQuery<'a, MultiBackend> {
    let mut query = deliveries::table
        .filter(deliveries::endpoint_id.eq(&recovery.endpoint_id))
        .filter(deliveries::account_id.eq(&recovery.account_id))
        .filter(deliveries::status.eq_any(statuses))
        .filter(deliveries::created_at.ge(recovery.since))
        .filter(deliveries::body_purged_at.is_null())
        .into_boxed();
    if let Some(until) = recovery.until {
        query = query.filter(deliveries::created_at.lt(until));
    }
    query
}

/// The statuses a recovery re-queues, from their stored list.
fn statuses(recovery: &Recovery) -> Vec<&str> {
    recovery.statuses.split(',').map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// How many deliveries a recovery matches now: what a dry run reports, counted by the database.
pub fn count_matching(conn: &mut DbConn, recovery: &Recovery) -> StoreResult<i64> {
    let statuses = statuses(recovery);
    Ok(matching(recovery, &statuses).count().get_result(conn)?)
}

/// Re-queues up to `limit` of the deliveries matching a recovery, after its cursor in id order;
/// finished ones get a fresh budget of `budget` attempts. With `dry_run` nothing changes.
/// Returns the ids matched, in order.
pub fn requeue_page(
    conn: &mut DbConn,
    recovery: &Recovery,
    budget: i32,
    limit: i64,
    now: NaiveDateTime,
) -> StoreResult<Vec<String>> {
    let statuses = statuses(recovery);
    let mut query = matching(recovery, &statuses)
        .select((deliveries::id, deliveries::status, deliveries::attempts))
        .order(deliveries::id.asc())
        .limit(limit);
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
