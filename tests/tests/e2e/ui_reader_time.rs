//! Digests and quiet hours in the browser: an endpoint set to a daily digest from its form, its
//! page saying when the digest goes and what waits in it, a delivery held by quiet hours with
//! its release time, and the account's quiet hours with an error beside its field. axe-core and
//! screenshots on each page.

use chrono::{TimeDelta, Utc};
use driftwatch_test_support::{Backend, PageServer, Receiver};
use serde_json::json;

use crate::browser::Browser;
use crate::support::TestApp;
use crate::ui::{EMAIL, look, set_up};

pub async fn digests_and_quiet_hours_in_the_browser(backend: Backend) {
    let Some(browser) = Browser::start().await else { return };
    let app = TestApp::start(backend).await;
    let root = app.root();
    set_up(&browser, &app).await;
    let token = app.token_for_user(EMAIL).await;
    let receiver = Receiver::start(200).await;

    // A daily digest, chosen on the form.
    browser.goto(&format!("{root}/endpoints/new")).await;
    browser.fill("#f-url", &receiver.url).await;
    browser.click("details.timing > summary").await;
    browser.click("input[name='delivery_mode'][value='digest']").await;
    browser.fill("#f-digest_schedule", "0 8 * * *").await;
    browser.fill("#f-digest_zone", "Europe/Berlin").await;
    look(&browser, "endpoint-new-digest").await;
    browser.submit_form("form[action='/endpoints/new']").await;
    browser.wait_for("#secret").await;
    let digest_id = app.ok("/endpoints", &token).await["items"][0]["id"].as_str().expect("id").to_owned();

    // Quiet hours around now on a second endpoint.
    let now = Utc::now();
    let hhmm = |t: chrono::DateTime<Utc>| t.format("%H:%M").to_string();
    let quiet = json!({"from": hhmm(now - TimeDelta::hours(1)), "to": hhmm(now + TimeDelta::hours(2))});
    let (held_id, _) =
        app.endpoint(&token, &receiver.url, json!({"quiet_hours": quiet, "description": "Night shift"})).await;

    let page = PageServer::start("<p>Lamp: 10 EUR</p>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": page.url, "name": "Lamp"})).await;
    let watch_id = watch["id"].as_str().expect("id");
    for text in ["<p>Lamp: 12 EUR</p>", "<p>Lamp: 9 EUR</p>"] {
        page.set(text);
        app.check(&token, watch_id).await;
    }

    browser.goto(&format!("{root}/endpoints/{digest_id}")).await;
    let next = browser.text("#next-digest").await;
    let at = app.ok(&format!("/endpoints/{digest_id}/digest"), &token).await["next_at"].clone();
    let at = chrono::DateTime::parse_from_rfc3339(at.as_str().expect("next_at")).expect("RFC 3339");
    let berlin = at.with_timezone(&chrono_tz::Europe::Berlin);
    assert_eq!(berlin.format("%H:%M").to_string(), "08:00", "08:00 in Berlin");
    let shown = at.with_timezone(&chrono::Utc).format("%Y-%m-%d %H:%M:%S UTC").to_string();
    assert!(next.starts_with("in ") && next.contains(&shown), "when the digest goes, in the viewer's zone: {next}");
    assert!(browser.text("#digest-waiting").await.starts_with("2 events"));
    assert!(browser.text("ul.waiting").await.contains("Lamp"));
    look(&browser, "endpoint-digest").await;

    browser.goto(&format!("{root}/endpoints/{held_id}")).await;
    assert!(browser.text("#timing-held").await.starts_with("2 deliveries"));
    look(&browser, "endpoint-held").await;
    browser.goto(&format!("{root}/deliveries?endpoint_id={held_id}")).await;
    assert!(browser.text("main").await.contains("held by quiet hours"));
    look(&browser, "deliveries-held").await;

    // The account's quiet hours: an error stands beside its field, what was typed is kept.
    browser.goto(&format!("{root}/account")).await;
    browser.click("#quiet input[name='quiet']").await;
    browser.fill("#f-quiet_from", "09:00").await;
    browser.fill("#f-quiet_to", "09:00").await;
    browser.submit_form("form[action='/account/quiet-hours']").await;
    browser.wait_for_text("#e-quiet_to", "whole week").await;
    look(&browser, "account-quiet-error").await;
    browser.fill("#f-quiet_to", "07:00").await;
    browser.submit_form("form[action='/account/quiet-hours']").await;
    browser.wait_for_text(".notice", "Quiet hours saved").await;
    assert_eq!(app.ok("/account/quiet_hours", &token).await["quiet_hours"]["to"], "07:00");
}
