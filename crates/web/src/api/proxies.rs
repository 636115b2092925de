//! `/proxies`: an account's named proxies, which watches name in `options.fetch.proxy`. A
//! proxy's URL is sealed at rest and shown without its password.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use driftwatch_store::proxies;
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::api::auth::Caller;
use crate::api::error::ApiError;
use crate::api::extract::{Json, Path};

use crate::proxies::{DEFAULT_TEST_URL, SaveError};

/// Body of `POST /proxies` and `PUT /proxies/{name}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveProxy {
    /// What watches call it (1 to 64 letters, digits, `-`, `_` or `.`). In `PUT`, taken from
    /// the path when absent.
    #[schema(min_length = 1, max_length = 64)]
    name: Option<String>,
    /// `http://`, `https://`, `socks5://` or `socks5h://` with a host and port; credentials
    /// allowed (`socks5://user:password@host:1080`).
    url: String,
}

/// Body of `POST /proxies/{name}/test`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestProxy {
    /// The page to fetch through the proxy (default `https://www.example.com/`).
    url: Option<String>,
}

/// One of the account's proxies.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Proxy {
    /// What watches call it.
    name: String,
    /// The URL, its password replaced by `****`.
    url: String,
    /// When it was added.
    created_at: DateTime<Utc>,
    /// When its URL last changed.
    updated_at: DateTime<Utc>,
    /// The last test, if any.
    last_test: Option<ProxyTestView>,
}

/// What the last test of a proxy found.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProxyTestView {
    /// When.
    at: DateTime<Utc>,
    /// Whether the test page answered with a success status through the proxy.
    ok: bool,
    /// The status the test page answered with (absent: no answer).
    status: Option<i32>,
    /// How long the request took, in milliseconds.
    ms: Option<i32>,
    /// What went wrong.
    error: Option<String>,
}

impl From<proxies::Proxy> for Proxy {
    fn from(p: proxies::Proxy) -> Proxy {
        let last_test = p.tested_at.map(|at| ProxyTestView {
            at: at.and_utc(),
            ok: p.error_free(),
            status: p.test_status,
            ms: p.test_ms,
            error: p.test_error.clone(),
        });
        Proxy {
            name: p.name,
            url: p.shown,
            created_at: p.created_at.and_utc(),
            updated_at: p.updated_at.and_utc(),
            last_test,
        }
    }
}

/// The account's proxies, by name.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProxyList {
    /// Every proxy of the account.
    data: Vec<Proxy>,
}

fn save_error(e: SaveError) -> ApiError {
    match e {
        SaveError::Field(e) => e.into(),
        SaveError::Store(e) => e.into(),
    }
}

/// Add a proxy.
#[utoipa::path(
    post,
    path = "/proxies",
    operation_id = "create_proxy",
    tag = "proxies",
    request_body = SaveProxy,
    responses((status = 201, description = "The proxy (its password not shown).", body = Proxy))
)]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<SaveProxy>,
) -> Result<(StatusCode, axum::Json<Proxy>), ApiError> {
    let Some(name) = body.name else { return Err(ApiError::invalid("name", "is required")) };
    let saved = crate::proxies::save(&state, &caller.account_id, &name, &body.url, false).await.map_err(save_error)?;
    Ok((StatusCode::CREATED, axum::Json(saved.into())))
}

/// The account's proxies, by name.
#[utoipa::path(
    get,
    path = "/proxies",
    operation_id = "list_proxies",
    tag = "proxies",
    responses((status = 200, description = "Every proxy of the account.", body = ProxyList))
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<axum::Json<ProxyList>, ApiError> {
    let rows = state.store.read(move |c| proxies::list(c, &caller.account_id)).await?;
    Ok(axum::Json(ProxyList { data: rows.into_iter().map(Proxy::from).collect() }))
}

/// One proxy.
#[utoipa::path(
    get,
    path = "/proxies/{name}",
    operation_id = "get_proxy",
    tag = "proxies",
    params(("name" = String, Path, description = "The proxy's name.")),
    responses((status = 200, description = "The proxy.", body = Proxy))
)]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<axum::Json<Proxy>, ApiError> {
    let found = state.store.read(move |c| proxies::find(c, &caller.account_id, &name)).await?;
    found.map(|p| axum::Json(p.into())).ok_or_else(|| ApiError::not_found("no such proxy"))
}

/// Set a proxy's URL, adding the proxy when the account has none by that name.
#[utoipa::path(
    put,
    path = "/proxies/{name}",
    operation_id = "set_proxy",
    tag = "proxies",
    params(("name" = String, Path, description = "The proxy's name.")),
    request_body = SaveProxy,
    responses((status = 200, description = "The proxy as saved.", body = Proxy))
)]
pub async fn set(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Json(body): Json<SaveProxy>,
) -> Result<axum::Json<Proxy>, ApiError> {
    if body.name.as_deref().is_some_and(|n| n != name) {
        return Err(ApiError::invalid("name", "differs from the name in the path (a proxy is not renamed)"));
    }
    let saved = crate::proxies::save(&state, &caller.account_id, &name, &body.url, true).await.map_err(save_error)?;
    Ok(axum::Json(saved.into()))
}

/// Delete a proxy. A proxy that watches name answers 409 with the first of them.
#[utoipa::path(
    delete,
    path = "/proxies/{name}",
    operation_id = "delete_proxy",
    tag = "proxies",
    params(("name" = String, Path, description = "The proxy's name.")),
    responses(
        (status = 204, description = "Deleted."),
        (status = 409, description = "Watches use it: `detail` names the first of them.",
         body = ApiError, content_type = "application/problem+json")
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (account, wanted) = (caller.account_id.clone(), name.clone());
    let using = state.store.read(move |c| proxies::watches_using(c, &account, &wanted, 5)).await?;
    if !using.is_empty() {
        return Err(ApiError::conflict(format!(
            "watches use this proxy ({}); point them elsewhere first",
            using.join(", ")
        )));
    }
    let deleted = state.store.write(move |c| proxies::delete(c, &caller.account_id, &name)).await?;
    if deleted { Ok(StatusCode::NO_CONTENT) } else { Err(ApiError::not_found("no such proxy")) }
}

/// Test a proxy: fetch a page through it (as a check would, the address guard applied) and
/// record the status and time. A failure is a result, not an error: `last_test.error` says it.
#[utoipa::path(
    post,
    path = "/proxies/{name}/test",
    operation_id = "test_proxy",
    tag = "proxies",
    params(("name" = String, Path, description = "The proxy's name.")),
    request_body(content = Option<TestProxy>, description = "The page to fetch (optional)."),
    responses((status = 200, description = "The proxy with its new `last_test`.", body = Proxy))
)]
pub async fn test(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<axum::Json<Proxy>, ApiError> {
    // The body is optional: none, `null` or `{}` tests against the default page.
    let body: TestProxy = if body.iter().all(u8::is_ascii_whitespace) {
        TestProxy::default()
    } else {
        serde_json::from_slice::<Option<TestProxy>>(&body)
            .map_err(|e| ApiError::bad_request(format!("the body is not a test request: {e}")))?
            .unwrap_or_default()
    };
    let target = body.url.unwrap_or_else(|| DEFAULT_TEST_URL.to_owned());
    let parsed = url::Url::parse(&target).map_err(|e| ApiError::invalid("url", format!("not a URL: {e}")))?;
    driftwatch_net::check_url(&parsed, state.policy).map_err(|e| ApiError::invalid("url", e.to_string()))?;
    let tested = crate::proxies::test(&state, &caller.account_id, &name, &target).await?;
    tested.map(|p| axum::Json(p.into())).ok_or_else(|| ApiError::not_found("no such proxy"))
}
