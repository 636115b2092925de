//! Events.

use chrono::{DateTime, Utc};
use driftwatch_core::EventType;
use driftwatch_store as store;
use serde::Serialize;
use utoipa::ToSchema;

use super::utc;

/// An event, with the payload its deliveries carry.
#[derive(Debug, Serialize, ToSchema)]
pub struct Event {
    /// `evt_...`; also a cursor of `GET /changes`.
    id: String,
    /// What happened.
    #[serde(rename = "type")]
    #[schema(value_type = EventType)]
    event_type: String,
    /// The watch it is about, if any.
    watch_id: Option<String>,
    /// The endpoint it is about, if any.
    endpoint_id: Option<String>,
    /// For a change: the snapshot before.
    previous_snapshot_id: Option<String>,
    /// For a change: the snapshot after.
    snapshot_id: Option<String>,
    /// Lines added.
    added: i32,
    /// Lines removed.
    removed: i32,
    /// The JSON body its webhooks carry (with the diff for a change).
    payload: serde_json::Value,
    /// When it happened.
    created_at: DateTime<Utc>,
}

impl From<store::Event> for Event {
    fn from(e: store::Event) -> Event {
        Event {
            id: e.id,
            event_type: e.event_type,
            watch_id: e.watch_id,
            endpoint_id: e.endpoint_id,
            previous_snapshot_id: e.previous_snapshot_id,
            snapshot_id: e.snapshot_id,
            added: e.added,
            removed: e.removed,
            payload: serde_json::from_str(&e.payload).unwrap_or(serde_json::Value::Null),
            created_at: utc(e.created_at),
        }
    }
}
