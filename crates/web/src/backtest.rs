//! A backtest as the API and the watch form show it: what proposed options would have done to
//! a watch's stored history and, when they carry an intent, what a language model would have
//! made of each would-be alert.

use driftwatch_ai::AiBacktest;
use driftwatch_core::WatchOptions;
use driftwatch_schedule::backtest::Backtest;
use serde::Serialize;

use crate::AppState;

/// What a backtest found.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[schema(as = BacktestResult)]
pub struct Found {
    /// What the rules, noise settings and conditions would have done.
    #[serde(flatten)]
    pub found: Backtest,
    /// With an intent (`options.ai.intent`, proposed or the watch's): the model's verdict on
    /// each listed would-be alert, how many alerts the intent would have left and what it would
    /// cost. Left out without an intent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai: Option<AiBacktest>,
}

/// Runs `proposed` over the account's `watch`'s stored snapshots since `since` and, when the
/// proposed options (or else the watch's) carry an intent, asks the account's model about each
/// listed would-be alert, through the cache and the daily budget, within
/// [`driftwatch_ai::backtest::DEADLINE`].
pub(crate) async fn run(
    state: &AppState,
    account_id: &str,
    watch: &driftwatch_store::Watch,
    proposed: WatchOptions,
    since: Option<chrono::NaiveDateTime>,
) -> Result<Found, driftwatch_store::StoreError> {
    let intent = proposed.ai.clone().or_else(|| watch.options().ai).and_then(|ai| ai.intent().map(str::to_owned));
    let found = driftwatch_schedule::backtest::run(&state.store, account_id, watch, proposed, since).await?;
    let Some(intent) = intent else { return Ok(Found { found, ai: None }) };
    let changes: Vec<driftwatch_ai::backtest::Change> =
        found.alerts.iter().map(|a| (a.snapshot_id.clone(), a.at, a.diff.clone())).collect();
    let ai = driftwatch_ai::judge_all(
        &state.judge,
        account_id,
        &watch.name,
        &watch.url,
        &intent,
        &changes,
        driftwatch_ai::backtest::DEADLINE,
    )
    .await;
    Ok(Found { found, ai: Some(ai) })
}
