//! What every kind's message is made of: its title and text (the endpoint's templates, or the
//! defaults), the sentences that say what happened, and the cuts to a provider's limits. Each
//! kind shapes them in its own file under `kinds/`.

use driftwatch_alert::v1;
use driftwatch_core::EventType;
use driftwatch_core::text::count;

use crate::context::{Context, cut_chars, cut_lines};
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
pub(crate) struct Parts {
    /// The title.
    pub(crate) title: String,
    /// The template's text, when the endpoint has a body template.
    pub(crate) text: Option<String>,
}

pub(crate) fn parts(context: &Context, templates: Templates<'_>) -> Result<Parts, String> {
    let title = match templates.title.filter(|t| !t.trim().is_empty()) {
        Some(source) => template::render(source, context)?.trim().to_owned(),
        None => default_title(context),
    };
    let text = templates.body.filter(|t| !t.trim().is_empty()).map(|s| template::render(s, context)).transpose()?;
    Ok(Parts { title, text })
}

pub(crate) fn default_title(context: &Context) -> String {
    let name = &context.watch.name;
    // Every type by name, so that a new one cannot fall through to the test message's title.
    match context.event.event_type.parse::<EventType>() {
        Ok(EventType::ChangeDetected) => match context.ai.summary.trim() {
            "" => format!("{name} changed"),
            // The title says what the model's summary says, cut to a title's length.
            summary => format!("{name}: {}", cut_chars(first_sentence(summary), TITLE_SUMMARY_CHARS)),
        },
        Ok(EventType::CheckFailed) => format!("{name} is failing"),
        Ok(EventType::SelectorMissing) => format!("{name}: the watched element is missing"),
        Ok(EventType::ValueMissing) => format!("{name}: a value could not be read"),
        Ok(EventType::CheckRecovered) => format!("{name} recovered"),
        Ok(EventType::CheckBlocked) => format!("{name} is blocked by a bot wall"),
        Ok(EventType::LoginRequired) => format!("{name}: signing in failed"),
        Ok(EventType::ConditionMet) => format!("{name}: conditions met"),
        Ok(EventType::ConditionCleared) => format!("{name}: conditions no longer met"),
        Ok(EventType::ExpectationMissed) => match context.expectation.kind.as_str() {
            "change" => format!("{name}: expected change missed"),
            _ => format!("{name}: expectation no longer met"),
        },
        Ok(EventType::ExpectationMet) => match context.expectation.kind.as_str() {
            "change" => format!("{name}: changed again as expected"),
            _ => format!("{name}: expectation met again"),
        },
        Ok(EventType::Digest) => crate::digest::title(&context.digest),
        Ok(EventType::EndpointDisabled) => "driftwatch disabled an endpoint".to_owned(),
        Ok(EventType::EndpointTest) | Err(_) => "driftwatch test message".to_owned(),
    }
}

/// Most characters of a model's summary in a title (an email subject, a chat title).
const TITLE_SUMMARY_CHARS: usize = 120;

/// The first sentence of `text` (up to its first `. `, or all of it).
fn first_sentence(text: &str) -> &str {
    let line = text.lines().next().unwrap_or(text);
    match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    }
}

/// The summary, then what an expectation event adds to it: the rule on a line of its own
/// ("Expected: a change within 7 days") and, for a `change` expectation, its reasons.
pub(crate) fn said(context: &Context) -> String {
    let mut text = context.summary.clone();
    let e = &context.expectation;
    if !e.rule.is_empty() {
        text.push_str(&format!("\nExpected: {}", e.rule));
        // A `values` expectation's reasons are in its summary already.
        if e.kind == "change" {
            for reason in &e.reasons {
                text.push_str(&format!("\n• {reason}"));
            }
        }
    }
    text
}

/// The default plain text: the summary, the link, the changed lines within `max` characters
/// (a digest: a line per watch, see [`crate::digest`]).
pub(crate) fn default_text(context: &Context, max: usize, max_lines: usize) -> String {
    if context.event.event_type == "digest" {
        return crate::digest::text(context, crate::digest::Style::Plain, max);
    }
    let mut head = said(context);
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
pub(crate) fn cut_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = crate::context::char_floor(text, max - '…'.len_utf8());
    format!("{}…", &text[..end])
}

/// The values that moved, in words: `price 67.00 → 45.00 EUR (-32.84%); stock in_stock → out_of_stock`.
/// Amounts read as the watch page and the conditions' reasons show them (`67.00 EUR`).
pub fn value_changes_sentence(changes: &[v1::ValueChange]) -> String {
    changes
        .iter()
        .map(|c| {
            let currency = c.currency.as_deref().map(|c| format!(" {c}")).unwrap_or_default();
            let percent = c.change_percent.map(|p| format!(" ({p:+}%)")).unwrap_or_default();
            format!("{} {} → {}{currency}{percent}", c.name, c.from_text(), c.to_text())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A change's size in words, for every kind's default message: `+1 line / -2 lines`.
pub fn line_counts(added: usize, removed: usize) -> String {
    format!("+{} / -{}", count(added, "line"), count(removed, "line"))
}

/// How long a watch has been failing, in words: `(1 check in a row)`, `(3 checks in a row)`.
pub fn in_a_row(failures: i32) -> String {
    format!("({} in a row)", count(failures, "check"))
}

/// One sentence for `condition.met` / `condition.cleared`: "Widget (https://…): conditions
/// met: price 44.00 EUR is below 45".
pub fn condition_sentence(event_type: EventType, data: &v1::ConditionEvent) -> String {
    let state = if event_type == EventType::ConditionMet { "conditions met" } else { "conditions no longer met" };
    format!("{} ({}): {state}: {}", data.watch.name, data.watch.url, data.reasons.join("; "))
}

/// One sentence for `expectation.missed` / `expectation.met`: "Status page did not change
/// within 7 days (deadline Mon 14 Dec 10:00 UTC; last change 7 Dec)", "Shop no longer meets
/// price below 50: price 55.00 EUR is not below 50".
pub fn expectation_sentence(event_type: EventType, data: &v1::ExpectationEvent) -> String {
    let (name, e) = (&data.watch.name, &data.expectation);
    let met = event_type == EventType::ExpectationMet;
    if e.kind == "change" {
        let mut notes = Vec::new();
        if let Some(deadline) = &e.deadline {
            notes.push(format!("{} {} UTC", if met { "next deadline" } else { "deadline" }, when(deadline)));
        }
        if !met {
            notes.push(match &e.last_change {
                Some(at) => format!("last change {}", day(at)),
                None => "no change since its first check".to_owned(),
            });
        }
        let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
        return match (met, e.rule.strip_prefix("a change ")) {
            (true, _) => format!("{name} changed again as expected{notes}"),
            (false, Some(within)) => format!("{name} did not change {within}{notes}"),
            (false, None) => format!("{name} did not change as expected ({}){notes}", e.rule),
        };
    }
    let mut sentence =
        if met { format!("{name} meets {} again", e.rule) } else { format!("{name} no longer meets {}", e.rule) };
    if !e.reasons.is_empty() {
        sentence.push_str(": ");
        sentence.push_str(&e.reasons.join("; "));
    }
    sentence
}

/// An RFC 3339 time as people read it in UTC: "Mon 14 Dec 10:00" (the text itself when it is
/// not a time).
pub fn when(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.to_utc().format("%a %-d %b %H:%M").to_string())
        .unwrap_or_else(|_| rfc3339.to_owned())
}

/// An RFC 3339 time's day in UTC: "7 Dec" (the text itself when it is not a time).
pub fn day(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.to_utc().format("%-d %b").to_string())
        .unwrap_or_else(|_| rfc3339.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_type_has_its_own_title() {
        let mut context = Context::sample(None);
        for event_type in EventType::ALL {
            context.event.event_type = event_type.as_str().to_owned();
            let title = default_title(&context);
            let is_test = *event_type == EventType::EndpointTest;
            assert_eq!(title == "driftwatch test message", is_test, "{event_type}: {title}");
        }
        context.event.event_type = "check.selector_missing".into();
        assert_eq!(line_counts(1, 2), "+1 line / -2 lines");
        assert_eq!(line_counts(0, 1), "+0 lines / -1 line");
        assert_eq!((in_a_row(1), in_a_row(3)), ("(1 check in a row)".into(), "(3 checks in a row)".into()));
        assert_eq!(default_title(&context), "Coffee shop: the watched element is missing");
    }

    #[test]
    fn a_models_summary_is_the_title_and_the_first_line() {
        let change = driftwatch_diff::diff_texts("Price: 67 EUR\n", "Price: 45 EUR\n", "snp_a", "snp_b");
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.to_utc()).expect("time");
        let watch = driftwatch_alert::WatchRef { id: "wat_1", name: "Shop", url: "https://example.com/" };
        let pair = driftwatch_alert::SnapshotPair { previous: "snp_a", current: "snp_b" };
        let plain = driftwatch_alert::change_payload("evt_1", watch, &change, pair, at);
        let ai = v1::Ai {
            important: Some(true),
            reason: Some("The price fell below 50 EUR.".into()),
            summary: Some("The price dropped from 67 EUR to 45 EUR. Stock is unchanged.".into()),
            model: Some("m".into()),
            error: None,
        };
        let judged = driftwatch_alert::with_ai(&plain, ai).expect("a change body");
        let context = Context::new("evt_1", "change.detected", &judged, "", None);
        assert_eq!(default_title(&context), "Shop: The price dropped from 67 EUR to 45 EUR.");
        assert!(default_text(&context, 1000, 10).starts_with("Shop: The price dropped from 67 EUR to 45 EUR. Stock"));
        assert_eq!((context.ai.important, context.ai.reason.as_str()), (Some(true), "The price fell below 50 EUR."));
        let without = Context::new("evt_1", "change.detected", &plain, "", None);
        assert_eq!(default_title(&without), "Shop changed");
    }
}
