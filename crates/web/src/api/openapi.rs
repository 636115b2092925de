//! The OpenAPI 3.1 document: operations and schemas come from the handlers' `#[utoipa::path]`
//! attributes and the views' `ToSchema` derives; the conventions every operation shares
//! (authentication, problem responses, `ETag`, `Idempotency-Key`, rate limits) are added here,
//! once, from what each operation is.

use std::sync::OnceLock;

use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Map, Value, json};

use crate::api::error::ApiError;

/// The document's fixed parts; the operations are added by the router.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "driftwatch",
        description = "Watch web pages and get told when they change. Every request but this document's \
                       needs `Authorization: Bearer <token>`; `GET` needs the `read` scope, everything else \
                       `write`. Lists page with `limit` and `cursor`. Errors are `application/problem+json` \
                       (RFC 9457); validation problems name each field at fault in `errors`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    servers((url = "/api/v1")),
    security(("bearer" = [])),
    components(schemas(ApiError)),
    tags(
        (name = "watches", description = "Pages to watch: what to extract, when to check, what counts as a change."),
        (name = "events", description = "What happened: changes, failing checks, endpoint events; and the change feed."),
        (name = "endpoints", description = "Where events are delivered: signed webhooks or Slack."),
        (name = "deliveries", description = "Every delivery of an event to an endpoint, with its attempts; the dead-letter queue."),
        (name = "recoveries", description = "Bulk re-queues of an endpoint's failed and dead deliveries."),
        (name = "proxies", description = "The account's named proxies, which watches name in `options.fetch.proxy`."),
        (name = "tokens", description = "The account's API tokens."),
        (name = "secrets", description = "The account's named secrets (passwords login steps type); values are never shown."),
        (name = "account", description = "The account's own language model for verdicts on changes."),
        (name = "meta", description = "This document and account-wide statistics."),
    )
)]
pub struct ApiDoc;

/// This document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    operation_id = "get_openapi",
    tag = "meta",
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of this API.", body = Object))
)]
pub async fn serve() -> impl IntoResponse {
    static DOCUMENT: OnceLock<String> = OnceLock::new();
    let body = DOCUMENT.get_or_init(|| document().to_string());
    ([(header::CONTENT_TYPE, "application/json")], body.as_str())
}

/// The whole OpenAPI document of `/api/v1`, as served at `/api/v1/openapi.json`.
pub fn document() -> Value {
    let (_, openapi) = super::routes().split_for_parts();
    let mut doc = serde_json::to_value(openapi).unwrap_or_else(|_| json!({}));
    add_conventions(&mut doc);
    super::webhooks::add(&mut doc);
    doc
}

/// The shared error responses, by status, each a problem document.
const PROBLEMS: &[(&str, &str, &str)] = &[
    ("400", "BadRequest", "The request cannot be read: malformed JSON, a NUL character or a path that is not UTF-8."),
    ("401", "Unauthorized", "No token, or an unknown or revoked one."),
    ("403", "Forbidden", "The token lacks the `write` scope."),
    ("404", "NotFound", "No such resource in this account."),
    ("409", "Conflict", "The resource is busy or in a state that does not allow this."),
    ("413", "PayloadTooLarge", "The body is too large."),
    ("415", "UnsupportedMediaType", "The body is not sent as JSON."),
    ("422", "ValidationFailed", "A field is invalid; `errors` names each one."),
    ("429", "TooManyRequests", "The token's rate limit is spent; retry after `Retry-After` seconds."),
    ("500", "InternalError", "The server failed; the error was logged."),
    ("503", "Unavailable", "The database is unavailable."),
];

fn add_conventions(doc: &mut Value) {
    let components = doc.as_object_mut().map(|d| d.entry("components").or_insert_with(|| json!({})));
    if let Some(Value::Object(components)) = components {
        let responses = components.entry("responses").or_insert_with(|| json!({}));
        for (status, name, description) in PROBLEMS {
            let mut response = json!({
                "description": description,
                "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
            });
            if *status == "429" {
                add_header(
                    &mut response,
                    "Retry-After",
                    "Seconds until the token may send again.",
                    json!({"type": "integer", "minimum": 0}),
                );
            }
            responses[*name] = response;
        }
        components.entry("securitySchemes").or_insert_with(|| json!({})).as_object_mut().map(|schemes| {
            schemes.insert(
                "bearer".into(),
                json!({"type": "http", "scheme": "bearer", "description": "An API token (`dwt_...`)."}),
            )
        });
    }
    if let Some(Value::Object(schemas)) = doc.pointer_mut("/components/schemas") {
        complete_views(schemas);
    }
    let Some(Value::Object(paths)) = doc.get_mut("paths") else { return };
    for (path, item) in paths.iter_mut() {
        let Value::Object(item) = item else { continue };
        for (method, operation) in item.iter_mut() {
            if let Value::Object(operation) = operation {
                add_operation_conventions(path, method, operation);
            }
        }
    }
}

/// Answers that always carry every field (`null` when empty), except these, which are left out
/// when they do not apply (and are never `null`).
const VIEWS: &[&str] = &[
    "Watch",
    "Run",
    "Event",
    "Verdict",
    "AccountModel",
    "ModelList",
    "Endpoint",
    "EndpointHealth",
    "Route",
    "DeliveredTo",
    "WatchExpectation",
    "Recovery",
    "Delivery",
    "Attempt",
    "Snapshot",
    "Token",
    "Stats",
    "WatchCounts",
    "EndpointCounts",
    "Problem",
    "FieldError",
    "TextChange",
    "Hunk",
    "HunkLine",
    "WordSegment",
];
const LEFT_OUT_WHEN_EMPTY: &[(&str, &str)] = &[
    ("Endpoint", "secret"),
    ("Event", "verdict"),
    ("Verdict", "next_attempt_at"),
    ("Watch", "delivered_to"),
    ("Watch", "expectation"),
    ("Delivery", "attempt_log"),
    ("Delivery", "last_attempt"),
    ("Snapshot", "content"),
    ("Snapshot", "values"),
    ("Token", "token"),
    ("HunkLine", "words"),
    ("Problem", "errors"),
];

/// utoipa marks every `Option` field of an answer optional and nullable; the views say more:
/// all their fields are always present, and the few that are left out are never `null`.
fn complete_views(schemas: &mut Map<String, Value>) {
    // utoipa inlines a generic's argument: `List_Watch.items` should point at `Watch` instead.
    let names: Vec<String> = schemas.keys().cloned().collect();
    for (name, schema) in schemas.iter_mut() {
        if let Some(item) = name.strip_prefix("List_").filter(|item| names.iter().any(|n| n == item))
            && let Some(items) = schema.pointer_mut("/properties/items/items")
        {
            *items = json!({"$ref": format!("#/components/schemas/{item}")});
        }
    }
    for (name, schema) in schemas.iter_mut() {
        let is_list = name.starts_with("List_");
        if !is_list && !VIEWS.contains(&name.as_str()) {
            continue;
        }
        let Some(Value::Object(properties)) = schema.get_mut("properties") else { continue };
        let mut required = Vec::new();
        for (field, property) in properties.iter_mut() {
            if LEFT_OUT_WHEN_EMPTY.contains(&(name.as_str(), field.as_str())) {
                not_null(property);
            } else {
                required.push(Value::String(field.clone()));
            }
        }
        schema["required"] = Value::Array(required);
    }
}

/// Drops `null` from a property's types.
fn not_null(property: &mut Value) {
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            property["type"] = types[0].clone();
        }
    } else if let Some(Value::Array(choices)) = property.get("oneOf") {
        let rest: Vec<Value> = choices.iter().filter(|c| c.get("type").is_none_or(|t| t != "null")).cloned().collect();
        if rest.len() == 1 {
            *property = rest[0].clone();
        }
    }
}

/// Documents a response header (a response given by reference is left alone).
fn add_header(response: &mut Value, name: &str, description: &str, schema: Value) {
    if let Some(Value::Object(headers)) = response
        .as_object_mut()
        .filter(|r| !r.contains_key("$ref"))
        .map(|r| r.entry("headers").or_insert_with(|| json!({})))
    {
        headers.insert(name.into(), json!({"description": description, "schema": schema}));
    }
}

fn problem(status: &str) -> Value {
    let name = PROBLEMS.iter().find(|(s, _, _)| *s == status).map_or("InternalError", |(_, name, _)| name);
    json!({"$ref": format!("#/components/responses/{name}")})
}

/// What every operation answers beyond its own successes, from what it is: public or not,
/// reading or writing, with a path id, a query or a body.
fn add_operation_conventions(path: &str, method: &str, operation: &mut Map<String, Value>) {
    let public = operation.get("security").and_then(Value::as_array).is_some_and(|s| s.iter().all(|r| r == &json!({})));
    let has_body = operation.contains_key("requestBody");
    let parameters = operation.entry("parameters").or_insert_with(|| json!([]));
    let has_query =
        parameters.as_array().is_some_and(|ps| ps.iter().any(|p| p.get("in").and_then(Value::as_str) == Some("query")));
    if let Value::Array(parameters) = parameters {
        add_parameter_conventions(method, parameters);
        if parameters.is_empty() {
            operation.remove("parameters");
        }
    }
    let Some(Value::Object(responses)) = operation.get_mut("responses") else { return };
    add_response_headers(method, responses);
    for status in problem_statuses(path, method, public, has_query, has_body) {
        responses.entry(status).or_insert_with(|| problem(status));
    }
}

/// The parameters every operation takes: no NUL in a path or query string, `If-None-Match` on
/// reads and `Idempotency-Key` on posts.
fn add_parameter_conventions(method: &str, parameters: &mut Vec<Value>) {
    let is_get = method == "get";
    // No id or filter holds a NUL character; the server refuses one in a path or query (400).
    for schema in parameters.iter_mut().filter_map(|p| p.get_mut("schema")).filter_map(Value::as_object_mut) {
        let is_string = schema
            .get("type")
            .is_some_and(|t| t == "string" || t.as_array().is_some_and(|a| a.contains(&json!("string"))));
        let constrained = ["pattern", "enum", "format"].iter().any(|k| schema.contains_key(*k));
        if is_string && !constrained {
            schema.insert("pattern".into(), json!("^[^\\u0000]*$"));
        }
    }
    if is_get {
        parameters.push(json!({
            "name": "If-None-Match", "in": "header", "required": false,
            "description": "An `ETag` from an earlier answer: 304 without a body when it still matches.",
            "schema": {"type": "string"}
        }));
    }
    if method == "post" {
        parameters.push(json!({
            "name": "Idempotency-Key", "in": "header", "required": false,
            "description": "Repeating a key on this path within 24 hours replays the first successful \
                            answer (`idempotent-replayed: true`) and does nothing again; the same key with \
                            a different body is a 422, and a repeat while the first request still runs a \
                            409. A failed request frees its key. Keys are scoped to the account and path.",
            "schema": {"type": "string", "minLength": 1, "maxLength": 255}
        }));
    }
}

/// The response headers every operation documents: `ETag` (and 304) on reads,
/// `idempotent-replayed` on the successes of posts.
fn add_response_headers(method: &str, responses: &mut Map<String, Value>) {
    let is_get = method == "get";
    if is_get {
        if let Some(ok) = responses.get_mut("200") {
            add_header(ok, "ETag", "A strong tag of this body.", json!({"type": "string"}));
        }
        responses
            .entry("304")
            .or_insert_with(|| json!({"description": "Not modified: the `If-None-Match` tag still matches."}));
    }
    if method == "post" {
        for (_, response) in responses.iter_mut().filter(|(status, _)| status.starts_with('2')) {
            let description =
                "`true` when this is the stored answer to an earlier request with the same `Idempotency-Key`.";
            add_header(response, "idempotent-replayed", description, json!({"type": "string", "enum": ["true"]}));
        }
    }
}

/// The problem answers an operation may give, by status (a status may repeat).
fn problem_statuses(path: &str, method: &str, public: bool, has_query: bool, has_body: bool) -> Vec<&'static str> {
    let is_get = method == "get";
    // Any request may be unreadable (a NUL in its path or query, a path that is not UTF-8) and
    // any request with a token counts against its rate limit.
    let mut statuses = vec!["400", "429"];
    if !public {
        statuses.push("401");
    }
    if !is_get && !public {
        statuses.extend(["403", "409"]);
    }
    if path.contains('{') {
        statuses.push("404");
    }
    if has_query || has_body {
        statuses.extend(["400", "422"]);
    }
    if method == "post" {
        // A malformed or reused Idempotency-Key; a body too large to keep for replays.
        statuses.extend(["413", "422"]);
    }
    if has_body {
        statuses.extend(["413", "415"]);
    }
    if !public {
        statuses.extend(["500", "503"]);
    }
    statuses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_schemas_say_what_the_server_checks() {
        let doc = document();
        for schema in ["CreateWatch", "UpdateWatch"] {
            let pattern = &doc["components"]["schemas"][schema]["properties"]["url"]["pattern"];
            assert_eq!(pattern, driftwatch_validate::URL_PATTERN, "{schema}.url");
        }
        for schema in ["CreateEndpoint", "UpdateEndpoint"] {
            let pattern =
                doc["components"]["schemas"][schema]["properties"]["url"]["pattern"].as_str().expect("pattern");
            let pattern = driftwatch_core::compiled_regex(pattern).expect("compiles");
            assert!(pattern.is_match("https://hooks.example.com/x") && pattern.is_match("smtp://mail.example:587"));
            assert!(!pattern.is_match("ftp://x"), "{schema}.url");
        }
    }

    #[test]
    fn views_list_every_field_as_required_but_those_left_out() {
        let doc = document();
        let watch = &doc["components"]["schemas"]["Watch"];
        assert!(watch["required"].as_array().is_some_and(|r| r.contains(&json!("last_run_at"))));
        let endpoint = &doc["components"]["schemas"]["Endpoint"];
        assert!(endpoint["required"].as_array().is_some_and(|r| !r.contains(&json!("secret"))));
        assert_eq!(endpoint["properties"]["secret"]["type"], "string", "left out, never null");
    }
}
