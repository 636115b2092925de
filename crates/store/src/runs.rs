//! Runs: one per check of a watch, with its outcome.

use diesel::prelude::*;

use crate::schema::{runs, watches};
use crate::{DbConn, Page, Run, StoreResult};

/// The newest run of a watch.
pub fn newest_run(conn: &mut DbConn, watch_id: &str) -> StoreResult<Option<Run>> {
    Ok(runs::table
        .filter(runs::watch_id.eq(watch_id))
        .order(runs::id.desc())
        .select(Run::as_select())
        .first(conn)
        .optional()?)
}

/// The runs of the account's watch `watch_id`, newest first (none for another account's).
pub fn list_runs(conn: &mut DbConn, account_id: &str, watch_id: &str, page: &Page) -> StoreResult<Vec<Run>> {
    let mut query = runs::table
        .inner_join(watches::table)
        .filter(watches::account_id.eq(account_id))
        .filter(runs::watch_id.eq(watch_id))
        .select(Run::as_select())
        .into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(runs::id.lt(after));
    }
    Ok(query.order(runs::id.desc()).limit(page.limit).load(conn)?)
}
