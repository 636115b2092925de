//! What agents rely on: tokens and scopes, the changes feed, stats, request ids.

use axum::http::StatusCode;
use serde_json::json;

use crate::support::{Backend, PageServer, TestApp};

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
        .send()
        .await
        .expect("request");
    assert_eq!(echoed.headers()["x-request-id"], "agent-42");
    let made = app.http.get(format!("{}/watches", app.base)).bearer_auth(&token).send().await.expect("request");
    assert!(made.headers()["x-request-id"].to_str().is_ok_and(|id| id.starts_with("req_")));
}
