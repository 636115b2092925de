//! driftwatch as a Model Context Protocol server.
//!
//! Every tool is one operation of the REST API ([`tools::TOOLS`]), its input schema made from
//! the API's OpenAPI document and its call made through the API itself ([`Api`]): the same
//! validation, account isolation, read-only scopes, rate limits and idempotency keys apply to
//! work done through MCP as through HTTP, and a refusal comes back as a tool error naming the
//! field. The host mounts [`Server`] on Streamable HTTP (the web crate, at `/mcp`) after its
//! own bearer-token check has put a [`Grant`] on the request.

mod http_api;
pub mod prompts;
pub mod push;
pub mod resources;
pub mod tools;

use std::sync::{Arc, OnceLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ResourceContents, ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter,
    ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

pub use futures_util::future::BoxFuture;
pub use http_api::HttpApi;
pub use tools::ApiRequest;

/// The REST API as the tools reach it.
pub trait Api: Send + Sync + 'static {
    /// Sends `request` (under `/api/v1`) with `token` as its bearer token; the status and the
    /// JSON body (`null` when there is none), or why no answer came.
    fn call<'a>(&'a self, token: &'a str, request: ApiRequest) -> BoxFuture<'a, Result<(u16, Value), String>>;
}

/// An API answer's body as JSON: `null` when empty, `{"text": ...}` when not JSON (such as the
/// unified diff's `text/x-diff`).
pub fn answer_body(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes).unwrap_or_else(|_| json!({"text": String::from_utf8_lossy(bytes)}))
}

/// The caller, as the host's authentication found it; put in the HTTP request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The bearer token.
    pub token: String,
    /// The token's account (whose events a subscription is told of).
    pub account_id: String,
    /// Whether the token has the `write` scope (else only read tools are listed and run).
    pub may_write: bool,
}

/// One MCP session's server: the tools, bound to the token that opened the session.
#[derive(Clone)]
pub struct Server {
    api: Arc<dyn Api>,
    tools: Arc<Vec<tools::Tool>>,
    /// The token of the session's first request; later requests must bring the same one.
    bound: Arc<OnceLock<String>>,
    /// On stdio, where no HTTP request carries one: the caller, fixed at start.
    fixed: Option<Grant>,
    /// Subscriptions, when this transport can push (`None`: no `subscribe` capability).
    hub: Option<Arc<push::Hub>>,
    /// This session's id in the hub.
    session: u64,
}

impl Server {
    /// A server for one session (the HTTP transport makes one per session).
    pub fn new(api: Arc<dyn Api>, tools: Arc<Vec<tools::Tool>>) -> Server {
        Server { api, tools, bound: Arc::new(OnceLock::new()), fixed: None, hub: None, session: 0 }
    }

    /// [`Server::new`], able to push events to the session's subscriptions through `hub`.
    pub fn with_hub(api: Arc<dyn Api>, tools: Arc<Vec<tools::Tool>>, hub: Arc<push::Hub>) -> Server {
        Server { session: hub.id(), hub: Some(hub), ..Server::new(api, tools) }
    }

    /// A server for one caller known at start (stdio: one local agent, one token), pushing
    /// what `hub` is fed.
    pub fn for_caller(api: Arc<dyn Api>, tools: Arc<Vec<tools::Tool>>, grant: Grant, hub: Arc<push::Hub>) -> Server {
        Server { fixed: Some(grant), ..Server::with_hub(api, tools, hub) }
    }

    /// The caller of this request, held to the session's token.
    fn grant(&self, context: &RequestContext<RoleServer>) -> Result<Grant, McpError> {
        let grant = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Grant>())
            .or(self.fixed.as_ref())
            .cloned()
            .ok_or_else(|| McpError::invalid_request("no credentials: send Authorization: Bearer <token>", None))?;
        if *self.bound.get_or_init(|| grant.token.clone()) != grant.token {
            return Err(McpError::invalid_request("this session was opened with another token", None));
        }
        Ok(grant)
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().enable_prompts().enable_resources();
        let capabilities = match self.hub {
            Some(_) => capabilities.enable_resources_subscribe().build(),
            None => capabilities.build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("driftwatch", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "driftwatch watches web pages and reports when they change. Create a watch for a URL (a CSS \
                 selector narrows it to what matters), check it now or let its schedule run, then read what \
                 changed with list_changes (keep its next_cursor) and get_diff. Values (a price, a stock level) \
                 and conditions decide which changes alert.",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // The session belongs to the token that opens it.
        self.grant(&context)?;
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let grant = self.grant(&context)?;
        let listed = self.tools.iter().filter(|t| t.spec.read_only || grant.may_write).map(|t| {
            let mut tool = rmcp::model::Tool::new(t.spec.name, t.spec.description, Arc::clone(&t.input_schema));
            tool.annotations = Some(ToolAnnotations::new().read_only(t.spec.read_only));
            tool
        });
        Ok(ListToolsResult::with_all_items(listed.collect()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let grant = self.grant(&context)?;
        let request = ApiRequest {
            method: http::Method::GET,
            path: "/watches?limit=500".into(),
            body: None,
            idempotency_key: None,
        };
        let (status, list) =
            self.api.call(&grant.token, request).await.map_err(|e| McpError::internal_error(e, None))?;
        if status != 200 {
            return Err(McpError::internal_error(format!("listing the watches answered {status}"), Some(list)));
        }
        let listed = list["items"].as_array().into_iter().flatten().flat_map(|w| {
            let text = |k: &str| w[k].as_str().unwrap_or_default().to_owned();
            resources::of_watch(&text("id"), &text("name"), &text("url"))
        });
        Ok(ListResourcesResult::with_all_items(listed.collect()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        self.grant(&context)?;
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let grant = self.grant(&context)?;
        let body = self.fetch(&grant, &request.uri).await?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(body.to_string(), request.uri.clone()).with_mime_type("application/json"),
        ])
        .into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        self.grant(&context)?;
        Ok(ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        self.grant(&context)?;
        prompts::get(&request.name, &request.arguments.unwrap_or_default())
            .map(Into::into)
            .map_err(|why| McpError::invalid_params(why, None))
    }

    #[allow(deprecated)] // resources/subscribe: the sessions of protocol versions before 2026-07-28
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let grant = self.grant(&context)?;
        let Some(hub) = &self.hub else {
            return Err(McpError::invalid_request("this transport does not push: poll list_changes", None));
        };
        self.readable(&grant, &request.uri).await?;
        hub.subscribe(&grant.account_id, self.session, &request.uri, context.peer.clone());
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.grant(&context)?;
        if let Some(hub) = &self.hub {
            hub.unsubscribe(self.session, &request.uri);
        }
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        self.hub.as_ref().map(|_| requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let grant = self.grant(context.request_context())?;
        let Some(hub) = &self.hub else { return Ok(()) };
        // Only the account's own events reach it, whatever URIs it names.
        let id = hub.id();
        hub.listen(&grant.account_id, id, context.sink().clone());
        context.cancelled().await;
        hub.stop_listening(id);
        Ok(())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let grant = self.grant(&context)?;
        let Some(tool) = self.tools.iter().find(|t| t.spec.name == request.name) else {
            return Err(McpError::invalid_params(format!("there is no tool `{}`", request.name), None));
        };
        if !tool.spec.read_only && !grant.may_write {
            return Ok(refused(
                403,
                &json!({"detail": "this token may only read; use a token with the `write` scope"}),
            )
            .into());
        }
        let arguments = request.arguments.unwrap_or_default();
        let call = match tools::request(tool, &arguments) {
            Ok(call) => call,
            Err(why) => return Ok(refused(422, &json!({"detail": why})).into()),
        };
        let (method, path) = (call.method.clone(), call.path.clone());
        let answer = self.api.call(&grant.token, call).await;
        tracing::info!(tool = tool.spec.name, %method, path, status = answer.as_ref().ok().map(|a| a.0), "mcp tool");
        Ok(match answer {
            Ok((status, body)) if (200..300).contains(&status) => answered(tool, body),
            Ok((status, problem)) => refused(status, &problem),
            Err(why) => CallToolResult::error(vec![ContentBlock::text(format!("the call failed: {why}"))]),
        }
        .into())
    }
}

impl Server {
    /// Refuses a URI that is not one of the caller's resources (another account's watch is
    /// "not found").
    async fn readable(&self, grant: &Grant, uri: &str) -> Result<(), McpError> {
        self.fetch(grant, uri).await.map(drop)
    }

    /// `GET path` through the API as the caller: the status and the body.
    async fn get(&self, grant: &Grant, path: String) -> Result<(u16, Value), McpError> {
        let call = ApiRequest { method: http::Method::GET, path, body: None, idempotency_key: None };
        self.api.call(&grant.token, call).await.map_err(|e| McpError::internal_error(e, None))
    }

    /// The resource at `uri`, read through the API as the caller. Another account's watch is
    /// "not found", as in the API; a watch's `diff/latest` before its first change is there,
    /// and says "no change yet".
    async fn fetch(&self, grant: &Grant, uri: &str) -> Result<Value, McpError> {
        let not_found = || McpError::resource_not_found(format!("no resource {uri}"), None);
        let path = resources::path_of(uri).ok_or_else(not_found)?;
        match self.get(grant, path).await? {
            (200, body) => Ok(body),
            (404, _) => match resources::watch_of_diff(uri) {
                Some(watch) => match self.get(grant, watch).await? {
                    (200, _) => Ok(resources::no_change_yet()),
                    _ => Err(not_found()),
                },
                None => Err(not_found()),
            },
            (status, body) => Err(McpError::internal_error(format!("reading it answered {status}"), Some(body))),
        }
    }
}

/// A success: the API's answer as structured content, with a short text for the model.
fn answered(tool: &tools::Tool, body: Value) -> CallToolResult {
    let body = match body {
        Value::Object(_) => body,
        Value::Null => json!({}),
        other => json!({ "result": other }),
    };
    let mut result = CallToolResult::structured(body.clone());
    result.content = vec![ContentBlock::text(summary(tool.spec.name, &body)), ContentBlock::text(body.to_string())];
    result
}

/// A refusal: a tool error (not a protocol failure) naming the fields at fault.
fn refused(status: u16, problem: &Value) -> CallToolResult {
    let detail = problem["detail"].as_str().or(problem["title"].as_str()).unwrap_or("refused");
    let mut text = format!("refused ({status}): {detail}");
    for error in problem["errors"].as_array().into_iter().flatten() {
        if let (Some(field), Some(message)) = (error["field"].as_str(), error["message"].as_str()) {
            text.push_str(&format!("\n- {field}: {message}"));
        }
    }
    let mut structured = match problem {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    structured.insert("status".into(), json!(status));
    let mut result = CallToolResult::structured_error(Value::Object(structured));
    result.content = vec![ContentBlock::text(text)];
    result
}

/// One line on what came back: a list's size and cursor, or an item's main fields.
fn summary(tool: &str, body: &Value) -> String {
    if let Some(items) = body["items"].as_array() {
        let more = body["next_cursor"].as_str().map(|c| format!("; next_cursor {c}")).unwrap_or_default();
        return format!("{tool}: {} item(s){more}", items.len());
    }
    let fields: Vec<String> =
        ["id", "name", "url", "outcome", "health", "state", "status", "event_id", "note", "error"]
            .iter()
            .filter_map(|k| match &body[*k] {
                Value::String(s) => Some(format!("{k}: {s}")),
                Value::Number(n) => Some(format!("{k}: {n}")),
                _ => None,
            })
            .collect();
    if fields.is_empty() { format!("{tool}: done") } else { format!("{tool}: {}", fields.join(", ")) }
}
