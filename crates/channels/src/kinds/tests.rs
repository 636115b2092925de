//! The kinds table: one row per kind, and what every kind must do.

use serde_json::{Value, json};

use super::*;
use crate::outgoing::{request, retry_after_in_body};
use crate::settings::validate;
use std::time::Duration;

/// One kind as a test sets it up: a valid URL, settings and secrets, and where its request goes.
pub(super) struct Row {
    pub(super) kind: EndpointKind,
    pub(super) url: &'static str,
    pub(super) settings: Value,
    pub(super) secrets: Value,
    /// The method and URL of its request (empty for SMTP).
    pub(super) sends: (&'static str, &'static str),
}

pub(super) fn rows() -> Vec<Row> {
    let row = |kind, url, settings, secrets, sends| Row { kind, url, settings, secrets, sends };
    let t30 = "t".repeat(30);
    let u30 = "u".repeat(30);
    vec![
        row(EndpointKind::Webhook, "https://h.example/in", json!({}), json!({}), ("POST", "https://h.example/in")),
        row(
            EndpointKind::Slack,
            "https://hooks.slack.com/x",
            json!({}),
            json!({}),
            ("POST", "https://hooks.slack.com/x"),
        ),
        row(
            EndpointKind::Email,
            "smtp://mail.example:587",
            json!({"from": "dw@example.com", "to": ["ops@example.com"]}),
            json!({}),
            ("", ""),
        ),
        row(
            EndpointKind::Discord,
            "https://discord.com/api/webhooks/1/t",
            json!({}),
            json!({}),
            ("POST", "https://discord.com/api/webhooks/1/t?wait=true"),
        ),
        row(
            EndpointKind::Telegram,
            "https://api.telegram.org/",
            json!({"chat_id": -100}),
            json!({"bot_token": "123:abc"}),
            ("POST", "https://api.telegram.org/bot123:abc/sendMessage"),
        ),
        row(
            EndpointKind::Teams,
            "https://teams.example/wf",
            json!({}),
            json!({}),
            ("POST", "https://teams.example/wf"),
        ),
        row(
            EndpointKind::Mattermost,
            "https://mm.example/hooks/abc",
            json!({"channel": "town-square"}),
            json!({}),
            ("POST", "https://mm.example/hooks/abc"),
        ),
        row(EndpointKind::Ntfy, "https://ntfy.sh", json!({"topic": "t"}), json!({}), ("POST", "https://ntfy.sh/")),
        row(
            EndpointKind::Pushover,
            "https://api.pushover.net",
            json!({}),
            json!({"token": t30, "user_key": u30}),
            ("POST", "https://api.pushover.net/1/messages.json"),
        ),
        row(
            EndpointKind::Gotify,
            "https://g.example",
            json!({}),
            json!({"token": "app"}),
            ("POST", "https://g.example/message"),
        ),
        row(
            EndpointKind::Matrix,
            "https://m.example",
            json!({"room_id": "!room:example.org"}),
            json!({"access_token": "syt_x"}),
            ("PUT", "https://m.example/_matrix/client/v3/rooms/%21room%3Aexample.org/send/m.room.message/dlv_1"),
        ),
        row(
            EndpointKind::Http,
            "https://n8n.example/hook",
            json!({"method": "PUT"}),
            json!({"headers": {"Authorization": "Bearer x"}}),
            ("PUT", "https://n8n.example/hook"),
        ),
    ]
}

#[test]
fn every_kind_has_a_row_and_each_row_validates_renders_and_sends() {
    let rows = rows();
    for kind in EndpointKind::ALL {
        assert!(rows.iter().any(|r| r.kind == *kind), "{kind} has no row in the kinds table");
    }
    let context = Context::sample(Some("https://dw.example"));
    for row in rows {
        let kind = row.kind;
        assert_eq!(kind.as_str().parse::<EndpointKind>().ok(), Some(kind));
        let (settings, secrets) =
            validate(kind, row.url, Some(&row.settings), Some(&row.secrets)).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let message =
            Message { endpoint_id: "end_1", settings: &settings, context: &context, templates: Templates::default() };
        let body = kind.kind().message(message).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(!body.is_empty(), "{kind}: an empty body");
        kind.kind().preview(message).unwrap_or_else(|e| panic!("{kind} preview: {e}"));
        let sent = request(kind, row.url, &settings, &secrets, "dlv_1", &body);
        match kind.spec().transport {
            Transport::Smtp => assert!(sent.is_err(), "{kind} goes by SMTP"),
            Transport::Http => {
                let sent = sent.unwrap_or_else(|e| panic!("{kind}: {e}"));
                assert_eq!((sent.method, sent.url.as_str()), row.sends, "{kind}");
                assert_eq!(sent.signed, kind.spec().signed, "{kind}");
            }
        }
        for field in kind.spec().fields {
            assert!(!field.label.is_empty() && !field.key.is_empty(), "{kind}: a field without a label");
        }
        assert!(!kind.spec().label.is_empty() && !kind.spec().url_hint.is_empty(), "{kind}");
    }
}

#[test]
fn each_kind_names_the_field_at_fault() {
    let v = |kind, url, s: Value, x: Value| validate(kind, url, Some(&s), Some(&x)).map(|_| ()).map_err(|e| e.field);
    assert_eq!(
        v(EndpointKind::Telegram, "https://api.telegram.org", json!({}), json!({})),
        Err("settings.chat_id".into())
    );
    assert_eq!(
        v(EndpointKind::Telegram, "https://api.telegram.org", json!({"chat_id": -100}), json!({})),
        Err("secrets.bot_token".into())
    );
    assert!(v(EndpointKind::Telegram, "u", json!({"chat_id": "@news"}), json!({"bot_token": "1:x"})).is_ok());
    assert_eq!(
        v(EndpointKind::Telegram, "u", json!({"chat_id": "news"}), json!({"bot_token": "1:x"})),
        Err("settings.chat_id".into())
    );
    assert_eq!(v(EndpointKind::Ntfy, "u", json!({"topic": "a b"}), json!({})), Err("settings.topic".into()));
    assert_eq!(
        v(EndpointKind::Ntfy, "u", json!({"topic": "ab", "colour": 1}), json!({})),
        Err("settings.colour".into())
    );
    assert_eq!(v(EndpointKind::Discord, "u", json!({}), json!({"token": "x"})), Err("secrets.token".into()));
    assert_eq!(
        v(EndpointKind::Pushover, "u", json!({}), json!({"token": "short", "user_key": "u".repeat(30)})),
        Err("secrets.token".into())
    );
    assert_eq!(
        v(EndpointKind::Matrix, "u", json!({"room_id": "#alias:x"}), json!({"access_token": "t"})),
        Err("settings.room_id".into())
    );
    let email = |s: Value, url| v(EndpointKind::Email, url, s, json!({}));
    assert_eq!(
        email(json!({"from": "a@b.example", "to": ["nope"]}), "smtp://mail.example:587"),
        Err("settings.to[0]".into())
    );
    assert_eq!(email(json!({"from": "a@b.example", "to": ["c@d.example"]}), "https://mail.example"), Err("url".into()));
    assert_eq!(
        email(json!({"from": "a@b.example", "to": ["c@d.example"], "security": "ssl"}), "smtp://m.example"),
        Err("settings.security".into())
    );
    assert_eq!(
        v(EndpointKind::Http, "u", json!({"headers": {"Host": "x"}}), json!({})),
        Err("settings.headers.Host".into())
    );
    assert_eq!(
        v(EndpointKind::Http, "u", json!({}), json!({"headers": {"Authorization": "a\r\nb"}})),
        Err("secrets.headers.Authorization".into())
    );
    assert_eq!(v(EndpointKind::Http, "u", json!([]), json!({})), Err("settings".into()));
    assert_eq!(
        v(EndpointKind::Mattermost, "u", json!({"channel": "two words"}), json!({})),
        Err("settings.channel".into())
    );
}

fn big_context() -> Context {
    let old: String = (0..3000).map(|i| format!("old line {i} with some words\n")).collect();
    let new: String = (0..3000).map(|i| format!("new line {i} with other words\n")).collect();
    let change = driftwatch_diff::diff_texts(&old, &new, "a", "b");
    let payload = driftwatch_alert::change_payload(
        "evt_1",
        driftwatch_alert::WatchRef { id: "wat_1", name: "Big <page>", url: "https://example.com/" },
        &change,
        driftwatch_alert::SnapshotPair { previous: "a", current: "b" },
        chrono::Utc::now(),
    );
    Context::new("evt_1", "change.detected", &payload, "", Some("https://dw.example"))
}

fn json_of(kind: EndpointKind, settings: Value) -> Value {
    let settings = Settings::parse(&settings.to_string());
    let context = big_context();
    let message =
        Message { endpoint_id: "end_1", settings: &settings, context: &context, templates: Templates::default() };
    serde_json::from_slice(&kind.kind().message(message).expect("renders")).expect("json")
}

#[test]
fn long_diffs_are_cut_to_each_providers_limits() {
    let discord = json_of(EndpointKind::Discord, json!({}));
    let description = discord["embeds"][0]["description"].as_str().expect("description");
    assert!(description.chars().count() <= 4096 && description.contains("more lines"), "{description}");
    let telegram = json_of(EndpointKind::Telegram, json!({"chat_id": 5}));
    let text = telegram["text"].as_str().expect("text");
    assert!(text.contains("more lines") && text.contains("&lt;page&gt;"), "{text}");
    let ntfy = json_of(EndpointKind::Ntfy, json!({"topic": "t"}));
    assert!(ntfy["message"].as_str().expect("message").len() <= 4096);
    let pushover = json_of(EndpointKind::Pushover, json!({}));
    assert!(pushover["message"].as_str().expect("message").chars().count() <= 1024);
    assert!(pushover["message"].as_str().expect("message").contains("more lines"));
    let teams = json_of(EndpointKind::Teams, json!({}));
    assert_eq!(teams["attachments"][0]["content"]["type"], "AdaptiveCard");
    let mattermost = json_of(EndpointKind::Mattermost, json!({"username": "dw"}));
    let text = mattermost["text"].as_str().expect("text");
    assert!(text.chars().count() <= 16_383 && text.starts_with("#### Big <page> changed") && text.contains("```diff"));
    assert_eq!(mattermost["username"], "dw");
}

#[test]
fn templates_replace_the_default_text() {
    let context = Context::sample(None);
    let render = |kind: EndpointKind, settings: Value, templates| {
        let settings = Settings::parse(&settings.to_string());
        kind.kind().message(Message { endpoint_id: "end_1", settings: &settings, context: &context, templates })
    };
    let templates = Templates { title: Some("{{ watch.name|upper }}"), body: Some("{{ diff.added }} new") };
    let body = render(EndpointKind::Ntfy, json!({"topic": "t"}), templates).expect("renders");
    let value: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!((value["title"].as_str(), value["message"].as_str()), (Some("COFFEE SHOP"), Some("2 new")));
    let http = render(EndpointKind::Http, json!({}), Templates { title: None, body: Some("name={{ watch.name }}") });
    assert_eq!(http.expect("http"), b"name=Coffee shop");
    let broken = render(EndpointKind::Discord, json!({}), Templates { title: None, body: Some("{{ payload.x.y }}") });
    assert!(broken.expect_err("render fails").starts_with("line 1"));
}

#[test]
fn pushover_merges_its_credentials_and_a_missing_secret_is_named() {
    let settings = Settings::default();
    let secrets = Secrets::parse(&json!({"token": "t".repeat(30), "user_key": "u".repeat(30)}).to_string());
    let pushover = request(
        EndpointKind::Pushover,
        "https://api.pushover.net",
        &settings,
        &secrets,
        "dlv_1",
        br#"{"message":"m"}"#,
    )
    .expect("pushover");
    let sent: Value = serde_json::from_slice(&pushover.body).expect("json");
    assert_eq!((sent["message"].as_str(), sent["user"].as_str()), (Some("m"), Some("u".repeat(30).as_str())));
    let missing = request(EndpointKind::Gotify, "https://g.example", &settings, &Secrets::default(), "dlv_1", b"{}");
    assert!(missing.expect_err("no token").contains("token"));
}

#[test]
fn reads_throttling_from_each_providers_body() {
    let wait = |kind, body| retry_after_in_body(kind, 429, body);
    assert_eq!(
        wait(EndpointKind::Discord, r#"{"retry_after": 1.5, "global": false}"#),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        wait(EndpointKind::Telegram, r#"{"ok":false,"error_code":429,"parameters":{"retry_after":7}}"#),
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        wait(EndpointKind::Matrix, r#"{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":2000}"#),
        Some(Duration::from_secs(2))
    );
    assert_eq!(wait(EndpointKind::Discord, "not json"), None);
    assert_eq!(retry_after_in_body(EndpointKind::Discord, 500, r#"{"retry_after": 1}"#), None);
    assert_eq!(wait(EndpointKind::Discord, r#"{"retry_after": -1}"#), None);
}

#[test]
fn mattermost_apprise_urls_become_endpoints() {
    let imported = crate::apprise::parse("mmost://dwbot@chat.example.com/abc123?channel=%23alerts").expect("imports");
    assert_eq!(imported.kind, EndpointKind::Mattermost);
    assert_eq!(imported.url, "http://chat.example.com:8065/hooks/abc123");
    assert_eq!(imported.settings, json!({"channel": "alerts", "username": "dwbot"}));
    let secure = crate::apprise::parse("mmosts://chat.example.com/mm/abc123").expect("imports");
    assert_eq!(secure.url, "https://chat.example.com/mm/hooks/abc123");
    assert!(crate::apprise::parse("mmost://chat.example.com").is_err());
}

#[test]
fn the_api_schema_lists_every_kind_from_its_spec() {
    let schema = serde_json::to_value(<EndpointKind as utoipa::PartialSchema>::schema()).expect("json");
    let names: Vec<&str> = schema["enum"].as_array().expect("enum").iter().filter_map(Value::as_str).collect();
    assert_eq!(names, EndpointKind::ALL.iter().map(|k| k.as_str()).collect::<Vec<_>>());
    let description = schema["description"].as_str().expect("description");
    assert!(description.contains("`mattermost`: Mattermost"), "{description}");
    assert!(fields_description().contains("`settings.topic` (Topic, required)"));
    assert_eq!(EndpointKind::Http.form_name(&EndpointKind::Http.spec().fields[3]), "http_secret_headers");
    assert_eq!(EndpointKind::of_apprise_scheme("tgram"), Some(EndpointKind::Telegram));
}
