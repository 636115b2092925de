//! The `driftwatch` binary as a new user runs it: create an account and a token, serve on the
//! SQLite default in an empty directory, use the API with the printed token.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use driftwatch_test_support::KillOnDrop;

fn binary() -> PathBuf {
    // Cargo builds the package's binary before its integration tests and names it here.
    PathBuf::from(env!("CARGO_BIN_EXE_driftwatch"))
}

fn run(dir: &std::path::Path, args: &[&str]) -> String {
    let output = Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_remove("DRIFTWATCH_DATABASE_URL")
        .env("DRIFTWATCH_LOG", "warn")
        .output()
        .expect("run driftwatch");
    assert!(output.status.success(), "driftwatch {args:?} failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("utf-8")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_user_serves_on_the_sqlite_default() {
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["migrate"]);
    assert!(dir.path().join("driftwatch.db").exists(), "the default database file is created");
    assert!(run(dir.path(), &["account", "create", "acme"]).contains("created account acme"));
    let out = run(dir.path(), &["token", "create", "--account", "acme"]);
    let token = out.lines().last().expect("token line").trim().to_owned();
    assert!(token.starts_with("dwt_"), "{out}");

    let mut child = KillOnDrop::new(
        Command::new(binary())
            .arg("serve")
            .current_dir(dir.path())
            .env_remove("DRIFTWATCH_DATABASE_URL")
            .env("DRIFTWATCH_LISTEN", "127.0.0.1:0")
            .env("DRIFTWATCH_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    let stdout = child.stdout.take().expect("stdout");
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    });
    let line =
        tokio::time::timeout(Duration::from_secs(20), line).await.expect("serve starts").expect("join").expect("read");
    let base = line.trim().rsplit(' ').next().expect("address").to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{line}");

    let http = reqwest::Client::new();
    let health = http.get(format!("{base}/healthz")).send().await.expect("healthz");
    assert_eq!(health.status(), 200);
    let watches = http.get(format!("{base}/api/v1/watches")).bearer_auth(&token).send().await.expect("list");
    assert_eq!(watches.status(), 200);
    let body: serde_json::Value = watches.json().await.expect("json");
    assert_eq!(body, serde_json::json!({"items": [], "next_cursor": null}));
    let refused = http.get(format!("{base}/api/v1/watches")).bearer_auth("dwt_wrong").send().await.expect("list");
    assert_eq!(refused.status(), 401);

    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn verify_accepts_a_valid_webhook_and_rejects_a_tampered_one() {
    let secret = driftwatch_core::new_webhook_secret();
    let body = br#"{"type":"change.detected"}"#;
    let ts = chrono_now();
    let signature = driftwatch_delivery::sign(&secret, "dlv_1", ts, body).expect("sign");
    let verify = |payload: &[u8]| {
        let mut child = Command::new(binary())
            .args(["verify", "--secret", &secret, "-H", "webhook-id: dlv_1"])
            .args(["-H", &format!("webhook-timestamp: {ts}"), "-H", &format!("webhook-signature: {signature}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("verify");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), payload).expect("write body");
        child.wait().expect("exit").success()
    };
    assert!(verify(body));
    assert!(!verify(b"{\"type\":\"forged\"}"));
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

#[test]
fn import_from_urlwatch_then_export() {
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["account", "create", "acme"]);
    let yaml = "name: Prices\nurl: https://shop.example/\nfilter: css:div.price,html2text\n---\n\
                url: ftp://old.example/\n---\nname: Disk\ncommand: df -h\n---\nurl: https://news.example/\nfilter: xpath://div\n";
    std::fs::write(dir.path().join("urls.yaml"), yaml).expect("write");
    let output = Command::new(binary())
        .args(["import", "--account", "acme", "urls.yaml"])
        .current_dir(dir.path())
        .env_remove("DRIFTWATCH_DATABASE_URL")
        .env("DRIFTWATCH_LOG", "warn")
        .output()
        .expect("import");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains("imported 2 watches, 0 snapshots and 0 endpoints (none) into acme; 3 problems"),
        "{stdout}"
    );
    assert!(stderr.contains("command") && stderr.contains("xpath") && stderr.contains("ftp"), "{stderr}");

    let exported: serde_json::Value =
        serde_json::from_str(&run(dir.path(), &["export", "--account", "acme"])).expect("json");
    let watches = exported.as_array().expect("array");
    assert_eq!(watches.len(), 2);
    assert_eq!(watches[0]["name"], "Prices");
    assert_eq!(watches[0]["selector"], "div.price");
    assert_eq!(watches[1]["url"], "https://news.example/");
    assert!(watches[1]["selector"].is_null(), "the xpath filter was left out");
}

#[test]
fn an_export_imported_again_keeps_paused_and_muted() {
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["account", "create", "acme"]);
    let json = r#"[{"url": "https://a.example/", "name": "Quiet", "muted": true, "paused": true},
                   {"url": "https://b.example/", "name": "Loud"}]"#;
    std::fs::write(dir.path().join("watches.json"), json).expect("write");
    run(dir.path(), &["import", "--account", "acme", "watches.json"]);
    let exported = run(dir.path(), &["export", "--account", "acme"]);
    let watches: serde_json::Value = serde_json::from_str(&exported).expect("json");
    let flags: Vec<(&str, bool, bool)> = watches
        .as_array()
        .expect("array")
        .iter()
        .map(|w| (w["name"].as_str().unwrap_or(""), w["paused"] == true, w["muted"] == true))
        .collect();
    assert_eq!(flags, [("Quiet", true, true), ("Loud", false, false)], "{exported}");
}

#[test]
fn an_imported_watch_may_type_only_the_accounts_own_secrets() {
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["account", "create", "acme"]);
    let json = r##"[{"url": "https://bank.example/", "name": "Bank", "options": {"fetch": {"engine": "auto",
        "steps": [{"action": "type", "selector": "#user", "text": "ada"},
                  {"action": "type", "selector": "#pass", "text": {"secret": "bank"}}]}}},
                   {"url": "https://b.example/", "name": "Plain"}]"##;
    std::fs::write(dir.path().join("watches.json"), json).expect("write");
    let output = Command::new(binary())
        .args(["import", "--account", "acme", "watches.json"])
        .current_dir(dir.path())
        .env_remove("DRIFTWATCH_DATABASE_URL")
        .env("DRIFTWATCH_LOG", "warn")
        .output()
        .expect("import");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(
        stdout.contains("imported 1 watches, 0 snapshots and 0 endpoints (none) into acme; 1 problems"),
        "{stdout}"
    );
    assert!(stderr.contains("options.fetch.steps[1]") && stderr.contains("\"bank\""), "{stderr}");
}

#[test]
fn import_takes_apprise_urls_as_endpoints_and_seals_their_secrets() {
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["account", "create", "acme"]);
    let list = "# from changedetection.io\nhttps://shop.example/\ntgram://424242:SECRET-import-token/-100777\n\
                slack://SECRET-A/SECRET-B/SECRET-C\n";
    std::fs::write(dir.path().join("list.txt"), list).expect("write");
    let output = Command::new(binary())
        .args(["import", "--account", "acme", "list.txt"])
        .current_dir(dir.path())
        .env_remove("DRIFTWATCH_DATABASE_URL")
        .env("DRIFTWATCH_LOG", "warn")
        .output()
        .expect("import");
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(
        stdout.contains("imported 1 watches, 0 snapshots and 1 endpoints (1 telegram) into acme; 1 problems"),
        "{stdout}"
    );
    assert!(stderr.contains("notification 2 (slack://)") && !stderr.contains("SECRET"), "{stderr}");
    assert!(dir.path().join("driftwatch.db.key").exists(), "a key file beside the database");
    for file in ["driftwatch.db", "driftwatch.db-wal"] {
        let bytes = std::fs::read(dir.path().join(file)).unwrap_or_default();
        assert!(!bytes.windows(13).any(|w| w == b"SECRET-import"), "{file} holds the bot token in plaintext");
    }
}

#[test]
fn a_changedetection_backup_is_imported_with_its_history_once() {
    use driftwatch_test_support::{CdBackup, CdSnapshot};
    let dir = tempfile::tempdir().expect("temp dir");
    run(dir.path(), &["account", "create", "acme"]);
    let settings = serde_json::json!({"settings": {"application": {"api_access_token": "cd-token",
        "notification_urls": ["tgram://424242:SECRET-cd-token/-100777"]}, "requests": {}}});
    let watch = serde_json::json!({"url": "https://shop.example/", "title": "Shop", "include_filters": ["xpath://div[@id='price']"],
        "fetch_backend": "html_webdriver", "browser_steps": [{"operation": "Execute JS", "selector": "", "optional_value": "1"}]});
    let zip = CdBackup::new(settings)
        .watch(
            "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
            watch,
            &[CdSnapshot::text(1_700_000_000, "10 EUR"), CdSnapshot::brotli(1_700_086_400, "11 EUR")],
        )
        .zip();
    std::fs::write(dir.path().join("changedetection-backup-20261207.zip"), zip).expect("write");
    let import = || {
        Command::new(binary())
            .args(["import", "--account", "acme", "changedetection-backup-20261207.zip"])
            .current_dir(dir.path())
            .env_remove("DRIFTWATCH_DATABASE_URL")
            .env("DRIFTWATCH_LOG", "warn")
            .env("PATH", "/nonexistent")
            .output()
            .expect("import")
    };
    let output = import();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("read a changedetection.io backup: 1 watches with 2 snapshots of history"), "{stdout}");
    // Without Chromium on this node a rendered watch is refused, by name.
    assert!(stdout.contains("imported 0 watches, 0 snapshots and 1 endpoints (1 telegram)"), "{stdout}");
    assert!(
        stderr.contains("Shop: browser step 1 (Execute JS)") && stderr.contains("Shop: options.fetch.engine"),
        "{stderr}"
    );
    assert!(!stderr.contains("SECRET") && !stdout.contains("SECRET"), "{stderr}");

    // With a browser available (a remote one configured), the watch and its history come in, once.
    let with_browser = |args: &[&str]| {
        Command::new(binary())
            .args(args)
            .current_dir(dir.path())
            .env_remove("DRIFTWATCH_DATABASE_URL")
            .env("DRIFTWATCH_LOG", "warn")
            .env("DRIFTWATCH_BROWSER_WS", "ws://127.0.0.1:9/devtools/browser/x")
            .output()
            .expect("import")
    };
    let args = ["import", "--account", "acme", "changedetection-backup-20261207.zip"];
    let first = String::from_utf8_lossy(&with_browser(&args).stdout).into_owned();
    assert!(first.contains("imported 1 watches, 2 snapshots and 0 endpoints (none)"), "{first}");
    assert!(first.contains("0 watches and 1 endpoints skipped (already there)"), "{first}");
    let second = String::from_utf8_lossy(&with_browser(&args).stdout).into_owned();
    assert!(second.contains("imported 0 watches, 0 snapshots and 0 endpoints (none)"), "{second}");
    assert!(second.contains("1 watches and 1 endpoints skipped"), "{second}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_prints_a_one_time_setup_link_until_a_user_exists() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = |dir: &std::path::Path| {
        KillOnDrop::new(
            Command::new(binary())
                .arg("serve")
                .current_dir(dir)
                .env_remove("DRIFTWATCH_DATABASE_URL")
                .env("DRIFTWATCH_LISTEN", "127.0.0.1:0")
                .env("DRIFTWATCH_LOG", "warn")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("serve"),
        )
    };
    let lines = |child: &mut std::process::Child, n: usize| {
        let stdout = child.stdout.take().expect("stdout");
        tokio::task::spawn_blocking(move || {
            let mut reader = BufReader::new(stdout);
            (0..n)
                .map(|_| {
                    let mut line = String::new();
                    reader.read_line(&mut line).map(|_| line)
                })
                .collect::<Result<Vec<_>, _>>()
        })
    };
    let mut child = serve(dir.path());
    let out = tokio::time::timeout(Duration::from_secs(20), lines(&mut child, 3))
        .await
        .expect("serve starts")
        .expect("join")
        .expect("read");
    let _ = child.kill();
    let _ = child.wait();
    let url = out[2].trim();
    assert!(out[1].contains("setup link"), "{out:?}");
    assert!(url.starts_with("http://127.0.0.1:") && url.contains("/setup?code="), "{out:?}");

    // A user created on the command line (password from standard input, never argv) ends
    // the first-run offer.
    let mut create = Command::new(binary())
        .args(["user", "create", "--account", "acme", "--email", "Ada@Example.com"])
        .current_dir(dir.path())
        .env_remove("DRIFTWATCH_DATABASE_URL")
        .env("DRIFTWATCH_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("user create");
    std::io::Write::write_all(&mut create.stdin.take().expect("stdin"), b"correct horse battery\n").expect("write");
    let created = create.wait_with_output().expect("wait");
    assert!(created.status.success());
    let printed = String::from_utf8_lossy(&created.stdout).into_owned();
    assert!(printed.contains("created user ada@example.com"), "{printed}");
    assert!(!printed.contains("correct horse"), "the password is never printed");
    let listed = run(dir.path(), &["user", "list"]);
    assert!(listed.contains("ada@example.com") && listed.contains("acme"), "{listed}");
    assert!(!listed.contains("argon2"), "no hash either");

    let mut child = serve(dir.path());
    let out = tokio::time::timeout(Duration::from_secs(20), lines(&mut child, 1))
        .await
        .expect("serve starts")
        .expect("join")
        .expect("read");
    let base = out[0].trim().rsplit(' ').next().expect("address").to_owned();
    let setup = reqwest::get(format!("{base}/setup?code=anything")).await.expect("get");
    assert_eq!(setup.status(), 404, "setup is gone once a user exists");
    let _ = child.kill();
    let _ = child.wait();
}

/// A supervisor that closes the server's stdout (or a reader that stops after the first line)
/// must not take the server down: the start-up lines are written with errors ignored. This was a
/// CI failure: the setup link, printed after the address, panicked on a closed pipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_survives_a_closed_stdout() {
    let dir = tempfile::tempdir().expect("temp dir");
    // No user exists, so the setup link is printed too.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let mut child = KillOnDrop::new(
        Command::new(binary())
            .arg("serve")
            .current_dir(dir.path())
            .env_remove("DRIFTWATCH_DATABASE_URL")
            .env("DRIFTWATCH_LISTEN", format!("127.0.0.1:{port}"))
            .env("DRIFTWATCH_LOG", "warn")
            .env("RUST_BACKTRACE", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve"),
    );
    drop(child.stdout.take());

    let http = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/healthz");
    let up = async {
        loop {
            if let Ok(response) = http.get(&url).send().await {
                break response.status();
            }
            assert!(child.try_wait().expect("try_wait").is_none(), "the server exited while starting");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let status = tokio::time::timeout(Duration::from_secs(20), up).await.expect("serve starts");
    assert_eq!(status, 200);
    // The start-up lines are written right after the listener opens. There is no signal for "did
    // not crash", so keep the server busy for a bounded window: one that panicked on the closed
    // pipe was gone within about 100 ms.
    let window = std::time::Instant::now();
    while window.elapsed() < Duration::from_millis(750) {
        let response = http.get(&url).send().await.expect("the server is still up");
        assert_eq!(response.status(), 200);
        assert!(child.try_wait().expect("try_wait").is_none(), "the server is still running");
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A setting out of range is refused at start-up, naming it, rather than clamped.
#[test]
fn a_bad_setting_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (name, value) in [("DRIFTWATCH_MAX_ATTEMPTS", "0"), ("DRIFTWATCH_RETRY_JITTER", "2")] {
        let output = Command::new(binary())
            .arg("serve")
            .current_dir(dir.path())
            .env_remove("DRIFTWATCH_DATABASE_URL")
            .env("DRIFTWATCH_LISTEN", "127.0.0.1:0")
            .env(name, value)
            .output()
            .expect("run driftwatch");
        assert!(!output.status.success(), "{name}={value} is refused");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(name) && stderr.contains(value), "{stderr}");
    }
}

/// The config file sits under the environment and the flags; `driftwatch config` shows each
/// setting's value and where it came from, with secrets masked; a key that is not a setting
/// is refused.
#[test]
fn config_layers_file_environment_and_flags() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("driftwatch.toml");
    std::fs::write(
        &file,
        "max_attempts = 7\nretry_schedule = \"2m\"\npool_size = 4\nmetrics_token = \"s3cret-token\"\n\
         database_url = \"postgres://watcher:pa55word@db.example/driftwatch\"\n\
         secret_key = \"KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=\"\n",
    )
    .expect("write");
    let config = |extra: &[&str], env: &[(&str, &str)]| {
        let mut command = Command::new(binary());
        command.arg("config").args(extra).current_dir(dir.path());
        for name in [
            "DRIFTWATCH_DATABASE_URL",
            "DRIFTWATCH_RETRY_SCHEDULE",
            "DRIFTWATCH_POOL_SIZE",
            "DRIFTWATCH_CONFIG",
            "DRIFTWATCH_SECRET_KEY",
        ] {
            command.env_remove(name);
        }
        command.envs(env.iter().copied()).output().expect("run driftwatch")
    };
    let out = config(
        &["--config", file.to_str().expect("utf-8"), "--pool-size", "6"],
        &[("DRIFTWATCH_RETRY_SCHEDULE", "3m")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let line = |name: &str| {
        text.lines().find(|l| l.starts_with(&format!("{name} = "))).unwrap_or_else(|| panic!("{name} in {text}"))
    };
    assert_eq!(line("max_attempts"), "max_attempts = \"7\"  # file (DRIFTWATCH_MAX_ATTEMPTS)");
    assert_eq!(line("retry_schedule"), "retry_schedule = \"3m\"  # environment (DRIFTWATCH_RETRY_SCHEDULE)");
    assert_eq!(line("pool_size"), "pool_size = \"6\"  # flag (DRIFTWATCH_POOL_SIZE)");
    assert_eq!(line("listen"), "listen = \"127.0.0.1:8080\"  # default (DRIFTWATCH_LISTEN)");
    assert_eq!(line("metrics_token"), "metrics_token = \"********\"  # file (DRIFTWATCH_METRICS_TOKEN)");
    assert!(line("database_url").contains("db.example"), "{text}");
    assert!(!text.contains("s3cret") && !text.contains("pa55word"), "secrets are masked: {text}");
    assert!(line("secret_key").starts_with("secret_key = \"********\"") && !text.contains("KioqK"), "{text}");

    // The same through DRIFTWATCH_CONFIG.
    let out = config(&[], &[("DRIFTWATCH_CONFIG", file.to_str().expect("utf-8"))]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("max_attempts = \"7\"  # file"));

    // A typo, and a value out of range, are refused by name.
    std::fs::write(&file, "max_atempts = 7\n").expect("write");
    let out = config(&["--config", file.to_str().expect("utf-8")], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("`max_atempts` is not a setting"));
    std::fs::write(&file, "max_attempts = 0\n").expect("write");
    let out = config(&["--config", file.to_str().expect("utf-8")], &[]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("DRIFTWATCH_MAX_ATTEMPTS"));
}

#[test]
fn commands_that_only_open_the_database_show_only_its_settings() {
    for args in [&["user", "create", "--help"][..], &["token", "create", "--help"], &["import", "--help"]] {
        let out = Command::new(binary()).args(args).output().expect("run");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && help.contains("--database-url") && help.contains("--config"),
            "{args:?}: {help}"
        );
        assert!(
            !help.contains("--listen") && !help.contains("--retry-schedule"),
            "{args:?} lists server settings: {help}"
        );
    }
    // The server still lists them all, and a store command still takes one (from a config
    // file or the environment it may come anyway).
    let serve = Command::new(binary()).args(["serve", "--help"]).output().expect("run");
    assert!(String::from_utf8_lossy(&serve.stdout).contains("--retry-schedule"));
}
