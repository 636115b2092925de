//! The loop that claims due watches and checks them concurrently.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::{NaiveDateTime, TimeDelta};
use driftwatch_core::{Clock, Engine, IdKind, new_id};
use driftwatch_scrape::Fetcher;
use driftwatch_store::checks::{self, CheckResult};
use driftwatch_store::{BatchWriter, Store, StoreResult, watches};

use crate::fair::{Fairness, Round, host_key};
use crate::reader::PageReader;
use driftwatch_metrics::Metrics;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Settings of the runner.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Checks in flight at once.
    pub concurrency: usize,
    /// Most watches claimed per query.
    pub batch_size: i64,
    /// Longest sleep between looks for due watches (picks up watches added on other nodes).
    pub poll_interval: Duration,
    /// Attempt budget of the deliveries a change queues.
    pub max_attempts: i32,
    /// Failed checks in a row that make a watch `failing` (and raise `check.failed`); from
    /// then on its checks back off.
    pub failure_threshold: i32,
    /// Longest wait between two checks of a failing watch (the back-off doubles up to this).
    pub failing_backoff_max: Duration,
    /// Requests in flight to one host at once; due watches beyond it are deferred rather than
    /// wait in a check slot.
    pub per_host_concurrency: usize,
    /// Checks of one account in flight at once; due watches beyond it are deferred, so one
    /// account's slow pages leave slots to the others.
    pub per_account_concurrency: usize,
    /// Least time between the starts of two requests to one host.
    pub per_host_gap: Duration,
    /// A name for this node, in lease owners and logs.
    pub node_id: String,
    /// Bytes of a page's extracted text kept; the rest is cut, and the text ends with a line
    /// saying so (snapshots, diffs and payloads all see that line).
    pub max_text_bytes: usize,
    /// Renders in flight at once in the node's browser; browser checks beyond twice this are
    /// deferred rather than hold check slots that HTTP watches need.
    pub browser_concurrency: usize,
    /// Where finished checks are counted.
    pub metrics: Arc<Metrics>,
    /// When set, AI is on: a change of a watch with `options.ai` is recorded undelivered with a
    /// pending verdict, and goes out when a model judges it or, at the latest, this long after.
    /// `None` turns AI off: such changes are delivered at once, as without `options.ai`.
    pub ai_deadline: Option<Duration>,
    /// Opens what accounts keep sealed that a read needs: proxies' credentials, the secrets
    /// steps type, kept sessions. `None`: such watches fail, saying so.
    pub keyring: Option<driftwatch_core::Keyring>,
    /// Let watches use proxies on private, loopback or link-local addresses
    /// (`DRIFTWATCH_ALLOW_PRIVATE_PROXIES`); the operator's own proxy is always allowed.
    pub allow_private_proxies: bool,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            concurrency: 32,
            batch_size: 100,
            poll_interval: Duration::from_secs(5),
            max_attempts: 5,
            failure_threshold: 3,
            failing_backoff_max: Duration::from_secs(86_400),
            per_host_concurrency: 4,
            per_account_concurrency: 24,
            per_host_gap: Duration::from_millis(100),
            node_id: "node".into(),
            max_text_bytes: 1024 * 1024,
            browser_concurrency: 2,
            metrics: Arc::new(Metrics::default()),
            ai_deadline: None,
            keyring: None,
            allow_private_proxies: false,
        }
    }
}

/// Claims due watches and checks them. Cheap to clone.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    /// Reads the pages (and holds the config, the clock and the node's browser).
    reader: PageReader,
    wake: Notify,
    slots: Arc<Semaphore>,
    fair: Arc<Fairness>,
    on_queued: Box<dyn Fn() + Send + Sync>,
    /// Checks waiting to be written by the record writers (started with the first check).
    records: OnceLock<BatchWriter<CheckResult, StoreResult<usize>>>,
    /// Bumped after each check this runner records, so a check on demand waiting for a
    /// running check of the same watch wakes when it is recorded.
    recorded: tokio::sync::watch::Sender<u64>,
}

impl Runner {
    /// A runner; `on_queued` is called when a check queued deliveries (to wake the worker).
    pub fn new(
        store: Store,
        fetcher: Fetcher,
        clock: Arc<dyn Clock>,
        config: RunnerConfig,
        on_queued: impl Fn() + Send + Sync + 'static,
    ) -> Runner {
        let slots = Arc::new(Semaphore::new(config.concurrency.max(1)));
        let fair = Arc::new(Fairness::new(
            config.per_host_concurrency,
            config.per_account_concurrency,
            config.browser_concurrency * 2,
        ));
        Runner {
            inner: Arc::new(Inner {
                store,
                reader: PageReader::new(fetcher, clock, config),
                wake: Notify::new(),
                slots,
                fair,
                on_queued: Box::new(on_queued),
                recorded: tokio::sync::watch::Sender::new(0),
                records: OnceLock::new(),
            }),
        }
    }

    /// The runner with a browser for the watches that render. Call before cloning it.
    pub fn with_browsers(mut self, browsers: driftwatch_browser::Browsers) -> Runner {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.reader.set_browsers(browsers),
            None => tracing::error!("with_browsers called on a runner already shared; no browser is used"),
        }
        self
    }

    /// The node's browser, when it has one.
    pub fn browsers(&self) -> Option<&driftwatch_browser::Browsers> {
        self.inner.reader.browsers()
    }

    /// Why this node cannot serve every watch, when it cannot: no browser, and active watches
    /// that render in it or may (`engine` `browser` or `auto`). Said at start-up and by
    /// `/readyz`; `None` when a browser is available or no watch needs one.
    pub async fn browser_shortfall(&self) -> StoreResult<Option<String>> {
        if self.browsers().is_some_and(driftwatch_browser::Browsers::available) {
            return Ok(None);
        }
        let watches = self.store().read(driftwatch_store::stats::rendering_watches).await?;
        let reason = self.browsers().map_or_else(|| "no browser on this node".to_owned(), |b| b.unavailable_reason());
        Ok((watches > 0).then(|| {
            format!(
                "{} with engine browser or auto, and {reason}",
                driftwatch_core::text::count(watches, "active watch")
            )
        }))
    }

    /// Asks the loop to look for due watches now (a watch was added or changed).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// Writes a check's result, batched with whatever other checks finished meanwhile (one
    /// transaction, one commit, a savepoint each); returns once it is committed, with the
    /// number of deliveries it queued.
    pub(crate) async fn write_check(&self, result: CheckResult) -> StoreResult<usize> {
        let writer = self.inner.records.get_or_init(|| {
            let render = self.inner.store.render();
            BatchWriter::spawn(&self.inner.store, RECORD_BATCH, move |c, results: &[checks::CheckResult]| {
                checks::record_all(c, &*render, results)
            })
        });
        writer.submit(result).await?
    }

    /// Signals that a check was recorded.
    pub(crate) fn recorded(&self) {
        self.inner.recorded.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Waits for checks recorded by this runner (a counter that moves on each; pushers of
    /// events, such as the MCP server's, wake on it).
    pub fn on_recorded(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.recorded.subscribe()
    }

    pub(crate) fn store(&self) -> &Store {
        &self.inner.store
    }

    /// What reads the pages.
    pub(crate) fn reader(&self) -> &PageReader {
        &self.inner.reader
    }

    /// Bytes of a page's text a snapshot keeps (what an import cuts imported history to).
    pub fn max_text_bytes(&self) -> usize {
        self.config().max_text_bytes
    }

    pub(crate) fn config(&self) -> &RunnerConfig {
        self.inner.reader.config()
    }

    pub(crate) fn now(&self) -> NaiveDateTime {
        self.inner.reader.now()
    }

    pub(crate) fn deliveries_queued(&self) {
        (self.inner.on_queued)();
    }

    pub(crate) fn lease_owner(&self) -> String {
        format!("{}:{}", self.config().node_id, new_id(IdKind::Run))
    }

    /// How long a check may hold its watch: a few fetch timeouts (it may queue behind other
    /// checks of the same host) and a margin for the write.
    pub(crate) fn lease_length(&self) -> TimeDelta {
        lease_needed(self.reader().fetcher().options().timeout, None, None)
    }

    /// How long a check of a watch with these options may take; more than [`Self::lease_length`]
    /// when the watch has its own longer timeout or confirms changes by fetching again.
    pub(crate) fn lease_for(&self, options: &driftwatch_core::WatchOptions) -> TimeDelta {
        let own = options.fetch.timeout_seconds.map(|s| Duration::from_secs(u64::from(s)));
        let confirm = options.noise.confirm_after_seconds.map(|s| Duration::from_secs(u64::from(s)));
        lease_needed(self.reader().fetcher().options().timeout, own, confirm)
    }

    /// Runs until `shutdown` is cancelled, then waits for checks in flight to be recorded.
    pub async fn run(self, shutdown: CancellationToken) {
        let inner = &self.inner;
        let tracker = TaskTracker::new();
        tracing::info!(node = %self.config().node_id, concurrency = self.config().concurrency, "schedule runner started");
        while !shutdown.is_cancelled() {
            let free = inner.slots.available_permits() as i64;
            if free > 0 {
                let wanted = free.min(self.config().batch_size);
                let owner = self.lease_owner();
                let now = self.now();
                let until = now + self.lease_length();
                let lease = owner.clone();
                match inner.store.write(move |c| watches::claim_due(c, &lease, now, until, wanted)).await {
                    Ok(due) => {
                        let claimed = due.len() as i64;
                        let mut round = Round::default();
                        let mut deferred = Vec::new();
                        for watch in due {
                            // Parsed once per check: the check takes them from here.
                            let options = watch.options();
                            let renders = watch.engine_in_use(&options, now) == Engine::Browser;
                            let started =
                                match inner.fair.admit(&host_key(&watch.url), &watch.account_id, renders, &mut round) {
                                    Ok(started) => started,
                                    Err(wait) => {
                                        let wait = TimeDelta::from_std(wait).unwrap_or(TimeDelta::minutes(10));
                                        deferred.push((watch.id, now + wait));
                                        continue;
                                    }
                                };
                            let Ok(permit) = Arc::clone(&inner.slots).acquire_owned().await else {
                                break;
                            };
                            let runner = self.clone();
                            let owner = owner.clone();
                            let stop = shutdown.clone();
                            tracker.spawn(async move {
                                let id = watch.id.clone();
                                if let Err(e) = runner.check(watch, options, owner, Some(&stop)).await {
                                    tracing::error!(watch.id = %id, error = %e, "recording a check failed");
                                }
                                drop((started, permit));
                                runner.wake();
                            });
                        }
                        if !deferred.is_empty() {
                            let count = deferred.len();
                            if let Err(e) = inner.store.write(move |c| watches::defer(c, &owner, &deferred)).await {
                                tracing::error!(error = %e, "deferring watches failed; their leases will expire");
                            }
                            tracing::debug!(deferred = count, "watches deferred: their host or account is busy");
                        }
                        if claimed == wanted {
                            continue;
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "claiming due watches failed"),
                }
            }
            // All slots busy: each finished check wakes the loop, so no query is needed.
            let wait =
                if inner.slots.available_permits() == 0 { self.config().poll_interval } else { self.idle_wait().await };
            tokio::select! {
                () = inner.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = shutdown.cancelled() => {}
            }
        }
        tracker.close();
        tracker.wait().await;
        tracing::info!("schedule runner stopped");
    }

    async fn idle_wait(&self) -> Duration {
        let poll = self.config().poll_interval;
        let now = self.now();
        let next = self.inner.store.read(move |c| watches::next_wake(c, now)).await.ok().flatten();
        let until_next = next.map_or(poll, |at| (at - now).to_std().unwrap_or(Duration::ZERO));
        until_next.min(poll).max(Duration::from_millis(5))
    }
}

/// Most checks written in one transaction.
const RECORD_BATCH: usize = 64;

/// A check's worst case: queued behind four fetches of the same host (global timeout), its own
/// fetch, with confirmation a wait and a second fetch, and a minute for the write.
fn lease_needed(global: Duration, own: Option<Duration>, confirm: Option<Duration>) -> TimeDelta {
    let fetch = own.unwrap_or(global);
    let total = global * 4 + fetch + confirm.map_or(Duration::ZERO, |wait| wait + fetch) + Duration::from_secs(60);
    TimeDelta::from_std(total).unwrap_or(TimeDelta::minutes(30))
}

#[cfg(test)]
mod lease_tests {
    use super::*;

    #[test]
    fn a_slow_confirmed_watch_needs_a_longer_lease() {
        let global = Duration::from_secs(30);
        assert_eq!(lease_needed(global, None, None), TimeDelta::seconds(4 * 30 + 30 + 60));
        let slow = lease_needed(global, Some(Duration::from_secs(300)), Some(Duration::from_secs(60)));
        assert_eq!(slow, TimeDelta::seconds(4 * 30 + 300 + 60 + 300 + 60));
        assert!(slow > lease_needed(global, None, None));
    }
}
