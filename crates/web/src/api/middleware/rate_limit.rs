//! A per-token rate limit: token buckets by the token's hash, 429 with `Retry-After` when empty.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use driftwatch_core::hash_token;

use crate::AppState;
use crate::api::auth::bearer_token;
use crate::api::error::ApiError;

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
