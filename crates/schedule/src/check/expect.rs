//! Expectations: whether the page changed by its deadline, and whether its values keep
//! meeting the expectation's conditions. `expectation.missed` is raised once when either stops
//! holding, `expectation.met` when it holds again; watches without `options.expect` skip all
//! of it (no read, no write).

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use driftwatch_alert::{WatchRef, expectation_payload, v1};
use driftwatch_core::expect::{ChangeRule, ChangeStep, Expect};
use driftwatch_core::{EventType, IdKind, RunOutcome, new_id};
use driftwatch_store::checks::ExpectState;
use driftwatch_store::{Event, StoreError, Watch, snapshots};
use driftwatch_values::evaluate;

use super::Compared;
use crate::runner::Runner;

/// What judging a watch's expectation on one check found.
#[derive(Debug, Default)]
pub(super) struct Judged {
    /// The watch's new expectation state, when it changed.
    pub state: Option<ExpectState>,
    /// `expectation.missed` / `.met` events.
    pub events: Vec<Event>,
    /// The change deadline still ahead after this check, for the next run.
    pub due: Option<NaiveDateTime>,
}

fn rfc3339(at: NaiveDateTime) -> String {
    at.and_utc().to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl Runner {
    /// Judges `expect` on the check `compared` found, at `now`.
    pub(super) async fn judge_expectation(
        &self,
        watch: &Watch,
        expect: &Expect,
        compared: &Compared,
        now: NaiveDateTime,
    ) -> Result<Judged, StoreError> {
        let mut judged = Judged::default();
        let mut state =
            ExpectState { due_at: watch.expect_due_at, missed_at: watch.expect_missed_at, holds: watch.expect_holds };
        let snapshot = compared.snapshot.as_ref().map(|s| s.id.clone());
        let ok = matches!(compared.outcome, RunOutcome::Baseline | RunOutcome::Unchanged | RunOutcome::Changed);
        if let Some(rule) = expect.change_rule(now.and_utc()).filter(|_| ok) {
            let changed = compared.outcome == RunOutcome::Changed;
            let due = watch.expect_due_at.map(|t| t.and_utc());
            let step = rule.step(due, watch.expect_missed_at.is_some(), changed, now.and_utc());
            let (event_type, deadline, holds) = match step {
                ChangeStep::Waiting(next) => {
                    state.due_at = next.map(|t| t.naive_utc());
                    (None, next, true)
                }
                ChangeStep::Missed => {
                    state.missed_at = Some(now);
                    (Some(EventType::ExpectationMissed), due, false)
                }
                ChangeStep::Met(next) => {
                    state.due_at = next.map(|t| t.naive_utc());
                    state.missed_at = None;
                    (Some(EventType::ExpectationMet), next, true)
                }
            };
            if let Some(event_type) = event_type {
                let id = watch.id.clone();
                let last = self.store().read(move |c| snapshots::latest_snapshot(c, &id)).await?;
                let expectation = v1::Expectation {
                    kind: "change".into(),
                    rule: rule.describe(),
                    holds,
                    deadline: deadline.map(|d| d.to_rfc3339_opts(SecondsFormat::Secs, true)),
                    last_change: last.map(|s| rfc3339(s.created_at)),
                    reasons: vec![reason(&rule, step, deadline)],
                    snapshot: snapshot.clone(),
                };
                judged.events.push(self.expectation_event(watch, event_type, expectation, snapshot.clone(), now));
            }
        }
        if expect.kind() == "change" {
            // A failed check keeps the deadline too: the next check still comes by it.
            judged.due = state.due_at.filter(|_| state.missed_at.is_none());
        }
        if let (Some(conditions), Some(facts)) = (&expect.values, compared.facts.as_ref())
            && !(compared.outcome == RunOutcome::Unchanged && watch.expect_holds.is_some())
        {
            let verdict = evaluate(conditions, &facts.facts());
            let crossed = match (watch.expect_holds, verdict.holds) {
                (Some(true) | None, false) => Some(EventType::ExpectationMissed),
                (Some(false), true) => Some(EventType::ExpectationMet),
                _ => None,
            };
            state.holds = Some(verdict.holds);
            if let Some(event_type) = crossed {
                let expectation = v1::Expectation {
                    kind: "values".into(),
                    rule: verdict.reason(),
                    holds: verdict.holds,
                    deadline: None,
                    last_change: None,
                    reasons: verdict.reasons.clone(),
                    snapshot: snapshot.clone(),
                };
                judged.events.push(self.expectation_event(watch, event_type, expectation, snapshot.clone(), now));
            }
        }
        let before =
            ExpectState { due_at: watch.expect_due_at, missed_at: watch.expect_missed_at, holds: watch.expect_holds };
        judged.state = (state != before).then_some(state);
        Ok(judged)
    }

    fn expectation_event(
        &self,
        watch: &Watch,
        event_type: EventType,
        expectation: v1::Expectation,
        snapshot: Option<String>,
        now: NaiveDateTime,
    ) -> Event {
        let event_id = new_id(IdKind::Event);
        let payload = expectation_payload(
            event_type,
            &event_id,
            WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
            expectation,
            now.and_utc(),
        );
        Event::about_watch(event_id, watch, event_type, payload, now).on_snapshot(snapshot)
    }
}

/// Why a change expectation was missed or met, in words.
fn reason(rule: &ChangeRule, step: ChangeStep, deadline: Option<DateTime<Utc>>) -> String {
    let zone = rule.zone();
    let when = |d: DateTime<Utc>| d.with_timezone(&zone).format("%a %-d %b %Y %H:%M %Z").to_string();
    match (step, deadline) {
        (ChangeStep::Missed, Some(d)) => {
            format!("expected {} by {}; the page did not change", rule.describe(), when(d))
        }
        (ChangeStep::Met(_), Some(d)) => format!("the page changed; next expected by {}", when(d)),
        _ => format!("expected {}", rule.describe()),
    }
}
