//! One request checked and answered as its provider's stand-in would, with no server around
//! it: for a caller that serves requests itself and keeps its own count (the delivery
//! benchmark numbers each request by its own endpoints and times the stand-ins alone).

use axum::body::Bytes;
use axum::http::Request;
use axum::response::Response;

use super::common::{self, Incoming};
use super::{ChatServer, Provider, Tokens};

/// What a stand-in made of one request (see [`ChatServer::answer`]).
#[derive(Debug)]
pub struct ChatAnswer {
    /// Whose path it was sent to.
    pub provider: Provider,
    /// Why the provider would refuse it, if it would: the status it answers and the reason.
    pub refused: Option<(u16, String)>,
    /// The provider's answer: what it created, or its error shape.
    pub response: Response,
}

impl ChatServer {
    /// Checks `request` the way the provider its path names would and answers it so, without
    /// a server: as a running [`ChatServer`] in [`Mode::Ok`](super::Mode::Ok) told no tokens
    /// would (credentials a provider always requires are still required). Nothing is recorded,
    /// and Matrix transactions are not remembered (a repeated one is answered as new).
    pub fn answer(request: Request<Bytes>) -> ChatAnswer {
        let (parts, body) = request.into_parts();
        let req = Incoming::new(parts, body);
        let provider = Provider::of(&req.path);
        match provider.check(&req, &Tokens::default()) {
            Ok(()) => ChatAnswer { provider, refused: None, response: provider.ok(&req, common::next_id()) },
            Err(reject) => ChatAnswer {
                provider,
                response: provider.error(reject.status, reject.code, &reject.reason),
                refused: Some((reject.status, reject.reason)),
            },
        }
    }
}
