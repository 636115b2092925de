//! Adding and editing an endpoint (webhook or Slack, event types, retry schedule, limits);
//! the new endpoint's signing secret is shown once.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_core::{EndpointKind, EventType};
use driftwatch_store::{Endpoint, endpoints};
use driftwatch_validate::{ChannelInput, Current, EndpointInput, EndpointPatch, FieldError, Invalid};

use super::error::UiError;
use super::flash;
use super::form::{self, Field};
use super::layout::{Layout, html, render};
use super::session::{Post, Viewer};
use crate::AppState;

/// Event types an endpoint can subscribe to (a test event always arrives).
const SUBSCRIBABLE: [EventType; 5] = [
    EventType::ChangeDetected,
    EventType::CheckFailed,
    EventType::SelectorMissing,
    EventType::CheckRecovered,
    EventType::EndpointDisabled,
];

/// The form as posted.
#[derive(Debug, Clone, Default)]
pub struct EndpointForm {
    url: String,
    description: String,
    kind: String,
    retry_schedule: String,
    max_attempts: String,
    rate_limit_per_second: String,
    max_in_flight: String,
    /// Empty: every type.
    event_types: Vec<String>,
}

impl EndpointForm {
    fn from_pairs(pairs: &[(String, String)]) -> EndpointForm {
        let get = |name: &str| form::value(pairs, name);
        EndpointForm {
            url: get("url"),
            description: get("description"),
            kind: get("kind"),
            retry_schedule: get("retry_schedule"),
            max_attempts: get("max_attempts"),
            rate_limit_per_second: get("rate_limit_per_second"),
            max_in_flight: get("max_in_flight"),
            event_types: pairs.iter().filter(|(k, _)| k == "event_types").map(|(_, v)| v.clone()).collect(),
        }
    }

    fn of(e: &Endpoint) -> EndpointForm {
        let n = |v: Option<i32>| v.map(|v| v.to_string()).unwrap_or_default();
        EndpointForm {
            url: e.url.clone(),
            description: e.description.clone(),
            kind: e.kind.clone(),
            retry_schedule: e.retry_schedule.clone().unwrap_or_default(),
            max_attempts: n(e.max_attempts),
            rate_limit_per_second: n(e.rate_limit_per_second),
            max_in_flight: n(e.max_in_flight),
            event_types: e
                .event_types
                .as_deref()
                .map(|t| t.split(',').map(str::to_owned).collect())
                .unwrap_or_default(),
        }
    }

    fn number(field: &str, text: &str, errors: &mut Vec<FieldError>) -> Option<i32> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        text.parse().map_err(|_| errors.push(FieldError::new(field, "enter a whole number"))).ok()
    }

    fn event_types(&self, errors: &mut Vec<FieldError>) -> Option<Vec<EventType>> {
        if self.event_types.is_empty() {
            return None;
        }
        let parsed: Result<Vec<EventType>, _> = self.event_types.iter().map(|t| t.parse::<EventType>()).collect();
        parsed.map_err(|_| errors.push(FieldError::new("event_types", "unknown event type"))).ok()
    }
}

#[derive(Template)]
#[template(path = "endpoint_form.html")]
struct EndpointFormPage {
    layout: Layout,
    endpoint_id: Option<String>,
    form: EndpointForm,
    errors: HashMap<String, String>,
    types: Vec<(&'static str, bool)>,
}

impl EndpointFormPage {
    fn f(&self, field: &str, value: &str) -> Field {
        Field { value: value.to_owned(), error: self.errors.get(field).cloned() }
    }
}

fn page(
    viewer: &Viewer,
    endpoint_id: Option<String>,
    form: EndpointForm,
    invalid: Vec<FieldError>,
) -> EndpointFormPage {
    let mut errors = HashMap::new();
    for e in invalid {
        errors.entry(e.field).or_insert(e.message);
    }
    let types = SUBSCRIBABLE.iter().map(|t| (t.as_str(), form.event_types.iter().any(|s| s == t.as_str()))).collect();
    let title = if endpoint_id.is_some() { "Edit endpoint" } else { "Add an endpoint" };
    EndpointFormPage { layout: Layout::signed_in(viewer, "endpoints", title), endpoint_id, form, errors, types }
}

/// `GET /endpoints/new`.
pub async fn new(viewer: Viewer) -> Response {
    html(&page(&viewer, None, EndpointForm { kind: "webhook".into(), ..EndpointForm::default() }, Vec::new()))
}

/// `GET /endpoints/{id}/edit`.
pub async fn edit(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> Result<Response, UiError> {
    let endpoint = find(&state, &viewer, &id).await?;
    Ok(html(&page(&viewer, Some(endpoint.id.clone()), EndpointForm::of(&endpoint), Vec::new())))
}

/// The viewer's endpoint `id`; another account's id is the 404 page, whatever the request says.
async fn find(state: &AppState, viewer: &Viewer, id: &str) -> Result<driftwatch_store::Endpoint, UiError> {
    let (account, id) = (viewer.account_id().to_owned(), id.to_owned());
    state.store.read(move |c| endpoints::get_endpoint(c, &account, &id)).await?.ok_or(UiError::NotFound("endpoint"))
}

/// `POST /endpoints/new`: creates it and shows its secret once.
pub async fn create(State(state): State<AppState>, post: Post<Vec<(String, String)>>) -> Result<Response, UiError> {
    let form = EndpointForm::from_pairs(&post.form);
    let mut errors = Vec::new();
    let input = EndpointInput {
        url: form.url.clone(),
        description: Some(form.description.clone()),
        kind: Some(if form.kind == "slack" { EndpointKind::Slack } else { EndpointKind::Webhook }),
        retry_schedule: Some(form.retry_schedule.clone()),
        max_attempts: EndpointForm::number("max_attempts", &form.max_attempts, &mut errors),
        rate_limit_per_second: EndpointForm::number("rate_limit_per_second", &form.rate_limit_per_second, &mut errors),
        max_in_flight: EndpointForm::number("max_in_flight", &form.max_in_flight, &mut errors),
        event_types: form.event_types(&mut errors),
        channel: ChannelInput::default(),
        route: None,
    };
    let result = driftwatch_validate::new_endpoint(input, state.policy, post.viewer.account_id(), state.clock.now());
    let endpoint = match (result, errors.is_empty()) {
        (Ok(endpoint), true) => endpoint,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page(&post.viewer, None, form, errors)));
        }
    };
    let mut stored = endpoint.clone();
    stored.secret = state.seal(&stored.secret);
    stored.secrets = stored.secrets.as_deref().map(|s| state.seal(s));
    state.store.write(move |c| endpoints::insert_endpoint(c, &stored)).await?;
    tracing::info!(endpoint.id = %endpoint.id, kind = %endpoint.kind, "endpoint created from the UI");
    super::endpoints::created(&state, &post.viewer, endpoint).await
}

/// `POST /endpoints/{id}/edit`.
pub async fn update(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    // Whose endpoint it is comes first: another account's id answers 404 even to a bad form.
    let current = find(&state, &post.viewer, &id).await?;
    let form = EndpointForm::from_pairs(&post.form);
    let mut errors = Vec::new();
    let optional = |text: &str| Some(text.trim().to_owned()).filter(|t| !t.is_empty());
    let patch = EndpointPatch {
        url: Some(form.url.clone()),
        description: Some(form.description.clone()),
        retry_schedule: Some(optional(&form.retry_schedule)),
        max_attempts: Some(EndpointForm::number("max_attempts", &form.max_attempts, &mut errors)),
        rate_limit_per_second: Some(EndpointForm::number(
            "rate_limit_per_second",
            &form.rate_limit_per_second,
            &mut errors,
        )),
        max_in_flight: Some(EndpointForm::number("max_in_flight", &form.max_in_flight, &mut errors)),
        event_types: Some(form.event_types(&mut errors)),
        ..EndpointPatch::default()
    };
    let opened = current.secrets.as_deref().and_then(|s| state.open(s));
    let current = Current { endpoint: &current, secrets: opened.as_deref() };
    let changes = match (
        driftwatch_validate::endpoint_changes(patch, current, state.policy, state.clock.now()),
        errors.is_empty(),
    ) {
        (Ok(changes), true) => changes,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page(&post.viewer, Some(id), form, errors)));
        }
    };
    let (account, target) = (post.viewer.account_id().to_owned(), id.clone());
    state
        .store
        .write(move |c| endpoints::update_endpoint(c, &account, &target, &changes))
        .await?
        .ok_or(UiError::NotFound("endpoint"))?;
    state.worker.wake();
    flash::set(&state, &post.viewer, "Endpoint saved.").await?;
    Ok(Redirect::to(&format!("/endpoints/{id}")).into_response())
}
