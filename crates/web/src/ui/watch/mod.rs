//! A watch's page: its timeline of changes (with a language model's verdict on each, for a
//! watch that asks for one), the diff (from what this user last saw, or any two snapshots;
//! inline or side by side) with how the page looks before and after when it keeps
//! screenshots, its runs and its deliveries (the images themselves are served by
//! [`super::screenshots`]).

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use driftwatch_core::{EventType, ScreenshotMode, WatchOptions};
use driftwatch_store::deliveries::{self, DeliveryFilter};
use driftwatch_store::snapshots::{self, SnapshotInfo};
use driftwatch_store::watches;
use driftwatch_store::{
    DbConn, Event, Page, Run, Snapshot, StoreResult, Verdict, Watch, events, runs, users, verdicts,
};
use serde::Deserialize;

use crate::AppState;
use crate::ui::diff::{Block, blocks};
use crate::ui::error::UiError;
use crate::ui::flash;
use crate::ui::layout::{Layout, html};
use crate::ui::present::{DeliveryRow, When, badge, delivery_row, percent, tags_of};
use crate::ui::session::Viewer;
use crate::ui::verdict::VerdictView;

mod actions;
mod engine;
mod expectation;
pub(super) mod session;

pub use actions::{apply, check, confirm_delete, delete, export, mute, pause, release, resume, unmute, values_csv};
use engine::{EngineView, engine_view};
use expectation::{ExpectView, expect_view};

/// Snapshots listed in the timeline.
const TIMELINE: i64 = 50;
/// Runs listed.
const RUNS: i64 = 20;
/// Deliveries listed.
const DELIVERIES: i64 = 10;
/// Screenshots shown in the strip.
const SHOTS: usize = 6;
/// Most readings a value chart draws (the newest).
const SERIES: i64 = 500;

/// A snapshot in the timeline.
#[derive(Debug, Clone)]
pub struct TimelineItem {
    /// `snp_...`.
    pub id: String,
    /// When it was taken.
    pub at: When,
    /// Lines added by the change that made it (none for a baseline or a change without alert).
    pub added: Option<i32>,
    /// Lines removed.
    pub removed: Option<i32>,
    /// The snapshot before it, to compare with.
    pub previous: Option<String>,
    /// Shown in the diff now (as either side).
    pub shown: bool,
    /// Newer than what this user had seen.
    pub unseen: bool,
    /// Why its change alerted no one (noise rules or conditions), when it did not.
    pub kept_quiet: Option<String>,
    /// A language model's verdict on its change, for a watch that asks for one.
    pub verdict: Option<VerdictView>,
}

/// A run in the log.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// When it started.
    pub at: When,
    /// `changed`, `unchanged`, `failed`, ...
    pub outcome: String,
    /// HTTP status of the page.
    pub http_status: Option<i32>,
    /// Duration in ms.
    pub duration_ms: i64,
    /// The error, or why a change raised no alert.
    pub detail: Option<String>,
    /// The browser rendered the page.
    pub browser: bool,
    /// The kind of failure (`timeout`, `step`, ...).
    pub error_kind: Option<String>,
}

/// A screenshot in the strip.
#[derive(Debug, Clone)]
pub struct ShotItem {
    /// The snapshot it belongs to.
    pub id: String,
    /// When it was taken.
    pub at: When,
    /// How much it differs from the screenshot before it (`4.2%`), when measured.
    pub change: Option<String>,
}

/// How the page looks before and after the change shown.
#[derive(Debug, Clone)]
pub struct VisualView {
    /// The snapshot with the older screenshot.
    pub before: String,
    /// Its time.
    pub before_at: When,
    /// The snapshot with the newer screenshot (the newer side of the diff).
    pub after: String,
    /// Its time.
    pub after_at: When,
    /// Share of pixels that differ (`4.2%`), when the check measured it.
    pub change: Option<String>,
}

/// The diff shown.
#[derive(Debug, Clone)]
pub struct DiffView {
    /// Older side.
    pub from: String,
    /// Newer side.
    pub to: String,
    /// Older side's time.
    pub from_at: When,
    /// Newer side's time.
    pub to_at: When,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The hunks.
    pub blocks: Vec<Block>,
    /// Opened from what this user last saw.
    pub from_seen: bool,
    /// The diff was cut at its limits (the counts are exact).
    pub truncated: bool,
}

#[derive(Template)]
#[template(path = "watch.html")]
struct WatchPage {
    layout: Layout,
    watch: Watch,
    badge: &'static str,
    tags: Vec<String>,
    schedule: String,
    checked: Option<When>,
    next: Option<When>,
    paused: bool,
    timeline: Vec<TimelineItem>,
    diff: Option<DiffView>,
    side: bool,
    content: Option<String>,
    runs: Vec<RunRow>,
    deliveries: Vec<DeliveryRow>,
    /// `None` when the watch keeps no screenshots: nothing of them shows.
    shots: Option<Vec<ShotItem>>,
    /// Whole-window screenshots (all of one size), rather than whole pages.
    viewport: bool,
    visual: Option<VisualView>,
    engine: Option<EngineView>,
    /// Where its events go: (endpoint id, what to call it).
    delivered_to: Vec<(String, String)>,
    /// A chart per numeric value.
    charts: Vec<crate::ui::chart::Chart>,
    /// Every value's latest reading: (name, as people read it).
    latest_values: Vec<(String, String)>,
    /// What a language model is asked about each change, when the watch asks (`None`
    /// without an intent; `Some("")` for a summary only).
    intent: Option<String>,
    /// A bot wall or a lost session, when the health says so.
    trouble: Option<engine::TroubleView>,
    /// The kept session, and the import of a `cookies.txt`.
    session: session::SessionView,
    /// Its expectation's deadline and standing, when it has one.
    expectation: Option<ExpectView>,
}

/// Query of the watch page.
#[derive(Debug, Default, Deserialize)]
pub struct WatchQuery {
    /// Older snapshot of the diff.
    #[serde(default)]
    from: String,
    /// Newer snapshot of the diff.
    #[serde(default)]
    to: String,
    /// `side` for side by side.
    #[serde(default)]
    view: String,
}

/// The viewer's watch `id`, or the 404 page.
pub async fn find(state: &AppState, viewer: &Viewer, id: &str) -> Result<Watch, UiError> {
    let (account, id) = (viewer.account_id().to_owned(), id.to_owned());
    state.store.read(move |c| watches::get_watch(c, &account, &id)).await?.ok_or(UiError::NotFound("watch"))
}

/// How a watch's schedule reads.
pub fn schedule_text(watch: &Watch) -> String {
    match (&watch.cron, watch.interval_seconds) {
        (Some(cron), _) => format!("cron {cron} ({})", watch.time_zone.as_deref().unwrap_or("UTC")),
        (None, Some(seconds)) => format!("every {}", super::present::human_seconds(seconds.max(0) as u64)),
        (None, None) => "no schedule".to_owned(),
    }
}

struct Loaded {
    snapshots: Vec<SnapshotInfo>,
    changes: Vec<Event>,
    runs: Vec<Run>,
    deliveries: Vec<driftwatch_store::Delivery>,
    seen: Option<String>,
    sides: Option<(Snapshot, Snapshot)>,
    /// The newest snapshot's content when there is nothing to compare it with.
    baseline: Option<String>,
    /// The snapshot with the screenshot before the newer side's, when both have one.
    shot_before: Option<SnapshotInfo>,
    /// The enabled endpoints its events are routed to.
    routed: Vec<driftwatch_store::Endpoint>,
    /// Its values over time, oldest first (empty for a watch without values).
    series: Vec<(chrono::NaiveDateTime, driftwatch_values::Values)>,
    /// The verdicts on its changes, by event id.
    verdicts: HashMap<String, Verdict>,
}

/// What the watch page loads, for the viewer.
struct Wanted {
    account: String,
    user: String,
    watch: Watch,
    /// The diff's sides asked for (empty: the default pair).
    from: String,
    to: String,
    keeps_screenshots: bool,
    has_values: bool,
}

/// Everything the watch page shows from the store, in one read.
fn load(c: &mut DbConn, wanted: Wanted) -> StoreResult<Loaded> {
    let Wanted { account, user, watch, from, to, keeps_screenshots, has_values } = wanted;
    let watch_id = watch.id.clone();
    let snapshots = snapshots::list_snapshots(c, &account, &watch_id, &Page { after: None, limit: TIMELINE })?;
    let changes = events::list_events(
        c,
        &account,
        Some(&watch_id),
        Some(EventType::ChangeDetected),
        &Page { after: None, limit: TIMELINE },
    )?;
    let ids: Vec<&str> = changes.iter().map(|e| e.id.as_str()).collect();
    let verdicts = verdicts::for_events(c, &account, &ids)?;
    let runs = runs::list_runs(c, &account, &watch_id, &Page { after: None, limit: RUNS })?;
    let filter = DeliveryFilter { watch_id: Some(watch_id.clone()), ..DeliveryFilter::default() };
    let deliveries = deliveries::list_deliveries(c, &account, &filter, &Page { after: None, limit: DELIVERIES })?;
    let seen = users::seen_snapshots(c, &user, std::slice::from_ref(&watch_id))?.remove(&watch_id);
    // The diff: the chosen pair; by default from what this user last saw (when that
    // is older than the newest) or else the one before the newest, to the newest.
    let newest = snapshots.first().map(|s| s.id.clone());
    let to_id = if to.is_empty() { newest.clone() } else { Some(to) };
    let from_id = if !from.is_empty() {
        Some(from)
    } else {
        let seen_older = seen.clone().filter(|s| Some(s) != newest.as_ref() && snapshots.iter().any(|x| &x.id == s));
        seen_older.or_else(|| snapshots.get(1).map(|s| s.id.clone()))
    };
    let mut side = |id: Option<String>| -> StoreResult<Option<Snapshot>> {
        match id {
            Some(id) => Ok(snapshots::get_snapshot(c, &account, &id)?.filter(|s| s.watch_id == watch_id)),
            None => Ok(None),
        }
    };
    let sides = match (side(from_id)?, side(to_id)?) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    };
    let baseline = match (&sides, &newest) {
        (None, Some(newest)) => snapshots::get_snapshot(c, &account, newest)?.map(|s| s.content),
        _ => None,
    };
    let shot_before = match &sides {
        Some((_, to)) if keeps_screenshots && to.screenshot_hash.is_some() => {
            snapshots::previous_screenshot(c, &account, &watch_id, &to.id)?
        }
        _ => None,
    };
    let routed = driftwatch_store::endpoints::routed_to(c, &account, &watch)?;
    let series = match has_values {
        true => snapshots::value_series(c, &account, &watch_id, None, SERIES)?
            .into_iter()
            .map(|(_, at, readings)| (at, serde_json::from_str(&readings).unwrap_or_default()))
            .collect(),
        false => Vec::new(),
    };
    Ok(Loaded { snapshots, changes, runs, deliveries, seen, sides, baseline, shot_before, routed, series, verdicts })
}

/// `GET /watches/{id}`.
pub async fn show(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Query(query): Query<WatchQuery>,
) -> Result<Response, UiError> {
    let watch = find(&state, &viewer, &id).await?;
    Ok(html(&watch_page(&state, &viewer, watch, query).await?))
}

/// The watch page of `watch`.
async fn watch_page(state: &AppState, viewer: &Viewer, watch: Watch, query: WatchQuery) -> Result<WatchPage, UiError> {
    let now = state.clock.now().naive_utc();
    // Parsed once for the whole page.
    let options = watch.options();
    let wanted = Wanted {
        account: viewer.account_id().to_owned(),
        user: viewer.user.id.clone(),
        watch: watch.clone(),
        from: query.from.clone(),
        to: query.to.clone(),
        keeps_screenshots: options.fetch.screenshot != ScreenshotMode::Off,
        has_values: !options.values.is_empty(),
    };
    let loaded = state.store.read(move |c| load(c, wanted)).await?;
    // The user has now seen the newest snapshot: a write (on SQLite it takes its turn at the
    // write gate), so only when that is news. Nothing reads `seen_at`.
    if let Some(newest) = loaded.snapshots.first().map(|s| s.id.clone())
        && loaded.seen.as_ref() != Some(&newest)
    {
        let (user, watch_id) = (viewer.user.id.clone(), watch.id.clone());
        state.store.write(move |c| users::mark_seen(c, &user, &watch_id, &newest, now)).await?;
    }
    let notice = flash::take(state, viewer).await?;
    let change = match &loaded.sides {
        Some((from, to)) => Some(crate::snapshot_diff(from, to).await.map_err(|e| UiError::Server(e.to_string()))?),
        None => None,
    };
    let keep = options.fetch.session.as_ref().is_some_and(|s| s.keep);
    let session = session::session_view(state, viewer, &watch.id, keep).await?;
    let mut page = page(state, viewer, (watch, &options), loaded, change, query.view == "side");
    page.layout.notice = notice;
    page.session = session;
    Ok(page)
}

fn page(
    state: &AppState,
    viewer: &Viewer,
    (watch, options): (Watch, &WatchOptions),
    loaded: Loaded,
    change: Option<driftwatch_diff::TextChange>,
    side: bool,
) -> WatchPage {
    let now = state.clock.now();
    let zone = viewer.user.time_zone.as_str();
    let seen = loaded.seen.as_deref();
    let timeline = timeline(&loaded, now, zone);
    let content = loaded.baseline.clone();
    let diff = loaded.sides.as_ref().zip(change).map(|((from, to), change)| {
        let (from_at, to_at) =
            crate::ui::present::range(&When::new(from.created_at, now, zone), &When::new(to.created_at, now, zone));
        DiffView {
            from: from.id.clone(),
            to: to.id.clone(),
            from_at,
            to_at,
            added: change.added,
            removed: change.removed,
            blocks: blocks(&change),
            from_seen: seen == Some(from.id.as_str()),
            truncated: change.truncated,
        }
    });
    let runs = loaded.runs.iter().map(|r| run_row(r, now, zone)).collect();
    let deliveries = loaded.deliveries.iter().map(|d| delivery_row(d, now, zone)).collect();
    let paused = watch.state == driftwatch_core::WatchState::Paused.as_str();
    let fetch = &options.fetch;
    let shots = (fetch.screenshot != ScreenshotMode::Off).then(|| shot_items(&loaded.snapshots, now, zone));
    let visual = loaded.sides.as_ref().zip(loaded.shot_before.as_ref()).map(|((_, after), before)| VisualView {
        before: before.id.clone(),
        before_at: When::new(before.created_at, now, zone),
        after: after.id.clone(),
        after_at: When::new(after.created_at, now, zone),
        change: after.visual_change_percent.map(percent),
    });
    let missing = match state.runner.browsers() {
        Some(browsers) if browsers.available() => None,
        Some(browsers) => Some(browsers.unavailable_reason()),
        None => Some("no browser on this node".to_owned()),
    };
    let engine = engine_view(&watch, options, now, zone, missing);
    WatchPage {
        layout: Layout::signed_in(viewer, "watches", watch.name.clone()),
        badge: badge(&watch),
        tags: tags_of(&watch),
        schedule: schedule_text(&watch),
        checked: watch.last_run_at.map(|t| When::new(t, now, zone)),
        next: (!paused).then(|| When::new(watch.next_run_at, now, zone)),
        paused,
        timeline,
        diff,
        side,
        content,
        runs,
        deliveries,
        shots,
        viewport: fetch.screenshot == ScreenshotMode::Viewport,
        visual,
        engine,
        expectation: expect_view(&watch, options, now, zone),
        delivered_to: loaded
            .routed
            .iter()
            .map(|e| {
                let name = if e.description.is_empty() { e.url.clone() } else { e.description.clone() };
                (e.id.clone(), format!("{name} ({})", e.kind))
            })
            .collect(),
        charts: crate::ui::chart::charts(&options.values, &loaded.series),
        latest_values: match loaded.series.last() {
            Some((_, values)) => values.iter().map(|(name, value)| (name.clone(), value.display())).collect(),
            None => Vec::new(),
        },
        intent: options.ai.as_ref().filter(|ai| ai.active()).map(|ai| ai.intent().unwrap_or_default().to_owned()),
        trouble: engine::trouble_view(&watch, loaded.runs.first()),
        session: session::SessionView::default(),
        watch,
    }
}

/// The timeline: each snapshot, with the change that made it when it alerted.
fn timeline(loaded: &Loaded, now: DateTime<Utc>, zone: &str) -> Vec<TimelineItem> {
    let by_snapshot: HashMap<&str, &Event> =
        loaded.changes.iter().filter_map(|e| e.snapshot_id.as_deref().map(|s| (s, e))).collect();
    let shown: Vec<&str> = loaded.sides.iter().flat_map(|(a, b)| [a.id.as_str(), b.id.as_str()]).collect();
    let seen = loaded.seen.as_deref();
    loaded
        .snapshots
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let change = by_snapshot.get(s.id.as_str());
            TimelineItem {
                id: s.id.clone(),
                at: When::new(s.created_at, now, zone),
                added: change.map(|e| e.added),
                removed: change.map(|e| e.removed),
                previous: loaded.snapshots.get(i + 1).map(|p| p.id.clone()),
                shown: shown.contains(&s.id.as_str()),
                unseen: seen.is_some_and(|seen| s.id.as_str() > seen),
                kept_quiet: s.kept_quiet.clone(),
                verdict: change.and_then(|e| loaded.verdicts.get(&e.id)).map(|v| VerdictView::of(v, now, zone)),
            }
        })
        .collect()
}

/// The strip: the newest snapshots' screenshots.
fn shot_items(snapshots: &[SnapshotInfo], now: DateTime<Utc>, zone: &str) -> Vec<ShotItem> {
    snapshots
        .iter()
        .filter(|s| s.screenshot_hash.is_some())
        .take(SHOTS)
        .map(|s| ShotItem {
            id: s.id.clone(),
            at: When::new(s.created_at, now, zone),
            change: s.visual_change_percent.map(percent),
        })
        .collect()
}

/// A run in the log.
fn run_row(r: &Run, now: DateTime<Utc>, zone: &str) -> RunRow {
    RunRow {
        at: When::new(r.started_at, now, zone),
        outcome: r.outcome.clone(),
        http_status: r.http_status,
        duration_ms: r.duration_ms,
        // Both: a failure's cause is often in the note ("no browser is available").
        detail: match (&r.error, &r.note) {
            (Some(error), Some(note)) => Some(format!("{error} ({note})")),
            (error, note) => error.clone().or_else(|| note.clone()),
        },
        browser: r.engine.as_deref() == Some("browser"),
        error_kind: r.error_kind.clone(),
    }
}
