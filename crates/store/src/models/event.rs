//! Events.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use super::{Endpoint, Watch};
use crate::schema::*;

/// Something that happened to a watch, delivered to endpoints.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = events)]
pub struct Event {
    /// `evt_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The watch, for watch events.
    pub watch_id: Option<String>,
    /// The endpoint, for endpoint events (`endpoint.disabled`, `endpoint.test`).
    pub endpoint_id: Option<String>,
    /// [`driftwatch_core::EventType`].
    pub event_type: String,
    /// The snapshot before the change.
    pub previous_snapshot_id: Option<String>,
    /// The snapshot after the change.
    pub snapshot_id: Option<String>,
    /// Lines added.
    pub added: i32,
    /// Lines removed.
    pub removed: i32,
    /// The JSON payload, exactly as delivered.
    pub payload: String,
    /// When it was raised.
    pub created_at: NaiveDateTime,
}

impl Event {
    /// An event about a watch (`check.failed`, `check.recovered`, ...; [`Event::of_change`] and
    /// [`Event::on_snapshot`] add what a change or a condition event refers to). Every event
    /// row is built by this or [`Event::about_endpoint`].
    pub fn about_watch(
        id: String,
        watch: &Watch,
        event_type: driftwatch_core::EventType,
        payload: String,
        at: NaiveDateTime,
    ) -> Event {
        Event {
            watch_id: Some(watch.id.clone()),
            endpoint_id: None,
            ..Event::bare(id, &watch.account_id, event_type, payload, at)
        }
    }

    /// This event about a change from snapshot `previous` to `current` that added and removed
    /// `lines` (`change.detected`).
    pub fn of_change(self, previous: &str, current: &str, lines: (usize, usize)) -> Event {
        Event {
            previous_snapshot_id: Some(previous.to_owned()),
            snapshot_id: Some(current.to_owned()),
            added: i32::try_from(lines.0).unwrap_or(i32::MAX),
            removed: i32::try_from(lines.1).unwrap_or(i32::MAX),
            ..self
        }
    }

    /// This event judged on the check's `snapshot`, when it kept one (`condition.met`,
    /// `condition.cleared`).
    pub fn on_snapshot(self, snapshot: Option<String>) -> Event {
        Event { snapshot_id: snapshot, ..self }
    }

    /// An event about an endpoint (`endpoint.disabled`, `endpoint.test`) with its payload.
    pub fn about_endpoint(
        id: String,
        endpoint: &Endpoint,
        event_type: driftwatch_core::EventType,
        payload: String,
        at: NaiveDateTime,
    ) -> Event {
        Event {
            endpoint_id: Some(endpoint.id.clone()),
            ..Event::bare(id, &endpoint.account_id, event_type, payload, at)
        }
    }

    fn bare(
        id: String,
        account_id: &str,
        event_type: driftwatch_core::EventType,
        payload: String,
        at: NaiveDateTime,
    ) -> Event {
        Event {
            id,
            account_id: account_id.to_owned(),
            watch_id: None,
            endpoint_id: None,
            event_type: event_type.as_str().to_owned(),
            previous_snapshot_id: None,
            snapshot_id: None,
            added: 0,
            removed: 0,
            payload,
            created_at: at,
        }
    }
}
