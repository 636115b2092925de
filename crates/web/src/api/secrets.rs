//! `/secrets`: the account's named secrets, which login steps type (`{"secret": "name"}` in
//! place of text). Values go in, sealed, and never come back out.

use axum::extract::State;
use axum::http::StatusCode;
use driftwatch_store::logins;
use serde::Deserialize;

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Json, Path};
use crate::api::views::{self, List};

/// Body of `POST /secrets`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSecret {
    /// 1 to 64 letters, digits, `-`, `_` or `.`, starting with a letter or digit.
    #[schema(min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
    name: String,
    /// The secret (a password, say): at most 4096 bytes. Stored sealed, never shown.
    #[schema(min_length = 1, max_length = 4096)]
    value: String,
}

/// Body of `PUT /secrets/{name}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplaceSecret {
    /// The new value: at most 4096 bytes.
    #[schema(min_length = 1, max_length = 4096)]
    value: String,
}

/// The account's secrets by name (never their values).
#[utoipa::path(
    get,
    path = "/secrets",
    operation_id = "list_secrets",
    tag = "secrets",
    responses((status = 200, description = "Every secret of the account.", body = List<views::Secret>))
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<axum::Json<List<views::Secret>>, ApiError> {
    let rows = state.store.read(move |c| logins::list_secrets(c, &caller.account_id)).await?;
    Ok(axum::Json(List { items: rows.into_iter().map(views::Secret::from).collect(), next_cursor: None }))
}

/// Add a secret. A name the account already keeps is a conflict: `PUT` replaces its value.
#[utoipa::path(
    post,
    path = "/secrets",
    operation_id = "create_secret",
    tag = "secrets",
    request_body = CreateSecret,
    responses((status = 201, description = "The secret (without its value).", body = views::Secret))
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateSecret>,
) -> Result<(StatusCode, axum::Json<views::Secret>), ApiError> {
    let (name, value) = driftwatch_validate::secret(&body.name, &body.value)?;
    let (account, look) = (caller.account_id.clone(), name.clone());
    if state.store.read(move |c| logins::get_secret(c, &account, &look)).await?.is_some() {
        return Err(ApiError::conflict(format!("a secret named {name:?} exists: PUT /secrets/{name} replaces it")));
    }
    let (sealed, now) = (state.seal(&value), state.clock.now().naive_utc());
    let (secret, _) =
        state.store.write(move |c| logins::set_secret(c, &caller.account_id, &name, &sealed, now)).await?;
    tracing::info!(secret.id = %secret.id, "secret created");
    Ok((StatusCode::CREATED, axum::Json(views::Secret::from(secret))))
}

/// Set a secret's value, adding the secret when the account keeps none by that name (a
/// `PUT` sets: another account's secret of the same name is never touched).
#[utoipa::path(
    put,
    path = "/secrets/{name}",
    operation_id = "replace_secret",
    tag = "secrets",
    params(("name" = String, Path, description = "The secret's name.")),
    request_body = ReplaceSecret,
    responses((status = 200, description = "The secret (without its value).", body = views::Secret))
)]
pub async fn replace(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Json(body): Json<ReplaceSecret>,
) -> Result<axum::Json<views::Secret>, ApiError> {
    let (name, value) = driftwatch_validate::secret(&name, &body.value)?;
    let (sealed, now) = (state.seal(&value), state.clock.now().naive_utc());
    let (secret, _) =
        state.store.write(move |c| logins::set_secret(c, &caller.account_id, &name, &sealed, now)).await?;
    tracing::info!(secret.id = %secret.id, "secret set");
    Ok(axum::Json(views::Secret::from(secret)))
}

/// Delete a secret. Watches whose steps type it fail their checks until it is added again.
#[utoipa::path(
    delete,
    path = "/secrets/{name}",
    operation_id = "delete_secret",
    tag = "secrets",
    params(("name" = String, Path, description = "The secret's name.")),
    responses((status = 204, description = "Deleted."))
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let deleted = state.store.write(move |c| logins::delete_secret(c, &caller.account_id, &name)).await?;
    if deleted { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such secret")) }
}
