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

/// One answer of the classifier's fixture corpus (`crates/scrape/tests/walls/`): its file name
/// says the vendor (`none` for a normal page) before `--`.
struct Fixture {
    name: String,
    wall: bool,
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

fn corpus() -> Vec<Fixture> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/scrape/tests/walls");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("the corpus").map(|e| e.expect("entry").path()).collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let name = path.file_name().expect("name").to_string_lossy().into_owned();
            let text = String::from_utf8_lossy(&std::fs::read(path).expect("fixture")).into_owned();
            let (head, body) = text.split_once("\n\n").expect("a blank line after the headers");
            let mut lines = head.lines().filter(|l| !l.starts_with("# "));
            let status = lines.next().and_then(|l| l.split(' ').nth(1)?.parse().ok()).expect("a status");
            // What the server itself writes (length, framing) is left to it.
            let headers = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
                .filter(|(n, _)| !matches!(n.as_str(), "content-length" | "connection" | "transfer-encoding"))
                .collect();
            Fixture { wall: !name.starts_with("none--"), name, status, headers, body: body.to_owned() }
        })
        .collect()
}

/// Every answer of the classifier's corpus, served and checked as a watch's page: no wall is
/// ever recorded as a change, and no normal page (vendor beacons and all) is taken for a wall.
pub async fn the_wall_corpus_through_real_checks(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let (mut walls, mut blocked, mut changes, mut normal, mut taken) = (0, 0, 0, 0, Vec::new());
    for fixture in corpus() {
        // A redirect to a queue is followed to the queue's own page, which is what is judged.
        if (300..400).contains(&fixture.status) {
            continue;
        }
        let answer = Wall {
            status: fixture.status,
            headers: fixture.headers.clone(),
            body: fixture.body.clone(),
            stops_agent: None,
        };
        let site = PageServer::start("<main><h1>Tickets</h1><p id=\"on-sale\">On sale Friday</p></main>").await;
        if fixture.wall {
            walls += 1;
            let watch = app.watch_with_baseline(&token, json!({"url": site.url, "name": fixture.name})).await;
            site.set_wall(Some(answer));
            let run = app.check(&token, watch["id"].as_str().expect("id")).await;
            blocked += usize::from(run["outcome"] == "blocked");
            changes += usize::from(run["outcome"] == "changed");
            assert_eq!(run["outcome"], "blocked", "{}: {run}", fixture.name);
        } else {
            normal += 1;
            site.set_wall(Some(answer));
            let (status, watch) = app.post("/watches", &token, json!({"url": site.url, "name": fixture.name})).await;
            assert_eq!(status, StatusCode::CREATED, "{watch}");
            let id = watch["id"].as_str().expect("id");
            for _ in 0..2 {
                let run = app.check(&token, id).await;
                if run["outcome"] == "blocked" {
                    taken.push(format!("{}: {}", fixture.name, run["error"]));
                }
            }
            assert_ne!(app.ok(&format!("/watches/{id}"), &token).await["health"], "blocked", "{}", fixture.name);
        }
    }
    eprintln!(
        "wall corpus through checks: {blocked}/{walls} walls blocked, {changes} recorded as changes; \
         {}/{normal} normal pages taken for walls",
        taken.len()
    );
    assert!(walls >= 20 && normal >= 15, "the corpus is all there: {walls} walls, {normal} normal pages");
    assert_eq!((blocked, changes), (walls, 0));
    assert!(taken.is_empty(), "normal pages taken for walls: {taken:?}");
}

/// The watch page of a blocked watch says who blocked it, what gave it away and how to get
/// past it; the list's health filter finds it. axe-core and screenshots at 1280 and 390 px.
pub async fn a_blocked_watch_says_what_stands_in_the_way(backend: Backend) {
    let Some(browser) = crate::browser::Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    crate::ui::set_up(&browser, &app).await;
    let token = app.token_for_user(crate::ui::EMAIL).await;
    let site = PageServer::start(&shop_behind_cloudflare("10 EUR")).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price", "name": "Widget"})).await;
    let id = watch["id"].as_str().expect("id");
    site.set_wall(Some(Wall::cloudflare_challenge()));
    assert_eq!(app.check(&token, id).await["outcome"], "blocked");

    browser.goto(&format!("{root}/watches/{id}")).await;
    let trouble = browser.text("#trouble").await;
    assert!(trouble.contains("bot wall") && trouble.contains("Cloudflare"), "{trouble}");
    assert!(trouble.contains("cf-mitigated: challenge"), "what gave it away: {trouble}");
    assert!(trouble.contains("When blocked"), "how to get past it: {trouble}");
    assert_eq!(browser.text("h1 .badge").await, "blocked");
    if let Some(wide) = crate::polish::sideways_at_phone_width(&browser).await {
        panic!("the blocked watch page scrolls sideways at 390 px: {wide}");
    }
    crate::ui::look(&browser, "watch-blocked").await;

    browser.goto(&format!("{root}/?health=blocked")).await;
    assert!(browser.text("main").await.contains("Widget"), "the filter finds it");
    crate::ui::look(&browser, "watches-blocked").await;
}
