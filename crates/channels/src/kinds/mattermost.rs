//! `mattermost`: a message to a Mattermost incoming webhook (`https://host/hooks/{key}`), in
//! Mattermost's Markdown: the title as a heading, the summary, a link, the changed lines in a
//! `diff` block; at most 16,383 characters, Mattermost's post limit.

use driftwatch_core::FieldError;
use serde_json::json;

use super::{Field, Input, Kind, Message, Spec, Target, Transport, json_post};
use crate::apprise::{ImportError, Imported, Parts, fail};
use crate::context::{cut_chars, cut_lines};
use crate::digest::{self, Style};
use crate::message::{parts, said};
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};

/// Mattermost.
pub struct Mattermost;

/// Mattermost's most characters in one post.
const MAX_POST: usize = 16_383;

static SPEC: Spec = Spec {
    label: "Mattermost: a message to an incoming-webhook URL",
    url_hint: "The incoming-webhook URL (https://mattermost.example.com/hooks/…).",
    default_url: None,
    fields: &[
        Field::setting(
            "channel",
            "Channel",
            Input::Text,
            "Post in this channel (its name, like town-square) instead of the webhook's; empty for the webhook's own.",
        ),
        Field::setting(
            "username",
            "Post as",
            Input::Text,
            "A name to post under, if the server lets integrations override it; empty for the webhook's.",
        ),
    ],
    transport: Transport::Http,
    signed: false,
    credential_url: true,
    apprise: &["mmost", "mmosts"],
};

impl Kind for Mattermost {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn check(&self, _: &str, settings: &Settings, _: &Secrets) -> Result<(), FieldError> {
        if let Some(channel) = settings.text("channel")
            && (channel.len() > 64 || channel.contains(char::is_whitespace))
        {
            return Err(FieldError::new("settings.channel", "a channel's name: up to 64 characters, no spaces"));
        }
        if settings.text("username").is_some_and(|u| u.chars().count() > 64) {
            return Err(FieldError::new("settings.username", "at most 64 characters"));
        }
        Ok(())
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let (parts, context) = (parts(m.context, m.templates)?, m.context);
        let mut text = format!("#### {}\n", cut_chars(&parts.title, 200).replace('\n', " "));
        match parts.text {
            Some(body) => text.push_str(&body),
            None if context.event.event_type == "digest" => {
                let room = MAX_POST.saturating_sub(text.chars().count() + 40);
                text.push_str(&digest::text(context, Style::Markdown, room));
                if context.link.starts_with("http") {
                    text.push_str(&format!("\n\n[Open the changes]({})", context.link));
                }
            }
            None => {
                text.push_str(&said(context));
                if context.link.starts_with("http") {
                    text.push_str(&format!("\n[Open the change]({})", context.link));
                }
                let lines = context.changed_lines();
                if !lines.is_empty() {
                    let room = MAX_POST.saturating_sub(text.chars().count() + 16);
                    let shown = cut_lines(&lines, 80, room).replace("```", "'''");
                    text.push_str(&format!("\n```diff\n{shown}\n```"));
                }
            }
        }
        let mut body = json!({"text": cut_chars(&text, MAX_POST)});
        for key in ["channel", "username"] {
            if let Some(value) = m.settings.text(key) {
                body[key] = json!(value);
            }
        }
        Ok(body.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        Ok(json_post(to.url.to_owned(), body))
    }

    /// Apprise's `mmost://[botname@]host[:port][/path]/token[?channel=name]` (`mmosts://` for
    /// HTTPS; plain `mmost://` defaults to Mattermost's port 8065, as Apprise does).
    fn parse_apprise(&self, p: &Parts) -> Result<Imported, ImportError> {
        let secure = p.scheme == "mmosts";
        let Some((token, prefix)) = p.path.split_last() else {
            return fail(&p.scheme, "no webhook key (mmost://host/key)");
        };
        let hooks = "hooks".to_owned();
        let mut url = p.http_url(secure, prefix.iter().chain([&hooks, token]))?;
        if p.port.is_none() && !secure {
            let _ = url.set_port(Some(8065));
        }
        let mut channels =
            crate::apprise::list(p.query("channel")).into_iter().chain(crate::apprise::list(p.query("to")));
        let mut settings = serde_json::Map::new();
        if let Some(channel) = channels.next() {
            if channels.next().is_some() {
                return fail(&p.scheme, "several channels: import one URL per channel");
            }
            settings.insert("channel".into(), json!(channel.trim_start_matches('#')));
        }
        if !p.user.is_empty() {
            settings.insert("username".into(), json!(p.user));
        }
        Ok(Imported {
            kind: super::EndpointKind::Mattermost,
            url: url.to_string(),
            settings: settings.into(),
            secrets: json!({}),
        })
    }
}
