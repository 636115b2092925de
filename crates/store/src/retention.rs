//! Retention: what is past its age is deleted in bounded batches, each its own short
//! transaction, so a purge of millions of rows never holds the database (or SQLite's one writer)
//! for longer than one batch: checks and deliveries take their turns in between.
//!
//! What is never deleted: each watch's newest run and newest snapshot, and anything still owed
//! to a receiver (an event with a `queued` or `failed` delivery keeps its deliveries and its
//! body).
//!
//! Walks go by primary key: ids sort by creation ([`driftwatch_core::id_floor`]), so "made
//! before the cutoff" is an index range, and a cursor carries each walk from batch to batch.

use std::collections::HashMap;

use chrono::NaiveDateTime;
use diesel::dsl::{exists, not};
use diesel::prelude::*;
use driftwatch_core::{IdKind, id_floor};

use crate::schema::{deliveries, delivery_attempts, events, runs, snapshots};
use crate::{DbConn, Store, StoreResult};

/// What to keep.
#[derive(Debug, Clone)]
pub struct Retention {
    /// Runs kept per watch whatever their age (at least 1: the newest is always kept).
    pub keep_runs: i64,
    /// Runs made before this, beyond the newest `keep_runs` of their watch, are deleted.
    pub runs_before: NaiveDateTime,
    /// Events made before this are deleted with their deliveries and attempts, unless a
    /// delivery of theirs is still owed.
    pub events_before: NaiveDateTime,
    /// Bodies of deliveries sent before this are emptied (the row keeps its metadata).
    pub sent_bodies_before: NaiveDateTime,
    /// Bodies of deliveries that went dead before this are emptied.
    pub dead_bodies_before: NaiveDateTime,
    /// Attempts made before this are deleted.
    pub attempts_before: NaiveDateTime,
    /// Snapshots kept per watch (at least 1: the newest is always kept).
    pub keep_snapshots: i64,
    /// Snapshots made before this are deleted, except each watch's newest.
    pub snapshots_before: NaiveDateTime,
    /// Idempotency keys made before this are deleted.
    pub idempotency_before: NaiveDateTime,
    /// Rows looked at per batch (one transaction each).
    pub batch: i64,
    /// Now, for `body_purged_at`.
    pub now: NaiveDateTime,
}

impl Retention {
    /// A policy that deletes nothing (every cutoff at the epoch, quotas unbounded): a base for
    /// one that changes a few fields.
    pub fn keep_everything(now: NaiveDateTime) -> Retention {
        let epoch = chrono::DateTime::UNIX_EPOCH.naive_utc();
        Retention {
            keep_runs: i64::MAX,
            runs_before: epoch,
            events_before: epoch,
            sent_bodies_before: epoch,
            dead_bodies_before: epoch,
            attempts_before: epoch,
            keep_snapshots: i64::MAX,
            snapshots_before: epoch,
            idempotency_before: epoch,
            batch: BATCH,
            now,
        }
    }
}

/// Rows looked at per transaction. At 1,000, a batch of run deletes held SQLite's one writer for
/// ~66 ms and checks' writes waited up to 128 ms behind it (`bench retention`); a quarter of that
/// keeps each wait to a quarter.
pub const BATCH: i64 = 250;

/// How many rows a purge removed (bodies: emptied).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Purged {
    /// Runs deleted.
    pub runs: usize,
    /// Events deleted (their deliveries and attempts went with them).
    pub events: usize,
    /// Delivery bodies emptied.
    pub bodies: usize,
    /// Attempts deleted.
    pub attempts: usize,
    /// Snapshots deleted.
    pub snapshots: usize,
    /// Screenshots deleted (no snapshot referred to them any more).
    pub screenshots: usize,
    /// Idempotency keys deleted.
    pub idempotency_keys: usize,
    /// Cached verdicts and daily token counts deleted (as old as deleted events).
    pub verdict_cache: usize,
    /// Batches written (transactions).
    pub batches: usize,
}

/// One batch of a walk: where the next starts (`None`: the walk is done) and what it deleted.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// The last id looked at.
    pub next: Option<String>,
    /// Rows deleted (or bodies emptied).
    pub deleted: usize,
}

/// Per-watch bounds, looked up once per purge: the `keep`-th newest id (older ones are beyond
/// the watch's quota) and the newest id. A bound read earlier can only be older than the
/// current one (rows are only added at the new end), so a stale bound keeps more, never less.
type Bounds = HashMap<String, (Option<String>, Option<String>)>;

/// Deletes everything past its age, batch by batch, each through [`Store::write`].
pub async fn purge(store: &Store, retention: &Retention) -> StoreResult<Purged> {
    let mut purged = Purged::default();
    let r = retention.clone();
    let mut batches = 0;
    let policy = r.clone();
    purged.runs = walk(store, &mut batches, move |c, cursor, bounds| runs_step(c, cursor, &policy, bounds)).await?;
    let policy = r.clone();
    purged.events = walk(store, &mut batches, move |c, cursor, _| events_step(c, cursor, &policy)).await?;
    let policy = r.clone();
    purged.attempts = walk(store, &mut batches, move |c, cursor, _| attempts_step(c, cursor, &policy)).await?;
    for status in ["sent", "dead"] {
        let policy = r.clone();
        purged.bodies += walk(store, &mut batches, move |c, _, _| bodies_step(c, status, &policy)).await?;
    }
    let policy = r.clone();
    purged.snapshots =
        walk(store, &mut batches, move |c, cursor, bounds| snapshots_step(c, cursor, &policy, bounds)).await?;
    let policy = r.clone();
    purged.screenshots = walk(store, &mut batches, move |c, cursor, _| screenshots_step(c, cursor, &policy)).await?;
    let before = r.idempotency_before;
    purged.idempotency_keys = store.write(move |conn| crate::idempotency::purge(conn, before)).await?;
    let (cutoff, day) = (r.events_before, r.events_before.format("%Y-%m-%d").to_string());
    purged.verdict_cache = store.write(move |conn| crate::verdicts::prune(conn, cutoff, &day)).await?;
    purged.batches = batches;
    Ok(purged)
}

/// Runs `step` batch after batch, each in a transaction of its own through [`Store::write`]
/// (so other writers take their turns in between), carrying the cursor and the per-watch
/// bounds from one to the next; returns how many rows the walk deleted.
async fn walk<F>(store: &Store, batches: &mut usize, step: F) -> StoreResult<usize>
where
    F: Fn(&mut DbConn, &str, &mut Bounds) -> StoreResult<Step> + Clone + Send + 'static,
{
    let mut bounds = Bounds::new();
    let mut cursor = String::new();
    let mut deleted = 0;
    loop {
        let (step, from) = (step.clone(), cursor.clone());
        let (done, carried) = store
            .write(move |conn| {
                let mut bounds = bounds;
                let done = conn.transaction(|conn| step(conn, &from, &mut bounds))?;
                Ok((done, bounds))
            })
            .await?;
        bounds = carried;
        deleted += done.deleted;
        *batches += 1;
        match done.next {
            Some(next) => cursor = next,
            None => return Ok(deleted),
        }
        tokio::task::yield_now().await;
    }
}

/// Runs after `cursor` made before the cutoff, one batch: those beyond their watch's newest
/// `keep_runs` are deleted.
fn runs_step(conn: &mut DbConn, cursor: &str, r: &Retention, bounds: &mut Bounds) -> StoreResult<Step> {
    let cutoff = id_floor(IdKind::Run, r.runs_before.and_utc());
    let rows: Vec<(String, String, NaiveDateTime)> = runs::table
        .filter(runs::id.gt(cursor))
        .filter(runs::id.lt(&cutoff))
        .order(runs::id.asc())
        .limit(r.batch.max(1))
        .select((runs::id, runs::watch_id, runs::started_at))
        .load(conn)?;
    let Some(next) = rows.last().map(|row| row.0.clone()) else { return Ok(Step::default()) };
    let keep = r.keep_runs.max(1);
    let mut doomed = Vec::new();
    for (id, watch_id, started_at) in rows {
        let (kth, _) = match bounds.get(&watch_id) {
            Some(bound) => bound.clone(),
            None => {
                let kth: Option<String> = runs::table
                    .filter(runs::watch_id.eq(&watch_id))
                    .order(runs::id.desc())
                    .offset(keep - 1)
                    .select(runs::id)
                    .first(conn)
                    .optional()?;
                bounds.insert(watch_id, (kth.clone(), None));
                (kth, None)
            }
        };
        if started_at < r.runs_before && kth.is_some_and(|kth| id < kth) {
            doomed.push(id);
        }
    }
    let deleted = diesel::delete(runs::table.filter(runs::id.eq_any(&doomed))).execute(conn)?;
    Ok(Step { next: Some(next), deleted })
}

/// Events after `cursor` made before the cutoff, one batch: deleted (their deliveries and
/// attempts by cascade) unless a delivery is still `queued` or `failed`, checked in the same
/// statement.
fn events_step(conn: &mut DbConn, cursor: &str, r: &Retention) -> StoreResult<Step> {
    let cutoff = id_floor(IdKind::Event, r.events_before.and_utc());
    let ids: Vec<String> = events::table
        .filter(events::id.gt(cursor))
        .filter(events::id.lt(&cutoff))
        .order(events::id.asc())
        .limit(r.batch.max(1))
        .select(events::id)
        .load(conn)?;
    let Some(next) = ids.last().cloned() else { return Ok(Step::default()) };
    let owed = deliveries::table
        .filter(deliveries::event_id.eq(events::id))
        .filter(deliveries::status.eq_any(["queued", "failed"]));
    let deleted = diesel::delete(
        events::table
            .filter(events::id.eq_any(&ids))
            .filter(events::created_at.lt(r.events_before))
            .filter(not(exists(owed))),
    )
    .execute(conn)?;
    Ok(Step { next: Some(next), deleted })
}

/// Attempts after `cursor` made before the cutoff, one batch: deleted.
fn attempts_step(conn: &mut DbConn, cursor: &str, r: &Retention) -> StoreResult<Step> {
    let cutoff = id_floor(IdKind::Attempt, r.attempts_before.and_utc());
    let ids: Vec<String> = delivery_attempts::table
        .filter(delivery_attempts::id.gt(cursor))
        .filter(delivery_attempts::id.lt(&cutoff))
        .order(delivery_attempts::id.asc())
        .limit(r.batch.max(1))
        .select(delivery_attempts::id)
        .load(conn)?;
    let Some(next) = ids.last().cloned() else { return Ok(Step::default()) };
    let deleted = diesel::delete(
        delivery_attempts::table
            .filter(delivery_attempts::id.eq_any(&ids))
            .filter(delivery_attempts::started_at.lt(r.attempts_before)),
    )
    .execute(conn)?;
    Ok(Step { next: Some(next), deleted })
}

/// Empties one batch of bodies of `status` (`sent` or `dead`) deliveries finished before their
/// cutoff (the `deliveries_finished` index); the walk is done when a batch finds none.
fn bodies_step(conn: &mut DbConn, status: &str, r: &Retention) -> StoreResult<Step> {
    let before = if status == "dead" { r.dead_bodies_before } else { r.sent_bodies_before };
    let ids: Vec<String> = deliveries::table
        .filter(deliveries::status.eq(status))
        .filter(deliveries::finished_at.lt(before))
        .filter(deliveries::body_purged_at.is_null())
        .limit(r.batch.max(1))
        .select(deliveries::id)
        .load(conn)?;
    if ids.is_empty() {
        return Ok(Step::default());
    }
    let deleted = diesel::update(
        deliveries::table
            .filter(deliveries::id.eq_any(&ids))
            .filter(deliveries::status.eq(status))
            .filter(deliveries::body_purged_at.is_null()),
    )
    .set((deliveries::body.eq(Vec::<u8>::new()), deliveries::body_purged_at.eq(r.now)))
    .execute(conn)?;
    Ok(Step { next: Some(String::new()), deleted })
}

/// Snapshots after `cursor`, one batch: deleted when beyond their watch's newest
/// `keep_snapshots`, or made before the cutoff and not the watch's newest.
fn snapshots_step(conn: &mut DbConn, cursor: &str, r: &Retention, bounds: &mut Bounds) -> StoreResult<Step> {
    let rows: Vec<(String, String, NaiveDateTime)> = snapshots::table
        .filter(snapshots::id.gt(cursor))
        .order(snapshots::id.asc())
        .limit(r.batch.max(1))
        .select((snapshots::id, snapshots::watch_id, snapshots::created_at))
        .load(conn)?;
    let Some(next) = rows.last().map(|row| row.0.clone()) else { return Ok(Step::default()) };
    let keep = r.keep_snapshots.max(1);
    let mut doomed = Vec::new();
    for (id, watch_id, created_at) in rows {
        let (kth, newest) = match bounds.get(&watch_id) {
            Some(bound) => bound.clone(),
            None => {
                let newest_first =
                    || snapshots::table.filter(snapshots::watch_id.eq(&watch_id)).order(snapshots::id.desc());
                let kth: Option<String> =
                    newest_first().offset(keep - 1).select(snapshots::id).first(conn).optional()?;
                let newest: Option<String> = newest_first().select(snapshots::id).first(conn).optional()?;
                bounds.insert(watch_id.clone(), (kth.clone(), newest.clone()));
                (kth, newest)
            }
        };
        let beyond_quota = kth.as_ref().is_some_and(|kth| &id < kth);
        let old_and_not_newest = created_at < r.snapshots_before && newest.as_ref().is_some_and(|n| &id < n);
        if beyond_quota || old_and_not_newest {
            doomed.push(id);
        }
    }
    // Their screenshots go in the sweep that follows, once no snapshot refers to them.
    let deleted = diesel::delete(snapshots::table.filter(snapshots::id.eq_any(&doomed))).execute(conn)?;
    Ok(Step { next: Some(next), deleted })
}

/// Screenshots after `cursor`, one batch: deleted when no snapshot refers to them (their
/// snapshots were purged, or their watch was deleted).
fn screenshots_step(conn: &mut DbConn, cursor: &str, r: &Retention) -> StoreResult<Step> {
    let hashes = crate::screenshots::hashes_after(conn, cursor, r.batch.max(1))?;
    let Some(next) = hashes.last().cloned() else { return Ok(Step::default()) };
    let deleted = crate::screenshots::delete_unreferenced(conn, &hashes)?;
    Ok(Step { next: Some(next), deleted })
}
