//! `/mcp`: driftwatch as a Model Context Protocol server over Streamable HTTP.
//!
//! The bearer token is checked here, before the protocol (401 otherwise), and handed to the
//! session as a [`Grant`]; each tool call then goes through the REST API router in-process
//! ([`InProcess`]) with that token, so every rule of the API holds for MCP too. The transport
//! checks `Host` and `Origin` against this server's own names (DNS rebinding); this module
//! answers a malformed or oversized message with a JSON-RPC error and caps the requests in
//! flight and the open sessions.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use driftwatch_mcp::push::{Hub, Pushed};
use driftwatch_mcp::{Api, ApiRequest, BoxFuture, Grant, Server};
use http_body_util::BodyExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tower::ServiceExt as _;

use crate::AppState;
use crate::api::error::ApiError;

/// Largest MCP message accepted (a watch's options fit many times over).
const MAX_MESSAGE_BYTES: usize = 1 << 20;
/// Most MCP requests in flight at once (open notification streams included).
const MAX_CONCURRENT: usize = 256;

/// The REST API, called in-process through its own router.
struct InProcess {
    api: Router,
}

impl Api for InProcess {
    fn call<'a>(
        &'a self,
        token: &'a str,
        request: ApiRequest,
    ) -> BoxFuture<'a, Result<(u16, serde_json::Value), String>> {
        Box::pin(async move {
            let mut builder = axum::http::Request::builder()
                .method(request.method)
                .uri(format!("/api/v1{}", request.path))
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::ACCEPT, "application/json");
            if let Some(key) = &request.idempotency_key {
                builder = builder.header("idempotency-key", key);
            }
            let body = match &request.body {
                Some(body) => {
                    builder = builder.header(header::CONTENT_TYPE, "application/json");
                    Body::from(body.to_string())
                }
                None => Body::empty(),
            };
            let request = builder.body(body).map_err(|e| e.to_string())?;
            let answer = self.api.clone().oneshot(request).await.map_err(|e| e.to_string())?;
            let status = answer.status().as_u16();
            let bytes = answer.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
            Ok((status, driftwatch_mcp::answer_body(&bytes)))
        })
    }
}

/// `/mcp`, for `app` (the rest of the application, whose `/api/v1` the tools call).
pub(crate) fn routes(state: AppState, app: Router) -> Router {
    let tools = match driftwatch_mcp::tools::tools(&crate::api::document()) {
        Ok(tools) => Arc::new(tools),
        Err(e) => {
            // The document is built into the binary; a test holds every tool to it.
            tracing::error!(error = %e, "the MCP tools do not match the API document");
            Arc::new(Vec::new())
        }
    };
    let api: Arc<dyn Api> = Arc::new(InProcess { api: app });
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_keep_alive(Some(Duration::from_secs(15)))
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES);
    // DNS rebinding: the Host must be this server's (loopback always; the public URL's host when
    // one is configured), and a browser's Origin too.
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned(), "[::1]".to_owned()];
    let mut origins = Vec::new();
    if let Some(public) = state.ui.public_url.as_deref().and_then(|u| url::Url::parse(u).ok()) {
        if let Some(host) = public.host_str() {
            hosts.push(host.to_owned());
        }
        origins.push(public.origin().ascii_serialization());
    }
    for host in ["localhost", "127.0.0.1", "[::1]"] {
        origins.push(format!("http://{host}:*"));
    }
    config = config.with_allowed_hosts(hosts).with_allowed_origins(origins);
    let hub = Arc::new(Hub::default());
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(pump(state.clone(), Arc::clone(&hub)));
    }
    let service = StreamableHttpService::new(
        move || Ok(Server::with_hub(Arc::clone(&api), Arc::clone(&tools), Arc::clone(&hub))),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let in_flight = Arc::new(AtomicUsize::new(0));
    let sessions = Arc::new(Sessions { max: state.limits.mcp_max_sessions, seen: Mutex::default() });
    Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(sessions, count_sessions))
        .layer(axum::middleware::from_fn(well_formed))
        .layer(axum::middleware::from_fn_with_state(in_flight, limit))
        .layer(axum::middleware::from_fn_with_state(state, authenticate))
}

/// Most events looked up at once for subscribers.
const PUSH_BATCH: i64 = 500;
/// How often events recorded by other nodes are looked for while someone listens (this node's
/// own checks wake the pump at once).
const PUSH_POLL: Duration = Duration::from_secs(1);

/// Feeds the hub the events recorded since it last looked: woken by each check this node
/// records, and every [`PUSH_POLL`] for other nodes'. Looks only while someone listens; when
/// someone starts to, from a little before (an event recorded as they subscribed is told).
async fn pump(state: AppState, hub: Arc<Hub>) {
    let mut recorded = state.runner.on_recorded();
    let mut cursor: Option<String> = None;
    loop {
        tokio::select! {
            changed = recorded.changed() => if changed.is_err() { return },
            () = tokio::time::sleep(PUSH_POLL) => {}
        }
        if !hub.is_listened_to() {
            cursor = None;
            continue;
        }
        let since = state.clock.now().naive_utc() - chrono::TimeDelta::seconds(2);
        loop {
            let from = cursor.clone();
            let rows = state
                .store
                .read(move |c| driftwatch_store::events::newer_than(c, from.as_deref(), since, PUSH_BATCH))
                .await;
            let rows = match rows {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!(error = %e, "mcp push: reading events failed");
                    break;
                }
            };
            let full = rows.len() as i64 == PUSH_BATCH;
            if let Some((last, ..)) = rows.last() {
                cursor = Some(last.clone());
            }
            let events: Vec<Pushed> = rows
                .into_iter()
                .map(|(event_id, account_id, watch_id, event_type)| Pushed {
                    event_id,
                    account_id,
                    watch_id,
                    event_type,
                })
                .collect();
            hub.publish(&events).await;
            if !full {
                break;
            }
        }
    }
}

/// The bearer token, checked before any protocol work; the grant goes to the session.
async fn authenticate(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let token = match crate::api::auth::bearer_token(request.headers()) {
        Ok(token) => token.to_owned(),
        Err(e) => return unauthorized(e),
    };
    let now = state.clock.now().naive_utc();
    let lookup = token.clone();
    let found = match state.store.read(move |c| driftwatch_store::accounts::authenticate(c, &lookup, now)).await {
        Ok(found) => found,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let Some(found) = found else { return unauthorized(ApiError::unauthorized("the token is unknown or revoked")) };
    let may_write = crate::api::auth::may_write(&found);
    request.extensions_mut().insert(Grant { token, account_id: found.account_id.clone(), may_write });
    next.run(request).await
}

fn unauthorized(error: ApiError) -> Response {
    let mut response = error.into_response();
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    response
}

/// A posted message that is too large or not JSON gets a JSON-RPC error (the transport would
/// answer plain text); a well-formed one goes on, read once.
async fn well_formed(request: Request, next: Next) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_MESSAGE_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let message = format!("the message is over {MAX_MESSAGE_BYTES} bytes");
            let mut response = rpc_error(StatusCode::PAYLOAD_TOO_LARGE, -32600, &message);
            // The rest of the body is not read, so this connection cannot carry another
            // request: say so, or a client may reuse it and lose its next request.
            response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    let message: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, -32700, &format!("parse error: {e}")),
    };
    let mut request = Request::from_parts(parts, Body::from(bytes));
    if message["method"] == "initialize" {
        request.extensions_mut().insert(Initialize);
    }
    next.run(request).await
}

/// Marks a request that opens a session.
#[derive(Debug, Clone, Copy)]
struct Initialize;

/// How long a session may sit idle before it lapses (rmcp's default keep-alive).
const SESSION_IDLE: Duration = Duration::from_secs(300);

/// The open sessions, by id, with when each was last used.
struct Sessions {
    max: usize,
    seen: Mutex<std::collections::HashMap<String, std::time::Instant>>,
}

/// Caps the open sessions: a session is counted from the answer that opens it until its DELETE
/// or [`SESSION_IDLE`] without a request; past the cap, `initialize` is refused.
async fn count_sessions(State(sessions): State<Arc<Sessions>>, request: Request, next: Next) -> Response {
    let id = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    {
        let mut seen = sessions.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        match &id {
            Some(id) if request.method() == axum::http::Method::DELETE => {
                seen.remove(id);
            }
            Some(id) => {
                if let Some(at) = seen.get_mut(id) {
                    *at = now;
                }
            }
            None if request.extensions().get::<Initialize>().is_some() => {
                seen.retain(|_, at| now.duration_since(*at) < SESSION_IDLE);
                if seen.len() >= sessions.max {
                    let message =
                        format!("{} MCP sessions are open, the most this server keeps: close one", seen.len());
                    return rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, &message);
                }
            }
            None => {}
        }
    }
    let response = next.run(request).await;
    if id.is_none()
        && let Some(opened) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())
    {
        let mut seen = sessions.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.insert(opened.to_owned(), std::time::Instant::now());
    }
    response
}

/// A JSON-RPC error answer with no request id (the request could not be read).
fn rpc_error(status: StatusCode, code: i32, message: &str) -> Response {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// Caps the requests in flight (each open notification stream holds one).
async fn limit(State(in_flight): State<Arc<AtomicUsize>>, request: Request, next: Next) -> Response {
    if in_flight.fetch_add(1, Ordering::SeqCst) >= MAX_CONCURRENT {
        in_flight.fetch_sub(1, Ordering::SeqCst);
        return ApiError::with_status(StatusCode::SERVICE_UNAVAILABLE, "too many MCP requests at once; try again")
            .into_response();
    }
    let response = next.run(request).await;
    // A streamed answer holds its slot until its body ends.
    let (parts, body) = response.into_parts();
    let guard = Slot(in_flight);
    let body = Body::new(body.map_frame(move |frame| {
        let _ = &guard;
        frame
    }));
    Response::from_parts(parts, body)
}

/// Gives back a slot when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    /// Every tool names an operation of the API document, and takes what that operation takes.
    #[test]
    fn every_tool_is_an_operation_of_the_api_document() {
        let document = crate::api::document();
        let tools = driftwatch_mcp::tools::tools(&document).expect("every operation exists");
        assert_eq!(tools.len(), driftwatch_mcp::tools::TOOLS.len());
        let create = tools.iter().find(|t| t.spec.name == "create_watch").expect("create_watch");
        assert_eq!(create.input_schema["required"], serde_json::json!(["url"]));
        assert!(create.input_schema["properties"]["options"].is_object());
        assert!(create.input_schema["$defs"]["WatchOptions"].is_object(), "{:?}", create.input_schema.keys());
        let failing = tools.iter().find(|t| t.spec.name == "list_failing_watches").expect("tool");
        assert!(failing.input_schema["properties"].get("health").is_none(), "fixed by the tool");
    }
}
