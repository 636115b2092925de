//! The proxy's tests: loopback upstreams, raw requests, and what reaches them.

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
                let _ =
                    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello").await;
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
