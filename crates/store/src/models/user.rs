//! Browser users and their sessions.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::*;

/// A person who signs in to the browser UI; one of an account's users.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = users)]
pub struct User {
    /// `usr_...`
    pub id: String,
    /// The account whose data the user sees.
    pub account_id: String,
    /// Lower-case; how the user signs in.
    pub email: String,
    /// Argon2id PHC string; never shown or logged.
    pub password_hash: String,
    /// IANA time zone for displayed times.
    pub time_zone: String,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last change (password, time zone).
    pub updated_at: NaiveDateTime,
}

/// A signed-in browser session; the cookie's id is kept only as its hash.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = sessions)]
pub struct Session {
    /// SHA-256 (hex) of the cookie's session id.
    pub id_hash: String,
    /// Who is signed in.
    pub user_id: String,
    /// The token every state-changing form of this session carries.
    pub csrf_token: String,
    /// Sign-in time.
    pub created_at: NaiveDateTime,
    /// Last request (refreshed at most once a minute).
    pub last_seen_at: NaiveDateTime,
    /// Absolute expiry.
    pub expires_at: NaiveDateTime,
    /// A message for the next page shown.
    pub flash: Option<String>,
}
