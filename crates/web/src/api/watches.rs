//! `/watches`: create, read, list, update, delete, pause, resume, check now, runs, snapshots and
//! diffs.

pub(super) mod history;
pub(super) mod session;

use axum::extract::State;
use axum::http::StatusCode;
use driftwatch_core::{WatchHealth, WatchOptions, WatchState};
use driftwatch_schedule::CheckError;
use driftwatch_store::Watch;
use driftwatch_store::watches::{self, WatchChanges, WatchFilter, WatchSort};
use driftwatch_validate::{WatchInput, WatchPatch};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::{PageParams, page_of_with};
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Json, Path, Query};
use crate::api::views::{self, List};

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
    /// Tags (1 to 40 letters, digits, `-`, `_`, `.` or `:` each; at most 20; stored lower case).
    #[schema(max_items = 20)]
    tags: Option<Vec<String>>,
    /// Muted: checked and recorded, its changes visible, but nothing delivered.
    muted: Option<bool>,
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
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    selector: Option<Option<String>>,
    /// A new interval; replaces a cron schedule.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    #[schema(minimum = 1, maximum = 31_622_400)]
    interval_seconds: Option<Option<i64>>,
    /// A new cron schedule; replaces an interval.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    cron: Option<Option<String>>,
    /// The cron schedule's time zone.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    time_zone: Option<Option<String>>,
    /// New options (replacing all of them); starts a new baseline.
    options: Option<WatchOptions>,
    /// New tags, replacing all of them.
    #[schema(max_items = 20)]
    tags: Option<Vec<String>>,
    /// Mute (checked and recorded, nothing delivered) or unmute.
    muted: Option<bool>,
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
    let input = WatchInput {
        url: body.url,
        name: body.name,
        selector: body.selector,
        interval_seconds: body.interval_seconds,
        cron: body.cron,
        time_zone: body.time_zone,
        paused: body.paused,
        options: body.options,
        tags: body.tags,
        muted: body.muted,
    };
    let mut watch = driftwatch_validate::new_watch(
        input,
        &state.limits.rules(),
        state.policy,
        &caller.account_id,
        state.clock.now(),
    )?;
    crate::proxies::settle_options(&state, &caller.account_id, &mut watch.options).await?;
    crate::logins::steps_name_kept_secrets(&state, &caller.account_id, &watch.options().fetch).await??;
    let stored = watch.clone();
    state.store.write(move |c| watches::insert_watch(c, &stored)).await?;
    tracing::info!(watch.id = %watch.id, account.id = %watch.account_id, "watch created");
    state.runner.wake();
    Ok((StatusCode::CREATED, axum::Json(views::Watch::at(watch, state.clock.now().naive_utc()))))
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
    /// Only watches with this tag.
    tag: Option<String>,
    /// Only muted watches (`true`: checked, nothing delivered) or only those not muted (`false`).
    muted: Option<bool>,
    /// Only watches whose name or URL contains this text (any case).
    q: Option<String>,
    /// The order: `oldest` first (default), `newest` first, or by `name`; pages follow it.
    #[param(inline)]
    sort: Option<WatchOrder>,
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// The order of `GET /watches`.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WatchOrder {
    /// Oldest first.
    Oldest,
    /// Newest first.
    Newest,
    /// By name.
    Name,
}

/// The account's watches (oldest first, newest first or by name), optionally only those in a
/// state or health, with a tag, or whose name or URL contains `q`.
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
    let filter = WatchFilter {
        state: params.state,
        health: params.health,
        muted: params.muted,
        tag: params.tag.map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()),
        q: params.q.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty()),
        sort: match params.sort {
            Some(WatchOrder::Newest) => WatchSort::Newest,
            Some(WatchOrder::Name) => WatchSort::Name,
            Some(WatchOrder::Oldest) | None => WatchSort::Oldest,
        },
    };
    let rows = state.store.read(move |c| watches::list_watches(c, &caller.account_id, &filter, &page)).await?;
    let now = state.clock.now().naive_utc();
    Ok(axum::Json(page_of_with(rows, limit, |w| &w.id, |w| views::Watch::at(w, now))))
}

pub(super) async fn find(state: &AppState, caller: &Caller, id: &str) -> Result<Watch, ApiError> {
    let (account, id) = (caller.account_id.clone(), id.to_owned());
    state
        .store
        .read(move |c| watches::get_watch(c, &account, &id))
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
    let watch = find(&state, &caller, &id).await?;
    let (account, stored) = (caller.account_id.clone(), watch.clone());
    let routed = state.store.read(move |c| driftwatch_store::endpoints::routed_to(c, &account, &stored)).await?;
    Ok(axum::Json(views::Watch::at(watch, state.clock.now().naive_utc()).delivered_to(routed)))
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
    let patch = WatchPatch {
        url: body.url,
        name: body.name,
        selector: body.selector,
        interval_seconds: body.interval_seconds,
        cron: body.cron,
        time_zone: body.time_zone,
        options: body.options,
        tags: body.tags,
        muted: body.muted,
    };
    let mut changes =
        driftwatch_validate::watch_changes(&current, patch, &state.limits.rules(), state.policy, state.clock.now())?;
    if let Some(options) = changes.options.as_mut() {
        crate::proxies::settle_options(&state, &caller.account_id, options).await?;
    }
    crate::logins::options_name_kept_secrets(&state, &caller.account_id, changes.options.as_deref()).await??;
    let watch = apply(&state, &caller, id, changes).await?;
    tracing::info!(watch.id = %watch.id, "watch updated");
    Ok(axum::Json(views::Watch::at(watch, state.clock.now().naive_utc())))
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
    let changes = driftwatch_validate::state_change(to, state.clock.now());
    let watch = apply(&state, &caller, id, changes).await?;
    tracing::info!(watch.id = %watch.id, state = %to, "watch state changed");
    Ok(axum::Json(views::Watch::at(watch, state.clock.now().naive_utc())))
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
/// If a check of the watch is already running (its first check, right after it was created),
/// the request joins it and answers with that check's run; only a check outlasting its lease
/// answers 409.
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
        Err(CheckError::Busy) => Err(ApiError::conflict("a check of this watch is running and did not finish in time")),
        Err(CheckError::Store(e)) => Err(e.into()),
    }
}
