//! `slack`: a Slack incoming webhook. Without a body template the message is built from the
//! payload: the watch linked to its URL, the counts and the first changed lines in blocks.

use driftwatch_alert::v1;
use driftwatch_core::EventType;
use driftwatch_diff::LineOp;
use serde_json::json;

use super::{Kind, Message, Spec, Target, Transport, json_post};
use crate::apprise::{ImportError, Imported, Parts};
use crate::context::{Context, cut_chars};
use crate::digest::{self, Style};
use crate::message::{condition_sentence, default_title, in_a_row, line_counts, parts, said, value_changes_sentence};
use crate::outgoing::Outgoing;
use driftwatch_core::text::count;

/// Slack.
pub struct Slack;

static SPEC: Spec = Spec {
    label: "Slack: a message to an incoming-webhook URL",
    url_hint: "The incoming-webhook URL (https://hooks.slack.com/…).",
    default_url: None,
    fields: &[],
    transport: Transport::Http,
    signed: false,
    credential_url: true,
    apprise: &["slack"],
};

impl Kind for Slack {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let parts = parts(m.context, m.templates)?;
        Ok(match parts.text {
            None => match m.context.event.event_type.as_str() {
                // Built from the context, whose links go into driftwatch when it has a public URL.
                "digest" => slack_digest(m.context).to_string().into_bytes(),
                "expectation.missed" | "expectation.met" => slack_text(&said(m.context)).to_string().into_bytes(),
                _ => slack_message(&m.context.payload.to_string()).into_bytes(),
            },
            Some(text) => {
                json!({"text": cut_chars(&format!("{}\n{text}", parts.title), 3000)}).to_string().into_bytes()
            }
        })
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        Ok(json_post(to.url.to_owned(), body))
    }

    fn parse_apprise(&self, _: &Parts) -> Result<Imported, ImportError> {
        Err(ImportError("`slack://` cannot be imported yet: add it as a slack endpoint with its webhook URL".into()))
    }
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
    let message = match v1::Payload::parse(payload) {
        Some(v1::Payload::Change(event)) => slack_change(&event.data),
        Some(v1::Payload::Check(event)) => {
            let v1::CheckEvent { watch, check, .. } = event.data;
            let (name, url) = (watch.name, watch.url);
            let error = check.error.as_deref().unwrap_or("unknown error");
            let in_a_row = in_a_row(check.consecutive_failures);
            let text = match event.event_type {
                EventType::CheckRecovered => format!("{name} ({url}) is being checked successfully again."),
                EventType::SelectorMissing => {
                    format!("{name} ({url}): the watched element is missing {in_a_row}: {error}")
                }
                EventType::ValueMissing => {
                    format!("{name} ({url}): a value could not be read {in_a_row}: {error}")
                }
                _ => format!("{name} ({url}) is failing {in_a_row}: {error}"),
            };
            slack_text(&text)
        }
        Some(v1::Payload::Endpoint(event)) => {
            let url = &event.data.endpoint.url;
            let text = match event.event_type {
                EventType::EndpointDisabled => format!(
                    "driftwatch disabled the endpoint {url}: {}",
                    event.data.reason.as_deref().unwrap_or("no reason given")
                ),
                _ => "driftwatch test event: this endpoint receives driftwatch notifications.".to_owned(),
            };
            slack_text(&text)
        }
        Some(v1::Payload::Condition(event)) => slack_text(&condition_sentence(event.event_type, &event.data)),
        Some(v1::Payload::Expectation(event)) => {
            slack_text(&said(&Context::new(&event.data.event_id, event.event_type.as_str(), payload, "", None)))
        }
        Some(v1::Payload::Digest(event)) => {
            slack_digest(&Context::new(&event.data.event_id, event.event_type.as_str(), payload, "", None))
        }
        None => slack_text("driftwatch event"),
    };
    message.to_string()
}

/// A `change.detected` message: the watch linked to its URL, the counts, the first changed lines.
fn slack_change(change: &v1::ChangeDetected) -> serde_json::Value {
    let (name, url) = (change.watch.name.as_str(), change.watch.url.as_str());
    let (added, removed) = (change.diff.added, change.diff.removed);
    let mut excerpt = String::new();
    let changed = change.diff.hunks.iter().flat_map(|h| &h.lines).filter_map(|l| match l.op {
        LineOp::Added => Some(format!("+ {}", l.text)),
        LineOp::Removed => Some(format!("- {}", l.text)),
        LineOp::Context => None,
    });
    for line in changed.take(SLACK_DIFF_LINES) {
        if excerpt.len() + line.len() > SLACK_DIFF_CHARS {
            break;
        }
        excerpt.push_str(&line);
        excerpt.push('\n');
    }
    let text = format!("Change detected on {name} ({url}): {}", line_counts(added, removed));
    let mut message = json!({
        "text": text,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": format!("*Change detected:* <{url}|{}>", slack_escape(name))}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": format!("+{}, -{}", count(added, "line"), count(removed, "line"))}]},
            {"type": "section", "text": {"type": "mrkdwn", "text": format!("```{}```", slack_escape(excerpt.trim_end()))}},
        ]
    });
    // Values that moved, in their own block; a watch without values keeps the message it had.
    if !change.values.is_empty()
        && let Some(blocks) = message["blocks"].as_array_mut()
    {
        let moved = slack_escape(&value_changes_sentence(&change.values));
        blocks.insert(2, json!({"type": "section", "text": {"type": "mrkdwn", "text": format!("*Values:* {moved}")}}));
    }
    message
}

/// Most blocks in a Slack message.
const SLACK_BLOCKS: usize = 50;
/// Most characters of a section block's text.
const SLACK_SECTION: usize = 2900;

/// A digest: its title as a header, the model's summary and the period, then a section per
/// watch (its name linked, a line per event) within Slack's 50 blocks.
fn slack_digest(context: &Context) -> serde_json::Value {
    let title = default_title(context);
    let section = |text: String| json!({"type": "section", "text": {"type": "mrkdwn", "text": text}});
    let mut blocks = vec![json!({"type": "header", "text": {"type": "plain_text", "text": cut_chars(&title, 150)}})];
    blocks.extend(digest::head(context, Style::Slack, SLACK_SECTION).into_iter().map(section));
    let mut not_shown = context.digest.omitted;
    for watch in &context.digest.watches {
        // Room for the tail's block.
        let block = (blocks.len() < SLACK_BLOCKS - 1).then(|| digest::watch_block(watch, Style::Slack, SLACK_SECTION));
        match block.flatten() {
            Some((text, shown)) => {
                blocks.push(section(text));
                not_shown += watch.count - shown;
            }
            None => not_shown += watch.count,
        }
    }
    if let Some(tail) = digest::tail(not_shown, Style::Slack) {
        blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": tail}]}));
    }
    json!({"text": cut_chars(&title, 3000), "blocks": blocks})
}

/// A one-line message.
fn slack_text(text: &str) -> serde_json::Value {
    json!({"text": text, "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": slack_escape(text)}}]})
}

/// Escapes the three characters Slack's mrkdwn treats as control characters.
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use driftwatch_alert::{EndpointRef, SnapshotPair, WatchRef, change_payload, endpoint_payload};

    use super::*;

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
        assert_eq!(slack["text"], "Change detected on Prices (https://example.com/): +1 line / -1 line");
        let excerpt = slack["blocks"][2]["text"]["text"].as_str().expect("excerpt");
        assert_eq!(excerpt, "```- price 10\n+ price 12```");
    }

    #[test]
    fn slack_says_amounts_as_every_other_kind_does() {
        let change = driftwatch_diff::diff_texts("price 67\n", "price 45\n", "snp_a", "snp_b");
        let moved = v1::ValueChange {
            name: "price".into(),
            from: serde_json::json!(67.0),
            to: serde_json::json!(45.5),
            currency: Some("EUR".into()),
            change_percent: Some(-32.09),
        };
        let body = driftwatch_alert::change_payload_with(
            "evt_1",
            WatchRef { id: "wat_1", name: "Prices", url: "https://example.com/" },
            &change,
            SnapshotPair { previous: "snp_a", current: "snp_b" },
            Utc::now(),
            driftwatch_alert::ChangeExtras { render: None, values: vec![moved] },
        );
        let slack: serde_json::Value = serde_json::from_str(&slack_message(&body)).expect("json");
        let values = slack["blocks"][2]["text"]["text"].as_str().expect("values");
        assert_eq!(values, "*Values:* price 67.00 → 45.50 EUR (-32.09%)");
        let summary = crate::context::Context::new("evt_1", "change.detected", &body, "", None).summary;
        assert!(summary.ends_with("price 67.00 → 45.50 EUR (-32.09%)"), "the same words everywhere: {summary}");
    }

    #[test]
    fn endpoint_events_render_for_webhooks_and_slack() {
        let endpoint = EndpointRef { id: "end_1", url: "https://hooks.example/x", description: "ops" };
        let body = endpoint_payload(EventType::EndpointDisabled, "evt_2", endpoint, Some("410 <Gone>"), Utc::now());
        let slack: serde_json::Value = serde_json::from_str(&slack_message(&body)).expect("json");
        assert!(slack["text"].as_str().is_some_and(|t| t.contains("disabled the endpoint https://hooks.example/x")));
        assert!(slack["blocks"][0]["text"]["text"].as_str().is_some_and(|t| t.contains("&lt;Gone&gt;")));
    }
}
