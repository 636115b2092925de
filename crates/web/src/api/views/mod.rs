//! The JSON shapes of resources, a file per resource. Times are RFC 3339 UTC; leases and
//! secrets stay inside.

mod delivery;
mod endpoint;
mod event;
mod login;
mod shown_once;
mod token;
mod watch;

pub use delivery::Delivery;
pub use endpoint::{Endpoint, Recovery};
pub use event::Event;
pub use login::{Secret, Session};
pub use shown_once::{Revealing, ShownOnce, ShownOnceFields, without_fields};
pub use token::Token;
pub use watch::{Diff, Run, Snapshot, Watch};

use chrono::{DateTime, NaiveDateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

/// A stored time (UTC without a zone) as the API shows it.
pub(crate) fn utc(t: NaiveDateTime) -> DateTime<Utc> {
    t.and_utc()
}

/// A page of a list.
#[derive(Debug, Serialize, ToSchema)]
pub struct List<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<String>,
}
