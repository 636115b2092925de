//! A digest's email: a plain-text part and an HTML part, each with a section per watch (its name
//! linked, then each event's line and its changed lines, added and removed marked as in a
//! change's email), bounded so that the whole message stays well under 1 MiB.

use driftwatch_core::text::count;

use super::{DigestVars, WatchGroup, tail};
use crate::context::{Context, cut_chars, cut_lines};
use crate::kinds::email::{FOOT, HEAD, diff_table};
use crate::message::escape_html;

/// Most changed lines shown for one event.
const EVENT_LINES: usize = 20;
/// Most characters of changed lines shown for one event.
const EVENT_CHARS: usize = 4000;
/// Most bytes of the plain-text part (the HTML part gets twice as much): with both parts
/// encoded for the wire, the message stays under 1 MiB.
const TEXT_BYTES: usize = 200 * 1024;

/// The plain-text part.
pub(crate) fn text(context: &Context) -> String {
    let digest = &context.digest;
    let mut out = String::new();
    if !digest.summary.trim().is_empty() {
        out.push_str(&format!("{}\n\n", cut_chars(digest.summary.trim(), 4000)));
    }
    out.push_str(&format!("{}\n", context.summary));
    let not_shown = sections(digest, TEXT_BYTES, &mut out, text_section);
    if let Some(tail) = tail(not_shown, super::Style::Plain) {
        out.push_str(&format!("\n{tail}\n"));
    }
    if context.link.starts_with("http") {
        out.push_str(&format!("\nSee every change: {}\n", context.link));
    }
    out.push_str("\n-- \nSent by driftwatch\n");
    out
}

/// The HTML part.
pub(crate) fn html(context: &Context, subject: &str) -> String {
    let digest = &context.digest;
    let mut out = String::from(HEAD);
    out.push_str(&format!("<h1 style=\"font-size:20px;margin:0 0 8px\">{}</h1>", escape_html(subject)));
    if !digest.summary.trim().is_empty() {
        let summary = escape_html(&cut_chars(digest.summary.trim(), 4000)).replace('\n', "<br>");
        out.push_str(&format!("<p style=\"margin:0 0 12px\">{summary}</p>"));
    }
    out.push_str(&format!("<p style=\"margin:0 0 12px;color:#656d76\">{}</p>", escape_html(&context.summary)));
    let not_shown = sections(digest, 2 * TEXT_BYTES, &mut out, html_section);
    if let Some(tail) = tail(not_shown, super::Style::Html) {
        out.push_str(&format!("<p style=\"color:#656d76\">{tail}</p>"));
    }
    if context.link.starts_with("http") {
        out.push_str(&format!("<p><a href=\"{}\">See every change in driftwatch</a></p>", escape_html(&context.link)));
    }
    out.push_str(FOOT);
    out
}

/// A watch's section within some bytes: the section and how many of its events it shows.
type Section = fn(&WatchGroup, usize) -> (String, usize);

/// Appends a section per watch while `out` stays within `max` bytes; returns how many events
/// are not shown (left out of the payload, or here).
fn sections(digest: &DigestVars, max: usize, out: &mut String, section: Section) -> usize {
    let mut not_shown = digest.omitted;
    for watch in &digest.watches {
        let (block, shown) = section(watch, max.saturating_sub(out.len()));
        not_shown += watch.count - shown;
        if shown > 0 {
            out.push_str(&block);
        }
    }
    not_shown
}

/// One watch in plain text.
fn text_section(watch: &WatchGroup, room: usize) -> (String, usize) {
    let mut out = format!("\n== {} ({}) ==\n", watch.name, count(watch.count, "event"));
    if !watch.link.is_empty() {
        out.push_str(&format!("{}\n", watch.link));
    }
    let mut shown = 0;
    for item in &watch.items {
        let mut piece = format!("\n* {}\n", item.summary);
        if item.link != watch.link && !item.link.is_empty() {
            piece.push_str(&format!("  {}\n", item.link));
        }
        let lines: Vec<String> =
            item.lines.iter().map(|l| format!("  {} {}", if l.op == "added" { '+' } else { '-' }, l.text)).collect();
        if !lines.is_empty() {
            piece.push_str(&cut_lines(&lines, EVENT_LINES, EVENT_CHARS));
            piece.push('\n');
        }
        if out.len() + piece.len() > room {
            break;
        }
        out.push_str(&piece);
        shown += 1;
    }
    (out, shown)
}

/// One watch in HTML: a heading with its name linked, then each event.
fn html_section(watch: &WatchGroup, room: usize) -> (String, usize) {
    let name = escape_html(&watch.name);
    let heading = if watch.link.starts_with("http") {
        format!("<a href=\"{}\" style=\"color:#0969da\">{name}</a>", escape_html(&watch.link))
    } else {
        name
    };
    let mut out = format!(
        "<h2 style=\"font-size:17px;margin:24px 0 4px\">{heading} <span style=\"color:#656d76;font-weight:normal;font-size:14px\">({})</span></h2>",
        count(watch.count, "event")
    );
    let mut shown = 0;
    for item in &watch.items {
        let summary = escape_html(&item.summary);
        let summary = if item.link.starts_with("http") {
            format!("<a href=\"{}\" style=\"color:#1f2328\">{summary}</a>", escape_html(&item.link))
        } else {
            summary
        };
        let changed: Vec<_> = item.lines.iter().collect();
        let piece = format!(
            "<p style=\"margin:8px 0 4px\">{summary}</p>{}",
            diff_table(&changed, &item.link, EVENT_LINES, EVENT_CHARS)
        );
        if out.len() + piece.len() > room {
            break;
        }
        out.push_str(&piece);
        shown += 1;
    }
    (out, shown)
}
