//! Changes across the account's watches, newest first, each with an excerpt of its diff and a
//! language model's verdict when its watch asks for one; and the same as an Atom feed at a URL
//! carrying the account's revocable feed key.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use driftwatch_alert::v1;
use driftwatch_core::EventType;
use driftwatch_store::{Event, Page, events, users, verdicts};
use serde::Deserialize;

use super::error::UiError;
use super::layout::{Layout, html};
use super::present::When;
use super::session::Viewer;
use super::verdict::VerdictView;
use crate::AppState;

/// Changes per page (and entries in the feed).
const PAGE_SIZE: i64 = 30;
/// Lines of diff in an excerpt.
const EXCERPT_LINES: usize = 12;

/// A line of an excerpt.
#[derive(Debug, Clone)]
pub struct ExcerptLine {
    /// `added`, `removed` or `context`.
    pub op: &'static str,
    /// The line with its sign.
    pub text: String,
}

/// A change as listed.
#[derive(Debug, Clone)]
pub struct ChangeItem {
    /// `evt_...`.
    pub id: String,
    /// The watch (none if it was deleted).
    pub watch_id: Option<String>,
    /// The watch's name when it changed.
    pub name: String,
    /// Its URL.
    pub url: String,
    /// When.
    pub at: When,
    /// RFC 3339, for the feed.
    pub updated: String,
    /// Lines added.
    pub added: i32,
    /// Lines removed.
    pub removed: i32,
    /// The first lines of the diff.
    pub excerpt: Vec<ExcerptLine>,
    /// Lines left out of the excerpt.
    pub more: usize,
    /// Snapshots compared.
    pub from: Option<String>,
    /// The newer snapshot.
    pub to: Option<String>,
    /// A language model's verdict on it (not in the feed).
    pub verdict: Option<VerdictView>,
}

/// Reads a change event for people.
pub fn item(event: &Event, now: chrono::DateTime<chrono::Utc>, zone: &str) -> ChangeItem {
    // A stored body this build cannot read (hand-edited, or from a future version) shows as a
    // change without its excerpt rather than failing the page.
    let change = match v1::Payload::parse(&event.payload) {
        Some(v1::Payload::Change(envelope)) => Some(envelope.data),
        _ => {
            tracing::warn!(event.id = %event.id, "a change event's payload does not read as v1");
            None
        }
    };
    let (name, url, unified) = match &change {
        Some(c) => (c.watch.name.clone(), c.watch.url.clone(), c.diff.unified.as_str()),
        None => (String::new(), String::new(), ""),
    };
    let lines: Vec<ExcerptLine> = unified
        .lines()
        .filter(|l| !l.starts_with("---") && !l.starts_with("+++") && !l.starts_with("@@"))
        .map(|l| ExcerptLine {
            op: match l.chars().next() {
                Some('+') => "added",
                Some('-') => "removed",
                _ => "context",
            },
            text: l.to_owned(),
        })
        .collect();
    let more = lines.len().saturating_sub(EXCERPT_LINES);
    ChangeItem {
        id: event.id.clone(),
        watch_id: event.watch_id.clone(),
        name,
        url,
        at: When::new(event.created_at, now, zone),
        updated: event.created_at.and_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        added: event.added,
        removed: event.removed,
        excerpt: lines.into_iter().take(EXCERPT_LINES).collect(),
        more,
        from: event.previous_snapshot_id.clone(),
        to: event.snapshot_id.clone(),
        verdict: None,
    }
}

#[derive(Template)]
#[template(path = "changes.html")]
struct ChangesPage {
    layout: Layout,
    items: Vec<ChangeItem>,
    next_page: Option<String>,
    has_feed: bool,
}

/// Query of the changes page.
#[derive(Debug, Default, Deserialize)]
pub struct ChangesQuery {
    #[serde(default)]
    cursor: String,
}

async fn load(state: &AppState, account: &str, cursor: &str) -> Result<Vec<Event>, UiError> {
    let page = Page { after: Some(cursor.to_owned()).filter(|c| !c.is_empty()), limit: PAGE_SIZE + 1 };
    let account = account.to_owned();
    Ok(state
        .store
        .read(move |c| events::list_events(c, &account, None, Some(EventType::ChangeDetected), &page))
        .await?)
}

/// `GET /changes`.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<ChangesQuery>,
) -> Result<Response, UiError> {
    let mut events = load(&state, viewer.account_id(), &query.cursor).await?;
    let more = events.len() as i64 > PAGE_SIZE;
    events.truncate(PAGE_SIZE as usize);
    let next_page = events.last().filter(|_| more).map(|e| format!("/changes?cursor={}", e.id));
    let now = state.clock.now();
    let account = viewer.account_id().to_owned();
    let ids: Vec<String> = events.iter().map(|e| e.id.clone()).collect();
    let (has_feed, verdicts) = state
        .store
        .read(move |c| {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            Ok((users::has_feed_key(c, &account)?, verdicts::for_events(c, &account, &ids)?))
        })
        .await?;
    let zone = viewer.user.time_zone.as_str();
    let items = events
        .iter()
        .map(|e| ChangeItem {
            verdict: verdicts.get(&e.id).map(|v| VerdictView::of(v, now, zone)),
            ..item(e, now, zone)
        })
        .collect();
    Ok(html(&ChangesPage { layout: Layout::signed_in(&viewer, "changes", "Changes"), items, next_page, has_feed }))
}

#[derive(Template)]
#[template(path = "feed.xml")]
struct Feed {
    id: String,
    updated: String,
    base: String,
    items: Vec<ChangeItem>,
}

/// `GET /feeds/{key}`: the account's changes as Atom, for feed readers (no session; the key is
/// the credential and can be replaced on the account page).
pub async fn atom(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    Path(key): Path<String>,
) -> Result<Response, UiError> {
    let key = key.trim_end_matches(".atom").to_owned();
    let lookup = key.clone();
    let account =
        state.store.read(move |c| users::account_by_feed_key(c, &lookup)).await?.ok_or(UiError::NotFound("feed"))?;
    let mut events = load(&state, &account.id, "").await?;
    events.truncate(PAGE_SIZE as usize);
    let now = state.clock.now();
    let items: Vec<ChangeItem> = events.iter().map(|e| item(e, now, "UTC")).collect();
    let base = super::present::public_base(&state, &headers);
    let feed = Feed {
        id: format!("urn:driftwatch:{}:changes", account.id),
        updated: items.first().map_or_else(
            || account.created_at.and_utc().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            |i| i.updated.clone(),
        ),
        base,
        items,
    };
    match feed.render() {
        Ok(xml) => Ok((
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, HeaderValue::from_static("application/atom+xml; charset=utf-8")),
                (header::CACHE_CONTROL, HeaderValue::from_static("private, max-age=60")),
            ],
            xml,
        )
            .into_response()),
        Err(e) => Err(UiError::Server(e.to_string())),
    }
}
