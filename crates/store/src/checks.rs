//! Writing the result of one check: the run, and on a change the snapshot, the event and its
//! deliveries, all in one transaction.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::outbox::{NewEvent, Target};
use crate::schema::{events, runs, snapshots, watches};
use crate::{DbConn, Event, Run, Snapshot, StoreError, StoreResult};

/// Everything one check produced.
#[derive(Debug, Clone)]
pub struct CheckResult {
    /// The watch checked.
    pub watch_id: String,
    /// Its owner.
    pub account_id: String,
    /// The lease under which the check ran; the write happens only if it is still held.
    pub lease_owner: String,
    /// The run row.
    pub run: Run,
    /// A new snapshot (first check or changed content).
    pub snapshot: Option<Snapshot>,
    /// Events to deliver, each to every enabled endpoint of the owner (a change, a health
    /// change, or both).
    pub events: Vec<NewEvent>,
    /// The watch's health after this check ([`driftwatch_core::WatchHealth`]).
    pub health: String,
    /// Validators of the page fetched, for the next conditional GET (unchanged when `None`).
    pub validators: Option<(Option<String>, Option<String>)>,
    /// Attempt budget for the deliveries created.
    pub max_attempts: i32,
    /// Failed checks in a row, this one included (the lease holder is the only writer).
    pub consecutive_failures: i32,
    /// When the watch is due next.
    pub next_run_at: NaiveDateTime,
    /// The watch's `updated_at` when the check began.
    pub watch_updated_at: NaiveDateTime,
    /// Now.
    pub now: NaiveDateTime,
}

/// Writes a check's result and releases the watch's lease. Returns the number of deliveries
/// queued (one per enabled endpoint of the owner when there is an event).
///
/// Fails with [`StoreError::LeaseLost`], writing nothing, if the lease was taken over.
pub fn record(conn: &mut DbConn, result: &CheckResult) -> StoreResult<usize> {
    conn.transaction(|conn| record_in(conn, result))
}

/// Writes many checks' results in one transaction (one commit for all of them), each under a
/// savepoint of its own: a check whose lease was lost, or whose write fails, writes nothing and
/// gets its error, while the others are written. Returns each check's answer, in the order given;
/// an error of the whole transaction (the commit, the connection) is returned alone and means
/// none was written.
///
/// Watches are written in id order, so concurrent batches on PostgreSQL cannot deadlock.
pub fn record_all(conn: &mut DbConn, results: &[CheckResult]) -> StoreResult<Vec<StoreResult<usize>>> {
    let mut order: Vec<usize> = (0..results.len()).collect();
    order.sort_by(|&a, &b| results[a].watch_id.cmp(&results[b].watch_id));
    conn.transaction(|conn| {
        let mut answers: Vec<(usize, StoreResult<usize>)> =
            order.into_iter().map(|i| (i, conn.transaction(|conn| record_in(conn, &results[i])))).collect();
        answers.sort_by_key(|(i, _)| *i);
        Ok(answers.into_iter().map(|(_, answer)| answer).collect())
    })
}

/// [`record`]'s writes, inside a transaction or savepoint of the caller's.
fn record_in(conn: &mut DbConn, result: &CheckResult) -> StoreResult<usize> {
    // Write first: on SQLite this takes the write lock before any read, so the transaction
    // waits for other writers instead of failing on a stale read snapshot.
    let updated = diesel::update(
        watches::table.filter(watches::id.eq(&result.watch_id)).filter(watches::lease_owner.eq(&result.lease_owner)),
    )
    .set((
        watches::last_run_at.eq(result.run.started_at),
        watches::consecutive_failures.eq(result.consecutive_failures),
        watches::health.eq(&result.health),
        watches::lease_owner.eq(None::<String>),
        watches::lease_until.eq(None::<NaiveDateTime>),
    ))
    .execute(conn)?;
    if updated != 1 {
        return Err(StoreError::LeaseLost);
    }
    // The schedule and the validators follow from the watch as it was when the check
    // began; if it was updated meanwhile (a new schedule, URL, selector or options), the
    // update's own next run and cleared validators stand.
    let unchanged = watches::table.find(&result.watch_id).filter(watches::updated_at.eq(result.watch_updated_at));
    diesel::update(unchanged)
        .set((watches::next_run_at.eq(result.next_run_at), watches::rebaseline.eq(false)))
        .execute(conn)?;
    if let Some((etag, last_modified)) = &result.validators {
        diesel::update(unchanged)
            .set((watches::etag.eq(etag), watches::last_modified.eq(last_modified)))
            .execute(conn)?;
    }
    if let Some(snapshot) = &result.snapshot {
        diesel::insert_into(snapshots::table).values(snapshot).execute(conn)?;
    }
    let mut queued = 0;
    for event in &result.events {
        queued += crate::outbox::enqueue(conn, event, Target::AllEnabled, result.max_attempts, result.now)?;
    }
    diesel::insert_into(runs::table).values(&result.run).execute(conn)?;
    Ok(queued)
}

/// The account's events, newest first, optionally for one watch.
pub fn list_events(
    conn: &mut DbConn,
    account_id: &str,
    watch_id: Option<&str>,
    event_type: Option<driftwatch_core::EventType>,
    page: &crate::Page,
) -> StoreResult<Vec<Event>> {
    let mut query = events::table.filter(events::account_id.eq(account_id)).select(Event::as_select()).into_boxed();
    if let Some(watch_id) = watch_id {
        query = query.filter(events::watch_id.eq(watch_id));
    }
    if let Some(event_type) = event_type {
        query = query.filter(events::event_type.eq(event_type.as_str()));
    }
    if let Some(after) = &page.after {
        query = query.filter(events::id.lt(after));
    }
    Ok(query.order(events::id.desc()).limit(page.limit).load(conn)?)
}

/// The account's event `id`.
pub fn get_event(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Event>> {
    Ok(events::table
        .filter(events::account_id.eq(account_id))
        .filter(events::id.eq(id))
        .select(Event::as_select())
        .first(conn)
        .optional()?)
}

/// The account's `change.detected` events, oldest first, after the event `after` or from the
/// time `since` (the changes feed).
pub fn changes(
    conn: &mut DbConn,
    account_id: &str,
    after: Option<&str>,
    since: Option<NaiveDateTime>,
    limit: i64,
) -> StoreResult<Vec<Event>> {
    let mut query = events::table
        .filter(events::account_id.eq(account_id))
        .filter(events::event_type.eq(driftwatch_core::EventType::ChangeDetected.as_str()))
        .select(Event::as_select())
        .into_boxed();
    if let Some(after) = after {
        query = query.filter(events::id.gt(after));
    }
    if let Some(since) = since {
        query = query.filter(events::created_at.ge(since));
    }
    Ok(query.order(events::id.asc()).limit(limit).load(conn)?)
}
