//! A watch's kept session around a check (`options.fetch.session.keep`): loaded and opened
//! before the read, sealed and saved after a good one, with the logins it took counted.

use driftwatch_core::{SessionState, WatchOptions};
use driftwatch_store::Watch;
use driftwatch_store::logins::{self, SessionSave};

use crate::runner::Runner;

impl Runner {
    /// The session the watch keeps, opened; `None` when it keeps none (or it cannot be read:
    /// the check then starts afresh, and logs in if it must).
    pub(super) async fn kept_session(&self, watch: &Watch, options: &WatchOptions) -> Option<SessionState> {
        options.fetch.session.as_ref().filter(|s| s.keep)?;
        let id = watch.id.clone();
        let row = self
            .store()
            .read(move |c| logins::session_of(c, &id))
            .await
            .inspect_err(|e| tracing::warn!(watch.id = %watch.id, error = %e, "reading the kept session failed"))
            .ok()??;
        let json = self
            .open_sealed(&row.state)
            .inspect_err(|e| tracing::warn!(watch.id = %watch.id, error = %e, "the kept session cannot be opened"))
            .ok()?;
        serde_json::from_str(&json).ok()
    }

    /// Saves the session a good check ended with, sealed; `logged_in` counts a login.
    pub(super) async fn keep_session(&self, watch_id: &str, mut state: SessionState, logged_in: bool) {
        let now = self.now();
        state.drop_expired(now.and_utc().timestamp());
        let Ok(json) = serde_json::to_string(&state) else { return };
        let save = SessionSave {
            state: self.seal(&json),
            cookies: i32::try_from(state.cookies.len()).unwrap_or(i32::MAX),
            logins: i64::from(logged_in),
            source: "check",
            now,
        };
        let id = watch_id.to_owned();
        if let Err(e) = self.store().write(move |c| logins::save_session(c, &id, &save)).await {
            tracing::warn!(watch.id = %watch_id, error = %e, "saving the kept session failed");
        }
    }
}
