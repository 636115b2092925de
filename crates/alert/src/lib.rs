//! Deciding whether a change is worth an alert, and the versioned event payload.
//!
//! Pure: no IO, and time is passed in. The payload is serialised once here and the bytes are
//! stored in the outbox, so every attempt and redelivery sends exactly the same body.

use chrono::{DateTime, SecondsFormat, Utc};
use driftwatch_core::EventType;
use driftwatch_diff::TextChange;
use serde_json::json;

mod noise;

pub use noise::{Noise, NoiseError, Quiet};

/// The watch an event is about, as it appears in payloads.
#[derive(Debug, Clone, Copy)]
pub struct WatchRef<'a> {
    /// The watch id.
    pub id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its URL.
    pub url: &'a str,
}

/// Whether a diff should raise an alert. Every real change does for now; noise rules (trigger
/// text, thresholds, masks) will narrow this.
pub fn is_alert(change: &TextChange) -> bool {
    change.is_change()
}

/// Ids of the snapshots on both sides of a change.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPair<'a> {
    /// Before.
    pub previous: &'a str,
    /// After.
    pub current: &'a str,
}

/// The JSON body of a `change.detected` event:
/// `{"type", "timestamp", "data": {"event_id", "watch", "diff", "snapshots"}}`.
pub fn change_payload(
    event_id: &str,
    watch: WatchRef<'_>,
    change: &TextChange,
    snapshots: SnapshotPair<'_>,
    at: DateTime<Utc>,
) -> String {
    json!({
        "type": EventType::ChangeDetected,
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": {
            "event_id": event_id,
            "watch": {"id": watch.id, "name": watch.name, "url": watch.url},
            "diff": {
                "added": change.added,
                "removed": change.removed,
                "unified": change.unified,
                "hunks": change.hunks,
            },
            "snapshots": {"previous": snapshots.previous, "current": snapshots.current},
        }
    })
    .to_string()
}

/// The JSON body of an endpoint event (`endpoint.disabled`, `endpoint.test`).
pub fn endpoint_payload(
    event_type: EventType,
    event_id: &str,
    endpoint: EndpointRef<'_>,
    reason: Option<&str>,
    at: DateTime<Utc>,
) -> String {
    let mut data = json!({
        "event_id": event_id,
        "endpoint": {"id": endpoint.id, "url": endpoint.url, "description": endpoint.description},
    });
    if let Some(reason) = reason {
        data["reason"] = json!(reason);
    }
    json!({
        "type": event_type,
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": data,
    })
    .to_string()
}

/// What a health event says about the check that changed the watch's health.
#[derive(Debug, Clone, Copy)]
pub struct CheckRef<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The page's status, when it answered.
    pub http_status: Option<i32>,
    /// Why the check failed (absent on recovery).
    pub error: Option<&'a str>,
    /// Failed checks in a row.
    pub consecutive_failures: i32,
}

/// The JSON body of a watch health event (`check.failed`, `check.selector_missing`,
/// `check.recovered`).
pub fn check_payload(
    event_type: EventType,
    event_id: &str,
    watch: WatchRef<'_>,
    check: CheckRef<'_>,
    at: DateTime<Utc>,
) -> String {
    json!({
        "type": event_type,
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": {
            "event_id": event_id,
            "watch": {"id": watch.id, "name": watch.name, "url": watch.url},
            "check": {
                "run_id": check.run_id,
                "http_status": check.http_status,
                "error": check.error,
                "consecutive_failures": check.consecutive_failures,
            },
        }
    })
    .to_string()
}

/// The endpoint an endpoint event is about.
#[derive(Debug, Clone, Copy)]
pub struct EndpointRef<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its URL.
    pub url: &'a str,
    /// Its description.
    pub description: &'a str,
}

/// Most diff lines shown in a Slack message.
const SLACK_DIFF_LINES: usize = 12;
/// Most characters of diff shown in a Slack message (Slack caps a text block at 3000).
const SLACK_DIFF_CHARS: usize = 2500;

/// A Slack message (`text` and `blocks`) for an event payload made by this crate.
///
/// For `change.detected`: the watch name linked to its URL, the counts, and the first changed
/// lines of the diff; for endpoint events, one line saying what happened.
pub fn slack_message(payload: &str) -> String {
    let event: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
    let data = &event["data"];
    let kind = event["type"].as_str().unwrap_or("event");
    let message = match kind {
        "change.detected" => {
            let name = data["watch"]["name"].as_str().unwrap_or("a watched page");
            let url = data["watch"]["url"].as_str().unwrap_or("");
            let (added, removed) =
                (data["diff"]["added"].as_u64().unwrap_or(0), data["diff"]["removed"].as_u64().unwrap_or(0));
            let mut excerpt = String::new();
            let changed = data["diff"]["hunks"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|h| h["lines"].as_array().into_iter().flatten())
                .filter_map(|l| match l["op"].as_str() {
                    Some("added") => Some(format!("+ {}", l["text"].as_str().unwrap_or(""))),
                    Some("removed") => Some(format!("- {}", l["text"].as_str().unwrap_or(""))),
                    _ => None,
                });
            for line in changed.take(SLACK_DIFF_LINES) {
                if excerpt.len() + line.len() > SLACK_DIFF_CHARS {
                    break;
                }
                excerpt.push_str(&line);
                excerpt.push('\n');
            }
            let text = format!("Change detected on {name} ({url}): +{added} / -{removed} lines");
            json!({
                "text": text,
                "blocks": [
                    {"type": "section", "text": {"type": "mrkdwn", "text": format!("*Change detected:* <{url}|{}>", slack_escape(name))}},
                    {"type": "context", "elements": [{"type": "mrkdwn", "text": format!("+{added} lines, -{removed} lines")}]},
                    {"type": "section", "text": {"type": "mrkdwn", "text": format!("```{}```", slack_escape(excerpt.trim_end()))}},
                ]
            })
        }
        "check.failed" | "check.selector_missing" | "check.recovered" => {
            let name = data["watch"]["name"].as_str().unwrap_or("a watched page");
            let url = data["watch"]["url"].as_str().unwrap_or("");
            let error = data["check"]["error"].as_str().unwrap_or("unknown error");
            let failures = data["check"]["consecutive_failures"].as_i64().unwrap_or(0);
            let text = match kind {
                "check.recovered" => format!("{name} ({url}) is being checked successfully again."),
                "check.selector_missing" => {
                    format!("{name} ({url}): the watched element is missing ({failures} checks in a row): {error}")
                }
                _ => format!("{name} ({url}) is failing ({failures} checks in a row): {error}"),
            };
            json!({"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": slack_escape(&text)}}]})
        }
        other => {
            let url = data["endpoint"]["url"].as_str().unwrap_or("");
            let text = match (other, data["reason"].as_str()) {
                ("endpoint.disabled", reason) => {
                    format!("driftwatch disabled the endpoint {url}: {}", reason.unwrap_or("no reason given"))
                }
                ("endpoint.test", _) => {
                    "driftwatch test event: this endpoint receives driftwatch notifications.".to_owned()
                }
                _ => format!("driftwatch event {other}"),
            };
            json!({"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": slack_escape(&text)}}]})
        }
    };
    message.to_string()
}

/// Escapes the three characters Slack's mrkdwn treats as control characters.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_has_the_documented_shape() {
        let change = driftwatch_diff::diff_texts("price 10\n", "price 12\n", "snp_a", "snp_b");
        assert!(is_alert(&change));
        let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
        let body = change_payload(
            "evt_1",
            WatchRef { id: "wat_1", name: "Prices", url: "https://example.com/" },
            &change,
            SnapshotPair { previous: "snp_a", current: "snp_b" },
            at,
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["type"], "change.detected");
        assert_eq!(v["timestamp"], "2026-12-02T12:00:00.000Z");
        assert_eq!(v["data"]["watch"]["id"], "wat_1");
        assert_eq!(v["data"]["diff"]["added"], 1);
        assert_eq!(v["data"]["diff"]["removed"], 1);
        assert!(v["data"]["diff"]["unified"].as_str().is_some_and(|u| u.contains("+price 12")));
        assert_eq!(v["data"]["diff"]["hunks"][0]["lines"][0]["op"], "removed");
        assert_eq!(v["data"]["snapshots"]["current"], "snp_b");
        assert!(!is_alert(&driftwatch_diff::diff_texts("same\n", "same\n", "a", "b")));
    }

    #[test]
    fn slack_messages_show_the_change() {
        let change = driftwatch_diff::diff_texts("price 10\n", "price 12\n", "snp_a", "snp_b");
        let body = change_payload(
            "evt_1",
            WatchRef { id: "wat_1", name: "Prices", url: "https://example.com/" },
            &change,
            SnapshotPair { previous: "snp_a", current: "snp_b" },
            Utc::now(),
        );
        let slack: serde_json::Value = serde_json::from_str(&slack_message(&body)).expect("json");
        assert_eq!(slack["text"], "Change detected on Prices (https://example.com/): +1 / -1 lines");
        let excerpt = slack["blocks"][2]["text"]["text"].as_str().expect("excerpt");
        assert_eq!(excerpt, "```- price 10\n+ price 12```");
    }

    #[test]
    fn endpoint_events_render_for_webhooks_and_slack() {
        let endpoint = EndpointRef { id: "end_1", url: "https://hooks.example/x", description: "ops" };
        let body = endpoint_payload(EventType::EndpointDisabled, "evt_2", endpoint, Some("410 <Gone>"), Utc::now());
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["type"], "endpoint.disabled");
        assert_eq!(v["data"]["reason"], "410 <Gone>");
        let slack: serde_json::Value = serde_json::from_str(&slack_message(&body)).expect("json");
        assert!(slack["text"].as_str().is_some_and(|t| t.contains("disabled the endpoint https://hooks.example/x")));
        assert!(slack["blocks"][0]["text"]["text"].as_str().is_some_and(|t| t.contains("&lt;Gone&gt;")));
    }
}
