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

    /// The schedule of a stored watch's columns (a watch that somehow has none is checked
    /// hourly).
    pub fn stored(interval: Option<i64>, cron: Option<&str>, zone: Option<&str>) -> Timing {
        Timing::parse(interval, cron, zone).unwrap_or(Timing::Every(3600))
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

/// How a failing watch backs off: after `threshold` failed checks in a row, each further failure
/// doubles the wait before the next check, from the watch's own gap up to `cap` (a schedule
/// already slower than the cap is kept). A success resets the count, and with it the schedule.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// Failed checks in a row before backing off.
    pub threshold: i32,
    /// Longest wait between two checks of a failing watch.
    pub cap: std::time::Duration,
}

impl Backoff {
    /// When to check next, after a check that finished at `finished` with `failures` failed
    /// checks in a row (this one included).
    pub fn next_check(&self, timing: &Timing, finished: DateTime<Utc>, failures: i32, watch_id: &str) -> DateTime<Utc> {
        let scheduled = timing.next_after(finished, watch_id);
        if failures < self.threshold {
            return scheduled;
        }
        // The schedule's period: the gap between its next two due times.
        let gap = (timing.next_after(scheduled, watch_id) - scheduled).max(TimeDelta::seconds(1));
        let cap = TimeDelta::from_std(self.cap).unwrap_or(TimeDelta::days(1));
        if gap >= cap {
            return scheduled;
        }
        // 2^(failures past the threshold + 1): the first check after the threshold already waits twice the gap.
        let doublings = (failures - self.threshold + 1).clamp(0, 30) as u32;
        let wait = gap.checked_mul(1 << doublings).map_or(cap, |w| w.min(cap));
        // The next due time of the schedule at or after the wait, so a cron watch stays on its
        // occurrences and an interval watch on its phase.
        timing.next_after(finished + wait - gap, watch_id).min(finished + cap).max(scheduled)
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
    fn failing_watches_back_off_doubling_up_to_the_cap() {
        let every = Timing::parse(Some(600), None, None).expect("valid");
        let backoff = Backoff { threshold: 3, cap: std::time::Duration::from_secs(3 * 3600) };
        let now = at("2026-12-02T12:00:00Z");
        let wait = |failures| (backoff.next_check(&every, now, failures, "wat_a") - now).num_seconds();
        let normal = wait(0);
        assert!(normal > 0 && normal <= 600);
        assert_eq!(wait(2), normal, "below the threshold the schedule holds");
        // Each wait lands on the watch's phase, so it is within one interval of the doubling.
        for (failures, doubled) in [(3, 1_200), (4, 2_400), (5, 4_800), (6, 9_600)] {
            let w = wait(failures);
            assert!(w > doubled - 600 && w <= doubled, "{failures} failures: waits {w}s, about {doubled}s");
        }
        for failures in [7, 8, 40] {
            let w = wait(failures);
            assert!(w > 3 * 3600 - 600 && w <= 3 * 3600, "{failures} failures: capped at 3 h on its phase, waits {w}s");
        }
        // A schedule slower than the cap is kept as it is.
        let daily = Timing::parse(Some(86_400), None, None).expect("valid");
        assert_eq!(backoff.next_check(&daily, now, 9, "wat_a"), daily.next_after(now, "wat_a"));
        // A cron watch backs off onto its own occurrences (every 15 minutes here).
        let cron = Timing::parse(None, Some("0 */15 * * * *"), None).expect("valid");
        let next = backoff.next_check(&cron, now, 4, "wat_a");
        assert!(next - now >= TimeDelta::minutes(45) && next - now <= TimeDelta::minutes(61), "{next}");
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
