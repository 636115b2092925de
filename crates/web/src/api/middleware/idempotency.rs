//! `Idempotency-Key` replays for `POST`, as the IETF Idempotency-Key draft describes them.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use driftwatch_core::hex;
use sha2::{Digest, Sha256};

use driftwatch_store::idempotency::{self, Claim};

use super::etag::MAX_BUFFERED;
use crate::AppState;
use crate::api::auth::{bearer_token, may_write};
use crate::api::error::ApiError;
use crate::api::views::{ShownOnceFields, without_fields};

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
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(refused) => return refused,
    };
    let key = Held { account: found.account_id, key: hex(&Sha256::digest(format!("{} {key}", parts.uri.path()))), now };
    let fingerprint = hex(&Sha256::digest(&bytes));
    if let Some(answer) = claim(&state, &key, fingerprint).await {
        return answer;
    }
    // The handler and the answer's bookkeeping run in a task of their own: a client that hangs
    // up does not cancel them halfway, which would leave the key claimed with the work done.
    let store = state.store.clone();
    let request = Request::from_parts(parts, Body::from(bytes));
    let held = key.clone();
    match tokio::spawn(async move { run_and_keep(&store, &held, next, request).await }).await {
        Ok(response) => response,
        Err(e) => {
            let Held { account, key, now } = key;
            let _ = state.store.write(move |c| idempotency::release(c, &account, &key, now)).await;
            ApiError::internal(&format!("the request's task failed: {e}")).into_response()
        }
    }
}

/// A claimed key: the account, the key as stored (`sha256("<path> <key>")`) and the request's time.
#[derive(Clone)]
struct Held {
    account: String,
    key: String,
    now: chrono::NaiveDateTime,
}

/// The request's body, buffered to fingerprint it; a refusal when it is too large or unreadable.
async fn read_body(body: Body) -> Result<axum::body::Bytes, Response> {
    match axum::body::to_bytes(body, MAX_BUFFERED).await {
        Ok(bytes) => Ok(bytes),
        Err(e) if std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>()) => {
            Err(ApiError::with_status(StatusCode::PAYLOAD_TOO_LARGE, "the body is too large").into_response())
        }
        Err(_) => Err(ApiError::bad_request("the body could not be read").into_response()),
    }
}

/// Claims the key for this request; `None` when the handler should run, else the answer: the
/// stored one replayed, 409 while the first request runs, 422 for another body, or an error.
async fn claim(state: &AppState, held: &Held, fingerprint: String) -> Option<Response> {
    let Held { account, key, now } = held.clone();
    let since = now - chrono::TimeDelta::hours(24);
    let abandoned_before = now - chrono::TimeDelta::minutes(ABANDONED_AFTER_MINUTES);
    let claim = state
        .store
        .write(move |c| idempotency::claim(c, &account, &key, &fingerprint, now, since, abandoned_before))
        .await;
    Some(match claim {
        Ok(Claim::Claimed) => return None,
        Ok(Claim::Replay(stored)) => {
            let mut response =
                (StatusCode::from_u16(stored.status as u16).unwrap_or(StatusCode::OK), stored.body).into_response();
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
            response
        }
        Ok(Claim::InFlight) => {
            ApiError::conflict("a request with this Idempotency-Key is still being handled; retry shortly")
                .into_response()
        }
        Ok(Claim::Mismatch) => {
            ApiError::invalid("Idempotency-Key", "this key was used for a different request").into_response()
        }
        Err(e) => ApiError::from(e).into_response(),
    })
}

/// Runs the handler and keeps its answer for replays when it succeeded (without shown-once
/// secrets); any other answer frees the key.
async fn run_and_keep(store: &driftwatch_store::Store, held: &Held, next: Next, request: Request) -> Response {
    let Held { account, key, now } = held.clone();
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
    // What the answer's view marks as shown once (a signing secret, a token) is not kept: a
    // replay carries the record without it.
    let stored = match parts.extensions.get::<ShownOnceFields>() {
        Some(ShownOnceFields(fields)) => without_fields(&bytes, fields),
        None => bytes.to_vec(),
    };
    if let Err(e) = store.write(move |c| idempotency::complete(c, &account, &key, now, status, &stored)).await {
        tracing::warn!(error = %e, "storing an idempotent response failed");
    }
    Response::from_parts(parts, Body::from(bytes))
}
