//! Expectations as a receiver and a reader see them: a page that should have changed by a
//! deadline and did not is told once (`expectation.missed`) and its next change is
//! `expectation.met`; values that stop meeting an expectation are told once when broken and
//! once when restored; the watch page and the API say where it stands; bad input is refused
//! by field. Time is moved with the test clock file, not waited for.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::pages::{sign_in, user};
use crate::support::TestApp;

/// An app whose clock follows a file holding an offset, and that file.
async fn app_with_clock(backend: Backend) -> (TestApp, tempfile::TempPath) {
    let clock = tempfile::NamedTempFile::new().expect("clock file").into_temp_path();
    std::fs::write(&clock, "+0s").expect("clock");
    let path = clock.to_path_buf();
    let app = TestApp::start_with(backend, |s| s.clock_file = Some(path)).await;
    (app, clock)
}

/// The event types delivered about `watch_id` that are about expectations, oldest first.
async fn expectation_events(app: &TestApp, token: &str, watch_id: &str) -> Vec<String> {
    let list = app.ok(&format!("/deliveries?watch_id={watch_id}"), token).await;
    let mut types: Vec<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|d| d["event_type"].as_str().filter(|t| t.starts_with("expectation.")).map(str::to_owned))
        .collect();
    types.reverse();
    types
}

/// The bodies the receiver got of type `kind`.
fn bodies_of(receiver: &Receiver, kind: &str) -> Vec<Value> {
    receiver.received().iter().map(|r| r.json()).filter(|b| b["type"] == kind).collect()
}

/// Checks `id` now until the delivered expectation events are `want`.
async fn check_until(app: &TestApp, token: &str, id: &str, want: &[&str]) {
    eventually(&format!("{want:?}"), || async {
        app.check(token, id).await;
        (expectation_events(app, token, id).await == want).then_some(())
    })
    .await;
}

/// `change_within: 2d` on an hourly watch: the deadline shows on the page and in the API;
/// three days on, a check raises `expectation.missed` once (a second check past it sends
/// nothing more) and the page says it is overdue; the next change raises `expectation.met`
/// and moves the deadline on.
pub async fn a_missed_expectation_is_told_once_and_met_by_the_next_change(backend: Backend) {
    let (app, clock) = app_with_clock(backend).await;
    let token = user(&app, "acme", "ada@example.com").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let page = PageServer::start("<p>Opening hours: 9 to 5</p>").await;
    let body = json!({"url": page.url, "interval_seconds": 3600, "options": {"expect": {"change_within": "2d"}}});
    let watch = app.watch_with_baseline(&token, body).await;
    let id = watch["id"].as_str().expect("id");
    let view = app.ok(&format!("/watches/{id}"), &token).await;
    let expectation = &view["expectation"];
    assert_eq!((&expectation["kind"], &expectation["state"]), (&json!("change"), &json!("waiting")), "{view}");
    assert_eq!(expectation["rule"], "a change within 2d", "{view}");
    let deadline = expectation["deadline"].as_str().expect("a deadline").to_owned();
    let created = chrono::DateTime::parse_from_rfc3339(view["created_at"].as_str().expect("created")).expect("time");
    let due = chrono::DateTime::parse_from_rfc3339(&deadline).expect("time");
    assert!((due - created - chrono::TimeDelta::days(2)).num_seconds().abs() < 60, "{view}");
    // The next check is no later than the deadline.
    assert!(view["next_run_at"].as_str().expect("next") <= deadline.as_str(), "{view}");
    let session = sign_in(&app, "ada@example.com").await;
    let html = session.get(&format!("/watches/{id}")).await.text().await.expect("page");
    assert!(html.contains(r#"id="expectation""#) && html.contains("Expected to change by"), "{html}");

    // Two days and a bit on, the page fails: a failed check is neither a change nor a miss.
    std::fs::write(&clock, "+50h").expect("clock");
    page.set_status(500);
    eventually("a failed check past the deadline", || async {
        let run = app.check(&token, id).await;
        let at = chrono::DateTime::parse_from_rfc3339(run["started_at"].as_str().expect("started")).expect("time");
        (run["outcome"] == "failed" && at > due).then_some(())
    })
    .await;
    assert!(expectation_events(&app, &token, id).await.is_empty(), "a failed check tells nothing");

    // It answers again, unchanged: one miss, told once.
    page.set_status(200);
    check_until(&app, &token, id, &["expectation.missed"]).await;
    let got = receiver.wait_for(1).await;
    let missed = got.iter().map(|r| r.json()).find(|b| b["type"] == "expectation.missed").expect("the miss");
    let data = &missed["data"]["expectation"];
    assert_eq!((&data["kind"], &data["holds"]), (&json!("change"), &json!(false)), "{missed}");
    let told = chrono::DateTime::parse_from_rfc3339(data["deadline"].as_str().expect("deadline")).expect("time");
    assert!((told - due).num_seconds().abs() <= 1, "the deadline that passed: {missed}");
    assert!(data["reasons"][0].as_str().is_some_and(|r| r.contains("did not change")), "{missed}");
    app.check(&token, id).await;
    std::fs::write(&clock, "+60h").expect("clock");
    app.check(&token, id).await;
    assert_eq!(expectation_events(&app, &token, id).await, ["expectation.missed"], "told once");
    let view = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(view["expectation"]["state"], "missed", "{view}");
    assert!(view["expectation"]["missed_at"].is_string(), "{view}");
    let html = session.get(&format!("/watches/{id}")).await.text().await.expect("page");
    assert!(html.contains("Overdue: expected a change within 2d"), "{html}");
    let list = session.get("/").await.text().await.expect("the list");
    assert!(list.contains("badge-overdue"), "the list's badge says so: {list}");

    // The page changes: met, and the deadline moves on from the change.
    page.set("<p>Opening hours: 10 to 6</p>");
    check_until(&app, &token, id, &["expectation.missed", "expectation.met"]).await;
    let met = eventually("the met webhook", || async { bodies_of(&receiver, "expectation.met").pop() }).await;
    assert_eq!(met["data"]["expectation"]["holds"], true, "{met}");
    assert!(met["data"]["expectation"]["last_change"].is_string(), "{met}");
    let view = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(view["expectation"]["state"], "waiting", "{view}");
    assert!(view["expectation"]["deadline"].as_str().is_some_and(|d| d > deadline.as_str()), "{view}");
    assert_eq!(bodies_of(&receiver, "expectation.missed").len(), 1);
}

/// A cron deadline in a zone is shown in that zone.
pub async fn an_expectation_deadline_shows_in_its_own_zone(backend: Backend) {
    let (app, _clock) = app_with_clock(backend).await;
    let token = user(&app, "acme", "ada@example.com").await;
    let page = PageServer::start("<p>Menu of the week</p>").await;
    let deadline = json!({"cron": "0 10 * * MON", "time_zone": "Europe/Berlin"});
    let body = json!({"url": page.url, "interval_seconds": 3600, "options": {"expect": {"deadline": deadline}}});
    let watch = app.watch_with_baseline(&token, body).await;
    let id = watch["id"].as_str().expect("id");
    let view = app.ok(&format!("/watches/{id}"), &token).await;
    let due = view["expectation"]["deadline"].as_str().expect("a deadline");
    // Monday 10:00 in Berlin, whichever offset Berlin has that day.
    let due = chrono::DateTime::parse_from_rfc3339(due).expect("RFC 3339").with_timezone(&chrono_tz::Europe::Berlin);
    assert_eq!(due.format("%a %H:%M:%S").to_string(), "Mon 10:00:00", "{view}");
    let session = sign_in(&app, "ada@example.com").await;
    let html = session.get(&format!("/watches/{id}")).await.text().await.expect("page");
    assert!(html.contains("10:00 (Europe/Berlin)") && html.contains("Expected to change by Mon"), "{html}");
}

/// A shop page whose price is in its text.
fn shop(price: &str) -> String {
    format!("<html><body><h1>Espresso machine</h1><p id=price>{price} EUR</p></body></html>")
}

/// "The price must stay under 50": broken once (`expectation.missed`), not again while it
/// stays broken, restored once (`expectation.met`).
pub async fn a_value_expectation_is_told_when_broken_and_restored(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    app.endpoint(&token, &receiver.url, json!({})).await;
    let page = PageServer::start(&shop("45.00")).await;
    let values = json!([{"name": "price", "selector": "#price", "type": "money"}]);
    let expect = json!({"values": {"rules": [{"subject": "price", "op": "<", "operand": 50}]}});
    let body = json!({"url": page.url, "options": {"values": values, "expect": expect}});
    let watch = app.watch_with_baseline(&token, body).await;
    let id = watch["id"].as_str().expect("id");
    let view = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!((&view["expectation"]["kind"], &view["expectation"]["state"]), (&json!("values"), &json!("holds")));
    assert!(expectation_events(&app, &token, id).await.is_empty(), "holding from the start is no news");

    for price in ["67.00", "70.00"] {
        page.set(&shop(price));
        app.check(&token, id).await;
    }
    app.check(&token, id).await;
    assert_eq!(expectation_events(&app, &token, id).await, ["expectation.missed"]);
    let view = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!(view["expectation"]["state"], "broken", "{view}");
    page.set(&shop("44.00"));
    app.check(&token, id).await;
    assert_eq!(expectation_events(&app, &token, id).await, ["expectation.missed", "expectation.met"]);
    let missed = eventually("the miss", || async { bodies_of(&receiver, "expectation.missed").pop() }).await;
    let data = &missed["data"]["expectation"];
    assert_eq!((&data["kind"], &data["holds"]), (&json!("values"), &json!(false)), "{missed}");
    assert!(!data["reasons"].as_array().expect("reasons").is_empty(), "{missed}");
    let met = eventually("the met", || async { bodies_of(&receiver, "expectation.met").pop() }).await;
    assert_eq!(met["data"]["expectation"]["holds"], true, "{met}");

    // The backtest finds the same over the stored readings.
    let options = json!({"values": values, "expect": expect});
    let (status, found) = app.post(&format!("/watches/{id}/backtest"), &token, json!({"options": options})).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    let told: Vec<&str> =
        found["expectations"].as_array().expect("expectations").iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(told, ["expectation.missed", "expectation.met"], "{found}");
}

/// Bad expectations are refused with 422, naming the field.
pub async fn bad_expectations_are_refused_by_field(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let page = PageServer::start("<p>hi</p>").await;
    let cases = [
        (json!({"interval_seconds": 7200, "expect": {"change_within": "1h"}}), "options.expect.change_within"),
        (json!({"expect": {"change_within": "soon"}}), "options.expect.change_within"),
        (
            json!({"expect": {"deadline": {"cron": "0 10 * * MON", "time_zone": "Mars/Olympus"}}}),
            "options.expect.deadline.time_zone",
        ),
        (json!({"expect": {"deadline": {"cron": "0 0 30 2 *"}}}), "options.expect.deadline.cron"),
        (json!({"expect": {"change_within": "7d", "deadline": {"cron": "0 10 * * MON"}}}), "options.expect.deadline"),
        (
            json!({"expect": {"values": {"rules": [{"subject": "price", "op": "<", "operand": 5}]}}}),
            "options.expect.values",
        ),
    ];
    for (case, field) in cases {
        let interval = case.get("interval_seconds").cloned().unwrap_or(json!(3600));
        let options = json!({"expect": case["expect"]});
        let body = json!({"url": page.url, "interval_seconds": interval, "options": options});
        let (status, problem) = app.post("/watches", &token, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{case}: {problem}");
        let named = problem["errors"][0]["field"].as_str().unwrap_or_default();
        assert!(named.starts_with(field), "{case}: {problem}");
    }
    // A schedule changed under an expectation is read against it too.
    let body = json!({"url": page.url, "interval_seconds": 3600, "options": {"expect": {"change_within": "2h"}}});
    let (status, watch) = app.post("/watches", &token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    let (status, problem) = app
        .call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(json!({"interval_seconds": 86400})))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(problem["errors"][0]["field"], "options.expect.change_within", "{problem}");
}
