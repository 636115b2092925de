//! `telegram`: a bot's message to one chat, in Telegram's HTML subset (`<b>`, `<a>`, `<pre>`),
//! at most 4096 visible characters.

use driftwatch_core::FieldError;
use serde_json::{Value, json};

use super::{EndpointKind, Field, Input, Kind, Message, Spec, Target, Transport, json_post, need};
use crate::apprise::{ImportError, Imported, Parts, decode, fail, is_token};
use crate::context::{cut_chars, cut_lines};
use crate::digest::{self, Style};
use crate::message::{escape_html, parts, said};
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};

/// Telegram.
pub struct Telegram;

static SPEC: Spec = Spec {
    label: "Telegram: a bot's message to a chat",
    url_hint: "The Bot API server; leave empty for api.telegram.org.",
    default_url: Some("https://api.telegram.org"),
    fields: &[
        Field::setting("chat_id", "Chat id", Input::NumberOrText, "A number like -1001234567890, or @channelname.")
            .required(),
        Field::secret(
            "bot_token",
            "Bot token",
            Input::Password,
            "From @BotFather, like 123456:ABC…; stored encrypted.",
        )
        .required(),
    ],
    transport: Transport::Http,
    signed: false,
    credential_url: false,
    apprise: &["tgram"],
};

impl Kind for Telegram {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn check(&self, _: &str, settings: &Settings, _: &Secrets) -> Result<(), FieldError> {
        match settings.value("chat_id") {
            Some(Value::Number(n)) if n.is_i64() => Ok(()),
            Some(Value::String(s)) if s.starts_with('@') && s.len() > 1 || s.parse::<i64>().is_ok() => Ok(()),
            _ => {
                Err(FieldError::new("settings.chat_id", "a chat id (a number such as -1001234567890) or @channelname"))
            }
        }
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        let (parts, context) = (parts(m.context, m.templates)?, m.context);
        let mut text = format!("<b>{}</b>", escape_html(&cut_chars(&parts.title, 200)));
        if context.link.starts_with("http") {
            let words = if context.event.event_type == "digest" { "Open the changes" } else { "Open the change" };
            text.push_str(&format!("\n<a href=\"{}\">{words}</a>", escape_html(&context.link)));
        }
        // Visible characters so far: the title and the link's words.
        let used = cut_chars(&parts.title, 200).chars().count() + 20;
        let room = 4096 - used - 10;
        match parts.text {
            Some(body) => {
                text.push('\n');
                text.push_str(&escape_html(&cut_chars(&body, room)));
            }
            None if context.event.event_type == "digest" => {
                text.push('\n');
                text.push_str(&digest::text(context, Style::Html, room));
            }
            None if context.diff.lines.is_empty() => {
                text.push('\n');
                text.push_str(&escape_html(&cut_chars(&said(context), room)));
            }
            None => {
                text.push_str(&format!(
                    "\n{}\n<pre>{}</pre>",
                    escape_html(&context.summary),
                    escape_html(&cut_lines(&context.changed_lines(), 60, room - context.summary.chars().count()))
                ));
            }
        }
        let body = json!({
            "chat_id": m.settings.value("chat_id").cloned().unwrap_or(Value::Null),
            "text": text,
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": true},
        });
        Ok(body.to_string().into_bytes())
    }

    fn request<'a>(&self, to: Target<'_>, _: &str, body: &'a [u8]) -> Result<Outgoing<'a>, String> {
        let token = need(to.secrets, "bot_token", "bot token")?;
        Ok(json_post(format!("{}/bot{token}/sendMessage", to.url.trim_end_matches('/')), body))
    }

    fn retry_after_in_body(&self, body: &Value) -> Option<f64> {
        body.get("parameters")?.get("retry_after")?.as_f64()
    }

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    // tgram://bot_token/chat_id: the token's colon is no port, so read the authority as
    // written, as Apprise does (`bot` before it and `name@` are allowed).
    let hostport = p.authority.rsplit_once('@').map_or(p.authority.as_str(), |(_, h)| h);
    let hostport = decode(hostport);
    let hostport = match hostport.get(..3) {
        Some(bot) if bot.eq_ignore_ascii_case("bot") && hostport[3..].starts_with(|c: char| c.is_ascii_digit()) => {
            &hostport[3..]
        }
        _ => hostport.as_str(),
    };
    let token_ok = hostport
        .split_once(':')
        .is_some_and(|(id, key)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && is_token(key));
    if !token_ok {
        return fail(scheme, "no bot token like 123456789:AAH… (digits, a colon, then letters, digits, - or _)");
    }
    let chats = p.targets();
    let chat = match chats.as_slice() {
        [chat] => chat.trim(),
        [] => return fail(scheme, "no chat id (tgram://bot_token/chat_id)"),
        _ => return fail(scheme, "only one chat per endpoint is supported: create one per chat"),
    };
    if p.query("topic").is_some() || p.query("thread").is_some() || chat.contains(':') || chat.contains("%3A") {
        return fail(scheme, "posting to a topic (thread) of a chat is not supported: import the chat without it");
    }
    let name = chat.strip_prefix('@').or_else(|| chat.strip_prefix("%40")).unwrap_or(chat);
    let chat_id = if let Ok(id) = chat.parse::<i64>() {
        json!(id)
    } else if name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '-')
        && name.len() > 1
        && is_token(name)
    {
        json!(format!("@{name}"))
    } else {
        return fail(scheme, "the chat is not a chat id (like -1001234567890) or @channelname");
    };
    Ok(Imported {
        kind: EndpointKind::Telegram,
        url: "https://api.telegram.org".to_owned(),
        settings: json!({"chat_id": chat_id}),
        secrets: json!({"bot_token": hostport}),
    })
}
