//! `/deliveries`: the outbox, with every attempt.

use axum::extract::{Path, State};
use driftwatch_core::DeliveryStatus;
use driftwatch_store::deliveries::{self, DeliveryFilter};
use serde::Deserialize;

use super::{PageParams, page_of};
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::Query;
use crate::views::{self, List};

/// Query of `GET /deliveries`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryParams {
    status: Option<String>,
    endpoint_id: Option<String>,
    watch_id: Option<String>,
    limit: Option<i64>,
    cursor: Option<String>,
}

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
    };
    let (page, limit) = PageParams {
        limit: params.limit,
        cursor: params.cursor,
    }
    .to_page()?;
    let rows = state
        .store
        .run(move |c| deliveries::list_deliveries(c, &caller.account_id, &filter, &page))
        .await?;
    Ok(axum::Json(page_of(rows, limit, |d| &d.id)))
}

pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Delivery>, ApiError> {
    let found = state
        .store
        .run(move |c| {
            let Some(delivery) = deliveries::get_delivery(c, &caller.account_id, &id)? else {
                return Ok(None);
            };
            let attempts = deliveries::list_attempts(c, &delivery.id)?;
            Ok(Some((delivery, attempts)))
        })
        .await?;
    let (delivery, attempts) = found.ok_or_else(|| ApiError::not_found("no such delivery"))?;
    Ok(axum::Json(views::Delivery::with_attempts(
        delivery, attempts,
    )))
}
