//! `/events`: what happened to the account's watches.

use axum::extract::State;
use driftwatch_store::{events, verdicts};
use serde::Deserialize;

use super::{PageParams, next_cursor};
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
    let (rows, next_cursor, verdicts) = state
        .store
        .read(move |c| {
            let mut rows = events::list_events(c, &caller.account_id, watch_id.as_deref(), event_type, &page)?;
            let cursor = next_cursor(&mut rows, limit, |e| &e.id);
            let ids: Vec<&str> = rows.iter().map(|e| e.id.as_str()).collect();
            let verdicts = verdicts::for_events(c, &caller.account_id, &ids)?;
            Ok((rows, cursor, verdicts))
        })
        .await?;
    Ok(axum::Json(List { items: views::Event::all_with_verdicts(rows, verdicts), next_cursor }))
}

/// One event, with the payload its deliveries carry (and, for a change of a watch with
/// `options.ai`, its verdict).
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
    let (event, verdict) = state
        .store
        .read(move |c| {
            let event = events::get_event(c, &caller.account_id, &id)?;
            let verdict = verdicts::for_events(c, &caller.account_id, &[id.as_str()])?.remove(&id);
            Ok((event, verdict))
        })
        .await?;
    let event = event.ok_or_else(|| ApiError::not_found("no such event"))?;
    Ok(axum::Json(views::Event::with_verdict(event, verdict)))
}

/// Sends a held change now: a change of a watch with `options.ai` and `on_error: hold` that
/// got no verdict is kept undelivered until released. Its deliveries are queued at once;
/// the answer is the event with its verdict, now `released`. A change in any other state is
/// a 409 naming it.
#[utoipa::path(
    post,
    path = "/events/{id}/release",
    operation_id = "release_event",
    tag = "events",
    params(("id" = String, Path, description = "A held change's event id (`evt_...`).")),
    responses((status = 200, description = "The change, released: its deliveries are queued.", body = views::Event))
)]
pub async fn release(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Event>, ApiError> {
    let render = state.store.render();
    let now = state.clock.now().naive_utc();
    let account = caller.account_id;
    let (queued, event, verdict) = state
        .store
        .write(move |c| {
            let queued = verdicts::release(c, &*render, &account, &id, now)?;
            let event = events::get_event(c, &account, &id)?;
            let verdict = verdicts::for_events(c, &account, &[id.as_str()])?.remove(&id);
            Ok((queued, event, verdict))
        })
        .await?;
    let event = event.ok_or_else(|| ApiError::not_found("no such event"))?;
    let Some(queued) = queued else {
        return Err(match verdict {
            Some(verdict) => ApiError::conflict(format!("this change is not held; it is {}", verdict.state().as_str())),
            None => ApiError::conflict("this event is not held: only changes of watches with options.ai can be"),
        });
    };
    tracing::info!(event.id = %event.id, deliveries = queued, "held change released");
    if queued > 0 {
        state.worker.wake();
    }
    Ok(axum::Json(views::Event::with_verdict(event, verdict)))
}
