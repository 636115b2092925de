//! `driftwatch bench delivery`: how fast durable delivery is, next to the raw HTTP rate.
//!
//! One run measures, against the same local receiver and with the same HTTP client:
//! - the raw rate: signed POSTs with no database at all;
//! - durable delivery through the real outbox and worker, in one of three shapes:
//!   - **throughput** (default): events enqueued in batches while the worker drains them; the
//!     rate from the first enqueue to the last 2xx, and each delivery's enqueue-commit -> 2xx;
//!   - **backlog** (`--backlog N`): N deliveries enqueued first, then drained; the drain rate and
//!     the peak memory while draining;
//!   - **open loop** (`--open-loop RATE --seconds S`): one event per transaction at a fixed
//!     offered rate, latency percentiles at that rate.
//!
//! Each event fans out to `--endpoints K` endpoints (all at the receiver), so K deliveries per
//! event.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use diesel::Connection as _;
use driftwatch_core::{Clock as _, EventType, IdKind, SystemClock, new_id};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy};
use driftwatch_store::outbox::NewEvent;
use driftwatch_store::{Backend, Endpoint, Event, PoolOptions, Store, accounts, deliveries, endpoints, outbox};
use futures_util::StreamExt as _;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{cpu_seconds, postgres_cpu_seconds};

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
}

/// Which shape a run had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Enqueue in batches while the worker drains.
    Throughput,
    /// Enqueue everything, then drain.
    Backlog,
    /// A fixed offered rate.
    OpenLoop,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// The run's shape.
    pub shape: Shape,
    /// Deliveries measured.
    pub count: usize,
    /// Endpoints per event.
    pub endpoints: usize,
    /// Whether the endpoints had no `max_in_flight`.
    pub unlimited: bool,
    /// Raw signed POSTs per second, no database.
    pub raw_per_second: f64,
    /// Deliveries enqueued per second.
    pub enqueue_per_second: f64,
    /// Durable deliveries per second: first enqueue to last 2xx (throughput), first to last 2xx
    /// of the drain (backlog), deliveries offered per second (open loop).
    pub durable_per_second: f64,
    /// Enqueue commit -> 2xx percentiles (p50, p90, p99, max); not measured for a backlog.
    pub latency: Option<[Duration; 4]>,
    /// Process CPU per raw POST, in microseconds (client and in-process receiver).
    pub raw_cpu_us: f64,
    /// Process CPU per durable delivery, in microseconds (enqueue, worker, client, receiver).
    pub durable_cpu_us: f64,
    /// PostgreSQL's own CPU per durable delivery (its processes on this machine), if it is the store.
    pub database_cpu_us: Option<f64>,
    /// Peak anonymous resident memory while draining, and before the drain (backlog only), in MiB.
    pub rss_mib: Option<(f64, f64)>,
    /// The claim's query plan, as the database planned it with the queue full (backlog only).
    pub claim_plan: Option<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shape = match self.shape {
            Shape::Throughput => "throughput (enqueue while draining)",
            Shape::Backlog => "backlog (enqueue all, then drain)",
            Shape::OpenLoop => "open loop (fixed offered rate, one event per transaction)",
        };
        writeln!(f, "backend            {}", self.backend)?;
        writeln!(f, "shape              {shape}")?;
        let limit = if self.unlimited { "no limits: outbox claim" } else { "max_in_flight: cluster-wide claim" };
        writeln!(f, "deliveries         {} ({} endpoint(s) per event, {limit})", self.count, self.endpoints)?;
        writeln!(f, "raw POST rate      {:.0}/s (same client and receiver, no database)", self.raw_per_second)?;
        writeln!(f, "enqueue rate       {:.0} deliveries/s", self.enqueue_per_second)?;
        let what = match self.shape {
            Shape::Throughput => "first enqueue to last 2xx",
            Shape::Backlog => "drain: first claim to last 2xx",
            Shape::OpenLoop => "offered",
        };
        writeln!(f, "durable rate       {:.0}/s ({what})", self.durable_per_second)?;
        writeln!(f, "durable / raw      {:.2}", self.durable_per_second / self.raw_per_second)?;
        writeln!(
            f,
            "CPU per delivery   {:.0} us raw, {:.0} us durable (whole process, receiver included)",
            self.raw_cpu_us, self.durable_cpu_us
        )?;
        if let Some(db) = self.database_cpu_us {
            writeln!(f, "database CPU       {db:.0} us per durable delivery (PostgreSQL processes)")?;
        }
        if let Some((peak, before)) = self.rss_mib {
            writeln!(
                f,
                "anonymous RSS      {before:.1} MiB before the drain, {peak:.1} MiB peak while draining (heap; mapped database pages excluded)"
            )?;
        }
        if let Some([p50, p90, p99, max]) = self.latency {
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            writeln!(
                f,
                "enqueue -> 2xx     p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
                ms(p50),
                ms(p90),
                ms(p99),
                ms(max)
            )?;
        }
        if let Some(plan) = &self.claim_plan {
            writeln!(f, "claim plan:")?;
            for line in plan.lines() {
                writeln!(f, "  {line}")?;
            }
        }
        Ok(())
    }
}

/// Receipt times by slot (`n * endpoints + k`: event n's body, endpoint k's path).
struct Receiver {
    url: String,
    received: Arc<Mutex<Vec<Option<Instant>>>>,
    count: watch::Receiver<usize>,
}

async fn receiver(capacity: usize, endpoints: usize) -> anyhow::Result<Receiver> {
    let received = Arc::new(Mutex::new(vec![None; capacity]));
    let (tx, count) = watch::channel(0usize);
    let tx = Arc::new(tx);
    let record = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/hook/{k}",
        axum::routing::post(move |axum::extract::Path(k): axum::extract::Path<usize>, body: axum::body::Bytes| {
            let (record, tx) = (Arc::clone(&record), Arc::clone(&tx));
            async move {
                let at = Instant::now();
                let n = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v["n"].as_u64());
                if let Some(n) = n {
                    let mut all = record.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if let Some(slot) = all.get_mut(n as usize * endpoints + k) {
                        slot.get_or_insert(at);
                    }
                }
                tx.send_modify(|c| *c += 1);
                "ok"
            }
        }),
    );
    let addr = crate::serve(app).await?;
    Ok(Receiver { url: format!("http://{addr}/hook"), received, count })
}

fn endpoint(account_id: &str, url: &str, max_in_flight: Option<usize>) -> Endpoint {
    Endpoint {
        description: "bench".into(),
        max_in_flight: max_in_flight.map(|n| n as i32),
        ..Endpoint::webhook(account_id, url, SystemClock.now().naive_utc())
    }
}

/// Enqueues one event per `n` in `events`, to every endpoint of the account, in one transaction
/// (the way a batch of checks queues its changes).
fn enqueue_batch(
    c: &mut driftwatch_store::DbConn,
    render: &dyn driftwatch_store::render::Render,
    account_id: &str,
    events: std::ops::Range<usize>,
) -> driftwatch_store::StoreResult<()> {
    c.transaction(|c| {
        let now = SystemClock.now().naive_utc();
        let mut batch = Vec::with_capacity(events.len());
        for n in events {
            let event = Event {
                id: new_id(IdKind::Event),
                account_id: account_id.to_owned(),
                watch_id: None,
                endpoint_id: None,
                event_type: EventType::EndpointTest.as_str().into(),
                previous_snapshot_id: None,
                snapshot_id: None,
                added: 0,
                removed: 0,
                payload: format!("{{\"n\":{n}}}"),
                created_at: now,
            };
            batch.push(NewEvent { event });
        }
        let events: Vec<_> = batch.iter().map(|new| (new, 5, now)).collect();
        outbox::enqueue_many(c, render, &events)?;
        Ok(())
    })
}

/// The raw rate: the same client, signing included, straight at a receiver.
async fn raw(count: usize, concurrency: usize) -> anyhow::Result<(f64, f64)> {
    let raw = receiver(count, 1).await?;
    let sender = crate::sender()?;
    let target = endpoint("acc_bench", &format!("{}/0", raw.url), Some(concurrency));
    let started = Instant::now();
    let cpu = cpu_seconds();
    let ok = futures_util::stream::iter(0..count)
        .map(|n| {
            let (sender, target) = (&sender, &target);
            async move {
                let body = format!("{{\"n\":{n}}}");
                let id = new_id(IdKind::Delivery);
                sender.send(target, &id, "bench", 1, body.as_bytes(), SystemClock.now().timestamp()).await
            }
        })
        .buffer_unordered(concurrency)
        .filter(|r| std::future::ready(matches!(r.outcome, driftwatch_delivery::Outcome::Status(200))))
        .count()
        .await;
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu;
    anyhow::ensure!(ok == count, "the raw run got {ok} of {count} 2xx answers");
    Ok((count as f64 / elapsed.as_secs_f64(), cpu * 1e6 / count as f64))
}

/// Runs the benchmark.
pub async fn delivery(bench: &DeliveryBench) -> anyhow::Result<Report> {
    let concurrency = bench.concurrency.max(1);
    let fan_out = bench.endpoints.max(1);
    let unlimited = bench.unlimited;
    let shape = match (bench.open_loop, bench.backlog) {
        (Some(_), _) => Shape::OpenLoop,
        (None, true) => Shape::Backlog,
        (None, false) => Shape::Throughput,
    };
    let events = match bench.open_loop {
        Some(rate) => ((rate * bench.seconds).round() as usize).max(1),
        None => bench.count.max(1).div_ceil(fan_out),
    };
    let count = events * fan_out;
    let (raw_per_second, raw_cpu_us) = raw(count.min(200_000), concurrency).await?;

    let dir = tempfile::tempdir()?;
    let url = match &bench.database_url {
        Some(url) => url.clone(),
        None => format!("sqlite://{}", dir.path().join("bench.db").display()),
    };
    let store = Store::open(&url, &PoolOptions { max_size: 8, ..PoolOptions::default() })?;
    store.migrate().await?;
    let durable = receiver(count, fan_out).await?;
    let hook = durable.url.clone();
    let account_id = store
        .write(move |c| {
            let account = accounts::create_account(c, &new_id(IdKind::Account), SystemClock.now().naive_utc())?;
            for k in 0..fan_out {
                let max_in_flight = (!unlimited).then_some(concurrency);
                endpoints::insert_endpoint(c, &endpoint(&account.id, &format!("{hook}/{k}"), max_in_flight))?;
            }
            Ok(account.id)
        })
        .await?;
    let worker = DeliveryWorker::new(
        store.clone(),
        crate::sender()?,
        Arc::new(SystemClock),
        DeliveryConfig {
            concurrency,
            per_endpoint_concurrency: concurrency,
            batch_size: 200,
            retry: RetryPolicy { max_attempts: 5, ..RetryPolicy::default() },
            node_id: "bench".into(),
            ..DeliveryConfig::default()
        },
    );
    let shutdown = CancellationToken::new();
    let enqueued = Arc::new(Mutex::new(vec![None; events]));
    let mut running = None;
    if shape != Shape::Backlog {
        running = Some(tokio::spawn(worker.clone().run(shutdown.clone())));
    }
    let started = Instant::now();
    let cpu = cpu_seconds();
    let database_cpu = postgres_cpu_seconds();
    match bench.open_loop {
        Some(rate) => offer(&store, &worker, &account_id, events, rate, &enqueued).await?,
        None => produce(&store, &worker, &account_id, events, bench, &enqueued).await?,
    }
    let enqueue_elapsed = started.elapsed();
    let mut rss_mib = None;
    let mut claim_plan = None;
    let (drain_started, drain_cpu, drain_database_cpu) = if shape == Shape::Backlog {
        let now = SystemClock.now().naive_utc();
        claim_plan = Some(store.read(move |c| deliveries::explain_claim(c, now)).await?);
        let before = rss_mib_now();
        running = Some(tokio::spawn(worker.clone().run(shutdown.clone())));
        rss_mib = Some((before, before));
        (Instant::now(), cpu_seconds(), postgres_cpu_seconds())
    } else {
        (started, cpu, database_cpu)
    };
    let mut seen = durable.count.clone();
    let mut peak = rss_mib.map_or(0.0, |(p, _)| p);
    let wait = async {
        loop {
            tokio::select! {
                changed = seen.wait_for(|n| *n >= count) => { changed?; return anyhow::Ok(()); }
                () = tokio::time::sleep(Duration::from_millis(250)) => peak = peak.max(rss_mib_now()),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(3600), wait)
        .await
        .context("the durable run did not finish in an hour")??;
    let durable_elapsed = drain_started.elapsed();
    let cpu = cpu_seconds() - if shape == Shape::Backlog { cpu } else { drain_cpu };
    let database_cpu = postgres_cpu_seconds() - if shape == Shape::Backlog { database_cpu } else { drain_database_cpu };
    if let Some((_, before)) = rss_mib {
        rss_mib = Some((peak.max(rss_mib_now()), before));
    }
    shutdown.cancel();
    if let Some(running) = running {
        let _ = running.await;
    }

    let latency = (shape != Shape::Backlog).then(|| {
        let enqueued = enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let received = durable.received.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let mut latencies: Vec<Duration> = received
            .iter()
            .enumerate()
            .filter_map(|(slot, r)| Some(r.as_ref()?.saturating_duration_since(*enqueued[slot / fan_out].as_ref()?)))
            .collect();
        latencies.sort();
        let pick =
            |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
        [pick(0.50), pick(0.90), pick(0.99), pick(1.0)]
    });
    let durable_per_second = match bench.open_loop {
        Some(rate) => rate * fan_out as f64,
        None => count as f64 / durable_elapsed.as_secs_f64(),
    };
    Ok(Report {
        backend: store.backend().as_str(),
        shape,
        count,
        endpoints: fan_out,
        unlimited,
        raw_per_second,
        enqueue_per_second: count as f64 / enqueue_elapsed.as_secs_f64(),
        durable_per_second,
        latency,
        raw_cpu_us,
        durable_cpu_us: cpu * 1e6 / count as f64,
        database_cpu_us: (store.backend() == Backend::Postgres).then(|| database_cpu * 1e6 / count as f64),
        rss_mib,
        claim_plan,
    })
}

/// Enqueues `events` in batches from several producers, waking the worker after each.
async fn produce(
    store: &Store,
    worker: &DeliveryWorker,
    account_id: &str,
    events: usize,
    bench: &DeliveryBench,
    enqueued: &Arc<Mutex<Vec<Option<Instant>>>>,
) -> anyhow::Result<()> {
    let batch = bench.batch.max(1);
    let producers = bench.producers.max(1);
    let mut tasks = Vec::new();
    for p in 0..producers {
        let (store, worker, enqueued, account_id) =
            (store.clone(), worker.clone(), Arc::clone(enqueued), account_id.to_owned());
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
    store: &Store,
    worker: &DeliveryWorker,
    account_id: &str,
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
            (store.clone(), worker.clone(), Arc::clone(enqueued), account_id.to_owned());
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
