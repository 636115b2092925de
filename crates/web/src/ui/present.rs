//! How things are shown in pages, shared by every page: times, durations, a watch's badge and
//! tags, a delivery as a row, and the address people reach this server at.

use axum::http::header;
use chrono::{DateTime, NaiveDateTime, Utc};
use chrono_tz::Tz;
use driftwatch_core::WatchState;
use driftwatch_store::Watch;

/// The URL people reach this server at: the configured public URL, else the request's host.
pub fn public_base(state: &crate::AppState, headers: &axum::http::HeaderMap) -> String {
    match &state.ui.public_url {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => format!("http://{}", headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost")),
    }
}

/// "5 minutes", "2 hours": a duration for people.
pub fn human_seconds(seconds: u64) -> String {
    let (n, unit) = match seconds {
        0..60 => (seconds, "second"),
        60..3_600 => (seconds / 60, "minute"),
        3_600..86_400 => (seconds / 3_600, "hour"),
        _ => (seconds / 86_400, "day"),
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// `1 line`, `2 lines`: a count in words, for the templates (which hand fields over by
/// reference); the one rule of [`driftwatch_core::text::count`].
pub fn count<N: Copy + std::fmt::Display + PartialEq + From<u8>>(n: &N, noun: &str) -> String {
    driftwatch_core::text::count(*n, noun)
}

/// A share in percent for people: `12%`, `4.2%`, `0.35%`, `<0.01%` (never a misleading 0 for
/// a change that is there).
pub fn percent(p: f64) -> String {
    match p {
        p if p <= 0.0 => "0%".to_owned(),
        p if p < 0.01 => "<0.01%".to_owned(),
        p if p < 1.0 => format!("{p:.2}%"),
        p if p < 10.0 => format!("{p:.1}%"),
        p => format!("{p:.0}%"),
    }
}

/// A time as shown in pages: relative to now, with the exact time (in the viewer's zone) for
/// the hover title and the machine-readable `datetime`.
#[derive(Debug, Clone)]
pub struct When {
    /// RFC 3339 UTC.
    pub iso: String,
    /// `2026-12-03 14:05:09 CET`.
    pub exact: String,
    /// `3 minutes ago`, `in 5 minutes`.
    pub relative: String,
}

impl When {
    /// Formats `t` for a viewer in `zone` at `now`.
    pub fn new(t: NaiveDateTime, now: DateTime<Utc>, zone: &str) -> When {
        let utc = t.and_utc();
        let tz: Tz = zone.parse().unwrap_or(Tz::UTC);
        let delta = (utc - now).num_seconds();
        // "just now" is the past only: what is due in 50 s is "in 50 seconds".
        let relative = match delta {
            -59..=0 => "just now".to_owned(),
            d if d < 0 => format!("{} ago", human_seconds(d.unsigned_abs())),
            d => format!("in {}", human_seconds(d as u64)),
        };
        When {
            iso: utc.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            exact: utc.with_timezone(&tz).format("%Y-%m-%d %H:%M:%S %Z").to_string(),
            relative,
        }
    }
}

/// Two times as a range reads them, `(from, to)`: each relative to now, unless both would read
/// the same ("between just now and just now"), when each says its exact time instead (the
/// time of day alone when both fall on the same day).
pub fn range(from: &When, to: &When) -> (When, When) {
    if from.relative != to.relative {
        return (from.clone(), to.clone());
    }
    let same_day = from.exact.get(..10) == to.exact.get(..10);
    let exact = |w: &When| {
        let shown = if same_day { w.exact.get(11..).unwrap_or(&w.exact) } else { &w.exact };
        When { relative: shown.to_owned(), ..w.clone() }
    };
    (exact(from), exact(to))
}

/// The badge of a watch: paused wins, then its health, then an expectation it let down.
pub fn badge(watch: &Watch) -> &'static str {
    if watch.state == WatchState::Paused.as_str() {
        return "paused";
    }
    match watch.health.as_str() {
        "failing" => "failing",
        "selector_missing" => "selector_missing",
        "value_missing" => "value_missing",
        "blocked" => "blocked",
        "login_required" => "login_required",
        // Checks work, but the page let its expectation down.
        _ if watch.expect_missed_at.is_some() => "overdue",
        _ if watch.expect_holds == Some(false) => "unmet",
        _ => "ok",
    }
}

/// The tags of a watch, from its stored form.
pub fn tags_of(watch: &Watch) -> Vec<String> {
    watch.tag_list().into_iter().map(str::to_owned).collect()
}

/// A delivery in the list.
#[derive(Debug, Clone)]
pub struct DeliveryRow {
    /// `dlv_...`.
    pub id: String,
    /// Event type.
    pub event_type: String,
    /// Status (badge).
    pub status: String,
    /// Attempts so far.
    pub attempts: i32,
    /// Last HTTP status.
    pub last_status: Option<i32>,
    /// Created.
    pub at: When,
    /// When quiet hours release it, while they hold it.
    pub held_until: Option<When>,
}

/// A delivery as a list row.
pub fn delivery_row(d: &driftwatch_store::Delivery, now: chrono::DateTime<chrono::Utc>, zone: &str) -> DeliveryRow {
    DeliveryRow {
        id: d.id.clone(),
        event_type: d.event_type.clone(),
        status: d.status.clone(),
        attempts: d.attempts,
        last_status: d.last_status_code,
        at: When::new(d.created_at, now, zone),
        held_until: held_until(d, now, zone),
    }
}

/// When quiet hours release `d`, while they hold it.
pub fn held_until(d: &driftwatch_store::Delivery, now: chrono::DateTime<chrono::Utc>, zone: &str) -> Option<When> {
    (d.held.is_some() && d.finished_at.is_none() && d.next_attempt_at > now.naive_utc())
        .then(|| When::new(d.next_attempt_at, now, zone))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_times_read_naturally() {
        assert_eq!(human_seconds(1), "1 second");
        assert_eq!(human_seconds(150), "2 minutes");
        assert_eq!(human_seconds(86_400 * 3), "3 days");
        let now = DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").expect("time").with_timezone(&Utc);
        let when = When::new((now - chrono::TimeDelta::minutes(5)).naive_utc(), now, "Europe/Paris");
        assert_eq!(when.relative, "5 minutes ago");
        assert_eq!(when.exact, "2026-12-03 12:55:00 CET");
        assert_eq!(When::new((now + chrono::TimeDelta::hours(2)).naive_utc(), now, "UTC").relative, "in 2 hours");
        let soon = When::new((now + chrono::TimeDelta::seconds(50)).naive_utc(), now, "UTC");
        assert_eq!(soon.relative, "in 50 seconds", "the future is never \"just now\"");
        let recent = When::new((now - chrono::TimeDelta::seconds(50)).naive_utc(), now, "UTC");
        assert_eq!(recent.relative, "just now");
        assert_eq!(count(&1usize, "line"), "1 line");
        assert_eq!(count(&2i64, "line"), "2 lines");
    }

    #[test]
    fn a_range_never_reads_between_a_time_and_itself() {
        let now = DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").expect("time").with_timezone(&Utc);
        let at = |seconds: i64| When::new((now - chrono::TimeDelta::seconds(seconds)).naive_utc(), now, "UTC");
        let (from, to) = range(&at(40), &at(5));
        assert_eq!((from.relative.as_str(), to.relative.as_str()), ("11:59:20 UTC", "11:59:55 UTC"));
        assert_eq!(from.iso, "2026-12-03T11:59:20Z", "still the same instant");
        let (from, to) = range(&at(3_600), &at(5));
        assert_eq!((from.relative.as_str(), to.relative.as_str()), ("1 hour ago", "just now"));
        let (from, to) = range(&at(12 * 3_600 + 60), &at(12 * 3_600 + 10));
        assert_eq!((from.relative.as_str(), to.relative.as_str()), ("23:59:00 UTC", "23:59:50 UTC"));
        // Either side of midnight, both "12 hours ago" at 12:30: each says its day too.
        let at = |seconds: i64| {
            let now = now + chrono::TimeDelta::minutes(30);
            When::new((now - chrono::TimeDelta::seconds(seconds)).naive_utc(), now, "UTC")
        };
        let (from, to) = range(&at(12 * 3_600 + 1_810), &at(12 * 3_600 + 1_790));
        assert_eq!(
            (from.relative.as_str(), to.relative.as_str()),
            ("2026-12-02 23:59:50 UTC", "2026-12-03 00:00:10 UTC")
        );
        assert_eq!(
            [percent(0.0), percent(0.004), percent(0.35), percent(4.21), percent(56.7)],
            ["0%", "<0.01%", "0.35%", "4.2%", "57%"]
        );
    }
}
