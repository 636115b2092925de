//! `discord`: a channel webhook, one embed per message (title ≤ 256, description ≤ 4096, all ≤
//! 6000), coloured by what changed.

use serde_json::{Value, json};

use super::{EndpointKind, Kind, Message, Spec, Target, Transport, json_post, with_query};
use crate::apprise::{ImportError, Imported, Parts, fail, is_token};
use crate::context::{Context, cut_chars, cut_lines};
use crate::digest::{self, Style};
use crate::message::{Parts as Said, parts, said};
use crate::outgoing::Outgoing;

/// Discord.
pub struct Discord;

static SPEC: Spec = Spec {
    label: "Discord: a message to a channel webhook",
    url_hint: "The channel's webhook URL (https://discord.com/api/webhooks/…).",
    default_url: None,
    fields: &[],
    transport: Transport::Http,
    signed: false,
    credential_url: true,
    apprise: &["discord"],
};

impl Kind for Discord {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        Ok(embed(m.context, parts(m.context, m.templates)?).to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        // Wait for the message to be stored, so a 2xx means it exists.
        Ok(json_post(with_query(to.url, "wait=true"), body))
    }

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

/// One embed, green when only lines were added, red when only removed, amber for both.
fn embed(context: &Context, parts: Said) -> Value {
    let description = match parts.text {
        Some(text) => cut_chars(&text, 4000),
        None if context.event.event_type == "digest" => digest::text(context, Style::Markdown, 4000),
        None if context.diff.lines.is_empty() => cut_chars(&said(context), 4000),
        None => format!("```diff\n{}\n```", cut_lines(&context.changed_lines(), 60, 3900).replace("```", "'''")),
    };
    let color = match (context.diff.added, context.diff.removed) {
        (0, 0) if ["check.recovered", "expectation.met"].contains(&context.event.event_type.as_str()) => 0x2e7d32,
        (0, 0) if context.event.event_type == "expectation.missed" => 0xc62828,
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
            {"name": "Added", "value": driftwatch_core::text::count(context.diff.added, "line"), "inline": true},
            {"name": "Removed", "value": driftwatch_core::text::count(context.diff.removed, "line"), "inline": true},
            {"name": "Page", "value": cut_chars(&context.watch.url, 1024), "inline": false},
        ]);
    }
    json!({"username": "driftwatch", "embeds": [embed]})
}

/// Discord's webhook URL, with the thread of `?thread=` when one is given.
pub(crate) fn webhook(scheme: &str, id: &str, token: &str, p: &Parts) -> Result<Imported, ImportError> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return fail(scheme, "the webhook id is not a number (discord://webhook_id/webhook_token)");
    }
    if !is_token(token) {
        return fail(
            scheme,
            "no webhook token, or not one of letters, digits, - and _ (discord://webhook_id/webhook_token)",
        );
    }
    let mut url = format!("https://discord.com/api/webhooks/{id}/{token}");
    if let Some(thread) = p.query("thread").or_else(|| p.query("thread_id")) {
        if !thread.bytes().all(|b| b.is_ascii_digit()) {
            return fail(scheme, "thread= is not a thread id (a number)");
        }
        url.push_str("?thread_id=");
        url.push_str(thread);
    }
    Ok(Imported { kind: EndpointKind::Discord, url, settings: json!({}), secrets: json!({}) })
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    // discord://webhook_id/webhook_token, or discord://botname@webhook_id/webhook_token.
    let token = p.path.first().map_or("", String::as_str);
    webhook(&p.scheme, &p.host, token, p)
}
