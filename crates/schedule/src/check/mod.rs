//! One check of one watch.
//!
//! read -> compare -> decide -> record, one file a step: [`read`], [`compare`], [`decide`]
//! (which also records); [`preview`] reads a page as a watch would, saving nothing.

use std::time::Duration;

use driftwatch_core::{IdKind, RunOutcome, WatchHealth, WatchOptions, new_id};
use driftwatch_store::checks::CheckResult;
use driftwatch_store::screenshots::StoredScreenshot;
use driftwatch_store::{Event, Run, Snapshot, StoreError, Watch, runs, watches};
use tokio_util::sync::CancellationToken;

use crate::access::Access;
use crate::runner::Runner;

mod compare;
mod conditions;
mod decide;
mod expect;
mod preview;
mod read;
mod session;

pub use preview::{Preview, PreviewError};

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
    /// nothing or only blank text, or scripts and almost no text).
    shell: bool,
    /// The step (0-based) that failed the render, so a preview can name its field.
    failed_step: Option<usize>,
    /// With `session.keep`: the session the read ended with, to keep if the check is good.
    session: Option<driftwatch_core::SessionState>,
    /// The login steps ran (the kept session was gone or there was none).
    logged_in_by_steps: bool,
}

/// Two notes about one read as one, either or both absent.
fn join_notes(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    }
}

impl PageRead {
    /// What loaded the page, in words.
    fn engine_name(&self) -> &'static str {
        match self.engine {
            "browser" => "the browser",
            _ => "HTTP",
        }
    }

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
            failed_step: None,
            session: None,
            logged_in_by_steps: false,
        }
    }
}

/// The text of a page (with the watch's values, when it has some), or why there is none.
enum PageText {
    Text(String, Option<driftwatch_values::Readings>),
    NotModified,
    /// `kind` is the run's `error_kind` (`selector_missing`, `browser`, `timeout`...).
    Failed {
        error: String,
        kind: &'static str,
    },
    /// A bot wall answered instead of the page.
    Blocked(driftwatch_scrape::walls::Wall),
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
    event: Option<Event>,
    /// The change's event when a crossing's `condition.met` is its alert: recorded, not
    /// delivered.
    undelivered: Option<Event>,
    /// The kind of error.
    error_kind: Option<&'static str>,
    /// The new snapshot's screenshot.
    screenshot: Option<StoredScreenshot>,
    /// What the watch's conditions are judged on, when it has conditions and a text was read.
    facts: Option<CheckFacts>,
    /// On a text change: the added and removed lines' text, and how many lines changed.
    lines: Option<(String, String, usize)>,
    /// When the watch's values were read: why some could not be (`None`: all were).
    value_failure: Option<Option<String>>,
    /// A bot wall answered instead of the page: who put it up.
    blocked_by: Option<&'static str>,
}

/// A check's text, values and change, kept for the watch's conditions.
struct CheckFacts {
    text: String,
    values: driftwatch_values::Values,
    /// The values of the snapshot before, when there was one.
    previous: Option<driftwatch_values::Values>,
    /// Added and removed lines' text, and their count, on a change.
    added: String,
    removed: String,
    change_size: usize,
}

impl CheckFacts {
    /// What conditions are judged on: these facts.
    fn facts(&self) -> driftwatch_values::Facts<'_> {
        driftwatch_values::Facts {
            values: &self.values,
            previous: self.previous.as_ref(),
            text: &self.text,
            added: &self.added,
            removed: &self.removed,
            change_size: self.change_size,
        }
    }
}

impl Compared {
    fn outcome(outcome: RunOutcome) -> Compared {
        Compared {
            outcome,
            error: None,
            note: None,
            snapshot: None,
            event: None,
            undelivered: None,
            error_kind: None,
            screenshot: None,
            facts: None,
            lines: None,
            value_failure: None,
            blocked_by: None,
        }
    }
}

/// The run, and the watch's health after it.
struct Decided {
    run: Run,
    health: WatchHealth,
    consecutive_failures: i32,
    /// Checks in a row whose values were not all read, when that changed.
    value_failures: Option<i32>,
    /// `check.failed`, `check.selector_missing`, `check.value_missing` or `check.recovered`
    /// when the health changed.
    health_event: Option<Event>,
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
                    let options = watch.options();
                    if let Some(run) = self.check(watch, options, owner, None).await? {
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

    /// Checks a watch leased to `owner`, with its `options` (parsed once, by the caller), and
    /// records the result; returns the run.
    ///
    /// read -> compare -> decide -> record. When `stop` is cancelled while the check still
    /// waits for its turn at the page's host (claimed, not started), the watch is given back
    /// unchecked and this returns `None`.
    pub(crate) async fn check(
        &self,
        watch: Watch,
        options: WatchOptions,
        owner: String,
        stop: Option<&CancellationToken>,
    ) -> Result<Option<Run>, StoreError> {
        let started = self.now();
        let clock = std::time::Instant::now();
        let needed = self.lease_for(&options);
        if needed > self.lease_length() {
            // Its own long timeout or a confirming refetch: hold the watch long enough that no
            // other node takes it up halfway.
            let (id, lease, until) = (watch.id.clone(), owner.clone(), started + needed);
            self.store().write(move |c| watches::extend_lease(c, &id, &lease, until)).await?;
        }
        let (access, page) = match self.access(&watch.account_id, &options).await {
            Ok(mut access) => {
                access.session = self.kept_session(&watch, &options).await;
                let page = self.reader().read(&watch, &options, &access, true, stop).await;
                (access, page)
            }
            // What the account keeps for the read (a proxy, a secret) cannot be had: a failed run.
            Err((error, kind)) => {
                (Access::default(), Some(PageRead::failed(options.fetch.engine.as_str(), None, error, kind)))
            }
        };
        let Some(page) = page else {
            let (id, lease) = (watch.id.clone(), owner.clone());
            self.store().write(move |c| watches::release(c, &id, &lease)).await?;
            tracing::info!(watch.id = %watch.id, "stopping: gave the watch back unchecked");
            return Ok(None);
        };
        let (http_status, bytes, validators) = (page.http_status, page.bytes, page.validators);
        let (engine, browser_since, mut read_note) = (page.engine, page.browser_since, page.note);
        let (session, logged_in_by_steps) = (page.session, page.logged_in_by_steps);
        if matches!(browser_since, Some(Some(_))) && watch.browser_since.is_none() {
            read_note =
                join_notes(Some("auto: the page needs a browser; it is rendered from now on".into()), read_note);
        }
        let mut compared = self.compare((&watch, &options, &access), page.text, page.screenshot, engine).await?;
        let (conditions_met, crossing) = self.judge_conditions(&watch, &options, &mut compared);
        let verdict = self.verdict_for(&options, &mut compared);
        compared.note = join_notes(compared.note, read_note);
        let expected = match &options.expect {
            Some(expect) => self.judge_expectation(&watch, expect, &compared, self.now()).await?,
            None => expect::Judged::default(),
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
            event_id: (compared.event.as_ref().or(compared.undelivered.as_ref()))
                .or(verdict.as_ref().map(|(e, _)| e))
                .map(|e| e.id.clone()),
            engine: Some(engine.to_owned()),
            error_kind: compared.error_kind.map(str::to_owned),
        };
        let outcome = compared.outcome.as_str();
        if let Some(vendor) = compared.blocked_by {
            self.config().metrics.wall_met(vendor);
        }
        let trouble = decide::Trouble {
            selector_missing: compared.error_kind == Some("selector_missing"),
            blocked_by: compared.blocked_by,
            login_required: compared.error_kind == Some("login_required"),
        };
        let decided = self.decide(&watch, run, trouble, compared.value_failure);
        let next_run_at = self
            .backoff()
            .next_check(&watch.timing(), decided.run.finished_at.and_utc(), decided.consecutive_failures, &watch.id)
            .naive_utc();
        // Checked at its deadline too, so a miss is told when it happens.
        let next_run_at = match expected.due {
            Some(due) if due > decided.run.finished_at => next_run_at.min(due),
            _ => next_run_at,
        };
        let result = CheckResult {
            watch_id: watch.id.clone(),
            account_id: watch.account_id.clone(),
            lease_owner: owner,
            run: decided.run.clone(),
            snapshot: compared.snapshot,
            screenshot: compared.screenshot,
            browser_since,
            conditions_met,
            events: (compared.event.into_iter().chain(crossing).chain(decided.health_event))
                .chain(expected.events)
                .collect(),
            undelivered: compared.undelivered.into_iter().chain(verdict.as_ref().map(|(e, _)| e.clone())).collect(),
            verdicts: verdict.into_iter().map(|(_, v)| v).collect(),
            health: decided.health.as_str().to_owned(),
            validators,
            max_attempts: self.config().max_attempts,
            consecutive_failures: decided.consecutive_failures,
            value_failures: decided.value_failures,
            expect: expected.state,
            next_run_at,
            watch_updated_at: watch.updated_at,
            now: decided.run.finished_at,
        };
        // Saved before the check is recorded (which gives the watch back): the next check of
        // it starts from this session, not the one before.
        if let Some(session) = session.filter(|_| decided.run.error.is_none()) {
            self.keep_session(&watch.id, session, logged_in_by_steps).await;
        }
        self.record(result, decided.health_changed_from).await?;
        self.config().metrics.check_finished(outcome, clock.elapsed());
        Ok(Some(decided.run))
    }

    /// When the watch asks a model about its changes and AI is on: its change event, taken out
    /// of those delivered now, and the pending verdict that will deliver it.
    fn verdict_for(
        &self,
        options: &WatchOptions,
        compared: &mut Compared,
    ) -> Option<(Event, driftwatch_store::Verdict)> {
        let deadline = self.config().ai_deadline?;
        let ai = options.ai.as_ref().filter(|ai| ai.active())?;
        let event = compared.event.take_if(|e| e.event_type == driftwatch_core::EventType::ChangeDetected.as_str())?;
        let deadline_at = event.created_at + chrono::Duration::from_std(deadline).unwrap_or(chrono::Duration::days(1));
        let verdict = driftwatch_store::Verdict::pending(&event, ai, deadline_at, self.config().max_attempts);
        Some((event, verdict))
    }
}
