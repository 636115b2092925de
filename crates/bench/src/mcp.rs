//! `driftwatch-bench mcp`: from a page change to the subscribed agent's notification. An MCP
//! session (Streamable HTTP, `resources/subscribe` on one watch, its notification stream open)
//! waits while, round after round at idle, the page changes and the watch is checked through
//! the API; each round's figure is the time from sending the check to the notification
//! arriving on the agent's stream (the fetch, extraction, diff, the recorded event and the push).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use driftwatch_core::{Clock as _, SystemClock};
use driftwatch_delivery::{DeliveryConfig, DeliveryWorker};
use driftwatch_store::{PoolOptions, Watch, accounts, watches};
use serde_json::{Value, json};

/// What to measure.
#[derive(Debug, Clone)]
pub struct McpBench {
    /// Rounds (page changes).
    pub rounds: usize,
    /// Pause between rounds, milliseconds (the server idles in between).
    pub pause_ms: u64,
    /// An empty database to use (default: a temporary SQLite file).
    pub database_url: Option<String>,
}

/// The figures of one run.
#[derive(Debug, Clone)]
pub struct McpReport {
    /// Rounds measured.
    pub rounds: usize,
    /// Change to notification: p50, p90, max, in ms.
    pub notified_ms: [f64; 3],
    /// The check request alone (sent to answered): p50, in ms.
    pub check_ms: f64,
}

impl std::fmt::Display for McpReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "mcp push: {} page changes, each checked through the API at idle", self.rounds)?;
        writeln!(
            f,
            "change -> agent notified   p50 {:.1} ms   p90 {:.1} ms   max {:.1} ms",
            self.notified_ms[0], self.notified_ms[1], self.notified_ms[2]
        )?;
        write!(f, "check request alone        p50 {:.1} ms", self.check_ms)
    }
}

/// Runs the benchmark.
pub async fn mcp(bench: &McpBench) -> anyhow::Result<McpReport> {
    let version = Arc::new(AtomicU64::new(0));
    let page = {
        let version = Arc::clone(&version);
        axum::Router::new().route(
            "/",
            axum::routing::get(move || {
                let n = version.load(Ordering::SeqCst);
                async move { axum::response::Html(format!("<html><body><p id=v>version {n}</p></body></html>")) }
            }),
        )
    };
    let page_addr = crate::serve(page).await?;
    let (store, _dir) = crate::open_store(bench.database_url.as_deref(), &PoolOptions::default()).await?;
    let now = SystemClock.now().naive_utc();
    let url = format!("http://{page_addr}/");
    let (token, watch_id) = store
        .write(move |c| {
            let account = accounts::create_account(c, "bench", now)?;
            let (_, token) = accounts::create_token(c, &account.id, "bench", "read write", now)?;
            let watch = Watch { selector: Some("#v".into()), ..Watch::new(&account.id, &url, now) };
            watches::insert_watch(c, &watch)?;
            Ok((token, watch.id))
        })
        .await?;
    let worker = DeliveryWorker::new(store.clone(), crate::sender()?, Arc::new(SystemClock), DeliveryConfig::default());
    let state = crate::app_state(&store, worker, true)?;
    let addr = crate::serve(driftwatch_web::router(state)).await?;
    let http = reqwest::Client::new();
    let api = format!("http://{addr}/api/v1");
    let check = || http.post(format!("{api}/watches/{watch_id}/check")).bearer_auth(&token).send();
    check().await?.error_for_status().context("the baseline check")?;

    // The agent: a session, a subscription, and its notification stream.
    let mcp = format!("http://{addr}/mcp");
    let post = |session: Option<&str>, body: Value| {
        let mut request = http
            .post(&mcp)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(session) = session {
            request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-06-18");
        }
        request.send()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    let opened = post(None, initialize).await?.error_for_status()?;
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .context("no session id")?;
    opened.bytes().await?;
    post(Some(&session), json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?.error_for_status()?;
    let uri = format!("driftwatch://watches/{watch_id}");
    let subscribed = post(
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}}),
    )
    .await?
    .error_for_status()?
    .text()
    .await?;
    if !subscribed.contains("\"result\"") {
        bail!("the subscription was refused: {subscribed}");
    }
    let mut stream = http
        .get(&mcp)
        .bearer_auth(&token)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await?
        .error_for_status()?;
    let (tx, mut notified) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    tokio::spawn(async move {
        let mut buffer = String::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                if event.contains("notifications/resources/updated") && tx.send(Instant::now()).is_err() {
                    return;
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;

    let (mut notified_after, mut checks) = (Vec::new(), Vec::new());
    for round in 1..=bench.rounds {
        tokio::time::sleep(Duration::from_millis(bench.pause_ms)).await;
        while notified.try_recv().is_ok() {}
        version.store(round as u64, Ordering::SeqCst);
        let sent = Instant::now();
        check().await?.error_for_status()?;
        checks.push(sent.elapsed());
        let at = tokio::time::timeout(Duration::from_secs(10), notified.recv())
            .await
            .with_context(|| format!("round {round}: no notification within 10 s"))?
            .context("the stream ended")?;
        notified_after.push(at.saturating_duration_since(sent));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    notified_after.sort();
    checks.sort();
    let at = |q: f64| ms(notified_after[((notified_after.len() - 1) as f64 * q).round() as usize]);
    Ok(McpReport {
        rounds: bench.rounds,
        notified_ms: [at(0.5), at(0.9), at(1.0)],
        check_ms: ms(checks[checks.len() / 2]),
    })
}
