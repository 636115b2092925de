//! One-shot messages ("2 watches paused") from an action to the page it redirects to, kept in
//! the session row so they survive the redirect and work across nodes.

use super::error::UiError;
use super::session::Viewer;
use crate::AppState;

/// Leaves `message` for the viewer's next page.
pub async fn set(state: &AppState, viewer: &Viewer, message: impl Into<String>) -> Result<(), UiError> {
    let (id, message) = (viewer.session.id_hash.clone(), message.into());
    state.store.write(move |c| driftwatch_store::users::set_flash(c, &id, Some(&message))).await?;
    Ok(())
}

/// The viewer's pending message, cleared as it is shown.
pub async fn take(state: &AppState, viewer: &Viewer) -> Result<Option<String>, UiError> {
    let Some(message) = viewer.session.flash.clone() else { return Ok(None) };
    let id = viewer.session.id_hash.clone();
    state.store.write(move |c| driftwatch_store::users::set_flash(c, &id, None)).await?;
    Ok(Some(message))
}
