//! Deliveries: the list (filtered by status, endpoint, watch and time), the dead letters, one
//! delivery with its exact body, headers and every attempt, and redelivery.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{NaiveDate, NaiveDateTime};
use driftwatch_core::DeliveryStatus;
use driftwatch_delivery::RedeliverError;
use driftwatch_store::deliveries::{self, DeliveryFilter};
use driftwatch_store::{Delivery, DeliveryAttempt, Endpoint, Page, endpoints};
use serde::Deserialize;

use super::error::UiError;
use super::flash;
use super::layout::{Layout, html};
use super::present::When;
use super::present::{DeliveryRow, delivery_row};
use super::session::{Post, Viewer};
use crate::AppState;

/// Deliveries per page.
const PAGE_SIZE: i64 = 50;

/// Query of the deliveries list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DeliveriesQuery {
    /// `queued`, `failed`, `sent`, `dead`.
    #[serde(default)]
    pub status: String,
    /// An endpoint id.
    #[serde(default)]
    pub endpoint_id: String,
    /// A watch id.
    #[serde(default)]
    pub watch_id: String,
    /// Created on or after this day (`YYYY-MM-DD`, UTC).
    #[serde(default)]
    pub since: String,
    /// Created before the end of this day.
    #[serde(default)]
    pub until: String,
    /// Paging.
    #[serde(default)]
    pub cursor: String,
}

fn day(value: &str, end: bool) -> Option<NaiveDateTime> {
    let date = NaiveDate::parse_from_str(value.trim(), "%Y-%m-%d").ok()?;
    let date = if end { date.succ_opt()? } else { date };
    date.and_hms_opt(0, 0, 0)
}

impl DeliveriesQuery {
    fn filter(&self) -> DeliveryFilter {
        DeliveryFilter {
            status: self.status.parse::<DeliveryStatus>().ok(),
            endpoint_id: Some(self.endpoint_id.clone()).filter(|e| !e.is_empty()),
            watch_id: Some(self.watch_id.clone()).filter(|w| !w.is_empty()),
            since: day(&self.since, false),
            until: day(&self.until, true),
        }
    }

    fn filter_query(&self) -> String {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(
                [
                    ("status", &self.status),
                    ("endpoint_id", &self.endpoint_id),
                    ("watch_id", &self.watch_id),
                    ("since", &self.since),
                    ("until", &self.until),
                ]
                .into_iter()
                .filter(|(_, v)| !v.is_empty()),
            )
            .finish()
    }
}

/// An endpoint as a choice in a filter.
#[derive(Debug, Clone)]
pub struct EndpointChoice {
    /// `end_...`.
    pub id: String,
    /// Its URL.
    pub url: String,
}

#[derive(Template)]
#[template(path = "deliveries.html")]
struct DeliveriesPage {
    layout: Layout,
    query: DeliveriesQuery,
    deliveries: Vec<DeliveryRow>,
    errors: Vec<Option<String>>,
    endpoints: Vec<EndpointChoice>,
    /// The account's watches, for the filter, by name.
    watches: Vec<(String, String)>,
    /// Each row's watch name and endpoint URL (when they still exist).
    names: Vec<(Option<String>, Option<String>)>,
    next_page: Option<String>,
    dead_letters: bool,
}

async fn listing(
    state: &AppState,
    viewer: &Viewer,
    query: DeliveriesQuery,
    dead_letters: bool,
) -> Result<Response, UiError> {
    let mut filter = query.filter();
    if dead_letters {
        filter.status = Some(DeliveryStatus::Dead);
    }
    let page = Page { after: Some(query.cursor.clone()).filter(|c| !c.is_empty()), limit: PAGE_SIZE + 1 };
    let account = viewer.account_id().to_owned();
    let (mut rows, endpoints, watches, row_watches) = state
        .store
        .read(move |c| {
            let rows = deliveries::list_deliveries(c, &account, &filter, &page)?;
            let endpoints = endpoints::list_endpoints(c, &account, &Page { after: None, limit: 200 })?;
            let watches = driftwatch_store::watches::watch_names(c, &account, 500)?;
            let ids: Vec<String> = rows.iter().filter_map(|d| d.watch_id.clone()).collect();
            let row_watches = driftwatch_store::watches::names_of(c, &account, &ids)?;
            Ok((rows, endpoints, watches, row_watches))
        })
        .await?;
    let more = rows.len() as i64 > PAGE_SIZE;
    rows.truncate(PAGE_SIZE as usize);
    let ids: Vec<String> = rows.iter().map(|d| d.id.clone()).collect();
    let mut last = state.store.read(move |c| deliveries::last_attempts(c, &ids)).await?;
    let now = state.clock.now();
    let zone = viewer.user.time_zone.as_str();
    let path = if dead_letters { "/dlq" } else { "/deliveries" };
    let base = query.filter_query();
    let next_page = rows
        .last()
        .filter(|_| more)
        .map(|d| format!("{path}?{base}{}cursor={}", if base.is_empty() { "" } else { "&" }, d.id));
    // A sent delivery has no last error: its last answer (often "ok") is not one.
    let errors = rows
        .iter()
        .map(|d| {
            let last = last.remove(&d.id);
            if d.status == "sent" {
                return None;
            }
            last.and_then(|a| a.error.or(a.response_snippet)).or_else(|| d.last_error.clone())
        })
        .collect();
    let mut watches = watches;
    if !query.watch_id.is_empty() && !watches.iter().any(|(id, _)| *id == query.watch_id) {
        // Filtered by a watch beyond the picker's list (or by a pasted id): keep it chosen.
        watches.insert(0, (query.watch_id.clone(), query.watch_id.clone()));
    }
    let row_watches: std::collections::HashMap<String, String> = row_watches.into_iter().collect();
    let names = rows
        .iter()
        .map(|d| {
            let watch = d.watch_id.as_ref().and_then(|w| row_watches.get(w).cloned());
            let endpoint = endpoints.iter().find(|e| e.id == d.endpoint_id).map(|e| e.url.clone());
            (watch, endpoint)
        })
        .collect();
    let (section, title) = if dead_letters { ("deliveries", "Dead letters") } else { ("deliveries", "Deliveries") };
    let notice = flash::take(state, viewer).await?;
    Ok(html(&DeliveriesPage {
        layout: Layout::signed_in(viewer, section, title).with_notice(notice),
        deliveries: rows.iter().map(|d| delivery_row(d, now, zone)).collect(),
        errors,
        endpoints: endpoints.into_iter().map(|e| EndpointChoice { id: e.id, url: e.url }).collect(),
        watches,
        names,
        next_page,
        dead_letters,
        query,
    }))
}

/// `GET /deliveries`.
pub async fn list(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<DeliveriesQuery>,
) -> Result<Response, UiError> {
    listing(&state, &viewer, query, false).await
}

/// `GET /dlq`: deliveries that gave up.
pub async fn dead_letters(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(query): Query<DeliveriesQuery>,
) -> Result<Response, UiError> {
    listing(&state, &viewer, query, true).await
}

/// An attempt as shown.
#[derive(Debug, Clone)]
pub struct AttemptRow {
    /// 1, 2, ...
    pub number: i32,
    /// When.
    pub at: When,
    /// HTTP status.
    pub status: Option<i32>,
    /// How long it took.
    pub duration_ms: i64,
    /// `timeout`, `connect`, ...
    pub error_kind: Option<String>,
    /// The error.
    pub error: Option<String>,
    /// The start of the response.
    pub snippet: Option<String>,
    /// `scheduled` or `manual`.
    pub trigger: String,
}

#[derive(Template)]
#[template(path = "delivery.html")]
struct DeliveryPage {
    layout: Layout,
    delivery: Delivery,
    endpoint: Option<Endpoint>,
    created: When,
    next: Option<When>,
    held_until: Option<When>,
    body: String,
    headers: Vec<(String, String)>,
    attempts: Vec<AttemptRow>,
    can_redeliver: bool,
}

/// The body as people read it: pretty-printed JSON, or the text as it is.
fn pretty(body: &[u8]) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

/// `GET /deliveries/{id}`.
pub async fn show(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> Result<Response, UiError> {
    let account = viewer.account_id().to_owned();
    let found = state
        .store
        .read(move |c| {
            let Some(delivery) = deliveries::get_delivery(c, &account, &id)? else { return Ok(None) };
            let body = deliveries::delivery_body(c, &account, &id)?.unwrap_or_default();
            let attempts = deliveries::list_attempts(c, &account, &id)?;
            let endpoint = endpoints::get_endpoint(c, &account, &delivery.endpoint_id)?;
            Ok(Some((delivery, body, attempts, endpoint)))
        })
        .await?;
    let (delivery, body, attempts, endpoint) = found.ok_or(UiError::NotFound("delivery"))?;
    let now = state.clock.now();
    let zone = viewer.user.time_zone.as_str();
    let slack = endpoint.as_ref().is_some_and(|e| e.kind == "slack");
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if !slack {
        headers.extend([
            ("webhook-id".to_owned(), delivery.id.clone()),
            ("webhook-timestamp".to_owned(), "the attempt's time, in Unix seconds".to_owned()),
            (
                "webhook-signature".to_owned(),
                "v1,<HMAC-SHA256 of id.timestamp.body with the endpoint's secret>".to_owned(),
            ),
        ]);
    }
    headers.extend([
        ("driftwatch-event-type".to_owned(), delivery.event_type.clone()),
        ("driftwatch-attempt".to_owned(), "the attempt's number".to_owned()),
    ]);
    let attempts = attempts
        .into_iter()
        .map(|a: DeliveryAttempt| AttemptRow {
            number: a.attempt_number,
            at: When::new(a.started_at, now, zone),
            status: a.status_code,
            duration_ms: a.duration_ms,
            error_kind: a.error_kind,
            error: a.error,
            snippet: a.response_snippet,
            trigger: a.trigger,
        })
        .collect();
    let finished = delivery.finished_at.is_some()
        || delivery.status == DeliveryStatus::Sent.as_str()
        || delivery.status == DeliveryStatus::Dead.as_str();
    let notice = flash::take(&state, &viewer).await?;
    Ok(html(&DeliveryPage {
        layout: Layout::signed_in(&viewer, "deliveries", format!("Delivery {}", delivery.id)).with_notice(notice),
        created: When::new(delivery.created_at, now, zone),
        next: (!finished).then(|| When::new(delivery.next_attempt_at, now, zone)),
        held_until: super::present::held_until(&delivery, now, zone),
        body: if delivery.body_purged_at.is_some() { String::new() } else { pretty(&body) },
        headers,
        attempts,
        can_redeliver: delivery.body_purged_at.is_none()
            && !matches!(delivery.status.as_str(), "gathering" | "digested")
            && endpoint.as_ref().is_some_and(|e| e.enabled),
        endpoint,
        delivery,
    }))
}

/// `POST /deliveries/{id}/redeliver`: sends it again now (same id and body), then shows it.
pub async fn redeliver(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let message = match state.worker.redeliver(post.viewer.account_id(), &id).await {
        Ok(Some(delivery)) => match delivery.last_status_code {
            Some(code) => format!("Redelivered: the endpoint answered {code}."),
            None => {
                format!("Redelivered: the attempt failed ({}).", delivery.last_error.as_deref().unwrap_or("no answer"))
            }
        },
        Ok(None) => return Err(UiError::NotFound("delivery")),
        Err(RedeliverError::Store(e)) => return Err(e.into()),
        Err(e) => format!("Not redelivered: {e}."),
    };
    flash::set(&state, &post.viewer, message).await?;
    Ok(Redirect::to(&format!("/deliveries/{id}")).into_response())
}
