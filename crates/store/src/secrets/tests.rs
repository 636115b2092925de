use diesel::connection::SimpleConnection as _;
use driftwatch_core::SecretKey;

use super::*;
use crate::Endpoint;

/// A migrated database of its own, removed afterwards.
pub(crate) struct TestDb {
    conn: Option<DbConn>,
    /// What a second connection establishes: the SQLite file's path or the PostgreSQL URL.
    address: String,
    _dir: Option<tempfile::TempDir>,
    /// PostgreSQL: the admin URL and the database's name, to drop it.
    postgres: Option<(String, String)>,
}

impl TestDb {
    pub(crate) fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("driftwatch.db");
        let mut conn = diesel::SqliteConnection::establish(&path.display().to_string()).expect("open SQLite");
        conn.batch_execute("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;").expect("pragmas");
        TestDb::migrated(DbConn::Sqlite(conn), path.display().to_string(), Some(dir), None)
    }

    /// A fresh database on the server `DRIFTWATCH_TEST_POSTGRES_URL` names, when it is set.
    pub(crate) fn postgres() -> Option<TestDb> {
        let admin = std::env::var("DRIFTWATCH_TEST_POSTGRES_URL").ok()?;
        let name = format!("dw_test_{}", driftwatch_core::new_id(driftwatch_core::IdKind::Run).replace("run_", ""));
        let mut conn = diesel::PgConnection::establish(&admin).expect("connect to the admin database");
        diesel::sql_query(format!("CREATE DATABASE {name}")).execute(&mut conn).expect("create database");
        let mut url = url::Url::parse(&admin).expect("postgres URL");
        url.set_path(&format!("/{name}"));
        let conn = diesel::PgConnection::establish(url.as_str()).expect("connect to the test database");
        Some(TestDb::migrated(DbConn::Pg(conn), url.to_string(), None, Some((admin, name))))
    }

    fn migrated(
        mut conn: DbConn,
        address: String,
        dir: Option<tempfile::TempDir>,
        postgres: Option<(String, String)>,
    ) -> TestDb {
        crate::db::migrate(&mut conn).expect("migrate");
        TestDb { conn: Some(conn), address, _dir: dir, postgres }
    }

    /// Another connection to the same database.
    pub(crate) fn another(&self) -> DbConn {
        match self.conn.as_ref().expect("open") {
            DbConn::Sqlite(_) => {
                let mut conn = diesel::SqliteConnection::establish(&self.address).expect("open SQLite");
                conn.batch_execute("PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;").expect("pragmas");
                DbConn::Sqlite(conn)
            }
            DbConn::Pg(_) => DbConn::Pg(diesel::PgConnection::establish(&self.address).expect("connect")),
        }
    }

    pub(crate) fn conn(&mut self) -> &mut DbConn {
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
    assert_eq!(SECRET_COLUMNS, ["secret", "previous_secret", "secrets", "url_secret"]);
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
        let after_last = reseal_batch(conn, &keyring, sorted.last().map(|id| id.as_str()), 100).expect("past the end");
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

#[test]
fn account_secrets_are_sealed_and_resealed_under_a_new_key() {
    on_each_backend(|conn| {
        let account = account(conn);
        let old = SecretKey::generate();
        let before = Keyring::new(old.clone(), Vec::new());
        crate::logins::set_secret(conn, &account, "clear", "left-in-the-clear", now()).expect("set");
        crate::logins::set_secret(conn, &account, "old", &before.seal("under-the-old-key"), now()).expect("set");
        let keyring = Keyring::new(SecretKey::generate(), vec![old]);
        assert_eq!(crate::logins::reseal_logins(conn, &keyring).expect("reseal"), 2);
        let current = format!("dwenc:v1:{}:", keyring.current_id());
        for secret in crate::logins::list_secrets(conn, &account).expect("list") {
            assert!(secret.value.starts_with(&current), "{}: {}", secret.name, secret.value);
        }
        let opened: Vec<String> = crate::logins::list_secrets(conn, &account)
            .expect("list")
            .iter()
            .map(|s| keyring.open(&s.value).expect("opens"))
            .collect();
        assert_eq!(opened, ["left-in-the-clear", "under-the-old-key"]);
        assert_eq!(crate::logins::reseal_logins(conn, &keyring).expect("again"), 0, "nothing left to do");
    });
}

#[test]
fn proxies_and_proxies_in_watch_options_are_resealed() {
    on_each_backend(|conn| {
        let old_key = SecretKey::generate();
        let old = Keyring::new(old_key.clone(), Vec::new());
        let new_key = SecretKey::generate();
        let rotated = Keyring::new(new_key.clone(), vec![old_key]);
        let account = account(conn);
        let url = old.seal("http://user:pw@proxy.test:3128");
        crate::proxies::create(conn, &account, "office", &url, "http://user:***@proxy.test:3128", now())
            .expect("proxy");
        let inline = old.seal("socks5://u:p@10.0.0.1:1080");
        let options = format!(r#"{{"fetch":{{"proxy":"{inline}"}},"when_blocked":{{"proxy":"office"}}}}"#);
        conn.batch_execute(&format!(
            "INSERT INTO watches (id, account_id, name, url, state, health, options, rebaseline, next_run_at, \
             consecutive_failures, created_at, updated_at, tags, muted, value_failures) VALUES ('wat_1', '{account}', \
             'w', 'https://example.test/', 'active', 'healthy', '{options}', FALSE, '2026-01-01 00:00:00', 0, \
             '2026-01-01 00:00:00', '2026-01-01 00:00:00', '[]', FALSE, 0)"
        ))
        .expect("watch");
        assert_eq!(crate::proxies::reseal_proxies(conn, &rotated).expect("reseal"), 2);
        assert_eq!(crate::proxies::reseal_proxies(conn, &rotated).expect("again"), 0, "nothing left to do");
        let only_new = Keyring::new(new_key.clone(), Vec::new());
        let stored = crate::proxies::find(conn, &account, "office").expect("find").expect("proxy").url;
        assert_eq!(only_new.open(&stored).expect("opens"), "http://user:pw@proxy.test:3128");
        let options: String = crate::schema::watches::table
            .find("wat_1")
            .select(crate::schema::watches::options)
            .first(conn)
            .expect("options");
        let sealed = options.split('"').find(|p| p.starts_with("dwenc:")).expect("still sealed");
        assert_eq!(only_new.open(sealed).expect("opens"), "socks5://u:p@10.0.0.1:1080");
        assert!(options.ends_with(r#""when_blocked":{"proxy":"office"}}"#), "{options}");
    });
}
