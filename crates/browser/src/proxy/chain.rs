//! Leaving through a user's proxy: a connection to a vetted address opened through an HTTP(S)
//! proxy (`CONNECT`) or a SOCKS5 one, so a rendered check leaves by the watch's proxy with the
//! address guard still applied here first.
//!
//! The target is always the vetted IP address, never the name: the proxy cannot resolve it to
//! something else (for `socks5h://` too, whose point is otherwise to let the proxy resolve).

use std::net::SocketAddr;
use std::time::Duration;

use base64::Engine as _;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;
use url::Url;

/// A byte stream to the target, direct or through a proxy.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A connection to the target.
pub(crate) type Upstream = Box<dyn Io>;

/// Time to reach the proxy and have it connect onwards.
const CHAIN_TIMEOUT: Duration = Duration::from_secs(20);
/// The longest proxy answer head to a `CONNECT`.
const MAX_HEAD: usize = 16 * 1024;

/// Opens a connection to `target` through `proxy`. The error names the proxy (without its
/// password) and says what went wrong.
pub(crate) async fn through(proxy: &Url, target: SocketAddr) -> Result<Upstream, String> {
    let shown = driftwatch_net::redact_proxy(proxy);
    match tokio::time::timeout(CHAIN_TIMEOUT, open(proxy, target)).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(format!("the proxy {shown} {e}")),
        Err(_) => Err(format!("the proxy {shown} did not connect within {}s", CHAIN_TIMEOUT.as_secs())),
    }
}

async fn open(proxy: &Url, target: SocketAddr) -> Result<Upstream, String> {
    let host = proxy.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = driftwatch_net::proxy_port(proxy);
    let tcp = TcpStream::connect((host.as_str(), port)).await.map_err(|e| format!("does not answer: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let user = percent_decoded(proxy.username());
    let password = proxy.password().map(percent_decoded);
    match proxy.scheme() {
        "socks5" | "socks5h" => {
            let stream = match &password {
                Some(password) => {
                    tokio_socks::tcp::Socks5Stream::connect_with_password_and_socket(tcp, target, &user, password).await
                }
                None => tokio_socks::tcp::Socks5Stream::connect_with_socket(tcp, target).await,
            };
            Ok(Box::new(stream.map_err(|e| format!("refused the connection: {e}"))?))
        }
        "https" => {
            let connector = native_tls::TlsConnector::new().map_err(|e| format!("cannot be reached over TLS: {e}"))?;
            let tls = tokio_native_tls::TlsConnector::from(connector)
                .connect(&host, tcp)
                .await
                .map_err(|e| format!("failed the TLS handshake: {e}"))?;
            connect_tunnel(tls, target, &user, password.as_deref()).await
        }
        _ => connect_tunnel(tcp, target, &user, password.as_deref()).await,
    }
}

/// Asks an HTTP proxy for a tunnel to `target` over `stream` and returns the tunnel.
async fn connect_tunnel<S>(
    mut stream: S,
    target: SocketAddr,
    user: &str,
    password: Option<&str>,
) -> Result<Upstream, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if !user.is_empty() || password.is_some() {
        let credentials =
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", password.unwrap_or("")));
        head.push_str(&format!("Proxy-Authorization: Basic {credentials}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.map_err(|e| format!("dropped the connection: {e}"))?;
    // Read the answer's head byte by byte: what follows it belongs to the tunnel.
    let mut answer = Vec::with_capacity(256);
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_HEAD {
            return Err("sent an answer head that never ends".into());
        }
        let byte = stream.read_u8().await.map_err(|e| format!("closed the connection before answering: {e}"))?;
        answer.push(byte);
    }
    let status_line =
        String::from_utf8_lossy(answer.split(|b| *b == b'\n').next().unwrap_or_default()).trim().to_owned();
    let status = status_line.split_whitespace().nth(1).and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(200..=299) => Ok(Box::new(stream)),
        Some(407) => Err("wants credentials (407 Proxy Authentication Required): check the user and password".into()),
        _ => Err(format!("refused the tunnel: {status_line}")),
    }
}

/// A URL's user or password as typed (the URL keeps them percent-encoded).
fn percent_decoded(value: &str) -> String {
    percent_encoding::percent_decode_str(value).decode_utf8_lossy().into_owned()
}
