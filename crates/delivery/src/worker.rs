//! The loop that drains the outbox.

use std::sync::Arc;
use std::time::Duration;

use chrono::{NaiveDateTime, TimeDelta};
use driftwatch_core::{AttemptTrigger, Clock, DeliveryStatus, IdKind, new_id};
use driftwatch_store::deliveries::{self, Completion, Job};
use driftwatch_store::{DeliveryAttempt, Store};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::policy::{Outcome, RetryPolicy};
use crate::sender::Sender;

/// Settings of the worker.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Deliveries in flight at once, across all endpoints.
    pub concurrency: usize,
    /// Most deliveries claimed per query.
    pub batch_size: i64,
    /// Longest sleep between looks at the outbox (picks up work queued by other nodes).
    pub poll_interval: Duration,
    /// Retry schedule and attempt budget.
    pub retry: RetryPolicy,
    /// A name for this node, in lease owners and logs.
    pub node_id: String,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            concurrency: 64,
            batch_size: 100,
            poll_interval: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            node_id: "node".into(),
        }
    }
}

/// Drains the outbox: claims due deliveries, sends them, records each attempt.
#[derive(Clone)]
pub struct DeliveryWorker {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    sender: Sender,
    clock: Arc<dyn Clock>,
    config: DeliveryConfig,
    wake: Notify,
    slots: Arc<Semaphore>,
}

impl DeliveryWorker {
    /// A worker over `store`, sending with `sender`.
    pub fn new(
        store: Store,
        sender: Sender,
        clock: Arc<dyn Clock>,
        config: DeliveryConfig,
    ) -> DeliveryWorker {
        let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
        DeliveryWorker {
            inner: Arc::new(Inner {
                store,
                sender,
                clock,
                config,
                wake: Notify::new(),
                slots,
            }),
        }
    }

    /// Asks the loop to look at the outbox now (new deliveries were queued).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// Runs until `shutdown` is cancelled, then waits for attempts in flight to be recorded.
    pub async fn run(self, shutdown: CancellationToken) {
        let inner = &self.inner;
        let tracker = TaskTracker::new();
        let lease = inner.sender.options().timeout + Duration::from_secs(30);
        tracing::info!(node = %inner.config.node_id, concurrency = inner.config.concurrency, "delivery worker started");
        while !shutdown.is_cancelled() {
            let free = inner.slots.available_permits() as i64;
            let mut claimed = 0;
            if free > 0 {
                let wanted = free.min(inner.config.batch_size);
                let owner = format!("{}:{}", inner.config.node_id, new_id(IdKind::Delivery));
                let now = inner.clock.now().naive_utc();
                let until = now + TimeDelta::from_std(lease).unwrap_or(TimeDelta::minutes(1));
                match inner
                    .store
                    .run(move |c| deliveries::claim_due(c, &owner, now, until, wanted))
                    .await
                {
                    Ok(jobs) => {
                        claimed = jobs.len() as i64;
                        for job in jobs {
                            let Ok(permit) = Arc::clone(&inner.slots).acquire_owned().await else {
                                break;
                            };
                            let worker = self.clone();
                            tracker.spawn(async move {
                                worker.attempt(job, AttemptTrigger::Scheduled).await;
                                drop(permit);
                                worker.wake();
                            });
                        }
                        if claimed == wanted {
                            continue; // there may be more due right now
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "claiming deliveries failed"),
                }
            }
            let wait = self.idle_wait().await;
            tracing::trace!(claimed, ?wait, "delivery worker idle");
            tokio::select! {
                () = inner.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => {}
            }
        }
        tracker.close();
        tracker.wait().await;
        tracing::info!("delivery worker stopped");
    }

    /// How long the loop may sleep: until the next delivery is due or a lease expires, capped by
    /// the poll interval.
    async fn idle_wait(&self) -> Duration {
        let inner = &self.inner;
        let now = inner.clock.now().naive_utc();
        let next: Option<NaiveDateTime> = inner
            .store
            .run(move |c| deliveries::next_wake(c, now))
            .await
            .ok()
            .flatten();
        let until_next = next.map_or(inner.config.poll_interval, |at| {
            (at - now).to_std().unwrap_or(Duration::ZERO)
        });
        until_next
            .min(inner.config.poll_interval)
            .max(Duration::from_millis(5))
    }

    /// Sends one claimed delivery and records the attempt under its lease.
    async fn attempt(&self, job: Job, trigger: AttemptTrigger) {
        let span = tracing::info_span!(
            "delivery",
            delivery.id = %job.delivery.id,
            endpoint.id = %job.endpoint.id,
            attempt = job.delivery.attempts + 1
        );
        self.attempt_in_span(job, trigger).instrument(span).await;
    }

    async fn attempt_in_span(&self, job: Job, trigger: AttemptTrigger) {
        let inner = &self.inner;
        let Job {
            delivery,
            body,
            endpoint,
        } = job;
        let Some(owner) = delivery.lease_owner.clone() else {
            return;
        };
        let number = delivery.attempts + 1;
        let started_at = inner.clock.now();
        let result = if endpoint.enabled {
            inner
                .sender
                .send(
                    &endpoint,
                    &delivery.id,
                    &delivery.event_type,
                    number as u32,
                    &body,
                    started_at.timestamp(),
                )
                .await
        } else {
            // Disabled after the delivery was queued: a permanent failure, recorded like any other.
            crate::SendResult {
                outcome: Outcome::Unsendable,
                error_kind: Some("disabled"),
                error: Some("the endpoint is disabled".into()),
                snippet: None,
                duration: Duration::ZERO,
            }
        };
        let decision =
            inner
                .config
                .retry
                .decide(result.outcome, number as u32, delivery.max_attempts as u32);
        let now = inner.clock.now().naive_utc();
        let retry_in = decision
            .retry_in
            .and_then(|d| TimeDelta::from_std(d).ok())
            .unwrap_or_default();
        let status_code = match result.outcome {
            Outcome::Status(code) if code > 0 => Some(i32::from(code)),
            _ => None,
        };
        let completion = Completion {
            status: decision.status,
            attempts: number,
            next_attempt_at: now + retry_in,
            last_status_code: status_code,
            last_error: result.error.clone(),
            now,
        };
        let row = DeliveryAttempt {
            id: new_id(IdKind::Attempt),
            delivery_id: delivery.id.clone(),
            attempt_number: number,
            started_at: started_at.naive_utc(),
            duration_ms: result.duration.as_millis() as i64,
            status_code,
            error_kind: result.error_kind.map(str::to_owned),
            error: result.error.clone(),
            response_snippet: result.snippet.clone(),
            trigger: trigger.as_str().to_owned(),
        };
        let id = delivery.id.clone();
        match inner
            .store
            .run(move |c| deliveries::complete(c, &id, &owner, &completion, &row))
            .await
        {
            Ok(true) => match decision.status {
                DeliveryStatus::Sent => {
                    tracing::info!(status = ?status_code, ms = result.duration.as_millis() as u64, "delivered")
                }
                DeliveryStatus::Dead => {
                    tracing::warn!(status = ?status_code, error = ?result.error, "delivery dead")
                }
                _ => {
                    tracing::info!(status = ?status_code, error = ?result.error, retry_in = ?decision.retry_in, "delivery failed, will retry")
                }
            },
            Ok(false) => {
                tracing::warn!("lease lost before the attempt was recorded; another worker owns it")
            }
            Err(e) => {
                tracing::error!(error = %e, "recording the attempt failed; the lease will expire and it will be retried")
            }
        }
    }
}
