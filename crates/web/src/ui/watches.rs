//! The watches page (home): every watch with its health, times and a strip of recent changes,
//! filtered and paged by keyset.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use driftwatch_core::{WatchHealth, WatchState};
use driftwatch_store::watches::{self, WatchFilter, WatchSelection, WatchSort};
use driftwatch_store::{Page, Watch, overview, users};
use serde::Deserialize;

use super::error::UiError;
use super::layout::{Layout, html};
use super::present::{When, badge, tags_of};
use super::session::{Post, Viewer};
use super::{flash, form};
use crate::AppState;

/// Watches per page.
pub const PAGE_SIZE: i64 = 50;
/// Days in the strip of changes.
const STRIP_DAYS: i64 = 30;

/// One day of the strip of changes.
#[derive(Debug, Clone)]
pub struct Bar {
    /// Left edge in the SVG.
    pub x: i64,
    /// Top edge (the bar grows up from the baseline).
    pub y: i64,
    /// Height in px (1 for a day without change).
    pub height: i64,
    /// `2026-12-01: 3 changes`.
    pub title: String,
    /// Whether the day had changes.
    pub changed: bool,
}

/// A row of the watches table.
#[derive(Debug, Clone)]
pub struct WatchRow {
    /// `wat_...`.
    pub id: String,
    /// Name.
    pub name: String,
    /// The page.
    pub url: String,
    /// `ok`, `failing`, `selector_missing`, `value_missing` or `paused` (badge class and text).
    pub badge: &'static str,
    /// Checked and recorded, nothing delivered (a badge of its own beside the health).
    pub muted: bool,
    /// Tags.
    pub tags: Vec<String>,
    /// Last check.
    pub checked: Option<When>,
    /// Last change.
    pub changed: Option<When>,
    /// Next check (none while paused).
    pub next: Option<When>,
    /// The strip.
    pub bars: Vec<Bar>,
    /// Changes in the strip's window.
    pub recent_changes: i64,
    /// A change this user has not looked at yet.
    pub unseen: bool,
}

fn strip(days: &[(NaiveDate, i64)], now: DateTime<Utc>) -> (Vec<Bar>, i64) {
    let counts: HashMap<NaiveDate, i64> = days.iter().copied().collect();
    let max = days.iter().map(|d| d.1).max().unwrap_or(0).max(1);
    let today = now.date_naive();
    let bars = (0..STRIP_DAYS)
        .map(|i| {
            let day = today - TimeDelta::days(STRIP_DAYS - 1 - i);
            let n = counts.get(&day).copied().unwrap_or(0);
            let height = if n == 0 { 1 } else { 3 + (n * 13) / max };
            Bar {
                x: i * 3,
                y: 16 - height,
                height,
                title: format!("{day}: {n} change{}", if n == 1 { "" } else { "s" }),
                changed: n > 0,
            }
        })
        .collect();
    (bars, days.iter().map(|d| d.1).sum())
}

/// Rows for `watches`, with everything beside them read in a fixed number of queries.
pub async fn rows(state: &AppState, viewer: &Viewer, watches: Vec<Watch>) -> Result<Vec<WatchRow>, UiError> {
    let now = state.clock.now();
    let ids: Vec<String> = watches.iter().map(|w| w.id.clone()).collect();
    let user = viewer.user.id.clone();
    let since = (now - TimeDelta::days(STRIP_DAYS)).naive_utc();
    let (last, per_day, newest, seen) = state
        .store
        .read(move |c| {
            Ok((
                overview::last_changes(c, &ids)?,
                overview::changes_per_day(c, &ids, since)?,
                users::newest_snapshots(c, &ids)?,
                users::seen_snapshots(c, &user, &ids)?,
            ))
        })
        .await?;
    let zone = viewer.user.time_zone.as_str();
    Ok(watches
        .into_iter()
        .map(|w| {
            let (bars, recent_changes) = strip(per_day.get(&w.id).map(Vec::as_slice).unwrap_or(&[]), now);
            let changed = last.get(&w.id).copied();
            // Unseen: it has changed, and the newest snapshot is not the one this user saw.
            let unseen = changed.is_some() && newest.get(&w.id) != seen.get(&w.id);
            let paused = w.state == WatchState::Paused.as_str();
            WatchRow {
                badge: badge(&w),
                muted: w.muted,
                tags: tags_of(&w),
                checked: w.last_run_at.map(|t| When::new(t, now, zone)),
                changed: changed.map(|t| When::new(t, now, zone)),
                next: (!paused).then(|| When::new(w.next_run_at, now, zone)),
                bars,
                recent_changes,
                unseen,
                id: w.id,
                name: w.name,
                url: w.url,
            }
        })
        .collect())
}

/// Query of the watches page.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListQuery {
    /// Name or URL contains.
    #[serde(default)]
    pub q: String,
    /// Has this tag.
    #[serde(default)]
    pub tag: String,
    /// `ok`, `failing`, `selector_missing`, `value_missing`.
    #[serde(default)]
    pub health: String,
    /// `active`, `paused` or `muted`.
    #[serde(default)]
    pub state: String,
    /// `oldest` (default), `newest` or `name`.
    #[serde(default)]
    pub sort: String,
    /// The last id of the previous page.
    #[serde(default)]
    pub cursor: String,
}

impl ListQuery {
    /// The store filter; unknown values filter nothing. `muted` is a state to people (what the
    /// watch does) and a flag beside the state in the store.
    pub fn filter(&self) -> WatchFilter {
        WatchFilter {
            state: self.state.parse::<WatchState>().ok(),
            muted: (self.state == "muted").then_some(true),
            health: self.health.parse::<WatchHealth>().ok(),
            tag: Some(self.tag.trim().to_lowercase()).filter(|t| !t.is_empty()),
            q: Some(self.q.trim().to_owned()).filter(|q| !q.is_empty()),
            sort: match self.sort.as_str() {
                "newest" => WatchSort::Newest,
                "name" => WatchSort::Name,
                _ => WatchSort::Oldest,
            },
        }
    }

    /// The query string of this filter and page, for the live refresh.
    pub fn live_query(&self) -> String {
        let base = self.filter_query();
        if self.cursor.is_empty() {
            return base;
        }
        format!("{base}{}cursor={}", if base.is_empty() { "" } else { "&" }, self.cursor)
    }

    /// The query string of this filter (no cursor), for links and paging.
    pub fn filter_query(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(
                [
                    ("q", &self.q),
                    ("tag", &self.tag),
                    ("health", &self.health),
                    ("state", &self.state),
                    ("sort", &self.sort),
                ]
                .into_iter()
                .filter(|(_, v)| !v.is_empty()),
            )
            .finish()
    }
}

#[derive(Template)]
#[template(path = "watches.html")]
struct WatchesPage {
    layout: Layout,
    query: ListQuery,
    rows: Vec<WatchRow>,
    next_page: Option<String>,
    first_page: Option<String>,
    failing: usize,
    tags: Vec<String>,
    filtered: bool,
}

/// One page of rows for `query`, and whether another page follows.
async fn page_rows(state: &AppState, viewer: &Viewer, query: &ListQuery) -> Result<(Vec<WatchRow>, bool), UiError> {
    let filter = query.filter();
    let page = Page { after: Some(query.cursor.clone()).filter(|c| !c.is_empty()), limit: PAGE_SIZE + 1 };
    let account = viewer.account_id().to_owned();
    let mut found = state.store.read(move |c| watches::list_watches(c, &account, &filter, &page)).await?;
    let more = found.len() as i64 > PAGE_SIZE;
    found.truncate(PAGE_SIZE as usize);
    Ok((rows(state, viewer, found).await?, more))
}

/// `GET /`: the watches page.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Result<Response, UiError> {
    let (rows, more) = page_rows(&state, &viewer, &query).await?;
    let account = viewer.account_id().to_owned();
    let tags = state.store.read(move |c| watches::account_tags(c, &account)).await?;
    let base = query.filter_query();
    let next_page = match rows.last() {
        Some(last) if more => Some(format!("/?{base}{}cursor={}", if base.is_empty() { "" } else { "&" }, last.id)),
        _ => None,
    };
    let first_page = (!query.cursor.is_empty()).then(|| format!("/?{base}"));
    let failing = rows
        .iter()
        .filter(|r| matches!(r.badge, "failing" | "selector_missing" | "value_missing" | "blocked" | "login_required"))
        .count();
    let filtered = !base.is_empty();
    let title = if failing > 0 { format!("({failing} failing) Watches") } else { "Watches".to_owned() };
    let notice = super::flash::take(&state, &viewer).await?;
    Ok(html(&WatchesPage {
        layout: Layout::signed_in(&viewer, "watches", title).with_notice(notice),
        query,
        rows,
        next_page,
        first_page,
        failing,
        tags,
        filtered,
    }))
}

/// `POST /watches/bulk`: check, pause, resume, tag, untag or delete the selected watches, or
/// check every watch of the current filter; the same store functions as the API's bulk routes.
pub async fn bulk(State(state): State<AppState>, post: Post<Vec<(String, String)>>) -> Result<Response, UiError> {
    let field = |name: &str| form::value(&post.form, name);
    let ids: Vec<String> = post.form.iter().filter(|(k, _)| k == "ids").map(|(_, v)| v.clone()).collect();
    let action = field("action");
    let query = ListQuery {
        q: field("q"),
        tag: field("filter_tag"),
        health: field("health"),
        state: field("state"),
        sort: field("sort"),
        cursor: String::new(),
    };
    let back = format!("/?{}", query.filter_query());
    let selection = if action == "check_all" {
        WatchSelection::Filter(query.filter())
    } else if ids.is_empty() {
        flash::set(&state, &post.viewer, "Select one or more watches first.").await?;
        return Ok(Redirect::to(&back).into_response());
    } else {
        WatchSelection::Ids(ids)
    };
    let account = post.viewer.account_id().to_owned();
    let now = state.clock.now();
    let message = match action.as_str() {
        "check" | "check_all" => {
            let n =
                state.store.write(move |c| watches::bulk_check_now(c, &account, &selection, now.naive_utc())).await?;
            state.runner.wake();
            format!("{n} {} queued for a check now.", plural(n, "watch", "watches"))
        }
        "pause" | "resume" => {
            let to = if action == "pause" { WatchState::Paused } else { WatchState::Active };
            let changes = driftwatch_validate::state_change(to, now);
            let n = state.store.write(move |c| watches::bulk_set_state(c, &account, &selection, &changes)).await?;
            state.runner.wake();
            format!("{n} {} {}.", plural(n, "watch", "watches"), if action == "pause" { "paused" } else { "resumed" })
        }
        "delete" => {
            let n = state.store.write(move |c| watches::bulk_delete(c, &account, &selection)).await?;
            format!("{n} {} deleted.", plural(n, "watch", "watches"))
        }
        "tag" | "untag" => {
            let tags = match driftwatch_validate::valid_tags(&[field("tag")]) {
                Ok(tags) if !tags.is_empty() => tags,
                Ok(_) => {
                    flash::set(&state, &post.viewer, "Type the tag to add or remove first.").await?;
                    return Ok(Redirect::to(&back).into_response());
                }
                Err(e) => {
                    flash::set(&state, &post.viewer, format!("Not tagged: {}.", e.message)).await?;
                    return Ok(Redirect::to(&back).into_response());
                }
            };
            let (add, remove) = if action == "tag" { (tags.clone(), Vec::new()) } else { (Vec::new(), tags.clone()) };
            let n = state
                .store
                .write(move |c| watches::bulk_tag(c, &account, &selection, &add, &remove, now.naive_utc()))
                .await?;
            format!(
                "{} “{}” on {n} {}.",
                if action == "tag" { "Tagged" } else { "Removed" },
                tags.join(", "),
                plural(n, "watch", "watches")
            )
        }
        _ => return Err(UiError::BadRequest("unknown action".into())),
    };
    tracing::info!(action, "bulk action from the UI");
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to(&back).into_response())
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

#[derive(Template)]
#[template(path = "watch_rows.html")]
struct RowsFragment {
    rows: Vec<WatchRow>,
}

/// `GET /watches/rows`: the rows of the watches table alone (live refresh), with the number
/// of failing watches in `x-failing`.
pub async fn rows_fragment(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ListQuery>,
) -> Result<Response, UiError> {
    let (rows, _) = page_rows(&state, &viewer, &query).await?;
    let failing = rows
        .iter()
        .filter(|r| matches!(r.badge, "failing" | "selector_missing" | "value_missing" | "blocked" | "login_required"))
        .count();
    let mut response = html(&RowsFragment { rows });
    response.headers_mut().insert("x-failing", axum::http::HeaderValue::from(failing));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watches_table_renders_escaped_rows_with_their_badges() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").expect("time").with_timezone(&Utc);
        let (bars, recent_changes) = strip(&[(now.date_naive(), 2)], now);
        let row = WatchRow {
            id: "wat_1".into(),
            name: "<b>Prices</b>".into(),
            url: "https://example.com/?a=1&b=2".into(),
            badge: "failing",
            muted: true,
            tags: vec!["shop".into()],
            checked: Some(When::new(now.naive_utc(), now, "UTC")),
            changed: None,
            next: None,
            bars,
            recent_changes,
            unseen: true,
        };
        let html = RowsFragment { rows: vec![row] }.render().expect("renders");
        assert!(html.contains("&#60;b&#62;Prices") || html.contains("&lt;b&gt;Prices"), "{html}");
        assert!(!html.contains("<b>Prices"));
        assert!(html.contains("badge-failing") && html.contains("class=\"unseen\""));
        assert!(html.contains("<span class=\"badge badge-muted\">muted</span>"), "said in words: {html}");
        assert_eq!(html.matches("<rect ").count(), 2, "the baseline and a bar for the day with changes");
        assert!(html.contains("2 changes in 30 days"));
        assert!(html.contains("href=\"/?tag=shop\""));
    }

    #[test]
    fn the_strip_has_a_bar_per_day_and_scales_to_the_busiest() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").expect("time").with_timezone(&Utc);
        let today = now.date_naive();
        let (bars, total) = strip(&[(today, 4), (today - TimeDelta::days(2), 1)], now);
        assert_eq!(bars.len(), 30);
        assert_eq!(total, 5);
        assert_eq!(bars[29].height, 16, "the busiest day is full height");
        assert!(bars[27].changed && !bars[28].changed);
        assert_eq!(bars[0].height, 1);
        assert!(bars[29].title.ends_with("4 changes"));
    }
}
