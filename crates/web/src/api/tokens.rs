//! `/tokens`: an account's API tokens, managed with a `write` token.

use axum::extract::State;
use axum::http::StatusCode;
use driftwatch_store::accounts;
use serde::Deserialize;

use super::{PageParams, page_of};
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Json, Path, Query};
use crate::api::views::{self, List};

/// Body of `POST /tokens`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// What the token is for.
    #[schema(min_length = 1, max_length = 100)]
    name: String,
    /// `read`, `write` or both (default: both; `write` includes `read`).
    #[schema(value_type = Option<Vec<Scope>>, min_items = 1)]
    scopes: Option<Vec<String>>,
}

/// What a token may do.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)] // documentation only: scopes are read as text
enum Scope {
    /// `GET` requests.
    Read,
    /// Everything else.
    Write,
}

/// Create a token. The answer carries the token itself, shown this once.
#[utoipa::path(
    post,
    path = "/tokens",
    operation_id = "create_token",
    tag = "tokens",
    request_body = CreateToken,
    responses((status = 201, description = "The token, with its secret.", body = views::Token))
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateToken>,
) -> Result<(StatusCode, views::Revealing<views::Token>), ApiError> {
    let (name, scopes) = driftwatch_validate::token(&body.name, body.scopes)?;
    let now = state.clock.now().naive_utc();
    let (token, plaintext) =
        state.store.write(move |c| accounts::create_token(c, &caller.account_id, &name, &scopes, now)).await?;
    tracing::info!(token.id = %token.id, token.prefix = %token.prefix, "token created");
    Ok((StatusCode::CREATED, views::Revealing(views::Token::with_secret(token, plaintext))))
}

/// The account's tokens (never their secrets), newest first.
#[utoipa::path(
    get,
    path = "/tokens",
    operation_id = "list_tokens",
    tag = "tokens",
    params(PageParams),
    responses((status = 200, description = "A page of tokens.", body = List<views::Token>))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Token>>, ApiError> {
    let (page, limit) = params.to_page()?;
    let rows = state.store.read(move |c| accounts::list_tokens(c, &caller.account_id, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |t| &t.id)))
}

/// Revoke a token: it stops working at once. Revoking a revoked token answers the same.
#[utoipa::path(
    delete,
    path = "/tokens/{id}",
    operation_id = "revoke_token",
    tag = "tokens",
    params(("id" = String, Path, description = "A token id (`tok_...`).")),
    responses((status = 204, description = "Revoked."))
)]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let now = state.clock.now().naive_utc();
    let revoked = state.store.write(move |c| accounts::revoke_token(c, &caller.account_id, &id, now)).await?;
    if revoked { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such token")) }
}
