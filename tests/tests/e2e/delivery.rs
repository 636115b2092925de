//! The delivery engine: retries, dead letters, redelivery, endpoint health, rotation, recovery.

use std::collections::HashSet;
use std::time::Duration;

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::support::{SendChecked, TestApp};

/// Queues a test event to the endpoint; returns the delivery id.
async fn send_test(app: &TestApp, token: &str, endpoint_id: &str) -> String {
    let (status, delivery) = app.post(&format!("/endpoints/{endpoint_id}/test"), token, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
    assert_eq!(delivery["event_type"], "endpoint.test");
    delivery["id"].as_str().expect("id").to_owned()
}

fn statuses(delivery: &Value) -> Vec<i64> {
    delivery["attempt_log"]
        .as_array()
        .expect("attempt log")
        .iter()
        .map(|a| a["status_code"].as_i64().unwrap_or(0))
        .collect()
}

pub async fn retries_follow_the_schedule_then_dead_letter(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.max_attempts = 3;
        s.retry_schedule = "300ms,600ms".into();
    })
    .await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(500).await;
    let (endpoint_id, secret) = app.endpoint(&token, &receiver.url, json!({})).await;
    let id = send_test(&app, &token, &endpoint_id).await;

    let dead = app.wait_delivery(&token, &id, "dead").await;
    assert_eq!(dead["attempts"], 3, "exactly max_attempts attempts");
    assert_eq!(statuses(&dead), vec![500, 500, 500]);
    let received = receiver.wait_for(3).await;
    assert_eq!(received.len(), 3);
    let gaps: Vec<Duration> = received.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps[0] >= Duration::from_millis(290), "first retry waited the first delay: {gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(590), "second retry waited the second delay: {gaps:?}");
    for hook in &received {
        hook.verify(&secret).expect("every attempt is signed");
        assert_eq!(hook.header("webhook-id"), id);
        assert_eq!(hook.body, received[0].body, "byte-identical body");
    }
    let dlq = app.ok("/dlq", &token).await;
    let items = dlq["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], id.as_str());
    assert_eq!(items[0]["last_attempt"]["attempt_number"], 3);
    assert_eq!(items[0]["last_attempt"]["status_code"], 500);
    assert_eq!(items[0]["last_error"], "HTTP 500");
}

pub async fn a_recovering_endpoint_succeeds_on_retry(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.retry_schedule = "200ms".into()).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(503).await;
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({})).await;
    let id = send_test(&app, &token, &endpoint_id).await;
    receiver.wait_for(1).await;
    receiver.set_status(200);
    let sent = app.wait_delivery(&token, &id, "sent").await;
    assert_eq!(statuses(&sent).first(), Some(&503));
    assert_eq!(statuses(&sent).last(), Some(&200));
    assert_eq!(sent["last_status_code"], 200);
}

pub async fn redelivery_resends_the_same_bytes(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(404).await;
    let (endpoint_id, secret) = app.endpoint(&token, &receiver.url, json!({})).await;
    let id = send_test(&app, &token, &endpoint_id).await;

    // 404 is permanent: dead after one attempt.
    let dead = app.wait_delivery(&token, &id, "dead").await;
    assert_eq!(dead["attempts"], 1);

    receiver.set_status(200);
    let (status, redelivered) = app.post(&format!("/deliveries/{id}/redeliver"), &token, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{redelivered}");
    assert_eq!(redelivered["status"], "sent", "{redelivered}");
    assert_eq!(redelivered["attempts"], 2);
    let log = redelivered["attempt_log"].as_array().expect("log");
    assert_eq!(log[1]["trigger"], "manual");
    assert_eq!(log[1]["status_code"], 200);

    // Redelivering a sent delivery sends it again too.
    let (status, again) = app.post(&format!("/deliveries/{id}/redeliver"), &token, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again["attempts"], 3);

    let received = receiver.wait_for(3).await;
    for hook in &received {
        assert_eq!(hook.header("webhook-id"), id, "the webhook-id never changes");
        assert_eq!(hook.body, received[0].body, "the body is byte-identical");
        hook.verify(&secret).expect("valid signature");
    }
    let other = app.account("other").await;
    assert_eq!(app.post(&format!("/deliveries/{id}/redeliver"), &other, json!({})).await.0, StatusCode::NOT_FOUND);
}

pub async fn gone_disables_the_endpoint(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let gone = Receiver::start(410).await;
    let watcher = Receiver::start(200).await;
    let (gone_id, _) = app.endpoint(&token, &gone.url, json!({})).await;
    let (_, watcher_secret) = app.endpoint(&token, &watcher.url, json!({})).await;
    let id = send_test(&app, &token, &gone_id).await;

    let dead = app.wait_delivery(&token, &id, "dead").await;
    assert_eq!(dead["attempts"], 1);
    let endpoint = app.ok(&format!("/endpoints/{gone_id}"), &token).await;
    assert_eq!(endpoint["enabled"], false);
    assert!(endpoint["disabled_reason"].as_str().is_some_and(|r| r.contains("410")), "{endpoint}");

    // The account's other endpoints hear about it.
    let heard = watcher.wait_for(1).await;
    heard[0].verify(&watcher_secret).expect("signed");
    let event = heard[0].json();
    assert_eq!(event["type"], "endpoint.disabled");
    assert_eq!(event["data"]["endpoint"]["id"], gone_id.as_str());
    let events = app.ok("/events", &token).await;
    assert!(events["items"].as_array().expect("items").iter().any(|e| e["type"] == "endpoint.disabled"));

    assert_eq!(app.post(&format!("/endpoints/{gone_id}/test"), &token, json!({})).await.0, StatusCode::CONFLICT);
    let (status, enabled) = app.post(&format!("/endpoints/{gone_id}/enable"), &token, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(enabled["enabled"], true);
    assert!(enabled["disabled_reason"].is_null());
}

pub async fn retry_after_is_honoured(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.retry_schedule = "1h".into()).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(429).await;
    receiver.set_retry_after(Some("1"));
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({})).await;
    let id = send_test(&app, &token, &endpoint_id).await;
    receiver.wait_for(1).await;
    receiver.set_status(200);
    let sent = app.wait_delivery(&token, &id, "sent").await;
    assert_eq!(statuses(&sent), vec![429, 200], "retried after Retry-After, not after the 1h schedule");
    let received = receiver.received();
    assert!(received[1].at - received[0].at >= Duration::from_millis(950), "waited the second Retry-After asked for");
}

pub async fn a_hanging_receiver_times_out(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.webhook_timeout = driftwatch::HumanDuration(Duration::from_millis(300));
        s.max_attempts = 1;
    })
    .await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    receiver.set_delay(Duration::from_secs(5));
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({})).await;
    let id = send_test(&app, &token, &endpoint_id).await;
    let dead = app.wait_delivery(&token, &id, "dead").await;
    let attempt = &dead["attempt_log"][0];
    assert_eq!(attempt["error_kind"], "timeout", "{dead}");
    assert!(attempt["status_code"].is_null());
    assert!(attempt["duration_ms"].as_i64().is_some_and(|ms| (250..5000).contains(&ms)), "{attempt}");
}

pub async fn the_circuit_opens_holds_and_closes(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.circuit_threshold = 2;
        s.circuit_open_for = driftwatch::HumanDuration(Duration::from_secs(3));
        s.max_attempts = 10;
        s.retry_schedule = "50ms".into();
    })
    .await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(500).await;
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({})).await;
    let first = send_test(&app, &token, &endpoint_id).await;

    let open = eventually("the circuit to open", || async {
        let e = app.ok(&format!("/endpoints/{endpoint_id}"), &token).await;
        (e["health"]["circuit"] == "open").then_some(e)
    })
    .await;
    assert_eq!(open["health"]["consecutive_failures"], 2);
    // While open, deliveries wait without spending attempts.
    let held = app.ok(&format!("/deliveries/{first}"), &token).await;
    assert_eq!(held["attempts"], 2, "{held}");
    assert_eq!(held["status"], "failed");
    let second = send_test(&app, &token, &endpoint_id).await;
    let queued = app.ok(&format!("/deliveries/{second}"), &token).await;
    assert_eq!((queued["status"].as_str(), queued["attempts"].as_i64()), (Some("queued"), Some(0)));
    assert_eq!(receiver.received().len(), 2, "nothing was sent while the circuit was open");

    // The receiver recovers; after the open period one probe goes out and closes the circuit.
    receiver.set_status(200);
    let sent = app.wait_delivery(&token, &first, "sent").await;
    assert_eq!(sent["attempts"], 3, "one probe");
    let second = app.wait_delivery(&token, &second, "sent").await;
    assert_eq!(second["attempts"], 1, "the held delivery spent no attempt while waiting");
    let closed = app.ok(&format!("/endpoints/{endpoint_id}"), &token).await;
    assert_eq!(closed["health"]["circuit"], "closed");
    assert_eq!(closed["health"]["consecutive_failures"], 0);
}

pub async fn rotation_signs_with_both_secrets(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    let (endpoint_id, old_secret) = app.endpoint(&token, &receiver.url, json!({})).await;
    let (status, rotated) = app.post(&format!("/endpoints/{endpoint_id}/rotate-secret"), &token, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let new_secret = rotated["secret"].as_str().expect("new secret").to_owned();
    assert_ne!(new_secret, old_secret);
    assert!(rotated["previous_secret_expires_at"].is_string());
    assert!(app.ok(&format!("/endpoints/{endpoint_id}"), &token).await.get("secret").is_none());

    send_test(&app, &token, &endpoint_id).await;
    let hook = &receiver.wait_for(1).await[0];
    assert_eq!(hook.header("webhook-signature").split(' ').count(), 2, "two signatures during the overlap");
    hook.verify(&new_secret).expect("the new secret verifies");
    hook.verify(&old_secret).expect("the previous secret still verifies");
}

pub async fn recover_requeues_exactly_the_matching_set(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(404).await;
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({})).await;
    let since = chrono::Utc::now() - chrono::TimeDelta::seconds(5);
    let mut dead = Vec::new();
    for _ in 0..3 {
        let id = send_test(&app, &token, &endpoint_id).await;
        app.wait_delivery(&token, &id, "dead").await;
        dead.push(id);
    }
    receiver.set_status(200);
    let sent = send_test(&app, &token, &endpoint_id).await;
    app.wait_delivery(&token, &sent, "sent").await;
    let before = receiver.received().len();

    let path = format!("/endpoints/{endpoint_id}/recover");
    let (status, dry) = app.post(&path, &token, json!({"since": since, "statuses": ["dead"], "dry_run": true})).await;
    assert_eq!(status, StatusCode::OK, "{dry}");
    assert_eq!(
        (dry["matched"].as_i64(), dry["requeued"].as_i64(), dry["state"].as_str()),
        (Some(3), Some(0), Some("done"))
    );
    assert_eq!(receiver.received().len(), before, "a dry run sends nothing");

    let (status, recovery) = app.post(&path, &token, json!({"since": since, "statuses": ["dead"]})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{recovery}");
    let rid = recovery["id"].as_str().expect("id");
    let done = eventually("the recovery to finish", || async {
        let r = app.ok(&format!("/recoveries/{rid}"), &token).await;
        (r["state"] == "done").then_some(r)
    })
    .await;
    assert_eq!(done["requeued"], 3);
    for id in &dead {
        let d = app.wait_delivery(&token, id, "sent").await;
        assert_eq!(d["attempt_log"][1]["trigger"], "manual", "{d}");
    }
    let resent: HashSet<String> =
        receiver.wait_for(before + 3).await[before..].iter().map(|h| h.header("webhook-id").to_owned()).collect();
    assert_eq!(resent, dead.iter().cloned().collect::<HashSet<_>>(), "exactly the dead ones, once each");
    assert_eq!(app.ok(&format!("/deliveries/{sent}"), &token).await["attempts"], 1, "the sent one was not touched");

    let (status, problem) = app.post(&path, &token, json!({"since": since, "statuses": ["sent"]})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["errors"][0]["field"], "statuses");

    // Both recoveries are listed, newest first, one per page; filtered by endpoint; private.
    let first = app.ok("/recoveries?limit=1", &token).await;
    assert_eq!(first["items"][0]["id"], rid, "{first}");
    let cursor = first["next_cursor"].as_str().expect("a second page");
    let second = app.ok(&format!("/recoveries?limit=1&cursor={cursor}"), &token).await;
    assert_eq!((second["items"][0]["id"].as_str(), &second["next_cursor"]), (dry["id"].as_str(), &json!(null)));
    let by_endpoint = app.ok(&format!("/recoveries?endpoint_id={endpoint_id}"), &token).await;
    assert_eq!(by_endpoint["items"].as_array().map(Vec::len), Some(2));
    let other = app.account("globex").await;
    assert_eq!(app.ok("/recoveries", &other).await["items"], json!([]));
    let (status, _) = app.get(&format!("/recoveries/{rid}"), &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

pub async fn slack_endpoints_get_slack_messages(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<div id=price>Price: 10 EUR</div>").await;
    let slack = Receiver::start(200).await;
    app.endpoint(&token, &slack.url, json!({"kind": "slack"})).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "name": "Widget", "selector": "#price"})).await;
    site.set("<div id=price>Price: 12 EUR</div>");
    let (status, run) =
        app.post(&format!("/watches/{}/check", watch["id"].as_str().expect("id")), &token, json!({})).await;
    assert_eq!((status, run["outcome"].as_str()), (StatusCode::OK, Some("changed")));
    let message = slack.wait_for(1).await[0].json();
    assert!(message["text"].as_str().is_some_and(|t| t.starts_with("Change detected on Widget")), "{message}");
    let excerpt = message["blocks"][2]["text"]["text"].as_str().expect("diff excerpt");
    assert!(excerpt.contains("- Price: 10 EUR") && excerpt.contains("+ Price: 12 EUR"), "{excerpt}");
}

pub async fn per_endpoint_settings_are_validated_and_used(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(500).await;
    for (body, field) in [
        (json!({"url": receiver.url, "retry_schedule": "soon"}), "retry_schedule"),
        (json!({"url": receiver.url, "max_attempts": 0}), "max_attempts"),
        (json!({"url": receiver.url, "rate_limit_per_second": -1}), "rate_limit_per_second"),
        (json!({"url": receiver.url, "kind": "pigeon"}), "kind"),
    ] {
        let (status, problem) = app.post("/endpoints", &token, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(problem["errors"][0]["field"], field, "{problem}");
    }
    let (endpoint_id, _) =
        app.endpoint(&token, &receiver.url, json!({"max_attempts": 2, "retry_schedule": "100ms"})).await;
    let id = send_test(&app, &token, &endpoint_id).await;
    let dead = app.wait_delivery(&token, &id, "dead").await;
    assert_eq!((dead["attempts"].as_i64(), dead["max_attempts"].as_i64()), (Some(2), Some(2)), "the endpoint's budget");

    // Settings change with PATCH (null returns to the global default), and endpoints go with DELETE.
    let path = format!("/endpoints/{endpoint_id}");
    let (status, patched) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &token,
            Some(json!({"max_attempts": null, "description": "ops", "rate_limit_per_second": 3})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert!(patched["max_attempts"].is_null());
    assert_eq!((patched["description"].as_str(), patched["rate_limit_per_second"].as_i64()), (Some("ops"), Some(3)));
    assert_eq!(patched["retry_schedule"], "100ms", "fields left out stay");
    let (status, problem) = app.call(reqwest::Method::PATCH, &path, &token, Some(json!({"max_in_flight": 0}))).await;
    assert_eq!(
        (status, problem["errors"][0]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("max_in_flight"))
    );
    let other = app.account("other").await;
    assert_eq!(app.call(reqwest::Method::DELETE, &path, &other, None).await.0, StatusCode::NOT_FOUND);
    assert_eq!(app.call(reqwest::Method::DELETE, &path, &token, None).await.0, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&path, &token).await.0, StatusCode::NOT_FOUND);
}

pub async fn retention_purges_bodies_but_keeps_rows(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({})).await;
    let id = send_test(&app, &token, &endpoint_id).await;
    app.wait_delivery(&token, &id, "sent").await;

    let store = app.app.as_ref().expect("running").store.clone();
    let future = chrono::Utc::now().naive_utc() + chrono::TimeDelta::days(1);
    let policy = driftwatch_store::retention::Retention {
        sent_bodies_before: future,
        dead_bodies_before: future,
        attempts_before: future,
        ..driftwatch_store::retention::Retention::keep_everything(future)
    };
    let purged = driftwatch_store::retention::purge(&store, &policy).await.expect("purge");
    assert_eq!((purged.bodies, purged.attempts, purged.events), (1, 1, 0));
    let purged = app.ok(&format!("/deliveries/{id}"), &token).await;
    assert_eq!(purged["status"], "sent", "the row keeps its metadata");
    assert_eq!(purged["body_purged"], true);
    assert_eq!(purged["attempt_log"], json!([]));
    let (status, problem) = app.post(&format!("/deliveries/{id}/redeliver"), &token, json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    let after = app.ok(&format!("/deliveries/{id}"), &token).await;
    assert_eq!(
        (after["status"].as_str(), after["attempts"].as_i64()),
        (Some("sent"), Some(1)),
        "a refusal changes nothing"
    );

    // A refused redelivery to a disabled endpoint leaves the delivery as it was too.
    let second = send_test(&app, &token, &endpoint_id).await;
    app.wait_delivery(&token, &second, "sent").await;
    app.post(&format!("/endpoints/{endpoint_id}/disable"), &token, json!({})).await;
    assert_eq!(app.post(&format!("/deliveries/{second}/redeliver"), &token, json!({})).await.0, StatusCode::CONFLICT);
    app.post(&format!("/endpoints/{endpoint_id}/enable"), &token, json!({})).await;
    let unchanged = app.ok(&format!("/deliveries/{second}"), &token).await;
    assert_eq!((unchanged["status"].as_str(), unchanged["attempts"].as_i64()), (Some("sent"), Some(1)));
    assert_eq!(receiver.received().len(), 2, "nothing was sent again");
}

pub async fn a_long_failing_endpoint_is_disabled(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.disable_after = driftwatch::HumanDuration(Duration::from_millis(500));
        s.circuit_threshold = 1000;
        s.max_attempts = 50;
        s.retry_schedule = "100ms".into();
    })
    .await;
    let token = app.account("acme").await;
    let failing = Receiver::start(500).await;
    let (endpoint_id, _) = app.endpoint(&token, &failing.url, json!({})).await;
    let id = send_test(&app, &token, &endpoint_id).await;
    let disabled = eventually("the endpoint to be disabled", || async {
        let e = app.ok(&format!("/endpoints/{endpoint_id}"), &token).await;
        (e["enabled"] == false).then_some(e)
    })
    .await;
    assert!(disabled["disabled_reason"].as_str().is_some_and(|r| r.contains("failing continuously")), "{disabled}");
    // Its delivery waits (not dead-lettered) until the endpoint is enabled again.
    let waiting = app.ok(&format!("/deliveries/{id}"), &token).await;
    assert_eq!(waiting["status"], "failed", "{waiting}");
    let attempts = waiting["attempts"].as_i64().expect("attempts");
    assert_eq!(app.ok(&format!("/deliveries/{id}"), &token).await["attempts"], attempts, "no attempts while disabled");
    failing.set_status(200);
    app.post(&format!("/endpoints/{endpoint_id}/enable"), &token, json!({})).await;
    let sent = app.wait_delivery(&token, &id, "sent").await;
    assert_eq!(sent["attempts"].as_i64(), Some(attempts + 1), "enabling resumed the waiting delivery");
    let events = app.ok("/events", &token).await;
    assert!(events["items"].as_array().expect("items").iter().any(|e| e["type"] == "endpoint.disabled"));
}

pub async fn a_hanging_endpoint_does_not_delay_healthy_ones(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.delivery_concurrency = 8;
        s.per_endpoint_concurrency = 2;
        s.webhook_timeout = driftwatch::HumanDuration(Duration::from_secs(6));
    })
    .await;
    let token = app.account("acme").await;
    let hanging = Receiver::start(200).await;
    hanging.set_delay(Duration::from_secs(4));
    let healthy = Receiver::start(200).await;
    let (hanging_id, _) = app.endpoint(&token, &hanging.url, json!({})).await;
    let (healthy_id, _) = app.endpoint(&token, &healthy.url, json!({})).await;
    let mut stuck = Vec::new();
    for _ in 0..12 {
        stuck.push(send_test(&app, &token, &hanging_id).await);
    }
    hanging.wait_for(2).await;
    let quick = send_test(&app, &token, &healthy_id).await;
    app.wait_delivery(&token, &quick, "sent").await;
    assert_eq!(hanging.received().len(), 2, "at most the per-endpoint cap is spent on the hanging endpoint");
    let mut pending = 0;
    for id in &stuck {
        pending += usize::from(app.ok(&format!("/deliveries/{id}"), &token).await["status"] == "queued");
    }
    assert_eq!(pending, 12, "two in flight (hanging), ten waiting their turn, none finished");
}

pub async fn a_rate_limited_endpoint_is_paced(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let receiver = Receiver::start(200).await;
    let (endpoint_id, _) = app.endpoint(&token, &receiver.url, json!({"rate_limit_per_second": 5})).await;
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(send_test(&app, &token, &endpoint_id).await);
    }
    let received = receiver.wait_for(6).await;
    for id in &ids {
        app.wait_delivery(&token, id, "sent").await;
    }
    let span = received[5].at - received[0].at;
    assert!(span >= Duration::from_millis(900), "6 requests at 5/s span at least a second: {span:?}");
    for id in &ids {
        assert_eq!(app.ok(&format!("/deliveries/{id}"), &token).await["attempts"], 1, "pacing spends no attempts");
    }
}

/// The event types a receiver got, once it has at least `n`.
async fn types(receiver: &Receiver, n: usize) -> Vec<String> {
    receiver.wait_for(n).await.iter().map(|h| h.json()["type"].as_str().unwrap_or("").to_owned()).collect()
}

/// An endpoint subscribed to some event types gets only those; one named for a test event gets
/// it anyway; `null` subscribes it to everything again.
pub async fn endpoints_receive_only_their_event_types(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<div id=price>10</div>").await;
    let everything = Receiver::start(200).await;
    let failures = Receiver::start(200).await;
    app.endpoint(&token, &everything.url, json!({})).await;
    let (failures_id, _) =
        app.endpoint(&token, &failures.url, json!({"event_types": ["check.failed", "check.failed"]})).await;
    let shown = app.ok(&format!("/endpoints/{failures_id}"), &token).await;
    assert_eq!(shown["event_types"], json!(["check.failed"]), "stored once");
    for (bad, field) in [(json!([]), "event_types"), (json!(["change.maybe"]), "event_types[0]")] {
        let (status, problem) = app.post("/endpoints", &token, json!({"url": site.url, "event_types": bad})).await;
        assert_eq!((status, problem["errors"][0]["field"].as_str()), (StatusCode::UNPROCESSABLE_ENTITY, Some(field)));
    }

    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price"})).await;
    let check = format!("/watches/{}/check", watch["id"].as_str().expect("id"));
    site.set("<div id=price>12</div>");
    assert_eq!(app.post(&check, &token, json!({})).await.1["outcome"], "changed");
    site.set_status(500);
    for _ in 0..3 {
        assert_eq!(app.post(&check, &token, json!({})).await.1["outcome"], "failed");
    }
    assert_eq!(types(&everything, 2).await, ["change.detected", "check.failed"]);
    assert_eq!(types(&failures, 1).await, ["check.failed"], "only what it subscribed to");

    // Named on purpose, a test event reaches it; `null` subscribes it to everything.
    send_test(&app, &token, &failures_id).await;
    assert_eq!(types(&failures, 2).await, ["check.failed", "endpoint.test"]);
    let path = format!("{}/endpoints/{failures_id}", app.base);
    let patched = app.http.patch(&path).bearer_auth(&token).json(&json!({"event_types": null})).send_checked().await;
    assert_eq!(patched.expect("patch").json::<Value>().await.expect("json")["event_types"], json!(null));
    site.set_status(200);
    site.set("<div id=price>14</div>");
    assert_eq!(app.post(&check, &token, json!({})).await.1["outcome"], "changed");
    eventually("the change to reach the re-subscribed endpoint", || async {
        failures.received().iter().any(|h| h.json()["type"] == "change.detected").then_some(())
    })
    .await;
}
