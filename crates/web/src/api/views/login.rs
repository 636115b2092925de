//! An account's named secrets (never their values) and a watch's kept session (never its
//! cookies).

use chrono::{DateTime, Utc};
use driftwatch_store::logins::{AccountSecret, WatchSession};
use serde::Serialize;
use utoipa::ToSchema;

use super::utc;

/// A named secret: login steps type it with `{"secret": "<name>"}` in place of text. Its value
/// is never shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct Secret {
    /// The name steps use.
    name: String,
    /// When it was first set.
    created_at: DateTime<Utc>,
    /// When its value was last set.
    updated_at: DateTime<Utc>,
}

impl From<AccountSecret> for Secret {
    fn from(s: AccountSecret) -> Secret {
        Secret { name: s.name, created_at: utc(s.created_at), updated_at: utc(s.updated_at) }
    }
}

/// A watch's kept session (`options.fetch.session`): whether one is kept, how many cookies it
/// holds and how many logins made it. The cookies themselves stay inside, sealed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Session {
    /// A session is kept for the watch.
    kept: bool,
    /// The watch's options keep its session (`options.fetch.session.keep`): checks start from
    /// it and save it after each good check.
    keep: bool,
    /// `check` (saved by a check) or `import` (a `cookies.txt`); null when none is kept.
    source: Option<String>,
    /// When it was last saved.
    updated_at: Option<DateTime<Utc>>,
    /// Cookies in it.
    cookies: i32,
    /// How many times the login steps ran to make it (a check whose kept session still signs
    /// in runs none).
    logins: i64,
}

impl Session {
    /// The view of `row` (`None`: none kept) of a watch whose options do or do not `keep` it.
    pub fn of(row: Option<WatchSession>, keep: bool) -> Session {
        match row {
            Some(row) => Session {
                kept: true,
                keep,
                source: Some(row.source),
                updated_at: Some(utc(row.updated_at)),
                cookies: row.cookies,
                logins: row.logins,
            },
            None => Session { kept: false, keep, source: None, updated_at: None, cookies: 0, logins: 0 },
        }
    }
}
