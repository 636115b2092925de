//! One attempt: prepare -> send -> decide -> record, with its audit line.

use chrono::TimeDelta;
use driftwatch_core::{AttemptTrigger, DeliveryStatus, EventType, IdKind, new_id, parse_schedule};
use driftwatch_store::deliveries::{AttemptRecord, Completion, Job};
use driftwatch_store::endpoints::Health;
use driftwatch_store::{Delivery, DeliveryAttempt, Endpoint, Event};
use tracing::Instrument as _;

use crate::DeliveryWorker;
use crate::policy::SendResult;
use crate::policy::{Decision, Outcome};
use crate::sender::Sender;

impl DeliveryWorker {
    /// Sends one claimed delivery and records the attempt under its lease.
    pub(crate) async fn attempt(&self, job: Job, trigger: AttemptTrigger) {
        self.attempt_then(job, trigger, || {}).await;
    }

    /// [`Self::attempt`], calling `answered` once the request is over (answered, failed or not
    /// sendable) and before the attempt is recorded: what limits requests in flight can let the
    /// next one go while the record waits for its batch to commit. The delivery's lease holds
    /// until then, so nothing else claims it, and a crash before the commit sends it again.
    /// Returns whether the attempt scheduled a retry.
    pub(crate) async fn attempt_then(&self, job: Job, trigger: AttemptTrigger, answered: impl FnOnce() + Send) -> bool {
        let span = tracing::info_span!(
            "delivery",
            delivery.id = %job.delivery.id,
            endpoint.id = %job.endpoint.id,
            attempt = job.delivery.attempts + 1
        );
        self.attempt_in_span(job, trigger, answered).instrument(span).await
    }

    /// prepare -> send -> decide -> record.
    async fn attempt_in_span(&self, job: Job, trigger: AttemptTrigger, answered: impl FnOnce() + Send) -> bool {
        let Some(attempt) = Prepared::new(job, trigger) else {
            answered();
            self.inner.wake_moved.store(true, std::sync::atomic::Ordering::Release);
            return false;
        };
        let started_at = self.inner.clock.now();
        let result = attempt.send(&self.inner.sender, started_at.timestamp()).await;
        answered();
        self.inner.config.metrics.attempt_finished(outcome_class(&result), result.duration);
        let (record, decision) = self.decide(&attempt, &result, started_at);
        let recorded = self.record(record, &decision, &result, &attempt.delivery).await;
        if !(recorded && decision.status == DeliveryStatus::Sent) {
            // A retry, a dead letter (its circuit), a record that failed (its lease): the next
            // due time may be sooner than the idle loop last read.
            self.inner.wake_moved.store(true, std::sync::atomic::Ordering::Release);
        }
        recorded && decision.status == DeliveryStatus::Failed
    }

    /// What the attempt's result means: the delivery's next state (retry, sent or dead), what it
    /// says about the endpoint's health, and the attempt row.
    fn decide(
        &self,
        attempt: &Prepared,
        result: &SendResult,
        started_at: chrono::DateTime<chrono::Utc>,
    ) -> (AttemptRecord, Decision) {
        let config = &self.inner.config;
        let Prepared { delivery, endpoint, number, trigger, owner, .. } = attempt;
        // Attempts count within the current budget (a redelivered dead delivery starts afresh).
        let in_budget = (number - delivery.retry_base).max(1) as u32;
        let budget = (delivery.max_attempts - delivery.retry_base).max(1) as u32;
        let schedule = endpoint.retry_schedule.as_deref().and_then(|s| parse_schedule(s).ok());
        let decision =
            config.retry.decide_with(result.outcome, in_budget, budget, schedule.as_deref(), result.retry_after);
        let health = match result.outcome {
            Outcome::Status(200..=299) | Outcome::Smtp(200..=299) => Health::Success,
            Outcome::Status(410) => Health::Gone,
            Outcome::Unsendable => Health::Unchanged,
            _ => Health::Failure {
                threshold: config.circuit_threshold,
                open_for: TimeDelta::from_std(config.circuit_open_for).unwrap_or(TimeDelta::minutes(5)),
                disable_after: TimeDelta::from_std(config.disable_after).unwrap_or(TimeDelta::days(5)),
            },
        };
        let now = self.now();
        let retry_in = decision.retry_in.and_then(|d| TimeDelta::from_std(d).ok()).unwrap_or_default();
        let status_code = result.status_code();
        let completion = Completion {
            status: decision.status,
            attempts: *number,
            next_attempt_at: now + retry_in,
            last_status_code: status_code,
            last_error: result.error.clone(),
            now,
            default_max_attempts: config.retry.max_attempts as i32,
        };
        let row = DeliveryAttempt {
            id: new_id(IdKind::Attempt),
            delivery_id: delivery.id.clone(),
            attempt_number: *number,
            started_at: started_at.naive_utc(),
            duration_ms: result.duration.as_millis() as i64,
            status_code,
            error_kind: result.error_kind.map(|k| k.as_str().to_owned()),
            error: result.error.clone(),
            response_snippet: result.snippet.clone(),
            trigger: trigger.as_str().to_owned(),
        };
        let record = AttemptRecord {
            delivery_id: delivery.id.clone(),
            endpoint_id: endpoint.id.clone(),
            owner: owner.clone(),
            completion,
            attempt: row,
            health,
        };
        (record, decision)
    }

    /// Hands the attempt to the batching writer and waits until it is committed (or the lease
    /// turned out lost), then writes the attempt's audit line: one per attempt, with the
    /// delivery, endpoint and event, the attempt number, status, duration and outcome.
    /// Returns whether the record was committed under the delivery's lease.
    async fn record(
        &self,
        record: AttemptRecord,
        decision: &Decision,
        result: &SendResult,
        delivery: &Delivery,
    ) -> bool {
        let (delivery_id, endpoint_id, number) =
            (record.delivery_id.clone(), record.endpoint_id.clone(), record.attempt.attempt_number);
        let recorded = self.inner.completions.submit(record).await;
        let outcome = match &recorded {
            Ok(true) => decision.status.as_str(),
            Ok(false) => "lease_lost",
            Err(_) => "not_recorded",
        };
        macro_rules! audit {
            ($level:ident, $($extra:tt)*) => {
                tracing::$level!(
                    delivery.id = %delivery_id,
                    endpoint.id = %endpoint_id,
                    event.id = %delivery.event_id,
                    event_type = %delivery.event_type,
                    attempt = number,
                    status = result.status_code(),
                    duration_ms = result.duration.as_millis() as u64,
                    outcome,
                    $($extra)*
                )
            };
        }
        match (&recorded, decision.status) {
            (Ok(true), DeliveryStatus::Sent) => audit!(info, "delivery attempt"),
            (Ok(true), DeliveryStatus::Dead) => audit!(warn, error = result.error.as_deref(), "delivery attempt: dead"),
            (Ok(true), _) => {
                audit!(info, error = result.error.as_deref(), retry_in = ?decision.retry_in, "delivery attempt")
            }
            (Ok(false), _) => {
                audit!(warn, "delivery attempt: lease lost before it was recorded; another worker owns it")
            }
            (Err(e), _) => audit!(
                error,
                error = %e,
                "delivery attempt not recorded; the lease will expire and it will be retried"
            ),
        }
        matches!(recorded, Ok(true))
    }
}

/// An attempt's outcome as a bounded label: the status class, or the kind of error.
fn outcome_class(result: &SendResult) -> &'static str {
    match (result.outcome, result.error_kind) {
        (Outcome::Status(100..=199), _) => "1xx",
        (Outcome::Status(200..=299), _) => "2xx",
        (Outcome::Status(300..=399), _) => "3xx",
        (Outcome::Status(400..=499), _) => "4xx",
        (Outcome::Status(_), _) => "5xx",
        (Outcome::Smtp(200..=299), _) => "smtp_2xx",
        (Outcome::Smtp(400..=499), _) => "smtp_4xx",
        (Outcome::Smtp(_), _) => "smtp_5xx",
        (_, Some(kind)) => kind.as_str(),
        (_, None) => "error",
    }
}

/// A claimed delivery, ready to send: what the attempt is and under which lease.
struct Prepared {
    delivery: Delivery,
    body: Vec<u8>,
    endpoint: Endpoint,
    /// This attempt's number (1 for the first).
    number: i32,
    trigger: AttemptTrigger,
    owner: String,
}

impl Prepared {
    /// `None` when the job carries no lease (nothing may be sent without one).
    fn new(job: Job, trigger: AttemptTrigger) -> Option<Prepared> {
        let Job { delivery, body, endpoint, .. } = job;
        let owner = delivery.lease_owner.clone()?;
        // A redelivery asked for by a person stays manual whoever picks it up.
        let trigger =
            if delivery.next_trigger == AttemptTrigger::Manual.as_str() { AttemptTrigger::Manual } else { trigger };
        let number = delivery.attempts + 1;
        Some(Prepared { delivery, body, endpoint, number, trigger, owner })
    }

    /// The signed POST of the exact stored body.
    async fn send(&self, sender: &Sender, timestamp: i64) -> SendResult {
        let Prepared { delivery, body, endpoint, number, .. } = self;
        sender.send(endpoint, &delivery.id, &delivery.event_type, *number as u32, body, timestamp).await
    }
}

/// The endpoint's URL as other endpoints are told it: a chat service's webhook URL carries its
/// key in the path, so for every kind but `webhook` only the scheme and host are said.
fn shown_url(endpoint: &Endpoint) -> String {
    if endpoint.kind == "webhook" {
        return endpoint.url.clone();
    }
    match url::Url::parse(&endpoint.url) {
        Ok(url) => format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default()),
        Err(_) => String::new(),
    }
}

/// The `endpoint.disabled` event raised when an attempt disables its endpoint.
pub(crate) fn disabled_event(endpoint: &Endpoint, reason: &str, at: chrono::DateTime<chrono::Utc>) -> Event {
    let event_id = new_id(IdKind::Event);
    let payload = driftwatch_alert::endpoint_payload(
        EventType::EndpointDisabled,
        &event_id,
        driftwatch_alert::EndpointRef {
            id: &endpoint.id,
            url: &shown_url(endpoint),
            description: &endpoint.description,
        },
        Some(reason),
        at,
    );
    Event::about_endpoint(event_id, endpoint, EventType::EndpointDisabled, payload, at.naive_utc())
}
