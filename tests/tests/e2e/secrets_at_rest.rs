//! Secrets at rest: one of every secret-bearing thing is made (through the API with an
//! `Idempotency-Key`, each replayed, and through the UI), then the whole database is searched
//! for each plaintext: SQLite's file, its WAL and shared memory; PostgreSQL's `pg_dump`, bytea
//! columns decoded. None may be found. Credential URLs are shown masked, unsigned kinds have
//! no signing secret, and a stored secret can be removed from the UI and the API.

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, TestDb};
use serde_json::{Value, json};

use crate::pages::{PASSWORD, header, sign_in, user};
use crate::support::{TestApp, test_settings};

const TELEGRAM_TOKEN: &str = "7000000001:AAtelegram-plaintext-bot-token";
const SMTP_PASSWORD: &str = "smtp-plaintext-password-91";
const SECRET_HEADER: &str = "Bearer http-plaintext-secret-header";
const DISCORD_KEY: &str = "discord-plaintext-webhook-key";
const SLACK_KEY: &str = "slackplaintextwebhookkey";
const TEAMS_SIG: &str = "teams-plaintext-signature";
const MATTERMOST_KEY: &str = "mattermostplaintexthookkey";
const LEGACY_DISCORD_KEY: &str = "legacy-discord-plaintext-key";
const PROXY_PASSWORD: &str = "proxy-plaintext-password-7";
const PROXY_PASSWORD_2: &str = "inline-proxy-plaintext-password-8";

/// `POST path` with an `Idempotency-Key`, checked against the OpenAPI document like every call;
/// the status, the body and whether it was a replay.
async fn post_once(app: &TestApp, path: &str, token: &str, key: &str, body: &Value) -> (StatusCode, Value, bool) {
    let response = app
        .http
        .post(format!("{}{path}", app.base))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(body)
        .send()
        .await
        .expect("request");
    let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
    let replayed = response.headers().get("idempotent-replayed").is_some();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = response.text().await.expect("body");
    crate::conformance::check("POST", path, status.as_u16(), content_type.as_deref(), &text);
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)), replayed)
}

/// Sends `body` to `path` twice with one key: the first answer and the replay agree on
/// everything but `shown_once`, which only the first carries. Returns the first answer.
async fn created_and_replayed(
    app: &TestApp,
    path: &str,
    token: &str,
    key: &str,
    body: Value,
    shown_once: &str,
) -> Value {
    let (status, first, replayed) = post_once(app, path, token, key, &body).await;
    assert!(status.is_success() && !replayed, "{path}: {status} {first}");
    let (again, replay, replayed) = post_once(app, path, token, key, &body).await;
    assert_eq!((again, replayed), (status, true), "{path}: the second is a replay: {replay}");
    assert!(replay.get(shown_once).is_none(), "{path}: a replay leaves out `{shown_once}`: {replay}");
    let mut expected = first.clone();
    if let Some(object) = expected.as_object_mut() {
        object.remove(shown_once);
    }
    assert_eq!(replay, expected, "{path}: otherwise the replay is the answer");
    first
}

/// Where each plaintext in `needles` is found in the database's stored bytes.
pub(crate) fn found_in_database(backend: Backend, db: &TestDb, needles: &[String]) -> Vec<String> {
    let mut blobs: Vec<(String, Vec<u8>)> = Vec::new();
    match backend {
        Backend::Sqlite => {
            let path = db.url.trim_start_matches("sqlite://").to_owned();
            for file in [path.clone(), format!("{path}-wal"), format!("{path}-shm")] {
                if let Ok(bytes) = std::fs::read(&file) {
                    blobs.push((file, bytes));
                }
            }
            assert!(!blobs.is_empty(), "the database file is read");
        }
        Backend::Postgres => {
            let dump =
                std::process::Command::new("pg_dump").arg("--dbname").arg(&db.url).output().expect("pg_dump runs");
            assert!(dump.status.success(), "pg_dump: {}", String::from_utf8_lossy(&dump.stderr));
            assert!(dump.stdout.len() > 1000, "a dump with the tables");
            let decoded = decode_bytea(&String::from_utf8_lossy(&dump.stdout));
            blobs.push(("pg_dump".into(), dump.stdout));
            blobs.push(("pg_dump's bytea, decoded".into(), decoded));
        }
    }
    let mut found = Vec::new();
    for needle in needles {
        for (name, bytes) in &blobs {
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(format!("{needle:?} in {name}"));
            }
        }
    }
    found
}

/// Every `\x<hex>` run of a dump (bytea in COPY text), decoded and concatenated.
fn decode_bytea(dump: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for run in dump.split("\\x").skip(1) {
        let hex: Vec<u8> = run.bytes().take_while(u8::is_ascii_hexdigit).collect();
        for pair in hex.chunks_exact(2) {
            let text = std::str::from_utf8(pair).unwrap_or("00");
            out.push(u8::from_str_radix(text, 16).unwrap_or(0));
        }
        out.push(b'\n');
    }
    out
}

/// The text after `start` up to the next `"` or `<` in `html` (`keep`: with `start`).
fn after(html: &str, start: &str, keep: bool) -> Option<String> {
    let rest = html.split(start).nth(1)?;
    let text = rest.split(['"', '<']).next()?;
    Some(if keep { format!("{start}{text}") } else { text.to_owned() }).filter(|t| t.len() > 8)
}

pub async fn no_secret_is_stored_in_plaintext(backend: Backend) {
    let db = TestDb::new(backend);
    let settings = test_settings(&db);
    let roles = driftwatch::Roles { web: true, background: true };
    let app = TestApp::from_app(driftwatch::App::start(&settings, roles).await.expect("starts"));
    let api_token = user(&app, "Acme", "ada@example.com").await;
    let mut needles = vec![api_token.clone(), PASSWORD.to_owned()];
    for secret in [TELEGRAM_TOKEN, SMTP_PASSWORD, SECRET_HEADER, DISCORD_KEY, SLACK_KEY, TEAMS_SIG, MATTERMOST_KEY] {
        needles.push(secret.to_owned());
    }
    let hook = |path: &str| format!("http://127.0.0.1:9{path}");

    // A signed webhook: its secret shown once, in the first answer only.
    let webhook = json!({"url": hook("/hook")});
    let created = created_and_replayed(&app, "/endpoints", &api_token, "k-webhook", webhook, "secret").await;
    let signing = created["secret"].as_str().expect("a webhook has a signing secret").to_owned();
    assert!(signing.starts_with("whsec_"), "{created}");
    needles.push(signing);
    let webhook_id = created["id"].as_str().expect("id").to_owned();
    let rotate = format!("/endpoints/{webhook_id}/rotate-secret");
    let rotated = created_and_replayed(&app, &rotate, &api_token, "k-rotate", json!({}), "secret").await;
    needles.push(rotated["secret"].as_str().expect("the new secret").to_owned());

    // Every other secret-bearing kind, each created twice with one key.
    let kinds = [
        json!({"kind": "telegram", "url": hook("/"), "settings": {"chat_id": 7}, "secrets": {"bot_token": TELEGRAM_TOKEN}}),
        json!({"kind": "email", "url": "smtp://127.0.0.1:2525",
               "settings": {"from": "dw@example.com", "to": ["ops@example.com"], "security": "plain", "username": "dw"},
               "secrets": {"password": SMTP_PASSWORD}}),
        json!({"kind": "http", "url": hook("/n8n"), "secrets": {"headers": {"Authorization": SECRET_HEADER}}}),
        json!({"kind": "discord", "url": hook(&format!("/api/webhooks/1234/{DISCORD_KEY}"))}),
        json!({"kind": "slack", "url": hook(&format!("/services/T0/B0/{SLACK_KEY}"))}),
        json!({"kind": "teams", "url": hook(&format!("/workflows/w1/triggers/manual/paths/invoke?sv=1.0&sig={TEAMS_SIG}"))}),
        json!({"kind": "mattermost", "url": hook(&format!("/hooks/{MATTERMOST_KEY}"))}),
    ];
    let mut made = Vec::new();
    for body in kinds {
        let kind = body["kind"].as_str().expect("kind").to_owned();
        let endpoint = created_and_replayed(&app, "/endpoints", &api_token, &format!("k-{kind}"), body, "secret").await;
        assert!(endpoint.get("secret").is_none(), "a {kind} endpoint does not sign, so has no secret: {endpoint}");
        made.push((kind, endpoint));
    }
    let (_, discord) = made.iter().find(|(k, _)| k == "discord").expect("discord");
    assert_eq!(discord["url"], hook("/api/webhooks/1234/••••"), "a credential URL is shown masked");
    let (_, teams) = made.iter().find(|(k, _)| k == "teams").expect("teams");
    assert_eq!(teams["url"], hook("/workflows/w1/triggers/manual/paths/••••?••••"));
    let (_, http) = made.iter().find(|(k, _)| k == "http").expect("http");
    let (status, refused) = app
        .post(&format!("/endpoints/{}/rotate-secret", http["id"].as_str().expect("id")), &api_token, json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "an unsigned kind has no secret to rotate: {refused}");
    assert!(refused["detail"].as_str().is_some_and(|d| d.contains("not signed")), "{refused}");
    let listed = app.ok("/endpoints", &api_token).await.to_string();
    assert!(!listed.contains(DISCORD_KEY) && listed.contains("••••"), "the list shows credential URLs masked");

    // An API token made with a key: the replay carries its record without the token.
    let minted = created_and_replayed(&app, "/tokens", &api_token, "k-token", json!({"name": "ci"}), "token").await;
    needles.push(minted["token"].as_str().expect("the token").to_owned());

    // The UI: a session, an endpoint whose signing secret is shown once, a token, a feed key.
    let ada = sign_in(&app, "ada@example.com").await;
    needles.push(ada.cookie.trim_start_matches("dw_session=").to_owned());
    let added = ada.submit("/endpoints/new", &[("kind", "webhook"), ("url", &hook("/ui")), ("route", "all")]).await;
    assert_eq!(added.status(), 303, "{:?}", added.text().await);
    let page = ada.get(&header(&added, "location")).await.text().await.expect("page");
    needles.push(after(&page, "<code id=\"secret\">", false).expect("the new endpoint's secret is shown once"));
    let tokens = ada.submit("/tokens", &[("name", "from the ui"), ("write", "on")]).await;
    let page = ada.get(&header(&tokens, "location")).await.text().await.expect("page");
    needles.push(after(&page, "<code id=\"new-token\">", false).expect("the new token is shown once"));
    let feed = ada.submit("/account/feed-key", &[]).await.text().await.expect("page");
    needles.push(after(&feed, "/feeds/dwf_", false).expect("the feed URL is shown once"));

    // Proxies' passwords: a named proxy, and a proxy URL written in a watch's options.
    let proxy = json!({"name": "office", "url": format!("http://alice:{PROXY_PASSWORD}@proxy.example:3128")});
    let (status, saved) = app.post("/proxies", &api_token, proxy).await;
    assert_eq!(status, StatusCode::CREATED, "{saved}");
    let watch = json!({"url": "http://192.0.2.1/page", "paused": true,
        "options": {"fetch": {"proxy": format!("socks5://bob:{PROXY_PASSWORD_2}@proxy.example:1080")}}});
    let (status, watch) = app.post("/watches", &api_token, watch).await;
    assert_eq!(status, StatusCode::CREATED, "{watch}");
    assert!(!watch.to_string().contains(PROXY_PASSWORD_2), "{watch}");
    needles.extend([PROXY_PASSWORD.to_owned(), PROXY_PASSWORD_2.to_owned()]);

    let found = found_in_database(backend, &db, &needles);
    assert!(found.is_empty(), "plaintext secrets in the database: {found:#?}");

    // A credential URL stored whole before they were sealed is sealed, and masked, at start.
    let running = app.into_app();
    let store = running.store.clone();
    let legacy_url = hook(&format!("/api/webhooks/99/{LEGACY_DISCORD_KEY}"));
    let legacy = legacy_url.clone();
    let account = store
        .read(|c| Ok(driftwatch_store::users::find_user_by_email(c, "ada@example.com")?.expect("ada").account_id))
        .await
        .expect("account");
    store
        .write(move |c| {
            let mut e = driftwatch_store::Endpoint::webhook(&account, &legacy, chrono::Utc::now().naive_utc());
            e.kind = "discord".into();
            driftwatch_store::endpoints::insert_endpoint(c, &e)
        })
        .await
        .expect("a legacy endpoint");
    running.shutdown().await;
    let app = TestApp::from_app(driftwatch::App::start(&settings, roles).await.expect("restarts"));
    let listed = app.ok("/endpoints", &api_token).await.to_string();
    assert!(listed.contains(&hook("/api/webhooks/99/••••")), "the legacy URL is shown masked: {listed}");
    needles.push(LEGACY_DISCORD_KEY.to_owned());
    let found = found_in_database(backend, &db, &needles);
    assert!(found.is_empty(), "plaintext secrets in the database after a restart: {found:#?}");
    app.into_app().shutdown().await;
}

/// A stored secret (an SMTP password) is removed from the edit form with its own button (a
/// CSRF'd post that redirects) and through the API with `null`; the other secrets stay.
pub async fn a_stored_secret_can_be_removed(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = user(&app, "Acme", "ada@example.com").await;
    let email = json!({"kind": "email", "url": "smtp://127.0.0.1:2525",
        "settings": {"from": "dw@example.com", "to": ["ops@example.com"], "username": "dw"},
        "secrets": {"password": SMTP_PASSWORD}});
    let (status, created) = app.post("/endpoints", &token, email).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["secrets_set"], true);
    let id = created["id"].as_str().expect("id").to_owned();

    let ada = sign_in(&app, "ada@example.com").await;
    let form = ada.get(&format!("/endpoints/{id}/edit")).await.text().await.expect("form");
    assert!(form.contains("formaction=\"/endpoints/") && form.contains("value=\"email_password\""), "a remove button");
    let forged = crate::pages::client()
        .post(format!("{}/endpoints/{id}/remove-secret", app.root()))
        .header("cookie", &ada.cookie)
        .form(&[("_csrf", "not-the-token"), ("remove", "email_password")])
        .send()
        .await
        .expect("post");
    assert_eq!(forged.status(), 403, "the form needs the session's token");
    let unknown = ada.submit("/endpoints/end_nope/remove-secret", &[("remove", "email_password")]).await;
    assert_eq!(unknown.status(), 404, "another account's or no endpoint is the 404 page");
    let not_a_secret = ada.submit(&format!("/endpoints/{id}/remove-secret"), &[("remove", "email_from")]).await;
    assert_eq!(not_a_secret.status(), 400, "only a secret field can be removed");
    let removed = ada.submit(&format!("/endpoints/{id}/remove-secret"), &[("remove", "email_password")]).await;
    assert_eq!(removed.status(), 303, "{:?}", removed.text().await);
    assert_eq!(header(&removed, "location"), format!("/endpoints/{id}"));
    let page = ada.get(&format!("/endpoints/{id}")).await.text().await.expect("page");
    assert!(page.contains("SMTP password removed."), "the notice says so");
    assert_eq!(app.ok(&format!("/endpoints/{id}"), &token).await["secrets_set"], false);
    let form = ada.get(&format!("/endpoints/{id}/edit")).await.text().await.expect("form");
    assert!(!form.contains("value=\"email_password\""), "nothing left to remove");

    // The API: `null` removes one secret and keeps the others.
    let http = json!({"kind": "http", "url": "http://127.0.0.1:9/n8n", "secrets": {"headers": {"Authorization": SECRET_HEADER}}});
    let (_, http) = app.post("/endpoints", &token, http).await;
    let path = format!("/endpoints/{}", http["id"].as_str().expect("id"));
    let (status, kept) =
        app.call(reqwest::Method::PATCH, &path, &token, Some(json!({"description": "n8n", "secrets": {}}))).await;
    assert_eq!((status, &kept["secrets_set"]), (StatusCode::OK, &json!(true)), "unnamed secrets are kept: {kept}");
    let (status, cleared) =
        app.call(reqwest::Method::PATCH, &path, &token, Some(json!({"secrets": {"headers": null}}))).await;
    assert_eq!((status, &cleared["secrets_set"]), (StatusCode::OK, &json!(false)), "{cleared}");
}
