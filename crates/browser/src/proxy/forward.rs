//! Absolute-form requests (`GET http://host/path`): vet the target, forward the request in
//! origin form without its hop-by-hop headers, and stream the answer back, or splice the two
//! connections when a WebSocket upgrade succeeds.

use std::sync::Arc;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode, Uri, Version, request};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use super::tunnel::splice;
use super::upstream::{open_upstream, upstream_failed};
use super::{ProxyBody, Shared, empty, text};

/// An absolute-form request: vet the host, send the request in origin form over a new
/// connection to the vetted address, and stream the answer back (or splice a WebSocket).
pub(super) async fn forward(mut req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    let uri = req.uri().clone();
    let Some(host) = uri.host() else {
        return text(StatusCode::BAD_REQUEST, "driftwatch: the request URL has no host");
    };
    let port = uri.port_u16().unwrap_or(80);
    let websocket = is_websocket_upgrade(req.headers());
    let upgrade_value = req.headers().get(header::UPGRADE).cloned();
    let mut sender = match connect_upstream(&shared, host, port).await {
        Ok(sender) => sender,
        Err(response) => return response,
    };

    let client_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    if let Err(reason) = to_origin_form(&mut parts, &uri, host, websocket, upgrade_value) {
        return text(StatusCode::BAD_REQUEST, reason);
    }

    if let Err(e) = sender.ready().await {
        return upstream_failed(host, &e);
    }
    let response = match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(e) => return upstream_failed(host, &e),
    };

    if response.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(client_upgrade) = client_upgrade
    {
        return splice_upgrade(response, client_upgrade, &shared, host);
    }

    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Response::from_parts(parts, body.boxed_unsync())
}

/// Opens a vetted connection to `host:port` and shakes hands over HTTP/1.1; the connection is
/// driven in the background until it ends or the proxy stops.
async fn connect_upstream(
    shared: &Shared,
    host: &str,
    port: u16,
) -> Result<SendRequest<Incoming>, Response<ProxyBody>> {
    let stream = open_upstream(shared, host, port).await?;
    let handshake = hyper::client::conn::http1::Builder::new()
        .preserve_header_case(true)
        .title_case_headers(false)
        .handshake::<_, Incoming>(TokioIo::new(stream))
        .await;
    let (sender, conn) = match handshake {
        Ok(pair) => pair,
        Err(e) => return Err(upstream_failed(host, &e)),
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
    Ok(sender)
}

/// Rewrites the request for the upstream: origin-form path, HTTP/1.1, no hop-by-hop headers,
/// a `Host` header, and the WebSocket upgrade re-added when one is asked for. An unusable path
/// or host is the reason for a 400.
fn to_origin_form(
    parts: &mut request::Parts,
    uri: &Uri,
    host: &str,
    websocket: bool,
    upgrade_value: Option<HeaderValue>,
) -> Result<(), &'static str> {
    let path = uri.path_and_query().map_or("/", |pq| pq.as_str());
    parts.uri = match Uri::try_from(path) {
        Ok(origin) => origin,
        Err(_) => return Err("driftwatch: unusable request path"),
    };
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    if !parts.headers.contains_key(header::HOST) {
        let authority = uri.authority().map_or(host, |a| a.as_str());
        match HeaderValue::from_str(authority) {
            Ok(value) => {
                parts.headers.insert(header::HOST, value);
            }
            Err(_) => return Err("driftwatch: unusable host"),
        }
    }
    if websocket && let Some(value) = upgrade_value {
        parts.headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        parts.headers.insert(header::UPGRADE, value);
    }
    Ok(())
}

/// Answers a successful WebSocket upgrade with the upstream's 101 and splices both connections
/// in the background once each side has upgraded.
fn splice_upgrade(
    mut response: Response<Incoming>,
    client_upgrade: OnUpgrade,
    shared: &Shared,
    host: &str,
) -> Response<ProxyBody> {
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
        splice(&cancel, &host, "WebSocket", TokioIo::new(client), TokioIo::new(upstream)).await;
    });
    Response::from_parts(parts, empty())
}

/// Whether the request asks to switch to the WebSocket protocol.
pub(super) fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    header_tokens(headers, header::CONNECTION).any(|t| t.eq_ignore_ascii_case("upgrade"))
        && header_tokens(headers, header::UPGRADE).any(|t| t.eq_ignore_ascii_case("websocket"))
}

/// Removes the headers that describe one hop, not the message: those the `Connection` header
/// lists and the standard hop-by-hop ones (the caller re-adds an upgrade it forwards).
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<HeaderName> =
        header_tokens(headers, header::CONNECTION).filter_map(|t| HeaderName::from_bytes(t.as_bytes()).ok()).collect();
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

/// The comma-separated tokens of every `name` header, trimmed; values that are not visible
/// ASCII are skipped.
fn header_tokens(headers: &HeaderMap, name: HeaderName) -> impl Iterator<Item = &str> {
    headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(str::trim)
}
