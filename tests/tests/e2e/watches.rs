//! Watches as a resource (update, pause, delete, schedules, snapshots, diffs) and their health.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};
use serde_json::{Value, json};

use crate::support::{SendChecked, TestApp};

/// Waits until the watch has `n` runs; returns the newest.
async fn wait_for_runs(app: &TestApp, token: &str, id: &str, n: usize) -> Value {
    eventually(&format!("{n} runs"), || async {
        let runs = app.ok(&format!("/watches/{id}/runs?limit=500"), token).await;
        let items = runs["items"].as_array().cloned().unwrap_or_default();
        (items.len() == n).then(|| items[0].clone())
    })
    .await
}

pub async fn watches_can_be_updated_paused_and_deleted(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<p id=a>one</p><p id=b>two</p>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#a"})).await;
    let id = watch["id"].as_str().expect("id");
    let path = format!("/watches/{id}");

    let (status, updated) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &token,
            Some(json!({"name": "Renamed", "cron": "0 0 9 * * MON-FRI", "time_zone": "Europe/Paris"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(updated["name"], "Renamed");
    assert_eq!(updated["cron"], "0 0 9 * * MON-FRI");
    assert!(updated["interval_seconds"].is_null(), "a cron schedule replaces the interval");
    assert_eq!(updated["selector"], "#a", "fields left out stay as they were");
    let next = chrono::DateTime::parse_from_rfc3339(updated["next_run_at"].as_str().expect("next run")).expect("time");
    let local = next.with_timezone(&chrono_tz::Europe::Paris);
    assert_eq!(chrono::Timelike::hour(&local), 9, "next run at 09:00 Paris time: {local}");

    let (status, cleared) =
        app.call(reqwest::Method::PATCH, &path, &token, Some(json!({"selector": null, "interval_seconds": 600}))).await;
    assert_eq!(status, StatusCode::OK, "{cleared}");
    // A new selector is read afresh: a new baseline, not a change.
    let rebased = wait_for_runs(&app, &token, id, 2).await;
    assert_eq!(rebased["outcome"], "baseline", "{rebased}");
    assert_eq!(app.ok(&format!("/events?watch_id={id}"), &token).await["items"], json!([]));
    assert!(cleared["selector"].is_null() && cleared["cron"].is_null() && cleared["time_zone"].is_null());
    assert_eq!(cleared["interval_seconds"], 600);

    for (body, field) in [
        (json!({"cron": "every day"}), "cron"),
        (json!({"cron": "0 * * * *", "time_zone": "Mars/Olympus"}), "time_zone"),
        (json!({"interval_seconds": 600, "cron": "0 * * * *"}), "cron"),
        (json!({"selector": "p[["}), "selector"),
        (json!({"name": ""}), "name"),
        (json!({"url": "gopher://x"}), "url"),
        (json!({"state": "paused"}), "state"),
    ] {
        let (status, problem) = app.call(reqwest::Method::PATCH, &path, &token, Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {problem}");
        assert_eq!(problem["errors"][0]["field"], field, "{body}: {problem}");
    }

    let (status, paused) = app.post(&format!("{path}/pause"), &token, json!({})).await;
    assert_eq!((status, paused["state"].as_str()), (StatusCode::OK, Some("paused")));
    let listed = |query: &'static str| {
        let (app, token) = (&app, &token);
        async move { app.ok(&format!("/watches?{query}"), token).await["items"].as_array().map_or(0, Vec::len) }
    };
    assert_eq!((listed("state=paused").await, listed("state=active").await), (1, 0), "filtered by state");
    let (status, problem) = app.get("/watches?state=sleeping", &token).await;
    assert_eq!((status, &problem["errors"][0]["field"]), (StatusCode::UNPROCESSABLE_ENTITY, &json!("state")));
    let (_, resumed) = app.post(&format!("{path}/resume"), &token, json!({})).await;
    assert_eq!(resumed["state"], "active");

    let other = app.account("other").await;
    assert_eq!(app.call(reqwest::Method::DELETE, &path, &other, None).await.0, StatusCode::NOT_FOUND);
    assert_eq!(
        app.call(reqwest::Method::PATCH, &path, &other, Some(json!({"name": "x"}))).await.0,
        StatusCode::NOT_FOUND
    );
    let (status, _) = app.call(reqwest::Method::DELETE, &path, &token, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(app.get(&path, &token).await.0, StatusCode::NOT_FOUND);
}

pub async fn snapshots_and_diffs_are_readable(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<ul><li>apples</li><li>pears</li></ul>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url})).await;
    let id = watch["id"].as_str().expect("id");
    site.set("<ul><li>apples</li><li>plums</li></ul>");
    assert_eq!(app.check(&token, id).await["outcome"], "changed");
    site.set("<ul><li>apples</li><li>plums</li><li>figs</li></ul>");
    assert_eq!(app.check(&token, id).await["outcome"], "changed");

    let list = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 3, "one snapshot per distinct content");
    assert!(items[0].get("content").is_none(), "listings leave the content out");
    let (newest, oldest) = (items[0]["id"].as_str().expect("id"), items[2]["id"].as_str().expect("id"));
    let snapshot = app.ok(&format!("/snapshots/{oldest}"), &token).await;
    assert_eq!(snapshot["content"], "apples\npears\n");

    let latest = app.ok(&format!("/watches/{id}/diff"), &token).await;
    assert_eq!(latest["to"], newest);
    assert_eq!((latest["added"].as_i64(), latest["removed"].as_i64()), (Some(1), Some(0)));
    let whole = app.ok(&format!("/watches/{id}/diff?from={oldest}&to={newest}"), &token).await;
    assert_eq!((whole["added"].as_i64(), whole["removed"].as_i64()), (Some(2), Some(1)));
    let text = app
        .http
        .get(format!("{}/watches/{id}/diff?from={oldest}&to={newest}&format=unified", app.base))
        .bearer_auth(&token)
        .send_checked()
        .await
        .expect("diff");
    assert_eq!(text.status(), 200);
    let body = text.text().await.expect("text");
    assert!(body.contains("-pears") && body.contains("+plums") && body.contains("+figs"), "{body}");

    // Retention keeps the newest snapshots of each watch.
    let store = app.app.as_ref().expect("running").store.clone();
    let long_ago = chrono::Utc::now().naive_utc() - chrono::TimeDelta::days(3650);
    let now = chrono::Utc::now().naive_utc();
    let keep = driftwatch_store::retention::Retention::keep_everything(now);
    let policy =
        driftwatch_store::retention::Retention { keep_snapshots: 2, snapshots_before: long_ago, ..keep.clone() };
    let deleted = driftwatch_store::retention::purge(&store, &policy).await.expect("purge").snapshots;
    assert_eq!(deleted, 1);
    let kept = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    assert_eq!(kept["items"].as_array().map(Vec::len), Some(2));
    assert_eq!(kept["items"][0]["id"], newest, "the newest is kept");
    let everything_old = chrono::Utc::now().naive_utc() + chrono::TimeDelta::days(1);
    let policy =
        driftwatch_store::retention::Retention { keep_snapshots: 100, snapshots_before: everything_old, ..keep };
    driftwatch_store::retention::purge(&store, &policy).await.expect("purge");
    let kept = app.ok(&format!("/watches/{id}/snapshots"), &token).await;
    assert_eq!(kept["items"].as_array().map(Vec::len), Some(1), "by age too, but never the newest");

    let other = app.account("other").await;
    assert_eq!(app.get(&format!("/snapshots/{newest}"), &other).await.0, StatusCode::NOT_FOUND);
    assert_eq!(app.get(&format!("/watches/{id}/diff?from=snp_nope"), &token).await.0, StatusCode::NOT_FOUND);
    let (status, problem) = app.get(&format!("/watches/{id}/diff?format=pdf"), &token).await;
    assert_eq!((status, &problem["errors"][0]["field"]), (StatusCode::UNPROCESSABLE_ENTITY, &json!("format")));
}

pub async fn failing_checks_raise_failed_then_recovered(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<div id=price>10</div>").await;
    let receiver = Receiver::start(200).await;
    let (status, endpoint) = app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    assert_eq!(status, StatusCode::CREATED);
    let secret = endpoint["secret"].as_str().expect("secret").to_owned();
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price", "name": "Price"})).await;
    let id = watch["id"].as_str().expect("id");

    site.set_status(500);
    for n in 1..=3 {
        let run = app.check(&token, id).await;
        assert_eq!(run["outcome"], "failed");
        let health = app.ok(&format!("/watches/{id}"), &token).await["health"].clone();
        assert_eq!(health, if n < 3 { "ok" } else { "failing" }, "after {n} failures");
    }
    app.check(&token, id).await;
    let failed = receiver.wait_for(1).await;
    failed[0].verify(&secret).expect("signed");
    let event = failed[0].json();
    assert_eq!(event["type"], "check.failed");
    assert_eq!(event["data"]["check"]["http_status"], 500);
    assert_eq!(event["data"]["check"]["consecutive_failures"], 3);
    assert_eq!(receiver.received().len(), 1, "raised once, when the watch became failing");
    let failing = app.ok("/watches?health=failing", &token).await;
    assert_eq!(failing["items"][0]["id"], id, "what needs a look");
    assert_eq!(app.ok("/watches?health=ok", &token).await["items"], json!([]));
    let failed_events = app.ok("/events?type=check.failed", &token).await;
    assert_eq!(failed_events["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(app.ok("/events?type=change.detected", &token).await["items"], json!([]));

    // The page comes back with the watched element gone: its own state and event.
    site.set_status(200);
    site.set("<div id=other>10</div>");
    for _ in 0..3 {
        app.check(&token, id).await;
    }
    assert_eq!(app.ok(&format!("/watches/{id}"), &token).await["health"], "selector_missing");
    assert_eq!(receiver.wait_for(2).await[1].json()["type"], "check.selector_missing");

    site.set("<div id=price>10</div>");
    assert_eq!(app.check(&token, id).await["outcome"], "unchanged");
    let recovered = receiver.wait_for(3).await;
    assert_eq!(recovered[2].json()["type"], "check.recovered");
    let watch = app.ok(&format!("/watches/{id}"), &token).await;
    assert_eq!((watch["health"].as_str(), watch["consecutive_failures"].as_i64()), (Some("ok"), Some(0)));
    let events = app.ok(&format!("/events?watch_id={id}"), &token).await;
    let types: Vec<&str> =
        events["items"].as_array().expect("items").iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, vec!["check.recovered", "check.selector_missing", "check.failed"]);
    let _ = eventually("every health event sent", || async {
        let sent = app.ok("/deliveries?status=sent", &token).await;
        (sent["items"].as_array().map_or(0, Vec::len) == 3).then_some(())
    })
    .await;
}

pub async fn noise_is_filtered_and_real_changes_alert_once(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let page = |price: &str, visitors: u32, date: &str, banner: &str| {
        format!(
            "<main><p>Price: {price} EUR</p><p>Visitors today: {visitors}</p><p>Updated {date}</p>\
             <div class=ad>{banner}</div></main>"
        )
    };
    let site = PageServer::start(&page("10", 1, "2026-12-01 10:00", "Buy now")).await;
    let receiver = Receiver::start(200).await;
    app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    let options = json!({
        "extract": {"remove_selectors": [".ad"]},
        "rules": {"ignore_lines": ["^Visitors"], "masks": ["dates", "times"]},
        "noise": {"known_states": 3}
    });
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "options": options})).await;
    let id = watch["id"].as_str().expect("id");
    assert_eq!(watch["options"]["rules"]["masks"], json!(["dates", "times"]));

    // Counters, dates and ads change: not a change at all.
    site.set(&page("10", 977, "2026-12-02 16:45", "Sale!"));
    assert_eq!(app.check(&token, id).await["outcome"], "unchanged");

    // The price changes: exactly one alert.
    site.set(&page("12", 1200, "2026-12-02 17:00", "Sale!"));
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "changed");
    assert!(run["event_id"].is_string());
    let hook = &receiver.wait_for(1).await[0];
    let unified = hook.json()["data"]["diff"]["unified"].as_str().expect("diff").to_owned();
    assert!(unified.contains("-Price: 10 EUR") && unified.contains("+Price: 12 EUR"), "{unified}");

    // Flapping back to a recent state records the change but raises nothing.
    site.set(&page("10", 5, "2026-12-03 09:00", "x"));
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "changed");
    assert!(run["event_id"].is_null(), "{run}");
    assert_eq!(run["note"], "no alert: back to a recent state");
    let events = app.ok(&format!("/events?watch_id={id}"), &token).await;
    assert_eq!(events["items"].as_array().map(Vec::len), Some(1), "one alert in all");

    // A trigger text set later gates alerts on its presence. (Changed options make the runner
    // check at once; wait for that check before checking by hand.)
    let runs_before =
        app.ok(&format!("/watches/{id}/runs?limit=500"), &token).await["items"].as_array().map_or(0, Vec::len);
    let (status, _) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/watches/{id}"),
            &token,
            Some(json!({"options": {"noise": {"trigger_text": ["/Price: 9\\d? EUR/"]}}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    wait_for_runs(&app, &token, id, runs_before + 1).await;
    site.set(&page("11", 5, "2026-12-03 09:00", "x"));
    assert_eq!(app.check(&token, id).await["note"], "no alert: no trigger text present");
    site.set(&page("9", 5, "2026-12-03 09:00", "x"));
    assert!(app.check(&token, id).await["event_id"].is_string(), "the trigger text appeared");

    for (options, field) in [
        (json!({"rules": {"ignore_lines": ["(unclosed"]}}), "options.rules.ignore_lines[0]"),
        (json!({"noise": {"block_text": ["/[/"]}}), "options.noise.block_text[0]"),
        (json!({"extract": {"remove_selectors": ["p[["]}}), "options.extract.remove_selectors[0]"),
        (json!({"extract": {"json_pointer": "data"}}), "options.extract.json_pointer"),
        (json!({"noise": {"min_change_percent": 101.0}}), "options.noise.min_change_percent"),
        (json!({"noise": {"loudness": 3}}), "options.noise.loudness"),
    ] {
        let (status, problem) = app.post("/watches", &token, json!({"url": site.url, "options": options})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(problem["errors"][0]["field"], field, "{problem}");
    }
}

pub async fn requests_follow_the_watch_and_304_costs_nothing(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<p>v1</p>").await;
    site.set_etag(Some("\"v1\""));
    let options = json!({"fetch": {
        "method": "POST", "body": "q=price", "headers": {"x-api-key": "k1"},
        "cookies": {"session": "abc"}, "user_agent": "MyWatcher/1.0", "timeout_seconds": 10
    }});
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "options": options})).await;
    let id = watch["id"].as_str().expect("id");
    let first = site.requests()[0].clone();
    assert_eq!((first.method.as_str(), first.body.as_str()), ("POST", "q=price"));
    assert_eq!(first.headers["x-api-key"], "k1");
    assert_eq!(first.headers["cookie"], "session=abc");
    assert_eq!(first.headers["user-agent"], "MyWatcher/1.0");
    assert!(!first.headers.contains_key("if-none-match"), "conditional requests are for GET only");

    // Back to a plain GET: the ETag comes back, and an unchanged page answers 304.
    let (status, _) =
        app.call(reqwest::Method::PATCH, &format!("/watches/{id}"), &token, Some(json!({"options": {}}))).await;
    assert_eq!(status, StatusCode::OK);
    // Changed options make the runner fetch again at once, in full.
    let refetch = wait_for_runs(&app, &token, id, 2).await;
    assert_eq!(refetch["http_status"], 200, "{refetch}");
    let run = app.check(&token, id).await;
    assert_eq!((run["outcome"].as_str(), run["http_status"].as_i64()), (Some("unchanged"), Some(304)), "{run}");
    assert_eq!(site.requests().last().expect("request").headers["if-none-match"], "\"v1\"");

    // A new version with a new ETag is fetched and compared as usual.
    site.set("<p>v2</p>");
    site.set_etag(Some("\"v2\""));
    assert_eq!(app.check(&token, id).await["outcome"], "changed");

    let (status, problem) = app
        .post("/watches", &token, json!({"url": site.url, "options": {"fetch": {"headers": {"bad header": "x"}}}}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["errors"][0]["field"], "options.fetch.headers.bad header");
}

pub async fn one_host_is_not_hammered_and_changes_can_be_confirmed(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.per_host_concurrency = 1;
        s.per_host_gap = driftwatch::HumanDuration(std::time::Duration::from_millis(300));
    })
    .await;
    let token = app.account("acme").await;
    let site = PageServer::start("<p>stable</p>").await;
    for n in 0..3 {
        let (status, _) = app.post("/watches", &token, json!({"url": format!("{}?n={n}", site.url)})).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    eventually("three baseline checks", || async { (site.requests().len() >= 3).then_some(()) }).await;
    let times: Vec<_> = site.requests().iter().map(|r| r.at).collect();
    // Starts are 300 ms apart; arrival times jitter by a few ms on a busy machine.
    for pair in times.windows(2) {
        assert!(pair[1] - pair[0] >= std::time::Duration::from_millis(200), "requests to one host are spaced");
    }
    assert!(times[2] - times[0] >= std::time::Duration::from_millis(550), "two gaps of 300 ms");

    // Confirm-by-refetch: a change that is gone a moment later raises nothing.
    let watch = app
        .watch_with_baseline(&token, json!({"url": site.url, "options": {"noise": {"confirm_after_seconds": 1}}}))
        .await;
    let id = watch["id"].as_str().expect("id").to_owned();
    site.set("<p>glitch</p>");
    let pending = tokio::spawn({
        let (base, token, http) = (app.base.clone(), token.clone(), app.http.clone());
        async move {
            http.post(format!("{base}/watches/{id}/check"))
                .bearer_auth(token)
                .send_checked()
                .await
                .expect("check")
                .json::<Value>()
                .await
                .expect("json")
        }
    });
    let before = site.requests().len();
    eventually("the first fetch of the check", || async { (site.requests().len() > before).then_some(()) }).await;
    site.set("<p>stable</p>");
    let run = pending.await.expect("join");
    assert_eq!(run["outcome"], "changed", "{run}");
    assert!(run["event_id"].is_null());
    assert_eq!(run["note"], "no alert: a second fetch did not confirm the change");
}

pub async fn check_now_joins_a_running_check(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let site = PageServer::start("<p id=a>one</p>").await;
    site.set_delay(std::time::Duration::from_millis(1500));
    let (status, watch) = app.post("/watches", &token, json!({"url": site.url, "selector": "#a"})).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    let id = watch["id"].as_str().expect("id");
    // The first check runs at once and is still fetching the slow page: check now joins it.
    eventually("the first check to start", || async { (!site.requests().is_empty()).then_some(()) }).await;
    let run = app.check(&token, id).await;
    assert_eq!(run["outcome"], "baseline", "the joined check's run: {run}");
    assert_eq!(site.requests().len(), 1, "one fetch, not two");
    let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
    assert_eq!(runs["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(runs["items"][0]["id"], run["id"]);
    // With nothing running, check now runs a check of its own.
    site.set_delay(std::time::Duration::ZERO);
    let second = app.check(&token, id).await;
    assert_ne!(second["id"], run["id"]);
    assert_eq!(site.requests().len(), 2);
}

pub async fn tags_search_and_bulk_actions(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let bob = app.account("bob").await;
    let site = PageServer::start("<p>hello</p>").await;
    let mut ids = Vec::new();
    for (name, tags) in [("Alpha shop", json!(["Shop", "eu"])), ("Beta news", json!(["news"])), ("Gamma", json!([]))] {
        let watch = app.watch_with_baseline(&token, json!({"url": site.url, "name": name, "tags": tags})).await;
        ids.push(watch["id"].as_str().expect("id").to_owned());
    }
    let first = app.ok(&format!("/watches/{}", ids[0]), &token).await;
    assert_eq!(first["tags"], json!(["eu", "shop"]), "normalised: lower case, sorted");
    let (status, problem) = app.post("/watches", &token, json!({"url": site.url, "tags": ["no spaces"]})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["errors"][0]["field"], "tags", "{problem}");
    let names = |list: Value| -> Vec<String> {
        list["items"].as_array().expect("items").iter().map(|w| w["name"].as_str().expect("name").to_owned()).collect()
    };
    assert_eq!(names(app.ok("/watches?tag=SHOP", &token).await), ["Alpha shop"]);
    assert_eq!(names(app.ok("/watches?q=NEWS", &token).await), ["Beta news"]);
    assert_eq!(names(app.ok("/watches?q=%25", &token).await), Vec::<String>::new(), "% is text, not a wildcard");
    // Orders, with keyset pages that follow them.
    assert_eq!(names(app.ok("/watches?sort=newest", &token).await), ["Gamma", "Beta news", "Alpha shop"]);
    let rename = Some(json!({"name": "Zeta shop"}));
    let (status, _) = app.call(reqwest::Method::PATCH, &format!("/watches/{}", ids[0]), &token, rename).await;
    assert_eq!(status, StatusCode::OK);
    let first = app.ok("/watches?sort=name&limit=2", &token).await;
    assert_eq!(names(first.clone()), ["Beta news", "Gamma"]);
    let cursor = first["next_cursor"].as_str().expect("a next page").to_owned();
    assert_eq!(names(app.ok(&format!("/watches?sort=name&limit=2&cursor={cursor}"), &token).await), ["Zeta shop"]);
    let bobs = app.watch_with_baseline(&bob, json!({"url": site.url, "name": "Bob"})).await;
    let bobs = bobs["id"].as_str().expect("id");

    // Pause two by id (another account's id is not counted), resume by filter.
    let (status, paused) = app.post("/watches/pause", &token, json!({"ids": [ids[0], ids[1], bobs]})).await;
    assert_eq!(status, StatusCode::OK, "{paused}");
    assert_eq!(paused["count"], 2);
    assert_eq!(names(app.ok("/watches?state=paused", &token).await), ["Zeta shop", "Beta news"]);
    assert_eq!(app.ok(&format!("/watches/{bobs}"), &bob).await["state"], "active");
    let (_, resumed) = app.post("/watches/resume", &token, json!({"filter": {"tag": "news"}})).await;
    assert_eq!(resumed["count"], 1);

    // Check every active watch of the account: queued (202), and the runner takes them.
    let before = site.requests().len();
    let (status, queued) = app.post("/watches/check", &token, json!({"all": true})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{queued}");
    assert_eq!(queued["count"], 2, "the paused one is left alone");
    eventually("the queued checks", || async { (site.requests().len() >= before + 2).then_some(()) }).await;

    // Tag and untag; exactly one of ids or filter.
    let (_, tagged) = app.post("/watches/tag", &token, json!({"ids": [ids[2]], "add": ["Later"]})).await;
    assert_eq!(tagged["count"], 1);
    assert_eq!(names(app.ok("/watches?tag=later", &token).await), ["Gamma"]);
    let (_, untagged) =
        app.post("/watches/tag", &token, json!({"filter": {"tag": "later"}, "remove": ["later"]})).await;
    assert_eq!(untagged["count"], 1);
    let (status, _) = app.post("/watches/pause", &token, json!({"ids": [ids[0]], "filter": {}})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Delete by filter; Bob's watch stays.
    let (_, deleted) = app.post("/watches/delete", &token, json!({"filter": {"q": "a"}})).await;
    assert_eq!(deleted["count"], 3);
    assert_eq!(names(app.ok("/watches", &token).await), Vec::<String>::new());
    assert_eq!(app.ok(&format!("/watches/{bobs}"), &bob).await["name"], "Bob");
}

/// Past the failure threshold a failing watch's checks back off (doubling, capped), shown in
/// its `next_run_at`; a check on demand still runs at once; a success restores its schedule.
pub async fn failing_watches_back_off_until_a_success(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.failure_threshold = 2;
        s.failing_backoff_max = driftwatch::HumanDuration(std::time::Duration::from_secs(3_600));
    })
    .await;
    let token = app.account("acme").await;
    let site = PageServer::start("<div id=price>10</div>").await;
    let watch =
        app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price", "interval_seconds": 60})).await;
    let id = watch["id"].as_str().expect("id");
    // Seconds from the last run's end to the next due time.
    let wait = || async {
        let watch = app.ok(&format!("/watches/{id}"), &token).await;
        let runs = app.ok(&format!("/watches/{id}/runs"), &token).await;
        let time = |v: &Value| {
            chrono::DateTime::parse_from_rfc3339(v.as_str().expect("a time")).expect("rfc 3339").timestamp()
        };
        time(&watch["next_run_at"]) - time(&runs["items"][0]["finished_at"])
    };
    assert!(wait().await <= 60, "on schedule");

    site.set_status(503);
    let mut waits = Vec::new();
    let mut runs = std::collections::HashSet::new();
    for _ in 0..5 {
        // A check now runs at once, backed off or not: each answers with a run of its own.
        let run = app.check(&token, id).await;
        assert_eq!(run["outcome"], "failed", "{run}");
        assert!(runs.insert(run["id"].to_string()), "a new run, not the last one again: {run}");
        waits.push(wait().await);
    }
    // Failures 1 and 2 stay on schedule; from the threshold the wait doubles (on the watch's
    // phase, so within one interval below the doubling), then holds at the cap.
    assert!(waits[0] <= 60 && waits[1] > 60, "backs off from the threshold: {waits:?}");
    for (wait, doubled) in waits[1..].iter().zip([120, 240, 480, 960]) {
        assert!(*wait > doubled - 60 && *wait <= doubled, "doubling: {waits:?}");
    }
    let health = app.ok(&format!("/watches/{id}"), &token).await["health"].clone();
    assert_eq!(health, "failing");

    site.set_status(200);
    assert_eq!(app.check(&token, id).await["outcome"], "unchanged");
    assert!(wait().await <= 60, "a success restores the schedule");
}
