//! Bulk actions on watches: check, pause, resume, delete and tag many at once, chosen by ids or
//! by the same filters as the list.

use axum::extract::State;
use axum::http::StatusCode;
use driftwatch_core::{WatchHealth, WatchState};
use driftwatch_store::watches::{self, WatchFilter, WatchSelection};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::Json;

/// Most ids one bulk request names.
const MAX_IDS: usize = 1000;

/// The filters of a bulk action (as in `GET /watches`).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkFilter {
    /// Only watches in this state.
    state: Option<WatchState>,
    /// Only watches in this health.
    health: Option<WatchHealth>,
    /// Only watches with this tag.
    tag: Option<String>,
    /// Only watches whose name or URL contains this text.
    q: Option<String>,
}

impl BulkFilter {
    /// Whether it narrows nothing: it matches every watch.
    fn is_empty(&self) -> bool {
        self.state.is_none()
            && self.health.is_none()
            && self.tag.as_deref().is_none_or(|t| t.trim().is_empty())
            && self.q.as_deref().is_none_or(|q| q.trim().is_empty())
    }
}

/// Which watches a bulk action takes: `ids`, every watch `filter` matches, or every watch with
/// `all: true` (a filter that narrows nothing must say `all: true` too, so that no typo in a
/// filter acts on every watch).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Bulk {
    /// These watches (at most 1000; other accounts' ids are not counted).
    #[schema(max_items = 1000)]
    ids: Option<Vec<String>>,
    /// Every watch matching; a filter that narrows nothing (`{}`) needs `all: true`.
    filter: Option<BulkFilter>,
    /// `true` to act on every watch of the account (alone, or with an empty `filter`).
    #[serde(default)]
    all: bool,
}

/// Body of `POST /watches/tag`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkTag {
    /// These watches.
    #[schema(max_items = 1000)]
    ids: Option<Vec<String>>,
    /// Every watch matching; a filter that narrows nothing (`{}`) needs `all: true`.
    filter: Option<BulkFilter>,
    /// `true` to act on every watch of the account (alone, or with an empty `filter`).
    #[serde(default)]
    all: bool,
    /// Tags to add.
    #[serde(default)]
    add: Vec<String>,
    /// Tags to remove.
    #[serde(default)]
    remove: Vec<String>,
}

/// How many watches a bulk action took.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkResult {
    /// Watches checked, changed or deleted.
    count: usize,
}

/// The selection a body names: `ids`, a filter that narrows, or everything when `all` says so.
/// A filter that narrows nothing without `all` is refused, naming `filter`: an empty or
/// mistyped filter must not act on every watch by accident.
pub(crate) fn selection(
    ids: Option<Vec<String>>,
    filter: Option<BulkFilter>,
    all: bool,
) -> Result<WatchSelection, ApiError> {
    match (ids, filter, all) {
        (Some(ids), None, false) if ids.len() <= MAX_IDS => Ok(WatchSelection::Ids(ids)),
        (Some(_), None, false) => Err(ApiError::invalid("ids", format!("at most {MAX_IDS} ids"))),
        (Some(_), _, true) => Err(ApiError::invalid("all", "give either `ids` or `all`, not both")),
        (None, filter, true) if filter.as_ref().is_none_or(BulkFilter::is_empty) => {
            Ok(WatchSelection::Filter(WatchFilter::default()))
        }
        (None, Some(_), true) => {
            Err(ApiError::invalid("all", "`all: true` takes every watch; give it alone or with an empty `filter`"))
        }
        (None, Some(f), false) if f.is_empty() => Err(ApiError::invalid(
            "filter",
            "this filter narrows nothing, so it would take every watch: add `\"all\": true` to mean that",
        )),
        (None, Some(f), false) => Ok(WatchSelection::Filter(WatchFilter {
            state: f.state,
            health: f.health,
            tag: f.tag.map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()),
            q: f.q.map(|q| q.trim().to_owned()).filter(|q| !q.is_empty()),
            ..WatchFilter::default()
        })),
        _ => Err(ApiError::invalid("ids", "give `ids`, a `filter`, or `\"all\": true`")),
    }
}

/// Queue a check of the chosen active watches now; the runner takes them promptly, one host
/// at a time as politeness requires.
#[utoipa::path(
    post,
    path = "/watches/check",
    operation_id = "check_watches",
    tag = "watches",
    request_body = Bulk,
    responses((status = 202, description = "How many checks were queued.", body = BulkResult))
)]
pub async fn check(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<Bulk>,
) -> Result<(StatusCode, axum::Json<BulkResult>), ApiError> {
    let selection = selection(body.ids, body.filter, body.all)?;
    let now = state.clock.now().naive_utc();
    let count = state.store.write(move |c| watches::bulk_check_now(c, &caller.account_id, &selection, now)).await?;
    state.runner.wake();
    Ok((StatusCode::ACCEPTED, axum::Json(BulkResult { count })))
}

async fn set_state(
    state: AppState,
    caller: Caller,
    body: Bulk,
    to: WatchState,
) -> Result<axum::Json<BulkResult>, ApiError> {
    let selection = selection(body.ids, body.filter, body.all)?;
    let changes = driftwatch_validate::state_change(to, state.clock.now());
    let count =
        state.store.write(move |c| watches::bulk_set_state(c, &caller.account_id, &selection, &changes)).await?;
    state.runner.wake();
    tracing::info!(count, state = %to, "watches changed in bulk");
    Ok(axum::Json(BulkResult { count }))
}

/// Pause the chosen watches.
#[utoipa::path(
    post,
    path = "/watches/pause",
    operation_id = "pause_watches",
    tag = "watches",
    request_body = Bulk,
    responses((status = 200, description = "How many watches were paused.", body = BulkResult))
)]
pub async fn pause(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<Bulk>,
) -> Result<axum::Json<BulkResult>, ApiError> {
    set_state(state, caller, body, WatchState::Paused).await
}

/// Resume the chosen watches (each is checked at once, then on its schedule).
#[utoipa::path(
    post,
    path = "/watches/resume",
    operation_id = "resume_watches",
    tag = "watches",
    request_body = Bulk,
    responses((status = 200, description = "How many watches were resumed.", body = BulkResult))
)]
pub async fn resume(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<Bulk>,
) -> Result<axum::Json<BulkResult>, ApiError> {
    set_state(state, caller, body, WatchState::Active).await
}

/// Delete the chosen watches with their history.
#[utoipa::path(
    post,
    path = "/watches/delete",
    operation_id = "delete_watches",
    tag = "watches",
    request_body = Bulk,
    responses((status = 200, description = "How many watches were deleted.", body = BulkResult))
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<Bulk>,
) -> Result<axum::Json<BulkResult>, ApiError> {
    let selection = selection(body.ids, body.filter, body.all)?;
    let count = state.store.write(move |c| watches::bulk_delete(c, &caller.account_id, &selection)).await?;
    tracing::info!(count, "watches deleted in bulk");
    Ok(axum::Json(BulkResult { count }))
}

/// Add and remove tags on the chosen watches.
#[utoipa::path(
    post,
    path = "/watches/tag",
    operation_id = "tag_watches",
    tag = "watches",
    request_body = BulkTag,
    responses((status = 200, description = "How many watches changed.", body = BulkResult))
)]
pub async fn tag(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<BulkTag>,
) -> Result<axum::Json<BulkResult>, ApiError> {
    let selection = selection(body.ids, body.filter, body.all)?;
    let add = driftwatch_validate::valid_tags(&body.add)?;
    let remove = driftwatch_validate::valid_tags(&body.remove)?;
    if add.is_empty() && remove.is_empty() {
        return Err(ApiError::invalid("add", "give tags to `add` or to `remove`"));
    }
    let now = state.clock.now().naive_utc();
    let count =
        state.store.write(move |c| watches::bulk_tag(c, &caller.account_id, &selection, &add, &remove, now)).await?;
    Ok(axum::Json(BulkResult { count }))
}
