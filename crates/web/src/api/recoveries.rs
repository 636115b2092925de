//! `/recoveries`: progress of bulk re-queues.

use axum::extract::State;
use driftwatch_store::recoveries;
use serde::Deserialize;

use super::{PageParams, page_of};
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Path, Query};
use crate::api::views::{self, List};

/// Query of `GET /recoveries`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RecoveryParams {
    /// Only recoveries of this endpoint.
    endpoint_id: Option<String>,
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// The account's recoveries, newest first.
#[utoipa::path(
    get,
    path = "/recoveries",
    operation_id = "list_recoveries",
    tag = "recoveries",
    params(RecoveryParams),
    responses((status = 200, description = "A page of recoveries.", body = List<views::Recovery>))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<RecoveryParams>,
) -> Result<axum::Json<List<views::Recovery>>, ApiError> {
    let (page, limit) = PageParams { limit: params.limit, cursor: params.cursor }.to_page()?;
    let endpoint_id = params.endpoint_id;
    let rows = state
        .store
        .read(move |c| recoveries::list_recoveries(c, &caller.account_id, endpoint_id.as_deref(), &page))
        .await?;
    Ok(axum::Json(page_of(rows, limit, |r| &r.id)))
}

/// One recovery and its progress.
#[utoipa::path(
    get,
    path = "/recoveries/{id}",
    operation_id = "get_recovery",
    tag = "recoveries",
    params(("id" = String, Path, description = "A recovery id (`rec_...`).")),
    responses((status = 200, description = "The recovery.", body = views::Recovery))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Recovery>, ApiError> {
    let recovery = state
        .store
        .read(move |c| recoveries::get_recovery(c, &caller.account_id, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such recovery"))?;
    Ok(axum::Json(recovery.into()))
}
