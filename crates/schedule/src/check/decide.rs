//! Decide and record: the watch's health after a run, and the check written down.

use driftwatch_alert::WatchRef;
use driftwatch_core::{Backoff, EventType, IdKind, WatchHealth, new_id};
use driftwatch_store::checks::CheckResult;
use driftwatch_store::{Event, Run, StoreError, Watch};

use super::Decided;

/// What went wrong with a run beyond its error, for the watch's health.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Trouble<'a> {
    /// The page was read but the selector matched nothing.
    pub selector_missing: bool,
    /// A bot wall answered: who put it up.
    pub blocked_by: Option<&'a str>,
    /// The session is gone and the login steps did not sign in.
    pub login_required: bool,
}
use crate::runner::Runner;

impl Runner {
    /// How failing watches back off.
    pub(super) fn backoff(&self) -> Backoff {
        Backoff { threshold: self.config().failure_threshold, cap: self.config().failing_backoff_max }
    }

    /// The watch's health after `run`, and the event announcing a change of it.
    /// `value_failure` is, when the watch's values were read, why some could not be (`None`:
    /// all were): a value missing at `failure_threshold` checks in a row is a health of its own.
    /// A bot wall (`blocked_by`) or a failed login makes the health `blocked` or
    /// `login_required` at once: one run says so unambiguously. Either counts as a failure for
    /// the back-off, so a wall is not knocked on more often than a failing page.
    pub(super) fn decide(
        &self,
        watch: &Watch,
        run: Run,
        trouble: Trouble<'_>,
        value_failure: Option<Option<String>>,
    ) -> Decided {
        let Trouble { selector_missing, blocked_by, login_required } = trouble;
        let failed = run.error.is_some() || blocked_by.is_some();
        let threshold = self.config().failure_threshold;
        let consecutive_failures = if failed { watch.consecutive_failures + 1 } else { 0 };
        let value_failures = match &value_failure {
            Some(Some(_)) => watch.value_failures.saturating_add(1),
            Some(None) => 0,
            // Not read (a failed check, 304 Not Modified): as it was.
            None => watch.value_failures,
        };
        let before = watch.health.parse().unwrap_or(WatchHealth::Ok);
        let health = match (failed, selector_missing) {
            _ if blocked_by.is_some() => WatchHealth::Blocked,
            _ if login_required => WatchHealth::LoginRequired,
            (false, _) if value_failures >= threshold => WatchHealth::ValueMissing,
            (false, _) if value_failure.is_none() && before == WatchHealth::ValueMissing => before,
            (false, _) => WatchHealth::Ok,
            _ if consecutive_failures < threshold => before,
            (true, true) => WatchHealth::SelectorMissing,
            (true, false) => WatchHealth::Failing,
        };
        let changed = health != before;
        let health_event = changed.then(|| {
            let (count, error) = match (health, &value_failure) {
                (WatchHealth::ValueMissing, Some(Some(why))) => (value_failures, Some(why.as_str())),
                _ => (consecutive_failures, run.error.as_deref()),
            };
            self.health_event(watch, &run, health, (count, error), blocked_by)
        });
        Decided {
            run,
            health,
            consecutive_failures,
            value_failures: (value_failures != watch.value_failures).then_some(value_failures),
            health_event,
            health_changed_from: changed.then_some(before),
        }
    }

    /// Writes the check (the watch's new state, the snapshot, the run, the events and their
    /// deliveries) under the watch's lease, all or nothing (a savepoint in a batch of checks
    /// committed together), then tells who waits.
    pub(super) async fn record(
        &self,
        result: CheckResult,
        health_changed_from: Option<WatchHealth>,
    ) -> Result<(), StoreError> {
        let (watch_id, health) = (result.watch_id.clone(), result.health.clone());
        let (outcome, error, ms) = (result.run.outcome.clone(), result.run.error.clone(), result.run.duration_ms);
        let awaits_verdict = !result.verdicts.is_empty();
        let queued = self.write_check(result).await;
        self.recorded();
        let queued = queued?;
        match error.as_deref() {
            Some(error) => tracing::warn!(watch.id = %watch_id, error, "check failed"),
            None => tracing::info!(watch.id = %watch_id, %outcome, queued, ms, "checked"),
        }
        if let Some(before) = health_changed_from {
            tracing::warn!(watch.id = %watch_id, from = %before, to = %health, "watch health changed");
        }
        // Deliveries to send, or a change waiting for a model's verdict: wake who has work.
        if queued > 0 || awaits_verdict {
            self.deliveries_queued();
        }
        Ok(())
    }

    /// The event announcing that a watch's health changed to `health`.
    fn health_event(
        &self,
        watch: &Watch,
        run: &Run,
        health: WatchHealth,
        (consecutive_failures, error): (i32, Option<&str>),
        blocked_by: Option<&str>,
    ) -> Event {
        let at = run.finished_at;
        let event_type = match health {
            WatchHealth::Ok => EventType::CheckRecovered,
            WatchHealth::Failing => EventType::CheckFailed,
            WatchHealth::SelectorMissing => EventType::SelectorMissing,
            WatchHealth::ValueMissing => EventType::ValueMissing,
            WatchHealth::Blocked => EventType::CheckBlocked,
            WatchHealth::LoginRequired => EventType::LoginRequired,
        };
        let event_id = new_id(IdKind::Event);
        let payload = driftwatch_alert::check_payload(
            event_type,
            &event_id,
            WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
            driftwatch_alert::CheckRef {
                run_id: &run.id,
                http_status: run.http_status,
                error,
                consecutive_failures,
                blocked_by,
            },
            at.and_utc(),
        );
        Event::about_watch(event_id, watch, event_type, payload, at)
    }
}
