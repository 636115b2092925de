//! The driftwatch application: settings, and starting the web server, the schedule runner and
//! the delivery worker over one store. `main.rs` is the command line on top of this; the
//! end-to-end tests start the same [`App`] in-process.

pub mod config;
pub mod import;
mod jobs;
mod settings;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use driftwatch_core::{Clock, SystemClock};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy, Sender, SenderOptions};
use driftwatch_net::TargetPolicy;
use driftwatch_schedule::{Runner, RunnerConfig};
use driftwatch_scrape::{FetchOptions, Fetcher};
use driftwatch_store::{PoolOptions, Store};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use settings::{HumanDuration, SettingError, Settings};

/// Which parts of the application a process runs.
#[derive(Debug, Clone, Copy)]
pub struct Roles {
    /// The HTTP server.
    pub web: bool,
    /// The schedule runner and the delivery worker.
    pub background: bool,
}

/// A running application.
pub struct App {
    /// Where the HTTP server listens (when it runs).
    pub addr: Option<SocketAddr>,
    /// Where `/metrics` listens, when it has an address of its own.
    pub metrics_addr: Option<SocketAddr>,
    /// The store it uses.
    pub store: Store,
    /// The first-run setup URL, while no user exists (printed by `serve`).
    pub setup_url: Option<String>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    scheduler: Option<tokio_cron_scheduler::JobScheduler>,
}

impl App {
    /// Opens and migrates the store, then starts the parts named by `roles`.
    pub async fn start(settings: &Settings, roles: Roles) -> anyhow::Result<App> {
        settings.validate()?;
        let store = open_store(settings).await?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let metrics = Arc::new(driftwatch_metrics::Metrics::default());
        let policy = TargetPolicy { allow_private: settings.allow_private_targets };
        let retry = RetryPolicy {
            schedule: driftwatch_core::parse_schedule(&settings.retry_schedule)
                .map_err(anyhow::Error::msg)
                .context("DRIFTWATCH_RETRY_SCHEDULE")?,
            max_attempts: settings.max_attempts,
            jitter: settings.retry_jitter,
            max_retry_after: settings.max_retry_after.into(),
        };
        let sender = Sender::new(SenderOptions {
            policy,
            timeout: settings.webhook_timeout.into(),
            connect_timeout: settings.webhook_connect_timeout.into(),
            ..SenderOptions::default()
        })
        .context("building the webhook client")?;
        let worker = DeliveryWorker::new(
            store.clone(),
            sender,
            Arc::clone(&clock),
            DeliveryConfig {
                concurrency: settings.delivery_concurrency,
                per_endpoint_concurrency: settings.per_endpoint_concurrency,
                poll_interval: settings.poll_interval.into(),
                retry,
                circuit_threshold: settings.circuit_threshold,
                circuit_open_for: settings.circuit_open_for.into(),
                disable_after: settings.disable_after.into(),
                lease_grace: settings.lease_grace.into(),
                node_id: settings.node_id(),
                metrics: Arc::clone(&metrics),
                ..DeliveryConfig::default()
            },
        );
        let fetcher = Fetcher::new(FetchOptions {
            policy,
            timeout: settings.fetch_timeout.into(),
            max_body_bytes: settings.max_page_bytes,
            ..FetchOptions::default()
        })
        .context("building the page fetcher")?;
        let wake_worker = worker.clone();
        let runner = Runner::new(
            store.clone(),
            fetcher,
            Arc::clone(&clock),
            RunnerConfig {
                concurrency: settings.check_concurrency,
                poll_interval: settings.poll_interval.into(),
                max_attempts: settings.max_attempts as i32,
                failure_threshold: settings.failure_threshold,
                failing_backoff_max: settings.failing_backoff_max.into(),
                per_host_concurrency: settings.per_host_concurrency,
                per_host_gap: settings.per_host_gap.into(),
                node_id: settings.node_id(),
                metrics: Arc::clone(&metrics),
                ..RunnerConfig::default()
            },
            move || wake_worker.wake(),
        );

        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let mut scheduler = None;
        if roles.background {
            tasks.spawn(runner.clone().run(shutdown.clone()));
            tasks.spawn(worker.clone().run(shutdown.clone()));
            scheduler =
                Some(jobs::start(settings, store.clone(), runner.clone(), worker.clone(), Arc::clone(&clock)).await?);
        }
        let mut addr = None;
        let mut metrics_addr = None;
        let mut setup_url = None;
        let setup = Arc::new(driftwatch_web::ui::SetupCode::default());
        if roles.web {
            let state = driftwatch_web::AppState {
                store: store.clone(),
                runner,
                worker,
                clock,
                policy,
                limits: driftwatch_web::ApiLimits {
                    min_interval_seconds: settings.min_interval_seconds,
                    secret_rotation_overlap: settings.secret_rotation_overlap.into(),
                    rate_limit_per_minute: settings.rate_limit_per_minute,
                    ..driftwatch_web::ApiLimits::default()
                },
                limiter: std::sync::Arc::new(driftwatch_web::RateLimiter::new(settings.rate_limit_per_minute)),
                ui: driftwatch_web::ui::UiSettings {
                    public_url: settings.public_url.clone(),
                    ..driftwatch_web::ui::UiSettings::default()
                },
                setup: Arc::clone(&setup),
                throttle: Arc::new(driftwatch_web::ui::SignInThrottle::new(10, std::time::Duration::from_secs(900))),
                ops: driftwatch_web::Ops {
                    metrics: Arc::clone(&metrics),
                    metrics_token: settings.metrics_token.clone().filter(|t| !t.is_empty()),
                    metrics_on_main: settings.metrics_listen.is_none(),
                    draining: shutdown.clone(),
                },
            };
            if let Some(listen) = &settings.metrics_listen {
                let listener = tokio::net::TcpListener::bind(listen)
                    .await
                    .with_context(|| format!("DRIFTWATCH_METRICS_LISTEN: listening on {listen}"))?;
                metrics_addr = Some(listener.local_addr()?);
                tasks.spawn(driftwatch_web::serve_metrics(listener, state.clone(), shutdown.clone()));
            }
            let listener = tokio::net::TcpListener::bind(&settings.listen)
                .await
                .with_context(|| format!("listening on {}", settings.listen))?;
            let local = listener.local_addr()?;
            addr = Some(local);
            tasks.spawn(driftwatch_web::serve(listener, state, shutdown.clone()));
            tracing::info!(addr = %local, backend = store.backend().as_str(), "listening");
            if !store.read(driftwatch_store::users::any_user).await? {
                let base = settings.public_url.clone().unwrap_or_else(|| format!("http://{local}"));
                let url = format!("{}/setup?code={}", base.trim_end_matches('/'), setup.issue());
                // The code is a one-time secret for whoever runs the server; logged once so a
                // service manager's log shows it too.
                tracing::info!(setup_url = %url, "no user yet: open the setup URL to create the first account");
                setup_url = Some(url);
            }
        }
        tasks.close();
        Ok(App { addr, metrics_addr, store, setup_url, shutdown, tasks, scheduler })
    }

    /// Stops accepting work and waits for what is in flight to be recorded.
    pub async fn shutdown(self) {
        self.shutdown_within(None).await;
    }

    /// Drains: stops claiming (and `/readyz` answers 503), gives back claimed work that has
    /// not started, lets checks, deliveries and HTTP requests in flight finish and be recorded,
    /// for at most `grace` when given. Returns whether everything finished in time; what did
    /// not is abandoned, and its leases expire so another node or the next start retries it.
    pub async fn shutdown_within(mut self, grace: Option<std::time::Duration>) -> bool {
        self.shutdown.cancel();
        if let Some(scheduler) = self.scheduler.as_mut()
            && let Err(e) = scheduler.shutdown().await
        {
            tracing::warn!(error = %e, "stopping the job scheduler failed");
        }
        match grace {
            None => {
                self.tasks.wait().await;
                true
            }
            Some(grace) => match tokio::time::timeout(grace, self.tasks.wait()).await {
                Ok(()) => true,
                Err(_) => {
                    tracing::warn!(
                        grace = ?grace,
                        tasks = self.tasks.len(),
                        "the shutdown grace ran out with work in flight; its leases will expire and it will be retried"
                    );
                    false
                }
            },
        }
    }

    /// Resolves when the application has been asked to stop.
    pub async fn stopped(&self) {
        self.shutdown.cancelled().await;
    }
}

/// Opens the configured store and applies pending migrations.
pub async fn open_store(settings: &Settings) -> anyhow::Result<Store> {
    let store =
        Store::open(&settings.database_url, &PoolOptions { max_size: settings.pool_size, ..PoolOptions::default() })
            .with_context(|| format!("opening {}", driftwatch_store::redact(&settings.database_url)))?;
    let applied = store.migrate().await.context("applying migrations")?;
    tracing::info!(backend = store.backend().as_str(), applied, "database ready");
    Ok(store)
}
