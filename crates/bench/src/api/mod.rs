//! `driftwatch-bench api`: the path people and agents drive. Keep-alive clients post one test
//! event per request through the real HTTP API (bearer token, rate limiter, the handler, the
//! outbox) while the worker delivers them to a local receiver; measured next to the same
//! client's raw rate to the same receiver.
//!
//! On PostgreSQL the report adds the database's CPU per delivery and, read from
//! `pg_stat_database`, its transactions per delivery: where a request's database time goes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy};
use driftwatch_store::{Backend, Endpoint, PoolOptions, Store, accounts, endpoints};
use futures_util::StreamExt as _;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::{cpu_seconds, postgres_cpu_seconds};

/// What to measure.
#[derive(Debug, Clone)]
pub struct ApiBench {
    /// Test events posted (one delivery each).
    pub count: usize,
    /// Clients posting side by side, each on its own kept-alive connection.
    pub clients: usize,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct ApiReport {
    /// `sqlite` or `postgres`.
    pub backend: &'static str,
    /// Requests (and deliveries).
    pub count: usize,
    /// Clients side by side.
    pub clients: usize,
    /// The same client straight at the receiver, requests a second.
    pub raw_per_second: f64,
    /// Accepted API requests a second.
    pub requests_per_second: f64,
    /// Deliveries a second, from the first request to the last receipt.
    pub delivered_per_second: f64,
    /// Request latency percentiles (p50, p99), client side.
    pub request_ms: [f64; 2],
    /// This process's CPU per delivery (server, worker and clients), microseconds.
    pub cpu_us: f64,
    /// PostgreSQL's CPU per delivery, microseconds.
    pub database_cpu_us: Option<f64>,
    /// PostgreSQL transactions per delivery (committed and rolled back).
    pub transactions: Option<f64>,
}

impl std::fmt::Display for ApiReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "api on {}: {} test events through POST /api/v1/endpoints/{{id}}/test, {} keep-alive clients",
            self.backend, self.count, self.clients
        )?;
        writeln!(f, "raw (same client -> receiver)  {:>9.0}/s", self.raw_per_second)?;
        writeln!(
            f,
            "api requests accepted          {:>9.0}/s   p50 {:.2} ms   p99 {:.2} ms",
            self.requests_per_second, self.request_ms[0], self.request_ms[1]
        )?;
        writeln!(
            f,
            "delivered                      {:>9.0}/s   {:.2} of raw",
            self.delivered_per_second,
            self.delivered_per_second / self.raw_per_second
        )?;
        write!(f, "cpu per delivery               {:>9.0} us (this process)", self.cpu_us)?;
        if let Some(db) = self.database_cpu_us {
            write!(f, "\n                               {db:>9.0} us (postgres)")?;
        }
        if let Some(t) = self.transactions {
            write!(f, "\ntransactions per delivery      {t:>9.2}")?;
        }
        Ok(())
    }
}

/// A receiver that counts what it is sent.
async fn counting_receiver() -> anyhow::Result<(String, watch::Receiver<usize>)> {
    let (tx, count) = watch::channel(0usize);
    let tx = Arc::new(tx);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |_body: axum::body::Bytes| {
            let tx = Arc::clone(&tx);
            async move {
                tx.send_modify(|c| *c += 1);
                "ok"
            }
        }),
    );
    let addr = crate::serve(app).await?;
    Ok((format!("http://{addr}/hook"), count))
}

/// Posts `count` requests from `clients` tasks; returns each request's latency.
async fn post_all(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    count: usize,
    clients: usize,
) -> anyhow::Result<Vec<Duration>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let body = br#"{"type":"endpoint.test","data":{"note":"a body the size of a small event"}}"#;
    let tasks = (0..clients).map(|_| async {
        let mut took = Vec::new();
        while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < count {
            let mut request = client.post(url).header("content-type", "application/json");
            request = match token {
                Some(token) => request.bearer_auth(token),
                None => request.body(&body[..]),
            };
            let started = Instant::now();
            let response = request.send().await?;
            let status = response.status();
            let text = response.bytes().await?;
            anyhow::ensure!(status.is_success(), "{url} answered {status}: {}", String::from_utf8_lossy(&text));
            took.push(started.elapsed());
        }
        anyhow::Ok(took)
    });
    let mut all = Vec::with_capacity(count);
    for took in futures_util::stream::iter(tasks).buffer_unordered(clients).collect::<Vec<_>>().await {
        all.extend(took?);
    }
    Ok(all)
}

/// Transactions PostgreSQL has finished in this database, as its statistics say (0 on SQLite).
async fn transactions(store: &Store) -> anyhow::Result<f64> {
    Ok(store.read(driftwatch_store::maintenance::transactions_finished).await?.unwrap_or(0.0))
}

/// Runs the benchmark.
pub async fn api(bench: &ApiBench) -> anyhow::Result<ApiReport> {
    let (count, clients) = (bench.count.max(1), bench.clients.max(1));
    let client = reqwest::Client::builder().pool_max_idle_per_host(clients).build()?;

    let (hook, mut received) = counting_receiver().await?;
    post_all(&client, &hook, None, clients * 4, clients).await?; // warm the connections
    let before = *received.borrow();
    let started = Instant::now();
    post_all(&client, &hook, None, count, clients).await?;
    let raw_per_second = count as f64 / started.elapsed().as_secs_f64();
    received.wait_for(|n| *n >= before + count).await?;

    let (store, _dir) = crate::open_store(bench.database_url.as_deref(), &PoolOptions::default()).await?;
    let target = hook.clone();
    let (token, endpoint_id) = store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, &driftwatch_core::new_id(driftwatch_core::IdKind::Account), now)?;
            let (_, token) = accounts::create_token(c, &account.id, "bench", "read write", now)?;
            let endpoint = Endpoint { description: "bench".into(), ..Endpoint::webhook(&account.id, &target, now) };
            endpoints::insert_endpoint(c, &endpoint)?;
            Ok((token, endpoint.id))
        })
        .await?;
    let worker = DeliveryWorker::new(
        store.clone(),
        crate::sender()?,
        Arc::new(SystemClock),
        DeliveryConfig {
            retry: RetryPolicy { max_attempts: 5, ..RetryPolicy::default() },
            node_id: "bench".into(),
            ..DeliveryConfig::default()
        },
    );
    let state = crate::app_state(&store, worker.clone(), true)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let api = format!("http://{}/api/v1/endpoints/{endpoint_id}/test", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(axum::serve(listener, driftwatch_web::router(state)).into_future());
    let running = tokio::spawn(worker.run(shutdown.clone()));

    // Warm the pool and the connections, then wait until those deliveries are out.
    post_all(&client, &api, Some(&token), clients, clients).await?;
    let warm = before + count + clients;
    tokio::time::timeout(Duration::from_secs(60), received.wait_for(|n| *n >= warm))
        .await
        .context("the warm-up deliveries did not arrive in a minute")??;

    let postgres = store.backend() == Backend::Postgres;
    let transactions_before = if postgres { transactions(&store).await? } else { 0.0 };
    let (cpu, database_cpu) = (cpu_seconds(), postgres_cpu_seconds());
    let started = Instant::now();
    let mut took = post_all(&client, &api, Some(&token), count, clients).await?;
    let requests_per_second = count as f64 / started.elapsed().as_secs_f64();
    tokio::time::timeout(Duration::from_secs(3600), received.wait_for(|n| *n >= warm + count))
        .await
        .context("the deliveries did not arrive in an hour")??;
    let delivered_per_second = count as f64 / started.elapsed().as_secs_f64();
    let (cpu, database_cpu) = (cpu_seconds() - cpu, postgres_cpu_seconds() - database_cpu);
    let transactions = if postgres {
        // Backends report their counts when they go idle, within a second.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        Some((transactions(&store).await? - transactions_before - 1.0) / count as f64)
    } else {
        None
    };
    shutdown.cancel();
    let _ = running.await;
    serving.abort();

    took.sort();
    let at = |q: f64| took[((took.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1000.0;
    Ok(ApiReport {
        backend: store.backend().as_str(),
        count,
        clients,
        raw_per_second,
        requests_per_second,
        delivered_per_second,
        request_ms: [at(0.5), at(0.99)],
        cpu_us: cpu * 1e6 / count as f64,
        database_cpu_us: postgres.then(|| database_cpu * 1e6 / count as f64),
        transactions,
    })
}
