//! Each kind's message for one event: its title and text (the endpoint's templates, or the
//! defaults), shaped the way the provider documents and cut to its limits.

use driftwatch_core::EndpointKind;
use serde_json::{Value, json};

use crate::context::{Context, cut_chars, cut_lines};
use crate::settings::Settings;
use crate::template;

/// An endpoint's templates.
#[derive(Debug, Clone, Copy, Default)]
pub struct Templates<'a> {
    /// Title (subject, embed title, notification title).
    pub title: Option<&'a str>,
    /// Body (the message text; for `http`, the whole request body).
    pub body: Option<&'a str>,
}

/// Title and text, from the templates or the defaults.
struct Parts {
    title: String,
    /// The template's text, when the endpoint has a body template.
    text: Option<String>,
}

fn parts(context: &Context, templates: Templates<'_>) -> Result<Parts, String> {
    let title = match templates.title.filter(|t| !t.trim().is_empty()) {
        Some(source) => template::render(source, context)?.trim().to_owned(),
        None => default_title(context),
    };
    let text = templates.body.filter(|t| !t.trim().is_empty()).map(|s| template::render(s, context)).transpose()?;
    Ok(Parts { title, text })
}

fn default_title(context: &Context) -> String {
    use driftwatch_core::EventType;
    let name = &context.watch.name;
    // Every type by name, so that a new one cannot fall through to the test message's title.
    match context.event.event_type.parse::<EventType>() {
        Ok(EventType::ChangeDetected) => format!("{name} changed"),
        Ok(EventType::CheckFailed) => format!("{name} is failing"),
        Ok(EventType::SelectorMissing) => format!("{name}: the watched element is missing"),
        Ok(EventType::ValueMissing) => format!("{name}: a value could not be read"),
        Ok(EventType::CheckRecovered) => format!("{name} recovered"),
        Ok(EventType::ConditionMet) => format!("{name}: conditions met"),
        Ok(EventType::ConditionCleared) => format!("{name}: conditions no longer met"),
        Ok(EventType::EndpointDisabled) => "driftwatch disabled an endpoint".to_owned(),
        Ok(EventType::EndpointTest) | Err(_) => "driftwatch test message".to_owned(),
    }
}

/// The default plain text: the summary, the link, the changed lines within `max` characters.
fn default_text(context: &Context, max: usize, max_lines: usize) -> String {
    let mut head = context.summary.clone();
    if !context.link.is_empty() {
        head.push('\n');
        head.push_str(&context.link);
    }
    let lines = context.changed_lines();
    if lines.is_empty() {
        return cut_chars(&head, max);
    }
    let room = max.saturating_sub(head.chars().count() + 2);
    format!("{head}\n\n{}", cut_lines(&lines, max_lines, room))
}

/// The body stored for an endpoint of `kind` (never email: see [`crate::email`]).
pub fn body(
    kind: EndpointKind,
    settings: &Settings,
    context: &Context,
    templates: Templates<'_>,
) -> Result<Vec<u8>, String> {
    let parts = parts(context, templates)?;
    let value = match kind {
        EndpointKind::Webhook => return Ok(context.payload.to_string().into_bytes()),
        EndpointKind::Http => {
            return Ok(match parts.text {
                Some(text) => text.into_bytes(),
                None => context.payload.to_string().into_bytes(),
            });
        }
        EndpointKind::Slack => match parts.text {
            None => return Ok(driftwatch_alert::slack_message(&context.payload.to_string()).into_bytes()),
            Some(text) => json!({"text": cut_chars(&format!("{}\n{text}", parts.title), 3000)}),
        },
        EndpointKind::Discord => discord(context, parts),
        EndpointKind::Telegram => telegram(settings, context, parts),
        EndpointKind::Teams => teams(context, parts),
        EndpointKind::Ntfy => {
            let message = parts.text.unwrap_or_else(|| default_text(context, 3500, 40));
            let mut body = json!({
                "topic": settings.topic.clone().unwrap_or_default(),
                "title": cut_chars(&parts.title, 250),
                "message": cut_bytes(&message, 4096),
            });
            if !context.link.is_empty() {
                body["click"] = json!(context.link);
            }
            if let Some(priority) = settings.priority {
                body["priority"] = json!(priority);
            }
            if !settings.tags.is_empty() {
                body["tags"] = json!(settings.tags);
            }
            body
        }
        EndpointKind::Pushover => {
            let message = parts.text.unwrap_or_else(|| default_text(context, 1024, 15));
            let mut body = json!({"title": cut_chars(&parts.title, 250), "message": cut_chars(&message, 1024)});
            if context.link.starts_with("http") && context.link.chars().count() <= 512 {
                body["url"] = json!(context.link);
                body["url_title"] = json!("Open the change");
            }
            if let Some(priority) = settings.priority {
                body["priority"] = json!(priority);
            }
            if let Some(device) = &settings.device {
                body["device"] = json!(device);
            }
            body
        }
        EndpointKind::Gotify => {
            let message = parts.text.unwrap_or_else(|| default_text(context, 8000, 80));
            let mut body =
                json!({"title": parts.title, "message": message, "priority": settings.priority.unwrap_or(5)});
            if context.link.starts_with("http") {
                body["extras"] = json!({"client::notification": {"click": {"url": context.link}}});
            }
            body
        }
        EndpointKind::Matrix => {
            let text = parts.text.unwrap_or_else(|| default_text(context, 16_000, 200));
            let html = format!("<strong>{}</strong><br><pre>{}</pre>", escape_html(&parts.title), escape_html(&text));
            json!({
                "msgtype": "m.text",
                "body": format!("{}\n{text}", parts.title),
                "format": "org.matrix.custom.html",
                "formatted_body": html,
            })
        }
        EndpointKind::Email => return Err("email bodies are built by the email module".to_owned()),
    };
    Ok(value.to_string().into_bytes())
}

/// Discord: one embed (title ≤ 256, description ≤ 4096, all ≤ 6000), green when only lines
/// were added, red when only removed, amber for both.
fn discord(context: &Context, parts: Parts) -> Value {
    let description = match parts.text {
        Some(text) => cut_chars(&text, 4000),
        None if context.diff.lines.is_empty() => cut_chars(&context.summary, 4000),
        None => format!("```diff\n{}\n```", cut_lines(&context.changed_lines(), 60, 3900).replace("```", "'''")),
    };
    let color = match (context.diff.added, context.diff.removed) {
        (0, 0) if context.event.event_type == "check.recovered" => 0x2e7d32,
        (0, 0) if context.event.event_type.starts_with("check") || context.event.event_type.starts_with("selector") => {
            0xc62828
        }
        (0, 0) => 0x546e7a,
        (_, 0) => 0x2e7d32,
        (0, _) => 0xc62828,
        _ => 0xf9a825,
    };
    let mut embed = json!({
        "title": cut_chars(&parts.title, 256),
        "description": description,
        "color": color,
        "footer": {"text": "driftwatch"},
    });
    if context.link.starts_with("http") {
        embed["url"] = json!(context.link);
    }
    if !context.event.time.is_empty() {
        embed["timestamp"] = json!(context.event.time);
    }
    if context.event.event_type == "change.detected" {
        embed["fields"] = json!([
            {"name": "Added", "value": format!("{} lines", context.diff.added), "inline": true},
            {"name": "Removed", "value": format!("{} lines", context.diff.removed), "inline": true},
            {"name": "Page", "value": cut_chars(&context.watch.url, 1024), "inline": false},
        ]);
    }
    json!({"username": "driftwatch", "embeds": [embed]})
}

/// Telegram: the HTML subset (`<b>`, `<a>`, `<pre>`), at most 4096 visible characters.
fn telegram(settings: &Settings, context: &Context, parts: Parts) -> Value {
    let mut text = format!("<b>{}</b>", escape_html(&cut_chars(&parts.title, 200)));
    if context.link.starts_with("http") {
        text.push_str(&format!("\n<a href=\"{}\">Open the change</a>", escape_html(&context.link)));
    }
    // Visible characters so far: the title and the link's words.
    let used = cut_chars(&parts.title, 200).chars().count() + 20;
    let room = 4096 - used - 10;
    match parts.text {
        Some(body) => {
            text.push('\n');
            text.push_str(&escape_html(&cut_chars(&body, room)));
        }
        None if context.diff.lines.is_empty() => {
            text.push('\n');
            text.push_str(&escape_html(&cut_chars(&context.summary, room)));
        }
        None => {
            text.push_str(&format!(
                "\n{}\n<pre>{}</pre>",
                escape_html(&context.summary),
                escape_html(&cut_lines(&context.changed_lines(), 60, room - context.summary.chars().count()))
            ));
        }
    }
    json!({
        "chat_id": settings.chat_id.clone().unwrap_or(Value::Null),
        "text": text,
        "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": true},
    })
}

/// Teams (Workflows webhook): an Adaptive Card 1.4 in a message attachment.
fn teams(context: &Context, parts: Parts) -> Value {
    let mut body = vec![
        json!({"type": "TextBlock", "text": cut_chars(&parts.title, 200), "weight": "Bolder", "size": "Medium", "wrap": true}),
        json!({"type": "TextBlock", "text": context.summary, "wrap": true, "isSubtle": true}),
    ];
    let detail = match parts.text {
        Some(text) => Some(cut_chars(&text, 10_000)),
        None => {
            let lines = context.changed_lines();
            (!lines.is_empty()).then(|| cut_lines(&lines, 60, 10_000))
        }
    };
    if let Some(detail) = detail {
        body.push(json!({"type": "TextBlock", "text": detail, "wrap": true, "fontType": "Monospace"}));
    }
    let mut card = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    });
    if context.link.starts_with("http") {
        card["actions"] = json!([{"type": "Action.OpenUrl", "title": "Open the change", "url": context.link}]);
    }
    json!({
        "type": "message",
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null, "content": card}],
    })
}

/// Escapes text for HTML (and Telegram's subset of it).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Cuts `text` to at most `max` bytes on a character boundary, marking the cut.
fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = crate::context::char_floor(text, max - '…'.len_utf8());
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn json_of(kind: EndpointKind, settings: &Settings) -> Value {
        let body = body(kind, settings, &big_context(), Templates::default()).expect("renders");
        serde_json::from_slice(&body).expect("json")
    }

    #[test]
    fn long_diffs_are_cut_to_each_providers_limits() {
        let discord = json_of(EndpointKind::Discord, &Settings::default());
        let description = discord["embeds"][0]["description"].as_str().expect("description");
        assert!(description.chars().count() <= 4096 && description.contains("more lines"), "{description}");
        let telegram = json_of(EndpointKind::Telegram, &Settings { chat_id: Some(json!(5)), ..Settings::default() });
        let text = telegram["text"].as_str().expect("text");
        assert!(text.contains("more lines") && text.contains("&lt;page&gt;"), "{text}");
        let ntfy = json_of(EndpointKind::Ntfy, &Settings { topic: Some("t".into()), ..Settings::default() });
        assert!(ntfy["message"].as_str().expect("message").len() <= 4096);
        let pushover = json_of(EndpointKind::Pushover, &Settings::default());
        assert!(pushover["message"].as_str().expect("message").chars().count() <= 1024);
        assert!(pushover["message"].as_str().expect("message").contains("more lines"));
        let teams = json_of(EndpointKind::Teams, &Settings::default());
        assert_eq!(teams["attachments"][0]["content"]["type"], "AdaptiveCard");
    }

    #[test]
    fn every_event_type_has_its_own_title() {
        let mut context = Context::sample(None);
        for event_type in driftwatch_core::EventType::ALL {
            context.event.event_type = event_type.as_str().to_owned();
            let title = default_title(&context);
            let is_test = *event_type == driftwatch_core::EventType::EndpointTest;
            assert_eq!(title == "driftwatch test message", is_test, "{event_type}: {title}");
        }
        context.event.event_type = "check.selector_missing".into();
        assert_eq!(default_title(&context), "Coffee shop: the watched element is missing");
    }

    #[test]
    fn templates_replace_the_default_text() {
        let context = Context::sample(None);
        let templates = Templates { title: Some("{{ watch.name|upper }}"), body: Some("{{ diff.added }} new") };
        let body =
            body(EndpointKind::Ntfy, &Settings { topic: Some("t".into()), ..Settings::default() }, &context, templates)
                .expect("renders");
        let value: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!((value["title"].as_str(), value["message"].as_str()), (Some("COFFEE SHOP"), Some("2 new")));
        let http = super::body(
            EndpointKind::Http,
            &Settings::default(),
            &context,
            Templates { title: None, body: Some("name={{ watch.name }}") },
        )
        .expect("http");
        assert_eq!(http, b"name=Coffee shop");
        let broken = super::body(
            EndpointKind::Discord,
            &Settings::default(),
            &context,
            Templates { title: None, body: Some("{{ payload.x.y }}") },
        );
        assert!(broken.expect_err("render fails").starts_with("line 1"));
    }
}
