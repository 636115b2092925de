//! The images of a watch's page, served to the watch's owner only: a snapshot's screenshot,
//! and the visual difference of a snapshot's screenshot from the one before it.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use driftwatch_store::screenshots;
use driftwatch_store::snapshots::previous_screenshot;

use super::error::UiError;
use super::session::Viewer;
use super::watch::find;
use crate::AppState;

/// `GET /watches/{id}/snapshots/{snapshot_id}/screenshot`: a snapshot's screenshot, to its
/// owner only (anyone else, or a snapshot without one, gets the 404 page).
pub async fn screenshot(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, snapshot_id)): Path<(String, String)>,
) -> Result<Response, UiError> {
    let watch = find(&state, &viewer, &id).await?;
    let account = viewer.account_id().to_owned();
    let shot = state
        .store
        .read(move |c| screenshots::of_snapshot(c, &account, &watch.id, &snapshot_id))
        .await?
        .ok_or(UiError::NotFound("screenshot"))?;
    Ok(crate::screenshot_response(shot))
}

/// `GET /watches/{id}/snapshots/{snapshot_id}/visual-diff`: a PNG of the snapshot's screenshot
/// with the pixels that differ from the previous screenshot in red (the watch's ignored regions
/// hatched), to its owner only.
pub async fn visual_diff(
    State(state): State<AppState>,
    viewer: Viewer,
    Path((id, snapshot_id)): Path<(String, String)>,
) -> Result<Response, UiError> {
    use axum::http::header;
    let watch = find(&state, &viewer, &id).await?;
    let ignore: Vec<driftwatch_visual::Rect> = watch
        .options()
        .noise
        .ignore_regions
        .iter()
        .map(|r| driftwatch_visual::Rect { x: r.x, y: r.y, width: r.width, height: r.height })
        .collect();
    let account = viewer.account_id().to_owned();
    let pair = state
        .store
        .read(move |c| {
            let Some(after) = screenshots::of_snapshot(c, &account, &watch.id, &snapshot_id)? else { return Ok(None) };
            let before =
                match previous_screenshot(c, &account, &watch.id, &snapshot_id)?.and_then(|s| s.screenshot_hash) {
                    Some(hash) => screenshots::by_hash(c, &hash)?,
                    None => None,
                };
            Ok(before.map(|before| (before, after)))
        })
        .await?
        .ok_or(UiError::NotFound("visual difference"))?;
    // Decoding and comparing pictures is CPU work: off the async threads.
    let (_, png) = tokio::task::spawn_blocking(move || {
        let (before, after) = pair;
        driftwatch_visual::compare_and_highlight(
            &before.bytes,
            &after.bytes,
            &ignore,
            driftwatch_visual::Tolerance::default(),
        )
    })
    .await
    .map_err(|e| UiError::Server(e.to_string()))?
    .map_err(|e| UiError::Server(format!("highlighting the visual difference: {e}")))?;
    Ok(([(header::CONTENT_TYPE, "image/png"), (header::CACHE_CONTROL, "private, max-age=86400")], png).into_response())
}
