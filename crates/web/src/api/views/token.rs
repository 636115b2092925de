//! API tokens.

use chrono::{DateTime, Utc};
use driftwatch_store as store;
use serde::Serialize;
use utoipa::ToSchema;

use super::utc;

/// An API token; `token` (the secret) only in the answer to its creation.
#[derive(Debug, Serialize, ToSchema)]
pub struct Token {
    /// `tok_...`.
    id: String,
    /// What it is for.
    name: String,
    /// The token's first characters, to recognise it.
    prefix: String,
    /// `read`, `write`.
    scopes: Vec<String>,
    /// The token itself; only in the answer to its creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    token: Option<String>,
    /// Creation time.
    created_at: DateTime<Utc>,
    /// Last use.
    last_used_at: Option<DateTime<Utc>>,
    /// When it was revoked.
    revoked_at: Option<DateTime<Utc>>,
}

impl super::ShownOnce for Token {
    const SHOWN_ONCE: &'static [&'static str] = &["token"];
}

impl Token {
    /// The view with the plaintext token, for the creation response only.
    pub fn with_secret(t: store::ApiToken, plaintext: String) -> Token {
        Token { token: Some(plaintext), ..Token::from(t) }
    }
}

impl From<store::ApiToken> for Token {
    fn from(t: store::ApiToken) -> Token {
        Token {
            id: t.id,
            name: t.name,
            prefix: t.prefix,
            scopes: t.scopes.split_whitespace().map(str::to_owned).collect(),
            token: None,
            created_at: utc(t.created_at),
            last_used_at: t.last_used_at.map(utc),
            revoked_at: t.revoked_at.map(utc),
        }
    }
}
