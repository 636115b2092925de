//! The driftwatch application: settings, and starting the web server, the schedule runner and
//! the delivery worker over one store. The `driftwatch` binary (`src/bin/driftwatch/`) is the
//! command line on top of this; the
//! end-to-end tests start the same [`App`] in-process.

pub mod backup;
pub mod clock;
pub mod config;
mod jobs;
mod key_file;
pub mod keys;
mod parts;
mod settings;
pub mod used_by;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use driftwatch_core::{Clock, SystemClock};
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
    browsers: Option<driftwatch_browser::Browsers>,
}

impl App {
    /// Opens and migrates the store, then starts the parts named by `roles`.
    pub async fn start(settings: &Settings, roles: Roles) -> anyhow::Result<App> {
        settings.validate()?;
        let (keyring, _) = keys::keyring(settings)?;
        let store = open_store(settings).await?;
        // Secrets written before encryption (or under a rotated-out key) are sealed now.
        keys::seal_stored(&store, &keyring).await?;
        let clock: Arc<dyn Clock> = match &settings.clock_file {
            Some(path) => {
                tracing::warn!(path = %path.display(), "the clock is moved by a file (DRIFTWATCH_CLOCK_FILE)");
                Arc::new(clock::FileClock::new(path.clone()))
            }
            None => Arc::new(SystemClock),
        };
        let metrics = Arc::new(driftwatch_metrics::Metrics::default());
        let worker = parts::delivery_worker(settings, &store, &clock, &metrics, &keyring)?;
        let judge = parts::judge(settings, &store, &clock, &metrics, &keyring, worker.clone());
        worker.set_summarizer(Arc::new(parts::JudgeSummary {
            judge: judge.clone(),
            timeout: std::time::Duration::from_secs(settings.llm_timeout_seconds),
        }));
        let runner = parts::runner(settings, &store, &clock, &metrics, worker.clone(), judge.clone(), &keyring)?;
        let browsers = runner.browsers().cloned();
        if let Some(why) = runner.browser_shortfall().await? {
            tracing::warn!(%why, "watches need a browser and none can be found; they fail until one is");
        }
        let shutdown = CancellationToken::new();
        let tasks = TaskTracker::new();
        let mut scheduler = None;
        if roles.background {
            tasks.spawn(runner.clone().run(shutdown.clone()));
            tasks.spawn(worker.clone().run(shutdown.clone()));
            tasks.spawn(judge.clone().run(shutdown.clone()));
            scheduler =
                Some(jobs::start(settings, store.clone(), runner.clone(), worker.clone(), Arc::clone(&clock)).await?);
        }
        let web = if roles.web {
            let mut state = parts::app_state(
                settings,
                &store,
                parts::Loops { runner, worker, judge },
                clock,
                metrics,
                shutdown.clone(),
            );
            state.keyring = Some(keyring);
            Some(parts::listen(settings, state, &tasks, &shutdown).await?)
        } else {
            None
        };
        tasks.close();
        let (addr, metrics_addr, setup_url) = match web {
            Some(web) => (Some(web.addr), web.metrics_addr, web.setup_url),
            None => (None, None, None),
        };
        Ok(App { addr, metrics_addr, store, setup_url, shutdown, tasks, scheduler, browsers })
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
        let finished = match grace {
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
        };
        // Checks in flight have finished (or the grace is over): the browser goes too, and
        // with it every Chromium process.
        if let Some(browsers) = &self.browsers {
            browsers.shutdown(std::time::Duration::from_secs(3)).await;
        }
        finished
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
            .with_context(|| format!("opening {}", driftwatch_store::redact(&settings.database_url)))?
            .with_render(std::sync::Arc::new(driftwatch_channels::Channels::new(settings.public_url.clone())));
    let applied = store.migrate().await.context("applying migrations")?;
    tracing::info!(backend = store.backend().as_str(), applied, "database ready");
    Ok(store)
}
