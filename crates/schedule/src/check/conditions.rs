//! Conditions: whether a watch's conditions hold on this check. A change alerts only when
//! they do (otherwise the run says why not); `condition.met` is raised when they start to hold
//! (the first check included) and `condition.cleared` when they stop.

use driftwatch_alert::{WatchRef, condition_payload, v1};
use driftwatch_core::{EventType, IdKind, RunOutcome, WatchOptions, new_id};
use driftwatch_store::outbox::NewEvent;
use driftwatch_store::{Event, Watch};
use driftwatch_values::{Facts, changes, evaluate};

use super::Compared;
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
    ) -> (Option<bool>, Option<NewEvent>) {
        let (Some(conditions), Some(facts)) = (&options.conditions, compared.facts.as_ref()) else {
            return (None, None);
        };
        let known = watch.conditions_met.is_some();
        if compared.outcome == RunOutcome::Unchanged && known {
            return (None, None);
        }
        let verdict = evaluate(
            conditions,
            &Facts {
                values: &facts.values,
                previous: facts.previous.as_ref(),
                text: &facts.text,
                added: &facts.added,
                removed: &facts.removed,
                change_size: facts.change_size,
            },
        );
        let moved = facts.previous.as_ref().map(|before| changes(before, &facts.values)).unwrap_or_default();
        let crossed = match (watch.conditions_met, verdict.holds) {
            (Some(true), true) | (Some(false) | None, false) => None,
            (_, true) => Some(EventType::ConditionMet),
            (Some(true), false) => Some(EventType::ConditionCleared),
        };
        if !verdict.holds && compared.event.take().is_some() {
            // The change does not alert; unless the conditions just stopped holding (told by
            // condition.cleared), it was kept quiet.
            let why = match crossed {
                Some(_) => format!("conditions cleared: {}", verdict.reason()),
                None => {
                    if let Some(snapshot) = compared.snapshot.as_mut() {
                        snapshot.kept_quiet = Some(verdict.reason());
                    }
                    format!("no alert: {}", verdict.reason())
                }
            };
            compared.note = Some(match compared.note.take() {
                Some(before) => format!("{why}; {before}"),
                None => why,
            });
        }
        let event = crossed.map(|event_type| {
            let now = self.now();
            let event_id = new_id(IdKind::Event);
            let snapshot = compared.snapshot.as_ref().map(|s| s.id.clone());
            let data = v1::ConditionEvent {
                event_id: event_id.clone(),
                watch: v1::Watch { id: String::new(), name: String::new(), url: String::new() },
                holds: verdict.holds,
                reasons: verdict.reasons.clone(),
                values: facts.values.iter().map(|(name, value)| (name.clone(), value.plain())).collect(),
                changes: moved,
                snapshot: snapshot.clone(),
            };
            let payload = condition_payload(
                event_type,
                WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
                data,
                now.and_utc(),
            );
            NewEvent {
                event: Event {
                    id: event_id,
                    account_id: watch.account_id.clone(),
                    watch_id: Some(watch.id.clone()),
                    endpoint_id: None,
                    event_type: event_type.as_str().to_owned(),
                    previous_snapshot_id: None,
                    snapshot_id: snapshot,
                    added: 0,
                    removed: 0,
                    payload,
                    created_at: now,
                },
            }
        });
        if event.is_some()
            && let Some(snapshot) = compared.snapshot.as_mut()
        {
            // The crossing is told: the change was not kept quiet (by the noise rules either).
            snapshot.kept_quiet = None;
        }
        // Written only when it changed: no extra write on the checks that cross nothing.
        let remember = (watch.conditions_met != Some(verdict.holds)).then_some(verdict.holds);
        (remember, event)
    }
}
