//! The HTTP/1 server loop: what a client may hold of the node.
//!
//! `axum::serve` sets no timer, so a client that sends half a request line and stalls keeps its
//! connection (and a file descriptor) for ever; a thousand of them exhaust the open-file limit
//! and `/healthz` stops answering. Here every connection gets a deadline for its request's
//! headers, counted from the moment the connection is ready for a request (a new connection,
//! or a kept-alive one after its last response, so the same deadline closes idle connections),
//! a deadline for each request's body, and the number of connections is bounded: at the bound,
//! the oldest connection that has not sent a whole request for a second is closed for the new
//! one (else the new one waits for a slot, the rest in the kernel's accept queue), so stalled
//! clients can neither take every descriptor nor lock others out.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt as _;

/// What one client may hold of the server.
#[derive(Debug, Clone, Copy)]
pub struct ServerLimits {
    /// Time to send a request's headers, from when the connection is ready for it; also how
    /// long an idle kept-alive connection stays open.
    pub header_timeout: Duration,
    /// Time to send a request's body, from when its headers arrived (408 after it).
    pub body_timeout: Duration,
    /// Connections open at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 512,
        }
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` is cancelled, then lets the
/// requests in flight finish (kept-alive connections are closed after their current request).
pub async fn serve_router(listener: TcpListener, router: Router, limits: ServerLimits, shutdown: CancellationToken) {
    let router = router.layer(tower_http::timeout::RequestBodyTimeoutLayer::new(limits.body_timeout));
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let waiting = Arc::new(Waiting::default());
    let connections = TaskTracker::new();
    let mut next_id = 0u64;
    loop {
        let (stream, remote) = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was accepted: wait a
                    // moment rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // At the bound, a connection that has not sent a whole request for a second gives way
        // to the new one: clients that open connections and stall cannot lock others out.
        let slot = match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if waiting.evict_oldest(EVICT_AFTER) {
                    tracing::debug!("at the connection bound: closed the oldest connection without a request");
                }
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    slot = Arc::clone(&slots).acquire_owned() => match slot { Ok(slot) => slot, Err(_) => break },
                }
            }
        };
        next_id += 1;
        let evict = waiting.add(next_id);
        let (router, shutdown, waiting) = (router.clone(), shutdown.clone(), Arc::clone(&waiting));
        let id = next_id;
        connections.spawn(async move {
            let _slot = slot;
            tokio::select! {
                () = serve_connection(stream, remote, router, limits, shutdown, Arc::clone(&waiting), id) => {}
                () = evict.cancelled() => {}
            }
            waiting.remove(id);
        });
    }
    connections.close();
    connections.wait().await;
}

/// How long a connection may go without a whole request before a new connection at the bound
/// may take its place.
const EVICT_AFTER: Duration = Duration::from_secs(1);

/// Connections that have not yet sent a whole request, oldest first.
#[derive(Debug, Default)]
struct Waiting {
    connections: std::sync::Mutex<std::collections::BTreeMap<u64, (std::time::Instant, CancellationToken)>>,
}

impl Waiting {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<u64, (std::time::Instant, CancellationToken)>> {
        self.connections.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a new connection; its token closes it when evicted.
    fn add(&self, id: u64) -> CancellationToken {
        let token = CancellationToken::new();
        self.lock().insert(id, (std::time::Instant::now(), token.clone()));
        token
    }

    /// The connection sent a request (or ended): it is no longer a candidate.
    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Closes the oldest connection that has waited `after` without a request; whether there was one.
    fn evict_oldest(&self, after: Duration) -> bool {
        let mut connections = self.lock();
        let oldest = connections.iter().find(|(_, (opened, _))| opened.elapsed() >= after).map(|(id, _)| *id);
        match oldest.and_then(|id| connections.remove(&id)) {
            Some((_, token)) => {
                token.cancel();
                true
            }
            None => false,
        }
    }
}

/// One connection, until the client closes it, a deadline passes or the server shuts down.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    remote: SocketAddr,
    router: Router,
    limits: ServerLimits,
    shutdown: CancellationToken,
    waiting: Arc<Waiting>,
    id: u64,
) {
    let _ = stream.set_nodelay(true);
    let served = std::sync::atomic::AtomicBool::new(false);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
        // A whole request arrived: this connection is in use, not a candidate for eviction
        // (the shared map is touched once per connection, not once per request).
        if !served.swap(true, std::sync::atomic::Ordering::Relaxed) {
            waiting.remove(id);
        }
        request.extensions_mut().insert(ConnectInfo(remote));
        router.clone().oneshot(request.map(axum::body::Body::new))
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => log_end(result),
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            log_end(connection.await);
        }
    }
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        // Deadlines, resets and malformed requests end connections every day.
        tracing::debug!(error = %e, "connection ended");
    }
}
