//! Writing a backup's rows into a database: checked against the target's own columns, bound
//! with their types so each backend stores them as its own code would.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::NaiveDateTime;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Binary, Bool, Double, Integer, Text, Timestamp};
use serde_json::{Map, Value};

use super::{Column, Kind, TABLES, columns, quoted};
use crate::{DbConn, StoreError, StoreResult};

/// Most parameters bound in one statement (SQLite allows 32,766, PostgreSQL 65,535).
const PARAMETERS: usize = 10_000;

/// The tables of [`TABLES`] that exist and hold rows, with how many; empty when the database
/// is empty (or has no tables yet).
pub fn empty_or_which(conn: &mut DbConn) -> StoreResult<Vec<(String, i64)>> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let mut found = Vec::new();
    for (table, _) in TABLES {
        if columns(conn, table)?.is_empty() {
            continue;
        }
        let sql = format!("SELECT COUNT(*) AS n FROM {}", quoted(table));
        let count: Count = match conn {
            DbConn::Pg(c) => diesel::sql_query(sql).get_result(c)?,
            DbConn::Sqlite(c) => diesel::sql_query(sql).get_result(c)?,
        };
        if count.n > 0 {
            found.push(((*table).to_owned(), count.n));
        }
    }
    Ok(found)
}

/// A value ready to bind.
enum Bound {
    Null,
    Text(String),
    Integer(i32),
    BigInt(i64),
    Double(f64),
    Bool(bool),
    Timestamp(NaiveDateTime),
    Binary(Vec<u8>),
}

/// Inserts `rows` (canonical JSON objects, see [`Kind`]) into `table`, whose columns in this
/// database are `columns`: a row lacking one of them, or naming another, is refused.
pub fn insert_rows(conn: &mut DbConn, table: &str, columns: &[Column], rows: &[Map<String, Value>]) -> StoreResult<()> {
    let per_statement = (PARAMETERS / columns.len().max(1)).clamp(1, 1_000);
    for chunk in rows.chunks(per_statement) {
        let mut values = Vec::with_capacity(chunk.len() * columns.len());
        for row in chunk {
            if let Some(other) = row.keys().find(|k| !columns.iter().any(|c| &c.name == *k)) {
                return Err(StoreError::Backup(format!("{table}: this database has no column {other}")));
            }
            for column in columns {
                let value = row
                    .get(&column.name)
                    .ok_or_else(|| StoreError::Backup(format!("{table}: a row without the column {}", column.name)))?;
                values.push(typed(column, value).ok_or_else(|| {
                    StoreError::Backup(format!("{table}.{}: {value} is not a {:?}", column.name, column.kind))
                })?);
            }
        }
        let pg = matches!(conn, DbConn::Pg(_));
        let sql = insert_sql(pg, table, columns, chunk.len(), &values);
        match conn {
            DbConn::Pg(c) => bind_all(sql, values).execute(c)?,
            DbConn::Sqlite(c) => bind_all(sql, values).execute(c)?,
        };
    }
    Ok(())
}

/// A canonical JSON value as the column's type; `None` when it is not one.
fn typed(column: &Column, value: &Value) -> Option<Bound> {
    if value.is_null() {
        return column.nullable.then_some(Bound::Null);
    }
    Some(match column.kind {
        Kind::Text => Bound::Text(value.as_str()?.to_owned()),
        Kind::Integer => Bound::Integer(i32::try_from(value.as_i64()?).ok()?),
        Kind::BigInt => Bound::BigInt(value.as_i64()?),
        Kind::Double => Bound::Double(value.as_f64()?),
        Kind::Bool => Bound::Bool(value.as_bool()?),
        Kind::Timestamp => Bound::Timestamp(timestamp(value.as_str()?)?),
        Kind::Binary => Bound::Binary(STANDARD.decode(value.as_str()?).ok()?),
    })
}

/// A timestamp written `YYYY-MM-DDTHH:MM:SS[.fraction]` or with a space for the `T` (SQLite's
/// stored form).
pub(crate) fn timestamp(text: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text, super::dump::TIMESTAMP)
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"))
        .ok()
}

/// `INSERT INTO table (columns) VALUES (...), ...` for `rows` rows; NULLs written in place, the
/// other values as numbered parameters.
fn insert_sql(pg: bool, table: &str, columns: &[Column], rows: usize, values: &[Bound]) -> String {
    let names: Vec<String> = columns.iter().map(|c| quoted(&c.name)).collect();
    let mut sql = format!("INSERT INTO {} ({}) VALUES ", quoted(table), names.join(", "));
    let mut parameter = 0;
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for (i, value) in values[row * columns.len()..(row + 1) * columns.len()].iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            if matches!(value, Bound::Null) {
                sql.push_str("NULL");
            } else {
                parameter += 1;
                sql.push_str(&if pg { format!("${parameter}") } else { format!("?{parameter}") });
            }
        }
        sql.push(')');
    }
    sql
}

/// `sql` with every value but the NULLs bound, in order.
fn bind_all<DB>(
    sql: String,
    values: Vec<Bound>,
) -> diesel::query_builder::BoxedSqlQuery<'static, DB, diesel::query_builder::SqlQuery>
where
    DB: diesel::backend::Backend
        + diesel::sql_types::HasSqlType<Text>
        + diesel::sql_types::HasSqlType<Integer>
        + diesel::sql_types::HasSqlType<BigInt>
        + diesel::sql_types::HasSqlType<Double>
        + diesel::sql_types::HasSqlType<Bool>
        + diesel::sql_types::HasSqlType<Timestamp>
        + diesel::sql_types::HasSqlType<Binary>,
    String: diesel::serialize::ToSql<Text, DB>,
    i32: diesel::serialize::ToSql<Integer, DB>,
    i64: diesel::serialize::ToSql<BigInt, DB>,
    f64: diesel::serialize::ToSql<Double, DB>,
    bool: diesel::serialize::ToSql<Bool, DB>,
    NaiveDateTime: diesel::serialize::ToSql<Timestamp, DB>,
    Vec<u8>: diesel::serialize::ToSql<Binary, DB>,
{
    values.into_iter().fold(diesel::sql_query(sql).into_boxed::<DB>(), |q, value| match value {
        Bound::Null => q,
        Bound::Text(v) => q.bind::<Text, _>(v),
        Bound::Integer(v) => q.bind::<Integer, _>(v),
        Bound::BigInt(v) => q.bind::<BigInt, _>(v),
        Bound::Double(v) => q.bind::<Double, _>(v),
        Bound::Bool(v) => q.bind::<Bool, _>(v),
        Bound::Timestamp(v) => q.bind::<Timestamp, _>(v),
        Bound::Binary(v) => q.bind::<Binary, _>(v),
    })
}
