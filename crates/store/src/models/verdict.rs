//! Verdicts: a change waiting for, or judged by, a language model.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::*;

/// Where a verdict stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictState {
    /// Waiting for the model.
    Pending,
    /// The model answered (the change was delivered when important, or always for a summary).
    Judged,
    /// No verdict came (deadline, budget, no model, AI off): delivered without one.
    Unjudged,
    /// No verdict came and the watch holds such changes: recorded, not delivered.
    Held,
    /// A held change sent by hand.
    Released,
}

impl VerdictState {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictState::Pending => "pending",
            VerdictState::Judged => "judged",
            VerdictState::Unjudged => "unjudged",
            VerdictState::Held => "held",
            VerdictState::Released => "released",
        }
    }

    /// The state stored as `name` (`None` for a name this version does not know).
    pub fn parse(name: &str) -> Option<VerdictState> {
        Some(match name {
            "pending" => VerdictState::Pending,
            "judged" => VerdictState::Judged,
            "unjudged" => VerdictState::Unjudged,
            "held" => VerdictState::Held,
            "released" => VerdictState::Released,
            _ => return None,
        })
    }
}

/// One change's verdict job and, once decided, its verdict.
#[derive(Debug, Clone, Queryable, Selectable, Insertable, QueryableByName)]
#[diesel(table_name = verdicts)]
pub struct Verdict {
    /// The `change.detected` event judged.
    pub event_id: String,
    /// Its owner.
    pub account_id: String,
    /// Its watch.
    pub watch_id: String,
    /// [`VerdictState`].
    pub state: String,
    /// The intent, word for word, when the change was found; `None` asks for a summary only.
    pub intent: Option<String>,
    /// Whether a summary was asked for.
    pub summary: bool,
    /// Whether a change without a verdict is held rather than delivered.
    pub hold: bool,
    /// Model calls tried.
    pub attempts: i32,
    /// When it is tried next.
    pub next_attempt_at: NaiveDateTime,
    /// Past this, the change goes out without a verdict (or is held).
    pub deadline_at: NaiveDateTime,
    /// The node asking the model now.
    pub lease_owner: Option<String>,
    /// Until when.
    pub lease_until: Option<NaiveDateTime>,
    /// The verdict (absent without an intent or a verdict).
    pub important: Option<bool>,
    /// Why.
    pub reason: Option<String>,
    /// What changed.
    pub summary_text: Option<String>,
    /// The model that answered (or was asked).
    pub model: Option<String>,
    /// Tokens the verdict cost (0 when it came from the cache).
    pub tokens: i64,
    /// Whether it came from the cache.
    pub cached: bool,
    /// The last error, or why there is no verdict.
    pub error: Option<String>,
    /// The attempt budget of the deliveries queued once decided.
    pub max_attempts: i32,
    /// When the change was found.
    pub created_at: NaiveDateTime,
    /// When it was decided.
    pub decided_at: Option<NaiveDateTime>,
}

impl Verdict {
    /// A pending verdict on `event`, due now.
    pub fn pending(
        event: &super::Event,
        ai: &driftwatch_core::AiOptions,
        deadline_at: NaiveDateTime,
        max_attempts: i32,
    ) -> Verdict {
        Verdict {
            event_id: event.id.clone(),
            account_id: event.account_id.clone(),
            watch_id: event.watch_id.clone().unwrap_or_default(),
            state: VerdictState::Pending.as_str().to_owned(),
            intent: ai.intent().map(str::to_owned),
            summary: ai.summary,
            hold: ai.on_error == driftwatch_core::AiOnError::Hold,
            attempts: 0,
            next_attempt_at: event.created_at,
            deadline_at,
            lease_owner: None,
            lease_until: None,
            important: None,
            reason: None,
            summary_text: None,
            model: None,
            tokens: 0,
            cached: false,
            error: None,
            max_attempts,
            created_at: event.created_at,
            decided_at: None,
        }
    }

    /// Its state ([`VerdictState::Pending`] for a name this version does not know).
    pub fn state(&self) -> VerdictState {
        VerdictState::parse(&self.state).unwrap_or(VerdictState::Pending)
    }
}

/// A verdict remembered by its question ([`crate::verdicts::cached`]).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = ai_cache)]
pub struct CachedVerdict {
    /// SHA-256 of prompt version, model, intent and diff.
    pub key: String,
    /// The model that answered.
    pub model: String,
    /// Its verdict.
    pub important: bool,
    /// Why.
    pub reason: String,
    /// What changed.
    pub summary: String,
    /// What it cost when it was asked.
    pub tokens: i64,
    /// When.
    pub created_at: NaiveDateTime,
}
