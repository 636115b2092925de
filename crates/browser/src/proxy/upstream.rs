//! Vetting a target and opening the connection to it, and the answers sent instead when that
//! is refused (403) or fails (502).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use driftwatch_net::resolve_vetted;
use http::{Response, StatusCode};
use tokio::net::TcpStream;

use super::chain::{Upstream, through};
use super::{ProxyBody, Shared, text};

/// Time to open a TCP connection to one vetted address.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Time to resolve a name; an answer that does not come cannot be vetted.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Vets `host` and opens a connection to the first vetted address that accepts (through the
/// user's proxy, when the listener is chained to one), or the response to send instead (403
/// when refused, 502 when nothing accepts).
pub(super) async fn open_upstream(shared: &Shared, host: &str, port: u16) -> Result<Upstream, Response<ProxyBody>> {
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
    if let (Some(proxy), Some(first)) = (&shared.upstream, addrs.first()) {
        // The first vetted address: the proxy connects onwards, and its error says why not.
        return match through(proxy, *first).await {
            Ok(stream) => Ok(stream),
            Err(e) => {
                tracing::debug!(target.host = %host, error = %e, "browser proxy: the user's proxy failed");
                Err(text(StatusCode::BAD_GATEWAY, &format!("driftwatch: {e}")))
            }
        };
    }
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(Box::new(stream));
            }
            Ok(Err(e)) => last_error = e.to_string(),
            Err(_) => last_error = format!("no connection within {}s", CONNECT_TIMEOUT.as_secs()),
        }
    }
    tracing::debug!(target.host = %host, error = %last_error, "browser proxy: cannot connect");
    Err(text(StatusCode::BAD_GATEWAY, &format!("driftwatch: cannot connect to {host}: {last_error}")))
}

pub(super) fn refuse(shared: &Shared, host: &str, reason: &str) -> Response<ProxyBody> {
    shared.refused.fetch_add(1, Ordering::Relaxed);
    if shared.background {
        // The browser's own services (updates, accounts): no page asked, nobody needs to know.
        tracing::debug!(target.host = %host, reason = %reason, "browser proxy refused a background request");
    } else {
        tracing::info!(target.host = %host, reason = %reason, "browser proxy refused a request");
    }
    text(StatusCode::FORBIDDEN, &format!("driftwatch: {reason}"))
}

pub(super) fn upstream_failed(host: &str, error: &hyper::Error) -> Response<ProxyBody> {
    tracing::debug!(target.host = %host, error = %error, "browser proxy: upstream request failed");
    text(StatusCode::BAD_GATEWAY, &format!("driftwatch: {host} did not answer: {error}"))
}
