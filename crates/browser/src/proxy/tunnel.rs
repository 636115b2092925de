//! `CONNECT host:port` (https and wss): vet the target, answer 200, then splice bytes both
//! ways until either side closes or the proxy goes away.

use std::sync::Arc;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::upstream::open_upstream;
use super::{ProxyBody, Shared, empty, text};

/// `CONNECT host:port`: vet the host, connect to the vetted address, answer 200 and splice.
pub(super) async fn connect(mut req: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    let target = req.uri().authority().and_then(|authority| Some((authority.host().to_owned(), authority.port_u16()?)));
    let Some((host, port)) = target else {
        return text(StatusCode::BAD_REQUEST, "driftwatch: CONNECT needs host:port");
    };
    let upstream = match open_upstream(&shared, &host, port).await {
        Ok(upstream) => upstream,
        Err(response) => return response,
    };
    let on_upgrade = hyper::upgrade::on(&mut req);
    let cancel = shared.cancel.clone();
    shared.tracker.spawn(async move {
        let upgraded = tokio::select! {
            () = cancel.cancelled() => return,
            upgraded = on_upgrade => upgraded,
        };
        let client = match upgraded {
            Ok(upgraded) => TokioIo::new(upgraded),
            Err(e) => {
                tracing::debug!(target.host = %host, error = %e, "browser proxy: CONNECT upgrade failed");
                return;
            }
        };
        splice(&cancel, &host, "tunnel", client, upstream).await;
    });
    Response::new(empty())
}

/// Copies bytes both ways between `client` and `upstream` until either side closes or `cancel`
/// fires; `what` names the splice ("tunnel", "WebSocket") in the log when it ends in error.
pub(super) async fn splice<C, U>(cancel: &CancellationToken, host: &str, what: &str, mut client: C, mut upstream: U)
where
    C: AsyncRead + AsyncWrite + Unpin,
    U: AsyncRead + AsyncWrite + Unpin,
{
    tokio::select! {
        () = cancel.cancelled() => {}
        copied = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
            if let Err(e) = copied {
                tracing::debug!(target.host = %host, error = %e, "browser proxy: {what} ended with an error");
            }
        }
    }
}
