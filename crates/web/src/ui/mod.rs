//! The browser UI: server-rendered pages (askama templates in `web/templates/`), beside the API
//! as a sibling with its own routes, error pages, session and CSRF checks.
//!
//! Handlers here read and change data only through the store's functions and the rules of
//! `driftwatch-validate`, the same ones the API calls; templates only present. A page request
//! is scoped to the signed-in user's account: another account's id is the 404 page.

mod account;
mod account_model;
mod account_quiet;
mod assets;
mod changes;
mod chart;
mod deliveries;
mod diff;
mod endpoint_channel;
mod endpoint_form;
mod endpoint_timing;
mod endpoints;
mod error;
mod flash;
mod form;
mod import;
mod layout;
mod present;
mod proxies;
mod screenshots;
mod secrets;
mod session;
mod sign_in;
mod signed_in;
mod steps;
mod tokens;
mod verdict;
mod watch;
mod watch_form;
mod watches;

use std::sync::Mutex;

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};

pub use error::UiError;
pub use layout::Layout;
pub use session::{SignInThrottle, Viewer};

use crate::AppState;

/// Settings of the browser UI.
#[derive(Debug, Clone, Default)]
pub struct UiSettings {
    /// The URL people reach driftwatch at (`https://...` makes cookies `Secure`).
    pub public_url: Option<String>,
    /// How long sessions live.
    pub session_limits: driftwatch_store::users::SessionLimits,
}

impl UiSettings {
    /// Whether cookies carry `Secure` (the public URL is https).
    pub fn secure_cookies(&self) -> bool {
        self.public_url.as_deref().is_some_and(|u| u.starts_with("https://"))
    }
}

/// The one-time code that lets the first user set up a fresh install; gone once used.
#[derive(Debug, Default)]
pub struct SetupCode(Mutex<Option<String>>);

impl SetupCode {
    /// A new random code (call only while no user exists).
    pub fn issue(&self) -> String {
        let code = driftwatch_core::new_random_key("");
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(code.clone());
        code
    }

    /// Whether `code` is the current one.
    pub(crate) fn matches(&self, code: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        let current = self.0.lock().unwrap_or_else(|e| e.into_inner());
        current.as_deref().is_some_and(|c| bool::from(c.as_bytes().ct_eq(code.as_bytes())))
    }

    /// Takes the code if it is `code`, so it works once.
    pub(crate) fn take(&self, code: &str) -> bool {
        let mut current = self.0.lock().unwrap_or_else(|e| e.into_inner());
        use subtle::ConstantTimeEq as _;
        if current.as_deref().is_some_and(|c| bool::from(c.as_bytes().ct_eq(code.as_bytes()))) {
            *current = None;
            return true;
        }
        false
    }

    /// Forgets the code (setup done elsewhere).
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Every page route.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/static/{file}", get(assets::serve))
        .route("/setup", get(sign_in::setup_form).post(sign_in::setup))
        .route("/sign-in", get(sign_in::form).post(sign_in::sign_in))
        .route("/sign-out", post(sign_in::sign_out))
        .route("/sign-out-everywhere", post(sign_in::sign_out_everywhere))
        .route("/signed-out", get(sign_in::signed_out))
        .route("/", get(watches::list))
        .route("/watches/rows", get(watches::rows_fragment))
        .route("/watches/new", get(watch_form::new).post(watch_form::create))
        .route("/watches/{id}/edit", get(watch_form::edit).post(watch_form::update))
        .route("/watches/{id}", get(watch::show))
        .route("/watches/bulk", post(watches::bulk))
        .route("/watches/{id}/check", post(watch::check))
        .route("/watches/{id}/changes/{event_id}/release", post(watch::release))
        .route("/watches/{id}/pause", post(watch::pause))
        .route("/watches/{id}/resume", post(watch::resume))
        .route("/watches/{id}/mute", post(watch::mute))
        .route("/watches/{id}/unmute", post(watch::unmute))
        .route("/watches/{id}/delete", get(watch::confirm_delete).post(watch::delete))
        .route("/watches/{id}/export", get(watch::export))
        .route("/watches/{id}/session", post(watch::session::import))
        .route("/watches/{id}/session/forget", post(watch::session::forget))
        .route("/watches/{id}/values.csv", get(watch::values_csv))
        .route("/watches/{id}/snapshots/{snapshot_id}/screenshot", get(screenshots::screenshot))
        .route("/watches/{id}/snapshots/{snapshot_id}/visual-diff", get(screenshots::visual_diff))
        .route(
            "/import",
            get(import::page)
                .post(import::preview)
                .layer(axum::extract::DefaultBodyLimit::max(import::MAX_UPLOAD_BYTES + 64 * 1024)),
        )
        .route("/import/{id}", post(import::confirm))
        .route("/changes", get(changes::list))
        .route("/endpoints", get(endpoints::list))
        .route("/endpoints/new", get(endpoint_form::new).post(endpoint_form::create))
        .route("/endpoints/import", post(endpoint_form::import))
        .route("/endpoints/{id}", get(endpoints::show))
        .route("/endpoints/{id}/edit", get(endpoint_form::edit).post(endpoint_form::update))
        .route("/endpoints/{id}/enable", post(endpoints::enable))
        .route("/endpoints/{id}/disable", post(endpoints::disable))
        .route("/endpoints/{id}/rotate-secret", post(endpoints::rotate))
        .route("/endpoints/{id}/remove-secret", post(endpoint_form::remove_secret))
        .route("/endpoints/{id}/test", post(endpoints::test))
        .route("/endpoints/{id}/recover", post(endpoints::recovery::recover))
        .route("/recoveries/{id}", get(endpoints::recovery::recovery))
        .route("/proxies", get(proxies::list).post(proxies::create))
        .route("/proxies/{name}", post(proxies::replace))
        .route("/proxies/{name}/test", post(proxies::test))
        .route("/proxies/{name}/delete", post(proxies::delete))
        .route("/tokens", get(tokens::list).post(tokens::create))
        .route("/tokens/{id}/revoke", post(tokens::revoke))
        .route("/secrets", get(secrets::list).post(secrets::create))
        .route("/secrets/{name}/replace", post(secrets::replace))
        .route("/secrets/{name}/delete", post(secrets::delete))
        .route("/account", get(account::show))
        .route("/account/time-zone", post(account::set_time_zone))
        .route("/account/password", post(account::set_password))
        .route("/account/users", post(account::add_user))
        .route("/account/feed-key", post(account::feed_key))
        .route("/account/model", post(account_model::save))
        .route("/account/quiet-hours", post(account_quiet::save))
        .route("/account/model/remove-key", post(account_model::remove_key))
        .route("/account/model/clear", post(account_model::clear))
        .route("/deliveries", get(deliveries::list))
        .route("/dlq", get(deliveries::dead_letters))
        .route("/deliveries/{id}", get(deliveries::show))
        .route("/deliveries/{id}/redeliver", post(deliveries::redeliver))
        .route("/feeds/{key}", get(changes::atom))
}

/// The 404 page for paths outside the API.
pub use error::not_found;
pub use signed_in::with_viewer;

/// Total bytes of CSS and JS a page loads (reported by the render benchmark).
pub fn asset_bytes() -> usize {
    assets::total_bytes()
}

/// Security headers on every answer: a strict Content-Security-Policy (everything from this
/// server, no inline script, no framing), no MIME sniffing, referrers kept on this site.
pub async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; \
             form-action 'self'; frame-ancestors 'none'",
        ),
    );
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}
