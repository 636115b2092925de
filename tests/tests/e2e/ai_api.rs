//! AI verdicts through the API: `options.ai` on watches, an account's own model, a held change
//! released by hand, and an intent tried on past checks.

use axum::http::StatusCode;
use driftwatch_test_support::llm::{ModelServer, Reply};
use driftwatch_test_support::{Backend, McpClient, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::support::TestApp;

fn shop(price: &str) -> String {
    format!("<html><body><h1>Widget</h1><p id=price>Price: {price} EUR</p><p id=stock>In stock</p></body></html>")
}

fn items(list: &Value) -> &Vec<Value> {
    list["items"].as_array().expect("items")
}

/// The field a 422 problem names first.
fn field_of(problem: &Value) -> &str {
    problem["errors"][0]["field"].as_str().unwrap_or_default()
}

/// `options.ai` is kept as given through create, PATCH and GET; bad input is refused naming
/// the field, on create and on PATCH alike.
pub async fn options_ai_round_trip_and_bad_input_names_the_field(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let ai = json!({"intent": "Tell me when the price drops below 50 EUR.", "summary": true, "on_error": "hold"});
    let (status, watch) =
        app.post("/watches", &token, json!({"url": "https://shop.example/", "options": {"ai": ai}})).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    assert_eq!(watch["options"]["ai"], ai, "{watch}");
    let id = watch["id"].as_str().expect("id").to_owned();
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["options"]["ai"], ai);

    let changed = json!({"intent": "Only when it is out of stock.", "summary": false, "on_error": "open"});
    let (status, patched) = app
        .call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(json!({"options": {"ai": changed}})))
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["options"]["ai"], changed);

    let long = "x".repeat(4001);
    let refused: [(Value, &str); 4] = [
        (json!({"intent": long}), "options.ai.intent"),
        (json!({"intent": 5}), "options.ai.intent"),
        (json!({"intent": "x", "mood": "calm"}), "options.ai"),
        (json!({"intent": "x", "on_error": "maybe"}), "options.ai.on_error"),
    ];
    for (ai, field) in refused {
        let options = json!({"ai": ai});
        let (status, problem) =
            app.post("/watches", &token, json!({"url": "https://shop.example/", "options": options})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "create {ai}: {problem}");
        assert!(field_of(&problem).starts_with(field), "create {ai} names {field}: {problem}");
        let (status, problem) = app
            .call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(json!({"options": options})))
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "PATCH {ai}: {problem}");
        assert!(field_of(&problem).starts_with(field), "PATCH {ai} names {field}: {problem}");
    }
    let (status, problem) = app
        .post("/watches", &token, json!({"url": "https://shop.example/", "options": {"ai": {"mood": "calm"}}}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("mood")), "the unknown key is named: {problem}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["options"]["ai"], changed, "refusals changed nothing");
    assert_eq!(items(&app.ok("/watches", &token).await).len(), 1, "no refused watch was created");
}

/// An account's own model: set, shown without its key (stored sealed), kept, removed, and
/// refused naming the field; a loopback server needs the operator's leave.
pub async fn an_accounts_own_model_is_set_without_showing_its_key(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let other = app.account("globex").await;
    let fresh = app.ok("/account/model", &token).await;
    assert_eq!(
        fresh,
        json!({"base_url": null, "model": null, "api_key_set": false, "daily_tokens": null, "uses": "none",
               "operator_model": null})
    );

    let put = |body: Value| app.call(reqwest::Method::PUT, "/account/model", &token, Some(body));
    let secret = "sk-do-not-show-1234567890";
    let (status, set) = put(
        json!({"base_url": "http://127.0.0.1:9/v1", "model": " qwen2.5:3b ", "api_key": secret, "daily_tokens": 5000}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    assert_eq!(
        set,
        json!({"base_url": "http://127.0.0.1:9/v1", "model": "qwen2.5:3b", "api_key_set": true, "daily_tokens": 5000,
               "uses": "account", "operator_model": null})
    );
    let shown = app.ok("/account/model", &token).await;
    assert_eq!(shown, set);
    assert!(!shown.to_string().contains(secret), "the key is never shown");
    assert_eq!(app.ok("/account/model", &other).await["uses"], "none", "another account's model is its own");
    let stored = stored_key(&app, &token).await;
    assert!(stored.as_deref().is_some_and(|k| k != secret && driftwatch_core::is_sealed(k)), "sealed: {stored:?}");

    // Left out, the key stays; null removes it.
    let (status, kept) = put(json!({"base_url": "http://127.0.0.1:9/v1", "model": "other"})).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    assert_eq!((kept["api_key_set"].as_bool(), kept["model"].as_str()), (Some(true), Some("other")), "{kept}");
    assert_eq!(kept["daily_tokens"], Value::Null, "a PUT replaces the budget: {kept}");
    let (status, removed) = put(json!({"base_url": "http://127.0.0.1:9/v1", "model": "other", "api_key": null})).await;
    assert_eq!(status, StatusCode::OK, "{removed}");
    assert_eq!(removed["api_key_set"], false, "{removed}");
    assert_eq!(stored_key(&app, &token).await, None);

    for (body, field) in [
        (json!({"base_url": "ftp://models.example/v1", "model": "m"}), "base_url"),
        (json!({"base_url": "http://127.0.0.1:9/v1", "model": ""}), "model"),
        (json!({"base_url": "http://127.0.0.1:9/v1", "model": "m", "daily_tokens": -1}), "daily_tokens"),
        (json!({"base_url": "http://127.0.0.1:9/v1", "model": "m", "key": "x"}), "key"),
    ] {
        let (status, problem) = put(body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {problem}");
        assert_eq!(field_of(&problem), field, "{body}: {problem}");
    }
    assert_eq!(app.ok("/account/model", &token).await["model"], "other", "refusals changed nothing");

    // The server of an unreachable model: a 502 saying what went wrong.
    let response =
        app.http.get(format!("{}/account/models", app.base)).bearer_auth(&token).send().await.expect("request");
    let status = response.status().as_u16();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = response.text().await.expect("body");
    crate::conformance::check("GET", "/account/models", status, content_type.as_deref(), &text);
    assert_eq!(status, 502, "{text}");
    let problem: Value = serde_json::from_str(&text).expect("a problem");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("model")), "{problem}");

    let (status, _) = app.call(reqwest::Method::DELETE, "/account/model", &token, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(app.ok("/account/model", &token).await, fresh);
    let (status, problem) = app.get("/account/models", &token).await;
    assert_eq!(status, StatusCode::CONFLICT, "no model at all: {problem}");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("no model is configured")), "{problem}");

    // Where the operator does not allow private targets, a loopback model is refused.
    let guarded = TestApp::start_with(backend, |s| s.allow_private_targets = false).await;
    let token = guarded.account("acme").await;
    let (status, problem) = guarded
        .call(
            reqwest::Method::PUT,
            "/account/model",
            &token,
            Some(json!({"base_url": "http://127.0.0.1:11434/v1", "model": "m"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(field_of(&problem), "base_url", "{problem}");
}

/// The account's stored key, as the database holds it.
async fn stored_key(app: &TestApp, token: &str) -> Option<String> {
    let store = app.app.as_ref().expect("running").store.clone();
    let token = token.to_owned();
    let now = chrono::Utc::now().naive_utc();
    store
        .read(move |c| {
            let found = driftwatch_store::accounts::authenticate(c, &token, now)?.expect("the token is known");
            driftwatch_store::verdicts::account_model(c, &found.account_id)
        })
        .await
        .expect("read")
        .api_key
}

/// A change of a watch that holds changes without a verdict, where no model is configured:
/// held at once, shown with its verdict everywhere events are listed, delivered to no one
/// until released, then delivered once; another account cannot release it.
pub async fn a_held_change_is_delivered_once_when_released(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let stranger = app.account("globex").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let site = PageServer::start(&shop("67")).await;
    let options = json!({"ai": {"intent": "The price drops below 50 EUR.", "on_error": "hold"}});
    let watch =
        app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price", "options": options})).await;
    let watch_id = watch["id"].as_str().expect("id").to_owned();
    site.set(&shop("45"));
    let run = app.check(&token, &watch_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let event_id = run["event_id"].as_str().expect("an event").to_owned();

    let event = eventually("the change to be held", || async {
        let event = app.ok(&format!("/events/{event_id}"), &token).await;
        (event["verdict"]["state"] == "held").then_some(event)
    })
    .await;
    let verdict = &event["verdict"];
    assert!(verdict["error"].as_str().is_some_and(|e| e.contains("no model is configured")), "{verdict}");
    assert_eq!((verdict["important"].clone(), verdict["tokens"].as_i64()), (Value::Null, Some(0)), "{verdict}");
    assert!(verdict.get("next_attempt_at").is_none(), "only a pending verdict says when: {verdict}");
    assert!(verdict["decided_at"].is_string(), "{verdict}");
    // Held: decided without queueing a delivery.
    let deliveries = app.ok(&format!("/deliveries?watch_id={watch_id}"), &token).await;
    assert!(items(&deliveries).is_empty(), "a held change is not delivered: {deliveries}");
    assert!(receiver.received().is_empty());
    // Every list of events shows the verdict.
    let listed = app.ok(&format!("/events?watch_id={watch_id}&type=change.detected"), &token).await;
    assert_eq!(items(&listed)[0]["verdict"]["state"], "held", "{listed}");
    let feed = app.ok("/changes", &token).await;
    let in_feed = items(&feed).iter().find(|e| e["id"] == event_id.as_str()).expect("in the feed");
    assert_eq!(in_feed["verdict"]["state"], "held", "{in_feed}");

    let release = format!("/events/{event_id}/release");
    let (status, problem) = app.post(&release, &stranger, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another account's change: {problem}");
    let (status, problem) = app.post("/events/evt_01HZZZZZZZZZZZZZZZZZZZZZZZ/release", &token, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{problem}");
    assert!(receiver.received().is_empty(), "nothing was sent by those");

    // Released by an agent when the MCP client is at hand (the tool calls the same route).
    let released = match McpClient::find() {
        Some(mcp) => {
            let call = json!(["call", "release_change", {"id": event_id}]);
            let answers = mcp.http(&format!("{}/mcp", app.root()), &token, &json!([["list_tools"], call])).await;
            let tools: Vec<&str> = answers[0].as_array().expect("names").iter().filter_map(Value::as_str).collect();
            for tool in ["release_change", "backtest_watch", "get_account_model"] {
                assert!(tools.contains(&tool), "{tool} in {tools:?}");
            }
            assert_eq!(answers[1]["is_error"], false, "{}", answers[1]);
            answers[1]["structured"].clone()
        }
        None => {
            let (status, released) = app.post(&release, &token, json!({})).await;
            assert_eq!(status, StatusCode::OK, "{released}");
            released
        }
    };
    assert_eq!(released["verdict"]["state"], "released", "{released}");
    let received = receiver.wait_for(1).await;
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].json()["data"]["event_id"], event_id.as_str());
    let (status, problem) = app.post(&release, &token, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("not held; it is released")), "{problem}");
    let deliveries = app.ok(&format!("/deliveries?watch_id={watch_id}"), &token).await;
    assert_eq!(items(&deliveries).len(), 1, "delivered once: {deliveries}");

    // A change of a watch without options.ai has no verdict and nothing to release.
    let plain = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#stock"})).await;
    let plain_id = plain["id"].as_str().expect("id");
    site.set(&shop("45").replace("In stock", "Sold out"));
    let run = app.check(&token, plain_id).await;
    let plain_event = run["event_id"].as_str().expect("an event");
    let shown = app.ok(&format!("/events/{plain_event}"), &token).await;
    assert!(shown.get("verdict").is_none(), "{shown}");
    let (status, problem) = app.post(&format!("/events/{plain_event}/release"), &token, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    receiver.wait_for(2).await;
}

/// An intent tried on past checks: without a model every would-be alert says why; with the
/// account's own model (the stand-in) each is judged, the answer counts the alerts the intent
/// would have left and what they cost, and a second try is answered by the cache.
pub async fn an_intent_is_tried_on_past_checks_and_the_second_try_is_free(backend: Backend) {
    let model = ModelServer::start().await;
    model.set_models(&["judge-1", "judge-2"]);
    // Important exactly when the diff adds a price line.
    model.set_rule(|request| {
        request.is_chat().then(|| {
            if request.user_text().contains("+Price") {
                Reply::verdict_with_usage(true, "The price moved.", "The price changed.", (9_000, 1_000))
            } else {
                Reply::verdict_with_usage(false, "Only the stock changed.", "Stock changed.", (9_000, 1_000))
            }
        })
    });
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("67")).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url})).await;
    let id = watch["id"].as_str().expect("id").to_owned();
    for page in
        [shop("45"), shop("45").replace("In stock", "Sold out"), shop("44").replace("In stock", "Sold out"), shop("44")]
    {
        site.set(&page);
        assert_eq!(app.check(&token, &id).await["outcome"], "changed");
    }
    let options = json!({"ai": {"intent": "Tell me when the price changes."}});
    let backtest = || async {
        let (status, found) =
            app.post(&format!("/watches/{id}/backtest"), &token, json!({"options": options.clone()})).await;
        assert_eq!(status, StatusCode::OK, "{found}");
        found
    };

    let unjudged = backtest().await;
    assert_eq!(unjudged["would_alert"], 4, "{unjudged}");
    let ai = &unjudged["ai"];
    assert!(ai["summary"].as_str().is_some_and(|s| s.starts_with("Not judged: no model is configured")), "{ai}");
    assert_eq!((ai["failed"].as_u64(), ai["model"].clone()), (Some(4), Value::Null), "{ai}");
    let verdicts = ai["verdicts"].as_array().expect("verdicts");
    assert_eq!(verdicts.len(), 4);
    assert!(verdicts.iter().all(|v| v["error"].as_str().is_some_and(|e| e.contains("no model"))), "{ai}");
    assert!(model.requests().is_empty());

    let (status, set) = app
        .call(
            reqwest::Method::PUT,
            "/account/model",
            &token,
            Some(json!({"base_url": model.base_url(), "model": "judge-1", "api_key": "sk-acme-1"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    let listed = app.ok("/account/models", &token).await;
    assert_eq!(listed, json!({"uses": "account", "model": "judge-1", "models": ["judge-1", "judge-2"]}));

    let judged = backtest().await;
    let ai = &judged["ai"];
    assert_eq!(ai["summary"], "With this intent: 2 alerts instead of 4, about 40,000 tokens.", "{ai}");
    assert_eq!(
        (ai["alerts"].as_u64(), ai["not_important"].as_u64(), ai["failed"].as_u64(), ai["cached"].as_u64()),
        (Some(2), Some(2), Some(0), Some(0)),
        "{ai}"
    );
    assert_eq!((ai["model"].as_str(), ai["tokens"].as_u64()), (Some("judge-1"), Some(40_000)), "{ai}");
    // Each verdict is the one on its would-be alert (listed in the same order, newest first).
    let alerts = judged["alerts"].as_array().expect("alerts");
    for (alert, verdict) in alerts.iter().zip(ai["verdicts"].as_array().expect("verdicts")) {
        assert_eq!(verdict["snapshot_id"], alert["snapshot_id"]);
        let price_moved = alert["diff"].as_str().is_some_and(|d| d.contains("+Price"));
        assert_eq!(verdict["important"], price_moved, "{alert} {verdict}");
    }
    let chats = model.chat_requests();
    assert_eq!(chats.len(), 4, "one question per would-be alert");
    assert!(chats.iter().all(|c| c.authorization() == Some("Bearer sk-acme-1") && c.model() == "judge-1"));
    assert!(
        chats.iter().all(|c| c.user_text().contains("Tell me when the price changes.")),
        "the intent word for word"
    );

    let again = backtest().await;
    assert_eq!(again["ai"]["summary"], ai["summary"], "{again}");
    assert_eq!(again["ai"]["cached"], 4, "{again}");
    assert_eq!(model.chat_requests().len(), 4, "the cache answered: no new question");
}
