//! When a watch is due: an interval or a cron expression in a time zone, each with a stable
//! per-watch offset so that many watches on one schedule (or a restart) do not fire at once.

use std::str::FromStr as _;

use chrono::{DateTime, TimeDelta, TimeZone as _, Utc};

/// Most seconds a cron watch is shifted after its occurrence (never more than a tenth of the
/// gap to the following occurrence).
const CRON_SPREAD_SECONDS: i64 = 30;

/// A watch's schedule.
#[derive(Debug, Clone)]
pub enum Timing {
    /// Every so many seconds, at a stable phase of the watch.
    Every(i64),
    /// At the occurrences of a cron expression in a time zone.
    Cron {
        /// The parsed expression.
        cron: Box<croner::Cron>,
        /// The zone it is read in.
        zone: chrono_tz::Tz,
    },
}

/// A schedule that does not parse; `field` names the input at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct TimingError {
    /// `interval_seconds`, `cron` or `time_zone`.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

fn error(field: &'static str, message: impl Into<String>) -> TimingError {
    TimingError { field, message: message.into() }
}

impl Timing {
    /// Reads a schedule from a watch's columns: exactly one of an interval or a cron expression.
    pub fn parse(interval: Option<i64>, cron: Option<&str>, zone: Option<&str>) -> Result<Timing, TimingError> {
        let zone = match zone {
            Some(name) => chrono_tz::Tz::from_str(name.trim()).map_err(|_| {
                error("time_zone", format!("unknown time zone `{name}` (use an IANA name like Europe/Paris)"))
            })?,
            None => chrono_tz::UTC,
        };
        match (interval, cron) {
            (Some(_), Some(_)) => Err(error("cron", "give either interval_seconds or cron, not both")),
            (Some(seconds), None) if seconds < 1 => Err(error("interval_seconds", "must be at least 1")),
            (Some(seconds), None) => Ok(Timing::Every(seconds)),
            (None, Some(expression)) => {
                let parsed = croner::parser::CronParser::new()
                    .parse(expression.trim())
                    .map_err(|e| error("cron", format!("invalid cron expression: {e}")))?;
                // An expression that never fires again is as good as invalid.
                parsed
                    .find_next_occurrence(&zone.from_utc_datetime(&Utc::now().naive_utc()), false)
                    .map_err(|e| error("cron", format!("the expression never fires: {e}")))?;
                Ok(Timing::Cron { cron: Box::new(parsed), zone })
            }
            (None, None) => Err(error("interval_seconds", "give interval_seconds or cron")),
        }
    }

    /// The schedule of a stored watch (a watch that somehow has none is checked hourly).
    pub fn of(watch: &driftwatch_store::Watch) -> Timing {
        Timing::parse(watch.interval_seconds, watch.cron.as_deref(), watch.time_zone.as_deref())
            .unwrap_or(Timing::Every(3600))
    }

    /// The first due time strictly after `now` for the watch `watch_id`.
    pub fn next_after(&self, now: DateTime<Utc>, watch_id: &str) -> DateTime<Utc> {
        let hash = stable_hash(watch_id);
        match self {
            Timing::Every(interval) => {
                let interval = (*interval).max(1);
                let phase = (hash % interval as u64) as i64;
                let now_s = now.timestamp();
                let k = (now_s - phase).div_euclid(interval) + 1;
                DateTime::from_timestamp(k * interval + phase, 0).unwrap_or(now + TimeDelta::seconds(interval))
            }
            Timing::Cron { cron, zone } => {
                let local = zone.from_utc_datetime(&now.naive_utc());
                let Ok(first) = cron.find_next_occurrence(&local, false) else {
                    return now + TimeDelta::days(365); // never again: effectively paused
                };
                let gap =
                    cron.find_next_occurrence(&first, false).map_or(3600, |second| (second - first).num_seconds());
                let spread = CRON_SPREAD_SECONDS.min(gap / 10).max(0);
                let offset = if spread > 0 { (hash % spread as u64) as i64 } else { 0 };
                first.with_timezone(&Utc) + TimeDelta::seconds(offset)
            }
        }
    }
}

/// FNV-1a: stable across releases and platforms (std's hasher is not), so a watch keeps its
/// phase across restarts and upgrades.
fn stable_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).expect("time")
    }

    #[test]
    fn intervals_keep_a_stable_phase() {
        let every = Timing::parse(Some(600), None, None).expect("valid");
        let now = at("2026-12-02T12:00:00Z");
        let a = every.next_after(now, "wat_a");
        let b = every.next_after(now, "wat_b");
        assert!(a > now && a <= now + TimeDelta::seconds(600));
        assert_ne!(a, b, "different watches get different phases");
        assert_eq!(every.next_after(a, "wat_a"), a + TimeDelta::seconds(600), "then every interval exactly");
        assert_eq!(every.next_after(now + TimeDelta::seconds(1), "wat_a"), a, "stable across restarts");
    }

    #[test]
    fn cron_in_a_time_zone_follows_daylight_saving() {
        // 09:00 in Paris is 08:00 UTC in winter and 07:00 UTC in summer; DST starts 2026-03-29.
        let daily = Timing::parse(None, Some("0 0 9 * * *"), Some("Europe/Paris")).expect("valid");
        let before = daily.next_after(at("2026-03-27T10:00:00Z"), "wat_x");
        let after = daily.next_after(at("2026-03-28T10:00:00Z"), "wat_x");
        let offset = |t: DateTime<Utc>| t.timestamp() % 60 + (t.timestamp() / 60 % 60) * 60;
        assert_eq!(before - TimeDelta::seconds(offset(before)), at("2026-03-28T08:00:00Z"));
        assert_eq!(after - TimeDelta::seconds(offset(after)), at("2026-03-29T07:00:00Z"));
        assert!(offset(before) < CRON_SPREAD_SECONDS, "the per-watch offset stays small");
        // Five fields (no seconds) are accepted too.
        assert!(Timing::parse(None, Some("*/15 * * * *"), None).is_ok());
    }

    #[test]
    fn bad_schedules_name_their_field() {
        let field = |r: Result<Timing, TimingError>| r.map(|_| ()).map_err(|e| e.field);
        assert_eq!(field(Timing::parse(None, Some("every tuesday"), None)), Err("cron"));
        assert_eq!(field(Timing::parse(None, Some("0 * * * *"), Some("Mars/Olympus"))), Err("time_zone"));
        assert_eq!(field(Timing::parse(Some(60), Some("0 * * * *"), None)), Err("cron"));
        assert_eq!(field(Timing::parse(Some(0), None, None)), Err("interval_seconds"));
        assert_eq!(field(Timing::parse(None, None, None)), Err("interval_seconds"));
    }
}
