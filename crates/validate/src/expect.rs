//! A watch's expectation (`options.expect`): its change rule read against the watch's own
//! schedule, and its value conditions against the watch's values.

use chrono::{DateTime, Utc};
use driftwatch_core::{FieldError, Timing, WatchOptions};

/// Checks `options.expect` for a watch on `timing`: a change rule that parses (and, for a
/// deadline, fires), no shorter than the gap between two checks (a page checked weekly cannot
/// be expected to change daily), and value conditions about values the watch reads. Returns
/// the first deadline, counted from `now`, when there is a change rule.
pub(crate) fn valid_expect(
    options: &WatchOptions,
    timing: &Timing,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, FieldError> {
    let Some(expect) = &options.expect else { return Ok(None) };
    if let Some(values) = &expect.values {
        if values.names_a_preset() {
            return Err(FieldError::new(
                "options.expect.values.preset",
                "write the rules out; presets are for conditions",
            ));
        }
        driftwatch_values::conditions::check(values, &options.values).map_err(|e| e.within("options.expect.values"))?;
    }
    let Some(rule) = expect.change_rule_at(now)? else { return Ok(None) };
    let first = timing.next_after(now, "wat_probe");
    let gap = timing.next_after(first, "wat_probe") - first;
    if rule.shortest(now).is_some_and(|shortest| shortest < gap) {
        let field = match rule {
            driftwatch_core::expect::ChangeRule::Within(_) => "options.expect.change_within",
            driftwatch_core::expect::ChangeRule::By { .. } => "options.expect.deadline.cron",
        };
        let every = driftwatch_core::format_duration(gap.to_std().unwrap_or_default());
        return Err(FieldError::new(field, format!("shorter than the watch's own schedule (every {every})")));
    }
    Ok(rule.due_after(now))
}

/// A changed expectation starts afresh: its first deadline `due`, not missed, its values not
/// judged yet.
pub(crate) fn rearm(changes: &mut driftwatch_store::watches::WatchChanges, changed: bool, due: Option<DateTime<Utc>>) {
    if changed {
        changes.expect_due_at = Some(due.map(|t| t.naive_utc()));
        changes.expect_missed_at = Some(None);
        changes.expect_holds = Some(None);
    }
}

#[cfg(test)]
mod tests {
    use driftwatch_core::expect::{Expect, ExpectDeadline};

    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time")
    }

    fn check(expect: Expect, timing: Timing) -> Result<Option<DateTime<Utc>>, String> {
        let options = WatchOptions { expect: Some(expect), ..WatchOptions::default() };
        valid_expect(&options, &timing, now()).map_err(|e| e.field)
    }

    #[test]
    fn a_change_rule_is_no_shorter_than_the_schedule() {
        let within = |d: &str| Expect { change_within: Some(d.into()), ..Expect::default() };
        assert_eq!(check(within("1h"), Timing::Every(7200)), Err("options.expect.change_within".into()));
        let due = check(within("7d"), Timing::Every(3600)).expect("valid");
        assert_eq!(due, Some(now() + chrono::TimeDelta::days(7)));
        let daily = Timing::parse(None, Some("0 9 * * *"), Some("Europe/Paris")).expect("cron");
        assert_eq!(check(within("12h"), daily.clone()), Err("options.expect.change_within".into()));
        let hourly = ExpectDeadline { cron: "0 * * * *".into(), time_zone: None };
        assert_eq!(
            check(Expect { deadline: Some(hourly), ..Expect::default() }, daily),
            Err("options.expect.deadline.cron".into())
        );
        assert_eq!(check(Expect::default(), Timing::Every(60)), Ok(None));
    }

    #[test]
    fn value_expectations_name_values_the_watch_reads() {
        let values: driftwatch_core::values::Conditions =
            serde_json::from_value(serde_json::json!({"rules": [{"subject": "price", "op": "<", "operand": 50}]}))
                .expect("conditions");
        let got = check(Expect { values: Some(values), ..Expect::default() }, Timing::Every(3600));
        assert!(got.as_ref().is_err_and(|f| f.starts_with("options.expect.values")), "{got:?}");
    }
}
