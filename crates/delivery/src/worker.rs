//! The loop that drains the outbox: claim -> dispatch (admit each, send) -> give back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{NaiveDateTime, TimeDelta};
use driftwatch_core::{Clock, IdKind, new_id};
use driftwatch_store::deliveries::{self, AttemptRecord, Job, LimitedCaps, PacedJob};
use driftwatch_store::endpoints::DisabledEvent;
use driftwatch_store::outbox::{self, ForEndpoint};
use driftwatch_store::{BatchWriter, Delivery, Store, StoreError, StoreResult};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::attempt::disabled_event;
use crate::config::DeliveryConfig;
use crate::load::EndpointLoad;
use crate::sender::Sender;

mod dispatch;

/// Drains the outbox: claims due deliveries, sends them, records each attempt. Cheap to clone.
#[derive(Clone)]
pub struct DeliveryWorker {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) completions: BatchWriter<AttemptRecord, bool>,
    /// Events queued on request (test events), many requests to a transaction.
    pub(crate) enqueues: BatchWriter<ForEndpoint, StoreResult<Option<Delivery>>>,
    pub(crate) store: Store,
    pub(crate) sender: Sender,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) config: DeliveryConfig,
    pub(crate) wake: Notify,
    /// Set by [`DeliveryWorker::wake`]: deliveries were queued since the loop last claimed.
    pub(crate) queued: std::sync::atomic::AtomicBool,
    /// Set when this node did something that may bring the next due time closer (scheduled a
    /// retry, gave deliveries back or held them, served a limited endpoint, failed to claim):
    /// the idle loop then reads the next due time afresh instead of reusing its last reading.
    pub(crate) wake_moved: std::sync::atomic::AtomicBool,
    pub(crate) recovery_wake: Notify,
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) endpoints: Mutex<EndpointLoad>,
    /// What summarises a digest's period, once `cli` has wired the language model in.
    pub(crate) summarizer: std::sync::OnceLock<Arc<dyn crate::Summarize>>,
}

/// What one claim did.
struct Claimed {
    /// Deliveries leased.
    claimed: i64,
    /// Of those, started.
    dispatched: usize,
    /// Whether it may have left due deliveries behind (cut at its limit, busy endpoints
    /// skipped, an endpoint's room filled, limited endpoints served): then a finished attempt
    /// is reason to claim again.
    maybe_more: bool,
}

/// Most limited endpoints looked at per claim.
const LIMITED_PER_CLAIM: i64 = 32;

/// How long the idle loop reuses its reading of the next due time while nothing this node did
/// moved it: at a trickle it goes idle after every delivery, and the reading is four queries.
/// What another node does is heard by LISTEN (new deliveries) or within this time.
const WAKE_READING_REUSE: Duration = Duration::from_secs(1);

/// Longest sleep of the loop while attempts are in flight.
const BUSY_POLL: Duration = Duration::from_millis(200);

/// Most attempts recorded in one transaction.
const COMPLETION_BATCH: usize = 256;

/// Most events queued on request in one transaction.
const ENQUEUE_BATCH: usize = 256;

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
            let render = store.render();
            BatchWriter::spawn(&store, COMPLETION_BATCH, move |c, records: &[AttemptRecord]| {
                let at = clock.now();
                let event = |e: &_, reason: &_| disabled_event(e, reason, at);
                deliveries::complete_all(c, records, DisabledEvent { event: &event, render: &*render })
            })
        };
        // Requests that queue events while a batch is being written share the next one: one
        // commit for many API calls, each answered as if alone.
        let enqueues = {
            let render = store.render();
            BatchWriter::spawn(&store, ENQUEUE_BATCH, move |c, items: &[ForEndpoint]| {
                outbox::enqueue_each_for_endpoint(c, &*render, items)
            })
        };
        DeliveryWorker {
            inner: Arc::new(Inner {
                completions,
                enqueues,
                store,
                sender,
                clock,
                config,
                wake: Notify::new(),
                queued: std::sync::atomic::AtomicBool::new(false),
                wake_moved: std::sync::atomic::AtomicBool::new(true),
                recovery_wake: Notify::new(),
                slots,
                endpoints: Mutex::new(EndpointLoad::default()),
                summarizer: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &DeliveryConfig {
        &self.inner.config
    }

    /// Asks the loop to look at the outbox now (new deliveries were queued).
    pub fn wake(&self) {
        self.inner.queued.store(true, std::sync::atomic::Ordering::Release);
        self.inner.wake.notify_one();
    }

    /// Tells the loop an attempt finished and freed its slot: it claims again only if its last
    /// claim may have left deliveries due behind (see [`Claimed::maybe_more`]).
    fn freed(&self) {
        self.inner.wake.notify_one();
    }

    /// Asks the recovery loop to look for requested recoveries now.
    pub fn wake_recoveries(&self) {
        self.inner.recovery_wake.notify_one();
    }

    pub(crate) fn now(&self) -> NaiveDateTime {
        self.inner.clock.now().naive_utc()
    }

    pub(crate) fn lease_until(&self, now: NaiveDateTime) -> NaiveDateTime {
        let lease = self.inner.sender.options().timeout + self.inner.config.lease_grace;
        now + TimeDelta::from_std(lease).unwrap_or(TimeDelta::minutes(1))
    }

    pub(crate) fn load(&self) -> std::sync::MutexGuard<'_, EndpointLoad> {
        // The lock guards plain counters; a panic while holding it cannot leave them unusable.
        self.inner.endpoints.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs until `shutdown` is cancelled, then waits for attempts in flight to be recorded.
    pub async fn run(self, shutdown: CancellationToken) {
        let inner = &self.inner;
        let tracker = TaskTracker::new();
        tracker.spawn(self.clone().run_recoveries(shutdown.clone()));
        tracker.spawn(self.clone().run_digests(shutdown.clone()));
        if inner.store.can_listen() {
            tracker.spawn(self.clone().hear_other_nodes(shutdown.clone()));
        }
        tracing::info!(node = %inner.config.node_id, concurrency = inner.config.concurrency, "delivery worker started");
        let concurrency = inner.config.concurrency.max(1) as i64;
        // Claim in batches: waiting for a quarter of the slots to free up costs little latency
        // and saves many tiny claim queries.
        let threshold = (concurrency / 4).max(1);
        // Whether the outbox may hold due deliveries this loop has not claimed: at the start,
        // after a claim that may have left some, and when a timer ran out (retries, leases).
        let (mut maybe_more, mut timed_out) = (true, true);
        // The last reading of the next due time: when it was taken and how long it said to wait.
        let mut reading: Option<(std::time::Instant, Duration)> = None;
        while !shutdown.is_cancelled() {
            let free = inner.slots.available_permits() as i64;
            let in_flight = concurrency - free;
            if free >= threshold || (free > 0 && in_flight == 0) {
                // A finished attempt alone is no reason to ask the database again when the last
                // claim took everything due: that empty claim was one query per delivery.
                let queued = inner.queued.swap(false, std::sync::atomic::Ordering::AcqRel);
                if queued || maybe_more || timed_out {
                    let wanted = free.min(inner.config.batch_size);
                    match self.claim_and_dispatch(wanted, &tracker).await {
                        Ok(claim) => {
                            maybe_more = claim.maybe_more;
                            // There may be more due right now, unless this batch all went back.
                            if claim.claimed == wanted && claim.dispatched > 0 {
                                continue;
                            }
                        }
                        Err(e) => {
                            maybe_more = true;
                            inner.wake_moved.store(true, std::sync::atomic::Ordering::Release);
                            tracing::error!(error = %e, "claiming deliveries failed");
                        }
                    }
                }
            }
            // With attempts in flight, each completion wakes the loop; a short timer covers
            // retries falling due meanwhile. Idle, sleep until the next due time.
            let wait = if concurrency - inner.slots.available_permits() as i64 > 0 {
                inner.config.poll_interval.min(BUSY_POLL)
            } else {
                let moved = inner.wake_moved.swap(false, std::sync::atomic::Ordering::AcqRel);
                let reuse = WAKE_READING_REUSE.min(inner.config.poll_interval);
                match reading {
                    // Only while what it said is still ahead: once its time came (a retry fell
                    // due and was claimed), the next one is read, not waited for in 5 ms steps.
                    Some((at, wait)) if !moved && at.elapsed() < reuse.min(wait) => {
                        wait.saturating_sub(at.elapsed()).max(Duration::from_millis(5))
                    }
                    _ => {
                        let wait = self.idle_wait().await;
                        reading = Some((std::time::Instant::now(), wait));
                        wait
                    }
                }
            };
            timed_out = false;
            tokio::select! {
                () = inner.wake.notified() => {}
                () = tokio::time::sleep(wait) => timed_out = true,
                () = shutdown.cancelled() => {}
            }
        }
        tracker.close();
        tracker.wait().await;
        tracing::info!("delivery worker stopped");
    }

    /// Wakes the loop whenever any node queues deliveries (PostgreSQL's LISTEN, on a connection
    /// of its own), reconnecting after a failure; the poll stays the safety net meanwhile.
    async fn hear_other_nodes(self, shutdown: CancellationToken) {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut pause = Duration::from_secs(1);
        while !shutdown.is_cancelled() {
            let (worker, flag) = (self.clone(), Arc::clone(&stop));
            let since = std::time::Instant::now();
            let mut listening = tokio::task::spawn_blocking(move || {
                let store = worker.inner.store.clone();
                store.listen(driftwatch_store::OUTBOX_CHANNEL, &flag, &|| worker.wake())
            });
            let ended = tokio::select! {
                ended = &mut listening => ended,
                () = shutdown.cancelled() => {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    let _ = listening.await;
                    return;
                }
            };
            if since.elapsed() > Duration::from_secs(60) {
                pause = Duration::from_secs(1); // it had been listening: a new failure
            }
            match ended {
                Ok(Err(e)) => tracing::warn!(error = %e, retry_in = ?pause, "listening for queued deliveries failed"),
                Err(e) => tracing::warn!(error = %e, retry_in = ?pause, "the listener stopped"),
                Ok(Ok(())) => return,
            }
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = shutdown.cancelled() => return,
            }
            pause = (pause * 2).min(Duration::from_secs(30));
        }
    }

    /// Claims up to `wanted` deliveries and starts the ones their endpoints can take now;
    /// returns how many were claimed and how many started. Endpoints without a limit of their
    /// own come through the outbox claim (capped per node); limited ones through
    /// `claim_limited`, which counts across the cluster and plans each send's time.
    async fn claim_and_dispatch(&self, wanted: i64, tracker: &TaskTracker) -> Result<Claimed, StoreError> {
        let owner = format!("{}:{}", self.inner.config.node_id, new_id(IdKind::Delivery));
        let (jobs, paced, maybe_more) = self.claim(&owner, wanted).await?;
        let claimed = (jobs.len() + paced.len()) as i64;
        let (jobs, paced) = self.hold_quiet(jobs, paced, &owner).await?;
        let limited = !paced.is_empty();
        let (mut dispatched, give_back) = self.dispatch(jobs, tracker).await;
        dispatched += self.dispatch_paced(paced, tracker).await;
        if limited || dispatched < claimed as usize {
            // Paced, held or given back: their times are the next due times now.
            self.inner.wake_moved.store(true, std::sync::atomic::Ordering::Release);
        }
        self.inner.config.metrics.claimed(claimed as u64, (claimed as usize - dispatched) as u64);
        self.give_back(give_back, owner).await?;
        Ok(Claimed { claimed, dispatched, maybe_more })
    }

    /// Claims up to `wanted` deliveries for `owner` in one write: the outbox claim (endpoints
    /// without limits, skipping those at this node's cap) and the limited claim, which take
    /// turns going first so a backlog on either side never starves the other.
    async fn claim(&self, owner: &str, wanted: i64) -> Result<(Vec<Job>, Vec<PacedJob>, bool), StoreError> {
        let config = &self.inner.config;
        let now = self.now();
        let until = self.lease_until(now);
        let caps = LimitedCaps {
            lease: until - now,
            default_cap: config.per_endpoint_concurrency as i64,
            max_deliveries: wanted,
            max_endpoints: LIMITED_PER_CLAIM,
        };
        let (skip, busy, after, limited_first) = {
            let mut load = self.load();
            load.limited_first = !load.limited_first;
            let skip = load.saturated(config.per_endpoint_concurrency);
            (skip, load.busy(), load.limited_cursor.clone(), load.limited_first)
        };
        let per_endpoint = config.per_endpoint_concurrency as i64;
        let (skipped, in_flight) = (!skip.is_empty(), busy.clone());
        let claimer = owner.to_owned();
        let (jobs, limited) = self
            .inner
            .store
            .write(move |c| {
                let room = |busy| deliveries::Room { per_endpoint, in_flight: busy };
                let limited = |c: &mut _, budget: i64| {
                    deliveries::claim_limited(c, &claimer, now, &LimitedCaps { max_deliveries: budget, ..caps }, &after)
                };
                if limited_first {
                    let claim = limited(c, wanted)?;
                    let left = wanted - claim.jobs.len() as i64;
                    let jobs = if left > 0 {
                        deliveries::claim_due(c, &claimer, now, until, left, &skip, &room(&busy))?
                    } else {
                        Vec::new()
                    };
                    Ok((jobs, Some(claim)))
                } else {
                    let jobs = deliveries::claim_due(c, &claimer, now, until, wanted, &skip, &room(&busy))?;
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
        // What the claim may have left due: it was cut at `wanted`, skipped busy endpoints, took
        // all the room an endpoint had, or served limited endpoints (whose completions decide).
        let mut taken: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
        for job in &jobs {
            *taken.entry(job.endpoint.id.as_str()).or_default() += 1;
        }
        let room = |id: &str| per_endpoint - in_flight.iter().find(|(e, _)| e == id).map_or(0, |(_, n)| *n);
        let filled = taken.iter().any(|(id, n)| *n >= room(id));
        let maybe_more = (jobs.len() + paced.len()) as i64 >= wanted || skipped || filled || !paced.is_empty();
        Ok((jobs, paced, maybe_more))
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
}
