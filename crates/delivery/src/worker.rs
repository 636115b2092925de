//! The loop that drains the outbox, and redeliveries on request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{NaiveDateTime, TimeDelta};
use driftwatch_core::{AttemptTrigger, Clock, DeliveryStatus, EventType, IdKind, new_id};
use driftwatch_metrics::Metrics;
use driftwatch_store::deliveries::{self, AttemptRecord, Completion, Job, LimitedCaps, PacedJob, Redelivery};
use driftwatch_store::endpoints;
use driftwatch_store::endpoints::Health;
use driftwatch_store::outbox::NewEvent;
use driftwatch_store::{BatchWriter, Delivery, DeliveryAttempt, Endpoint, Event, Store, StoreError};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::policy::{Decision, Outcome, RetryPolicy};
use crate::sender::{SendResult, Sender};
use driftwatch_core::parse_schedule;

/// Settings of the worker.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    /// Deliveries in flight at once, across all endpoints.
    pub concurrency: usize,
    /// Deliveries in flight at once to one endpoint (per node), unless the endpoint says otherwise.
    pub per_endpoint_concurrency: usize,
    /// Most deliveries claimed per query.
    pub batch_size: i64,
    /// Longest sleep between looks at the outbox (picks up work queued by other nodes).
    pub poll_interval: Duration,
    /// Retry schedule and attempt budget.
    pub retry: RetryPolicy,
    /// Consecutive failures that open an endpoint's circuit.
    pub circuit_threshold: i32,
    /// How long an open circuit holds an endpoint's deliveries before one probe is let through.
    pub circuit_open_for: Duration,
    /// An endpoint failing continuously this long is disabled.
    pub disable_after: Duration,
    /// A lease outlives the request timeout by this much (time to record the attempt).
    pub lease_grace: Duration,
    /// Deliveries re-queued per step of a recovery.
    pub recovery_page: i64,
    /// A name for this node, in lease owners and logs.
    pub node_id: String,
    /// Where attempts are counted.
    pub metrics: Arc<Metrics>,
}

impl Default for DeliveryConfig {
    fn default() -> Self {
        DeliveryConfig {
            concurrency: 64,
            per_endpoint_concurrency: 16,
            batch_size: 100,
            poll_interval: Duration::from_secs(5),
            retry: RetryPolicy::default(),
            circuit_threshold: 5,
            circuit_open_for: Duration::from_secs(300),
            disable_after: Duration::from_secs(5 * 86_400),
            lease_grace: Duration::from_secs(30),
            recovery_page: 200,
            node_id: "node".into(),
            metrics: Arc::new(Metrics::default()),
        }
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
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Drains the outbox: claims due deliveries, sends them, records each attempt. Cheap to clone.
#[derive(Clone)]
pub struct DeliveryWorker {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    completions: BatchWriter<AttemptRecord, bool>,
    pub(crate) store: Store,
    sender: Sender,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: DeliveryConfig,
    wake: Notify,
    recovery_wake: Notify,
    slots: Arc<Semaphore>,
    endpoints: Mutex<EndpointLoad>,
}

/// What this node has in flight per endpoint without a limit of its own, for fairness: at most
/// `per_endpoint_concurrency` each. (Endpoints with `max_in_flight`, a rate limit or a
/// half-open circuit are limited across the cluster by `claim_limited` instead.)
#[derive(Default)]
struct EndpointLoad {
    in_flight: HashMap<String, usize>,
    /// Where the next `claim_limited` starts looking (the last limited endpoint it looked at).
    limited_cursor: String,
    /// Whether the next claim serves limited endpoints before the outbox claim: they take turns
    /// going first, so a backlog on either side never starves the other.
    limited_first: bool,
}

impl EndpointLoad {
    /// Endpoints this node must not claim for: at the per-node cap.
    fn saturated(&self, cap: usize) -> Vec<String> {
        let mut ids: Vec<String> =
            self.in_flight.iter().filter(|(_, n)| **n >= cap).map(|(id, _)| id.clone()).collect();
        ids.sort();
        ids
    }

    fn start(&mut self, endpoint_id: &str) {
        *self.in_flight.entry(endpoint_id.to_owned()).or_default() += 1;
    }

    fn finish(&mut self, endpoint_id: &str) {
        if let Some(n) = self.in_flight.get_mut(endpoint_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.in_flight.remove(endpoint_id);
            }
        }
    }
}

/// What becomes of a delivery the outbox claim leased.
enum Admission {
    /// Send it now.
    Send,
    /// Give it back: its endpoint is disabled, its circuit open, or this node at its cap.
    Wait,
    /// Give it back flagged `limited`: its endpoint has a limit that holds across nodes.
    Limited,
}

/// What admission refused: deliveries to release, and endpoints whose pending deliveries must
/// be flagged `limited` first.
#[derive(Default)]
struct GiveBack {
    released: Vec<String>,
    unflagged: Vec<String>,
}

/// Most limited endpoints looked at per claim.
const LIMITED_PER_CLAIM: i64 = 32;

/// Longest sleep of the loop while attempts are in flight.
const BUSY_POLL: Duration = Duration::from_millis(200);

/// Most attempts recorded in one transaction.
const COMPLETION_BATCH: usize = 256;

impl DeliveryWorker {
    /// A worker over `store`, sending with `sender`. Call inside a tokio runtime: it starts the
    /// task that records attempts (redeliveries on request need it even where `run` is not
    /// called).
    pub fn new(store: Store, sender: Sender, clock: Arc<dyn Clock>, config: DeliveryConfig) -> DeliveryWorker {
        let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
        // One transaction for whatever attempts finished while the previous batch was written;
        // an endpoint this batch disables gets its `endpoint.disabled` event in it.
        let completions = {
            let clock = Arc::clone(&clock);
            BatchWriter::spawn(&store, COMPLETION_BATCH, move |c, records: &[AttemptRecord]| {
                let at = clock.now();
                deliveries::complete_all(c, records, &|e, reason| disabled_event(e, reason, at))
            })
        };
        DeliveryWorker {
            inner: Arc::new(Inner {
                completions,
                store,
                sender,
                clock,
                config,
                wake: Notify::new(),
                recovery_wake: Notify::new(),
                slots,
                endpoints: Mutex::new(EndpointLoad::default()),
            }),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &DeliveryConfig {
        &self.inner.config
    }

    /// Asks the loop to look at the outbox now (new deliveries were queued).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// Asks the recovery loop to look for requested recoveries now.
    pub fn wake_recoveries(&self) {
        self.inner.recovery_wake.notify_one();
    }

    pub(crate) fn now(&self) -> NaiveDateTime {
        self.inner.clock.now().naive_utc()
    }

    fn lease_until(&self, now: NaiveDateTime) -> NaiveDateTime {
        let lease = self.inner.sender.options().timeout + self.inner.config.lease_grace;
        now + TimeDelta::from_std(lease).unwrap_or(TimeDelta::minutes(1))
    }

    fn load(&self) -> std::sync::MutexGuard<'_, EndpointLoad> {
        // The lock guards plain counters; a panic while holding it cannot leave them unusable.
        self.inner.endpoints.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs until `shutdown` is cancelled, then waits for attempts in flight to be recorded.
    pub async fn run(self, shutdown: CancellationToken) {
        let inner = &self.inner;
        let tracker = TaskTracker::new();
        tracker.spawn(self.clone().run_recoveries(shutdown.clone()));
        tracing::info!(node = %inner.config.node_id, concurrency = inner.config.concurrency, "delivery worker started");
        let concurrency = inner.config.concurrency.max(1) as i64;
        // Claim in batches: waiting for a quarter of the slots to free up costs little latency
        // and saves many tiny claim queries.
        let threshold = (concurrency / 4).max(1);
        while !shutdown.is_cancelled() {
            let free = inner.slots.available_permits() as i64;
            let in_flight = concurrency - free;
            if free >= threshold || (free > 0 && in_flight == 0) {
                let wanted = free.min(inner.config.batch_size);
                match self.claim_and_dispatch(wanted, &tracker).await {
                    // There may be more due right now, unless this batch all went back.
                    Ok((claimed, dispatched)) if claimed == wanted && dispatched > 0 => continue,
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "claiming deliveries failed"),
                }
            }
            // With attempts in flight, each completion wakes the loop; a short timer covers
            // retries falling due meanwhile. Idle, sleep until the next due time.
            let wait = if concurrency - inner.slots.available_permits() as i64 > 0 {
                inner.config.poll_interval.min(BUSY_POLL)
            } else {
                self.idle_wait().await
            };
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

    /// Claims up to `wanted` deliveries and starts the ones their endpoints can take now;
    /// returns how many were claimed and how many started. Endpoints without a limit of their
    /// own come through the outbox claim (capped per node); limited ones through
    /// `claim_limited`, which counts across the cluster and plans each send's time.
    async fn claim_and_dispatch(&self, wanted: i64, tracker: &TaskTracker) -> Result<(i64, usize), StoreError> {
        let owner = format!("{}:{}", self.inner.config.node_id, new_id(IdKind::Delivery));
        let (jobs, paced) = self.claim(&owner, wanted).await?;
        let claimed = (jobs.len() + paced.len()) as i64;
        let (mut dispatched, give_back) = self.dispatch(jobs, tracker).await;
        dispatched += self.dispatch_paced(paced, tracker).await;
        self.give_back(give_back, owner).await?;
        Ok((claimed, dispatched))
    }

    /// Claims up to `wanted` deliveries for `owner` in one write: the outbox claim (endpoints
    /// without limits, skipping those at this node's cap) and the limited claim, which take
    /// turns going first so a backlog on either side never starves the other.
    async fn claim(&self, owner: &str, wanted: i64) -> Result<(Vec<Job>, Vec<PacedJob>), StoreError> {
        let config = &self.inner.config;
        let now = self.now();
        let until = self.lease_until(now);
        let caps = LimitedCaps {
            lease: until - now,
            default_cap: config.per_endpoint_concurrency as i64,
            max_deliveries: wanted,
            max_endpoints: LIMITED_PER_CLAIM,
        };
        let (skip, after, limited_first) = {
            let mut load = self.load();
            load.limited_first = !load.limited_first;
            (load.saturated(config.per_endpoint_concurrency), load.limited_cursor.clone(), load.limited_first)
        };
        let claimer = owner.to_owned();
        let (jobs, limited) = self
            .inner
            .store
            .write(move |c| {
                let limited = |c: &mut _, budget: i64| {
                    deliveries::claim_limited(c, &claimer, now, &LimitedCaps { max_deliveries: budget, ..caps }, &after)
                };
                if limited_first {
                    let claim = limited(c, wanted)?;
                    let left = wanted - claim.jobs.len() as i64;
                    let jobs = if left > 0 {
                        deliveries::claim_due(c, &claimer, now, until, left, &skip)?
                    } else {
                        Vec::new()
                    };
                    Ok((jobs, Some(claim)))
                } else {
                    let jobs = deliveries::claim_due(c, &claimer, now, until, wanted, &skip)?;
                    let left = wanted - jobs.len() as i64;
                    Ok((jobs, if left > 0 { Some(limited(c, left)?) } else { None }))
                }
            })
            .await?;
        let paced = match limited {
            Some(claim) => {
                self.load().limited_cursor = claim.cursor;
                claim.jobs
            }
            None => Vec::new(),
        };
        Ok((jobs, paced))
    }

    /// Admits each job of the outbox claim in turn and sends those admitted, each in a task of
    /// its own holding one of the worker's slots; returns how many were sent and what to give
    /// back.
    async fn dispatch(&self, jobs: Vec<Job>, tracker: &TaskTracker) -> (usize, GiveBack) {
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
                let endpoint_id = job.endpoint.id.clone();
                worker.attempt(job, AttemptTrigger::Scheduled).await;
                worker.load().finish(&endpoint_id);
                drop(permit);
                worker.wake();
            });
        }
        (dispatched, give_back)
    }

    /// Sends the limited claim's deliveries, each at its planned send time; returns how many.
    async fn dispatch_paced(&self, paced: Vec<PacedJob>, tracker: &TaskTracker) -> usize {
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
    async fn give_back(&self, give_back: GiveBack, owner: String) -> Result<(), StoreError> {
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
    fn admit(&self, job: &Job) -> Admission {
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

    /// How long the loop may sleep: until the next delivery is due, a lease expires or a
    /// circuit closes, capped by the poll interval.
    async fn idle_wait(&self) -> Duration {
        let poll = self.inner.config.poll_interval;
        let now = self.now();
        let skip = self.load().saturated(self.inner.config.per_endpoint_concurrency);
        let next = self.inner.store.read(move |c| deliveries::next_wake(c, now, &skip)).await.ok().flatten();
        let until_next = next.map_or(poll, |at| (at - now).to_std().unwrap_or(Duration::ZERO));
        until_next.min(poll).max(Duration::from_millis(5))
    }

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

    /// prepare -> send -> decide -> record.
    async fn attempt_in_span(&self, job: Job, trigger: AttemptTrigger) {
        let Some(attempt) = Prepared::new(job, trigger) else { return };
        let started_at = self.inner.clock.now();
        let result = attempt.send(&self.inner.sender, started_at.timestamp()).await;
        self.inner.config.metrics.attempt_finished(outcome_class(&result), result.duration);
        let (record, decision) = self.decide(&attempt, &result, started_at);
        self.record(record, &decision, &result, &attempt.delivery).await;
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
            Outcome::Status(200..=299) => Health::Success,
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
    async fn record(&self, record: AttemptRecord, decision: &Decision, result: &SendResult, delivery: &Delivery) {
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
    }

    /// Processes requested recoveries page by page until `shutdown`.
    async fn run_recoveries(self, shutdown: CancellationToken) {
        let inner = &self.inner;
        while !shutdown.is_cancelled() {
            let owner = format!("{}:{}", inner.config.node_id, new_id(IdKind::Recovery));
            let now = self.now();
            let until = now + TimeDelta::minutes(5);
            let lease = owner.clone();
            let claimed =
                inner.store.write(move |c| driftwatch_store::recoveries::claim_next(c, &lease, now, until)).await;
            match claimed {
                Ok(Some(recovery)) => {
                    let (budget, page) = (inner.config.retry.max_attempts as i32, inner.config.recovery_page);
                    let now = self.now();
                    let advanced = inner
                        .store
                        .write(move |c| driftwatch_store::recoveries::advance(c, &recovery, &owner, budget, page, now))
                        .await;
                    match advanced {
                        Ok(r) => {
                            tracing::info!(recovery.id = %r.id, state = %r.state, requeued = r.requeued, "recovery advanced");
                            self.wake();
                        }
                        Err(e) => tracing::error!(error = %e, "advancing a recovery failed"),
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::error!(error = %e, "claiming a recovery failed"),
            }
            tokio::select! {
                () = inner.recovery_wake.notified() => {}
                () = tokio::time::sleep(inner.config.poll_interval) => {}
                () = shutdown.cancelled() => {}
            }
        }
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
        let Job { delivery, body, endpoint } = job;
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

/// The `endpoint.disabled` event raised when an attempt disables its endpoint.
fn disabled_event(endpoint: &Endpoint, reason: &str, at: chrono::DateTime<chrono::Utc>) -> NewEvent {
    let event_id = new_id(IdKind::Event);
    let payload = driftwatch_alert::endpoint_payload(
        EventType::EndpointDisabled,
        &event_id,
        driftwatch_alert::EndpointRef { id: &endpoint.id, url: &endpoint.url, description: &endpoint.description },
        Some(reason),
        at,
    );
    let slack_body = driftwatch_alert::slack_message(&payload);
    NewEvent {
        event: Event::about_endpoint(event_id, endpoint, EventType::EndpointDisabled, payload, at.naive_utc()),
        slack_body,
    }
}
