//! Pages that fight back: a bot wall is named, never stored as the page and never a change;
//! a page that merely carries a vendor's beacons is a page; the browser gets past a wall that
//! stops plain HTTP when the watch says to try it.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver, Wall};
use serde_json::{Value, json};

use crate::rendering::chromium;
use crate::support::TestApp;

/// A shop page as Cloudflare serves it to a visitor it lets through: its ray header, its bot
/// management cookie and the challenge platform's beacon script, with the price.
fn shop_behind_cloudflare(price: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Widget</title></head><body><h1>Widget</h1>\
         <div id=\"price\">{price}</div><p>In stock, shipped in two days.</p>\
         <script>(function(){{function c(){{var b=a.contentDocument||a.contentWindow.document;if(b){{\
         var d=b.createElement('script');d.innerHTML=\"window.__CF$cv$params={{r:'8f1e2d3c4b5a6978',t:'MTcz'}};\
         var a=document.createElement('script');a.nonce='';\
         a.src='/cdn-cgi/challenge-platform/scripts/jsd/main.js';document.getElementsByTagName('head')[0].appendChild(a);\";\
         b.getElementsByTagName('head')[0].appendChild(d)}}}}var a=document.createElement('iframe');a.height=1;\
         a.width=1;a.style.position='absolute';a.style.top=0;a.style.left=0;a.style.border='none';\
         a.style.visibility='hidden';document.body.appendChild(a);c()}})();</script></body></html>"
    )
}

const CLOUDFLARE_HEADERS: [(&str, &str); 3] = [
    ("server", "cloudflare"),
    ("cf-ray", "8f1e2d3c4b5a6978-FRA"),
    ("set-cookie", "__cf_bm=abc123; path=/; expires=Mon, 07-Dec-26 07:00:00 GMT; HttpOnly; Secure; SameSite=None"),
];

fn types(events: &Value) -> Vec<String> {
    events["items"].as_array().expect("items").iter().filter_map(|e| e["type"].as_str().map(str::to_owned)).collect()
}

pub async fn a_bot_wall_is_named_and_never_a_change(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop_behind_cloudflare("10 EUR")).await;
    site.set_headers(&CLOUDFLARE_HEADERS);
    let receiver = Receiver::start(200).await;
    let (status, endpoint) = app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price", "name": "Widget"})).await;
    let id = watch["id"].as_str().expect("id");

    // The wall goes up, and behind it the price changes: three checks meet the wall.
    site.set_wall(Some(Wall::cloudflare_challenge()));
    site.set(&shop_behind_cloudflare("12 EUR"));
    for n in 1..=3 {
        let run = app.check(&token, id).await;
        assert_eq!(run["outcome"], "blocked", "check {n}: {run}");
        assert_eq!(run["error_kind"], "blocked", "{run}");
        assert_eq!(run["http_status"], 403, "{run}");
        let error = run["error"].as_str().expect("the run says what blocked it");
        assert!(error.contains("Cloudflare") && error.contains("cf-mitigated"), "names who and how: {error}");
        assert_eq!(run["snapshot_id"], Value::Null, "a wall is never stored as the page");
        let watch = app.ok(&format!("/watches/{id}"), &token).await;
        assert_eq!(watch["health"], "blocked", "blocked from the first wall on, check {n}");
    }
    let blocked = receiver.wait_for(1).await;
    let event = blocked[0].json();
    assert_eq!(event["type"], "check.blocked", "{event}");
    assert_eq!(event["data"]["check"]["blocked_by"], "cloudflare", "{event}");
    assert_eq!(app.ok("/watches?health=blocked", &token).await["items"][0]["id"], id);
    let snapshots = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    assert_eq!(snapshots["items"].as_array().map(Vec::len), Some(1), "only the baseline: {snapshots}");

    // The site lets checks through again: one recovery, and the change is the real page's.
    site.set_wall(None);
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let sent = receiver.wait_for(3).await;
    let sent: Vec<Value> = sent.iter().map(|r| r.json()).collect();
    let recovered: Vec<&Value> = sent.iter().filter(|e| e["type"] == "check.recovered").collect();
    assert_eq!(recovered.len(), 1, "{sent:?}");
    let change = sent.iter().find(|e| e["type"] == "change.detected").expect("the change");
    let diff = change["data"]["diff"]["unified"].as_str().unwrap_or_default();
    assert!(diff.contains("-10 EUR") && diff.contains("+12 EUR"), "the page's own change: {change}");
    assert!(!diff.contains("Just a moment") && !diff.contains("JavaScript"), "nothing of the wall: {diff}");
    let events = app.ok(&format!("/events?watch_id={id}"), &token).await;
    // The change and the recovery come from one check, in either order.
    let mut seen = types(&events);
    seen.sort();
    assert_eq!(seen, vec!["change.detected", "check.blocked", "check.recovered"], "{events}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "ok");
}

pub async fn a_page_with_vendor_beacons_is_a_page(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop_behind_cloudflare("10 EUR")).await;
    site.set_headers(&CLOUDFLARE_HEADERS);
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price"})).await;
    let id = watch["id"].as_str().expect("id");
    for _ in 0..3 {
        assert_eq!(app.check(&token, id).await["outcome"], "unchanged");
    }
    site.set(&shop_behind_cloudflare("9 EUR"));
    assert_eq!(app.check(&token, id).await["outcome"], "changed");
    let watch = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(watch["health"], "ok", "{watch}");
    assert_eq!(app.ok("/events?type=check.blocked", &token).await["items"], json!([]));

    // A wall that answers 200 (a waiting room) is a wall too, whatever its status.
    let mut queue = Wall::cloudflare_challenge();
    queue.status = 200;
    site.set_wall(Some(queue));
    assert_eq!(app.check(&token, id).await["outcome"], "blocked");
}

pub async fn when_blocked_the_browser_gets_past_a_wall_for_bots(backend: Backend) {
    if !chromium() {
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop_behind_cloudflare("10 EUR")).await;
    // The wall stops driftwatch's own HTTP client and lets a browser through.
    let wall = Wall { stops_agent: Some("driftwatch".into()), ..Wall::cloudflare_challenge() };
    site.set_wall(Some(wall));
    let plain = json!({"url": site.url, "selector": "#price", "name": "Plain"});
    let (status, plain) = app.post("/watches", &token, plain).await;
    assert_eq!(status, StatusCode::CREATED, "{plain}");
    let run = app.check(&token, plain["id"].as_str().expect("id")).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("blocked"), Some("http")), "{run}");

    let body = json!({"url": site.url, "selector": "#price", "name": "Escalates",
                      "options": {"fetch": {"when_blocked": {"browser": true}}}});
    let watch = app.watch_with_baseline(&token, body).await;
    let id = watch["id"].as_str().expect("id");
    let run = app.check(&token, id).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("unchanged"), Some("browser")), "{run}");
    let note = run["note"].as_str().unwrap_or_default();
    assert!(note.contains("Cloudflare blocked HTTP") && note.contains("browser got through"), "{note}");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "ok");
    let agents: Vec<String> = site.requests().iter().filter_map(|r| r.headers.get("user-agent").cloned()).collect();
    assert!(agents.iter().any(|a| a.contains("HeadlessChrome") || a.contains("Chrome")), "{agents:?}");
}
