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
    /// For a change of a watch with `options.ai`: the language model's verdict on it, or where
    /// the verdict stands. Left out for every other event.
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<Verdict>,
}

/// A language model's verdict on a change (or where it stands).
#[derive(Debug, Serialize, ToSchema)]
pub struct Verdict {
    /// `pending` (waiting for the model), `judged`, `unjudged` (no verdict came; delivered
    /// without one), `held` (no verdict came and the watch holds such changes: not delivered
    /// until released) or `released` (a held change sent by hand).
    #[schema(pattern = "^(pending|judged|unjudged|held|released)$")]
    state: String,
    /// Whether the change matters for the watch's intent (null without an intent or a verdict).
    important: Option<bool>,
    /// Why, in the model's words.
    reason: Option<String>,
    /// What changed, in the model's words.
    summary: Option<String>,
    /// The model that answered (or was asked).
    model: Option<String>,
    /// Why there is no verdict, or the last failed try's error.
    error: Option<String>,
    /// Model calls tried so far that failed.
    attempts: i32,
    /// When the model is asked next; only while `pending`.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_attempt_at: Option<DateTime<Utc>>,
    /// Tokens the verdict cost (0 when it came from the cache).
    tokens: i64,
    /// Whether the verdict came from the cache.
    cached: bool,
    /// When it was decided (null while pending).
    decided_at: Option<DateTime<Utc>>,
}

impl From<store::Verdict> for Verdict {
    fn from(v: store::Verdict) -> Verdict {
        let pending = v.state() == store::VerdictState::Pending;
        Verdict {
            state: v.state().as_str().to_owned(),
            important: v.important,
            reason: v.reason,
            summary: v.summary_text,
            model: v.model,
            error: v.error,
            attempts: v.attempts,
            next_attempt_at: pending.then(|| utc(v.next_attempt_at)),
            tokens: v.tokens,
            cached: v.cached,
            decided_at: v.decided_at.map(utc),
        }
    }
}

impl Event {
    /// The event with its verdict, when it has one.
    pub fn with_verdict(event: store::Event, verdict: Option<store::Verdict>) -> Event {
        Event { verdict: verdict.map(Verdict::from), ..Event::from(event) }
    }

    /// Events with their verdicts (`verdicts` by event id, as `verdicts::for_events` gives).
    pub fn all_with_verdicts(
        events: Vec<store::Event>,
        mut verdicts: std::collections::HashMap<String, store::Verdict>,
    ) -> Vec<Event> {
        events
            .into_iter()
            .map(|e| {
                let verdict = verdicts.remove(&e.id);
                Event::with_verdict(e, verdict)
            })
            .collect()
    }
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
            verdict: None,
        }
    }
}
