//! A digest: the events an endpoint gathered over a period, told in one message. Each gathered
//! event is read back as it would be alone ([`Context`]), so a digest's line about it says what
//! its own message would; the lines are grouped by watch, in order of first appearance.
//! [`DigestVars`] is what templates see (`digest.*`); `text` is the chat kinds' message and
//! `email` the email's parts.

pub(crate) mod email;

use std::collections::HashMap;

use driftwatch_alert::v1;
use driftwatch_core::text::count;
use serde::Serialize;
use serde_json::Value;

use crate::context::{Context, Line, WatchVars, cut_chars};
use crate::message::{escape_html, when};

/// Most added (and removed, and changed) lines each gathered event keeps.
const ITEM_LINES: usize = 50;
/// Most characters of one such line.
const LINE_CHARS: usize = 1000;
/// Most characters of a watch's name in a digest.
const NAME_CHARS: usize = 200;
/// Most characters of one event's line in a chat message.
const SUMMARY_CHARS: usize = 300;

/// `digest.*`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DigestVars {
    /// How many events the period gathered (shown or not).
    pub count: usize,
    /// Events gathered but left out of the payload.
    pub omitted: usize,
    /// The period's start, RFC 3339 in UTC.
    pub period_start: String,
    /// Its end, RFC 3339 in UTC.
    pub period_end: String,
    /// A language model's summary of the period, or empty.
    pub summary: String,
    /// Each gathered event, oldest first.
    pub items: Vec<Item>,
    /// The same events grouped by watch, in order of first appearance.
    pub watches: Vec<WatchGroup>,
}

/// One gathered event: an item of `digest.items`.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// `evt_...`.
    pub id: String,
    /// `change.detected`, `check.failed`, ...
    #[serde(rename = "type")]
    pub event_type: String,
    /// When it happened, RFC 3339 in UTC.
    pub time: String,
    /// The watch (`id`, `name`, `url`).
    pub watch: WatchVars,
    /// The change in driftwatch's UI when a public URL is set, else the watched URL.
    pub link: String,
    /// What its own message would say.
    pub summary: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The added lines' text (at most 50).
    pub added_lines: Vec<String>,
    /// The removed lines' text (at most 50).
    pub removed_lines: Vec<String>,
    /// The changed lines in order, for the email.
    #[serde(skip)]
    pub(crate) lines: Vec<Line>,
}

/// One watch's events: an item of `digest.watches`.
#[derive(Debug, Clone, Serialize)]
pub struct WatchGroup {
    /// `wat_...`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The watched page.
    pub url: String,
    /// Its change (one event) or its page (several) in driftwatch's UI when a public URL is
    /// set, else the watched URL.
    pub link: String,
    /// How many of its events the digest shows.
    pub count: usize,
    /// Those events.
    pub items: Vec<Item>,
}

/// The variables of a digest. An item that is not a watch's event this crate can read (a
/// malformed one, an endpoint event, a digest) is skipped.
pub(crate) fn build(digest: &v1::Digest, public: Option<&str>) -> DigestVars {
    let items: Vec<Item> = digest.events.iter().filter_map(|event| item(event, public)).collect();
    let mut watches: Vec<WatchGroup> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for item in &items {
        let at = *index.entry(item.watch.id.clone()).or_insert_with(|| {
            watches.push(WatchGroup {
                id: item.watch.id.clone(),
                name: item.watch.name.clone(),
                url: item.watch.url.clone(),
                link: String::new(),
                count: 0,
                items: Vec::new(),
            });
            watches.len() - 1
        });
        watches[at].count += 1;
        watches[at].items.push(item.clone());
    }
    for watch in &mut watches {
        watch.link = match (public, watch.items.as_slice()) {
            (Some(_), [only]) => only.link.clone(),
            (Some(base), _) => format!("{base}/watches/{}", watch.id),
            (None, _) => watch.url.clone(),
        };
    }
    DigestVars {
        count: digest.count,
        omitted: digest.omitted,
        period_start: digest.period.start.clone(),
        period_end: digest.period.end.clone(),
        summary: digest.summary.clone().unwrap_or_default(),
        items,
        watches,
    }
}

/// One gathered event, read as its own message would read it.
fn item(event: &Value, public: Option<&str>) -> Option<Item> {
    let parsed = v1::Payload::parse(&event.to_string())?;
    if matches!(parsed, v1::Payload::Endpoint(_) | v1::Payload::Digest(_)) {
        return None;
    }
    let event_type = event.get("type")?.as_str()?;
    let id = event.pointer("/data/event_id").and_then(Value::as_str).unwrap_or_default();
    let context = Context::of(id, event_type, Value::Null, Some(parsed), "", public);
    let cap = |lines: &[String]| lines.iter().take(ITEM_LINES).map(|l| cut_chars(l, LINE_CHARS)).collect();
    let lines = context
        .diff
        .lines
        .iter()
        .filter(|l| l.op != "context")
        .take(ITEM_LINES)
        .map(|l| Line { op: l.op, text: cut_chars(&l.text, LINE_CHARS), words: l.words.clone() })
        .collect();
    Some(Item {
        id: id.to_owned(),
        event_type: event_type.to_owned(),
        added_lines: cap(&context.diff.added_lines),
        removed_lines: cap(&context.diff.removed_lines),
        lines,
        time: context.event.time,
        watch: WatchVars { tags: Vec::new(), ..context.watch },
        link: context.link,
        summary: context.summary,
        added: context.diff.added,
        removed: context.diff.removed,
    })
}

/// The default title: "driftwatch digest: 5 changes on 3 watches", or "driftwatch digest:
/// nothing changed".
pub(crate) fn title(digest: &DigestVars) -> String {
    match (digest.count, digest.watches.len()) {
        (0, _) => "driftwatch digest: nothing changed".to_owned(),
        (n, 0) => format!("driftwatch digest: {}", count(n, "change")),
        (n, w) => format!("driftwatch digest: {} on {}", count(n, "change"), count(w, "watch")),
    }
}

/// One sentence for the whole digest: "Nothing changed between Mon 7 Dec 08:00 and Tue 8 Dec
/// 08:00 UTC", "5 changes on 3 watches between …".
pub(crate) fn sentence(digest: &DigestVars) -> String {
    let period = format!("between {} and {} UTC", when(&digest.period_start), when(&digest.period_end));
    match (digest.count, digest.watches.len()) {
        (0, _) => format!("Nothing changed {period}"),
        (n, 0) => format!("{} {period}", count(n, "change")),
        (n, w) => format!("{} on {} {period}", count(n, "change"), count(w, "watch")),
    }
}

/// How a chat kind marks up a digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Plain text, links written out.
    Plain,
    /// Markdown (Discord, Mattermost, Teams): `**[name](link)**`.
    Markdown,
    /// Slack's mrkdwn: `*<link|name>*`.
    Slack,
    /// HTML (Telegram's subset, Matrix): `<b><a href="link">name</a></b>`, text escaped.
    Html,
}

impl Style {
    /// `text` escaped for this style (Markdown is left as the other messages leave it).
    fn escape(self, text: &str) -> String {
        match self {
            Style::Plain | Style::Markdown => text.to_owned(),
            Style::Slack => text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;"),
            Style::Html => escape_html(text),
        }
    }

    /// `name` linked to `link` (when it is a web address), in bold.
    fn linked(self, name: &str, link: &str) -> String {
        let name = &cut_chars(name, NAME_CHARS);
        let web = link.starts_with("http");
        match self {
            Style::Plain if web => format!("{name}: {link}"),
            Style::Plain => name.to_owned(),
            Style::Markdown if web => {
                let name: String = name.chars().map(|c| if matches!(c, '[' | ']') { '|' } else { c }).collect();
                format!("**[{name}]({})**", link.replace(')', "%29").replace(' ', "%20"))
            }
            Style::Markdown => format!("**{name}**"),
            Style::Slack if web => format!("*<{link}|{}>*", self.escape(name).replace('|', "¦")),
            Style::Slack => format!("*{}*", self.escape(name)),
            Style::Html if web => format!("<b><a href=\"{}\">{}</a></b>", escape_html(link), escape_html(name)),
            Style::Html => format!("<b>{}</b>", escape_html(name)),
        }
    }
}

/// The lines before the watches: the model's summary, then what the period held.
pub(crate) fn head(context: &Context, style: Style, max: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let summary = context.digest.summary.trim();
    if !summary.is_empty() {
        lines.push(fit(style, summary, max / 2));
    }
    lines.push(fit(style, &context.summary, max / 4));
    lines
}

/// `text` escaped for `style` in at most `max` characters (cut before escaping, so no escape
/// is cut in half).
fn fit(style: Style, text: &str, max: usize) -> String {
    let mut chars = max;
    loop {
        let escaped = style.escape(&cut_chars(text, chars));
        let len = escaped.chars().count();
        if len <= max || chars == 0 {
            return escaped;
        }
        chars = chars.saturating_sub((len - max).max(1));
    }
}

/// One watch's block, at most `room` characters: its name linked and its count of events, then
/// a line per event. Returns the block and how many of its events it shows (`None`: not even
/// its first line fits).
pub(crate) fn watch_block(watch: &WatchGroup, style: Style, room: usize) -> Option<(String, usize)> {
    let mut block = format!("{} ({})", style.linked(&watch.name, &watch.link), count(watch.count, "event"));
    let mut shown = 0;
    for item in &watch.items {
        let line = format!("\n• {}", fit(style, &item.summary, SUMMARY_CHARS));
        if block.chars().count() + line.chars().count() > room {
            break;
        }
        block.push_str(&line);
        shown += 1;
    }
    (shown > 0).then_some((block, shown))
}

/// "… and 3 more events not shown", or nothing.
pub(crate) fn tail(not_shown: usize, style: Style) -> Option<String> {
    (not_shown > 0).then(|| style.escape(&format!("… and {} not shown", count(not_shown, "more event"))))
}

/// Room kept for the tail.
const TAIL: usize = 60;

/// A chat message's text for a digest, at most `max` characters: the head, a block per watch,
/// and how many events were left out (by the digest's cap, or to fit).
pub(crate) fn text(context: &Context, style: Style, max: usize) -> String {
    let digest = &context.digest;
    let mut out = head(context, style, max).join("\n");
    let mut not_shown = digest.omitted;
    let mut full = false;
    for watch in &digest.watches {
        let room = max.saturating_sub(out.chars().count() + 2 + TAIL);
        match (full, watch_block(watch, style, room)) {
            (false, Some((block, shown))) => {
                out.push_str("\n\n");
                out.push_str(&block);
                not_shown += watch.count - shown;
                full = shown < watch.count;
            }
            _ => {
                full = true;
                not_shown += watch.count;
            }
        }
    }
    if let Some(tail) = tail(not_shown, style) {
        out.push_str("\n\n");
        out.push_str(&tail);
    }
    cut_chars(&out, max)
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
