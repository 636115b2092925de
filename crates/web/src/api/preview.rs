//! `POST /preview`: the text a watch with these settings would compare, read now, saving
//! nothing: for choosing a selector and rules before creating a watch (agents' `preview` tool).

use axum::extract::State;
use driftwatch_core::WatchOptions;
use driftwatch_validate::WatchInput;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::Json;

/// Body of `POST /preview`: a watch's page and how to read it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewWatch {
    /// The page (`http` or `https`).
    #[schema(min_length = 1)]
    url: String,
    /// A CSS selector; the whole page when absent.
    selector: Option<String>,
    /// Fetch, extraction, line rules and values, as a watch takes them.
    options: Option<WatchOptions>,
}

/// What the watch would compare.
#[derive(Debug, Serialize, ToSchema)]
pub struct Preview {
    /// The text after the selector, extraction options and line rules, cut where a watch's
    /// text is cut.
    text: String,
    /// The values read, plain, by name (`{"price": 45.0}`); absent for a watch without values.
    /// The note says why any could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    values: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    /// What loaded the page: `http` or `browser`.
    engine: String,
    /// Worth saying about the read (an `auto` watch's choice, values not read), if anything.
    note: Option<String>,
}

/// Read a page now as a watch with these settings would, and answer the text it would compare.
/// Nothing is saved. The settings are checked as `POST /watches` checks them; a page that
/// cannot be read is refused naming the setting it is about: the step that failed
/// (`options.fetch.steps[1]`), `options.fetch.wait`, `selector`, or else `url`.
#[utoipa::path(
    post,
    path = "/preview",
    operation_id = "preview_watch",
    tag = "watches",
    request_body = PreviewWatch,
    responses((status = 200, description = "The text a watch would compare.", body = Preview))
)]
pub async fn preview(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<PreviewWatch>,
) -> Result<axum::Json<Preview>, ApiError> {
    let input = WatchInput {
        url: body.url,
        name: None,
        selector: body.selector,
        interval_seconds: None,
        cron: None,
        time_zone: None,
        paused: None,
        options: body.options,
        tags: None,
        muted: None,
    };
    // Checked as a new watch would be (the URL guard included); never stored.
    let watch = driftwatch_validate::new_watch(
        input,
        &state.limits.rules(),
        state.policy,
        &caller.account_id,
        state.clock.now(),
    )?;
    let read = state
        .runner
        .preview(&caller.account_id, &watch.url, watch.selector.as_deref(), &watch.options())
        .await
        .map_err(|why| ApiError::invalid(&why.field, format!("the page could not be read: {}", why.message)))?;
    let values = read.values.map(|values| values.iter().map(|(name, value)| (name.clone(), value.plain())).collect());
    Ok(axum::Json(Preview { text: read.text, values, engine: read.engine.to_owned(), note: read.note }))
}
