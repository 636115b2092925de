//! The binary as an operator drives it: each command's help lists its own settings, `config`
//! refuses what `serve` refuses, `migrate` needs no key it does not use, imports are
//! idempotent and read changedetection.io's datastore, and `account list` shows which account
//! is which.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use driftwatch_test_support::{Backend, TestDb};

/// `driftwatch args…` in `dir`, on its SQLite default unless `env` says otherwise, with no
/// setting inherited from the environment that runs the tests.
fn driftwatch(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_driftwatch"));
    command.args(args).current_dir(dir).env("DRIFTWATCH_LOG", "warn");
    for (name, _) in std::env::vars() {
        if name.starts_with("DRIFTWATCH_") && name != "DRIFTWATCH_LOG" {
            command.env_remove(name);
        }
    }
    command.envs(env.iter().copied()).output().expect("run driftwatch")
}

/// The standard output of a command that must succeed.
fn ok(dir: &Path, args: &[&str]) -> String {
    let out = driftwatch(dir, args, &[]);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

fn help(args: &[&str]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    ok(dir.path(), args)
}

#[test]
fn migrate_and_worker_list_only_the_settings_they_use() {
    let migrate = help(&["migrate", "--help"]);
    for flag in ["--database-url", "--secret-key", "--secret-key-file", "--config"] {
        assert!(migrate.contains(flag), "migrate --help lacks {flag}: {migrate}");
    }
    for flag in ["--listen", "--header-timeout", "--retry-schedule", "--check-concurrency", "--metrics-token"] {
        assert!(!migrate.contains(flag), "migrate --help lists {flag}: {migrate}");
    }
    let worker = help(&["worker", "--help"]);
    for flag in ["--database-url", "--check-concurrency", "--retry-schedule", "--secret-key"] {
        assert!(worker.contains(flag), "worker --help lacks {flag}: {worker}");
    }
    for flag in ["--listen", "--header-timeout", "--max-connections", "--rate-limit-per-minute", "--metrics-listen"] {
        assert!(!worker.contains(flag), "worker --help lists {flag}: {worker}");
    }
    // `account list` is a command that only opens the database.
    let list = help(&["account", "list", "--help"]);
    assert!(list.contains("--database-url") && !list.contains("--listen"), "{list}");
}

#[test]
fn config_refuses_what_serve_refuses_and_masks_only_secrets() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Nothing listens on port 1: neither command may get as far as connecting.
    let postgres = [("DRIFTWATCH_DATABASE_URL", "postgres://driftwatch@127.0.0.1:1/driftwatch")];
    let serve = driftwatch(dir.path(), &["serve", "--listen", "127.0.0.1:0"], &postgres);
    let config = driftwatch(dir.path(), &["config"], &postgres);
    let said = |out: &Output| String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !serve.status.success() && said(&serve).contains("PostgreSQL needs DRIFTWATCH_SECRET_KEY"),
        "{}",
        said(&serve)
    );
    assert!(!config.status.success(), "config exits non-zero: {}", String::from_utf8_lossy(&config.stdout));
    assert!(said(&config).contains("PostgreSQL needs DRIFTWATCH_SECRET_KEY"), "{}", said(&config));

    // With the key it passes; the key is masked, a duration whose name says "secret" is not.
    let key = "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=";
    let config = driftwatch(dir.path(), &["config"], &[postgres[0], ("DRIFTWATCH_SECRET_KEY", key)]);
    let text = String::from_utf8_lossy(&config.stdout);
    assert!(config.status.success(), "{}", said(&config));
    assert!(text.contains("secret_key = \"********\"") && !text.contains(key), "{text}");
    assert!(text.contains("secret_rotation_overlap = \"24h\""), "{text}");
}

#[test]
fn migrate_on_postgresql_asks_for_no_key() {
    if std::env::var("DRIFTWATCH_TEST_POSTGRES_URL").is_err() {
        eprintln!("SKIPPED migrate on PostgreSQL: DRIFTWATCH_TEST_POSTGRES_URL is not set");
        return;
    }
    let db = TestDb::new(Backend::Postgres);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = driftwatch(dir.path(), &["migrate"], &[("DRIFTWATCH_DATABASE_URL", &db.url)]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("migrations applied") && !stderr.contains("SECRET_KEY"), "{stdout}{stderr}");
}

#[test]
fn importing_twice_adds_nothing_and_says_so() {
    let dir = tempfile::tempdir().expect("temp dir");
    ok(dir.path(), &["account", "create", "acme"]);
    let list = "https://a.example/\nhttps://b.example/\nhttps://a.example/\n";
    std::fs::write(dir.path().join("list.txt"), list).expect("write");
    let first = ok(dir.path(), &["import", "--account", "acme", "list.txt"]);
    assert!(
        first.contains("imported 2 watches") && first.contains("1 watches and 0 endpoints skipped (already there)"),
        "{first}"
    );
    let again = ok(dir.path(), &["import", "--account", "acme", "list.txt"]);
    assert!(again.contains("imported 0 watches") && again.contains("3 watches and 0 endpoints skipped"), "{again}");
    let exported: serde_json::Value =
        serde_json::from_str(&ok(dir.path(), &["export", "--account", "acme"])).expect("json");
    assert_eq!(exported.as_array().map(Vec::len), Some(2), "{exported}");

    // The same URL with other options is another watch; an export imported back adds nothing.
    let other = r##"[{"url": "https://a.example/", "selector": "#price"}]"##;
    std::fs::write(dir.path().join("other.json"), other).expect("write");
    assert!(ok(dir.path(), &["import", "--account", "acme", "other.json"]).contains("imported 1 watches"));
    std::fs::write(dir.path().join("export.json"), ok(dir.path(), &["export", "--account", "acme"])).expect("write");
    let back = ok(dir.path(), &["import", "--account", "acme", "export.json"]);
    assert!(back.contains("imported 0 watches") && back.contains("3 watches and 0 endpoints skipped"), "{back}");
}

#[test]
fn a_changedetection_datastore_is_read_as_watches_not_as_urls() {
    let dir = tempfile::tempdir().expect("temp dir");
    ok(dir.path(), &["account", "create", "acme"]);
    let datastore = serde_json::json!({
        "app_guid": "c0ffee",
        "settings": {"application": {"tags": {"t1": {"title": "Prices"}}}, "requests": {"time_between_check": {"hours": 1}}},
        "watching": {
            "0b1c": {"url": "https://shop.example/kettle", "title": "Kettle", "tags": ["t1"], "include_filters": ["#price"]},
            "9f2e": {"url": "https://news.example/", "title": "News", "paused": true}
        }
    });
    std::fs::write(dir.path().join("url-watches.json"), datastore.to_string()).expect("write");
    let out = ok(dir.path(), &["import", "--account", "acme", "url-watches.json"]);
    assert!(out.contains("imported 2 watches, 0 snapshots and 0 endpoints (none) into acme; 0 problems"), "{out}");
    let exported: serde_json::Value =
        serde_json::from_str(&ok(dir.path(), &["export", "--account", "acme"])).expect("json");
    let mut got: Vec<(String, String, String, String, bool)> = exported
        .as_array()
        .expect("array")
        .iter()
        .map(|w| {
            let text = |key: &str| w[key].as_str().unwrap_or("").to_owned();
            (text("url"), text("name"), text("selector"), w["tags"].to_string(), w["paused"] == true)
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("https://news.example/".into(), "News".into(), String::new(), "null".into(), true),
            ("https://shop.example/kettle".into(), "Kettle".into(), "#price".into(), "[\"prices\"]".into(), false),
        ]
    );
    assert!(exported.as_array().expect("array").iter().all(|w| w["interval_seconds"] == 3600), "{exported}");

    // Another JSON object is refused, saying what it is not, and nothing is created.
    std::fs::write(dir.path().join("other.json"), r#"{"pages": ["https://a.example/"]}"#).expect("write");
    let out = driftwatch(dir.path(), &["import", "--account", "acme", "other.json"], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("url-watches.json"), "{stderr}");
}

#[test]
fn account_list_shows_which_account_is_which() {
    let dir = tempfile::tempdir().expect("temp dir");
    ok(dir.path(), &["account", "create", "acme"]);
    let mut user = Command::new(env!("CARGO_BIN_EXE_driftwatch"))
        .args(["user", "create", "--account", "home", "--email", "ada@example.com"])
        .current_dir(dir.path())
        .env_remove("DRIFTWATCH_DATABASE_URL")
        .env("DRIFTWATCH_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("user create");
    user.stdin.take().expect("stdin").write_all(b"a long enough password\n").expect("password");
    assert!(user.wait().expect("wait").success());
    std::fs::write(dir.path().join("list.txt"), "https://a.example/\nhttps://b.example/\n").expect("write");
    ok(dir.path(), &["import", "--account", "home", "list.txt"]);

    let listed = ok(dir.path(), &["account", "list"]);
    let row = |name: &str| {
        listed.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}: {listed}"))
    };
    let columns = |line: &str| line.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let (acme, home) = (columns(row("acme")), columns(row("home")));
    assert!(acme[1].starts_with("acc_") && home[1].starts_with("acc_"), "{listed}");
    assert_eq!((acme[4].as_str(), acme[5].as_str()), ("0", "-"), "{listed}");
    assert_eq!((home[4].as_str(), home[5].as_str()), ("2", "ada@example.com"), "{listed}");

    // `token create` names the account and its id.
    let created = ok(dir.path(), &["token", "create", "--account", "home"]);
    assert!(created.contains(&format!("for account home ({})", home[1])), "{created}");
}
