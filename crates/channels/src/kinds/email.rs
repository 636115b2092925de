//! The email kind's message: a whole RFC 5322 message (multipart/alternative with a plain-text
//! and an HTML part), built once at enqueue and sent byte for byte on every attempt.

use std::time::{Duration, UNIX_EPOCH};

use driftwatch_core::FieldError;
use lettre::message::{Mailbox, MultiPart};

use super::{EndpointKind, Field, Input, Kind, Message, Spec, Target, Transport};
use crate::apprise::{ImportError, Imported, Parts, fail};
use crate::context::{Context, Line, cut_lines};
use crate::message::{Templates, escape_html};
use crate::outgoing::Outgoing;
use crate::settings::{Secrets, Settings};
use crate::template;
use serde_json::{Map, Value, json};

/// Email over SMTP.
pub struct Email;

/// How an email endpoint talks to its SMTP server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Security {
    /// Plain connection upgraded with STARTTLS, which is required (port 587).
    #[default]
    Starttls,
    /// TLS from the first byte (port 465).
    Tls,
    /// No TLS at all: only for a relay on the same machine or network (port 25).
    Plain,
}

impl Security {
    /// The endpoint's choice (STARTTLS when none is set).
    pub fn of(settings: &Settings) -> Security {
        match settings.text("security") {
            Some("tls") => Security::Tls,
            Some("plain") => Security::Plain,
            _ => Security::Starttls,
        }
    }
}

static SPEC: Spec = Spec {
    label: "Email over SMTP",
    url_hint: "The SMTP server: smtp://host:port.",
    default_url: None,
    fields: &[
        Field::setting("from", "From", Input::Text, "The sender, like driftwatch <alerts@example.com>.").required(),
        Field::setting("to", "To", Input::List { max: 50 }, "Recipients, separated by commas.").required(),
        Field::setting(
            "security",
            "Security",
            Input::Select(&[("starttls", "STARTTLS"), ("tls", "TLS"), ("plain", "None (local relay only)")]),
            "STARTTLS (587), TLS (465), or none for a local relay (25).",
        ),
        Field::setting("username", "SMTP user", Input::Text, "Leave empty when the server needs no sign-in."),
        Field::secret("password", "SMTP password", Input::Password, "Stored encrypted; never shown again."),
    ],
    transport: Transport::Smtp,
    signed: false,
    credential_url: false,
    apprise: &["mailto", "mailtos"],
};

impl Kind for Email {
    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn check(&self, url: &str, settings: &Settings, secrets: &Secrets) -> Result<(), FieldError> {
        let parsed = url::Url::parse(url).map_err(|e| FieldError::new("url", format!("not a URL: {e}")))?;
        if parsed.scheme() != "smtp" || parsed.host_str().is_none_or(str::is_empty) {
            return Err(FieldError::new("url", "an email endpoint's URL is its SMTP server: smtp://host:port"));
        }
        let from = settings.text("from").unwrap_or_default();
        from.parse::<Mailbox>().map_err(|e| FieldError::new("settings.from", format!("not an email address: {e}")))?;
        let to = settings.list("to");
        if to.is_empty() {
            return Err(FieldError::new("settings.to", "one to 50 recipients"));
        }
        for (i, to) in to.iter().enumerate() {
            to.parse::<Mailbox>()
                .map_err(|e| FieldError::new(format!("settings.to[{i}]"), format!("not an email address: {e}")))?;
        }
        if secrets.has("password") && settings.text("username").is_none() {
            return Err(FieldError::new("settings.username", "a password needs a username"));
        }
        Ok(())
    }

    fn message(&self, m: Message<'_>) -> Result<Vec<u8>, String> {
        message(m.settings, m.context, m.templates, m.endpoint_id)
    }

    fn preview(&self, m: Message<'_>) -> Result<String, String> {
        preview(m.context, m.templates)
    }

    fn request<'a>(&self, _: Target<'_>, _: &str, _: &'a [u8]) -> Result<Outgoing<'a>, String> {
        Err("email is sent over SMTP, not HTTP".to_owned())
    }

    fn parse_apprise(&self, parts: &Parts) -> Result<Imported, ImportError> {
        apprise(parts)
    }
}

/// Most diff lines in an email.
const MAX_LINES: usize = 300;
/// Most characters of diff in an email.
const MAX_CHARS: usize = 60_000;

/// The message for one event, formatted. `endpoint_id` makes its `Message-ID` unique per
/// recipient endpoint and stable across retries.
fn message(
    settings: &Settings,
    context: &Context,
    templates: Templates<'_>,
    endpoint_id: &str,
) -> Result<Vec<u8>, String> {
    let from: Mailbox = settings.text("from").unwrap_or_default().parse().map_err(|e| format!("from: {e}"))?;
    let subject = subject(context, templates)?;
    let (text, html) = match templated_text(context, templates)? {
        Some(text) => {
            let html = format!("{}<pre style=\"{PRE}\">{}</pre>{}", HEAD, escape_html(&text), FOOT);
            (text, html)
        }
        None if context.event.event_type == "digest" => {
            (crate::digest::email::text(context), crate::digest::email::html(context, &subject))
        }
        None => (default_text(context), default_html(context, &subject)),
    };
    let mut builder = lettre::Message::builder()
        .from(from)
        .subject(subject)
        .message_id(Some(format!("<{}.{}@driftwatch>", context.event.id, endpoint_id)));
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(&context.event.time) {
        builder = builder.date(UNIX_EPOCH + Duration::from_secs(u64::try_from(at.timestamp()).unwrap_or(0)));
    }
    for to in settings.list("to") {
        builder = builder.to(to.parse::<Mailbox>().map_err(|e| format!("to: {e}"))?);
    }
    let message = builder
        .multipart(MultiPart::alternative_plain_html(text, html))
        .map_err(|e| format!("the email could not be built: {e}"))?;
    Ok(message.formatted())
}

/// What the email would say, for a preview: its subject, a blank line, its text part.
fn preview(context: &Context, templates: Templates<'_>) -> Result<String, String> {
    let subject = subject(context, templates)?;
    let text = templated_text(context, templates)?.unwrap_or_else(|| match context.event.event_type.as_str() {
        "digest" => crate::digest::email::text(context),
        _ => default_text(context),
    });
    Ok(format!("Subject: {subject}\n\n{text}"))
}

/// The subject: the title template's output on one line, or the default.
fn subject(context: &Context, templates: Templates<'_>) -> Result<String, String> {
    Ok(match templates.title.filter(|t| !t.trim().is_empty()) {
        Some(source) => template::render(source, context)?.replace(['\r', '\n'], " ").trim().to_owned(),
        None => default_subject(context),
    })
}

/// The body template's output, when the endpoint has one.
fn templated_text(context: &Context, templates: Templates<'_>) -> Result<Option<String>, String> {
    templates.body.filter(|t| !t.trim().is_empty()).map(|source| template::render(source, context)).transpose()
}

fn default_subject(context: &Context) -> String {
    match context.event.event_type.as_str() {
        "change.detected" => {
            format!(
                "{} changed ({})",
                context.watch.name,
                crate::message::line_counts(context.diff.added, context.diff.removed)
            )
        }
        "digest" => crate::message::default_title(context),
        _ => context.summary.clone(),
    }
}

fn default_text(context: &Context) -> String {
    let mut text = format!("{}\n", crate::message::said(context));
    if !context.watch.url.is_empty() {
        text.push_str(&format!("Page: {}\n", context.watch.url));
    }
    if !context.link.is_empty() && context.link != context.watch.url {
        text.push_str(&format!("See the change: {}\n", context.link));
    }
    let lines = context.changed_lines();
    if !lines.is_empty() {
        text.push('\n');
        text.push_str(&cut_lines(&lines, MAX_LINES, MAX_CHARS));
        text.push('\n');
    }
    text.push_str("\n-- \nSent by driftwatch\n");
    text
}

pub(crate) const HEAD: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"color-scheme\" content=\"light\"></head><body style=\"font-family:system-ui,-apple-system,'Segoe UI',sans-serif;line-height:1.5;color:#1f2328;background:#ffffff;max-width:720px;margin:0 auto;padding:16px\">";
pub(crate) const FOOT: &str =
    "<p style=\"color:#656d76;font-size:13px;margin-top:24px\">Sent by driftwatch</p></body></html>";
pub(crate) const PRE: &str = "white-space:pre-wrap;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace";
pub(crate) const ADDED: &str = "background:#dafbe1;color:#116329";
pub(crate) const REMOVED: &str = "background:#ffebe9;color:#82071e";

/// The HTML part: the title, the page, a button to the change, and the diff with added and
/// removed words marked as the UI marks them (inline styles: mail clients drop style sheets).
fn default_html(context: &Context, subject: &str) -> String {
    let mut html = String::from(HEAD);
    html.push_str(&format!("<h1 style=\"font-size:20px;margin:0 0 8px\">{}</h1>", escape_html(subject)));
    let said = escape_html(&crate::message::said(context)).replace('\n', "<br>");
    html.push_str(&format!("<p style=\"margin:0 0 12px\">{said}</p>"));
    if !context.watch.url.is_empty() {
        html.push_str(&format!(
            "<p style=\"margin:0 0 12px\">Page: <a href=\"{0}\">{0}</a></p>",
            escape_html(&context.watch.url)
        ));
    }
    if context.link.starts_with("http") && context.link != context.watch.url {
        html.push_str(&format!(
            "<p><a href=\"{}\" style=\"display:inline-block;background:#0969da;color:#fff;padding:8px 14px;border-radius:6px;text-decoration:none\">See the change in driftwatch</a></p>",
            escape_html(&context.link)
        ));
    }
    let changed: Vec<_> = context.diff.lines.iter().filter(|l| l.op != "context").collect();
    html.push_str(&diff_table(&changed, &context.link, MAX_LINES, MAX_CHARS));
    html.push_str(FOOT);
    html
}

/// The changed `lines` as a table, added and removed words marked as the UI marks them, at
/// most `max_lines` lines and about `max_chars` characters; "… and N more lines" (linked to
/// `link` when it is a web address) when cut. Empty without lines.
pub(crate) fn diff_table(changed: &[&Line], link: &str, max_lines: usize, max_chars: usize) -> String {
    if changed.is_empty() {
        return String::new();
    }
    let mut html = format!(
        "<table role=\"presentation\" style=\"border-collapse:collapse;width:100%;{PRE}\" cellpadding=\"0\" cellspacing=\"0\">"
    );
    let mut chars = 0;
    let mut shown = 0;
    for line in changed {
        if shown >= max_lines || chars > max_chars {
            break;
        }
        let (sign, style, mark) = if line.op == "added" { ('+', ADDED, "ins") } else { ('-', REMOVED, "del") };
        let content = if line.words.is_empty() {
            escape_html(&line.text)
        } else {
            line.words
                .iter()
                .map(|w| {
                    if w.changed {
                        format!(
                            "<{mark} style=\"{style};font-weight:600;text-decoration:none\">{}</{mark}>",
                            escape_html(&w.text)
                        )
                    } else {
                        escape_html(&w.text)
                    }
                })
                .collect()
        };
        html.push_str(&format!(
            "<tr><td style=\"{style};padding:1px 8px;white-space:pre-wrap;word-break:break-word\">{sign} {content}</td></tr>"
        ));
        chars += line.text.len();
        shown += 1;
    }
    html.push_str("</table>");
    let more = changed.len() - shown;
    if more > 0 {
        html.push_str(&format!(
            "<p style=\"color:#656d76\">… and {more} more {}{}</p>",
            driftwatch_core::text::noun_for(more, "line"),
            if link.starts_with("http") {
                format!(": <a href=\"{}\">see them all</a>", escape_html(link))
            } else {
                String::new()
            }
        ));
    }
    html
}

fn apprise(p: &Parts) -> Result<Imported, ImportError> {
    let scheme = p.scheme.as_str();
    let user = p.query("user").map_or_else(|| p.user.clone(), str::to_owned);
    let password = p.query("pass").map_or_else(|| p.password.clone(), str::to_owned);
    // The sender's domain: the URL's host, or the user's when the user is an address.
    let domain = match (p.host.is_empty(), user.rsplit_once('@')) {
        (false, _) => p.host.clone(),
        (true, Some((_, domain))) => domain.to_owned(),
        (true, None) => String::new(),
    };
    let server = p.query("smtp").map_or_else(|| domain.clone(), str::to_owned);
    if server.is_empty() {
        return fail(scheme, "no mail server (give user:password@domain, or ?smtp=host)");
    }
    let Ok(server) = url::Host::parse(&server) else {
        return fail(scheme, "the mail server is not a host name or IP address");
    };
    // Apprise: `mailto` is plain (25), `mailtos` STARTTLS (587), `mode=` overrides. A `mailto`
    // without a port is taken as STARTTLS on 587 here, so that no password crosses in the clear
    // unless port 25 says so; port 465 is always TLS from the first byte.
    let (security, default_port) = match (p.query("mode").map(str::to_ascii_lowercase).as_deref(), p.port) {
        (Some("ssl" | "tls"), _) => ("tls", 465),
        (Some("starttls"), _) => ("starttls", 587),
        (Some("insecure" | "plain"), _) => ("plain", 25),
        (Some(_), _) => return fail(scheme, "mode= is not ssl, starttls or insecure"),
        (None, Some(465)) => ("tls", 465),
        (None, Some(25)) if scheme == "mailto" => ("plain", 25),
        (None, _) => ("starttls", 587),
    };
    let port = p.port.unwrap_or(default_port);
    let from = sender(p, &user, &domain)?;
    if p.query("bcc").is_some() {
        return fail(scheme, "blind copies (bcc=) are not supported; create one endpoint for them");
    }
    let to = recipients(p, &from);
    let mut settings = Map::new();
    settings.insert("from".into(), json!(from));
    settings.insert("to".into(), json!(to));
    settings.insert("security".into(), json!(security));
    let mut secrets = Map::new();
    if !user.is_empty() {
        settings.insert("username".into(), json!(user));
        if !password.is_empty() {
            secrets.insert("password".into(), json!(password));
        }
    } else if !password.is_empty() {
        return fail(scheme, "a password without a user (give user:password@domain or ?user=)");
    }
    Ok(Imported {
        kind: EndpointKind::Email,
        url: format!("smtp://{server}:{port}"),
        settings: Value::Object(settings),
        secrets: Value::Object(secrets),
    })
}

/// The sender of an Apprise mail URL: `?from=` (an address, or just a name for the address
/// made of the user and the domain), `?name=`.
fn sender(p: &Parts, user: &str, domain: &str) -> Result<String, ImportError> {
    let scheme = p.scheme.as_str();
    let derived = if user.contains('@') {
        user.to_owned()
    } else if !user.is_empty() && !domain.is_empty() {
        format!("{user}@{domain}")
    } else {
        String::new()
    };
    let (name, address) = match p.query("from") {
        Some(from) if from.contains('@') => (None, from.to_owned()),
        Some(name) => (Some(name.to_owned()), derived),
        None => (None, derived),
    };
    if address.is_empty() {
        return fail(scheme, "no sender (give user@domain, or ?from=address)");
    }
    let from = match (name.or_else(|| p.query("name").map(str::to_owned)), address.parse::<lettre::Address>()) {
        (Some(name), Ok(address)) => lettre::message::Mailbox::new(Some(name), address).to_string(),
        _ => address,
    };
    Ok(from)
}

/// The recipients: the path, `?to=` and `?cc=`; the sender when no one else is named, as
/// Apprise does.
fn recipients(p: &Parts, from: &str) -> Vec<String> {
    let mut to = Vec::new();
    for target in p.path.iter().map(String::as_str).chain(p.query("to")).chain(p.query("cc")) {
        for piece in target.split([',', ';']).map(str::trim).filter(|s| !s.is_empty()) {
            if piece.contains('<') {
                to.push(piece.to_owned());
            } else {
                to.extend(piece.split_whitespace().map(str::to_owned));
            }
        }
    }
    if to.is_empty() {
        // Apprise mails the sender when no one else is named.
        let bare = from.rsplit_once('<').map_or(from, |(_, a)| a.trim_end_matches('>'));
        to.push(bare.to_owned());
    }
    to
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_multipart_message_with_both_parts() {
        let settings = Settings::parse(r#"{"from":"driftwatch <dw@example.com>","to":["ops@example.com"]}"#);
        let context = Context::sample(Some("https://dw.example"));
        let raw = message(&settings, &context, Templates::default(), "end_1").expect("builds");
        let text = String::from_utf8(raw).expect("utf-8");
        assert!(text.contains("Subject: Coffee shop changed (+2 lines / -1 line)"), "{text}");
        assert!(text.contains("multipart/alternative"), "{text}");
        assert!(text.contains("Message-ID: <evt_sample.end_1@driftwatch>"), "{text}");
        assert!(text.contains("text/html"), "{text}");
    }

    #[test]
    fn a_subject_template_cannot_inject_headers() {
        let settings = Settings::parse(r#"{"from":"dw@example.com","to":["ops@example.com"]}"#);
        let context = Context::sample(None);
        let raw =
            message(&settings, &context, Templates { title: Some("Hi\r\nBcc: x@evil.example"), body: None }, "end_1")
                .expect("builds");
        let text = String::from_utf8(raw).expect("utf-8");
        assert!(!text.contains("\r\nBcc:"), "{text}");
    }
}
