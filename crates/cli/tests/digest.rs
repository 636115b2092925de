//! A `driftwatch serve` killed with SIGKILL while its digest is in flight sends that period's
//! digest again after a restart (the same delivery, the same `webhook-id`), and only that one:
//! the period was closed in the transaction that queued it. The clock is moved by
//! `DRIFTWATCH_CLOCK_FILE`, not by waiting a day.

mod common;

use std::time::Duration;

use common::{account_and_token, serve};
use driftwatch_test_support::{PageServer, Receiver, eventually_within};
use serde_json::{Value, json};

const PATIENCE: Duration = Duration::from_secs(60);

async fn call(http: &reqwest::Client, method: reqwest::Method, url: String, token: &str, body: Option<Value>) -> Value {
    let mut request = http.request(method, url).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.expect("request");
    assert!(response.status().is_success(), "{}", response.status());
    response.json().await.expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_killed_in_flight_goes_once_after_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = account_and_token(dir.path());
    let clock = dir.path().join("clock");
    std::fs::write(&clock, "0").expect("clock file");
    let clock_setting = clock.to_str().expect("utf-8 path").to_owned();
    let env = [("DRIFTWATCH_CLOCK_FILE", clock_setting.as_str()), ("DRIFTWATCH_POLL_INTERVAL", "200ms")];
    // The receiver holds each request long enough to kill the server while one is in flight.
    let receiver = Receiver::start(200).await;
    receiver.set_delay(Duration::from_secs(30));
    let (child, base) = serve(dir.path(), &env).await;
    let (http, api) = (reqwest::Client::new(), format!("{base}/api/v1"));
    let post = reqwest::Method::POST;
    let get = reqwest::Method::GET;

    let endpoint = call(
        &http,
        post.clone(),
        format!("{api}/endpoints"),
        &token,
        Some(json!({"url": receiver.url, "delivery": {"mode": "digest", "every": "1d"}})),
    )
    .await;
    let endpoint_id = endpoint["id"].as_str().expect("id").to_owned();
    let page = PageServer::start("<p>v1</p>").await;
    let watch = call(&http, post.clone(), format!("{api}/watches"), &token, Some(json!({"url": page.url}))).await;
    let watch_id = watch["id"].as_str().expect("id").to_owned();
    let runs = format!("{api}/watches/{watch_id}/runs");
    eventually_within("the baseline", PATIENCE, || async {
        let list = call(&http, reqwest::Method::GET, runs.clone(), &token, None).await;
        (list["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
    })
    .await;
    for text in ["<p>v2</p>", "<p>v3</p>"] {
        page.set(text);
        call(&http, post.clone(), format!("{api}/watches/{watch_id}/check"), &token, Some(json!({}))).await;
    }
    let digest_url = format!("{api}/endpoints/{endpoint_id}/digest");
    let open = call(&http, get.clone(), digest_url.clone(), &token, None).await;
    assert_eq!(open["waiting"], 2, "{open}");
    let due = chrono::DateTime::parse_from_rfc3339(open["next_at"].as_str().expect("next_at")).expect("time");
    let offset = (due.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds() + 1_500;
    std::fs::write(&clock, format!("+{offset}ms")).expect("move the clock");

    // The digest is queued and held in flight at the receiver: kill the server there.
    receiver.wait_in_flight(1, PATIENCE).await;
    let mut child = child;
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");

    let (_child, base) = serve(dir.path(), &env).await;
    let api = format!("{base}/api/v1");
    receiver.set_delay(Duration::ZERO);
    receiver.wait_answered(1, PATIENCE, "the digest is sent again after the restart").await;
    let digest_id = receiver.answered().last().cloned().expect("the digest");
    let sent = format!("{api}/deliveries/{digest_id}");
    eventually_within("the digest's delivery is recorded sent", PATIENCE, || async {
        (call(&http, get.clone(), sent.clone(), &token, None).await["status"] == "sent").then_some(())
    })
    .await;
    let digests = call(&http, get.clone(), format!("{api}/events?type=digest"), &token, None).await;
    let items = digests["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "one digest for the period: {digests}");
    assert_eq!(items[0]["payload"]["data"]["count"], 2, "{digests}");
    let closed = call(&http, get, format!("{api}/endpoints/{endpoint_id}/digest"), &token, None).await;
    assert_eq!(closed["waiting"], 0, "{closed}");
    assert_ne!(closed["next_at"], open["next_at"], "the period moved on: {closed}");
    assert!(receiver.received().iter().all(|r| r.header("webhook-id") == digest_id), "only that digest was sent");
}
