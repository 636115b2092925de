//! Conditions: whether a watch's conditions hold on this check. A change alerts only when
//! they do (otherwise the run says why not); `condition.met` is raised when they start to hold
//! (the first check included) and `condition.cleared` when they stop. A crossing carries the
//! change its check found; with `alert_on: conditions` (the default) `condition.met` is then
//! that change's only alert.

use driftwatch_alert::{WatchRef, condition_payload, v1};
use driftwatch_core::values::AlertOn;
use driftwatch_core::{EventType, IdKind, RunOutcome, WatchOptions, new_id};
use driftwatch_store::{Event, Watch};
use driftwatch_values::{Verdict, changes, evaluate};

use super::{CheckFacts, Compared};
use crate::runner::Runner;

impl Runner {
    /// Judges the watch's conditions on `compared` and adjusts it: a change event they do not
    /// allow is dropped with the reason as a note, and a crossing adds its event. Returns
    /// whether they hold when that is news to remember; `None` when they were not judged (no
    /// conditions, no text, or an unchanged page whose verdict is already known) or held as before.
    pub(super) fn judge_conditions(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        compared: &mut Compared,
    ) -> (Option<bool>, Option<Event>) {
        let (Some(conditions), Some(facts)) = (&options.conditions, compared.facts.as_ref()) else {
            return (None, None);
        };
        let known = watch.conditions_met.is_some();
        if compared.outcome == RunOutcome::Unchanged && known {
            return (None, None);
        }
        let verdict = evaluate(conditions, &facts.facts());
        let crossed = match (watch.conditions_met, verdict.holds) {
            (Some(true), true) | (Some(false) | None, false) => None,
            (_, true) => Some(EventType::ConditionMet),
            (Some(true), false) => Some(EventType::ConditionCleared),
        };
        let snapshot = compared.snapshot.as_ref().map(|s| s.id.clone());
        // The change this check found, typed, for a crossing to carry.
        let change =
            compared.event.as_ref().filter(|_| crossed.is_some()).and_then(|e| match v1::Payload::parse(&e.payload) {
                Some(v1::Payload::Change(envelope)) => Some(envelope.data),
                _ => None,
            });
        let event = crossed.map(|event_type| self.crossing_event(watch, event_type, &verdict, facts, snapshot, change));
        if !verdict.holds && compared.event.take().is_some() {
            hold_back(compared, &verdict, crossed.is_some());
        }
        if crossed == Some(EventType::ConditionMet)
            && conditions.alert_on == AlertOn::Conditions
            && compared.event.is_some()
        {
            // One alert for one change: `condition.met` carries it. The change stays in the
            // history (the run names it), delivered nowhere.
            compared.undelivered = compared.event.take();
        }
        if crossed.is_some()
            && let Some(snapshot) = compared.snapshot.as_mut()
        {
            // The crossing is told: the change was not kept quiet (by the noise rules either).
            snapshot.kept_quiet = None;
        }
        // Written only when it changed: no extra write on the checks that cross nothing.
        let remember = (watch.conditions_met != Some(verdict.holds)).then_some(verdict.holds);
        (remember, event)
    }

    /// The `condition.met` or `condition.cleared` event of a crossing judged on `snapshot`.
    fn crossing_event(
        &self,
        watch: &Watch,
        event_type: EventType,
        verdict: &Verdict,
        facts: &CheckFacts,
        snapshot: Option<String>,
        change: Option<v1::ChangeDetected>,
    ) -> Event {
        let now = self.now();
        let event_id = new_id(IdKind::Event);
        let data = v1::ConditionEvent {
            event_id: event_id.clone(),
            watch: v1::Watch { id: String::new(), name: String::new(), url: String::new() },
            holds: verdict.holds,
            reasons: verdict.reasons.clone(),
            readings: facts.values.iter().map(|(name, value)| (name.clone(), value.plain())).collect(),
            values: facts.previous.as_ref().map(|before| changes(before, &facts.values)).unwrap_or_default(),
            snapshot: snapshot.clone(),
            diff: None,
            snapshots: None,
            render: None,
        };
        let pair = change.as_ref().map(|c| (c.snapshots.clone(), (c.diff.added, c.diff.removed)));
        let data = match change {
            Some(change) => data.with_change(change),
            None => data,
        };
        let payload = condition_payload(
            event_type,
            WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
            data,
            now.and_utc(),
        );
        let event = Event::about_watch(event_id, watch, event_type, payload, now).on_snapshot(snapshot);
        match pair {
            // Its row refers to the change as a `change.detected` row would (timeline, diff).
            Some((pair, lines)) => event.of_change(&pair.previous, &pair.current, lines),
            None => event,
        }
    }
}

/// The conditions do not allow the change that was to alert: unless they just stopped holding
/// (told by `condition.cleared`, `cleared`), it was kept quiet. The run's note says why.
fn hold_back(compared: &mut Compared, verdict: &Verdict, cleared: bool) {
    let why = if cleared {
        format!("conditions cleared: {}", verdict.reason())
    } else {
        if let Some(snapshot) = compared.snapshot.as_mut() {
            snapshot.kept_quiet = Some(verdict.reason());
        }
        format!("no alert: {}", verdict.reason())
    };
    compared.note = Some(match compared.note.take() {
        Some(before) => format!("{why}; {before}"),
        None => why,
    });
}
