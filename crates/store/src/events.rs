//! Events: what happened to a watch or an endpoint, as the API, the UI and the changes feed read
//! them. Events are written with their deliveries by [`crate::outbox`].

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::events;
use crate::{DbConn, Event, StoreResult};

/// Inserts `rows` without queueing any delivery: for seeding history (benchmarks, tests). An
/// event that notifies anyone is written with its deliveries by [`crate::outbox`].
pub fn insert_events(conn: &mut DbConn, rows: &[Event]) -> StoreResult<()> {
    crate::insert_all!(conn, events::table, *rows);
    Ok(())
}

/// The snapshots of the watch `watch_id` whose change raised a `change.detected`.
pub fn alerted_snapshots(conn: &mut DbConn, watch_id: &str) -> StoreResult<std::collections::HashSet<String>> {
    let ids: Vec<Option<String>> = events::table
        .filter(events::watch_id.eq(watch_id))
        .filter(events::event_type.eq(driftwatch_core::EventType::ChangeDetected.as_str()))
        .select(events::snapshot_id)
        .load(conn)?;
    Ok(ids.into_iter().flatten().collect())
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

/// An event in brief, for telling subscribed agents: `(id, account_id, watch_id, event_type)`.
pub type EventBrief = (String, String, Option<String>, String);

/// Events of every account after `after`, or else created since `since`, oldest first, at most
/// `limit`, in brief.
pub fn newer_than(
    conn: &mut DbConn,
    after: Option<&str>,
    since: NaiveDateTime,
    limit: i64,
) -> StoreResult<Vec<EventBrief>> {
    let mut query =
        events::table.select((events::id, events::account_id, events::watch_id, events::event_type)).into_boxed();
    query = match after {
        Some(after) => query.filter(events::id.gt(after)),
        None => query.filter(events::created_at.ge(since)),
    };
    Ok(query.order(events::id.asc()).limit(limit).load(conn)?)
}
