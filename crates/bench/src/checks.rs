//! `driftwatch bench checks`: how many watches one node keeps up with.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use diesel::prelude::*;
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_net::TargetPolicy;
use driftwatch_schedule::{Runner, RunnerConfig};
use driftwatch_scrape::{FetchOptions, Fetcher};
use driftwatch_store::schema::{runs, watches};
use driftwatch_store::{PoolOptions, Store, Watch, accounts};
use tokio_util::sync::CancellationToken;

/// What to measure.
#[derive(Debug, Clone)]
pub struct ChecksBench {
    /// Watches (each its own page on one local server).
    pub watches: usize,
    /// Checks in flight at once.
    pub concurrency: usize,
    /// Seconds of idle to measure the scheduler's CPU over.
    pub idle_seconds: u64,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct ChecksReport {
    /// Watches.
    pub watches: usize,
    /// Page size served.
    pub page_bytes: usize,
    /// First checks (baselines) per second.
    pub baseline_per_second: f64,
    /// Checks per second when every page changed (diff, snapshot and event written).
    pub change_per_second: f64,
    /// Process CPU per baseline check, in microseconds (the local page server included).
    pub baseline_cpu_us: f64,
    /// Process CPU per check with a change, in microseconds (the local page server included).
    pub change_cpu_us: f64,
    /// Peak resident memory of the process, in MiB.
    pub peak_rss_mib: f64,
    /// Process CPU while idle with every watch scheduled, in percent of one core.
    pub idle_cpu_percent: f64,
}

impl std::fmt::Display for ChecksReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "watches            {} (pages of {} bytes, one #price selector each)",
            self.watches, self.page_bytes
        )?;
        writeln!(f, "baseline checks    {:.0}/s", self.baseline_per_second)?;
        writeln!(f, "checks w/ change   {:.0}/s (fetch, extract, diff, snapshot, event)", self.change_per_second)?;
        writeln!(
            f,
            "CPU per check      {:.0} us baseline, {:.0} us with a change (whole process, page server included)",
            self.baseline_cpu_us, self.change_cpu_us
        )?;
        writeln!(f, "peak RSS           {:.1} MiB (whole process: server, pages, database)", self.peak_rss_mib)?;
        write!(
            f,
            "idle CPU           {:.2}% of one core with {} watches scheduled",
            self.idle_cpu_percent, self.watches
        )
    }
}

fn page(n: usize, version: u64) -> String {
    let mut html = String::with_capacity(21_000);
    html.push_str("<html><head><title>Shop</title><style>.x{color:red}</style></head><body><nav>Home | Shop</nav>");
    for i in 0..280 {
        html.push_str(&format!("<div class=\"item\"><h3>Item {i}</h3><p>Text for item {i} of page {n}.</p></div>"));
    }
    html.push_str(&format!("<div id=\"price\">Price: {} EUR</div></body></html>", 10 + version));
    html
}

use crate::cpu_seconds;

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

async fn wait_for_runs(store: &Store, n: i64) -> anyhow::Result<()> {
    loop {
        let done: i64 = store.run(|c| Ok(runs::table.count().get_result(c)?)).await?;
        if done >= n {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs the benchmark on a temporary SQLite file.
pub async fn checks(bench: &ChecksBench) -> anyhow::Result<ChecksReport> {
    let count = bench.watches.max(1);
    let version = Arc::new(AtomicU64::new(0));
    let served = Arc::clone(&version);
    let app = axum::Router::new().route(
        "/p/{n}",
        axum::routing::get(move |axum::extract::Path(n): axum::extract::Path<usize>| {
            let version = served.load(Ordering::Relaxed);
            async move { ([("content-type", "text/html; charset=utf-8")], page(n, version)) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let dir = tempfile::tempdir()?;
    let store = Store::open(
        &format!("sqlite://{}", dir.path().join("bench.db").display()),
        &PoolOptions { max_size: 8, ..PoolOptions::default() },
    )?;
    store.migrate().await?;
    store
        .write(move |c| {
            let now = SystemClock.now().naive_utc();
            let account = accounts::create_account(c, "bench", now)?;
            c.transaction(|c| {
                for n in 0..count {
                    let watch = Watch {
                        name: format!("page {n}"),
                        selector: Some("#price".into()),
                        ..Watch::new(&account.id, &format!("http://{addr}/p/{n}"), now)
                    };
                    driftwatch_store::watches::insert_watch(c, &watch)?;
                }
                Ok(())
            })
        })
        .await?;

    let fetcher =
        Fetcher::new(FetchOptions { policy: TargetPolicy { allow_private: true }, ..FetchOptions::default() })?;
    let runner = Runner::new(
        store.clone(),
        fetcher,
        Arc::new(SystemClock),
        RunnerConfig {
            concurrency: bench.concurrency.max(1),
            per_host_concurrency: bench.concurrency.max(1),
            per_host_gap: Duration::ZERO,
            node_id: "bench".into(),
            ..RunnerConfig::default()
        },
        || {},
    );
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(runner.clone().run(shutdown.clone()));

    let started = Instant::now();
    let cpu_before = cpu_seconds();
    wait_for_runs(&store, count as i64).await?;
    let baseline = started.elapsed();
    let baseline_cpu = cpu_seconds() - cpu_before;

    version.store(1, Ordering::Relaxed);
    let now = SystemClock.now().naive_utc();
    store.write(move |c| Ok(diesel::update(watches::table).set(watches::next_run_at.eq(now)).execute(c)?)).await?;
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    runner.wake();
    wait_for_runs(&store, 2 * count as i64).await?;
    let changed = started.elapsed();
    let change_cpu = cpu_seconds() - cpu_before;

    // Idle: every watch is due in an hour; the scheduler should sleep.
    let cpu = cpu_seconds();
    let idle = Instant::now();
    tokio::time::sleep(Duration::from_secs(bench.idle_seconds.max(1))).await;
    let idle_cpu = (cpu_seconds() - cpu) / idle.elapsed().as_secs_f64() * 100.0;

    shutdown.cancel();
    let _ = running.await;
    Ok(ChecksReport {
        watches: count,
        page_bytes: page(0, 0).len(),
        baseline_per_second: count as f64 / baseline.as_secs_f64(),
        change_per_second: count as f64 / changed.as_secs_f64(),
        baseline_cpu_us: baseline_cpu * 1e6 / count as f64,
        change_cpu_us: change_cpu * 1e6 / count as f64,
        peak_rss_mib: peak_rss_mib(),
        idle_cpu_percent: idle_cpu,
    })
}
