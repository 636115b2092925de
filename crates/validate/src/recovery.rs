//! What a valid recovery request is: which of an endpoint's deliveries to re-queue.

use chrono::NaiveDateTime;
use driftwatch_core::DeliveryStatus;

use crate::{FieldError, Invalid};

/// A recovery as the API or a form asks for it.
#[derive(Debug, Clone)]
pub struct RecoveryInput {
    /// Deliveries created at or after this.
    pub since: NaiveDateTime,
    /// ... and before this (default: any time up to now).
    pub until: Option<NaiveDateTime>,
    /// `failed`, `dead` or both; `None` means both.
    pub statuses: Option<Vec<DeliveryStatus>>,
    /// Only count them.
    pub dry_run: bool,
}

/// A valid recovery: `until` after `since`, and at least one status, each `failed` or `dead`.
#[derive(Debug, Clone)]
pub struct RecoveryRequest {
    /// Deliveries created at or after this.
    pub since: NaiveDateTime,
    /// ... and before this.
    pub until: Option<NaiveDateTime>,
    /// `failed`, `dead` or both, never empty.
    pub statuses: Vec<DeliveryStatus>,
    /// Only count them.
    pub dry_run: bool,
}

/// Checks a recovery request; every invalid field is reported.
pub fn recovery(input: RecoveryInput) -> Result<RecoveryRequest, Invalid> {
    let mut errors = Vec::new();
    if input.until.is_some_and(|until| until <= input.since) {
        errors.push(FieldError::new("until", "must be after `since`"));
    }
    let statuses = input.statuses.unwrap_or_else(|| vec![DeliveryStatus::Failed, DeliveryStatus::Dead]);
    if statuses.is_empty() || statuses.iter().any(|s| !matches!(s, DeliveryStatus::Failed | DeliveryStatus::Dead)) {
        errors.push(FieldError::new("statuses", "only `failed` and `dead` deliveries can be recovered"));
    }
    if !errors.is_empty() {
        return Err(Invalid(errors));
    }
    Ok(RecoveryRequest { since: input.since, until: input.until, statuses, dry_run: input.dry_run })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> RecoveryInput {
        let since = chrono::DateTime::from_timestamp(1_700_000_000, 0).map(|t| t.naive_utc()).unwrap_or_default();
        RecoveryInput { since, until: None, statuses: None, dry_run: false }
    }

    #[test]
    fn statuses_default_to_failed_and_dead() {
        let request = recovery(input()).map_err(|e| e.to_string());
        assert_eq!(request.map(|r| r.statuses), Ok(vec![DeliveryStatus::Failed, DeliveryStatus::Dead]));
    }

    #[test]
    fn bad_windows_and_statuses_are_named() {
        let base = input();
        let bad = RecoveryInput { until: Some(base.since), statuses: Some(vec![DeliveryStatus::Sent]), ..base.clone() };
        let fields: Vec<String> =
            recovery(bad).err().map(|e| e.0.into_iter().map(|f| f.field).collect()).unwrap_or_default();
        assert_eq!(fields, ["until", "statuses"]);
        let none = RecoveryInput { statuses: Some(Vec::new()), ..base };
        assert_eq!(recovery(none).err().and_then(|e| e.first().map(|f| f.field.clone())), Some("statuses".into()));
    }
}
