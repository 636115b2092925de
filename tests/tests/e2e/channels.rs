//! Every endpoint kind against a real server on loopback that speaks its protocol: the chat
//! APIs' stand-ins (which refuse what the providers refuse) and an SMTP server whose mail is
//! read by a MIME parser. Routing, mute, templates and secrets at rest.

use std::time::Duration;

use axum::http::StatusCode;
use driftwatch_test_support::{Backend, ChatServer, Mode, PageServer, Provider, SmtpServer};
use serde_json::{Value, json};

use crate::support::TestApp;

const WAIT: Duration = Duration::from_secs(20);
const BOT_TOKEN: &str = "424242:SECRET-bot-token-for-tests";
const PUSHOVER_TOKEN: &str = "azGDORePK8gMaC0QOYAMyEEuzJnyUi";
const PUSHOVER_USER: &str = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG";
const MATTERMOST_HOOK: &str = "/hooks/xq8sd3ne7tfdzq9u1wyk5ebhwr";

/// Each chat kind's endpoint body against `chat`, and whose path it lands on.
fn chat_kinds(chat: &ChatServer) -> Vec<(Provider, Value)> {
    chat.expect_ntfy_token("tk_ntfy");
    chat.expect_gotify_token("gotify-app-token");
    chat.expect_matrix_token("syt_matrix_token");
    let base = chat.base_url();
    vec![
        (Provider::Discord, json!({"kind": "discord", "url": chat.url("/api/webhooks/1234/discord-key")})),
        (
            Provider::Telegram,
            json!({"kind": "telegram", "url": base, "settings": {"chat_id": -1001234}, "secrets": {"bot_token": BOT_TOKEN}}),
        ),
        (Provider::Teams, json!({"kind": "teams", "url": chat.url("/teams/workflow-1")})),
        (
            Provider::Mattermost,
            json!({"kind": "mattermost", "url": chat.url(MATTERMOST_HOOK), "settings": {"channel": "shop-alerts", "username": "driftwatch"}}),
        ),
        (
            Provider::Ntfy,
            json!({"kind": "ntfy", "url": base, "settings": {"topic": "shop-alerts", "priority": 4, "tags": ["warning"]}, "secrets": {"token": "tk_ntfy"}}),
        ),
        (
            Provider::Pushover,
            json!({"kind": "pushover", "url": base, "secrets": {"token": PUSHOVER_TOKEN, "user_key": PUSHOVER_USER}}),
        ),
        (Provider::Gotify, json!({"kind": "gotify", "url": base, "secrets": {"token": "gotify-app-token"}})),
        (
            Provider::Matrix,
            json!({"kind": "matrix", "url": base, "settings": {"room_id": "!room:example.org"}, "secrets": {"access_token": "syt_matrix_token"}}),
        ),
        (
            Provider::Generic,
            json!({"kind": "http", "url": chat.url("/hook/n8n"), "settings": {"method": "PUT", "headers": {"X-Source": "driftwatch"}},
                   "secrets": {"headers": {"Authorization": "Bearer n8n-secret"}},
                   "body_template": "{\"watch\": {{ watch.name|tojson }}, \"added\": {{ diff.added_lines|tojson }}}"}),
        ),
    ]
}

async fn create_endpoint(app: &TestApp, token: &str, body: Value) -> String {
    let (status, created) = app.post("/endpoints", token, body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert!(created["secrets"].is_null(), "secrets are never shown: {created}");
    created["id"].as_str().expect("id").to_owned()
}

async fn send_test(app: &TestApp, token: &str, endpoint_id: &str) -> String {
    let (status, delivery) = app.post(&format!("/endpoints/{endpoint_id}/test"), token, json!({})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{delivery}");
    delivery["id"].as_str().expect("id").to_owned()
}

/// A watch on `site` with its baseline; then the page changes and is checked.
async fn change(app: &TestApp, token: &str, watch_id: &str) {
    let run = app.check(token, watch_id).await;
    assert_eq!(run["outcome"], "changed", "{run}");
}

pub async fn every_chat_kind_is_delivered_in_its_providers_shape(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let chat = ChatServer::start().await;
    for (_, body) in chat_kinds(&chat) {
        create_endpoint(&app, &token, body).await;
    }
    let site = PageServer::start("<div id=price>Price: 10 EUR</div>").await;
    let watch =
        app.watch_with_baseline(&token, json!({"url": site.url, "name": "Widget <b>", "selector": "#price"})).await;
    site.set("<div id=price>Price: 12 EUR</div>");
    change(&app, &token, watch["id"].as_str().expect("id")).await;

    for (provider, _) in chat_kinds(&chat) {
        let got = chat.wait_for(provider, 1, WAIT).await;
        assert!(got[0].accepted(), "{provider:?}: {:?}", got[0].rejected);
    }
    chat.assert_no_rejections();
    let json_of = |p| chat.accepted(p)[0].json.clone().expect("json");
    let discord = json_of(Provider::Discord);
    let description = discord["embeds"][0]["description"].as_str().expect("description");
    assert!(description.contains("- Price: 10 EUR") && description.contains("+ Price: 12 EUR"), "{discord}");
    assert_eq!(discord["embeds"][0]["color"], 0xf9a825, "added and removed: amber");
    let telegram = json_of(Provider::Telegram);
    let text = telegram["text"].as_str().expect("text");
    assert!(text.starts_with("<b>Widget &lt;b&gt; changed</b>"), "escaped for Telegram's HTML: {text}");
    assert_eq!(telegram["chat_id"], -1001234);
    let teams = json_of(Provider::Teams);
    assert_eq!(teams["attachments"][0]["content"]["type"], "AdaptiveCard");
    let mattermost = json_of(Provider::Mattermost);
    let text = mattermost["text"].as_str().expect("text");
    assert!(text.starts_with("#### Widget <b> changed\n") && text.contains("```diff\n"), "{mattermost}");
    assert!(text.contains("- Price: 10 EUR") && text.contains("+ Price: 12 EUR"), "{text}");
    assert_eq!(
        (mattermost["channel"].as_str(), mattermost["username"].as_str()),
        (Some("shop-alerts"), Some("driftwatch"))
    );
    let ntfy = chat.accepted(Provider::Ntfy)[0].clone();
    assert_eq!(ntfy.header("authorization"), "Bearer tk_ntfy");
    assert_eq!((ntfy.json.as_ref().expect("json")["priority"].as_i64()), Some(4));
    let pushover = json_of(Provider::Pushover);
    assert_eq!(pushover["user"], PUSHOVER_USER, "the user key is merged in at send");
    let matrix = chat.accepted(Provider::Matrix)[0].clone();
    assert!(matrix.path.ends_with(&format!("/{}", matrix.path.rsplit('/').next().unwrap_or_default())));
    assert!(matrix.path.contains("/send/m.room.message/dlv_"), "the delivery id is the txn id: {}", matrix.path);
    let hook = chat.accepted(Provider::Generic)[0].clone();
    assert_eq!(
        (hook.method.as_str(), hook.header("authorization"), hook.header("x-source")),
        ("PUT", "Bearer n8n-secret", "driftwatch")
    );
    assert_eq!(hook.json, Some(json!({"watch": "Widget <b>", "added": ["Price: 12 EUR"]})));
}

pub async fn each_chat_kind_retries_dead_letters_and_redelivers_the_same_bytes(backend: Backend) {
    let app =
        TestApp::start_with(backend, |s| s.webhook_timeout = driftwatch::HumanDuration(Duration::from_millis(700)))
            .await;
    let token = app.account("acme").await;
    let chat = ChatServer::start().await;
    for (provider, body) in chat_kinds(&chat) {
        let endpoint_id = create_endpoint(&app, &token, body).await;

        // Throttled in the provider's own way, then accepted.
        chat.fail_next(1, Mode::RateLimited { retry_after_secs: 0.05 });
        let id = send_test(&app, &token, &endpoint_id).await;
        let sent = app.wait_delivery(&token, &id, "sent").await;
        let log = app.ok(&format!("/deliveries/{id}"), &token).await["attempt_log"].clone();
        assert_eq!(
            (sent["attempts"].as_i64(), log[0]["status_code"].as_i64()),
            (Some(2), Some(429)),
            "{provider:?}: {log}"
        );

        // A server error and a hang are retried.
        chat.fail_next(1, Mode::Status(503));
        let id = send_test(&app, &token, &endpoint_id).await;
        assert_eq!(app.wait_delivery(&token, &id, "sent").await["attempts"], 2, "{provider:?}");
        chat.fail_next(1, Mode::Hang);
        let id = send_test(&app, &token, &endpoint_id).await;
        let sent = app.wait_delivery(&token, &id, "sent").await;
        let log = app.ok(&format!("/deliveries/{id}"), &token).await["attempt_log"].clone();
        assert_eq!(
            (sent["attempts"].as_i64(), log[0]["error_kind"].as_str()),
            (Some(2), Some("timeout")),
            "{provider:?}"
        );

        // Refused: dead at once; redelivered later, byte for byte.
        chat.set_mode(Mode::Status(400));
        let id = send_test(&app, &token, &endpoint_id).await;
        assert_eq!(app.wait_delivery(&token, &id, "dead").await["attempts"], 1, "{provider:?}");
        chat.set_mode(Mode::Ok);
        let (status, redelivered) = app.post(&format!("/deliveries/{id}/redeliver"), &token, json!({})).await;
        assert_eq!(
            (status, redelivered["status"].as_str()),
            (StatusCode::OK, Some("sent")),
            "{provider:?}: {redelivered}"
        );
        let all: Vec<_> = chat.received().into_iter().filter(|r| r.provider == provider).collect();
        let (refused, resent) = (&all[all.len() - 2], &all[all.len() - 1]);
        assert_eq!((refused.status, resent.status / 100), (400, 2), "{provider:?}");
        assert_eq!(refused.body, resent.body, "{provider:?}: the same bytes");
        assert_eq!(refused.path, resent.path, "{provider:?}");
    }
    chat.assert_no_rejections();
}

pub async fn email_arrives_as_text_and_html_and_smtp_codes_decide(backend: Backend) {
    let app = TestApp::start_with(backend, |s| s.public_url = Some("https://dw.example".into())).await;
    let token = app.account("acme").await;
    let smtp = SmtpServer::with_auth("driftwatch", "smtp-password-42").await;
    let endpoint_id = create_endpoint(
        &app,
        &token,
        json!({"kind": "email", "url": format!("smtp://127.0.0.1:{}", smtp.port()),
               "settings": {"from": "driftwatch <dw@example.com>", "to": ["ops@example.com", "shop@example.com"], "security": "plain", "username": "driftwatch"},
               "secrets": {"password": "smtp-password-42"}}),
    )
    .await;
    let site = PageServer::start("<div id=price>Espresso machine. Price: 10 EUR</div>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url, "name": "Widget", "selector": "#price"})).await;
    let watch_id = watch["id"].as_str().expect("id");
    site.set("<div id=price>Espresso machine. Price: 12 EUR</div>");
    change(&app, &token, watch_id).await;

    let mail = smtp.wait_for(1, WAIT).await[0].clone();
    assert_eq!(mail.user.as_deref(), Some("driftwatch"), "authenticated");
    assert_eq!(
        (mail.from.as_str(), mail.to.clone()),
        ("dw@example.com", vec!["ops@example.com".to_owned(), "shop@example.com".to_owned()])
    );
    let parsed = mail.parsed();
    assert_eq!(parsed.subject, "Widget changed (+1 line / -1 line)");
    let text = parsed.text.expect("a text part");
    assert!(
        text.contains("- Espresso machine. Price: 10 EUR") && text.contains("+ Espresso machine. Price: 12 EUR"),
        "{text}"
    );
    assert!(text.contains(&format!("See the change: https://dw.example/watches/{watch_id}?from=")), "{text}");
    let html = parsed.html.expect("an HTML part");
    assert!(html.contains(">10</del>") && html.contains(">12</ins>"), "changed words are marked: {html}");
    assert!(html.contains(&format!("href=\"https://dw.example/watches/{watch_id}?from=")), "{html}");

    // 4xx is retried; 5xx is dead; the dead one redelivered is the same message.
    smtp.fail_next(1, 451);
    let id = send_test(&app, &token, &endpoint_id).await;
    assert_eq!(app.wait_delivery(&token, &id, "sent").await["attempts"], 2);
    smtp.fail_next(1, 550);
    let id = send_test(&app, &token, &endpoint_id).await;
    let dead = app.wait_delivery(&token, &id, "dead").await;
    assert_eq!(dead["attempts"], 1);
    assert!(dead["last_error"].as_str().is_some_and(|e| e.starts_with("SMTP 550")), "{dead}");
    let (status, redelivered) = app.post(&format!("/deliveries/{id}/redeliver"), &token, json!({})).await;
    assert_eq!((status, redelivered["status"].as_str()), (StatusCode::OK, Some("sent")), "{redelivered}");
    let refused = smtp.refused().last().cloned().expect("the refused message");
    assert_eq!(refused.0, 550);
    let last = smtp.messages().last().cloned().expect("the redelivered message");
    assert_eq!(last.raw, refused.1.raw, "byte for byte");

    // A wrong password is the server's 535: permanent.
    let (status, _) = app
        .call(
            reqwest::Method::PATCH,
            &format!("/endpoints/{endpoint_id}"),
            &token,
            Some(json!({"secrets": {"password": "wrong"}})),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let id = send_test(&app, &token, &endpoint_id).await;
    let dead = app.wait_delivery(&token, &id, "dead").await;
    assert!(dead["last_error"].as_str().is_some_and(|e| e.contains("535")), "{dead}");
}

pub async fn email_over_tls_trusts_the_configured_authority_only(backend: Backend) {
    let starttls = SmtpServer::with_starttls(Some(("driftwatch", "over-tls-7"))).await;
    let implicit = SmtpServer::with_implicit_tls(None).await;
    let stranger = SmtpServer::with_starttls(None).await;
    let ca = tempfile::NamedTempFile::new().expect("temp file");
    let bundle = format!("{}{}", starttls.certificate_pem().expect("pem"), implicit.certificate_pem().expect("pem"));
    std::fs::write(ca.path(), bundle).expect("write the CA bundle");
    let ca_path = ca.path().to_owned();
    let app = TestApp::start_with(backend, |s| s.smtp_ca_file = Some(ca_path)).await;
    let token = app.account("acme").await;
    let email = |smtp: &SmtpServer, security: &str, user: bool| {
        let mut settings = json!({"from": "dw@example.com", "to": ["ops@example.com"], "security": security});
        let mut body = json!({"kind": "email", "url": format!("smtp://127.0.0.1:{}", smtp.port())});
        if user {
            settings["username"] = json!("driftwatch");
            body["secrets"] = json!({"password": "over-tls-7"});
        }
        body["settings"] = settings;
        body
    };

    // STARTTLS with AUTH after it, and TLS from the first byte: both verified against the bundle.
    let id = create_endpoint(&app, &token, email(&starttls, "starttls", true)).await;
    let sent = app.wait_delivery(&token, &send_test(&app, &token, &id).await, "sent").await;
    assert_eq!(sent["attempts"], 1, "{sent}");
    let mail = starttls.wait_for(1, WAIT).await.remove(0);
    assert_eq!((mail.tls, mail.user.as_deref()), (true, Some("driftwatch")));
    let id = create_endpoint(&app, &token, email(&implicit, "tls", false)).await;
    app.wait_delivery(&token, &send_test(&app, &token, &id).await, "sent").await;
    assert!(implicit.wait_for(1, WAIT).await[0].tls);

    // A certificate nobody vouched for is a TLS failure, retried, and nothing is sent in clear.
    let id = create_endpoint(&app, &token, email(&stranger, "starttls", false)).await;
    let failed = app.wait_delivery(&token, &send_test(&app, &token, &id).await, "dead").await;
    assert!(failed["attempts"].as_i64() > Some(1), "retried until the attempts ran out: {failed}");
    let attempts = failed["attempt_log"].as_array().expect("attempt log");
    assert!(attempts.iter().all(|a| a["error_kind"] == "tls"), "{failed}");
    assert!(failed["last_error"].as_str().is_some_and(|e| e.contains("certificate verify failed")), "{failed}");
    assert!(stranger.messages().is_empty());
}

pub async fn routes_and_mute_decide_who_is_told(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let chat = ChatServer::start().await;
    let shop_page = PageServer::start("<p>shop 1</p>").await;
    let blog_page = PageServer::start("<p>blog 1</p>").await;
    let shop = app.watch_with_baseline(&token, json!({"url": shop_page.url, "name": "Shop", "tags": ["shop"]})).await;
    let blog = app.watch_with_baseline(&token, json!({"url": blog_page.url, "name": "Blog"})).await;
    let (shop_id, blog_id) = (shop["id"].as_str().expect("id"), blog["id"].as_str().expect("id"));
    let http = |path: &str, route: Value| json!({"kind": "http", "url": chat.url(path), "route": route});
    let to_shop = create_endpoint(&app, &token, http("/hook/shop", json!({"tags": ["SHOP"]}))).await;
    let to_all = create_endpoint(&app, &token, http("/hook/all", Value::Null)).await;
    let to_blog = create_endpoint(&app, &token, http("/hook/blog", json!({"watches": [blog_id]}))).await;

    // Routes name the account's own watches only.
    let other = app.account("globex").await;
    let (status, problem) = app.post("/endpoints", &other, http("/hook/x", json!({"watches": [blog_id]}))).await;
    assert_eq!(
        (status, problem["errors"][0]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("route.watches[0]"))
    );

    let delivered_to = |w: Value| -> Vec<String> {
        w["delivered_to"]
            .as_array()
            .expect("delivered_to")
            .iter()
            .map(|e| e["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(
        delivered_to(app.ok(&format!("/watches/{shop_id}"), &token).await),
        vec![to_shop.clone(), to_all.clone()]
    );
    assert_eq!(
        delivered_to(app.ok(&format!("/watches/{blog_id}"), &token).await),
        vec![to_all.clone(), to_blog.clone()]
    );

    shop_page.set("<p>shop 2</p>");
    blog_page.set("<p>blog 2</p>");
    change(&app, &token, shop_id).await;
    change(&app, &token, blog_id).await;
    let count = |path: &str| chat.received().iter().filter(|r| r.path == path).count();
    chat.wait_for(Provider::Generic, 4, WAIT).await;
    assert_eq!((count("/hook/shop"), count("/hook/all"), count("/hook/blog")), (1, 2, 1));

    // Muted: checked and recorded, nothing queued.
    let (status, muted) =
        app.call(reqwest::Method::PATCH, &format!("/watches/{shop_id}"), &token, Some(json!({"muted": true}))).await;
    assert_eq!((status, muted["muted"].as_bool()), (StatusCode::OK, Some(true)));
    assert_eq!(delivered_to(app.ok(&format!("/watches/{shop_id}"), &token).await), Vec::<String>::new());
    shop_page.set("<p>shop 3</p>");
    let run = app.check(&token, shop_id).await;
    assert_eq!(run["outcome"], "changed");
    let event_id = run["event_id"].as_str().expect("the change is recorded as an event");
    let queued = app.ok(&format!("/deliveries?watch_id={shop_id}"), &token).await;
    let for_event = queued["items"].as_array().expect("items").iter().filter(|d| d["event_id"] == event_id).count();
    assert_eq!(for_event, 0, "a muted watch queues nothing");

    // Routing back to every watch.
    let (status, endpoint) =
        app.call(reqwest::Method::PATCH, &format!("/endpoints/{to_blog}"), &token, Some(json!({"route": null}))).await;
    assert_eq!((status, &endpoint["route"]), (StatusCode::OK, &Value::Null));
}

pub async fn templates_are_checked_at_save_and_failures_dead_letter(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let chat = ChatServer::start().await;
    let url = chat.url("/hook/t");
    for (template, field, message) in [
        ("{\"a\": 1}\n{{ watch.name }", "body_template", "line 2, column"),
        (
            "Hello {{ watch.nmae }}",
            "body_template",
            "line 1, column 10: unknown variable `watch.nmae`: did you mean `watch.name`?",
        ),
        ("{% for x in diff.lines %}", "body_template", "syntax error"),
    ] {
        let (status, problem) =
            app.post("/endpoints", &token, json!({"kind": "http", "url": url, field: template})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert_eq!(problem["errors"][0]["field"], field, "{problem}");
        let said = problem["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(said.contains(message), "{said}");
    }
    let (status, problem) = app.post("/endpoints", &token, json!({"url": url, "title_template": "x"})).await;
    assert_eq!(
        (status, problem["errors"][0]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("title_template"))
    );

    // Fine on the sample (one removed line), broken on a change that only adds.
    let ratio = "{{ diff.added // diff.removed }}";
    let endpoint = create_endpoint(&app, &token, json!({"kind": "http", "url": url, "body_template": ratio})).await;
    let site = PageServer::start("<p>one</p>").await;
    let watch = app.watch_with_baseline(&token, json!({"url": site.url})).await;
    let watch_id = watch["id"].as_str().expect("id");
    site.set("<p>one</p><p>two</p>");
    change(&app, &token, watch_id).await;
    let dead = app.ok(&format!("/dlq?endpoint_id={endpoint}"), &token).await;
    let delivery = &dead["items"][0];
    assert_eq!(delivery["attempts"], 0, "never sent: {dead}");
    assert!(delivery["last_error"].as_str().is_some_and(|e| e.starts_with("template: line 1")), "{dead}");
    assert_eq!(chat.received().len(), 0);
}

pub async fn secrets_are_encrypted_at_rest_and_survive_a_key_rotation(backend: Backend) {
    use diesel::prelude::*;
    use driftwatch_store::schema::endpoints;

    let chat = ChatServer::start().await;
    let db = driftwatch_test_support::TestDb::new(backend);
    let mut settings = crate::support::test_settings(&db);
    // SQLite with no key configured: a key file beside the database, created now.
    if backend == Backend::Sqlite {
        settings.secret_key = None;
    }
    let roles = driftwatch::Roles { web: true, background: true };
    let test = TestApp::from_app(driftwatch::App::start(&settings, roles).await.expect("starts"));
    let token = test.account("acme").await;
    let telegram = json!({"kind": "telegram", "url": chat.base_url(), "settings": {"chat_id": 7}, "secrets": {"bot_token": BOT_TOKEN}});
    let endpoint_id = create_endpoint(&test, &token, telegram).await;

    // An endpoint written before encryption, its secrets in plaintext.
    let app = test.into_app();
    let store = app.store.clone();
    store
        .write(move |c| {
            let account = driftwatch_store::accounts::create_account(c, "legacy", chrono::Utc::now().naive_utc())?;
            let mut e =
                driftwatch_store::Endpoint::webhook(&account.id, "http://127.0.0.1:9/", chrono::Utc::now().naive_utc());
            e.kind = "telegram".into();
            e.secret = "whsec_plaintext-legacy-signing".into();
            e.secrets = Some(format!("{{\"bot_token\":\"{BOT_TOKEN}-legacy\"}}"));
            driftwatch_store::endpoints::insert_endpoint(c, &e)
        })
        .await
        .expect("legacy endpoint");
    app.shutdown().await;

    let stored = |store: driftwatch_store::Store| async move {
        store
            .read(|c| {
                Ok(endpoints::table
                    .select((endpoints::secret, endpoints::secrets))
                    .load::<(String, Option<String>)>(c)?)
            })
            .await
            .expect("read")
    };
    // Started again: the plaintext left from before is sealed.
    let app = driftwatch::App::start(&settings, roles).await.expect("restarts");
    let rows = stored(app.store.clone()).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows.iter().filter(|(secret, _)| secret.is_empty()).count(), 1, "only the legacy one has a secret");
    for (secret, secrets) in &rows {
        // A telegram endpoint made now has no signing secret (its requests are not signed).
        assert!(secret.is_empty() || secret.starts_with("dwenc:v1:"), "{secret}");
        let secrets = secrets.as_deref().expect("secrets");
        assert!(secrets.starts_with("dwenc:v1:") && !secrets.contains("SECRET"), "{secrets}");
    }
    if backend == Backend::Sqlite {
        let path = db.url.trim_start_matches("sqlite://").to_owned();
        assert!(std::path::Path::new(&format!("{path}.key")).exists(), "the key file beside the database");
        for file in [path.clone(), format!("{path}-wal")] {
            let bytes = std::fs::read(&file).unwrap_or_default();
            assert!(!bytes.windows(BOT_TOKEN.len()).any(|w| w == BOT_TOKEN.as_bytes()), "{file} holds the token");
        }
    }
    let test = TestApp::from_app(app);
    let id = send_test(&test, &token, &endpoint_id).await;
    test.wait_delivery(&token, &id, "sent").await;
    let app = test.into_app();

    // Rotate: a new key, the old one as previous; every secret is sealed again under the new
    // one, and a server holding only the new key still delivers.
    let new_key = driftwatch_core::SecretKey::generate().to_base64();
    let mut rotated = settings.clone();
    match backend {
        Backend::Sqlite => {}
        Backend::Postgres => {
            rotated.previous_secret_keys = vec![settings.secret_key.clone().expect("a key")];
            rotated.secret_key = Some(new_key.clone());
        }
    }
    let report = driftwatch::keys::rotate(&rotated, &app.store).await.expect("rotates");
    assert_eq!(report.endpoints, 2, "both endpoints sealed again");
    app.shutdown().await;
    let mut only_new = rotated.clone();
    only_new.previous_secret_keys = Vec::new();
    let app = driftwatch::App::start(&only_new, roles).await.expect("new key");
    for (secret, secrets) in stored(app.store.clone()).await {
        assert!(secret.is_empty() || secret.starts_with(&format!("dwenc:v1:{}:", report.key_id)), "{secret}");
        assert!(secrets.is_some_and(|s| s.starts_with(&format!("dwenc:v1:{}:", report.key_id))));
    }
    let test = TestApp::from_app(app);
    let id = send_test(&test, &token, &endpoint_id).await;
    test.wait_delivery(&token, &id, "sent").await;
    assert_eq!(chat.accepted(Provider::Telegram).len(), 2);
    chat.assert_no_rejections();
    drop(test);
    drop(db);
}

pub async fn apprise_urls_become_endpoints(backend: Backend) {
    let app = TestApp::start(backend).await;
    let token = app.account("acme").await;
    let chat = ChatServer::start().await;
    let host = chat.addr().to_string();
    chat.expect_gotify_token("AbCdEf123");
    for (apprise, kind, provider) in [
        (format!("ntfy://{host}/shop-alerts"), "ntfy", Provider::Ntfy),
        (format!("gotify://{host}/AbCdEf123"), "gotify", Provider::Gotify),
        (format!("json://{host}/hook/n8n"), "http", Provider::Generic),
        // Apprise names the hook's key only: mmost://host/key (the /hooks/ path is Mattermost's).
        (
            format!("mmost://{host}/{}?channel=shop-alerts", MATTERMOST_HOOK.trim_start_matches("/hooks/")),
            "mattermost",
            Provider::Mattermost,
        ),
    ] {
        let (status, created) = app.post("/endpoints/import", &token, json!({"apprise_url": apprise})).await;
        assert_eq!((status, created["kind"].as_str()), (StatusCode::CREATED, Some(kind)), "{created}");
        let id = send_test(&app, &token, created["id"].as_str().expect("id")).await;
        app.wait_delivery(&token, &id, "sent").await;
        assert_eq!(chat.accepted(provider).len(), 1, "{kind}");
    }
    chat.assert_no_rejections();
    let (status, problem) =
        app.post("/endpoints/import", &token, json!({"apprise_url": "slack://TokenA/TokenB/TokenC/#general"})).await;
    assert_eq!(
        (status, problem["errors"][0]["field"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("apprise_url"))
    );
    let said = problem["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(said.contains("slack://") && !said.contains("TokenB"), "names the scheme, never the secret: {said}");
}
