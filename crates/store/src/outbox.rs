//! Recording events and queueing their deliveries.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use driftwatch_core::{DeliveryStatus, EndpointKind, IdKind, new_id};

use crate::schema::{deliveries, endpoints, events};
use crate::{DbConn, Event, NewDelivery, StoreResult};

/// An event with its bodies: `event.payload` is POSTed to webhook endpoints, `slack_body` to
/// Slack ones. Both are rendered before the transaction; the bytes never change afterwards.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// The event row.
    pub event: Event,
    /// The Slack message for the same event.
    pub slack_body: String,
}

/// Which endpoints of the event's account receive it.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// Every enabled endpoint.
    AllEnabled,
    /// Every enabled endpoint but this one.
    AllEnabledExcept(&'a str),
    /// Just this endpoint.
    One(&'a str),
}

/// An endpoint an event goes to: id, kind, its own attempt budget, the event types it takes,
/// and whether it has a limit that holds across nodes.
type EndpointTarget = (String, String, Option<i32>, Option<String>, bool);

/// The columns of an [`EndpointTarget`].
#[diesel::dsl::auto_type]
fn target_columns() -> _ {
    (endpoints::id, endpoints::kind, endpoints::max_attempts, endpoints::event_types, crate::predicates::is_limited())
}

/// Inserts the event and one queued delivery per target endpoint; returns how many were queued.
///
/// Call inside a transaction that has already written (see [`crate::checks::record`]).
pub fn enqueue(
    conn: &mut DbConn,
    new: &NewEvent,
    target: Target<'_>,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<usize> {
    diesel::insert_into(events::table).values(&new.event).execute(conn)?;
    let rows = delivery_rows(conn, new, target, default_max_attempts, now)?;
    // One multi-row statement for a fan-out on PostgreSQL (per 2,000 endpoints).
    crate::insert_all!(conn, deliveries::table, rows);
    Ok(rows.len())
}

/// The queued deliveries of `new` to the endpoints `target` names that take it.
fn delivery_rows(
    conn: &mut DbConn,
    new: &NewEvent,
    target: Target<'_>,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<Vec<NewDelivery>> {
    let event = &new.event;
    let mut query = endpoints::table
        .filter(endpoints::account_id.eq(&event.account_id))
        .select(target_columns())
        .order(endpoints::id.asc())
        .into_boxed();
    query = match target {
        Target::AllEnabled => query.filter(endpoints::enabled.eq(true)),
        Target::AllEnabledExcept(id) => query.filter(endpoints::enabled.eq(true)).filter(endpoints::id.ne(id)),
        Target::One(id) => query.filter(endpoints::id.eq(id)),
    };
    let mut targets: Vec<EndpointTarget> = query.load(conn)?;
    if !matches!(target, Target::One(_)) {
        // Endpoints subscribed to some event types only; one named on purpose gets the event.
        targets.retain(|(_, _, _, types, _)| crate::models::receives(types.as_deref(), &event.event_type));
    }
    let rows: Vec<NewDelivery> = targets
        .iter()
        .map(|(endpoint_id, kind, max_attempts, _, limited)| {
            delivery_row(new, endpoint_id, kind, max_attempts.unwrap_or(default_max_attempts), *limited, now)
        })
        .collect();
    Ok(rows)
}

/// Inserts many events (each with its attempt budget and time) and one queued delivery per
/// enabled endpoint of its account that receives its type, in one multi-row insert per table
/// and one endpoint query per account. Returns the deliveries queued per event id.
///
/// Call inside a transaction that has already written (see [`crate::checks::record_all`]).
pub fn enqueue_many<'a>(
    conn: &mut DbConn,
    events: &[(&'a NewEvent, i32, NaiveDateTime)],
) -> StoreResult<std::collections::HashMap<&'a str, usize>> {
    type Targets = Vec<EndpointTarget>;
    let mut queued = std::collections::HashMap::new();
    if events.is_empty() {
        return Ok(queued);
    }
    let rows: Vec<Event> = events.iter().map(|(new, _, _)| new.event.clone()).collect();
    crate::insert_all!(conn, events::table, rows);
    let mut by_account: std::collections::HashMap<&str, Targets> = std::collections::HashMap::new();
    let mut deliveries_rows = Vec::new();
    for &(new, default_max_attempts, now) in events {
        let event = &new.event;
        if !by_account.contains_key(event.account_id.as_str()) {
            let targets: Targets = endpoints::table
                .filter(endpoints::account_id.eq(&event.account_id))
                .filter(endpoints::enabled.eq(true))
                .select(target_columns())
                .order(endpoints::id.asc())
                .load(conn)?;
            by_account.insert(&event.account_id, targets);
        }
        let targets = &by_account[event.account_id.as_str()];
        let before = deliveries_rows.len();
        deliveries_rows.extend(
            targets
                .iter()
                .filter(|(_, _, _, types, _)| crate::models::receives(types.as_deref(), &event.event_type))
                .map(|(endpoint_id, kind, max_attempts, _, limited)| {
                    delivery_row(new, endpoint_id, kind, max_attempts.unwrap_or(default_max_attempts), *limited, now)
                }),
        );
        queued.insert(event.id.as_str(), deliveries_rows.len() - before);
    }
    crate::insert_all!(conn, deliveries::table, deliveries_rows);
    Ok(queued)
}

/// The queued delivery of `new` to an endpoint of `kind` (a Slack endpoint gets the Slack body).
fn delivery_row(
    new: &NewEvent,
    endpoint_id: &str,
    kind: &str,
    max_attempts: i32,
    limited: bool,
    now: NaiveDateTime,
) -> NewDelivery {
    let event = &new.event;
    let body = if kind == EndpointKind::Slack.as_str() { &new.slack_body } else { &event.payload };
    NewDelivery {
        id: new_id(IdKind::Delivery),
        account_id: event.account_id.clone(),
        event_id: event.id.clone(),
        endpoint_id: endpoint_id.to_owned(),
        watch_id: event.watch_id.clone(),
        event_type: event.event_type.clone(),
        body: body.as_bytes().to_vec(),
        status: DeliveryStatus::Queued.as_str().to_owned(),
        attempts: 0,
        max_attempts: max_attempts.max(1),
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
        limited,
    }
}

/// Records `new` and queues it for the one endpoint `endpoint_id`, in a transaction; returns
/// the delivery (for test events sent on request).
pub fn enqueue_for_endpoint(
    conn: &mut DbConn,
    new: &NewEvent,
    endpoint_id: &str,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<Option<crate::Delivery>> {
    conn.transaction(|conn| {
        diesel::insert_into(events::table).values(&new.event).execute(conn)?;
        let Some(row) = delivery_rows(conn, new, Target::One(endpoint_id), default_max_attempts, now)?.pop() else {
            return Ok(None);
        };
        // The row as stored, defaults included, without reading it back.
        Ok(Some(
            diesel::insert_into(deliveries::table)
                .values(&row)
                .returning(<crate::Delivery as Selectable<<DbConn as Connection>::Backend>>::construct_selection())
                .get_result::<crate::Delivery>(conn)?,
        ))
    })
}

/// An event for one named endpoint, waiting in a batch (see [`enqueue_each_for_endpoint`]).
#[derive(Debug, Clone)]
pub struct ForEndpoint {
    /// The event and its bodies.
    pub new: NewEvent,
    /// The endpoint it goes to (of the event's account).
    pub endpoint_id: String,
    /// The attempt budget when the endpoint sets none.
    pub default_max_attempts: i32,
    /// When it was queued.
    pub now: NaiveDateTime,
}

/// [`enqueue_for_endpoint`] for many events at once: one transaction, one multi-row insert
/// per table, one endpoint query. Each item is answered as it would be alone: when the batch
/// fails as a whole (an endpoint deleted meanwhile breaks its event's foreign key), every item
/// is retried in its own transaction, so one bad item fails only itself.
pub fn enqueue_each_for_endpoint(
    conn: &mut DbConn,
    items: &[ForEndpoint],
) -> StoreResult<Vec<StoreResult<Option<crate::Delivery>>>> {
    match conn.transaction(|conn| enqueue_all_for_endpoints(conn, items)) {
        Ok(queued) => Ok(queued.into_iter().map(Ok).collect()),
        Err(e) if items.len() > 1 => {
            tracing::debug!(error = %e, items = items.len(), "a batch of events failed; queueing them one by one");
            Ok(items
                .iter()
                .map(|i| enqueue_for_endpoint(conn, &i.new, &i.endpoint_id, i.default_max_attempts, i.now))
                .collect())
        }
        Err(e) => Ok(vec![Err(e)]),
    }
}

/// The body of [`enqueue_each_for_endpoint`]'s one transaction.
fn enqueue_all_for_endpoints(conn: &mut DbConn, items: &[ForEndpoint]) -> StoreResult<Vec<Option<crate::Delivery>>> {
    let rows: Vec<Event> = items.iter().map(|i| i.new.event.clone()).collect();
    crate::insert_all!(conn, events::table, rows);
    let mut ids: Vec<&str> = items.iter().map(|i| i.endpoint_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let targets: std::collections::HashMap<String, (String, EndpointTarget)> = endpoints::table
        .filter(endpoints::id.eq_any(&ids))
        .select((endpoints::account_id, target_columns()))
        .load::<(String, EndpointTarget)>(conn)?
        .into_iter()
        .map(|(account, target)| (target.0.clone(), (account, target)))
        .collect();
    let rows: Vec<NewDelivery> = items
        .iter()
        .filter_map(|i| {
            let (account, (endpoint_id, kind, max_attempts, _, limited)) = targets.get(&i.endpoint_id)?;
            (*account == i.new.event.account_id).then(|| {
                let max_attempts = max_attempts.unwrap_or(i.default_max_attempts);
                delivery_row(&i.new, endpoint_id, kind, max_attempts, *limited, i.now)
            })
        })
        .collect();
    crate::insert_all!(conn, deliveries::table, rows);
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let mut stored: std::collections::HashMap<String, crate::Delivery> = deliveries::table
        .filter(deliveries::id.eq_any(&ids))
        .select(crate::Delivery::as_select())
        .load::<crate::Delivery>(conn)?
        .into_iter()
        .map(|d| (d.event_id.clone(), d))
        .collect();
    Ok(items.iter().map(|i| stored.remove(&i.new.event.id)).collect())
}
