//! An endpoint's delivery mode (at once, or a digest per period) and quiet hours, for the API,
//! the UI's form and the account's default: checked by `driftwatch_core::delivery_time`, stored
//! as canonical JSON, and the digest period they open or close.

use chrono::{DateTime, NaiveDateTime, Utc};
use driftwatch_core::{DeliveryMode, QuietHours};
use driftwatch_store::Endpoint;

use crate::FieldError;

/// A delivery mode as stored, with the digest period it leaves open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// `endpoints.delivery` (`None`: at once).
    pub delivery: Option<String>,
    /// `endpoints.digest_due_at`: when the open period ends (`None`: nothing gathers).
    pub digest_due_at: Option<NaiveDateTime>,
    /// `endpoints.digest_since`.
    pub digest_since: Option<NaiveDateTime>,
}

/// Checks `mode` for an endpoint that is `current` (none for a new one) at `now`. A new digest
/// opens a period now; a changed schedule keeps the events gathered so far and ends the period
/// at its next end; leaving digest mode sends what was gathered at once, as a last digest.
pub fn valid_delivery(
    mode: Option<DeliveryMode>,
    current: Option<&Endpoint>,
    now: DateTime<Utc>,
) -> Result<Delivery, FieldError> {
    let naive = now.naive_utc();
    let gathering = current.and_then(|c| c.digest_due_at.map(|due| (due, c.digest_since.unwrap_or(c.created_at))));
    let digest = match &mode {
        Some(m) => m.check(now)?,
        None => None,
    };
    let Some(digest) = digest else {
        // At once: whatever the open period gathered goes out now.
        let (due, since) = gathering.map_or((None, None), |(_, since)| (Some(naive), Some(since)));
        return Ok(Delivery { delivery: None, digest_due_at: due, digest_since: since });
    };
    let stored = mode.as_ref().and_then(|m| serde_json::to_string(m).ok());
    if let (Some(c), Some((due, since))) = (current, gathering)
        && c.delivery == stored
    {
        return Ok(Delivery { delivery: stored, digest_due_at: Some(due), digest_since: Some(since) });
    }
    let end = digest
        .period
        .next_end(now)
        .ok_or_else(|| FieldError::new("delivery.cron", "the expression never fires again"))?;
    Ok(Delivery {
        delivery: stored,
        digest_due_at: Some(end.naive_utc()),
        digest_since: Some(gathering.map_or(naive, |(_, since)| since)),
    })
}

/// Quiet hours as stored (`None`: none of its own).
pub fn valid_quiet_hours(quiet: Option<QuietHours>) -> Result<Option<String>, FieldError> {
    let Some(quiet) = quiet else { return Ok(None) };
    quiet.check()?;
    Ok(serde_json::to_string(&quiet).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    fn daily() -> DeliveryMode {
        DeliveryMode::parse(r#"{"mode": "digest", "every": "1d"}"#).unwrap()
    }

    #[test]
    fn a_digest_opens_a_period_and_leaving_it_flushes() {
        let now = at("2026-12-07T12:00:00Z");
        let opened = valid_delivery(Some(daily()), None, now).unwrap();
        assert_eq!(opened.digest_due_at, Some(at("2026-12-08T12:00:00Z").naive_utc()));
        assert_eq!(opened.digest_since, Some(now.naive_utc()));
        let mut endpoint = Endpoint::webhook("acc_x", "https://example.com/", now.naive_utc());
        endpoint.delivery = opened.delivery.clone();
        endpoint.digest_due_at = opened.digest_due_at;
        endpoint.digest_since = opened.digest_since;
        let later = at("2026-12-07T15:00:00Z");
        let same = valid_delivery(Some(daily()), Some(&endpoint), later).unwrap();
        assert_eq!(same, opened, "the same mode again keeps the period");
        let flushed = valid_delivery(None, Some(&endpoint), later).unwrap();
        assert_eq!(flushed.delivery, None);
        assert_eq!(flushed.digest_due_at, Some(later.naive_utc()), "what was gathered goes now");
        assert_eq!(valid_delivery(None, None, later).unwrap().digest_due_at, None);
    }

    #[test]
    fn bad_modes_and_hours_name_their_field() {
        let now = at("2026-12-07T12:00:00Z");
        let every_second = DeliveryMode::parse(r#"{"mode": "digest", "cron": "* * * * * *"}"#).unwrap();
        assert_eq!(valid_delivery(Some(every_second), None, now).unwrap_err().field, "delivery.cron");
        let all_week = QuietHours::parse(r#"{"from": "00:00", "to": "00:00"}"#).unwrap();
        assert_eq!(valid_quiet_hours(Some(all_week)).unwrap_err().field, "quiet_hours.to");
    }
}
