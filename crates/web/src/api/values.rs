//! `/watches/{id}/values`: a watch's typed values over time, as JSON or CSV.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use driftwatch_store::snapshots;
use driftwatch_values::{Typed, Values};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::deliveries::parse_time;
use crate::api::error::ApiError;
use crate::api::extract::{Path, Query};
use crate::api::watches::find;

/// Query of `GET /watches/{id}/values`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ValueParams {
    /// Only this value (`price`); every value when left out.
    #[param(pattern = "^[a-z][a-z0-9_]{0,31}$")]
    name: Option<String>,
    /// Only points at or after this RFC 3339 time.
    #[param(format = DateTime)]
    since: Option<String>,
    /// `json` (the default) or `csv` (`at,snapshot_id,name,value,currency`, one row per value).
    #[param(pattern = "^(json|csv)$")]
    format: Option<String>,
    /// Most points, the newest ones (1 to 10000, default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<i64>,
}

/// A watch's values over time, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValueSeries {
    /// The watch.
    watch_id: String,
    /// The value asked for, when one was.
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// One point per snapshot that has the value(s).
    points: Vec<ValuePoint>,
}

/// The values read with one snapshot.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValuePoint {
    /// When the snapshot was taken.
    at: DateTime<Utc>,
    /// The snapshot.
    snapshot_id: String,
    /// The values by name, typed: `{"price": {"type": "money", "amount": 44.0, "currency": "EUR"}}`.
    #[schema(value_type = Object)]
    values: Values,
}

/// The watch's values over time, as read with each snapshot (kept and purged with the
/// snapshots), oldest first. `format=csv` answers `text/csv`.
#[utoipa::path(
    get,
    path = "/watches/{id}/values",
    operation_id = "list_values",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`)."), ValueParams),
    responses((status = 200, description = "The series (as CSV with `format=csv`).", content(
        (ValueSeries = "application/json"),
        (String = "text/csv")
    )))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(params): Query<ValueParams>,
) -> Result<Response, ApiError> {
    let watch = find(&state, &caller, &id).await?;
    let csv = match params.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(_) => return Err(ApiError::invalid("format", "json or csv")),
    };
    let limit = params.limit.unwrap_or(1000);
    if !(1..=snapshots::MAX_SERIES_POINTS).contains(&limit) {
        return Err(ApiError::invalid("limit", "must be between 1 and 10000"));
    }
    let since = parse_time("since", params.since.as_deref().filter(|s| !s.is_empty()))?;
    let specs = watch.options().values;
    if let Some(name) = &params.name
        && !specs.iter().any(|v| &v.name == name)
    {
        let names: Vec<String> = specs.iter().map(|v| v.name.clone()).collect();
        let has = if names.is_empty() { "no values".to_owned() } else { names.join(", ") };
        // A well-formed name the watch does not read: no such series.
        return Err(ApiError::not_found(format!("this watch has no value `{name}` (it has: {has})")));
    }
    let (account, watch_id) = (caller.account_id.clone(), watch.id.clone());
    let rows = state.store.read(move |c| snapshots::value_series(c, &account, &watch_id, since, limit)).await?;
    let points = points(rows, params.name.as_deref());
    if csv {
        let body = to_csv(&points);
        return Ok(([(header::CONTENT_TYPE, "text/csv; charset=utf-8")], body).into_response());
    }
    Ok(axum::Json(ValueSeries { watch_id: watch.id, name: params.name, points }).into_response())
}

/// Stored rows as points, keeping only the value `name` when given (points without it are
/// left out).
pub(crate) fn points(rows: Vec<(String, chrono::NaiveDateTime, String)>, name: Option<&str>) -> Vec<ValuePoint> {
    rows.into_iter()
        .filter_map(|(snapshot_id, at, readings)| {
            let mut values: Values = serde_json::from_str(&readings).unwrap_or_default();
            if let Some(name) = name {
                values.retain(|n, _| n == name);
            }
            (!values.is_empty()).then(|| ValuePoint { at: at.and_utc(), snapshot_id, values })
        })
        .collect()
}

/// `at,snapshot_id,name,value,currency`, one row per value; text is quoted as RFC 4180 says.
pub(crate) fn to_csv(points: &[ValuePoint]) -> String {
    let mut out = String::from("at,snapshot_id,name,value,currency\r\n");
    for point in points {
        for (name, value) in &point.values {
            let shown = match value {
                Typed::Number { .. } | Typed::Money { .. } => value.number().map(|n| n.to_string()).unwrap_or_default(),
                other => other.display(),
            };
            let at = point.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let currency = value.currency().unwrap_or_default();
            out.push_str(&format!("{at},{},{name},{},{}\r\n", point.snapshot_id, quote(&shown), quote(currency)));
        }
    }
    out
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

/// Body of `POST /watches/{id}/backtest`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BacktestRequest {
    /// The options to try (values, conditions, line and noise rules); the watch's own when
    /// left out. Checked as a save would check them.
    #[serde(default)]
    options: Option<driftwatch_core::WatchOptions>,
    /// Only snapshots at or after this RFC 3339 time; all stored ones when left out.
    #[serde(default)]
    #[schema(format = DateTime)]
    since: Option<String>,
}

/// What these options would have done to the watch's stored history: how many alerts instead
/// of how many, each would-be alert with its diff, each change kept quiet with the reason, and
/// what stored snapshots cannot tell. With an intent (`options.ai.intent`, proposed or the
/// watch's), `ai` holds the model's verdict on each listed would-be alert (through the verdict
/// cache and the account's daily budget; at most about 4 minutes, what is not asked by then
/// is listed as not tried). Nothing is saved.
#[utoipa::path(
    post,
    path = "/watches/{id}/backtest",
    operation_id = "backtest_watch",
    tag = "watches",
    params(("id" = String, Path, description = "A watch id (`wat_...`).")),
    request_body = BacktestRequest,
    responses((status = 200, description = "What would have happened.", body = driftwatch_schedule::backtest::Backtest))
)]
pub async fn backtest(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    crate::api::extract::Json(request): crate::api::extract::Json<BacktestRequest>,
) -> Result<axum::Json<driftwatch_schedule::backtest::Backtest>, ApiError> {
    let watch = find(&state, &caller, &id).await?;
    let proposed = request.options.unwrap_or_else(|| watch.options());
    // As a save would keep them: a preset tried here is the rules it stands for.
    let proposed = driftwatch_validate::options_as_saved(&proposed, &state.limits.rules())?;
    let since = parse_time("since", request.since.as_deref().filter(|s| !s.is_empty()))?;
    let found = crate::backtest::run(&state, &caller.account_id, &watch, proposed, since).await?;
    Ok(axum::Json(found))
}
