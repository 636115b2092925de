//! `/watches/{id}/session`: a watch's kept session: what it holds (never its cookies),
//! forgetting it, and setting it from a `cookies.txt`.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use driftwatch_store::logins;

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::Path;
use crate::api::views;

/// The watch's kept session: whether there is one, its cookie count and the logins it took.
#[utoipa::path(
    get,
    path = "/watches/{id}/session",
    operation_id = "get_watch_session",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    responses((status = 200, description = "The session, without its cookies.", body = views::Session))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Session>, ApiError> {
    let watch = super::find(&state, &caller, &id).await?;
    let keep = watch.options().fetch.session.is_some_and(|s| s.keep);
    let row = state
        .store
        .read(move |c| logins::get_session(c, &caller.account_id, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such watch"))?;
    Ok(axum::Json(views::Session::of(row, keep)))
}

/// Set the watch's session from a Netscape `cookies.txt` (as browser extensions and yt-dlp
/// export it), replacing what was kept; checks with `options.fetch.session.keep` start from it.
/// A line that is not a cookie, more than 1 MiB or more than 3000 cookies is refused, and
/// nothing is saved.
#[utoipa::path(
    put,
    path = "/watches/{id}/session",
    operation_id = "import_watch_session",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    request_body(content = String, content_type = "text/plain", description = "A Netscape cookies.txt."),
    responses((status = 200, description = "The session, without its cookies.", body = views::Session))
)]
pub async fn import(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<axum::Json<views::Session>, ApiError> {
    let watch = super::find(&state, &caller, &id).await?;
    if body.len() > driftwatch_core::session::MAX_COOKIES_TXT_BYTES {
        return Err(ApiError::with_status(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the cookies.txt is larger than {} bytes", driftwatch_core::session::MAX_COOKIES_TXT_BYTES),
        ));
    }
    let text = std::str::from_utf8(&body).map_err(|_| ApiError::invalid("body", "a cookies.txt must be UTF-8 text"))?;
    let save = crate::logins::imported_session(&state, text, "body")?;
    let account = caller.account_id.clone();
    let saved = state.store.write(move |c| logins::import_session(c, &account, &id, &save)).await?;
    if !saved {
        return Err(ApiError::not_found("no such watch"));
    }
    tracing::info!(watch.id = %watch.id, "session imported");
    let keep = watch.options().fetch.session.is_some_and(|s| s.keep);
    let (account, id) = (caller.account_id.clone(), watch.id.clone());
    let row = state.store.read(move |c| logins::get_session(c, &account, &id)).await?.flatten();
    Ok(axum::Json(views::Session::of(row, keep)))
}

/// Forget the watch's kept session: the next check starts afresh (and logs in).
#[utoipa::path(
    delete,
    path = "/watches/{id}/session",
    operation_id = "delete_watch_session",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    responses((status = 204, description = "Forgotten (or none was kept)."))
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let deleted = state.store.write(move |c| logins::delete_session(c, &caller.account_id, &id)).await?;
    match deleted {
        Some(_) => Ok(StatusCode::NO_CONTENT),
        None => Err(ApiError::not_found("no such watch")),
    }
}
