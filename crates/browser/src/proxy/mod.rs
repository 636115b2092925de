//! The in-process HTTP proxy every browser request passes through.
//!
//! Chromium is pointed at it per browser context, so navigations, redirects, subresources,
//! fetch/XHR and WebSockets all arrive here: `CONNECT host:port` for https and wss, absolute-form
//! `GET http://host/path` for plain http (a ws:// upgrade may come either way). The proxy
//! resolves each host itself with [`driftwatch_net::resolve_vetted`], refuses non-public
//! addresses as the HTTP fetcher does, and connects to the vetted address, never to the name
//! again, so a name cannot change its answer between the check and the connection.
//!
//! This module holds the proxy itself and its accept loop; `tunnel` handles `CONNECT`,
//! `forward` absolute-form requests, and `upstream` vets targets and opens the connections.

mod chain;
mod forward;
mod tunnel;
mod upstream;

#[cfg(test)]
mod tests;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use driftwatch_net::TargetPolicy;
use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use forward::{forward, is_websocket_upgrade};
use tunnel::connect;
use upstream::refuse;

/// Time a client has to send a complete request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

type ProxyBody = UnsyncBoxBody<Bytes, hyper::Error>;

/// An HTTP proxy on 127.0.0.1 for the browser: every request Chromium makes passes the same
/// private-address guard as driftwatch's HTTP fetcher.
///
/// It serves until dropped (or [`GuardProxy::shutdown`]); dropping it stops accepting and
/// closes every open connection and tunnel. HTTP/1.1 only, towards Chromium and upstream. A
/// chained one ([`GuardProxy::start_chained`]) opens every connection through a user's proxy,
/// to the address it vetted.
#[derive(Debug)]
pub struct GuardProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// A second listener for the browser's own traffic (not any page's): the same guard, its
    /// own counters, and its refusals logged at DEBUG.
    background_addr: SocketAddr,
    background: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    policy: TargetPolicy,
    /// Exact addresses reachable whatever the policy says.
    exempt: Vec<SocketAddr>,
    passed: AtomicU64,
    refused: AtomicU64,
    /// Whether this listener carries the browser's own traffic rather than pages'.
    background: bool,
    /// The proxy every connection is opened through (`None`: directly).
    upstream: Option<url::Url>,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl GuardProxy {
    /// Binds 127.0.0.1:0 (or `bind` when given) and serves until dropped or shut down.
    pub async fn start(policy: TargetPolicy, bind: Option<SocketAddr>) -> std::io::Result<GuardProxy> {
        GuardProxy::start_with(policy, Vec::new(), bind).await
    }

    /// [`GuardProxy::start`], with `exempt` addresses (IP literal and port, exactly) reachable
    /// whatever the policy says: one internal service, or a test's page server.
    pub async fn start_with(
        policy: TargetPolicy,
        exempt: Vec<SocketAddr>,
        bind: Option<SocketAddr>,
    ) -> std::io::Result<GuardProxy> {
        GuardProxy::start_inner(policy, exempt, bind, None).await
    }

    /// [`GuardProxy::start_with`] on 127.0.0.1, opening every connection through `upstream` (an
    /// `http`, `https`, `socks5` or `socks5h` proxy URL, credentials allowed) to the address
    /// the guard vetted.
    pub async fn start_chained(
        policy: TargetPolicy,
        exempt: Vec<SocketAddr>,
        upstream: url::Url,
    ) -> std::io::Result<GuardProxy> {
        GuardProxy::start_inner(policy, exempt, None, Some(upstream)).await
    }

    async fn start_inner(
        policy: TargetPolicy,
        exempt: Vec<SocketAddr>,
        bind: Option<SocketAddr>,
        upstream: Option<url::Url>,
    ) -> std::io::Result<GuardProxy> {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        let listener = TcpListener::bind(bind.unwrap_or(loopback)).await?;
        let background_listener = TcpListener::bind(loopback).await?;
        let (addr, background_addr) = (listener.local_addr()?, background_listener.local_addr()?);
        let shared = Arc::new(Shared {
            policy,
            exempt,
            passed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            background: false,
            upstream,
            cancel: CancellationToken::new(),
            tracker: TaskTracker::new(),
        });
        // One cancellation and one tracker: both listeners stop together.
        let background = Arc::new(Shared {
            policy,
            exempt: Vec::new(),
            passed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            background: true,
            upstream: None,
            cancel: shared.cancel.clone(),
            tracker: shared.tracker.clone(),
        });
        shared.tracker.spawn(accept_loop(listener, Arc::clone(&shared)));
        shared.tracker.spawn(accept_loop(background_listener, Arc::clone(&background)));
        Ok(GuardProxy { addr, shared, background_addr, background })
    }

    /// The address to give Chromium: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the proxy listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The address to give a local Chromium for its own traffic (`--proxy-server`), which
    /// no page makes: update, account and other background services. Always on 127.0.0.1.
    pub fn background_url(&self) -> String {
        format!("http://{}", self.background_addr)
    }

    /// The browser's own requests refused so far (see [`GuardProxy::background_url`]); they
    /// are not counted in [`GuardProxy::refused`].
    pub fn background_refused(&self) -> u64 {
        self.background.refused.load(Ordering::Relaxed)
    }

    /// Pages' requests refused so far (for tests and metrics): a non-public or unresolvable
    /// target, a scheme other than http, or port 0. Malformed requests (400) are not counted.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::Relaxed)
    }

    /// Requests passed so far: their target passed the guard (whether or not it then answered).
    pub fn passed(&self) -> u64 {
        self.shared.passed.load(Ordering::Relaxed)
    }

    /// Stops accepting, closes every connection and tunnel, and waits until they are gone.
    pub async fn shutdown(self) {
        self.shared.cancel.cancel();
        self.shared.tracker.close();
        self.shared.tracker.wait().await;
    }
}

impl Drop for GuardProxy {
    fn drop(&mut self) {
        self.shared.cancel.cancel();
        self.shared.tracker.close();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            () = shared.cancel.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _peer)) => {
                shared.tracker.spawn(serve_connection(stream, Arc::clone(&shared)));
            }
            Err(e) => {
                // Out of file descriptors and the like: back off a little instead of spinning.
                tracing::warn!(error = %e, "browser proxy: accept failed");
                tokio::select! {
                    () = shared.cancel.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            }
        }
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let service = {
        let shared = Arc::clone(&shared);
        service_fn(move |req| {
            let shared = Arc::clone(&shared);
            async move { Ok::<_, Infallible>(handle(req, shared).await) }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .title_case_headers(false)
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::select! {
        () = shared.cancel.cancelled() => {}
        served = conn => {
            if let Err(e) = served {
                tracing::debug!(error = %e, "browser proxy: client connection ended with an error");
            }
        }
    }
}

async fn handle(req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    if req.method() == Method::CONNECT {
        return connect(req, shared).await;
    }
    match req.uri().scheme_str() {
        None => text(StatusCode::BAD_REQUEST, "driftwatch: this is a proxy; send absolute-form requests or CONNECT"),
        Some(scheme) if scheme.eq_ignore_ascii_case("http") => forward(req, shared).await,
        // Chromium tunnels WebSockets, but a ws:// upgrade in absolute form is plain http too.
        Some(scheme) if scheme.eq_ignore_ascii_case("ws") && is_websocket_upgrade(req.headers()) => {
            forward(req, shared).await
        }
        Some(scheme) => {
            let reason = format!("the {scheme} scheme is not allowed (only http, or CONNECT)");
            refuse(&shared, req.uri().host().unwrap_or(""), &reason)
        }
    }
}

fn empty() -> ProxyBody {
    Empty::<Bytes>::new().map_err(|never| match never {}).boxed_unsync()
}

fn text(status: StatusCode, body: &str) -> Response<ProxyBody> {
    let mut response =
        Response::new(Full::new(Bytes::from(body.to_owned())).map_err(|never| match never {}).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
