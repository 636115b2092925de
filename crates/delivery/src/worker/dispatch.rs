//! From a claim to requests in flight: quiet hours hold what fell due in them, each outbox
//! job is admitted against its endpoint (or given back), and each admitted or paced job is sent
//! in a task holding one of the worker's slots.

use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;
use driftwatch_core::AttemptTrigger;
use driftwatch_store::StoreError;
use driftwatch_store::deliveries::{self, Job, PacedJob};
use driftwatch_store::endpoints;
use tokio_util::task::TaskTracker;

use super::DeliveryWorker;
use crate::load::{Admission, GiveBack};

impl DeliveryWorker {
    /// Admits each job of the outbox claim in turn and sends those admitted, each in a task of
    /// its own holding one of the worker's slots; returns how many were sent and what to give
    /// back.
    pub(super) async fn dispatch(&self, jobs: Vec<Job>, tracker: &TaskTracker) -> (usize, GiveBack) {
        let mut dispatched = 0;
        let mut give_back = GiveBack::default();
        for job in jobs {
            match self.admit(&job) {
                Admission::Send => {}
                Admission::Wait => {
                    give_back.released.push(job.delivery.id.clone());
                    continue;
                }
                Admission::Limited => {
                    give_back.released.push(job.delivery.id.clone());
                    if !give_back.unflagged.contains(&job.endpoint.id) {
                        give_back.unflagged.push(job.endpoint.id.clone());
                    }
                    continue;
                }
            }
            let Ok(permit) = Arc::clone(&self.inner.slots).acquire_owned().await else { break };
            dispatched += 1;
            let worker = self.clone();
            tracker.spawn(async move {
                // The slot and the endpoint's count are the request's: freed when it is over,
                // not when its record commits (that waits for a batch, on SQLite behind the
                // queue's writes), so the cap limits requests, not requests and commits.
                let (endpoint_id, freer) = (job.endpoint.id.clone(), worker.clone());
                let answered = move || {
                    freer.load().finish(&endpoint_id);
                    drop(permit);
                    freer.freed();
                };
                // A retry it scheduled is in the outbox once the record commits: look again then
                // (the loop may have gone to sleep until a later time meanwhile).
                if worker.attempt_then(job, AttemptTrigger::Scheduled, answered).await {
                    worker.freed();
                }
            });
        }
        (dispatched, give_back)
    }

    /// Gives back, to wait until their quiet hours end, the claimed deliveries that fell due in
    /// them (retries and redeliveries of held ones included); returns the rest.
    pub(super) async fn hold_quiet(
        &self,
        jobs: Vec<Job>,
        paced: Vec<PacedJob>,
        owner: &str,
    ) -> Result<(Vec<Job>, Vec<PacedJob>), StoreError> {
        if jobs.iter().all(|j| j.quiet_hours.is_none()) && paced.iter().all(|p| p.job.quiet_hours.is_none()) {
            return Ok((jobs, paced));
        }
        let now = self.now();
        let mut held: Vec<(String, NaiveDateTime)> = Vec::new();
        let mut keep = |job: &Job| match job.quiet_hours.as_deref().and_then(|q| driftwatch_core::quiet_release(q, now))
        {
            Some(until) => {
                held.push((job.delivery.id.clone(), until));
                false
            }
            None => true,
        };
        let jobs: Vec<Job> = jobs.into_iter().filter(|j| keep(j)).collect();
        let paced: Vec<PacedJob> = paced.into_iter().filter(|p| keep(&p.job)).collect();
        if !held.is_empty() {
            let owner = owner.to_owned();
            self.inner
                .store
                .write(move |c| {
                    for (id, until) in &held {
                        deliveries::hold(
                            c,
                            std::slice::from_ref(id),
                            &owner,
                            *until,
                            driftwatch_core::HELD_QUIET_HOURS,
                        )?;
                    }
                    Ok(())
                })
                .await?;
        }
        Ok((jobs, paced))
    }

    /// Sends the limited claim's deliveries, each at its planned send time; returns how many.
    pub(super) async fn dispatch_paced(&self, paced: Vec<PacedJob>, tracker: &TaskTracker) -> usize {
        let mut dispatched = 0;
        for PacedJob { job, send_at } in paced {
            let Ok(permit) = Arc::clone(&self.inner.slots).acquire_owned().await else { break };
            dispatched += 1;
            let worker = self.clone();
            tracker.spawn(async move {
                // Against the clock now, not at the claim: the claim's own time is not a gap.
                let wait = (send_at - worker.now()).to_std().unwrap_or(Duration::ZERO);
                tokio::time::sleep(wait).await;
                worker.attempt(job, AttemptTrigger::Scheduled).await;
                drop(permit);
                worker.wake();
            });
        }
        dispatched
    }

    /// Gives back what admission refused, in one write: deliveries queued in the instant their
    /// endpoint gained a limit are flagged first, so the cluster-wide claim sends them under it.
    pub(super) async fn give_back(&self, give_back: GiveBack, owner: String) -> Result<(), StoreError> {
        let GiveBack { released, unflagged } = give_back;
        if released.is_empty() {
            return Ok(());
        }
        self.inner
            .store
            .write(move |c| {
                for endpoint_id in &unflagged {
                    endpoints::sync_limited(c, endpoint_id)?;
                }
                deliveries::release(c, &released, &owner, None)
            })
            .await?;
        Ok(())
    }

    /// Whether a job of the outbox claim may be sent now: its endpoint still takes deliveries,
    /// has no limit that must hold across nodes, and is under this node's per-endpoint cap.
    pub(super) fn admit(&self, job: &Job) -> Admission {
        let endpoint = &job.endpoint;
        if !endpoint.enabled {
            return Admission::Wait; // changed since the claim's snapshot
        }
        // An open or half-open circuit is a limit too: its deliveries wait for the probe.
        if endpoint.max_in_flight.is_some()
            || endpoint.rate_limit_per_second.is_some()
            || endpoint.circuit_open_until.is_some()
        {
            return Admission::Limited;
        }
        let mut load = self.load();
        if load.in_flight.get(&endpoint.id).copied().unwrap_or(0) >= self.inner.config.per_endpoint_concurrency {
            return Admission::Wait;
        }
        load.start(&endpoint.id);
        Admission::Send
    }
}
