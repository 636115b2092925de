//! `/events`: what happened to the account's watches.

use axum::extract::State;
use driftwatch_store::checks;
use serde::Deserialize;

use super::{PageParams, page_of};
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::Query;
use crate::views::{self, List};

/// Query of `GET /events`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventParams {
    watch_id: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<EventParams>,
) -> Result<axum::Json<List<views::Event>>, ApiError> {
    let (page, limit) = PageParams { limit: params.limit, cursor: params.cursor }.to_page()?;
    let watch_id = params.watch_id;
    let rows = state.store.run(move |c| checks::list_events(c, &caller.account_id, watch_id.as_deref(), &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |e| &e.id)))
}
