//! Version 1 of the payload: `{"type", "timestamp", "data"}`, where `data` depends on the type.
//! On the wire every object's keys are sorted (`data`, `timestamp`, `type`), as they always were.

use driftwatch_core::EventType;
use driftwatch_diff::Hunk;
use serde::{Deserialize, Serialize};

/// Every event: its type, when it happened (RFC 3339, milliseconds, UTC) and its data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<D> {
    /// The event type (`change.detected`, `check.failed`, ...).
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// When it happened.
    pub timestamp: String,
    /// What happened.
    pub data: D,
}

/// The watch an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadWatch)]
pub struct Watch {
    /// `wat_...`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// Its URL.
    pub url: String,
}

/// `change.detected`: the watched text changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadChangeDetected)]
pub struct ChangeDetected {
    /// `evt_...`.
    pub event_id: String,
    /// The watch.
    pub watch: Watch,
    /// What changed.
    pub diff: Diff,
    /// The snapshots on both sides.
    pub snapshots: Snapshots,
    /// How the page was rendered, when a browser rendered it (absent for HTTP watches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<Render>,
    /// The watch's values that moved (absent for watches without values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<ValueChange>,
    /// What a language model made of the change, for a watch with `options.ai` (absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai: Option<Ai>,
}

/// A language model's verdict on a change: whether it matters for the watch's intent, why, and
/// a summary. Without a verdict (the model failed past the deadline, the account's daily token
/// budget is spent, no model is configured) `error` says why and the change went out anyway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadAi)]
pub struct Ai {
    /// Whether the change matters for the intent (absent without an intent or a verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub important: Option<bool>,
    /// Why, in one or two sentences (absent without an intent or a verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What changed, in a sentence or two (absent without a verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The model asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Why there is no verdict, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One value that moved (`{"name": "price", "from": 89.99, "to": 67.0, "currency": "EUR",
/// "change_percent": -25.55}`): the values crate's own type, part of this contract.
pub use driftwatch_values::ValueChange;

/// `condition.met`, `condition.cleared`: a watch's conditions started or stopped holding.
///
/// When the check that crossed found a change, the event carries it as `change.detected` would
/// (`diff`, `snapshots`, `render`, `values`): by default a watch with conditions tells that
/// change by this event alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadConditionEvent)]
pub struct ConditionEvent {
    /// `evt_...`.
    pub event_id: String,
    /// The watch.
    pub watch: Watch,
    /// Whether the conditions hold now.
    pub holds: bool,
    /// Why, one sentence per deciding rule ("price 44.00 EUR is below 45").
    pub reasons: Vec<String>,
    /// Every value read on this check, plain, by name (`{"price": 44.0}`). Bodies written before
    /// `readings` existed read back without it.
    #[serde(default)]
    pub readings: std::collections::BTreeMap<String, serde_json::Value>,
    /// The values that moved since the snapshot before, as in `change.detected` (absent when
    /// none did). Bodies written before one shape of `values` held the readings here as a map;
    /// they read back with no moved values.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "moved_or_legacy_map")]
    pub values: Vec<ValueChange>,
    /// The snapshot the conditions were judged on.
    pub snapshot: Option<String>,
    /// The change the check found, when it found one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<Diff>,
    /// The snapshots on both sides of that change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshots: Option<Snapshots>,
    /// How the page was rendered, when a browser rendered the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub render: Option<Render>,
}

/// `values` as written now (a list of moved values), or as `condition.*` events wrote it before
/// (a map of every reading), which carries no moved values.
fn moved_or_legacy_map<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<ValueChange>, D::Error> {
    match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::Object(_) => Ok(Vec::new()),
        moved => serde_json::from_value(moved).map_err(serde::de::Error::custom),
    }
}

impl ConditionEvent {
    /// This event carrying `change`, the change its check found: its diff, snapshots, render
    /// and the values that moved.
    pub fn with_change(self, change: ChangeDetected) -> ConditionEvent {
        ConditionEvent {
            diff: Some(change.diff),
            snapshots: Some(change.snapshots),
            render: change.render,
            values: change.values,
            ..self
        }
    }
}

/// A change seen in a browser: whether a screenshot was kept, where to fetch it, and how much
/// it differs from the previous one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadRender)]
pub struct Render {
    /// Always `true`: the page was rendered in a browser.
    pub browser: bool,
    /// Path of the new snapshot's screenshot (`/api/v1/watches/{id}/snapshots/{sid}/screenshot`),
    /// fetched with the owner's token; never the image itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
    /// Path of the previous snapshot's screenshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_screenshot: Option<String>,
    /// Share of pixels that differ between the two screenshots, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visual_change_percent: Option<f64>,
}

/// A change's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadDiff)]
pub struct Diff {
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// A unified diff.
    pub unified: String,
    /// The same hunks as data.
    pub hunks: Vec<Hunk>,
    /// Present and true when `unified` or `hunks` were cut to keep the body small (at most
    /// 64 KiB of each; the counts are exact); `full_diff` then says where the whole diff is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// The API path of the whole diff (`GET`, with a token of the account), when cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_diff: Option<String>,
}

/// The snapshot ids on both sides of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadSnapshots)]
pub struct Snapshots {
    /// Before.
    pub previous: String,
    /// After.
    pub current: String,
}

/// `check.failed`, `check.selector_missing`, `check.value_missing`, `check.blocked`,
/// `check.login_required`, `check.recovered`: a watch's health changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadCheckEvent)]
pub struct CheckEvent {
    /// `evt_...`.
    pub event_id: String,
    /// The watch.
    pub watch: Watch,
    /// The check that changed its health.
    pub check: Check,
}

/// The check behind a health event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadCheck)]
pub struct Check {
    /// `run_...`.
    pub run_id: String,
    /// The page's status, when it answered.
    pub http_status: Option<i32>,
    /// Why the check failed (`null` on recovery).
    pub error: Option<String>,
    /// Failed checks in a row.
    pub consecutive_failures: i32,
    /// On `check.blocked`: who put up the wall: `cloudflare`, `akamai`, `perimeterx`,
    /// `datadome`, `imperva`, `queue` (a queue or waiting room), `captcha` (anyone else's
    /// CAPTCHA page), `aws_waf`, `vercel`, `sucuri` or `kasada`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
}

/// `endpoint.disabled`, `endpoint.test`: about an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadEndpointEvent)]
pub struct EndpointEvent {
    /// `evt_...`.
    pub event_id: String,
    /// The endpoint.
    pub endpoint: Endpoint,
    /// Why it was disabled (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The endpoint an endpoint event is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadEndpoint)]
pub struct Endpoint {
    /// `end_...`.
    pub id: String,
    /// Its URL.
    pub url: String,
    /// Its description.
    pub description: String,
}

/// `expectation.missed`, `expectation.met`: a watch broke what it was expected to do (change by
/// a deadline, or keep its values within conditions), or does it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadExpectationEvent)]
pub struct ExpectationEvent {
    /// `evt_...`.
    pub event_id: String,
    /// The watch.
    pub watch: Watch,
    /// What was expected and how it went.
    pub expectation: Expectation,
}

/// A watch's expectation, as an expectation event tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadExpectation)]
pub struct Expectation {
    /// `change` (the page must change by a deadline) or `values` (its values must meet
    /// conditions).
    pub kind: String,
    /// What is expected, in words ("a change within 7 days", "price below 50").
    pub rule: String,
    /// Whether the expectation holds now (`false` on `expectation.missed`).
    pub holds: bool,
    /// For `change`: the deadline that passed (on `.missed`) or the next one (on `.met`), RFC
    /// 3339 in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// For `change`: when the page last changed before this event, RFC 3339 in UTC (absent when
    /// it has not changed since its first check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_change: Option<String>,
    /// Why, one sentence per deciding rule.
    #[serde(default)]
    pub reasons: Vec<String>,
    /// The snapshot the event was decided on, when a check decided it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
}

/// `digest`: the events an endpoint gathered over one period, sent as one message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadDigest)]
pub struct Digest {
    /// `evt_...` (the digest's own id).
    pub event_id: String,
    /// The endpoint that gathers.
    pub endpoint: Endpoint,
    /// The period the digest covers.
    pub period: Period,
    /// How many events the period gathered.
    pub count: usize,
    /// The gathered events, oldest first, each the body it would have had alone (`type`,
    /// `timestamp`, `data`). At most a digest's cap; `omitted` counts the rest.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<serde_json::Value>,
    /// Events gathered but left out of `events` (the newest beyond the cap).
    pub omitted: usize,
    /// A language model's summary of the period, when the account has a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// The period a digest covers: after `start`, up to and including `end`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = PayloadPeriod)]
pub struct Period {
    /// Its start, RFC 3339 in UTC.
    pub start: String,
    /// Its end, RFC 3339 in UTC.
    pub end: String,
}

/// A stored payload, read back by its type.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// `change.detected`.
    Change(Envelope<ChangeDetected>),
    /// A watch health event.
    Check(Envelope<CheckEvent>),
    /// An endpoint event.
    Endpoint(Envelope<EndpointEvent>),
    /// `condition.met` or `condition.cleared`.
    Condition(Envelope<ConditionEvent>),
    /// `expectation.missed` or `expectation.met`.
    Expectation(Envelope<ExpectationEvent>),
    /// `digest`.
    Digest(Envelope<Digest>),
}

impl Payload {
    /// Reads a body this crate rendered; `None` for anything else.
    pub fn parse(body: &str) -> Option<Payload> {
        let head: Envelope<serde::de::IgnoredAny> = serde_json::from_str(body).ok()?;
        Some(match head.event_type {
            EventType::ChangeDetected => Payload::Change(serde_json::from_str(body).ok()?),
            EventType::CheckFailed
            | EventType::SelectorMissing
            | EventType::ValueMissing
            | EventType::CheckRecovered
            | EventType::CheckBlocked
            | EventType::LoginRequired => Payload::Check(serde_json::from_str(body).ok()?),
            EventType::EndpointDisabled | EventType::EndpointTest => {
                Payload::Endpoint(serde_json::from_str(body).ok()?)
            }
            EventType::ConditionMet | EventType::ConditionCleared => {
                Payload::Condition(serde_json::from_str(body).ok()?)
            }
            EventType::ExpectationMissed | EventType::ExpectationMet => {
                Payload::Expectation(serde_json::from_str(body).ok()?)
            }
            EventType::Digest => Payload::Digest(serde_json::from_str(body).ok()?),
        })
    }
}
