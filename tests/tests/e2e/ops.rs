//! What an operator scrapes and probes: `/metrics` moves with real work (checks, a failing
//! receiver, a dead letter) and parses as Prometheus text; `/readyz` answers for the database.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, Receiver, eventually};
use openmetrics_parser::{MetricsExposition, OpenMetricsType, OpenMetricsValue};
use serde_json::json;

use crate::support::TestApp;

diesel::table! {
    /// diesel_migrations' own table.
    #[sql_name = "__diesel_schema_migrations"]
    migrations (version) {
        version -> Text,
    }
}

const TOKEN: &str = "metrics-secret-token";

fn page(price: &str) -> String {
    format!("<html><body><div id=\"price\">Price: {price}</div></body></html>")
}

type Scrape = MetricsExposition<OpenMetricsType, OpenMetricsValue>;

/// Scrapes `/metrics` with the token and parses it with a strict OpenMetrics parser.
async fn scrape(app: &TestApp) -> Scrape {
    let response = app.http.get(format!("{}/metrics", app.root())).bearer_auth(TOKEN).send().await.expect("scrape");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().expect("ascii").to_owned();
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    let text = response.text().await.expect("body");
    assert!(text.ends_with("# EOF\n"), "a complete exposition");
    openmetrics_parser::openmetrics::parse_openmetrics(&text)
        .unwrap_or_else(|e| panic!("the exposition parses: {e:?}\n{text}"))
}

/// The sum over the samples of `family` that carry these labels (among others): a counter's
/// or gauge's value, a histogram's count, 1 for an info; 0 when there is none.
fn get(scrape: &Scrape, family: &str, labels: &[(&str, &str)]) -> f64 {
    let Some(family) = scrape.families.get(family) else { return 0.0 };
    family
        .iter_samples()
        .filter(|sample| {
            let set = sample.get_labelset().expect("bound to its family");
            labels.iter().all(|(k, v)| set.get_label_value(k) == Some(*v))
        })
        .map(|sample| match &sample.value {
            OpenMetricsValue::Counter(c) => c.value.as_f64(),
            OpenMetricsValue::Gauge(n) | OpenMetricsValue::Unknown(n) => n.as_f64(),
            OpenMetricsValue::Histogram(h) => h.count.unwrap_or(0) as f64,
            OpenMetricsValue::Info => 1.0,
            other => panic!("unexpected {other:?}"),
        })
        .sum()
}

/// Whether any sample of any family has a label value containing `text`.
fn any_label_contains(scrape: &Scrape, text: &str) -> bool {
    scrape.families.values().any(|family| {
        family
            .iter_samples()
            .any(|sample| sample.get_labelset().is_ok_and(|set| set.iter_values().any(|value| value.contains(text))))
    })
}

pub async fn metrics_move_with_real_work(backend: Backend) {
    let app = TestApp::start_with(backend, |s| {
        s.max_attempts = 2;
        s.retry_schedule = "50ms".into();
        s.metrics_token = Some(TOKEN.into());
    })
    .await;

    // The token is required, and a wrong one is refused.
    let url = format!("{}/metrics", app.root());
    assert_eq!(app.http.get(&url).send().await.expect("scrape").status(), StatusCode::UNAUTHORIZED);
    assert_eq!(app.http.get(&url).bearer_auth("nope").send().await.expect("scrape").status(), 401);

    let before = scrape(&app).await;
    assert_eq!(get(&before, "driftwatch_checks", &[]), 0.0);
    assert_eq!(get(&before, "driftwatch_build", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    assert_eq!(get(&before, "driftwatch_db_pool_max_connections", &[]), 8.0, "the test pool size");

    let token = app.account("acme").await;
    let site = PageServer::start(&page("1")).await;
    let receiver = Receiver::start(503).await;
    let (status, endpoint) = app.post("/endpoints", &token, json!({"url": receiver.url})).await;
    assert_eq!(status, StatusCode::CREATED, "{endpoint}");
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price"})).await;
    let watch_id = watch["id"].as_str().expect("id");

    // A change, then a failing page.
    site.set(&page("2"));
    let (status, run) = app.post(&format!("/watches/{watch_id}/check"), &token, json!({})).await;
    assert_eq!((status, run["outcome"].as_str()), (StatusCode::OK, Some("changed")), "{run}");
    site.set_status(500);
    let (_, run) = app.post(&format!("/watches/{watch_id}/check"), &token, json!({})).await;
    assert_eq!(run["outcome"], "failed", "{run}");

    // The change's delivery fails twice (503) and goes dead.
    eventually("the delivery to go dead", || async {
        let dead = app.ok("/deliveries?status=dead", &token).await;
        (dead["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
    })
    .await;
    let unknown = app.http.get(format!("{}/no/such/page/42", app.root())).send().await.expect("get");
    assert_eq!(unknown.status(), 404);

    let after = scrape(&app).await;
    for (outcome, n) in [("baseline", 1.0), ("changed", 1.0), ("failed", 1.0), ("unchanged", 0.0)] {
        assert_eq!(get(&after, "driftwatch_checks", &[("outcome", outcome)]), n, "checks {outcome}");
    }
    assert_eq!(get(&after, "driftwatch_check_duration_seconds", &[]), 3.0, "one observation per check");
    assert_eq!(get(&after, "driftwatch_delivery_attempts", &[("outcome", "5xx")]), 2.0);
    assert_eq!(get(&after, "driftwatch_delivery_attempts", &[("outcome", "2xx")]), 0.0);
    assert_eq!(get(&after, "driftwatch_delivery_attempt_duration_seconds", &[]), 2.0);
    assert_eq!(get(&after, "driftwatch_dead_letters", &[]), 1.0);
    for status in ["pending", "retrying", "in_flight"] {
        assert_eq!(get(&after, "driftwatch_outbox_deliveries", &[("status", status)]), 0.0, "outbox {status}");
    }
    assert_eq!(get(&after, "driftwatch_outbox_oldest_due_age_seconds", &[]), 0.0);
    assert_eq!(get(&after, "driftwatch_endpoints", &[("state", "closed")]), 1.0);
    assert_eq!(get(&after, "driftwatch_endpoints", &[("state", "open")]), 0.0);
    assert_eq!(get(&after, "driftwatch_recoveries_running", &[]), 0.0);
    // Requests are counted by route template, never by raw path.
    let check_route = [("route", "/api/v1/watches/{id}/check"), ("method", "POST"), ("status", "200")];
    assert_eq!(get(&after, "driftwatch_http_requests", &check_route), 2.0);
    assert_eq!(get(&after, "driftwatch_http_requests", &[("route", "unmatched"), ("status", "404")]), 1.0);
    assert!(!any_label_contains(&after, watch_id), "no label carries an id");
    assert!(get(&after, "driftwatch_http_request_duration_seconds", &[("route", "/api/v1/watches")]) >= 1.0);

    // A due delivery shows in the outbox and its age: pause nothing, just queue a test event to
    // a receiver that holds it, and look while it is in flight.
    receiver.set_status(200);
    receiver.set_delay(std::time::Duration::from_secs(2));
    let endpoint_id = endpoint["id"].as_str().expect("id");
    let (status, _) = app.post(&format!("/endpoints/{endpoint_id}/test"), &token, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    receiver.wait_for(3).await;
    let busy = scrape(&app).await;
    assert_eq!(get(&busy, "driftwatch_outbox_deliveries", &[("status", "in_flight")]), 1.0);
}

pub async fn readiness_follows_the_database(backend: Backend) {
    let app = TestApp::start(backend).await;
    let ready = app.http.get(format!("{}/readyz", app.root())).send().await.expect("readyz");
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.text().await.expect("body"), "ready\n");
    let live = app.http.get(format!("{}/healthz", app.root())).send().await.expect("healthz");
    assert_eq!(live.status(), 200);
    // A schema older than the build (a migration not applied) is not ready.
    let store = app.app.as_ref().expect("running").store.clone();
    let newest: String = store
        .read(|c| {
            use diesel::prelude::*;
            let newest: Option<String> =
                migrations::table.select(diesel::dsl::max(migrations::version)).get_result(c)?;
            let newest = newest.expect("migrations were applied");
            diesel::delete(migrations::table.filter(migrations::version.eq(&newest))).execute(c)?;
            Ok(newest)
        })
        .await
        .expect("forget the newest migration");
    let unready = app.http.get(format!("{}/readyz", app.root())).send().await.expect("readyz");
    assert_eq!(unready.status(), 503);
    assert_eq!(unready.text().await.expect("body"), "1 migrations are not applied yet\n");
    store
        .write(move |c| {
            use diesel::prelude::*;
            diesel::insert_into(migrations::table).values(migrations::version.eq(newest)).execute(c)?;
            Ok(())
        })
        .await
        .expect("restore it");
    assert_eq!(app.http.get(format!("{}/readyz", app.root())).send().await.expect("readyz").status(), 200);

    // /metrics without a token configured is open.
    let open = app.http.get(format!("{}/metrics", app.root())).send().await.expect("metrics");
    assert_eq!(open.status(), 200);
}

/// A stopping node gives back the watches it claimed but has not started to fetch (waiting
/// for their turn at a host: its gap between two requests), and finishes and records the
/// fetch under way.
pub async fn stopping_gives_back_watches_not_yet_fetched(backend: Backend) {
    let mut app = TestApp::start_with(backend, |s| {
        s.per_host_concurrency = 2;
        s.per_host_gap = driftwatch::HumanDuration(std::time::Duration::from_secs(30));
    })
    .await;
    let token = app.account("acme").await;
    let site = PageServer::start(&page("1")).await;
    site.set_delay(std::time::Duration::from_millis(1500));
    let mut ids = Vec::new();
    for name in ["first", "second"] {
        let (status, watch) = app.post("/watches", &token, json!({"url": site.url, "name": name})).await;
        assert_eq!(status, StatusCode::CREATED, "{watch}");
        ids.push(watch["id"].as_str().expect("id").to_owned());
    }
    let running = app.app.take().expect("running");
    let store = running.store.clone();
    // One fetch is under way (the host takes one at a time); the other watch is claimed too.
    eventually("one fetch under way and both watches claimed", || async {
        let ids = ids.clone();
        let leased = store
            .read(move |c| {
                use diesel::prelude::*;
                use driftwatch_store::schema::watches;
                watches::table
                    .filter(watches::id.eq_any(ids))
                    .filter(watches::lease_owner.is_not_null())
                    .count()
                    .get_result::<i64>(c)
                    .map_err(Into::into)
            })
            .await
            .expect("count");
        (site.requests().len() == 1 && leased == 2).then_some(())
    })
    .await;

    assert!(running.shutdown_within(Some(std::time::Duration::from_secs(20))).await, "the drain finished");
    assert_eq!(site.requests().len(), 1, "nothing new was fetched once stopping");
    let ids_for_query = ids.clone();
    let (runs, leases) = store
        .read(move |c| {
            let mut runs = Vec::new();
            let mut leases = Vec::new();
            for id in &ids_for_query {
                use diesel::prelude::*;
                use driftwatch_store::schema::{runs as run_rows, watches};
                let n: i64 = run_rows::table.filter(run_rows::watch_id.eq(id)).count().get_result(c)?;
                runs.push(n as usize);
                let owner: Option<String> = watches::table.find(id).select(watches::lease_owner).get_result(c)?;
                leases.push(owner);
            }
            Ok((runs, leases))
        })
        .await
        .expect("read back");
    assert_eq!(runs.iter().sum::<usize>(), 1, "the fetch under way was recorded, the other not run: {runs:?}");
    assert_eq!(leases, vec![None, None], "both leases are free: one recorded, one given back");
}

/// Retention of runs and events: each watch keeps its newest runs, and an event past its age
/// goes with its deliveries and attempts unless one of them is still owed to a receiver. The
/// walk runs in batches of two here, so every boundary between batches is crossed.
pub async fn retention_keeps_the_newest_runs_and_what_is_owed(backend: Backend) {
    use diesel::prelude::*;
    use driftwatch_store::retention::{Retention, purge};
    use driftwatch_store::schema::{deliveries, delivery_attempts, events, runs};

    let app = TestApp::start_with(backend, |s| s.retry_schedule = "1h".into()).await;
    let token = app.account("acme").await;
    let site = PageServer::start(&page("0")).await;
    let happy = Receiver::start(200).await;
    app.post("/endpoints", &token, json!({"url": happy.url})).await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "selector": "#price"})).await;
    let watch_id = watch["id"].as_str().expect("id").to_owned();
    let check = |n: u32| {
        let (app, token, site, watch_id) = (&app, &token, &site, &watch_id);
        async move {
            site.set(&page(&n.to_string()));
            let (_, run) = app.post(&format!("/watches/{watch_id}/check"), token, json!({})).await;
            assert_eq!(run["outcome"], "changed", "{run}");
            run
        }
    };
    check(1).await;
    check(2).await;
    happy.wait_for(2).await;
    // A receiver that fails: the third change's delivery to it waits an hour for its retry.
    let failing = Receiver::start(503).await;
    app.post("/endpoints", &token, json!({"url": failing.url})).await;
    let owed_event = check(3).await["event_id"].as_str().expect("an event").to_owned();
    failing.wait_for(1).await;
    happy.wait_for(3).await;
    let store = app.app.as_ref().expect("running").store.clone();
    let count = |store: &driftwatch_store::Store| {
        let store = store.clone();
        async move {
            store
                .read(|c| {
                    let n = |t: i64| t as usize;
                    Ok([
                        n(runs::table.count().get_result(c)?),
                        n(events::table.count().get_result(c)?),
                        n(deliveries::table.count().get_result(c)?),
                        n(delivery_attempts::table.count().get_result(c)?),
                    ])
                })
                .await
                .expect("count")
        }
    };
    eventually("every attempt recorded", || async { (count(&store).await[3] == 4).then_some(()) }).await;
    assert_eq!(count(&store).await, [4, 3, 4, 4], "runs, events, deliveries, attempts before");

    let future = chrono::Utc::now().naive_utc() + chrono::TimeDelta::days(1);
    let policy = Retention {
        keep_runs: 2,
        runs_before: future,
        events_before: future,
        batch: 2,
        ..Retention::keep_everything(future)
    };
    let purged = purge(&store, &policy).await.expect("purge");
    assert_eq!((purged.runs, purged.events), (2, 2), "{purged:?}");
    assert_eq!(count(&store).await, [2, 1, 2, 2], "the owed event keeps both its deliveries and their attempts");
    let runs = app.ok(&format!("/watches/{watch_id}/runs"), &token).await;
    let outcomes: Vec<&str> =
        runs["items"].as_array().expect("items").iter().filter_map(|r| r["outcome"].as_str()).collect();
    assert_eq!(outcomes, ["changed", "changed"], "the two newest runs are kept");
    assert_eq!(runs["items"][0]["event_id"], owed_event.as_str());
    let left: Vec<String> = store.read(|c| Ok(events::table.select(events::id).load(c)?)).await.expect("events");
    assert_eq!(left, std::slice::from_ref(&owed_event));

    // However old, the newest run stays.
    let purged = purge(&store, &Retention { keep_runs: 0, ..policy }).await.expect("purge");
    assert_eq!(purged.runs, 1, "keep 0 keeps one");
    assert_eq!(count(&store).await[0], 1);
    assert_eq!(app.ok(&format!("/watches/{watch_id}/runs"), &token).await["items"][0]["event_id"], owed_event.as_str());
}

/// Clients that open connections and stall cannot take the server: a half-sent request line is
/// closed after the header deadline, connections past the bound wait to be accepted instead of
/// taking descriptors, `/healthz` answers throughout, and a body that stalls gets 408.
pub async fn stalled_clients_cannot_take_the_server(backend: Backend) {
    use std::time::{Duration, Instant};

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let app = TestApp::start_with(backend, |s| {
        s.header_timeout = driftwatch::HumanDuration(Duration::from_secs(1));
        s.body_timeout = driftwatch::HumanDuration(Duration::from_secs(1));
        s.max_connections = 16;
    })
    .await;
    let addr = app.root().trim_start_matches("http://").to_owned();
    let token = app.account("acme").await;

    // Three times the bound, each with half a request line, then silence.
    let mut stalled = Vec::new();
    for _ in 0..48 {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
        stream.write_all(b"GET /hea").await.expect("write");
        stalled.push(stream);
    }
    let started = Instant::now();
    let health = app.http.get(format!("{}/healthz", app.root())).timeout(Duration::from_secs(20)).send().await;
    assert_eq!(health.expect("healthz answers while clients stall").status(), 200);
    // Every stalled connection is closed by the server (read ends), in a few header deadlines.
    for (i, stream) in stalled.iter_mut().enumerate() {
        let mut buf = [0u8; 256];
        let read = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {} // a 408 or similar before the close is fine
                }
            }
        })
        .await;
        assert!(read.is_ok(), "stalled connection {i} still open after {:?}", started.elapsed());
    }

    // A body promised and not sent: refused after the body deadline, nothing created.
    let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let head = format!(
        "POST /api/v1/watches HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: 100\r\nauthorization: Bearer {token}\r\n\r\n{{\"url\""
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut answer)).await;
    let n = read.expect("an answer within the body deadline").expect("read");
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
    assert_eq!(app.ok("/watches", &token).await["items"].as_array().map(Vec::len), Some(0));
    let health = app.http.get(format!("{}/healthz", app.root())).send().await.expect("healthz");
    assert_eq!(health.status(), 200);
}

/// One host's backlog and one account's slow pages slow only themselves: with every check
/// slot's worth of hanging pages due (on one host, and across an account's hosts), another
/// account's watch is checked at once, long before any hanging fetch could end.
pub async fn a_hanging_host_or_account_leaves_room_for_others(backend: Backend) {
    use std::time::Duration;

    let mut app = TestApp::start_with(backend, |s| {
        s.check_concurrency = 8;
        s.per_host_concurrency = 3;
        s.per_account_concurrency = Some(5);
        s.per_host_gap = driftwatch::HumanDuration(Duration::ZERO);
        s.fetch_timeout = driftwatch::HumanDuration(Duration::from_secs(60));
    })
    .await;
    let hog = app.account("hog").await;
    let hanging = [PageServer::start(&page("1")).await, PageServer::start(&page("1")).await];
    for site in &hanging {
        site.set_delay(Duration::from_secs(600));
    }
    // Far more due than there are slots: 40 on each of two hanging hosts.
    for n in 0..80 {
        let url = format!("{}?n={n}", hanging[n % 2].url);
        let (status, watch) = app.post("/watches", &hog, json!({"url": url})).await;
        assert_eq!(status, StatusCode::CREATED, "{watch}");
    }
    eventually("the hanging hosts are busy", || async {
        (hanging.iter().all(|s| !s.requests().is_empty())).then_some(())
    })
    .await;

    let other = app.account("other").await;
    let site = PageServer::start(&page("2")).await;
    let watch = app.watch_with_baseline(&other, json!({"url": site.url})).await;
    let runs = app.ok(&format!("/watches/{}/runs", watch["id"].as_str().expect("id")), &other).await;
    assert_eq!(runs["items"][0]["outcome"], "baseline");
    // The hog never had more in flight than its share: three per host, five in all.
    let fetching: usize = hanging.iter().map(|s| s.requests().len()).sum();
    assert!(fetching <= 5, "{fetching} hanging fetches at once");
    assert!(hanging.iter().all(|s| s.requests().len() <= 3));
    let health = app.http.get(format!("{}/healthz", app.root())).send().await.expect("healthz");
    assert_eq!(health.status(), 200);
    // Stop without waiting for the hanging fetches (their leases would expire).
    let running = app.app.take().expect("running");
    assert!(!running.shutdown_within(Some(Duration::from_millis(200))).await, "the hanging fetches were in flight");
}
