//! A language model between the diff and the alert, as a receiver and the model's server see
//! it: the scripted OpenAI-compatible stand-in answers, the real verdict loop asks, the real
//! outbox delivers. An unimportant change is recorded and not sent; an important one is sent
//! once with the verdict; a failing model is retried; past the deadline the change goes out
//! once without a verdict; a stalled model holds up nobody else; redelivery asks nothing.

use std::time::Duration;

use axum::http::StatusCode;
use driftwatch_test_support::llm::{ModelRequest, ModelServer, Reply};
use driftwatch_test_support::{Backend, PageServer, Receiver, TestDb, eventually};
use serde_json::{Value, json};

use crate::support::{TestApp, test_settings};

const INTENT: &str = "Alert me when the price drops below 50 EUR";
const KEY: &str = "sk-test-7f3a9c";

fn shop(price: &str) -> String {
    format!("<html><body><h1>Espresso machine</h1><p>Price: {price} EUR</p><p>In stock</p></body></html>")
}

/// Settings pointing at `model` with the key, a deadline of `deadline` seconds.
fn with_model(model: &ModelServer, deadline: u64) -> impl FnOnce(&mut driftwatch::Settings) + use<> {
    let base = model.base_url();
    move |s| {
        s.llm_base_url = Some(base);
        s.llm_model = Some("judge-1".into());
        s.llm_api_key = Some(KEY.into());
        s.llm_deadline_seconds = deadline;
        s.llm_timeout_seconds = deadline.min(20);
    }
}

/// Important exactly when the diff adds a price under 50 (what a good model would say).
fn price_rule(request: &ModelRequest) -> Option<Reply> {
    let text = request.user_text();
    let cheap = ["+Price: 45 EUR", "+Price: 39 EUR"].iter().any(|line| text.contains(line));
    Some(if cheap {
        Reply::verdict(true, "The price fell below 50 EUR.", "The price dropped to 45 EUR.")
    } else {
        Reply::verdict(false, "The price did not fall below 50 EUR.", "The price changed slightly.")
    })
}

/// The chat requests the model's server received (not `GET /models`).
fn chats(model: &ModelServer) -> Vec<ModelRequest> {
    model.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).collect()
}

/// Waits until the change event `event_id` has `data.ai` (its verdict was decided); returns it.
async fn decided(app: &TestApp, token: &str, event_id: &str) -> Value {
    let path = format!("/events/{event_id}");
    eventually("the change's verdict", || async {
        let event = app.ok(&path, token).await;
        (!event["payload"]["data"]["ai"].is_null()).then_some(event)
    })
    .await
}

/// The account's deliveries about `watch_id`.
async fn deliveries_of(app: &TestApp, token: &str, watch_id: &str) -> Vec<Value> {
    let list = app.ok(&format!("/deliveries?watch_id={watch_id}"), token).await;
    list["items"].as_array().cloned().unwrap_or_default()
}

/// A watch of `page` with the intent (and a summary), after its baseline.
async fn watch_with_intent(app: &TestApp, token: &str, page: &PageServer, ai: Value) -> String {
    let watch = app.watch_with_baseline(token, json!({"url": page.url, "options": {"ai": ai}})).await;
    assert_eq!(watch["options"]["ai"]["intent"], ai["intent"], "{watch}");
    watch["id"].as_str().expect("id").to_owned()
}

/// The price moves 67 -> 68 (not important: recorded with its verdict, sent to nobody), then
/// 68 -> 45 (important: sent once with the verdict and the summary). The model saw the schema,
/// `temperature: 0`, the model's name, the key, the intent word for word and the diff as unified
/// lines; the key reached no other host. Redelivering the alert asks the model nothing.
pub async fn an_intent_decides_which_change_is_sent(backend: Backend) {
    let model = ModelServer::start().await;
    model.set_rule(price_rule);
    let app = TestApp::start_with(backend, with_model(&model, 600)).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let page = PageServer::start(&shop("67")).await;
    let id = watch_with_intent(&app, &token, &page, json!({"intent": INTENT, "summary": true})).await;

    page.set(&shop("68"));
    let run = app.check(&token, &id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let event_id = run["event_id"].as_str().expect("the change is recorded");
    let event = decided(&app, &token, event_id).await;
    let ai = &event["payload"]["data"]["ai"];
    assert_eq!(ai["important"], false, "{event}");
    assert_eq!(ai["reason"], "The price did not fall below 50 EUR.", "{event}");
    assert_eq!(ai["model"], "judge-1", "{event}");
    assert!(deliveries_of(&app, &token, &id).await.is_empty(), "an unimportant change is sent to nobody");

    page.set(&shop("45"));
    let run = app.check(&token, &id).await;
    let important = run["event_id"].as_str().expect("the change").to_owned();
    let got = receiver.wait_for(1).await;
    let body = got[0].json();
    assert_eq!(body["type"], "change.detected", "{body}");
    assert_eq!(body["data"]["event_id"], important.as_str());
    assert_eq!(
        body["data"]["ai"],
        json!({"important": true, "reason": "The price fell below 50 EUR.", "summary": "The price dropped to 45 EUR.", "model": "judge-1"})
    );
    assert_eq!(deliveries_of(&app, &token, &id).await.len(), 1, "sent once");

    // What the model was asked, each change once.
    let asked = chats(&model);
    assert_eq!(asked.len(), 2, "one call per change: {asked:?}");
    for request in &asked {
        assert_eq!(request.body["model"], "judge-1");
        assert_eq!(request.body["temperature"], 0);
        assert_eq!(request.body["response_format"]["type"], "json_schema");
        let schema = &request.body["response_format"]["json_schema"]["schema"];
        for field in ["important", "reason", "summary"] {
            assert!(schema["required"].as_array().is_some_and(|r| r.contains(&json!(field))), "{schema}");
        }
        assert_eq!(request.authorization(), Some(format!("Bearer {KEY}").as_str()));
        assert!(request.user_text().contains(INTENT), "the intent word for word: {}", request.user_text());
    }
    let last = asked[1].user_text();
    assert!(last.contains("+Price: 45 EUR") && last.contains("-Price: 68 EUR"), "the diff as lines: {last}");
    assert!(!last.contains("Espresso machine</h1>"), "not the page's HTML: {last}");
    // The key went to the model's server only: not to the page, not to the receiver.
    assert!(page.requests().iter().all(|r| !format!("{r:?}").contains(KEY)), "the page never saw the key");
    assert!(receiver.received().iter().all(|r| !r.header("authorization").contains(KEY)));

    // Redelivery sends the stored body again and asks nobody.
    let delivery = deliveries_of(&app, &token, &id).await.remove(0);
    let delivery_id = delivery["id"].as_str().expect("id");
    app.wait_delivery(&token, delivery_id, "sent").await;
    let (status, answer) = app.post(&format!("/deliveries/{delivery_id}/redeliver"), &token, json!({})).await;
    assert!(status.is_success(), "{answer}");
    let again = receiver.wait_for(2).await;
    assert_eq!(again[1].json()["data"]["ai"], body["data"]["ai"], "the same body");
    assert_eq!(chats(&model).len(), 2, "redelivery asked the model nothing");
}

/// The model fails (500, then 429 with Retry-After) and then answers in a fence: the change is
/// sent once, within seconds of the model answering again. An answer behind `<think>` is one
/// call. A summary-only watch (no intent) sends every change with the summary.
pub async fn a_failing_model_is_retried_and_odd_answers_are_read(backend: Backend) {
    let model = ModelServer::start().await;
    let app = TestApp::start_with(backend, with_model(&model, 600)).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let page = PageServer::start(&shop("67")).await;
    let id = watch_with_intent(&app, &token, &page, json!({"intent": INTENT})).await;

    model.push(Reply::ServerError);
    model.push(Reply::RateLimited { retry_after_secs: 1 });
    model.push(Reply::Fenced(Box::new(Reply::verdict(true, "Below 50.", "Now 45 EUR."))));
    page.set(&shop("45"));
    app.check(&token, &id).await;
    let got = receiver.wait_for_within(1, Duration::from_secs(60)).await;
    assert_eq!(got[0].json()["data"]["ai"]["important"], true);
    assert_eq!(chats(&model).len(), 3, "two failures, then one good answer");

    model.push(Reply::Think(Box::new(Reply::verdict(true, "Below 50 again.", "Now 39 EUR."))));
    page.set(&shop("39"));
    app.check(&token, &id).await;
    let got = receiver.wait_for(2).await;
    assert_eq!(got[1].json()["data"]["ai"]["reason"], "Below 50 again.");
    assert_eq!(chats(&model).len(), 4, "an answer after <think> is one call");

    // Summary only: every change goes out, carrying the summary and no verdict.
    let other = PageServer::start(&shop("10")).await;
    let summary_only = watch_with_intent(&app, &token, &other, json!({"summary": true})).await;
    model.push(Reply::verdict(false, "", "The price rose from 10 to 11 EUR."));
    other.set(&shop("11"));
    app.check(&token, &summary_only).await;
    let got = receiver.wait_for(3).await;
    let ai = &got[2].json()["data"]["ai"];
    assert_eq!(ai["summary"], "The price rose from 10 to 11 EUR.", "{ai}");
    assert!(ai.get("important").is_none(), "no intent, no verdict: {ai}");
}

/// The model stalls. Another watch's change is checked and delivered meanwhile; past the
/// deadline the waiting change goes out exactly once, saying why it has no verdict, and a
/// watch that holds such changes keeps its change undelivered until it is sent by hand.
pub async fn a_stalled_model_delays_nobody_and_the_deadline_sends_once(backend: Backend) {
    let model = ModelServer::start().await;
    model.set_default(Reply::Stall);
    let app = TestApp::start_with(backend, with_model(&model, 4)).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let judged_page = PageServer::start(&shop("67")).await;
    let held_page = PageServer::start(&shop("67")).await;
    let plain_page = PageServer::start(&shop("67")).await;
    let judged = watch_with_intent(&app, &token, &judged_page, json!({"intent": INTENT})).await;
    let held = watch_with_intent(&app, &token, &held_page, json!({"intent": INTENT, "on_error": "hold"})).await;
    let plain = app.watch_with_baseline(&token, json!({"url": plain_page.url})).await;
    let plain = plain["id"].as_str().expect("id");

    judged_page.set(&shop("45"));
    held_page.set(&shop("45"));
    let run = app.check(&token, &judged).await;
    let judged_event = run["event_id"].as_str().expect("recorded").to_owned();
    let run = app.check(&token, &held).await;
    let held_event = run["event_id"].as_str().expect("recorded").to_owned();
    model.wait_requests(1, Duration::from_secs(10)).await;

    // While the model stalls: another watch is checked and its change delivered.
    plain_page.set(&shop("46"));
    let run = app.check(&token, plain).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let got = receiver.wait_for(1).await;
    assert_eq!(got[0].json()["data"]["watch"]["id"], plain, "the watch without AI went first");
    assert!(deliveries_of(&app, &token, &judged).await.is_empty(), "still waiting for its verdict");

    // Past the deadline (4 s): out once, without a verdict, saying why.
    let got = receiver.wait_for_within(2, Duration::from_secs(30)).await;
    let body = got[1].json();
    assert_eq!(body["data"]["event_id"], judged_event.as_str(), "{body}");
    let error = body["data"]["ai"]["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("no verdict within 4s"), "{body}");
    assert!(body["data"]["ai"].get("important").is_none(), "{body}");

    // The held change: decided, not sent; then sent by hand, once.
    let event = decided(&app, &token, &held_event).await;
    assert!(event["payload"]["data"]["ai"]["error"].as_str().is_some_and(|e| e.starts_with("no verdict")), "{event}");
    assert!(deliveries_of(&app, &token, &held).await.is_empty(), "a held change is not sent");
    model.release();
    let (status, answer) = app.post(&format!("/events/{held_event}/release"), &token, json!({})).await;
    assert!(status.is_success(), "{answer}");
    let got = receiver.wait_for(3).await;
    assert_eq!(got[2].json()["data"]["event_id"], held_event.as_str());
    let (status, _) = app.post(&format!("/events/{held_event}/release"), &token, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "released once");
    assert_eq!(deliveries_of(&app, &token, &judged).await.len(), 1, "the deadline sent it once");
    assert_eq!(receiver.received().len(), 3, "nothing sent twice");
}

/// A change waiting for its verdict survives a stop: the next start on the same database asks
/// again and sends it once.
pub async fn a_waiting_change_survives_a_restart(backend: Backend) {
    let model = ModelServer::start().await;
    model.set_default(Reply::Stall);
    let db = TestDb::new(backend);
    let mut settings = test_settings(&db);
    with_model(&model, 600)(&mut settings);
    settings.llm_timeout_seconds = 2;
    let roles = driftwatch::Roles { web: true, background: true };
    let app = TestApp::from_app(driftwatch::App::start(&settings, roles).await.expect("starts"));
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let page = PageServer::start(&shop("67")).await;
    let id = watch_with_intent(&app, &token, &page, json!({"intent": INTENT})).await;
    page.set(&shop("45"));
    app.check(&token, &id).await;
    model.wait_requests(1, Duration::from_secs(10)).await;
    app.into_app().shutdown().await;
    assert!(receiver.received().is_empty(), "nothing was sent before the stop");

    model.set_default(Reply::verdict(true, "Below 50.", "Now 45 EUR."));
    model.release();
    let app = TestApp::from_app(driftwatch::App::start(&settings, roles).await.expect("starts again"));
    let got = receiver.wait_for_within(1, Duration::from_secs(60)).await;
    assert_eq!(got[0].json()["data"]["ai"]["important"], true);
    assert_eq!(deliveries_of(&app, &token, &id).await.len(), 1, "sent once");
}

/// Intents are checked where they are set, naming the field.
pub async fn bad_intents_are_refused_by_name(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let page = PageServer::start(&shop("67")).await;
    let long = "x".repeat(4001);
    for (ai, field) in [
        (json!({"intent": long}), "options.ai.intent"),
        (json!({"intent": 42}), "options.ai.intent"),
        (json!({"intent": "ok", "tone": "strict"}), "options.ai"),
        (json!({"on_error": "maybe"}), "options.ai.on_error"),
    ] {
        let (status, problem) = app.post("/watches", &token, json!({"url": page.url, "options": {"ai": ai}})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        let named = problem["errors"].as_array().and_then(|e| e.first()).map(|e| e["field"].clone());
        assert!(named.is_some_and(|f| f.as_str().is_some_and(|f| f.starts_with(field))), "{field}: {problem}");
    }
    let watch = app.watch_with_baseline(&token, json!({"url": page.url})).await;
    let id = watch["id"].as_str().expect("id");
    let (status, problem) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/watches/{id}"),
            &token,
            Some(json!({"options": {"ai": {"intent": long}}})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert!(problem.to_string().contains("options.ai.intent"), "{problem}");
}

/// Against a real model, when `DRIFTWATCH_TEST_LLM_URL` (and `DRIFTWATCH_TEST_LLM_MODEL`, and
/// `DRIFTWATCH_TEST_LLM_KEY` when it needs one) name one: a price rise is not important for
/// "price drops below 50", a drop to 45 is. Skipped, saying so, when unset.
pub async fn a_real_model_judges_direction_and_numbers() {
    let Ok(base) = std::env::var("DRIFTWATCH_TEST_LLM_URL") else {
        eprintln!("skipped: DRIFTWATCH_TEST_LLM_URL is not set (no real model to ask)");
        return;
    };
    let name = std::env::var("DRIFTWATCH_TEST_LLM_MODEL").unwrap_or_else(|_| "qwen2.5:3b".into());
    let key = std::env::var("DRIFTWATCH_TEST_LLM_KEY").ok();
    let app = TestApp::start_with(Backend::Sqlite, move |s| {
        s.llm_base_url = Some(base);
        s.llm_model = Some(name);
        s.llm_api_key = key;
        s.llm_timeout_seconds = 300;
    })
    .await;
    let token = app.account("acme").await;
    let page = PageServer::start(&shop("67")).await;
    let id = watch_with_intent(&app, &token, &page, json!({"intent": INTENT, "summary": true})).await;
    for (price, important) in [("72", false), ("45", true)] {
        page.set(&shop(price));
        let run = app.check(&token, &id).await;
        let event_id = run["event_id"].as_str().expect("the change");
        let path = format!("/events/{event_id}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
        let ai = loop {
            let event = app.ok(&path, &token).await;
            let ai = event["payload"]["data"]["ai"].clone();
            if !ai.is_null() {
                break ai;
            }
            assert!(tokio::time::Instant::now() < deadline, "no verdict in 10 minutes");
            tokio::time::sleep(Duration::from_millis(500)).await;
        };
        eprintln!("price {price}: {ai}");
        assert_eq!(ai["important"], important, "price {price}: {ai}");
    }
}
