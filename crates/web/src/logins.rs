//! What the API and the UI share about logins: the check that a watch's steps name only
//! secrets the account keeps, and a `cookies.txt` made into a sealed session.

use driftwatch_core::{FetchSpec, SessionState};
use driftwatch_store::StoreError;
use driftwatch_store::logins::{self, SessionSave};
use driftwatch_validate::{FieldError, Invalid};

use crate::AppState;

/// `Ok(Err(..))` naming each step (`options.fetch.steps[i]`) that types a secret the account
/// does not keep.
pub(crate) async fn steps_name_kept_secrets(
    state: &AppState,
    account_id: &str,
    fetch: &FetchSpec,
) -> Result<Result<(), Invalid>, StoreError> {
    let names: Vec<String> = driftwatch_core::session::secret_names(fetch).into_iter().map(|(_, n)| n).collect();
    if names.is_empty() {
        return Ok(Ok(()));
    }
    let account = account_id.to_owned();
    let kept = state.store.read(move |c| logins::secrets_named(c, &account, &names)).await?;
    let kept: Vec<String> = kept.into_iter().map(|s| s.name).collect();
    Ok(driftwatch_validate::steps_name_kept_secrets(fetch, &kept))
}

/// [`steps_name_kept_secrets`] of options stored as JSON (a change's new options).
pub(crate) async fn options_name_kept_secrets(
    state: &AppState,
    account_id: &str,
    options: Option<&str>,
) -> Result<Result<(), Invalid>, StoreError> {
    let Some(options) = options.and_then(|o| serde_json::from_str::<driftwatch_core::WatchOptions>(o).ok()) else {
        return Ok(Ok(()));
    };
    steps_name_kept_secrets(state, account_id, &options.fetch).await
}

/// A `cookies.txt` as the session to save, sealed; the error names the field (`body`, or
/// `cookies` in the UI) and the line at fault.
pub(crate) fn imported_session(state: &AppState, text: &str, field: &str) -> Result<SessionSave, FieldError> {
    let cookies =
        driftwatch_core::session::parse_cookies_txt(text).map_err(|e| FieldError::new(field, e.to_string()))?;
    let count = i32::try_from(cookies.len()).unwrap_or(i32::MAX);
    let session = SessionState { cookies, local_storage: Default::default() };
    let json = serde_json::to_string(&session).map_err(|e| FieldError::new(field, e.to_string()))?;
    Ok(SessionSave {
        state: state.seal(&json),
        cookies: count,
        logins: 0,
        source: "import",
        now: state.clock.now().naive_utc(),
    })
}
