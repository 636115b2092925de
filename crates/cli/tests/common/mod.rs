//! What the binary's process tests share: running `driftwatch` in a directory, starting
//! `serve` and reading its address, and queueing test events through the API to a receiver
//! (`driftwatch_test_support`'s) that holds them until the test lets them through.

#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use driftwatch_test_support::{KillOnDrop, Receiver, eventually_within};
use futures_util::StreamExt as _;

/// `driftwatch` in `dir` on its SQLite default, with settings that let many deliveries go
/// to one loopback endpoint at once. On a loaded machine, requests held at a receiver's closed
/// gate time out; the attempt budget and the circuit threshold are set so such timeouts only
/// cost retries (what the process tests assert, every delivery sent and seen, stays the same).
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
        .env("DRIFTWATCH_MAX_ATTEMPTS", "1000")
        .env("DRIFTWATCH_CIRCUIT_THRESHOLD", "1000000")
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

/// Starts `serve` (with `env` on top) and returns the child (killed when dropped) and its base
/// URL.
pub async fn serve(dir: &Path, env: &[(&str, &str)]) -> (KillOnDrop, String) {
    let mut command = driftwatch(dir);
    command.envs(env.iter().copied());
    let mut child = KillOnDrop::new(
        command.arg("serve").stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("serve starts"),
    );
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

/// Waits (at most 2 minutes: a loaded machine is slow, not wrong) until `n` deliveries are
/// listed `sent`; returns their ids. The last completions may still be committing when the
/// receiver has seen everything.
pub async fn wait_all_sent(http: &reqwest::Client, base: &str, token: &str, n: usize) -> HashSet<String> {
    eventually_within("every delivery recorded sent", Duration::from_secs(120), || async {
        let ids = delivery_ids(http, base, token, "sent").await;
        (ids.len() == n).then_some(ids)
    })
    .await
}

/// A server in a fresh directory with `n` test events queued to a receiver that answers late,
/// its gate closed.
pub struct Queued {
    /// The directory of the SQLite file (kept until dropped).
    pub dir: tempfile::TempDir,
    /// The API token.
    pub token: String,
    /// The receiver, its gate closed.
    pub receiver: Receiver,
    /// The server (killed when dropped).
    pub child: KillOnDrop,
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
        let receiver = Receiver::start(200).await;
        receiver.set_delay(delay);
        receiver.close_gate();
        let (child, base) = serve(dir.path(), env).await;
        let http = reqwest::Client::new();
        let endpoint_id = endpoint(&http, &base, &token, &receiver.url).await;
        let queued = queue_tests(&http, &base, &token, &endpoint_id, n).await;
        assert_eq!(queued.len(), n);
        Queued { dir, token, receiver, child, base, http, queued }
    }
}

/// Starts `serve` (with `env` on top) with its log on stderr at info, and returns the child, its base URL and a
/// channel of its log lines.
pub async fn serve_logged(dir: &Path, env: &[(&str, &str)]) -> (KillOnDrop, String, std::sync::mpsc::Receiver<String>) {
    let mut child = KillOnDrop::new(
        driftwatch(dir)
            .env("DRIFTWATCH_LOG", "info")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .arg("serve")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts"),
    );
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

/// Creates a watch from `body` and waits (up to a minute) for its first check, the one every
/// new watch gets at once; returns that run.
pub async fn first_run(http: &reqwest::Client, base: &str, token: &str, body: serde_json::Value) -> serde_json::Value {
    let watch: serde_json::Value = http
        .post(format!("{base}/api/v1/watches"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("create watch")
        .json()
        .await
        .expect("json");
    let id = watch["id"].as_str().unwrap_or_else(|| panic!("a watch: {watch}")).to_owned();
    eventually_within("the first check", Duration::from_secs(60), || async {
        let runs: serde_json::Value = http
            .get(format!("{base}/api/v1/watches/{id}/runs"))
            .bearer_auth(token)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        runs["items"].as_array().and_then(|r| r.first()).cloned()
    })
    .await
}
