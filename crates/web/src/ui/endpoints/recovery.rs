//! An endpoint's recovery: the recover action (dry-run count first) and the recovery's progress.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{NaiveDateTime, TimeZone as _};
use driftwatch_core::DeliveryStatus;
use driftwatch_delivery::RequestError;
use driftwatch_store::recoveries;
use driftwatch_validate::RecoveryInput;

use super::{EndpointPage, RecoverForm, RecoveryRow, find, recovery_row};
use crate::AppState;
use crate::ui::error::UiError;
use crate::ui::layout::{Layout, html};
use crate::ui::session::{Post, Viewer};

/// Reads `YYYY-MM-DDTHH:MM` in `zone` as UTC.
fn local_time(value: &str, zone: &str) -> Option<NaiveDateTime> {
    let naive = NaiveDateTime::parse_from_str(value.trim(), "%Y-%m-%dT%H:%M")
        .or_else(|_| NaiveDateTime::parse_from_str(value.trim(), "%Y-%m-%dT%H:%M:%S"))
        .ok()?;
    let tz: chrono_tz::Tz = zone.parse().unwrap_or(chrono_tz::Tz::UTC);
    tz.from_local_datetime(&naive).earliest().map(|t| t.naive_utc())
}

/// `POST /endpoints/{id}/recover`: `action=count` shows how many deliveries match (a dry run);
/// `action=start` starts the recovery and shows its progress.
pub async fn recover(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<RecoverForm>,
) -> Result<Response, UiError> {
    let endpoint = find(&state, &post.viewer, &id).await?;
    let form = post.form;
    let zone = post.viewer.user.time_zone.clone();
    let mut page = EndpointPage::load(&state, &post.viewer, endpoint.clone()).await?;
    page.recover = form.clone();
    let Some(since) = local_time(&form.since, &zone) else {
        page.recover_error = Some(("since".into(), "give the time to recover from".into()));
        return Ok(crate::ui::layout::render(axum::http::StatusCode::UNPROCESSABLE_ENTITY, &page));
    };
    let until = if form.until.trim().is_empty() {
        None
    } else {
        match local_time(&form.until, &zone) {
            Some(until) => Some(until),
            None => {
                page.recover_error = Some(("until".into(), "not a time".into()));
                return Ok(crate::ui::layout::render(axum::http::StatusCode::UNPROCESSABLE_ENTITY, &page));
            }
        }
    };
    let mut statuses = Vec::new();
    if form.failed.is_some() {
        statuses.push(DeliveryStatus::Failed);
    }
    if form.dead.is_some() {
        statuses.push(DeliveryStatus::Dead);
    }
    if statuses.is_empty() {
        page.recover_error = Some(("statuses".into(), "choose failed, dead or both".into()));
        return Ok(crate::ui::layout::render(axum::http::StatusCode::UNPROCESSABLE_ENTITY, &page));
    }
    let dry_run = form.action != "start";
    let request = match driftwatch_validate::recovery(RecoveryInput { since, until, statuses: Some(statuses), dry_run })
    {
        Ok(request) => request,
        Err(invalid) => {
            page.recover_error = invalid.first().map(|e| (e.field.clone(), e.message.clone()));
            return Ok(crate::ui::layout::render(axum::http::StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    match state.worker.recover(&endpoint, request).await {
        Ok(recovery) if dry_run => {
            page.dry_run = Some(recovery.matched);
            Ok(html(&page))
        }
        Ok(recovery) => Ok(Redirect::to(&format!("/recoveries/{}", recovery.id)).into_response()),
        Err(RequestError::Store(e)) => Err(e.into()),
        Err(e) => Err(UiError::Conflict(e.to_string())),
    }
}

#[derive(Template)]
#[template(path = "recovery.html")]
struct RecoveryPage {
    layout: Layout,
    recovery: RecoveryRow,
    endpoint_id: String,
    finished: bool,
}

/// `GET /recoveries/{id}`: a recovery's progress (the page refreshes itself until it is done).
pub async fn recovery(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Response, UiError> {
    let account = viewer.account_id().to_owned();
    let found = state
        .store
        .read(move |c| recoveries::get_recovery(c, &account, &id))
        .await?
        .ok_or(UiError::NotFound("recovery"))?;
    let now = state.clock.now();
    let finished = found.state == driftwatch_core::RecoveryState::Done.as_str();
    Ok(html(&RecoveryPage {
        layout: Layout::signed_in(&viewer, "endpoints", "Recovery"),
        recovery: recovery_row(&found, now, &viewer.user.time_zone),
        endpoint_id: found.endpoint_id,
        finished,
    }))
}
