//! What people and agents ask of the outbox besides redelivery: a test event to one endpoint,
//! and recoveries (re-queue an endpoint's failed and dead deliveries of a time range). The API
//! and the browser UI both call these.

use driftwatch_alert::{EndpointRef, endpoint_payload, slack_message};
use driftwatch_core::{EventType, IdKind, RecoveryState, new_id};
use driftwatch_store::outbox::{self, NewEvent};
use driftwatch_store::{Delivery, Endpoint, Event, Recovery, StoreError, recoveries};
use driftwatch_validate::RecoveryRequest;

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
        let new = NewEvent {
            slack_body: slack_message(&payload),
            event: Event::about_endpoint(event_id, endpoint, EventType::EndpointTest, payload, at.naive_utc()),
        };
        let max_attempts = self.inner.config.retry.max_attempts as i32;
        let endpoint_id = endpoint.id.clone();
        let delivery = self
            .inner
            .store
            .write(move |c| outbox::enqueue_for_endpoint(c, &new, &endpoint_id, max_attempts, at.naive_utc()))
            .await?
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
