//! `/watches`: create, read, list, check now, runs.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use driftwatch_core::{IdKind, WatchState, new_id};
use driftwatch_schedule::CheckError;
use driftwatch_store::{Page, watches};
use serde::Deserialize;

use super::{PageParams, page_of};
use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Query};
use crate::views::{self, List};

/// Body of `POST /watches`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateWatch {
    url: String,
    name: Option<String>,
    selector: Option<String>,
    interval_seconds: Option<i64>,
}

const MAX_NAME: usize = 200;
const MAX_URL: usize = 2048;

/// Validates a URL that the server will request on the caller's behalf.
pub(super) fn valid_target(state: &AppState, field: &str, raw: &str) -> Result<String, ApiError> {
    if raw.len() > MAX_URL {
        return Err(ApiError::invalid(field, format!("longer than {MAX_URL} characters")));
    }
    let url = url::Url::parse(raw.trim()).map_err(|e| ApiError::invalid(field, format!("not a valid URL: {e}")))?;
    driftwatch_net::check_url(&url, state.policy).map_err(|e| ApiError::invalid(field, e.to_string()))?;
    Ok(url.to_string())
}

pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateWatch>,
) -> Result<(StatusCode, axum::Json<views::Watch>), ApiError> {
    let url = valid_target(&state, "url", &body.url)?;
    let name = body.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()).unwrap_or_else(|| url.clone());
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::invalid("name", format!("longer than {MAX_NAME} characters")));
    }
    let selector = body.selector.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    if let Some(selector) = &selector {
        driftwatch_scrape::validate_selector(selector).map_err(|e| ApiError::invalid("selector", e.to_string()))?;
    }
    let limits = &state.limits;
    let interval = body.interval_seconds.unwrap_or(limits.default_interval_seconds);
    if !(limits.min_interval_seconds..=366 * 86_400).contains(&interval) {
        return Err(ApiError::invalid(
            "interval_seconds",
            format!("must be between {} and {} seconds", limits.min_interval_seconds, 366 * 86_400),
        ));
    }
    let now = state.clock.now().naive_utc();
    let watch = driftwatch_store::Watch {
        id: new_id(IdKind::Watch),
        account_id: caller.account_id,
        name,
        url,
        selector,
        interval_seconds: interval,
        state: WatchState::Active.as_str().to_owned(),
        // The first check, which records the baseline, is due at once.
        next_run_at: now,
        last_run_at: None,
        consecutive_failures: 0,
        lease_owner: None,
        lease_until: None,
        created_at: now,
        updated_at: now,
    };
    let stored = watch.clone();
    state.store.write(move |c| watches::insert_watch(c, &stored)).await?;
    tracing::info!(watch.id = %watch.id, account.id = %watch.account_id, "watch created");
    state.runner.wake();
    Ok((StatusCode::CREATED, axum::Json(watch.into())))
}

pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Watch>>, ApiError> {
    let (page, limit) = params.to_page()?;
    let rows = state.store.run(move |c| watches::list_watches(c, &caller.account_id, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |w| &w.id)))
}

async fn find(state: &AppState, caller: &Caller, id: &str) -> Result<driftwatch_store::Watch, ApiError> {
    let (account, id) = (caller.account_id.clone(), id.to_owned());
    state
        .store
        .run(move |c| watches::get_watch(c, &account, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such watch"))
}

pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Watch>, ApiError> {
    Ok(axum::Json(find(&state, &caller, &id).await?.into()))
}

pub async fn check(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Run>, ApiError> {
    match state.runner.check_now(&caller.account_id, &id).await {
        Ok(Some(run)) => Ok(axum::Json(run.into())),
        Ok(None) => Err(ApiError::not_found("no such watch")),
        Err(CheckError::Busy) => Err(ApiError::conflict("a check of this watch is already running; try again shortly")),
        Err(CheckError::Store(e)) => Err(e.into()),
    }
}

pub async fn runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Run>>, ApiError> {
    let watch = find(&state, &caller, &id).await?;
    let (page, limit): (Page, usize) = params.to_page()?;
    let rows = state.store.run(move |c| watches::list_runs(c, &watch.id, &page)).await?;
    Ok(axum::Json(page_of(rows, limit, |r| &r.id)))
}
