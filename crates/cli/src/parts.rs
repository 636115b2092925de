//! Each part of an [`crate::App`] built from the settings: the delivery worker, the schedule
//! runner, the web state and its listeners. Everything a process runs is wired here and in
//! `App::start`, nowhere else.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use driftwatch_core::Clock;
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker, RetryPolicy, Sender, SenderOptions, SmtpRoots};
use driftwatch_metrics::Metrics;
use driftwatch_net::TargetPolicy;
use driftwatch_schedule::{Runner, RunnerConfig};
use driftwatch_scrape::{FetchOptions, Fetcher};
use driftwatch_store::Store;
use driftwatch_web::AppState;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::Settings;

/// Where outbound requests may go: private addresses only when the settings allow them.
fn target_policy(settings: &Settings) -> TargetPolicy {
    TargetPolicy { allow_private: settings.allow_private_targets }
}

/// The delivery worker: its retry policy, its webhook client and its settings.
pub(crate) fn delivery_worker(
    settings: &Settings,
    store: &Store,
    clock: &Arc<dyn Clock>,
    metrics: &Arc<Metrics>,
    keyring: &driftwatch_core::Keyring,
) -> anyhow::Result<DeliveryWorker> {
    let retry = RetryPolicy {
        schedule: driftwatch_core::parse_schedule(&settings.retry_schedule)
            .map_err(anyhow::Error::msg)
            .context("DRIFTWATCH_RETRY_SCHEDULE")?,
        max_attempts: settings.max_attempts,
        jitter: settings.retry_jitter,
        max_retry_after: settings.max_retry_after.into(),
    };
    let smtp_roots = match &settings.smtp_ca_file {
        Some(path) => {
            let pem =
                std::fs::read(path).with_context(|| format!("DRIFTWATCH_SMTP_CA_FILE: reading {}", path.display()))?;
            SmtpRoots::from_pem(&pem)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("DRIFTWATCH_SMTP_CA_FILE: {}", path.display()))?
        }
        None => SmtpRoots::default(),
    };
    let sender = Sender::new(SenderOptions {
        policy: target_policy(settings),
        timeout: settings.webhook_timeout.into(),
        connect_timeout: settings.webhook_connect_timeout.into(),
        proxy: settings.outbound_proxy.clone(),
        keyring: Some(keyring.clone()),
        smtp_roots,
        ..SenderOptions::default()
    })
    .context("building the webhook client")?;
    let config = DeliveryConfig {
        concurrency: settings.delivery_concurrency,
        per_endpoint_concurrency: settings.per_endpoint_concurrency,
        poll_interval: settings.poll_interval.into(),
        retry,
        circuit_threshold: settings.circuit_threshold,
        circuit_open_for: settings.circuit_open_for.into(),
        disable_after: settings.disable_after.into(),
        lease_grace: settings.lease_grace.into(),
        node_id: settings.node_id(),
        metrics: Arc::clone(metrics),
        ..DeliveryConfig::default()
    };
    Ok(DeliveryWorker::new(store.clone(), sender, Arc::clone(clock), config))
}

/// The schedule runner: its page fetcher and its settings; it wakes `worker` when a check
/// queued deliveries.
pub(crate) fn runner(
    settings: &Settings,
    store: &Store,
    clock: &Arc<dyn Clock>,
    metrics: &Arc<Metrics>,
    worker: DeliveryWorker,
    judge: driftwatch_ai::Judge,
    keyring: &driftwatch_core::Keyring,
) -> anyhow::Result<Runner> {
    let fetcher = Fetcher::new(FetchOptions {
        policy: target_policy(settings),
        timeout: settings.fetch_timeout.into(),
        max_body_bytes: settings.max_page_bytes,
        proxy: settings.outbound_proxy.clone(),
        ..FetchOptions::default()
    })
    .context("building the page fetcher")?;
    let config = RunnerConfig {
        concurrency: settings.check_concurrency,
        poll_interval: settings.poll_interval.into(),
        max_attempts: settings.max_attempts as i32,
        failure_threshold: settings.failure_threshold,
        failing_backoff_max: settings.failing_backoff_max.into(),
        per_host_concurrency: settings.per_host_concurrency,
        per_account_concurrency: settings.per_account(),
        per_host_gap: settings.per_host_gap.into(),
        node_id: settings.node_id(),
        max_text_bytes: settings.max_text_bytes,
        browser_concurrency: settings.browser_concurrency,
        metrics: Arc::clone(metrics),
        ai_deadline: settings.llm_enabled.then(|| std::time::Duration::from_secs(settings.llm_deadline_seconds)),
        keyring: Some(keyring.clone()),
        allow_private_proxies: settings.allow_private_proxies,
        ..RunnerConfig::default()
    };
    // A check queues deliveries, or a verdict that will: wake whichever has work.
    Ok(Runner::new(store.clone(), fetcher, Arc::clone(clock), config, move || {
        worker.wake();
        judge.wake();
    })
    .with_browsers(browsers(settings)))
}

/// The verdict loop: the operator's model, budgets and limits; it wakes `worker` when a
/// decision queued deliveries.
pub(crate) fn judge(
    settings: &Settings,
    store: &Store,
    clock: &Arc<dyn Clock>,
    metrics: &Arc<Metrics>,
    keyring: &driftwatch_core::Keyring,
    worker: DeliveryWorker,
) -> driftwatch_ai::Judge {
    let config = driftwatch_ai::JudgeConfig {
        operator: settings.operator_model(),
        enabled: settings.llm_enabled,
        concurrency: settings.llm_concurrency,
        call_timeout: std::time::Duration::from_secs(settings.llm_timeout_seconds),
        deadline: std::time::Duration::from_secs(settings.llm_deadline_seconds),
        daily_tokens: settings.llm_daily_tokens,
        poll_interval: settings.poll_interval.into(),
        client: driftwatch_ai::ClientOptions { policy: target_policy(settings), ..Default::default() },
        node_id: settings.node_id(),
        metrics: Arc::clone(metrics),
        ..driftwatch_ai::JudgeConfig::default()
    };
    driftwatch_ai::Judge::new(
        store.clone(),
        Arc::clone(clock),
        Some(keyring.clone()),
        config,
        Arc::new(move || worker.wake()),
    )
}

/// The node's browser, started when a watch first renders.
pub(crate) fn browsers(settings: &Settings) -> driftwatch_browser::Browsers {
    driftwatch_browser::Browsers::new(driftwatch_browser::BrowserConfig {
        executable: settings.chromium.clone(),
        search_path: std::env::var_os("PATH"),
        remote: settings.browser_ws.clone().filter(|u| !u.is_empty()),
        concurrency: settings.browser_concurrency,
        recycle_after: settings.browser_recycle_after,
        memory_cap: settings.browser_memory_mb * 1024 * 1024,
        policy: target_policy(settings),
        proxy_bind: settings.browser_proxy_listen,
        max_screenshot_bytes: settings.max_screenshot_bytes,
        max_html_bytes: settings.max_page_bytes,
        ..driftwatch_browser::BrowserConfig::default()
    })
}

/// The loops a process runs, which HTTP handlers wake and ask.
pub(crate) struct Loops {
    pub(crate) runner: Runner,
    pub(crate) worker: DeliveryWorker,
    pub(crate) judge: driftwatch_ai::Judge,
}

/// What every HTTP handler shares.
pub(crate) fn app_state(
    settings: &Settings,
    store: &Store,
    loops: Loops,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    draining: CancellationToken,
) -> AppState {
    let Loops { runner, worker, judge } = loops;
    let browser_available = runner.browsers().is_some_and(driftwatch_browser::Browsers::available);
    AppState {
        store: store.clone(),
        runner,
        worker,
        judge,
        clock,
        policy: target_policy(settings),
        limits: driftwatch_web::ApiLimits {
            min_interval_seconds: settings.min_interval_seconds,
            secret_rotation_overlap: settings.secret_rotation_overlap.into(),
            rate_limit_per_minute: settings.rate_limit_per_minute,
            mcp_max_sessions: settings.mcp_max_sessions,
            browser_available,
            ..driftwatch_web::ApiLimits::default()
        },
        limiter: Arc::new(driftwatch_web::RateLimiter::new(settings.rate_limit_per_minute)),
        ui: driftwatch_web::ui::UiSettings { public_url: settings.public_url.clone(), ..Default::default() },
        setup: Arc::new(driftwatch_web::ui::SetupCode::default()),
        throttle: Arc::new(driftwatch_web::ui::SignInThrottle::new(10, std::time::Duration::from_secs(900))),
        ops: driftwatch_web::Ops {
            metrics,
            metrics_token: settings.metrics_token.clone().filter(|t| !t.is_empty()),
            metrics_on_main: settings.metrics_listen.is_none(),
            draining,
        },
        keyring: None,
    }
}

/// Where the web server listens, and the first-run setup URL while no user exists.
pub(crate) struct Web {
    pub(crate) addr: SocketAddr,
    pub(crate) metrics_addr: Option<SocketAddr>,
    pub(crate) setup_url: Option<String>,
}

/// What one client may hold of the HTTP server.
fn server_limits(settings: &Settings) -> driftwatch_web::ServerLimits {
    driftwatch_web::ServerLimits {
        header_timeout: settings.header_timeout.into(),
        body_timeout: settings.body_timeout.into(),
        max_connections: settings.max_connections,
    }
}

/// Binds the listeners (and `/metrics`' own, when it has one) and serves `state` on them
/// until `shutdown`; issues a one-time setup code while no user exists.
pub(crate) async fn listen(
    settings: &Settings,
    state: AppState,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
) -> anyhow::Result<Web> {
    let mut metrics_addr = None;
    if let Some(listen) = &settings.metrics_listen {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("DRIFTWATCH_METRICS_LISTEN: listening on {listen}"))?;
        metrics_addr = Some(listener.local_addr()?);
        tasks.spawn(driftwatch_web::serve_metrics(listener, state.clone(), server_limits(settings), shutdown.clone()));
    }
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .with_context(|| format!("listening on {}", settings.listen))?;
    let addr = listener.local_addr()?;
    let (store, setup) = (state.store.clone(), Arc::clone(&state.setup));
    tasks.spawn(driftwatch_web::serve(listener, state, server_limits(settings), shutdown.clone()));
    tracing::info!(addr = %addr, backend = store.backend().as_str(), "listening");
    let mut setup_url = None;
    if !store.read(driftwatch_store::users::any_user).await? {
        let base = settings.public_url.clone().unwrap_or_else(|| format!("http://{addr}"));
        let url = format!("{}/setup?code={}", base.trim_end_matches('/'), setup.issue());
        // The code is a one-time secret for whoever runs the server; logged once so a service
        // manager's log shows it too.
        tracing::info!(setup_url = %url, "no user yet: open the setup URL to create the first account");
        setup_url = Some(url);
    }
    Ok(Web { addr, metrics_addr, setup_url })
}

/// A digest's summary through the account's language model (or the operator's), asked as a
/// summary without an intent, within the verdicts' budget and cache.
pub(crate) struct JudgeSummary {
    /// The judge that asks.
    pub(crate) judge: driftwatch_ai::Judge,
    /// How long one answer may take.
    pub(crate) timeout: std::time::Duration,
}

impl driftwatch_delivery::Summarize for JudgeSummary {
    fn summarize<'a>(
        &'a self,
        account_id: &'a str,
        title: &'a str,
        text: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send + 'a>> {
        Box::pin(async move {
            let ask = driftwatch_ai::Ask { intent: None, watch_name: title, url: "", unified: text };
            match self.judge.ask(account_id, &ask, self.timeout).await {
                Ok(driftwatch_ai::judge::Outcome::Answered(asked)) => {
                    Some(asked.answer.summary).filter(|s| !s.trim().is_empty())
                }
                Ok(other) => {
                    tracing::info!(account.id = %account_id, outcome = ?other, "a digest goes without a summary");
                    None
                }
                Err(e) => {
                    tracing::warn!(account.id = %account_id, error = %e, "a digest goes without a summary");
                    None
                }
            }
        })
    }
}
