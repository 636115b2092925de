//! `/endpoints/{id}/digest`: an endpoint's open digest period and what waits in it.

use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::find;
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::Path;
use crate::api::views::{self, utc};

/// Most waiting events listed.
const LISTED: i64 = 100;

/// An endpoint's open digest period.
#[derive(Debug, Serialize, ToSchema)]
pub struct Digest {
    /// Whether the endpoint gathers its events into digests.
    gathering: bool,
    /// When the period started.
    since: Option<DateTime<Utc>>,
    /// When it ends and its digest goes out (quiet hours may hold it longer).
    next_at: Option<DateTime<Utc>>,
    /// How many events wait in it.
    waiting: i64,
    /// The newest of them (at most 100), each a delivery with status `gathering`.
    events: Vec<views::Delivery>,
}

/// What the endpoint's next digest holds so far, and when it goes out.
#[utoipa::path(
    get,
    path = "/endpoints/{id}/digest",
    operation_id = "get_endpoint_digest",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    responses((status = 200, description = "The open digest period.", body = Digest))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<Digest>, ApiError> {
    let endpoint = find(&state, &caller, &id).await?;
    let account = caller.account_id.clone();
    let (waiting, events) =
        state.store.read(move |c| driftwatch_store::digests::waiting(c, &account, &id, LISTED)).await?;
    Ok(axum::Json(Digest {
        gathering: endpoint.digest_due_at.is_some(),
        since: endpoint.digest_due_at.and(endpoint.digest_since).map(utc),
        next_at: endpoint.digest_due_at.map(utc),
        waiting,
        events: events.into_iter().map(views::Delivery::from).collect(),
    }))
}
