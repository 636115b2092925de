//! Accounts and their API tokens.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::*;

/// An owner of watches, endpoints and everything that follows from them.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = accounts)]
pub struct Account {
    /// `acc_...`
    pub id: String,
    /// Unique, chosen by the operator.
    pub name: String,
    /// When it was created.
    pub created_at: NaiveDateTime,
}

/// An API token; only the SHA-256 of the secret is kept.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = api_tokens)]
pub struct ApiToken {
    /// `tok_...`
    pub id: String,
    /// The account the token acts for.
    pub account_id: String,
    /// A label.
    pub name: String,
    /// Hex SHA-256 of the token.
    pub token_hash: String,
    /// The first characters of the token, to recognise it in lists.
    pub prefix: String,
    /// Space-separated scopes (`read write`).
    pub scopes: String,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last authenticated use (updated at most once a minute).
    pub last_used_at: Option<NaiveDateTime>,
    /// Set when revoked; a revoked token authenticates nothing.
    pub revoked_at: Option<NaiveDateTime>,
}
