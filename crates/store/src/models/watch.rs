//! Watches, their snapshots and their runs.

use chrono::{NaiveDateTime, TimeDelta};
use diesel::prelude::*;
use driftwatch_core::{Engine, WatchOptions};

use crate::schema::*;

/// A page to watch and how.
#[derive(Debug, Clone, Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = watches)]
pub struct Watch {
    /// `wat_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// A label (defaults to the URL).
    pub name: String,
    /// The page.
    pub url: String,
    /// CSS selector of the part that matters; the whole page when absent.
    pub selector: Option<String>,
    /// Seconds between checks (interval schedules).
    pub interval_seconds: Option<i64>,
    /// Cron expression, seconds optional (cron schedules).
    pub cron: Option<String>,
    /// IANA time zone the cron expression is read in (UTC when absent).
    pub time_zone: Option<String>,
    /// `active` or `paused` ([`driftwatch_core::WatchState`]).
    pub state: String,
    /// `ok`, `failing` or `selector_missing` ([`driftwatch_core::WatchHealth`]).
    pub health: String,
    /// [`driftwatch_core::WatchOptions`] as JSON.
    pub options: String,
    /// `ETag` of the last page fetched (conditional GET).
    pub etag: Option<String>,
    /// `Last-Modified` of the last page fetched (conditional GET).
    pub last_modified: Option<String>,
    /// What is fetched or extracted changed: the next check records a baseline, no alert.
    pub rebaseline: bool,
    /// When the runner should check next.
    pub next_run_at: NaiveDateTime,
    /// When it was last checked.
    pub last_run_at: Option<NaiveDateTime>,
    /// Failed checks in a row.
    pub consecutive_failures: i32,
    /// Lease holder while a check is under way.
    pub lease_owner: Option<String>,
    /// Lease expiry; after it another runner may claim the watch.
    pub lease_until: Option<NaiveDateTime>,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last change to its settings or schedule.
    pub updated_at: NaiveDateTime,
    /// Tags, stored as `,a,b,` (lower case, sorted, once each; empty for none).
    pub tags: String,
    /// An `auto` watch: since when its page has needed the browser (`None`: HTTP does).
    pub browser_since: Option<NaiveDateTime>,
    /// Still checked and recorded, but its events queue no deliveries.
    pub muted: bool,
    /// Whether its conditions held at the last check (`None`: never judged).
    pub conditions_met: Option<bool>,
    /// Checks in a row that read the page but not every one of its values.
    pub value_failures: i32,
    /// The deadline of its change expectation (`None`: none armed).
    pub expect_due_at: Option<NaiveDateTime>,
    /// When its change expectation was missed (`None`: not missed since the last change).
    pub expect_missed_at: Option<NaiveDateTime>,
    /// Whether its value expectation held at the last check that judged it (`None`: never).
    pub expect_holds: Option<bool>,
}

/// Extracted content of a watch at one moment; written only when it differs from the last.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = snapshots)]
pub struct Snapshot {
    /// `snp_...`
    pub id: String,
    /// The watch.
    pub watch_id: String,
    /// Hex SHA-256 of `content` (and of `readings`, when the watch has values).
    pub content_hash: String,
    /// The normalised text.
    pub content: String,
    /// When it was fetched.
    pub created_at: NaiveDateTime,
    /// Hex SHA-256 of its screenshot (in `screenshots`), when one was kept.
    pub screenshot_hash: Option<String>,
    /// Share of the screenshot's pixels that differ from the previous snapshot's, in percent.
    pub visual_change_percent: Option<f64>,
    /// The values read with it, a JSON object by name (`None` for a watch without values).
    pub readings: Option<String>,
    /// Why the change that made it alerted no one (noise rules or conditions), when it did not.
    pub kept_quiet: Option<String>,
}

/// One check of a watch, whatever its outcome.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = runs)]
pub struct Run {
    /// `run_...`
    pub id: String,
    /// The watch.
    pub watch_id: String,
    /// When the fetch started.
    pub started_at: NaiveDateTime,
    /// When the result was known.
    pub finished_at: NaiveDateTime,
    /// [`driftwatch_core::RunOutcome`].
    pub outcome: String,
    /// The page's HTTP status, when one was received.
    pub http_status: Option<i32>,
    /// Fetch and extraction time.
    pub duration_ms: i64,
    /// Body bytes read.
    pub bytes: i64,
    /// Why it failed.
    pub error: Option<String>,
    /// Why a change raised no alert (noise rules), when it did not.
    pub note: Option<String>,
    /// The snapshot written (baseline or change).
    pub snapshot_id: Option<String>,
    /// The event raised.
    pub event_id: Option<String>,
    /// What loaded the page: `http` or `browser` (`None` for runs before there was a choice).
    pub engine: Option<String>,
    /// The kind of failure (`target`, `timeout`, `connect`, `status`, `too_large`, `extract`,
    /// `selector_missing`, `browser`, `step`, `wait`, ...), when it failed.
    pub error_kind: Option<String>,
}

impl Watch {
    /// Its options, read from their stored JSON. Stored options that do not read (written
    /// behind the API's back, or by a future version) are logged once per read and taken as
    /// the defaults, so the watch is still checked and shown rather than failing every time.
    pub fn options(&self) -> WatchOptions {
        serde_json::from_str(&self.options).unwrap_or_else(|e| {
            tracing::warn!(watch.id = %self.id, error = %e, "a watch's stored options do not read; using the defaults");
            WatchOptions::default()
        })
    }

    /// The engine a check of this watch at `now` reads its page with, given its `options`:
    /// `browser` for a browser watch, and for an `auto` watch while it remembers needing the
    /// browser (HTTP last brought back an empty shell less than [`BROWSER_MEMORY`] ago; after
    /// that, HTTP is tried again); otherwise `http`. Never `auto`. The one rule the runner, the
    /// read step, the API and the page all follow, as [`super::Endpoint::circuit`] is for circuits.
    pub fn engine_in_use(&self, options: &WatchOptions, now: NaiveDateTime) -> Engine {
        match options.fetch.engine {
            Engine::Auto if self.browser_since.is_some_and(|since| now - since < BROWSER_MEMORY) => Engine::Browser,
            Engine::Auto => Engine::Http,
            engine => engine,
        }
    }

    /// When this watch is due (a watch whose stored schedule somehow does not parse is checked
    /// hourly).
    pub fn timing(&self) -> driftwatch_core::Timing {
        driftwatch_core::Timing::stored(self.interval_seconds, self.cron.as_deref(), self.time_zone.as_deref())
    }

    /// A new active watch of `url` for `account_id`, checked hourly, due at once (the baseline),
    /// with no selector or options; callers set what differs.
    pub fn new(account_id: &str, url: &str, now: NaiveDateTime) -> Watch {
        Watch {
            id: driftwatch_core::new_id(driftwatch_core::IdKind::Watch),
            account_id: account_id.to_owned(),
            name: url.to_owned(),
            url: url.to_owned(),
            selector: None,
            interval_seconds: Some(3600),
            cron: None,
            time_zone: None,
            state: driftwatch_core::WatchState::Active.as_str().to_owned(),
            health: driftwatch_core::WatchHealth::Ok.as_str().to_owned(),
            options: "{}".to_owned(),
            etag: None,
            last_modified: None,
            rebaseline: false,
            next_run_at: now,
            last_run_at: None,
            consecutive_failures: 0,
            lease_owner: None,
            lease_until: None,
            created_at: now,
            updated_at: now,
            tags: String::new(),
            browser_since: None,
            muted: false,
            conditions_met: None,
            value_failures: 0,
            expect_due_at: None,
            expect_missed_at: None,
            expect_holds: None,
        }
    }

    /// The watch's tags.
    pub fn tag_list(&self) -> Vec<&str> {
        self.tags.split(',').filter(|t| !t.is_empty()).collect()
    }
}

/// How long an `auto` watch keeps rendering in the browser after HTTP last brought back an
/// empty shell, before it tries HTTP again.
pub const BROWSER_MEMORY: TimeDelta = TimeDelta::hours(24);

/// The stored form of a set of tags: `,a,b,` (already normalised), or empty for none.
pub fn stored_tags<S: AsRef<str>>(tags: &[S]) -> String {
    if tags.is_empty() {
        return String::new();
    }
    format!(",{},", tags.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(","))
}

impl Snapshot {
    /// The snapshot as both backends store it (see [`driftwatch_core::storable`]).
    pub fn storable(&self) -> std::borrow::Cow<'_, Snapshot> {
        match driftwatch_core::storable(&self.content) {
            std::borrow::Cow::Borrowed(_) => std::borrow::Cow::Borrowed(self),
            std::borrow::Cow::Owned(content) => std::borrow::Cow::Owned(Snapshot { content, ..self.clone() }),
        }
    }
}

impl Run {
    /// The run as both backends store it: its error and note, which quote what a page or a
    /// server said, without NUL (see [`driftwatch_core::storable`]).
    pub fn storable(&self) -> std::borrow::Cow<'_, Run> {
        if !driftwatch_core::text::any_nul([&self.error, &self.note]) {
            return std::borrow::Cow::Borrowed(self);
        }
        std::borrow::Cow::Owned(Run {
            error: driftwatch_core::storable_opt(self.error.clone()),
            note: driftwatch_core::storable_opt(self.note.clone()),
            ..self.clone()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `auto` window's edges: the browser until just before [`BROWSER_MEMORY`] has passed
    /// since HTTP last fell short, HTTP from then on; `http` and `browser` whatever the memory.
    #[test]
    fn an_auto_watch_renders_within_a_day_of_needing_the_browser() {
        let since = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("time").naive_utc();
        let mut watch = Watch::new("acc_1", "https://example.com/", since);
        let with = |engine: Engine| {
            let mut options = WatchOptions::default();
            options.fetch.engine = engine;
            options
        };
        let (auto, http, browser) = (with(Engine::Auto), with(Engine::Http), with(Engine::Browser));
        assert_eq!(watch.engine_in_use(&auto, since), Engine::Http, "no memory: HTTP");
        assert_eq!(watch.engine_in_use(&browser, since), Engine::Browser);
        watch.browser_since = Some(since);
        let edge = since + BROWSER_MEMORY;
        assert_eq!(watch.engine_in_use(&auto, since), Engine::Browser);
        assert_eq!(watch.engine_in_use(&auto, edge - TimeDelta::milliseconds(1)), Engine::Browser);
        assert_eq!(watch.engine_in_use(&auto, edge), Engine::Http, "a day on: HTTP is tried again");
        assert_eq!(watch.engine_in_use(&auto, edge + TimeDelta::days(30)), Engine::Http);
        assert_eq!(watch.engine_in_use(&http, since), Engine::Http, "memory is for `auto` only");
        assert_eq!(watch.engine_in_use(&browser, edge), Engine::Browser);
    }
}
