use driftwatch_core::EventType;

use super::fixtures::*;
use super::*;
use crate::message::{default_text, expectation_sentence};

fn ctx(payload: &str, public: Option<&str>) -> Context {
    let event_type = serde_json::from_str::<Value>(payload).ok().and_then(|v| v["type"].as_str().map(str::to_owned));
    Context::new("evt_d1", &event_type.unwrap_or_default(), payload, "", public)
}

#[test]
fn groups_by_watch_in_order_of_first_appearance() {
    let context = ctx(&three_over_two("Status page"), Some("https://dw.example"));
    let digest = &context.digest;
    assert_eq!(digest.items.len(), 3);
    let names: Vec<(&str, usize)> = digest.watches.iter().map(|w| (w.name.as_str(), w.count)).collect();
    assert_eq!(names, [("Lamp", 2), ("Status page", 1)]);
    assert_eq!(digest.watches[0].link, "https://dw.example/watches/wat_lamp");
    assert_eq!(digest.watches[1].link, "https://dw.example/watches/wat_status", "one event: its own link");
    assert_eq!(digest.items[0].summary, "Lamp changed: +2 lines / -1 line; price 89.99 → 67.00 EUR");
    assert_eq!((digest.items[0].added, digest.items[0].removed), (2, 1));
    assert_eq!(digest.items[0].added_lines, ["Price 67.00", "New colours"]);
    assert!(digest.items[0].link.starts_with("https://dw.example/watches/wat_lamp?from=snp_1"));
    assert_eq!(title(digest), "driftwatch digest: 3 changes on 2 watches");
    assert_eq!(context.summary, "3 changes on 2 watches between Mon 7 Dec 08:00 and Tue 8 Dec 08:00 UTC");
    let plain = ctx(&three_over_two("Status page"), None);
    assert_eq!(plain.digest.watches[0].link, "https://shop.example/lamp", "without a public URL: the page");
    assert_eq!(plain.link, "");
}

#[test]
fn a_malformed_item_is_skipped_never_a_panic() {
    let events = [
        lamp_change(),
        "not json".to_owned(),
        r#"{"type":"change.detected","timestamp":"x","data":{}}"#.to_owned(),
        r#"{"type":"nope"}"#.to_owned(),
        "42".to_owned(),
        three_over_two("Nested"),
    ];
    let context = ctx(&digest(&events, 1, 0, None), None);
    assert_eq!(context.digest.items.len(), 1);
    assert_eq!(title(&context.digest), "driftwatch digest: 1 change on 1 watch");
    let text = default_text(&context, 4000, 40);
    assert!(text.contains("Lamp: https://shop.example/lamp (1 event)\n• Lamp changed"), "{text}");
    let broken = ctx(r#"{"type":"digest","timestamp":"t","data":{"count":"x"}}"#, None);
    assert_eq!(broken.summary, "driftwatch event digest");
}

#[test]
fn nothing_changed_says_the_period() {
    let context = ctx(&digest(&[], 0, 0, None), None);
    assert_eq!(title(&context.digest), "driftwatch digest: nothing changed");
    assert_eq!(context.summary, "Nothing changed between Mon 7 Dec 08:00 and Tue 8 Dec 08:00 UTC");
    assert_eq!(crate::message::default_title(&context), "driftwatch digest: nothing changed");
}

#[test]
fn the_models_summary_opens_and_left_out_events_are_said() {
    let body = digest(&[lamp_change()], 5, 4, Some("The lamp got cheaper."));
    let context = ctx(&body, None);
    let text = text(&context, Style::Plain, 4000);
    assert!(text.starts_with("The lamp got cheaper.\n5 changes on 1 watch between"), "{text}");
    assert!(text.ends_with("… and 4 more events not shown"), "{text}");
}

#[test]
fn chat_text_is_cut_to_its_room_and_counts_what_it_cut() {
    let events: Vec<String> = (0..40).map(|_| lamp_change()).chain([status_failed("Status <b>")]).collect();
    let context = ctx(&digest(&events, 41, 0, None), Some("https://dw.example"));
    for style in [Style::Plain, Style::Markdown, Style::Slack, Style::Html] {
        let text = text(&context, style, 1000);
        assert!(text.chars().count() <= 1000, "{style:?}: {}", text.chars().count());
        assert!(text.contains("more events not shown"), "{style:?}: {text}");
    }
    let html = text(&context, Style::Html, 100_000);
    assert!(html.contains("<b><a href=\"https://dw.example/watches/wat_lamp\">Lamp</a></b> (40 events)"), "{html}");
    assert!(html.contains("Status &lt;b&gt;") && !html.contains("Status <b>"), "{html}");
    let markdown = text(&context, Style::Markdown, 100_000);
    assert!(markdown.contains("**[Lamp](https://dw.example/watches/wat_lamp)** (40 events)"), "{markdown}");
}

#[test]
fn expectation_sentences_say_the_rule_and_the_dates() {
    let missed = expectation(EventType::ExpectationMissed);
    let Some(v1::Payload::Expectation(e)) = v1::Payload::parse(&missed) else { panic!("an expectation") };
    assert_eq!(
        expectation_sentence(EventType::ExpectationMissed, &e.data),
        "Status page did not change within 7 days (deadline Mon 14 Dec 10:00 UTC; last change 7 Dec)"
    );
    let met = expectation(EventType::ExpectationMet);
    let Some(v1::Payload::Expectation(e)) = v1::Payload::parse(&met) else { panic!("an expectation") };
    assert_eq!(
        expectation_sentence(EventType::ExpectationMet, &e.data),
        "Status page changed again as expected (next deadline Mon 21 Dec 10:00 UTC)"
    );
    let mut values = e.data.clone();
    values.expectation.kind = "values".into();
    values.expectation.rule = "price below 50".into();
    values.expectation.reasons = vec!["price 55.00 EUR is not below 50".into()];
    assert_eq!(
        expectation_sentence(EventType::ExpectationMissed, &values),
        "Status page no longer meets price below 50: price 55.00 EUR is not below 50"
    );
    let context = ctx(&missed, Some("https://dw.example"));
    assert_eq!(crate::message::default_title(&context), "Status page: expected change missed");
    assert_eq!(context.link, "https://dw.example/watches/wat_status");
    assert_eq!((context.expectation.rule.as_str(), context.expectation.holds), ("a change within 7 days", false));
    assert_eq!(context.expectation.deadline, "2026-12-14T10:00:00Z");
    let met = ctx(&met, None);
    assert_eq!(crate::message::default_title(&met), "Status page: changed again as expected");
    assert_eq!(met.link, "https://status.example/");
}

#[test]
fn the_email_has_a_section_per_watch_escaped_and_bounded() {
    let context = ctx(&three_over_two("Status <script>alert(1)</script>"), Some("https://dw.example"));
    let html = email::html(&context, "driftwatch digest");
    assert_eq!(html.matches("<h2").count(), 2, "{html}");
    assert!(!html.contains("<script>") && html.contains("Status &lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
    assert!(html.contains("<ins style=") || html.contains(super::super::kinds::email::ADDED), "{html}");
    let text = email::text(&context);
    assert!(text.contains("== Lamp (2 events) ==\nhttps://dw.example/watches/wat_lamp\n"), "{text}");
    assert!(text.contains("  + New colours"), "{text}");
    // A digest of many long changes stays well under 1 MiB, and says what it left out.
    let old: String = (0..300).map(|i| format!("old line {i} {}\n", "<x>".repeat(30))).collect();
    let new: String = (0..300).map(|i| format!("new line {i} {}\n", "<y>".repeat(30))).collect();
    let limits = driftwatch_diff::DiffLimits::PAYLOAD;
    let change = driftwatch_diff::diff_texts_within(&old, &new, "a", "b", limits);
    let watch = driftwatch_alert::WatchRef { id: "wat_big", name: "Big", url: "https://example.com/" };
    let pair = driftwatch_alert::SnapshotPair { previous: "a", current: "b" };
    let one = driftwatch_alert::change_payload("evt_1", watch, &change, pair, at("2026-12-07T09:00:00Z"));
    let events: Vec<String> = (0..60).map(|i| one.replace("wat_big", &format!("wat_{i}"))).collect();
    let big = ctx(&digest(&events, 60, 0, None), Some("https://dw.example"));
    let (html, text) = (email::html(&big, "s"), email::text(&big));
    assert!(html.len() + text.len() < 700 * 1024, "{}", html.len() + text.len());
    assert!(html.contains("more events not shown"), "the HTML part is cut first");
    assert_eq!(text.matches("\n== Big (1 event) ==").count(), 60, "the plain part has room for all");
}
