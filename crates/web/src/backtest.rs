//! A backtest as the API and the watch form show it: what proposed options would have done to
//! a watch's stored history and, when they carry an intent, what a language model would have
//! made of each would-be alert.

use driftwatch_core::WatchOptions;
use driftwatch_schedule::backtest::Backtest;

use crate::AppState;

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
) -> Result<Backtest, driftwatch_store::StoreError> {
    let intent = proposed.ai.clone().or_else(|| watch.options().ai).and_then(|ai| ai.intent().map(str::to_owned));
    let mut found = driftwatch_schedule::backtest::run(&state.store, account_id, watch, proposed, since).await?;
    let Some(intent) = intent else { return Ok(found) };
    let changes: Vec<driftwatch_ai::backtest::Change> =
        found.alerts.iter().map(|a| (a.snapshot_id.clone(), a.at, a.diff.clone())).collect();
    found.ai = Some(
        driftwatch_ai::judge_all(
            &state.judge,
            account_id,
            &watch.name,
            &watch.url,
            &intent,
            &changes,
            driftwatch_ai::backtest::DEADLINE,
        )
        .await,
    );
    // Only the listed (newest) would-be alerts are judged: say so when there were more.
    if let Some(ai) = found.ai.as_mut()
        && found.would_alert > changes.len()
    {
        ai.summary.push_str(&format!(" Only the newest {} of {} were judged.", changes.len(), found.would_alert));
    }
    Ok(found)
}
