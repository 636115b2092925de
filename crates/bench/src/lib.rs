//! The benchmarks behind the `driftwatch-bench` binary: delivery (raw next to durable), the API
//! path, checks, hostile pages beside normal ones, pages, retention, rendering in Chromium, MCP
//! push. Each drives the real crates in-process and reads and seeds the database only through
//! `store`'s functions; deliveries are answered by test-support's chat stand-ins. Not linked
//! into the product binary.

mod api;
mod browser;
mod checks;
mod delivery;
mod digest;
mod hostile;
mod import;
mod mcp;
mod pages;
mod progress;
mod retention;

pub use api::{ApiBench, ApiReport, api};
pub use browser::{BrowserBench, BrowserReport, BrowserRow, PageKind, browser};
pub use checks::{ChecksBench, ChecksReport, checks};
pub use delivery::{DeliveryBench, Report, Shape, delivery};
pub use digest::{DigestBench, DigestReport, digest};
pub use hostile::{Hostile, HostileBench, HostileReport, hostile_bench};
pub use import::{ImportBench, ImportReport, import};
pub use mcp::{McpBench, McpReport, mcp};
pub use pages::{PagesBench, PagesReport, pages};
pub use retention::{RetentionBench, RetentionReport, retention};

/// Seconds of CPU (user + system) in a `/proc/<pid>/stat` line.
pub(crate) fn stat_cpu_seconds(stat: &str) -> f64 {
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
pub(crate) fn postgres_cpu_seconds() -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0.0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| stat.contains("(postgres)"))
        .map(|stat| stat_cpu_seconds(&stat))
        .sum()
}

/// A `/proc/self/status` memory field (`VmHWM`, `RssAnon`, …) in MiB; 0 where unreadable.
pub(crate) fn status_mib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The webhook sender of a benchmark: private addresses allowed (its receivers are on loopback).
pub(crate) fn sender() -> anyhow::Result<driftwatch_delivery::Sender> {
    use driftwatch_delivery::{Sender, SenderOptions};
    let policy = driftwatch_net::TargetPolicy { allow_private: true };
    Ok(Sender::new(SenderOptions { policy, ..SenderOptions::default() })?)
}

/// The web app's state around `store` and `worker`, as the binary builds it with default
/// settings and no rate limit; `allow_private` lets watches and endpoints name loopback.
pub(crate) fn app_state(
    store: &driftwatch_store::Store,
    worker: driftwatch_delivery::DeliveryWorker,
    allow_private: bool,
) -> anyhow::Result<driftwatch_web::AppState> {
    use std::sync::Arc;
    use std::time::Duration;

    use driftwatch_schedule::{Runner, RunnerConfig};
    use driftwatch_scrape::{FetchOptions, Fetcher};

    let clock: Arc<dyn driftwatch_core::Clock> = Arc::new(driftwatch_core::SystemClock);
    let policy = driftwatch_net::TargetPolicy { allow_private };
    let fetcher = Fetcher::new(FetchOptions { policy, ..FetchOptions::default() })?;
    let runner = Runner::new(store.clone(), fetcher, Arc::clone(&clock), RunnerConfig::default(), || {});
    Ok(driftwatch_web::AppState {
        store: store.clone(),
        runner,
        judge: driftwatch_ai::Judge::new(
            store.clone(),
            Arc::clone(&clock),
            None,
            driftwatch_ai::JudgeConfig::default(),
            Arc::new(|| {}),
        ),
        worker,
        clock,
        policy,
        limits: driftwatch_web::ApiLimits::default(),
        limiter: Arc::new(driftwatch_web::RateLimiter::new(0)),
        ui: driftwatch_web::ui::UiSettings::default(),
        setup: Arc::new(driftwatch_web::ui::SetupCode::default()),
        throttle: Arc::new(driftwatch_web::ui::SignInThrottle::new(10, Duration::from_secs(900))),
        ops: driftwatch_web::Ops::default(),
        keyring: None,
    })
}

/// Serves `app` on a loopback port of its own, in the background; returns the address.
pub(crate) async fn serve(app: axum::Router) -> anyhow::Result<std::net::SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(addr)
}

/// The benchmark's database, migrated: `url`, or a SQLite file in a temporary directory (kept
/// while the returned guard lives).
pub(crate) async fn open_store(
    url: Option<&str>,
    pool: &driftwatch_store::PoolOptions,
) -> anyhow::Result<(driftwatch_store::Store, tempfile::TempDir)> {
    let dir = tempfile::tempdir()?;
    let url = url.map_or_else(|| format!("sqlite://{}", dir.path().join("bench.db").display()), str::to_owned);
    let store = driftwatch_store::Store::open(&url, pool)?;
    store.migrate().await?;
    Ok((store, dir))
}
