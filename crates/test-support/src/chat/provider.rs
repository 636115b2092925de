//! Which provider a request is for, and each provider's answers.

use axum::response::Response;

use super::common::{self, Check, Incoming};
use super::{Tokens, discord, gotify, matrix, mattermost, ntfy, pushover, teams, telegram};

/// The service a request was meant for, told by its path (see [`ChatServer`](crate::ChatServer)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// A Discord webhook.
    Discord,
    /// Telegram's Bot API.
    Telegram,
    /// A Microsoft Teams Workflows webhook.
    Teams,
    /// A Mattermost incoming webhook.
    Mattermost,
    /// ntfy.
    Ntfy,
    /// Pushover.
    Pushover,
    /// Gotify.
    Gotify,
    /// A Matrix homeserver's client-server API.
    Matrix,
    /// A plain HTTP hook: recorded as it is, never rejected.
    Generic,
    /// No provider has this path: answered 404 and recorded as rejected.
    Unknown,
}

impl Provider {
    /// Whose path `path` is.
    pub(super) fn of(path: &str) -> Provider {
        match path {
            "/" => Provider::Ntfy,
            "/1/messages.json" => Provider::Pushover,
            "/message" => Provider::Gotify,
            p if p == "/hook" || p.starts_with("/hook/") => Provider::Generic,
            p if p.starts_with("/api/") && p.contains("/webhooks/") => Provider::Discord,
            p if p.starts_with("/bot") => Provider::Telegram,
            p if p.starts_with("/teams/") => Provider::Teams,
            p if p.starts_with("/hooks/") => Provider::Mattermost,
            p if p.starts_with("/_matrix/") => Provider::Matrix,
            _ => Provider::Unknown,
        }
    }

    /// The provider's verdict on `req`.
    pub(super) fn check(self, req: &Incoming, tokens: &Tokens) -> Check {
        match self {
            Provider::Discord => discord::check(req),
            Provider::Telegram => telegram::check(req),
            Provider::Teams => teams::check(req),
            Provider::Mattermost => mattermost::check(req),
            Provider::Ntfy => ntfy::check(req, tokens.ntfy.as_deref()),
            Provider::Pushover => pushover::check(req),
            Provider::Gotify => gotify::check(req, tokens.gotify.as_deref()),
            Provider::Matrix => matrix::check(req, tokens.matrix.as_deref()),
            Provider::Generic => Ok(()),
            Provider::Unknown => {
                Err(common::Reject::new(404, format!("no stand-in answers {} {}", req.method, req.path)))
            }
        }
    }

    /// The provider's answer to an accepted request; `id` numbers what it created.
    pub(super) fn ok(self, req: &Incoming, id: u64) -> Response {
        match self {
            Provider::Discord => discord::ok(req, id),
            Provider::Telegram => telegram::ok(req, id),
            Provider::Teams => teams::ok(),
            Provider::Mattermost => mattermost::ok(),
            Provider::Ntfy => ntfy::ok(req, id),
            Provider::Pushover => pushover::ok(id),
            Provider::Gotify => gotify::ok(req, id),
            Provider::Matrix => matrix::ok(id),
            Provider::Generic | Provider::Unknown => common::text(200, "ok".to_owned()),
        }
    }

    /// The provider's error answer.
    pub(super) fn error(self, status: u16, code: Option<&str>, reason: &str) -> Response {
        match self {
            Provider::Discord => discord::error(status, reason),
            Provider::Telegram => telegram::error(status, reason),
            Provider::Teams => teams::error(status, reason),
            Provider::Mattermost => mattermost::error(status, code, reason),
            Provider::Ntfy => ntfy::error(status, reason),
            Provider::Pushover => pushover::error(status, reason),
            Provider::Gotify => gotify::error(status, reason),
            Provider::Matrix => matrix::error(status, code, reason),
            Provider::Generic | Provider::Unknown => common::text(status, reason.to_owned()),
        }
    }

    /// The provider's 429 body.
    pub(super) fn rate_limited(self, secs: f64) -> Response {
        match self {
            Provider::Discord => discord::rate_limited(secs),
            Provider::Telegram => telegram::rate_limited(secs),
            Provider::Teams => teams::rate_limited(secs),
            Provider::Mattermost => mattermost::rate_limited(),
            Provider::Ntfy => ntfy::rate_limited(),
            Provider::Pushover => pushover::rate_limited(),
            Provider::Gotify => gotify::rate_limited(),
            Provider::Matrix => matrix::rate_limited(secs),
            Provider::Generic | Provider::Unknown => common::text(429, "rate limited".to_owned()),
        }
    }

    /// Whether its 429 carries a `Retry-After` header unless the test says otherwise: all but
    /// Telegram and Matrix, which give the wait in the body only.
    pub(super) fn sends_retry_after(self) -> bool {
        !matches!(self, Provider::Telegram | Provider::Matrix)
    }
}
