//! Strong `ETag`s for `GET` answers, and 304 for a client's `If-None-Match` that has it.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use driftwatch_core::hex;
use sha2::{Digest, Sha256};

use crate::api::error::ApiError;

/// Largest body buffered for ETags and idempotent replays.
pub(super) const MAX_BUFFERED: usize = 8 * 1024 * 1024;

/// Gives every successful `GET` a strong `ETag` (a hash of the body) and answers 304 when the
/// client's `If-None-Match` already has it.
pub async fn etag(request: Request, next: Next) -> Response {
    let is_get = request.method() == Method::GET;
    let if_none_match = request.headers().get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let response = next.run(request).await;
    if !is_get || response.status() != StatusCode::OK {
        return response;
    }
    if axum::body::HttpBody::size_hint(response.body()).upper().is_none_or(|n| n > MAX_BUFFERED as u64) {
        return response; // too large (or unknown) to buffer: served untagged
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BUFFERED).await else {
        return ApiError::internal(&"response too large to tag").into_response();
    };
    let tag = format!("\"{}\"", &hex(&Sha256::digest(&bytes))[..32]);
    let matches = if_none_match
        .as_deref()
        .is_some_and(|v| v.trim() == "*" || v.split(',').any(|t| t.trim().trim_start_matches("W/") == tag));
    if let Ok(value) = HeaderValue::from_str(&tag) {
        parts.headers.insert(header::ETAG, value);
    }
    if matches {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(header::CONTENT_TYPE);
        parts.headers.remove(header::CONTENT_LENGTH);
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(bytes))
}
