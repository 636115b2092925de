//! Rendering: the layout every page shares, the error pages, and how times are shown.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, NaiveDateTime, Utc};
use chrono_tz::Tz;

use super::assets;
use super::session::Viewer;

/// What the layout needs besides the page: who is signed in, the form token, the section.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The page title (before " · driftwatch").
    pub title: String,
    /// Which navigation entry is current (`watches`, `changes`, ...).
    pub section: &'static str,
    /// The signed-in user's email (no navigation when signed out).
    pub email: Option<String>,
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
    /// The layout of a signed-in page.
    pub fn signed_in(viewer: &Viewer, section: &'static str, title: impl Into<String>) -> Layout {
        Layout {
            title: title.into(),
            section,
            email: Some(viewer.user.email.clone()),
            csrf: viewer.session.csrf_token.clone(),
            ..Layout::public("")
        }
    }

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

/// The page shown for every error.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    layout: Layout,
    status: u16,
    heading: String,
    message: String,
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
    /// 500/503, logged once here.
    Server(String, bool),
}

impl From<driftwatch_store::StoreError> for UiError {
    fn from(e: driftwatch_store::StoreError) -> UiError {
        use driftwatch_store::StoreError;
        match e {
            StoreError::Conflict(what) => UiError::Conflict(what),
            StoreError::Pool(_) => UiError::Server(e.to_string(), true),
            other => UiError::Server(other.to_string(), false),
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
            UiError::Server(error, unavailable) => {
                tracing::error!(error = %error, "page request failed");
                if unavailable {
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        "Unavailable",
                        "The database is unavailable; try again shortly.".into(),
                    )
                } else {
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "Something failed",
                        "The server failed; the error was logged.".into(),
                    )
                }
            }
        };
        let page = ErrorPage {
            layout: Layout::public(heading),
            status: status.as_u16(),
            heading: heading.to_owned(),
            message,
        };
        let mut response = render(status, &page);
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// The 404 page for paths outside the API.
pub async fn not_found() -> Response {
    UiError::NotFound("page").into_response()
}

/// The URL people reach this server at: the configured public URL, else the request's host.
pub fn public_base(state: &crate::AppState, headers: &axum::http::HeaderMap) -> String {
    match &state.ui.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!("http://{}", headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost")),
    }
}

/// "5 minutes", "2 hours": a duration for people.
pub fn human_seconds(seconds: u64) -> String {
    let (n, unit) = match seconds {
        0..60 => (seconds, "second"),
        60..3_600 => (seconds / 60, "minute"),
        3_600..86_400 => (seconds / 3_600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// A time as shown in pages: relative to now, with the exact time (in the viewer's zone) for
/// the hover title and the machine-readable `datetime`.
#[derive(Debug, Clone)]
pub struct When {
    /// RFC 3339 UTC.
    pub iso: String,
    /// `2026-12-03 14:05:09 CET`.
    pub exact: String,
    /// `3 minutes ago`, `in 5 minutes`.
    pub relative: String,
}

impl When {
    /// Formats `t` for a viewer in `zone` at `now`.
    pub fn new(t: NaiveDateTime, now: DateTime<Utc>, zone: &str) -> When {
        let utc = t.and_utc();
        let tz: Tz = zone.parse().unwrap_or(Tz::UTC);
        let delta = (utc - now).num_seconds();
        let relative = match delta {
            -59..=59 => "just now".to_owned(),
            d if d < 0 => format!("{} ago", human_seconds(d.unsigned_abs())),
            d => format!("in {}", human_seconds(d as u64)),
        };
        When {
            iso: utc.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            exact: utc.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S %Z").to_string(),
            relative,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn durations_and_times_read_naturally() {
        assert_eq!(human_seconds(1), "1 second");
        assert_eq!(human_seconds(150), "2 minutes");
        assert_eq!(human_seconds(86_400 * 3), "3 days");
        let now = DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").expect("time").with_timezone(&Utc);
        let when = When::new((now - chrono::TimeDelta::minutes(5)).naive_utc(), now, "Europe/Paris");
        assert_eq!(when.relative, "5 minutes ago");
        assert_eq!(when.exact, "2026-12-03 12:55:00 CET");
        assert_eq!(When::new((now + chrono::TimeDelta::hours(2)).naive_utc(), now, "UTC").relative, "in 2 hours");
    }
}
