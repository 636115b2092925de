//! Endpoints: the list with health (circuit, failures in a row, last success, success rate and
//! median latency over 24 h), one endpoint with its actions (enable or disable, rotate the
//! secret, send a test event and show its result, recover since a time: dry-run count first).

pub(super) mod recovery;
pub(super) mod timing;

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{NaiveDateTime, TimeDelta};
use driftwatch_core::new_webhook_secret;
use driftwatch_delivery::RequestError;
use driftwatch_store::overview::{self, EndpointHealth};
use driftwatch_store::{Circuit, Endpoint, Page, Recovery, deliveries, endpoints, recoveries};
use serde::Deserialize;

use super::error::UiError;
use super::flash;
use super::layout::{Layout, html};
use super::present::When;
use super::session::{Post, Viewer};
use crate::AppState;

/// An endpoint with what its health says to people.
#[derive(Debug, Clone)]
pub struct EndpointRow {
    /// The endpoint.
    pub endpoint: Endpoint,
    /// `closed`, `open` (failing, paused) or `half_open` (probing); `disabled`.
    pub circuit: &'static str,
    /// What the circuit state says to people: `healthy`, `paused after failures`, `probing`,
    /// `disabled`.
    pub health: &'static str,
    /// Success rate over 24 h, in percent, when there were attempts.
    pub success_rate: Option<i64>,
    /// Attempts over 24 h.
    pub attempts: i64,
    /// Median latency over 24 h.
    pub median_ms: Option<i64>,
    /// Last successful delivery.
    pub last_success: Option<When>,
}

fn circuit(endpoint: &Endpoint, now: NaiveDateTime) -> &'static str {
    if !endpoint.enabled {
        return "disabled";
    }
    match endpoint.circuit(now) {
        Circuit::Open => "open",
        Circuit::HalfOpen => "half_open",
        Circuit::Closed => "closed",
    }
}

/// The words for a circuit state: "closed" reads like "switched off" to most people.
fn health_words(circuit: &str) -> &'static str {
    match circuit {
        "closed" => "healthy",
        "open" => "paused after failures",
        "half_open" => "probing",
        _ => "disabled",
    }
}

async fn rows(state: &AppState, viewer: &Viewer, list: Vec<Endpoint>) -> Result<Vec<EndpointRow>, UiError> {
    let now = state.clock.now();
    let ids: Vec<String> = list.iter().map(|e| e.id.clone()).collect();
    let since = (now - TimeDelta::hours(24)).naive_utc();
    let mut health = state.store.read(move |c| overview::endpoint_health(c, &ids, since)).await?;
    let zone = viewer.user.time_zone.as_str();
    Ok(list
        .into_iter()
        .map(|endpoint| {
            let h: EndpointHealth = health.remove(&endpoint.id).unwrap_or_default();
            let circuit = circuit(&endpoint, now.naive_utc());
            EndpointRow {
                circuit,
                health: health_words(circuit),
                success_rate: (h.attempts > 0).then(|| h.successes * 100 / h.attempts),
                attempts: h.attempts,
                median_ms: h.median_ms,
                last_success: h.last_success.map(|t| When::new(t, now, zone)),
                endpoint,
            }
        })
        .collect())
}

#[derive(Template)]
#[template(path = "endpoints.html")]
struct EndpointsPage {
    layout: Layout,
    rows: Vec<EndpointRow>,
}

impl EndpointsPage {
    /// Every kind an endpoint can be, by name, from the kinds list: "12 kinds: Webhook, Slack,
    /// … or HTTP".
    fn kinds(&self) -> String {
        let names: Vec<&str> = driftwatch_channels::EndpointKind::ALL.iter().map(|k| k.spec().name()).collect();
        let listed = match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        };
        format!("{}: {listed}", driftwatch_core::text::count(names.len(), "kind"))
    }
}

/// `GET /endpoints`.
pub async fn list(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    let account = viewer.account_id().to_owned();
    let list =
        state.store.read(move |c| endpoints::list_endpoints(c, &account, &Page { after: None, limit: 500 })).await?;
    let rows = rows(&state, &viewer, list).await?;
    let notice = flash::take(&state, &viewer).await?;
    Ok(html(&EndpointsPage { layout: Layout::signed_in(&viewer, "endpoints", "Endpoints").with_notice(notice), rows }))
}

/// The result of a test event, shown on the endpoint's page.
#[derive(Debug, Clone, Default)]
pub struct TestResult {
    /// The delivery.
    pub delivery_id: String,
    /// The HTTP status.
    pub status: Option<i32>,
    /// The start of the response.
    pub snippet: Option<String>,
    /// The error.
    pub error: Option<String>,
    /// Still waiting for its first attempt.
    pub pending: bool,
}

/// The form of a recovery.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RecoverForm {
    /// `YYYY-MM-DDTHH:MM` in the viewer's zone.
    #[serde(default)]
    since: String,
    /// Optional end, same form.
    #[serde(default)]
    until: String,
    /// Include failed deliveries.
    #[serde(default)]
    failed: Option<String>,
    /// Include dead deliveries.
    #[serde(default)]
    dead: Option<String>,
    /// `count` (dry run) or `start`.
    #[serde(default)]
    action: String,
}

#[derive(Template)]
#[template(path = "endpoint.html")]
struct EndpointPage {
    layout: Layout,
    row: EndpointRow,
    secret: Option<String>,
    test: Option<TestResult>,
    recover: RecoverForm,
    recover_error: Option<(String, String)>,
    dry_run: Option<i64>,
    recoveries: Vec<RecoveryRow>,
    /// What an endpoint without settings of its own gets.
    defaults: Defaults,
    /// The names of the watches it is routed to by choice.
    routed_names: Vec<String>,
    /// When it sends: at once or digests, and quiet hours.
    timing: timing::Timing,
}

/// The server's delivery settings, shown where an endpoint has none of its own.
#[derive(Debug, Clone)]
pub struct Defaults {
    /// The retry schedule, as `1m, 5m, 30m`.
    pub schedule: String,
    /// Attempts before a delivery is dead.
    pub attempts: u32,
    /// Requests in flight to one endpoint, per node.
    pub in_flight: usize,
}

impl Defaults {
    /// The running worker's settings.
    pub fn of(state: &AppState) -> Defaults {
        let config = state.worker.config();
        Defaults {
            schedule: config
                .retry
                .schedule
                .iter()
                .map(|d| driftwatch_core::format_duration(*d))
                .collect::<Vec<_>>()
                .join(", "),
            attempts: config.retry.max_attempts,
            in_flight: config.per_endpoint_concurrency,
        }
    }
}

/// A recovery as listed.
#[derive(Debug, Clone)]
pub struct RecoveryRow {
    /// `rec_...`.
    pub id: String,
    /// `pending`, `running`, `done`.
    pub state: String,
    /// Deliveries matched.
    pub matched: i64,
    /// Re-queued so far.
    pub requeued: i64,
    /// Since.
    pub since: When,
    /// Requested.
    pub at: When,
    /// A dry run.
    pub dry_run: bool,
}

fn recovery_row(r: &Recovery, now: chrono::DateTime<chrono::Utc>, zone: &str) -> RecoveryRow {
    RecoveryRow {
        id: r.id.clone(),
        state: r.state.clone(),
        matched: r.matched,
        requeued: r.requeued,
        since: When::new(r.since, now, zone),
        at: When::new(r.created_at, now, zone),
        dry_run: r.dry_run,
    }
}

/// The viewer's endpoint `id`, or the 404 page.
async fn find(state: &AppState, viewer: &Viewer, id: &str) -> Result<Endpoint, UiError> {
    let (account, id) = (viewer.account_id().to_owned(), id.to_owned());
    state.store.read(move |c| endpoints::get_endpoint(c, &account, &id)).await?.ok_or(UiError::NotFound("endpoint"))
}

impl EndpointPage {
    async fn load(state: &AppState, viewer: &Viewer, endpoint: Endpoint) -> Result<EndpointPage, UiError> {
        let (account, id) = (viewer.account_id().to_owned(), endpoint.id.clone());
        let list = state
            .store
            .read(move |c| recoveries::list_recoveries(c, &account, Some(&id), &Page { after: None, limit: 10 }))
            .await?;
        let now = state.clock.now();
        let zone = viewer.user.time_zone.clone();
        let routed: Vec<String> = endpoint
            .route_watches
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let account = viewer.account_id().to_owned();
        let mut routed_names: Vec<String> = state
            .store
            .read(move |c| driftwatch_store::watches::names_of(c, &account, &routed))
            .await?
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        routed_names.sort();
        let timing = timing::Timing::load(state, viewer, &endpoint, now).await?;
        let row = rows(state, viewer, vec![endpoint]).await?.remove(0);
        let (notice, reveal) = flash::take_with_reveal(state, viewer).await?;
        let secret = reveal.filter(|r| r.of == row.endpoint.id).map(|r| r.value);
        Ok(EndpointPage {
            layout: Layout::signed_in(viewer, "endpoints", row.endpoint.url.clone()).with_notice(notice),
            row,
            secret,
            test: None,
            recover: RecoverForm { failed: Some("on".into()), dead: Some("on".into()), ..RecoverForm::default() },
            recover_error: None,
            dry_run: None,
            recoveries: list.iter().map(|r| recovery_row(r, now, &zone)).collect(),
            defaults: Defaults::of(state),
            routed_names,
            timing,
        })
    }

    /// Whether it has a signing secret to rotate (its kind signs its requests).
    fn signed(&self) -> bool {
        driftwatch_validate::may_rotate_secret(&self.row.endpoint.kind).is_ok()
    }

    /// Which watches it receives, in words.
    fn route_words(&self) -> String {
        let e = &self.row.endpoint;
        let tags = e.route_tags.as_deref().map(|t| format!("watches tagged {}", t.replace(',', ", ")));
        let watches = (!self.routed_names.is_empty()).then(|| self.routed_names.join(", "));
        match (tags, watches) {
            (None, None) if e.route_watches.is_some() => "none (its chosen watches are gone)".to_owned(),
            (None, None) => "every watch (muted watches excepted)".to_owned(),
            (Some(t), None) => t,
            (None, Some(w)) => w,
            (Some(t), Some(w)) => format!("{t}; and {w}"),
        }
    }
}

/// `GET /endpoints/{id}`.
pub async fn show(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> Result<Response, UiError> {
    let endpoint = find(&state, &viewer, &id).await?;
    Ok(html(&EndpointPage::load(&state, &viewer, endpoint).await?))
}

/// `POST /endpoints/{id}/enable` and `/disable`.
async fn switch(
    state: AppState,
    post: Post<Vec<(String, String)>>,
    id: String,
    enabled: bool,
) -> Result<Response, UiError> {
    let (account, now) = (post.viewer.account_id().to_owned(), state.clock.now().naive_utc());
    let target = id.clone();
    state
        .store
        .write(move |c| endpoints::set_enabled(c, &account, &target, enabled, now))
        .await?
        .ok_or(UiError::NotFound("endpoint"))?;
    if enabled {
        state.worker.wake();
    }
    tracing::info!(endpoint.id = %id, enabled, "endpoint switched from the UI");
    flash::set(
        &state,
        &post.viewer,
        if enabled { "Enabled: waiting deliveries resume." } else { "Disabled: deliveries wait until you enable it." },
    )
    .await?;
    Ok(Redirect::to(&format!("/endpoints/{id}")).into_response())
}

/// `POST /endpoints/{id}/enable`.
pub async fn enable(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    switch(state, post, id, true).await
}

/// `POST /endpoints/{id}/disable`.
pub async fn disable(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    switch(state, post, id, false).await
}

/// `POST /endpoints/{id}/rotate-secret`: the new secret is shown this once.
pub async fn rotate(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    if let Err(refused) = driftwatch_validate::may_rotate_secret(&find(&state, &post.viewer, &id).await?.kind) {
        flash::set(&state, &post.viewer, format!("Not rotated: {refused}.")).await?;
        return Ok(Redirect::to(&format!("/endpoints/{id}")).into_response());
    }
    let now = state.clock.now().naive_utc();
    let overlap = TimeDelta::from_std(state.limits.secret_rotation_overlap).unwrap_or(TimeDelta::days(1));
    let secret = new_webhook_secret();
    // Sealed like every stored secret (it was once written here in the clear).
    let (account, stored) = (post.viewer.account_id().to_owned(), state.seal(&secret));
    let endpoint = state
        .store
        .write(move |c| endpoints::rotate_secret(c, &account, &id, &stored, now + overlap, now))
        .await?
        .ok_or(UiError::NotFound("endpoint"))?;
    tracing::info!(endpoint.id = %endpoint.id, "endpoint secret rotated from the UI");
    let reveal = flash::Reveal { of: endpoint.id.clone(), value: secret, label: String::new() };
    let notice =
        "New secret made. Copy it now: it is not shown again. The old one keeps signing alongside it for a day.";
    flash::set_reveal(&state, &post.viewer, notice, reveal).await?;
    Ok(Redirect::to(&format!("/endpoints/{}", endpoint.id)).into_response())
}

/// The page of a just-created endpoint, with its signing secret shown this once.
pub async fn created(state: &AppState, viewer: &Viewer, endpoint: Endpoint) -> Result<Response, UiError> {
    // Post/Redirect/Get: reloading the endpoint's page cannot add it again; its secret comes
    // through the session, this once.
    // Only a kind that signs has a signing secret to show.
    if !endpoint.secret.is_empty() {
        let reveal = flash::Reveal { of: endpoint.id.clone(), value: endpoint.secret.clone(), label: String::new() };
        let notice = "Endpoint added. Copy its signing secret now: it is not shown again.";
        flash::set_reveal(state, viewer, notice, reveal).await?;
    } else {
        flash::set(state, viewer, "Endpoint added. Send a test event to see it arrive.").await?;
    }
    Ok(Redirect::to(&format!("/endpoints/{}", endpoint.id)).into_response())
}

/// How long the page waits for a test event's first attempt.
const TEST_WAIT: std::time::Duration = std::time::Duration::from_secs(15);

/// `POST /endpoints/{id}/test`: queues a test event, waits for its first attempt, shows it.
pub async fn test(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let endpoint = find(&state, &post.viewer, &id).await?;
    let delivery = match state.worker.queue_test(&endpoint).await {
        Ok(delivery) => delivery,
        Err(RequestError::Store(e)) => return Err(e.into()),
        Err(e) => {
            flash::set(&state, &post.viewer, format!("No test sent: {e}.")).await?;
            return Ok(Redirect::to(&format!("/endpoints/{id}")).into_response());
        }
    };
    // The worker takes it at once; wait for the attempt's record, briefly.
    let deadline = tokio::time::Instant::now() + TEST_WAIT;
    let mut result = TestResult { delivery_id: delivery.id.clone(), pending: true, ..TestResult::default() };
    while tokio::time::Instant::now() < deadline {
        let (account, id) = (post.viewer.account_id().to_owned(), delivery.id.clone());
        let attempts = state.store.read(move |c| deliveries::list_attempts(c, &account, &id)).await?;
        if let Some(first) = attempts.into_iter().next() {
            result = TestResult {
                delivery_id: delivery.id.clone(),
                status: first.status_code,
                snippet: first.response_snippet,
                error: first.error,
                pending: false,
            };
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut page = EndpointPage::load(&state, &post.viewer, endpoint).await?;
    page.test = Some(result);
    Ok(html(&page))
}
