//! Watches: create, read, list, and the lease claims of the schedule runner.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::WatchState;

use crate::schema::{runs, snapshots, watches};
use crate::{DbConn, Page, Run, Snapshot, StoreResult, Watch};

/// Inserts a new watch.
pub fn insert_watch(conn: &mut DbConn, watch: &Watch) -> StoreResult<()> {
    diesel::insert_into(watches::table).values(watch).execute(conn)?;
    Ok(())
}

/// The account's watch `id`.
pub fn get_watch(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Watch>> {
    Ok(watches::table
        .filter(watches::account_id.eq(account_id))
        .filter(watches::id.eq(id))
        .select(Watch::as_select())
        .first(conn)
        .optional()?)
}

/// The account's watches in creation order.
pub fn list_watches(conn: &mut DbConn, account_id: &str, page: &Page) -> StoreResult<Vec<Watch>> {
    let mut query = watches::table.filter(watches::account_id.eq(account_id)).select(Watch::as_select()).into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(watches::id.gt(after));
    }
    Ok(query.order(watches::id.asc()).limit(page.limit).load(conn)?)
}

/// Leases up to `limit` due, active, unleased watches to `owner` until `lease_until` and returns
/// them. One statement, so two runners never claim the same watch; on PostgreSQL the candidate
/// rows are locked with `SKIP LOCKED`, so runners on several nodes take disjoint batches.
pub fn claim_due(
    conn: &mut DbConn,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
    limit: i64,
) -> StoreResult<Vec<Watch>> {
    let condition = format!("state = '{}'", WatchState::Active.as_str());
    let claimed = crate::lease_due(
        conn,
        "watches",
        &condition,
        "next_run_at",
        &crate::Lease { owner, now, until: lease_until, limit },
    )?;
    if claimed == 0 {
        return Ok(Vec::new());
    }
    Ok(watches::table
        .filter(watches::lease_owner.eq(owner))
        .select(Watch::as_select())
        .order(watches::next_run_at.asc())
        .load(conn)?)
}

/// Leases the account's watch `id` to `owner` for a check on demand, unless a check of it is
/// already under way. `Ok(None)` when there is no such watch; `Ok(Some(None))` when it is busy.
pub fn claim_one(
    conn: &mut DbConn,
    account_id: &str,
    id: &str,
    owner: &str,
    now: NaiveDateTime,
    lease_until: NaiveDateTime,
) -> StoreResult<Option<Option<Watch>>> {
    let claimed = diesel::update(
        watches::table
            .filter(watches::account_id.eq(account_id))
            .filter(watches::id.eq(id))
            .filter(watches::lease_until.is_null().or(watches::lease_until.lt(now))),
    )
    .set((watches::lease_owner.eq(owner), watches::lease_until.eq(lease_until)))
    .execute(conn)?;
    let watch = get_watch(conn, account_id, id)?;
    Ok(watch.map(|w| (claimed == 1).then_some(w)))
}

/// When the runner next has something to do: the earliest due time of an unleased active
/// watch, or the earliest expiry of a live lease (a check in flight may be abandoned).
pub fn next_wake(conn: &mut DbConn, now: NaiveDateTime) -> StoreResult<Option<NaiveDateTime>> {
    let active = watches::state.eq(WatchState::Active.as_str());
    let unleased: Option<NaiveDateTime> = watches::table
        .filter(active)
        .filter(watches::lease_until.is_null().or(watches::lease_until.lt(now)))
        .select(diesel::dsl::min(watches::next_run_at))
        .first(conn)?;
    let lease_expiry: Option<NaiveDateTime> = watches::table
        .filter(active)
        .filter(watches::lease_until.ge(now))
        .select(diesel::dsl::min(watches::lease_until))
        .first(conn)?;
    Ok(crate::earliest(unleased, lease_expiry))
}

/// The newest snapshot of a watch.
pub fn latest_snapshot(conn: &mut DbConn, watch_id: &str) -> StoreResult<Option<Snapshot>> {
    Ok(snapshots::table
        .filter(snapshots::watch_id.eq(watch_id))
        .order(snapshots::id.desc())
        .select(Snapshot::as_select())
        .first(conn)
        .optional()?)
}

/// The runs of a watch, newest first.
pub fn list_runs(conn: &mut DbConn, watch_id: &str, page: &Page) -> StoreResult<Vec<Run>> {
    let mut query = runs::table.filter(runs::watch_id.eq(watch_id)).select(Run::as_select()).into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(runs::id.lt(after));
    }
    Ok(query.order(runs::id.desc()).limit(page.limit).load(conn)?)
}
