//! A `driftwatch serve` process killed with SIGKILL while over a thousand deliveries are queued or in flight
//! loses none of them: after a restart every delivery ends `sent` and the receiver has seen
//! every `webhook-id` (duplicates are allowed by at-least-once delivery, and counted).

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use futures_util::StreamExt as _;
use tokio::sync::watch;

const DELIVERIES: usize = 1_200;

fn driftwatch(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_driftwatch"));
    command
        .current_dir(dir)
        .env_remove("DRIFTWATCH_DATABASE_URL")
        .env("DRIFTWATCH_LOG", "warn")
        .env("DRIFTWATCH_ALLOW_PRIVATE_TARGETS", "true")
        .env("DRIFTWATCH_LISTEN", "127.0.0.1:0")
        .env("DRIFTWATCH_WEBHOOK_TIMEOUT", "5s")
        .env("DRIFTWATCH_LEASE_GRACE", "1s")
        .env("DRIFTWATCH_RETRY_SCHEDULE", "100ms")
        .env("DRIFTWATCH_DELIVERY_CONCURRENCY", "32")
        .env("DRIFTWATCH_PER_ENDPOINT_CONCURRENCY", "32")
        .env("DRIFTWATCH_RATE_LIMIT_PER_MINUTE", "100000");
    command
}

fn output(dir: &Path, args: &[&str]) -> String {
    let out = driftwatch(dir).args(args).output().expect("run driftwatch");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Starts `serve` and returns the child and its base URL.
async fn serve(dir: &Path) -> (Child, String) {
    let mut child =
        driftwatch(dir).arg("serve").stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    let line =
        tokio::time::timeout(Duration::from_secs(30), line).await.expect("listening").expect("join").expect("read");
    (child, line.trim().rsplit(' ').next().expect("address").to_owned())
}

/// A receiver that holds every request until the gate opens, then answers slowly (so many
/// deliveries are in flight), and records webhook ids. The watch channel carries the number of
/// distinct ids seen, so waiting for all of them costs nothing per request.
async fn receiver() -> (SocketAddr, Arc<Mutex<Vec<String>>>, watch::Receiver<usize>, watch::Sender<bool>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = watch::channel(0);
    let (gate, gate_rx) = watch::channel(false);
    let tx = Arc::new(tx);
    let record = Arc::clone(&seen);
    let distinct = Arc::new(Mutex::new(HashSet::new()));
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap| {
            let (record, distinct, tx, mut gate) =
                (Arc::clone(&record), Arc::clone(&distinct), Arc::clone(&tx), gate_rx.clone());
            async move {
                let _ = gate.wait_for(|open| *open).await;
                tokio::time::sleep(Duration::from_millis(150)).await;
                let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                record.lock().expect("lock").push(id.clone());
                let n = {
                    let mut distinct = distinct.lock().expect("lock");
                    distinct.insert(id);
                    distinct.len()
                };
                tx.send_replace(n);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, seen, rx, gate)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_loses_no_delivery() {
    let dir = tempfile::tempdir().expect("temp dir");
    output(dir.path(), &["account", "create", "acme"]);
    let token = output(dir.path(), &["token", "create", "--account", "acme"]).lines().last().expect("token").to_owned();
    let (addr, seen, mut count, gate) = receiver().await;

    let (mut child, base) = serve(dir.path()).await;
    let http = reqwest::Client::new();
    let endpoint: serde_json::Value = http
        .post(format!("{base}/api/v1/endpoints"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"url": format!("http://{addr}/hook")}))
        .send()
        .await
        .expect("create endpoint")
        .json()
        .await
        .expect("json");
    let endpoint_id = endpoint["id"].as_str().expect("endpoint id").to_owned();
    let queue = |_| {
        let (http, url, token) = (&http, format!("{base}/api/v1/endpoints/{endpoint_id}/test"), &token);
        async move {
            let delivery: serde_json::Value =
                http.post(url).bearer_auth(token).send().await.expect("queue").json().await.expect("json");
            delivery["id"].as_str().expect("delivery id").to_owned()
        }
    };
    let queued: HashSet<String> =
        futures_util::stream::iter(0..DELIVERIES).map(queue).buffer_unordered(16).collect().await;
    assert_eq!(queued.len(), DELIVERIES);

    // Kill it mid-flight: some deliveries are done, some in flight, most still queued.
    gate.send_replace(true);
    tokio::time::timeout(Duration::from_secs(30), count.wait_for(|n| *n >= 40))
        .await
        .expect("deliveries flow")
        .expect("alive");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let before_restart = seen.lock().expect("lock").len();
    assert!(before_restart < DELIVERIES, "the kill happened mid-flight ({before_restart} seen)");

    let (mut child, base) = serve(dir.path()).await;
    tokio::time::timeout(Duration::from_secs(90), count.wait_for(|n| *n >= DELIVERIES))
        .await
        .expect("every delivery arrives after the restart")
        .expect("alive");
    let received = seen.lock().expect("lock").clone();
    let unique: HashSet<&String> = received.iter().collect();
    assert!(queued.iter().all(|id| unique.contains(id)), "the receiver saw every queued delivery");

    // Every delivery is recorded `sent` (the last completions may still be committing).
    let list_sent = async {
        loop {
            let mut ids = HashSet::new();
            let mut cursor = String::new();
            loop {
                let page: serde_json::Value = http
                    .get(format!("{base}/api/v1/deliveries?status=sent&limit=500&cursor={cursor}"))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .expect("list")
                    .json()
                    .await
                    .expect("json");
                let items = page["items"].as_array().expect("items");
                ids.extend(items.iter().map(|d| d["id"].as_str().unwrap_or("").to_owned()));
                match page["next_cursor"].as_str() {
                    Some(next) => cursor = next.to_owned(),
                    None => break,
                }
            }
            if ids.len() == DELIVERIES {
                break ids;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let sent_ids =
        tokio::time::timeout(Duration::from_secs(30), list_sent).await.expect("every delivery recorded sent");
    assert_eq!(sent_ids, queued, "every queued delivery ends sent");
    assert_eq!(unique.len(), DELIVERIES);
    eprintln!(
        "crash test: {DELIVERIES} deliveries, {before_restart} received before SIGKILL, {} received in all, {} duplicates",
        received.len(),
        received.len() - unique.len()
    );
    let _ = child.kill();
    let _ = child.wait();
}
