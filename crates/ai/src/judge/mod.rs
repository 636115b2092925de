//! The verdict loop: claims changes waiting for a model's verdict, asks the model (or the
//! cache), and decides each: deliver it with `data.ai`, keep it undelivered (not important),
//! retry with backoff, or, past the deadline, deliver it without a verdict (or hold it).
//!
//! It runs beside the delivery worker, never inside a check: a model taking a minute holds
//! one of this loop's slots, not a check's. Every step is durable: a pending verdict is a row,
//! claimed under a lease, decided in the transaction that queues its deliveries.

use std::sync::Arc;
use std::time::Duration;

use chrono::{NaiveDateTime, TimeDelta};
use driftwatch_core::{Clock, IdKind, Keyring, new_id};
use driftwatch_metrics::Metrics;
use driftwatch_store::verdicts::{self, Claimed};
use driftwatch_store::{Store, StoreError};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::{ClientOptions, ModelConfig};

mod ask;
mod decide;

pub use ask::{Asked, Outcome};

/// The model the operator configured, for every account without its own.
#[derive(Debug, Clone)]
pub struct OperatorModel {
    /// Its base URL, allowed even when loopback or private.
    pub base_url: url::Url,
    /// Its name.
    pub model: String,
    /// Its key.
    pub api_key: Option<String>,
}

/// How the verdict loop behaves.
#[derive(Debug, Clone)]
pub struct JudgeConfig {
    /// The operator's model; accounts may set their own.
    pub operator: Option<OperatorModel>,
    /// AI on. Off, changes still waiting for a verdict (from before it was turned off) go out
    /// without one.
    pub enabled: bool,
    /// Model calls in flight at once on this node.
    pub concurrency: usize,
    /// Longest one verdict may take (all its calls).
    pub call_timeout: Duration,
    /// How long a change waits for a verdict before it goes out without one.
    pub deadline: Duration,
    /// Tokens an account may spend a UTC day on the operator's model (0: no limit).
    pub daily_tokens: u64,
    /// The first wait before a failed call is tried again (doubling up to `retry_max`).
    pub retry_first: Duration,
    /// The longest wait between two tries.
    pub retry_max: Duration,
    /// Longest sleep between looks for due verdicts (picks up other nodes' changes).
    pub poll_interval: Duration,
    /// The client's limits and the address guard for accounts' own base URLs.
    pub client: ClientOptions,
    /// This node's name, in lease owners and logs.
    pub node_id: String,
    /// Where calls and verdicts are counted.
    pub metrics: Arc<Metrics>,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            operator: None,
            enabled: true,
            concurrency: 4,
            call_timeout: Duration::from_secs(120),
            deadline: Duration::from_secs(600),
            daily_tokens: 1_000_000,
            retry_first: Duration::from_secs(2),
            retry_max: Duration::from_secs(30),
            poll_interval: Duration::from_secs(5),
            client: ClientOptions::default(),
            node_id: "node".into(),
            metrics: Arc::new(Metrics::default()),
        }
    }
}

/// Runs verdicts. Cheap to clone.
#[derive(Clone)]
pub struct Judge {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    clock: Arc<dyn Clock>,
    keyring: Option<Keyring>,
    config: JudgeConfig,
    wake: Notify,
    slots: Arc<Semaphore>,
    on_queued: Arc<dyn Fn() + Send + Sync>,
    /// Model clients by server, model and key ([`Judge::client`]).
    clients: std::sync::Mutex<std::collections::HashMap<String, crate::Client>>,
}

impl Judge {
    /// A loop over `store`; `on_queued` is called when a decision queued deliveries (the
    /// delivery worker's wake). `keyring` opens accounts' sealed keys.
    pub fn new(
        store: Store,
        clock: Arc<dyn Clock>,
        keyring: Option<Keyring>,
        config: JudgeConfig,
        on_queued: Arc<dyn Fn() + Send + Sync>,
    ) -> Judge {
        let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
        let clients = std::sync::Mutex::default();
        Judge {
            inner: Arc::new(Inner { store, clock, keyring, config, wake: Notify::new(), slots, on_queued, clients }),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &JudgeConfig {
        &self.inner.config
    }

    /// The model `account_id` is asked through now: its own when it set one, else the
    /// operator's; `Err` says why there is none (or why the account's cannot be used).
    pub async fn model_of(&self, account_id: &str) -> Result<Result<ModelConfig, String>, StoreError> {
        let account = account_id.to_owned();
        let own = self.inner.store.read(move |c| verdicts::account_model(c, &account)).await?;
        let inner = &self.inner;
        Ok(model_for(inner.config.operator.as_ref(), &own, inner.keyring.as_ref(), inner.config.daily_tokens)
            .map(|(config, _)| config))
    }

    /// Asks the loop to look for due verdicts now (a check recorded one).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    fn now(&self) -> NaiveDateTime {
        self.inner.clock.now().naive_utc()
    }

    /// Runs until `shutdown` is cancelled, then waits for the calls in flight to be decided.
    pub async fn run(self, shutdown: CancellationToken) {
        let tracker = TaskTracker::new();
        let concurrency = self.inner.config.concurrency.max(1);
        tracing::info!(node = %self.inner.config.node_id, concurrency, "verdict loop started");
        while !shutdown.is_cancelled() {
            let free = self.inner.slots.available_permits();
            // Every slot busy (a slow model): nothing to claim until one frees up, and its task
            // wakes the loop then. Checks' wakes meanwhile cost a loop turn, not a query.
            let wait = if free == 0 {
                self.inner.config.poll_interval
            } else {
                match self.claim_and_start(free as i64, &tracker, &shutdown).await {
                    Ok(claimed) if claimed == free => continue,
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "claiming verdicts failed"),
                }
                self.idle_wait().await
            };
            tokio::select! {
                () = self.inner.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => {}
            }
        }
        tracker.close();
        tracker.wait().await;
        tracing::info!("verdict loop stopped");
    }

    /// Until the next verdict falls due (or a lease expires), at most the poll interval.
    async fn idle_wait(&self) -> Duration {
        let poll = self.inner.config.poll_interval;
        match self.inner.store.read(verdicts::next_wake).await {
            // At least a tenth of a second: what was due was just claimed, so a due time in the
            // past is a race with another node, not work to spin on.
            Ok(Some(at)) => {
                (at - self.now()).to_std().unwrap_or(Duration::ZERO).clamp(Duration::from_millis(100), poll)
            }
            Ok(None) => poll,
            Err(e) => {
                tracing::warn!(error = %e, "reading the next verdict's time failed");
                poll
            }
        }
    }

    /// Claims up to `wanted` due verdicts and starts each in a slot; returns how many.
    async fn claim_and_start(
        &self,
        wanted: i64,
        tracker: &TaskTracker,
        shutdown: &CancellationToken,
    ) -> Result<usize, StoreError> {
        let owner = format!("{}:{}", self.inner.config.node_id, new_id(IdKind::Event));
        let now = self.now();
        // Long enough for the call and its decision; a node that dies is replaced when it expires.
        let lease = self.inner.config.call_timeout + Duration::from_secs(10);
        let until = now + TimeDelta::from_std(lease).unwrap_or(TimeDelta::minutes(3));
        let claimer = owner.clone();
        let jobs = self.inner.store.write(move |c| verdicts::claim_due(c, &claimer, now, until, wanted)).await?;
        let claimed = jobs.len();
        for job in jobs {
            let Ok(permit) = Arc::clone(&self.inner.slots).try_acquire_owned() else { break };
            let (judge, owner, stop) = (self.clone(), owner.clone(), shutdown.clone());
            tracker.spawn(async move {
                judge.run_one(job, &owner, &stop).await;
                drop(permit);
                // A slot is free: there may be more due.
                judge.wake();
            });
        }
        Ok(claimed)
    }

    /// Decides one claimed verdict, or gives it back to be tried later.
    async fn run_one(&self, job: Claimed, owner: &str, stop: &CancellationToken) {
        let event_id = job.verdict.event_id.clone();
        let result = tokio::select! {
            result = self.decide_one(job, owner) => result,
            // Stopping: given back, so another node (or the next start) asks again at once.
            () = stop.cancelled() => {
                let (id, lease) = (event_id.clone(), owner.to_owned());
                if let Err(e) = self.inner.store.write(move |c| verdicts::give_back(c, &id, &lease)).await {
                    tracing::warn!(event.id = %event_id, error = %e, "giving a verdict back failed; its lease will expire");
                }
                return;
            }
        };
        if let Err(e) = result {
            tracing::error!(event.id = %event_id, error = %e, "deciding a verdict failed");
        }
    }
}

/// The UTC day of `at`, as usage is counted (`YYYY-MM-DD`).
pub fn day_of(at: NaiveDateTime) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// The model `account` uses: its own when it set one (not trusted: the address guard applies),
/// else the operator's (trusted); with the daily token budget that applies (`None`: no limit).
fn model_for(
    operator: Option<&OperatorModel>,
    own: &verdicts::AccountModel,
    keyring: Option<&Keyring>,
    daily_tokens: u64,
) -> Result<(ModelConfig, Option<u64>), String> {
    if let (Some(base), Some(model)) = (own.base_url.as_deref(), own.model.as_deref()) {
        let base_url = url::Url::parse(base).map_err(|e| format!("the account's model URL is not valid: {e}"))?;
        let api_key = match (own.api_key.as_deref(), keyring) {
            (Some(sealed), Some(keyring)) if driftwatch_core::is_sealed(sealed) => Some(
                keyring
                    .open(sealed)
                    .map_err(|_| "the account's model key cannot be opened with this server's key".to_owned())?,
            ),
            (Some(plain), _) => Some(plain.to_owned()),
            (None, _) => None,
        };
        let budget = own.daily_tokens.and_then(|t| u64::try_from(t).ok()).filter(|t| *t > 0);
        return Ok((ModelConfig { base_url, model: model.to_owned(), api_key, trusted: false }, budget));
    }
    let Some(operator) = operator else {
        return Err(
            "no model is configured: set one on the Account page (or the operator sets DRIFTWATCH_LLM_BASE_URL and DRIFTWATCH_LLM_MODEL)".into()
        );
    };
    Ok((
        ModelConfig {
            base_url: operator.base_url.clone(),
            model: operator.model.clone(),
            api_key: operator.api_key.clone(),
            trusted: true,
        },
        (daily_tokens > 0).then_some(daily_tokens),
    ))
}
