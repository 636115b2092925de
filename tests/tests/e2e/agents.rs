//! What agents rely on: tokens and scopes, the changes feed, stats, request ids.

use axum::http::StatusCode;
use std::time::Duration;

use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::support::{SendChecked, TestApp};

pub async fn tokens_are_managed_and_scoped(backend: Backend) {
    let app = TestApp::start(backend).await;
    let admin = app.account("acme").await;
    let (status, created) = app.post("/tokens", &admin, json!({"name": "dashboard", "scopes": ["read"]})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let reader = created["token"].as_str().expect("the token is shown at creation").to_owned();
    assert_eq!(created["scopes"], json!(["read"]));
    let id = created["id"].as_str().expect("id").to_owned();

    assert_eq!(app.get("/watches", &reader).await.0, StatusCode::OK, "a read token reads");
    let (status, problem) = app.post("/watches", &reader, json!({"url": "https://example.com/"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{problem}");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("write")));
    assert_eq!(app.post("/tokens", &reader, json!({"name": "sneaky"})).await.0, StatusCode::FORBIDDEN);

    let list = app.ok("/tokens", &admin).await;
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|t| t.get("token").is_none() && t.get("token_hash").is_none()), "no secrets in lists");

    let other = app.account("other").await;
    assert_eq!(
        app.call(reqwest::Method::DELETE, &format!("/tokens/{id}"), &other, None).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.call(reqwest::Method::DELETE, &format!("/tokens/{id}"), &admin, None).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(app.get("/watches", &reader).await.0, StatusCode::UNAUTHORIZED, "a revoked token is refused");
    // DELETE is idempotent: revoking it again (a retried request, an idempotent replay of its
    // creation) answers the same; another account still finds nothing.
    assert_eq!(
        app.call(reqwest::Method::DELETE, &format!("/tokens/{id}"), &admin, None).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        app.call(reqwest::Method::DELETE, &format!("/tokens/{id}"), &other, None).await.0,
        StatusCode::NOT_FOUND
    );
    let (status, problem) = app.post("/tokens", &admin, json!({"name": "x", "scopes": ["admin"]})).await;
    assert_eq!((status, problem["errors"][0]["field"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("scopes")));
}

pub async fn the_changes_feed_continues_where_it_left_off(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let (a, b) = (PageServer::start("<p>a1</p>").await, PageServer::start("<p>b1</p>").await);
    let wa = app.watch_with_baseline(&token, json!({"url": a.url, "name": "A"})).await;
    let wb = app.watch_with_baseline(&token, json!({"url": b.url, "name": "B"})).await;
    let check = |id: String| {
        let app = &app;
        let token = token.clone();
        async move { app.post(&format!("/watches/{id}/check"), &token, json!({})).await }
    };
    let (ida, idb) = (wa["id"].as_str().expect("id").to_owned(), wb["id"].as_str().expect("id").to_owned());

    let empty = app.ok("/changes", &token).await;
    assert_eq!((empty["items"].as_array().map(Vec::len), empty["next_cursor"].is_null()), (Some(0), true));
    a.set("<p>a2</p>");
    check(ida.clone()).await;
    b.set("<p>b2</p>");
    check(idb.clone()).await;

    let feed = app.ok("/changes", &token).await;
    let items = feed["items"].as_array().expect("items");
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["watch_id"], ida.as_str(), "oldest first");
    assert!(items[0]["payload"]["data"]["diff"]["unified"].as_str().is_some_and(|d| d.contains("+a2")));
    let cursor = feed["next_cursor"].as_str().expect("cursor").to_owned();

    let nothing = app.ok(&format!("/changes?since={cursor}"), &token).await;
    assert_eq!(nothing["items"], json!([]));
    assert_eq!(nothing["next_cursor"], cursor.as_str(), "the cursor stays put while nothing changes");
    a.set("<p>a3</p>");
    check(ida.clone()).await;
    let next = app.ok(&format!("/changes?since={cursor}"), &token).await;
    assert_eq!(next["items"].as_array().map(Vec::len), Some(1));
    assert!(next["items"][0]["payload"]["data"]["diff"]["unified"].as_str().is_some_and(|d| d.contains("+a3")));

    let by_time = app.ok("/changes?since=2000-01-01T00:00:00Z&limit=2", &token).await;
    assert_eq!(by_time["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(app.get("/changes?since=yesterday", &token).await.0, StatusCode::UNPROCESSABLE_ENTITY);
    let other = app.account("other").await;
    assert_eq!(app.ok("/changes", &other).await["items"], json!([]), "scoped to the account");

    let stats = app.ok("/stats", &token).await;
    assert_eq!(stats["watches"]["total"], 2);
    assert_eq!(stats["watches"]["by_state"]["active"], 2);
    assert_eq!(stats["watches"]["by_health"]["ok"], 2);
    assert_eq!(stats["events_last_24h"], 3);
    assert_eq!(stats["dead_letters"], 0);
}

pub async fn requests_carry_an_id(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let echoed = app
        .http
        .get(format!("{}/watches", app.base))
        .bearer_auth(&token)
        .header("x-request-id", "agent-42")
        .send_checked()
        .await
        .expect("request");
    assert_eq!(echoed.headers()["x-request-id"], "agent-42");
    let made = app.http.get(format!("{}/watches", app.base)).bearer_auth(&token).send_checked().await.expect("request");
    assert!(made.headers()["x-request-id"].to_str().is_ok_and(|id| id.starts_with("req_")));
}

pub async fn etags_idempotency_and_rate_limits(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.rate_limit_per_minute = 40).await;
    let token = app.account("acme").await;

    // Idempotent create: the same key returns the first answer and creates nothing new.
    let create = |key: &str, url: &str| {
        app.http
            .post(format!("{}/watches", app.base))
            .bearer_auth(&token)
            .header("idempotency-key", key)
            .json(&json!({"url": url, "interval_seconds": 3600, "paused": true}))
            .send_checked()
    };
    let first = create("k-1", "https://example.com/a").await.expect("create");
    assert_eq!(first.status(), 201);
    let first: serde_json::Value = first.json().await.expect("json");
    let again = create("k-1", "https://example.com/a").await.expect("create");
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again: serde_json::Value = again.json().await.expect("json");
    assert_eq!(again["id"], first["id"], "the original response");
    let reused = create("k-1", "https://example.com/other").await.expect("create");
    assert_eq!(reused.status(), 422, "a key reused for another request is refused");
    assert_eq!(app.ok("/watches", &token).await["items"].as_array().map(Vec::len), Some(1));
    // Keys are scoped by path: the same key creates an endpoint, once.
    let endpoint = |key: &str| {
        app.http
            .post(format!("{}/endpoints", app.base))
            .bearer_auth(&token)
            .header("idempotency-key", key)
            .json(&json!({"url": "https://example.com/hook"}))
            .send_checked()
    };
    assert_eq!(endpoint("k-1").await.expect("create").status(), 201);
    assert_eq!(endpoint("k-1").await.expect("create").headers()["idempotent-replayed"], "true");
    assert_eq!(app.ok("/endpoints", &token).await["items"].as_array().map(Vec::len), Some(1));
    // A replayed token creation does not show the token again: its plaintext is kept nowhere.
    let new_token = || {
        app.http
            .post(format!("{}/tokens", app.base))
            .bearer_auth(&token)
            .header("idempotency-key", "k-1")
            .json(&json!({"name": "reader", "scopes": ["read"]}))
            .send_checked()
    };
    let created: serde_json::Value = new_token().await.expect("create").json().await.expect("json");
    let reader = created["token"].as_str().expect("shown at creation").to_owned();
    let replayed = new_token().await.expect("create");
    assert_eq!(replayed.headers()["idempotent-replayed"], "true");
    let replayed: serde_json::Value = replayed.json().await.expect("json");
    assert_eq!((&replayed["id"], replayed.get("token")), (&created["id"], None), "{replayed}");
    // A read-only token gets no replay of a write's answer, only its 403.
    let as_reader = app
        .http
        .post(format!("{}/endpoints", app.base))
        .bearer_auth(&reader)
        .header("idempotency-key", "k-1")
        .json(&json!({"url": "https://example.com/hook"}))
        .send_checked()
        .await
        .expect("post");
    assert_eq!(as_reader.status(), 403);

    // ETags: an unchanged resource answers 304 to If-None-Match.
    let path = format!("{}/watches/{}", app.base, first["id"].as_str().expect("id"));
    let got = app.http.get(&path).bearer_auth(&token).send_checked().await.expect("get");
    let etag = got.headers()["etag"].to_str().expect("etag").to_owned();
    let cached =
        app.http.get(&path).bearer_auth(&token).header("if-none-match", &etag).send_checked().await.expect("get");
    assert_eq!(cached.status(), 304);
    let stale =
        app.http.get(&path).bearer_auth(&token).header("if-none-match", "\"other\"").send_checked().await.expect("get");
    assert_eq!(stale.status(), 200);

    // The per-token rate limit: 429 with Retry-After once the burst is spent.
    let mut limited = None;
    for _ in 0..60 {
        let response =
            app.http.get(format!("{}/watches", app.base)).bearer_auth(&token).send_checked().await.expect("get");
        if response.status() == 429 {
            limited = Some(response);
            break;
        }
    }
    let limited = limited.expect("the limit applies");
    assert!(limited.headers()["retry-after"].to_str().is_ok_and(|s| s.parse::<u64>().is_ok_and(|n| n >= 1)));
    assert_eq!(limited.headers()["content-type"], "application/problem+json");
    let other = app.account("other").await;
    assert_eq!(app.get("/watches", &other).await.0, StatusCode::OK, "other tokens have their own budget");
}

/// Two requests with one `Idempotency-Key` at the same time: the second is told the first is
/// still running (409) instead of running twice; afterwards the key replays the answer, and a
/// failed request frees its key for a retry.
pub async fn a_key_in_flight_is_not_run_twice(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    let (status, endpoint) = app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    let (status, delivery) =
        app.post(&format!("/endpoints/{}/test", endpoint["id"].as_str().expect("id")), &token, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    receiver.wait_for(1).await;
    // The receiver has answered, but the attempt is recorded a moment later (completions are
    // batched); until then the delivery is leased and a redelivery would rightly answer 409.
    let delivery_id = delivery["id"].as_str().expect("id");
    eventually("the test event to be recorded as sent", || async {
        (app.ok(&format!("/deliveries/{delivery_id}"), &token).await["status"] == "sent").then_some(())
    })
    .await;

    // A redelivery holds its request until the (slow) receiver answers.
    receiver.set_delay(Duration::from_secs(2));
    let path = format!("{}/deliveries/{delivery_id}/redeliver", app.base);
    let redeliver = || app.http.post(&path).bearer_auth(&token).header("idempotency-key", "once").send_checked();
    let first = tokio::spawn(redeliver());
    receiver.wait_for(2).await; // the first is in flight
    let second = redeliver().await.expect("second");
    assert_eq!(second.status(), 409, "the same key while the first runs");
    assert_eq!(second.headers()["content-type"], "application/problem+json");
    let problem: Value = second.json().await.expect("json");
    assert!(problem["detail"].as_str().is_some_and(|d| d.contains("Idempotency-Key")), "{problem}");
    let first = first.await.expect("join").expect("first");
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.expect("json");
    receiver.set_delay(Duration::ZERO);
    let third = redeliver().await.expect("third");
    assert_eq!(third.status(), 200);
    assert_eq!(third.headers()["idempotent-replayed"], "true");
    assert_eq!(third.json::<Value>().await.expect("json"), first, "the first answer, replayed");
    assert_eq!(receiver.received().len(), 2, "one redelivery reached the receiver");

    // A failed request (here 404) stores nothing: the key may be used again.
    let missing = format!("{}/deliveries/dlv_missing/redeliver", app.base);
    let retry = || app.http.post(&missing).bearer_auth(&token).header("idempotency-key", "after-404").send_checked();
    assert_eq!(retry().await.expect("post").status(), 404);
    assert_eq!(retry().await.expect("post").status(), 404, "not a replay, and not in flight");
}
