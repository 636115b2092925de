//! What people read, checked as they see it: pages at 390 px wide without sideways scrolling
//! (tables become one card per row, the status first), muted watches marked in words and
//! filtered by, the words of counts, times and ranges, the empty Endpoints page naming every
//! kind, a preview's failure filed under the setting it is about, and MCP's latest diff before
//! the first change. Screenshots under `target/screenshots/`.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, McpClient, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::browser::Browser;
use crate::support::TestApp;
use crate::ui::{EMAIL, look, set_up};

/// A phone's width in CSS pixels.
const PHONE: u64 = 390;

/// Whether this page, laid out 390 px wide, scrolls sideways anywhere: the page itself, or a
/// table in its scrolling wrapper. `None` when nothing does, else what does.
pub(crate) async fn sideways_at_phone_width(browser: &Browser) -> Option<Value> {
    let metrics = json!({"width": PHONE, "height": 844, "deviceScaleFactor": 1, "mobile": true});
    browser.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
    let found = browser
        .execute(
            "const d = document.documentElement;\
             const wide = [...document.querySelectorAll('.table-wrap')].filter(e => e.scrollWidth > e.clientWidth + 1)\
               .map(e => (e.querySelector('table') || e).className);\
             const over = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391)\
               .filter(e => ![...e.children].some(c => c.getBoundingClientRect().right > 391))\
               .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));\
             return {page: d.scrollWidth, wide, over};",
        )
        .await;
    browser.cdp("Emulation.clearDeviceMetricsOverride", json!({})).await;
    // A page wider than the phone makes the phone zoom out to it: the page's width is the test.
    let fits = found["page"].as_u64().is_some_and(|w| w <= PHONE) && found["wide"] == json!([]);
    (!fits).then_some(found)
}

/// Checks the current page at 390 px (no sideways scrolling), axe and the screenshots.
async fn phone_look(browser: &Browser, name: &str) {
    if let Some(wide) = sideways_at_phone_width(browser).await {
        panic!("{name} scrolls sideways at {PHONE} px: {wide}");
    }
    look(browser, name).await;
}

/// The delivery list's rows laid out 390 px wide: whether each status comes first (no cell
/// above it) and is on screen.
async fn statuses_lead_on_screen(browser: &Browser, rows: &str) -> Value {
    let metrics = json!({"width": PHONE, "height": 844, "deviceScaleFactor": 1, "mobile": true});
    browser.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
    let found = browser
        .execute(&format!(
            "return [...document.querySelectorAll({rows:?})].map(tr => {{\
               const cell = tr.querySelector('.badge[class*=badge-dlv-]').closest('td');\
               const at = cell.getBoundingClientRect();\
               const others = [...tr.cells].filter(c => c !== cell && c.offsetParent !== null);\
               return at.right <= window.innerWidth && others.every(c => c.getBoundingClientRect().top >= at.top); }})"
        ))
        .await;
    browser.cdp("Emulation.clearDeviceMetricsOverride", json!({})).await;
    found
}

pub async fn pages_read_well_on_a_phone_and_say_things_right(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    // Each failing delivery dies after its three attempts, without the circuit pausing it.
    let app = TestApp::start_with(backend, |s| s.circuit_threshold = 100).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;

    // The empty Endpoints page says every kind there is, from the kinds list.
    browser.goto(&format!("{root}/endpoints")).await;
    let kinds = browser.text("#kinds").await;
    for kind in ["Webhook", "Slack", "Email over SMTP", "Telegram", "Microsoft Teams", "ntfy", "Matrix", "HTTP"] {
        assert!(kinds.contains(kind), "{kind} in: {kinds}");
    }
    assert!(kinds.contains("12 kinds:") && !kinds.contains("(or a Slack message)"), "{kinds}");
    phone_look(&browser, "polish-endpoints-empty").await;

    // A receiver that fails: each delivery is tried, then dead, with an error to show.
    let receiver = Receiver::start(500).await;
    app.endpoint(&token, &format!("{}/a/rather/long/path/for/a/receiver?with=query&and=more", receiver.url), json!({}))
        .await;
    let page = PageServer::start("<html><body><div id='price'>10 EUR</div></body></html>").await;
    let watch = app
        .watch_with_baseline(
            &token,
            json!({"url": page.url, "name": "Pricing of the espresso machine", "selector": "#price"}),
        )
        .await;
    let id = watch["id"].as_str().expect("id").to_owned();
    page.set("<html><body><div id='price'>12 EUR</div></body></html>");
    assert_eq!(app.check(&token, &id).await["outcome"], "changed");
    let dead = eventually("a dead delivery", || async {
        let list = app.ok("/deliveries?status=dead", &token).await;
        list["items"][0]["id"].as_str().map(str::to_owned)
    })
    .await;

    // The watch page: a range whose ends read alike says their times; Checks and Deliveries
    // fit a phone with the status first.
    browser.goto(&format!("{root}/watches/{id}")).await;
    let range = browser.text(".diff-head p").await;
    assert!(!range.contains("just now and just now"), "{range}");
    let (from, to) = (range.split(" and ").next().unwrap_or_default(), range.split(" and ").nth(1).unwrap_or_default());
    assert!(range.contains(" at ") || !from.ends_with(to), "a range of one time is said once: {range}");
    assert!(
        statuses_lead_on_screen(&browser, "table.deliveries tbody tr")
            .await
            .as_array()
            .is_some_and(|rows| { !rows.is_empty() && rows.iter().all(|r| r == true) })
    );
    phone_look(&browser, "polish-watch").await;

    // A failed check's detail takes the whole width instead of a word per line.
    let missing = app
        .watch_with_baseline(
            &token,
            json!({"url": page.url, "name": "Missing", "selector": "#a-selector-that-this-page-does-not-have-anywhere"}),
        )
        .await;
    browser.goto(&format!("{root}/watches/{}", missing["id"].as_str().expect("id"))).await;
    let metrics = json!({"width": PHONE, "height": 844, "deviceScaleFactor": 1, "mobile": true});
    browser.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
    let detail = browser
        .execute(
            "const d = document.querySelector('table.runs tbody td.full').getBoundingClientRect(); return d.width;",
        )
        .await;
    browser.cdp("Emulation.clearDeviceMetricsOverride", json!({})).await;
    assert!(detail.as_f64().is_some_and(|w| w > 300.0), "the detail is as wide as the card: {detail}");
    phone_look(&browser, "polish-watch-failed").await;

    // Endpoints, deliveries, dead letters and one delivery fit a phone too.
    browser.goto(&format!("{root}/endpoints")).await;
    phone_look(&browser, "polish-endpoints").await;
    for (path, name) in [("/deliveries", "polish-deliveries"), ("/dlq", "polish-dead-letters")] {
        browser.goto(&format!("{root}{path}")).await;
        assert!(
            statuses_lead_on_screen(&browser, "table.deliveries tbody tr")
                .await
                .as_array()
                .is_some_and(|rows| { !rows.is_empty() && rows.iter().all(|r| r == true) })
        );
        phone_look(&browser, name).await;
    }
    browser.goto(&format!("{root}/deliveries/{dead}")).await;
    phone_look(&browser, "polish-delivery").await;

    // Muted watches are marked in words, and the State filter finds them.
    let (status, _) =
        app.call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(json!({"muted": true}))).await;
    assert_eq!(status, StatusCode::OK);
    browser.goto(&format!("{root}/")).await;
    let badges = browser
        .execute("return [...document.querySelectorAll('#watch-rows tr')].map(tr => tr.querySelector('.badge-muted')?.textContent ?? null)")
        .await;
    assert_eq!(badges.as_array().map(|b| b.iter().filter(|m| **m == "muted").count()), Some(1), "{badges}");
    browser.wait_for("#state").await.select_by_value("muted").await.expect("the muted state");
    browser.submit_form("form[role='search']").await;
    browser.wait_for_text(".filters", "Clear").await;
    let listed = browser
        .execute("return [...document.querySelectorAll('#watch-rows td.name > a')].map(a => a.textContent)")
        .await;
    assert_eq!(listed, json!(["Pricing of the espresso machine"]), "only the muted watch");
    assert_eq!(
        app.ok("/watches?muted=true", &token).await["items"].as_array().map(Vec::len),
        Some(1),
        "the API's filter"
    );
    phone_look(&browser, "polish-watches-muted").await;
}

/// A page that needs its cookie banner clicked away.
const BANNER: &str = "<!doctype html><html><body><button id=\"accept\" onclick=\"this.remove()\">Accept</button>\
    <p id=\"news\">All systems go</p></body></html>";

pub async fn a_preview_names_the_setting_that_failed_it(backend: Backend) {
    if driftwatch_browser::find_chromium(None, std::env::var_os("PATH").as_deref()).is_none() {
        if std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
            panic!("DRIFTWATCH_REQUIRE_BROWSER=1 but the server finds no Chromium");
        }
        eprintln!("SKIPPED: the server finds no Chromium");
        return;
    }
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let page = PageServer::start(BANNER).await;

    // The second step fails: the error is that step's, not the page's URL's.
    let steps = json!([{"action": "click", "selector": "#accept"}, {"action": "click", "selector": "#nowhere"}]);
    let body =
        json!({"url": page.url, "options": {"fetch": {"engine": "browser", "steps": steps, "timeout_seconds": 5}}});
    let (status, problem) = app.post("/preview", &token, body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "options.fetch.steps[1]", "{problem}");
    assert!(problem["errors"][0]["message"].as_str().is_some_and(|m| m.contains("step 2")), "{problem}");
    // A selector that matches nothing is the selector's.
    let (status, problem) = app.post("/preview", &token, json!({"url": page.url, "selector": "#gone"})).await;
    assert_eq!((status, problem["errors"][0]["field"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some("selector")));

    // An auto preview of a script-filled page says what it did, not what it will do.
    let scripted = PageServer::start(
        "<!doctype html><html><body><div id=\"app\"></div><script>document.getElementById('app')\
         .innerHTML = '<p id=\"price\">10 EUR</p>'</script></body></html>",
    )
    .await;
    let auto = json!({"url": scripted.url, "selector": "#price", "options": {"fetch": {"engine": "auto"}}});
    let (status, preview) = app.post("/preview", &token, auto.clone()).await;
    assert_eq!(status, StatusCode::OK, "{preview}");
    let note = preview["note"].as_str().unwrap_or_default();
    assert!(note.contains("rendered in the browser") && !note.contains("from now on"), "{preview}");
    // A check of the same watch keeps the browser, and says so.
    let watch = app.watch_with_baseline(&token, auto).await;
    let runs = app.ok(&format!("/watches/{}/runs", watch["id"].as_str().expect("id")), &token).await;
    assert!(runs["items"][0]["note"].as_str().is_some_and(|n| n.contains("rendered from now on")), "{runs}");
}

pub async fn the_latest_diff_says_no_change_yet_before_the_first(backend: Backend) {
    let Some(mcp) = McpClient::find() else { return };
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let other = app.account("globex").await;
    let (status, watch) = app.post("/watches", &token, json!({"url": "https://shop.example/", "paused": true})).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let uri = format!("driftwatch://watches/{}/diff/latest", watch["id"].as_str().expect("id"));
    let url = format!("{}/mcp", app.root());

    let ours = mcp.http(&url, &token, &json!([["read_resource", uri]])).await;
    let read: Value =
        serde_json::from_str(ours[0]["text"].as_str().unwrap_or_else(|| panic!("a text: {}", ours[0]))).expect("json");
    assert!(read["detail"].as_str().is_some_and(|d| d.starts_with("no change yet")), "{read}");
    assert_eq!(read["change"], Value::Null);
    // Another account's watch is still not found.
    let theirs = mcp.http(&url, &other, &json!([["read_resource", uri]])).await;
    assert!(theirs[0]["protocol_error"].as_str().is_some_and(|e| e.contains("no resource")), "{}", theirs[0]);
}
