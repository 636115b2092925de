//! `driftwatch-bench delivery`: how fast durable delivery is, next to the raw HTTP rate.
//!
//! One run measures, against the same local receiver and with the same HTTP client:
//! - the raw rate: each kind's request (signed for webhooks) with no database at all;
//! - durable delivery through the real outbox and worker, in one of three shapes:
//!   - **throughput** (default): events enqueued in batches while the worker drains them; the
//!     rate from the first enqueue to the last 2xx, and each delivery's enqueue-commit -> 2xx;
//!   - **backlog** (`--backlog N`): N deliveries enqueued first, then drained; the drain rate and
//!     the peak memory while draining;
//!   - **open loop** (`--open-loop RATE --seconds S`): one event per transaction at a fixed
//!     offered rate, latency percentiles at that rate.
//!
//! Each event fans out to `--endpoints K` endpoints (all at the receiver), so K deliveries per
//! event. Each event is a real `change.detected` payload (a watch `bench#N`, a two-line diff)
//! whose body is rendered at enqueue by the channels renderer for the endpoints' kind
//! (`--kind`): the payload itself for a signed webhook, Discord's embed, Telegram's HTML
//! message, ntfy's JSON publish ([`traffic`]). The receiver ([`receiver`]) answers with
//! test-support's stand-in for that kind's API, the one the test suites use: it checks each
//! request's path, credentials and the provider's documented limits, answers the way the
//! provider does, and a run in which it refused anything fails.

mod receiver;
mod report;
mod traffic;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use driftwatch_channels::EndpointKind;
use driftwatch_core::{Clock as _, IdKind, SystemClock, new_id};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy};
use driftwatch_store::{Backend, PoolOptions, Store, accounts, deliveries, endpoints};
use tokio_util::sync::CancellationToken;

use receiver::Receiver;
pub use report::{Report, Shape};
use traffic::{enqueue_batch, raw};

use crate::{cpu_seconds, postgres_cpu_seconds};

/// The kinds a run can be made against: those the bench has a stand-in for.
const KINDS: [EndpointKind; 4] =
    [EndpointKind::Webhook, EndpointKind::Discord, EndpointKind::Telegram, EndpointKind::Ntfy];

/// The bot token of the Telegram endpoints (plaintext: the bench's sender has no keyring).
const TELEGRAM_TOKEN: &str = "1:bench";

/// What to measure.
#[derive(Debug, Clone)]
pub struct DeliveryBench {
    /// Deliveries (and raw requests). With `open_loop`, ignored: the rate and seconds decide.
    pub count: usize,
    /// Requests in flight at once, raw and durable.
    pub concurrency: usize,
    /// The database; a temporary SQLite file when absent. Use an empty database: the worker
    /// delivers whatever is due in it.
    pub database_url: Option<String>,
    /// Events enqueued per transaction (throughput and backlog shapes).
    pub batch: usize,
    /// Tasks enqueueing side by side (throughput and backlog shapes).
    pub producers: usize,
    /// Endpoints each event fans out to.
    pub endpoints: usize,
    /// Endpoints without `max_in_flight`: the outbox claim and the per-node cap serve them,
    /// instead of the cluster-wide claim of limited endpoints.
    pub unlimited: bool,
    /// Enqueue everything first, then drain.
    pub backlog: bool,
    /// Offer this many events per second, one per transaction, for `seconds`.
    pub open_loop: Option<f64>,
    /// How long the open loop offers events.
    pub seconds: f64,
    /// The endpoints' kind: `webhook`, `discord`, `telegram` or `ntfy`.
    pub kind: EndpointKind,
}

/// A run's sizes, from the bench's flags.
struct Plan {
    kind: EndpointKind,
    concurrency: usize,
    /// Endpoints per event.
    fan_out: usize,
    unlimited: bool,
    shape: Shape,
    /// Events offered or enqueued.
    events: usize,
    /// Deliveries: `events * fan_out`.
    count: usize,
}

impl Plan {
    fn of(bench: &DeliveryBench) -> anyhow::Result<Plan> {
        let kind = bench.kind;
        anyhow::ensure!(
            KINDS.contains(&kind),
            "the bench has no stand-in for {kind}: use one of {}",
            KINDS.map(EndpointKind::as_str).join(", ")
        );
        let fan_out = bench.endpoints.max(1);
        let shape = match (bench.open_loop, bench.backlog) {
            (Some(_), _) => Shape::OpenLoop,
            (None, true) => Shape::Backlog,
            (None, false) => Shape::Throughput,
        };
        let events = match bench.open_loop {
            Some(rate) => ((rate * bench.seconds).round() as usize).max(1),
            None => bench.count.max(1).div_ceil(fan_out),
        };
        let (concurrency, unlimited) = (bench.concurrency.max(1), bench.unlimited);
        Ok(Plan { kind, concurrency, fan_out, unlimited, shape, events, count: events * fan_out })
    }
}

/// The durable side of a run: the store (bodies rendered at enqueue by the channels renderer,
/// as the binary wires it), the receiver, the account with its endpoints, the worker.
struct Durable {
    store: Store,
    receiver: Receiver,
    account_id: String,
    worker: DeliveryWorker,
    /// The temporary SQLite file's directory, kept while the run lasts.
    _dir: tempfile::TempDir,
}

impl Durable {
    async fn start(bench: &DeliveryBench, plan: &Plan) -> anyhow::Result<Durable> {
        let (store, dir) =
            crate::open_store(bench.database_url.as_deref(), &PoolOptions { max_size: 8, ..PoolOptions::default() })
                .await?;
        let store = store.with_render(Arc::new(driftwatch_channels::Channels::new(None)));
        let receiver = receiver::receiver(plan.kind, plan.count, plan.fan_out).await?;
        let (kind, fan_out, base) = (plan.kind, plan.fan_out, receiver.url.clone());
        let max_in_flight = (!plan.unlimited).then_some(plan.concurrency);
        let account_id = store
            .write(move |c| {
                let account = accounts::create_account(c, &new_id(IdKind::Account), SystemClock.now().naive_utc())?;
                for k in 0..fan_out {
                    endpoints::insert_endpoint(c, &traffic::endpoint(kind, &account.id, &base, k, max_in_flight))?;
                }
                Ok(account.id)
            })
            .await?;
        let worker = DeliveryWorker::new(
            store.clone(),
            crate::sender()?,
            Arc::new(SystemClock),
            DeliveryConfig {
                concurrency: plan.concurrency,
                per_endpoint_concurrency: plan.concurrency,
                batch_size: 200,
                retry: RetryPolicy { max_attempts: 5, ..RetryPolicy::default() },
                node_id: "bench".into(),
                ..DeliveryConfig::default()
            },
        );
        Ok(Durable { store, receiver, account_id, worker, _dir: dir })
    }
}

/// What the durable run measured.
struct Measured {
    /// First enqueue to the last commit.
    enqueue_elapsed: Duration,
    /// First enqueue (throughput, open loop) or the worker's start (backlog) to the last 2xx.
    durable_elapsed: Duration,
    /// Process CPU and PostgreSQL's, in seconds, from the first enqueue to the last 2xx.
    cpu: f64,
    database_cpu: f64,
    /// Peak anonymous RSS while draining, and before (backlog only), in MiB.
    rss_mib: Option<(f64, f64)>,
    /// The claim's plan with the queue full (backlog only).
    claim_plan: Option<String>,
    /// When each event's enqueue committed.
    enqueued: Vec<Option<Instant>>,
}

/// Runs the benchmark.
pub async fn delivery(bench: &DeliveryBench) -> anyhow::Result<Report> {
    let plan = Plan::of(bench)?;
    let (raw_per_second, raw_cpu_us, body_bytes) = raw(plan.kind, plan.count.min(200_000), plan.concurrency).await?;
    let run = Durable::start(bench, &plan).await?;
    let measured = measure(bench, &plan, &run).await?;
    let latency = (plan.shape != Shape::Backlog).then(|| {
        let received = run.receiver.shared.received.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        percentiles(&measured.enqueued, &received, plan.fan_out)
    });
    let count = plan.count as f64;
    let durable_per_second = match bench.open_loop {
        Some(rate) => rate * plan.fan_out as f64,
        None => count / measured.durable_elapsed.as_secs_f64(),
    };
    Ok(Report {
        backend: run.store.backend().as_str(),
        shape: plan.shape,
        count: plan.count,
        endpoints: plan.fan_out,
        unlimited: plan.unlimited,
        kind: plan.kind,
        raw_per_second,
        enqueue_per_second: count / measured.enqueue_elapsed.as_secs_f64(),
        durable_per_second,
        latency,
        raw_cpu_us,
        durable_cpu_us: measured.cpu * 1e6 / count,
        database_cpu_us: (run.store.backend() == Backend::Postgres).then(|| measured.database_cpu * 1e6 / count),
        rss_mib: measured.rss_mib,
        claim_plan: measured.claim_plan,
        accepted: run.receiver.shared.accepted(),
        body_bytes,
        receiver_us: receiver::standin_cost(plan.kind),
    })
}

/// Enqueues every event in the run's shape and waits until the receiver accepted every
/// delivery (an hour at most), timing and metering it.
async fn measure(bench: &DeliveryBench, plan: &Plan, run: &Durable) -> anyhow::Result<Measured> {
    let backlog = plan.shape == Shape::Backlog;
    let shutdown = CancellationToken::new();
    let enqueued = Arc::new(Mutex::new(vec![None; plan.events]));
    let mut running = (!backlog).then(|| tokio::spawn(run.worker.clone().run(shutdown.clone())));
    let started = Instant::now();
    let (cpu, database_cpu) = (cpu_seconds(), postgres_cpu_seconds());
    match bench.open_loop {
        Some(rate) => offer(run, plan.events, rate, &enqueued).await?,
        None => produce(run, plan.events, bench, &enqueued).await?,
    }
    let enqueue_elapsed = started.elapsed();
    let (mut rss_mib, mut claim_plan, mut drain_started) = (None, None, started);
    if backlog {
        let now = SystemClock.now().naive_utc();
        claim_plan = Some(run.store.read(move |c| deliveries::explain_claim(c, now)).await?);
        let before = rss_mib_now();
        running = Some(tokio::spawn(run.worker.clone().run(shutdown.clone())));
        rss_mib = Some((before, before));
        drain_started = Instant::now();
    }
    let mut peak = rss_mib.map_or(0.0, |(p, _)| p);
    let waited = tokio::time::timeout(Duration::from_secs(3600), all_accepted(run, plan.count, &mut peak))
        .await
        .context("the durable run did not finish in an hour")
        .and_then(|done| done);
    let durable_elapsed = drain_started.elapsed();
    let (cpu, database_cpu) = (cpu_seconds() - cpu, postgres_cpu_seconds() - database_cpu);
    if let Some((_, before)) = rss_mib {
        rss_mib = Some((peak.max(rss_mib_now()), before));
    }
    shutdown.cancel();
    if let Some(running) = running {
        let _ = running.await;
    }
    waited?;
    run.receiver.shared.ensure_none_refused()?;
    let enqueued = enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    Ok(Measured { enqueue_elapsed, durable_elapsed, cpu, database_cpu, rss_mib, claim_plan, enqueued })
}

/// Waits until the receiver accepted `count` requests, keeping `peak` (anonymous RSS, MiB)
/// meanwhile; fails as soon as it refuses one, or when progress stalls on dead letters.
async fn all_accepted(run: &Durable, count: usize, peak: &mut f64) -> anyhow::Result<()> {
    let shared = &run.receiver.shared;
    let mut seen = shared.accepted.subscribe();
    // Progress: the last count accepted and when it moved.
    let mut progress = (0, Instant::now());
    loop {
        tokio::select! {
            changed = seen.wait_for(|n| *n >= count) => { changed?; return Ok(()); }
            () = tokio::time::sleep(Duration::from_millis(250)) => {
                *peak = peak.max(rss_mib_now());
                shared.ensure_none_refused()?;
                let accepted = shared.accepted();
                if accepted != progress.0 {
                    progress = (accepted, Instant::now());
                } else if progress.1.elapsed() > Duration::from_secs(15) {
                    // Stalled: a body the renderer refused is dead-lettered at enqueue and
                    // never sent; say so rather than wait out the hour.
                    let account = run.account_id.clone();
                    let statuses = run.store.read(move |c| deliveries::count_by_status(c, &account)).await?;
                    let dead = statuses.iter().find(|(s, _)| s == "dead").map_or(0, |(_, n)| *n);
                    anyhow::ensure!(
                        dead == 0,
                        "{dead} deliveries were dead-lettered ({accepted} of {count} accepted): {statuses:?}"
                    );
                    progress.1 = Instant::now();
                }
            }
        }
    }
}

/// Enqueue commit -> 2xx percentiles (p50, p90, p99, max) over every delivery received:
/// `received` by slot (`n * fan_out + k`), `enqueued` by event.
fn percentiles(enqueued: &[Option<Instant>], received: &[Option<Instant>], fan_out: usize) -> [Duration; 4] {
    let mut latencies: Vec<Duration> = received
        .iter()
        .enumerate()
        .filter_map(|(slot, r)| Some(r.as_ref()?.saturating_duration_since(*enqueued[slot / fan_out].as_ref()?)))
        .collect();
    latencies.sort();
    let pick =
        |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    [pick(0.50), pick(0.90), pick(0.99), pick(1.0)]
}

/// Enqueues `events` in batches from several producers, waking the worker after each.
async fn produce(
    run: &Durable,
    events: usize,
    bench: &DeliveryBench,
    enqueued: &Arc<Mutex<Vec<Option<Instant>>>>,
) -> anyhow::Result<()> {
    let batch = bench.batch.max(1);
    let producers = bench.producers.max(1);
    let mut tasks = Vec::new();
    for p in 0..producers {
        let (store, worker, enqueued, account_id) =
            (run.store.clone(), run.worker.clone(), Arc::clone(enqueued), run.account_id.clone());
        tasks.push(tokio::spawn(async move {
            // Producer p takes every producers-th batch.
            for first in (p * batch..events).step_by(batch * producers) {
                let last = (first + batch).min(events);
                let account_id = account_id.clone();
                let render = store.render();
                store.write(move |c| enqueue_batch(c, &*render, &account_id, first..last)).await?;
                let at = Instant::now();
                enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[first..last].fill(Some(at));
                worker.wake();
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await?.context("enqueueing")?;
    }
    Ok(())
}

/// Offers one event per transaction at `rate` per second: each enqueue is its own task, so a
/// slow commit never lowers the offered rate.
async fn offer(
    run: &Durable,
    events: usize,
    rate: f64,
    enqueued: &Arc<Mutex<Vec<Option<Instant>>>>,
) -> anyhow::Result<()> {
    anyhow::ensure!(rate > 0.0, "--open-loop needs a rate above 0");
    let start = tokio::time::Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..events {
        tokio::time::sleep_until(start + Duration::from_secs_f64(n as f64 / rate)).await;
        let (store, worker, enqueued, account_id) =
            (run.store.clone(), run.worker.clone(), Arc::clone(enqueued), run.account_id.clone());
        tasks.spawn(async move {
            let render = store.render();
            store.write(move |c| enqueue_batch(c, &*render, &account_id, n..n + 1)).await?;
            enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner)[n] = Some(Instant::now());
            worker.wake();
            anyhow::Ok(())
        });
        while let Some(done) = tasks.try_join_next() {
            done?.context("enqueueing")?;
        }
    }
    while let Some(done) = tasks.join_next().await {
        done?.context("enqueueing")?;
    }
    Ok(())
}

/// Anonymous resident memory of this process now (heap and stacks: what loading rows would
/// grow), in MiB. The database file's pages mapped by SQLite (`RssFile`) are left out: they are
/// the page cache's, shared and reclaimable.
fn rss_mib_now() -> f64 {
    crate::status_mib("RssAnon")
}
