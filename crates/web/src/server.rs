//! The HTTP/1 server loop: what a client may hold of the node.
//!
//! `axum::serve` sets no timer, so a client that sends half a request line and stalls keeps its
//! connection (and a file descriptor) for ever; a thousand of them exhaust the open-file limit
//! and `/healthz` stops answering. Here every connection gets a deadline for its request's
//! headers, counted from the moment the connection is ready for a request (a new connection,
//! or a kept-alive one after its last response, so the same deadline closes idle connections),
//! a deadline for each request's body, and the number of connections is bounded: past it, new
//! ones wait in the kernel's accept queue instead of taking descriptors.

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
    let connections = TaskTracker::new();
    loop {
        let slot = tokio::select! {
            () = shutdown.cancelled() => break,
            slot = Arc::clone(&slots).acquire_owned() => match slot { Ok(slot) => slot, Err(_) => break },
        };
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
        let (router, shutdown) = (router.clone(), shutdown.clone());
        connections.spawn(async move {
            let _slot = slot;
            serve_connection(stream, remote, router, limits, shutdown).await;
        });
    }
    connections.close();
    connections.wait().await;
}

/// One connection, until the client closes it, a deadline passes or the server shuts down.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    remote: SocketAddr,
    router: Router,
    limits: ServerLimits,
    shutdown: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
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
