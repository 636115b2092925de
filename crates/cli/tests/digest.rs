//! A `driftwatch serve` killed with SIGKILL while its digest is in flight sends that period's
//! digest again after a restart (the same delivery, the same `webhook-id`), and only that one:
//! the period was closed in the transaction that queued it. On SQLite one node; on PostgreSQL
//! two nodes share the work and both are killed. The clock is moved by
//! `DRIFTWATCH_CLOCK_FILE`, not by waiting a day.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{driftwatch, serve};
use driftwatch_test_support::{Backend, KillOnDrop, PageServer, Receiver, TestDb, eventually_within};
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

/// Runs `driftwatch args` in `dir` with `env`; its standard output.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = driftwatch(dir).envs(env.iter().copied()).args(args).output().expect("run driftwatch");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_killed_in_flight_goes_once_after_a_restart() {
    killed_in_flight(&[], 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_killed_in_flight_on_two_postgresql_nodes_goes_once() {
    if std::env::var("DRIFTWATCH_TEST_POSTGRES_URL").is_err() {
        eprintln!("SKIPPED the PostgreSQL half: DRIFTWATCH_TEST_POSTGRES_URL is not set");
        return;
    }
    let db = TestDb::new(Backend::Postgres);
    let dir = tempfile::tempdir().expect("temp dir");
    let key = run(dir.path(), &["secrets", "generate-key"], &[]);
    let env = [("DRIFTWATCH_DATABASE_URL", db.url.as_str()), ("DRIFTWATCH_SECRET_KEY", key.trim())];
    killed_in_flight(&env, 2).await;
}

/// Gathers two changes for a daily digest, moves the clock past the period's end, kills every
/// one of `nodes` servers (on the database `db_env` names, SQLite in a temp dir when empty)
/// while the digest is held at the receiver, restarts one, and checks one digest went out.
async fn killed_in_flight(db_env: &[(&str, &str)], nodes: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["account", "create", "acme"], db_env);
    let token =
        run(dir.path(), &["token", "create", "--account", "acme"], db_env).lines().last().expect("token").to_owned();
    let clock = dir.path().join("clock");
    std::fs::write(&clock, "0").expect("clock file");
    let clock_setting = clock.to_str().expect("utf-8 path").to_owned();
    let mut env = vec![("DRIFTWATCH_CLOCK_FILE", clock_setting.as_str()), ("DRIFTWATCH_POLL_INTERVAL", "200ms")];
    env.extend_from_slice(db_env);
    // The receiver holds each request long enough to kill the servers while one is in flight.
    let receiver = Receiver::start(200).await;
    receiver.set_delay(Duration::from_secs(30));
    let mut servers: Vec<(KillOnDrop, String)> = Vec::new();
    for n in 0..nodes {
        let node = format!("node-{n}");
        let mut with_node = env.clone();
        with_node.push(("DRIFTWATCH_NODE_ID", node.as_str()));
        servers.push(serve(dir.path(), &with_node).await);
    }
    let (http, api) = (reqwest::Client::new(), format!("{}/api/v1", servers[0].1));
    let (post, get) = (reqwest::Method::POST, reqwest::Method::GET);

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
        let list = call(&http, get.clone(), runs.clone(), &token, None).await;
        (list["items"].as_array().map_or(0, Vec::len) == 1).then_some(())
    })
    .await;
    for text in ["<p>v2</p>", "<p>v3</p>"] {
        page.set(text);
        call(&http, post.clone(), format!("{api}/watches/{watch_id}/check"), &token, Some(json!({}))).await;
    }
    let open = call(&http, get.clone(), format!("{api}/endpoints/{endpoint_id}/digest"), &token, None).await;
    assert_eq!(open["waiting"], 2, "{open}");
    let due = chrono::DateTime::parse_from_rfc3339(open["next_at"].as_str().expect("next_at")).expect("time");
    let offset = (due.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_milliseconds() + 1_500;
    std::fs::write(&clock, format!("+{offset}ms")).expect("move the clock");

    // The digest is queued and held in flight at the receiver: kill every server there.
    receiver.wait_in_flight(1, PATIENCE).await;
    for (mut child, _) in servers {
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
    }

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
