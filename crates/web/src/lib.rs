//! The HTTP surface: the REST API under `/api/v1` (JSON in and out, `application/problem+json`
//! errors, bearer tokens) and a health check.
//!
//! Every handler resolves the caller's account from its token first and passes it to each
//! store query, so another account's id is simply not found (404), never forbidden.

mod api;
mod auth;
mod error;
mod extract;
mod views;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use driftwatch_core::Clock;
use driftwatch_delivery::DeliveryWorker;
use driftwatch_net::TargetPolicy;
use driftwatch_schedule::Runner;
use driftwatch_store::Store;

pub use error::ApiError;

/// Limits and defaults of what the API accepts.
#[derive(Debug, Clone)]
pub struct ApiLimits {
    /// Shortest allowed check interval.
    pub min_interval_seconds: i64,
    /// Interval of a watch created without one.
    pub default_interval_seconds: i64,
    /// How long a rotated-out endpoint secret keeps signing.
    pub secret_rotation_overlap: std::time::Duration,
}

impl Default for ApiLimits {
    fn default() -> Self {
        ApiLimits {
            min_interval_seconds: 30,
            default_interval_seconds: 3600,
            secret_rotation_overlap: std::time::Duration::from_secs(86_400),
        }
    }
}

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// For checks on demand, and to wake it when watches change.
    pub runner: Runner,
    /// For redeliveries, and to wake it when deliveries are queued.
    pub worker: DeliveryWorker,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Which URLs watches and endpoints may name.
    pub policy: TargetPolicy,
    /// Input limits.
    pub limits: ApiLimits,
}

/// Serves the router on `listener` until `shutdown` is cancelled, finishing requests in flight.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState, shutdown: tokio_util::sync::CancellationToken) {
    let served = axum::serve(listener, router(state)).with_graceful_shutdown(shutdown.cancelled_owned()).await;
    if let Err(e) = served {
        tracing::error!(error = %e, "the HTTP server failed");
    }
}

/// The whole application router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .nest("/api/v1", api::routes())
        .fallback(|| async { ApiError::not_found("no such route") })
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}
