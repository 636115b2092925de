//! One check of one watch.

use driftwatch_alert::{Noise, SnapshotPair, WatchRef, change_payload, is_alert};
use std::time::Duration;

use driftwatch_core::{EventType, IdKind, RunOutcome, WatchHealth, WatchOptions, hex, new_id};
use driftwatch_diff::DiffLimits;
use driftwatch_scrape::{ExtractError, Fetched, PageRequest, Rules, extract_with};
use driftwatch_store::checks::CheckResult;
use driftwatch_store::outbox::NewEvent;
use driftwatch_store::{Event, Run, Snapshot, StoreError, Watch, runs, snapshots, watches};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::runner::Runner;
use driftwatch_core::Backoff;

/// A page as fetched and read.
struct PageRead {
    http_status: Option<i32>,
    bytes: i64,
    validators: Option<(Option<String>, Option<String>)>,
    text: PageText,
}

/// The text of a page, or why there is none.
enum PageText {
    Text(String),
    NotModified,
    Failed { error: String, selector_missing: bool },
}

/// What comparing a page's text with the last snapshot found.
struct Compared {
    outcome: RunOutcome,
    /// Why there was no text to compare.
    error: Option<String>,
    /// Why a change raised no alert.
    note: Option<String>,
    /// The new snapshot (a baseline or a change).
    snapshot: Option<Snapshot>,
    /// The change's event, unless it was kept quiet.
    event: Option<NewEvent>,
    /// The error was the selector matching nothing.
    selector_missing: bool,
}

impl Compared {
    fn outcome(outcome: RunOutcome) -> Compared {
        Compared { outcome, error: None, note: None, snapshot: None, event: None, selector_missing: false }
    }
}

/// The run, and the watch's health after it.
struct Decided {
    run: Run,
    health: WatchHealth,
    consecutive_failures: i32,
    /// `check.failed`, `selector.missing` or `check.recovered` when the health changed.
    health_event: Option<NewEvent>,
    /// The health before, when it changed.
    health_changed_from: Option<WatchHealth>,
}

/// Why a check on demand did not run.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A check of this watch was under way and did not finish within its lease.
    #[error("a check of this watch is running and did not finish in time")]
    Busy,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runner {
    /// Checks the account's watch `watch_id` now and returns the run. `Ok(None)` when there is
    /// no such watch.
    ///
    /// When a check of the watch is already running (its first check right after it was
    /// created, say), this joins it: it waits for that check to be recorded and returns its run,
    /// which read the page after the request came. Should the running check end without a
    /// run (its node died), a new check runs once the lease is free. Only a check still running
    /// past its lease is [`CheckError::Busy`].
    pub async fn check_now(&self, account_id: &str, watch_id: &str) -> Result<Option<Run>, CheckError> {
        let mut recorded = self.on_recorded();
        let deadline = tokio::time::Instant::now() + self.lease_length().to_std().unwrap_or(Duration::from_secs(300));
        // Once a running check was seen: the newest run before it was recorded.
        let mut joined: Option<Option<String>> = None;
        let mut backoff = Duration::from_millis(20);
        loop {
            if let Some(before) = &joined {
                let id = watch_id.to_owned();
                let newest = self.store().read(move |c| runs::newest_run(c, &id)).await?;
                if let Some(run) = newest.filter(|r| Some(&r.id) != before.as_ref()) {
                    return Ok(Some(run));
                }
            }
            let owner = self.lease_owner();
            let now = self.now();
            let until = now + self.lease_length();
            let (account, id, lease) = (account_id.to_owned(), watch_id.to_owned(), owner.clone());
            let claimed = self.store().write(move |c| watches::claim_one(c, &account, &id, &lease, now, until)).await?;
            match claimed {
                None => return Ok(None),
                Some(Some(watch)) => {
                    // Without a stop signal the check always runs, so this returns.
                    if let Some(run) = self.check(watch, owner, None).await? {
                        return Ok(Some(run));
                    }
                }
                Some(None) if joined.is_none() => {
                    // Busy: the run to join is the first one newer than the newest run of now.
                    let id = watch_id.to_owned();
                    let newest = self.store().read(move |c| runs::newest_run(c, &id)).await?;
                    joined = Some(newest.map(|r| r.id));
                }
                Some(None) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(CheckError::Busy);
            }
            // Woken when this node records a check; another node's check is polled for, with
            // a growing pause.
            let _ = tokio::time::timeout(backoff, recorded.changed()).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// Checks a watch leased to `owner` and records the result; returns the run.
    ///
    /// read -> compare -> decide -> record. When `stop` is cancelled while the check still
    /// waits for its turn at the page's host (claimed, not started), the watch is given back
    /// unchecked and this returns `None`.
    pub(crate) async fn check(
        &self,
        watch: Watch,
        owner: String,
        stop: Option<&CancellationToken>,
    ) -> Result<Option<Run>, StoreError> {
        let started = self.now();
        let clock = std::time::Instant::now();
        let options: WatchOptions = watch.options();
        let needed = self.lease_for(&options);
        if needed > self.lease_length() {
            // Its own long timeout or a confirming refetch: hold the watch long enough that no
            // other node takes it up halfway.
            let (id, lease, until) = (watch.id.clone(), owner.clone(), started + needed);
            self.store().write(move |c| watches::extend_lease(c, &id, &lease, until)).await?;
        }
        let Some(page) = self.read(&watch, &options, true, stop).await else {
            let (id, lease) = (watch.id.clone(), owner.clone());
            self.store().write(move |c| watches::release(c, &id, &lease)).await?;
            tracing::info!(watch.id = %watch.id, "stopping: gave the watch back unchecked");
            return Ok(None);
        };
        let (http_status, bytes, validators) = (page.http_status, page.bytes, page.validators);
        let compared = self.compare(&watch, &options, page.text).await?;
        let run = Run {
            id: new_id(IdKind::Run),
            watch_id: watch.id.clone(),
            started_at: started,
            finished_at: self.now(),
            outcome: compared.outcome.as_str().to_owned(),
            http_status,
            duration_ms: clock.elapsed().as_millis() as i64,
            bytes,
            error: compared.error,
            note: compared.note,
            snapshot_id: compared.snapshot.as_ref().map(|s| s.id.clone()),
            event_id: compared.event.as_ref().map(|e| e.event.id.clone()),
        };
        let outcome = compared.outcome.as_str();
        let decided = self.decide(&watch, run, compared.selector_missing);
        let result = CheckResult {
            watch_id: watch.id.clone(),
            account_id: watch.account_id.clone(),
            lease_owner: owner,
            run: decided.run.clone(),
            snapshot: compared.snapshot,
            events: compared.event.into_iter().chain(decided.health_event).collect(),
            health: decided.health.as_str().to_owned(),
            validators,
            max_attempts: self.config().max_attempts,
            consecutive_failures: decided.consecutive_failures,
            next_run_at: self
                .backoff()
                .next_check(&watch.timing(), decided.run.finished_at.and_utc(), decided.consecutive_failures, &watch.id)
                .naive_utc(),
            watch_updated_at: watch.updated_at,
            now: decided.run.finished_at,
        };
        self.record(result, decided.health_changed_from).await?;
        self.config().metrics.check_finished(outcome, clock.elapsed());
        Ok(Some(decided.run))
    }

    /// Compares the page's text with the watch's last snapshot: a baseline, unchanged, or a
    /// change (with its new snapshot, and its event unless the noise rules or a confirming
    /// fetch keep it quiet); or the error that left no text to compare.
    async fn compare(&self, watch: &Watch, options: &WatchOptions, text: PageText) -> Result<Compared, StoreError> {
        let text = match text {
            // 304: the page is as it was, so is its text; nothing to extract or compare.
            PageText::NotModified => return Ok(Compared::outcome(RunOutcome::Unchanged)),
            PageText::Failed { error, selector_missing } => {
                return Ok(Compared { error: Some(error), selector_missing, ..Compared::outcome(RunOutcome::Failed) });
            }
            PageText::Text(text) => text,
        };
        let hash = hex(&Sha256::digest(text.as_bytes()));
        let watch_id = watch.id.clone();
        let previous = self.store().read(move |c| snapshots::latest_snapshot(c, &watch_id)).await?;
        let now = self.now();
        let snapshot = |content: String| Snapshot {
            id: new_id(IdKind::Snapshot),
            watch_id: watch.id.clone(),
            content_hash: hash.clone(),
            content,
            created_at: now,
        };
        let prev = match previous {
            // First check, or the first since the watch's settings changed.
            _ if watch.rebaseline && previous.as_ref().is_none_or(|p| p.content_hash != hash) => None,
            None => None,
            Some(prev) if prev.content_hash == hash => return Ok(Compared::outcome(RunOutcome::Unchanged)),
            Some(prev) => Some(prev),
        };
        let Some(prev) = prev else {
            return Ok(Compared { snapshot: Some(snapshot(text)), ..Compared::outcome(RunOutcome::Baseline) });
        };
        let current = snapshot(String::new());
        // Bounded in time and size (a payload goes to every endpoint), and off the async threads.
        let current_id = current.id.clone();
        let diffed = tokio::task::spawn_blocking(move || {
            let change =
                driftwatch_diff::diff_texts_within(&prev.content, &text, &prev.id, &current_id, DiffLimits::PAYLOAD);
            (change, prev, text)
        })
        .await;
        let Ok((change, prev, text)) = diffed else {
            return Ok(Compared {
                error: Some("comparing the text failed".into()),
                ..Compared::outcome(RunOutcome::Failed)
            });
        };
        let mut compared = Compared::outcome(RunOutcome::Changed);
        let quiet = self.quiet(watch, options, &change, &prev.content, &text).await?;
        if is_alert(&change) && quiet.is_none() {
            let event_id = new_id(IdKind::Event);
            let payload = change_payload(
                &event_id,
                WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
                &change,
                SnapshotPair { previous: &prev.id, current: &current.id },
                now.and_utc(),
            );
            let slack_body = driftwatch_alert::slack_message(&payload);
            let event = Event {
                id: event_id,
                account_id: watch.account_id.clone(),
                watch_id: Some(watch.id.clone()),
                endpoint_id: None,
                event_type: EventType::ChangeDetected.as_str().to_owned(),
                previous_snapshot_id: Some(prev.id.clone()),
                snapshot_id: Some(current.id.clone()),
                added: change.added as i32,
                removed: change.removed as i32,
                payload,
                created_at: now,
            };
            compared.event = Some(NewEvent { event, slack_body });
        }
        compared.note = quiet.map(|why| format!("no alert: {why}"));
        compared.snapshot = Some(Snapshot { content: text, ..current });
        Ok(compared)
    }

    /// Why a change should raise no alert, if it should not: the watch's noise rules say so,
    /// or a second fetch a little later does not show the same text.
    async fn quiet(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        change: &driftwatch_diff::TextChange,
        before: &str,
        after: &str,
    ) -> Result<Option<String>, StoreError> {
        let known = match options.noise.known_states.filter(|n| *n > 0) {
            Some(n) => {
                let (watch_id, hash) = (watch.id.clone(), hex(&Sha256::digest(after.as_bytes())));
                self.store().read(move |c| snapshots::is_recent_state(c, &watch_id, &hash, i64::from(n))).await?
            }
            None => false,
        };
        // Rules were validated when saved; should they no longer compile, alert.
        if let Ok(Err(quiet)) = Noise::new(&options.noise).map(|noise| noise.decide(change, before, after, known)) {
            return Ok(Some(quiet.to_string()));
        }
        if let Some(seconds) = options.noise.confirm_after_seconds.filter(|_| is_alert(change)) {
            // Ask again a little later: alert only if the page agrees.
            tokio::time::sleep(Duration::from_secs(u64::from(seconds.clamp(1, 60)))).await;
            let again = self.read(watch, options, false, None).await.map(|page| page.text);
            if !matches!(again, Some(PageText::Text(again)) if again == after) {
                return Ok(Some("a second fetch did not confirm the change".into()));
            }
        }
        Ok(None)
    }

    /// How failing watches back off.
    fn backoff(&self) -> Backoff {
        Backoff { threshold: self.config().failure_threshold, cap: self.config().failing_backoff_max }
    }

    /// The watch's health after `run`, and the event announcing a change of it.
    fn decide(&self, watch: &Watch, run: Run, selector_missing: bool) -> Decided {
        let failed = run.error.is_some();
        let consecutive_failures = if failed { watch.consecutive_failures + 1 } else { 0 };
        let before = watch.health.parse().unwrap_or(WatchHealth::Ok);
        let health = match (failed, selector_missing) {
            (false, _) => WatchHealth::Ok,
            _ if consecutive_failures < self.config().failure_threshold => before,
            (true, true) => WatchHealth::SelectorMissing,
            (true, false) => WatchHealth::Failing,
        };
        let changed = health != before;
        let health_event =
            changed.then(|| self.health_event(watch, &run, health, consecutive_failures, run.finished_at));
        Decided { run, health, consecutive_failures, health_event, health_changed_from: changed.then_some(before) }
    }

    /// Writes the check (the watch's new state, the snapshot, the run, the events and their
    /// deliveries) under the watch's lease, all or nothing (a savepoint in a batch of checks
    /// committed together), then tells who waits.
    async fn record(&self, result: CheckResult, health_changed_from: Option<WatchHealth>) -> Result<(), StoreError> {
        let (watch_id, health) = (result.watch_id.clone(), result.health.clone());
        let (outcome, error, ms) = (result.run.outcome.clone(), result.run.error.clone(), result.run.duration_ms);
        let queued = self.write_check(result).await;
        self.recorded();
        let queued = queued?;
        match error.as_deref() {
            Some(error) => tracing::warn!(watch.id = %watch_id, error, "check failed"),
            None => tracing::info!(watch.id = %watch_id, %outcome, queued, ms, "checked"),
        }
        if let Some(before) = health_changed_from {
            tracing::warn!(watch.id = %watch_id, from = %before, to = %health, "watch health changed");
        }
        if queued > 0 {
            self.deliveries_queued();
        }
        Ok(())
    }

    /// Fetches the watch's page (conditionally when `conditional`) and reads its text through
    /// the watch's extraction options and line rules. `None` when `stop` was cancelled before
    /// the host's turn came (nothing was fetched).
    async fn read(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        conditional: bool,
        stop: Option<&CancellationToken>,
    ) -> Option<PageRead> {
        let request = PageRequest {
            spec: Some(&options.fetch),
            etag: watch.etag.as_deref().filter(|_| conditional),
            last_modified: watch.last_modified.as_deref().filter(|_| conditional),
        };
        let host = crate::fair::host_key(&watch.url);
        let fetched = {
            let turn = self.hosts().enter(&host);
            let _turn = match stop {
                Some(stop) => tokio::select! {
                    biased;
                    () = stop.cancelled() => return None,
                    turn = turn => turn,
                },
                None => turn.await,
            };
            self.fetcher().fetch_with(&watch.url, &request).await
        };
        Some(match fetched {
            Ok(Fetched::NotModified) => {
                PageRead { http_status: Some(304), bytes: 0, validators: None, text: PageText::NotModified }
            }
            Ok(Fetched::Page(page)) => {
                let http_status = Some(i32::from(page.status));
                let (bytes, validators) =
                    (page.body.len() as i64, Some((page.etag.clone(), page.last_modified.clone())));
                // Parsing is CPU work on whatever a page sends: off the async threads, so a
                // pathological page slows its own check, not every request and check.
                let (selector, options, cap) = (watch.selector.clone(), options.clone(), self.config().max_text_bytes);
                let text = tokio::task::spawn_blocking(move || page_text(&page, selector.as_deref(), &options, cap))
                    .await
                    .unwrap_or_else(|e| Err((format!("reading the page failed: {e}"), false)));
                PageRead {
                    http_status,
                    bytes,
                    validators,
                    text: match text {
                        Ok(text) => PageText::Text(text),
                        Err((error, selector_missing)) => PageText::Failed { error, selector_missing },
                    },
                }
            }
            Err(e) => PageRead {
                http_status: e.status().map(i32::from),
                bytes: 0,
                validators: None,
                text: PageText::Failed { error: e.to_string(), selector_missing: false },
            },
        })
    }

    /// The event announcing that a watch's health changed to `health`.
    fn health_event(
        &self,
        watch: &Watch,
        run: &Run,
        health: WatchHealth,
        consecutive_failures: i32,
        at: chrono::NaiveDateTime,
    ) -> NewEvent {
        let event_type = match health {
            WatchHealth::Ok => EventType::CheckRecovered,
            WatchHealth::Failing => EventType::CheckFailed,
            WatchHealth::SelectorMissing => EventType::SelectorMissing,
        };
        let event_id = new_id(IdKind::Event);
        let payload = driftwatch_alert::check_payload(
            event_type,
            &event_id,
            WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
            driftwatch_alert::CheckRef {
                run_id: &run.id,
                http_status: run.http_status,
                error: run.error.as_deref(),
                consecutive_failures,
            },
            at.and_utc(),
        );
        NewEvent {
            slack_body: driftwatch_alert::slack_message(&payload),
            event: Event::about_watch(event_id, watch, event_type, payload, at),
        }
    }
}

impl Runner {
    /// Fetches `url` now and returns the text a watch with `selector` and `options` would
    /// compare, saving nothing (the preview of a watch before it is created or changed).
    pub async fn preview(
        &self,
        url: &str,
        selector: Option<&str>,
        options: &driftwatch_core::WatchOptions,
    ) -> Result<String, driftwatch_scrape::ReadError> {
        driftwatch_scrape::read_page(self.fetcher(), url, selector, options).await
    }
}

/// A page's text as the watch reads it: extracted, through its line rules, cut at `max_bytes`
/// (at a line end, with a line saying so). The error says why there is none, and whether the
/// selector matched nothing.
fn page_text(
    page: &driftwatch_scrape::Page,
    selector: Option<&str>,
    options: &WatchOptions,
    max_bytes: usize,
) -> Result<String, (String, bool)> {
    let text = extract_with(page, selector, &options.extract)
        .map_err(|e| (e.to_string(), matches!(e, ExtractError::SelectorMissing(_))))?;
    let rules = Rules::new(&options.rules).map_err(|e| (e.to_string(), false))?;
    let mut text = rules.apply(&text);
    if text.trim().is_empty() {
        return Err(("nothing is left after the line rules".to_owned(), false));
    }
    if text.len() > max_bytes {
        let mut at = max_bytes;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let at = text[..at].rfind('\n').map_or(at, |nl| nl + 1);
        text.truncate(at);
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[driftwatch: the text was cut at {max_bytes} bytes]\n"));
    }
    Ok(text)
}
