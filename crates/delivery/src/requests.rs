//! What people and agents ask of the outbox besides redelivery: a test event to one endpoint,
//! and recoveries (re-queue an endpoint's failed and dead deliveries of a time range). The API
//! and the browser UI both call these.

use driftwatch_alert::{EndpointRef, endpoint_payload};
use driftwatch_core::{AttemptTrigger, EventType, IdKind, RecoveryState, new_id};
use driftwatch_store::deliveries::{self, Redelivery};
use driftwatch_store::outbox::ForEndpoint;
use driftwatch_store::{Delivery, Endpoint, Event, Recovery, StoreError, recoveries};
use driftwatch_validate::RecoveryRequest;
use tracing::Instrument as _;

use crate::DeliveryWorker;

/// Why a request was refused.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The endpoint is disabled.
    #[error("the endpoint is disabled; enable it first")]
    Disabled,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DeliveryWorker {
    /// Queues an `endpoint.test` event to `endpoint` alone and wakes the loop; returns the
    /// delivery.
    pub async fn queue_test(&self, endpoint: &Endpoint) -> Result<Delivery, RequestError> {
        if !endpoint.enabled {
            return Err(RequestError::Disabled);
        }
        let at = self.inner.clock.now();
        let event_id = new_id(IdKind::Event);
        let payload = endpoint_payload(
            EventType::EndpointTest,
            &event_id,
            EndpointRef { id: &endpoint.id, url: &endpoint.url, description: &endpoint.description },
            None,
            at,
        );
        let item = ForEndpoint {
            event: Event::about_endpoint(event_id, endpoint, EventType::EndpointTest, payload, at.naive_utc()),
            endpoint_id: endpoint.id.clone(),
            default_max_attempts: self.inner.config.retry.max_attempts as i32,
            now: at.naive_utc(),
        };
        let delivery = self
            .inner
            .enqueues
            .submit(item)
            .await??
            .ok_or_else(|| StoreError::Conflict("the test delivery was not queued".into()))?;
        // In the request's span: its request id leads to the delivery's attempts.
        tracing::info!(delivery.id = %delivery.id, endpoint.id = %delivery.endpoint_id, event.id = %delivery.event_id, "test event queued");
        self.wake();
        Ok(delivery)
    }

    /// Starts a recovery of `endpoint`'s deliveries (paced, in the background); a dry run is
    /// counted at once and recorded as done. The request was checked by `driftwatch_validate`.
    pub async fn recover(&self, endpoint: &Endpoint, request: RecoveryRequest) -> Result<Recovery, RequestError> {
        let now = self.now();
        let mut recovery = Recovery {
            id: new_id(IdKind::Recovery),
            account_id: endpoint.account_id.clone(),
            endpoint_id: endpoint.id.clone(),
            since: request.since,
            until: request.until,
            statuses: request.statuses.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(","),
            dry_run: request.dry_run,
            state: RecoveryState::Pending.as_str().to_owned(),
            matched: 0,
            requeued: 0,
            cursor: None,
            lease_owner: None,
            lease_until: None,
            created_at: now,
            updated_at: now,
            finished_at: None,
        };
        if request.dry_run {
            let probe = recovery.clone();
            let matched = self.inner.store.read(move |c| recoveries::count_matching(c, &probe)).await?;
            recovery.matched = matched;
            recovery.state = RecoveryState::Done.as_str().to_owned();
            recovery.finished_at = Some(now);
        }
        let stored = recovery.clone();
        self.inner.store.write(move |c| recoveries::insert_recovery(c, &stored)).await?;
        tracing::info!(recovery.id = %recovery.id, endpoint.id = %recovery.endpoint_id, dry_run = request.dry_run, "recovery requested");
        if !request.dry_run {
            self.wake_recoveries();
        }
        Ok(recovery)
    }
}

/// Why a redelivery on request did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RedeliverError {
    /// An attempt of this delivery is in flight.
    #[error("an attempt of this delivery is in flight")]
    Busy,
    /// The endpoint is disabled; enable it first.
    #[error("the endpoint is disabled; enable it first")]
    EndpointDisabled,
    /// The body was removed by retention.
    #[error("the delivery's body was purged by retention")]
    Purged,
    /// It waits for its endpoint's digest, or went out in one.
    #[error("{}", match .0 {
        Some(digest) => format!("this event went out in its endpoint's digest {digest}; redeliver that"),
        None => "this event waits for its endpoint's next digest".to_owned(),
    })]
    InDigest(Option<String>),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DeliveryWorker {
    /// Sends the account's delivery `id` again now, whatever its status, as a manual attempt
    /// with the same `webhook-id` and body; a `sent` or `dead` delivery gets a fresh attempt
    /// budget. Returns the delivery afterwards, or `None` when there is no such delivery.
    pub async fn redeliver(&self, account_id: &str, id: &str) -> Result<Option<Delivery>, RedeliverError> {
        let owner = format!("{}:{}", self.inner.config.node_id, new_id(IdKind::Delivery));
        let now = self.now();
        let until = self.lease_until(now);
        let budget = self.inner.config.retry.max_attempts as i32;
        let (account, delivery_id, lease) = (account_id.to_owned(), id.to_owned(), owner.clone());
        let claimed = self
            .inner
            .store
            .write(move |c| deliveries::claim_for_redelivery(c, &account, &delivery_id, &lease, now, until, budget))
            .await?;
        let job = match claimed {
            Redelivery::NotFound => return Ok(None),
            Redelivery::Busy => return Err(RedeliverError::Busy),
            Redelivery::EndpointDisabled => return Err(RedeliverError::EndpointDisabled),
            Redelivery::Purged => return Err(RedeliverError::Purged),
            Redelivery::InDigest(digest) => return Err(RedeliverError::InDigest(digest)),
            Redelivery::Claimed(job) => *job,
        };
        // A task of its own: if the HTTP caller goes away, the attempt still completes and is
        // recorded, and the endpoint's in-flight count is given back.
        let worker = self.clone();
        let endpoint_id = job.endpoint.id.clone();
        worker.load().start(&endpoint_id);
        // In the caller's span, so the request's id reaches the attempt's audit line.
        let attempt = tokio::spawn(
            async move {
                worker.attempt(job, AttemptTrigger::Manual).await;
                worker.load().finish(&endpoint_id);
                worker.wake();
            }
            .in_current_span(),
        );
        if let Err(e) = attempt.await {
            tracing::error!(error = %e, "a redelivery attempt task failed");
        }
        let (account, delivery_id) = (account_id.to_owned(), id.to_owned());
        Ok(self.inner.store.read(move |c| deliveries::get_delivery(c, &account, &delivery_id)).await?)
    }
}
