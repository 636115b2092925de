//! Rendered watches in the browser UI, in a real headless Chromium against the real server
//! (which renders pages in Chromium too): the form's Browser section (steps as lines, their
//! errors beside the field, a round trip of every setting), the preview with what the browser
//! saw, the screenshot strip and the visual difference of a change, images served to their
//! owner only. Skipped with one line when no Chromium is installed, unless
//! `DRIFTWATCH_REQUIRE_BROWSER=1` (CI), which fails instead.

use driftwatch_test_support::{Backend, PageServer, eventually};
use serde_json::{Value, json};

use crate::browser::Browser;
use crate::support::TestApp;
use crate::ui::{EMAIL, look, set_up};

/// A status page behind a cookie banner: its content shows once Accept is clicked.
fn banner_page(news: &str, colour: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Status</title></head><body style=\"margin:0;font:20px sans-serif\">\
         <div id=\"banner\" style=\"position:fixed;inset:0;background:#333;color:#fff;padding:2rem\">We use cookies \
         <button id=\"accept\" onclick=\"document.getElementById('banner').remove();\
         document.getElementById('content').hidden = false\">Accept</button></div>\
         <main id=\"content\" hidden style=\"padding:2rem\">\
         <h1 style=\"background:{colour};color:#fff;padding:3rem 2rem;margin:0\">Status board</h1>\
         <p>{news}</p></main></body></html>"
    )
}

/// A browser for the UI and Chromium for the server's renders, or `None` (the test is skipped).
async fn browsers() -> Option<Browser> {
    let browser = Browser::start().await?;
    if driftwatch_browser::find_chromium(None, std::env::var_os("PATH").as_deref()).is_none() {
        if std::env::var("DRIFTWATCH_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
            panic!("DRIFTWATCH_REQUIRE_BROWSER=1 but the server finds no Chromium");
        }
        eprintln!("SKIPPED rendered-watch UI tests: the server finds no Chromium");
        return None;
    }
    Some(browser)
}

/// The value of the form field matching `css`.
async fn value(browser: &Browser, css: &str) -> Value {
    browser.execute(&format!("return document.querySelector({css:?}).value")).await
}

/// Waits until the image matching `css` has loaded (scrolled into view first, for lazy ones);
/// returns its natural width and height.
async fn loaded_image(browser: &Browser, css: &str) -> (u64, u64) {
    let js = format!(
        "const i = document.querySelector({css:?}); if (!i) return null; i.scrollIntoView();\
         return i.complete && i.naturalWidth > 0 ? [i.naturalWidth, i.naturalHeight] : null;"
    );
    eventually(&format!("the image {css} to load"), || async {
        let size = browser.execute(&js).await;
        Some((size[0].as_u64()?, size[1].as_u64()?))
    })
    .await
}

pub async fn a_rendered_watch_shows_what_the_browser_saw(backend: Backend) {
    let Some(browser) = browsers().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let page = PageServer::start(&banner_page("All systems go", "#2e7d32")).await;

    // The form: an unknown step is refused beside the steps, keeping every line as typed.
    browser.goto(&format!("{root}/watches/new")).await;
    browser.fill("#f-url", &page.url).await;
    browser.fill("#f-name", "Status board").await;
    browser.fill("#f-selector", "#content").await;
    browser.click("details#browser summary").await;
    browser.wait_for("#f-engine").await.select_by_value("browser").await.expect("engine");
    browser.wait_for("#f-screenshot").await.select_by_value("viewport").await.expect("screenshot");
    browser.wait_for("#f-compare").await.select_by_value("text_or_visual").await.expect("compare");
    browser.fill("#f-steps", "click #accept\ndance #x").await;
    browser.click("button[value='save']").await;
    let error = browser.wait_for_text("#e-steps", "dance").await;
    assert!(error.starts_with("line 2:"), "{error}");
    assert_eq!(value(&browser, "#f-steps").await, "click #accept\ndance #x");
    assert_eq!(value(&browser, "#f-engine").await, "browser");
    assert_eq!(browser.execute("return document.querySelector('details#browser').open").await, true);
    look(&browser, "watch-browser-error").await;

    // The preview renders the page, runs the step and shows what the browser saw beside the
    // text, saving nothing.
    browser.fill("#f-steps", "click #accept").await;
    browser.click("button[value='preview']").await;
    browser.wait_for_text("#preview-text", "All systems go").await;
    assert!(browser.text("#preview-engine").await.contains("Rendered in the browser"));
    assert_eq!(loaded_image(&browser, "#preview-shot").await, (1280, 900));
    let src = browser.execute("return document.querySelector('#preview-shot').getAttribute('src')").await;
    assert!(src.as_str().is_some_and(|s| s.starts_with("data:image/webp;base64,")), "inline, not stored");
    assert!(app.ok("/watches", &token).await["items"].as_array().is_some_and(Vec::is_empty), "nothing saved");
    look(&browser, "watch-preview-browser").await;

    // Saved: the baseline's screenshot shows in the strip; the run says the browser read it.
    browser.click("button[value='save']").await;
    browser.wait_for(".diff-section").await;
    let id = browser.current_url().await.path().trim_start_matches("/watches/").to_owned();
    eventually("the baseline check", || async {
        let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
        (runs["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
    })
    .await;
    browser.goto(&format!("{root}/watches/{id}")).await;
    assert_eq!(browser.text("#engine").await, "Rendered in the browser.");
    assert!(browser.text(".badge-engine").await.contains("browser"));
    assert_eq!(browser.execute("return document.querySelectorAll('.shot-strip li').length").await, 1);
    assert_eq!(loaded_image(&browser, ".shot-strip img").await, (1280, 900));
    look(&browser, "watch-browser-baseline").await;

    // The page changes how it looks and what it says; Check now shows the text diff beside
    // before, after and the highlighted difference.
    page.set(&banner_page("Maintenance tonight", "#c62828"));
    browser.submit_form(&format!("form[action='/watches/{id}/check']")).await;
    browser.wait_for_text(".notice", "Checked: changed").await;
    assert!(browser.text(".diff.inline .added").await.contains("Maintenance tonight"));
    for image in ["#visual-before", "#visual-after", "#visual-diff"] {
        assert_eq!(loaded_image(&browser, image).await, (1280, 900), "{image}");
    }
    let change = browser.text("#visual-change").await;
    assert!(change.ends_with("% of the pixels changed"), "{change}");
    assert_eq!(browser.execute("return document.querySelectorAll('.shot-strip li').length").await, 2);
    look(&browser, "watch-visual-diff").await;

    // The edit form shows every setting as it was saved; saving it unchanged changes nothing.
    let before = app.ok(&format!("/watches/{id}"), &token).await;
    browser.goto(&format!("{root}/watches/{id}/edit")).await;
    for (field, expected) in [
        ("#f-engine", "browser"),
        ("#f-steps", "click #accept"),
        ("#f-screenshot", "viewport"),
        ("#f-compare", "text_or_visual"),
        ("#f-wait", ""),
    ] {
        assert_eq!(value(&browser, field).await, expected, "{field}");
    }
    browser.click("details#browser summary").await;
    look(&browser, "watch-edit-browser").await;
    browser.click("button[value='save']").await;
    browser.wait_for_text(".notice", "Watch saved").await;
    let after = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(after["options"], before["options"], "the round trip kept every option");
    assert_eq!(after["options"]["fetch"]["steps"], json!([{"action": "click", "selector": "#accept"}]));
}

pub async fn screenshots_show_only_when_kept_and_only_to_their_owner(backend: Backend) {
    let Some(browser) = browsers().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let page = PageServer::start(&banner_page("All systems go", "#2e7d32")).await;
    let fetch =
        json!({"engine": "browser", "steps": [{"action": "click", "selector": "#accept"}], "screenshot": "viewport"});

    // A browser watch not checked yet says it has no screenshot; one without screenshots
    // shows nothing of them.
    let (status, waiting) = app
        .post(
            "/watches",
            &token,
            json!({"url": page.url, "name": "Waiting", "paused": true, "options": {"fetch": fetch}}),
        )
        .await;
    assert!(status.is_success(), "{waiting}");
    browser.goto(&format!("{root}/watches/{}", waiting["id"].as_str().expect("id"))).await;
    assert!(browser.text("#shots-empty").await.starts_with("No screenshot yet"));
    look(&browser, "watch-browser-empty").await;
    let plain = app.watch_with_baseline(&token, json!({"url": page.url, "name": "Plain"})).await;
    browser.goto(&format!("{root}/watches/{}", plain["id"].as_str().expect("id"))).await;
    browser.wait_for(".diff-section").await;
    let none = browser.execute("return document.querySelectorAll('.screenshots, .visual, #engine').length").await;
    assert_eq!(none, 0, "nothing of screenshots or engines for a plain watch");

    // The engine an auto watch settled on; a failed rendered check says what kind of failure.
    let scripted = PageServer::start(
        "<!doctype html><html><body><div id=\"app\"></div><script>document.getElementById('app')\
         .innerHTML = '<p id=\"price\">10 EUR</p>'</script></body></html>",
    )
    .await;
    let auto = app
        .watch_with_baseline(
            &token,
            json!({"url": scripted.url, "selector": "#price", "options": {"fetch": {"engine": "auto"}}}),
        )
        .await;
    browser.goto(&format!("{root}/watches/{}", auto["id"].as_str().expect("id"))).await;
    assert!(browser.text("#engine").await.starts_with("Auto: rendered in the browser since 20"));
    let missing = app
        .watch_with_baseline(
            &token,
            json!({"url": page.url, "selector": "#nope", "options": {"fetch": {"engine": "browser"}}}),
        )
        .await;
    browser.goto(&format!("{root}/watches/{}", missing["id"].as_str().expect("id"))).await;
    assert_eq!(browser.text(".error-kind").await, "selector missing:");
    assert!(browser.text(".badge-run-failed + .badge-engine").await.contains("browser"));
    look(&browser, "watch-browser-failed").await;

    // The owner's screenshot and visual difference, through the session.
    let ours = app
        .watch_with_baseline(&token, json!({"url": page.url, "name": "Ours", "options": {"fetch": fetch, "noise": {"compare": "text_or_visual"}}}))
        .await;
    let ours_id = ours["id"].as_str().expect("id").to_owned();
    page.set(&banner_page("Maintenance tonight", "#c62828"));
    assert_eq!(app.check(&token, &ours_id).await["outcome"], "changed");
    let snapshots = app.ok(&format!("/watches/{ours_id}/snapshots"), &token).await;
    let newest = snapshots["items"][0]["id"].as_str().expect("id").to_owned();
    let first = snapshots["items"][1]["id"].as_str().expect("id").to_owned();
    let cookie = format!("dw_session={}", browser.cookie("dw_session").await.value);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let get = |path: String| http.get(format!("{root}{path}")).header("cookie", &cookie).send();
    let shot = get(format!("/watches/{ours_id}/snapshots/{newest}/screenshot")).await.expect("get");
    assert_eq!(shot.status(), 200);
    assert_eq!(shot.headers()["content-type"], "image/webp");
    assert!(shot.headers()["cache-control"].to_str().expect("text").starts_with("private"));
    let diff = get(format!("/watches/{ours_id}/snapshots/{newest}/visual-diff")).await.expect("get");
    assert_eq!(diff.status(), 200);
    assert_eq!(diff.headers()["content-type"], "image/png");
    assert_eq!(diff.headers()["cache-control"], "private, max-age=86400");
    let png = diff.bytes().await.expect("bytes");
    assert_eq!(driftwatch_visual::dimensions(&png).expect("an image"), (1280, 900));
    // The first snapshot has nothing before it to differ from.
    assert_eq!(get(format!("/watches/{ours_id}/snapshots/{first}/visual-diff")).await.expect("get").status(), 404);
    let anonymous = http.get(format!("{root}/watches/{ours_id}/snapshots/{newest}/screenshot")).send().await;
    assert!(anonymous.expect("get").status().is_redirection(), "to sign-in");

    // Another account's screenshots are the 404 page, by their watch or through ours.
    let bob = app.account("bob").await;
    let theirs = app.watch_with_baseline(&bob, json!({"url": page.url, "options": {"fetch": fetch}})).await;
    let theirs_id = theirs["id"].as_str().expect("id");
    let their_snapshot = app.ok(&format!("/watches/{theirs_id}/snapshots"), &bob).await["items"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for path in [
        format!("/watches/{theirs_id}/snapshots/{their_snapshot}/screenshot"),
        format!("/watches/{theirs_id}/snapshots/{their_snapshot}/visual-diff"),
        format!("/watches/{ours_id}/snapshots/{their_snapshot}/screenshot"),
        format!("/watches/{ours_id}/snapshots/snp_missing/screenshot"),
    ] {
        let response = get(path.clone()).await.expect("get");
        assert_eq!(response.status(), 404, "{path}");
        assert!(response.text().await.expect("body").contains("Not found"), "the UI's 404 page: {path}");
    }
}

/// A shop page whose price and availability are in its JSON-LD and its text.
fn shop_page(price: &str) -> String {
    format!(
        r#"<!doctype html><html><head><title>Espresso machine</title><script type="application/ld+json">
        {{"@context": "https://schema.org", "@type": "Product", "name": "Espresso machine",
          "offers": {{"@type": "Offer", "price": "{price}", "priceCurrency": "EUR",
                      "availability": "https://schema.org/InStock"}}}}
        </script></head><body><h1>Espresso machine</h1><p id="price">{price} €</p></body></html>"#
    )
}

pub async fn values_and_conditions_are_set_shown_back_and_tried_in_the_form(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let page = PageServer::start(&shop_page("89.99")).await;

    // Tracking a price takes a tick and a preset: the amount field shows with its preset only.
    browser.goto(&format!("{root}/watches/new")).await;
    browser.fill("#f-url", &page.url).await;
    browser.fill("#f-name", "Espresso machine").await;
    browser.click("details#values summary").await;
    browser.click("#f-structured_data").await;
    let shown =
        |preset: &str| format!("return getComputedStyle(document.querySelector('[data-preset={preset}]')).display");
    assert_eq!(browser.execute(&shown("price_below")).await, "none");
    browser.wait_for("#f-alert_when").await.select_by_value("price_below").await.expect("preset");
    assert_eq!(browser.execute(&shown("price_below")).await, "block");
    assert_eq!(browser.execute(&shown("price_drop")).await, "none");
    browser.fill("#f-price_below", "50").await;
    look(&browser, "watch-values-form-new").await;
    browser.click("button[value='save']").await;
    browser.wait_for_text(".notice", "Watch added").await;
    let id = browser.current_url().await.path().trim_start_matches("/watches/").to_owned();
    let stored = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(
        stored["options"]["values"],
        json!([{"name": "price", "type": "money", "structured": "price"},
               {"name": "stock", "type": "availability", "structured": "availability"}])
    );
    assert_eq!(
        stored["options"]["conditions"],
        json!({"match": "all", "rules": [{"subject": "price", "op": "<", "operand": 50}]})
    );

    // Some history: 67 does not alert (not below 50), 45 does, 52 does not.
    eventually("the baseline check", || async {
        let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
        (runs["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
    })
    .await;
    for price in ["67.00", "45.00", "52.00"] {
        page.set(&shop_page(price));
        assert_eq!(app.check(&token, &id).await["outcome"], "changed", "{price}");
    }

    // The edit form shows the preset back, not JSON.
    browser.goto(&format!("{root}/watches/{id}/edit")).await;
    assert_eq!(browser.execute("return document.querySelector('details#values').open").await, true);
    assert_eq!(browser.execute("return document.querySelector('#f-structured_data').checked").await, true);
    for (field, expected) in
        [("#f-alert_when", "price_below"), ("#f-price_below", "50"), ("#f-values_json", ""), ("#f-conditions_json", "")]
    {
        assert_eq!(value(&browser, field).await, expected, "{field}");
    }
    assert_eq!(browser.execute(&shown("price_below")).await, "block");
    look(&browser, "watch-values-form-edit").await;

    // A bad regex in Values (JSON) is refused beside the field, naming the value, keeping the text.
    let bad = r##"[{"name": "shown", "type": "money", "selector": "#price", "regex": "([0-9"}]"##;
    browser.fill("#f-values_json", bad).await;
    browser.click("button[value='save']").await;
    let error = browser.wait_for_text("#e-values_json", "regex").await;
    assert_eq!(error, "value 1 (shown): regex: not a regex: unclosed character class (at character 2)");
    assert_eq!(value(&browser, "#f-values_json").await, bad);
    assert_eq!(value(&browser, "#f-alert_when").await, "price_below");
    assert_eq!(
        browser.execute("return document.querySelector('#f-values_json').getAttribute('aria-invalid')").await,
        "true"
    );
    look(&browser, "watch-values-form-error").await;
    // A JSON slip says where it is.
    browser.fill("#f-values_json", "[{\"name\": \"shown\",\n \"type\" \"money\"}]").await;
    browser.click("button[value='save']").await;
    browser.wait_for_text("#e-values_json", "JSON syntax error at line 2, column 9").await;
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["options"], stored["options"], "nothing saved");

    // Tried on past checks: a 20 % drop would have alerted twice where the watch alerted once;
    // a new value cannot be tried on the past, and says so. Nothing is saved.
    browser
        .fill("#f-values_json", r##"[{"name": "shown", "type": "money", "selector": "#price", "currency": "EUR"}]"##)
        .await;
    browser.wait_for("#f-alert_when").await.select_by_value("price_drop").await.expect("preset");
    browser.fill("#f-price_drop", "20").await;
    browser.click("button[value='backtest']").await;
    let summary = browser.wait_for_text("#backtest-summary", "With these settings").await;
    assert_eq!(summary, "With these settings: 2 alerts over the last 4 snapshots instead of 1.");
    assert_eq!(browser.execute("return document.querySelectorAll('#backtest-alerts > li').length").await, 2);
    let alerts = browser.text("#backtest-alerts").await;
    assert!(alerts.contains("+45.00 €") && alerts.contains("-67.00 €"), "{alerts}");
    assert!(alerts.contains("price"), "the reasons: {alerts}");
    let quiet = browser.text("#backtest-quiet").await;
    assert!(quiet.contains("price"), "{quiet}");
    assert!(browser.text("#backtest-caveats").await.contains("The value shown was never read"));
    assert_eq!(browser.text("#backtest-caveats li code").await, "shown");
    assert_eq!(value(&browser, "#f-price_drop").await, "20", "the form keeps what was typed");
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["options"], stored["options"], "nothing saved");
    look(&browser, "watch-backtest").await;

    // Saved, the drop preset reads back too.
    browser.click("button[value='save']").await;
    browser.wait_for_text(".notice", "Watch saved").await;
    let saved = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(
        saved["options"]["conditions"],
        json!({"match": "all", "rules": [{"subject": "price", "op": "changed_by_percent", "operand": -20}]})
    );
    browser.goto(&format!("{root}/watches/{id}/edit")).await;
    assert_eq!(value(&browser, "#f-alert_when").await, "price_drop");
    assert_eq!(value(&browser, "#f-price_drop").await, "20");

    // The watch page: the latest values and the price over time, one dot per snapshot.
    browser.goto(&format!("{root}/watches/{id}")).await;
    browser.wait_for_text("#values-h", "Values").await;
    // The History says why 67 alerted no one (52 did tell: condition.cleared).
    let quiet =
        browser.execute("return [...document.querySelectorAll('.timeline .kept-quiet')].map(e => e.textContent)").await;
    let quiet: Vec<&str> = quiet.as_array().map(|q| q.iter().filter_map(|t| t.as_str()).collect()).unwrap_or_default();
    assert_eq!(quiet, ["No alert: price 67.00 EUR is not below 50"]);
    assert!(browser.text(".chart figcaption").await.starts_with("price over time"));
    // As many dots as the API's series has points (saving the form may have added a check).
    let series = app.ok(&format!("/watches/{id}/values?name=price"), &token).await;
    let points = series["points"].as_array().map_or(0, Vec::len);
    assert!(points >= 4, "{series}");
    assert_eq!(
        browser.execute("return document.querySelector('.chart').querySelectorAll('circle.dot').length").await,
        points
    );
    let label = browser.execute("return document.querySelector('.chart svg').getAttribute('aria-label')").await;
    assert!(label.as_str().is_some_and(|l| l.contains(&format!("{points} readings"))), "{label}");
    look(&browser, "watch-values-chart").await;
}
