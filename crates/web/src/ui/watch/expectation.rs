//! The watch page's line about its expectation: the deadline the page must change by, in the
//! deadline's own zone, or since when it is overdue; or whether its values meet it.

use chrono::{DateTime, NaiveDateTime, Utc};
use chrono_tz::Tz;
use driftwatch_core::WatchOptions;
use driftwatch_core::expect::{ChangeRule, Standing};
use driftwatch_store::Watch;

use crate::ui::present::When;

/// What the page says about a watch's expectation.
pub(super) struct ExpectView {
    /// The sentence.
    pub text: String,
    /// The time it is about (the deadline, or when it was missed), for a `<time>`.
    pub at: Option<When>,
    /// Let down: missed or broken.
    pub let_down: bool,
}

/// `Mon 14 Dec 10:00 (Europe/Berlin)`: a deadline as its zone reads it.
fn in_zone(t: NaiveDateTime, zone: Tz) -> String {
    format!("{} ({zone})", t.and_utc().with_timezone(&zone).format("%a %-d %b %H:%M"))
}

/// The line for `watch`, when it expects something; a deadline written without a zone of its
/// own (`change_within`) is shown in the viewer's `zone`.
pub(super) fn expect_view(watch: &Watch, options: &WatchOptions, now: DateTime<Utc>, zone: &str) -> Option<ExpectView> {
    let expect = options.expect.as_ref()?;
    let standing = expect.standing(watch.expect_missed_at.is_some(), watch.expect_holds);
    let shown_zone = match expect.change_rule(now) {
        Some(ChangeRule::By { zone, .. }) => zone,
        _ => zone.parse().unwrap_or(Tz::UTC),
    };
    let rule = expect.describe(now);
    let (text, at) = match (standing, watch.expect_due_at, watch.expect_missed_at) {
        (Standing::Missed, due, Some(missed)) => {
            let by = due.map(|d| format!(" by {}", in_zone(d, shown_zone))).unwrap_or_default();
            (format!("Overdue: expected {rule}{by}, and it has not changed since."), Some(missed))
        }
        (Standing::Broken, ..) => (format!("Expected {rule}: not met at the last check."), None),
        (Standing::Holds, ..) => (format!("Expected {rule}: met."), None),
        (_, Some(due), _) if expect.kind() == "change" => {
            (format!("Expected to change by {} ({rule}).", in_zone(due, shown_zone)), Some(due))
        }
        _ => (format!("Expected {rule}: judged at the next check."), None),
    };
    Some(ExpectView { text, at: at.map(|t| When::new(t, now, zone)), let_down: standing.let_down() })
}
