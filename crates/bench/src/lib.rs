//! `driftwatch bench delivery`: how fast durable delivery is, next to the raw HTTP rate.
//!
//! One run measures, against the same local receiver and with the same HTTP client:
//! - the raw rate: signed POSTs with no database at all;
//! - the durable rate: events enqueued into the outbox (in batches, while the worker runs)
//!   and delivered by the real worker, with the time from each enqueue's commit to its 2xx.

mod checks;
mod pages;

pub use checks::{ChecksBench, ChecksReport, checks};
pub use pages::{PagesBench, PagesReport, pages};

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use diesel::Connection as _;
use driftwatch_core::{Clock as _, EventType, IdKind, SystemClock, new_id};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy, Sender, SenderOptions};
use driftwatch_net::TargetPolicy;
use driftwatch_store::outbox::{NewEvent, Target};
use driftwatch_store::{Endpoint, Event, PoolOptions, Store, accounts, endpoints, outbox};
use futures_util::StreamExt as _;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What to measure.
#[derive(Debug, Clone)]
pub struct DeliveryBench {
    /// Deliveries (and raw requests).
    pub count: usize,
    /// Requests in flight at once, raw and durable.
    pub concurrency: usize,
    /// The database; a temporary SQLite file when absent. Use an empty database: the worker
    /// delivers whatever is due in it.
    pub database_url: Option<String>,
    /// Deliveries enqueued per transaction.
    pub batch: usize,
    /// Tasks enqueueing side by side.
    pub producers: usize,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct Report {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// Deliveries measured.
    pub count: usize,
    /// Raw signed POSTs per second, no database.
    pub raw_per_second: f64,
    /// Events enqueued per second (while the worker drains them).
    pub enqueue_per_second: f64,
    /// Durable deliveries per second, first enqueue to last 2xx.
    pub durable_per_second: f64,
    /// Median time from enqueue commit to 2xx.
    pub p50: Duration,
    /// 99th percentile of the same.
    pub p99: Duration,
    /// Process CPU per raw POST, in microseconds (client and in-process receiver).
    pub raw_cpu_us: f64,
    /// Process CPU per durable delivery, in microseconds (enqueue, worker, client, receiver).
    pub durable_cpu_us: f64,
    /// PostgreSQL's own CPU per durable delivery (its processes on this machine), if it is the store.
    pub database_cpu_us: Option<f64>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "backend            {}", self.backend)?;
        writeln!(f, "deliveries         {}", self.count)?;
        writeln!(f, "raw POST rate      {:.0}/s (same client and receiver, no database)", self.raw_per_second)?;
        writeln!(
            f,
            "enqueue rate       {:.0}/s (events into the outbox, while the worker runs)",
            self.enqueue_per_second
        )?;
        writeln!(f, "durable rate       {:.0}/s (first enqueue to last 2xx)", self.durable_per_second)?;
        writeln!(f, "durable / raw      {:.2}", self.durable_per_second / self.raw_per_second)?;
        writeln!(
            f,
            "CPU per delivery   {:.0} us raw, {:.0} us durable (whole process, receiver included)",
            self.raw_cpu_us, self.durable_cpu_us
        )?;
        if let Some(db) = self.database_cpu_us {
            writeln!(f, "database CPU       {db:.0} us per durable delivery (PostgreSQL processes)")?;
        }
        writeln!(f, "enqueue -> 2xx p50 {:.1} ms", self.p50.as_secs_f64() * 1e3)?;
        write!(f, "enqueue -> 2xx p99 {:.1} ms", self.p99.as_secs_f64() * 1e3)
    }
}

/// Receipt times by the `n` in each body.
struct Receiver {
    url: String,
    received: Arc<Mutex<Vec<Option<Instant>>>>,
    count: watch::Receiver<usize>,
}

async fn receiver(capacity: usize) -> anyhow::Result<Receiver> {
    let received = Arc::new(Mutex::new(vec![None; capacity]));
    let (tx, count) = watch::channel(0usize);
    let tx = Arc::new(tx);
    let record = Arc::clone(&received);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let (record, tx) = (Arc::clone(&record), Arc::clone(&tx));
            async move {
                let at = Instant::now();
                let n = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v["n"].as_u64());
                if let Some(n) = n {
                    let mut all = record.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    if let Some(slot) = all.get_mut(n as usize) {
                        slot.get_or_insert(at);
                    }
                }
                tx.send_modify(|c| *c += 1);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(Receiver { url: format!("http://{addr}/hook"), received, count })
}

fn endpoint(account_id: &str, url: &str, concurrency: usize) -> Endpoint {
    Endpoint {
        description: "bench".into(),
        max_in_flight: Some(concurrency as i32),
        ..Endpoint::webhook(account_id, url, SystemClock.now().naive_utc())
    }
}

fn sender() -> anyhow::Result<Sender> {
    Ok(Sender::new(SenderOptions { policy: TargetPolicy { allow_private: true }, ..SenderOptions::default() })?)
}

/// Enqueues one event per `n` in `range`, for one endpoint, in one transaction.
fn enqueue_batch(
    c: &mut driftwatch_store::DbConn,
    account_id: &str,
    endpoint_id: &str,
    range: std::ops::Range<usize>,
) -> driftwatch_store::StoreResult<()> {
    c.transaction(|c| {
        let now = SystemClock.now().naive_utc();
        for n in range {
            let event = Event {
                id: new_id(IdKind::Event),
                account_id: account_id.to_owned(),
                watch_id: None,
                endpoint_id: Some(endpoint_id.to_owned()),
                event_type: EventType::EndpointTest.as_str().into(),
                previous_snapshot_id: None,
                snapshot_id: None,
                added: 0,
                removed: 0,
                payload: format!("{{\"n\":{n}}}"),
                created_at: now,
            };
            outbox::enqueue(c, &NewEvent { event, slack_body: String::new() }, Target::One(endpoint_id), 5, now)?;
        }
        Ok(())
    })
}

/// Runs the benchmark.
pub async fn delivery(bench: &DeliveryBench) -> anyhow::Result<Report> {
    let count = bench.count.max(1);
    let concurrency = bench.concurrency.max(1);

    // Raw: the same client, signing included, straight at the receiver.
    let raw = receiver(count).await?;
    let sender = sender()?;
    let target = endpoint("acc_bench", &raw.url, concurrency);
    let started = Instant::now();
    let raw_cpu = cpu_seconds();
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
    let raw_elapsed = started.elapsed();
    let raw_cpu = cpu_seconds() - raw_cpu;
    anyhow::ensure!(ok == count, "the raw run got {ok} of {count} 2xx answers");

    // Durable: the outbox and the worker.
    let dir = tempfile::tempdir()?;
    let url = match &bench.database_url {
        Some(url) => url.clone(),
        None => format!("sqlite://{}", dir.path().join("bench.db").display()),
    };
    let store = Store::open(&url, &PoolOptions { max_size: 8, ..PoolOptions::default() })?;
    store.migrate().await?;
    let durable = receiver(count).await?;
    let hook = durable.url.clone();
    let endpoint_id = store
        .write(move |c| {
            let account = accounts::create_account(c, &new_id(IdKind::Account), SystemClock.now().naive_utc())?;
            let endpoint = endpoint(&account.id, &hook, concurrency);
            endpoints::insert_endpoint(c, &endpoint)?;
            Ok((account.id, endpoint.id))
        })
        .await?;
    let worker = DeliveryWorker::new(
        store.clone(),
        sender,
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
    let running = tokio::spawn(worker.clone().run(shutdown.clone()));
    let enqueued = Arc::new(Mutex::new(vec![None; count]));
    let started = Instant::now();
    let durable_cpu = cpu_seconds();
    let database_cpu = postgres_cpu_seconds();
    let batch = bench.batch.max(1);
    let producers = bench.producers.max(1);
    let mut tasks = Vec::new();
    for p in 0..producers {
        let (store, worker, enqueued, ids) =
            (store.clone(), worker.clone(), Arc::clone(&enqueued), endpoint_id.clone());
        tasks.push(tokio::spawn(async move {
            // Producer p takes every producers-th batch.
            for first in (p * batch..count).step_by(batch * producers) {
                let last = (first + batch).min(count);
                let (account_id, endpoint_id) = ids.clone();
                store.write(move |c| enqueue_batch(c, &account_id, &endpoint_id, first..last)).await?;
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
    let enqueue_elapsed = started.elapsed();
    let mut seen = durable.count.clone();
    tokio::time::timeout(Duration::from_secs(600), seen.wait_for(|n| *n >= count))
        .await
        .context("the durable run did not finish in 10 minutes")??;
    let durable_elapsed = started.elapsed();
    let durable_cpu = cpu_seconds() - durable_cpu;
    let database_cpu = postgres_cpu_seconds() - database_cpu;
    shutdown.cancel();
    let _ = running.await;

    let enqueued = enqueued.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let received = durable.received.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let mut latencies: Vec<Duration> = enqueued
        .iter()
        .zip(&received)
        .filter_map(|(e, r)| Some(r.as_ref()?.saturating_duration_since(*e.as_ref()?)))
        .collect();
    latencies.sort();
    let pick =
        |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    Ok(Report {
        backend: store.backend(),
        count,
        enqueue_per_second: count as f64 / enqueue_elapsed.as_secs_f64(),
        raw_per_second: count as f64 / raw_elapsed.as_secs_f64(),
        durable_per_second: count as f64 / durable_elapsed.as_secs_f64(),
        p50: pick(0.50),
        p99: pick(0.99),
        raw_cpu_us: raw_cpu * 1e6 / count as f64,
        durable_cpu_us: durable_cpu * 1e6 / count as f64,
        database_cpu_us: (store.backend() == "postgres").then(|| database_cpu * 1e6 / count as f64),
    })
}

/// Seconds of CPU (user + system) in a `/proc/<pid>/stat` line.
fn stat_cpu_seconds(stat: &str) -> f64 {
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    ticks / 100.0
}

/// Seconds of CPU this process has used (user + system; 10 ms resolution).
pub(crate) fn cpu_seconds() -> f64 {
    stat_cpu_seconds(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
}

/// Seconds of CPU used by the PostgreSQL processes on this machine (0 where none is visible).
/// Backends that exit between two readings take their CPU with them, so take both readings
/// while the benchmark's connections are open.
fn postgres_cpu_seconds() -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0.0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| stat.contains("(postgres)"))
        .map(|stat| stat_cpu_seconds(&stat))
        .sum()
}
