//! watch -> scrape -> diff -> alert -> signed webhook.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::support::TestApp;

fn page(price: &str) -> String {
    format!(
        "<html><head><title>Shop</title></head><body><nav>Home | Shop</nav>\
         <div id=\"price\"><h2>Widget</h2><p>Price: {price}</p></div><footer>visited now</footer></body></html>"
    )
}

async fn endpoint(app: &TestApp, token: &str, url: &str) -> (String, String) {
    let (id, secret) = app.endpoint(token, url, json!({"description": "test receiver"})).await;
    assert!(secret.starts_with("whsec_"));
    (id, secret)
}

fn items(list: &Value) -> &Vec<Value> {
    list["items"].as_array().expect("items")
}

pub async fn a_change_is_delivered_once_and_signed(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&page("10 EUR")).await;
    let receiver = Receiver::start(200).await;
    let (endpoint_id, secret) = endpoint(&app, &token, &receiver.url).await;

    let watch =
        app.watch_with_baseline(&token, json!({"url": site.url, "name": "Widget price", "selector": "#price"})).await;
    let watch_id = watch["id"].as_str().expect("id");
    let runs = app.ok(&format!("/watches/{watch_id}/runs"), &token).await;
    assert_eq!(items(&runs)[0]["outcome"], "baseline", "the first check records a baseline");
    assert_eq!(items(&runs)[0]["http_status"], 200);

    // Unchanged page: nothing is raised.
    let run = app.check(&token, watch_id).await;
    assert_eq!(run["outcome"], "unchanged", "{run}");
    assert!(run["event_id"].is_null());

    // A change outside the selector is not a change.
    site.set(&page("10 EUR").replace("visited now", "visited later"));
    assert_eq!(app.check(&token, watch_id).await["outcome"], "unchanged");

    // The watched element changes: one event, one delivery, one signed webhook.
    site.set(&page("12 EUR"));
    let run = app.check(&token, watch_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
    let event_id = run["event_id"].as_str().expect("a change raises an event").to_owned();

    let received = receiver.wait_for(1).await;
    assert_eq!(received.len(), 1);
    let hook = &received[0];
    hook.verify(&secret).expect("the signature verifies with the endpoint's secret");
    assert!(hook.verify("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err(), "another secret does not verify");
    assert_eq!(hook.header("content-type"), "application/json");
    assert_eq!(hook.header("driftwatch-event-type"), "change.detected");
    assert_eq!(hook.header("driftwatch-attempt"), "1");

    let payload = hook.json();
    assert_eq!(payload["type"], "change.detected");
    assert_eq!(payload["data"]["event_id"], event_id.as_str());
    assert_eq!(payload["data"]["watch"]["id"], watch_id);
    assert_eq!(payload["data"]["watch"]["name"], "Widget price");
    assert_eq!(payload["data"]["diff"]["added"], 1);
    assert_eq!(payload["data"]["diff"]["removed"], 1);
    let unified = payload["data"]["diff"]["unified"].as_str().expect("unified diff");
    assert!(unified.contains("-Price: 10 EUR") && unified.contains("+Price: 12 EUR"), "{unified}");
    assert!(!unified.contains("visited"), "text outside the selector is not in the diff: {unified}");

    let deliveries = app.ok(&format!("/deliveries?watch_id={watch_id}"), &token).await;
    assert_eq!(items(&deliveries).len(), 1);
    let delivery_id = items(&deliveries)[0]["id"].as_str().expect("id");
    assert_eq!(hook.header("webhook-id"), delivery_id, "webhook-id is the delivery id");
    assert_eq!(items(&deliveries)[0]["endpoint_id"], endpoint_id.as_str());

    let delivery = app.wait_delivery(&token, delivery_id, "sent").await;
    assert_eq!(delivery["attempts"], 1);
    let log = delivery["attempt_log"].as_array().expect("attempts");
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["status_code"], 200);
    assert_eq!(log[0]["trigger"], "scheduled");
    assert_eq!(log[0]["response_snippet"], "receiver says hi");

    let events = app.ok(&format!("/events?watch_id={watch_id}"), &token).await;
    assert_eq!(items(&events).len(), 1);
    assert_eq!(items(&events)[0]["id"], event_id.as_str());
    assert_eq!(items(&events)[0]["payload"], payload, "the event stores the exact payload delivered");
    assert_eq!(app.ok(&format!("/events/{event_id}"), &token).await, items(&events)[0], "one event reads the same");
    let other = app.account("globex").await;
    assert_eq!(app.get(&format!("/events/{event_id}"), &other).await.0, StatusCode::NOT_FOUND);

    // Checking the changed page again raises nothing more.
    assert_eq!(app.check(&token, watch_id).await["outcome"], "unchanged");
    let deliveries = app.ok("/deliveries", &token).await;
    assert_eq!(items(&deliveries).len(), 1, "no new delivery for an unchanged page");
    assert_eq!(receiver.received().len(), 1);
}

pub async fn a_failing_receiver_is_retried_then_dead_lettered(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.max_attempts = 3;
        s.retry_schedule = "100ms,200ms".into();
    })
    .await;
    let token = app.account("acme").await;
    let site = PageServer::start(&page("1")).await;
    let receiver = Receiver::start(500).await;
    let (_, secret) = endpoint(&app, &token, &receiver.url).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price"})).await;
    let watch_id = watch["id"].as_str().expect("id");
    site.set(&page("2"));
    assert_eq!(app.check(&token, watch_id).await["outcome"], "changed");

    let deliveries = app.ok("/deliveries", &token).await;
    let delivery_id = items(&deliveries)[0]["id"].as_str().expect("id").to_owned();
    let delivery = app.wait_delivery(&token, &delivery_id, "dead").await;
    assert_eq!(delivery["attempts"], 3, "exactly max_attempts attempts");
    assert_eq!(delivery["last_status_code"], 500);
    assert!(delivery["finished_at"].is_string() && delivery["next_attempt_at"].is_null());
    let log = delivery["attempt_log"].as_array().expect("attempts");
    assert_eq!(log.iter().map(|a| a["attempt_number"].as_i64().unwrap_or(0)).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(log.iter().all(|a| a["status_code"] == 500 && a["error_kind"] == "http"), "{log:?}");

    let received = receiver.wait_for(3).await;
    assert_eq!(received.len(), 3);
    for (i, hook) in received.iter().enumerate() {
        hook.verify(&secret).expect("every attempt is signed");
        assert_eq!(hook.header("webhook-id"), delivery_id, "the webhook-id never changes");
        assert_eq!(hook.body, received[0].body, "the body is byte-identical on every attempt");
        assert_eq!(hook.header("driftwatch-attempt"), (i + 1).to_string());
    }
    let dead = app.ok("/deliveries?status=dead", &token).await;
    assert_eq!(items(&dead).len(), 1);
    assert_eq!(items(&app.ok("/deliveries?status=sent", &token).await).len(), 0);
}

/// A page with NUL characters and a receiver answering NUL, invalid UTF-8 and markup are
/// stored on both backends (PostgreSQL text cannot hold a NUL): the page's text becomes the
/// baseline and the change, and every attempt is recorded, the answer quoted with U+FFFD.
pub async fn what_remote_servers_send_is_stored_whatever_it_says(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.max_attempts = 2;
        s.retry_schedule = "100ms".into();
    })
    .await;
    let token = app.account("acme").await;
    let site = PageServer::start("<html><body><p id=\"price\">1\0 EUR</p><pre>a\0b</pre></body></html>").await;
    let receiver = Receiver::start(500).await;
    receiver.set_body(b"<script>alert(1)</script>\0 oops \xff\xfe end");
    endpoint(&app, &token, &receiver.url).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price"})).await;
    let watch_id = watch["id"].as_str().expect("id");
    site.set("<html><body><p id=\"price\">2\0 EUR</p></body></html>");
    let run = app.check(&token, watch_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");

    let deliveries = app.ok("/deliveries", &token).await;
    let delivery_id = items(&deliveries)[0]["id"].as_str().expect("id").to_owned();
    let delivery = app.wait_delivery(&token, &delivery_id, "dead").await;
    let log = delivery["attempt_log"].as_array().expect("attempts");
    assert_eq!(log.len(), 2, "every attempt recorded: {delivery}");
    for attempt in log {
        let snippet = attempt["response_snippet"].as_str().expect("the answer is quoted");
        assert!(snippet.starts_with("<script>alert(1)</script>\u{FFFD} oops "), "{snippet:?}");
        assert!(!snippet.contains('\0'));
    }
    let snapshot_id = run["snapshot_id"].as_str().expect("the change's snapshot");
    let snapshot = app.ok(&format!("/snapshots/{snapshot_id}"), &token).await;
    assert_eq!(snapshot["content"], "2\u{FFFD} EUR\n", "{snapshot}");
}

/// A page whose every line changes (a diff bomb) and a page longer than the text cap: the text
/// is cut and ends with a line saying so, the change's webhook carries a cut diff that says so
/// and where the whole one is, and that path answers with the whole diff.
pub async fn long_texts_and_diffs_are_cut_and_say_so(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.max_text_bytes = 400_000).await;
    let token = app.account("acme").await;
    // 100,000 pseudo-random digits a line on each side: 200 KB of text, cut at 400 KB of
    // markup-free text only when longer, so this page is kept whole...
    let digits = |seed: u64, lines: usize| -> String {
        let mut x = seed;
        (0..lines)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                format!("{}\n", (x >> 60) % 10)
            })
            .collect()
    };
    let as_page = |text: &str| format!("<html><body><pre>{text}</pre></body></html>");
    let site = PageServer::start(&as_page(&digits(1, 100_000))).await;
    let receiver = Receiver::start(200).await;
    endpoint(&app, &token, &receiver.url).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url})).await;
    let watch_id = watch["id"].as_str().expect("id");
    site.set(&as_page(&digits(2, 100_000)));
    let run = app.check(&token, watch_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");

    let hook = receiver.wait_for(1).await.remove(0);
    assert!(hook.body.len() < 200_000, "the webhook body is bounded: {} bytes", hook.body.len());
    let payload = hook.json();
    let diff = &payload["data"]["diff"];
    assert_eq!(diff["truncated"], true);
    assert!(
        diff["added"].as_u64().unwrap_or(0) > 1_000 && diff["removed"].as_u64().unwrap_or(0) > 1_000,
        "{}",
        diff["added"]
    );
    let unified = diff["unified"].as_str().expect("unified");
    assert!(unified.lines().last().is_some_and(|l| l.starts_with("[driftwatch: the diff was cut at 65536 bytes")));
    let full = diff["full_diff"].as_str().expect("the path of the whole diff");
    let whole = app.ok(full.strip_prefix("/api/v1").expect("an API path"), &token).await;
    let whole_unified = whole["unified"].as_str().expect("the whole unified diff");
    assert!(whole_unified.len() > unified.len() * 4, "{} bytes in full", whole_unified.len());
    assert!(whole["added"].as_u64().unwrap_or(0) > 1_000, "{}", whole["added"]);

    // ...and a page past the cap is cut at a line end, with a line saying so.
    site.set(&as_page(&digits(3, 300_000)));
    let run = app.check(&token, watch_id).await;
    let snapshot_id = run["snapshot_id"].as_str().expect("a snapshot");
    let content =
        app.ok(&format!("/snapshots/{snapshot_id}"), &token).await["content"].as_str().expect("content").to_owned();
    assert!(content.len() <= 400_000 + 64, "{}", content.len());
    assert!(
        content.ends_with("\n[driftwatch: the text was cut at 400000 bytes]\n"),
        "{}",
        &content[content.len() - 80..]
    );
}

/// Markup nested deeper than the extractor's limit fails its run at once with a clear error
/// (extraction was quadratic in the depth: 100,000 levels took half a minute a check).
pub async fn a_page_nested_too_deep_fails_its_run_clearly(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let nested = format!("<html><body>{}x{}</body></html>", "<div>".repeat(100_000), "</div>".repeat(100_000));
    let site = PageServer::start(&nested).await;
    for selector in [None, Some("div")] {
        let mut body = json!({"url": site.url});
        if let Some(selector) = selector {
            body["selector"] = json!(selector);
        }
        let watch = app.watch_with_baseline(&token, body).await;
        let runs = app.ok(&format!("/watches/{}/runs", watch["id"].as_str().expect("id")), &token).await;
        let run = &items(&runs)[0];
        assert_eq!(run["outcome"], "failed", "{run}");
        assert_eq!(run["error"], "the page nests elements more than 1024 deep", "{run}");
    }
}

pub async fn a_failing_page_is_a_failed_run_not_a_change(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&page("1")).await;
    let receiver = Receiver::start(200).await;
    endpoint(&app, &token, &receiver.url).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price"})).await;
    let watch_id = watch["id"].as_str().expect("id");

    site.set_status(500);
    let run = app.check(&token, watch_id).await;
    assert_eq!(run["outcome"], "failed");
    assert_eq!(run["http_status"], 500);
    assert_eq!(run["error"], "HTTP 500");
    assert_eq!(app.ok(&format!("/watches/{watch_id}"), &token).await["consecutive_failures"], 1);

    site.set_status(200);
    site.set("<html><body><p>no price here</p></body></html>");
    let run = app.check(&token, watch_id).await;
    assert_eq!(run["outcome"], "failed");
    assert!(run["error"].as_str().is_some_and(|e| e.contains("matched nothing")), "{run}");
    assert_eq!(app.ok(&format!("/watches/{watch_id}"), &token).await["consecutive_failures"], 2);

    site.set("<html><body>   </body></html>");
    let run = app.check(&token, watch_id).await;
    assert_eq!(run["outcome"], "failed", "an empty page is a failed run, not a change");
    site.set("<html><body><div id=\"price\"> </div></body></html>");
    assert_eq!(app.check(&token, watch_id).await["error"], "the page has no text");

    // Back to the original content: not a change, and the failure streak resets.
    site.set(&page("1"));
    assert_eq!(app.check(&token, watch_id).await["outcome"], "unchanged");
    assert_eq!(app.ok(&format!("/watches/{watch_id}"), &token).await["consecutive_failures"], 0);
    let events = app.ok("/events", &token).await;
    let types: Vec<&str> = items(&events).iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        vec!["check.recovered", "check.failed", "check.selector_missing"],
        "health events, never a change"
    );
    let runs = app.ok(&format!("/watches/{watch_id}/runs"), &token).await;
    let outcomes: Vec<&str> = items(&runs).iter().map(|r| r["outcome"].as_str().unwrap_or("")).collect();
    assert_eq!(
        outcomes,
        vec!["unchanged", "failed", "failed", "failed", "failed", "baseline"],
        "every run is recorded, newest first"
    );
}

pub async fn each_endpoint_of_the_owner_gets_one_delivery(backend: Backend) {
    let app = TestApp::start(backend).await;
    let (alice, bob) = (app.account("alice").await, app.account("bob").await);
    let site = PageServer::start(&page("1")).await;
    let (first, second, bobs) = (Receiver::start(200).await, Receiver::start(204).await, Receiver::start(200).await);
    let (_, first_secret) = endpoint(&app, &alice, &first.url).await;
    let (_, second_secret) = endpoint(&app, &alice, &second.url).await;
    endpoint(&app, &bob, &bobs.url).await;

    let watch = app.watch_with_baseline(&alice, json!({"url": site.url})).await;
    site.set(&page("2"));
    assert_eq!(app.check(&alice, watch["id"].as_str().expect("id")).await["outcome"], "changed");

    let a = first.wait_for(1).await;
    let b = second.wait_for(1).await;
    a[0].verify(&first_secret).expect("signed with the first endpoint's secret");
    b[0].verify(&second_secret).expect("signed with the second endpoint's secret");
    assert_ne!(a[0].header("webhook-id"), b[0].header("webhook-id"), "one delivery per endpoint");
    assert_eq!(a[0].body, b[0].body, "the same event body");
    eventually("both deliveries sent", || async {
        let sent = app.ok("/deliveries?status=sent", &alice).await;
        (items(&sent).len() == 2).then_some(())
    })
    .await;
    assert!(bobs.received().is_empty(), "another owner's endpoint gets nothing");
    assert!(items(&app.ok("/deliveries", &bob).await).is_empty());
}
