//! Endpoints: the URL, description, retry policy, limits and event types of a new endpoint or
//! of a change.

use chrono::{DateTime, Utc};
use driftwatch_core::{EndpointKind, EventType};
use driftwatch_net::TargetPolicy;
use driftwatch_store::Endpoint;
use driftwatch_store::endpoints::EndpointChanges;

use crate::{Errors, FieldError, Invalid, valid_target};

const MAX_DESCRIPTION: usize = 500;

fn in_range(field: &str, value: Option<i32>, range: std::ops::RangeInclusive<i32>) -> Result<Option<i32>, FieldError> {
    match value {
        Some(v) if !range.contains(&v) => {
            Err(FieldError::new(field, format!("must be between {} and {}", range.start(), range.end())))
        }
        other => Ok(other),
    }
}

fn valid_description(description: &str) -> Result<String, FieldError> {
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(FieldError::new("description", format!("longer than {MAX_DESCRIPTION} characters")));
    }
    Ok(description.trim().to_owned())
}

/// A retry schedule as stored: `None` for the global one.
fn valid_schedule(schedule: Option<&str>) -> Result<Option<String>, FieldError> {
    let Some(schedule) = schedule.map(str::trim).filter(|s| !s.is_empty()) else { return Ok(None) };
    let parsed = driftwatch_core::parse_schedule(schedule).map_err(|e| FieldError::new("retry_schedule", e))?;
    if parsed.len() > 20 || parsed.iter().any(|d| *d > std::time::Duration::from_secs(7 * 86_400)) {
        return Err(FieldError::new("retry_schedule", "at most 20 delays of at most 7 days each"));
    }
    Ok(Some(schedule.to_owned()))
}

/// Event types as stored: sorted, once each, comma-separated; `None` (all) for none given.
fn valid_event_types(types: Option<Vec<EventType>>) -> Result<Option<String>, FieldError> {
    let Some(types) = types else { return Ok(None) };
    if types.is_empty() {
        return Err(FieldError::new("event_types", "give at least one event type, or leave it out for all"));
    }
    let mut names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    Ok(Some(names.join(",")))
}

/// A new endpoint as asked for.
#[derive(Debug, Clone, Default)]
pub struct EndpointInput {
    /// Where to send.
    pub url: String,
    /// A note for people.
    pub description: Option<String>,
    /// Webhook (default) or Slack.
    pub kind: Option<EndpointKind>,
    /// Delays between attempts; the global schedule when absent.
    pub retry_schedule: Option<String>,
    /// Attempts before dead.
    pub max_attempts: Option<i32>,
    /// Requests a second at most.
    pub rate_limit_per_second: Option<i32>,
    /// Requests in flight at most.
    pub max_in_flight: Option<i32>,
    /// Event types received; all when absent.
    pub event_types: Option<Vec<EventType>>,
}

/// Builds the endpoint `input` asks for (with a new signing secret), or says every field at
/// fault.
pub fn new_endpoint(
    input: EndpointInput,
    policy: TargetPolicy,
    account_id: &str,
    now: DateTime<Utc>,
) -> Result<Endpoint, Invalid> {
    let mut errors = Errors::default();
    let url = errors.take(valid_target("url", &input.url, policy));
    let description = errors.take(valid_description(&input.description.unwrap_or_default()));
    let retry_schedule = errors.take(valid_schedule(input.retry_schedule.as_deref()));
    let max_attempts = errors.take(in_range("max_attempts", input.max_attempts, 1..=50));
    let rate_limit_per_second = errors.take(in_range("rate_limit_per_second", input.rate_limit_per_second, 1..=10_000));
    let max_in_flight = errors.take(in_range("max_in_flight", input.max_in_flight, 1..=1_000));
    let event_types = errors.take(valid_event_types(input.event_types));
    errors.finish()?;
    let invalid = || Invalid(vec![FieldError::new("url", "invalid")]);
    Ok(Endpoint {
        kind: input.kind.unwrap_or(EndpointKind::Webhook).as_str().to_owned(),
        description: description.ok_or_else(invalid)?,
        retry_schedule: retry_schedule.ok_or_else(invalid)?,
        max_attempts: max_attempts.ok_or_else(invalid)?,
        rate_limit_per_second: rate_limit_per_second.ok_or_else(invalid)?,
        max_in_flight: max_in_flight.ok_or_else(invalid)?,
        event_types: event_types.ok_or_else(invalid)?,
        ..Endpoint::webhook(account_id, &url.ok_or_else(invalid)?, now.naive_utc())
    })
}

/// A change to an endpoint: only the fields given change; `Some(None)` returns a setting to the
/// global default.
#[derive(Debug, Clone, Default)]
pub struct EndpointPatch {
    /// A new URL.
    pub url: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new retry schedule.
    pub retry_schedule: Option<Option<String>>,
    /// A new attempt budget.
    pub max_attempts: Option<Option<i32>>,
    /// A new rate limit.
    pub rate_limit_per_second: Option<Option<i32>>,
    /// A new in-flight cap.
    pub max_in_flight: Option<Option<i32>>,
    /// New event types.
    pub event_types: Option<Option<Vec<EventType>>>,
}

/// The changes `patch` asks for, or every field at fault.
pub fn endpoint_changes(
    patch: EndpointPatch,
    policy: TargetPolicy,
    now: DateTime<Utc>,
) -> Result<EndpointChanges, Invalid> {
    let mut errors = Errors::default();
    let mut changes = EndpointChanges { updated_at: Some(now.naive_utc()), ..EndpointChanges::default() };
    if let Some(url) = &patch.url {
        changes.url = errors.take(valid_target("url", url, policy));
    }
    if let Some(description) = patch.description {
        changes.description = errors.take(valid_description(&description));
    }
    if let Some(schedule) = patch.retry_schedule {
        changes.retry_schedule = errors.take(valid_schedule(schedule.as_deref()));
    }
    if let Some(n) = patch.max_attempts {
        changes.max_attempts = errors.take(in_range("max_attempts", n, 1..=50));
    }
    if let Some(n) = patch.rate_limit_per_second {
        changes.rate_limit_per_second = errors.take(in_range("rate_limit_per_second", n, 1..=10_000));
    }
    if let Some(n) = patch.max_in_flight {
        changes.max_in_flight = errors.take(in_range("max_in_flight", n, 1..=1_000));
    }
    if let Some(types) = patch.event_types {
        changes.event_types = errors.take(valid_event_types(types));
    }
    errors.finish()?;
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_report_every_field_at_fault() {
        let policy = TargetPolicy { allow_private: false };
        let now = Utc::now();
        let ok = new_endpoint(
            EndpointInput { url: "https://hooks.example.com/x".into(), ..EndpointInput::default() },
            policy,
            "acc_1",
            now,
        )
        .expect("valid");
        assert!(ok.secret.starts_with("whsec_"));
        let bad = EndpointInput {
            url: "https://hooks.example.com/x".into(),
            retry_schedule: Some("soon".into()),
            max_attempts: Some(0),
            event_types: Some(vec![]),
            ..EndpointInput::default()
        };
        let Invalid(errors) = new_endpoint(bad, policy, "acc_1", now).expect_err("invalid");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["retry_schedule", "max_attempts", "event_types"]);
        let patch = EndpointPatch { max_in_flight: Some(Some(5000)), ..EndpointPatch::default() };
        let Invalid(errors) = endpoint_changes(patch, policy, now).expect_err("invalid");
        assert_eq!(errors[0].message, "must be between 1 and 1000");
    }
}
