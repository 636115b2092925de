//! Error pages shown again in the signed-in layout. Apart from `error` (which renders pages
//! without knowing who asked) because it needs the session, which itself answers `UiError`s.

use axum::http::header;
use axum::response::Response;

use super::error::{ErrorPage, Shown};
use super::layout::{Layout, render};
use super::session::Viewer;

/// Error pages for a signed-in user keep the site's navigation and sign-out: an error page is
/// rendered where no session is known (a path that does not exist, an extractor's rejection),
/// so this shows it again in the viewer's layout when the request carried a live session.
pub async fn with_viewer(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use axum::extract::FromRequestParts as _;
    if request.uri().path().starts_with("/api/") || !request.headers().contains_key(header::COOKIE) {
        // The API answers problem documents, and without a cookie there is no session.
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let (method, uri, headers) = (parts.method.clone(), parts.uri.clone(), parts.headers.clone());
    let response = next.run(axum::extract::Request::from_parts(parts, body)).await;
    let Some(Shown(page)) = response.extensions().get::<Shown>().cloned() else { return response };
    let mut probe = axum::http::Request::builder().method(method).uri(uri).body(()).map(|r| r.into_parts().0);
    let Ok(probe) = probe.as_mut() else { return response };
    probe.headers = headers;
    let Ok(viewer) = Viewer::from_request_parts(probe, &state).await else { return response };
    let status = response.status();
    let page = ErrorPage { layout: Layout::signed_in(&viewer, "", page.heading.clone()), ..page };
    let mut again = render(status, &page);
    for (name, value) in response.headers() {
        if !again.headers().contains_key(name) {
            again.headers_mut().insert(name.clone(), value.clone());
        }
    }
    again
}
