//! Expectations: a page that should change by a deadline, or values that should keep meeting
//! conditions. What is written in a watch's options (`options.expect`) and the pure rule of
//! when a change is due next.

use std::str::FromStr as _;

use chrono::{DateTime, TimeDelta, TimeZone as _, Utc};
use serde::{Deserialize, Serialize};

use crate::FieldError;

/// What a watch expects of its page. `change_within` and `deadline` exclude each other;
/// `values` may come with either.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Expect {
    /// The page must change within this long of its last change (`7d`, `36h`): when it has
    /// not, `expectation.missed` is raised once, and its next change raises `expectation.met`.
    /// At least the watch's own interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_within: Option<String>,
    /// The page must have changed since the previous occurrence by each occurrence of a cron
    /// expression in a time zone ("every Monday by 10:00").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<ExpectDeadline>,
    /// Conditions on the watch's values that must keep holding ("the price stays under 50"):
    /// `expectation.missed` when they stop holding, `expectation.met` when they hold again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<crate::values::Conditions>,
}

/// A recurring deadline: a cron expression read in a time zone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ExpectDeadline {
    /// Five or six fields (`0 10 * * MON`: Mondays at 10:00).
    pub cron: String,
    /// An IANA time zone (`Europe/Berlin`); UTC when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// When a change is due, parsed from [`Expect`].
#[derive(Debug, Clone)]
pub enum ChangeRule {
    /// Within this long of the last change.
    Within(TimeDelta),
    /// By each occurrence of a cron expression in a zone.
    By {
        /// The parsed expression.
        cron: Box<croner::Cron>,
        /// The zone it is read in.
        zone: chrono_tz::Tz,
        /// As written, for words.
        written: ExpectDeadline,
    },
}

/// The field an error of `options.expect` names.
fn field(name: &str) -> String {
    format!("options.expect.{name}")
}

impl Expect {
    /// The change rule, when there is one, or why it is invalid (the field named in full, as
    /// `options.expect.…`). `now` is when a cron deadline must still fire after.
    pub fn change_rule_at(&self, now: DateTime<Utc>) -> Result<Option<ChangeRule>, FieldError> {
        match (&self.change_within, &self.deadline) {
            (Some(_), Some(_)) => {
                Err(FieldError::new(field("deadline"), "give either change_within or deadline, not both"))
            }
            (Some(within), None) => {
                let duration = crate::parse_duration(within).map_err(|e| FieldError::new(field("change_within"), e))?;
                let delta = TimeDelta::from_std(duration)
                    .ok()
                    .filter(|d| *d >= TimeDelta::seconds(1) && *d <= TimeDelta::days(3660))
                    .ok_or_else(|| FieldError::new(field("change_within"), "must be between 1s and 3660d"))?;
                Ok(Some(ChangeRule::Within(delta)))
            }
            (None, Some(deadline)) => {
                let zone = match deadline.time_zone.as_deref().map(str::trim).filter(|z| !z.is_empty()) {
                    Some(name) => chrono_tz::Tz::from_str(name).map_err(|_| {
                        FieldError::new(
                            field("deadline.time_zone"),
                            format!("unknown time zone `{name}` (use an IANA name like Europe/Berlin)"),
                        )
                    })?,
                    None => chrono_tz::UTC,
                };
                let cron = croner::parser::CronParser::new()
                    .parse(deadline.cron.trim())
                    .map_err(|e| FieldError::new(field("deadline.cron"), format!("invalid cron expression: {e}")))?;
                cron.find_next_occurrence(&zone.from_utc_datetime(&now.naive_utc()), false)
                    .map_err(|_| FieldError::new(field("deadline.cron"), "the expression never fires"))?;
                Ok(Some(ChangeRule::By { cron: Box::new(cron), zone, written: deadline.clone() }))
            }
            (None, None) => Ok(None),
        }
    }

    /// The change rule of stored options (already validated); `None` when there is none or it
    /// no longer parses.
    pub fn change_rule(&self, now: DateTime<Utc>) -> Option<ChangeRule> {
        self.change_rule_at(now).ok().flatten()
    }
}

impl ChangeRule {
    /// When the page must next have changed by, after a change (or arming) at `since`: `None`
    /// when a cron deadline never fires again.
    pub fn due_after(&self, since: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            ChangeRule::Within(delta) => since.checked_add_signed(*delta),
            ChangeRule::By { cron, zone, .. } => cron
                .find_next_occurrence(&zone.from_utc_datetime(&since.naive_utc()), false)
                .ok()
                .map(|t| t.with_timezone(&Utc)),
        }
    }

    /// The shortest time the rule gives a page to change (for a cron deadline, the gap
    /// between two occurrences after `now`).
    pub fn shortest(&self, now: DateTime<Utc>) -> Option<TimeDelta> {
        match self {
            ChangeRule::Within(delta) => Some(*delta),
            ChangeRule::By { .. } => {
                let first = self.due_after(now)?;
                Some(self.due_after(first)? - first)
            }
        }
    }

    /// What is expected, in words.
    pub fn describe(&self) -> String {
        match self {
            ChangeRule::Within(delta) => {
                format!("a change within {}", crate::format_duration(delta.to_std().unwrap_or_default()))
            }
            ChangeRule::By { written, .. } => format!(
                "a change by each `{}` ({})",
                written.cron.trim(),
                written.time_zone.as_deref().unwrap_or("UTC")
            ),
        }
    }

    /// The zone deadlines are shown in.
    pub fn zone(&self) -> chrono_tz::Tz {
        match self {
            ChangeRule::Within(_) => chrono_tz::UTC,
            ChangeRule::By { zone, .. } => *zone,
        }
    }
}

/// Where a change expectation stands after a successful check, given the stored deadline
/// (`due`), whether it was already missed, and whether the check found a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeStep {
    /// Nothing to tell; the deadline is (now) this.
    Waiting(Option<DateTime<Utc>>),
    /// The deadline passed without a change: raise `expectation.missed` (once).
    Missed,
    /// A change after a miss: raise `expectation.met`; the next deadline is this.
    Met(Option<DateTime<Utc>>),
}

impl ChangeRule {
    /// The step a successful check takes at `now`: a change moves the deadline (and, after a
    /// miss, is news); no change past the deadline is a miss, told once.
    pub fn step(&self, due: Option<DateTime<Utc>>, missed: bool, changed: bool, now: DateTime<Utc>) -> ChangeStep {
        match (changed, due) {
            (true, _) if missed => ChangeStep::Met(self.due_after(now)),
            (true, _) => ChangeStep::Waiting(self.due_after(now)),
            (false, None) if !missed => ChangeStep::Waiting(self.due_after(now)),
            (false, Some(due)) if now >= due && !missed => ChangeStep::Missed,
            (false, due) => ChangeStep::Waiting(due),
        }
    }
}

/// Where a watch's expectation stands, as its health tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// A change is expected by the deadline, which has not passed (or the values were not
    /// judged yet).
    Waiting,
    /// The deadline passed without a change (`expectation.missed` was raised).
    Missed,
    /// The values meet the expectation.
    Holds,
    /// The values do not meet the expectation (`expectation.missed` was raised).
    Broken,
}

impl Standing {
    /// The name used in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Waiting => "waiting",
            Standing::Missed => "missed",
            Standing::Holds => "holds",
            Standing::Broken => "broken",
        }
    }

    /// Whether the expectation is let down now.
    pub fn let_down(self) -> bool {
        matches!(self, Standing::Missed | Standing::Broken)
    }
}

impl Expect {
    /// `change` when it expects a change, else `values`.
    pub fn kind(&self) -> &'static str {
        if self.change_within.is_some() || self.deadline.is_some() { "change" } else { "values" }
    }

    /// What is expected, in words (`a change within 7d`, `price < 50`).
    pub fn describe(&self, now: DateTime<Utc>) -> String {
        if let Some(rule) = self.change_rule(now) {
            return rule.describe();
        }
        let Some(values) = &self.values else { return String::new() };
        let words: Vec<String> =
            values.rules.iter().map(|r| format!("{} {} {}", r.subject, r.op.as_str(), r.operand)).collect();
        words.join(if values.match_ == crate::values::Match::Any { " or " } else { " and " })
    }

    /// Where it stands from a watch's state: a missed deadline first, then broken values,
    /// else waiting for the deadline (or holding values).
    pub fn standing(&self, missed: bool, holds: Option<bool>) -> Standing {
        match (missed, holds) {
            (true, _) => Standing::Missed,
            (false, Some(false)) if self.values.is_some() => Standing::Broken,
            (false, Some(true)) if self.kind() == "values" => Standing::Holds,
            _ => Standing::Waiting,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).expect("time")
    }

    fn within(text: &str) -> Expect {
        Expect { change_within: Some(text.into()), ..Expect::default() }
    }

    fn by(cron: &str, zone: Option<&str>) -> Expect {
        Expect {
            deadline: Some(ExpectDeadline { cron: cron.into(), time_zone: zone.map(Into::into) }),
            ..Expect::default()
        }
    }

    fn refused(expect: Expect) -> String {
        expect.change_rule_at(at("2026-12-07T12:00:00Z")).expect_err("refused").field
    }

    #[test]
    fn bad_rules_are_refused_naming_the_field() {
        assert_eq!(refused(within("soon")), "options.expect.change_within");
        assert_eq!(refused(within("0s")), "options.expect.change_within");
        assert_eq!(refused(by("0 10 * * MON", Some("Mars/Olympus"))), "options.expect.deadline.time_zone");
        assert_eq!(refused(by("every monday", None)), "options.expect.deadline.cron");
        assert_eq!(refused(by("0 0 30 2 *", None)), "options.expect.deadline.cron");
        let both = Expect { change_within: Some("7d".into()), ..by("0 10 * * MON", None) };
        assert_eq!(refused(both), "options.expect.deadline");
        assert!(Expect::default().change_rule_at(at("2026-12-07T12:00:00Z")).expect("valid").is_none());
    }

    #[test]
    fn a_cron_deadline_is_its_next_occurrence_in_its_zone() {
        let rule = by("0 10 * * MON", Some("Europe/Berlin")).change_rule(at("2026-12-07T12:00:00Z")).expect("rule");
        // Monday 7 Dec 2026 12:00 UTC is past 10:00 Berlin: the next is Monday 14th, 09:00 UTC.
        assert_eq!(rule.due_after(at("2026-12-07T12:00:00Z")), Some(at("2026-12-14T09:00:00Z")));
        assert_eq!(rule.shortest(at("2026-12-07T12:00:00Z")), Some(TimeDelta::days(7)));
        assert_eq!(rule.describe(), "a change by each `0 10 * * MON` (Europe/Berlin)");
    }

    #[test]
    fn a_miss_is_told_once_and_the_next_change_meets_it() {
        let rule = within("7d").change_rule(at("2026-12-01T00:00:00Z")).expect("rule");
        assert_eq!(rule.describe(), "a change within 7d");
        let start = at("2026-12-01T00:00:00Z");
        let due = Some(at("2026-12-08T00:00:00Z"));
        // Not armed yet: armed from now.
        assert_eq!(rule.step(None, false, false, start), ChangeStep::Waiting(due));
        // Before the deadline nothing happens; a change moves it.
        assert_eq!(rule.step(due, false, false, at("2026-12-07T23:59:59Z")), ChangeStep::Waiting(due));
        let later = at("2026-12-03T00:00:00Z");
        assert_eq!(rule.step(due, false, true, later), ChangeStep::Waiting(Some(at("2026-12-10T00:00:00Z"))));
        // At the deadline without a change: missed, once.
        assert_eq!(rule.step(due, false, false, at("2026-12-08T00:00:00Z")), ChangeStep::Missed);
        assert_eq!(rule.step(due, true, false, at("2026-12-09T00:00:00Z")), ChangeStep::Waiting(due));
        // The change after the miss meets it and re-arms from the change.
        let change = at("2026-12-09T06:00:00Z");
        assert_eq!(rule.step(due, true, true, change), ChangeStep::Met(Some(at("2026-12-16T06:00:00Z"))));
    }

    #[test]
    fn the_standing_puts_a_miss_first() {
        let values = crate::values::Conditions::default();
        let both = Expect { values: Some(values.clone()), ..within("7d") };
        assert_eq!(both.standing(true, Some(false)), Standing::Missed);
        assert_eq!(both.standing(false, Some(false)), Standing::Broken);
        assert_eq!(both.standing(false, Some(true)), Standing::Waiting);
        let only = Expect { values: Some(values), ..Expect::default() };
        assert_eq!((only.kind(), only.standing(false, Some(true))), ("values", Standing::Holds));
        assert_eq!(only.standing(false, None), Standing::Waiting);
    }
}
