//! The MCP server at `/mcp`, driven by a client we did not write: the official MCP Python SDK
//! (`mcp` on PyPI, over Streamable HTTP; see `driftwatch_test_support::McpClient`).

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, McpClient, PageServer, Receiver};
use serde_json::{Value, json};

use crate::support::TestApp;

/// The app's MCP endpoint.
fn url(app: &TestApp) -> String {
    format!("{}/mcp", app.root())
}

fn call(name: &str, arguments: Value) -> Value {
    json!(["call", name, arguments])
}

pub async fn an_agent_watches_a_page_through_the_python_sdk(backend: Backend) {
    let Some(mcp) = McpClient::find() else { return };
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let page = PageServer::start("<html><body><h1>Plans</h1><p id=price>Pro: 10 EUR</p></body></html>").await;

    let created = mcp
        .http(
            &url(&app),
            &token,
            &json!([
                ["list_tools"],
                call(
                    "create_watch",
                    json!({"url": page.url, "name": "Pricing", "selector": "#price", "idempotency_key": "k-1"})
                ),
                call(
                    "create_watch",
                    json!({"url": page.url, "name": "Pricing", "selector": "#price", "idempotency_key": "k-1"})
                ),
                call("create_watch", json!({"url": "not a url"})),
                call("create_watch", json!({"url": page.url, "options": {"conditions": {"preset": "price_below"}}})),
                json!(["list_prompts"]),
                json!(["get_prompt", "set_up_watch", {"url": page.url, "goal": "a price below 50"}]),
                call("preview", json!({"url": page.url, "selector": "#price"})),
                call("preview", json!({"url": page.url, "selector": "p["})),
            ]),
        )
        .await;
    let tools: Vec<&str> = created[0].as_array().expect("names").iter().filter_map(Value::as_str).collect();
    for expected in [
        "create_watch",
        "preview",
        "check_now",
        "get_diff",
        "list_changes",
        "redeliver",
        "list_dead_letters",
        "read_values",
    ] {
        assert!(tools.contains(&expected), "{expected} in {tools:?}");
    }
    let watch = &created[1]["structured"];
    assert_eq!(created[1]["is_error"], false, "{}", created[1]);
    let id = watch["id"].as_str().expect("the watch's id").to_owned();
    assert!(created[1]["text"].as_str().is_some_and(|t| t.contains(&id)), "a short text names it: {}", created[1]);
    assert_eq!(created[2]["structured"]["id"], id.as_str(), "the same key answers the same watch");
    assert_eq!(app.ok("/watches", &token).await["items"].as_array().map(Vec::len), Some(1));
    // Prompts that walk a model through setting one up.
    assert_eq!(created[5], json!(["quiet_noisy_watch", "set_up_watch"]));
    let prompt = created[6]["text"].as_str().unwrap_or_default();
    assert!(
        prompt.contains(&page.url) && prompt.contains("a price below 50") && prompt.contains("create_watch"),
        "{prompt}"
    );
    // A preview reads the text a watch would compare, saving nothing.
    assert_eq!(created[7]["structured"]["text"], "Pro: 10 EUR\n", "{}", created[7]);
    assert_eq!(
        (created[8]["is_error"].as_bool(), created[8]["structured"]["status"].as_i64()),
        (Some(true), Some(422))
    );
    assert!(created[8]["text"].as_str().is_some_and(|t| t.contains("selector")), "{}", created[8]);
    // Refusals are tool errors naming the field, never protocol failures.
    for (answer, field) in [(&created[3], "url"), (&created[4], "options.conditions.amount")] {
        assert_eq!(answer["is_error"], true, "{answer}");
        assert!(answer["text"].as_str().is_some_and(|t| t.contains(field)), "{field}: {answer}");
    }

    // A baseline, then the page changes: the agent checks, reads the change and its diff.
    let first = mcp.http(&url(&app), &token, &json!([call("check_now", json!({"id": id}))])).await;
    // (The scheduler may have taken the baseline already: a new watch is due at once.)
    let outcome = first[0]["structured"]["outcome"].as_str().unwrap_or_default();
    assert!(outcome == "baseline" || outcome == "unchanged", "{}", first[0]);
    page.set("<html><body><h1>Plans</h1><p id=price>Pro: 12 EUR</p></body></html>");
    let after = mcp
        .http(
            &url(&app),
            &token,
            &json!([
                call("check_now", json!({"id": id})),
                call("get_diff", json!({"id": id})),
                call("list_changes", json!({})),
                call("list_watches", json!({"q": "Pricing"})),
                json!(["list_resources"]),
                json!(["read_resource", format!("driftwatch://watches/{id}/diff/latest")]),
            ]),
        )
        .await;
    assert_eq!(after[0]["structured"]["outcome"], "changed", "{}", after[0]);
    let unified = after[1]["structured"]["unified"].as_str().unwrap_or_default();
    assert!(unified.contains("+Pro: 12 EUR") && unified.contains("-Pro: 10 EUR"), "{}", after[1]);
    let changes = after[2]["structured"]["items"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{}", after[2]);
    assert_eq!(changes[0]["watch_id"], id.as_str());
    assert!(after[2]["structured"]["next_cursor"].is_string(), "a cursor to continue from");
    assert_eq!(after[3]["structured"]["items"][0]["id"], id.as_str());
    // The same through resources at stable URIs.
    let uris: Vec<&str> = after[4].as_array().expect("uris").iter().filter_map(Value::as_str).collect();
    assert!(uris.contains(&format!("driftwatch://watches/{id}").as_str()), "{uris:?}");
    let diff: Value = serde_json::from_str(after[5]["text"].as_str().expect("text")).expect("json");
    assert_eq!(diff["unified"], after[1]["structured"]["unified"], "{}", after[5]);
}

pub async fn other_accounts_and_read_only_tokens_are_held_off(backend: Backend) {
    let Some(mcp) = McpClient::find() else { return };
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let other = app.account("globex").await;
    let (status, watch) = app.post("/watches", &token, json!({"url": "https://shop.example/"})).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");

    // Another account's id is not found through every tool that takes one.
    let answers = mcp
        .http(
            &url(&app),
            &other,
            &json!([
                call("get_watch", json!({"id": id})),
                call("check_now", json!({"id": id})),
                call("get_diff", json!({"id": id})),
                call("update_watch", json!({"id": id, "name": "mine now"})),
                call("list_watches", json!({})),
                json!(["read_resource", format!("driftwatch://watches/{id}")]),
                json!(["list_resources"]),
            ]),
        )
        .await;
    for answer in &answers[..4] {
        assert_eq!(answer["is_error"], true, "{answer}");
        assert_eq!(answer["structured"]["status"], 404, "{answer}");
    }
    assert_eq!(answers[4]["structured"]["items"], json!([]), "{}", answers[4]);
    let unreadable = answers[5]["protocol_error"].as_str().unwrap_or_default();
    assert!(unreadable.contains("no resource"), "another account's watch is not found: {}", answers[5]);
    assert_eq!(answers[6], json!([]), "nor listed");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["name"], watch["name"], "unchanged");

    // A read-only token is shown the read tools only, and refused the others.
    let (status, reader) = app.post("/tokens", &token, json!({"name": "agent", "scopes": ["read"]})).await;
    assert_eq!(status, StatusCode::CREATED, "{reader}");
    let reader = reader["token"].as_str().expect("token");
    let answers = mcp
        .http(
            &url(&app),
            reader,
            &json!([["list_tools"], call("pause_watch", json!({"id": id})), call("get_watch", json!({"id": id}))]),
        )
        .await;
    let tools: Vec<&str> = answers[0].as_array().expect("names").iter().filter_map(Value::as_str).collect();
    assert!(tools.contains(&"get_watch") && tools.contains(&"list_changes"), "{tools:?}");
    for write in ["create_watch", "update_watch", "pause_watch", "check_now", "redeliver"] {
        assert!(!tools.contains(&write), "{write} is not offered to a read-only token: {tools:?}");
    }
    assert_eq!(answers[1]["is_error"], true, "{}", answers[1]);
    assert_eq!(answers[1]["structured"]["status"], 403, "{}", answers[1]);
    assert_eq!(answers[2]["structured"]["id"], id);
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["state"], "active", "not paused");
}

/// The transport's guards, over plain HTTP: no token, a foreign Origin, an oversized message.
pub async fn the_endpoint_refuses_strangers_before_the_protocol(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let url = format!("{}/mcp", app.root());
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}});
    let post = |token: Option<&str>, origin: Option<&str>, body: String| {
        let mut request = app
            .http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let anonymous = post(None, None, initialize.to_string()).await.expect("answer");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(anonymous.headers()["www-authenticate"], "Bearer");
    let revoked = post(Some("dwt_not_a_token"), None, initialize.to_string()).await.expect("answer");
    assert_eq!(revoked.status(), StatusCode::UNAUTHORIZED);
    let rebinding = post(Some(&token), Some("https://evil.example"), initialize.to_string()).await.expect("answer");
    assert_eq!(rebinding.status(), StatusCode::FORBIDDEN, "a foreign Origin (DNS rebinding)");
    let huge = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "create_watch",
        "arguments": {"url": "https://x.example/", "name": "x".repeat(2 << 20)}}});
    let oversized = post(Some(&token), None, huge.to_string()).await.expect("answer");
    assert_eq!(oversized.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let error: Value = oversized.json().await.expect("a JSON-RPC error");
    assert_eq!(error["error"]["code"], -32600, "{error}");
    let fine = post(Some(&token), None, initialize.to_string()).await.expect("answer");
    assert_eq!(fine.status(), StatusCode::OK);
    let session = fine.headers()["mcp-session-id"].to_str().expect("session id").to_owned();
    fine.bytes().await.expect("initialized");
    // The session is bound to the token that opened it: another token cannot use it.
    let other = app.account("globex").await;
    let in_session = |token: &str, body: Value| {
        app.http
            .post(&url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string())
            .send()
    };
    in_session(&token, json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.expect("answer");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let hijacked = in_session(&other, list.clone()).await.expect("answer").text().await.expect("body");
    assert!(hijacked.contains("opened with another token") && !hijacked.contains("create_watch"), "{hijacked}");
    let own = in_session(&token, list).await.expect("answer").text().await.expect("body");
    assert!(own.contains("create_watch"), "{own}");
    let malformed = post(Some(&token), None, "{not json".into()).await.expect("answer");
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    let error: Value = malformed.json().await.expect("a JSON-RPC error");
    assert_eq!(
        (&error["jsonrpc"], &error["id"], &error["error"]["code"]),
        (&json!("2.0"), &Value::Null, &json!(-32700))
    );
}

/// A subscribed agent is told when its watch changes, with the event and the feed's cursor,
/// through both ways of subscribing; another account's subscriber hears nothing of it.
pub async fn a_subscribed_agent_is_told_when_the_page_changes(backend: Backend) {
    let Some(mcp) = McpClient::find() else { return };
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let other = app.account("globex").await;
    let page = PageServer::start("<p id=stock>Sold out</p>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": page.url, "selector": "#stock"})).await;
    let id = watch["id"].as_str().expect("id");
    let uri = format!("driftwatch://watches/{id}");

    // Listening (2026-07-28) to the watch, and to all watches of another account.
    let listening = mcp.subscribe(&url(&app), &token, &uri, false).await;
    let stranger = mcp.subscribe(&url(&app), &other, "driftwatch://watches", false).await;
    page.set("<p id=stock>In stock</p>");
    let run = app.check(&token, id).await;
    let event_id = run["event_id"].as_str().expect("a change event");
    let told = listening.update().await;
    assert_eq!((told["protocol"].as_str(), told["uri"].as_str()), (Some("2026-07-28"), Some(uri.as_str())), "{told}");
    let silence = tokio::time::timeout(std::time::Duration::from_secs(2), stranger.update()).await;
    assert!(silence.is_err(), "another account's subscriber hears nothing: {silence:?}");

    // The session's resources/subscribe (earlier protocol versions): the event is in _meta.
    let subscribed = mcp.subscribe(&url(&app), &token, &uri, true).await;
    page.set("<p id=stock>Sold out</p>");
    let run = app.check(&token, id).await;
    let second = run["event_id"].as_str().expect("a change event");
    assert_ne!(second, event_id);
    let told = subscribed.update().await;
    assert_eq!(told["uri"], uri.as_str(), "{told}");
    assert_eq!(told["meta"]["event_id"], second, "{told}");
    assert_eq!(told["meta"]["cursor"], second, "the changes feed's cursor: {told}");
    assert_eq!(told["meta"]["event_type"], "change.detected", "{told}");
}

/// The API's per-token budget covers work done through MCP: past it, a tool call is a tool
/// error saying so (429), not a protocol failure.
pub async fn the_rate_limit_holds_through_mcp(backend: Backend) {
    let Some(mcp) = McpClient::find() else { return };
    let app = TestApp::start_with(backend, |s| s.rate_limit_per_minute = 5).await;
    let token = app.account("acme").await;
    let plan: Vec<Value> = (0..8).map(|_| call("list_watches", json!({}))).collect();
    let answers = mcp.http(&url(&app), &token, &Value::Array(plan)).await;
    let limited: Vec<&Value> = answers.iter().filter(|a| a["structured"]["status"] == 429).collect();
    assert!(!limited.is_empty(), "eight calls on a budget of five: {answers:?}");
    assert!(limited.iter().all(|a| a["is_error"] == true), "{limited:?}");
    assert_eq!(answers[0]["is_error"], false, "the first fits: {}", answers[0]);
}

/// Deliveries through the tools: the agent finds a dead letter and sends it again.
pub async fn an_agent_redelivers_a_dead_letter(backend: Backend) {
    let Some(mcp) = McpClient::find() else { return };
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(404).await;
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({})).await;
    let (status, delivery) = app.post(&format!("/endpoints/{endpoint_id}/test"), &token, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
    let id = delivery["id"].as_str().expect("id");
    // 404 is permanent: dead after one attempt.
    app.wait_delivery(&token, id, "dead").await;

    receiver.set_status(200);
    let answers = mcp
        .http(
            &url(&app),
            &token,
            &json!([
                call("list_dead_letters", json!({})),
                call("redeliver", json!({"id": id})),
                call("list_deliveries", json!({"status": "sent"})),
            ]),
        )
        .await;
    let dead: Vec<&str> = answers[0]["structured"]["items"]
        .as_array()
        .expect("dead letters")
        .iter()
        .filter_map(|d| d["id"].as_str())
        .collect();
    assert_eq!(dead, [id], "{}", answers[0]);
    assert_eq!(answers[1]["structured"]["status"], "sent", "{}", answers[1]);
    assert_eq!(answers[1]["structured"]["attempts"], 2, "{}", answers[1]);
    assert_eq!(answers[2]["structured"]["items"][0]["id"], id, "{}", answers[2]);
}

/// Open sessions are capped: past the cap `initialize` gets a JSON-RPC error, and closing a
/// session (DELETE) makes room.
pub async fn open_sessions_are_capped(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.mcp_max_sessions = 2).await;
    let token = app.account("acme").await;
    let url = format!("{}/mcp", app.root());
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    .to_string();
    let open = || {
        app.http
            .post(&url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize.clone())
            .send()
    };
    let mut ids = Vec::new();
    for _ in 0..2 {
        let opened = open().await.expect("answer");
        assert_eq!(opened.status(), StatusCode::OK);
        ids.push(opened.headers()["mcp-session-id"].to_str().expect("id").to_owned());
    }
    let refused = open().await.expect("answer");
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    let error: Value = refused.json().await.expect("a JSON-RPC error");
    assert_eq!(error["error"]["code"], -32000, "{error}");
    let closed = app
        .http
        .delete(&url)
        .bearer_auth(&token)
        .header("mcp-session-id", &ids[0])
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .expect("answer");
    assert!(closed.status().is_success(), "{}", closed.status());
    assert_eq!(open().await.expect("answer").status(), StatusCode::OK, "room again");
}
