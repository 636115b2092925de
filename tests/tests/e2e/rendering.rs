//! Watches rendered in a real Chromium, through the API and the pipeline: a price written by
//! JavaScript, steps, screenshots (stored once, served to the owner only, purged with their
//! snapshots) and visual change. Skipped with one line when no Chromium is installed, unless
//! `DRIFTWATCH_REQUIRE_BROWSER=1` (CI), which fails instead.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver};
use serde_json::{Value, json};

use crate::support::TestApp;

/// Whether Chromium is here; says why not (or fails under `DRIFTWATCH_REQUIRE_BROWSER=1`).
pub(crate) fn chromium() -> bool {
    if driftwatch_browser::find_chromium(None, std::env::var_os("PATH").as_deref()).is_some() {
        return true;
    }
    if std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
        panic!("DRIFTWATCH_REQUIRE_BROWSER=1 but no Chromium on PATH");
    }
    eprintln!("SKIPPED rendering tests: no Chromium on PATH (Debian: apt-get install chromium)");
    false
}

/// A shop page whose price only a script writes: absent from the HTML.
fn shop(price: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Shop</title></head><body><h1>Widget</h1><div id=\"app\">Loading…</div>\
         <script>const data = {{ price: '{price}' }};\
         const p = document.createElement('p'); p.id = 'price'; p.textContent = 'Price: ' + data.price;\
         document.getElementById('app').replaceChildren(p);</script></body></html>"
    )
}

fn items(list: &Value) -> &Vec<Value> {
    list["items"].as_array().expect("items")
}

async fn newest_run(app: &TestApp, token: &str, watch_id: &str) -> Value {
    items(&app.ok(&format!("/watches/{watch_id}/runs"), token).await)[0].clone()
}

pub async fn a_script_written_price_is_seen_by_browser_and_auto_not_http(backend: Backend) {
    if !chromium() {
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("10 EUR")).await;
    let receiver = Receiver::start(200).await;
    let (_, secret) = app.endpoint(&token, &receiver.url, json!({"event_types": ["change.detected"]})).await;

    let (status, http) = app.post("/watches", &token, json!({"url": site.url, "selector": "#price"})).await;
    assert_eq!(status, StatusCode::CREATED, "{http}");
    let http_id = http["id"].as_str().expect("id");
    let run = app.check(&token, http_id).await;
    assert_eq!(run["outcome"], "failed", "{run}");
    assert_eq!(run["error_kind"], "selector_missing", "{run}");
    assert_eq!(run["engine"], "http");

    let browser = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "#price", "options": {"fetch": {"engine": "browser"}}}),
        )
        .await;
    let browser_id = browser["id"].as_str().expect("id");
    let run = newest_run(&app, &token, browser_id).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("baseline"), Some("browser")), "{run}");
    let snapshot = items(&app.ok(&format!("/watches/{browser_id}/snapshots"), &token).await)[0].clone();
    let content = app.ok(&format!("/snapshots/{}", snapshot["id"].as_str().expect("id")), &token).await;
    assert_eq!(content["content"].as_str().map(str::trim), Some("Price: 10 EUR"), "{content}");

    let auto = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "#price", "options": {"fetch": {"engine": "auto"}}}),
        )
        .await;
    let auto_id = auto["id"].as_str().expect("id");
    let run = newest_run(&app, &token, auto_id).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("baseline"), Some("browser")), "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("needs a browser")), "auto says why: {run}");
    let auto = app.ok(&format!("/watches/{auto_id}"), &token).await;
    assert_eq!(auto["engine_in_use"], "browser", "{auto}");
    assert!(auto["browser_since"].is_string(), "{auto}");

    // The script's data changes: the browser watch sees it, diffs it, delivers it.
    site.set(&shop("12 EUR"));
    let run = app.check(&token, browser_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let hooks = receiver.wait_for(1).await;
    hooks[0].verify(&secret).expect("signed");
    let payload = hooks[0].json();
    assert_eq!(payload["data"]["watch"]["id"], browser_id);
    let unified = payload["data"]["diff"]["unified"].as_str().expect("unified");
    assert!(unified.contains("-Price: 10 EUR") && unified.contains("+Price: 12 EUR"), "{unified}");
    assert_eq!(payload["data"]["render"]["browser"], true, "{payload}");
    assert!(payload["data"]["render"].get("screenshot").is_none(), "no screenshot was asked for: {payload}");

    // The auto watch stays with the browser (no HTTP refetch first) and sees it too.
    let run = app.check(&token, auto_id).await;
    assert_eq!((run["outcome"].as_str(), run["engine"].as_str()), (Some("changed"), Some("browser")), "{run}");
    // HTTP still sees nothing.
    assert_eq!(app.check(&token, http_id).await["error_kind"], "selector_missing");
    let hooks = receiver.wait_for(2).await;
    assert_eq!(hooks.len(), 2, "one delivery per change");

    // An operator sees the renders and the browser's memory (no metrics token is set).
    let metrics =
        app.http.get(format!("{}/metrics", app.root())).send().await.expect("scrape").text().await.expect("text");
    let value = |prefix: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {prefix} in {metrics}"))
    };
    assert!(value("driftwatch_browser_renders_total{outcome=\"ok\"}") >= 4.0, "{metrics}");
    assert!(value("driftwatch_browser_memory_bytes") > 50e6, "{metrics}");
}

/// A page with a cookie banner that hides the content until it is accepted.
fn banner_page(content: &str) -> String {
    format!(
        "<!doctype html><html><body style=\"margin:0;font:20px sans-serif\">\
         <div id=\"banner\" style=\"position:fixed;inset:0;background:#333;color:#fff\">We use cookies \
         <button id=\"accept\" onclick=\"document.getElementById('banner').remove();\
         document.getElementById('content').hidden = false\">Accept</button></div>\
         <main id=\"content\" hidden><h1>Board</h1><p>{content}</p></main></body></html>"
    )
}

pub async fn steps_and_screenshots_are_kept_shown_to_their_owner_and_purged(backend: Backend) {
    if !chromium() {
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let other = app.account("other").await;
    let site = PageServer::start(&banner_page("All systems go")).await;
    let options = json!({"fetch": {
        "engine": "browser",
        "steps": [{"action": "click", "selector": "#accept"}, {"action": "wait_for", "selector": "#content:not([hidden])"}],
        "screenshot": "viewport",
    }});
    let watch =
        app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#content", "options": options})).await;
    let id = watch["id"].as_str().expect("id");
    let snapshots = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    let first = items(&snapshots)[0].clone();
    let first_id = first["id"].as_str().expect("id");
    let content = app.ok(&format!("/snapshots/{first_id}"), &token).await;
    assert!(content["content"].as_str().is_some_and(|c| c.contains("All systems go")), "the step opened it: {content}");
    let path = first["screenshot"].as_str().expect("a screenshot link");
    assert_eq!(path, format!("/api/v1/watches/{id}/snapshots/{first_id}/screenshot"));

    let url = format!("{}{}", app.root(), path);
    let image = app.http.get(&url).bearer_auth(&token).send().await.expect("GET screenshot");
    assert_eq!(image.status(), StatusCode::OK);
    assert_eq!(image.headers()["content-type"], "image/webp");
    let bytes = image.bytes().await.expect("bytes");
    assert_eq!(&bytes[..4], b"RIFF");
    assert_eq!(driftwatch_visual::dimensions(&bytes).expect("an image"), (1280, 900));
    let foreign = app.http.get(&url).bearer_auth(&other).send().await.expect("GET");
    assert_eq!(foreign.status(), StatusCode::NOT_FOUND, "another account's screenshot does not exist for it");
    let anonymous = app.http.get(&url).send().await.expect("GET");
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

    // Unchanged: no new snapshot, no new screenshot.
    let store = app.app.as_ref().expect("app").store.clone();
    let count = || async {
        let store = store.clone();
        store.read(driftwatch_store::screenshots::count).await.expect("count")
    };
    assert_eq!(app.check(&token, id).await["outcome"], "unchanged");
    assert_eq!(count().await, 1);
    // A second watch of the same page renders the same picture: stored once.
    let twin = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "#content", "options": options, "name": "twin"}),
        )
        .await;
    let twin_id = twin["id"].as_str().expect("id");
    let twin_snapshot = items(&app.ok(&format!("/watches/{twin_id}/snapshots"), &token).await)[0].clone();
    assert!(twin_snapshot["screenshot"].is_string());
    assert_eq!(count().await, 1, "identical screenshots are stored once");

    // A change: a new snapshot with a screenshot of its own.
    site.set(&banner_page("Maintenance tonight"));
    assert_eq!(app.check(&token, id).await["outcome"], "changed");
    assert_eq!(count().await, 2);

    // Retention keeps one snapshot per watch: the first one's picture is still the twin's;
    // once the twin is deleted and retention runs again, it goes.
    let now = chrono::Utc::now().naive_utc();
    let keep_one = driftwatch_store::retention::Retention {
        keep_snapshots: 1,
        ..driftwatch_store::retention::Retention::keep_everything(now)
    };
    let purged = driftwatch_store::retention::purge(&store, &keep_one).await.expect("purge");
    assert_eq!(purged.snapshots, 1);
    assert_eq!((purged.screenshots, count().await), (0, 2), "the twin still shows the first picture");
    let (status, _) = app
        .call(reqwest::Method::DELETE, &format!("/watches/{}", twin["id"].as_str().expect("id")), &token, None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let purged = driftwatch_store::retention::purge(&store, &keep_one).await.expect("purge");
    assert_eq!((purged.screenshots, count().await), (1, 1), "a picture no snapshot shows is deleted");
    let gone = app.http.get(&url).bearer_auth(&token).send().await.expect("GET");
    assert_eq!(gone.status(), StatusCode::NOT_FOUND, "its snapshot was purged");
}

/// A status board: the same text whatever the colour of its lamp.
fn board(lamp: &str, clock: &str) -> String {
    format!(
        "<!doctype html><html><body style=\"margin:0;font:20px sans-serif;background:#fff\">\
         <h1 style=\"margin:0;height:60px\">Status board</h1>\
         <div id=\"lamp\" style=\"position:absolute;left:0;top:100px;width:400px;height:300px;background:{lamp}\"></div>\
         <div id=\"clock\" style=\"position:absolute;left:800px;top:100px;width:300px;height:300px;background:{clock}\"></div>\
         </body></html>"
    )
}

pub async fn a_visual_only_change_alerts_and_an_ignored_region_does_not(backend: Backend) {
    if !chromium() {
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&board("green", "white")).await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({"event_types": ["change.detected"]})).await;
    let fetch = json!({"engine": "browser", "screenshot": "viewport"});
    let visual = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "name": "lamp", "options": {"fetch": fetch, "noise": {"compare": "visual"}}}),
        )
        .await;
    let ignoring = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "name": "lamp, clock ignored", "options": {"fetch": fetch, "noise": {
                "compare": "text_or_visual",
                "ignore_regions": [{"x": 780, "y": 80, "width": 340, "height": 340}],
            }}}),
        )
        .await;
    let (visual_id, ignoring_id) = (visual["id"].as_str().expect("id"), ignoring["id"].as_str().expect("id"));

    // Only the clock's region changes: the watch that ignores it sees nothing; the other does.
    site.set(&board("green", "black"));
    let run = app.check(&token, ignoring_id).await;
    assert_eq!(run["outcome"], "unchanged", "a change inside an ignored region: {run}");
    let run = app.check(&token, visual_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let hooks = receiver.wait_for(1).await;
    let render = &hooks[0].json()["data"]["render"];
    let percent = render["visual_change_percent"].as_f64().expect("a visual change");
    // 300x300 of 1280x900 pixels.
    assert!((percent - 7.81).abs() < 0.5, "{percent}");
    assert!(render["screenshot"].as_str().is_some_and(|s| s.ends_with("/screenshot")), "{render}");
    assert!(render["previous_screenshot"].is_string(), "{render}");
    assert_eq!(hooks[0].json()["data"]["diff"]["added"], 0, "the text is the same");

    // The lamp turns red: outside the ignored region, the text the same, the page looks different.
    site.set(&board("red", "black"));
    let run = app.check(&token, ignoring_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let snapshots = app.ok(&format!("/watches/{ignoring_id}/snapshots"), &token).await;
    let newest = items(&snapshots)[0]["visual_change_percent"].as_f64().expect("percent");
    // 400x300 of the 1280x900 pixels less the 340x340 ignored: a share of what is compared.
    assert!((newest - 11.58).abs() < 0.5, "{newest}");
    receiver.wait_for(2).await;
}

pub async fn browser_options_are_checked_field_by_field(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<p>hi</p>").await;
    let refused = |options: Value| {
        let (app, token, url) = (&app, &token, site.url.clone());
        async move {
            let (status, problem) = app.post("/watches", token, json!({"url": url, "options": options})).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
            problem
        }
    };
    let field = |problem: &Value| problem["errors"][0]["field"].as_str().unwrap_or_default().to_owned();
    let many: Vec<Value> = (0..21).map(|_| json!({"action": "wait_for", "ms": 1})).collect();
    assert_eq!(field(&refused(json!({"fetch": {"engine": "auto", "steps": many}})).await), "options.fetch.steps");
    assert_eq!(field(&refused(json!({"fetch": {"engine": "auto", "wait": "div[[["}})).await), "options.fetch.wait");
    assert_eq!(
        field(
            &refused(json!({"fetch": {"engine": "auto", "steps": [{"action": "click", "selector": "a:::b"}]}})).await
        ),
        "options.fetch.steps[0].selector"
    );
    assert_eq!(field(&refused(json!({"fetch": {"steps": [{"action": "scroll"}]}})).await), "options.fetch.steps");
    assert_eq!(field(&refused(json!({"fetch": {"screenshot": "viewport"}})).await), "options.fetch.screenshot");
    assert_eq!(
        field(&refused(json!({"fetch": {"engine": "auto"}, "noise": {"compare": "visual"}})).await),
        "options.noise.compare"
    );
    let unknown = refused(json!({"fetch": {"engine": "auto", "steps": [{"action": "dance"}]}})).await;
    assert!(unknown.to_string().contains("dance") || unknown.to_string().contains("steps"), "{unknown}");
    // Nothing was created.
    assert!(items(&app.ok("/watches", &token).await).is_empty());
}

pub async fn without_a_browser_the_engine_is_refused_and_a_large_screenshot_is_not_kept(backend: Backend) {
    // A node whose configured Chromium does not exist: the browser engine is refused at
    // create, naming what fixes it; auto still works over HTTP and says why it cannot render.
    let app = TestApp::start_with(backend, |s| s.chromium = Some("/nonexistent/chromium".into())).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&shop("10 EUR")).await;
    let (status, problem) =
        app.post("/watches", &token, json!({"url": site.url, "options": {"fetch": {"engine": "browser"}}})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "options.fetch.engine");
    let message = problem["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("DRIFTWATCH_CHROMIUM") && message.contains("apt-get install chromium"), "{message}");
    let auto = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "#price", "options": {"fetch": {"engine": "auto"}}}),
        )
        .await;
    let run = newest_run(&app, &token, auto["id"].as_str().expect("id")).await;
    assert_eq!((run["engine"].as_str(), run["error_kind"].as_str()), (Some("http"), Some("selector_missing")), "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("none is available")), "{run}");
    drop(app);

    if !chromium() {
        return;
    }
    // Screenshots over the cap are not kept; the text is, and the run says why.
    let app = TestApp::start_with(backend, |s| s.max_screenshot_bytes = 1024).await;
    let token = app.account("acme").await;
    let watch = app
        .watch_with_baseline(
            &token,
            json!({"url": site.url, "selector": "#price", "options": {"fetch": {"engine": "browser", "screenshot": "full_page"}}}),
        )
        .await;
    let id = watch["id"].as_str().expect("id");
    let run = newest_run(&app, &token, id).await;
    assert_eq!(run["outcome"], "baseline", "{run}");
    assert!(run["note"].as_str().is_some_and(|n| n.contains("larger than the cap")), "{run}");
    let snapshot = items(&app.ok(&format!("/watches/{id}/snapshots"), &token).await)[0].clone();
    assert!(snapshot["screenshot"].is_null(), "{snapshot}");
}
