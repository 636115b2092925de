//! Cuts found by driving a release as an operator would (issue 34, "CLI, import and
//! operations"): bulk actions that need an explicit `all`, SMTP logins over each TLS mode and
//! their failures in words, an endpoint's failure streak read the same on its page as in the
//! API, and pages that name their account.

use std::time::Duration;

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, PageServer, SmtpLogin, SmtpServer, SmtpTls};
use serde_json::{Value, json};

use crate::support::TestApp;

/// How long a test waits for mail it expects.
const WAIT: Duration = Duration::from_secs(15);

/// An empty filter takes every watch only with `"all": true`; without it every bulk action is
/// a 422 naming `filter`, and nothing changes.
pub async fn bulk_actions_on_every_watch_need_all(backend: Backend) {
    let app = TestApp::start(backend).await;
    let site = PageServer::start("<p>hello</p>").await;
    let token = app.account("acme").await;
    for name in ["One", "Two"] {
        app.watch_with_baseline(&token, json!({"url": site.url, "name": name})).await;
    }
    for (path, extra) in [
        ("/watches/delete", json!({})),
        ("/watches/pause", json!({})),
        ("/watches/resume", json!({})),
        ("/watches/check", json!({})),
        ("/watches/tag", json!({"add": ["x"]})),
    ] {
        let mut body = json!({"filter": {}});
        body.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        let (status, problem) = app.post(path, &token, body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {problem}");
        assert_eq!(problem["errors"][0]["field"], "filter", "{path}: {problem}");
        assert!(problem["errors"][0]["message"].as_str().expect("message").contains("\"all\": true"), "{problem}");
        // A filter of blanks narrows nothing either.
        let mut blank = json!({"filter": {"q": "  ", "tag": ""}});
        blank.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        assert_eq!(app.post(path, &token, blank).await.0, StatusCode::UNPROCESSABLE_ENTITY, "{path}");
    }
    assert_eq!(app.ok("/watches", &token).await["items"].as_array().expect("items").len(), 2, "nothing deleted");
    assert_eq!(app.ok("/watches?state=paused", &token).await["items"], json!([]), "nothing paused");

    // `all` with ids or a narrowing filter is refused too, naming `all`.
    let (status, problem) = app.post("/watches/pause", &token, json!({"filter": {"q": "One"}, "all": true})).await;
    assert_eq!((status, &problem["errors"][0]["field"]), (StatusCode::UNPROCESSABLE_ENTITY, &json!("all")));
    let (status, _) = app.post("/watches/pause", &token, json!({"ids": ["wat_x"], "all": true})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Said explicitly, it takes them all: alone or with an empty filter.
    let (status, paused) = app.post("/watches/pause", &token, json!({"all": true})).await;
    assert_eq!((status, paused["count"].as_u64()), (StatusCode::OK, Some(2)), "{paused}");
    let (status, deleted) = app.post("/watches/delete", &token, json!({"filter": {}, "all": true})).await;
    assert_eq!((status, deleted["count"].as_u64()), (StatusCode::OK, Some(2)), "{deleted}");
    assert_eq!(app.ok("/watches", &token).await["items"], json!([]));
}

/// An email endpoint to `smtp` with `security`, logging in as `driftwatch` with `password`.
fn email(smtp: &SmtpServer, security: &str, password: &str) -> Value {
    json!({"kind": "email", "url": format!("smtp://127.0.0.1:{}", smtp.port()),
           "settings": {"from": "dw@example.com", "to": ["ops@example.com"], "security": security, "username": "driftwatch"},
           "secrets": {"password": password}})
}

/// Queues a test event to the endpoint; returns the delivery's id.
async fn send_test(app: &TestApp, token: &str, endpoint_id: &str) -> String {
    let (status, delivery) = app.post(&format!("/endpoints/{endpoint_id}/test"), token, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
    delivery["id"].as_str().expect("id").to_owned()
}

/// PLAIN and LOGIN each over STARTTLS and over implicit TLS log in and send; a server that
/// offers no AUTH, and a wrong password, are permanent failures said in words and
/// dead-lettered at once; the endpoint's page shows the failure streak the API shows.
pub async fn email_logins_over_each_tls_and_their_failures_in_words(backend: Backend) {
    const PASSWORD: &str = "smtp-login-9";
    let mut servers = Vec::new();
    for tls in [SmtpTls::StartTls, SmtpTls::ImplicitTls] {
        for login in [SmtpLogin::Plain, SmtpLogin::Login] {
            servers.push((SmtpServer::requiring_login(("driftwatch", PASSWORD), &[login], tls).await, tls, login));
        }
    }
    let ca = tempfile::NamedTempFile::new().expect("temp file");
    let bundle: String = servers.iter().map(|(s, _, _)| s.certificate_pem().expect("pem")).collect();
    std::fs::write(ca.path(), bundle).expect("write the CA bundle");
    let ca_path = ca.path().to_owned();
    let app = TestApp::start_with(backend, |s| s.smtp_ca_file = Some(ca_path)).await;
    let token = crate::pages::user(&app, "acme", "ada@example.com").await;
    let create = |body: Value| {
        let (app, token) = (&app, &token);
        async move {
            let (status, created) = app.post("/endpoints", token, body).await;
            assert_eq!(status, StatusCode::CREATED, "{created}");
            created["id"].as_str().expect("id").to_owned()
        }
    };

    for (smtp, tls, login) in &servers {
        let security = if *tls == SmtpTls::StartTls { "starttls" } else { "tls" };
        let id = create(email(smtp, security, PASSWORD)).await;
        let sent = app.wait_delivery(&token, &send_test(&app, &token, &id).await, "sent").await;
        assert_eq!(sent["attempts"], 1, "{login:?} over {security}: {sent}");
        let mail = smtp.wait_for(1, WAIT).await.remove(0);
        assert_eq!((mail.tls, mail.user.as_deref(), mail.mechanism), (true, Some("driftwatch"), Some(*login)));
    }

    // A server that offers no AUTH at all: said in words, not lettre's; dead at once.
    let open_relay = SmtpServer::start().await;
    let id = create(email(&open_relay, "plain", PASSWORD)).await;
    let dead = app.wait_delivery(&token, &send_test(&app, &token, &id).await, "dead").await;
    let error = dead["last_error"].as_str().expect("an error");
    assert_eq!(dead["attempts"], 1, "{dead}");
    assert!(error.contains("offers no login (AUTH") && !error.contains("internal client error"), "{error}");
    assert!(open_relay.messages().is_empty());

    // A wrong password: the server's 535, said as such; permanent, dead at once.
    let (strict, _, _) = &servers[0];
    let id = create(email(strict, "starttls", "not-the-password")).await;
    for _ in 0..2 {
        let dead = app.wait_delivery(&token, &send_test(&app, &token, &id).await, "dead").await;
        let error = dead["last_error"].as_str().expect("an error");
        assert_eq!(dead["attempts"], 1, "{dead}");
        assert!(error.starts_with("SMTP 535: the server refused the username or password"), "{error}");
    }

    // The endpoint's page and the API read the same failure streak.
    let api = app.ok(&format!("/endpoints/{id}"), &token).await["health"]["consecutive_failures"].clone();
    assert_eq!(api, 2, "two refused logins in a row");
    let session = crate::pages::sign_in(&app, "ada@example.com").await;
    let page = session.get(&format!("/endpoints/{id}")).await.text().await.expect("page");
    let shown = page.split("Failures in a row</dt><dd>").nth(1).and_then(|t| t.split('<').next());
    assert_eq!(shown, Some("2"), "the page agrees with the API");
    let list = session.get("/endpoints").await.text().await.expect("page");
    let row = list.split(&format!("/endpoints/{id}\"")).nth(1).expect("listed");
    let shown = row.split("<td data-label=\"failures in a row\">").nth(1).and_then(|t| t.split('<').next());
    assert_eq!(shown, Some("2"), "the list agrees too: {row}");
}

/// The signed-in header and the Tokens page name the account, so a person can tell which
/// account a CLI token must be made for.
pub async fn pages_name_the_account_they_show(backend: Backend) {
    let app = TestApp::start(backend).await;
    crate::pages::user(&app, "home-of-ada", "ada@example.com").await;
    let session = crate::pages::sign_in(&app, "ada@example.com").await;
    for path in ["/", "/tokens", "/account"] {
        let page = session.get(path).await.text().await.expect("page");
        assert!(
            page.contains("<span class=\"muted\" id=\"who-account\" title=\"Account\">· home-of-ada</span>"),
            "{path}"
        );
    }
    let tokens = session.get("/tokens").await.text().await.expect("page");
    assert!(tokens.contains("<strong id=\"token-account\">home-of-ada</strong>"), "{tokens}");
}
