//! What a user of script pages meets: the default wait reads a status a script fetches after
//! `load`, every time; `auto` renders an element the HTML leaves empty (and keeps HTTP when the
//! HTML has its text); and a node without Chromium says so on the watch page and its runs.

use std::time::Duration;

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer};
use serde_json::{Value, json};

use crate::pages::{sign_in, user};
use crate::rendering::chromium;
use crate::support::TestApp;

/// A status page whose `#status` a script writes once `/data.json` has answered.
const STATUS_PAGE: &str = "<!doctype html><html><head><title>Status</title></head><body><h1>Status</h1>\
    <div id=\"app\">Loading…</div><script>fetch('/data.json').then(r => r.json()).then(d => {\
    const p = document.createElement('p'); p.id = 'status'; p.textContent = 'All systems ' + d.status;\
    document.getElementById('app').replaceChildren(p); });</script></body></html>";

/// A shop page (scripts, and text enough not to be a shell) whose price element is empty in
/// the HTML, or holds `price` there; a script writes it either way.
fn shop(price: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Shop</title></head><body><h1>Widget</h1><p>A fine widget for every \
         purpose, made to last: steel hinges, a walnut handle and a warranty of ten years, shipped within \
         two days to most countries.</p><div id=\"price\">{price}</div><script>document.getElementById('price')\
         .textContent = 'Price: 12 EUR';</script></body></html>"
    )
}

async fn snapshot_text(app: &TestApp, token: &str, watch_id: &str) -> String {
    let list = app.ok(&format!("/watches/{watch_id}/snapshots"), token).await;
    let id = list["items"][0]["id"].as_str().expect("a snapshot").to_owned();
    let snapshot = app.ok(&format!("/snapshots/{id}"), token).await;
    snapshot["content"].as_str().expect("content").trim().to_owned()
}

pub async fn the_default_wait_reads_what_a_script_fetches_every_time(backend: Backend) {
    if !chromium() {
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(STATUS_PAGE).await;
    // The data comes well after `load`, as from a slow API.
    site.set_resource("/data.json", "application/json", r#"{"status": "operational"}"#, Duration::from_millis(600));
    let body = json!({"url": site.url, "selector": "#status", "options": {"fetch": {"engine": "browser"}}});
    let watch = app.watch_with_baseline(&token, body.clone()).await;
    let id = watch["id"].as_str().expect("id");
    assert_eq!(snapshot_text(&app, &token, id).await, "All systems operational");
    for _ in 0..7 {
        let run = app.check(&token, id).await;
        assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("unchanged"), Some("browser")), "{run}");
    }
    for _ in 0..3 {
        let (status, preview) = app.post("/preview", &token, body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{preview}");
        assert_eq!(preview["text"].as_str().map(str::trim), Some("All systems operational"), "{preview}");
    }

    // A selector the scripts never fill: the render gives up within the watch's timeout, the
    // run fails (no change), and the error says what to set.
    let (status, missing) = app
        .post(
            "/watches",
            &token,
            json!({"url": site.url, "selector": "#nowhere", "options": {"fetch": {"engine": "browser", "timeout_seconds": 5}}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{missing}");
    let run = app.check(&token, missing["id"].as_str().expect("id")).await;
    assert_eq!(run["outcome"], "failed", "{run}");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("\"Wait for\"")), "{run}");

    // The data stops coming: an empty read of a page that had text fails; it is no change.
    site.set_resource("/data.json", "application/json", "{}", Duration::ZERO);
    site.set(&STATUS_PAGE.replace("'All systems ' + d.status", "''"));
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "failed", "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("not a change")), "{run}");
    let changes = app.ok(&format!("/events?watch_id={id}&type=change.detected"), &token).await;
    assert_eq!(changes["items"].as_array().map(Vec::len), Some(0), "{changes}");
}

pub async fn auto_renders_an_element_the_html_leaves_empty(backend: Backend) {
    if !chromium() {
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let empty = PageServer::start(&shop("")).await;
    let auto = |url: &str| json!({"url": url, "selector": "#price", "options": {"fetch": {"engine": "auto"}}});
    let watch = app.watch_with_baseline(&token, auto(&empty.url)).await;
    let id = watch["id"].as_str().expect("id");
    let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
    let run = &runs["items"][0];
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("baseline"), Some("browser")), "{run}");
    assert_eq!(snapshot_text(&app, &token, id).await, "Price: 12 EUR");

    // The price is in the HTML: HTTP reads it, no browser needed.
    let written = PageServer::start(&shop("Price: 10 EUR")).await;
    let watch = app.watch_with_baseline(&token, auto(&written.url)).await;
    let id = watch["id"].as_str().expect("id");
    let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
    let run = &runs["items"][0];
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("baseline"), Some("http")), "{run}");
    assert_eq!(snapshot_text(&app, &token, id).await, "Price: 10 EUR");
}

pub async fn without_chromium_the_watch_page_says_why(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.chromium = Some("/nonexistent/chromium".into())).await;
    let token = user(&app, "acme", "ann@example.com").await;
    let site = PageServer::start(&shop("")).await;
    let (status, watch) = app
        .post(
            "/watches",
            &token,
            json!({"url": site.url, "selector": "#price", "options": {"fetch": {"engine": "auto"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    let run: Value = app.check(&token, id).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("failed"), Some("http")), "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("no Chromium at /nonexistent/chromium")), "{run}");

    let session = sign_in(&app, "ann@example.com").await;
    let page = session.get(&format!("/watches/{id}")).await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.expect("body");
    let engine = html.split("id=\"engine\"").nth(1).and_then(|p| p.split("</p>").next()).expect("the engine line");
    assert!(engine.contains("<strong>No browser:</strong> no Chromium at /nonexistent/chromium"), "{engine}");
    assert!(!engine.contains("rendered in the browser"), "{engine}");
    // The run's row carries the cause beside the failure.
    assert!(html.contains("none is available (no Chromium at /nonexistent/chromium"), "the run's note is shown");

    let readyz = app.http.get(format!("{}/readyz", app.root())).send().await.expect("readyz");
    assert_eq!(readyz.status(), 200);
    let text = readyz.text().await.expect("body");
    assert!(text.starts_with("ready\ndegraded: browser: 1 active watch with engine browser or auto"), "{text}");
}
