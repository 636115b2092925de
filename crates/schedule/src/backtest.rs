//! Backtests: what proposed rules, noise settings and conditions would have done to a watch's
//! stored history, before they are saved.
//!
//! Snapshots keep the text as it was extracted (after the line rules of the time) and the values
//! read with it; the pages themselves are not kept. So a backtest re-applies line rules, noise
//! rules and conditions to the stored texts and values, and says plainly what it cannot redo: a
//! new selector, extraction or fetch setting, or a value that was never read.

use driftwatch_alert::{Noise, is_alert};
use driftwatch_core::WatchOptions;
use driftwatch_diff::DiffLimits;
use driftwatch_scrape::Rules;
use driftwatch_store::Snapshot;
use driftwatch_values::{Facts, Values, evaluate};
use serde::Serialize;

/// Most would-be alerts listed with their diffs.
pub const MAX_LISTED: usize = 50;

/// What a backtest found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Backtest {
    /// Snapshots tried, oldest first.
    pub snapshots: usize,
    /// Changes between consecutive snapshots after the proposed line rules.
    pub changes: usize,
    /// How many of them would have alerted.
    pub would_alert: usize,
    /// How many alerts the watch actually raised over the same snapshots.
    pub alerted: usize,
    /// The would-be alerts (newest first, at most 50), each with its diff.
    pub alerts: Vec<WouldAlert>,
    /// Changes kept quiet, with the reason (newest first, at most 50).
    pub quiet: Vec<KeptQuiet>,
    /// What could not be recomputed from stored snapshots, said plainly.
    pub caveats: Vec<String>,
    /// With an expectation (`options.expect`): when it would have raised
    /// `expectation.missed` and `expectation.met`, oldest first (at most 50). Left out without
    /// one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expectations: Vec<crate::backtest_expect::WouldExpect>,
    /// With an intent (`options.ai.intent`, proposed or the watch's): the model's verdict on
    /// each listed would-be alert, how many alerts the intent would have left and what it would
    /// cost. Left out without an intent. Filled in by the caller, which has the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ai: Option<driftwatch_ai::AiBacktest>,
}

/// A change that would have alerted.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct WouldAlert {
    /// The snapshot of the change.
    pub snapshot_id: String,
    /// When it was taken.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Lines added and removed.
    pub added: usize,
    /// See `added`.
    pub removed: usize,
    /// The unified diff (bounded as payloads are).
    pub diff: String,
    /// Why the conditions held, when the watch would have conditions.
    pub reasons: Vec<String>,
}

/// A change that would have raised no alert.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct KeptQuiet {
    /// The snapshot of the change.
    pub snapshot_id: String,
    /// When it was taken.
    pub at: chrono::DateTime<chrono::Utc>,
    /// Why ("price 49.90 EUR is not below 45", "only whitespace changed"...).
    pub reason: String,
}

/// Most snapshots one backtest reads (the newest).
pub const MAX_SNAPSHOTS: i64 = 2_000;

/// Runs `proposed` over the account's `watch`'s stored snapshots since `since` (the newest
/// [`MAX_SNAPSHOTS`]): what the API's backtest and the watch form's "Try on past checks" show.
/// The diffing runs on the blocking pool.
pub async fn run(
    store: &driftwatch_store::Store,
    account_id: &str,
    watch: &driftwatch_store::Watch,
    proposed: WatchOptions,
    since: Option<chrono::NaiveDateTime>,
) -> Result<Backtest, driftwatch_store::StoreError> {
    let (account, watch_id) = (account_id.to_owned(), watch.id.clone());
    let (history, alerted) = store
        .read(move |c| {
            let history = driftwatch_store::snapshots::history(c, &account, &watch_id, since, MAX_SNAPSHOTS)?;
            let alerted = driftwatch_store::events::alerted_snapshots(c, &watch_id)?;
            Ok((history, alerted))
        })
        .await?;
    let current = watch.options();
    tokio::task::spawn_blocking(move || backtest(&proposed, &current, &history, &alerted))
        .await
        .map_err(|e| driftwatch_store::StoreError::Task(e.to_string()))
}

/// Runs `proposed` over `snapshots` (oldest first) of a watch now set up with `current`;
/// `alerted` is the set of snapshot ids that raised a `change.detected`. Pure CPU work: run it
/// off the async threads.
pub fn backtest(
    proposed: &WatchOptions,
    current: &WatchOptions,
    snapshots: &[Snapshot],
    alerted: &std::collections::HashSet<String>,
) -> Backtest {
    let mut found = Backtest { snapshots: snapshots.len(), caveats: caveats(proposed, current), ..Backtest::default() };
    let Ok(rules) = Rules::new(&proposed.rules) else { return found };
    let Ok(noise) = Noise::new(&proposed.noise) else { return found };
    let texts: Vec<String> = snapshots.iter().map(|s| rules.apply(&s.content)).collect();
    let values: Vec<Values> = snapshots
        .iter()
        .map(|s| s.readings.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default())
        .collect();
    let mut alerts = Vec::new();
    let mut quiet = Vec::new();
    for i in 1..snapshots.len() {
        let snapshot = &snapshots[i];
        if alerted.contains(&snapshot.id) {
            found.alerted += 1;
        }
        let (before, after) = (&texts[i - 1], &texts[i]);
        let values_moved = values[i - 1] != values[i];
        if before == after && !values_moved {
            continue;
        }
        found.changes += 1;
        let at = snapshot.created_at.and_utc();
        let change =
            driftwatch_diff::diff_texts_within(before, after, &snapshots[i - 1].id, &snapshot.id, DiffLimits::PAYLOAD);
        let recent = |n: u32| texts[i.saturating_sub(n as usize + 1)..i.saturating_sub(1)].iter().any(|t| t == after);
        let known = proposed.noise.known_states.filter(|n| *n > 0).is_some_and(recent);
        // As a check decides: a line change through the noise rules, or a value that moved.
        let mut reason = match noise.decide(&change, before, after, known) {
            _ if values_moved => None,
            Err(why) => Some(why.to_string()),
            Ok(()) if !is_alert(&change) => Some("no line changed".to_owned()),
            Ok(()) => None,
        };
        let mut reasons = Vec::new();
        if let (None, Some(conditions)) = (&reason, &proposed.conditions) {
            let (added, removed, change_size) = changed_lines(&change);
            let verdict = evaluate(
                conditions,
                &Facts {
                    values: &values[i],
                    previous: Some(&values[i - 1]),
                    text: after,
                    added: &added,
                    removed: &removed,
                    change_size,
                },
            );
            if verdict.holds {
                reasons = verdict.reasons;
            } else {
                reason = Some(verdict.reason());
            }
        }
        match reason {
            Some(reason) => quiet.push(KeptQuiet { snapshot_id: snapshot.id.clone(), at, reason }),
            None => {
                found.would_alert += 1;
                alerts.push(WouldAlert {
                    snapshot_id: snapshot.id.clone(),
                    at,
                    added: change.added,
                    removed: change.removed,
                    diff: change.unified,
                    reasons,
                });
            }
        }
    }
    if let Some(expect) = &proposed.expect {
        let mut told = crate::backtest_expect::would_expect(expect, snapshots, &texts, &values);
        told.truncate(MAX_LISTED);
        found.expectations = told;
    }
    found.alerts = alerts.into_iter().rev().take(MAX_LISTED).collect();
    found.quiet = quiet.into_iter().rev().take(MAX_LISTED).collect();
    found
}

/// The added and the removed lines' text of a change, and how many lines changed: what
/// conditions on `added`, `removed` and `change_size` are judged on, here and in a check.
pub(crate) fn changed_lines(change: &driftwatch_diff::TextChange) -> (String, String, usize) {
    let (mut added, mut removed) = (String::new(), String::new());
    for line in change.hunks.iter().flat_map(|h| h.lines.iter()) {
        let into = match line.op {
            driftwatch_diff::LineOp::Added => &mut added,
            driftwatch_diff::LineOp::Removed => &mut removed,
            driftwatch_diff::LineOp::Context => continue,
        };
        into.push_str(&line.text);
        into.push('\n');
    }
    (added, removed, change.added + change.removed)
}

/// What the stored snapshots cannot tell about `proposed`.
fn caveats(proposed: &WatchOptions, current: &WatchOptions) -> Vec<String> {
    let mut said = Vec::new();
    if proposed.extract != current.extract || proposed.fetch != current.fetch {
        said.push(
            "Extraction and fetch settings apply to pages as fetched, which are not kept: the stored texts were \
             used as they were read."
                .to_owned(),
        );
    }
    for spec in &proposed.values {
        match current.values.iter().find(|v| v.name == spec.name) {
            None => said.push(format!(
                "The value `{}` was never read, so conditions on it could not be tried: it is read from the next check on.",
                spec.name
            )),
            Some(before) if before != spec => said.push(format!(
                "The value `{}` is read differently now: the stored readings (the old way) were used.",
                spec.name
            )),
            Some(_) => {}
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftwatch_core::values::{Conditions, Match, Op, Rule, ValueKind, ValueSpec};

    fn snapshot(i: u32, text: &str, price: f64) -> Snapshot {
        Snapshot {
            id: format!("snp_{i:02}"),
            watch_id: "wat_1".into(),
            content_hash: String::new(),
            content: text.into(),
            created_at: chrono::NaiveDate::from_ymd_opt(2026, 11, i)
                .and_then(|d| d.and_hms_opt(9, 0, 0))
                .expect("date"),
            screenshot_hash: None,
            visual_change_percent: None,
            readings: Some(format!(r#"{{"price": {{"type": "money", "amount": {price}, "currency": "EUR"}}}}"#)),
            kept_quiet: None,
        }
    }

    #[test]
    fn conditions_cut_the_alerts_and_say_why() {
        let prices = [60.0, 58.0, 55.0, 49.0, 52.0, 44.0];
        let snapshots: Vec<Snapshot> =
            prices.iter().enumerate().map(|(i, p)| snapshot(i as u32 + 1, &format!("Price {p} EUR\n"), *p)).collect();
        let price = ValueSpec {
            name: "price".into(),
            kind: ValueKind::Money,
            selector: Some("#p".into()),
            ..ValueSpec::default()
        };
        let current = WatchOptions { values: vec![price.clone()], ..WatchOptions::default() };
        let proposed = WatchOptions {
            values: vec![price],
            conditions: Some(Conditions::of(
                Match::All,
                vec![Rule { subject: "price".into(), op: Op::Lt, operand: 50.into() }],
            )),
            ..WatchOptions::default()
        };
        // The watch alerted on three of the changes, and on a snapshot that is not among these.
        let alerted: std::collections::HashSet<String> =
            ["snp_02", "snp_04", "snp_05", "snp_99"].into_iter().map(str::to_owned).collect();
        let found = backtest(&proposed, &current, &snapshots, &alerted);
        assert_eq!((found.snapshots, found.changes, found.alerted, found.would_alert), (6, 5, 3, 2));
        assert_eq!(found.alerts[0].snapshot_id, "snp_06", "newest first");
        assert_eq!(found.alerts[0].reasons, ["price 44.00 EUR is below 50"]);
        assert!(found.alerts[0].diff.contains("+Price 44 EUR"), "{}", found.alerts[0].diff);
        assert_eq!(found.quiet.len(), 3);
        assert_eq!(found.quiet[0].reason, "price 52.00 EUR is not below 50");
        assert!(found.caveats.is_empty(), "{:?}", found.caveats);
    }

    #[test]
    fn what_cannot_be_recomputed_is_said() {
        let snapshots = [snapshot(1, "a\n", 1.0), snapshot(2, "b\n", 1.0)];
        let stock = ValueSpec {
            name: "stock".into(),
            kind: ValueKind::Availability,
            structured: None,
            selector: Some("#s".into()),
            ..ValueSpec::default()
        };
        let mut proposed = WatchOptions { values: vec![stock], ..WatchOptions::default() };
        proposed.extract.json_pointer = Some("/data".into());
        let found = backtest(&proposed, &WatchOptions::default(), &snapshots, &Default::default());
        assert_eq!(found.caveats.len(), 2, "{:?}", found.caveats);
        assert!(found.caveats[1].contains("`stock` was never read"));
        assert_eq!(found.would_alert, 1);
    }
}
