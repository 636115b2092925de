//! `/watches`: create, read, list, update, delete, pause, resume, check now, runs, snapshots and
//! diffs.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::NaiveDateTime;
use driftwatch_core::{WatchHealth, WatchOptions, WatchState};
use driftwatch_schedule::{CheckError, Timing, TimingError};
use driftwatch_store::watches::{self, WatchChanges, WatchFilter};
use driftwatch_store::{Page, Watch};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::{PageParams, page_of};
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path, Query};
use crate::views::{self, List};

/// Body of `POST /watches`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWatch {
    /// The page: an `http` or `https` URL (private addresses are refused unless the server allows them).
    #[schema(pattern = "^\\s*[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+([/?#][\\s\\S]*)?$", min_length = 1, max_length = 2048)]
    url: String,
    /// A name; the URL when left out.
    #[schema(max_length = 200)]
    name: Option<String>,
    /// A CSS selector of the part that matters; the whole page when left out.
    selector: Option<String>,
    /// Check every this many seconds (at least the server's minimum, 30 by default; at most a year).
    /// The default is hourly when neither this nor `cron` is given.
    #[schema(minimum = 1, maximum = 31_622_400)]
    interval_seconds: Option<i64>,
    /// A cron expression (5 fields, or 6 with seconds) instead of an interval.
    cron: Option<String>,
    /// An IANA time zone for `cron` (UTC when left out).
    time_zone: Option<String>,
    /// Create it paused: no check until resumed.
    paused: Option<bool>,
    /// How to fetch, extract and compare the page.
    options: Option<WatchOptions>,
}

/// Body of `PATCH /watches/{id}`: only the fields given change; `null` clears `selector`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWatch {
    /// A new page; starts a new baseline.
    #[schema(pattern = "^\\s*[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+([/?#][\\s\\S]*)?$", min_length = 1, max_length = 2048)]
    url: Option<String>,
    /// A new name.
    #[schema(min_length = 1, max_length = 200)]
    name: Option<String>,
    /// A new selector, or `null` for the whole page; starts a new baseline.
    #[serde(default, deserialize_with = "crate::extract::present")]
    selector: Option<Option<String>>,
    /// A new interval; replaces a cron schedule.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(minimum = 1, maximum = 31_622_400)]
    interval_seconds: Option<Option<i64>>,
    /// A new cron schedule; replaces an interval.
    #[serde(default, deserialize_with = "crate::extract::present")]
    cron: Option<Option<String>>,
    /// The cron schedule's time zone.
    #[serde(default, deserialize_with = "crate::extract::present")]
    time_zone: Option<Option<String>>,
    /// New options (replacing all of them); starts a new baseline.
    options: Option<WatchOptions>,
}

const MAX_NAME: usize = 200;
const MAX_URL: usize = 2048;
const MAX_INTERVAL: i64 = 366 * 86_400;

/// What a target URL looks like; the schemas of `url` fields say the same (a test holds them
/// together), so the server accepts exactly what the document describes.
pub(crate) const URL_PATTERN: &str = r"^\s*[Hh][Tt][Tt][Pp][Ss]?://[^/?#\s]+([/?#][\s\S]*)?$";

/// Validates a URL that the server will request on the caller's behalf.
pub(super) fn valid_target(state: &AppState, field: &str, raw: &str) -> Result<String, ApiError> {
    if raw.chars().count() > MAX_URL {
        return Err(ApiError::invalid(field, format!("longer than {MAX_URL} characters")));
    }
    let shape = driftwatch_core::compiled_regex(URL_PATTERN).map_err(|e| ApiError::internal(&e))?;
    if !shape.is_match(raw) {
        return Err(ApiError::invalid(field, "must be an http:// or https:// URL with a host"));
    }
    let url = url::Url::parse(raw.trim()).map_err(|e| ApiError::invalid(field, format!("not a valid URL: {e}")))?;
    driftwatch_net::check_url(&url, state.policy).map_err(|e| ApiError::invalid(field, e.to_string()))?;
    Ok(url.to_string())
}

fn valid_name(name: &str) -> Result<String, ApiError> {
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::invalid("name", format!("longer than {MAX_NAME} characters")));
    }
    let name = name.trim();
    if name.is_empty() {
        return Err(ApiError::invalid("name", "must not be empty"));
    }
    Ok(name.to_owned())
}

fn valid_selector(selector: Option<String>) -> Result<Option<String>, ApiError> {
    let selector = selector.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    if let Some(selector) = &selector {
        driftwatch_scrape::validate_selector(selector).map_err(|e| ApiError::invalid("selector", e.to_string()))?;
    }
    Ok(selector)
}

/// Checks extraction, line and noise options (selectors parse, regexes compile); returns them
/// as stored.
fn valid_options(options: &WatchOptions) -> Result<String, ApiError> {
    let fetch = &options.fetch;
    if let Some(method) = &fetch.method {
        if !["GET", "POST", "PUT", "PATCH"].contains(&method.to_ascii_uppercase().as_str()) {
            return Err(ApiError::invalid("options.fetch.method", "must be GET, POST, PUT or PATCH"));
        }
    }
    for (name, value) in &fetch.headers {
        let field = format!("options.fetch.headers.{name}");
        axum::http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ApiError::invalid(&field, "not a valid header name"))?;
        axum::http::HeaderValue::from_str(value).map_err(|_| ApiError::invalid(&field, "not a valid header value"))?;
    }
    for (name, value) in &fetch.cookies {
        if name.is_empty() || name.contains([';', '=', ' ']) || value.contains([';', '\r', '\n']) {
            return Err(ApiError::invalid(&format!("options.fetch.cookies.{name}"), "not a valid cookie"));
        }
    }
    if let Some(agent) = &fetch.user_agent {
        axum::http::HeaderValue::from_str(agent)
            .map_err(|_| ApiError::invalid("options.fetch.user_agent", "not a valid header value"))?;
    }
    if options.noise.confirm_after_seconds.is_some_and(|t| !(1..=60).contains(&t)) {
        return Err(ApiError::invalid("options.noise.confirm_after_seconds", "must be between 1 and 60"));
    }
    if fetch.timeout_seconds.is_some_and(|t| !(1..=300).contains(&t)) {
        return Err(ApiError::invalid("options.fetch.timeout_seconds", "must be between 1 and 300"));
    }
    for (i, selector) in options.extract.remove_selectors.iter().enumerate() {
        driftwatch_scrape::validate_selector(selector)
            .map_err(|e| ApiError::invalid(&format!("options.extract.remove_selectors[{i}]"), e.to_string()))?;
    }
    if let Some(pointer) = options.extract.json_pointer.as_deref() {
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(ApiError::invalid("options.extract.json_pointer", "a JSON Pointer starts with `/`"));
        }
    }
    driftwatch_scrape::Rules::new(&options.rules)
        .map_err(|e| ApiError::invalid(&format!("options.{}", e.field), e.message))?;
    driftwatch_alert::Noise::new(&options.noise)
        .map_err(|e| ApiError::invalid(&format!("options.{}", e.field), e.message))?;
    serde_json::to_string(options).map_err(|e| ApiError::internal(&e))
}

/// Checks a schedule against the API's limits; returns it parsed.
fn valid_timing(
    state: &AppState,
    interval: Option<i64>,
    cron: Option<&str>,
    zone: Option<&str>,
) -> Result<Timing, ApiError> {
    let min = state.limits.min_interval_seconds;
    if let Some(seconds) = interval {
        if !(min..=MAX_INTERVAL).contains(&seconds) {
            return Err(ApiError::invalid(
                "interval_seconds",
                format!("must be between {min} and {MAX_INTERVAL} seconds"),
            ));
        }
    }
    if zone.is_some() && cron.is_none() {
        return Err(ApiError::invalid("time_zone", "only applies to a cron schedule"));
    }
    let timing = Timing::parse(interval, cron, zone)
        .map_err(|TimingError { field, message }| ApiError::invalid(field, message))?;
    if let Timing::Cron { .. } = timing {
        let probe = chrono::Utc::now();
        let first = timing.next_after(probe, "wat_probe");
        let second = timing.next_after(first, "wat_probe");
        if (second - first).num_seconds() < min - 1 {
            return Err(ApiError::invalid("cron", format!("fires more often than every {min} seconds")));
        }
    }
    Ok(timing)
}

/// Register a watch. Unless `paused`, it is checked at once: the first check records the baseline.
#[utoipa::path(
    post,
    path = "/watches",
    operation_id = "create_watch",
    tag = "watches",
    request_body = CreateWatch,
    responses((status = 201, description = "The watch.", body = views::Watch))
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateWatch>,
) -> Result<(StatusCode, axum::Json<views::Watch>), ApiError> {
    let url = valid_target(&state, "url", &body.url)?;
    let name = match body.name.as_deref().filter(|n| !n.trim().is_empty()) {
        Some(name) => valid_name(name)?,
        None if body.name.as_ref().is_some_and(|n| n.chars().count() > MAX_NAME) => {
            return Err(ApiError::invalid("name", format!("longer than {MAX_NAME} characters")));
        }
        None => url.chars().take(MAX_NAME).collect(),
    };
    let selector = valid_selector(body.selector)?;
    let cron = body.cron.map(|c| c.trim().to_owned()).filter(|c| !c.is_empty());
    let interval = match (&cron, body.interval_seconds) {
        (None, None) => Some(state.limits.default_interval_seconds),
        (_, given) => given,
    };
    let time_zone = body.time_zone.map(|z| z.trim().to_owned()).filter(|z| !z.is_empty());
    valid_timing(&state, interval, cron.as_deref(), time_zone.as_deref())?;
    let options = valid_options(&body.options.unwrap_or_default())?;
    let now = state.clock.now().naive_utc();
    let paused = body.paused.unwrap_or(false);
    let watch = Watch {
        name,
        selector,
        interval_seconds: interval,
        cron,
        time_zone,
        state: if paused { WatchState::Paused } else { WatchState::Active }.as_str().to_owned(),
        options,
        ..Watch::new(&caller.account_id, &url, now)
    };
    let stored = watch.clone();
    state.store.write(move |c| watches::insert_watch(c, &stored)).await?;
    tracing::info!(watch.id = %watch.id, account.id = %watch.account_id, "watch created");
    state.runner.wake();
    Ok((StatusCode::CREATED, axum::Json(watch.into())))
}

/// Query of `GET /watches`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WatchParams {
    /// Only watches in this state.
    #[param(inline)]
    state: Option<WatchState>,
    /// Only watches in this health (`failing`, say: what needs a look).
    #[param(inline)]
    health: Option<WatchHealth>,
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// The account's watches, oldest first, optionally only those in a state or health.
#[utoipa::path(
    get,
    path = "/watches",
    operation_id = "list_watches",
    tag = "watches",
    params(WatchParams),
    responses((status = 200, description = "A page of watches.", body = List<views::Watch>))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<WatchParams>,
) -> Result<axum::Json<List<views::Watch>>, ApiError> {
    let (page, limit) = PageParams { limit: params.limit, cursor: params.cursor }.to_page()?;
    let filter = WatchFilter { state: params.state, health: params.health };
    let rows = state.store.run(move |c| watches::list_watches(c, &caller.account_id, &filter, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |w| &w.id)))
}

async fn find(state: &AppState, caller: &Caller, id: &str) -> Result<Watch, ApiError> {
    let (account, id) = (caller.account_id.clone(), id.to_owned());
    state
        .store
        .run(move |c| watches::get_watch(c, &account, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such watch"))
}

/// One watch.
#[utoipa::path(
    get,
    path = "/watches/{id}",
    operation_id = "get_watch",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    responses((status = 200, description = "The watch.", body = views::Watch))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Watch>, ApiError> {
    Ok(axum::Json(find(&state, &caller, &id).await?.into()))
}

async fn apply(state: &AppState, caller: &Caller, id: String, changes: WatchChanges) -> Result<Watch, ApiError> {
    let account = caller.account_id.clone();
    let watch = state
        .store
        .write(move |c| watches::update_watch(c, &account, &id, &changes))
        .await?
        .ok_or_else(|| ApiError::not_found("no such watch"))?;
    state.runner.wake();
    Ok(watch)
}

/// Change a watch: only the fields given change. A new URL, selector or options starts a new baseline.
#[utoipa::path(
    patch,
    path = "/watches/{id}",
    operation_id = "update_watch",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    request_body = UpdateWatch,
    responses((status = 200, description = "The watch as changed.", body = views::Watch))
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Json(body): Json<UpdateWatch>,
) -> Result<axum::Json<views::Watch>, ApiError> {
    let current = find(&state, &caller, &id).await?;
    let now = state.clock.now();
    let mut changes = WatchChanges { updated_at: Some(now.naive_utc()), ..WatchChanges::default() };
    if let Some(url) = &body.url {
        changes.url = Some(valid_target(&state, "url", url)?);
    }
    if let Some(name) = &body.name {
        changes.name = Some(valid_name(name)?);
    }
    if let Some(selector) = body.selector {
        changes.selector = Some(valid_selector(selector)?);
    }
    let schedule_given = body.interval_seconds.is_some() || body.cron.is_some() || body.time_zone.is_some();
    if schedule_given {
        // Setting one kind of schedule replaces the other.
        let (interval, cron) = match (body.interval_seconds, body.cron) {
            (Some(interval), None) => (interval, None),
            (None, Some(cron)) => (None, cron.map(|c| c.trim().to_owned()).filter(|c| !c.is_empty())),
            (Some(interval), Some(cron)) => (interval, cron),
            (None, None) => (current.interval_seconds, current.cron.clone()),
        };
        let interval =
            if interval.is_none() && cron.is_none() { Some(state.limits.default_interval_seconds) } else { interval };
        let zone = match body.time_zone {
            Some(zone) => zone.map(|z| z.trim().to_owned()).filter(|z| !z.is_empty()),
            None if cron.is_some() => current.time_zone.clone(),
            None => None,
        };
        let timing = valid_timing(&state, interval, cron.as_deref(), zone.as_deref())?;
        changes.interval_seconds = Some(interval);
        changes.cron = Some(cron);
        changes.time_zone = Some(zone);
        changes.next_run_at = Some(timing.next_after(now, &current.id).naive_utc());
    }
    if let Some(options) = &body.options {
        changes.options = Some(valid_options(options)?);
    }
    if changes.url.is_some() || changes.selector.is_some() || changes.options.is_some() {
        // A different page, part or reading of it: fetch in full, soon, and take the result as
        // a new baseline rather than a change.
        changes.next_run_at = Some(now.naive_utc());
        changes.etag = Some(None);
        changes.last_modified = Some(None);
        changes.rebaseline = Some(true);
    }
    let watch = apply(&state, &caller, id, changes).await?;
    tracing::info!(watch.id = %watch.id, "watch updated");
    Ok(axum::Json(watch.into()))
}

/// Delete a watch with its runs and snapshots.
#[utoipa::path(
    delete,
    path = "/watches/{id}",
    operation_id = "delete_watch",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    responses((status = 204, description = "Deleted."))
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let deleted = state.store.write(move |c| watches::delete_watch(c, &caller.account_id, &id)).await?;
    if deleted { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such watch")) }
}

async fn set_state(
    state: AppState,
    caller: Caller,
    id: String,
    to: WatchState,
) -> Result<axum::Json<views::Watch>, ApiError> {
    let now: NaiveDateTime = state.clock.now().naive_utc();
    let changes = WatchChanges {
        state: Some(to.as_str().to_owned()),
        // Resuming checks at once; the schedule takes over from there.
        next_run_at: (to == WatchState::Active).then_some(now),
        updated_at: Some(now),
        ..WatchChanges::default()
    };
    let watch = apply(&state, &caller, id, changes).await?;
    tracing::info!(watch.id = %watch.id, state = %to, "watch state changed");
    Ok(axum::Json(watch.into()))
}

/// Stop checking a watch until it is resumed.
#[utoipa::path(
    post,
    path = "/watches/{id}/pause",
    operation_id = "pause_watch",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    responses((status = 200, description = "The paused watch.", body = views::Watch))
)]
pub async fn pause(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Watch>, ApiError> {
    set_state(state, caller, id, WatchState::Paused).await
}

/// Check a paused watch again: at once, then on its schedule.
#[utoipa::path(
    post,
    path = "/watches/{id}/resume",
    operation_id = "resume_watch",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    responses((status = 200, description = "The active watch.", body = views::Watch))
)]
pub async fn resume(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Watch>, ApiError> {
    set_state(state, caller, id, WatchState::Active).await
}

/// Check a watch now and answer with the run; a change raises an event as a scheduled check would.
#[utoipa::path(
    post,
    path = "/watches/{id}/check",
    operation_id = "check_watch",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    responses((status = 200, description = "The run.", body = views::Run))
)]
pub async fn check(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Run>, ApiError> {
    match state.runner.check_now(&caller.account_id, &id).await {
        Ok(Some(run)) => Ok(axum::Json(run.into())),
        Ok(None) => Err(ApiError::not_found("no such watch")),
        Err(CheckError::Busy) => Err(ApiError::conflict("a check of this watch is already running; try again shortly")),
        Err(CheckError::Store(e)) => Err(e.into()),
    }
}

/// A watch's checks, newest first.
#[utoipa::path(
    get,
    path = "/watches/{id}/runs",
    operation_id = "list_runs",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`)."), PageParams),
    responses((status = 200, description = "A page of runs.", body = List<views::Run>))
)]
pub async fn runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Run>>, ApiError> {
    let watch = find(&state, &caller, &id).await?;
    let (page, limit): (Page, usize) = params.to_page()?;
    let rows = state.store.run(move |c| watches::list_runs(c, &watch.id, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |r| &r.id)))
}

/// A watch's snapshots (distinct contents), newest first, without their content.
#[utoipa::path(
    get,
    path = "/watches/{id}/snapshots",
    operation_id = "list_snapshots",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`)."), PageParams),
    responses((status = 200, description = "A page of snapshots.", body = List<views::Snapshot>))
)]
pub async fn snapshots(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Snapshot>>, ApiError> {
    let watch = find(&state, &caller, &id).await?;
    let (page, limit) = params.to_page()?;
    let rows = state.store.run(move |c| watches::list_snapshots(c, &watch.id, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |s| &s.id)))
}

/// One snapshot, with its content.
#[utoipa::path(
    get,
    path = "/snapshots/{id}",
    operation_id = "get_snapshot",
    tag = "watches",
    params(("id" = String, Path, description = "A snapshot id (`snp_...`).")),
    responses((status = 200, description = "The snapshot.", body = views::Snapshot))
)]
pub async fn snapshot(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Snapshot>, ApiError> {
    let snapshot = state
        .store
        .run(move |c| watches::get_snapshot(c, &caller.account_id, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such snapshot"))?;
    Ok(axum::Json(snapshot.into()))
}

/// Query of `GET /watches/{id}/diff`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DiffParams {
    /// The older snapshot (default: the one before `to`).
    from: Option<String>,
    /// The newer snapshot (default: the newest).
    to: Option<String>,
    /// `json` (default) or `unified`.
    #[param(inline)]
    format: Option<DiffFormat>,
}

/// How a diff is answered.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiffFormat {
    /// Stats, hunks and the unified text as JSON.
    Json,
    /// The unified text alone (`text/x-diff`).
    Unified,
}

/// The diff between two snapshots of the watch (by default the two newest): JSON with stats and
/// hunks, or with `format=unified` the unified text.
#[utoipa::path(
    get,
    path = "/watches/{id}/diff",
    operation_id = "diff_snapshots",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`)."), DiffParams),
    responses((status = 200, description = "The diff.", content((views::Diff = "application/json"), (String = "text/x-diff"))))
)]
pub async fn diff(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(params): Query<DiffParams>,
) -> Result<Response, ApiError> {
    let unified = matches!(params.format, Some(DiffFormat::Unified));
    let watch = find(&state, &caller, &id).await?;
    let account = caller.account_id.clone();
    let (from, to) = state
        .store
        .run(move |c| {
            // Newest first: by default, the newest snapshot against the one before it.
            let mut latest = watches::latest_two_snapshots(c, &watch.id)?.into_iter();
            let (newest, previous) = (latest.next(), latest.next());
            let mut pick = |id: Option<String>, default: Option<driftwatch_store::Snapshot>| match id {
                Some(id) => watches::get_snapshot(c, &account, &id).map(|s| s.filter(|s| s.watch_id == watch.id)),
                None => Ok(default),
            };
            let to = pick(params.to, newest)?;
            let from = pick(params.from, previous)?;
            Ok((from, to))
        })
        .await?;
    let (Some(from), Some(to)) = (from, to) else {
        return Err(ApiError::not_found("no such snapshots: a diff needs two snapshots of this watch"));
    };
    let change = driftwatch_diff::diff_texts(&from.content, &to.content, &from.id, &to.id);
    if unified {
        return Ok(([(header::CONTENT_TYPE, "text/x-diff; charset=utf-8")], change.unified).into_response());
    }
    Ok(axum::Json(views::Diff { from: from.id, to: to.id, change }).into_response())
}
