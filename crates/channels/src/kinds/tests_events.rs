//! Every kind's message for the events told on the reader's time: a digest, and
//! `expectation.missed` / `expectation.met`.

use driftwatch_core::EventType;
use serde_json::Value;

use super::tests::rows;
use super::*;
use crate::digest::fixtures::{digest, expectation, lamp_change, three_over_two};
use crate::message::escape_html;
use crate::outgoing::request;
use crate::settings::validate;

const PUBLIC: &str = "https://dw.example";

/// What each kind says for `payload` without templates, as text to search: the preview (for
/// email, its subject and plain part; for JSON kinds, the JSON indented).
fn said_by_each_kind(payload: &str) -> Vec<(EndpointKind, String, Vec<u8>)> {
    let event_type = serde_json::from_str::<Value>(payload).expect("json")["type"].as_str().expect("type").to_owned();
    let context = Context::new("evt_1", &event_type, payload, "", Some(PUBLIC));
    rows()
        .into_iter()
        .map(|row| {
            let (settings, _) = validate(row.kind, row.url, Some(&row.settings), Some(&row.secrets))
                .unwrap_or_else(|e| panic!("{}: {e}", row.kind));
            let message = Message {
                endpoint_id: "end_1",
                settings: &settings,
                context: &context,
                templates: Templates::default(),
            };
            let body = row.kind.kind().message(message).unwrap_or_else(|e| panic!("{}: {e}", row.kind));
            let preview = row.kind.kind().preview(message).unwrap_or_else(|e| panic!("{}: {e}", row.kind));
            // JSON strings escape nothing a name or a link holds here; read them back anyway.
            let text = serde_json::from_slice::<Value>(&body).map_or(preview, |v| strings(&v).join("\n"));
            (row.kind, text, body)
        })
        .collect()
}

/// Every string in a JSON value.
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// Whether `text` holds `needle` as written or HTML-escaped.
fn holds(text: &str, needle: &str) -> bool {
    text.contains(needle) || text.contains(&escape_html(needle))
}

#[test]
fn every_kind_names_each_watch_of_a_digest_and_links_it() {
    let payload = three_over_two("Status page");
    for (kind, text, body) in said_by_each_kind(&payload) {
        if matches!(kind, EndpointKind::Webhook | EndpointKind::Http) {
            // The payload as it is: the array of events, each whole.
            assert_eq!(body, payload.as_bytes(), "{kind}");
            let sent: Value = serde_json::from_slice(&body).expect("json");
            assert_eq!(sent["data"]["events"].as_array().map(Vec::len), Some(3), "{kind}");
            continue;
        }
        for needle in
            ["Lamp", "Status page", "https://dw.example/watches/wat_lamp", "https://dw.example/watches/wat_status"]
        {
            assert!(holds(&text, needle), "{kind} lacks {needle}: {text}");
        }
        assert!(text.contains("Lamp changed: +2 lines / -1 line; price 89.99 → 67.00 EUR"), "{kind}: {text}");
        assert!(text.contains("driftwatch digest: 3 changes on 2 watches"), "{kind}: {text}");
    }
}

#[test]
fn a_digest_goes_to_webhooks_as_it_is_signed_the_same_way() {
    let payload = three_over_two("Status page");
    let channels = crate::Channels::new(Some(PUBLIC.to_owned()));
    let to = driftwatch_core::render::Recipient {
        id: "end_1",
        kind: "webhook",
        settings: "{}",
        title_template: None,
        body_template: None,
    };
    let event = driftwatch_core::render::EventRef { id: "evt_d1", event_type: "digest", payload: &payload };
    let body = driftwatch_core::render::Render::body(&channels, &to, event, Default::default()).expect("renders");
    assert_eq!(body, payload.as_bytes());
    let sent = request(
        EndpointKind::Webhook,
        "https://h.example/in",
        &Settings::default(),
        &Secrets::default(),
        "dlv_1",
        &body,
    )
    .expect("request");
    assert!(sent.signed && sent.body.as_ref() == payload.as_bytes());
}

#[test]
fn every_kind_says_nothing_changed_and_what_it_left_out() {
    for (kind, text, _) in said_by_each_kind(&digest(&[], 0, 0, None)) {
        if matches!(kind, EndpointKind::Webhook | EndpointKind::Http) {
            continue;
        }
        assert!(text.contains("nothing changed"), "{kind}: {text}");
        assert!(text.contains("Nothing changed between Mon 7 Dec 08:00 and Tue 8 Dec 08:00 UTC"), "{kind}: {text}");
    }
    let cut = digest(&[lamp_change()], 5, 4, Some("The lamp got cheaper."));
    for (kind, text, _) in said_by_each_kind(&cut) {
        if matches!(kind, EndpointKind::Webhook | EndpointKind::Http) {
            continue;
        }
        assert!(text.contains("and 4 more events not shown"), "{kind}: {text}");
        assert!(text.contains("The lamp got cheaper."), "{kind}: {text}");
    }
}

#[test]
fn every_kind_tells_an_expectation_with_the_watch_and_the_rule() {
    for event_type in [EventType::ExpectationMissed, EventType::ExpectationMet] {
        for (kind, text, _) in said_by_each_kind(&expectation(event_type)) {
            assert!(text.contains("Status page"), "{kind} {event_type}: {text}");
            assert!(text.contains("a change within 7 days"), "{kind} {event_type}: {text}");
            if !matches!(kind, EndpointKind::Webhook | EndpointKind::Http) {
                let words = match event_type {
                    EventType::ExpectationMissed => "did not change within 7 days (deadline Mon 14 Dec 10:00 UTC",
                    _ => "changed again as expected",
                };
                assert!(text.contains(words), "{kind} {event_type}: {text}");
            }
        }
    }
    let slack: Value =
        serde_json::from_str(&slack_message(&expectation(EventType::ExpectationMissed))).expect("slack json");
    assert!(slack["text"].as_str().is_some_and(|t| t.contains("Expected: a change within 7 days")), "{slack}");
}

#[test]
fn the_digest_email_has_a_heading_per_watch_and_escapes_names() {
    let payload = three_over_two("Status <script>alert(1)</script>");
    let context = Context::new("evt_d1", "digest", &payload, "", Some(PUBLIC));
    let settings = Settings::parse(r#"{"from":"dw@example.com","to":["ops@example.com"]}"#);
    let message =
        Message { endpoint_id: "end_1", settings: &settings, context: &context, templates: Templates::default() };
    let raw = String::from_utf8(EndpointKind::Email.kind().message(message).expect("builds")).expect("utf-8");
    assert!(raw.contains("Subject: driftwatch digest: 3 changes on 2 watches"), "{raw}");
    assert!(raw.contains("multipart/alternative") && raw.contains("text/html"), "{raw}");
    let html = crate::digest::email::html(&context, "driftwatch digest");
    assert_eq!(html.matches("<h2").count(), 2, "{html}");
    assert!(!html.contains("<script>") && html.contains("&lt;script&gt;"), "{html}");
}

#[test]
fn chat_kinds_keep_a_big_digest_within_their_limits() {
    let events: Vec<String> = (0..300).map(|_| lamp_change()).collect();
    let payload = digest(&events, 300, 0, None);
    for (kind, _, body) in said_by_each_kind(&payload) {
        let value: Value = match serde_json::from_slice(&body) {
            Ok(value) => value,
            Err(_) => continue,
        };
        let longest = |key: &str| value.pointer(key).and_then(Value::as_str).map_or(0, |s| s.chars().count());
        match kind {
            EndpointKind::Discord => assert!(longest("/embeds/0/description") <= 4096, "{kind}"),
            EndpointKind::Telegram => assert!(longest("/text") <= 4096, "{kind}"),
            EndpointKind::Mattermost => assert!(longest("/text") <= 16_383, "{kind}"),
            EndpointKind::Pushover => assert!(longest("/message") <= 1024, "{kind}"),
            EndpointKind::Ntfy => assert!(value["message"].as_str().is_some_and(|m| m.len() <= 4096), "{kind}"),
            EndpointKind::Slack => {
                let blocks = value["blocks"].as_array().expect("blocks");
                assert!(blocks.len() <= 50, "{kind}: {}", blocks.len());
                assert!(blocks.iter().all(|b| b["text"]["text"].as_str().is_none_or(|t| t.chars().count() <= 3000)));
            }
            _ => {}
        }
        if !matches!(kind, EndpointKind::Webhook | EndpointKind::Http | EndpointKind::Slack) {
            assert!(strings(&value).join("\n").contains("more events not shown"), "{kind}");
        }
    }
}

#[test]
fn templates_read_digest_items_and_the_expectation() {
    let source = "{{ expectation.rule }}|{{ digest.count }}|{% for i in digest.items %}{{ i.watch.name }}: {{ i.summary }} <{{ i.link }}> +{{ i.added }};{% endfor %}|{% for w in digest.watches %}{{ w.name }}={{ w.count }};{% endfor %}";
    crate::template::check(source, &Context::sample(None)).expect("every name is documented");
    let digest = Context::new("evt_d1", "digest", &three_over_two("Status page"), "", Some(PUBLIC));
    let out = crate::template::render(source, &digest).expect("renders");
    assert!(out.starts_with("|3|Lamp: Lamp changed: +2 lines / -1 line; price 89.99 → 67.00 EUR <https://dw.example/watches/wat_lamp?from=snp_1&to=snp_2> +2;"), "{out}");
    assert!(out.ends_with("|Lamp=2;Status page=1;"), "{out}");
    let missed = Context::new("evt_x1", "expectation.missed", &expectation(EventType::ExpectationMissed), "", None);
    let out = crate::template::render(source, &missed).expect("renders");
    assert_eq!(out, "a change within 7 days|0||");
}
