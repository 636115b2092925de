//! What a message knows about an event: the variables templates see, built once per event
//! from its stored payload (the one contract every receiver gets), plus the watch's tags and
//! the link to the change in the UI.

use driftwatch_alert::v1;
use driftwatch_diff::LineOp;
use serde::Serialize;

pub use crate::digest::DigestVars;

/// Every variable a template may use. Every key is always present (empty when the event has no
/// such part), so a strict template fails on a misspelt name, never on an event type.
#[derive(Debug, Clone, Serialize)]
pub struct Context {
    /// The event.
    pub event: EventVars,
    /// The watch (empty for endpoint events).
    pub watch: WatchVars,
    /// The change (zero and empty unless `change.detected`).
    pub diff: DiffVars,
    /// The failing or recovered check (empty unless a check event).
    pub check: CheckVars,
    /// The endpoint an endpoint event is about (empty otherwise).
    pub endpoint: EndpointVars,
    /// What a language model made of the change (empty unless the watch has `options.ai`).
    pub ai: AiVars,
    /// What a watch was expected to do and how it went (empty unless `expectation.*`).
    pub expectation: ExpectationVars,
    /// The events a digest gathered (zero and empty unless `digest`).
    pub digest: DigestVars,
    /// The change in driftwatch's UI when `DRIFTWATCH_PUBLIC_URL` is set, else the watched URL.
    pub link: String,
    /// One sentence saying what happened.
    pub summary: String,
    /// The whole stored payload, as JSON.
    pub payload: serde_json::Value,
}

/// `event.*`.
#[derive(Debug, Clone, Serialize)]
pub struct EventVars {
    /// `evt_...`.
    pub id: String,
    /// `change.detected`, `check.failed`, ...
    #[serde(rename = "type")]
    pub event_type: String,
    /// When it happened, RFC 3339 in UTC.
    pub time: String,
}

/// `watch.*`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct WatchVars {
    /// `wat_...`.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The watched page.
    pub url: String,
    /// Its tags.
    pub tags: Vec<String>,
}

/// `diff.*`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DiffVars {
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The unified diff.
    pub unified: String,
    /// The changed lines in order, each `{op, text, words}`; `words` splits a line changed in
    /// place into `{changed, text}` pieces.
    pub lines: Vec<Line>,
    /// The added lines' text.
    pub added_lines: Vec<String>,
    /// The removed lines' text.
    pub removed_lines: Vec<String>,
}

/// One line of `diff.lines`.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// `added`, `removed` or `context`.
    pub op: &'static str,
    /// The line.
    pub text: String,
    /// Its pieces, when changed in place.
    pub words: Vec<Word>,
}

/// A piece of a line changed in place.
#[derive(Debug, Clone, Serialize)]
pub struct Word {
    /// Whether this piece differs from the other version.
    pub changed: bool,
    /// The piece.
    pub text: String,
}

/// `check.*`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckVars {
    /// Why the check failed.
    pub error: String,
    /// The page's status, when it answered.
    pub http_status: Option<i32>,
    /// Failures in a row.
    pub consecutive_failures: i32,
}

/// `ai.*`: a language model's verdict on a change (`data.ai`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct AiVars {
    /// Whether it matters for the watch's intent (`none` without an intent or a verdict).
    pub important: Option<bool>,
    /// Why.
    pub reason: String,
    /// What changed, in a sentence or two.
    pub summary: String,
    /// The model.
    pub model: String,
    /// Why there is no verdict.
    pub error: String,
}

/// `expectation.*`: what a watch was expected to do (`data.expectation`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExpectationVars {
    /// `change` (the page must change by a deadline) or `values` (its values must meet
    /// conditions).
    pub kind: String,
    /// What is expected, in words ("a change within 7 days").
    pub rule: String,
    /// Whether the expectation holds now (`false` on `expectation.missed`).
    pub holds: bool,
    /// The deadline that passed (missed) or the next one (met), RFC 3339 in UTC, or empty.
    pub deadline: String,
    /// When the page last changed before the event, RFC 3339 in UTC, or empty.
    pub last_change: String,
    /// Why, one sentence per deciding rule.
    pub reasons: Vec<String>,
    /// The snapshot the event was decided on, or empty.
    pub snapshot: String,
}

/// `endpoint.*`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EndpointVars {
    /// `end_...`.
    pub id: String,
    /// Its URL.
    pub url: String,
    /// Why it was disabled.
    pub reason: String,
}

impl Context {
    /// The variables of the event with this stored `payload`. `tags` is the watch's tags as
    /// stored (`,a,b,`); `public_url` the UI's base, if configured.
    pub fn new(event_id: &str, event_type: &str, payload: &str, tags: &str, public_url: Option<&str>) -> Context {
        let json = serde_json::from_str(payload).unwrap_or(serde_json::Value::Null);
        Context::of(event_id, event_type, json, v1::Payload::parse(payload), tags, public_url)
    }

    /// [`Context::new`] from a payload already read: its JSON and its typed form (`None` when
    /// it is not one this crate knows).
    pub(crate) fn of(
        event_id: &str,
        event_type: &str,
        json: serde_json::Value,
        parsed: Option<v1::Payload>,
        tags: &str,
        public_url: Option<&str>,
    ) -> Context {
        let tags: Vec<String> = tags.split(',').filter(|t| !t.is_empty()).map(str::to_owned).collect();
        let mut context = Context {
            event: EventVars { id: event_id.to_owned(), event_type: event_type.to_owned(), time: String::new() },
            watch: WatchVars::default(),
            diff: DiffVars::default(),
            check: CheckVars::default(),
            endpoint: EndpointVars::default(),
            ai: AiVars::default(),
            expectation: ExpectationVars::default(),
            digest: DigestVars::default(),
            link: String::new(),
            summary: String::new(),
            payload: json,
        };
        let public = public_url.map(|u| u.trim_end_matches('/'));
        match parsed {
            Some(v1::Payload::Change(envelope)) => context.change(envelope, tags, public),
            Some(v1::Payload::Check(envelope)) => context.check(envelope, tags, public),
            Some(v1::Payload::Endpoint(envelope)) => context.endpoint(envelope, public),
            Some(v1::Payload::Condition(envelope)) => context.condition(envelope, tags, public),
            Some(v1::Payload::Expectation(envelope)) => context.expectation(envelope, tags, public),
            Some(v1::Payload::Digest(envelope)) => {
                context.event.time = envelope.timestamp;
                context.digest = crate::digest::build(&envelope.data, public);
                context.summary = crate::digest::sentence(&context.digest);
                context.link = public.map(|base| format!("{base}/changes")).unwrap_or_default();
            }
            None => context.summary = format!("driftwatch event {event_type}"),
        }
        context
    }

    /// The variables of an `expectation.*` event.
    fn expectation(&mut self, envelope: v1::Envelope<v1::ExpectationEvent>, tags: Vec<String>, public: Option<&str>) {
        self.event.time = envelope.timestamp.clone();
        self.summary = crate::message::expectation_sentence(envelope.event_type, &envelope.data);
        let data = envelope.data;
        self.watch = watch_vars(&data.watch, tags);
        self.link = match public {
            Some(base) => format!("{base}/watches/{}", data.watch.id),
            None => data.watch.url.clone(),
        };
        let e = data.expectation;
        self.expectation = ExpectationVars {
            kind: e.kind,
            rule: e.rule,
            holds: e.holds,
            deadline: e.deadline.unwrap_or_default(),
            last_change: e.last_change.unwrap_or_default(),
            reasons: e.reasons,
            snapshot: e.snapshot.unwrap_or_default(),
        };
    }

    /// The variables of a `change.detected` event.
    fn change(&mut self, envelope: v1::Envelope<v1::ChangeDetected>, tags: Vec<String>, public: Option<&str>) {
        self.event.time = envelope.timestamp;
        let change = envelope.data;
        self.watch = watch_vars(&change.watch, tags);
        self.diff = diff_vars(&change.diff);
        self.link = match public {
            Some(base) => format!(
                "{base}/watches/{}?from={}&to={}",
                change.watch.id, change.snapshots.previous, change.snapshots.current
            ),
            None => change.watch.url.clone(),
        };
        self.summary = format!(
            "{} changed: {}",
            change.watch.name,
            crate::message::line_counts(change.diff.added, change.diff.removed)
        );
        if !change.values.is_empty() {
            self.summary.push_str("; ");
            self.summary.push_str(&crate::message::value_changes_sentence(&change.values));
        }
        if let Some(ai) = change.ai {
            // The model's summary says what changed better than line counts do.
            if let Some(summary) = ai.summary.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
                self.summary = format!("{}: {summary}", change.watch.name);
            }
            self.ai = AiVars {
                important: ai.important,
                reason: ai.reason.unwrap_or_default(),
                summary: ai.summary.unwrap_or_default(),
                model: ai.model.unwrap_or_default(),
                error: ai.error.unwrap_or_default(),
            };
        }
    }

    /// The variables of a `check.*` event.
    fn check(&mut self, envelope: v1::Envelope<v1::CheckEvent>, tags: Vec<String>, public: Option<&str>) {
        self.event.time = envelope.timestamp;
        let data = envelope.data;
        self.watch = watch_vars(&data.watch, tags);
        self.link = match public {
            Some(base) => format!("{base}/watches/{}", data.watch.id),
            None => data.watch.url.clone(),
        };
        let error = data.check.error.clone().unwrap_or_else(|| "unknown error".to_owned());
        let failures = data.check.consecutive_failures;
        let in_a_row = crate::message::in_a_row(failures);
        self.summary = match envelope.event_type {
            driftwatch_core::EventType::CheckRecovered => {
                format!("{} is being checked successfully again", data.watch.name)
            }
            driftwatch_core::EventType::SelectorMissing => {
                format!("{}: the watched element is missing {in_a_row}: {error}", data.watch.name)
            }
            driftwatch_core::EventType::ValueMissing => {
                format!("{}: a value could not be read {in_a_row}: {error}", data.watch.name)
            }
            driftwatch_core::EventType::CheckBlocked => {
                let by = data.check.blocked_by.as_deref().unwrap_or("a bot wall");
                format!("{} is blocked by {by}; no change is recorded while it lasts: {error}", data.watch.name)
            }
            driftwatch_core::EventType::LoginRequired => {
                format!("{}: the session is gone and signing in failed: {error}", data.watch.name)
            }
            _ => format!("{} is failing {in_a_row}: {error}", data.watch.name),
        };
        self.check = CheckVars {
            error: data.check.error.unwrap_or_default(),
            http_status: data.check.http_status,
            consecutive_failures: failures,
        };
    }

    /// The variables of a `endpoint.*` event.
    fn endpoint(&mut self, envelope: v1::Envelope<v1::EndpointEvent>, public: Option<&str>) {
        self.event.time = envelope.timestamp;
        let data = envelope.data;
        self.summary = match envelope.event_type {
            driftwatch_core::EventType::EndpointDisabled => format!(
                "driftwatch disabled the endpoint {}: {}",
                data.endpoint.url,
                data.reason.as_deref().unwrap_or("no reason given")
            ),
            _ => "driftwatch test message: this endpoint receives driftwatch notifications".to_owned(),
        };
        self.link = public.map(|base| format!("{base}/endpoints/{}", data.endpoint.id)).unwrap_or_default();
        self.endpoint =
            EndpointVars { id: data.endpoint.id, url: data.endpoint.url, reason: data.reason.unwrap_or_default() };
    }

    /// The variables of a `condition.*` event.
    fn condition(&mut self, envelope: v1::Envelope<v1::ConditionEvent>, tags: Vec<String>, public: Option<&str>) {
        self.event.time = envelope.timestamp.clone();
        self.summary = crate::message::condition_sentence(envelope.event_type, &envelope.data);
        let data = envelope.data;
        self.watch = watch_vars(&data.watch, tags);
        // The change that crossed, when there was one: told here as `change.detected` tells it.
        if let Some(diff) = &data.diff {
            self.diff = diff_vars(diff);
        }
        if !data.values.is_empty() {
            self.summary.push_str("; ");
            self.summary.push_str(&crate::message::value_changes_sentence(&data.values));
        }
        self.link = match (public, &data.snapshots) {
            (Some(base), Some(pair)) => {
                format!("{base}/watches/{}?from={}&to={}", data.watch.id, pair.previous, pair.current)
            }
            (Some(base), None) => format!("{base}/watches/{}", data.watch.id),
            (None, _) => data.watch.url.clone(),
        };
    }

    /// A made-up `change.detected`, for previews and template checks when an account has no
    /// event yet.
    pub fn sample(public_url: Option<&str>) -> Context {
        let old = "Espresso machine\nPrice: 129.00 EUR\nIn stock\n";
        let new = "Espresso machine\nPrice: 99.00 EUR\nIn stock\nFree delivery\n";
        let change = driftwatch_diff::diff_texts(old, new, "snp_previous", "snp_current");
        let payload = driftwatch_alert::change_payload(
            "evt_sample",
            driftwatch_alert::WatchRef { id: "wat_sample", name: "Coffee shop", url: "https://shop.example/espresso" },
            &change,
            driftwatch_alert::SnapshotPair { previous: "snp_previous", current: "snp_current" },
            chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default(),
        );
        Context::new("evt_sample", "change.detected", &payload, ",shop,", public_url)
    }

    /// The changed lines (no context) as `+ text` / `- text`.
    pub fn changed_lines(&self) -> Vec<String> {
        self.diff
            .lines
            .iter()
            .filter(|l| l.op != "context")
            .map(|l| format!("{} {}", if l.op == "added" { '+' } else { '-' }, l.text))
            .collect()
    }
}

pub(crate) fn watch_vars(watch: &v1::Watch, tags: Vec<String>) -> WatchVars {
    WatchVars { id: watch.id.clone(), name: watch.name.clone(), url: watch.url.clone(), tags }
}

pub(crate) fn diff_vars(diff: &v1::Diff) -> DiffVars {
    let mut vars = DiffVars {
        added: diff.added,
        removed: diff.removed,
        unified: diff.full_diff.clone().unwrap_or_else(|| diff.unified.clone()),
        ..DiffVars::default()
    };
    for line in diff.hunks.iter().flat_map(|h| &h.lines) {
        let op = match line.op {
            LineOp::Added => {
                vars.added_lines.push(line.text.clone());
                "added"
            }
            LineOp::Removed => {
                vars.removed_lines.push(line.text.clone());
                "removed"
            }
            LineOp::Context => "context",
        };
        let words = line.words.iter().map(|w| Word { changed: w.changed, text: w.text.clone() }).collect();
        vars.lines.push(Line { op, text: line.text.clone(), words });
    }
    vars
}

/// `lines` joined with newlines, cut to at most `max_chars` characters (and `max_lines`
/// lines), ending with "… and N more lines" when anything was left out.
pub fn cut_lines(lines: &[String], max_lines: usize, max_chars: usize) -> String {
    let mut out = String::new();
    let mut chars = 0;
    let mut shown = 0;
    for line in lines {
        let len = line.chars().count() + 1;
        // Room for the longest tail this can end with.
        if shown >= max_lines || chars + len + 32 > max_chars {
            break;
        }
        out.push_str(line);
        out.push('\n');
        chars += len;
        shown += 1;
    }
    if shown == 0 && !lines.is_empty() && max_chars > 40 {
        // One line longer than the room: show its start.
        let room = max_chars - 40;
        out.extend(lines[0].chars().take(room));
        out.push_str("…\n");
        shown = 1;
    }
    let more = lines.len() - shown;
    if more > 0 {
        out.push_str(&format!("… and {more} more {}", driftwatch_core::text::noun_for(more, "line")));
    }
    out.trim_end().to_owned()
}

/// The largest character boundary of `text` at or before byte `index`.
pub fn char_floor(text: &str, index: usize) -> usize {
    let mut index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// Cuts `text` to at most `max` characters, marking the cut with `…`.
pub fn cut_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_has_a_diff_and_the_tags() {
        let context = Context::sample(Some("https://dw.example/"));
        assert_eq!(context.watch.tags, vec!["shop"]);
        assert_eq!((context.diff.added, context.diff.removed), (2, 1));
        assert_eq!(context.diff.removed_lines, vec!["Price: 129.00 EUR"]);
        assert!(
            context.link.starts_with("https://dw.example/watches/wat_sample?from=snp_previous"),
            "{}",
            context.link
        );
        assert!(context.diff.lines.iter().any(|l| l.words.iter().any(|w| w.changed && w.text.contains("99"))));
    }

    #[test]
    fn cuts_say_how_much_is_left_out() {
        let lines: Vec<String> = (0..100).map(|i| format!("+ line {i}")).collect();
        let cut = cut_lines(&lines, 10, 4000);
        assert!(cut.ends_with("… and 90 more lines"), "{cut}");
        let cut = cut_lines(&lines, 100, 200);
        assert!(cut.chars().count() <= 200, "{}", cut.len());
        assert!(cut.contains("more lines"));
        assert_eq!(cut_lines(&lines[..2], 10, 4000), "+ line 0\n+ line 1");
        let long = vec!["x".repeat(5000)];
        let cut = cut_lines(&long, 10, 1000);
        assert!(cut.chars().count() <= 1000 && cut.ends_with('…'), "{}", cut.len());
        assert_eq!(cut_chars("héllo", 3), "hé…");
    }
}
