//! The watch page's session part: what the watch's kept session holds (never its cookies), a
//! button to forget it, and a `cookies.txt` to import as its session.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_store::logins;
use serde::Deserialize;

use super::{WatchQuery, find, watch_page};
use crate::AppState;
use crate::ui::error::UiError;
use crate::ui::flash;
use crate::ui::layout::render;
use crate::ui::present::When;
use crate::ui::session::{Post, Viewer};

/// A watch's session as its page shows it.
#[derive(Debug, Clone, Default)]
pub struct SessionView {
    /// A session is kept.
    pub kept: bool,
    /// The options keep it (`options.fetch.session.keep`).
    pub keep: bool,
    /// It was imported from a `cookies.txt` (and no check has saved it since).
    pub imported: bool,
    /// When it was last saved.
    pub updated: Option<When>,
    /// Cookies in it.
    pub cookies: i32,
    /// Logins that made it.
    pub logins: i64,
    /// Why the import just failed (what was pasted is not shown again: it is a credential).
    pub error: Option<String>,
}

/// The session of `watch_id` as its page shows it.
pub(super) async fn session_view(
    state: &AppState,
    viewer: &Viewer,
    watch_id: &str,
    keep: bool,
) -> Result<SessionView, UiError> {
    let (account, id) = (viewer.account_id().to_owned(), watch_id.to_owned());
    let row = state.store.read(move |c| logins::get_session(c, &account, &id)).await?.flatten();
    let (now, zone) = (state.clock.now(), viewer.user.time_zone.as_str());
    Ok(match row {
        Some(row) => SessionView {
            kept: true,
            keep,
            imported: row.source == "import",
            updated: Some(When::new(row.updated_at, now, zone)),
            cookies: row.cookies,
            logins: row.logins,
            error: None,
        },
        None => SessionView { keep, ..SessionView::default() },
    })
}

/// Body of `POST /watches/{id}/session`.
#[derive(Debug, Deserialize)]
pub struct CookiesForm {
    #[serde(default)]
    cookies: String,
}

/// `POST /watches/{id}/session`: a pasted `cookies.txt` becomes the watch's session; a bad one
/// is the page again with the error beside the field, nothing saved.
pub async fn import(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<CookiesForm>,
) -> Result<Response, UiError> {
    let watch = find(&state, &post.viewer, &id).await?;
    let save = match crate::logins::imported_session(&state, &post.form.cookies, "cookies") {
        Ok(save) => save,
        Err(e) => {
            let mut page = watch_page(&state, &post.viewer, watch, WatchQuery::default()).await?;
            page.session.error = Some(e.message);
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let cookies = save.cookies;
    let (account, watch_id) = (post.viewer.account_id().to_owned(), watch.id.clone());
    if !state.store.write(move |c| logins::import_session(c, &account, &watch_id, &save)).await? {
        return Err(UiError::NotFound("watch"));
    }
    tracing::info!(watch.id = %watch.id, "session imported from the UI");
    let note = if watch.options().fetch.session.is_some_and(|s| s.keep) {
        ""
    } else {
        " Checks use it once the watch keeps its session (Edit › Browser)."
    };
    flash::set(&state, &post.viewer, format!("Session imported: {cookies} cookies.{note}")).await?;
    Ok(Redirect::to(&format!("/watches/{id}#session")).into_response())
}

/// `POST /watches/{id}/session/forget`: the next check starts afresh (and logs in).
pub async fn forget(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    let watch_id = id.clone();
    match state.store.write(move |c| logins::delete_session(c, &account, &watch_id)).await? {
        None => Err(UiError::NotFound("watch")),
        Some(_) => {
            flash::set(&state, &post.viewer, "Session forgotten: the next check starts afresh.").await?;
            Ok(Redirect::to(&format!("/watches/{id}#session")).into_response())
        }
    }
}
