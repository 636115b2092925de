//! Runs: one per check of a watch, with its outcome.

use chrono::NaiveDateTime;
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

/// How many runs there are, of every watch (benchmarks wait on it while checks are recorded).
pub fn count_all(conn: &mut DbConn) -> StoreResult<i64> {
    Ok(runs::table.count().get_result(conn)?)
}

/// Inserts `rows` as they are: in multi-row statements on PostgreSQL, one statement a row on
/// SQLite. For seeding history (benchmarks, tests); a check records its run through
/// [`crate::checks`].
pub fn insert_runs(conn: &mut DbConn, rows: &[Run]) -> StoreResult<()> {
    crate::insert_all!(conn, runs::table, *rows);
    Ok(())
}

/// Deletes the run `id`; whether there was one.
pub fn delete_run(conn: &mut DbConn, id: &str) -> StoreResult<bool> {
    Ok(diesel::delete(runs::table.find(id)).execute(conn)? > 0)
}

/// Each run started at or before `until`, as (watch id, start), oldest first: every watch's,
/// unpaged, for benchmarks that measure scheduling lag.
pub fn starts_until(conn: &mut DbConn, until: NaiveDateTime) -> StoreResult<Vec<(String, NaiveDateTime)>> {
    Ok(runs::table
        .filter(runs::started_at.le(until))
        .select((runs::watch_id, runs::started_at))
        .order(runs::started_at.asc())
        .load(conn)?)
}
