//! The OpenAPI document: valid OpenAPI 3.1, served, and in step with the router both ways.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::conformance::document;
use driftwatch_test_support::Backend;

use crate::support::{SendChecked, TestApp};

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// Every (method, path template) the document describes.
fn operations() -> Vec<(String, String)> {
    let mut ops = Vec::new();
    for (path, item) in document()["paths"].as_object().expect("paths") {
        for method in METHODS {
            if item.get(method).is_some() {
                ops.push((method.to_owned(), path.clone()));
            }
        }
    }
    ops
}

#[test]
fn the_document_is_valid_openapi_3_1() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let meta: Value =
        serde_json::from_str(include_str!("../../fixtures/openapi-3.1.schema.json")).expect("the OAS 3.1 schema");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&meta)
        .expect("the OAS 3.1 schema compiles");
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "the document is not valid OpenAPI 3.1: {errors:#?}");
    // The check can fail: a document without `info`, or with a response lacking its
    // description, is refused.
    let mut broken = doc.clone();
    broken.as_object_mut().expect("object").remove("info");
    assert!(!validator.is_valid(&broken), "a document without info is invalid");
    let mut broken = doc.clone();
    broken["paths"]["/watches"]["get"]["responses"]["200"].as_object_mut().expect("response").remove("description");
    assert!(!validator.is_valid(&broken), "a response needs a description");

    // Every schema is a valid JSON Schema 2020-12 (the OAS schema leaves them unchecked).
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        jsonschema::draft202012::meta::validate(schema).unwrap_or_else(|e| panic!("schema {name}: {e}"));
    }
    // Operation ids are unique, every operation has a summary, and every `$ref` resolves.
    let mut ids = std::collections::HashSet::new();
    for (method, path) in operations() {
        let op = &doc["paths"][&path][&method];
        let id = op["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has an operationId"));
        assert!(ids.insert(id.to_owned()), "operationId {id} is used twice");
        assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path} has a summary");
    }
    let text = doc.to_string();
    for reference in text.split("\"$ref\":\"").skip(1).map(|r| &r[..r.find('"').expect("closing quote")]) {
        assert!(doc.pointer(reference.trim_start_matches('#')).is_some(), "dangling $ref {reference}");
    }
}

#[test]
fn a_route_cannot_bypass_the_documented_router() {
    // `api::routes()` takes handlers only through `routes!`, which does not compile for a
    // handler without `#[utoipa::path]`. What could still add an undocumented route is a plain
    // `.route(...)` (or `nest`, `merge`, `route_service`) somewhere in the web crate: outside
    // the browser UI (`src/ui/`, its own sibling router, whose paths never start with `/api`)
    // there are only the operator's probes and metrics, outside `/api` too.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/web/src");
    let mut found = Vec::new();
    let mut ui_routes = 0;
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the web crate") {
            let path = entry.expect("entry").path();
            if path.is_dir() && path.file_name().is_some_and(|n| n == "ui") {
                let text = std::fs::read_to_string(path.join("mod.rs")).expect("read the UI router");
                for line in text.lines().filter(|l| l.trim().starts_with(".route(")) {
                    assert!(!line.contains("\"/api"), "a UI route under /api: {line}");
                    ui_routes += 1;
                }
            } else if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("read source");
                for line in text.lines() {
                    let code = line.trim();
                    if code.starts_with("//") {
                        continue;
                    }
                    for call in [".route(", ".route_service(", ".nest(", ".nest_service(", ".merge("] {
                        if code.contains(call) {
                            found.push(format!("{}: {code}", path.file_name().and_then(|n| n.to_str()).unwrap_or("?")));
                        }
                    }
                }
            }
        }
    }
    found.sort();
    assert_eq!(
        found,
        vec![
            r#"lib.rs: .merge(ui::routes())"#.to_owned(),
            r#"lib.rs: .nest("#.to_owned(),
            r#"lib.rs: Router::new().route("/metrics", get(ops::metrics)).with_state(state)"#.to_owned(),
            // The MCP server: its tools call the documented API in-process (`web/src/mcp.rs`).
            r#"lib.rs: app.clone().merge(mcp::routes(state, app))"#.to_owned(),
            r#"lib.rs: let mut router = Router::new().route("/healthz", get(|| async { "ok" })).route("/readyz", get(ops::ready));"#.to_owned(),
            r#"lib.rs: router = router.route("/metrics", get(ops::metrics));"#.to_owned(),
            r#"mcp.rs: .nest_service("/mcp", service)"#.to_owned(),
        ],
        "routes outside `api::routes()`: add new API routes there with `routes!` and `#[utoipa::path]`"
    );
    assert!(ui_routes > 10, "the UI router was read");
}

/// Each documented operation reaches a handler (not the 404 of an unknown path nor a 405), and
/// the document is served without a token.
pub async fn every_documented_operation_is_routed(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let served = app.http.get(format!("{}/openapi.json", app.base)).send_checked().await.expect("openapi.json");
    assert_eq!(served.status(), 200);
    assert!(served.headers()["content-type"].to_str().expect("ascii").starts_with("application/json"));
    assert_eq!(&served.json::<Value>().await.expect("json"), document(), "the served document is the built one");

    let ops = operations();
    assert!(ops.len() >= 35, "{} operations", ops.len());
    for (method, template) in ops {
        if template == "/openapi.json" {
            continue;
        }
        let path = template.replace("{id}", "xyz_none");
        let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let body = matches!(method, reqwest::Method::POST | reqwest::Method::PATCH).then(|| json!({}));
        let (status, answer) = app.call(method.clone(), &path, &token, body).await;
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {template}: {answer}");
        assert_ne!(answer["detail"], "no such route", "{method} {template} is not routed");
    }

    // An undocumented method on a documented path is a 405 problem; an unknown path a 404.
    let (status, _) = app.call(reqwest::Method::PUT, "/watches", &token, Some(json!({}))).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    let (status, problem) = app.get("/nowhere", &token).await;
    assert_eq!((status, problem["detail"].as_str()), (StatusCode::NOT_FOUND, Some("no such route")));
}
