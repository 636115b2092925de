//! `/endpoints`: where events are delivered.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use driftwatch_core::{EndpointKind, IdKind, new_id, new_webhook_secret};
use driftwatch_store::endpoints;
use serde::Deserialize;

use super::watches::valid_target;
use super::{PageParams, page_of};
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Query};
use crate::views::{self, List};

/// Body of `POST /endpoints`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateEndpoint {
    url: String,
    description: Option<String>,
    kind: Option<EndpointKind>,
}

pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateEndpoint>,
) -> Result<(StatusCode, axum::Json<views::Endpoint>), ApiError> {
    let url = valid_target(&state, "url", &body.url)?;
    let description = body.description.unwrap_or_default().trim().to_owned();
    if description.chars().count() > 500 {
        return Err(ApiError::invalid(
            "description",
            "longer than 500 characters",
        ));
    }
    let now = state.clock.now().naive_utc();
    let endpoint = driftwatch_store::Endpoint {
        id: new_id(IdKind::Endpoint),
        account_id: caller.account_id,
        kind: body
            .kind
            .unwrap_or(EndpointKind::Webhook)
            .as_str()
            .to_owned(),
        url,
        description,
        secret: new_webhook_secret(),
        enabled: true,
        created_at: now,
        updated_at: now,
    };
    let stored = endpoint.clone();
    state
        .store
        .run(move |c| endpoints::insert_endpoint(c, &stored))
        .await?;
    tracing::info!(endpoint.id = %endpoint.id, account.id = %endpoint.account_id, "endpoint created");
    Ok((
        StatusCode::CREATED,
        axum::Json(views::Endpoint::with_secret(endpoint)),
    ))
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Endpoint>>, ApiError> {
    let (page, limit) = params.to_page()?;
    let rows = state
        .store
        .run(move |c| endpoints::list_endpoints(c, &caller.account_id, &page))
        .await?;
    Ok(axum::Json(page_of(rows, limit, |e| &e.id)))
}

pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Endpoint>, ApiError> {
    let endpoint = state
        .store
        .run(move |c| endpoints::get_endpoint(c, &caller.account_id, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such endpoint"))?;
    Ok(axum::Json(endpoint.into()))
}
