//! `/deliveries` and `/dlq`: the outbox, every attempt, redelivery.

use axum::extract::State;
use chrono::{DateTime, NaiveDateTime};
use driftwatch_core::DeliveryStatus;
use driftwatch_delivery::RedeliverError;
use driftwatch_store::deliveries::{self, DeliveryFilter};
use serde::Deserialize;
use utoipa::IntoParams;

use super::{PageParams, next_cursor, page_of};
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Path, Query};
use crate::api::views::{self, List};

/// Query of `GET /deliveries`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveryParams {
    /// Only deliveries in this state.
    #[param(value_type = Option<DeliveryStatus>)]
    status: Option<String>,
    /// Only deliveries to this endpoint.
    endpoint_id: Option<String>,
    /// Only deliveries about this watch.
    watch_id: Option<String>,
    /// Created at or after this RFC 3339 time.
    #[param(format = DateTime)]
    since: Option<String>,
    /// Created before this RFC 3339 time.
    #[param(format = DateTime)]
    until: Option<String>,
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// An RFC 3339 time from a query parameter.
pub(super) fn parse_time(field: &str, value: Option<&str>) -> Result<Option<NaiveDateTime>, ApiError> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v)
                .map(|t| t.naive_utc())
                .map_err(|_| ApiError::invalid(field, "must be an RFC 3339 time such as 2026-12-02T12:00:00Z"))
        })
        .transpose()
}

/// The account's deliveries, newest first, filtered.
#[utoipa::path(
    get,
    path = "/deliveries",
    operation_id = "list_deliveries",
    tag = "deliveries",
    params(DeliveryParams),
    responses((status = 200, description = "A page of deliveries.", body = List<views::Delivery>))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<DeliveryParams>,
) -> Result<axum::Json<List<views::Delivery>>, ApiError> {
    let status = params
        .status
        .as_deref()
        .map(str::parse::<DeliveryStatus>)
        .transpose()
        .map_err(|_| ApiError::invalid("status", "must be one of queued, failed, sent, dead"))?;
    let filter = DeliveryFilter {
        status,
        endpoint_id: params.endpoint_id,
        watch_id: params.watch_id,
        since: parse_time("since", params.since.as_deref())?,
        until: parse_time("until", params.until.as_deref())?,
    };
    let (page, limit) = PageParams { limit: params.limit, cursor: params.cursor }.to_page()?;
    let rows = state.store.read(move |c| deliveries::list_deliveries(c, &caller.account_id, &filter, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |d| &d.id)))
}

/// Query of `GET /dlq`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DlqParams {
    /// Created at or after this RFC 3339 time.
    #[param(format = DateTime)]
    since: Option<String>,
    /// Only deliveries to this endpoint.
    endpoint_id: Option<String>,
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// The dead-letter queue: dead deliveries, newest first, each with its last attempt.
#[utoipa::path(
    get,
    path = "/dlq",
    operation_id = "list_dead_letters",
    tag = "deliveries",
    params(DlqParams),
    responses((status = 200, description = "A page of dead deliveries.", body = List<views::Delivery>))
)]
pub async fn dlq(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<DlqParams>,
) -> Result<axum::Json<List<views::Delivery>>, ApiError> {
    let filter = DeliveryFilter {
        status: Some(DeliveryStatus::Dead),
        endpoint_id: params.endpoint_id,
        since: parse_time("since", params.since.as_deref())?,
        ..DeliveryFilter::default()
    };
    let (page, limit) = PageParams { limit: params.limit, cursor: params.cursor }.to_page()?;
    let (rows, next_cursor, mut last) = state
        .store
        .read(move |c| {
            let mut rows = deliveries::list_deliveries(c, &caller.account_id, &filter, &page)?;
            let cursor = next_cursor(&mut rows, limit, |d| &d.id);
            let ids: Vec<String> = rows.iter().map(|d| d.id.clone()).collect();
            Ok((rows, cursor, deliveries::last_attempts(c, &ids)?))
        })
        .await?;
    let items = rows
        .into_iter()
        .map(|d| {
            let attempt = last.remove(&d.id);
            views::Delivery::with_last_attempt(d, attempt)
        })
        .collect();
    Ok(axum::Json(List { items, next_cursor }))
}

/// One delivery with every attempt (`attempt_log`).
#[utoipa::path(
    get,
    path = "/deliveries/{id}",
    operation_id = "get_delivery",
    tag = "deliveries",
    params(("id" = String, Path, description = "A delivery id (`dlv_...`), also its `webhook-id`.")),
    responses((status = 200, description = "The delivery.", body = views::Delivery))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Delivery>, ApiError> {
    let found = state
        .store
        .read(move |c| {
            let Some(delivery) = deliveries::get_delivery(c, &caller.account_id, &id)? else { return Ok(None) };
            let attempts = deliveries::list_attempts(c, &caller.account_id, &delivery.id)?;
            Ok(Some((delivery, attempts)))
        })
        .await?;
    let (delivery, attempts) = found.ok_or_else(|| ApiError::not_found("no such delivery"))?;
    Ok(axum::Json(views::Delivery::with_attempts(delivery, attempts)))
}

/// Sends the delivery again now (same `webhook-id` and body, a manual attempt) and answers
/// with the delivery and its attempts afterwards.
#[utoipa::path(
    post,
    path = "/deliveries/{id}/redeliver",
    operation_id = "redeliver",
    tag = "deliveries",
    params(("id" = String, Path, description = "A delivery id (`dlv_...`), also its `webhook-id`.")),
    responses((status = 200, description = "The delivery after the attempt.", body = views::Delivery))
)]
pub async fn redeliver(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Delivery>, ApiError> {
    match state.worker.redeliver(&caller.account_id, &id).await {
        Ok(Some(delivery)) => {
            let account = caller.account_id.clone();
            let attempts = state.store.read(move |c| deliveries::list_attempts(c, &account, &id)).await?;
            Ok(axum::Json(views::Delivery::with_attempts(delivery, attempts)))
        }
        Ok(None) => Err(ApiError::not_found("no such delivery")),
        Err(RedeliverError::Store(e)) => Err(e.into()),
        Err(e) => Err(ApiError::conflict(e.to_string())),
    }
}
