//! Bearer-token authentication.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method};
use driftwatch_store::{ApiToken, accounts};

use crate::AppState;
use crate::api::error::ApiError;

/// The authenticated caller: the account every query is scoped to.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The token's account.
    pub account_id: String,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, ApiError> {
        let found = match parts.extensions.get::<ApiToken>() {
            // Already looked up by a middleware of this request.
            Some(token) => Some(token.clone()),
            None => {
                let token = bearer_token(&parts.headers)?.to_owned();
                let now = state.clock.now().naive_utc();
                state.store.read(move |c| accounts::authenticate(c, &token, now)).await?
            }
        };
        let Some(token) = found else { return Err(ApiError::unauthorized("the token is unknown or revoked")) };
        // Reading is `GET`; everything else (create, update, delete, actions) needs `write`.
        let reads = matches!(parts.method, Method::GET | Method::HEAD);
        if !reads && !may_write(&token) {
            return Err(ApiError::forbidden("this token may only read; use a token with the `write` scope"));
        }
        Ok(Caller { account_id: token.account_id })
    }
}

/// The token of an `Authorization: Bearer <token>` header; the one parser of it, for the
/// extractor and the middleware alike.
pub fn bearer_token(headers: &HeaderMap) -> Result<&str, ApiError> {
    let header =
        headers.get(AUTHORIZATION).ok_or_else(|| ApiError::unauthorized("send `Authorization: Bearer <token>`"))?;
    header
        .to_str()
        .ok()
        .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::unauthorized("the Authorization header must be `Bearer <token>`"))
}

/// Whether the token has the `write` scope.
pub fn may_write(token: &ApiToken) -> bool {
    token.scopes.split_whitespace().any(|s| s == "write")
}
