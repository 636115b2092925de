//! Query plans of the outbox's hot statements, for tests and benchmarks: each must walk its
//! index, never scan or sort the outbox.

use chrono::NaiveDateTime;
use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;

use super::claim::{CLAIM_PG, CLAIM_SQLITE};
use super::complete::{MOVE_ON_PG, MOVE_ON_SQLITE};
use super::limited::{CLAIM_ENDPOINT_PG, CLAIM_ENDPOINT_SQLITE};
use crate::{DbConn, StoreResult};

/// One line of PostgreSQL's `EXPLAIN`.
#[derive(QueryableByName)]
struct PgLine {
    #[diesel(sql_type = diesel::sql_types::Text, column_name = "QUERY PLAN")]
    line: String,
}

/// One line of SQLite's `EXPLAIN QUERY PLAN`.
#[derive(QueryableByName)]
struct SqliteLine {
    #[diesel(sql_type = diesel::sql_types::Text)]
    detail: String,
}

/// The query plan of the claim, as the database would run it now (for tests and benchmarks:
/// it must walk `deliveries_due`, never scan or sort the outbox).
pub fn explain_claim(conn: &mut DbConn, now: NaiveDateTime) -> StoreResult<String> {
    use diesel::sql_types::{Array, BigInt, Text, Timestamp};
    let skip: Vec<String> = Vec::new();
    Ok(match conn {
        DbConn::Pg(pg) => pg.transaction(|pg| {
            pg.batch_execute(crate::INDEX_ORDER_ONLY)?;
            let lines: Vec<PgLine> = diesel::sql_query(format!("EXPLAIN {CLAIM_PG}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(100)
                .bind::<Array<Text>, _>(&skip)
                .bind::<BigInt, _>(400)
                .bind::<BigInt, _>(16)
                .bind::<Text, _>("{}")
                .load(pg)?;
            diesel::QueryResult::Ok(lines.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n"))
        })?,
        DbConn::Sqlite(sqlite) => {
            let lines: Vec<SqliteLine> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {CLAIM_SQLITE}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(100)
                .bind::<Text, _>("[]")
                .bind::<BigInt, _>(400)
                .bind::<BigInt, _>(16)
                .bind::<Text, _>("{}")
                .load(sqlite)?;
            lines.into_iter().map(|l| l.detail).collect::<Vec<_>>().join("\n")
        }
    })
}

/// The query plan of one limited endpoint's claim, as the database would run it now (for tests
/// and benchmarks: it must walk `deliveries_endpoint_due`, never the endpoint's whole history).
pub fn explain_endpoint_claim(conn: &mut DbConn, endpoint_id: &str, now: NaiveDateTime) -> StoreResult<String> {
    use diesel::sql_types::{BigInt, Text, Timestamp};
    Ok(match conn {
        DbConn::Pg(pg) => pg.transaction(|pg| {
            pg.batch_execute(crate::INDEX_ORDER_ONLY)?;
            let lines: Vec<PgLine> = diesel::sql_query(format!("EXPLAIN {CLAIM_ENDPOINT_PG}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(10)
                .bind::<Text, _>(endpoint_id)
                .load(pg)?;
            diesel::QueryResult::Ok(lines.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n"))
        })?,
        DbConn::Sqlite(sqlite) => {
            let lines: Vec<SqliteLine> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {CLAIM_ENDPOINT_SQLITE}"))
                .bind::<Text, _>("explain")
                .bind::<Timestamp, _>(now)
                .bind::<Timestamp, _>(now)
                .bind::<BigInt, _>(10)
                .bind::<Text, _>(endpoint_id)
                .load(sqlite)?;
            lines.into_iter().map(|l| l.detail).collect::<Vec<_>>().join("\n")
        }
    })
}

/// The query plan of a batch's completion (the compare-and-set move of its deliveries, and
/// on PostgreSQL the attempts' insert with it): it must find each delivery by its key.
pub fn explain_completion(conn: &mut DbConn) -> StoreResult<String> {
    Ok(match conn {
        DbConn::Pg(pg) => {
            // Parameters as text literals: EXPLAIN plans them like the bound arrays.
            let mut sql = format!("EXPLAIN {MOVE_ON_PG}");
            for n in (1..=18).rev() {
                sql = sql.replace(&format!("${n}::"), "'{}'::");
            }
            let lines: Vec<PgLine> = diesel::sql_query(sql).load(pg)?;
            lines.into_iter().map(|l| l.line).collect::<Vec<_>>().join("\n")
        }
        DbConn::Sqlite(sqlite) => {
            let lines: Vec<SqliteLine> = diesel::sql_query(format!("EXPLAIN QUERY PLAN {MOVE_ON_SQLITE}"))
                .bind::<diesel::sql_types::Text, _>("[]")
                .load(sqlite)?;
            lines.into_iter().map(|l| l.detail).collect::<Vec<_>>().join("\n")
        }
    })
}
