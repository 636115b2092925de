//! Writing the result of one check: the run, and on a change the snapshot, the event and its
//! deliveries, all in one transaction.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::{DeliveryStatus, IdKind, new_id};

use crate::schema::{deliveries, endpoints, events, runs, snapshots, watches};
use crate::{DbConn, Event, NewDelivery, Run, Snapshot, StoreError, StoreResult};

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
    /// An event to deliver.
    pub event: Option<Event>,
    /// Attempt budget for the deliveries created.
    pub max_attempts: i32,
    /// Failed checks in a row, this one included (the lease holder is the only writer).
    pub consecutive_failures: i32,
    /// When the watch is due next.
    pub next_run_at: NaiveDateTime,
    /// Now.
    pub now: NaiveDateTime,
}

/// Writes a check's result and releases the watch's lease. Returns the number of deliveries
/// queued (one per enabled endpoint of the owner when there is an event).
///
/// Fails with [`StoreError::LeaseLost`], writing nothing, if the lease was taken over.
pub fn record(conn: &mut DbConn, result: &CheckResult) -> StoreResult<usize> {
    conn.transaction(|conn| {
        // Write first: on SQLite this takes the write lock before any read, so the transaction
        // waits for other writers instead of failing on a stale read snapshot.
        let updated = diesel::update(
            watches::table
                .filter(watches::id.eq(&result.watch_id))
                .filter(watches::lease_owner.eq(&result.lease_owner)),
        )
        .set((
            watches::next_run_at.eq(result.next_run_at),
            watches::last_run_at.eq(result.run.started_at),
            watches::consecutive_failures.eq(result.consecutive_failures),
            watches::lease_owner.eq(None::<String>),
            watches::lease_until.eq(None::<NaiveDateTime>),
        ))
        .execute(conn)?;
        if updated != 1 {
            return Err(StoreError::LeaseLost);
        }
        if let Some(snapshot) = &result.snapshot {
            diesel::insert_into(snapshots::table)
                .values(snapshot)
                .execute(conn)?;
        }
        let mut queued = 0;
        if let Some(event) = &result.event {
            diesel::insert_into(events::table)
                .values(event)
                .execute(conn)?;
            let targets: Vec<String> = endpoints::table
                .filter(endpoints::account_id.eq(&result.account_id))
                .filter(endpoints::enabled.eq(true))
                .select(endpoints::id)
                .order(endpoints::id.asc())
                .load(conn)?;
            for endpoint_id in targets {
                let delivery = NewDelivery {
                    id: new_id(IdKind::Delivery),
                    account_id: result.account_id.clone(),
                    event_id: event.id.clone(),
                    endpoint_id,
                    watch_id: Some(result.watch_id.clone()),
                    event_type: event.event_type.clone(),
                    body: event.payload.as_bytes().to_vec(),
                    status: DeliveryStatus::Queued.as_str().to_owned(),
                    attempts: 0,
                    max_attempts: result.max_attempts,
                    next_attempt_at: result.now,
                    created_at: result.now,
                    updated_at: result.now,
                };
                diesel::insert_into(deliveries::table)
                    .values(&delivery)
                    .execute(conn)?;
                queued += 1;
            }
        }
        diesel::insert_into(runs::table)
            .values(&result.run)
            .execute(conn)?;
        Ok(queued)
    })
}

/// The account's events, newest first, optionally for one watch.
pub fn list_events(
    conn: &mut DbConn,
    account_id: &str,
    watch_id: Option<&str>,
    page: &crate::Page,
) -> StoreResult<Vec<Event>> {
    let mut query = events::table
        .filter(events::account_id.eq(account_id))
        .select(Event::as_select())
        .into_boxed();
    if let Some(watch_id) = watch_id {
        query = query.filter(events::watch_id.eq(watch_id));
    }
    if let Some(after) = &page.after {
        query = query.filter(events::id.lt(after));
    }
    Ok(query
        .order(events::id.desc())
        .limit(page.limit)
        .load(conn)?)
}
