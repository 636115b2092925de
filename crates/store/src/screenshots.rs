//! Screenshots of rendered pages, stored once per content hash and referred to by snapshots;
//! one goes when the last snapshot that refers to it does.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::{screenshots, snapshots, watches};
use crate::{DbConn, StoreResult};

/// An encoded screenshot as stored.
#[derive(Debug, Clone, PartialEq, Eq, Queryable, Selectable, Insertable)]
#[diesel(table_name = screenshots)]
pub struct StoredScreenshot {
    /// Hex SHA-256 of `bytes`.
    pub hash: String,
    /// `webp`, `png` or `jpeg`.
    pub format: String,
    /// Width in pixels.
    pub width: i32,
    /// Height in pixels.
    pub height: i32,
    /// The encoded image.
    pub bytes: Vec<u8>,
    /// When it was first stored.
    pub created_at: NaiveDateTime,
}

impl StoredScreenshot {
    /// The `Content-Type` it is served with.
    pub fn content_type(&self) -> &'static str {
        match self.format.as_str() {
            "png" => "image/png",
            "jpeg" => "image/jpeg",
            _ => "image/webp",
        }
    }
}

/// Stores `shot` unless an identical one (same hash) is stored already; true when it was new.
pub fn put(conn: &mut DbConn, shot: &StoredScreenshot) -> StoreResult<bool> {
    use diesel::sql_types::{Binary, Integer, Text, Timestamp};
    // ON CONFLICT: two nodes storing the same image at once both succeed, neither aborts its
    // check's transaction.
    const SQL_PG: &str = "INSERT INTO screenshots (hash, format, width, height, bytes, created_at) \
                          VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (hash) DO NOTHING";
    const SQL_SQLITE: &str = "INSERT INTO screenshots (hash, format, width, height, bytes, created_at) \
                              VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING";
    macro_rules! insert {
        ($sql:expr, $conn:expr) => {
            diesel::sql_query($sql)
                .bind::<Text, _>(&shot.hash)
                .bind::<Text, _>(&shot.format)
                .bind::<Integer, _>(shot.width)
                .bind::<Integer, _>(shot.height)
                .bind::<Binary, _>(&shot.bytes)
                .bind::<Timestamp, _>(shot.created_at)
                .execute($conn)?
        };
    }
    let inserted = match conn {
        DbConn::Pg(c) => insert!(SQL_PG, c),
        DbConn::Sqlite(c) => insert!(SQL_SQLITE, c),
    };
    Ok(inserted == 1)
}

/// The screenshot of the account's snapshot `snapshot_id` of watch `watch_id` (none for
/// another account's, or when the snapshot has none).
pub fn of_snapshot(
    conn: &mut DbConn,
    account_id: &str,
    watch_id: &str,
    snapshot_id: &str,
) -> StoreResult<Option<StoredScreenshot>> {
    let hash: Option<Option<String>> = snapshots::table
        .inner_join(watches::table)
        .filter(watches::account_id.eq(account_id))
        .filter(snapshots::watch_id.eq(watch_id))
        .filter(snapshots::id.eq(snapshot_id))
        .select(snapshots::screenshot_hash)
        .first(conn)
        .optional()?;
    let Some(Some(hash)) = hash else { return Ok(None) };
    by_hash(conn, &hash)
}

/// A stored screenshot by its hash.
pub fn by_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<StoredScreenshot>> {
    Ok(screenshots::table
        .filter(screenshots::hash.eq(hash))
        .select(StoredScreenshot::as_select())
        .first(conn)
        .optional()?)
}

/// Deletes those of `hashes` that no snapshot refers to any more; returns how many.
pub fn delete_unreferenced(conn: &mut DbConn, hashes: &[String]) -> StoreResult<usize> {
    if hashes.is_empty() {
        return Ok(0);
    }
    let referenced: Vec<Option<String>> = snapshots::table
        .filter(snapshots::screenshot_hash.eq_any(hashes))
        .select(snapshots::screenshot_hash)
        .distinct()
        .load(conn)?;
    let doomed: Vec<&String> = hashes.iter().filter(|h| !referenced.iter().any(|r| r.as_ref() == Some(*h))).collect();
    if doomed.is_empty() {
        return Ok(0);
    }
    Ok(diesel::delete(screenshots::table.filter(screenshots::hash.eq_any(doomed))).execute(conn)?)
}

/// Screenshot hashes after `cursor`, in order, at most `limit` (for a sweep of orphans left
/// by deleted watches).
pub fn hashes_after(conn: &mut DbConn, cursor: &str, limit: i64) -> StoreResult<Vec<String>> {
    Ok(screenshots::table
        .filter(screenshots::hash.gt(cursor))
        .order(screenshots::hash.asc())
        .limit(limit)
        .select(screenshots::hash)
        .load(conn)?)
}

/// How many screenshots are stored (for tests and the operator).
pub fn count(conn: &mut DbConn) -> StoreResult<i64> {
    Ok(screenshots::table.count().get_result(conn)?)
}
