//! `/recoveries`: progress of bulk re-queues.

use axum::extract::{Path, State};
use driftwatch_store::recoveries;

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::views;

pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Recovery>, ApiError> {
    let recovery = state
        .store
        .run(move |c| recoveries::get_recovery(c, &caller.account_id, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such recovery"))?;
    Ok(axum::Json(recovery.into()))
}
