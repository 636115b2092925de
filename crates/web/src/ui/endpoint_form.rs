//! Adding and editing an endpoint (its kind and the kind's settings and secrets, templates with
//! a preview, routing, event types, retry schedule, limits); the new endpoint's signing secret
//! is shown once.

use std::collections::HashMap;

use askama::Template;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use driftwatch_channels::EndpointKind;
use driftwatch_core::EventType;
use driftwatch_store::Endpoint;
use driftwatch_store::endpoints::{self, EndpointChanges};
use driftwatch_validate::{ChannelInput, Current, EndpointInput, EndpointPatch, FieldError, Invalid};

use super::endpoint_channel::{self, ChannelForm, FormField, Preview};
use super::endpoint_timing::{self, TimingForm};
use super::error::UiError;
use super::flash;
use super::form::{self, Field};
use super::layout::{Layout, html, render};
use super::session::{Post, Viewer};
use crate::AppState;

/// Event types an endpoint can subscribe to (a test event always arrives).
const SUBSCRIBABLE: [EventType; 10] = [
    EventType::ChangeDetected,
    EventType::ConditionMet,
    EventType::ConditionCleared,
    EventType::ExpectationMissed,
    EventType::ExpectationMet,
    EventType::CheckFailed,
    EventType::SelectorMissing,
    EventType::ValueMissing,
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
    /// The kind's own fields, templates and route.
    channel: ChannelForm,
    /// `preview` when the preview button was pressed.
    action: String,
    /// What was typed in the Apprise import form.
    apprise_url: String,
    /// At once or a digest, and quiet hours.
    timing: TimingForm,
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
            channel: ChannelForm::from_pairs(pairs),
            action: get("action"),
            apprise_url: String::new(),
            timing: TimingForm::from_pairs(pairs),
        }
    }

    fn of(e: &Endpoint, secrets: Option<&str>, zone: &str) -> EndpointForm {
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
            channel: ChannelForm::of(e, secrets),
            action: String::new(),
            apprise_url: String::new(),
            timing: TimingForm::of(e, zone),
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
    /// The kinds offered (at creation).
    kinds: Vec<(&'static str, &'static str)>,
    /// The account's watches (id, name) for routing.
    watches: Vec<(String, String)>,
    /// The message as it would be sent, after "Preview".
    preview: Option<Preview>,
}

impl EndpointFormPage {
    fn f(&self, field: &str, value: &str) -> Field {
        Field { value: value.to_owned(), error: self.errors.get(field).cloned() }
    }

    /// A kind-specific field as typed.
    fn c(&self, field: &str) -> Field {
        self.f(field, self.form.channel.values.get(field).map_or("", String::as_str))
    }

    /// The kinds whose fields to render: all of them at creation (the chosen one shows), the
    /// endpoint's own when editing.
    fn shown_kinds(&self) -> Vec<EndpointKind> {
        let chosen = self.form.kind.parse::<EndpointKind>().ok();
        match &self.endpoint_id {
            Some(_) => chosen.into_iter().collect(),
            None => EndpointKind::ALL.to_vec(),
        }
    }

    fn kind_fields(&self, kind: &EndpointKind) -> Vec<FormField> {
        endpoint_channel::fields(*kind)
    }

    fn url_hint(&self) -> String {
        let kind: Option<EndpointKind> = self.endpoint_id.as_ref().and_then(|_| self.form.kind.parse().ok());
        let hint = endpoint_channel::url_hint(kind);
        match kind {
            Some(kind) if kind.spec().credential_url => {
                format!("{hint} It is a key, so it is stored encrypted and shown masked: leave it as it is to keep it.")
            }
            _ => hint.to_owned(),
        }
    }

    /// A field's hint; a stored secret's says it is kept when left empty.
    fn hint_for(&self, field: &FormField) -> String {
        let hint = field.hint;
        if self.stored(field) { format!("Set. Leave empty to keep it. {hint}") } else { hint.to_owned() }
    }

    /// Whether `field` is a secret with a stored value (which the form can remove).
    fn stored(&self, field: &FormField) -> bool {
        field.secret && self.form.channel.secrets_set.contains(&field.name)
    }

    /// An error about the kind's settings as a whole.
    fn kind_error(&self, kind: &EndpointKind) -> Option<&String> {
        self.errors.get(&format!("{kind}_fields"))
    }

    /// Whether a digest or quiet-hours field has an error (its section then opens).
    fn timing_error(&self) -> bool {
        self.errors.keys().any(|k| k.starts_with("digest_") || k.starts_with("quiet_"))
    }

    fn routed(&self, watch_id: &str) -> bool {
        self.form.channel.route_watches.iter().any(|w| w == watch_id)
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
        let kind = form.kind.parse().unwrap_or(EndpointKind::Webhook);
        let field = endpoint_timing::form_field(&e.field)
            .map_or_else(|| endpoint_channel::form_field(kind, &e.field), str::to_owned);
        errors.entry(field).or_insert(e.message);
    }
    let types = SUBSCRIBABLE.iter().map(|t| (t.as_str(), form.event_types.iter().any(|s| s == t.as_str()))).collect();
    let title = if endpoint_id.is_some() { "Edit endpoint" } else { "Add an endpoint" };
    EndpointFormPage {
        layout: Layout::signed_in(viewer, "endpoints", title),
        endpoint_id,
        form,
        errors,
        types,
        kinds: endpoint_channel::kinds(),
        watches: Vec::new(),
        preview: None,
    }
}

/// The page with the account's watches for the route picker.
async fn full_page(
    state: &AppState,
    viewer: &Viewer,
    endpoint_id: Option<String>,
    form: EndpointForm,
    invalid: Vec<FieldError>,
) -> Result<EndpointFormPage, UiError> {
    let account = viewer.account_id().to_owned();
    let watches = state.store.read(move |c| driftwatch_store::watches::watch_names(c, &account, 1000)).await?;
    Ok(EndpointFormPage { watches, ..page(viewer, endpoint_id, form, invalid) })
}

/// `GET /endpoints/new`.
pub async fn new(State(state): State<AppState>, viewer: Viewer) -> Result<Response, UiError> {
    let timing = TimingForm::new_in(&viewer.user.time_zone);
    let form = EndpointForm { kind: "webhook".into(), timing, ..EndpointForm::default() };
    Ok(html(&full_page(&state, &viewer, None, form, Vec::new()).await?))
}

/// `GET /endpoints/{id}/edit`.
pub async fn edit(State(state): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> Result<Response, UiError> {
    let endpoint = find(&state, &viewer, &id).await?;
    let opened = endpoint.secrets.as_deref().and_then(|s| state.open(s));
    let form = EndpointForm::of(&endpoint, opened.as_deref(), &viewer.user.time_zone);
    Ok(html(&full_page(&state, &viewer, Some(endpoint.id.clone()), form, Vec::new()).await?))
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
    let kind = form.kind.parse::<EndpointKind>().unwrap_or_else(|_| {
        errors.push(FieldError::new("kind", "choose a kind"));
        EndpointKind::Webhook
    });
    let channel = form.channel.channel(kind, None, &mut errors);
    if form.action == "preview" {
        return preview_page(&state, &post.viewer, None, form, kind, channel, errors).await;
    }
    let input = EndpointInput {
        url: form.url.clone(),
        description: Some(form.description.clone()),
        kind: Some(kind),
        retry_schedule: Some(form.retry_schedule.clone()),
        max_attempts: EndpointForm::number("max_attempts", &form.max_attempts, &mut errors),
        rate_limit_per_second: EndpointForm::number("rate_limit_per_second", &form.rate_limit_per_second, &mut errors),
        max_in_flight: EndpointForm::number("max_in_flight", &form.max_in_flight, &mut errors),
        event_types: form.event_types(&mut errors),
        channel,
        route: form.channel.route(),
        delivery: form.timing.delivery(),
        quiet_hours: form.timing.quiet_hours(),
    };
    let result = driftwatch_validate::new_endpoint(input, state.policy, post.viewer.account_id(), state.clock.now());
    let endpoint = match (result, errors.is_empty()) {
        (Ok(endpoint), true) => endpoint,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            let page = full_page(&state, &post.viewer, None, form, errors).await?;
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    if let Some(watches) = &endpoint.route_watches
        && let Some(bad) = foreign_watch(&state, &post.viewer, watches).await?
    {
        let page = full_page(&state, &post.viewer, None, form, vec![FieldError::new("route.watches", bad)]).await?;
        return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
    }
    let stored = state.sealed(&endpoint);
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
    let mut form = EndpointForm::from_pairs(&post.form);
    form.kind = current.kind.clone();
    let mut errors = Vec::new();
    let opened = current.secrets.as_deref().and_then(|s| state.open(s));
    form.channel.secrets_set = ChannelForm::of(&current, opened.as_deref()).secrets_set;
    let kind = current.kind.parse::<EndpointKind>().unwrap_or(EndpointKind::Webhook);
    let channel = form.channel.channel(kind, opened.as_deref(), &mut errors);
    if form.action == "preview" {
        return preview_page(&state, &post.viewer, Some(id), form, kind, channel, errors).await;
    }
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
        settings: channel.settings,
        secrets: channel.secrets,
        title_template: Some(channel.title_template),
        body_template: Some(channel.body_template),
        route: Some(form.channel.route()),
        delivery: Some(form.timing.delivery()),
        quiet_hours: Some(form.timing.quiet_hours()),
    };
    let changes = match (changes_to(&state, &current, patch), errors.is_empty()) {
        (Ok(changes), true) => changes,
        (result, _) => {
            errors.extend(result.err().map(|Invalid(e)| e).unwrap_or_default());
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page(&post.viewer, Some(id), form, errors)));
        }
    };
    store_changes(&state, &post.viewer, &id, changes).await?;
    flash::set(&state, &post.viewer, "Endpoint saved.").await?;
    Ok(Redirect::to(&format!("/endpoints/{id}")).into_response())
}

/// The changes `patch` makes to `current` (checked with its secrets and credential URL
/// opened), with what they set sealed; every field at fault when invalid.
fn changes_to(state: &AppState, current: &Endpoint, patch: EndpointPatch) -> Result<EndpointChanges, Invalid> {
    let opened = current.secrets.as_deref().and_then(|s| state.open(s));
    let url = current.url_secret.as_deref().and_then(|s| state.open(s));
    let at = Current { endpoint: current, secrets: opened.as_deref(), url: url.as_deref() };
    let mut changes = driftwatch_validate::endpoint_changes(patch, at, state.policy, state.clock.now())?;
    state.seal_changes(&mut changes);
    Ok(changes)
}

/// Stores `changes` to the viewer's endpoint `id` and wakes the worker (limits may have changed).
async fn store_changes(state: &AppState, viewer: &Viewer, id: &str, changes: EndpointChanges) -> Result<(), UiError> {
    let (account, id) = (viewer.account_id().to_owned(), id.to_owned());
    state
        .store
        .write(move |c| endpoints::update_endpoint(c, &account, &id, &changes))
        .await?
        .ok_or(UiError::NotFound("endpoint"))?;
    state.worker.wake();
    Ok(())
}

/// `POST /endpoints/{id}/remove-secret`: removes the stored secret the `remove` button names
/// (its form name, like `email_password`), then to the endpoint's page, which says what
/// happened.
pub async fn remove_secret(
    State(state): State<AppState>,
    Path(id): Path<String>,
    post: Post<Vec<(String, String)>>,
) -> Result<Response, UiError> {
    let current = find(&state, &post.viewer, &id).await?;
    let kind = current.kind.parse::<EndpointKind>().unwrap_or(EndpointKind::Webhook);
    let name = form::value(&post.form, "remove");
    let Some(field) = kind.spec().fields.iter().find(|f| f.secret && kind.form_name(f) == name) else {
        return Err(UiError::BadRequest("no such secret".into()));
    };
    let patch = EndpointPatch { secrets: Some(serde_json::json!({ field.key: null })), ..EndpointPatch::default() };
    let notice = match changes_to(&state, &current, patch) {
        Ok(changes) => {
            store_changes(&state, &post.viewer, &id, changes).await?;
            tracing::info!(endpoint.id = %id, secret = field.key, "stored secret removed from the UI");
            format!("{} removed.", field.label)
        }
        Err(Invalid(errors)) => {
            let why: Vec<String> = errors.into_iter().map(|e| e.message).collect();
            format!("{} not removed: {}.", field.label, why.join("; "))
        }
    };
    flash::set(&state, &post.viewer, notice).await?;
    Ok(Redirect::to(&format!("/endpoints/{id}")).into_response())
}

/// Why a routed watch id is not acceptable: it is not one of the viewer's watches.
async fn foreign_watch(state: &AppState, viewer: &Viewer, ids: &str) -> Result<Option<String>, UiError> {
    let ids: Vec<String> = ids.split(',').map(str::to_owned).collect();
    let (account, wanted) = (viewer.account_id().to_owned(), ids.clone());
    let found = state.store.read(move |c| driftwatch_store::watches::names_of(c, &account, &wanted)).await?;
    Ok(ids.iter().find(|id| !found.iter().any(|(f, _)| f == *id)).map(|id| format!("no watch {id}")))
}

/// The form again with the message it would send (nothing saved): the templates are checked
/// first, so an error stands beside its field.
async fn preview_page(
    state: &AppState,
    viewer: &Viewer,
    endpoint_id: Option<String>,
    form: EndpointForm,
    kind: EndpointKind,
    channel: ChannelInput,
    mut errors: Vec<FieldError>,
) -> Result<Response, UiError> {
    let sample = driftwatch_channels::Context::sample(None);
    for (field, source) in [("title_template", &channel.title_template), ("body_template", &channel.body_template)] {
        if let Some(source) = source.as_deref().filter(|s| !s.trim().is_empty())
            && let Err(e) = driftwatch_channels::template::check(source, &sample)
        {
            errors.push(FieldError::new(field, e.to_string()));
        }
    }
    let preview =
        if errors.is_empty() { Some(endpoint_channel::preview_of(state, viewer, kind, &channel).await?) } else { None };
    let status = if errors.is_empty() { StatusCode::OK } else { StatusCode::UNPROCESSABLE_ENTITY };
    let page = EndpointFormPage { preview, ..full_page(state, viewer, endpoint_id, form, errors).await? };
    Ok(render(status, &page))
}

/// `POST /endpoints/import`: an endpoint from an Apprise notification URL.
pub async fn import(State(state): State<AppState>, post: Post<Vec<(String, String)>>) -> Result<Response, UiError> {
    let apprise_url = form::value(&post.form, "apprise_url");
    let endpoint = driftwatch_validate::from_apprise(apprise_url.trim()).map_err(|e| vec![e]).and_then(|input| {
        driftwatch_validate::new_endpoint(input, state.policy, post.viewer.account_id(), state.clock.now()).map_err(
            |Invalid(errors)| {
                errors
                    .into_iter()
                    .map(|e| FieldError::new("apprise_url", format!("{}: {}", e.field, e.message)))
                    .collect()
            },
        )
    });
    let endpoint = match endpoint {
        Ok(endpoint) => endpoint,
        Err(errors) => {
            let form = EndpointForm { kind: "webhook".into(), apprise_url, ..EndpointForm::default() };
            let page = full_page(&state, &post.viewer, None, form, errors).await?;
            return Ok(render(StatusCode::UNPROCESSABLE_ENTITY, &page));
        }
    };
    let stored = state.sealed(&endpoint);
    state.store.write(move |c| endpoints::insert_endpoint(c, &stored)).await?;
    tracing::info!(endpoint.id = %endpoint.id, kind = %endpoint.kind, "endpoint imported from an Apprise URL in the UI");
    flash::set(
        &state,
        &post.viewer,
        format!("Imported as a {} endpoint. Send a test event to see it arrive.", endpoint.kind),
    )
    .await?;
    Ok(Redirect::to(&format!("/endpoints/{}", endpoint.id)).into_response())
}
