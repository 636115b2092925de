//! Watches, their runs and snapshots, and a diff between two snapshots.

use chrono::{DateTime, NaiveDateTime, Utc};
use driftwatch_core::{RunOutcome, WatchHealth, WatchState};
use driftwatch_store as store;
use serde::Serialize;
use utoipa::ToSchema;

use super::utc;

/// A watch.
#[derive(Debug, Serialize, ToSchema)]
pub struct Watch {
    /// `wat_...`.
    id: String,
    /// A name for people.
    name: String,
    /// The page.
    url: String,
    /// CSS selector of the part that matters; null for the whole page.
    selector: Option<String>,
    /// Checked every this many seconds (null with a cron schedule).
    interval_seconds: Option<i64>,
    /// Cron schedule (null with an interval).
    cron: Option<String>,
    /// Time zone of the cron schedule.
    time_zone: Option<String>,
    /// `active` (checked on schedule) or `paused`.
    #[schema(value_type = WatchState)]
    state: String,
    /// Whether recent checks succeed.
    #[schema(value_type = WatchHealth)]
    health: String,
    /// How the page is fetched, extracted and compared.
    options: driftwatch_core::WatchOptions,
    /// When the next scheduled check is due.
    next_run_at: DateTime<Utc>,
    /// When it was last checked.
    last_run_at: Option<DateTime<Utc>>,
    /// Failed checks in a row.
    consecutive_failures: i32,
    /// An `auto` watch whose page needed the browser: since when HTTP last fell short (null
    /// while HTTP does). A day after it, HTTP is tried again.
    browser_since: Option<DateTime<Utc>>,
    /// The engine its next check uses: `http` or `browser` (for `auto`, the browser within a
    /// day of `browser_since`, else HTTP).
    engine_in_use: String,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last change by a request.
    updated_at: DateTime<Utc>,
    /// Tags, sorted.
    tags: Vec<String>,
    /// Muted: checked and recorded, but nothing delivered.
    muted: bool,
    /// Where its expectation (`options.expect`) stands; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    expectation: Option<Expectation>,
    /// Where its events go: the enabled endpoints routed to it (none while muted). Only in
    /// the answer for one watch.
    #[serde(skip_serializing_if = "Option::is_none")]
    delivered_to: Option<Vec<DeliveredTo>>,
}

/// Where a watch's expectation stands.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = WatchExpectation)]
pub struct Expectation {
    /// `change` (the page must change by a deadline) or `values` (its values must meet
    /// conditions).
    kind: &'static str,
    /// What is expected, in words.
    rule: String,
    /// The deadline the page must change by (null when none is armed, or for values).
    deadline: Option<DateTime<Utc>>,
    /// `waiting`, `missed` (the deadline passed without a change), `holds` or `broken` (the
    /// values do not meet it).
    state: driftwatch_core::expect::Standing,
    /// When the deadline was missed (null unless `missed`).
    missed_at: Option<DateTime<Utc>>,
}

impl Expectation {
    /// Where `w`'s expectation stands, when it has one.
    pub fn of(w: &store::Watch, options: &driftwatch_core::WatchOptions, now: NaiveDateTime) -> Option<Expectation> {
        let expect = options.expect.as_ref()?;
        Some(Expectation {
            kind: expect.kind(),
            rule: expect.describe(now.and_utc()),
            deadline: w.expect_due_at.filter(|_| expect.kind() == "change").map(utc),
            state: expect.standing(w.expect_missed_at.is_some(), w.expect_holds),
            missed_at: w.expect_missed_at.map(utc),
        })
    }
}

/// An endpoint a watch's events go to.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveredTo {
    /// `end_...`.
    id: String,
    /// Its kind.
    #[schema(value_type = driftwatch_channels::EndpointKind)]
    kind: String,
    /// Its note for people.
    description: String,
    /// The event types it receives; null for all.
    #[schema(value_type = Option<Vec<driftwatch_core::EventType>>)]
    event_types: Option<Vec<String>>,
}

impl Watch {
    /// With where its events go.
    pub fn delivered_to(mut self, endpoints: Vec<store::Endpoint>) -> Watch {
        let to = if self.muted { Vec::new() } else { endpoints };
        self.delivered_to = Some(
            to.into_iter()
                .map(|e| DeliveredTo {
                    id: e.id,
                    kind: e.kind,
                    description: e.description,
                    event_types: e
                        .event_types
                        .map(|t| t.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()),
                })
                .collect(),
        );
        self
    }
}

impl Watch {
    /// The watch as it stands at `now` (the engine its checks use depends on it).
    pub fn at(w: store::Watch, now: NaiveDateTime) -> Watch {
        let options = w.options();
        let engine_in_use = w.engine_in_use(&options, now).as_str().to_owned();
        Watch {
            expectation: Expectation::of(&w, &options, now),
            tags: w.tag_list().into_iter().map(str::to_owned).collect(),
            muted: w.muted,
            delivered_to: None,
            id: w.id,
            name: w.name,
            url: w.url,
            selector: w.selector,
            interval_seconds: w.interval_seconds,
            cron: w.cron,
            time_zone: w.time_zone,
            state: w.state,
            health: w.health,
            options,
            next_run_at: utc(w.next_run_at),
            last_run_at: w.last_run_at.map(utc),
            consecutive_failures: w.consecutive_failures,
            engine_in_use,
            browser_since: w.browser_since.map(utc),
            created_at: utc(w.created_at),
            updated_at: utc(w.updated_at),
        }
    }
}

/// One check of a watch.
#[derive(Debug, Serialize, ToSchema)]
pub struct Run {
    /// `run_...`.
    id: String,
    /// The watch checked.
    watch_id: String,
    /// What the check found.
    #[schema(value_type = RunOutcome)]
    outcome: String,
    /// The page's HTTP status, when one came.
    http_status: Option<i32>,
    /// How long the check took.
    duration_ms: i64,
    /// Size of the page body.
    bytes: i64,
    /// Why the check failed.
    error: Option<String>,
    /// Why a change raised no alert (noise rules), or other detail.
    note: Option<String>,
    /// The snapshot the check recorded (baseline or change).
    snapshot_id: Option<String>,
    /// The event the check raised.
    event_id: Option<String>,
    /// What loaded the page: `http` or `browser`.
    engine: Option<String>,
    /// The kind of failure: `target`, `timeout`, `connect`, `status`, `too_large`, `fetch`,
    /// `extract`, `selector_missing`, `rules`, `empty`, `browser`, `load`, `wait`, `step`,
    /// `crashed` (the page crashed the browser's renderer twice), `blocked` (a bot wall: `error`
    /// names who put it up and what gave it away), `proxy`, `login_required`.
    error_kind: Option<String>,
    /// Start time.
    started_at: DateTime<Utc>,
    /// End time.
    finished_at: DateTime<Utc>,
}

impl From<store::Run> for Run {
    fn from(r: store::Run) -> Run {
        Run {
            id: r.id,
            watch_id: r.watch_id,
            outcome: r.outcome,
            http_status: r.http_status,
            duration_ms: r.duration_ms,
            bytes: r.bytes,
            error: r.error,
            note: r.note,
            snapshot_id: r.snapshot_id,
            event_id: r.event_id,
            engine: r.engine,
            error_kind: r.error_kind,
            started_at: utc(r.started_at),
            finished_at: utc(r.finished_at),
        }
    }
}

/// A snapshot; `content` only on the single-resource read.
#[derive(Debug, Serialize, ToSchema)]
pub struct Snapshot {
    /// `snp_...`.
    id: String,
    /// The watch.
    watch_id: String,
    /// SHA-256 of the content (and of its values, for a watch with values).
    content_hash: String,
    /// The extracted text; only on `GET /snapshots/{id}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    /// When it was recorded.
    created_at: DateTime<Utc>,
    /// Where its screenshot is (`/api/v1/watches/{id}/snapshots/{sid}/screenshot`), when one
    /// was kept.
    screenshot: Option<String>,
    /// Share of the screenshot's pixels that differ from the previous snapshot's, in percent
    /// (when the watch compares how the page looks).
    visual_change_percent: Option<f64>,
    /// The watch's values read with it, by name (`{"price": {"type": "money", "amount": 44.0,
    /// "currency": "EUR"}}`); absent for a watch without values.
    #[serde(skip_serializing_if = "Option::is_none")]
    values: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    /// Why the change that made this snapshot alerted no one (the noise rules or the watch's
    /// conditions: `"price 67.00 EUR is not below 50"`); `null` when it alerted, and for a
    /// baseline.
    kept_quiet: Option<String>,
}

/// Stored readings as JSON (absent when none or unreadable).
fn readings(stored: Option<&str>) -> Option<std::collections::BTreeMap<String, serde_json::Value>> {
    stored.and_then(|r| serde_json::from_str(r).ok())
}

/// The path a snapshot's screenshot is served at.
fn screenshot_path(watch_id: &str, snapshot_id: &str, hash: Option<&String>) -> Option<String> {
    hash.map(|_| format!("/api/v1/watches/{watch_id}/snapshots/{snapshot_id}/screenshot"))
}

impl From<store::Snapshot> for Snapshot {
    fn from(s: store::Snapshot) -> Snapshot {
        Snapshot {
            screenshot: screenshot_path(&s.watch_id, &s.id, s.screenshot_hash.as_ref()),
            visual_change_percent: s.visual_change_percent,
            id: s.id,
            watch_id: s.watch_id,
            content_hash: s.content_hash,
            values: readings(s.readings.as_deref()),
            kept_quiet: s.kept_quiet,
            content: Some(s.content),
            created_at: utc(s.created_at),
        }
    }
}

impl From<store::snapshots::SnapshotInfo> for Snapshot {
    fn from(s: store::snapshots::SnapshotInfo) -> Snapshot {
        Snapshot {
            screenshot: screenshot_path(&s.watch_id, &s.id, s.screenshot_hash.as_ref()),
            visual_change_percent: s.visual_change_percent,
            id: s.id,
            watch_id: s.watch_id,
            content_hash: s.content_hash,
            values: readings(s.readings.as_deref()),
            kept_quiet: s.kept_quiet,
            content: None,
            created_at: utc(s.created_at),
        }
    }
}

/// The difference between two snapshots of a watch.
#[derive(Debug, Serialize, ToSchema)]
pub struct Diff {
    /// The older snapshot.
    pub from: String,
    /// The newer snapshot.
    pub to: String,
    /// Lines, hunks and the unified text.
    #[serde(flatten)]
    pub change: driftwatch_diff::TextChange,
}
