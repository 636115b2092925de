//! Connections, the pool and migrations for both backends.

use std::time::{Duration, Instant};

use diesel::connection::SimpleConnection as _;
use diesel::prelude::*;
use diesel::r2d2::R2D2Connection as _;
use diesel_migrations::{EmbeddedMigrations, MigrationHarness as _, embed_migrations};

use crate::StoreError;

const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/sqlite");
const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations/postgres");

/// A connection to either backend. Queries are written once against this type; the few places
/// where SQL must differ `match` on the variant.
#[derive(diesel::MultiConnection)]
pub enum DbConn {
    /// PostgreSQL (many nodes, one database).
    Pg(diesel::PgConnection),
    /// The embedded SQLite file (one node).
    Sqlite(diesel::SqliteConnection),
}

/// Which database a URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    /// `sqlite://PATH`: a file, created when missing.
    Sqlite(String),
    /// `postgres://...` or `postgresql://...`.
    Postgres(String),
}

impl DatabaseUrl {
    /// Parses `sqlite://PATH` or `postgres://...`; anything else is an error naming the forms.
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        if let Some(path) = url.strip_prefix("sqlite://") {
            if path.is_empty() || path == ":memory:" {
                return Err(StoreError::Config(format!("`{url}`: give a file path, e.g. sqlite://driftwatch.db")));
            }
            Ok(DatabaseUrl::Sqlite(path.to_owned()))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(DatabaseUrl::Postgres(url.to_owned()))
        } else {
            Err(StoreError::Config(format!(
                "unsupported database URL `{}`: use sqlite://PATH or postgres://USER@HOST/DB",
                redact(url)
            )))
        }
    }

    /// Which backend the URL names.
    pub fn backend(&self) -> Backend {
        match self {
            DatabaseUrl::Sqlite(_) => Backend::Sqlite,
            DatabaseUrl::Postgres(_) => Backend::Postgres,
        }
    }
}

/// The database behind a [`crate::Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded SQLite file: one node, one writer at a time.
    Sqlite,
    /// PostgreSQL: many nodes, row locks.
    Postgres,
}

impl Backend {
    /// `sqlite` or `postgres`, for logs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The URL with any password replaced, safe to log.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

/// Opens connections of the configured backend and prepares SQLite ones.
#[derive(Debug)]
pub struct Manager {
    url: DatabaseUrl,
    busy_timeout: Duration,
    /// Names this pool's PostgreSQL sessions (`driftwatch.origin`), so the outbox's notifications
    /// say which pool queued the deliveries.
    origin: String,
}

/// How long a pooled connection may sit idle and still be handed out without a ping. A
/// connection used moments ago is known to work (a failed query marks it broken on its way
/// back); only one that sat idle long enough for a server restart or a network timeout to have
/// closed it is pinged at checkout. The ping is a round trip per checkout on PostgreSQL.
const PING_AFTER_IDLE: Duration = Duration::from_secs(5);

/// A pooled connection and when it was last given back to the pool.
pub struct Pooled {
    conn: DbConn,
    returned: Instant,
}

impl std::ops::Deref for Pooled {
    type Target = DbConn;

    fn deref(&self) -> &DbConn {
        &self.conn
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut DbConn {
        &mut self.conn
    }
}

impl r2d2::ManageConnection for Manager {
    type Connection = Pooled;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<Pooled, Self::Error> {
        self.open().map(|conn| Pooled { conn, returned: Instant::now() })
    }

    fn is_valid(&self, pooled: &mut Pooled) -> Result<(), Self::Error> {
        if pooled.returned.elapsed() < PING_AFTER_IDLE {
            return Ok(());
        }
        pooled.conn.ping().map_err(diesel::r2d2::Error::QueryError)
    }

    /// Called as the connection goes back to the pool: it is idle from now.
    fn has_broken(&self, pooled: &mut Pooled) -> bool {
        pooled.returned = Instant::now();
        pooled.conn.is_broken()
    }
}

impl Manager {
    fn open(&self) -> Result<DbConn, diesel::r2d2::Error> {
        match &self.url {
            DatabaseUrl::Postgres(url) => {
                let mut conn = diesel::PgConnection::establish(url).map_err(diesel::r2d2::Error::ConnectionError)?;
                // The outbox's trigger sends it as its notification's payload; the origin is an
                // id (`pool_` and ULID characters), so it needs no quoting beyond the literal's.
                conn.batch_execute(&format!("SET driftwatch.origin = '{}'", self.origin))
                    .map_err(diesel::r2d2::Error::QueryError)?;
                Ok(DbConn::Pg(conn))
            }
            DatabaseUrl::Sqlite(path) => {
                let mut conn =
                    diesel::SqliteConnection::establish(path).map_err(diesel::r2d2::Error::ConnectionError)?;
                // WAL lets readers run beside the one writer; the busy timeout makes writers queue
                // instead of failing; foreign keys are off by default in SQLite.
                conn.batch_execute(&format!(
                    "PRAGMA busy_timeout = {}; PRAGMA synchronous = NORMAL; \
                     PRAGMA foreign_keys = ON; PRAGMA cache_size = -32000; PRAGMA temp_store = MEMORY; \
                     PRAGMA mmap_size = 268435456;",
                    self.busy_timeout.as_millis()
                ))
                .map_err(diesel::r2d2::Error::QueryError)?;
                Ok(DbConn::Sqlite(conn))
            }
        }
    }
}

/// The connection pool.
pub type Pool = r2d2::Pool<Manager>;

/// Pool settings.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// Most connections open at once.
    pub max_size: u32,
    /// How long a caller waits for a free connection.
    pub connection_timeout: Duration,
    /// How long SQLite waits on a locked database before failing.
    pub busy_timeout: Duration,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions { max_size: 16, connection_timeout: Duration::from_secs(30), busy_timeout: Duration::from_secs(10) }
    }
}

pub(crate) fn build_pool(url: &DatabaseUrl, options: &PoolOptions, origin: &str) -> Result<Pool, StoreError> {
    if let DatabaseUrl::Sqlite(path) = url {
        // Switch the file to WAL once, before the pool opens connections side by side (the
        // switch takes an exclusive lock and does not wait on a busy timeout).
        let mut conn = diesel::SqliteConnection::establish(path)
            .map_err(|e| StoreError::Config(format!("cannot open {path}: {e}")))?;
        conn.batch_execute("PRAGMA journal_mode = WAL;")?;
    }
    let manager = Manager { url: url.clone(), busy_timeout: options.busy_timeout, origin: origin.to_owned() };
    r2d2::Pool::builder()
        .max_size(options.max_size)
        .connection_timeout(options.connection_timeout)
        .build(manager)
        .map_err(StoreError::from)
}

/// Applies pending migrations; returns how many ran.
///
/// On PostgreSQL an advisory lock serialises nodes that start together.
pub(crate) fn migrate(conn: &mut DbConn) -> Result<usize, StoreError> {
    let applied = match conn {
        DbConn::Sqlite(c) => c.run_pending_migrations(SQLITE_MIGRATIONS).map(|v| v.len()),
        DbConn::Pg(c) => {
            const LOCK_KEY: i64 = 0x6472_6966_7477_6174; // "driftwat"
            c.batch_execute(&format!("SELECT pg_advisory_lock({LOCK_KEY})"))?;
            let result = c.run_pending_migrations(POSTGRES_MIGRATIONS).map(|v| v.len());
            c.batch_execute(&format!("SELECT pg_advisory_unlock({LOCK_KEY})"))?;
            result
        }
    };
    applied.map_err(|e| StoreError::Migration(e.to_string()))
}

/// How many of this build's migrations the database has not applied (0: its schema is current).
/// Also shows the database answers: it reads the migrations table.
pub(crate) fn pending_migrations(conn: &mut DbConn) -> Result<usize, StoreError> {
    let pending = match conn {
        DbConn::Sqlite(c) => c.pending_migrations(SQLITE_MIGRATIONS).map(|v| v.len()),
        DbConn::Pg(c) => c.pending_migrations(POSTGRES_MIGRATIONS).map(|v| v.len()),
    };
    pending.map_err(|e| StoreError::Migration(e.to_string()))
}

/// The version of this build's last migration (its name's date, digits only), as diesel records
/// it in `__diesel_schema_migrations`. Both backends have the same migrations (a test holds them
/// equal), so SQLite's list answers for both.
pub(crate) fn latest_migration() -> String {
    diesel::migration::MigrationSource::<diesel::sqlite::Sqlite>::migrations(&SQLITE_MIGRATIONS)
        .ok()
        .and_then(|all| all.iter().map(|m| m.name().version().to_string()).max())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_backends_have_the_same_migrations() {
        let names = |source: EmbeddedMigrations| -> Vec<String> {
            let migrations =
                diesel::migration::MigrationSource::<diesel::pg::Pg>::migrations(&source).expect("embedded migrations");
            migrations.iter().map(|m| m.name().to_string()).collect()
        };
        let (postgres, sqlite) = (names(POSTGRES_MIGRATIONS), names(SQLITE_MIGRATIONS));
        assert!(!postgres.is_empty());
        assert_eq!(postgres, sqlite, "migrations/postgres and migrations/sqlite must hold the same names");
    }

    #[test]
    fn parses_database_urls() {
        assert_eq!(
            DatabaseUrl::parse("sqlite://driftwatch.db").ok(),
            Some(DatabaseUrl::Sqlite("driftwatch.db".into()))
        );
        assert_eq!(
            DatabaseUrl::parse("sqlite:///var/lib/dw.db").ok(),
            Some(DatabaseUrl::Sqlite("/var/lib/dw.db".into()))
        );
        assert!(matches!(DatabaseUrl::parse("postgres://u@h/db"), Ok(DatabaseUrl::Postgres(_))));
        let err = DatabaseUrl::parse("mysql://root:hunter2@h/db").expect_err("unsupported");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(DatabaseUrl::parse("sqlite://").is_err());
    }
}
