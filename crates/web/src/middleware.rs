//! Cross-cutting HTTP behaviour: ETags with `If-None-Match`, a per-token rate limit, and
//! `Idempotency-Key` replays for `POST`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use driftwatch_core::{hash_token, hex};
use sha2::{Digest, Sha256};

use driftwatch_store::idempotency::{self, Claim};

use crate::AppState;
use crate::auth::{bearer_token, may_write};
use crate::error::ApiError;

/// Largest body buffered for ETags and idempotent replays.
const MAX_BUFFERED: usize = 8 * 1024 * 1024;

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

/// Buckets kept before idle ones are dropped.
const MAX_BUCKETS: usize = 100_000;

/// Token buckets per API token (by hash): `per_minute` requests a minute, in bursts of as many.
#[derive(Debug)]
pub struct RateLimiter {
    per_minute: u32,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// A limiter; 0 turns limiting off.
    pub fn new(per_minute: u32) -> RateLimiter {
        RateLimiter { per_minute, buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one request from the key's bucket; `Err(seconds)` says when the next one is allowed.
    fn take(&self, key: &str) -> Result<(), u64> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let capacity = f64::from(self.per_minute);
        let per_second = capacity / 60.0;
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() > MAX_BUCKETS {
            // Idle buckets are full again anyway; if even the busy ones are too many (a flood of
            // made-up tokens), start over rather than scan on every request.
            buckets.retain(|_, (_, at)| now.duration_since(*at).as_secs() < 120);
            if buckets.len() > MAX_BUCKETS / 2 {
                buckets.clear();
            }
        }
        let (tokens, at) = buckets.entry(key.to_owned()).or_insert((capacity, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * per_second).min(capacity);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            Err(((1.0 - *tokens) / per_second).ceil().max(1.0) as u64)
        }
    }
}

/// Answers 429 with `Retry-After` when a token goes over its rate.
pub async fn rate_limit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Ok(token) = bearer_token(request.headers())
        && let Err(wait) = state.limiter.take(&hash_token(token))
    {
        let mut response = ApiError::with_status(
            StatusCode::TOO_MANY_REQUESTS,
            format!("this token is over its rate of {} requests a minute", state.limits.rate_limit_per_minute),
        )
        .into_response();
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(wait));
        return response;
    }
    next.run(request).await
}

/// How long a claimed key waits for its request before a crash is assumed and the key freed:
/// longer than the slowest handler (a check with a 300 s fetch, confirmation and refetch).
const ABANDONED_AFTER_MINUTES: i64 = 15;

/// Replays the stored answer to a `POST` that repeats an `Idempotency-Key` of the same token's
/// account on the same path within the retention window; a key reused on that path for a
/// different body is refused (422, as the IETF Idempotency-Key draft says), and a repeat while
/// the first request still runs is a 409. Keys are scoped by path, so one key may name a create
/// of a watch and a create of an endpoint. Only tokens that may write take part: others reach
/// the handler, which refuses them.
pub async fn idempotency(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let key = request.headers().get("idempotency-key").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let token = bearer_token(request.headers()).ok().map(str::to_owned);
    let (Some(key), Some(token), true) = (key, token, request.method() == Method::POST) else {
        return next.run(request).await;
    };
    if key.is_empty() || key.len() > 255 {
        return ApiError::invalid("Idempotency-Key", "must be 1 to 255 characters").into_response();
    }
    let now = state.clock.now().naive_utc();
    let found = state.store.read(move |c| driftwatch_store::accounts::authenticate(c, &token, now)).await;
    let Ok(Some(found)) = found else {
        return next.run(request).await; // the handler answers 401
    };
    // The handler's `Caller` takes the token from here instead of looking it up again.
    let mut request = request;
    request.extensions_mut().insert(found.clone());
    if !may_write(&found) {
        return next.run(request).await; // the handler answers 403; nothing is replayed to a reader
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BUFFERED).await {
        Ok(bytes) => bytes,
        Err(e) if std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>()) => {
            return ApiError::with_status(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large").into_response();
        }
        Err(_) => return ApiError::bad_request("the body could not be read").into_response(),
    };
    let fingerprint = hex(&Sha256::digest(&bytes));
    let key = hex(&Sha256::digest(format!("{} {key}", parts.uri.path())));
    let account = found.account_id;
    let since = now - chrono::TimeDelta::hours(24);
    let abandoned_before = now - chrono::TimeDelta::minutes(ABANDONED_AFTER_MINUTES);
    let (claim_account, claim_key) = (account.clone(), key.clone());
    let claim = state
        .store
        .write(move |c| idempotency::claim(c, &claim_account, &claim_key, &fingerprint, now, since, abandoned_before))
        .await;
    match claim {
        Ok(Claim::Claimed) => {}
        Ok(Claim::Replay(stored)) => {
            let mut response =
                (StatusCode::from_u16(stored.status as u16).unwrap_or(StatusCode::OK), stored.body).into_response();
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
            return response;
        }
        Ok(Claim::InFlight) => {
            return ApiError::conflict("a request with this Idempotency-Key is still being handled; retry shortly")
                .into_response();
        }
        Ok(Claim::Mismatch) => {
            return ApiError::invalid("Idempotency-Key", "this key was used for a different request").into_response();
        }
        Err(e) => return ApiError::from(e).into_response(),
    }
    // The handler and the answer's bookkeeping run in a task of their own: a client that hangs
    // up does not cancel them halfway, which would leave the key claimed with the work done.
    let store = state.store.clone();
    let request = Request::from_parts(parts, Body::from(bytes));
    let (task_account, task_key) = (account.clone(), key.clone());
    let handled = tokio::spawn(async move {
        let (account, key) = (task_account, task_key);
        let response = next.run(request).await;
        let (parts, body) = response.into_parts();
        let bytes = match axum::body::to_bytes(body, MAX_BUFFERED).await {
            Ok(bytes) if parts.status.is_success() => bytes,
            result => {
                // Not an answer to replay (a failure, or too large to keep): free the key.
                if let Err(e) = store.write(move |c| idempotency::release(c, &account, &key, now)).await {
                    tracing::warn!(error = %e, "releasing an idempotency key failed");
                }
                return match result {
                    Ok(bytes) => Response::from_parts(parts, Body::from(bytes)),
                    Err(_) => ApiError::internal(&"response too large to buffer").into_response(),
                };
            }
        };
        let status = i32::from(parts.status.as_u16());
        let stored = without_shown_once_secrets(&bytes);
        if let Err(e) = store.write(move |c| idempotency::complete(c, &account, &key, now, status, &stored)).await {
            tracing::warn!(error = %e, "storing an idempotent response failed");
        }
        Response::from_parts(parts, Body::from(bytes))
    });
    match handled.await {
        Ok(response) => response,
        Err(e) => {
            let store = state.store.clone();
            let _ = store.write(move |c| idempotency::release(c, &account, &key, now)).await;
            ApiError::internal(&format!("the request's task failed: {e}")).into_response()
        }
    }
}

/// The answer as stored for replays: an API token's plaintext (shown once, stored nowhere else
/// but as a hash) is left out, so a replay of `POST /tokens` carries the token's record only.
fn without_shown_once_secrets(body: &[u8]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut object)) if object.get("token").is_some_and(|t| t.is_string()) => {
            object.remove("token");
            serde_json::to_vec(&object).unwrap_or_default()
        }
        _ => body.to_vec(),
    }
}

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
