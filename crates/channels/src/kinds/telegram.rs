//! `telegram`: a bot's message to one chat, in Telegram's HTML subset (`<b>`, `<a>`, `<pre>`),
//! at most 4096 visible characters.

use driftwatch_core::FieldError;
use serde_json::{Value, json};

use super::{Field, Input, Kind, Message, Spec, Target, Transport, json_post, need};
use crate::apprise::{ImportError, Imported, Parts};
use crate::context::{cut_chars, cut_lines};
use crate::message::{escape_html, parts};
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

    fn from_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        crate::apprise::schemes::telegram(parts)
    }
}
