//! The browser UI in a real headless Chromium against the real server, a page server and a
//! webhook receiver on loopback: first-run setup, sign-in, watches, diffs, changes and the
//! Atom feed, endpoints and deliveries, tokens, bulk actions and sign-out; CSRF, ownership and
//! cookie flags; axe-core on each main page; screenshots under `target/screenshots/`.

use crate::browser::Browser;
use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};

use crate::support::TestApp;

pub(crate) const EMAIL: &str = "ada@example.com";
const PASSWORD: &str = "correct horse battery";

/// Sets up the first account through `/setup` and lands signed in on the watches page.
pub(crate) async fn set_up(browser: &Browser, app: &TestApp) {
    browser.goto(&app.setup_url()).await;
    browser.fill("#f-account", "Acme").await;
    browser.fill("#f-email", EMAIL).await;
    browser.fill("#f-password", PASSWORD).await;
    browser.fill("#f-password_confirm", PASSWORD).await;
    browser.submit_form("form[action='/setup']").await;
    assert_eq!(browser.wait_for_text("h1", "Watches").await, "Watches");
}

/// Checks the page for serious or critical axe-core violations and screenshots it.
pub(crate) async fn look(browser: &Browser, name: &str) {
    browser.assert_accessible(name).await;
    browser.screenshot(name).await;
}

pub async fn first_run_sign_in_and_sign_out(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();

    // Before setup: every page leads to sign-in, which says how to set up.
    browser.goto(&format!("{root}/")).await;
    assert_eq!(browser.current_url().await.path(), "/sign-in");
    assert!(browser.text("main").await.contains("not set up yet"));
    look(&browser, "sign-in").await;

    // The setup page needs the printed code.
    browser.goto(&format!("{root}/setup")).await;
    assert!(browser.text("main").await.contains("not valid"), "no code is refused");
    browser.goto(&format!("{root}/setup?code=guess")).await;
    assert!(browser.text("main").await.contains("not valid"), "a wrong code is refused");

    // A form error keeps what was typed and says what is wrong beside the field.
    browser.goto(&app.setup_url()).await;
    look(&browser, "setup").await;
    browser.fill("#f-email", "not-an-email").await;
    browser.fill("#f-password", "short").await;
    browser.submit_form("form[action='/setup']").await;
    browser.wait_for_text("#e-email", "email address").await;
    assert!(browser.text("#e-password").await.contains("at least 10"));
    let kept = browser.execute("return document.querySelector('#f-email').value").await;
    assert_eq!(kept, "not-an-email");

    set_up(&browser, &app).await;
    let cookie = browser.cookie("dw_session").await;
    assert!(cookie.http_only, "{cookie:?}");
    assert_eq!(cookie.same_site.as_deref(), Some("Lax"));
    assert_eq!(cookie.path.as_deref(), Some("/"));
    assert!(!cookie.secure, "plain http on loopback");
    look(&browser, "watches-empty").await;

    // The setup link works once.
    browser.goto(&app.setup_url()).await;
    assert!(browser.text("h1").await.contains("Not found"));

    // Sign out, then a wrong password is refused with the same words as an unknown email.
    browser.goto(&format!("{root}/")).await;
    browser.submit_form("form.signout").await;
    browser.wait_for_text("h1", "Signed out").await;
    assert_eq!(browser.current_url().await.path(), "/signed-out");
    look(&browser, "signed-out").await;
    browser.goto(&format!("{root}/")).await;
    assert_eq!(browser.current_url().await.path(), "/sign-in", "the session ended");
    for (email, password) in [(EMAIL, "wrong password!"), ("nobody@example.com", PASSWORD)] {
        browser.fill("#f-email", email).await;
        browser.fill("#f-password", password).await;
        browser.submit_form("form[action='/sign-in']").await;
        assert_eq!(browser.text(".error-box").await, "Wrong email or password.");
    }
    browser.fill("#f-email", EMAIL).await;
    browser.fill("#f-password", PASSWORD).await;
    browser.submit_form("form[action='/sign-in']").await;
    assert_eq!(browser.wait_for_text("h1", "Watches").await, "Watches");
}

pub async fn a_change_shows_as_a_highlighted_diff(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let page =
        PageServer::start("<html><body><div id='price'>Plan Pro: 10 EUR per month</div><p>Other</p></body></html>")
            .await;

    // Add a watch in the form: a bad selector is refused beside its field, keeping what was typed.
    browser.click("a[href='/watches/new']").await;
    look(&browser, "watch-new").await;
    browser.fill("#f-url", &page.url).await;
    browser.fill("#f-name", "Pricing").await;
    browser.fill("#f-selector", "div[").await;
    browser.click("button[value='save']").await;
    browser.wait_for("#e-selector").await;
    assert_eq!(browser.execute("return document.querySelector('#f-url').value").await, page.url.as_str());
    // The preview shows the text that would be compared, after the selector, saving nothing.
    browser.fill("#f-selector", "#price").await;
    browser.click("button[value='preview']").await;
    assert_eq!(browser.text("#preview-text").await, "Plan Pro: 10 EUR per month");
    assert_eq!(app.ok("/watches", &token).await["items"].as_array().map(Vec::len), Some(0), "nothing saved");
    look(&browser, "watch-preview").await;
    browser.click("button[value='save']").await;
    browser.wait_for(".diff-section").await;
    let id = browser.current_url().await.path().trim_start_matches("/watches/").to_owned();
    assert!(id.starts_with("wat_"), "{id}");
    // Post/Redirect/Get: reloading after the form adds no second watch.
    browser.client().refresh().await.expect("reload");
    assert_eq!(
        app.ok("/watches", &token).await["items"].as_array().map(Vec::len),
        Some(1),
        "a reload made no second watch"
    );
    eventually("the baseline check", || async {
        let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
        (runs["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
    })
    .await;

    browser.goto(&format!("{root}/watches/{id}")).await;
    assert!(browser.text(".diff-section").await.contains("Plan Pro: 10 EUR per month"), "the baseline");
    // Check now from the page: unchanged.
    browser.submit_form(&format!("form[action='/watches/{id}/check']")).await;
    browser.wait_for_text(".notice", "Checked: unchanged").await;

    // The page changes; check now finds it and shows the diff.
    page.set("<html><body><div id='price'>Plan Pro: 11 EUR per month</div><p>Other</p></body></html>");
    browser.submit_form(&format!("form[action='/watches/{id}/check']")).await;
    browser.wait_for_text(".notice", "Checked: changed").await;
    assert_eq!(browser.text(".diff.inline ins").await, "11");

    // It changes again and a check in the background finds it: unseen until looked at.
    page.set("<html><body><div id='price'>Plan Pro: 12 EUR per month</div><p>Other</p></body></html>");
    let (status, run) = app.post(&format!("/watches/{id}/check"), &token, serde_json::json!({})).await;
    assert!(status.is_success(), "{run}");
    assert_eq!(run["outcome"], "changed", "{run}");

    // A few more watches, one of them failing, for a page worth looking at.
    let broken = PageServer::start("<html><body><main>Status: all good</main></body></html>").await;
    for (name, tags) in
        [("Release notes", serde_json::json!(["docs"])), ("Status page", serde_json::json!(["ops", "prod"]))]
    {
        let url = if name == "Status page" { broken.url.clone() } else { page.url.clone() };
        app.watch_with_baseline(&token, serde_json::json!({"url": url, "name": name, "tags": tags})).await;
    }
    broken.set_status(503);
    let status_id = app.ok("/watches?tag=ops", &token).await["items"][0]["id"].as_str().expect("id").to_owned();
    for _ in 0..3 {
        app.post(&format!("/watches/{status_id}/check"), &token, serde_json::json!({})).await;
    }
    assert_eq!(app.ok(&format!("/watches/{status_id}"), &token).await["health"], "failing");

    // The watches page marks it unseen until it is looked at.
    browser.goto(&format!("{root}/")).await;
    assert!(browser.text(".error-box").await.contains("1 watch on this page needs a look"));
    assert!(browser.text("tr.unseen").await.contains("Pricing"));
    look(&browser, "watches").await;

    browser.goto(&format!("{root}/watches/{id}")).await;
    assert!(browser.text(".diff-head").await.starts_with("Since you last looked"), "opens from what was seen");
    assert_eq!(browser.text(".diff.inline ins").await, "12");
    assert_eq!(browser.text(".diff.inline del").await, "11");
    look(&browser, "watch-diff-inline").await;
    browser.click("a[href$='view=side']").await;
    browser.wait_for(".diff.side").await;
    assert_eq!(browser.text(".diff.side ins").await, "12");
    assert_eq!(browser.text(".diff.side del").await, "11");
    look(&browser, "watch-diff-side").await;

    browser.goto(&format!("{root}/")).await;
    let unseen = browser.execute("return document.querySelectorAll('tr.unseen').length").await;
    assert_eq!(unseen, 0, "looked at now");

    browser.goto(&format!("{root}/changes")).await;
    assert!(browser.text(".changes").await.contains("Pricing"));
    look(&browser, "changes").await;
}

/// The signed-in browser's session cookie, for requests made beside the browser.
async fn session_cookie(browser: &Browser) -> String {
    format!("dw_session={}", browser.cookie("dw_session").await.value)
}

/// Waits until the delivery list of `query` has `n` items; returns them.
async fn deliveries(app: &TestApp, token: &str, query: &str, n: usize) -> Vec<serde_json::Value> {
    eventually(&format!("{n} deliveries {query}"), || async {
        let list = app.ok(&format!("/deliveries?{query}"), token).await;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        (items.len() == n).then_some(items)
    })
    .await
}

/// A change to `page` found by a check, raising one change event.
async fn change(app: &TestApp, token: &str, page: &PageServer, watch_id: &str, text: &str) {
    page.set(&format!("<html><body><div id='price'>{text}</div></body></html>"));
    let (status, run) = app.post(&format!("/watches/{watch_id}/check"), token, serde_json::json!({})).await;
    assert!(status.is_success(), "{run}");
    assert_eq!(run["outcome"], "changed", "{run}");
}

pub async fn endpoints_deliveries_redelivery_and_recovery(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    // Each failing delivery dies after its three attempts, without the circuit pausing it.
    let app = TestApp::start_with(backend, |s| s.circuit_threshold = 100).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let receiver = Receiver::start(200).await;

    // Add an endpoint: its secret is shown once, beside a copy button.
    browser.goto(&format!("{root}/endpoints")).await;
    look(&browser, "endpoints-empty").await;
    browser.click("a[href='/endpoints/new']").await;
    look(&browser, "endpoint-new").await;
    browser.fill("#f-url", "not a url").await;
    browser.submit_form("form[action='/endpoints/new']").await;
    browser.wait_for_text("#e-url", "http:// or https://").await;
    browser.fill("#f-url", &receiver.url).await;
    browser.fill("#f-description", "Our receiver").await;
    browser.submit_form("form[action='/endpoints/new']").await;
    let secret = browser.text("#secret").await;
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert!(browser.wait_for("button[data-copy='#secret']").await.is_displayed().await.unwrap_or(false));
    look(&browser, "endpoint-created").await;
    let endpoint_url = browser.current_url().await;
    assert!(endpoint_url.path().starts_with("/endpoints/end_"), "redirected to the new endpoint: {endpoint_url}");
    // Post/Redirect/Get: reloading the page after the form adds nothing.
    browser.client().refresh().await.expect("reload");
    let endpoints = app.ok("/endpoints", &token).await;
    assert_eq!(endpoints["items"].as_array().map(Vec::len), Some(1), "a reload made no second endpoint");
    let endpoint_id = app.ok("/endpoints", &token).await["items"][0]["id"].as_str().expect("id").to_owned();
    browser.goto(&format!("{root}/endpoints/{endpoint_id}")).await;
    let main = browser.text("main").await;
    assert!(!main.contains(&secret), "shown once only ({endpoint_url})");
    assert!(main.contains("50ms (the server's)") && main.contains("healthy"), "defaults and health in words: {main}");

    // A test event reaches the receiver and its answer is shown.
    browser.submit_form(&format!("form[action='/endpoints/{endpoint_id}/test']")).await;
    assert_eq!(browser.text(".test-status").await, "200");
    let received = receiver.wait_for(1).await;
    assert_eq!(received[0].json()["type"], "endpoint.test");
    received[0].verify(&secret).expect("signed with the secret shown");
    look(&browser, "endpoint").await;

    // A failing receiver: the change's delivery is tried three times, then dead.
    let page = PageServer::start("<html><body><div id='price'>10 EUR</div></body></html>").await;
    let watch = app
        .watch_with_baseline(&token, serde_json::json!({"url": page.url, "name": "Pricing", "selector": "#price"}))
        .await;
    let watch_id = watch["id"].as_str().expect("id").to_owned();
    receiver.set_status(500);
    change(&app, &token, &page, &watch_id, "12 EUR").await;
    let dead = deliveries(&app, &token, "status=dead", 1).await;
    let delivery_id = dead[0]["id"].as_str().expect("id").to_owned();
    browser.goto(&format!("{root}/dlq")).await;
    // The list names the watch and the endpoint, and the watch filter picks by name.
    let table = browser.text("table").await;
    assert!(table.contains("Pricing") && table.contains(&receiver.url), "{table}");
    look(&browser, "dead-letters").await;
    let picked = browser.execute(&format!(
        "const s = document.querySelector('#watch_id'); return [...s.options].find(o => o.value === '{watch_id}').text"
    ))
    .await;
    assert_eq!(picked, "Pricing");
    browser.click(&format!("a[href='/deliveries/{delivery_id}']")).await;
    browser.wait_for("table.attempts").await;
    let attempts = browser.execute("return document.querySelectorAll('table.attempts tbody tr').length").await;
    assert_eq!(attempts, 3, "each attempt is shown");
    assert!(browser.text("table.attempts").await.contains("500"));
    assert!(browser.text("h1").await.contains("dead"));
    assert!(browser.text("#delivery-body").await.contains("\"change.detected\""), "the exact body, pretty-printed");
    look(&browser, "delivery-dead").await;

    // The receiver recovers; redeliver from the page.
    receiver.set_status(200);
    browser.submit_form(&format!("form[action='/deliveries/{delivery_id}/redeliver']")).await;
    browser.wait_for_text(".notice", "answered 200").await;
    assert!(browser.text("h1").await.contains("sent"));

    // Two more changes die while the receiver fails; recover-since counts them first.
    receiver.set_status(500);
    change(&app, &token, &page, &watch_id, "13 EUR").await;
    change(&app, &token, &page, &watch_id, "14 EUR").await;
    deliveries(&app, &token, "status=dead", 2).await;
    receiver.set_status(200);
    let before = receiver.received().len();
    browser.goto(&format!("{root}/endpoints/{endpoint_id}")).await;
    let since = (chrono::Utc::now() - chrono::TimeDelta::hours(1)).format("%Y-%m-%dT%H:%M").to_string();
    browser.execute(&format!("document.querySelector('#f-since').value = '{since}'")).await;
    browser.click("button[value='count']").await;
    assert_eq!(browser.text("#dry-run-count strong").await, "2", "the dry run counts the two dead deliveries");
    look(&browser, "endpoint-recover-count").await;
    browser.click("button[value='start']").await;
    browser.wait_for("#recovery-state").await;
    eventually("the recovery to finish", || async {
        browser.client().refresh().await.expect("refresh");
        (browser.text("#recovery-state").await == "done").then_some(())
    })
    .await;
    assert_eq!(browser.text("#recovery-requeued").await, "2");
    receiver.wait_for(before + 2).await;
    deliveries(&app, &token, "status=sent", 4).await;
}

pub async fn tokens_feed_and_bulk_actions(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;

    // Create a token: shown once; it works; revoked, it does not.
    browser.goto(&format!("{root}/tokens")).await;
    browser.fill("#f-name", "deploy script").await;
    browser.submit_form("form[action='/tokens']").await;
    let created = browser.text("#new-token").await;
    assert!(created.starts_with("dwt_"), "{created}");
    look(&browser, "tokens").await;
    assert_eq!(browser.current_url().await.path(), "/tokens", "redirected after the form");
    let before = app.ok("/tokens", &token).await["items"].as_array().map_or(0, Vec::len);
    browser.client().refresh().await.expect("reload");
    let after = app.ok("/tokens", &token).await["items"].as_array().map_or(0, Vec::len);
    assert_eq!(before, after, "a reload made no second token");
    assert_eq!(app.get("/watches", &created).await.0, 200);
    browser.goto(&format!("{root}/tokens")).await;
    assert!(!browser.text("main").await.contains(&created), "shown once only");
    browser.execute("window.confirm = () => true").await;
    browser.click("table.tokens tr:nth-child(1) button.danger").await;
    browser.wait_for_text(".notice", "revoked").await;
    assert_eq!(app.get("/watches", &created).await.0, 401);

    // Three watches; pause two of them at once from the watches page.
    let page = PageServer::start("<html><body><div id='price'>10 EUR</div></body></html>").await;
    let mut ids = Vec::new();
    for name in ["Alpha", "Beta", "Gamma"] {
        let watch = app
            .watch_with_baseline(&token, serde_json::json!({"url": page.url, "name": name, "selector": "#price"}))
            .await;
        ids.push(watch["id"].as_str().expect("id").to_owned());
    }
    browser.goto(&format!("{root}/")).await;
    for id in &ids[..2] {
        browser.click(&format!("input[name='ids'][value='{id}']")).await;
    }
    browser.click("button[value='pause']").await;
    assert_eq!(browser.wait_for_text(".notice", "paused").await, "2 watches paused.");
    let paused = app.ok("/watches?state=paused", &token).await;
    let mut paused: Vec<&str> =
        paused["items"].as_array().expect("items").iter().filter_map(|w| w["id"].as_str()).collect();
    paused.sort_unstable();
    assert_eq!(paused, [ids[0].as_str(), ids[1].as_str()]);
    assert_eq!(browser.execute("return document.querySelectorAll('.badge-paused').length").await, 2);

    // Tag one, then filter by the tag and by a search.
    browser.click(&format!("input[name='ids'][value='{}']", ids[2])).await;
    browser.fill("#bulk-tag", "Prices").await;
    browser.click("button[value='tag']").await;
    browser.wait_for_text(".notice", "on 1 watch").await;
    browser.goto(&format!("{root}/?tag=prices")).await;
    assert_eq!(browser.execute("return document.querySelectorAll('#watch-rows tr').length").await, 1);
    browser.goto(&format!("{root}/?sort=newest")).await;
    assert!(browser.text("#watch-rows tr:first-child td.name a").await.starts_with("Gamma"));
    browser.goto(&format!("{root}/?q=alp")).await;
    assert!(browser.text("#watch-rows").await.contains("Alpha"));
    assert_eq!(browser.execute("return document.querySelectorAll('#watch-rows tr').length").await, 1);

    // The Atom feed: a key made on the account page, a real change, parsed as Atom.
    page.set("<html><body><div id='price'>12 EUR</div></body></html>");
    let (_, run) = app.post(&format!("/watches/{}/check", ids[2]), &token, serde_json::json!({})).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    browser.goto(&format!("{root}/account")).await;
    look(&browser, "account").await;
    assert_eq!(browser.text("#account-name").await, "Acme", "the account page names the account");
    browser.click("#feed button[value='new']").await;
    let feed_url = browser.text("#feed-url").await;
    let atom = app.http.get(&feed_url).send().await.expect("feed");
    assert_eq!(atom.status(), 200);
    assert!(atom.headers()["content-type"].to_str().expect("type").starts_with("application/atom+xml"));
    let xml = atom.text().await.expect("text");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let feed = doc.root_element();
    assert_eq!((feed.tag_name().namespace(), feed.tag_name().name()), (Some("http://www.w3.org/2005/Atom"), "feed"));
    let entries: Vec<_> =
        feed.children().filter(|n| n.has_tag_name(("http://www.w3.org/2005/Atom", "entry"))).collect();
    assert_eq!(entries.len(), 1, "{xml}");
    let title =
        entries[0].children().find(|n| n.has_tag_name(("http://www.w3.org/2005/Atom", "title"))).and_then(|n| n.text());
    assert!(title.is_some_and(|t| t.starts_with("Gamma changed")), "{title:?}");
    // Replacing the key revokes the old URL.
    browser.click("#feed button[value='new']").await;
    let replaced = eventually("a new feed URL", || async {
        let shown = browser.client().find(fantoccini::Locator::Css("#feed-url")).await.ok()?.text().await.ok()?;
        (shown != feed_url).then_some(shown)
    })
    .await;
    assert_eq!(app.http.get(&feed_url).send().await.expect("feed").status(), 404);
    assert_eq!(app.http.get(&replaced).send().await.expect("feed").status(), 200);

    // Sign out everywhere ends this session too.
    browser.goto(&format!("{root}/account")).await;
    browser.submit_form("form[action='/sign-out-everywhere']").await;
    browser.wait_for_text("h1", "Signed out").await;
    browser.goto(&format!("{root}/")).await;
    assert_eq!(browser.current_url().await.path(), "/sign-in");
}

pub async fn forms_need_their_token_and_accounts_stay_apart(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let page = PageServer::start("<html><body><p>hello</p></body></html>").await;
    let watch = app.watch_with_baseline(&token, serde_json::json!({"url": page.url})).await;
    let id = watch["id"].as_str().expect("id").to_owned();
    let cookie = session_cookie(&browser).await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");

    // A form post without its token, or from another site, is refused and changes nothing.
    let pause = format!("{root}/watches/{id}/pause");
    let without = http.post(&pause).header("cookie", &cookie).form(&[("x", "1")]).send().await.expect("post");
    assert_eq!(without.status(), 403);
    assert!(without.text().await.expect("body").contains("security token"));
    let csrf = browser.execute("return document.querySelector('input[name=_csrf]').value").await;
    let csrf = csrf.as_str().expect("a token in the page").to_owned();
    let foreign = http
        .post(&pause)
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .form(&[("_csrf", csrf.as_str())])
        .send()
        .await
        .expect("post");
    assert_eq!(foreign.status(), 403);
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["state"], "active", "nothing changed");
    // With its token, from this site, the same post works.
    let same =
        http.post(&pause).header("cookie", &cookie).form(&[("_csrf", csrf.as_str())]).send().await.expect("post");
    assert_eq!(same.status(), 303, "{:?}", same.text().await);
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["state"], "paused");

    // The API never takes the session cookie.
    let api = http.get(format!("{root}/api/v1/watches")).header("cookie", &cookie).send().await.expect("get");
    assert_eq!(api.status(), 401);

    // Every page carries the security headers.
    let home = http.get(format!("{root}/")).header("cookie", &cookie).send().await.expect("get");
    let csp = home.headers()["content-security-policy"].to_str().expect("csp").to_owned();
    assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"), "{csp}");
    assert_eq!(home.headers()["x-content-type-options"], "nosniff");
    assert_eq!(home.headers()["referrer-policy"], "same-origin");

    // Another account's watch, endpoint and delivery are the 404 page.
    let bob = app.account("bob").await;
    let theirs = app.watch_with_baseline(&bob, serde_json::json!({"url": page.url, "name": "Bob's"})).await;
    let receiver = Receiver::start(200).await;
    let (_, endpoint) = app.post("/endpoints", &bob, serde_json::json!({"url": receiver.url})).await;
    let (_, delivery) = app
        .post(&format!("/endpoints/{}/test", endpoint["id"].as_str().expect("id")), &bob, serde_json::json!({}))
        .await;
    for path in [
        format!("/watches/{}", theirs["id"].as_str().expect("id")),
        format!("/watches/{}/edit", theirs["id"].as_str().expect("id")),
        format!("/endpoints/{}", endpoint["id"].as_str().expect("id")),
        format!("/deliveries/{}", delivery["id"].as_str().expect("id")),
    ] {
        browser.goto(&format!("{root}{path}")).await;
        assert_eq!(browser.text("h1").await, "Not found", "{path}");
        assert!(!browser.text("main").await.contains("Bob's"), "{path}");
    }
    let response = http
        .get(format!("{root}/watches/{}", theirs["id"].as_str().expect("id")))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("get");
    assert_eq!(response.status(), 404);
    look(&browser, "not-found").await;

    // The live refresh's fragment: the rows alone, with the failing count for the tab title.
    let rows = http.get(format!("{root}/watches/rows")).header("cookie", &cookie).send().await.expect("get");
    assert_eq!(rows.status(), 200);
    assert_eq!(rows.headers()["x-failing"], "0");
    let rows = rows.text().await.expect("body");
    assert!(rows.trim_start().starts_with("<tr") && rows.contains(&id), "{rows}");

    // Failed sign-ins are throttled per email: the 11th try within the window is a 429 page
    // with the time to wait, even with the right password.
    let form = http.get(format!("{root}/sign-in")).send().await.expect("get");
    let presession = form.headers()["set-cookie"].to_str().expect("cookie").split(';').next().expect("pair").to_owned();
    let html = form.text().await.expect("body");
    let token = html.split("name=\"_csrf\" value=\"").nth(1).and_then(|t| t.split('"').next()).expect("a form token");
    let sign_in = |password: &'static str| {
        http.post(format!("{root}/sign-in"))
            .header("cookie", &presession)
            .form(&[("_csrf", token), ("email", EMAIL), ("password", password), ("next", "/")])
            .send()
    };
    for _ in 0..10 {
        assert_eq!(sign_in("wrong password!").await.expect("post").status(), 401);
    }
    let throttled = sign_in(PASSWORD).await.expect("post");
    assert_eq!(throttled.status(), 429);
    assert!(throttled.headers().contains_key("retry-after"));
    assert!(throttled.text().await.expect("body").contains("Try again in"));

    // Deliveries and changes pages render for an account with data.
    browser.goto(&format!("{root}/deliveries")).await;
    look(&browser, "deliveries").await;
}

pub async fn channels_routes_templates_and_mute_in_the_browser(backend: Backend) {
    use driftwatch_test_support::{ChatServer, Provider};
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let chat = ChatServer::start().await;
    let shop_page = PageServer::start("<html><body><div id='price'>10 EUR</div></body></html>").await;
    let blog_page = PageServer::start("<html><body><div id='price'>post 1</div></body></html>").await;
    let shop = app
        .watch_with_baseline(&token, serde_json::json!({"url": shop_page.url, "name": "Shop", "tags": ["shop"]}))
        .await;
    let blog = app.watch_with_baseline(&token, serde_json::json!({"url": blog_page.url, "name": "Blog"})).await;
    let (shop_id, blog_id) = (shop["id"].as_str().expect("id").to_owned(), blog["id"].as_str().expect("id").to_owned());

    // A Telegram endpoint: only its own fields show; a missing chat id is said beside it.
    browser.goto(&format!("{root}/endpoints/new")).await;
    browser.click("#f-kind option[value='telegram']").await;
    let shown =
        browser.execute("return getComputedStyle(document.querySelector('[data-kind=telegram]')).display").await;
    assert_eq!(shown, "block", "the chosen kind's fields show");
    let hidden = browser.execute("return getComputedStyle(document.querySelector('[data-kind=email]')).display").await;
    assert_eq!(hidden, "none", "the others do not");
    look(&browser, "endpoint-new-telegram").await;
    browser.fill("#f-url", &chat.base_url()).await;
    browser.fill("#f-description", "Shop alerts").await;
    browser.fill("#f-telegram_bot_token", "4242:browser-test-token").await;
    browser.click("button.primary").await;
    browser.wait_for_text("#e-telegram_chat_id", "required").await;
    let kept = browser.execute("return document.querySelector('#f-description').value").await;
    assert_eq!(kept, "Shop alerts", "what was typed is kept");

    // Routed to the shop tag, with a template: a typo is refused where it is, then previewed.
    browser.fill("#f-telegram_chat_id", "-100123").await;
    browser.click("input[name=route][value=tags]").await;
    browser.fill("#f-route_tags", "shop").await;
    browser.click("details.templates summary").await;
    browser.fill("#f-body_template", "{{ watch.nmae }}").await;
    browser.click("button[name=action][value=preview]").await;
    let error = browser.wait_for_text("#e-body_template", "line 1, column 4").await;
    assert!(error.contains("watch.nmae"), "{error}");
    look(&browser, "endpoint-template-error").await;
    browser.fill("#f-body_template", "{{ watch.name }}: +{{ diff.added }} lines").await;
    browser.click("button[name=action][value=preview]").await;
    let preview = browser.wait_for_text(".preview-body", "Coffee shop: +2 lines").await;
    assert!(preview.contains("\"chat_id\": -100123"), "{preview}");
    look(&browser, "endpoint-preview").await;
    assert_eq!(app.ok("/endpoints", &token).await["items"], serde_json::json!([]), "a preview saves nothing");

    // Saved: Post/Redirect/Get, so a reload adds nothing.
    browser.click("button.primary").await;
    browser.wait_for_text("#receives-watches", "watches tagged shop").await;
    browser.client().refresh().await.expect("reload");
    let endpoints = app.ok("/endpoints", &token).await;
    assert_eq!(endpoints["items"].as_array().map(Vec::len), Some(1), "a reload made no second endpoint");
    assert_eq!(endpoints["items"][0]["secrets_set"], true);
    let endpoint_id = endpoints["items"][0]["id"].as_str().expect("id").to_owned();
    look(&browser, "endpoint-telegram").await;

    // Send test: the provider's answer is shown.
    browser.submit_form(&format!("form[action='/endpoints/{endpoint_id}/test']")).await;
    assert_eq!(browser.text(".test-status").await, "200");
    assert_eq!(chat.accepted(Provider::Telegram).len(), 1);

    // The shop's change reaches it; the blog's does not.
    change(&app, &token, &shop_page, &shop_id, "12 EUR").await;
    blog_page.set("<html><body><div id='price'>post 2</div></body></html>");
    let run = app.check(&token, &blog_id).await;
    assert_eq!(run["outcome"], "changed");
    let got = chat.wait_for(Provider::Telegram, 2, std::time::Duration::from_secs(20)).await;
    let text = got[1].json.as_ref().expect("json")["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.contains("Shop: +1 lines"), "the template: {text}");
    let queued = app.ok(&format!("/deliveries?endpoint_id={endpoint_id}"), &token).await;
    assert_eq!(queued["items"].as_array().map(Vec::len), Some(2), "the test and the shop's change only");

    // The watch page says where it goes; muted, it says so and nothing is queued.
    browser.goto(&format!("{root}/watches/{shop_id}")).await;
    assert!(browser.text("#delivered-to").await.contains("Shop alerts (telegram)"));
    browser.submit_form(&format!("form[action='/watches/{shop_id}/mute']")).await;
    browser.wait_for_text("#delivered-to", "Muted").await;
    look(&browser, "watch-muted").await;
    change(&app, &token, &shop_page, &shop_id, "13 EUR").await;
    let queued = app.ok(&format!("/deliveries?endpoint_id={endpoint_id}"), &token).await;
    assert_eq!(queued["items"].as_array().map(Vec::len), Some(2), "a muted watch queues nothing");

    // Editing without typing the token again keeps it.
    browser.goto(&format!("{root}/endpoints/{endpoint_id}/edit")).await;
    assert!(browser.text("#h-telegram_bot_token").await.contains("Leave empty to keep it"));
    look(&browser, "endpoint-edit-telegram").await;
    browser.fill("#f-description", "Shop alerts (team)").await;
    browser.click("button.primary").await;
    browser.wait_for_text("h1", &chat.base_url()).await;
    browser.submit_form(&format!("form[action='/endpoints/{endpoint_id}/test']")).await;
    assert_eq!(browser.text(".test-status").await, "200", "the kept token still works");
    chat.assert_no_rejections();

    // Moving from changedetection.io: an Apprise URL becomes an endpoint; what cannot be
    // mapped is said beside the field.
    browser.goto(&format!("{root}/endpoints/new")).await;
    browser.click("details.import summary").await;
    browser.fill("#f-apprise_url", "slack://TokenA/TokenB/TokenC").await;
    browser.submit_form("form[action='/endpoints/import']").await;
    let said = browser.wait_for_text("#e-apprise_url", "slack://").await;
    assert!(!said.contains("TokenB"), "{said}");
    look(&browser, "endpoint-import-error").await;
    browser.fill("#f-apprise_url", &format!("ntfy://{}/shop-alerts", chat.addr())).await;
    browser.submit_form("form[action='/endpoints/import']").await;
    browser.wait_for_text(".notice", "Imported as a ntfy endpoint").await;
    browser.client().refresh().await.expect("reload");
    assert_eq!(
        app.ok("/endpoints", &token).await["items"].as_array().map(Vec::len),
        Some(2),
        "a reload imported nothing more"
    );

    // An email as it arrives: its HTML part, opened in the browser.
    let smtp = driftwatch_test_support::SmtpServer::start().await;
    let (status, _) = app
        .post(
            "/endpoints",
            &token,
            serde_json::json!({"kind": "email", "url": format!("smtp://127.0.0.1:{}", smtp.port()),
                "settings": {"from": "driftwatch <alerts@example.com>", "to": ["ada@example.com"], "security": "plain"},
                "route": {"watches": [blog_id]}}),
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::CREATED);
    blog_page.set("<html><body><div id='price'>Espresso machine. Price: 129 EUR. In stock.</div></body></html>");
    app.check(&token, &blog_id).await;
    blog_page.set("<html><body><div id='price'>Espresso machine. Price: 99 EUR. In stock.\nFree delivery this week.</div></body></html>");
    app.check(&token, &blog_id).await;
    let mails = smtp.wait_for(2, std::time::Duration::from_secs(20)).await;
    let html = mails[1].parsed().html.expect("an HTML part");
    let shown = PageServer::start(&html).await;
    browser.goto(&shown.url).await;
    assert!(browser.text("h1").await.contains("Blog changed"));
    let marked =
        browser.execute("return [...document.querySelectorAll('ins, del')].map(e => e.textContent).join('|')").await;
    assert!(marked.as_str().is_some_and(|m| m.contains("99") && m.contains("129")), "changed words marked: {marked}");
    browser.screenshot("email-as-received").await;
}
