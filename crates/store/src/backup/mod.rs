//! Every table's rows out of one database and into another, of either backend: what
//! `driftwatch backup` and `restore` move. The file format is `cli`'s; here rows are JSON
//! objects, columns by name, in one canonical form whichever backend they come from or go to
//! (see [`Kind`]), so a backup of SQLite restores into PostgreSQL and back exactly.
//!
//! Columns and their types are read from the database's own catalog (`pragma_table_info`,
//! `information_schema.columns`), so a column added by a migration is carried without a change
//! here; a table added must be listed in [`TABLES`] (a test compares the list with
//! `schema.rs` and with the migrated database).

mod dump;
mod load;
#[cfg(test)]
mod tests;

use diesel::prelude::*;
use diesel::sql_types::{Integer, Text};

use crate::{DbConn, StoreError, StoreResult};

pub use dump::{Dumped, Sink, dump};
pub use load::{empty_or_which, insert_rows};

/// Every table, in an order in which rows can be inserted (a table after those its foreign
/// keys name), each with its primary key columns (the order rows are read in, by keyset).
pub const TABLES: &[(&str, &[&str])] = &[
    ("accounts", &["id"]),
    ("users", &["id"]),
    ("sessions", &["id_hash"]),
    ("api_tokens", &["id"]),
    ("watches", &["id"]),
    ("screenshots", &["hash"]),
    ("snapshots", &["id"]),
    ("watch_views", &["user_id", "watch_id"]),
    ("endpoints", &["id"]),
    ("events", &["id"]),
    ("runs", &["id"]),
    ("deliveries", &["id"]),
    ("delivery_attempts", &["id"]),
    ("recoveries", &["id"]),
    ("idempotency_keys", &["account_id", "key"]),
    ("verdicts", &["event_id"]),
    ("ai_cache", &["key"]),
    ("ai_usage", &["account_id", "day"]),
    ("proxies", &["id"]),
    ("account_secrets", &["id"]),
    ("watch_sessions", &["watch_id"]),
];

/// What a column holds, and its canonical JSON form in a backup: text, integers and doubles
/// as JSON strings and numbers, booleans as `true`/`false`, timestamps as
/// `YYYY-MM-DDTHH:MM:SS[.fraction]` (UTC, as stored), bytes as standard base64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `TEXT`.
    Text,
    /// A 32-bit integer (`INTEGER` on PostgreSQL; SQLite's integers are all 64-bit).
    Integer,
    /// A 64-bit integer.
    BigInt,
    /// `DOUBLE PRECISION` / `REAL`.
    Double,
    /// `BOOLEAN` (0 or 1 on SQLite).
    Bool,
    /// `TIMESTAMP` without a zone.
    Timestamp,
    /// `BYTEA` / `BLOB`.
    Binary,
}

impl Kind {
    /// The kind of a column declared `declared` (SQLite's declared type or PostgreSQL's
    /// `data_type`); `None` for a type no driftwatch table uses.
    fn of(declared: &str, sqlite: bool) -> Option<Kind> {
        Some(match declared.to_ascii_lowercase().as_str() {
            "text" => Kind::Text,
            // Every SQLite integer is 64-bit, whatever the column's declared type says.
            "integer" if sqlite => Kind::BigInt,
            "integer" => Kind::Integer,
            "bigint" => Kind::BigInt,
            "double" | "double precision" | "real" => Kind::Double,
            "boolean" => Kind::Bool,
            "timestamp" | "timestamp without time zone" => Kind::Timestamp,
            "blob" | "bytea" => Kind::Binary,
            _ => return None,
        })
    }
}

/// A column of a table, as the database's catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Its name.
    pub name: String,
    /// What it holds.
    pub kind: Kind,
    /// Whether it may be NULL.
    pub nullable: bool,
}

#[derive(QueryableByName)]
struct CatalogColumn {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    declared: String,
    #[diesel(sql_type = Integer)]
    not_null: i32,
}

/// The columns of `table` in their order in the table; empty when there is no such table.
pub fn columns(conn: &mut DbConn, table: &str) -> StoreResult<Vec<Column>> {
    let sqlite = matches!(conn, DbConn::Sqlite(_));
    catalog(conn, table)?
        .into_iter()
        .map(|c| {
            let kind = Kind::of(&c.declared, sqlite).ok_or_else(|| {
                StoreError::Backup(format!("{table}.{}: a column of type {} cannot be backed up", c.name, c.declared))
            })?;
            Ok(Column { name: c.name, kind, nullable: c.not_null == 0 })
        })
        .collect()
}

/// What the database's catalog says of `table`'s columns.
fn catalog(conn: &mut DbConn, table: &str) -> StoreResult<Vec<CatalogColumn>> {
    Ok(match conn {
        DbConn::Sqlite(c) => diesel::sql_query(
            "SELECT name, type AS declared, \"notnull\" AS not_null FROM pragma_table_info(?) ORDER BY cid",
        )
        .bind::<Text, _>(table)
        .load(c)?,
        DbConn::Pg(c) => diesel::sql_query(
            "SELECT column_name::text AS name, data_type::text AS declared, \
             (is_nullable = 'NO')::int AS not_null FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
        )
        .bind::<Text, _>(table)
        .load(c)?,
    })
}

/// The version of the last migration the database has applied (diesel's
/// `__diesel_schema_migrations`), `None` when it has none.
pub fn migration_version(conn: &mut DbConn) -> StoreResult<Option<String>> {
    #[derive(QueryableByName)]
    struct Version {
        #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
        version: Option<String>,
    }
    let exists = !catalog(conn, "__diesel_schema_migrations")?.is_empty();
    if !exists {
        return Ok(None);
    }
    let sql = "SELECT MAX(version) AS version FROM __diesel_schema_migrations";
    let found: Version = match conn {
        DbConn::Sqlite(c) => diesel::sql_query(sql).get_result(c)?,
        DbConn::Pg(c) => diesel::sql_query(sql).get_result(c)?,
    };
    Ok(found.version)
}

/// The version of this build's last migration: what a database it has migrated reports in
/// [`migration_version`].
pub fn latest_migration() -> String {
    crate::db::latest_migration()
}

/// `name` quoted as an SQL identifier (the same on both backends).
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
