//! A database of its own for one test.

use diesel::{Connection as _, RunQueryDsl as _};

/// Which database a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file in a temporary directory.
    Sqlite,
    /// A fresh database on the server `DRIFTWATCH_TEST_POSTGRES_URL` names.
    Postgres,
}

/// A database of its own for one test, removed afterwards.
pub struct TestDb {
    /// The database URL to give the application.
    pub url: String,
    _dir: tempfile::TempDir,
    postgres: Option<(String, String)>,
}

impl TestDb {
    /// Creates it: a SQLite file in a temporary directory, or a new PostgreSQL database on the
    /// server `DRIFTWATCH_TEST_POSTGRES_URL` names (it must be set for [`Backend::Postgres`]).
    pub fn new(backend: Backend) -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        match backend {
            Backend::Sqlite => {
                let url = format!("sqlite://{}", dir.path().join("driftwatch.db").display());
                TestDb { url, _dir: dir, postgres: None }
            }
            Backend::Postgres => {
                let admin = std::env::var("DRIFTWATCH_TEST_POSTGRES_URL")
                    .expect("DRIFTWATCH_TEST_POSTGRES_URL must be set for the PostgreSQL half");
                let name =
                    format!("dw_test_{}", driftwatch_core::new_id(driftwatch_core::IdKind::Run).replace("run_", ""));
                let mut conn = diesel::PgConnection::establish(&admin).expect("connect to the admin database");
                diesel::sql_query(format!("CREATE DATABASE {name}")).execute(&mut conn).expect("create database");
                let mut url = url::Url::parse(&admin).expect("postgres URL");
                url.set_path(&format!("/{name}"));
                TestDb { url: url.to_string(), _dir: dir, postgres: Some((admin, name)) }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some((admin, name)) = &self.postgres
            && let Ok(mut conn) = diesel::PgConnection::establish(admin)
        {
            let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn);
        }
    }
}
