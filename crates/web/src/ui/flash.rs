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

/// A secret shown once on the page an action redirects to (an endpoint's signing secret, a new
/// API token): carried in the session row (sealed) from the `POST` to the next page and cleared
/// as it is shown, so reloading that page neither repeats the action nor shows the secret again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reveal {
    /// What the secret belongs to (an endpoint or token id): only that page shows it.
    pub of: String,
    /// The secret.
    pub value: String,
    /// A label for it (a token's name).
    #[serde(default)]
    pub label: String,
}

/// A message with a secret, as stored in the session's flash.
#[derive(serde::Serialize, serde::Deserialize)]
struct WithReveal {
    notice: String,
    reveal: Reveal,
}

/// Leaves `message` and a secret to show once for the viewer's next page.
pub async fn set_reveal(
    state: &AppState,
    viewer: &Viewer,
    message: impl Into<String>,
    reveal: Reveal,
) -> Result<(), UiError> {
    // Sealed like every stored secret: the session row (and what the database's log keeps of
    // it) never holds the plaintext.
    let reveal = Reveal { value: state.seal(&reveal.value), ..reveal };
    let stored = serde_json::to_string(&WithReveal { notice: message.into(), reveal })
        .map_err(|e| UiError::Server(e.to_string()))?;
    set(state, viewer, stored).await
}

/// The viewer's pending message, cleared as it is shown (a secret left with it is dropped).
pub async fn take(state: &AppState, viewer: &Viewer) -> Result<Option<String>, UiError> {
    Ok(take_with_reveal(state, viewer).await?.0)
}

/// The viewer's pending message and the secret left with it, cleared as they are shown.
pub async fn take_with_reveal(state: &AppState, viewer: &Viewer) -> Result<(Option<String>, Option<Reveal>), UiError> {
    let Some(message) = viewer.session.flash.clone() else { return Ok((None, None)) };
    let id = viewer.session.id_hash.clone();
    state.store.write(move |c| driftwatch_store::users::set_flash(c, &id, None)).await?;
    Ok(match serde_json::from_str::<WithReveal>(&message) {
        Ok(with) => {
            let value = state.open(&with.reveal.value);
            (Some(with.notice), value.map(|value| Reveal { value, ..with.reveal }))
        }
        Err(_) => (Some(message), None),
    })
}
