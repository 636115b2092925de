//! What the watch page's buttons do: check now, pause, resume, mute, unmute, delete, export,
//! and send a held change now.

use crate::AppState;
use crate::ui::error::UiError;
use crate::ui::flash;
use crate::ui::layout::{Layout, html};
use crate::ui::session::Post;
use crate::ui::session::Viewer;
use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::response::{IntoResponse, Redirect};
use driftwatch_store::snapshots::{self};
use driftwatch_store::watches;
use driftwatch_store::{Page, Run, Watch};

use super::find;

/// `POST /watches/{id}/check`: checks now and shows the watch with the result.
pub async fn check(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let message = match state.runner.check_now(post.viewer.account_id(), &id).await {
        Ok(Some(run)) => run_message(&run),
        Ok(None) => return Err(UiError::NotFound("watch")),
        Err(driftwatch_schedule::CheckError::Busy) => {
            "A check of this watch is still running; its result will show here.".into()
        }
        Err(driftwatch_schedule::CheckError::Store(e)) => return Err(e.into()),
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to(&format!("/watches/{id}")).into_response())
}

/// What a finished check says to people.
fn run_message(run: &Run) -> String {
    let detail = run.error.as_deref().or(run.note.as_deref()).map(|d| format!(": {d}")).unwrap_or_default();
    format!("Checked: {}{detail}.", run.outcome.replace('_', " "))
}

/// Applies `changes` to the viewer's watch `id` (404 when there is none) and wakes the runner.
pub async fn apply(
    state: &AppState,
    viewer: &Viewer,
    id: &str,
    changes: driftwatch_store::watches::WatchChanges,
) -> Result<Watch, UiError> {
    let (account, target) = (viewer.account_id().to_owned(), id.to_owned());
    let watch = state
        .store
        .write(move |c| watches::update_watch(c, &account, &target, &changes))
        .await?
        .ok_or(UiError::NotFound("watch"))?;
    state.runner.wake();
    Ok(watch)
}

/// `POST /watches/{id}/pause` and `/resume`.
async fn set_state(
    state: AppState,
    id: String,
    post: Post<Vec<(String, String)>>,
    to: driftwatch_core::WatchState,
) -> Result<Response, UiError> {
    let changes = driftwatch_validate::state_change(to, state.clock.now());
    apply(&state, &post.viewer, &id, changes).await?;
    let message = if to == driftwatch_core::WatchState::Paused {
        "Paused: no checks until you resume it."
    } else {
        "Resumed: it is checked now, then on its schedule."
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to(&format!("/watches/{id}")).into_response())
}

/// `POST /watches/{id}/mute` and `/unmute`: checked and recorded either way; muted, nothing
/// is delivered.
async fn set_muted(
    state: AppState,
    id: String,
    post: Post<Vec<(String, String)>>,
    muted: bool,
) -> Result<Response, UiError> {
    let changes = driftwatch_store::watches::WatchChanges {
        muted: Some(muted),
        updated_at: Some(state.clock.now().naive_utc()),
        ..Default::default()
    };
    apply(&state, &post.viewer, &id, changes).await?;
    let message = if muted {
        "Muted: it is still checked and its changes recorded, but nothing is delivered."
    } else {
        "Unmuted: its changes are delivered again."
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to(&format!("/watches/{id}")).into_response())
}

/// `POST /watches/{id}/mute`.
pub async fn mute(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    set_muted(state, id, post, true).await
}

/// `POST /watches/{id}/unmute`.
pub async fn unmute(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    set_muted(state, id, post, false).await
}

/// `POST /watches/{id}/pause`.
pub async fn pause(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    set_state(state, id, post, driftwatch_core::WatchState::Paused).await
}

/// `POST /watches/{id}/resume`.
pub async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    set_state(state, id, post, driftwatch_core::WatchState::Active).await
}

/// `POST /watches/{id}/changes/{event_id}/release`: sends a change held without a verdict
/// now (its deliveries are queued and the delivery worker woken). Another account's watch or
/// change, or a change of another watch, is the 404 page; one no longer held says so.
pub async fn release(
    State(state): State<AppState>,
    Path((id, event_id)): Path<(String, String)>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let watch = find(&state, &post.viewer, &id).await?;
    let (account, render, now) = (post.viewer.account_id().to_owned(), state.store.render(), state.clock.now());
    let event = event_id.clone();
    let released = state
        .store
        .write(move |c| {
            let found = driftwatch_store::verdicts::for_events(c, &account, &[event.as_str()])?;
            match found.get(&event) {
                Some(verdict) if verdict.watch_id == watch.id => {
                    driftwatch_store::verdicts::release(c, &*render, &account, &event, now.naive_utc()).map(Some)
                }
                _ => Ok(None),
            }
        })
        .await?;
    let message = match released {
        None => return Err(UiError::NotFound("change")),
        Some(None) => "This change is no longer held: it was sent already.".to_owned(),
        Some(Some(queued)) => {
            state.worker.wake();
            tracing::info!(watch.id = %id, event.id = %event_id, queued, "held change sent from the UI");
            match queued {
                0 => "Sent: no endpoint receives this watch's changes, so nothing was queued.".to_owned(),
                1 => "Sent: 1 delivery queued.".to_owned(),
                n => format!("Sent: {n} deliveries queued."),
            }
        }
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to(&format!("/watches/{id}#history")).into_response())
}

#[derive(Template)]
#[template(path = "watch_delete.html")]
struct DeletePage {
    layout: Layout,
    watch: Watch,
    snapshots: usize,
}

/// `GET /watches/{id}/delete`: asks first (the way without JavaScript).
pub async fn confirm_delete(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, UiError> {
    let watch = find(&state, &viewer, &id).await?;
    let (account, watch_id) = (viewer.account_id().to_owned(), watch.id.clone());
    let snapshots = state
        .store
        .read(move |c| snapshots::list_snapshots(c, &account, &watch_id, &Page { after: None, limit: 1000 }))
        .await?
        .len();
    Ok(html(&DeletePage {
        layout: Layout::signed_in(&viewer, "watches", format!("Delete {}", watch.name)),
        watch,
        snapshots,
    }))
}

/// `POST /watches/{id}/delete`.
pub async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let account = post.viewer.account_id().to_owned();
    let deleted = state.store.write(move |c| watches::delete_watch(c, &account, &id)).await?;
    if !deleted {
        return Err(UiError::NotFound("watch"));
    }
    flash::set(&state, &post.viewer, "Watch deleted with its history.").await?;
    Ok(Redirect::to("/").into_response())
}

/// `GET /watches/{id}/export`: the watch in the portable form `driftwatch import` reads.
pub async fn export(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, UiError> {
    let watch = find(&state, &viewer, &id).await?;
    let body = serde_json::to_string_pretty(&[driftwatch_validate::from_watch(&watch)])
        .map_err(|e| UiError::Server(e.to_string()))?;
    Ok(attachment("application/json", &format!("{}.json", watch.id), body))
}

/// A download: `body` as `content_type`, saved as `filename`.
fn attachment(content_type: &str, filename: &str, body: String) -> Response {
    let disposition = format!("attachment; filename=\"{filename}\"");
    (
        [
            (axum::http::header::CONTENT_TYPE, content_type.to_owned()),
            (axum::http::header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response()
}

/// `GET /watches/{id}/values.csv`: the watch's values over time, as the API's CSV.
pub async fn values_csv(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, UiError> {
    let watch = find(&state, &viewer, &id).await?;
    let (account, watch_id) = (viewer.account_id().to_owned(), watch.id.clone());
    let rows = state
        .store
        .read(move |c| {
            driftwatch_store::snapshots::value_series(
                c,
                &account,
                &watch_id,
                None,
                driftwatch_store::snapshots::MAX_SERIES_POINTS,
            )
        })
        .await?;
    let body = crate::api::values::to_csv(&crate::api::values::points(rows, None));
    Ok(attachment("text/csv; charset=utf-8", &format!("{}-values.csv", watch.id), body))
}
