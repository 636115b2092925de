//! The REST API's contract: scoping, errors, pagination, the target guard.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer};
use serde_json::json;

use crate::support::{SendChecked, TestApp};

pub async fn owners_cannot_see_each_other(backend: Backend) {
    let app = TestApp::start(backend).await;
    let (alice, bob) = (app.account("alice").await, app.account("bob").await);
    let site = PageServer::start("<p>hello</p>").await;
    let watch = app.watch_with_baseline(&alice, json!({"url": site.url})).await;
    let id = watch["id"].as_str().expect("id");
    let (status, endpoint) = app.post("/endpoints", &alice, json!({"url": site.url})).await;
    assert_eq!(status, StatusCode::CREATED);
    let endpoint_id = endpoint["id"].as_str().expect("id");

    assert_eq!(app.get(&format!("/watches/{id}"), &alice).await.0, StatusCode::OK);
    for path in [format!("/watches/{id}"), format!("/watches/{id}/runs"), format!("/endpoints/{endpoint_id}")] {
        let (status, problem) = app.get(&path, &bob).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: another owner's id answers 404");
        assert_eq!(problem["title"], "Not Found");
    }
    let (status, _) = app.post(&format!("/watches/{id}/check"), &bob, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another owner cannot check the watch");
    assert_eq!(app.ok("/watches", &bob).await["items"], json!([]));
    assert_eq!(app.ok("/endpoints", &bob).await["items"], json!([]));
    assert_eq!(app.ok(&format!("/events?watch_id={id}"), &bob).await["items"], json!([]));
    assert_eq!(app.ok("/watches", &alice).await["items"].as_array().map(Vec::len), Some(1));
    assert!(app.ok("/endpoints", &alice).await["items"][0].get("secret").is_none(), "secrets are shown only once");
}

pub async fn bad_input_answers_problem_json(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;

    // No token, or a wrong one.
    let response = app.http.get(format!("{}/watches", app.base)).send_checked().await.expect("request");
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    assert_eq!(app.get("/watches", "dwt_not-a-token").await.0, StatusCode::UNAUTHORIZED);

    // Malformed JSON is a 400, never a 500 or plain text.
    let response = app
        .http
        .post(format!("{}/watches", app.base))
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .body("{\"url\": ")
        .send_checked()
        .await
        .expect("request");
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    let response = app
        .http
        .post(format!("{}/watches", app.base))
        .bearer_auth(&token)
        .body("url=x")
        .send_checked()
        .await
        .expect("request");
    assert_eq!(response.status(), 415, "a body that is not JSON");

    let cases = [
        (json!({}), "url"),
        (json!({"url": 42}), "url"),
        (json!({"url": "not a url"}), "url"),
        (json!({"url": "ftp://example.com/"}), "url"),
        (json!({"url": "http://example.com/", "selector": "div[["}), "selector"),
        (json!({"url": "http://example.com/", "interval_seconds": 0}), "interval_seconds"),
        (json!({"url": "http://example.com/", "interval_seconds": "often"}), "interval_seconds"),
        (json!({"url": "http://example.com/", "colour": "blue"}), "colour"),
    ];
    for (body, field) in cases {
        let (status, problem) = app.post("/watches", &token, body.clone()).await;
        assert!(status.is_client_error(), "{body} -> {status}");
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {problem}");
        let fields: Vec<&str> =
            problem["errors"].as_array().expect("field errors").iter().filter_map(|e| e["field"].as_str()).collect();
        assert_eq!(fields, vec![field], "{body}: {problem}");
    }
    let (status, problem) = app.post("/endpoints", &token, json!({"url": "gopher://x"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["errors"][0]["field"], "url");
    let (status, problem) = app.get("/deliveries?status=lost", &token).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["errors"][0]["field"], "status");
    assert_eq!(app.get("/watches?limit=0", &token).await.0, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, problem) = app.get("/watches?limit=many", &token).await;
    assert_eq!((status, &problem["errors"][0]["field"]), (StatusCode::UNPROCESSABLE_ENTITY, &json!("limit")));
    let (status, problem) = app.get("/watches?colour=red", &token).await;
    assert_eq!((status, &problem["errors"][0]["field"]), (StatusCode::UNPROCESSABLE_ENTITY, &json!("colour")));
    // NUL characters (which PostgreSQL cannot hold) are refused in paths, queries and bodies.
    assert_eq!(app.get("/watches/wat_%00", &token).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/events?watch_id=%00", &token).await.0, StatusCode::BAD_REQUEST);
    let (status, problem) =
        app.post("/watches", &token, json!({"url": "https://example.com/", "name": "a\u{0}b"})).await;
    assert_eq!((status, &problem["errors"][0]["field"]), (StatusCode::UNPROCESSABLE_ENTITY, &json!("name")));
    // A path that is not UTF-8 is a problem too, not axum's plain text.
    assert_eq!(app.get("/watches/%FF", &token).await.0, StatusCode::BAD_REQUEST);
    assert_eq!(app.get("/nowhere", &token).await.0, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/deliveries/dlv_missing", &token).await.0, StatusCode::NOT_FOUND);
    assert_eq!(app.ok("/watches", &token).await["items"], json!([]), "nothing was created by bad input");
}

pub async fn lists_page_with_a_cursor(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let mut created = Vec::new();
    for i in 0..5 {
        let (status, watch) = app
            .post("/watches", &token, json!({"url": format!("http://example.com/{i}"), "interval_seconds": 3600}))
            .await;
        assert_eq!(status, StatusCode::CREATED);
        created.push(watch["id"].as_str().expect("id").to_owned());
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/watches?limit=2&cursor={c}"),
            None => "/watches?limit=2".to_owned(),
        };
        let page = app.ok(&path, &token).await;
        pages += 1;
        seen.extend(page["items"].as_array().expect("items").iter().map(|w| w["id"].as_str().expect("id").to_owned()));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, created, "every watch once, in creation order");
}

pub async fn private_targets_are_refused_unless_allowed(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.allow_private_targets = false).await;
    let token = app.account("acme").await;
    for url in [
        "http://127.0.0.1:8080/",
        "http://localhost/",
        "http://[::1]/",
        "http://169.254.169.254/latest",
        "http://10.0.0.1/",
    ] {
        let (status, problem) = app.post("/watches", &token, json!({"url": url})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {problem}");
        assert_eq!(problem["errors"][0]["field"], "url");
        let (status, _) = app.post("/endpoints", &token, json!({"url": url})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "endpoint {url}");
    }
    assert_eq!(app.ok("/watches", &token).await["items"], json!([]));
}
