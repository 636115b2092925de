//! The outside of `bench api`: keep-alive clients and the receiver, on one thread of their own
//! (a current-thread runtime), so their CPU is measured apart from driftwatch's and they take
//! no worker thread from it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use tokio::sync::watch;

/// What the receiver saw: each delivery's arrival by its `webhook-id`, and how many arrived.
#[derive(Default)]
pub(super) struct Arrivals {
    pub(super) at: Mutex<HashMap<String, Instant>>,
}

/// One request a client made through the API.
#[derive(Debug, Clone)]
pub(super) struct Posted {
    /// The delivery's id, from the API's answer.
    pub(super) delivery_id: String,
    /// The endpoint's index.
    pub(super) endpoint: usize,
    pub(super) sent: Instant,
    pub(super) answered: Instant,
}

/// The harness thread: its runtime's handle, its thread id (for its CPU), the receiver.
pub(super) struct Harness {
    handle: tokio::runtime::Handle,
    tid: u32,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(super) receiver: String,
    pub(super) arrivals: Arc<Arrivals>,
    pub(super) received: watch::Receiver<usize>,
    pub(super) client: reqwest::Client,
}

impl Harness {
    /// Starts the thread and the receiver on it (`{receiver}/{k}` for endpoint k).
    pub(super) async fn start(clients: usize) -> anyhow::Result<Harness> {
        let (started, ready) = tokio::sync::oneshot::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new().name("bench-harness".into()).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    let _ = started.send(Err(anyhow::Error::from(e)));
                    return;
                }
            };
            let tid = thread_id();
            let _ = started.send(Ok((runtime.handle().clone(), tid)));
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })?;
        let (handle, tid) = ready.await??;
        let arrivals = Arc::new(Arrivals::default());
        let (count, received) = watch::channel(0usize);
        let seen = Arc::clone(&arrivals);
        let addr = handle
            .spawn(async move {
                let app = axum::Router::new().route(
                    "/hook/{k}",
                    axum::routing::post(move |headers: axum::http::HeaderMap, _body: axum::body::Bytes| {
                        let at = Instant::now();
                        if let Some(id) = headers.get("webhook-id").and_then(|v| v.to_str().ok()) {
                            seen.at.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.to_owned(), at);
                        }
                        count.send_modify(|c| *c += 1);
                        std::future::ready("ok")
                    }),
                );
                crate::serve(app).await
            })
            .await??;
        let client = reqwest::Client::builder().pool_max_idle_per_host(clients).build()?;
        Ok(Harness {
            handle,
            tid,
            stop: Some(stop),
            receiver: format!("http://{addr}/hook"),
            arrivals,
            received,
            client,
        })
    }

    /// CPU seconds the harness thread has used.
    pub(super) fn cpu_seconds(&self) -> f64 {
        let path = format!("/proc/self/task/{}/stat", self.tid);
        crate::stat_cpu_seconds(&std::fs::read_to_string(path).unwrap_or_default())
    }

    /// Posts as `posting` says, on the harness's runtime; returns each request as posted.
    pub(super) async fn post(&self, posting: Posting) -> anyhow::Result<Vec<Posted>> {
        self.handle.spawn(post_all(self.client.clone(), posting)).await?
    }
}

/// A run of posts: `count` bodies to `urls(n)` (which also names the endpoint) from `clients`
/// connections, as fast as they are answered or, with `rate`, one every 1/rate s, with `token`
/// as the bearer when given.
pub(super) struct Posting {
    pub count: usize,
    pub clients: usize,
    pub rate: Option<f64>,
    pub token: Option<String>,
    pub urls: Arc<dyn Fn(usize) -> (usize, String) + Send + Sync>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// This thread's id, as `/proc/self/task` names it.
fn thread_id() -> u32 {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

const BODY: &[u8] = br#"{"type":"endpoint.test","data":{"note":"a body the size of a small event"}}"#;

async fn post_all(client: reqwest::Client, posting: Posting) -> anyhow::Result<Vec<Posted>> {
    let Posting { count, clients, rate, token, urls } = posting;
    let start = tokio::time::Instant::now();
    let one = |n: usize| {
        let (client, token, urls) = (client.clone(), token.clone(), Arc::clone(&urls));
        async move {
            if let Some(rate) = rate {
                tokio::time::sleep_until(start + Duration::from_secs_f64(n as f64 / rate)).await;
            }
            let (endpoint, url) = urls(n);
            let mut request = client.post(url).header("content-type", "application/json");
            request = match &token {
                Some(token) => request.bearer_auth(token),
                None => request.body(BODY),
            };
            let sent = Instant::now();
            let response = request.send().await?;
            let status = response.status();
            let text = response.bytes().await?;
            let answered = Instant::now();
            anyhow::ensure!(status.is_success(), "answered {status}: {}", String::from_utf8_lossy(&text));
            let delivery_id = if token.is_some() {
                let view: serde_json::Value = serde_json::from_slice(&text)?;
                view["id"].as_str().unwrap_or_default().to_owned()
            } else {
                String::new()
            };
            anyhow::Ok(Posted { delivery_id, endpoint, sent, answered })
        }
    };
    // As fast as answered: `clients` requests in flight. Paced: a request is started on time
    // whatever is still in flight, up to `clients`; more than that waits for a connection.
    let posted: Vec<anyhow::Result<Posted>> =
        futures_util::stream::iter(0..count).map(one).buffer_unordered(clients).collect().await;
    posted.into_iter().collect()
}
