//! Snapshots: the text of a watch at a check, as the checks compare it and the API and UI read it.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::{snapshots, watches};
use crate::{DbConn, Page, Snapshot, StoreResult};

/// The newest snapshot of a watch.
pub fn latest_snapshot(conn: &mut DbConn, watch_id: &str) -> StoreResult<Option<Snapshot>> {
    Ok(snapshots::table
        .filter(snapshots::watch_id.eq(watch_id))
        .order(snapshots::id.desc())
        .select(Snapshot::as_select())
        .first(conn)
        .optional()?)
}

/// A snapshot's metadata, for listings.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = snapshots)]
pub struct SnapshotInfo {
    /// `snp_...`
    pub id: String,
    /// The watch.
    pub watch_id: String,
    /// Hex SHA-256 of the content (and of its values, when the watch has values).
    pub content_hash: String,
    /// When it was fetched.
    pub created_at: NaiveDateTime,
    /// Hex SHA-256 of its screenshot, when one was kept.
    pub screenshot_hash: Option<String>,
    /// Share of pixels that differ from the previous snapshot's screenshot, in percent.
    pub visual_change_percent: Option<f64>,
    /// The values read with it (JSON by name), for a watch with values.
    pub readings: Option<String>,
    /// Why the change that made it alerted no one, when it did not.
    pub kept_quiet: Option<String>,
}

/// The snapshots of the account's watch `watch_id`, newest first, without their content (none
/// for another account's).
pub fn list_snapshots(
    conn: &mut DbConn,
    account_id: &str,
    watch_id: &str,
    page: &Page,
) -> StoreResult<Vec<SnapshotInfo>> {
    let mut query = snapshots::table
        .inner_join(watches::table)
        .filter(watches::account_id.eq(account_id))
        .filter(snapshots::watch_id.eq(watch_id))
        .select(SnapshotInfo::as_select())
        .into_boxed();
    if let Some(after) = &page.after {
        query = query.filter(snapshots::id.lt(after));
    }
    Ok(query.order(snapshots::id.desc()).limit(page.limit).load(conn)?)
}

/// How many snapshots back [`previous_screenshot`] looks.
const SCREENSHOT_LOOKBACK: i64 = 100;

/// The newest snapshot of the account's watch `watch_id` before `snapshot_id` that has a
/// screenshot, among the `SCREENSHOT_LOOKBACK` before it: what the snapshot's screenshot is
/// shown beside and its visual difference drawn against.
pub fn previous_screenshot(
    conn: &mut DbConn,
    account_id: &str,
    watch_id: &str,
    snapshot_id: &str,
) -> StoreResult<Option<SnapshotInfo>> {
    let page = Page { after: Some(snapshot_id.to_owned()), limit: SCREENSHOT_LOOKBACK };
    Ok(list_snapshots(conn, account_id, watch_id, &page)?.into_iter().find(|s| s.screenshot_hash.is_some()))
}

/// Most points of a value series in one answer.
pub const MAX_SERIES_POINTS: i64 = 10_000;

/// The values read with the account's watch `watch_id`'s snapshots since `since`, oldest
/// first: `(snapshot id, when, readings JSON)`, at most `limit` (the newest ones when there are
/// more). Snapshots without values are left out.
pub fn value_series(
    conn: &mut DbConn,
    account_id: &str,
    watch_id: &str,
    since: Option<NaiveDateTime>,
    limit: i64,
) -> StoreResult<Vec<(String, NaiveDateTime, String)>> {
    let mut query = snapshots::table
        .inner_join(watches::table)
        .filter(watches::account_id.eq(account_id))
        .filter(snapshots::watch_id.eq(watch_id))
        .filter(snapshots::readings.is_not_null())
        .select((snapshots::id, snapshots::created_at, snapshots::readings))
        .into_boxed();
    if let Some(since) = since {
        query = query.filter(snapshots::created_at.ge(since));
    }
    let mut rows: Vec<(String, NaiveDateTime, Option<String>)> =
        query.order(snapshots::id.desc()).limit(limit.clamp(1, MAX_SERIES_POINTS)).load(conn)?;
    rows.reverse();
    Ok(rows.into_iter().filter_map(|(id, at, readings)| Some((id, at, readings?))).collect())
}

/// The account's watch `watch_id`'s snapshots since `since` with their content, oldest first:
/// the newest `limit` of them.
pub fn history(
    conn: &mut DbConn,
    account_id: &str,
    watch_id: &str,
    since: Option<NaiveDateTime>,
    limit: i64,
) -> StoreResult<Vec<Snapshot>> {
    let mut query = snapshots::table
        .inner_join(watches::table)
        .filter(watches::account_id.eq(account_id))
        .filter(snapshots::watch_id.eq(watch_id))
        .select(Snapshot::as_select())
        .into_boxed();
    if let Some(since) = since {
        query = query.filter(snapshots::created_at.ge(since));
    }
    let mut rows: Vec<Snapshot> = query.order(snapshots::id.desc()).limit(limit).load(conn)?;
    rows.reverse();
    Ok(rows)
}

/// The account's snapshot `id`, with its content.
pub fn get_snapshot(conn: &mut DbConn, account_id: &str, id: &str) -> StoreResult<Option<Snapshot>> {
    Ok(snapshots::table
        .inner_join(watches::table)
        .filter(watches::account_id.eq(account_id))
        .filter(snapshots::id.eq(id))
        .select(Snapshot::as_select())
        .first(conn)
        .optional()?)
}

/// The two newest snapshots of a watch (newest first).
pub fn latest_two_snapshots(conn: &mut DbConn, watch_id: &str) -> StoreResult<Vec<Snapshot>> {
    Ok(snapshots::table
        .filter(snapshots::watch_id.eq(watch_id))
        .order(snapshots::id.desc())
        .limit(2)
        .select(Snapshot::as_select())
        .load(conn)?)
}

/// Whether `hash` is the content hash of one of the watch's `n` newest snapshots before the
/// newest one (the page went back to a recent state).
pub fn is_recent_state(conn: &mut DbConn, watch_id: &str, hash: &str, n: i64) -> StoreResult<bool> {
    let recent: Vec<String> = snapshots::table
        .filter(snapshots::watch_id.eq(watch_id))
        .order(snapshots::id.desc())
        .offset(1)
        .limit(n)
        .select(snapshots::content_hash)
        .load(conn)?;
    Ok(recent.iter().any(|h| h == hash))
}

/// Writes snapshots brought in from elsewhere (an imported history), as they are: on
/// PostgreSQL in statements of at most 500 rows or about 8 MiB of text, on SQLite row by row
/// (cheap inside the caller's transaction).
pub fn insert_snapshots(conn: &mut DbConn, rows: &[Snapshot]) -> StoreResult<usize> {
    let rows: Vec<Snapshot> = rows.iter().map(|s| s.storable().into_owned()).collect();
    let mut written = 0;
    match conn {
        DbConn::Pg(pg) => {
            let mut start = 0;
            while start < rows.len() {
                let (mut end, mut bytes) = (start, 0usize);
                while end < rows.len() && end - start < 500 && (bytes < 8 << 20 || end == start) {
                    bytes += rows[end].content.len();
                    end += 1;
                }
                written += diesel::insert_into(snapshots::table).values(&rows[start..end]).execute(pg)?;
                start = end;
            }
        }
        DbConn::Sqlite(sqlite) => {
            for row in &rows {
                written += diesel::insert_into(snapshots::table).values(row).execute(sqlite)?;
            }
        }
    }
    Ok(written)
}
