//! What the binary's process tests share: running `driftwatch` in a directory, starting
//! `serve` and reading its address, queueing test events through the API, and a slow receiver
//! that records webhook ids.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use futures_util::StreamExt as _;
use tokio::sync::watch;

/// `driftwatch` in `dir` on its SQLite default, with settings that let many deliveries go
/// to one loopback endpoint at once.
pub fn driftwatch(dir: &Path) -> Command {
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

/// Runs a command to completion and returns its standard output.
pub fn output(dir: &Path, args: &[&str]) -> String {
    let out = driftwatch(dir).args(args).output().expect("run driftwatch");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// An account `acme` and a token for it.
pub fn account_and_token(dir: &Path) -> String {
    output(dir, &["account", "create", "acme"]);
    output(dir, &["token", "create", "--account", "acme"]).lines().last().expect("token").to_owned()
}

/// Starts `serve` (with `env` on top) and returns the child and its base URL.
pub async fn serve(dir: &Path, env: &[(&str, &str)]) -> (Child, String) {
    let mut command = driftwatch(dir);
    command.envs(env.iter().copied());
    let mut child = command.arg("serve").stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    let line =
        tokio::time::timeout(Duration::from_secs(30), line).await.expect("listening").expect("join").expect("read");
    (child, line.trim().rsplit(' ').next().expect("address").to_owned())
}

/// Creates an endpoint to `url`; returns its id.
pub async fn endpoint(http: &reqwest::Client, base: &str, token: &str, url: &str) -> String {
    let endpoint: serde_json::Value = http
        .post(format!("{base}/api/v1/endpoints"))
        .bearer_auth(token)
        .json(&serde_json::json!({"url": url}))
        .send()
        .await
        .expect("create endpoint")
        .json()
        .await
        .expect("json");
    endpoint["id"].as_str().expect("endpoint id").to_owned()
}

/// Queues `n` test events to the endpoint, 16 requests at a time; returns the delivery ids.
pub async fn queue_tests(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    endpoint_id: &str,
    n: usize,
) -> HashSet<String> {
    let url = format!("{base}/api/v1/endpoints/{endpoint_id}/test");
    let queue = |_| {
        let (http, url) = (http, url.clone());
        async move {
            let delivery: serde_json::Value =
                http.post(url).bearer_auth(token).send().await.expect("queue").json().await.expect("json");
            delivery["id"].as_str().expect("delivery id").to_owned()
        }
    };
    futures_util::stream::iter(0..n).map(queue).buffer_unordered(16).collect().await
}

/// A receiver that holds every request until the gate opens, then answers after `delay` (so
/// many deliveries are in flight at once), and records webhook ids.
pub struct SlowReceiver {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Every webhook id received, in order, repeats included.
    pub seen: Arc<Mutex<Vec<String>>>,
    /// The number of distinct ids seen, so waiting for all of them costs nothing per request.
    pub distinct: watch::Receiver<usize>,
    /// Open to let requests through.
    pub gate: watch::Sender<bool>,
    /// Requests that passed the gate (answered or still being held).
    pub arrived: watch::Receiver<usize>,
}

impl SlowReceiver {
    /// Starts it, its gate closed.
    pub async fn start(delay: Duration) -> SlowReceiver {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (tx, distinct_rx) = watch::channel(0);
        let (gate, gate_rx) = watch::channel(false);
        let (arrivals, arrived) = watch::channel(0);
        let (tx, arrivals) = (Arc::new(tx), Arc::new(arrivals));
        let record = Arc::clone(&seen);
        let distinct = Arc::new(Mutex::new(HashSet::new()));
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap| {
                let (record, distinct, tx, mut gate, arrivals) = (
                    Arc::clone(&record),
                    Arc::clone(&distinct),
                    Arc::clone(&tx),
                    gate_rx.clone(),
                    Arc::clone(&arrivals),
                );
                async move {
                    let _ = gate.wait_for(|open| *open).await;
                    arrivals.send_modify(|n| *n += 1);
                    tokio::time::sleep(delay).await;
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
        SlowReceiver { addr, seen, distinct: distinct_rx, gate, arrived }
    }

    /// The hook's URL.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// Waits (at most 30 s) until `n` requests passed the gate.
    pub async fn wait_arrived(&self, n: usize) {
        let mut arrived = self.arrived.clone();
        tokio::time::timeout(Duration::from_secs(30), arrived.wait_for(|a| *a >= n))
            .await
            .unwrap_or_else(|_| panic!("{} of {n} requests arrived", *self.arrived.borrow()))
            .expect("alive");
    }

    /// Waits (at most `limit`) until `n` distinct ids were answered.
    pub async fn wait_for(&self, n: usize, limit: Duration, what: &str) {
        let mut distinct = self.distinct.clone();
        tokio::time::timeout(limit, distinct.wait_for(|seen| *seen >= n))
            .await
            .unwrap_or_else(|_| panic!("{what}: {} of {n} arrived", *self.distinct.borrow()))
            .expect("alive");
    }
}

/// The ids of every delivery listed with `status`, across pages.
pub async fn delivery_ids(http: &reqwest::Client, base: &str, token: &str, status: &str) -> HashSet<String> {
    let mut ids = HashSet::new();
    let mut cursor = String::new();
    loop {
        let page: serde_json::Value = http
            .get(format!("{base}/api/v1/deliveries?status={status}&limit=500&cursor={cursor}"))
            .bearer_auth(token)
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
            None => return ids,
        }
    }
}

/// Waits (at most 30 s) until `n` deliveries are listed `sent`; returns their ids. The last
/// completions may still be committing when the receiver has seen everything.
pub async fn wait_all_sent(http: &reqwest::Client, base: &str, token: &str, n: usize) -> HashSet<String> {
    let list_sent = async {
        loop {
            let ids = delivery_ids(http, base, token, "sent").await;
            if ids.len() == n {
                break ids;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), list_sent).await.expect("every delivery recorded sent")
}

/// A server in a fresh directory with `n` test events queued to a slow receiver (gate closed).
pub struct Queued {
    /// The directory of the SQLite file (kept until dropped).
    pub dir: tempfile::TempDir,
    /// The API token.
    pub token: String,
    /// The receiver.
    pub receiver: SlowReceiver,
    /// The server.
    pub child: Child,
    /// Its base URL.
    pub base: String,
    /// A client.
    pub http: reqwest::Client,
    /// The ids of the queued deliveries.
    pub queued: HashSet<String>,
}

impl Queued {
    /// Starts the receiver (answering after `delay`) and the server (with `env`), and queues.
    pub async fn start(delay: Duration, env: &[(&str, &str)], n: usize) -> Queued {
        let dir = tempfile::tempdir().expect("temp dir");
        let token = account_and_token(dir.path());
        let receiver = SlowReceiver::start(delay).await;
        let (child, base) = serve(dir.path(), env).await;
        let http = reqwest::Client::new();
        let endpoint_id = endpoint(&http, &base, &token, &receiver.url()).await;
        let queued = queue_tests(&http, &base, &token, &endpoint_id, n).await;
        assert_eq!(queued.len(), n);
        Queued { dir, token, receiver, child, base, http, queued }
    }
}

/// Starts `serve` (with `env` on top) with its log on stderr at info, and returns the child, its base URL and a
/// channel of its log lines.
pub async fn serve_logged(dir: &Path, env: &[(&str, &str)]) -> (Child, String, std::sync::mpsc::Receiver<String>) {
    let mut child = driftwatch(dir)
        .env("DRIFTWATCH_LOG", "info")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .arg("serve")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    let line =
        tokio::time::timeout(Duration::from_secs(30), line).await.expect("listening").expect("join").expect("read");
    (child, line.trim().rsplit(' ').next().expect("address").to_owned(), lines)
}

/// Waits (at most 20 s) for a log line containing `text`; returns the lines and every line
/// read on the way, the match last.
pub async fn log_line(
    lines: std::sync::mpsc::Receiver<String>,
    text: &'static str,
) -> (std::sync::mpsc::Receiver<String>, Vec<String>) {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut read = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    let found = line.contains(text);
                    read.push(line);
                    if found {
                        return (lines, read);
                    }
                }
                Err(e) => panic!("no log line with {text:?}: {e}; read {read:#?}"),
            }
        }
    })
    .await
    .expect("join")
}
