//! The tools: each is one operation of the REST API, named for what an agent wants done, with
//! its input schema made from that operation's path and query parameters and JSON body in the
//! API's own OpenAPI document. The API is built from the same types and checked by the same
//! rules, so a tool takes exactly what the API takes, and its refusals name the same fields.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

/// One tool: an API operation, and what a model should know to choose it.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: &'static str,
    /// The API operation (`operationId` in the OpenAPI document).
    pub operation: &'static str,
    /// When to use it, for the model.
    pub description: &'static str,
    /// Whether it only reads (read-only tokens see only these).
    pub read_only: bool,
    /// Query parameters fixed by the tool (`health=failing`), not offered to the model.
    pub fixed_query: &'static [(&'static str, &'static str)],
}

/// Every tool, in the order they are listed.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "list_watches",
        operation: "list_watches",
        description: "List the watched pages of this account (newest first), optionally filtered by tag, state, \
                      health or a search text. Use it to find a watch's id before reading or changing it.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "get_watch",
        operation: "get_watch",
        description: "Get one watch: its URL, selector, schedule, options (values, conditions, rules), health and \
                      when it was last checked.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "create_watch",
        operation: "create_watch",
        description: "Start watching a web page: give its url, optionally a CSS selector for the part that \
                      matters, a schedule (`every 1h`, a cron line) and options (line rules, noise rules, named \
                      values such as a price, conditions such as {\"preset\": \"price_below\", \"amount\": 50}). \
                      Pass idempotency_key so that a retry does not create a second watch.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "preview",
        operation: "preview_watch",
        description: "Read a page now as a watch with this url, selector and options would, and get the text it \
                      would compare, saving nothing. Use it to choose a selector and line rules before \
                      create_watch, and to check them after a change.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "update_watch",
        operation: "update_watch",
        description: "Change a watch: only the fields given change (url, name, selector, schedule, options, tags).",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "pause_watch",
        operation: "pause_watch",
        description: "Stop checking a watch until it is resumed (its history is kept).",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "resume_watch",
        operation: "resume_watch",
        description: "Resume checking a paused watch on its schedule.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "check_now",
        operation: "check_watch",
        description: "Check a watch now instead of waiting for its schedule, and get the run: outcome (baseline, \
                      unchanged, changed, failed), the event it raised and any note or error.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "list_changes",
        operation: "list_changes",
        description: "What changed across all watches since a cursor or time, oldest first, each with its diff. \
                      Pass the returned next_cursor as `since` next time to get only what is new.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "get_diff",
        operation: "diff_snapshots",
        description: "The diff of a watch's page between two snapshots (by default the latest two), as unified \
                      text and per word.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "list_snapshots",
        operation: "list_snapshots",
        description: "A watch's snapshots (each stored version of its text), newest first, with the values read \
                      and why a change alerted no one (kept_quiet).",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "list_failing_watches",
        operation: "list_watches",
        description: "The watches whose checks keep failing (the page cannot be fetched or read).",
        read_only: true,
        fixed_query: &[("health", "failing")],
    },
    ToolSpec {
        name: "read_values",
        operation: "list_values",
        description: "The series of a watch's named values (a price, a stock level) over time, oldest first.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "list_deliveries",
        operation: "list_deliveries",
        description: "Deliveries of events to this account's endpoints, newest first, with their status and \
                      attempts; filter by status, endpoint, watch or event.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "list_dead_letters",
        operation: "list_dead_letters",
        description: "Deliveries that gave up after their last attempt (the dead-letter queue).",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "redeliver",
        operation: "redeliver",
        description: "Send a delivery again (a dead letter, or any delivery), with the exact body stored.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "release_change",
        operation: "release_event",
        description: "Send a held change now: a change of a watch with options.ai and on_error `hold` that got no \
                      verdict from the language model is kept undelivered (its event's verdict.state is `held`) \
                      until released. Give the event's id.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "backtest_watch",
        operation: "backtest_watch",
        description: "Try options on a watch's past checks before saving them, saving nothing: how many alerts \
                      they would have raised instead of how many, each with its diff, and what was kept quiet. \
                      With options.ai.intent, the language model judges each would-be alert against the intent \
                      (`ai`: how many alerts it would leave and what it would cost in tokens). May take minutes.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "get_account_model",
        operation: "get_account_model",
        description: "Which language model judges this account's changes against watches' intents: the \
                      account's own (base_url, model, whether a key is set) or the operator's.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "list_proxies",
        operation: "list_proxies",
        description: "List this account's named proxies (URLs shown without passwords) and how each last test \
                      went. A watch names one in options.fetch.proxy to send its checks, HTTP and browser alike, \
                      through it; options.fetch.when_blocked.proxy tries one when a bot wall blocks a check.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "test_proxy",
        operation: "test_proxy",
        description: "Fetch a page through one of the account's proxies (by name) as a check would, and record \
                      the status and time it took (last_test); a failure is a result, saying whether the proxy \
                      or the page failed.",
        read_only: false,
        fixed_query: &[],
    },
    ToolSpec {
        name: "list_secrets",
        operation: "list_secrets",
        description: "List the account's named secrets (names and dates; values are never shown). A watch's \
                      login steps type one with {\"action\": \"type\", \"selector\": \"#password\", \
                      \"text\": {\"secret\": \"<name>\"}}, so a password never sits in its options.",
        read_only: true,
        fixed_query: &[],
    },
    ToolSpec {
        name: "set_secret",
        operation: "create_secret",
        description: "Add a named secret (a password login steps type): name and value. The value is stored \
                      encrypted and never shown again; a name the account already keeps is a conflict.",
        read_only: false,
        fixed_query: &[],
    },
];

/// An operation of the API document: its method and path, and where each argument goes.
#[derive(Debug, Clone)]
pub struct Operation {
    /// `GET`, `POST`, ...
    pub method: http::Method,
    /// The path under `/api/v1`, with `{name}` placeholders.
    pub path: String,
    /// Path parameters.
    pub path_params: Vec<String>,
    /// Query parameters.
    pub query_params: Vec<String>,
    /// Whether it takes a JSON body (its fields are the tool's other arguments).
    pub body: bool,
}

/// A tool made from the document: its spec, its operation, and its input schema.
#[derive(Debug, Clone)]
pub struct Tool {
    /// What it is.
    pub spec: ToolSpec,
    /// What it calls.
    pub operation: Operation,
    /// Its arguments, a JSON Schema object.
    pub input_schema: Arc<Map<String, Value>>,
}

/// The argument that becomes the `Idempotency-Key` header of a creating call.
pub const IDEMPOTENCY_KEY: &str = "idempotency_key";

/// The tools, made from the API's OpenAPI document. Fails (naming the operation) when the
/// document lacks one, which a test of this crate's caller catches.
pub fn tools(openapi: &Value) -> Result<Vec<Tool>, String> {
    TOOLS.iter().map(|spec| tool(openapi, *spec)).collect()
}

fn tool(openapi: &Value, spec: ToolSpec) -> Result<Tool, String> {
    let (path, method, op) = find(openapi, spec.operation).ok_or_else(|| format!("no operation {}", spec.operation))?;
    let mut properties = Map::new();
    let mut required = Vec::new();
    let (mut path_params, mut query_params) = (Vec::new(), Vec::new());
    let mut refs = BTreeSet::new();
    for param in op["parameters"].as_array().into_iter().flatten() {
        let name = param["name"].as_str().unwrap_or_default().to_owned();
        if spec.fixed_query.iter().any(|(fixed, _)| *fixed == name) {
            continue;
        }
        let mut schema = param["schema"].clone();
        if let Some(description) = param["description"].as_str() {
            schema["description"] = json!(description);
        }
        collect_refs(&schema, &mut refs);
        if param["required"].as_bool() == Some(true) {
            required.push(json!(name));
        }
        match param["in"].as_str() {
            Some("path") => path_params.push(name.clone()),
            Some("query") => query_params.push(name.clone()),
            _ => continue,
        }
        properties.insert(name, schema);
    }
    let body_schema = &op["requestBody"]["content"]["application/json"]["schema"];
    let body = !body_schema.is_null();
    if body {
        let resolved = resolve(openapi, body_schema);
        for (name, schema) in resolved["properties"].as_object().into_iter().flatten() {
            collect_refs(schema, &mut refs);
            properties.insert(name.clone(), schema.clone());
        }
        for name in resolved["required"].as_array().into_iter().flatten() {
            required.push(name.clone());
        }
        if method == http::Method::POST && spec.operation.starts_with("create_") {
            properties.insert(
                IDEMPOTENCY_KEY.to_owned(),
                json!({"type": "string", "description": "Any unique text: a retry with the same key answers \
                        what the first call created instead of creating it again."}),
            );
        }
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    let defs = definitions(openapi, refs);
    if !defs.is_empty() {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    let schema = rewrite_refs(Value::Object(schema));
    Ok(Tool {
        spec,
        operation: Operation { method, path, path_params, query_params, body },
        input_schema: Arc::new(schema.as_object().cloned().unwrap_or_default()),
    })
}

/// The path, method and operation object of `operation_id`.
fn find<'a>(openapi: &'a Value, operation_id: &str) -> Option<(String, http::Method, &'a Value)> {
    for (path, item) in openapi["paths"].as_object()? {
        for (method, op) in item.as_object()? {
            if op["operationId"] == operation_id {
                let method = method.to_ascii_uppercase().parse().ok()?;
                return Some((path.clone(), method, op));
            }
        }
    }
    None
}

/// A schema with a top-level `$ref` followed to its component.
fn resolve(openapi: &Value, schema: &Value) -> Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => openapi["components"]["schemas"][name].clone(),
        None => schema.clone(),
    }
}

/// The component names a schema refers to.
fn collect_refs(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) =
                map.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/components/schemas/"))
            {
                out.insert(name.to_owned());
            }
            map.values().for_each(|v| collect_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// The components `refs` name and every component they refer to in turn.
fn definitions(openapi: &Value, mut pending: BTreeSet<String>) -> Map<String, Value> {
    let mut defs = Map::new();
    while let Some(name) = pending.pop_first() {
        if defs.contains_key(&name) {
            continue;
        }
        let schema = openapi["components"]["schemas"][&name].clone();
        let mut more = BTreeSet::new();
        collect_refs(&schema, &mut more);
        pending.extend(more.into_iter().filter(|n| !defs.contains_key(n)));
        defs.insert(name, schema);
    }
    defs
}

/// `#/components/schemas/X` made `#/$defs/X`, for a schema that stands alone.
fn rewrite_refs(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| match (k.as_str(), &v) {
                    ("$ref", Value::String(r)) => (k, json!(r.replacen("#/components/schemas/", "#/$defs/", 1))),
                    _ => (k, rewrite_refs(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(rewrite_refs).collect()),
        other => other,
    }
}

/// A tool call as an API request: the path with its parameters, the query, and the body.
pub fn request(tool: &Tool, arguments: &Map<String, Value>) -> Result<ApiRequest, String> {
    let mut path = tool.operation.path.clone();
    for name in &tool.operation.path_params {
        let value = match arguments.get(name) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(format!("{name}: required")),
        };
        path = path.replace(&format!("{{{name}}}"), &encode(&value));
    }
    let mut query: Vec<(String, String)> =
        tool.spec.fixed_query.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    for name in &tool.operation.query_params {
        match arguments.get(name) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) => query.push((name.clone(), s.clone())),
            Some(other) => query.push((name.clone(), other.to_string())),
        }
    }
    if !query.is_empty() {
        let joined: Vec<String> = query.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
        path = format!("{path}?{}", joined.join("&"));
    }
    let body = tool.operation.body.then(|| {
        let fields: Map<String, Value> = arguments
            .iter()
            .filter(|(k, _)| {
                !tool.operation.path_params.contains(k)
                    && !tool.operation.query_params.contains(k)
                    && k.as_str() != IDEMPOTENCY_KEY
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Value::Object(fields)
    });
    let idempotency_key = arguments.get(IDEMPOTENCY_KEY).and_then(Value::as_str).map(str::to_owned);
    Ok(ApiRequest { method: tool.operation.method.clone(), path, body, idempotency_key })
}

/// A request to the REST API, relative to `/api/v1`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    /// The method.
    pub method: http::Method,
    /// The path and query, under `/api/v1`.
    pub path: String,
    /// The JSON body.
    pub body: Option<Value>,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Option<String>,
}

/// Percent-encodes a path segment or query part (unreserved characters kept).
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document() -> Value {
        json!({
            "paths": {
                "/watches": {"post": {"operationId": "create_watch",
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewWatch"}}}}}},
                "/watches/{id}/values": {"get": {"operationId": "list_values", "parameters": [
                    {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}},
                    {"name": "name", "in": "query", "schema": {"type": "string"}, "description": "the value"}]}}
            },
            "components": {"schemas": {
                "NewWatch": {"type": "object", "required": ["url"], "properties": {
                    "url": {"type": "string"}, "options": {"$ref": "#/components/schemas/Options"}}},
                "Options": {"type": "object", "properties": {"rules": {"$ref": "#/components/schemas/Rules"}}},
                "Rules": {"type": "object"}
            }}
        })
    }

    #[test]
    fn schemas_come_from_the_document_and_stand_alone() {
        let spec = TOOLS.iter().find(|t| t.name == "create_watch").copied().expect("tool");
        let tool = tool(&document(), spec).expect("made");
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(schema["required"], json!(["url"]));
        assert_eq!(schema["properties"]["options"]["$ref"], "#/$defs/Options");
        assert_eq!(schema["$defs"]["Options"]["properties"]["rules"]["$ref"], "#/$defs/Rules", "followed in turn");
        assert!(schema["properties"][IDEMPOTENCY_KEY].is_object());
        let call =
            request(&tool, json!({"url": "https://x.example/", IDEMPOTENCY_KEY: "k1"}).as_object().expect("map"))
                .expect("request");
        assert_eq!(call.body, Some(json!({"url": "https://x.example/"})));
        assert_eq!(call.idempotency_key.as_deref(), Some("k1"));
    }

    #[test]
    fn path_and_query_arguments_go_where_the_operation_says() {
        let spec = TOOLS.iter().find(|t| t.name == "read_values").copied().expect("tool");
        let tool = tool(&document(), spec).expect("made");
        assert_eq!(tool.input_schema["properties"]["name"]["description"], "the value");
        let args = json!({"id": "wat_1/..", "name": "price & tax"});
        let call = request(&tool, args.as_object().expect("map")).expect("request");
        assert_eq!(call.path, "/watches/wat_1%2F../values?name=price%20%26%20tax");
        assert_eq!(call.body, None);
        assert_eq!(request(&tool, &Map::new()).expect_err("no id"), "id: required");
    }
}
