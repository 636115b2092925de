//! The in-process HTTP proxy every browser request passes through.
//!
//! Chromium is pointed at it per browser context, so navigations, redirects, subresources,
//! fetch/XHR and WebSockets all arrive here: `CONNECT host:port` for https and wss, absolute-form
//! `GET http://host/path` for plain http (a ws:// upgrade may come either way). The proxy
//! resolves each host itself with [`driftwatch_net::resolve_vetted`], refuses non-public
//! addresses as the HTTP fetcher does, and connects to the vetted address, never to the name
//! again, so a name cannot change its answer between the check and the connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use driftwatch_net::{TargetPolicy, resolve_vetted};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri, Version};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Time to open a TCP connection to one vetted address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to resolve a name; an answer that does not come cannot be vetted.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Time a client has to send a complete request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

type ProxyBody = UnsyncBoxBody<Bytes, hyper::Error>;

/// An HTTP proxy on 127.0.0.1 for the browser: every request Chromium makes passes the same
/// private-address guard as driftwatch's HTTP fetcher.
///
/// It serves until dropped (or [`GuardProxy::shutdown`]); dropping it stops accepting and
/// closes every open connection and tunnel. HTTP/1.1 only, towards Chromium and upstream; it
/// never chains to another proxy.
#[derive(Debug)]
pub struct GuardProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    policy: TargetPolicy,
    /// Exact addresses reachable whatever the policy says.
    exempt: Vec<SocketAddr>,
    passed: AtomicU64,
    refused: AtomicU64,
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
        let listener = TcpListener::bind(bind.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)))).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            policy,
            exempt,
            passed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            cancel: CancellationToken::new(),
            tracker: TaskTracker::new(),
        });
        shared.tracker.spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(GuardProxy { addr, shared })
    }

    /// The address to give Chromium: `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the proxy listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Requests refused so far (for tests and metrics): a non-public or unresolvable target,
    /// a scheme other than http, or port 0. Malformed requests (400) are not counted.
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

/// `CONNECT host:port`: vet the host, connect to the vetted address, answer 200 and splice.
async fn connect(mut req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    let Some(authority) = req.uri().authority().cloned() else {
        return text(StatusCode::BAD_REQUEST, "driftwatch: CONNECT needs host:port");
    };
    let host = authority.host();
    let Some(port) = authority.port_u16() else {
        return text(StatusCode::BAD_REQUEST, "driftwatch: CONNECT needs host:port");
    };
    let upstream = match open_upstream(&shared, host, port).await {
        Ok(upstream) => upstream,
        Err(response) => return response,
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    let cancel = shared.cancel.clone();
    let host = host.to_owned();
    shared.tracker.spawn(async move {
        let mut upstream = upstream;
        let upgraded = tokio::select! {
            () = cancel.cancelled() => return,
            upgraded = on_upgrade => upgraded,
        };
        let mut client = match upgraded {
            Ok(upgraded) => TokioIo::new(upgraded),
            Err(e) => {
                tracing::debug!(target.host = %host, error = %e, "browser proxy: CONNECT upgrade failed");
                return;
            }
        };
        tokio::select! {
            () = cancel.cancelled() => {}
            copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
                if let Err(e) = copied {
                    tracing::debug!(target.host = %host, error = %e, "browser proxy: tunnel ended with an error");
                }
            }
        }
    });
    Response::new(empty())
}

/// An absolute-form request: vet the host, send the request in origin form over a new
/// connection to the vetted address, and stream the answer back (or splice a WebSocket).
async fn forward(mut req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    let uri = req.uri().clone();
    let Some(host) = uri.host() else {
        return text(StatusCode::BAD_REQUEST, "driftwatch: the request URL has no host");
    };
    let port = uri.port_u16().unwrap_or(80);
    let websocket = is_websocket_upgrade(req.headers());
    let upgrade_value = req.headers().get(header::UPGRADE).cloned();
    let stream = match open_upstream(&shared, host, port).await {
        Ok(stream) => stream,
        Err(response) => return response,
    };
    let handshake = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .title_case_headers(false)
        .handshake::<_, Incoming>(TokioIo::new(stream))
        .await;
    let (mut sender, conn) = match handshake {
        Ok(pair) => pair,
        Err(e) => return upstream_failed(host, &e),
    };
    let cancel = shared.cancel.clone();
    shared.tracker.spawn(async move {
        tokio::select! {
            () = cancel.cancelled() => {}
            driven = conn.with_upgrades() => {
                if let Err(e) = driven {
                    tracing::debug!(error = %e, "browser proxy: upstream connection ended with an error");
                }
            }
        }
    });

    let client_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    let path = uri.path_and_query().map_or("/", |pq| pq.as_str());
    parts.uri = match Uri::try_from(path) {
        Ok(origin) => origin,
        Err(_) => return text(StatusCode::BAD_REQUEST, "driftwatch: unusable request path"),
    };
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    if !parts.headers.contains_key(header::HOST) {
        let authority = uri.authority().map_or(host, |a| a.as_str());
        match HeaderValue::from_str(authority) {
            Ok(value) => {
                parts.headers.insert(header::HOST, value);
            }
            Err(_) => return text(StatusCode::BAD_REQUEST, "driftwatch: unusable host"),
        }
    }
    if websocket && let Some(value) = upgrade_value {
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        parts.headers.insert(header::UPGRADE, value);
    }

    if let Err(e) = sender.ready().await {
        return upstream_failed(host, &e);
    }
    let mut response = match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(e) => return upstream_failed(host, &e),
    };

    if response.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        let upstream_upgrade = hyper::upgrade::on(&mut response);
        let upgrade_value = response.headers().get(header::UPGRADE).cloned();
        let (mut parts, _body) = response.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        if let Some(value) = upgrade_value {
            parts.headers.insert(header::UPGRADE, value);
        }
        let cancel = shared.cancel.clone();
        let host = host.to_owned();
        shared.tracker.spawn(async move {
            let both = async { tokio::try_join!(client_upgrade, upstream_upgrade) };
            let (client, upstream) = tokio::select! {
                () = cancel.cancelled() => return,
                both = both => match both {
                    Ok(both) => both,
                    Err(e) => {
                        tracing::debug!(target.host = %host, error = %e, "browser proxy: WebSocket upgrade failed");
                        return;
                    }
                },
            };
            let (mut client, mut upstream) = (TokioIo::new(client), TokioIo::new(upstream));
            tokio::select! {
                () = cancel.cancelled() => {}
                copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
                    if let Err(e) = copied {
                        tracing::debug!(target.host = %host, error = %e, "browser proxy: WebSocket ended with an error");
                    }
                }
            }
        });
        return Response::from_parts(parts, empty());
    }

    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Response::from_parts(parts, body.boxed_unsync())
}

/// Vets `host` and opens a TCP connection to the first vetted address that accepts, or the
/// response to send instead (403 when refused, 502 when nothing accepts).
async fn open_upstream(shared: &Shared, host: &str, port: u16) -> Result<TcpStream, Response<ProxyBody>> {
    if port == 0 {
        return Err(refuse(shared, host, "port 0 is not allowed"));
    }
    let literal = host.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().ok();
    let exempt = literal.map(|ip| SocketAddr::new(ip, port)).filter(|addr| shared.exempt.contains(addr));
    let vetted = match exempt {
        Some(addr) => Ok(Ok(vec![addr])),
        None => tokio::time::timeout(LOOKUP_TIMEOUT, resolve_vetted(host, port, shared.policy)).await,
    };
    let addrs = match vetted {
        Ok(Ok(addrs)) => addrs,
        Ok(Err(e)) => return Err(refuse(shared, host, &e.to_string())),
        Err(_) => {
            return Err(refuse(shared, host, &format!("{host} did not resolve within {}s", LOOKUP_TIMEOUT.as_secs())));
        }
    };
    shared.passed.fetch_add(1, Ordering::Relaxed);
    let mut last_error = String::from("no address");
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => last_error = e.to_string(),
            Err(_) => last_error = format!("no connection within {}s", CONNECT_TIMEOUT.as_secs()),
        }
    }
    tracing::debug!(target.host = %host, error = %last_error, "browser proxy: cannot connect");
    Err(text(StatusCode::BAD_GATEWAY, &format!("driftwatch: cannot connect to {host}: {last_error}")))
}

fn refuse(shared: &Shared, host: &str, reason: &str) -> Response<ProxyBody> {
    shared.refused.fetch_add(1, Ordering::Relaxed);
    tracing::info!(target.host = %host, reason = %reason, "browser proxy refused a request");
    text(StatusCode::FORBIDDEN, &format!("driftwatch: {reason}"))
}

fn upstream_failed(host: &str, error: &hyper::Error) -> Response<ProxyBody> {
    tracing::debug!(target.host = %host, error = %error, "browser proxy: upstream request failed");
    text(StatusCode::BAD_GATEWAY, &format!("driftwatch: {host} did not answer: {error}"))
}

/// Whether the request asks to switch to the WebSocket protocol.
fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let lists = |name: HeaderName, token: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    };
    lists(header::CONNECTION, "upgrade") && lists(header::UPGRADE, "websocket")
}

/// Removes the headers that describe one hop, not the message: those the `Connection` header
/// lists and the standard hop-by-hop ones (the caller re-adds an upgrade it forwards).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        header::PROXY_AUTHORIZATION,
        header::PROXY_AUTHENTICATE,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
    headers.remove("proxy-connection");
    headers.remove("keep-alive");
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

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::AtomicUsize;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::sync::{mpsc, oneshot};

    const WAIT: Duration = Duration::from_secs(10);

    /// A loopback HTTP/1.1 server that counts hits, reports each request head and answers
    /// `hello` (then closes the connection).
    struct Upstream {
        addr: SocketAddr,
        hits: Arc<AtomicUsize>,
        heads: mpsc::UnboundedReceiver<String>,
    }

    async fn upstream() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind upstream");
        let addr = listener.local_addr().expect("upstream address");
        let hits = Arc::new(AtomicUsize::new(0));
        let (tx, heads) = mpsc::unbounded_channel();
        let counted = Arc::clone(&hits);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let counted = Arc::clone(&counted);
                let tx = tx.clone();
                tokio::spawn(async move {
                    let head = read_head(&mut stream).await;
                    counted.fetch_add(1, Ordering::SeqCst);
                    let _ = tx.send(head);
                    let _ = stream
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
                        .await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Upstream { addr, hits, heads }
    }

    /// Reads up to the end of a message head (or EOF).
    async fn read_head<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> String {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte).await {
                Ok(1) => buf.push(byte[0]),
                _ => break,
            }
        }
        String::from_utf8_lossy(&buf).into_owned()
    }

    async fn read_to_end<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> String {
        let mut buf = Vec::new();
        tokio::time::timeout(WAIT, stream.read_to_end(&mut buf)).await.expect("response in time").expect("read");
        String::from_utf8_lossy(&buf).into_owned()
    }

    /// Sends `request` to the proxy and reads the whole answer (requests say `Connection: close`).
    async fn exchange(proxy: &GuardProxy, request: &str) -> String {
        let mut stream = TcpStream::connect(proxy.addr()).await.expect("connect to proxy");
        stream.write_all(request.as_bytes()).await.expect("write request");
        read_to_end(&mut stream).await
    }

    fn get(target: &str, host: &str) -> String {
        format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    }

    #[tokio::test]
    async fn refuses_private_targets_by_default() {
        let server = upstream().await;
        let proxy = GuardProxy::start(TargetPolicy::default(), None).await.expect("start proxy");
        let addr = server.addr;

        let answer = exchange(&proxy, &get(&format!("http://{addr}/secret?token=1"), &addr.to_string())).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(answer.contains("127.0.0.1"), "{answer}");

        let answer =
            exchange(&proxy, &format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");

        let port = addr.port();
        let answer = exchange(&proxy, &get(&format!("http://localhost:{port}/"), &format!("localhost:{port}"))).await;
        assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("localhost"), "{answer}");
        let answer = exchange(
            &proxy,
            &format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let answer = exchange(&proxy, &get(&format!("http://[::1]:{port}/"), &format!("[::1]:{port}"))).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");

        assert_eq!(server.hits.load(Ordering::SeqCst), 0);
        assert_eq!(proxy.refused(), 5);
        assert_eq!(proxy.passed(), 0);
    }

    #[tokio::test]
    async fn forwards_absolute_form_requests_in_origin_form() {
        let mut server = upstream().await;
        let proxy = GuardProxy::start(TargetPolicy { allow_private: true }, None).await.expect("start proxy");
        let addr = server.addr;
        let request = format!(
            "GET http://{addr}/page?q=1 HTTP/1.1\r\nHost: {addr}\r\nProxy-Connection: keep-alive\r\n\
             Proxy-Authorization: Basic eDp5\r\nX-Drop: 1\r\nConnection: close, X-Drop\r\nX-Keep: 2\r\n\r\n"
        );
        let answer = exchange(&proxy, &request).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nhello"), "{answer}");

        let head = tokio::time::timeout(WAIT, server.heads.recv()).await.expect("head in time").expect("a head");
        assert!(head.starts_with("GET /page?q=1 HTTP/1.1\r\n"), "{head}");
        let lower = head.to_ascii_lowercase();
        assert!(lower.contains(&format!("host: {addr}\r\n")), "{head}");
        assert!(lower.contains("x-keep: 2\r\n"), "{head}");
        for gone in ["proxy-connection", "proxy-authorization", "x-drop"] {
            assert!(!lower.contains(gone), "{gone} forwarded: {head}");
        }
        assert_eq!(server.hits.load(Ordering::SeqCst), 1);
        assert_eq!(proxy.passed(), 1);
        assert_eq!(proxy.refused(), 0);
    }

    #[tokio::test]
    async fn connect_tunnels_bytes_to_an_allowed_target() {
        let server = upstream().await;
        let proxy = GuardProxy::start(TargetPolicy { allow_private: true }, None).await.expect("start proxy");
        let addr = server.addr;
        let mut stream = TcpStream::connect(proxy.addr()).await.expect("connect to proxy");
        stream.write_all(format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).await.expect("write");
        let head = tokio::time::timeout(WAIT, read_head(&mut stream)).await.expect("answer in time");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        stream.write_all(get("/through", "tunnel.example").as_bytes()).await.expect("write through tunnel");
        let answer = read_to_end(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("hello"), "{answer}");
        assert_eq!(server.hits.load(Ordering::SeqCst), 1);
        assert_eq!(proxy.passed(), 1);
    }

    #[tokio::test]
    async fn refuses_other_schemes_port_zero_and_origin_form() {
        let proxy = GuardProxy::start(TargetPolicy { allow_private: true }, None).await.expect("start proxy");
        let answer = exchange(&proxy, &get("ftp://127.0.0.1/file", "127.0.0.1")).await;
        assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("ftp"), "{answer}");
        let answer =
            exchange(&proxy, "CONNECT 127.0.0.1:0 HTTP/1.1\r\nHost: 127.0.0.1:0\r\nConnection: close\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        let answer = exchange(&proxy, &get("/", "127.0.0.1")).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert_eq!(proxy.refused(), 2);
        assert_eq!(proxy.passed(), 0);
    }

    #[tokio::test]
    async fn dropping_the_proxy_closes_open_tunnels() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind upstream");
        let addr = listener.local_addr().expect("upstream address");
        let (held_tx, held_rx) = oneshot::channel();
        tokio::spawn(async move {
            if let Ok((stream, _)) = listener.accept().await {
                let _ = held_tx.send(stream);
            }
        });
        let proxy = GuardProxy::start(TargetPolicy { allow_private: true }, None).await.expect("start proxy");
        let mut stream = TcpStream::connect(proxy.addr()).await.expect("connect to proxy");
        stream.write_all(format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes()).await.expect("write");
        let head = tokio::time::timeout(WAIT, read_head(&mut stream)).await.expect("answer in time");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        // The upstream end stays open: only the proxy going away can end the tunnel.
        let _held = tokio::time::timeout(WAIT, held_rx).await.expect("upstream accepted").expect("stream");
        stream.write_all(b"ping").await.expect("write through tunnel");

        drop(proxy);
        let mut buf = [0u8; 16];
        let read = tokio::time::timeout(WAIT, stream.read(&mut buf)).await.expect("tunnel closed in time");
        assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    }

    #[tokio::test]
    async fn websocket_upgrades_over_plain_http_are_spliced() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind upstream");
        let addr = listener.local_addr().expect("upstream address");
        tokio::spawn(async move {
            if let Ok((mut stream, _)) = listener.accept().await {
                let head = read_head(&mut stream).await.to_ascii_lowercase();
                if !(head.starts_with("get /ws http/1.1") && head.contains("upgrade: websocket")) {
                    let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
                    return;
                }
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                          Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
                    )
                    .await;
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            }
        });
        let proxy = GuardProxy::start(TargetPolicy { allow_private: true }, None).await.expect("start proxy");
        let mut stream = TcpStream::connect(proxy.addr()).await.expect("connect to proxy");
        let request = format!(
            "GET http://{addr}/ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        let head = tokio::time::timeout(WAIT, read_head(&mut stream)).await.expect("answer in time");
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        assert!(head.to_ascii_lowercase().contains("upgrade: websocket"), "{head}");
        stream.write_all(b"echo me").await.expect("write upgraded");
        let mut buf = [0u8; 7];
        tokio::time::timeout(WAIT, stream.read_exact(&mut buf)).await.expect("echo in time").expect("read echo");
        assert_eq!(&buf, b"echo me");
    }
}
