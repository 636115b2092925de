//! Recoveries of an endpoint's failed and dead deliveries.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::*;

/// A bulk re-queue of an endpoint's failed or dead deliveries, processed in pages.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = recoveries)]
pub struct Recovery {
    /// `rec_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The endpoint whose deliveries are re-queued.
    pub endpoint_id: String,
    /// Deliveries created at or after this.
    pub since: NaiveDateTime,
    /// Deliveries created before this, if set.
    pub until: Option<NaiveDateTime>,
    /// Comma-separated statuses to match (`failed,dead`).
    pub statuses: String,
    /// Count only.
    pub dry_run: bool,
    /// `pending`, `running` or `done`.
    pub state: String,
    /// Deliveries that matched so far.
    pub matched: i64,
    /// Deliveries re-queued so far.
    pub requeued: i64,
    /// The last delivery id processed (progress survives restarts).
    pub cursor: Option<String>,
    /// Lease holder while a page is processed.
    pub lease_owner: Option<String>,
    /// Lease expiry.
    pub lease_until: Option<NaiveDateTime>,
    /// When it was requested.
    pub created_at: NaiveDateTime,
    /// Last progress.
    pub updated_at: NaiveDateTime,
    /// When it completed.
    pub finished_at: Option<NaiveDateTime>,
}
