//! The layout every page shares, and rendering a page as a response.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::assets;

/// What the layout needs besides the page: who is signed in, the form token, the section.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The page title (before " · driftwatch").
    pub title: String,
    /// Which navigation entry is current (`watches`, `changes`, ...).
    pub section: &'static str,
    /// The signed-in user's email (no navigation when signed out).
    pub email: Option<String>,
    /// The name of the signed-in user's account.
    pub account: Option<String>,
    /// The session's CSRF token, for forms.
    pub csrf: String,
    /// A message from the previous action.
    pub notice: Option<String>,
    /// Stylesheet URL (content-hashed).
    pub css: &'static str,
    /// Script URL (content-hashed).
    pub js: &'static str,
}

impl Layout {
    /// The layout of a page shown signed out (sign-in, setup, errors).
    pub fn public(title: impl Into<String>) -> Layout {
        Layout { title: title.into(), css: assets::css_url(), js: assets::js_url(), ..Layout::default() }
    }

    /// With a notice shown above the page.
    pub fn with_notice(mut self, notice: Option<String>) -> Layout {
        self.notice = notice;
        self
    }
}

/// Renders a template as an HTML response; a render failure is logged and answered with 500.
pub fn render<T: Template>(status: StatusCode, page: &T) -> Response {
    match page.render() {
        Ok(html) => {
            let mut response = (status, html).into_response();
            response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(e) => {
            tracing::error!(error = %e, "rendering a page failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "the page could not be rendered; the error was logged").into_response()
        }
    }
}

/// An HTML page (200).
pub fn html<T: Template>(page: &T) -> Response {
    render(StatusCode::OK, page)
}
