//! What operators and their tools read: `/metrics` (Prometheus), `/readyz` (readiness) and the
//! middleware that counts every HTTP request by route template.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use driftwatch_metrics::{Metrics, PoolState};
use subtle::ConstantTimeEq as _;
use tokio_util::sync::CancellationToken;

use crate::AppState;

/// Settings and state of the operations endpoints.
#[derive(Clone)]
pub struct Ops {
    /// What is counted, and exposed at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// When set, `/metrics` asks for `Authorization: Bearer <token>`.
    pub metrics_token: Option<String>,
    /// Whether the main router serves `/metrics` (false when it has a listener of its own,
    /// see [`crate::metrics_router`]).
    pub metrics_on_main: bool,
    /// Cancelled when this node starts to drain: `/readyz` answers 503 from then on, so a load
    /// balancer stops sending it work before it exits.
    pub draining: CancellationToken,
}

impl Default for Ops {
    fn default() -> Self {
        Ops {
            metrics: Arc::new(Metrics::default()),
            metrics_token: None,
            metrics_on_main: true,
            draining: CancellationToken::new(),
        }
    }
}

/// `GET /metrics`: the exposition, with the database's state read now.
pub(crate) async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = state.ops.metrics_token.as_deref() {
        let sent = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !bool::from(sent.as_bytes().ct_eq(token.as_bytes())) {
            return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], "a metrics token is required\n")
                .into_response();
        }
    }
    let now = state.clock.now().naive_utc();
    let read = state.store.read(move |c| driftwatch_store::stats::operations(c, now)).await;
    let operations = match read {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "reading the state for /metrics failed");
            return (StatusCode::SERVICE_UNAVAILABLE, "the database did not answer\n").into_response();
        }
    };
    let age = |since: Option<chrono::NaiveDateTime>| {
        since.map_or(0.0, |at| (now - at).num_milliseconds().max(0) as f64 / 1000.0)
    };
    let (in_use, idle, max) = state.store.pool_state();
    let browser_memory_bytes = match state.runner.browsers() {
        Some(browsers) => browsers.memory().await.unwrap_or(0),
        None => 0,
    };
    state.ops.metrics.set_state(&driftwatch_metrics::State {
        scheduler_lag_seconds: age(operations.oldest_due_watch),
        outbox: [
            ("pending", operations.pending),
            ("retrying", operations.retrying),
            ("in_flight", operations.in_flight),
        ],
        oldest_due_delivery_seconds: age(operations.oldest_due_delivery),
        dead_letters: operations.dead,
        endpoints: [
            ("closed", operations.circuits_closed),
            ("open", operations.circuits_open),
            ("half_open", operations.circuits_half_open),
            ("disabled", operations.endpoints_disabled),
        ],
        recoveries_running: operations.recoveries_running,
        pool: PoolState { in_use, idle, max },
        browser_memory_bytes,
    });
    ([(header::CONTENT_TYPE, driftwatch_metrics::CONTENT_TYPE)], state.ops.metrics.encode()).into_response()
}

/// `GET /readyz`: 200 when the database answers, its schema is this build's, and the node is
/// not draining; 503 with the reason otherwise. `/healthz` stays the liveness probe.
///
/// A node without a browser while watches render (or may) is still ready: it serves the API,
/// the UI and every HTTP watch, and taking it out of a load balancer would not bring a browser
/// back. It answers 200 with a second line, `degraded: browser: <why>`, for people and probes
/// that read the body.
pub(crate) async fn ready(State(state): State<AppState>) -> Response {
    if state.ops.draining.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining: this node is shutting down\n").into_response();
    }
    match state.store.pending_migrations().await {
        Ok(0) => match state.runner.browser_shortfall().await {
            Ok(Some(why)) => (StatusCode::OK, format!("ready\ndegraded: browser: {why}\n")).into_response(),
            Ok(None) => (StatusCode::OK, "ready\n").into_response(),
            Err(e) => {
                tracing::warn!(error = %e, "readiness: the database did not answer");
                (StatusCode::SERVICE_UNAVAILABLE, "the database did not answer\n").into_response()
            }
        },
        Ok(n) => (StatusCode::SERVICE_UNAVAILABLE, format!("{n} migrations are not applied yet\n")).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness: the database did not answer");
            (StatusCode::SERVICE_UNAVAILABLE, "the database did not answer\n").into_response()
        }
    }
}

/// Counts each request by route template (never the raw path: ids would make the label
/// unbounded), method and status, with its duration.
pub(crate) async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str).to_owned();
    let method = bounded_method(request.method());
    let started = Instant::now();
    let response = next.run(request).await;
    metrics.http_request(&route, method, response.status().as_u16(), started.elapsed());
    response
}

/// The method as a label; anything unusual is `other`, so a client cannot grow the label set.
fn bounded_method(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}
