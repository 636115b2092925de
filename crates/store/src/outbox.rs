//! Recording events and queueing their deliveries.

use chrono::NaiveDateTime;
use diesel::prelude::*;
use std::collections::HashMap;

use driftwatch_core::{DeliveryMode, DeliveryStatus, HELD_QUIET_HOURS, IdKind, new_id};

use crate::render::Render;
use crate::schema::{accounts, deliveries, endpoints, events, watches};
use crate::{DbConn, Event, NewDelivery, StoreResult};

/// Which endpoints of the event's account receive it.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// Every enabled endpoint the event is routed to.
    AllEnabled,
    /// Every enabled endpoint but this one.
    AllEnabledExcept(&'a str),
    /// Just this endpoint, whatever its route and event types.
    One(&'a str),
}

/// An endpoint an event may go to: what routing, subscriptions and rendering need.
#[derive(Debug, Clone, Queryable)]
struct Recipient {
    id: String,
    kind: String,
    max_attempts: Option<i32>,
    event_types: Option<String>,
    limited: bool,
    settings: String,
    title_template: Option<String>,
    body_template: Option<String>,
    route_tags: Option<String>,
    route_watches: Option<String>,
    delivery: Option<String>,
    quiet_hours: Option<String>,
    account_quiet_hours: Option<String>,
}

impl Recipient {
    /// Whether an event of `event_type` waits for this endpoint's digest.
    fn gathers(&self, event_type: &str) -> bool {
        self.delivery.as_deref().and_then(|json| DeliveryMode::parse(json).ok()).is_some_and(|m| m.gathers(event_type))
    }

    /// When quiet hours (the endpoint's, else its account's) release a delivery queued at
    /// `now`; `None` when they do not hold it.
    fn quiet_until(&self, now: NaiveDateTime) -> Option<NaiveDateTime> {
        driftwatch_core::quiet_release(self.quiet_hours.as_deref().or(self.account_quiet_hours.as_deref())?, now)
    }

    /// Whether an event of `event_type` about `watch` (none for endpoint events) goes here.
    fn takes(&self, event_type: &str, watch: Option<(&str, &WatchRoute)>) -> bool {
        crate::models::receives(self.event_types.as_deref(), event_type)
            && watch.is_none_or(|(id, w)| {
                crate::models::routes(self.route_tags.as_deref(), self.route_watches.as_deref(), id, &w.tags)
            })
    }

    fn as_render(&self) -> crate::render::Recipient<'_> {
        crate::render::Recipient {
            id: &self.id,
            kind: &self.kind,
            settings: &self.settings,
            title_template: self.title_template.as_deref(),
            body_template: self.body_template.as_deref(),
        }
    }
}

/// The columns of a [`Recipient`].
#[diesel::dsl::auto_type]
fn recipient_columns() -> _ {
    (
        endpoints::id,
        endpoints::kind,
        endpoints::max_attempts,
        endpoints::event_types,
        crate::predicates::is_limited(),
        endpoints::settings,
        endpoints::title_template,
        endpoints::body_template,
        endpoints::route_tags,
        endpoints::route_watches,
        endpoints::delivery,
        endpoints::quiet_hours,
        accounts::quiet_hours,
    )
}

/// What routing needs of a watch: its tags and whether it is muted.
#[derive(Debug, Clone, Default)]
struct WatchRoute {
    tags: String,
    muted: bool,
}

/// The routes of the watches `events` are about, in one query.
fn watch_routes<'e>(
    conn: &mut DbConn,
    events: impl Iterator<Item = &'e Event>,
) -> StoreResult<HashMap<String, WatchRoute>> {
    let mut ids: Vec<&str> = events.filter_map(|e| e.watch_id.as_deref()).collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(watches::table
        .filter(watches::id.eq_any(&ids))
        .select((watches::id, watches::tags, watches::muted))
        .load::<(String, String, bool)>(conn)?
        .into_iter()
        .map(|(id, tags, muted)| (id, WatchRoute { tags, muted }))
        .collect())
}

/// Inserts the event and one queued delivery per target endpoint; returns how many were queued.
///
/// Call inside a transaction that has already written (see [`crate::checks::record`]).
pub fn enqueue(
    conn: &mut DbConn,
    render: &dyn Render,
    event: &Event,
    target: Target<'_>,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<usize> {
    diesel::insert_into(events::table).values(event).execute(conn)?;
    let rows = delivery_rows(conn, render, event, target, default_max_attempts, now)?;
    // One multi-row statement for a fan-out on PostgreSQL (per 2,000 endpoints).
    crate::insert_all!(conn, deliveries::table, rows);
    Ok(rows.len())
}

/// Queues deliveries of an event already recorded (a change whose verdict came) to every
/// enabled endpoint it is routed to; returns how many were queued.
///
/// Call inside a transaction.
pub fn enqueue_recorded(
    conn: &mut DbConn,
    render: &dyn Render,
    event: &Event,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<usize> {
    let rows = delivery_rows(conn, render, event, Target::AllEnabled, default_max_attempts, now)?;
    crate::insert_all!(conn, deliveries::table, rows);
    Ok(rows.len())
}

/// The queued deliveries of `event` to the endpoints `target` names that take it.
fn delivery_rows(
    conn: &mut DbConn,
    render: &dyn Render,
    event: &Event,
    target: Target<'_>,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<Vec<NewDelivery>> {
    let mut query = endpoints::table
        .inner_join(accounts::table)
        .filter(endpoints::account_id.eq(&event.account_id))
        .select(recipient_columns())
        .order(endpoints::id.asc())
        .into_boxed();
    query = match target {
        Target::AllEnabled => query.filter(endpoints::enabled.eq(true)),
        Target::AllEnabledExcept(id) => query.filter(endpoints::enabled.eq(true)).filter(endpoints::id.ne(id)),
        Target::One(id) => query.filter(endpoints::id.eq(id)),
    };
    let mut recipients: Vec<Recipient> = query.load(conn)?;
    let routes = watch_routes(conn, std::iter::once(event))?;
    let watch = event.watch_id.as_deref().map(|id| (id, routes.get(id).cloned().unwrap_or_default()));
    if !matches!(target, Target::One(_)) {
        // A muted watch queues nothing; otherwise subscriptions and routes choose. An endpoint
        // named on purpose gets the event.
        if watch.as_ref().is_some_and(|(_, w)| w.muted) {
            return Ok(Vec::new());
        }
        recipients.retain(|r| r.takes(&event.event_type, watch.as_ref().map(|(id, w)| (*id, w))));
    }
    let tags = watch.as_ref().map_or("", |(_, w)| w.tags.as_str());
    // An endpoint named on purpose (a test event, a digest) gets it at once.
    let may_gather = !matches!(target, Target::One(_));
    Ok(recipients
        .iter()
        .map(|r| delivery_row(render, event, r, r.max_attempts.unwrap_or(default_max_attempts), tags, may_gather, now))
        .collect())
}

/// Inserts many events (each with its attempt budget and time) and one queued delivery per
/// enabled endpoint of its account that receives its type and its watch, in one multi-row
/// insert per table, one endpoint query per account and one watch query. Returns the
/// deliveries queued per event id.
///
/// Call inside a transaction that has already written (see [`crate::checks::record_all`]).
pub fn enqueue_many<'a>(
    conn: &mut DbConn,
    render: &dyn Render,
    events: &[(&'a Event, i32, NaiveDateTime)],
) -> StoreResult<HashMap<&'a str, usize>> {
    let mut queued = HashMap::new();
    if events.is_empty() {
        return Ok(queued);
    }
    let rows: Vec<Event> = events.iter().map(|(event, _, _)| (*event).clone()).collect();
    crate::insert_all!(conn, events::table, rows);
    let routes = watch_routes(conn, events.iter().map(|(event, _, _)| *event))?;
    let mut by_account: HashMap<&str, Vec<Recipient>> = HashMap::new();
    let mut deliveries_rows = Vec::new();
    for &(event, default_max_attempts, now) in events {
        let watch = event.watch_id.as_deref().map(|id| (id, routes.get(id).cloned().unwrap_or_default()));
        if watch.as_ref().is_some_and(|(_, w)| w.muted) {
            queued.insert(event.id.as_str(), 0);
            continue;
        }
        if !by_account.contains_key(event.account_id.as_str()) {
            let recipients: Vec<Recipient> = endpoints::table
                .inner_join(accounts::table)
                .filter(endpoints::account_id.eq(&event.account_id))
                .filter(endpoints::enabled.eq(true))
                .select(recipient_columns())
                .order(endpoints::id.asc())
                .load(conn)?;
            by_account.insert(&event.account_id, recipients);
        }
        let tags = watch.as_ref().map_or("", |(_, w)| w.tags.as_str());
        let before = deliveries_rows.len();
        deliveries_rows.extend(
            by_account[event.account_id.as_str()]
                .iter()
                .filter(|r| r.takes(&event.event_type, watch.as_ref().map(|(id, w)| (*id, w))))
                .map(|r| {
                    delivery_row(render, event, r, r.max_attempts.unwrap_or(default_max_attempts), tags, true, now)
                }),
        );
        queued.insert(event.id.as_str(), deliveries_rows.len() - before);
    }
    crate::insert_all!(conn, deliveries::table, deliveries_rows);
    Ok(queued)
}

/// The queued delivery of `event` to `to`, its body rendered for it. A body that cannot be
/// rendered (a template failing on this event) is dead-lettered at once with the reason. For an
/// endpoint in digest mode (when `may_gather`) a gathered type waits, without a body, for the
/// digest; quiet hours hold the rest until they end.
fn delivery_row(
    render: &dyn Render,
    event: &Event,
    to: &Recipient,
    max_attempts: i32,
    tags: &str,
    may_gather: bool,
    now: NaiveDateTime,
) -> NewDelivery {
    if may_gather && to.gathers(&event.event_type) {
        return NewDelivery {
            body: Vec::new(),
            status: DeliveryStatus::Gathering.as_str().to_owned(),
            ..new_delivery(event, to, max_attempts, now)
        };
    }
    let (body, status, last_error, finished_at) = match render.body(
        &to.as_render(),
        crate::render::EventRef { id: &event.id, event_type: &event.event_type, payload: &event.payload },
        crate::render::WatchFacts { tags },
    ) {
        Ok(body) => (body, DeliveryStatus::Queued, None, None),
        Err(reason) => {
            tracing::warn!(endpoint.id = %to.id, event.id = %event.id, error = %reason, "body not rendered; dead-lettered");
            (Vec::new(), DeliveryStatus::Dead, Some(format!("template: {reason}")), Some(now))
        }
    };
    let held = if status == DeliveryStatus::Queued { to.quiet_until(now) } else { None };
    NewDelivery {
        body,
        status: status.as_str().to_owned(),
        last_error,
        finished_at,
        next_attempt_at: held.unwrap_or(now),
        held: held.map(|_| HELD_QUIET_HOURS.to_owned()),
        ..new_delivery(event, to, max_attempts, now)
    }
}

/// A queued delivery of `event` to `to`, due `now`, with no body yet.
fn new_delivery(event: &Event, to: &Recipient, max_attempts: i32, now: NaiveDateTime) -> NewDelivery {
    NewDelivery {
        id: new_id(IdKind::Delivery),
        account_id: event.account_id.clone(),
        event_id: event.id.clone(),
        endpoint_id: to.id.clone(),
        watch_id: event.watch_id.clone(),
        event_type: event.event_type.clone(),
        body: Vec::new(),
        status: DeliveryStatus::Queued.as_str().to_owned(),
        attempts: 0,
        max_attempts: max_attempts.max(1),
        next_attempt_at: now,
        created_at: now,
        updated_at: now,
        limited: to.limited,
        last_error: None,
        finished_at: None,
        held: None,
    }
}

/// Records `event` and queues it for the one endpoint `endpoint_id`, in a transaction; returns
/// the delivery (for test events sent on request).
pub fn enqueue_for_endpoint(
    conn: &mut DbConn,
    render: &dyn Render,
    event: &Event,
    endpoint_id: &str,
    default_max_attempts: i32,
    now: NaiveDateTime,
) -> StoreResult<Option<crate::Delivery>> {
    conn.transaction(|conn| {
        diesel::insert_into(events::table).values(event).execute(conn)?;
        let Some(row) = delivery_rows(conn, render, event, Target::One(endpoint_id), default_max_attempts, now)?.pop()
        else {
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
    /// The event (each endpoint's body is rendered from it at enqueue; see [`crate::render`]).
    pub event: Event,
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
    render: &dyn Render,
    items: &[ForEndpoint],
) -> StoreResult<Vec<StoreResult<Option<crate::Delivery>>>> {
    match conn.transaction(|conn| enqueue_all_for_endpoints(conn, render, items)) {
        Ok(queued) => Ok(queued.into_iter().map(Ok).collect()),
        Err(e) if items.len() > 1 => {
            tracing::debug!(error = %e, items = items.len(), "a batch of events failed; queueing them one by one");
            Ok(items
                .iter()
                .map(|i| enqueue_for_endpoint(conn, render, &i.event, &i.endpoint_id, i.default_max_attempts, i.now))
                .collect())
        }
        Err(e) => Ok(vec![Err(e)]),
    }
}

/// The body of [`enqueue_each_for_endpoint`]'s one transaction.
fn enqueue_all_for_endpoints(
    conn: &mut DbConn,
    render: &dyn Render,
    items: &[ForEndpoint],
) -> StoreResult<Vec<Option<crate::Delivery>>> {
    let rows: Vec<Event> = items.iter().map(|i| i.event.clone()).collect();
    crate::insert_all!(conn, events::table, rows);
    let mut ids: Vec<&str> = items.iter().map(|i| i.endpoint_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let targets: HashMap<String, (String, Recipient)> = endpoints::table
        .inner_join(accounts::table)
        .filter(endpoints::id.eq_any(&ids))
        .select((endpoints::account_id, recipient_columns()))
        .load::<(String, Recipient)>(conn)?
        .into_iter()
        .map(|(account, target)| (target.id.clone(), (account, target)))
        .collect();
    let routes = watch_routes(conn, items.iter().map(|i| &i.event))?;
    let rows: Vec<NewDelivery> = items
        .iter()
        .filter_map(|i| {
            let (account, to) = targets.get(&i.endpoint_id)?;
            let tags = i.event.watch_id.as_ref().and_then(|id| routes.get(id)).map_or("", |w| w.tags.as_str());
            (*account == i.event.account_id).then(|| {
                delivery_row(
                    render,
                    &i.event,
                    to,
                    to.max_attempts.unwrap_or(i.default_max_attempts),
                    tags,
                    false,
                    i.now,
                )
            })
        })
        .collect();
    crate::insert_all!(conn, deliveries::table, rows);
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let mut stored: HashMap<String, crate::Delivery> = deliveries::table
        .filter(deliveries::id.eq_any(&ids))
        .select(crate::Delivery::as_select())
        .load::<crate::Delivery>(conn)?
        .into_iter()
        .map(|d| (d.event_id.clone(), d))
        .collect();
    Ok(items.iter().map(|i| stored.remove(&i.event.id)).collect())
}
