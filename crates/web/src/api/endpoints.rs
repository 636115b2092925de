//! `/endpoints`: where events are delivered, their health, secrets and recoveries.

pub(super) mod actions;
pub(super) mod digest;

use axum::extract::State;
use axum::http::StatusCode;
use driftwatch_channels::EndpointKind;
use driftwatch_core::EventType;
use driftwatch_store::endpoints;
use serde::Deserialize;
use utoipa::ToSchema;

use super::{PageParams, page_of_with};
use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Json, Path, Query};
use crate::api::views::{self, List};
use driftwatch_validate::{ChannelInput, Current, EndpointInput, EndpointPatch, RouteInput};

/// Body of `POST /endpoints`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEndpoint {
    /// Where to send; what it is depends on the kind (a webhook URL, an API server, or the SMTP
    /// server `smtp://host:port`: see `kind`). Kinds with a public service use it when left empty.
    #[serde(default)]
    #[schema(
        pattern = "^(\\s*([Hh][Tt][Tt][Pp][Ss]?|[Ss][Mm][Tt][Pp])://[^/?#\\s]+([/?#][\\s\\S]*)?)?$",
        max_length = 2048
    )]
    url: String,
    /// A note for people.
    #[schema(max_length = 500)]
    description: Option<String>,
    /// The kind (`webhook`, signed Standard Webhooks, when left out).
    kind: Option<EndpointKind>,
    /// Delays between attempts, e.g. `30s,5m,1h` (at most 20, each at most 7 days); the global one when left out.
    #[schema(pattern = "^\\s*([0-9]{1,9}\\s*(ms|s|m|h|d)?\\s*(,\\s*[0-9]{1,9}\\s*(ms|s|m|h|d)?\\s*){0,19})?$")]
    retry_schedule: Option<String>,
    /// Attempts before a delivery is dead.
    #[schema(minimum = 1, maximum = 50)]
    max_attempts: Option<i32>,
    /// At most this many requests a second to this endpoint.
    #[schema(minimum = 1, maximum = 10_000)]
    rate_limit_per_second: Option<i32>,
    /// At most this many requests in flight to this endpoint.
    #[schema(minimum = 1, maximum = 1_000)]
    max_in_flight: Option<i32>,
    /// Receive only these event types (a test event is always delivered); all of them when left out.
    #[schema(min_items = 1)]
    event_types: Option<Vec<EventType>>,
    /// The kind's settings (see `KindFields`).
    #[schema(value_type = Option<driftwatch_channels::kinds::KindFields>)]
    settings: Option<serde_json::Value>,
    /// The kind's secrets, stored encrypted and never shown again (see `KindFields`).
    #[schema(value_type = Option<driftwatch_channels::kinds::KindFields>)]
    secrets: Option<serde_json::Value>,
    /// A title template (MiniJinja; see the README for the variables); the kind's default when left out.
    #[schema(max_length = 16384)]
    title_template: Option<String>,
    /// A body template (for `http`, the whole request body); the kind's default when left out.
    #[schema(max_length = 16384)]
    body_template: Option<String>,
    /// Receive only these watches' events; every watch when left out.
    route: Option<RouteBody>,
    /// At once when left out; `{"mode": "digest", "cron": "0 8 * * *", "time_zone":
    /// "Europe/Berlin"}` (or `"every": "1d"`) gathers events into one message per period, but for
    /// the `urgent` types.
    delivery: Option<driftwatch_core::DeliveryMode>,
    /// Hours in which deliveries wait (they go when the hours end); the account's when left out.
    quiet_hours: Option<driftwatch_core::QuietHours>,
}

/// Which watches an endpoint receives: those with any of `tags`, and those listed in `watches`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteBody {
    /// Watches with any of these tags.
    tags: Option<Vec<String>>,
    /// These watches (`wat_...`).
    watches: Option<Vec<String>>,
}

impl From<RouteBody> for RouteInput {
    fn from(r: RouteBody) -> RouteInput {
        RouteInput { tags: r.tags, watches: r.watches }
    }
}

/// Body of `PATCH /endpoints/{id}`: only the fields given change; `null` returns a setting to
/// the global default.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEndpoint {
    /// A new URL.
    #[schema(
        pattern = "^\\s*([Hh][Tt][Tt][Pp][Ss]?|[Ss][Mm][Tt][Pp])://[^/?#\\s]+([/?#][\\s\\S]*)?$",
        min_length = 1,
        max_length = 2048
    )]
    url: Option<String>,
    /// A new description.
    #[schema(max_length = 500)]
    description: Option<String>,
    /// A new retry schedule, or `null` for the global one.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    #[schema(pattern = "^\\s*([0-9]{1,9}\\s*(ms|s|m|h|d)?\\s*(,\\s*[0-9]{1,9}\\s*(ms|s|m|h|d)?\\s*){0,19})?$")]
    retry_schedule: Option<Option<String>>,
    /// A new attempt budget, or `null` for the global one.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    #[schema(minimum = 1, maximum = 50)]
    max_attempts: Option<Option<i32>>,
    /// A new rate limit, or `null` for none.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    #[schema(minimum = 1, maximum = 10_000)]
    rate_limit_per_second: Option<Option<i32>>,
    /// A new in-flight cap, or `null` for the global one.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    #[schema(minimum = 1, maximum = 1_000)]
    max_in_flight: Option<Option<i32>>,
    /// New event types to receive, or `null` for all of them.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    #[schema(min_items = 1)]
    event_types: Option<Option<Vec<EventType>>>,
    /// New settings (all of them; see `KindFields`).
    #[schema(value_type = Option<driftwatch_channels::kinds::KindFields>)]
    settings: Option<serde_json::Value>,
    /// Secrets to change (see `KindFields`): each one named replaces the stored one, `null`
    /// removes it (`{"password": null}`), and those not named are kept.
    #[schema(value_type = Option<driftwatch_channels::kinds::KindFields>)]
    secrets: Option<serde_json::Value>,
    /// A new title template, or `null` for the default.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    title_template: Option<Option<String>>,
    /// A new body template, or `null` for the default.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    body_template: Option<Option<String>>,
    /// A new route, or `null` for every watch.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    route: Option<Option<RouteBody>>,
    /// A new delivery mode, or `null` for at once (what a digest gathered so far goes out now).
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    delivery: Option<Option<driftwatch_core::DeliveryMode>>,
    /// New quiet hours, or `null` for the account's.
    #[serde(default, deserialize_with = "crate::api::extract::present")]
    quiet_hours: Option<Option<driftwatch_core::QuietHours>>,
}

/// Refuses a route naming a watch that is not the account's (as `route.watches[i]`).
async fn check_routed_watches(state: &AppState, account_id: &str, route: Option<&str>) -> Result<(), ApiError> {
    let Some(route) = route else { return Ok(()) };
    let ids: Vec<String> = route.split(',').map(str::to_owned).collect();
    let account = account_id.to_owned();
    let wanted = ids.clone();
    let found = state.store.read(move |c| driftwatch_store::watches::names_of(c, &account, &wanted)).await?;
    if let Some(i) = ids.iter().position(|id| !found.iter().any(|(found, _)| found == id)) {
        return Err(driftwatch_validate::Invalid(vec![driftwatch_validate::FieldError::new(
            format!("route.watches[{i}]"),
            format!("no watch {}", ids[i]),
        )])
        .into());
    }
    Ok(())
}

/// Change an endpoint: only the fields given change; `null` returns a setting to the global default.
#[utoipa::path(
    patch,
    path = "/endpoints/{id}",
    operation_id = "update_endpoint",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    request_body = UpdateEndpoint,
    responses((status = 200, description = "The endpoint as changed.", body = views::Endpoint))
)]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Json(body): Json<UpdateEndpoint>,
) -> Result<axum::Json<views::Endpoint>, ApiError> {
    let current = find(&state, &caller, &id).await?;
    let patch = EndpointPatch {
        url: body.url,
        description: body.description,
        retry_schedule: body.retry_schedule,
        max_attempts: body.max_attempts,
        rate_limit_per_second: body.rate_limit_per_second,
        max_in_flight: body.max_in_flight,
        event_types: body.event_types,
        settings: body.settings,
        secrets: body.secrets,
        title_template: body.title_template,
        body_template: body.body_template,
        route: body.route.map(|r| r.map(RouteInput::from)),
        delivery: body.delivery,
        quiet_hours: body.quiet_hours,
    };
    let opened = current.secrets.as_deref().and_then(|s| state.open(s));
    let url = current.url_secret.as_deref().and_then(|s| state.open(s));
    let current = Current { endpoint: &current, secrets: opened.as_deref(), url: url.as_deref() };
    let mut changes = driftwatch_validate::endpoint_changes(patch, current, state.policy, state.clock.now())?;
    if let Some(Some(watches)) = &changes.route_watches {
        check_routed_watches(&state, &caller.account_id, Some(watches)).await?;
    }
    state.seal_changes(&mut changes);
    let endpoint = state
        .store
        .write(move |c| endpoints::update_endpoint(c, &caller.account_id, &id, &changes))
        .await?
        .ok_or_else(|| ApiError::not_found("no such endpoint"))?;
    state.worker.wake();
    Ok(axum::Json(views::Endpoint::at(endpoint, state.clock.now().naive_utc())))
}

/// Delete an endpoint with its deliveries.
#[utoipa::path(
    delete,
    path = "/endpoints/{id}",
    operation_id = "delete_endpoint",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    responses((status = 204, description = "Deleted."))
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let deleted = state.store.write(move |c| endpoints::delete_endpoint(c, &caller.account_id, &id)).await?;
    if deleted { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such endpoint")) }
}

/// Add an endpoint. For a kind that signs (`webhook`) the answer carries the signing `secret`,
/// shown this once.
#[utoipa::path(
    post,
    path = "/endpoints",
    operation_id = "create_endpoint",
    tag = "endpoints",
    request_body = CreateEndpoint,
    responses((status = 201, description = "The endpoint, with its secret.", body = views::Endpoint))
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateEndpoint>,
) -> Result<(StatusCode, views::Revealing<views::Endpoint>), ApiError> {
    let input = EndpointInput {
        url: body.url,
        description: body.description,
        kind: body.kind,
        retry_schedule: body.retry_schedule,
        max_attempts: body.max_attempts,
        rate_limit_per_second: body.rate_limit_per_second,
        max_in_flight: body.max_in_flight,
        event_types: body.event_types,
        channel: ChannelInput {
            settings: body.settings,
            secrets: body.secrets,
            title_template: body.title_template,
            body_template: body.body_template,
        },
        route: body.route.map(RouteInput::from),
        delivery: body.delivery,
        quiet_hours: body.quiet_hours,
    };
    let endpoint = insert(&state, &caller, input).await?;
    Ok((StatusCode::CREATED, views::Revealing(views::Endpoint::with_secret(endpoint, state.clock.now().naive_utc()))))
}

/// Validates and stores a new endpoint (its secrets sealed); the endpoint as created.
async fn insert(
    state: &AppState,
    caller: &Caller,
    input: EndpointInput,
) -> Result<driftwatch_store::Endpoint, ApiError> {
    let endpoint = driftwatch_validate::new_endpoint(input, state.policy, &caller.account_id, state.clock.now())?;
    check_routed_watches(state, &caller.account_id, endpoint.route_watches.as_deref()).await?;
    let stored = state.sealed(&endpoint);
    state.store.write(move |c| endpoints::insert_endpoint(c, &stored)).await?;
    tracing::info!(endpoint.id = %endpoint.id, account.id = %endpoint.account_id, kind = %endpoint.kind, "endpoint created");
    Ok(endpoint)
}

/// Body of `POST /endpoints/import`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportEndpoint {
    /// An Apprise notification URL, as changedetection.io stores them: `mailto://`,
    /// `mailtos://`, `discord://`, `tgram://`, `ntfy://`, `ntfys://`, `pover://`, `gotify://`,
    /// `gotifys://`, `matrix://`, `matrixs://`, `json://`, `jsons://`.
    #[schema(min_length = 1, max_length = 2048)]
    apprise_url: String,
    /// A note for people.
    #[schema(max_length = 500)]
    description: Option<String>,
    /// Receive only these watches' events; every watch when left out.
    route: Option<RouteBody>,
    /// At once when left out; `{"mode": "digest", "cron": "0 8 * * *", "time_zone":
    /// "Europe/Berlin"}` (or `"every": "1d"`) gathers events into one message per period, but for
    /// the `urgent` types.
    delivery: Option<driftwatch_core::DeliveryMode>,
    /// Hours in which deliveries wait (they go when the hours end); the account's when left out.
    quiet_hours: Option<driftwatch_core::QuietHours>,
}

/// Add an endpoint from an Apprise notification URL (moving from changedetection.io). What it
/// cannot map is refused, naming the scheme or the part.
#[utoipa::path(
    post,
    path = "/endpoints/import",
    operation_id = "import_endpoint",
    tag = "endpoints",
    request_body = ImportEndpoint,
    responses((status = 201, description = "The endpoint.", body = views::Endpoint))
)]
pub async fn import(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<ImportEndpoint>,
) -> Result<(StatusCode, axum::Json<views::Endpoint>), ApiError> {
    let input = EndpointInput {
        description: body.description,
        route: body.route.map(RouteInput::from),
        delivery: body.delivery,
        quiet_hours: body.quiet_hours,
        ..driftwatch_validate::from_apprise(&body.apprise_url).map_err(|e| driftwatch_validate::Invalid(vec![e]))?
    };
    let endpoint = insert(&state, &caller, input).await?;
    Ok((StatusCode::CREATED, axum::Json(views::Endpoint::at(endpoint, state.clock.now().naive_utc()))))
}

/// The account's endpoints, oldest first.
#[utoipa::path(
    get,
    path = "/endpoints",
    operation_id = "list_endpoints",
    tag = "endpoints",
    params(PageParams),
    responses((status = 200, description = "A page of endpoints.", body = List<views::Endpoint>))
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<List<views::Endpoint>>, ApiError> {
    let (page, limit) = params.to_page()?;
    let rows = state.store.read(move |c| endpoints::list_endpoints(c, &caller.account_id, &page)).await?;
    let now = state.clock.now().naive_utc();
    Ok(axum::Json(page_of_with(rows, limit, |e| &e.id, |e| views::Endpoint::at(e, now))))
}

async fn find(state: &AppState, caller: &Caller, id: &str) -> Result<driftwatch_store::Endpoint, ApiError> {
    let (account, id) = (caller.account_id.clone(), id.to_owned());
    state
        .store
        .read(move |c| endpoints::get_endpoint(c, &account, &id))
        .await?
        .ok_or_else(|| ApiError::not_found("no such endpoint"))
}

/// One endpoint, with its health.
#[utoipa::path(
    get,
    path = "/endpoints/{id}",
    operation_id = "get_endpoint",
    tag = "endpoints",
    params(("id" = String, Path, description = "An endpoint id (`end_...`).")),
    responses((status = 200, description = "The endpoint.", body = views::Endpoint))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<axum::Json<views::Endpoint>, ApiError> {
    Ok(axum::Json(views::Endpoint::at(find(&state, &caller, &id).await?, state.clock.now().naive_utc())))
}
