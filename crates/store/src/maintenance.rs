//! Upkeep a database that has been running gets on its own (autovacuum, `ANALYZE`), done on
//! demand, and PostgreSQL's own counters: for benchmarks, so a freshly seeded database plans
//! like one that has been running, and so they can say what a request costs the database.

use diesel::RunQueryDsl as _;

use crate::{DbConn, StoreResult};

/// Vacuums, then analyzes, the whole database: the planner statistics and the visibility map
/// that autovacuum (PostgreSQL) or `PRAGMA optimize` (SQLite) would have left by now. Outside
/// a transaction only (`VACUUM` refuses to run inside one).
pub fn vacuum_analyze(conn: &mut DbConn) -> StoreResult<()> {
    diesel::sql_query("VACUUM").execute(conn)?;
    diesel::sql_query("ANALYZE").execute(conn)?;
    Ok(())
}

/// Refreshes the planner's statistics of `runs` (`ANALYZE runs`), after seeding many.
pub fn analyze_runs(conn: &mut DbConn) -> StoreResult<()> {
    diesel::sql_query("ANALYZE runs").execute(conn)?;
    Ok(())
}

/// Transactions this database has finished, committed or rolled back, as PostgreSQL's
/// statistics count them (`pg_stat_database`; they lag by up to its stats interval); `None` on
/// SQLite, which keeps no such count.
pub fn transactions_finished(conn: &mut DbConn) -> StoreResult<Option<f64>> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Double)]
        n: f64,
    }
    let DbConn::Pg(pg) = conn else { return Ok(None) };
    let row: Row = diesel::sql_query(
        "SELECT (xact_commit + xact_rollback)::float8 AS n FROM pg_stat_database WHERE datname = current_database()",
    )
    .get_result(pg)?;
    Ok(Some(row.n))
}
