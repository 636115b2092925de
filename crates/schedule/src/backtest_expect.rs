//! The expectation part of a backtest: when `options.expect` would have raised
//! `expectation.missed` and `expectation.met` over a watch's stored snapshots.
//!
//! Snapshots are the changes (the checks that found nothing new left no row), so a change
//! expectation is judged on the gaps between them: missed at the previous change plus its
//! allowance (or the first cron deadline after it) when the next change came later, met at that
//! change. A value expectation is judged on each snapshot's stored readings.

use driftwatch_core::expect::Expect;
use driftwatch_values::{Facts, Values, evaluate};
use serde::Serialize;

/// An expectation event a backtest finds.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct WouldExpect {
    /// `expectation.missed` or `expectation.met`.
    #[schema(value_type = driftwatch_core::EventType)]
    pub event: &'static str,
    /// `change` or `values`.
    pub kind: &'static str,
    /// When it would have been raised.
    pub at: chrono::DateTime<chrono::Utc>,
    /// The snapshot it would have been decided on (none for a deadline that passed between
    /// snapshots).
    pub snapshot_id: Option<String>,
    /// Why, in words.
    pub reason: String,
}

/// When `expect` would have fired over `snapshots` (oldest first, `texts` their text after the
/// proposed line rules, `values` their readings), oldest first.
pub(crate) fn would_expect(
    expect: &Expect,
    snapshots: &[driftwatch_store::Snapshot],
    texts: &[String],
    values: &[Values],
) -> Vec<WouldExpect> {
    let mut found = Vec::new();
    let first = snapshots.first().map(|s| s.created_at.and_utc());
    if let (Some(rule), Some(mut last)) = (first.and_then(|at| expect.change_rule(at)), first) {
        let mut last_text = 0;
        for i in 1..snapshots.len() {
            if texts[i] == texts[last_text] && values[i] == values[last_text] {
                continue;
            }
            let at = snapshots[i].created_at.and_utc();
            if let Some(due) = rule.due_after(last).filter(|due| *due <= at) {
                let zone = rule.zone();
                let when = due.with_timezone(&zone).format("%a %-d %b %Y %H:%M %Z");
                let why = format!("expected {} by {when}; the page did not change", rule.describe());
                found.push(WouldExpect {
                    event: "expectation.missed",
                    kind: "change",
                    at: due,
                    snapshot_id: None,
                    reason: why,
                });
                let (id, reason) = (Some(snapshots[i].id.clone()), "the page changed".to_owned());
                found.push(WouldExpect { event: "expectation.met", kind: "change", at, snapshot_id: id, reason });
            }
            (last, last_text) = (at, i);
        }
    }
    if let Some(conditions) = &expect.values {
        let mut held: Option<bool> = None;
        for i in 0..snapshots.len() {
            let facts = Facts {
                values: &values[i],
                previous: i.checked_sub(1).map(|p| &values[p]),
                text: &texts[i],
                added: "",
                removed: "",
                change_size: 0,
            };
            let verdict = evaluate(conditions, &facts);
            let event = match (held, verdict.holds) {
                (Some(true) | None, false) => Some("expectation.missed"),
                (Some(false), true) => Some("expectation.met"),
                _ => None,
            };
            if let Some(event) = event {
                found.push(WouldExpect {
                    event,
                    kind: "values",
                    at: snapshots[i].created_at.and_utc(),
                    snapshot_id: Some(snapshots[i].id.clone()),
                    reason: verdict.reason(),
                });
            }
            held = Some(verdict.holds);
        }
    }
    found.sort_by_key(|w| w.at);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(id: &str, at: &str) -> driftwatch_store::Snapshot {
        let at = chrono::DateTime::parse_from_rfc3339(at).expect("time").naive_utc();
        let mut snapshot = driftwatch_store::Snapshot {
            id: id.into(),
            watch_id: "wat_1".into(),
            content_hash: String::new(),
            content: String::new(),
            created_at: at,
            screenshot_hash: None,
            visual_change_percent: None,
            readings: None,
            kept_quiet: None,
        };
        snapshot.content = id.into();
        snapshot
    }

    #[test]
    fn a_gap_longer_than_allowed_is_missed_then_met_at_the_next_change() {
        let expect = Expect { change_within: Some("2d".into()), ..Expect::default() };
        let snapshots = [
            snapshot("snp_1", "2026-12-01T00:00:00Z"),
            snapshot("snp_2", "2026-12-02T00:00:00Z"),
            snapshot("snp_3", "2026-12-06T12:00:00Z"),
        ];
        let texts: Vec<String> = snapshots.iter().map(|s| s.content.clone()).collect();
        let values = vec![Values::default(); 3];
        let found = would_expect(&expect, &snapshots, &texts, &values);
        let told: Vec<(&str, String)> = found.iter().map(|w| (w.event, w.at.to_rfc3339())).collect();
        assert_eq!(
            told,
            [
                ("expectation.missed", "2026-12-04T00:00:00+00:00".to_owned()),
                ("expectation.met", "2026-12-06T12:00:00+00:00".to_owned())
            ]
        );
        assert_eq!(found[1].snapshot_id.as_deref(), Some("snp_3"));
    }
}
