//! The database layer, and the only crate that names diesel.
//!
//! One code path serves SQLite and PostgreSQL through [`DbConn`], a diesel `MultiConnection`;
//! the few statements that must differ (row locks for claims) `match` on the variant. Queries are
//! plain functions over `&mut DbConn` returning [`StoreResult`]; async callers go through
//! [`Store::read`] or [`Store::write`], which borrow a pooled connection on tokio's blocking pool.
//!
//! Every query that serves an API request takes the account id and filters by it: rows of other
//! accounts are simply not found.

mod db;
mod models;
pub mod schema;

pub mod accounts;
pub mod backup;
pub mod batch;
pub mod checks;
pub mod deliveries;
pub mod digests;
pub mod endpoints;
pub mod events;
pub mod idempotency;
pub mod logins;
pub mod maintenance;
mod notify;
pub mod outbox;
pub mod overview;
mod predicates;
pub mod proxies;
pub mod recoveries;
/// The seam through which the outbox renders bodies; it lives in `core` so that `channels`
/// need not depend on the store.
pub use driftwatch_core::render;
pub mod retention;
pub mod runs;
pub mod screenshots;
pub mod secrets;
pub mod snapshots;
pub mod stats;
pub mod users;
pub mod verdicts;
pub mod watches;

use std::sync::Arc;

pub use batch::BatchWriter;
pub use db::{Backend, DatabaseUrl, DbConn, Pool, PoolOptions, redact};
pub use models::*;
pub use notify::OUTBOX_CHANNEL;

/// Everything a store call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database URL or settings are unusable.
    #[error("database configuration: {0}")]
    Config(String),
    /// No connection could be had.
    #[error("database pool: {0}")]
    Pool(#[from] r2d2::Error),
    /// A query failed.
    #[error("database: {0}")]
    Query(#[from] diesel::result::Error),
    /// A migration failed.
    #[error("migration: {0}")]
    Migration(String),
    /// A unique constraint refused the write (e.g. an account name taken).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A lease was lost before the result was written (another worker took over).
    #[error("lease lost")]
    LeaseLost,
    /// A batched write failed as a whole, so nothing of it was written (its error's message).
    #[error("batched write: {0}")]
    Batch(String),
    /// A backup's rows do not fit this database, or the file they come from is unreadable.
    #[error("backup: {0}")]
    Backup(String),
    /// The blocking task was cancelled or panicked.
    #[error("blocking task failed: {0}")]
    Task(String),
}

/// Result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// Keyset pagination: rows after `after` (an id), at most `limit`.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// The last id of the previous page.
    pub after: Option<String>,
    /// Most rows to return.
    pub limit: i64,
}

/// A handle on the database: a pool plus the backend it talks to. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: Arc<Pool>,
    url: Arc<DatabaseUrl>,
    /// SQLite has one writer at a time, and a writer that finds the file locked sleeps in
    /// SQLite's busy handler (milliseconds at a time). Hot write paths queue here instead, so
    /// they take turns without sleeping. `None` on PostgreSQL, which has row locks.
    write_gate: Option<Arc<tokio::sync::Mutex<()>>>,
    /// Renders each delivery's body at enqueue; [`render::PayloadOnly`] until one is set.
    render: Arc<dyn render::Render>,
    /// This pool's name in the outbox's notifications (see [`Store::listen`]): a listener skips
    /// what its own pool queued, which its worker was already woken for in-process.
    origin: Arc<str>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("backend", &self.url.backend()).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens a pool on `url` (`sqlite://PATH` or `postgres://...`). Does not migrate.
    pub fn open(url: &str, options: &PoolOptions) -> StoreResult<Store> {
        let url = DatabaseUrl::parse(url)?;
        if let DatabaseUrl::Sqlite(path) = &url
            && let Some(dir) = std::path::Path::new(path).parent().filter(|d| !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| StoreError::Config(format!("cannot create {}: {e}", dir.display())))?;
        }
        let origin: Arc<str> = driftwatch_core::new_id(driftwatch_core::IdKind::Pool).into();
        let pool = db::build_pool(&url, options, &origin)?;
        let write_gate = matches!(url, DatabaseUrl::Sqlite(_)).then(|| Arc::new(tokio::sync::Mutex::new(())));
        let render = Arc::new(render::PayloadOnly);
        Ok(Store { pool: Arc::new(pool), url: Arc::new(url), write_gate, render, origin })
    }

    /// This store, rendering delivery bodies with `render` (see [`render`]).
    pub fn with_render(mut self, render: Arc<dyn render::Render>) -> Store {
        self.render = render;
        self
    }

    /// What renders delivery bodies at enqueue.
    pub fn render(&self) -> Arc<dyn render::Render> {
        Arc::clone(&self.render)
    }

    /// Which database this store talks to.
    pub fn backend(&self) -> Backend {
        self.url.backend()
    }

    /// How many [`BatchWriter`] tasks a kind of batched write gets. SQLite takes one writer at a
    /// time. PostgreSQL could commit many batches side by side, but fewer, larger batches cost
    /// it less per row: 2 writers drained 20,000 deliveries at ~6,400/s and ~155 us of
    /// PostgreSQL CPU each, 4 writers at ~4,000/s and ~260 us (`bench delivery`, 2 cores); one
    /// is no faster than two.
    pub fn writers(&self) -> usize {
        match self.backend() {
            Backend::Sqlite => 1,
            Backend::Postgres => 2,
        }
    }

    /// How many of this build's migrations the database lacks; an error when it does not answer.
    pub async fn pending_migrations(&self) -> StoreResult<usize> {
        self.read(db::pending_migrations).await
    }

    /// Connections of the pool: (checked out, idle, maximum).
    pub fn pool_state(&self) -> (u32, u32, u32) {
        let state = self.pool.state();
        (state.connections - state.idle_connections, state.idle_connections, self.pool.max_size())
    }

    /// Applies pending migrations; returns how many ran.
    pub async fn migrate(&self) -> StoreResult<usize> {
        self.on_pool(db::migrate).await
    }

    /// Runs `f`, which writes, with a pooled connection on the blocking pool, taking turns with
    /// the other writers of this process on SQLite (see `write_gate`).
    pub async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> StoreResult<T> + Send + 'static,
    {
        let _turn = match &self.write_gate {
            Some(gate) => Some(gate.lock().await),
            None => None,
        };
        self.on_pool(f).await
    }

    /// Runs `f`, which only reads, with a pooled connection on the blocking pool. A write goes
    /// through [`Store::write`], so on SQLite it takes its turn at the write gate.
    pub async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> StoreResult<T> + Send + 'static,
    {
        self.on_pool(f).await
    }

    /// Runs `f` with a pooled connection on tokio's blocking pool.
    async fn on_pool<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut DbConn) -> StoreResult<T> + Send + 'static,
    {
        let pool = Arc::clone(&self.pool);
        tokio::task::spawn_blocking(move || {
            let mut conn = pool.get()?;
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))?
    }
}

/// Runs `f` in one transaction: all of its writes are kept or none (an error from `f` rolls
/// them back). For callers that write many rows with the functions here in one go, e.g. a
/// benchmark seeding its database; the operations that need one open their own.
pub fn transaction<T>(conn: &mut DbConn, f: impl FnOnce(&mut DbConn) -> StoreResult<T>) -> StoreResult<T> {
    diesel::Connection::transaction(conn, f)
}

/// Maps a unique violation to [`StoreError::Conflict`] with `what`.
pub(crate) fn conflict_on_unique(what: &str) -> impl FnOnce(diesel::result::Error) -> StoreError + '_ {
    move |e| match e {
        diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::UniqueViolation, _) => {
            StoreError::Conflict(what.to_owned())
        }
        other => StoreError::Query(other),
    }
}

/// A claim: who takes the rows, until when, and how many at most.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease<'a> {
    pub owner: &'a str,
    pub now: chrono::NaiveDateTime,
    pub until: chrono::NaiveDateTime,
    pub limit: i64,
}

/// Leases up to `limit` due rows of `table` to `owner` in one statement and returns how many.
///
/// A row is due when it satisfies `condition`, its `due_column` is at or before `now`, and it
/// carries no live lease. On PostgreSQL the candidates are locked with `FOR NO KEY UPDATE SKIP LOCKED`,
/// so claimers on several nodes take disjoint batches without waiting on each other; SQLite has
/// one writer at a time, so the single statement is already exclusive. (Raw SQL because diesel's
/// DSL will not take an ordered, limited subselect as an update target.)
pub(crate) fn lease_due(
    conn: &mut DbConn,
    table: &str,
    condition: &str,
    due_column: &str,
    lease: &Lease<'_>,
) -> StoreResult<usize> {
    use diesel::{Connection as _, RunQueryDsl as _, connection::SimpleConnection as _};
    Ok(match conn {
        DbConn::Pg(pg) => pg.transaction(|pg| {
            pg.batch_execute(INDEX_ORDER_ONLY)?;
            lease_due_query(table, condition, due_column, lease, true, "").execute(pg)
        })?,
        DbConn::Sqlite(sqlite) => lease_due_query(table, condition, due_column, lease, false, "").execute(sqlite)?,
    })
}

/// [`lease_due`], returning the rows it leased (in no particular order) from the one statement.
pub(crate) fn lease_due_returning<T>(
    conn: &mut DbConn,
    table: &str,
    condition: &str,
    due_column: &str,
    lease: &Lease<'_>,
) -> StoreResult<Vec<T>>
where
    T: diesel::QueryableByName<diesel::pg::Pg> + diesel::QueryableByName<diesel::sqlite::Sqlite> + 'static,
{
    use diesel::{Connection as _, RunQueryDsl as _, connection::SimpleConnection as _};
    Ok(match conn {
        DbConn::Pg(pg) => pg.transaction(|pg| {
            pg.batch_execute(INDEX_ORDER_ONLY)?;
            lease_due_query(table, condition, due_column, lease, true, " RETURNING *").load(pg)
        })?,
        DbConn::Sqlite(sqlite) => {
            lease_due_query(table, condition, due_column, lease, false, " RETURNING *").load(sqlite)?
        }
    })
}

/// Settings for a PostgreSQL claim's own transaction: walk the due index in order and stop
/// after `limit` rows. A bitmap scan (which the planner picks when its statistics lag behind a
/// growing backlog) reads and sorts every due row on every claim; JIT would compile the small
/// statement afresh each time.
pub(crate) const INDEX_ORDER_ONLY: &str = "SET LOCAL enable_bitmapscan = off; SET LOCAL jit = off";

/// Runs `f` in a transaction that walks indexes in order on PostgreSQL ([`INDEX_ORDER_ONLY`]);
/// on SQLite, which plans that way anyway, outside one.
pub(crate) fn in_index_order<T>(conn: &mut DbConn, f: impl FnOnce(&mut DbConn) -> StoreResult<T>) -> StoreResult<T> {
    match conn {
        DbConn::Pg(_) => diesel::Connection::transaction(conn, |conn| {
            diesel::connection::SimpleConnection::batch_execute(conn, INDEX_ORDER_ONLY)?;
            f(conn)
        }),
        DbConn::Sqlite(_) => f(conn),
    }
}

/// The statement behind [`lease_due`], with its parameters bound.
fn lease_due_query<DB>(
    table: &str,
    condition: &str,
    due_column: &str,
    lease: &Lease<'_>,
    postgres: bool,
    returning: &str,
) -> diesel::query_builder::BoxedSqlQuery<'static, DB, diesel::query_builder::SqlQuery>
where
    String: diesel::serialize::ToSql<diesel::sql_types::Text, DB>,
    chrono::NaiveDateTime: diesel::serialize::ToSql<diesel::sql_types::Timestamp, DB>,
    i64: diesel::serialize::ToSql<diesel::sql_types::BigInt, DB>,
    DB: diesel::backend::Backend
        + diesel::sql_types::HasSqlType<diesel::sql_types::Text>
        + diesel::sql_types::HasSqlType<diesel::sql_types::Timestamp>
        + diesel::sql_types::HasSqlType<diesel::sql_types::BigInt>,
{
    use diesel::sql_types::{BigInt, Text, Timestamp};
    let Lease { owner, now, until: lease_until, limit } = *lease;
    // On PostgreSQL `id = ANY(ARRAY(...))` rather than `id IN (...)`: the planner turns `IN`
    // into a semi-join that may read the whole table, while the array is computed first and
    // its ids looked up by primary key.
    let (open, close, lock) =
        if postgres { ("= ANY(ARRAY(", "))", " FOR NO KEY UPDATE SKIP LOCKED") } else { ("IN (", ")", "") };
    let sql = format!(
        "UPDATE {table} SET lease_owner = $1, lease_until = $2 WHERE id {open}\
           SELECT id FROM {table} WHERE {condition} AND {due_column} <= $3 \
           AND (lease_until IS NULL OR lease_until < $3) ORDER BY {due_column} LIMIT $4{lock}{close}{returning}"
    );
    // SQLite's numbered parameters are `?N`.
    let sql = if postgres { sql } else { sql.replace('$', "?") };
    diesel::sql_query(sql)
        .into_boxed::<DB>()
        .bind::<Text, _>(owner.to_owned())
        .bind::<Timestamp, _>(lease_until)
        .bind::<Timestamp, _>(now)
        .bind::<BigInt, _>(limit)
}

/// Inserts the rows of a `Vec` (of owned rows) into `table`: in one statement on PostgreSQL, one at a time on
/// SQLite (where a statement is a function call, and multi-row inserts of rows with defaults
/// are not available). A macro, because diesel's insert bounds do not name well generically.
#[macro_export]
#[doc(hidden)]
macro_rules! insert_all {
    ($conn:expr, $table:expr, $rows:expr) => {
        if !$rows.is_empty() {
            match $conn {
                $crate::DbConn::Pg(pg) => {
                    // A statement takes at most 65,535 parameters: 2,000 rows of up to 32 columns.
                    for chunk in $rows.chunks(2_000) {
                        diesel::insert_into($table).values(chunk).execute(pg)?;
                    }
                }
                $crate::DbConn::Sqlite(sqlite) => {
                    for row in &$rows {
                        diesel::insert_into($table).values(row).execute(sqlite)?;
                    }
                }
            }
        }
    };
}

/// The earlier of two optional times.
pub(crate) fn earliest(
    a: Option<chrono::NaiveDateTime>,
    b: Option<chrono::NaiveDateTime>,
) -> Option<chrono::NaiveDateTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
