//! Alerts on the reader's time: digests gathered per endpoint and sent once per period per kind
//! (through restarts and, on PostgreSQL, with two nodes racing to close a period), urgent types
//! that skip them, quiet hours that hold deliveries until they end, and the bad input each
//! refuses. Days pass by moving the clock file (`DRIFTWATCH_CLOCK_FILE`), never by sleeping.

use std::path::PathBuf;
use std::time::Duration;

use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use driftwatch::{App, HumanDuration, Roles, Settings};
use driftwatch_test_support::{Backend, ChatServer, PageServer, Provider, Receiver, SmtpServer, TestDb, eventually};
use serde_json::{Value, json};

use crate::support::{TestApp, test_settings};

const WAIT: Duration = Duration::from_secs(20);

/// A clock file every node of a test reads: moving it moves the application's time.
pub struct ClockFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl ClockFile {
    pub fn new() -> ClockFile {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("clock");
        std::fs::write(&path, "0").expect("clock file");
        ClockFile { _dir: dir, path }
    }

    /// Moves the application's clock just past `at`.
    pub fn move_past(&self, at: DateTime<Utc>) {
        let offset = (at - Utc::now()).num_milliseconds().max(0) + 1_500;
        std::fs::write(&self.path, format!("+{offset}ms")).expect("clock file");
    }
}

/// Test settings on `db` with the clock file and a short poll.
fn settings(db: &TestDb, clock: &ClockFile) -> Settings {
    let mut s = test_settings(db);
    s.clock_file = Some(clock.path.clone());
    s.poll_interval = HumanDuration(Duration::from_millis(200));
    s
}

fn time(value: &Value) -> DateTime<Utc> {
    value.as_str().and_then(|t| DateTime::parse_from_rfc3339(t).ok()).expect("an RFC 3339 time").with_timezone(&Utc)
}

/// The endpoint's open digest period.
async fn digest(app: &TestApp, token: &str, endpoint: &str) -> Value {
    app.ok(&format!("/endpoints/{endpoint}/digest"), token).await
}

/// A shop page whose price the `price_below` preset reads.
fn shop(price: &str) -> String {
    format!(
        r#"<html><head><script type="application/ld+json">
        {{"@context": "https://schema.org", "@type": "Product", "name": "Kettle",
          "offers": {{"@type": "Offer", "price": "{price}", "priceCurrency": "EUR"}}}}
        </script></head><body><p>{price} €</p></body></html>"#
    )
}

/// Four changes on three watches wait for a daily digest while `condition.met` (urgent) goes at
/// once; at 08:00 Berlin each kind gets one message carrying all four (the webhook an array of
/// the events, the email a section per watch, the chat a line per watch); the gathered
/// deliveries point at their digest. Across a restart the next period sends one digest of its
/// own; an empty period sends nothing. On PostgreSQL a second node races for every period.
pub async fn a_daily_digest_gathers_changes_into_one_message_per_kind(backend: Backend) {
    let clock = ClockFile::new();
    let db = TestDb::new(backend);
    let settings = settings(&db, &clock);
    let app = TestApp::from_app(App::start(&settings, Roles { web: true, background: true }).await.expect("starts"));
    let second = match backend {
        Backend::Postgres => {
            let s = Settings { node_id: Some("second".into()), ..settings.clone() };
            Some(App::start(&s, Roles { web: false, background: true }).await.expect("a second node starts"))
        }
        Backend::Sqlite => None,
    };
    let token = crate::pages::user(&app, "acme", "ada@example.com").await;
    let receiver = Receiver::start(200).await;
    let smtp = SmtpServer::start().await;
    let chat = ChatServer::start().await;
    let daily = json!({"mode": "digest", "cron": "0 8 * * *", "time_zone": "Europe/Berlin"});
    let (hook, _) = app.endpoint(&token, &receiver.url, json!({"delivery": daily})).await;
    let (mail, _) = app
        .endpoint(
            &token,
            &format!("smtp://127.0.0.1:{}", smtp.port()),
            json!({"kind": "email", "delivery": daily,
                   "settings": {"from": "dw@example.com", "to": ["ops@example.com"], "security": "plain"}}),
        )
        .await;
    let (discord, _) =
        app.endpoint(&token, &chat.url("/api/webhooks/1/key"), json!({"kind": "discord", "delivery": daily})).await;
    let opened = digest(&app, &token, &hook).await;
    assert_eq!(opened["gathering"], true, "{opened}");
    let first_end = time(&opened["next_at"]);
    let berlin = first_end.with_timezone(&chrono_tz::Europe::Berlin);
    assert_eq!(berlin.format("%H:%M:%S").to_string(), "08:00:00", "08:00 in Berlin: {opened}");

    let pages: Vec<(&str, PageServer)> = vec![
        ("Lamp", PageServer::start("<p>Lamp: 10 EUR</p>").await),
        ("Desk", PageServer::start("<p>Desk: 200 EUR</p>").await),
        ("Chair", PageServer::start("<p>Chair: 80 EUR</p>").await),
    ];
    let mut ids = Vec::new();
    for (name, page) in &pages {
        let watch = app.watch_with_baseline(&token, json!({"url": page.url, "name": name})).await;
        ids.push(watch["id"].as_str().expect("id").to_owned());
    }
    for (i, text) in [
        (0, "<p>Lamp: 12 EUR</p>"),
        (1, "<p>Desk: 180 EUR</p>"),
        (0, "<p>Lamp: 9 EUR</p>"),
        (2, "<p>Chair: 70 EUR</p>"),
    ] {
        pages[i].1.set(text);
        assert_eq!(app.check(&token, &ids[i]).await["outcome"], "changed");
    }
    let waiting = digest(&app, &token, &hook).await;
    assert_eq!(waiting["waiting"], 4, "{waiting}");
    assert!(waiting["events"].as_array().is_some_and(|e| e.iter().all(|d| d["status"] == "gathering")), "{waiting}");
    let ada = crate::pages::sign_in(&app, "ada@example.com").await;
    let html = ada.get(&format!("/endpoints/{hook}")).await.text().await.expect("page");
    assert!(html.contains("Next digest") && html.contains("4 events"), "the page says when and what waits: {html}");
    for name in ["Lamp", "Desk", "Chair"] {
        assert!(html.contains(name), "{name} waits in the digest: {html}");
    }

    // An urgent type skips the digest: the price crosses below 50 and condition.met goes now.
    let kettle = PageServer::start(&shop("67.00")).await;
    let conditions = json!({"preset": "price_below", "amount": 50});
    let watch =
        app.watch_with_baseline(&token, json!({"url": kettle.url, "options": {"conditions": conditions}})).await;
    kettle.set(&shop("45.00"));
    app.check(&token, watch["id"].as_str().expect("id")).await;
    let urgent = receiver.wait_for(1).await;
    assert_eq!(urgent[0].json()["type"], "condition.met", "urgent events go at once");
    // Each kind got that one message and nothing of the four changes.
    assert!(smtp.wait_for(1, WAIT).await[0].parsed().subject.contains("conditions met"));
    chat.wait_for(Provider::Discord, 1, WAIT).await;
    assert_eq!((smtp.messages().len(), chat.received().len(), receiver.received().len()), (1, 1, 1));

    // 08:00 in Berlin: one digest per kind.
    clock.move_past(first_end);
    let got = receiver.wait_for(2).await;
    let types: Vec<Value> = got.iter().map(|r| r.json()["type"].clone()).collect();
    assert_eq!(types, ["condition.met", "digest"], "{types:?}");
    let body = got[1].json();
    assert_eq!(body["data"]["count"], 4, "{body}");
    assert_eq!(body["data"]["omitted"], 0, "{body}");
    let events = body["data"]["events"].as_array().expect("events");
    assert_eq!(events.len(), 4);
    assert!(events.iter().all(|e| e["type"] == "change.detected"), "{body}");
    let names: Vec<&str> = events.iter().filter_map(|e| e["data"]["watch"]["name"].as_str()).collect();
    assert_eq!(names, ["Lamp", "Desk", "Lamp", "Chair"], "oldest first");
    assert_eq!(time(&body["data"]["period"]["end"]), first_end);
    let email = smtp.wait_for(2, WAIT).await[1].parsed();
    assert!(email.subject.contains("digest"), "{}", email.subject);
    let text = email.text.unwrap_or_default();
    for name in ["Lamp", "Desk", "Chair"] {
        assert!(text.contains(name), "the email has a section for {name}: {text}");
    }
    let posts = chat.wait_for(Provider::Discord, 2, WAIT).await;
    let message = String::from_utf8_lossy(&posts[1].body).to_string();
    for name in ["Lamp", "Desk", "Chair"] {
        assert!(message.contains(name), "the chat message has a line for {name}: {message}");
    }
    let closed = digest(&app, &token, &hook).await;
    assert_eq!(closed["waiting"], 0, "{closed}");
    let second_end = time(&closed["next_at"]);
    assert_eq!((second_end - first_end).num_hours(), 24, "{closed}");
    let digest_delivery = got[1].header("webhook-id").to_owned();
    let gathered = app.ok(&format!("/deliveries?endpoint_id={hook}&watch_id={}", ids[0]), &token).await;
    for d in gathered["items"].as_array().expect("items") {
        assert_eq!((d["status"].as_str(), d["digest_id"].as_str()), (Some("digested"), Some(digest_delivery.as_str())));
    }
    for endpoint in [&mail, &discord] {
        assert_eq!(digest(&app, &token, endpoint).await["waiting"], 0);
    }

    // The next period: one change, a restart in the middle, one digest of its own.
    pages[1].1.set("<p>Desk: 150 EUR</p>");
    assert_eq!(app.check(&token, &ids[1]).await["outcome"], "changed");
    let app = restart(app, &settings).await;
    assert_eq!(digest(&app, &token, &hook).await["waiting"], 1, "what was gathered survives a restart");
    clock.move_past(second_end);
    let got = receiver.wait_for(3).await;
    let body = got[2].json();
    assert_eq!((body["type"].as_str(), body["data"]["count"].as_u64()), (Some("digest"), Some(1)), "{body}");
    assert_eq!(time(&body["data"]["period"]["start"]), first_end, "periods follow each other");

    // An empty period sends nothing: the period moves on, no message.
    let third_end = time(&digest(&app, &token, &hook).await["next_at"]);
    clock.move_past(third_end);
    eventually("the empty period closes", || async {
        (time(&digest(&app, &token, &hook).await["next_at"]) > third_end).then_some(())
    })
    .await;
    assert_eq!(receiver.received().len(), 3, "no digest for an empty period");
    let digests: Vec<String> = receiver
        .received()
        .iter()
        .filter(|r| r.json()["type"] == "digest")
        .map(|r| r.header("webhook-id").to_owned())
        .collect();
    assert_eq!(digests.len(), 2, "one digest per period, whichever node closed it");
    assert_ne!(digests[0], digests[1]);
    if let Some(node) = second {
        node.shutdown().await;
    }
}

/// Stops the application and starts it again on the same database and clock.
async fn restart(app: TestApp, settings: &Settings) -> TestApp {
    app.into_app().shutdown().await;
    let mut s = settings.clone();
    s.listen = "127.0.0.1:0".into();
    TestApp::from_app(App::start(&s, Roles { web: true, background: true }).await.expect("restarts"))
}

/// Quiet hours around now hold a change's delivery until they end, say so on the delivery, and
/// release it when the clock passes their end; the account's hours hold an endpoint without
/// its own; an endpoint's own replace them.
pub async fn quiet_hours_hold_deliveries_until_they_end(backend: Backend) {
    let clock = ClockFile::new();
    let db = TestDb::new(backend);
    let app = TestApp::from_app(
        App::start(&settings(&db, &clock), Roles { web: true, background: true }).await.expect("starts"),
    );
    let token = crate::pages::user(&app, "acme", "ada@example.com").await;
    let now = Utc::now();
    let hhmm = |t: DateTime<Utc>| t.format("%H:%M").to_string();
    let (from, to) = (hhmm(now - chrono::TimeDelta::hours(1)), hhmm(now + chrono::TimeDelta::hours(2)));
    let own = Receiver::start(200).await;
    let (own_id, _) =
        app.endpoint(&token, &own.url, json!({"quiet_hours": {"from": from, "to": to, "time_zone": "UTC"}})).await;
    // The account's hours cover now too; an endpoint without its own keeps them.
    let (status, set) = app
        .call(
            reqwest::Method::PUT,
            "/account/quiet_hours",
            &token,
            Some(json!({"quiet_hours": {"from": from, "to": to}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{set}");
    let follows = Receiver::start(200).await;
    let (follows_id, _) = app.endpoint(&token, &follows.url, json!({})).await;
    // The account's hours, overridden by hours that are over.
    let (off_from, off_to) = (hhmm(now + chrono::TimeDelta::hours(3)), hhmm(now + chrono::TimeDelta::hours(4)));
    let free = Receiver::start(200).await;
    app.endpoint(&token, &free.url, json!({"quiet_hours": {"from": off_from, "to": off_to}})).await;

    let page = PageServer::start("<p>v1</p>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": page.url, "name": "Night page"})).await;
    page.set("<p>v2</p>");
    app.check(&token, watch["id"].as_str().expect("id")).await;
    free.wait_for(1).await;
    let release = {
        let list = app.ok(&format!("/deliveries?endpoint_id={own_id}"), &token).await;
        let held = &list["items"][0];
        assert_eq!((held["status"].as_str(), held["held"].as_str()), (Some("queued"), Some("quiet_hours")), "{held}");
        time(&held["next_attempt_at"])
    };
    assert_eq!(hhmm(release), to, "released when the hours end");
    let followed = app.ok(&format!("/deliveries?endpoint_id={follows_id}"), &token).await;
    assert_eq!(followed["items"][0]["held"], "quiet_hours", "the account's hours hold it: {followed}");
    // The endpoint's page says so, beside the release time.
    let ada = crate::pages::sign_in(&app, "ada@example.com").await;
    let html = ada.get(&format!("/endpoints/{own_id}")).await.text().await.expect("page");
    assert!(html.contains("Held now") && html.contains("1 delivery"), "{html}");
    let rows = ada.get(&format!("/deliveries?endpoint_id={own_id}")).await.text().await.expect("page");
    assert!(rows.contains("held by quiet hours, goes"), "{rows}");
    assert!(own.received().is_empty() && follows.received().is_empty(), "nothing went out in quiet hours");

    clock.move_past(release);
    assert_eq!(own.wait_for(1).await[0].json()["type"], "change.detected");
    follows.wait_for(1).await;
    let id = app.ok(&format!("/deliveries?endpoint_id={own_id}"), &token).await["items"][0]["id"].clone();
    let sent = app.wait_delivery(&token, id.as_str().expect("id"), "sent").await;
    assert_eq!(sent["held"], Value::Null, "a sent delivery is held no more: {sent}");
}

/// What a digest or quiet hours cannot be is refused with the field named, in the API and the
/// form alike, and nothing is stored.
pub async fn bad_timing_is_refused_by_name(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = crate::pages::user(&app, "acme", "ada@example.com").await;
    let cases = [
        (json!({"delivery": {"mode": "digest", "cron": "* * * * * *"}}), "delivery.cron"),
        (json!({"delivery": {"mode": "digest", "cron": "0 0 30 2 *"}}), "delivery.cron"),
        (
            json!({"delivery": {"mode": "digest", "cron": "0 8 * * *", "time_zone": "Mars/Olympus"}}),
            "delivery.time_zone",
        ),
        (json!({"delivery": {"mode": "digest", "every": "1m"}}), "delivery.every"),
        (json!({"quiet_hours": {"from": "00:00", "to": "00:00"}}), "quiet_hours.to"),
        (
            json!({"quiet_hours": {"from": "22:00", "to": "07:00", "time_zone": "Nowhere/City"}}),
            "quiet_hours.time_zone",
        ),
    ];
    for (extra, field) in cases {
        let mut body = json!({"url": "http://127.0.0.1:9/hook"});
        body.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        let (status, problem) = app.post("/endpoints", &token, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert!(
            problem["errors"].as_array().is_some_and(|e| e.iter().any(|e| e["field"] == field)),
            "{field}: {problem}"
        );
    }
    let (status, problem) = app
        .call(
            reqwest::Method::PUT,
            "/account/quiet_hours",
            &token,
            Some(json!({"quiet_hours": {"from": "07:00", "to": "07:00"}})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(app.ok("/account/quiet_hours", &token).await["quiet_hours"], Value::Null, "nothing stored");
    assert_eq!(app.ok("/endpoints", &token).await["items"], json!([]), "nothing stored");

    // The form: the error beside its field, what was typed kept.
    let ada = crate::pages::sign_in(&app, "ada@example.com").await;
    let form = [
        ("kind", "webhook"),
        ("url", "http://127.0.0.1:9/hook"),
        ("delivery_mode", "digest"),
        ("digest_schedule", "* * * * * *"),
        ("digest_zone", "UTC"),
    ];
    let response = ada.submit("/endpoints/new", &form).await;
    assert_eq!(response.status(), 422);
    let html = response.text().await.expect("page");
    assert!(html.contains(r#"id="e-digest_schedule""#), "the error stands beside the period: {html}");
    assert!(html.contains(r#"value="* * * * * *""#), "what was typed is kept");
    let response =
        ada.submit("/account/quiet-hours", &[("quiet", "on"), ("quiet_from", "09:00"), ("quiet_to", "09:00")]).await;
    assert_eq!(response.status(), 422);
    assert!(response.text().await.expect("page").contains(r#"id="e-quiet_to""#));
    assert_eq!(app.ok("/endpoints", &token).await["items"], json!([]), "nothing stored");
}

/// With `summary: true` and a model configured, a digest opens with the model's summary of the
/// period (asked once, through the verdicts' budget); the model reads each event's watch and
/// changed lines.
pub async fn a_digest_opens_with_a_models_summary(backend: Backend) {
    use driftwatch_test_support::llm::{ModelServer, Reply};
    let model = ModelServer::start().await;
    model.set_default(Reply::verdict(false, "", "The lamp got cheaper, twice."));
    let clock = ClockFile::new();
    let db = TestDb::new(backend);
    let mut s = settings(&db, &clock);
    s.llm_base_url = Some(model.base_url());
    s.llm_model = Some("summarizer-1".into());
    let app = TestApp::from_app(App::start(&s, Roles { web: true, background: true }).await.expect("starts"));
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    let digest_mode = json!({"mode": "digest", "every": "1d", "summary": true});
    let (hook, _) = app.endpoint(&token, &receiver.url, json!({"delivery": digest_mode})).await;
    let page = PageServer::start("<p>Lamp: 10 EUR</p>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": page.url, "name": "Lamp"})).await;
    for text in ["<p>Lamp: 9 EUR</p>", "<p>Lamp: 8 EUR</p>"] {
        page.set(text);
        app.check(&token, watch["id"].as_str().expect("id")).await;
    }
    clock.move_past(time(&digest(&app, &token, &hook).await["next_at"]));
    let body = receiver.wait_for(1).await[0].json();
    assert_eq!(body["type"], "digest", "{body}");
    assert_eq!(body["data"]["summary"], "The lamp got cheaper, twice.", "{body}");
    let asked = model.chat_requests();
    assert_eq!(asked.len(), 1, "asked once for the period");
    let text = asked[0].user_text();
    assert!(text.contains("Lamp") && text.contains("+Lamp: 8 EUR"), "the model read the changes: {text}");
}

/// An endpoint that asked to be told when nothing happened gets a digest of nothing for an
/// empty period; its Discord message says so.
pub async fn an_empty_period_sends_a_note_when_asked(backend: Backend) {
    let clock = ClockFile::new();
    let db = TestDb::new(backend);
    let app = TestApp::from_app(
        App::start(&settings(&db, &clock), Roles { web: true, background: true }).await.expect("starts"),
    );
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    let chat = ChatServer::start().await;
    let quiet_day = json!({"mode": "digest", "every": "1d", "send_empty": true});
    let (hook, _) = app.endpoint(&token, &receiver.url, json!({"delivery": quiet_day})).await;
    app.endpoint(&token, &chat.url("/api/webhooks/1/key"), json!({"kind": "discord", "delivery": quiet_day})).await;
    clock.move_past(time(&digest(&app, &token, &hook).await["next_at"]));
    let body = receiver.wait_for(1).await[0].json();
    assert_eq!((body["type"].as_str(), body["data"]["count"].as_u64()), (Some("digest"), Some(0)), "{body}");
    assert_eq!(body["data"]["events"], json!([]), "{body}");
    let posts = chat.wait_for(Provider::Discord, 1, WAIT).await;
    let message = String::from_utf8_lossy(&posts[0].body).to_string();
    assert!(message.contains("Nothing changed"), "{message}");
}
