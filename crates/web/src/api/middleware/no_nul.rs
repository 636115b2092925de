//! Paths and queries with a NUL character are refused before any handler sees them.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::api::error::ApiError;

/// Refuses a path or query that carries a NUL character (`%00`): no id or filter holds one, and
/// PostgreSQL cannot even compare against one.
pub async fn no_nul(request: Request, next: Next) -> Response {
    let uri = request.uri();
    let raw = [uri.path(), uri.query().unwrap_or("")];
    if raw.iter().any(|part| part.as_bytes().windows(3).any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0')) {
        return ApiError::bad_request("the path or query contains a NUL character (%00)").into_response();
    }
    next.run(request).await
}
