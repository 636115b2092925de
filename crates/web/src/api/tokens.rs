//! `/tokens`: an account's API tokens, managed with a `write` token.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use driftwatch_store::accounts;
use serde::Deserialize;

use super::{PageParams, page_of};
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Query};
use crate::views::{self, List};

/// Body of `POST /tokens`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    name: String,
    scopes: Option<Vec<String>>,
}

pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateToken>,
) -> Result<(StatusCode, axum::Json<views::Token>), ApiError> {
    let name = body.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::invalid("name", "must be 1 to 100 characters"));
    }
    let mut scopes = body.scopes.unwrap_or_else(|| vec!["read".into(), "write".into()]);
    scopes.sort();
    scopes.dedup();
    if scopes.is_empty() || scopes.iter().any(|s| s != "read" && s != "write") {
        return Err(ApiError::invalid("scopes", "give `read`, `write` or both"));
    }
    if !scopes.iter().any(|s| s == "read") {
        scopes.insert(0, "read".into()); // writing includes reading
    }
    let now = state.clock.now().naive_utc();
    let (token, plaintext) = state
        .store
        .write(move |c| accounts::create_token(c, &caller.account_id, &name, &scopes.join(" "), now))
        .await?;
    tracing::info!(token.id = %token.id, token.prefix = %token.prefix, "token created");
    Ok((StatusCode::CREATED, axum::Json(views::Token::with_secret(token, plaintext))))
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Token>>, ApiError> {
    let (page, limit) = params.to_page()?;
    let rows = state.store.run(move |c| accounts::list_tokens(c, &caller.account_id, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |t| &t.id)))
}

pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let now = state.clock.now().naive_utc();
    let revoked = state.store.write(move |c| accounts::revoke_token(c, &caller.account_id, &id, now)).await?;
    if revoked { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such token")) }
}
