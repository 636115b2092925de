//! What an endpoint's actions do: enable, disable, rotate the secret, send a test event and
//! recover failed deliveries.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, TimeDelta, Utc};
use driftwatch_core::{DeliveryStatus, new_webhook_secret};
use driftwatch_store::endpoints;
use driftwatch_validate::RecoveryInput;
use serde::Deserialize;
use utoipa::ToSchema;

use super::find;
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Json, Path};
use crate::api::views;

async fn set_enabled(
    state: AppState,
    caller: Caller,
    id: String,
    enabled: bool,
) -> Result<axum::Json<views::Endpoint>, ApiError> {
    let now = state.clock.now().naive_utc();
    let endpoint = state
        .store
        .write(move |c| endpoints::set_enabled(c, &caller.account_id, &id, enabled, now))
        .await?
        .ok_or_else(|| ApiError::not_found("no such endpoint"))?;
    tracing::info!(endpoint.id = %endpoint.id, enabled, "endpoint switched by request");
    if enabled {
        state.worker.wake(); // its waiting deliveries resume
    }
    Ok(axum::Json(views::Endpoint::at(endpoint, now)))
}

/// Enable an endpoint: its waiting deliveries resume.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/enable",
    operation_id = "enable_endpoint",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    responses((status = 200, description = "The endpoint.", body = views::Endpoint))
)]
pub async fn enable(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Endpoint>, ApiError> {
    set_enabled(state, caller, id, true).await
}

/// Disable an endpoint: deliveries wait until it is enabled.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/disable",
    operation_id = "disable_endpoint",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    responses((status = 200, description = "The endpoint.", body = views::Endpoint))
)]
pub async fn disable(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Endpoint>, ApiError> {
    set_enabled(state, caller, id, false).await
}

/// Replace the signing secret; the previous one keeps signing alongside for the overlap. Only
/// a kind that signs its requests (`webhook`) has one: any other answers 409.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/rotate-secret",
    operation_id = "rotate_endpoint_secret",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    responses((status = 200, description = "The endpoint, with its new secret.", body = views::Endpoint))
)]
pub async fn rotate_secret(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<views::Revealing<views::Endpoint>, ApiError> {
    driftwatch_validate::may_rotate_secret(&find(&state, &caller, &id).await?.kind).map_err(ApiError::conflict)?;
    let now = state.clock.now().naive_utc();
    let overlap = TimeDelta::from_std(state.limits.secret_rotation_overlap).unwrap_or(TimeDelta::days(1));
    let secret = new_webhook_secret();
    let sealed = state.seal(&secret);
    let mut endpoint = state
        .store
        .write(move |c| endpoints::rotate_secret(c, &caller.account_id, &id, &sealed, now + overlap, now))
        .await?
        .ok_or_else(|| ApiError::not_found("no such endpoint"))?;
    tracing::info!(endpoint.id = %endpoint.id, "endpoint secret rotated");
    endpoint.secret = secret;
    Ok(views::Revealing(views::Endpoint::with_secret(endpoint, state.clock.now().naive_utc())))
}

/// Queue an `endpoint.test` event to this endpoint alone.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/test",
    operation_id = "test_endpoint",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    responses((status = 202, description = "The queued delivery.", body = views::Delivery))
)]
pub async fn test(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, axum::Json<views::Delivery>), ApiError> {
    let endpoint = find(&state, &caller, &id).await?;
    let delivery = state.worker.queue_test(&endpoint).await?;
    Ok((StatusCode::ACCEPTED, axum::Json(delivery.into())))
}

/// Body of `POST /endpoints/{id}/recover`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Recover {
    /// Deliveries created at or after this time.
    since: DateTime<Utc>,
    /// ... and before this time (default: now).
    until: Option<DateTime<Utc>>,
    /// Which to re-queue: `failed`, `dead` or both (default).
    #[schema(value_type = Option<Vec<Recoverable>>, min_items = 1)]
    statuses: Option<Vec<DeliveryStatus>>,
    /// Only count them.
    dry_run: Option<bool>,
}

/// The delivery states a recovery takes.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // documentation only: statuses are read as `DeliveryStatus`
enum Recoverable {
    /// Waiting for a retry.
    Failed,
    /// Out of attempts.
    Dead,
}

/// Re-queue the endpoint's failed and dead deliveries created in a time range, paced, in the
/// background; `dry_run` only counts them.
#[utoipa::path(
    post,
    path = "/endpoints/{id}/recover",
    operation_id = "recover_endpoint",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    request_body = Recover,
    responses((status = 202, description = "The recovery, started.", body = views::Recovery), (status = 200, description = "The dry run, counted.", body = views::Recovery))
)]
pub async fn recover(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Json(body): Json<Recover>,
) -> Result<(StatusCode, axum::Json<views::Recovery>), ApiError> {
    let endpoint = find(&state, &caller, &id).await?;
    let request = driftwatch_validate::recovery(RecoveryInput {
        since: body.since.naive_utc(),
        until: body.until.map(|u| u.naive_utc()),
        statuses: body.statuses,
        dry_run: body.dry_run.unwrap_or(false),
    })?;
    let recovery = state.worker.recover(&endpoint, request).await?;
    if recovery.dry_run {
        return Ok((StatusCode::OK, axum::Json(recovery.into())));
    }
    Ok((StatusCode::ACCEPTED, axum::Json(recovery.into())))
}
