//! One check of one watch.

use driftwatch_alert::{Noise, SnapshotPair, WatchRef, change_payload_rendered, is_alert};
use std::time::Duration;

use driftwatch_core::{Compare, Engine, EventType, IdKind, RunOutcome, WatchHealth, WatchOptions, hex, new_id};
use driftwatch_diff::DiffLimits;
use driftwatch_scrape::{ExtractError, Fetched, PageRequest, Rules, extract_with};
use driftwatch_store::checks::CheckResult;
use driftwatch_store::outbox::NewEvent;
use driftwatch_store::screenshots::{self, StoredScreenshot};
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
    /// What loaded it: `http` or `browser`.
    engine: &'static str,
    /// The browser's screenshot, when the watch keeps one.
    screenshot: Option<driftwatch_browser::Screenshot>,
    /// An `auto` watch's new memory of needing the browser.
    browser_since: Option<Option<chrono::NaiveDateTime>>,
    /// Worth saying about the read, though it did not fail it.
    note: Option<String>,
    /// Over HTTP: the page looks like a shell its scripts fill in (the selector found
    /// nothing, or scripts and almost no text).
    shell: bool,
}

impl PageRead {
    fn failed(engine: &'static str, http_status: Option<i32>, error: String, kind: &'static str) -> PageRead {
        PageRead {
            http_status,
            bytes: 0,
            validators: None,
            text: PageText::Failed { error, kind },
            engine,
            screenshot: None,
            browser_since: None,
            note: None,
            shell: false,
        }
    }
}

/// The text of a page, or why there is none.
enum PageText {
    Text(String),
    NotModified,
    /// `kind` is the run's `error_kind` (`selector_missing`, `browser`, `timeout`...).
    Failed {
        error: String,
        kind: &'static str,
    },
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
    /// The kind of error.
    error_kind: Option<&'static str>,
    /// The new snapshot's screenshot.
    screenshot: Option<StoredScreenshot>,
}

impl Compared {
    fn outcome(outcome: RunOutcome) -> Compared {
        Compared { outcome, error: None, note: None, snapshot: None, event: None, error_kind: None, screenshot: None }
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
        let (engine, browser_since, read_note) = (page.engine, page.browser_since, page.note);
        let mut compared = self.compare(&watch, &options, page.text, page.screenshot, engine).await?;
        compared.note = match (compared.note, read_note) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
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
            engine: Some(engine.to_owned()),
            error_kind: compared.error_kind.map(str::to_owned),
        };
        let outcome = compared.outcome.as_str();
        let decided = self.decide(&watch, run, compared.error_kind == Some("selector_missing"));
        let result = CheckResult {
            watch_id: watch.id.clone(),
            account_id: watch.account_id.clone(),
            lease_owner: owner,
            run: decided.run.clone(),
            snapshot: compared.snapshot,
            screenshot: compared.screenshot,
            browser_since,
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

    /// Compares the page's text (and, when the watch compares them, its screenshot) with the
    /// watch's last snapshot: a baseline, unchanged, or a change (with its new snapshot, and
    /// its event unless the noise rules or a confirming fetch keep it quiet); or the error
    /// that left no text to compare.
    async fn compare(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        text: PageText,
        shot: Option<driftwatch_browser::Screenshot>,
        engine: &'static str,
    ) -> Result<Compared, StoreError> {
        let text = match text {
            // 304: the page is as it was, so is its text; nothing to extract or compare.
            PageText::NotModified => return Ok(Compared::outcome(RunOutcome::Unchanged)),
            PageText::Failed { error, kind } => {
                return Ok(Compared {
                    error: Some(error),
                    error_kind: Some(kind),
                    ..Compared::outcome(RunOutcome::Failed)
                });
            }
            PageText::Text(text) => text,
        };
        let hash = hex(&Sha256::digest(text.as_bytes()));
        let watch_id = watch.id.clone();
        let previous = self.store().read(move |c| snapshots::latest_snapshot(c, &watch_id)).await?;
        let now = self.now();
        let shot = shot.map(|s| StoredScreenshot {
            hash: hex(&Sha256::digest(&s.bytes)),
            format: s.format.to_owned(),
            width: i32::try_from(s.width).unwrap_or(i32::MAX),
            height: i32::try_from(s.height).unwrap_or(i32::MAX),
            bytes: s.bytes,
            created_at: now,
        });
        let shot_hash = shot.as_ref().map(|s| s.hash.clone());
        let snapshot = |content: String, visual: Option<f64>| Snapshot {
            id: new_id(IdKind::Snapshot),
            watch_id: watch.id.clone(),
            content_hash: hash.clone(),
            content,
            created_at: now,
            screenshot_hash: shot_hash.clone(),
            visual_change_percent: visual,
        };
        let visual = options.noise.compare.visual();
        let min_visual =
            options.noise.min_visual_change_percent.unwrap_or(driftwatch_core::DEFAULT_MIN_VISUAL_CHANGE_PERCENT);
        let prev = match previous {
            // First check, or the first since the watch's settings changed.
            _ if watch.rebaseline && previous.as_ref().is_none_or(|p| p.content_hash != hash) => None,
            None => None,
            Some(prev) if prev.content_hash == hash => {
                // The same text; the page may still look different.
                let Some(shot) = shot.filter(|_| visual) else { return Ok(Compared::outcome(RunOutcome::Unchanged)) };
                let Some(percent) = self.visual_change(&prev, &shot, options).await? else {
                    // The first screenshot of this text: kept as the reference, no alert.
                    return Ok(Compared {
                        snapshot: Some(snapshot(text, None)),
                        screenshot: Some(shot),
                        note: Some("first screenshot kept as the reference".into()),
                        ..Compared::outcome(RunOutcome::Baseline)
                    });
                };
                if percent < min_visual {
                    return Ok(Compared::outcome(RunOutcome::Unchanged));
                }
                let current = snapshot(text, Some(percent));
                let change = driftwatch_diff::diff_texts_within(
                    &prev.content,
                    &current.content,
                    &prev.id,
                    &current.id,
                    DiffLimits::PAYLOAD,
                );
                let event = self.change_event(watch, &change, &prev, &current, engine, Some(percent), now);
                return Ok(Compared {
                    event: Some(event),
                    note: Some(format!("the page looks different ({percent:.2}% of pixels)")),
                    snapshot: Some(current),
                    screenshot: Some(shot),
                    ..Compared::outcome(RunOutcome::Changed)
                });
            }
            Some(prev) => Some(prev),
        };
        let Some(prev) = prev else {
            return Ok(Compared {
                snapshot: Some(snapshot(text, None)),
                screenshot: shot,
                ..Compared::outcome(RunOutcome::Baseline)
            });
        };
        let percent = match shot.as_ref().filter(|_| visual) {
            Some(shot) => self.visual_change(&prev, shot, options).await?,
            None => None,
        };
        let current = snapshot(String::new(), percent);
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
                error_kind: Some("diff"),
                ..Compared::outcome(RunOutcome::Failed)
            });
        };
        let mut compared = Compared::outcome(RunOutcome::Changed);
        let quiet = match options.noise.compare {
            // Only the picture counts: a text change alone is kept, quietly.
            Compare::Visual => match percent {
                Some(p) if p >= min_visual => None,
                Some(p) => {
                    Some(format!("no alert: the page looks the same ({p:.2}% of pixels differ, under {min_visual}%)"))
                }
                None => Some("no alert: no earlier screenshot to compare with".to_owned()),
            },
            _ => self.quiet(watch, options, &change, &prev.content, &text).await?.map(|why| format!("no alert: {why}")),
        };
        if (is_alert(&change) || options.noise.compare == Compare::Visual) && quiet.is_none() {
            compared.event = Some(self.change_event(watch, &change, &prev, &current, engine, percent, now));
        }
        compared.note = quiet;
        compared.snapshot = Some(Snapshot { content: text, ..current });
        compared.screenshot = shot;
        Ok(compared)
    }

    /// The `change.detected` event of a change from `prev` to `current`.
    #[allow(clippy::too_many_arguments)]
    fn change_event(
        &self,
        watch: &Watch,
        change: &driftwatch_diff::TextChange,
        prev: &Snapshot,
        current: &Snapshot,
        engine: &'static str,
        visual_change_percent: Option<f64>,
        now: chrono::NaiveDateTime,
    ) -> NewEvent {
        let event_id = new_id(IdKind::Event);
        let link = |snapshot: &Snapshot| {
            snapshot
                .screenshot_hash
                .as_ref()
                .map(|_| format!("/api/v1/watches/{}/snapshots/{}/screenshot", watch.id, snapshot.id))
        };
        let render = (engine == "browser").then(|| driftwatch_alert::v1::Render {
            browser: true,
            screenshot: link(current),
            previous_screenshot: link(prev),
            visual_change_percent,
        });
        let payload = change_payload_rendered(
            &event_id,
            WatchRef { id: &watch.id, name: &watch.name, url: &watch.url },
            change,
            SnapshotPair { previous: &prev.id, current: &current.id },
            now.and_utc(),
            render,
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
        NewEvent { event, slack_body }
    }

    /// How much `shot` differs from `prev`'s screenshot, in percent of the pixels compared
    /// (outside the watch's ignored regions); `None` when `prev` has no screenshot or it cannot
    /// be read.
    async fn visual_change(
        &self,
        prev: &Snapshot,
        shot: &StoredScreenshot,
        options: &WatchOptions,
    ) -> Result<Option<f64>, StoreError> {
        let Some(hash) = prev.screenshot_hash.clone() else { return Ok(None) };
        if hash == shot.hash {
            return Ok(Some(0.0));
        }
        let Some(before) = self.store().read(move |c| screenshots::by_hash(c, &hash)).await? else { return Ok(None) };
        let after = shot.bytes.clone();
        let ignore: Vec<driftwatch_visual::Rect> = options
            .noise
            .ignore_regions
            .iter()
            .map(|r| driftwatch_visual::Rect { x: r.x, y: r.y, width: r.width, height: r.height })
            .collect();
        // Decoding and comparing pictures is CPU work: off the async threads.
        let compared = tokio::task::spawn_blocking(move || {
            driftwatch_visual::compare(&before.bytes, &after, &ignore, driftwatch_visual::Tolerance::default())
        })
        .await;
        Ok(match compared {
            Ok(Ok(change)) => Some(change.changed_percent),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "comparing screenshots failed");
                None
            }
            Err(_) => None,
        })
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

    /// Reads the watch's page with its engine (conditionally over HTTP when `conditional`)
    /// through the watch's extraction options and line rules. `None` when `stop` was
    /// cancelled before the host's turn came (nothing was fetched).
    async fn read(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        conditional: bool,
        stop: Option<&CancellationToken>,
    ) -> Option<PageRead> {
        let host = crate::fair::host_key(&watch.url);
        let turn = self.hosts().enter(&host);
        let _turn = match stop {
            Some(stop) => tokio::select! {
                biased;
                () = stop.cancelled() => return None,
                turn = turn => turn,
            },
            None => turn.await,
        };
        Some(match options.fetch.engine {
            Engine::Http => self.read_http(watch, options, conditional).await,
            Engine::Browser => self.read_browser(watch, options).await,
            Engine::Auto => self.read_auto(watch, options, conditional).await,
        })
    }

    /// An `auto` watch: the browser while the watch is known to need it (HTTP is tried again
    /// once a day), else HTTP, and the browser when HTTP brings back an empty shell.
    async fn read_auto(&self, watch: &Watch, options: &WatchOptions, conditional: bool) -> PageRead {
        let now = self.now();
        let browsers = self.browsers().filter(|b| b.available());
        let needs_browser = watch.browser_since.is_some_and(|since| now - since < chrono::TimeDelta::hours(24));
        if needs_browser && browsers.is_some() {
            return self.read_browser(watch, options).await;
        }
        let mut http = self.read_http(watch, options, conditional && watch.browser_since.is_none()).await;
        if !http.shell {
            if watch.browser_since.is_some() && matches!(http.text, PageText::Text(_)) {
                http.browser_since = Some(None);
                http.note = Some("auto: HTTP reads this page again; the browser is no longer used".into());
            }
            return http;
        }
        if browsers.is_none() {
            http.note = Some(format!(
                "auto: the page looks like it needs a browser, but none is available ({})",
                self.browsers().map(|b| b.unavailable_reason()).unwrap_or_default()
            ));
            return http;
        }
        let mut rendered = self.read_browser(watch, options).await;
        if matches!(rendered.text, PageText::Text(_)) {
            rendered.browser_since = Some(Some(now));
            if watch.browser_since.is_none() {
                rendered.note = Some("auto: the page needs a browser; it is rendered from now on".into());
            }
        }
        rendered
    }

    /// Renders the watch's page in the browser and reads its text.
    async fn read_browser(&self, watch: &Watch, options: &WatchOptions) -> PageRead {
        let Some(browsers) = self.browsers() else {
            return PageRead::failed(
                "browser",
                None,
                "no browser is configured on this node (DRIFTWATCH_CHROMIUM or DRIFTWATCH_BROWSER_WS)".into(),
                "browser",
            );
        };
        let timeout = options
            .fetch
            .timeout_seconds
            .map_or(self.fetcher().options().timeout, |s| Duration::from_secs(u64::from(s.clamp(1, 300))));
        let request = driftwatch_browser::RenderRequest { url: &watch.url, spec: &options.fetch, timeout };
        let started = std::time::Instant::now();
        let rendered = browsers.render(request).await;
        let result = rendered.as_ref().map_or_else(driftwatch_browser::RenderError::kind, |_| "ok");
        self.config().metrics.render_finished(result, started.elapsed());
        let rendered = match rendered {
            Ok(rendered) => rendered,
            Err(e) => {
                return PageRead::failed("browser", e.status().map(i32::from), e.to_string(), e.kind());
            }
        };
        let page = driftwatch_scrape::Page {
            status: rendered.status.unwrap_or(200),
            content_type: Some("text/html; charset=utf-8".into()),
            body: rendered.html.into_bytes(),
            etag: None,
            last_modified: None,
        };
        let bytes = page.body.len() as i64;
        let text = self.page_text(watch, options, page).await;
        PageRead {
            http_status: rendered.status.map(i32::from),
            bytes,
            validators: None,
            text: match text {
                Ok((text, _)) => PageText::Text(text),
                Err((error, kind)) => PageText::Failed { error, kind },
            },
            engine: "browser",
            screenshot: rendered.screenshot,
            browser_since: None,
            note: rendered.note,
            shell: false,
        }
    }

    /// Fetches the watch's page over HTTP and reads its text.
    async fn read_http(&self, watch: &Watch, options: &WatchOptions, conditional: bool) -> PageRead {
        let request = PageRequest {
            spec: Some(&options.fetch),
            etag: watch.etag.as_deref().filter(|_| conditional),
            last_modified: watch.last_modified.as_deref().filter(|_| conditional),
        };
        match self.fetcher().fetch_with(&watch.url, &request).await {
            Ok(Fetched::NotModified) => PageRead {
                http_status: Some(304),
                text: PageText::NotModified,
                ..PageRead::failed("http", None, String::new(), "")
            },
            Ok(Fetched::Page(page)) => {
                let http_status = Some(i32::from(page.status));
                let (bytes, validators) =
                    (page.body.len() as i64, Some((page.etag.clone(), page.last_modified.clone())));
                let text = self.page_text(watch, options, page).await;
                let shell = match &text {
                    Err((_, kind)) => *kind == "selector_missing" || *kind == "empty",
                    Ok((text, scripted)) => *scripted && text.chars().filter(|c| c.is_alphanumeric()).count() < 100,
                };
                PageRead {
                    http_status,
                    bytes,
                    validators,
                    text: match text {
                        Ok((text, _)) => PageText::Text(text),
                        Err((error, kind)) => PageText::Failed { error, kind },
                    },
                    engine: "http",
                    screenshot: None,
                    browser_since: None,
                    note: None,
                    shell: shell && options.fetch.engine == Engine::Auto,
                }
            }
            Err(e) => PageRead::failed("http", e.status().map(i32::from), e.to_string(), e.kind()),
        }
    }

    /// The page's text, read off the async threads (parsing is CPU work on whatever a page
    /// sends: a pathological page slows its own check, not every request and check), and
    /// whether the page loads scripts.
    async fn page_text(
        &self,
        watch: &Watch,
        options: &WatchOptions,
        page: driftwatch_scrape::Page,
    ) -> Result<(String, bool), (String, &'static str)> {
        let (selector, options, cap) = (watch.selector.clone(), options.clone(), self.config().max_text_bytes);
        let auto = options.fetch.engine == Engine::Auto;
        tokio::task::spawn_blocking(move || {
            let scripted = auto && has_script(&page.body);
            page_text(&page, selector.as_deref(), &options, cap).map(|text| (text, scripted))
        })
        .await
        .unwrap_or_else(|e| Err((format!("reading the page failed: {e}"), "extract")))
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

/// What a preview found: the text a watch would compare, and how it was read.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The text after the selector, extraction options and line rules.
    pub text: String,
    /// What loaded the page: `http` or `browser`.
    pub engine: &'static str,
    /// The screenshot, when the options ask for one.
    pub screenshot: Option<driftwatch_browser::Screenshot>,
    /// Worth saying about the read (an `auto` watch's choice, a screenshot not kept).
    pub note: Option<String>,
}

impl Runner {
    /// Reads `url` now as a watch with `selector` and `options` would (its engine included)
    /// and returns what it would compare, saving nothing (the preview of a watch before it is
    /// created or changed). The error says why there is no text.
    pub async fn preview(
        &self,
        url: &str,
        selector: Option<&str>,
        options: &driftwatch_core::WatchOptions,
    ) -> Result<Preview, String> {
        let mut watch = Watch::new("", url, self.now());
        watch.selector = selector.map(str::to_owned);
        let Some(read) = self.read(&watch, options, false, None).await else {
            return Err("the preview was cancelled".into());
        };
        match read.text {
            PageText::Text(text) => {
                Ok(Preview { text, engine: read.engine, screenshot: read.screenshot, note: read.note })
            }
            PageText::NotModified => Err("the server answered 304 Not Modified".into()),
            PageText::Failed { error, .. } => Err(error),
        }
    }
}

/// Whether an HTML body loads or holds scripts (`<script`, any case).
fn has_script(body: &[u8]) -> bool {
    body.windows(7).any(|w| w.eq_ignore_ascii_case(b"<script"))
}

/// A page's text as the watch reads it: extracted, through its line rules, cut at `max_bytes`
/// (at a line end, with a line saying so). The error says why there is none, and its kind
/// (`selector_missing`, `extract`, `rules`, `empty`).
fn page_text(
    page: &driftwatch_scrape::Page,
    selector: Option<&str>,
    options: &WatchOptions,
    max_bytes: usize,
) -> Result<String, (String, &'static str)> {
    let text = extract_with(page, selector, &options.extract).map_err(|e| {
        let kind = if matches!(e, ExtractError::SelectorMissing(_)) { "selector_missing" } else { "extract" };
        (e.to_string(), kind)
    })?;
    let rules = Rules::new(&options.rules).map_err(|e| (e.to_string(), "rules"))?;
    let mut text = rules.apply(&text);
    if text.trim().is_empty() {
        return Err(("nothing is left after the line rules".to_owned(), "empty"));
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
