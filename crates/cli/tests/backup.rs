//! `driftwatch backup` and `restore` as an operator runs them: a backup taken while `serve`
//! checks pages and delivers webhooks, restored into a new SQLite file and a new PostgreSQL
//! database, each then served: the same rows, the same export, the old token, the old
//! password and the old signing secret all still work. And what a bad file or target gets.

mod common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use common::{account_and_token, driftwatch, first_run, output, queue_tests, serve};
use driftwatch_test_support::{Backend, PageServer, Receiver, TestDb, eventually_within};

const EMAIL: &str = "ops@example.test";
const PASSWORD: &str = "correct horse battery staple";

/// `driftwatch args…` in `dir` with `env` on top, to completion.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    driftwatch(dir).args(args).envs(env.iter().copied()).output().expect("run driftwatch")
}

fn ok(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = run(dir, args, env);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A command that must fail; returns what it said on stderr.
fn refused(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = run(dir, args, env);
    assert!(!out.status.success(), "{args:?} succeeded: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Rows per table, as the backup's manifest counts them.
fn counts(file: &Path, passphrase: Option<&[u8]>) -> BTreeMap<String, u64> {
    driftwatch::backup::open(file, passphrase).expect("open").read(|_, _| Ok(())).expect("read").tables
}

/// Signs in through the sign-in form; returns the status of the POST (303 when signed in).
async fn sign_in(base: &str, password: &str) -> u16 {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let form = http.get(format!("{base}/sign-in")).send().await.expect("get");
    let cookie = form.headers()["set-cookie"].to_str().expect("cookie").split(';').next().expect("pair").to_owned();
    let html = form.text().await.expect("body");
    let csrf = html.split("name=\"_csrf\" value=\"").nth(1).and_then(|t| t.split('"').next()).expect("a form token");
    let post = http
        .post(format!("{base}/sign-in"))
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&[("_csrf", csrf), ("email", EMAIL), ("password", password), ("next", "/")]))
        .send()
        .await
        .expect("post");
    post.status().as_u16()
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
fn form_body(pairs: &[(&str, &str)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => char::from(b).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}

/// A server on the restored database in `dir` (with `env`) answers as the old one did.
async fn serves_as_before(
    dir: &Path,
    env: &[(&str, &str)],
    token: &str,
    endpoint: &str,
    secret: &str,
    receiver: &Receiver,
) {
    let (_child, base) = serve(dir, env).await;
    let http = reqwest::Client::new();
    let watches: serde_json::Value = http
        .get(format!("{base}/api/v1/watches"))
        .bearer_auth(token)
        .send()
        .await
        .expect("list")
        .json()
        .await
        .expect("json");
    assert_eq!(watches["items"].as_array().map(Vec::len), Some(2), "the old token works: {watches}");
    assert_eq!(sign_in(&base, "not the password at all").await, 401);
    assert_eq!(sign_in(&base, PASSWORD).await, 303, "the old password signs in");
    let sent = queue_tests(&http, &base, token, endpoint, 1).await.into_iter().next().expect("a delivery");
    let got = eventually_within("the new delivery", Duration::from_secs(60), || async {
        receiver.received().into_iter().find(|r| r.header("webhook-id") == sent)
    })
    .await;
    got.verify(secret).expect("signed with the endpoint's secret from before the backup");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_backup_taken_while_serving_restores_on_both_databases() {
    let source = tempfile::tempdir().expect("temp dir");
    let token = account_and_token(source.path());
    let mut user = driftwatch(source.path())
        .args(["user", "create", "--account", "acme", "--email", EMAIL])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("user create");
    user.stdin.take().expect("stdin").write_all(format!("{PASSWORD}\n").as_bytes()).expect("password");
    assert!(user.wait().expect("wait").success());

    let page = PageServer::start("<html><body><p id='price'>10 EUR</p></body></html>").await;
    let receiver = Receiver::start(200).await;
    let (_child, base) = serve(source.path(), &[]).await;
    let http = reqwest::Client::new();
    let endpoint: serde_json::Value = http
        .post(format!("{base}/api/v1/endpoints"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"url": receiver.url}))
        .send()
        .await
        .expect("create endpoint")
        .json()
        .await
        .expect("json");
    let (endpoint_id, secret) = (endpoint["id"].as_str().expect("id"), endpoint["secret"].as_str().expect("secret"));
    for selector in ["#price", "body"] {
        first_run(&http, &base, &token, serde_json::json!({"url": page.url, "selector": selector})).await;
    }
    assert_eq!(sign_in(&base, PASSWORD).await, 303);
    // Deliveries still being sent while the backup reads.
    receiver.set_delay(Duration::from_millis(200));
    queue_tests(&http, &base, &token, endpoint_id, 20).await;
    receiver.wait_in_flight(1, Duration::from_secs(30)).await;

    let file = source.path().join("backup.dwb");
    let said = ok(source.path(), &["backup", file.to_str().expect("path")], &[]);
    assert!(said.contains("with the secret key"), "{said}");
    let manifest = counts(&file, None);
    for table in
        ["accounts", "users", "sessions", "api_tokens", "watches", "snapshots", "runs", "endpoints", "deliveries"]
    {
        assert!(manifest[table] > 0, "{table} is empty in {manifest:?}");
    }
    assert_eq!(manifest["deliveries"], 20);
    let export = ok(source.path(), &["export", "--account", "acme"], &[]);
    let verified = ok(source.path(), &["restore", "--verify", file.to_str().expect("path")], &[]);
    assert!(verified.contains("every checksum and count right"), "{verified}");
    receiver.set_delay(Duration::ZERO);

    // Into a new SQLite file (its key file created beside it).
    let sqlite = tempfile::tempdir().expect("temp dir");
    ok(sqlite.path(), &["restore", file.to_str().expect("path")], &[]);
    assert!(sqlite.path().join("driftwatch.db.key").exists());
    let again = sqlite.path().join("again.dwb");
    ok(sqlite.path(), &["backup", again.to_str().expect("path")], &[]);
    assert_eq!(counts(&again, None), manifest, "every table's rows, restored into SQLite");
    assert_eq!(ok(sqlite.path(), &["export", "--account", "acme"], &[]), export);
    serves_as_before(sqlite.path(), &[], &token, endpoint_id, secret, &receiver).await;

    if std::env::var("DRIFTWATCH_TEST_POSTGRES_URL").is_err() {
        eprintln!("SKIPPED the PostgreSQL half: DRIFTWATCH_TEST_POSTGRES_URL is not set");
        return;
    }
    let db = TestDb::new(Backend::Postgres);
    let key = ok(source.path(), &["secrets", "generate-key"], &[]);
    let postgres = [("DRIFTWATCH_DATABASE_URL", db.url.as_str()), ("DRIFTWATCH_SECRET_KEY", key.trim())];
    let dir = tempfile::tempdir().expect("temp dir");
    ok(dir.path(), &["restore", file.to_str().expect("path")], &postgres);
    let from_postgres = dir.path().join("from-postgres.dwb");
    ok(dir.path(), &["backup", from_postgres.to_str().expect("path")], &postgres);
    assert_eq!(counts(&from_postgres, None), manifest, "every table's rows, restored into PostgreSQL");
    assert_eq!(ok(dir.path(), &["export", "--account", "acme"], &postgres), export);
    serves_as_before(dir.path(), &postgres, &token, endpoint_id, secret, &receiver).await;

    // And back from PostgreSQL into SQLite.
    let back = tempfile::tempdir().expect("temp dir");
    ok(back.path(), &["restore", from_postgres.to_str().expect("path")], &[]);
    assert_eq!(ok(back.path(), &["export", "--account", "acme"], &[]), export);
    serves_as_before(back.path(), &[], &token, endpoint_id, secret, &receiver).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_files_and_targets_are_refused_and_nothing_is_written() {
    let source = tempfile::tempdir().expect("temp dir");
    account_and_token(source.path());
    let (_child, base) = serve(source.path(), &[]).await;
    let token =
        output(source.path(), &["token", "create", "--account", "acme"]).lines().last().expect("token").to_owned();
    let receiver = Receiver::start(200).await;
    common::endpoint(&reqwest::Client::new(), &base, &token, &receiver.url).await;
    let path = |name: &str| source.path().join(name).display().to_string();
    std::fs::write(path("pass"), "open sesame\n").expect("passphrase");
    std::fs::write(path("wrong"), "close sesame\n").expect("passphrase");
    ok(source.path(), &["backup", "--passphrase-file", &path("pass"), &path("sealed.dwb")], &[]);
    ok(source.path(), &["backup", "--without-key", &path("keyless.dwb")], &[]);
    let bytes = std::fs::read(path("sealed.dwb")).expect("read");
    std::fs::write(path("cut.dwb"), &bytes[..bytes.len() - 40]).expect("write");
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    std::fs::write(path("flipped.dwb"), &flipped).expect("write");

    let target = tempfile::tempdir().expect("temp dir");
    let db = target.path().join("driftwatch.db");
    let restore = |args: &[&str]| refused(target.path(), &[&["restore"], args].concat(), &[]);
    assert!(restore(&[&path("sealed.dwb")]).contains("encrypted: give its passphrase"));
    assert!(restore(&["--passphrase-file", &path("wrong"), &path("sealed.dwb")]).contains("wrong passphrase"));
    assert!(restore(&["--passphrase-file", &path("pass"), &path("cut.dwb")]).contains("cut short"));
    assert!(restore(&["--passphrase-file", &path("pass"), &path("flipped.dwb")]).contains("damaged"));
    assert!(restore(&["--passphrase-file", &path("pass"), &path("keyless.dwb")]).contains("not encrypted"));
    assert!(restore(&[&path("keyless.dwb")]).contains("--without-key: give the key"));
    assert!(!db.exists(), "no database written for a bad file");

    // A plain backup cut or changed: gzip's checksum or the member's.
    let plain = std::fs::read(path("keyless.dwb")).expect("read");
    std::fs::write(path("plain-cut.dwb"), &plain[..plain.len() / 2]).expect("write");
    assert!(restore(&["--verify", &path("plain-cut.dwb")]).contains("cut short"));
    assert!(!db.exists());

    // The key from beside the source database opens the keyless backup's secrets.
    let said = ok(target.path(), &["restore", "--key-file", &path("driftwatch.db.key"), &path("keyless.dwb")], &[]);
    // Sealed again under the key made beside the new database, not the source's.
    let key_id = |file: &std::path::Path| {
        let text = std::fs::read_to_string(file).expect("key file");
        driftwatch_core::SecretKey::from_base64(text.trim()).expect("key").id()
    };
    let (source, restored) =
        (key_id(std::path::Path::new(&path("driftwatch.db.key"))), key_id(&target.path().join("driftwatch.db.key")));
    assert_ne!(source, restored, "the restored database has a key of its own");
    assert!(said.contains(&format!("now under key {restored}")), "{said}");
    let before = std::fs::read(&db).expect("restored");
    let err = restore(&["--passphrase-file", &path("pass"), &path("sealed.dwb")]);
    assert!(err.contains("not empty (accounts has 1 rows"), "{err}");
    assert_eq!(std::fs::read(&db).expect("still there"), before, "the target is left as it was");
    let verified =
        ok(target.path(), &["restore", "--verify", "--passphrase-file", &path("pass"), &path("sealed.dwb")], &[]);
    assert!(verified.contains("all of which open with its key"), "{verified}");

    // PostgreSQL without a key to re-seal under: refused before anything is written.
    if std::env::var("DRIFTWATCH_TEST_POSTGRES_URL").is_ok() {
        let db = TestDb::new(Backend::Postgres);
        let args = ["restore", "--passphrase-file", &path("pass"), &path("sealed.dwb")];
        let err = refused(target.path(), &args, &[("DRIFTWATCH_DATABASE_URL", &db.url)]);
        assert!(err.contains("PostgreSQL needs DRIFTWATCH_SECRET_KEY"), "{err}");
    }
}
