//! `driftwatch-bench hostile`: normal watches beside a hostile case, on one node.
//!
//! Normal watches (spread over many hosts and accounts, due evenly over one interval) run
//! beside one hostile case of another account:
//! - `dead-host`: thousands of watches on a host that accepts connections and never answers;
//! - `trickle`: pages that send one byte a second, with a long timeout of their own;
//! - `nested`: a page of deeply nested markup;
//! - `diff-bomb`: pages of 400,000 random one-digit lines, different on every fetch.
//!
//! Measured: each normal watch's lag (when its check started, after its due time) and
//! `/healthz`'s latency, sampled every 100 ms over HTTP, throughout.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker};
use driftwatch_schedule::{Runner, RunnerConfig};
use driftwatch_scrape::{FetchOptions, Fetcher};
use driftwatch_store::{PoolOptions, Watch, accounts};
use tokio_util::sync::CancellationToken;

/// The hostile cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hostile {
    /// No hostile watches: the baseline.
    None,
    /// 5,000 watches on a host that never answers.
    DeadHost,
    /// 32 pages that trickle a byte a second, with a 120 s timeout.
    Trickle,
    /// Pages of 100,000 nested `<div>`.
    Nested,
    /// Pages of 400,000 random one-digit lines, new on every fetch.
    DiffBomb,
}

impl std::str::FromStr for Hostile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "none" => Hostile::None,
            "dead-host" => Hostile::DeadHost,
            "trickle" => Hostile::Trickle,
            "nested" => Hostile::Nested,
            "diff-bomb" => Hostile::DiffBomb,
            other => return Err(format!("`{other}`: use none, dead-host, trickle, nested or diff-bomb")),
        })
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct HostileBench {
    /// The hostile case.
    pub case: Hostile,
    /// Normal watches.
    pub watches: usize,
    /// Their interval, seconds.
    pub interval: u64,
    /// How long to run, seconds.
    pub seconds: u64,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct HostileReport {
    /// The case.
    pub case: Hostile,
    /// Normal watches and their interval.
    pub watches: usize,
    /// Their interval.
    pub interval: Duration,
    /// Normal checks started in the window.
    pub normal_runs: usize,
    /// Normal watches never checked.
    pub never_checked: usize,
    /// Lag of normal watches' first checks (due evenly over the first interval): p50, p99, max.
    pub lag: [Duration; 3],
    /// The longest time between two checks of one normal watch.
    pub longest_gap: Duration,
    /// `/healthz` latency: p50, p99, max.
    pub healthz: [Duration; 3],
    /// Hostile checks finished.
    pub hostile_runs: usize,
}

impl std::fmt::Display for HostileReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        writeln!(f, "hostile case {:?}: {} normal watches every {:?}", self.case, self.watches, self.interval)?;
        writeln!(f, "normal checks     {} started, {} watches never checked", self.normal_runs, self.never_checked)?;
        writeln!(
            f,
            "scheduling lag    p50 {:.0} ms   p99 {:.0} ms   max {:.0} ms (first checks)",
            ms(self.lag[0]),
            ms(self.lag[1]),
            ms(self.lag[2])
        )?;
        writeln!(f, "longest gap       {:.1} s between two checks of one watch", self.longest_gap.as_secs_f64())?;
        writeln!(
            f,
            "/healthz          p50 {:.1} ms   p99 {:.1} ms   max {:.1} ms",
            ms(self.healthz[0]),
            ms(self.healthz[1]),
            ms(self.healthz[2])
        )?;
        write!(f, "hostile checks    {} finished", self.hostile_runs)
    }
}

/// Pages a path at `/p/{n}`: a small page whose text changes with the second it is fetched in
/// (normal), or the hostile body.
async fn page_server(body: Arc<dyn Fn() -> String + Send + Sync>) -> anyhow::Result<String> {
    let app = axum::Router::new().route(
        "/p/{n}",
        axum::routing::get(move || {
            let body = Arc::clone(&body);
            async move { ([("content-type", "text/html")], body()) }
        }),
    );
    Ok(format!("http://{}", crate::serve(app).await?))
}

/// A host that accepts connections and never answers.
async fn dead_host() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    Ok(format!("http://{addr}"))
}

/// Pages that send a byte a second.
async fn trickle_host() -> anyhow::Result<String> {
    let app = axum::Router::new().route(
        "/p/{n}",
        axum::routing::get(|| async {
            let bytes = futures_util::stream::unfold(0u32, |n| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Some((Ok::<_, std::io::Error>(axum::body::Bytes::from_static(b"<")), n + 1))
            });
            ([("content-type", "text/html")], axum::body::Body::from_stream(bytes))
        }),
    );
    Ok(format!("http://{}", crate::serve(app).await?))
}

fn random_digits(seed: u64, lines: usize) -> String {
    let mut x = seed | 1;
    let mut out = String::with_capacity(lines * 2 + 32);
    out.push_str("<html><body><pre>");
    for _ in 0..lines {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        out.push(char::from(b'0' + ((x >> 60) % 10) as u8));
        out.push('\n');
    }
    out.push_str("</pre></body></html>");
    out
}

/// The hostile watches' URLs (and their fetch options).
async fn hostile(case: Hostile) -> anyhow::Result<Vec<(String, String)>> {
    Ok(match case {
        Hostile::None => Vec::new(),
        Hostile::DeadHost => {
            let base = dead_host().await?;
            (0..5_000).map(|n| (format!("{base}/p/{n}"), "{}".to_owned())).collect()
        }
        Hostile::Trickle => {
            let base = trickle_host().await?;
            let options = r#"{"fetch":{"timeout_seconds":120}}"#.to_owned();
            (0..32).map(|n| (format!("{base}/p/{n}"), options.clone())).collect()
        }
        Hostile::Nested => {
            let page = format!("<html><body>{}x{}</body></html>", "<div>".repeat(100_000), "</div>".repeat(100_000));
            let base = page_server(Arc::new(move || page.clone())).await?;
            (0..8).map(|n| (format!("{base}/p/{n}"), "{}".to_owned())).collect()
        }
        Hostile::DiffBomb => {
            let seed = Arc::new(AtomicU64::new(1));
            let base =
                page_server(Arc::new(move || random_digits(seed.fetch_add(1, Ordering::Relaxed), 400_000))).await?;
            (0..8).map(|n| (format!("{base}/p/{n}"), "{}".to_owned())).collect()
        }
    })
}

/// Runs the benchmark.
pub async fn hostile_bench(bench: &HostileBench) -> anyhow::Result<HostileReport> {
    let (store, _dir) = crate::open_store(bench.database_url.as_deref(), &PoolOptions::default()).await?;
    let interval = Duration::from_secs(bench.interval.max(1));

    // Normal watches: 50 hosts, 10 accounts, due evenly over the first interval.
    let mut hosts = Vec::new();
    for _ in 0..50 {
        let started = Instant::now();
        hosts.push(page_server(Arc::new(move || format!("<p>second {}</p>", started.elapsed().as_secs()))).await?);
    }
    let hostile_urls = hostile(bench.case).await?;
    let now = SystemClock.now().naive_utc();
    let (count, every) = (bench.watches, bench.interval as i64);
    let due: Vec<(String, chrono::NaiveDateTime)> = store
        .write(move |c| {
            let accounts: Vec<String> = (0..10)
                .map(|i| accounts::create_account(c, &format!("normal-{i}"), now).map(|a| a.id))
                .collect::<Result<_, _>>()?;
            let hog = accounts::create_account(c, "hostile", now)?;
            let mut due = Vec::with_capacity(count);
            driftwatch_store::transaction(c, |c| {
                for n in 0..count {
                    let at = now + TimeDelta::milliseconds((n as i64 * every * 1000) / count.max(1) as i64);
                    let watch = Watch {
                        interval_seconds: Some(every),
                        next_run_at: at,
                        ..Watch::new(&accounts[n % 10], &format!("{}/p/{n}", hosts[n % hosts.len()]), now)
                    };
                    driftwatch_store::watches::insert_watch(c, &watch)?;
                    due.push((watch.id, at));
                }
                for (url, options) in &hostile_urls {
                    let watch = Watch {
                        interval_seconds: Some(every),
                        options: options.clone(),
                        ..Watch::new(&hog.id, url, now)
                    };
                    driftwatch_store::watches::insert_watch(c, &watch)?;
                }
                Ok::<_, driftwatch_store::StoreError>(())
            })?;
            Ok(due)
        })
        .await?;

    let policy = driftwatch_net::TargetPolicy { allow_private: true };
    let fetcher = Fetcher::new(FetchOptions { policy, ..FetchOptions::default() })?;
    let runner = Runner::new(store.clone(), fetcher, Arc::new(SystemClock), RunnerConfig::default(), || {});
    let worker = DeliveryWorker::new(store.clone(), crate::sender()?, Arc::new(SystemClock), DeliveryConfig::default());
    let mut state = crate::app_state(&store, worker, true)?;
    state.runner = runner.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let health = format!("http://{}/healthz", listener.local_addr()?);
    let shutdown = CancellationToken::new();
    tokio::spawn(driftwatch_web::serve(listener, state, driftwatch_web::ServerLimits::default(), shutdown.clone()));
    let running = tokio::spawn(runner.run(shutdown.clone()));

    // /healthz every 100 ms, each on a fresh connection, for the whole window.
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
    let until = Instant::now() + Duration::from_secs(bench.seconds);
    let mut healthz = Vec::new();
    while Instant::now() < until {
        let started = Instant::now();
        let answered = client.get(&health).timeout(Duration::from_secs(30)).send().await;
        healthz.push(if answered.is_ok_and(|r| r.status().is_success()) { started.elapsed() } else { Duration::MAX });
        tokio::time::sleep(Duration::from_millis(100).saturating_sub(started.elapsed())).await;
    }
    let window_end = SystemClock.now().naive_utc();
    shutdown.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(5), running).await;

    // Each normal watch's first check is due when the bench set it (spread over the first
    // interval, as the hostile load begins): its lag is measured from then. Later checks follow
    // the watch's own phase, so for them the longest gap between two checks is reported.
    let rows: Vec<(String, chrono::NaiveDateTime)> =
        store.read(move |c| driftwatch_store::runs::starts_until(c, window_end)).await?;
    let first_due: std::collections::HashMap<&str, chrono::NaiveDateTime> =
        due.iter().map(|(id, at)| (id.as_str(), *at)).collect();
    let mut last: std::collections::HashMap<&str, chrono::NaiveDateTime> = std::collections::HashMap::new();
    let (mut lags, mut gap, mut normal_runs, mut hostile_runs) = (Vec::new(), Duration::ZERO, 0, 0);
    for (watch, started) in &rows {
        let Some(first) = first_due.get(watch.as_str()) else {
            hostile_runs += 1;
            continue;
        };
        normal_runs += 1;
        match last.insert(watch.as_str(), *started) {
            None => lags.push((*started - *first).to_std().unwrap_or(Duration::ZERO)),
            Some(previous) => gap = gap.max((*started - previous).to_std().unwrap_or(Duration::ZERO)),
        }
    }
    lags.sort();
    healthz.sort();
    let pick =
        |v: &[Duration], q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or_default();
    Ok(HostileReport {
        case: bench.case,
        watches: bench.watches,
        interval,
        normal_runs,
        never_checked: due.len() - lags.len(),
        longest_gap: gap,
        lag: [pick(&lags, 0.5), pick(&lags, 0.99), lags.last().copied().unwrap_or_default()],
        healthz: [pick(&healthz, 0.5), pick(&healthz, 0.99), healthz.last().copied().unwrap_or_default()],
        hostile_runs,
    })
}
