//! The HTTP surface: the REST API under `/api/v1` (JSON in and out, `application/problem+json`
//! errors, bearer tokens, an OpenAPI 3.1 document at `/api/v1/openapi.json`), the browser UI
//! beside it (`ui`: server-rendered pages, sessions, CSRF) and a health check.
//!
//! Every handler resolves the caller's account from its token first and passes it to each
//! store query, so another account's id is simply not found (404), never forbidden.

mod api;
mod backtest;
mod logins;
mod mcp;
mod ops;
mod proxies;
mod server;
pub mod ui;

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::get;
use driftwatch_core::Clock;
use driftwatch_delivery::DeliveryWorker;
use driftwatch_net::TargetPolicy;
use driftwatch_schedule::Runner;
use driftwatch_store::Store;
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use api::document as openapi;
pub use api::error::ApiError;
pub use api::middleware::RateLimiter;
pub use ops::Ops;
pub use server::ServerLimits;

/// Limits and defaults of what the API accepts.
#[derive(Debug, Clone)]
pub struct ApiLimits {
    /// Shortest allowed check interval.
    pub min_interval_seconds: i64,
    /// Interval of a watch created without one.
    pub default_interval_seconds: i64,
    /// How long a rotated-out endpoint secret keeps signing.
    pub secret_rotation_overlap: std::time::Duration,
    /// API requests a minute per token (0: no limit).
    pub rate_limit_per_minute: u32,
    /// Whether this node has a browser (watches with the `browser` engine need one).
    pub browser_available: bool,
    /// Open MCP sessions at most.
    pub mcp_max_sessions: usize,
}

impl ApiLimits {
    /// The limits the rules of `driftwatch-validate` apply.
    pub fn rules(&self) -> driftwatch_validate::Limits {
        driftwatch_validate::Limits {
            min_interval_seconds: self.min_interval_seconds,
            default_interval_seconds: self.default_interval_seconds,
            browser_available: self.browser_available,
        }
    }
}

impl Default for ApiLimits {
    fn default() -> Self {
        ApiLimits {
            min_interval_seconds: 30,
            default_interval_seconds: 3600,
            secret_rotation_overlap: std::time::Duration::from_secs(86_400),
            rate_limit_per_minute: 600,
            mcp_max_sessions: 1000,
            browser_available: false,
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
    /// Asks language models (the backtest of an intent) through the cache and budgets.
    pub judge: driftwatch_ai::Judge,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Which URLs watches and endpoints may name.
    pub policy: TargetPolicy,
    /// Input limits.
    pub limits: ApiLimits,
    /// Per-token request budgets.
    pub limiter: std::sync::Arc<api::middleware::RateLimiter>,
    /// Settings of the browser UI.
    pub ui: ui::UiSettings,
    /// The first-run setup code, while no user exists.
    pub setup: Arc<ui::SetupCode>,
    /// Failed sign-ins per email and address.
    pub throttle: Arc<ui::SignInThrottle>,
    /// Metrics and readiness.
    pub ops: Ops,
    /// Seals secrets before they are stored (`None`: stored as given, which only tests do).
    pub keyring: Option<driftwatch_core::Keyring>,
}

impl AppState {
    /// `plaintext` as stored: sealed when a key is configured.
    pub fn seal(&self, plaintext: &str) -> String {
        match &self.keyring {
            Some(keyring) => keyring.seal(plaintext),
            None => plaintext.to_owned(),
        }
    }

    /// A new endpoint as stored: its signing secret (none for a kind that does not sign), its
    /// kind's secrets and its credential URL sealed.
    pub fn sealed(&self, endpoint: &driftwatch_store::Endpoint) -> driftwatch_store::Endpoint {
        endpoint.sealed(|s| self.seal(s))
    }

    /// `changes` as stored: new secrets and a new credential URL sealed.
    pub fn seal_changes(&self, changes: &mut driftwatch_store::endpoints::EndpointChanges) {
        for value in [&mut changes.secrets, &mut changes.url_secret] {
            if let Some(Some(plaintext)) = value {
                *plaintext = self.seal(plaintext);
            }
        }
    }

    /// A stored secret opened; `None` when it cannot be (logged, never shown).
    pub fn open(&self, stored: &str) -> Option<String> {
        match &self.keyring {
            Some(keyring) => keyring
                .open(stored)
                .inspect_err(|e| tracing::warn!(error = %e, "a stored secret cannot be opened"))
                .ok(),
            None if driftwatch_core::is_sealed(stored) => None,
            None => Some(stored.to_owned()),
        }
    }
}

/// Makes an `x-request-id` for requests that come without one.
#[derive(Debug, Clone, Copy)]
struct MakeId;

impl MakeRequestId for MakeId {
    fn make_request_id<B>(&mut self, _: &axum::http::Request<B>) -> Option<RequestId> {
        axum::http::HeaderValue::from_str(&driftwatch_core::new_id(driftwatch_core::IdKind::Request))
            .ok()
            .map(RequestId::new)
    }
}

/// Serves the router on `listener` within `limits` until `shutdown` is cancelled, finishing
/// requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    limits: ServerLimits,
    shutdown: tokio_util::sync::CancellationToken,
) {
    server::serve_router(listener, router(state), limits, shutdown).await;
}

/// Serves [`metrics_router`] on `listener` within `limits` until `shutdown` is cancelled.
pub async fn serve_metrics(
    listener: tokio::net::TcpListener,
    state: AppState,
    limits: ServerLimits,
    shutdown: tokio_util::sync::CancellationToken,
) {
    server::serve_router(listener, metrics_router(state), limits, shutdown).await;
}

/// The diff of two snapshots within [`driftwatch_diff::DiffLimits::VIEW`], on the blocking
/// pool: a diff is CPU work on whatever text a page had, never done on the async threads.
pub(crate) async fn snapshot_diff(
    from: &driftwatch_store::Snapshot,
    to: &driftwatch_store::Snapshot,
) -> Result<driftwatch_diff::TextChange, tokio::task::JoinError> {
    let (old, new, old_id, new_id) = (from.content.clone(), to.content.clone(), from.id.clone(), to.id.clone());
    tokio::task::spawn_blocking(move || driftwatch_diff::diff_texts(&old, &new, &old_id, &new_id)).await
}

/// Unknown paths: a problem document under `/api`, the 404 page elsewhere.
async fn fallback(uri: axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if uri.path() == "/api" || uri.path().starts_with("/api/") {
        ApiError::not_found("no such route").into_response()
    } else {
        ui::not_found().await
    }
}

/// `/metrics` alone, for a listener of its own (`DRIFTWATCH_METRICS_LISTEN`).
pub fn metrics_router(state: AppState) -> Router {
    Router::new().route("/metrics", get(ops::metrics)).with_state(state)
}

/// The whole application router: the API, the UI and, at `/mcp`, the MCP server, whose tools
/// call the rest in-process.
pub fn router(state: AppState) -> Router {
    let app = app_router(state.clone());
    app.clone().merge(mcp::routes(state, app))
}

/// Everything but `/mcp`.
fn app_router(state: AppState) -> Router {
    let mut router = Router::new().route("/healthz", get(|| async { "ok" })).route("/readyz", get(ops::ready));
    if state.ops.metrics_on_main {
        router = router.route("/metrics", get(ops::metrics));
    }
    router
        .nest(
            "/api/v1",
            api::routes()
                .split_for_parts()
                .0
                .method_not_allowed_fallback(|| async {
                    ApiError::with_status(StatusCode::METHOD_NOT_ALLOWED, "this path does not take that method")
                })
                .layer(axum::middleware::from_fn_with_state(state.clone(), api::middleware::idempotency))
                .layer(axum::middleware::from_fn(api::middleware::etag))
                .layer(axum::middleware::from_fn_with_state(state.clone(), api::middleware::rate_limit))
                .layer(axum::middleware::from_fn(api::middleware::no_nul)),
        )
        .merge(ui::routes())
        .fallback(fallback)
        .layer(axum::middleware::from_fn_with_state(state.clone(), ui::with_viewer))
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&state.ops.metrics), ops::track))
        .layer(axum::middleware::from_fn(ui::security_headers))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(TraceLayer::new_for_http().make_span_with(|request: &axum::http::Request<axum::body::Body>| {
            let id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
            tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id = %id)
        }))
        .layer(SetRequestIdLayer::x_request_id(MakeId))
        .with_state(state)
}

/// A stored screenshot as an HTTP answer: its own type, cached for good by its owner only (it
/// is stored by content: the same URL always answers the same bytes).
pub(crate) fn screenshot_response(shot: driftwatch_store::screenshots::StoredScreenshot) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    (
        [
            (header::CONTENT_TYPE, shot.content_type().to_owned()),
            (header::CACHE_CONTROL, "private, max-age=31536000, immutable".to_owned()),
            (header::ETAG, format!("\"{}\"", shot.hash)),
        ],
        shot.bytes,
    )
        .into_response()
}
