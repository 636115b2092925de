//! Proxies per watch: a watch's checks, HTTP and browser alike, leave by the proxy it names and
//! nowhere else; credentials work and are never shown back; a dead proxy or a proxy that wants
//! other credentials fails the run naming the proxy; a proxy on a private address needs the
//! operator's word; bad input is refused by field.
//!
//! The page sits behind `192.0.2.1` (a documentation address nothing here can reach): the
//! stand-in proxies route it to the page server, so a check that reads the page went through
//! a proxy, and one that did not cannot read it.

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, ProxyKind, ProxyServer};
use serde_json::{Value, json};

use crate::rendering::chromium;
use crate::support::TestApp;

const PASSWORD: &str = "pr0xy-plaintext-pw";

/// A page only proxies reach: its URL on 192.0.2.1, and the route from there to the page server.
async fn hidden_page(html: &str) -> (PageServer, String, HashMap<SocketAddr, SocketAddr>) {
    let page = PageServer::start(html).await;
    let real: SocketAddr = url::Url::parse(&page.url).expect("url").socket_addrs(|| None).expect("addr")[0];
    let hidden = SocketAddr::from(([192, 0, 2, 1], real.port()));
    let url = format!("http://{hidden}/page");
    (page, url, HashMap::from([(hidden, real)]))
}

async fn watch(app: &TestApp, token: &str, url: &str, name: &str, fetch: Value) -> String {
    let body = json!({"url": url, "selector": "#price", "name": name, "paused": true,
                      "options": {"fetch": fetch}});
    let (status, watch) = app.post("/watches", token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    watch["id"].as_str().expect("id").to_owned()
}

fn assert_read(run: &Value, engine: &str) {
    assert_eq!(run["outcome"], "baseline", "the first check reads the page: {run}");
    assert_eq!(run["engine"], engine, "{run}");
}

pub async fn checks_leave_by_the_proxy_their_watch_names(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.allow_private_proxies = true).await;
    let token = app.account("acme").await;
    let (_page, url, routes) = hidden_page("<p id=price>10 EUR</p>").await;
    let http = ProxyServer::start(ProxyKind::Http, Some(("alice", PASSWORD)), routes.clone()).await;
    let socks = ProxyServer::start(ProxyKind::Socks5, Some(("bob", PASSWORD)), routes.clone()).await;

    // A named proxy with credentials: shown without its password.
    let (status, office) = app.post("/proxies", &token, json!({"name": "office", "url": http.url()})).await;
    assert_eq!(status, StatusCode::CREATED, "{office}");
    assert_eq!(office["url"], http.url_with(Some(("alice", "****"))), "{office}");
    assert!(!office.to_string().contains(PASSWORD));
    let listed = app.ok("/proxies", &token).await;
    assert_eq!(listed["data"][0]["name"], "office", "{listed}");
    assert!(!listed.to_string().contains(PASSWORD));

    // Directly, the page cannot be reached at all.
    let direct = watch(&app, &token, &url, "Direct", json!({"timeout_seconds": 3})).await;
    let run = app.check(&token, &direct).await;
    assert_eq!(run["outcome"], "failed", "{run}");
    assert_eq!(http.passed() + socks.passed(), 0);

    // By name, through the HTTP proxy with credentials.
    let named = watch(&app, &token, &url, "Named", json!({"proxy": "office"})).await;
    assert_read(&app.check(&token, &named).await, "http");
    assert_eq!((http.passed(), socks.passed(), http.refused()), (1, 0, 0));

    // By URL, through SOCKS5 with credentials; the URL is sealed, never shown back.
    let inline = watch(&app, &token, &url, "Inline", json!({"proxy": socks.url()})).await;
    assert_read(&app.check(&token, &inline).await, "http");
    assert_eq!((http.passed(), socks.passed()), (1, 1));
    let shown = app.ok(&format!("/watches/{inline}"), &token).await;
    assert!(!shown.to_string().contains(PASSWORD), "{shown}");
    assert!(shown["options"]["fetch"]["proxy"].as_str().is_some_and(|p| p.starts_with("dwenc:")), "{shown}");
    // Sent back as it was shown, the sealed value is kept and still works.
    let same = json!({"options": shown["options"].clone()});
    let (status, kept) = app.call(reqwest::Method::PATCH, &format!("/watches/{inline}"), &token, Some(same)).await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    assert_eq!(kept["options"]["fetch"]["proxy"], shown["options"]["fetch"]["proxy"]);
    let run = app.check(&token, &inline).await;
    assert_eq!(run["outcome"], "unchanged", "{run}");
    // (Its connection through the SOCKS5 tunnel may be reused: counts grow by connection.)
    assert_eq!(http.passed(), 1, "nothing went by the other proxy");

    // The test action fetches through the proxy and records what came back.
    let (status, tested) = app.post("/proxies/office/test", &token, json!({"url": url})).await;
    assert_eq!(status, StatusCode::OK, "{tested}");
    assert_eq!(tested["last_test"]["ok"], true, "{tested}");
    assert_eq!(tested["last_test"]["status"], 200, "{tested}");
    assert!(tested["last_test"]["ms"].as_i64().is_some(), "{tested}");
    assert_eq!(http.passed(), 2, "{tested}");

    // An agent lists and tests them over MCP (the tools call the same routes).
    if let Some(mcp) = driftwatch_test_support::McpClient::find() {
        let plan = json!([["call", "list_proxies", {}], ["call", "test_proxy", {"name": "office", "url": url}]]);
        let answers = mcp.http(&format!("{}/mcp", app.root()), &token, &plan).await;
        assert_eq!(answers[0]["is_error"], false, "{}", answers[0]);
        assert_eq!(answers[0]["structured"]["data"][0]["name"], "office", "{}", answers[0]);
        assert!(!answers[0].to_string().contains(PASSWORD));
        assert_eq!(answers[1]["structured"]["last_test"]["status"], 200, "{}", answers[1]);
        assert_eq!(http.passed(), 3);
    }

    if chromium() {
        // The browser leaves by the same proxies: its guard proxy chains to them.
        let before = (http.passed(), socks.passed());
        let rendered = watch(&app, &token, &url, "Rendered", json!({"engine": "browser", "proxy": "office"})).await;
        assert_read(&app.check(&token, &rendered).await, "browser");
        assert!(http.passed() > before.0, "the render went through the HTTP proxy");
        let rendered =
            watch(&app, &token, &url, "Rendered socks", json!({"engine": "browser", "proxy": socks.url()})).await;
        assert_read(&app.check(&token, &rendered).await, "browser");
        assert!(socks.passed() > before.1, "the render went through the SOCKS5 proxy");
        assert_eq!(http.refused() + socks.refused(), 0);
    }
}

pub async fn a_failing_proxy_is_named_not_the_page(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.allow_private_proxies = true).await;
    let token = app.account("acme").await;
    let (_page, url, routes) = hidden_page("<p id=price>10 EUR</p>").await;
    let http = ProxyServer::start(ProxyKind::Http, Some(("alice", PASSWORD)), routes).await;

    // Nothing listens: the run says the proxy does not answer.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dead = format!("http://127.0.0.1:{}", closed.local_addr().expect("addr").port());
    drop(closed);
    let id = watch(&app, &token, &url, "Dead proxy", json!({"proxy": dead})).await;
    let run = app.check(&token, &id).await;
    assert_eq!((run["outcome"].as_str(), run["error_kind"].as_str()), (Some("failed"), Some("proxy")), "{run}");
    let error = run["error"].as_str().expect("error");
    assert!(error.starts_with(&format!("the proxy {dead} does not answer")), "{error}");
    assert!(!error.contains("192.0.2.1"), "the proxy is named, not the page: {error}");

    // Wrong credentials: the proxy's 407 is the proxy's failure, never the page's status.
    let wrong = http.url_with(Some(("alice", "wrong")));
    let id = watch(&app, &token, &url, "Wrong password", json!({"proxy": wrong})).await;
    let run = app.check(&token, &id).await;
    assert_eq!(run["error_kind"], "proxy", "{run}");
    let error = run["error"].as_str().expect("error");
    assert!(error.contains("wants credentials") && error.contains("alice:****@"), "{error}");
    assert!(!error.contains("wrong"), "{error}");
    assert_eq!(http.refused(), 1);

    if chromium() {
        let id = watch(&app, &token, &url, "Rendered, dead proxy", json!({"engine": "browser", "proxy": dead})).await;
        let run = app.check(&token, &id).await;
        assert_eq!(run["error_kind"], "proxy", "{run}");
        assert!(run["error"].as_str().is_some_and(|e| e.contains(&dead) && e.contains("does not answer")), "{run}");
    }
}

pub async fn a_private_proxy_needs_the_operators_word(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let (_page, url, routes) = hidden_page("<p id=price>10 EUR</p>").await;
    let http = ProxyServer::start(ProxyKind::Http, None, routes).await;
    let id = watch(&app, &token, &url, "Inside", json!({"proxy": http.url()})).await;
    let run = app.check(&token, &id).await;
    assert_eq!(run["error_kind"], "proxy", "{run}");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("DRIFTWATCH_ALLOW_PRIVATE_PROXIES")), "{run}");
    assert_eq!(http.passed(), 0, "nothing went through it");
}

pub async fn bad_proxy_input_is_refused_by_field(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let other = app.account("other").await;
    let field = |body: &Value| body["errors"][0]["field"].as_str().unwrap_or_default().to_owned();

    for (body, at) in [
        (json!({"name": "office", "url": "ftp://p.example"}), "url"),
        (json!({"name": "office", "url": "p.example:3128"}), "url"),
        (json!({"name": "office", "url": "http://p.example/path"}), "url"),
        (json!({"name": "no spaces", "url": "http://p.example:3128"}), "name"),
        (json!({"name": "none", "url": "http://p.example:3128"}), "name"),
        (json!({"url": "http://p.example:3128"}), "name"),
    ] {
        let (status, answer) = app.post("/proxies", &token, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(field(&answer), at, "{answer}");
    }
    assert_eq!(app.ok("/proxies", &token).await["data"], json!([]), "nothing saved");

    let (status, _) = app.post("/proxies", &token, json!({"name": "office", "url": "http://p.example:3128"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, answer) = app.post("/proxies", &token, json!({"name": "office", "url": "http://q.example"})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");

    // Another account sees none of it, and cannot name it.
    let (status, _) = app.get("/proxies/office", &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.post("/proxies/office/test", &other, json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app.call(reqwest::Method::DELETE, "/proxies/office", &other, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    for (fetch, at) in [
        (json!({"proxy": "office"}), None),
        (json!({"proxy": "nowhere"}), Some("options.fetch.proxy")),
        (json!({"proxy": "http://p.example/x"}), Some("options.fetch.proxy")),
        (json!({"proxy": "gopher://p.example"}), Some("options.fetch.proxy")),
        (json!({"when_blocked": {"browser": false, "proxy": "nowhere"}}), Some("options.fetch.when_blocked.proxy")),
    ] {
        for (who, owner) in [("acme", &token), ("other", &other)] {
            let body = json!({"url": "http://192.0.2.1/page", "paused": true, "options": {"fetch": fetch.clone()}});
            let (status, answer) = app.post("/watches", owner, body).await;
            let expected = if who == "other" && fetch["proxy"] == "office" { Some("options.fetch.proxy") } else { at };
            match expected {
                None => assert_eq!(status, StatusCode::CREATED, "{who} {fetch}: {answer}"),
                Some(at) => {
                    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{who} {fetch}: {answer}");
                    assert_eq!(field(&answer), at, "{answer}");
                }
            }
        }
    }
    let (status, answer) = app.call(reqwest::Method::DELETE, "/proxies/office", &token, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "a proxy in use stays: {answer}");
    assert_eq!(app.ok("/watches", &other).await["items"], json!([]), "nothing saved for the other account");
}

pub async fn proxies_are_kept_tested_and_named_in_the_watch_form(backend: Backend) {
    let Some(browser) = crate::browser::Browser::start().await else { return };
    let app = TestApp::start_with(backend, |s| s.allow_private_proxies = true).await;
    let root = app.root();
    crate::ui::set_up(&browser, &app).await;
    let token = app.token_for_user(crate::ui::EMAIL).await;
    let (_page, url, routes) = hidden_page("<p id=price>10 EUR</p>").await;
    let http = ProxyServer::start(ProxyKind::Http, Some(("alice", PASSWORD)), routes).await;

    browser.goto(&format!("{root}/proxies")).await;
    assert!(browser.text("#no-proxies").await.contains("No proxies yet"));
    crate::ui::look(&browser, "proxies-empty").await;

    // A bad URL: the error beside the field, what was typed kept, nothing saved.
    browser.fill("#f-name", "office").await;
    browser.fill("#f-url", "ftp://p.example").await;
    browser.submit_form("form[action='/proxies']").await;
    assert!(browser.wait_for_text("#e-url", "not ftp://").await.contains("not ftp://"));
    assert_eq!(browser.execute("return document.querySelector('#f-name').value").await, "office");
    crate::ui::look(&browser, "proxies-error").await;
    assert_eq!(app.ok("/proxies", &token).await["data"], json!([]));

    browser.fill("#f-url", &http.url()).await;
    browser.submit_form("form[action='/proxies']").await;
    let row = browser.wait_for_text("#proxy-office", "alice:****@").await;
    assert!(!row.contains(PASSWORD), "{row}");
    assert!(!browser.text("main").await.contains(PASSWORD));
    assert_eq!(browser.current_url().await.path(), "/proxies", "redirected after saving");

    // Test it against the page only the proxy reaches.
    browser.fill("#proxy-office input[name='url'][id^='test-']", &url).await;
    browser.submit_form("#proxy-office form[action='/proxies/office/test']").await;
    let row = browser.wait_for_text("#proxy-office", "works").await;
    assert!(row.contains("HTTP 200"), "{row}");
    assert_eq!(http.passed(), 1);
    if let Some(wide) = crate::polish::sideways_at_phone_width(&browser).await {
        panic!("the proxies page scrolls sideways at 390 px: {wide}");
    }
    crate::ui::look(&browser, "proxies").await;
    // The secrets page, laid out the same way, fits a phone too.
    let (status, _) = app.post("/secrets", &token, json!({"name": "bank", "value": PASSWORD})).await;
    assert_eq!(status, StatusCode::CREATED);
    browser.goto(&format!("{root}/secrets")).await;
    if let Some(wide) = crate::polish::sideways_at_phone_width(&browser).await {
        panic!("the secrets page scrolls sideways at 390 px: {wide}");
    }

    // The watch form names it, and the when-blocked fields are kept.
    browser.goto(&format!("{root}/watches/new")).await;
    browser.fill("#f-url", &url).await;
    browser.fill("#f-name", "Through the office").await;
    browser.fill("#f-selector", "#price").await;
    browser.execute("document.querySelectorAll('details').forEach(d => d.open = true)").await;
    browser.fill("#f-fetch_proxy", "nowhere").await;
    browser.submit_form("form.watch-form").await;
    let error = browser.wait_for_text("#e-fetch_proxy", "no proxy named").await;
    assert!(error.contains("\"nowhere\""), "{error}");
    assert_eq!(app.ok("/watches", &token).await["items"], json!([]), "nothing saved");
    crate::ui::look(&browser, "watch-form-proxy-error").await;
    browser.fill("#f-fetch_proxy", "office").await;
    browser.click("input[name='blocked_browser']").await;
    browser.submit_form("form.watch-form").await;
    browser.wait_for_text("h1", "Through the office").await;
    let listed = app.ok("/watches", &token).await;
    let fetch = &listed["items"][0]["options"]["fetch"];
    assert_eq!(fetch["proxy"], "office", "{listed}");
    assert_eq!(fetch["when_blocked"]["browser"], true, "{listed}");
    let id = listed["items"][0]["id"].as_str().expect("id").to_owned();
    let runs_path = format!("/watches/{id}/runs");
    let run = driftwatch_test_support::eventually("the first check", || async {
        let runs = app.ok(&runs_path, &token).await;
        runs["items"].as_array().and_then(|r| r.first().cloned())
    })
    .await;
    assert_eq!(run["outcome"], "baseline", "the first check went through the proxy: {run}");
    assert_eq!(http.passed(), 2);

    // A proxy in use is not deleted; the page says who uses it.
    browser.goto(&format!("{root}/proxies")).await;
    browser.execute("window.confirm = () => true").await;
    browser.submit_form("#proxy-office form[action='/proxies/office/delete']").await;
    let notice = browser.wait_for_text(".notice", "was not deleted").await;
    assert!(notice.contains(&id), "{notice}");
}
