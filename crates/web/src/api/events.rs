//! `/events`: what happened to the account's watches.

use axum::extract::State;
use driftwatch_store::events;
use serde::Deserialize;

use super::{PageParams, page_of};
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Path, Query};
use crate::api::views::{self, List};

/// Query of `GET /events`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct EventParams {
    /// Only events about this watch.
    watch_id: Option<String>,
    /// Only events of this type.
    #[serde(rename = "type")]
    #[param(rename = "type", inline)]
    event_type: Option<driftwatch_core::EventType>,
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// What happened to the account's watches and endpoints, newest first, optionally of one watch
/// or one type.
#[utoipa::path(
    get,
    path = "/events",
    operation_id = "list_events",
    tag = "events",
    params(EventParams),
    responses((status = 200, description = "A page of events.", body = List<views::Event>))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<EventParams>,
) -> Result<axum::Json<List<views::Event>>, ApiError> {
    let (page, limit) = PageParams { limit: params.limit, cursor: params.cursor }.to_page()?;
    let (watch_id, event_type) = (params.watch_id, params.event_type);
    let rows = state
        .store
        .read(move |c| events::list_events(c, &caller.account_id, watch_id.as_deref(), event_type, &page))
        .await?;
    Ok(axum::Json(page_of(rows, limit, |e| &e.id)))
}

/// One event, with the payload its deliveries carry.
#[utoipa::path(
    get,
    path = "/events/{id}",
    operation_id = "get_event",
    tag = "events",
    params(("id" = String, Path, description = "An event id (`evt_...`).")),
    responses((status = 200, description = "The event.", body = views::Event))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Event>, ApiError> {
    let event = state
        .store
        .read(move |c| events::get_event(c, &caller.account_id, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such event"))?;
    Ok(axum::Json(event.into()))
}
