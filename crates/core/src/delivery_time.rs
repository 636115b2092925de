//! When an endpoint's deliveries may go: at once, or gathered into one digest per period; and
//! quiet hours, which hold whatever falls due inside them until they end. Pure rules of time:
//! the store keeps the JSON, the outbox and the delivery worker ask these.

use std::str::FromStr as _;

use chrono::{
    DateTime, Datelike as _, NaiveDate, NaiveDateTime, NaiveTime, SubsecRound as _, TimeDelta, TimeZone as _, Utc,
};
use serde::{Deserialize, Serialize};

use crate::{EventType, FieldError};

/// The shortest digest period: a digest more often than this is no digest.
pub const MIN_DIGEST_PERIOD: TimeDelta = TimeDelta::minutes(15);
/// The longest digest period.
pub const MAX_DIGEST_PERIOD: TimeDelta = TimeDelta::days(31);

/// The event types that skip a digest unless the endpoint names its own.
pub const DEFAULT_URGENT: [EventType; 3] =
    [EventType::ConditionMet, EventType::CheckBlocked, EventType::ExpectationMissed];

/// How an endpoint's events go out: `{"mode": "digest", "cron": "0 8 * * *", "time_zone":
/// "Europe/Berlin"}` (or `"every": "1d"`), as stored in `endpoints.delivery` and taken by the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryMode {
    /// `immediate` (each event at once) or `digest`.
    pub mode: Mode,
    /// For a digest: when each period ends, a cron expression read in `time_zone` (five
    /// fields, or six with seconds; periods of 15 minutes to 31 days).
    #[schema(max_length = 200)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// For a digest: the length of each period instead (`12h`, `1d`, `7d`; 15m to 31d).
    #[schema(max_length = 40)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// The IANA zone `cron` is read in (UTC when unset).
    #[schema(max_length = 64)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Event types that skip the digest and go at once (default: `condition.met`,
    /// `check.blocked`, `expectation.missed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgent: Option<Vec<String>>,
    /// Send a "nothing changed" digest when a period gathered nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub send_empty: bool,
    /// Open each digest with a language model's summary of the period (the account's model, or
    /// the operator's; without one, or when it fails, the digest goes without).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summary: bool,
}

/// [`DeliveryMode::mode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = DeliveryModeKind)]
pub enum Mode {
    /// Each event at once.
    Immediate,
    /// One message per period.
    Digest,
}

/// A checked digest schedule.
#[derive(Debug, Clone)]
pub enum DigestPeriod {
    /// Periods end at a cron expression's occurrences in a zone.
    Cron {
        /// The expression.
        cron: Box<croner::Cron>,
        /// Its zone.
        zone: chrono_tz::Tz,
    },
    /// Periods of a fixed length, from the one before.
    Every(TimeDelta),
}

/// A checked delivery mode: what the outbox and the digest loop need.
#[derive(Debug, Clone)]
pub struct Digesting {
    /// When periods end.
    pub period: DigestPeriod,
    /// What goes at once.
    pub urgent: Vec<EventType>,
    /// Whether an empty period sends a note.
    pub send_empty: bool,
    /// Whether a model summarises the period.
    pub summary: bool,
}

fn zone(name: Option<&str>, field: &str) -> Result<chrono_tz::Tz, FieldError> {
    match name.map(str::trim) {
        None | Some("") => Ok(chrono_tz::UTC),
        Some(name) => chrono_tz::Tz::from_str(name).map_err(|_| {
            FieldError::new(field, format!("unknown time zone `{name}` (use an IANA name like Europe/Berlin)"))
        }),
    }
}

impl DeliveryMode {
    /// Reads a stored or posted mode (JSON).
    pub fn parse(json: &str) -> Result<DeliveryMode, FieldError> {
        serde_json::from_str(json).map_err(|e| FieldError::new("delivery", format!("not a delivery mode: {e}")))
    }

    /// The digest it describes (`None` for `immediate`), or the field at fault. `now` is when
    /// the schedule is judged (a cron expression must fire again after it).
    pub fn check(&self, now: DateTime<Utc>) -> Result<Option<Digesting>, FieldError> {
        let urgent = match &self.urgent {
            None => DEFAULT_URGENT.to_vec(),
            Some(names) => names
                .iter()
                .map(|name| match name.parse::<EventType>() {
                    Ok(EventType::Digest | EventType::EndpointTest) | Err(_) => Err(FieldError::new(
                        "delivery.urgent",
                        format!("`{name}` is not an event type a digest gathers"),
                    )),
                    Ok(t) => Ok(t),
                })
                .collect::<Result<_, _>>()?,
        };
        if self.mode == Mode::Immediate {
            for (set, field) in [(self.cron.is_some(), "delivery.cron"), (self.every.is_some(), "delivery.every")] {
                if set {
                    return Err(FieldError::new(field, "only a digest has a schedule; set mode to digest"));
                }
            }
            return Ok(None);
        }
        let period = match (self.cron.as_deref(), self.every.as_deref()) {
            (Some(_), Some(_)) => return Err(FieldError::new("delivery.every", "give either cron or every, not both")),
            (None, None) => return Err(FieldError::new("delivery.cron", "a digest needs a cron expression or every")),
            (None, Some(every)) => {
                if self.time_zone.is_some() {
                    zone(self.time_zone.as_deref(), "delivery.time_zone")?;
                }
                let length = crate::parse_duration(every).map_err(|e| FieldError::new("delivery.every", e))?;
                let length = TimeDelta::from_std(length).unwrap_or(TimeDelta::MAX);
                if length < MIN_DIGEST_PERIOD || length > MAX_DIGEST_PERIOD {
                    return Err(FieldError::new("delivery.every", "a digest period is 15m to 31d long"));
                }
                DigestPeriod::Every(length)
            }
            (Some(expression), None) => {
                let zone = zone(self.time_zone.as_deref(), "delivery.time_zone")?;
                let cron = croner::parser::CronParser::builder()
                    .seconds(croner::parser::Seconds::Optional)
                    .build()
                    .parse(expression.trim())
                    .map_err(|e| FieldError::new("delivery.cron", format!("invalid cron expression: {e}")))?;
                let period = DigestPeriod::Cron { cron: Box::new(cron), zone };
                period.check_gaps(now)?;
                period
            }
        };
        Ok(Some(Digesting { period, urgent, send_empty: self.send_empty, summary: self.summary }))
    }
}

impl DeliveryMode {
    /// Whether an event of `event_type` waits for the digest (a digest's own events and test
    /// events never do; nor do the urgent types). Reads the stored mode without re-checking it.
    pub fn gathers(&self, event_type: &str) -> bool {
        if self.mode != Mode::Digest {
            return false;
        }
        match event_type.parse::<EventType>() {
            Ok(EventType::Digest | EventType::EndpointTest) | Err(_) => false,
            Ok(t) => match &self.urgent {
                None => !DEFAULT_URGENT.contains(&t),
                Some(names) => !names.iter().any(|n| n == t.as_str()),
            },
        }
    }
}

impl DigestPeriod {
    /// The first end of a period strictly after `after`; `None` when a cron expression never
    /// fires again.
    pub fn next_end(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // Whole seconds: a period ends at 08:00:00, not at 08:00 and the fraction of `after`.
        let after = after.trunc_subsecs(0);
        match self {
            DigestPeriod::Every(length) => Some(after + *length),
            DigestPeriod::Cron { cron, zone } => {
                let local = zone.from_utc_datetime(&after.naive_utc());
                cron.find_next_occurrence(&local, false).ok().map(|t| t.with_timezone(&Utc).trunc_subsecs(0))
            }
        }
    }

    /// The end of the period after the one that ended at `due`, past `now`: a node that was down
    /// for several periods closes one digest for all of them, then keeps the rhythm.
    pub fn following(&self, due: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            DigestPeriod::Every(length) => {
                let behind = (now - due).num_seconds().max(0) / length.num_seconds().max(1);
                Some(due + *length * (behind as i32 + 1))
            }
            DigestPeriod::Cron { .. } => self.next_end(now.max(due)),
        }
    }

    /// Refuses a cron expression that never fires again, or fires more often than
    /// [`MIN_DIGEST_PERIOD`] over its next dozen occurrences.
    fn check_gaps(&self, now: DateTime<Utc>) -> Result<(), FieldError> {
        let mut at =
            self.next_end(now).ok_or_else(|| FieldError::new("delivery.cron", "the expression never fires again"))?;
        for _ in 0..12 {
            let Some(next) = self.next_end(at) else { break };
            if next - at < MIN_DIGEST_PERIOD {
                return Err(FieldError::new(
                    "delivery.cron",
                    format!(
                        "the expression fires every {}s; a digest period is at least 15 minutes",
                        (next - at).num_seconds()
                    ),
                ));
            }
            at = next;
        }
        Ok(())
    }
}

impl Digesting {
    /// Whether an event of `event_type` is gathered for the digest (else it goes at once).
    pub fn gathers(&self, event_type: &str) -> bool {
        match event_type.parse::<EventType>() {
            Ok(EventType::Digest | EventType::EndpointTest) | Err(_) => false,
            Ok(t) => !self.urgent.contains(&t),
        }
    }
}

/// Quiet hours: `{"from": "22:00", "to": "07:00", "days": ["mon", "tue", "wed", "thu", "fri"],
/// "time_zone": "Europe/Berlin"}`. A window starts at `from` on each of `days` and ends at the
/// next `to` (the next morning when `to` is earlier than `from`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuietHours {
    /// When a window starts, `HH:MM` (24-hour).
    #[schema(pattern = "^\\s*([01][0-9]|2[0-3]):[0-5][0-9]\\s*$")]
    pub from: String,
    /// When it ends, `HH:MM` (24-hour); not the time it starts.
    #[schema(pattern = "^\\s*([01][0-9]|2[0-3]):[0-5][0-9]\\s*$")]
    pub to: String,
    /// The days a window starts on (`mon` … `sun`, or `weekdays`, `weekends`); every day when
    /// unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<QuietDay>>, min_items = 1)]
    pub days: Option<Vec<String>>,
    /// The IANA zone the times are read in (UTC when unset).
    #[schema(max_length = 64)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// A name [`QuietHours::days`] takes (as the API documents it; read without regard to case).
#[derive(Debug, Clone, Copy, utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum QuietDay {
    /// Monday.
    Mon,
    /// Tuesday.
    Tue,
    /// Wednesday.
    Wed,
    /// Thursday.
    Thu,
    /// Friday.
    Fri,
    /// Saturday.
    Sat,
    /// Sunday.
    Sun,
    /// Monday to Friday.
    Weekdays,
    /// Saturday and Sunday.
    Weekends,
}

/// Checked quiet hours.
#[derive(Debug, Clone)]
pub struct Quiet {
    from: NaiveTime,
    to: NaiveTime,
    days: [bool; 7],
    zone: chrono_tz::Tz,
}

/// What a delivery held by quiet hours has in `deliveries.held`.
pub const HELD_QUIET_HOURS: &str = "quiet_hours";

fn time_of_day(text: &str, field: &str) -> Result<NaiveTime, FieldError> {
    NaiveTime::parse_from_str(text.trim(), "%H:%M")
        .map_err(|_| FieldError::new(field, format!("`{text}` is not a time like 22:00")))
}

const DAY_NAMES: [(&str, &str); 7] = [
    ("mon", "monday"),
    ("tue", "tuesday"),
    ("wed", "wednesday"),
    ("thu", "thursday"),
    ("fri", "friday"),
    ("sat", "saturday"),
    ("sun", "sunday"),
];

impl QuietHours {
    /// Reads stored or posted quiet hours (JSON).
    pub fn parse(json: &str) -> Result<QuietHours, FieldError> {
        serde_json::from_str(json).map_err(|e| FieldError::new("quiet_hours", format!("not quiet hours: {e}")))
    }

    /// The checked hours, or the field at fault.
    pub fn check(&self) -> Result<Quiet, FieldError> {
        let from = time_of_day(&self.from, "quiet_hours.from")?;
        let to = time_of_day(&self.to, "quiet_hours.to")?;
        if from == to {
            return Err(FieldError::new(
                "quiet_hours.to",
                "quiet hours that end when they start would cover the whole week; nothing could be sent",
            ));
        }
        let mut days = [false; 7];
        match &self.days {
            None => days = [true; 7],
            Some(names) => {
                for name in names {
                    match name.trim().to_ascii_lowercase().as_str() {
                        "weekdays" => days[..5].iter_mut().for_each(|d| *d = true),
                        "weekends" | "weekend" => days[5..].iter_mut().for_each(|d| *d = true),
                        other => match DAY_NAMES.iter().position(|d| d.0 == other || d.1 == other) {
                            Some(i) => days[i] = true,
                            None => {
                                return Err(FieldError::new(
                                    "quiet_hours.days",
                                    format!("`{name}` is not a day (mon … sun, weekdays, weekends)"),
                                ));
                            }
                        },
                    }
                }
                if !days.contains(&true) {
                    return Err(FieldError::new(
                        "quiet_hours.days",
                        "name at least one day, or leave days out for every day",
                    ));
                }
            }
        }
        Ok(Quiet { from, to, days, zone: zone(self.time_zone.as_deref(), "quiet_hours.time_zone")? })
    }
}

impl Quiet {
    /// When a delivery due at `at` may go: `None` when `at` is outside the quiet hours, else the
    /// end of the window it falls in. Windows never run into each other: each is shorter than a
    /// day (`from` and `to` differ), and one starts a day at most.
    pub fn release(&self, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let local = self.zone.from_utc_datetime(&at.naive_utc()).date_naive();
        [local.pred_opt(), Some(local)].into_iter().flatten().find_map(|day| {
            if !self.days[day.weekday().num_days_from_monday() as usize] {
                return None;
            }
            let start = self.at(day, self.from)?;
            let end_day = if self.to > self.from { day } else { day.succ_opt()? };
            let end = self.at(end_day, self.to)?;
            (start <= at && at < end).then_some(end)
        })
    }

    /// `time` on `day` in the zone, in UTC (the earlier of a repeated hour, the hour after a
    /// skipped one).
    fn at(&self, day: NaiveDate, time: NaiveTime) -> Option<DateTime<Utc>> {
        let local = day.and_time(time);
        self.zone
            .from_local_datetime(&local)
            .earliest()
            .or_else(|| self.zone.from_local_datetime(&(local + TimeDelta::hours(1))).earliest())
            .map(|t| t.with_timezone(&Utc))
    }
}

/// When the stored quiet hours `json` release a delivery due at `at`: `None` when they do not
/// hold it, or cannot be read (what is stored was checked when it was saved). The outbox asks
/// at enqueue and the delivery worker at claim.
pub fn quiet_release(json: &str, at: NaiveDateTime) -> Option<NaiveDateTime> {
    let quiet = QuietHours::parse(json).ok()?.check().ok()?;
    quiet.release(at.and_utc()).map(|end| end.naive_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    fn quiet(json: &str) -> Quiet {
        QuietHours::parse(json).unwrap().check().unwrap()
    }

    #[test]
    fn a_night_window_holds_until_morning_in_its_zone() {
        let q = quiet(r#"{"from": "22:00", "to": "07:00", "time_zone": "Europe/Berlin"}"#);
        // 02:30 in Berlin (UTC+1 in December) is 01:30 UTC: held until 07:00 Berlin.
        assert_eq!(q.release(utc("2026-12-08T01:30:00Z")), Some(utc("2026-12-08T06:00:00Z")));
        // 21:59 Berlin is not quiet; 22:00 is.
        assert_eq!(q.release(utc("2026-12-08T20:59:00Z")), None);
        assert_eq!(q.release(utc("2026-12-08T21:00:00Z")), Some(utc("2026-12-09T06:00:00Z")));
        assert_eq!(q.release(utc("2026-12-08T06:00:00Z")), None, "the end is not quiet");
    }

    #[test]
    fn days_name_the_night_a_window_starts() {
        let q = quiet(r#"{"from": "22:00", "to": "07:00", "days": ["weekdays"]}"#);
        // Friday 23:00 starts a window (ends Saturday 07:00); Saturday 23:00 does not.
        assert_eq!(q.release(utc("2026-12-11T23:00:00Z")), Some(utc("2026-12-12T07:00:00Z")));
        assert_eq!(q.release(utc("2026-12-12T23:00:00Z")), None);
        // Sunday night is not in it either; Monday 03:00 is not (Sunday started no window).
        assert_eq!(q.release(utc("2026-12-14T03:00:00Z")), None);
    }

    #[test]
    fn a_day_window_ends_the_same_day_and_stored_hours_read_back() {
        let q = quiet(r#"{"from": "00:00", "to": "23:59", "days": ["sat", "sun"]}"#);
        assert_eq!(q.release(utc("2026-12-12T10:00:00Z")), Some(utc("2026-12-12T23:59:00Z")));
        assert_eq!(q.release(utc("2026-12-12T23:59:30Z")), None, "the minute between two windows is open");
        let stored = r#"{"from":"22:00","to":"07:00"}"#;
        let at = utc("2026-12-08T23:00:00Z").naive_utc();
        assert_eq!(quiet_release(stored, at), Some(utc("2026-12-09T07:00:00Z").naive_utc()));
        assert_eq!(quiet_release("not json", at), None);
    }

    #[test]
    fn bad_quiet_hours_name_their_field() {
        let field = |json: &str| QuietHours::parse(json).and_then(|q| q.check()).map(|_| ()).unwrap_err().field;
        assert_eq!(field(r#"{"from": "22:00", "to": "22:00"}"#), "quiet_hours.to");
        assert_eq!(field(r#"{"from": "25:00", "to": "07:00"}"#), "quiet_hours.from");
        assert_eq!(field(r#"{"from": "22:00", "to": "07:00", "days": []}"#), "quiet_hours.days");
        assert_eq!(field(r#"{"from": "22:00", "to": "07:00", "days": ["caturday"]}"#), "quiet_hours.days");
        assert_eq!(field(r#"{"from": "22:00", "to": "07:00", "time_zone": "Mars/Olympus"}"#), "quiet_hours.time_zone");
    }

    fn mode(json: &str) -> Result<Option<Digesting>, FieldError> {
        DeliveryMode::parse(json)?.check(utc("2026-12-07T12:00:00Z"))
    }

    #[test]
    fn a_daily_digest_ends_at_eight_in_its_zone() {
        let d = mode(r#"{"mode": "digest", "cron": "0 8 * * *", "time_zone": "Europe/Berlin"}"#).unwrap().unwrap();
        assert_eq!(d.period.next_end(utc("2026-12-07T12:00:00Z")), Some(utc("2026-12-08T07:00:00Z")));
        assert!(d.gathers("change.detected"));
        assert!(!d.gathers("condition.met"), "urgent by default");
        assert!(!d.gathers("endpoint.test"));
    }

    #[test]
    fn a_late_node_closes_one_digest_and_keeps_the_rhythm() {
        let every = DigestPeriod::Every(TimeDelta::days(1));
        let due = utc("2026-12-01T08:00:00Z");
        assert_eq!(every.following(due, utc("2026-12-01T08:00:01Z")), Some(utc("2026-12-02T08:00:00Z")));
        assert_eq!(every.following(due, utc("2026-12-04T09:00:00Z")), Some(utc("2026-12-05T08:00:00Z")));
    }

    #[test]
    fn bad_digests_name_their_field() {
        let field = |json: &str| mode(json).map(|_| ()).unwrap_err().field;
        assert_eq!(field(r#"{"mode": "digest", "cron": "* * * * * *"}"#), "delivery.cron");
        assert_eq!(field(r#"{"mode": "digest", "cron": "* * * * *"}"#), "delivery.cron");
        assert_eq!(field(r#"{"mode": "digest", "cron": "0 0 30 2 *"}"#), "delivery.cron");
        assert_eq!(field(r#"{"mode": "digest", "cron": "0 8 * * *", "time_zone": "Nowhere"}"#), "delivery.time_zone");
        assert_eq!(field(r#"{"mode": "digest", "every": "1m"}"#), "delivery.every");
        assert_eq!(field(r#"{"mode": "digest"}"#), "delivery.cron");
        assert_eq!(field(r#"{"mode": "digest", "every": "1d", "urgent": ["nope"]}"#), "delivery.urgent");
        assert_eq!(field(r#"{"mode": "immediate", "every": "1d"}"#), "delivery.every");
        assert!(mode(r#"{"mode": "immediate"}"#).unwrap().is_none());
        assert_eq!(
            DeliveryMode::parse(r#"{"mode": "weekly"}"#).unwrap_err().field,
            "delivery",
            "an unknown mode names the object"
        );
    }
}
