//! A forward proxy on loopback, HTTP (`CONNECT` and absolute-form requests) or SOCKS5, that
//! counts what passes through it, may require credentials, and may route an address that
//! nothing else can reach (`192.0.2.1:80`, say) to a real server: a page behind such an
//! address answers only through the proxy, so a check that answers went through it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// What a [`ProxyServer`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    /// An HTTP proxy: `CONNECT host:port` tunnels and absolute-form requests.
    Http,
    /// A SOCKS5 proxy (RFC 1928, username/password per RFC 1929).
    Socks5,
}

/// A forward proxy on 127.0.0.1 for tests. It serves until the test's runtime ends.
#[derive(Debug, Clone)]
pub struct ProxyServer {
    addr: SocketAddr,
    kind: ProxyKind,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    credentials: Option<(String, String)>,
    routes: HashMap<SocketAddr, SocketAddr>,
    /// Connections (tunnels or forwarded requests) made on a client's behalf.
    passed: AtomicU64,
    /// Clients turned away for want of the right credentials.
    refused: AtomicU64,
}

impl ProxyServer {
    /// Starts a proxy of `kind`; with `credentials`, clients must give them; `routes` sends a
    /// client asking for a key address to the value address instead.
    pub async fn start(
        kind: ProxyKind,
        credentials: Option<(&str, &str)>,
        routes: HashMap<SocketAddr, SocketAddr>,
    ) -> ProxyServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let shared = Arc::new(Shared {
            credentials: credentials.map(|(u, p)| (u.to_owned(), p.to_owned())),
            routes,
            passed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        });
        let serving = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = Arc::clone(&serving);
                tokio::spawn(async move {
                    let _ = match kind {
                        ProxyKind::Http => http(stream, &shared).await,
                        ProxyKind::Socks5 => socks5(stream, &shared).await,
                    };
                });
            }
        });
        ProxyServer { addr, kind, shared }
    }

    /// The proxy's URL, with `user:password@` when given: `http://…` or `socks5://…`.
    pub fn url_with(&self, credentials: Option<(&str, &str)>) -> String {
        let scheme = match self.kind {
            ProxyKind::Http => "http",
            ProxyKind::Socks5 => "socks5",
        };
        match credentials {
            Some((user, password)) => format!("{scheme}://{user}:{password}@{}", self.addr),
            None => format!("{scheme}://{}", self.addr),
        }
    }

    /// The proxy's URL with the credentials it requires, if any.
    pub fn url(&self) -> String {
        let credentials = self.shared.credentials.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
        self.url_with(credentials)
    }

    /// Connections made on clients' behalf so far.
    pub fn passed(&self) -> u64 {
        self.shared.passed.load(Ordering::SeqCst)
    }

    /// Clients refused for their credentials so far.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
    }
}

impl Shared {
    fn route(&self, target: SocketAddr) -> SocketAddr {
        self.routes.get(&target).copied().unwrap_or(target)
    }

    async fn open(&self, target: &str) -> std::io::Result<TcpStream> {
        let target = match target.parse::<SocketAddr>() {
            Ok(addr) => self.route(addr),
            Err(_) => {
                tokio::net::lookup_host(target).await?.next().ok_or_else(|| std::io::Error::other("no address"))?
            }
        };
        let stream = TcpStream::connect(target).await?;
        self.passed.fetch_add(1, Ordering::SeqCst);
        Ok(stream)
    }
}

async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<String> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 * 1024 {
            return Err(std::io::Error::other("head too long"));
        }
        head.push(stream.read_u8().await?);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

async fn http(mut client: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let head = read_head(&mut client).await?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let headers: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
    if let Some((user, password)) = &shared.credentials {
        let expected = format!("{user}:{password}");
        let given = headers
            .iter()
            .find_map(|h| h.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("proxy-authorization")))
            .and_then(|(_, v)| v.trim().strip_prefix("Basic ").map(str::to_owned))
            .and_then(|b64| decode_base64(&b64));
        if given.as_deref() != Some(expected.as_str()) {
            shared.refused.fetch_add(1, Ordering::SeqCst);
            let answer = "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            return client.write_all(answer.as_bytes()).await;
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if method.eq_ignore_ascii_case("CONNECT") {
        let Ok(mut upstream) = shared.open(target).await else {
            return client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n").await;
        };
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await?;
        return splice(client, &mut upstream).await;
    }
    // Absolute form: one request per connection, sent on in origin form.
    let Ok(url) = url::Url::parse(target) else {
        return client.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
    };
    let authority = format!("{}:{}", url.host_str().unwrap_or_default(), url.port_or_known_default().unwrap_or(80));
    let Ok(mut upstream) = shared.open(&authority).await else {
        return client.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n").await;
    };
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    let mut forwarded = format!("{method} {path} HTTP/1.1\r\n");
    for header in &headers {
        let name = header.split(':').next().unwrap_or_default().to_ascii_lowercase();
        if !matches!(name.as_str(), "proxy-authorization" | "proxy-connection" | "connection" | "keep-alive") {
            forwarded.push_str(header);
            forwarded.push_str("\r\n");
        }
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    upstream.write_all(forwarded.as_bytes()).await?;
    // One request per connection: its body, then the answer until the server closes, then
    // this connection closes too (so each request is counted).
    let length = headers
        .iter()
        .find_map(|h| h.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    tokio::io::copy(&mut (&mut client).take(length), &mut upstream).await?;
    tokio::io::copy(&mut upstream, &mut client).await?;
    client.shutdown().await
}

async fn socks5(mut client: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let (version, methods) = (client.read_u8().await?, client.read_u8().await?);
    if version != 5 {
        return Ok(());
    }
    let mut offered = vec![0u8; usize::from(methods)];
    client.read_exact(&mut offered).await?;
    match &shared.credentials {
        None => client.write_all(&[5, 0]).await?,
        Some((user, password)) => {
            if !offered.contains(&2) {
                shared.refused.fetch_add(1, Ordering::SeqCst);
                return client.write_all(&[5, 0xff]).await;
            }
            client.write_all(&[5, 2]).await?;
            let _subversion = client.read_u8().await?;
            let mut given_user = vec![0u8; usize::from(client.read_u8().await?)];
            client.read_exact(&mut given_user).await?;
            let mut given_password = vec![0u8; usize::from(client.read_u8().await?)];
            client.read_exact(&mut given_password).await?;
            if given_user != user.as_bytes() || given_password != password.as_bytes() {
                shared.refused.fetch_add(1, Ordering::SeqCst);
                return client.write_all(&[1, 1]).await;
            }
            client.write_all(&[1, 0]).await?;
        }
    }
    let mut request = [0u8; 4];
    client.read_exact(&mut request).await?;
    let host = match request[3] {
        1 => {
            let mut ip = [0u8; 4];
            client.read_exact(&mut ip).await?;
            std::net::Ipv4Addr::from(ip).to_string()
        }
        4 => {
            let mut ip = [0u8; 16];
            client.read_exact(&mut ip).await?;
            format!("[{}]", std::net::Ipv6Addr::from(ip))
        }
        _ => {
            let mut name = vec![0u8; usize::from(client.read_u8().await?)];
            client.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
    };
    let port = client.read_u16().await?;
    match shared.open(&format!("{host}:{port}")).await {
        Ok(mut upstream) => {
            client.write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            splice(client, &mut upstream).await
        }
        Err(_) => client.write_all(&[5, 5, 0, 1, 0, 0, 0, 0, 0, 0]).await,
    }
}

async fn splice<U: AsyncRead + AsyncWrite + Unpin>(mut client: TcpStream, upstream: &mut U) -> std::io::Result<()> {
    tokio::io::copy_bidirectional(&mut client, upstream).await.map(drop)
}

fn decode_base64(text: &str) -> Option<String> {
    use base64::Engine as _;
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(text.trim()).ok()?).ok()
}
