//! Endpoint secrets at rest: sealing afresh, under the current key, what was written in the
//! clear before encryption or sealed under a key since rotated out.
//!
//! The columns of `endpoints` that hold secrets are listed once, in [`SECRET_COLUMNS`]; every
//! function here works through that list. A value is sealed with a [`Keyring`] from
//! `driftwatch_core` (`dwenc:v1:<key id>:...`); `NULL` and the empty string mean "no secret"
//! and are left as they are.
//!
//! Resealing reads a batch of rows, seals in memory, then writes in one transaction per batch,
//! each value with a compare-and-set on the value it read: a secret that a user rotated in the
//! meantime keeps the user's value (which the next pass seals if it needs it).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use driftwatch_core::{Keyring, SEALED_PREFIX};

use crate::schema::endpoints;
use crate::{DbConn, StoreError, StoreResult};

/// Lists the secret columns once: their names come from the schema, so a column that does not
/// exist does not compile.
macro_rules! secret_columns {
    ($($column:ident),+ $(,)?) => {
        /// The columns of `endpoints` that hold secrets, sealed at rest: the signing secret, the
        /// one it replaced (still signing during a rotation's overlap), and the kind's other
        /// secrets (a JSON object: a bot token, a password...). A new secret column is one more
        /// name in this list.
        pub const SECRET_COLUMNS: &[&str] = &[$(<endpoints::$column as diesel::Column>::NAME),+];
    };
}

secret_columns!(secret, previous_secret, secrets);

/// What one [`reseal_batch`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResealProgress {
    /// Endpoints read (at most the batch's limit; fewer means the table is done).
    pub scanned: usize,
    /// Endpoints with at least one secret column sealed afresh.
    pub resealed: usize,
    /// The last endpoint id read: where the next batch starts. `None` when none was read.
    pub last_id: Option<String>,
}

/// One value to replace: in `column` of endpoint `id`, `old` (as read) by `new`.
#[derive(Debug)]
struct Reseal {
    column: &'static str,
    id: String,
    old: String,
    new: String,
}

/// The batch read and sealed in memory, not yet written.
#[derive(Debug, Default)]
struct Plan {
    scanned: usize,
    last_id: Option<String>,
    reseals: Vec<Reseal>,
}

/// Seals afresh, under `keyring`'s current key, every secret of up to `limit` endpoints (in id
/// order, after `after_id`) that is plaintext or sealed under another key.
///
/// The batch is written in one transaction, each value only if it still holds what was read
/// (a concurrent change wins). A value that cannot be opened (sealed under a key the keyring
/// lacks, or altered) fails the batch before anything is written, with a
/// [`StoreError::Batch`] naming the endpoint, the column and the key id (never the value).
pub fn reseal_batch(
    conn: &mut DbConn,
    keyring: &Keyring,
    after_id: Option<&str>,
    limit: i64,
) -> StoreResult<ResealProgress> {
    let plan = plan(conn, keyring, after_id, limit)?;
    let resealed = apply(conn, &plan.reseals)?;
    Ok(ResealProgress { scanned: plan.scanned, resealed, last_id: plan.last_id })
}

/// [`reseal_batch`] over the whole table, `batch` endpoints at a time; returns how many
/// endpoints had a secret sealed afresh. Run at startup (to seal what was written before
/// encryption) and after a key rotation (with the old key as a previous key of `keyring`).
pub fn reseal_all(conn: &mut DbConn, keyring: &Keyring, batch: i64) -> StoreResult<usize> {
    let batch = batch.max(1);
    let mut after: Option<String> = None;
    let mut resealed = 0;
    loop {
        let progress = reseal_batch(conn, keyring, after.as_deref(), batch)?;
        resealed += progress.resealed;
        if progress.last_id.is_none() || i64::try_from(progress.scanned).unwrap_or(i64::MAX) < batch {
            return Ok(resealed);
        }
        after = progress.last_id;
    }
}

/// How many endpoints hold a secret in the clear: a secret column neither `NULL`, empty, nor
/// starting with `dwenc:`. Values sealed under a previous key do not count.
pub fn plaintext_count(conn: &mut DbConn) -> StoreResult<i64> {
    #[derive(QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let prefix_len = SEALED_PREFIX.len();
    let any_plaintext = SECRET_COLUMNS
        .iter()
        .map(|c| format!("({c} <> '' AND substr({c}, 1, {prefix_len}) <> '{SEALED_PREFIX}')"))
        .collect::<Vec<_>>()
        .join(" OR ");
    let sql = format!("SELECT COUNT(*) AS n FROM endpoints WHERE {any_plaintext}");
    let count: Count = match conn {
        DbConn::Pg(pg) => diesel::sql_query(sql).get_result(pg)?,
        DbConn::Sqlite(sqlite) => diesel::sql_query(sql).get_result(sqlite)?,
    };
    Ok(count.n)
}

impl crate::Store {
    /// [`reseal_all`] on the pool, each batch a write of its own (so other writers take turns
    /// between batches on SQLite); returns how many endpoints had a secret sealed afresh.
    pub async fn reseal_secrets(&self, keyring: &Keyring, batch: i64) -> StoreResult<usize> {
        let keyring = std::sync::Arc::new(keyring.clone());
        let batch = batch.max(1);
        let mut after: Option<String> = None;
        let mut resealed = 0;
        loop {
            let ring = std::sync::Arc::clone(&keyring);
            let from = after.clone();
            let progress = self.write(move |conn| reseal_batch(conn, &ring, from.as_deref(), batch)).await?;
            resealed += progress.resealed;
            if progress.last_id.is_none() || i64::try_from(progress.scanned).unwrap_or(i64::MAX) < batch {
                return Ok(resealed);
            }
            after = progress.last_id;
        }
    }

    /// Leaves no old copy of a replaced secret in the database's files: the plaintext a
    /// reseal replaced survives in freed pages and the WAL (SQLite) or in dead row versions
    /// (PostgreSQL) until they are rewritten. SQLite is vacuumed and its WAL truncated;
    /// PostgreSQL's `endpoints` is vacuumed (its WAL and backups are the operator's).
    pub async fn scrub_replaced_secrets(&self) -> StoreResult<()> {
        self.write(|conn| {
            match conn {
                DbConn::Sqlite(sqlite) => {
                    checkpoint(sqlite)?;
                    diesel::sql_query("VACUUM").execute(sqlite)?;
                    checkpoint(sqlite)?;
                }
                DbConn::Pg(pg) => {
                    diesel::sql_query("VACUUM endpoints").execute(pg)?;
                }
            }
            Ok(())
        })
        .await
    }
}

/// Copies the WAL into the database and empties it; an error when another connection's read
/// kept it from finishing.
fn checkpoint(conn: &mut diesel::SqliteConnection) -> StoreResult<()> {
    #[derive(QueryableByName)]
    struct Checkpoint {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        busy: i32,
    }
    let result: Checkpoint = diesel::sql_query("PRAGMA wal_checkpoint(TRUNCATE)").get_result(conn)?;
    if result.busy != 0 {
        return Err(StoreError::Batch("the WAL could not be emptied: another connection is reading".into()));
    }
    Ok(())
}

/// Reads the batch and seals what needs it, in memory.
fn plan(conn: &mut DbConn, keyring: &Keyring, after_id: Option<&str>, limit: i64) -> StoreResult<Plan> {
    let mut query = endpoints::table.select(endpoints::id).order(endpoints::id.asc()).limit(limit).into_boxed();
    if let Some(after) = after_id {
        query = query.filter(endpoints::id.gt(after));
    }
    let ids: Vec<String> = query.load(conn)?;
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
        return Ok(Plan::default());
    };
    // Values already sealed under the current key are left in the database.
    let current = format!("dwenc:v1:{}:", keyring.current_id());
    let mut reseals = Vec::new();
    for &column in SECRET_COLUMNS {
        for row in read_column(conn, column, (first, last), &current)? {
            if !keyring.needs_reseal(&row.value) {
                continue;
            }
            let new = keyring
                .reseal(&row.value)
                .map_err(|e| StoreError::Batch(format!("cannot reseal the {column} of endpoint {}: {e}", row.id)))?;
            if let Some(new) = new {
                reseals.push(Reseal { column, id: row.id, old: row.value, new });
            }
        }
    }
    Ok(Plan { scanned: ids.len(), last_id: Some(last.clone()), reseals })
}

/// A secret as read.
#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    value: String,
}

/// The non-empty values of `column` of the endpoints with ids in `first..=last` that do not
/// start with `current` (the current key's prefix).
fn read_column(
    conn: &mut DbConn,
    column: &str,
    (first, last): (&str, &str),
    current: &str,
) -> StoreResult<Vec<Stored>> {
    let sql = format!(
        "SELECT id, {column} AS value FROM endpoints WHERE id >= $1 AND id <= $2 \
         AND {column} <> '' AND substr({column}, 1, {}) <> $3 ORDER BY id",
        current.len()
    );
    macro_rules! load {
        ($sql:expr, $conn:expr) => {
            diesel::sql_query($sql).bind::<Text, _>(first).bind::<Text, _>(last).bind::<Text, _>(current).load($conn)?
        };
    }
    Ok(match conn {
        DbConn::Pg(pg) => load!(sql, pg),
        // SQLite's numbered parameters are `?N`.
        DbConn::Sqlite(sqlite) => load!(sql.replace('$', "?"), sqlite),
    })
}

/// Writes the batch in one transaction, each value only if it is still the one read; returns
/// how many endpoints changed.
fn apply(conn: &mut DbConn, reseals: &[Reseal]) -> StoreResult<usize> {
    if reseals.is_empty() {
        return Ok(0);
    }
    conn.transaction(|conn| {
        let mut changed: Vec<&str> = Vec::new();
        for reseal in reseals {
            if compare_and_set(conn, reseal)? == 1 {
                changed.push(&reseal.id);
            }
        }
        changed.sort_unstable();
        changed.dedup();
        Ok(changed.len())
    })
}

/// `UPDATE ... SET column = new WHERE id = ... AND column = old`; returns the rows changed.
fn compare_and_set(conn: &mut DbConn, reseal: &Reseal) -> StoreResult<usize> {
    let column = reseal.column;
    let sql = format!("UPDATE endpoints SET {column} = $1 WHERE id = $2 AND {column} = $3");
    macro_rules! execute {
        ($sql:expr, $conn:expr) => {
            diesel::sql_query($sql)
                .bind::<Text, _>(&reseal.new)
                .bind::<Text, _>(&reseal.id)
                .bind::<Text, _>(&reseal.old)
                .execute($conn)?
        };
    }
    Ok(match conn {
        DbConn::Pg(pg) => execute!(sql, pg),
        DbConn::Sqlite(sqlite) => execute!(sql.replace('$', "?"), sqlite),
    })
}

#[cfg(test)]
mod tests {
    use diesel::connection::SimpleConnection as _;
    use driftwatch_core::SecretKey;

    use super::*;
    use crate::Endpoint;

    /// A migrated database of its own, removed afterwards.
    struct TestDb {
        conn: Option<DbConn>,
        _dir: Option<tempfile::TempDir>,
        /// PostgreSQL: the admin URL and the database's name, to drop it.
        postgres: Option<(String, String)>,
    }

    impl TestDb {
        fn sqlite() -> TestDb {
            let dir = tempfile::tempdir().expect("temp dir");
            let path = dir.path().join("driftwatch.db");
            let mut conn = diesel::SqliteConnection::establish(&path.display().to_string()).expect("open SQLite");
            conn.batch_execute("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;").expect("pragmas");
            TestDb::migrated(DbConn::Sqlite(conn), Some(dir), None)
        }

        /// A fresh database on the server `DRIFTWATCH_TEST_POSTGRES_URL` names, when it is set.
        fn postgres() -> Option<TestDb> {
            let admin = std::env::var("DRIFTWATCH_TEST_POSTGRES_URL").ok()?;
            let name = format!("dw_test_{}", driftwatch_core::new_id(driftwatch_core::IdKind::Run).replace("run_", ""));
            let mut conn = diesel::PgConnection::establish(&admin).expect("connect to the admin database");
            diesel::sql_query(format!("CREATE DATABASE {name}")).execute(&mut conn).expect("create database");
            let mut url = url::Url::parse(&admin).expect("postgres URL");
            url.set_path(&format!("/{name}"));
            let conn = diesel::PgConnection::establish(url.as_str()).expect("connect to the test database");
            Some(TestDb::migrated(DbConn::Pg(conn), None, Some((admin, name))))
        }

        fn migrated(mut conn: DbConn, dir: Option<tempfile::TempDir>, postgres: Option<(String, String)>) -> TestDb {
            crate::db::migrate(&mut conn).expect("migrate");
            TestDb { conn: Some(conn), _dir: dir, postgres }
        }

        fn conn(&mut self) -> &mut DbConn {
            self.conn.as_mut().expect("open")
        }
    }

    impl Drop for TestDb {
        fn drop(&mut self) {
            self.conn = None;
            if let Some((admin, name)) = &self.postgres
                && let Ok(mut conn) = diesel::PgConnection::establish(admin)
            {
                let _ = diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn);
            }
        }
    }

    /// Runs `test` on SQLite, and on PostgreSQL when `DRIFTWATCH_TEST_POSTGRES_URL` is set.
    fn on_each_backend(test: impl Fn(&mut DbConn)) {
        test(TestDb::sqlite().conn());
        if let Some(mut db) = TestDb::postgres() {
            test(db.conn());
        }
    }

    fn now() -> chrono::NaiveDateTime {
        chrono::DateTime::from_timestamp(1_700_000_000, 0).map(|t| t.naive_utc()).unwrap_or_default()
    }

    type Secrets = (String, Option<String>, Option<String>);

    /// Inserts an endpoint holding `secrets` as given; returns its id.
    fn endpoint(conn: &mut DbConn, account_id: &str, (secret, previous, others): Secrets) -> String {
        let mut endpoint = Endpoint::webhook(account_id, "https://example.test/hook", now());
        endpoint.secret = secret;
        endpoint.previous_secret = previous;
        endpoint.secrets = others;
        crate::endpoints::insert_endpoint(conn, &endpoint).expect("insert endpoint");
        endpoint.id
    }

    fn stored(conn: &mut DbConn, id: &str) -> Secrets {
        endpoints::table
            .find(id)
            .select((endpoints::secret, endpoints::previous_secret, endpoints::secrets))
            .first(conn)
            .expect("endpoint")
    }

    fn account(conn: &mut DbConn) -> String {
        crate::accounts::create_account(conn, "secrets", now()).expect("account").id
    }

    fn plain(i: usize) -> Secrets {
        (
            format!("whsec_current{i}"),
            i.is_multiple_of(2).then(|| format!("whsec_previous{i}")),
            i.is_multiple_of(3).then(|| format!(r#"{{"bot_token":"123:abc{i}"}}"#)),
        )
    }

    /// Each value of `stored` is sealed under `keyring`'s current key and opens to `plain`'s.
    fn assert_sealed_as(keyring: &Keyring, stored: &Secrets, plain: &Secrets) {
        let current = format!("dwenc:v1:{}:", keyring.current_id());
        let values = [Some(&stored.0), stored.1.as_ref(), stored.2.as_ref()];
        let expected = [Some(&plain.0), plain.1.as_ref(), plain.2.as_ref()];
        for (value, expected) in values.into_iter().zip(expected) {
            assert_eq!(value.is_some(), expected.is_some());
            if let (Some(value), Some(expected)) = (value, expected) {
                assert!(value.starts_with(&current), "{value}");
                assert_eq!(keyring.open(value).as_ref(), Ok(expected));
            }
        }
    }

    #[test]
    fn the_secret_columns_are_the_schemas() {
        assert_eq!(SECRET_COLUMNS, ["secret", "previous_secret", "secrets"]);
    }

    #[test]
    fn plaintext_is_sealed_and_opens_back() {
        on_each_backend(|conn| {
            let keyring = Keyring::new(SecretKey::generate(), Vec::new());
            let account = account(conn);
            let ids: Vec<String> = (0..7).map(|i| endpoint(conn, &account, plain(i))).collect();
            let none = endpoint(conn, &account, (String::new(), None, None));
            assert_eq!(plaintext_count(conn).ok(), Some(7));

            // Ids made in the same millisecond do not sort by creation.
            let mut sorted: Vec<&String> = ids.iter().chain([&none]).collect();
            sorted.sort();
            let in_first = sorted[..3].iter().filter(|id| ***id != none).count();

            let first = reseal_batch(conn, &keyring, None, 3).expect("first batch");
            assert_eq!((first.scanned, first.resealed), (3, in_first));
            assert_eq!(first.last_id.as_ref(), Some(sorted[2]));
            assert_eq!(plaintext_count(conn).ok(), Some(7 - in_first as i64));

            assert_eq!(reseal_all(conn, &keyring, 3).ok(), Some(7 - in_first), "the rest, in batches");
            assert_eq!(plaintext_count(conn).ok(), Some(0));
            for (i, id) in ids.iter().enumerate() {
                assert_sealed_as(&keyring, &stored(conn, id), &plain(i));
            }
            assert_eq!(stored(conn, &none), (String::new(), None, None), "no secret stays none");

            let again = reseal_batch(conn, &keyring, None, 100).expect("second run");
            assert_eq!((again.scanned, again.resealed), (8, 0));
            assert_eq!(reseal_all(conn, &keyring, 2).ok(), Some(0), "nothing left to seal");
            let after_last =
                reseal_batch(conn, &keyring, sorted.last().map(|id| id.as_str()), 100).expect("past the end");
            assert_eq!(after_last, ResealProgress::default());
        });
    }

    #[test]
    fn values_under_a_previous_key_move_to_the_current_one() {
        on_each_backend(|conn| {
            let old = SecretKey::generate();
            let before = Keyring::new(old.clone(), Vec::new());
            let account = account(conn);
            let seal = |(a, b, c): Secrets| (before.seal(&a), b.map(|b| before.seal(&b)), c.map(|c| before.seal(&c)));
            let ids: Vec<String> = (0..4).map(|i| endpoint(conn, &account, seal(plain(i)))).collect();
            let mixed = endpoint(conn, &account, (before.seal("whsec_mixed"), Some("whsec_plain".to_owned()), None));
            assert_eq!(plaintext_count(conn).ok(), Some(1), "sealed under the old key is not plaintext");

            let keyring = Keyring::new(SecretKey::generate(), vec![old]);
            assert_eq!(reseal_all(conn, &keyring, 2).ok(), Some(5));
            for (i, id) in ids.iter().enumerate() {
                assert_sealed_as(&keyring, &stored(conn, id), &plain(i));
            }
            let plain_mixed = ("whsec_mixed".to_owned(), Some("whsec_plain".to_owned()), None);
            assert_sealed_as(&keyring, &stored(conn, &mixed), &plain_mixed);
            assert_eq!(reseal_all(conn, &keyring, 2).ok(), Some(0));
        });
    }

    #[test]
    fn an_unknown_key_fails_the_batch_naming_ids_only() {
        on_each_backend(|conn| {
            let stranger = SecretKey::generate();
            let account = account(conn);
            let fine = endpoint(conn, &account, ("whsec_fine".to_owned(), None, None));
            let sealed = Keyring::new(stranger.clone(), Vec::new()).seal("whsec_hunter2");
            let lost = endpoint(conn, &account, ("whsec_other".to_owned(), Some(sealed), None));

            let keyring = Keyring::new(SecretKey::generate(), Vec::new());
            let err = reseal_all(conn, &keyring, 10).expect_err("unknown key");
            let message = err.to_string();
            assert!(matches!(err, StoreError::Batch(_)), "{message}");
            assert!(message.contains(&lost) && message.contains("previous_secret"), "{message}");
            assert!(message.contains(&format!("sealed with key {}, which is not configured", stranger.id())));
            assert!(!message.contains("hunter2") && !message.contains("whsec_"), "{message}");
            assert_eq!(stored(conn, &fine).0, "whsec_fine", "nothing of the batch is written");
            assert_eq!(plaintext_count(conn).ok(), Some(2));
        });
    }

    #[test]
    fn a_secret_changed_meanwhile_keeps_the_new_value() {
        on_each_backend(|conn| {
            let keyring = Keyring::new(SecretKey::generate(), Vec::new());
            let account = account(conn);
            let raced = endpoint(conn, &account, ("whsec_old".to_owned(), Some("whsec_older".to_owned()), None));
            let calm = endpoint(conn, &account, ("whsec_calm".to_owned(), None, None));

            let plan = plan(conn, &keyring, None, 10).expect("plan");
            assert_eq!(plan.reseals.len(), 3);
            // A user rotates the secret between the read and the write.
            diesel::update(endpoints::table.find(&raced))
                .set(endpoints::secret.eq("whsec_rotated"))
                .execute(conn)
                .expect("rotate");
            assert_eq!(apply(conn, &plan.reseals).ok(), Some(2), "both endpoints changed");

            let (secret, previous, _) = stored(conn, &raced);
            assert_eq!(secret, "whsec_rotated", "the user's value wins");
            assert_eq!(previous.map(|p| keyring.open(&p)), Some(Ok("whsec_older".to_owned())));
            assert_eq!(keyring.open(&stored(conn, &calm).0).as_deref(), Ok("whsec_calm"));
            // The next pass seals the new value.
            assert_eq!(plaintext_count(conn).ok(), Some(1));
            assert_eq!(reseal_all(conn, &keyring, 10).ok(), Some(1));
            assert_eq!(keyring.open(&stored(conn, &raced).0).as_deref(), Ok("whsec_rotated"));
        });
    }
}
