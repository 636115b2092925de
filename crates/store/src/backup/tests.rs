use diesel::connection::SimpleConnection as _;
use serde_json::{Map, Value};

use super::*;
use crate::secrets::tests::TestDb;

/// The tables `schema.rs` declares, each with its primary key, sorted.
fn declared() -> Vec<(String, Vec<String>)> {
    let mut tables: Vec<(String, Vec<String>)> = include_str!("../schema.rs")
        .split("diesel::table! {")
        .skip(1)
        .map(|block| {
            let head = block.trim_start().lines().next().unwrap_or_default();
            let (name, rest) = head.split_once(" (").unwrap_or_else(|| panic!("a table head: {head}"));
            let keys = rest.split_once(')').map(|(k, _)| k).unwrap_or_default();
            (name.trim().to_owned(), keys.split(',').map(|k| k.trim().to_owned()).collect())
        })
        .collect();
    tables.sort();
    tables
}

#[test]
fn every_table_is_backed_up_with_its_primary_key() {
    let mut listed: Vec<(String, Vec<String>)> =
        TABLES.iter().map(|(t, keys)| ((*t).to_owned(), keys.iter().map(|k| (*k).to_owned()).collect())).collect();
    listed.sort();
    assert_eq!(declared(), listed, "schema.rs and backup::TABLES must list the same tables");

    // And so do the migrations (a table added by one but not to schema.rs would be left out).
    let mut db = TestDb::sqlite();
    #[derive(QueryableByName)]
    struct Name {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let DbConn::Sqlite(c) = db.conn() else { unreachable!("a SQLite database") };
    let migrated: Vec<Name> = diesel::sql_query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         AND name <> '__diesel_schema_migrations' ORDER BY name",
    )
    .load(c)
    .expect("tables");
    let mut tables: Vec<&str> = TABLES.iter().map(|(t, _)| *t).collect();
    tables.sort_unstable();
    assert_eq!(migrated.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), tables);
}

/// A table's name and rows.
type Table = (String, Vec<Map<String, Value>>);

/// Collects what [`dump`] reads.
#[derive(Default)]
struct Collected(Vec<Table>);

impl Sink for Collected {
    fn table(&mut self, table: &str, columns: &[Column]) -> StoreResult<()> {
        assert!(!columns.is_empty());
        self.0.push((table.to_owned(), Vec::new()));
        Ok(())
    }
    fn row(&mut self, row: &Map<String, Value>) -> StoreResult<()> {
        self.0.last_mut().expect("a table first").1.push(row.clone());
        Ok(())
    }
}

fn dumped(conn: &mut DbConn, batch: i64) -> Vec<Table> {
    let mut sink = Collected::default();
    let done = dump(conn, batch, &mut sink).expect("dump");
    assert_eq!(done.migration, latest_migration());
    sink.0
}

fn restore(conn: &mut DbConn, tables: &[Table]) {
    assert_eq!(empty_or_which(conn).expect("count"), Vec::new());
    crate::transaction(conn, |conn| {
        for (table, rows) in tables {
            let columns = columns(conn, table)?;
            insert_rows(conn, table, &columns, rows)?;
        }
        Ok(())
    })
    .expect("restore");
}

/// Rows with text, integers, a double, booleans, timestamps with a fraction, bytes and NULLs.
fn seed(conn: &mut DbConn) {
    let at = |micros: i64| {
        chrono::DateTime::from_timestamp_micros(1_700_000_000_000_000 + micros).map(|t| t.naive_utc()).expect("time")
    };
    for i in 0..5 {
        let account = crate::accounts::create_account(conn, &format!("acct{i}"), at(123_456 + i)).expect("account");
        crate::accounts::create_token(conn, &account.id, "t", "read write", at(1)).expect("token");
        crate::users::create_user(conn, &account.id, &format!("u{i}@x.test"), "$argon2id$hash", at(2)).expect("user");
        let endpoint = crate::Endpoint::webhook(&account.id, "https://example.test/hook", at(500_000));
        crate::endpoints::insert_endpoint(conn, &endpoint).expect("endpoint");
    }
    let bytes: Vec<u8> = (0..=255).collect();
    let shot = crate::screenshots::StoredScreenshot {
        hash: "ab".repeat(32),
        format: "png".into(),
        width: 3,
        height: -1,
        bytes,
        created_at: at(999_999),
    };
    crate::screenshots::put(conn, &shot).expect("screenshot");
    conn.batch_execute(
        "INSERT INTO ai_cache (key, model, important, reason, summary, tokens, created_at) \
         VALUES ('k''1', 'm', TRUE, 'r \"quoted\" ☃', '', 9007199254740993, '2026-12-07 10:00:00.5')",
    )
    .expect("ai cache");
}

#[test]
fn rows_survive_backups_between_backends_exactly() {
    let mut source = TestDb::sqlite();
    seed(source.conn());
    // A batch smaller than a table: the keyset goes on from the last key read.
    let tables = dumped(source.conn(), 2);
    let count = |name: &str| tables.iter().find(|(t, _)| t == name).map(|(_, rows)| rows.len());
    assert_eq!((count("accounts"), count("endpoints"), count("screenshots")), (Some(5), Some(5), Some(1)));
    let cache = &tables.iter().find(|(t, _)| t == "ai_cache").expect("ai_cache").1[0];
    assert_eq!(cache["important"], Value::Bool(true));
    assert_eq!(cache["tokens"], Value::from(9_007_199_254_740_993_i64));
    assert_eq!(cache["created_at"], Value::from("2026-12-07T10:00:00.500"));

    let mut copy = TestDb::sqlite();
    restore(copy.conn(), &tables);
    assert_eq!(dumped(copy.conn(), 1000), tables, "SQLite → SQLite");
    assert!(!empty_or_which(copy.conn()).expect("count").is_empty());

    if let Some(mut postgres) = TestDb::postgres() {
        // No table takes its keys from a sequence, so a restore has none to advance.
        #[derive(QueryableByName)]
        struct Count {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let DbConn::Pg(c) = postgres.conn() else { unreachable!("PostgreSQL") };
        let sequences: Count =
            diesel::sql_query("SELECT COUNT(*) AS n FROM information_schema.sequences").get_result(c).expect("count");
        assert_eq!(sequences.n, 0, "a table uses a sequence: restore must advance it");
        restore(postgres.conn(), &tables);
        let back = dumped(postgres.conn(), 3);
        // PostgreSQL writes fractions without trailing zeros: the same instant.
        let normal = |rows: &[Table]| serde_json::to_string(rows).expect("json").replace(".500\"", ".5\"");
        assert_eq!(normal(&back), normal(&tables), "SQLite → PostgreSQL");
        let mut again = TestDb::sqlite();
        restore(again.conn(), &back);
        assert_eq!(normal(&dumped(again.conn(), 1000)), normal(&tables), "PostgreSQL → SQLite");
    }
}

#[test]
fn rows_that_do_not_fit_are_refused_by_name() {
    let mut db = TestDb::sqlite();
    let columns = columns(db.conn(), "ai_usage").expect("columns");
    let row = |extra: (&str, Value)| {
        let mut row = Map::new();
        for (k, v) in [
            ("account_id", Value::from("a")),
            ("day", Value::from("2026-12-07")),
            ("tokens", 1.into()),
            ("calls", 1.into()),
        ] {
            row.insert(k.to_owned(), v);
        }
        row.insert(extra.0.to_owned(), extra.1);
        row
    };
    let err = insert_rows(db.conn(), "ai_usage", &columns, &[row(("cost", 1.into()))]).expect_err("unknown column");
    assert!(err.to_string().contains("no column cost"), "{err}");
    let err = insert_rows(db.conn(), "ai_usage", &columns, &[row(("calls", "many".into()))]).expect_err("a string");
    assert!(err.to_string().contains("ai_usage.calls"), "{err}");
}

/// Writes through another connection when the dump reaches its first table, then collects.
struct WritesMeanwhile {
    other: DbConn,
    collected: Collected,
}

impl Sink for WritesMeanwhile {
    fn table(&mut self, table: &str, columns: &[Column]) -> StoreResult<()> {
        if table == "accounts" {
            crate::accounts::create_account(&mut self.other, "meanwhile", chrono::NaiveDateTime::default())?;
        }
        self.collected.table(table, columns)
    }
    fn row(&mut self, row: &Map<String, Value>) -> StoreResult<()> {
        self.collected.row(row)
    }
}

#[test]
fn a_dump_reads_one_snapshot_while_others_write() {
    let mut dbs = vec![TestDb::sqlite()];
    dbs.extend(TestDb::postgres());
    for mut db in dbs {
        if let DbConn::Sqlite(c) = db.conn() {
            // As `Store::open` leaves every file: readers beside the one writer.
            c.batch_execute("PRAGMA journal_mode = WAL").expect("wal");
        }
        crate::accounts::create_account(db.conn(), "before", chrono::NaiveDateTime::default()).expect("account");
        let mut sink = WritesMeanwhile { other: db.another(), collected: Collected::default() };
        let done = dump(db.conn(), 10, &mut sink).expect("dump");
        assert_eq!(done.rows[0], ("accounts".to_owned(), 1), "the account written meanwhile is not in the dump");
        let names: Vec<&str> = sink.collected.0[0].1.iter().filter_map(|r| r["name"].as_str()).collect();
        assert_eq!(names, ["before"]);
        assert_eq!(crate::accounts::list_accounts(db.conn()).expect("list").len(), 2, "it was written");
    }
}
