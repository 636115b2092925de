//! A watch's history: its runs, its snapshots with their screenshots, and the diffs between them.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use driftwatch_store::{Page, runs, snapshots};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::find;
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Path, Query};
use crate::api::views::{self, List};
use crate::api::{PageParams, page_of};

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
    let rows = state.store.read(move |c| runs::list_runs(c, &caller.account_id, &watch.id, &page)).await?;
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
    let rows = state.store.read(move |c| snapshots::list_snapshots(c, &caller.account_id, &watch.id, &page)).await?;
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
        .read(move |c| snapshots::get_snapshot(c, &caller.account_id, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such snapshot"))?;
    Ok(axum::Json(snapshot.into()))
}

/// A snapshot's screenshot (WebP), when the watch keeps screenshots; only its owner sees it.
/// Screenshots are stored by content, so the answer never changes: it may be cached for good.
#[utoipa::path(
    get,
    path = "/watches/{id}/snapshots/{snapshot_id}/screenshot",
    operation_id = "get_screenshot",
    tag = "watches",
    params(
        ("id" = String, Path, description = "A watch id (`wat_...`)."),
        ("snapshot_id" = String, Path, description = "A snapshot id (`snp_...`)."),
    ),
    responses((status = 200, description = "The screenshot.", content_type = "image/webp"))
)]
pub async fn screenshot(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, snapshot_id)): Path<(String, String)>,
) -> Result<axum::response::Response, ApiError> {
    let watch = find(&state, &caller, &id).await?;
    let shot = state
        .store
        .read(move |c| driftwatch_store::screenshots::of_snapshot(c, &caller.account_id, &watch.id, &snapshot_id))
        .await?
        .ok_or_else(|| {
            ApiError::not_found("no such screenshot: the snapshot has none, or there is no such snapshot")
        })?;
    Ok(crate::screenshot_response(shot))
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
        .read(move |c| {
            // Newest first: by default, the newest snapshot against the one before it.
            let mut latest = snapshots::latest_two_snapshots(c, &watch.id)?.into_iter();
            let (newest, previous) = (latest.next(), latest.next());
            let mut pick = |id: Option<String>, default: Option<driftwatch_store::Snapshot>| match id {
                Some(id) => snapshots::get_snapshot(c, &account, &id).map(|s| s.filter(|s| s.watch_id == watch.id)),
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
    let change = crate::snapshot_diff(&from, &to).await.map_err(|e| ApiError::internal(&e))?;
    if unified {
        return Ok(([(header::CONTENT_TYPE, "text/x-diff; charset=utf-8")], change.unified).into_response());
    }
    Ok(axum::Json(views::Diff { from: from.id, to: to.id, change }).into_response())
}
