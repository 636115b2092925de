//! Reading every table out in one snapshot of the database, in batches.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use diesel::sql_types::Text;
use serde_json::{Map, Value};

use super::{Column, Kind, TABLES, columns, migration_version, quoted};
use crate::{DbConn, StoreError, StoreResult};

/// Where [`dump`] puts what it reads, table by table.
pub trait Sink {
    /// The rows that follow belong to `table`, whose columns are `columns`.
    fn table(&mut self, table: &str, columns: &[Column]) -> StoreResult<()>;
    /// A row of the current table, columns by name, in the canonical form of [`Kind`].
    fn row(&mut self, row: &Map<String, Value>) -> StoreResult<()>;
}

/// What [`dump`] read.
#[derive(Debug, Clone)]
pub struct Dumped {
    /// The database's last applied migration.
    pub migration: String,
    /// Rows per table, in [`TABLES`] order.
    pub rows: Vec<(String, u64)>,
}

/// Tables whose rows can be large (a page's text, a screenshot, a delivery's body, a stored
/// answer): read a tenth of the batch at a time, so a batch stays within memory's reach.
const LARGE_ROWS: &[&str] = &["snapshots", "screenshots", "deliveries", "idempotency_keys"];

#[derive(QueryableByName)]
struct JsonRow {
    #[diesel(sql_type = Text)]
    row: String,
}

/// Reads every table of [`TABLES`] into `sink`, `batch` rows at a time by keyset on the primary
/// key, all in one read transaction: one consistent snapshot of the database while others keep
/// writing (`REPEATABLE READ READ ONLY` on PostgreSQL; on SQLite in WAL mode a deferred
/// transaction, whose snapshot is taken at its first read). Nothing is written.
pub fn dump(conn: &mut DbConn, batch: i64, sink: &mut dyn Sink) -> StoreResult<Dumped> {
    diesel::Connection::transaction(conn, |conn| {
        if let DbConn::Pg(pg) = conn {
            // The first statement of the transaction, so it sets the snapshot's isolation.
            pg.batch_execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        }
        let migration =
            migration_version(conn)?.ok_or_else(|| StoreError::Backup("the database has no migrations".into()))?;
        let mut rows = Vec::with_capacity(TABLES.len());
        for (table, keys) in TABLES {
            let columns = columns(conn, table)?;
            let batch = if LARGE_ROWS.contains(table) { (batch / 10).max(1) } else { batch };
            if columns.is_empty() {
                return Err(StoreError::Backup(format!(
                    "the table {table} is missing: run `driftwatch migrate` first"
                )));
            }
            sink.table(table, &columns)?;
            rows.push(((*table).to_owned(), dump_table(conn, table, keys, &columns, batch, sink)?));
        }
        Ok(Dumped { migration, rows })
    })
}

/// Reads `table` in batches after the last key read; returns how many rows.
fn dump_table(
    conn: &mut DbConn,
    table: &str,
    keys: &[&str],
    columns: &[Column],
    batch: i64,
    sink: &mut dyn Sink,
) -> StoreResult<u64> {
    let pg = matches!(conn, DbConn::Pg(_));
    let mut after: Option<Vec<String>> = None;
    let mut count = 0;
    loop {
        let sql = page_sql(pg, table, keys, columns, after.is_some(), batch);
        let binds = after.clone().unwrap_or_default();
        let page: Vec<JsonRow> = match conn {
            DbConn::Pg(c) => bound(sql, binds).load(c)?,
            DbConn::Sqlite(c) => bound(sql, binds).load(c)?,
        };
        let full = page.len() as i64 == batch;
        for JsonRow { row } in page {
            let row = canonical_row(table, columns, &row)?;
            let key = keys
                .iter()
                .map(|k| row.get(*k).and_then(Value::as_str).map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| StoreError::Backup(format!("{table}: a primary key that is not text")))?;
            sink.row(&row)?;
            after = Some(key);
            count += 1;
        }
        if !full {
            return Ok(count);
        }
    }
}

/// `sql` with each of `binds` bound as text, for either backend.
fn bound<DB>(
    sql: String,
    binds: Vec<String>,
) -> diesel::query_builder::BoxedSqlQuery<'static, DB, diesel::query_builder::SqlQuery>
where
    DB: diesel::backend::Backend + diesel::sql_types::HasSqlType<Text>,
    String: diesel::serialize::ToSql<Text, DB>,
{
    binds.into_iter().fold(diesel::sql_query(sql).into_boxed::<DB>(), |q, b| q.bind::<Text, _>(b))
}

/// One page of `table` as one JSON object per row: PostgreSQL's `row_to_json`, SQLite's
/// `json_object` (bytes as hex, which SQLite's JSON cannot hold).
fn page_sql(pg: bool, table: &str, keys: &[&str], columns: &[Column], after: bool, batch: i64) -> String {
    let order = keys.iter().map(|k| quoted(k)).collect::<Vec<_>>().join(", ");
    let filter = if after {
        let params: Vec<String> =
            (1..=keys.len()).map(|i| if pg { format!("${i}") } else { format!("?{i}") }).collect();
        format!(" WHERE ({order}) > ({})", params.join(", "))
    } else {
        String::new()
    };
    let select = if pg {
        "row_to_json(t)::text".to_owned()
    } else {
        let pairs: Vec<String> = columns
            .iter()
            .map(|c| match c.kind {
                Kind::Binary => format!("'{}', hex({})", c.name, quoted(&c.name)),
                _ => format!("'{}', {}", c.name, quoted(&c.name)),
            })
            .collect();
        format!("json_object({})", pairs.join(", "))
    };
    format!("SELECT {select} AS row FROM {} t{filter} ORDER BY {order} LIMIT {batch}", quoted(table))
}

/// A row as the database wrote it in JSON, in the canonical form of [`Kind`].
fn canonical_row(table: &str, columns: &[Column], json: &str) -> StoreResult<Map<String, Value>> {
    let mut read: Map<String, Value> = serde_json::from_str(json)
        .map_err(|e| StoreError::Backup(format!("{table}: a row the database wrote is not JSON: {e}")))?;
    let mut row = Map::with_capacity(columns.len());
    for column in columns {
        let value = read.remove(&column.name).unwrap_or(Value::Null);
        let value = canonical(column.kind, value).ok_or_else(|| {
            StoreError::Backup(format!("{table}.{}: an unexpected value for {:?}", column.name, column.kind))
        })?;
        row.insert(column.name.clone(), value);
    }
    Ok(row)
}

/// `value` as read from either backend, in canonical form; `None` when it is not of `kind`.
fn canonical(kind: Kind, value: Value) -> Option<Value> {
    Some(match (kind, value) {
        (_, Value::Null) => Value::Null,
        (Kind::Text, v @ Value::String(_)) => v,
        (Kind::Integer | Kind::BigInt, Value::Number(n)) => Value::from(n.as_i64()?),
        (Kind::Double, v @ Value::Number(_)) => v,
        (Kind::Bool, v @ Value::Bool(_)) => v,
        (Kind::Bool, Value::Number(n)) => Value::Bool(n.as_i64()? != 0),
        (Kind::Timestamp, Value::String(s)) => Value::String(super::load::timestamp(&s)?.format(TIMESTAMP).to_string()),
        (Kind::Binary, Value::String(s)) => {
            let hex = s.strip_prefix("\\x").unwrap_or(&s);
            Value::String(STANDARD.encode(from_hex(hex)?))
        }
        _ => return None,
    })
}

/// The canonical form of a timestamp (chrono's `%.f` writes as many fraction digits as it needs).
pub(crate) const TIMESTAMP: &str = "%Y-%m-%dT%H:%M:%S%.f";

/// Bytes from hex digits of either case.
fn from_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}
