//! The browser UI in a real headless Chromium against the real server, a page server and a
//! webhook receiver on loopback: first-run setup, sign-in, watches, diffs, changes and the
//! Atom feed, endpoints and deliveries, tokens, bulk actions and sign-out; CSRF, ownership and
//! cookie flags; axe-core on each main page; screenshots under `target/screenshots/`.

use crate::browser::Browser;
use crate::support::{Backend, PageServer, TestApp, eventually};

const EMAIL: &str = "ada@example.com";
const PASSWORD: &str = "correct horse battery";

/// Sets up the first account through `/setup` and lands signed in on the watches page.
async fn set_up(browser: &Browser, app: &TestApp) {
    browser.goto(&app.setup_url()).await;
    browser.fill("#f-account", "Acme").await;
    browser.fill("#f-email", EMAIL).await;
    browser.fill("#f-password", PASSWORD).await;
    browser.fill("#f-password_confirm", PASSWORD).await;
    browser.submit_form("form[action='/setup']").await;
    browser.wait_for("h1").await;
    assert_eq!(browser.text("h1").await, "Watches");
}

/// Checks the page for serious or critical axe-core violations and screenshots it.
async fn look(browser: &Browser, name: &str) {
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
    assert!(browser.text("#e-email").await.contains("email address"));
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
    assert_eq!(browser.text("h1").await, "Watches");
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
    eventually("the baseline check", || async {
        let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
        (runs["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
    })
    .await;

    browser.goto(&format!("{root}/watches/{id}")).await;
    assert!(browser.text(".diff-section").await.contains("Plan Pro: 10 EUR per month"), "the baseline");
    // Check now from the page: unchanged.
    browser.submit_form(&format!("form[action='/watches/{id}/check']")).await;
    assert!(browser.text(".notice").await.contains("Checked: unchanged"), "{}", browser.text(".notice").await);

    // The page changes and a check in the background finds it.
    page.set("<html><body><div id='price'>Plan Pro: 12 EUR per month</div><p>Other</p></body></html>");
    let (status, run) = app.post(&format!("/watches/{id}/check"), &token, serde_json::json!({})).await;
    assert!(status.is_success(), "{run}");
    assert_eq!(run["outcome"], "changed", "{run}");

    // The watches page marks it unseen until it is looked at.
    browser.goto(&format!("{root}/")).await;
    assert!(browser.text("tr.unseen").await.contains("Pricing"));
    look(&browser, "watches").await;

    browser.goto(&format!("{root}/watches/{id}")).await;
    assert_eq!(browser.text(".diff.inline ins").await, "12");
    assert_eq!(browser.text(".diff.inline del").await, "10");
    look(&browser, "watch-diff-inline").await;
    browser.click("a[href$='view=side']").await;
    browser.wait_for(".diff.side").await;
    assert_eq!(browser.text(".diff.side ins").await, "12");
    assert_eq!(browser.text(".diff.side del").await, "10");
    look(&browser, "watch-diff-side").await;

    browser.goto(&format!("{root}/")).await;
    let unseen = browser.execute("return document.querySelectorAll('tr.unseen').length").await;
    assert_eq!(unseen, 0, "looked at now");

    browser.goto(&format!("{root}/changes")).await;
    assert!(browser.text(".changes").await.contains("Pricing"));
    look(&browser, "changes").await;
}
