//! Recoveries: durable bulk re-queues of an endpoint's failed or dead deliveries.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::RecoveryState;

use crate::schema::recoveries;
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
        let ids = crate::deliveries::requeue_page(conn, recovery, budget, limit, now)?;
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
