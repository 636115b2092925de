//! `/changes` (what changed since an agent last looked) and `/stats`.

use std::collections::BTreeMap;

use axum::extract::State;
use chrono::{DateTime, TimeDelta};
use driftwatch_store::{events, stats, verdicts};
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::Query;
use crate::api::views::{self, List};

/// Query of `GET /changes`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ChangesParams {
    /// A `next_cursor` from an earlier answer, or an RFC 3339 time.
    since: Option<String>,
    /// Items per answer, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// Change events across the account's watches, oldest first, each with its diff. Pass the
/// returned `next_cursor` as `since` to get only what came after.
#[utoipa::path(
    get,
    path = "/changes",
    operation_id = "list_changes",
    tag = "events",
    params(ChangesParams),
    responses((status = 200, description = "Changes after `since`, oldest first.", body = List<views::Event>))
)]
pub async fn changes(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<ChangesParams>,
) -> Result<axum::Json<List<views::Event>>, ApiError> {
    let limit = params.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::invalid("limit", "must be between 1 and 500"));
    }
    let (after, since) = match params.since.as_deref().filter(|s| !s.is_empty()) {
        None => (None, None),
        Some(cursor) if cursor.starts_with("evt_") => (Some(cursor.to_owned()), None),
        Some(time) => match DateTime::parse_from_rfc3339(time) {
            Ok(t) => (None, Some(t.naive_utc())),
            Err(_) => return Err(ApiError::invalid("since", "give a cursor from `next_cursor` or an RFC 3339 time")),
        },
    };
    let cursor = after.clone();
    let (rows, verdicts) = state
        .store
        .read(move |c| {
            let rows = events::changes(c, &caller.account_id, after.as_deref(), since, limit)?;
            let ids: Vec<&str> = rows.iter().map(|e| e.id.as_str()).collect();
            let verdicts = verdicts::for_events(c, &caller.account_id, &ids)?;
            Ok((rows, verdicts))
        })
        .await?;
    // A feed always says where to continue from, even when nothing new came.
    let next_cursor = rows.last().map(|e| e.id.clone()).or(cursor);
    Ok(axum::Json(List { items: views::Event::all_with_verdicts(rows, verdicts), next_cursor }))
}

/// The answer of `GET /stats`.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Stats)]
pub struct StatsView {
    watches: WatchCounts,
    /// Events of every type in the last 24 hours.
    events_last_24h: i64,
    /// Deliveries by status.
    deliveries: BTreeMap<String, i64>,
    /// Dead deliveries.
    dead_letters: i64,
    endpoints: EndpointCounts,
}

/// Watches by state and health.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct WatchCounts {
    total: i64,
    by_state: BTreeMap<String, i64>,
    by_health: BTreeMap<String, i64>,
}

/// Endpoints that are not sending.
#[derive(Debug, Serialize, utoipa::ToSchema)]
struct EndpointCounts {
    /// Endpoints whose circuit breaker is open.
    open_circuits: i64,
    /// Disabled endpoints.
    disabled: i64,
}

/// Counts across the account: watches by state and health, events in the last 24 hours,
/// deliveries by status, dead letters, endpoints with open circuits.
#[utoipa::path(
    get,
    path = "/stats",
    operation_id = "get_stats",
    tag = "meta",
    responses((status = 200, description = "The counts.", body = StatsView))
)]
pub async fn stats(State(state): State<AppState>, caller: Caller) -> Result<axum::Json<StatsView>, ApiError> {
    let now = state.clock.now().naive_utc();
    let s = state.store.read(move |c| stats::stats(c, &caller.account_id, now - TimeDelta::hours(24), now)).await?;
    let mut by_state = BTreeMap::new();
    let mut by_health = BTreeMap::new();
    for (watch_state, health, n) in &s.watches {
        *by_state.entry(watch_state.clone()).or_insert(0) += n;
        *by_health.entry(health.clone()).or_insert(0) += n;
    }
    let deliveries: BTreeMap<String, i64> = s.deliveries.into_iter().collect();
    Ok(axum::Json(StatsView {
        watches: WatchCounts { total: by_state.values().sum(), by_state, by_health },
        events_last_24h: s.events_since,
        dead_letters: deliveries.get("dead").copied().unwrap_or(0),
        deliveries,
        endpoints: EndpointCounts { open_circuits: s.open_circuits, disabled: s.disabled_endpoints },
    }))
}
