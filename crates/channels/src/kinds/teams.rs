//! `teams`: a Microsoft Teams Workflows webhook, an Adaptive Card 1.4 in a message attachment.

use serde_json::{Value, json};

use super::{Kind, Message, Spec, Target, Transport, json_post};
use crate::apprise::{ImportError, Imported, Parts};
use crate::context::{cut_chars, cut_lines};
use crate::digest::{self, Style};
use crate::message::{parts, said};
use crate::outgoing::Outgoing;

/// Microsoft Teams.
pub struct Teams;

static SPEC: Spec = Spec {
    label: "Microsoft Teams: a Workflows webhook",
    url_hint: "The Workflows webhook URL (https://…).",
    default_url: None,
    fields: &[],
    transport: Transport::Http,
    signed: false,
    credential_url: true,
    apprise: &["msteams", "workflow", "workflows"],
};

impl Kind for Teams {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let parts = parts(m.context, m.templates)?;
        let context = m.context;
        let mut body = vec![
            json!({"type": "TextBlock", "text": cut_chars(&parts.title, 200), "weight": "Bolder", "size": "Medium", "wrap": true}),
            json!({"type": "TextBlock", "text": cut_chars(&said(context), 2000), "wrap": true, "isSubtle": true}),
        ];
        let digest = context.event.event_type == "digest";
        let detail = match parts.text {
            Some(text) => Some(cut_chars(&text, 10_000)),
            None if digest => {
                // The head (the model's summary, the period) is the text block above.
                body.pop();
                body.push(
                    json!({"type": "TextBlock", "text": digest::text(context, Style::Markdown, 10_000), "wrap": true}),
                );
                None
            }
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
            let title = if digest { "Open the changes" } else { "Open the change" };
            card["actions"] = json!([{"type": "Action.OpenUrl", "title": title, "url": context.link}]);
        }
        let message: Value = json!({
            "type": "message",
            "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null, "content": card}],
        });
        Ok(message.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        Ok(json_post(to.url.to_owned(), body))
    }

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        Err(ImportError(format!(
            "`{}://` cannot be imported yet: add it as a teams endpoint with its webhook URL",
            parts.scheme
        )))
    }
}
