//! What a page answers when something goes wrong: one error type for every UI handler, and the
//! error page.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use super::layout::{Layout, render};
use super::present::human_seconds;

/// The page shown for every error.
#[derive(Clone, Template)]
#[template(path = "error.html")]
pub(super) struct ErrorPage {
    pub(super) layout: Layout,
    pub(super) status: u16,
    pub(super) heading: String,
    pub(super) message: String,
}

/// What a page handler can fail with; each answers a page in the site's layout.
#[derive(Debug)]
pub enum UiError {
    /// No session: to the sign-in page (back to `next` afterwards).
    SignIn {
        /// Where to go after signing in (only for `GET`s).
        next: Option<String>,
    },
    /// 404, also for other accounts' ids.
    NotFound(&'static str),
    /// 403: a form without its token, or from another site.
    Forbidden(String),
    /// 400: a form that cannot be read.
    BadRequest(String),
    /// 429: too many attempts; try again after the given seconds.
    TooMany(u64),
    /// 409: the action conflicts with the current state.
    Conflict(String),
    /// 500, logged once here.
    Server(String),
    /// 503: the database is unavailable (logged once here).
    Unavailable(String),
}

impl From<driftwatch_store::StoreError> for UiError {
    fn from(e: driftwatch_store::StoreError) -> UiError {
        use driftwatch_store::StoreError;
        match e {
            StoreError::Conflict(what) => UiError::Conflict(what),
            StoreError::Pool(_) => UiError::Unavailable(e.to_string()),
            other => UiError::Server(other.to_string()),
        }
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let retry_after = match self {
            UiError::TooMany(seconds) => Some(seconds),
            _ => None,
        };
        let (status, heading, message) = match self {
            UiError::SignIn { next } => {
                let target = match next.filter(|n| n.starts_with('/') && !n.starts_with("//")) {
                    Some(next) if next != "/" => {
                        format!(
                            "/sign-in?next={}",
                            form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
                        )
                    }
                    _ => "/sign-in".to_owned(),
                };
                return Redirect::to(&target).into_response();
            }
            UiError::NotFound(what) => (StatusCode::NOT_FOUND, "Not found", format!("There is no such {what} here.")),
            UiError::Forbidden(why) => (StatusCode::FORBIDDEN, "Forbidden", why),
            UiError::BadRequest(why) => (StatusCode::BAD_REQUEST, "Bad request", why),
            UiError::Conflict(why) => (StatusCode::CONFLICT, "Conflict", why),
            UiError::TooMany(seconds) => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many attempts",
                format!("Too many failed sign-ins. Try again in {}.", human_seconds(seconds)),
            ),
            UiError::Unavailable(error) => {
                tracing::error!(error = %error, "page request failed");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Unavailable",
                    "The database is unavailable; try again shortly.".into(),
                )
            }
            UiError::Server(error) => {
                tracing::error!(error = %error, "page request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something failed",
                    "The server failed; the error was logged.".into(),
                )
            }
        };
        let page = ErrorPage {
            layout: Layout::public(heading),
            status: status.as_u16(),
            heading: heading.to_owned(),
            message,
        };
        let mut response = render(status, &page);
        // Rendered without knowing who asked: `signed_in::with_viewer` shows it again in the signed-in
        // layout (navigation, sign-out) when a session sent the request.
        response.extensions_mut().insert(Shown(page));
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// An error page as first rendered (in the public layout).
#[derive(Clone)]
pub(super) struct Shown(pub(super) ErrorPage);

/// The 404 page for paths outside the API.
pub async fn not_found() -> Response {
    UiError::NotFound("page").into_response()
}

#[cfg(test)]
mod tests {
    use askama::Template as _;

    use super::*;
    use crate::ui::assets;

    #[test]
    fn errors_render_in_the_layout_with_their_status() {
        let response = UiError::NotFound("watch").into_response();
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
        let response = UiError::TooMany(90).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "90");
        let page = ErrorPage {
            layout: Layout::public("Not found"),
            status: 404,
            heading: "Not found".into(),
            message: "<script>alert(1)</script>".into(),
        };
        let html = page.render().expect("renders");
        assert!(html.contains("<main id=\"main\">") && html.contains("Error 404"), "{html}");
        assert!(html.contains("&#60;script&#62;") || html.contains("&lt;script&gt;"), "escaped: {html}");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains(assets::css_url()), "the hashed stylesheet");
    }

    #[test]
    fn sign_in_redirects_keep_only_local_paths() {
        let to = |next: &str| {
            UiError::SignIn { next: Some(next.into()) }.into_response().headers()[header::LOCATION].clone()
        };
        assert_eq!(to("/watches/wat_1?view=side"), "/sign-in?next=%2Fwatches%2Fwat_1%3Fview%3Dside");
        assert_eq!(to("//evil.example/"), "/sign-in");
        assert_eq!(to("https://evil.example/"), "/sign-in");
    }
}
