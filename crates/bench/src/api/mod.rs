//! `driftwatch-bench api`: the path people and agents drive. Keep-alive clients post test
//! events through the real HTTP API (bearer token, rate limiter, the handler, the outbox) to one
//! or more endpoints while the worker delivers them to a local receiver; measured next to the
//! same clients' raw rate to the same receiver, in the same run.
//!
//! The clients and the receiver run on a thread of their own ([`harness`]), so driftwatch's CPU
//! is this process's less theirs. Each delivery's time from its POST to its arrival is read at
//! the receiver (by `webhook-id`, the delivery id the API answered with). On PostgreSQL the
//! report adds the database's CPU and its transactions per delivery.

mod harness;
mod report;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy};
use driftwatch_store::{Backend, Endpoint, PoolOptions, Store, accounts, endpoints};
use tokio_util::sync::CancellationToken;

use harness::{Harness, Posting};
pub use report::ApiReport;

use crate::{cpu_seconds, postgres_cpu_seconds};

/// What to measure.
#[derive(Debug, Clone)]
pub struct ApiBench {
    /// Test events posted (one delivery each). With `rate`, ignored: rate x seconds.
    pub count: usize,
    /// Clients side by side, each on its own kept-alive connection.
    pub clients: usize,
    /// Endpoints the events go to, in turn (each event to one).
    pub endpoints: usize,
    /// Offer this many events a second instead of as many as the API takes.
    pub rate: Option<f64>,
    /// How long `rate` is offered.
    pub seconds: f64,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// Runs the benchmark.
pub async fn api(bench: &ApiBench) -> anyhow::Result<ApiReport> {
    let clients = bench.clients.max(1);
    let fan = bench.endpoints.max(1);
    let count = match bench.rate {
        Some(rate) => {
            anyhow::ensure!(rate > 0.0 && bench.seconds > 0.0, "--rate and --seconds must be above 0");
            ((rate * bench.seconds).round() as usize).max(1)
        }
        None => bench.count.max(1),
    };
    let harness = Harness::start(clients).await?;
    let progress = crate::progress::Progress::start("api");

    // The raw limit: the same clients straight at the receiver (warmed first).
    let hook = harness.receiver.clone();
    let raw_urls: Arc<dyn Fn(usize) -> (usize, String) + Send + Sync> = Arc::new(move |_| (0, format!("{hook}/0")));
    harness.post(Posting { count: clients * 4, clients, rate: None, token: None, urls: Arc::clone(&raw_urls) }).await?;
    progress.say("raw client -> receiver");
    let started = Instant::now();
    harness.post(Posting { count, clients, rate: None, token: None, urls: raw_urls }).await?;
    let raw_per_second = count as f64 / started.elapsed().as_secs_f64();
    let mut received = harness.received.clone();
    let mut expected = clients * 4 + count;
    received.wait_for(|n| *n >= expected).await?;

    let (store, _dir) = crate::open_store(bench.database_url.as_deref(), &PoolOptions::default()).await?;
    let (token, endpoint_ids) = seed(&store, &harness.receiver, fan).await?;
    let metrics = Arc::new(driftwatch_metrics::Metrics::new("bench"));
    let worker = DeliveryWorker::new(
        store.clone(),
        crate::sender()?,
        Arc::new(SystemClock),
        DeliveryConfig {
            retry: RetryPolicy { max_attempts: 5, ..RetryPolicy::default() },
            node_id: "bench".into(),
            metrics: Arc::clone(&metrics),
            ..DeliveryConfig::default()
        },
    );
    let state = crate::app_state(&store, worker.clone(), true)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}/api/v1/endpoints", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    let serving = tokio::spawn(axum::serve(listener, driftwatch_web::router(state)).into_future());
    let running = tokio::spawn(worker.run(shutdown.clone()));
    let ids = Arc::new(endpoint_ids);
    let api_urls: Arc<dyn Fn(usize) -> (usize, String) + Send + Sync> =
        Arc::new(move |n| (n % ids.len(), format!("{base}/{}/test", ids[n % ids.len()])));

    // Warm the pool and the connections, then wait until those deliveries are out.
    harness
        .post(Posting { count: clients, clients, rate: None, token: Some(token.clone()), urls: Arc::clone(&api_urls) })
        .await?;
    expected += clients;
    tokio::time::timeout(Duration::from_secs(60), received.wait_for(|n| *n >= expected))
        .await
        .context("the warm-up deliveries did not arrive in a minute")??;

    let postgres = store.backend() == Backend::Postgres;
    let transactions_before = if postgres { transactions(&store).await? } else { 0.0 };
    let claims_before = metrics.claims();
    let (cpu, harness_cpu, database_cpu) = (cpu_seconds(), harness.cpu_seconds(), postgres_cpu_seconds());
    progress.say(&format!("posting {count} test events through the API"));
    let watching = progress.count(harness.received.clone(), expected, count);
    let started = Instant::now();
    let posted = harness.post(Posting { count, clients, rate: bench.rate, token: Some(token), urls: api_urls }).await?;
    let requests_per_second = count as f64 / started.elapsed().as_secs_f64();
    tokio::time::timeout(Duration::from_secs(3600), received.wait_for(|n| *n >= expected + count))
        .await
        .context("the deliveries did not arrive in an hour")??;
    let delivered_per_second = count as f64 / started.elapsed().as_secs_f64();
    let (cpu, harness_cpu, database_cpu) =
        (cpu_seconds() - cpu, harness.cpu_seconds() - harness_cpu, postgres_cpu_seconds() - database_cpu);
    let claims = metrics.claims();
    watching.abort();
    progress.done();
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

    let arrivals = harness.arrivals.at.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    Ok(ApiReport::new(report::Figures {
        backend: store.backend().as_str(),
        count,
        clients,
        endpoints: fan,
        rate: bench.rate,
        raw_per_second,
        requests_per_second,
        delivered_per_second,
        posted: &posted,
        arrivals: &arrivals,
        claimed: claims.0 - claims_before.0,
        given_back: claims.1 - claims_before.1,
        driftwatch_cpu: cpu - harness_cpu,
        harness_cpu,
        database_cpu: postgres.then_some(database_cpu),
        transactions,
    }))
}

/// An account with a read-write token and `fan` webhook endpoints at the receiver
/// (`{receiver}/{k}`); returns the token and the endpoints' ids.
async fn seed(store: &Store, receiver: &str, fan: usize) -> anyhow::Result<(String, Vec<String>)> {
    let receiver = receiver.to_owned();
    Ok(store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, &driftwatch_core::new_id(driftwatch_core::IdKind::Account), now)?;
            let (_, token) = accounts::create_token(c, &account.id, "bench", "read write", now)?;
            let mut ids = Vec::new();
            for k in 0..fan {
                let target = format!("{receiver}/{k}");
                let endpoint =
                    Endpoint { description: format!("bench {k}"), ..Endpoint::webhook(&account.id, &target, now) };
                endpoints::insert_endpoint(c, &endpoint)?;
                ids.push(endpoint.id);
            }
            Ok((token, ids))
        })
        .await?)
}

/// Transactions PostgreSQL has finished in this database, as its statistics say (0 on SQLite).
async fn transactions(store: &Store) -> anyhow::Result<f64> {
    Ok(store.read(driftwatch_store::maintenance::transactions_finished).await?.unwrap_or(0.0))
}
