//! Endpoints: the URL, description, retry policy, limits and event types of a new endpoint or
//! of a change.

use chrono::{DateTime, Utc};
use driftwatch_channels::{EndpointKind, Transport};
use driftwatch_core::EventType;
use driftwatch_net::TargetPolicy;
use driftwatch_store::Endpoint;
use driftwatch_store::endpoints::EndpointChanges;

use crate::{Errors, FieldError, Invalid, valid_tags, valid_target};

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
    /// The kind's settings, secrets and templates.
    pub channel: ChannelInput,
    /// Which watches' events it receives; all when absent.
    pub route: Option<RouteInput>,
    /// At once (absent) or a digest per period.
    pub delivery: Option<driftwatch_core::DeliveryMode>,
    /// Its quiet hours; the account's when absent.
    pub quiet_hours: Option<driftwatch_core::QuietHours>,
}

/// What an endpoint's kind needs beyond its URL.
#[derive(Debug, Clone, Default)]
pub struct ChannelInput {
    /// The kind's settings (a JSON object).
    pub settings: Option<serde_json::Value>,
    /// The kind's secrets (a JSON object); stored sealed, never shown again.
    pub secrets: Option<serde_json::Value>,
    /// A title template.
    pub title_template: Option<String>,
    /// A body template (the whole body for `http`).
    pub body_template: Option<String>,
}

/// Which watches an endpoint receives: those with any of `tags`, and those in `watches`.
#[derive(Debug, Clone, Default)]
pub struct RouteInput {
    /// Tags.
    pub tags: Option<Vec<String>>,
    /// Watch ids (the caller checks they are the account's).
    pub watches: Option<Vec<String>>,
}

/// A kind's URL, settings, secrets and templates as stored (secrets still in plaintext: the
/// caller seals them).
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// The URL (a kind's default API server when none was given).
    pub url: String,
    /// Settings JSON.
    pub settings: String,
    /// Secrets JSON, plaintext; `None` for none.
    pub secrets: Option<String>,
    /// Title template.
    pub title_template: Option<String>,
    /// Body template.
    pub body_template: Option<String>,
}

/// Most bytes of a template.
const MAX_TEMPLATE: usize = driftwatch_channels::template::MAX_SOURCE;

/// Checks a kind's URL, settings, secrets and templates together.
pub fn valid_channel(
    kind: EndpointKind,
    url: &str,
    input: ChannelInput,
    policy: TargetPolicy,
) -> Result<Channel, Vec<FieldError>> {
    let mut errors = Vec::new();
    let url = match (url.trim(), kind.spec().default_url) {
        ("", Some(default)) => default.to_owned(),
        (url, _) => url.to_owned(),
    };
    if kind.spec().credential_url && url.contains(driftwatch_channels::masked::MASK) {
        errors.push(FieldError::new(
            "url",
            format!("type the whole URL: {} stands for the part kept secret", driftwatch_channels::masked::MASK),
        ));
    }
    let url = if kind.spec().transport == Transport::Smtp {
        // smtp://host:port, with the host held to the same guard as any other target.
        match url::Url::parse(&url) {
            Ok(parsed) if parsed.scheme() == "smtp" && parsed.host_str().is_some() => {
                let stand_in =
                    format!("http://{}:{}/", parsed.host_str().unwrap_or_default(), parsed.port().unwrap_or(25));
                match valid_target("url", &stand_in, policy) {
                    Ok(_) => url,
                    Err(e) => {
                        errors.push(e);
                        url
                    }
                }
            }
            _ => {
                errors.push(FieldError::new("url", "an email endpoint's URL is its SMTP server: smtp://host:port"));
                url
            }
        }
    } else {
        match valid_target("url", &url, policy) {
            Ok(url) => url,
            Err(e) => {
                errors.push(e);
                url
            }
        }
    };
    let parsed =
        match driftwatch_channels::settings::validate(kind, &url, input.settings.as_ref(), input.secrets.as_ref()) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                errors.push(e);
                None
            }
        };
    let title = input.title_template.filter(|t| !t.trim().is_empty());
    let body = input.body_template.filter(|t| !t.trim().is_empty());
    if kind == EndpointKind::Webhook && (title.is_some() || body.is_some()) {
        errors.push(FieldError::new(
            if body.is_some() { "body_template" } else { "title_template" },
            "a webhook receives the signed event payload as it is; use the http kind for a body of your own",
        ));
    } else {
        for (field, source) in [("title_template", &title), ("body_template", &body)] {
            let Some(source) = source else { continue };
            if source.len() > MAX_TEMPLATE {
                errors.push(FieldError::new(field, format!("longer than {MAX_TEMPLATE} bytes")));
                continue;
            }
            if let Err(e) = driftwatch_channels::template::check(source, &driftwatch_channels::Context::sample(None)) {
                errors.push(FieldError::new(field, e.to_string()));
            }
        }
    }
    match parsed {
        Some((settings, secrets)) if errors.is_empty() => Ok(Channel {
            url,
            settings: settings.to_json(),
            secrets: secrets.to_json(),
            title_template: title,
            body_template: body,
        }),
        _ => Err(errors),
    }
}

/// The endpoint an Apprise notification URL describes, as input for [`new_endpoint`]; a
/// refusal names `apprise_url` and never a secret.
pub fn from_apprise(apprise_url: &str) -> Result<EndpointInput, FieldError> {
    let imported =
        driftwatch_channels::apprise::parse(apprise_url).map_err(|e| FieldError::new("apprise_url", e.to_string()))?;
    Ok(EndpointInput {
        url: imported.url,
        kind: Some(imported.kind),
        channel: ChannelInput {
            settings: Some(imported.settings),
            secrets: Some(imported.secrets),
            ..ChannelInput::default()
        },
        ..EndpointInput::default()
    })
}

/// A route as stored: tags and watch ids comma-separated; `(None, None)` for all watches.
pub fn valid_route(route: Option<RouteInput>) -> Result<(Option<String>, Option<String>), FieldError> {
    let Some(route) = route else { return Ok((None, None)) };
    let tags = match route.tags {
        Some(tags) => {
            let tags = valid_tags(&tags).map_err(|e| FieldError::new("route.tags", e.message))?;
            (!tags.is_empty()).then(|| tags.join(","))
        }
        None => None,
    };
    let watches = match route.watches {
        Some(mut ids) => {
            ids.sort();
            ids.dedup();
            if ids.len() > 1000 {
                return Err(FieldError::new("route.watches", "at most 1000 watches; route by tag instead"));
            }
            if let Some(bad) = ids.iter().position(|id| !id.starts_with("wat_") || id.contains(',') || id.len() > 64) {
                return Err(FieldError::new(format!("route.watches[{bad}]"), "not a watch id"));
            }
            (!ids.is_empty()).then(|| ids.join(","))
        }
        None => None,
    };
    if tags.is_none() && watches.is_none() {
        return Err(FieldError::new("route", "give tags or watches to route by, or leave route out for every watch"));
    }
    Ok((tags, watches))
}

/// Builds the endpoint `input` asks for (with a new signing secret when its kind signs, and its
/// URL masked with the real one beside it to seal when the URL is a credential), or says every
/// field at fault.
pub fn new_endpoint(
    input: EndpointInput,
    policy: TargetPolicy,
    account_id: &str,
    now: DateTime<Utc>,
) -> Result<Endpoint, Invalid> {
    let mut errors = Errors::default();
    let kind = input.kind.unwrap_or(EndpointKind::Webhook);
    let channel = match valid_channel(kind, &input.url, input.channel, policy) {
        Ok(channel) => Some(channel),
        Err(found) => {
            for e in found {
                errors.take::<()>(Err(e));
            }
            None
        }
    };
    let route = errors.take(valid_route(input.route));
    let description = errors.take(valid_description(&input.description.unwrap_or_default()));
    let retry_schedule = errors.take(valid_schedule(input.retry_schedule.as_deref()));
    let max_attempts = errors.take(in_range("max_attempts", input.max_attempts, 1..=50));
    let rate_limit_per_second = errors.take(in_range("rate_limit_per_second", input.rate_limit_per_second, 1..=10_000));
    let max_in_flight = errors.take(in_range("max_in_flight", input.max_in_flight, 1..=1_000));
    let event_types = errors.take(valid_event_types(input.event_types));
    let delivery = errors.take(crate::valid_delivery(input.delivery, None, now));
    let quiet_hours = errors.take(crate::valid_quiet_hours(input.quiet_hours));
    errors.finish()?;
    let delivery = delivery.ok_or_else(|| Invalid(vec![FieldError::new("delivery", "invalid")]))?;
    let invalid = || Invalid(vec![FieldError::new("url", "invalid")]);
    let channel = channel.ok_or_else(invalid)?;
    let (route_tags, route_watches) = route.ok_or_else(invalid)?;
    let (url, url_secret) = driftwatch_channels::shown_and_sealed(kind, &channel.url);
    let base = Endpoint::webhook(account_id, &url, now.naive_utc());
    Ok(Endpoint {
        // Only a kind whose requests carry a signature has a signing secret.
        secret: if kind.spec().signed { base.secret.clone() } else { String::new() },
        url_secret,
        kind: kind.as_str().to_owned(),
        settings: channel.settings,
        secrets: channel.secrets,
        title_template: channel.title_template,
        body_template: channel.body_template,
        route_tags,
        route_watches,
        description: description.ok_or_else(invalid)?,
        retry_schedule: retry_schedule.ok_or_else(invalid)?,
        max_attempts: max_attempts.ok_or_else(invalid)?,
        rate_limit_per_second: rate_limit_per_second.ok_or_else(invalid)?,
        max_in_flight: max_in_flight.ok_or_else(invalid)?,
        event_types: event_types.ok_or_else(invalid)?,
        quiet_hours: quiet_hours.ok_or_else(invalid)?,
        delivery: delivery.delivery,
        digest_due_at: delivery.digest_due_at,
        digest_since: delivery.digest_since,
        ..base
    })
}

/// Whether an endpoint of `kind` (its stored name) has a signing secret to rotate: only a
/// kind whose requests are signed does.
pub fn may_rotate_secret(kind: &str) -> Result<(), String> {
    match kind.parse::<EndpointKind>() {
        Ok(k) if k.spec().signed => Ok(()),
        _ => Err(format!("a {kind} endpoint's requests are not signed, so it has no signing secret to rotate")),
    }
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
    /// New settings (all of them).
    pub settings: Option<serde_json::Value>,
    /// Secrets to change: each one named replaces the stored one, `null` removes it, and those
    /// not named are kept.
    pub secrets: Option<serde_json::Value>,
    /// A new title template (`Some(None)`: the default).
    pub title_template: Option<Option<String>>,
    /// A new body template (`Some(None)`: the default).
    pub body_template: Option<Option<String>>,
    /// A new route (`Some(None)`: every watch).
    pub route: Option<Option<RouteInput>>,
    /// A new delivery mode (`Some(None)`: at once).
    pub delivery: Option<Option<driftwatch_core::DeliveryMode>>,
    /// New quiet hours (`Some(None)`: the account's).
    pub quiet_hours: Option<Option<driftwatch_core::QuietHours>>,
}

/// What a change is checked against: the endpoint as it is, its secrets opened.
#[derive(Debug, Clone, Copy)]
pub struct Current<'a> {
    /// The endpoint.
    pub endpoint: &'a Endpoint,
    /// Its secrets in plaintext (`None` for none).
    pub secrets: Option<&'a str>,
    /// Its credential URL opened (`url_secret`); `None` when `endpoint.url` is the real one.
    pub url: Option<&'a str>,
}

/// The secrets after a change: `given`'s keys replace `stored`'s, a `null` removes one, the
/// others are kept. What is not an object is passed on as it is, to be refused by name.
fn merged_secrets(stored: Option<serde_json::Value>, given: Option<serde_json::Value>) -> Option<serde_json::Value> {
    match (stored, given) {
        (Some(serde_json::Value::Object(mut kept)), Some(serde_json::Value::Object(given))) => {
            for (key, value) in given {
                if value.is_null() {
                    kept.remove(&key);
                } else {
                    kept.insert(key, value);
                }
            }
            Some(serde_json::Value::Object(kept))
        }
        (stored, None) => stored,
        (_, given) => given,
    }
}

/// The changes `patch` asks for, or every field at fault.
pub fn endpoint_changes(
    patch: EndpointPatch,
    current: Current<'_>,
    policy: TargetPolicy,
    now: DateTime<Utc>,
) -> Result<EndpointChanges, Invalid> {
    let mut errors = Errors::default();
    let mut changes = EndpointChanges { updated_at: Some(now.naive_utc()), ..EndpointChanges::default() };
    // The URL as shown (masked when it is a credential) sent back unchanged keeps the stored one.
    let mut patch = patch;
    patch.url = patch.url.filter(|url| url.trim() != current.endpoint.url);
    let channel_changed = patch.url.is_some()
        || patch.settings.is_some()
        || patch.secrets.is_some()
        || patch.title_template.is_some()
        || patch.body_template.is_some();
    if channel_changed {
        // The kind's fields are checked together, the unchanged ones as they are.
        let endpoint = current.endpoint;
        let kind = endpoint.kind.parse().unwrap_or(EndpointKind::Webhook);
        let json = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
        let input = ChannelInput {
            settings: patch.settings.clone().or_else(|| json(&endpoint.settings)),
            secrets: merged_secrets(current.secrets.and_then(json), patch.secrets.clone()),
            title_template: patch.title_template.clone().unwrap_or_else(|| endpoint.title_template.clone()),
            body_template: patch.body_template.clone().unwrap_or_else(|| endpoint.body_template.clone()),
        };
        let url = patch.url.as_deref().or(current.url).unwrap_or(&endpoint.url);
        match valid_channel(kind, url, input, policy) {
            Ok(channel) => {
                if patch.url.is_some() {
                    let (shown, sealed) = driftwatch_channels::shown_and_sealed(kind, &channel.url);
                    changes.url = Some(shown);
                    changes.url_secret = Some(sealed);
                }
                changes.settings = patch.settings.is_some().then_some(channel.settings);
                changes.secrets = patch.secrets.is_some().then_some(channel.secrets);
                changes.title_template = patch.title_template.is_some().then_some(channel.title_template);
                changes.body_template = patch.body_template.is_some().then_some(channel.body_template);
            }
            Err(found) => {
                for e in found {
                    errors.take::<()>(Err(e));
                }
            }
        }
    }
    if let Some(route) = patch.route
        && let Some(routes) = errors.take(valid_route(route))
    {
        changes.route_tags = Some(routes.0);
        changes.route_watches = Some(routes.1);
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
    if let Some(mode) = patch.delivery
        && let Some(d) = errors.take(crate::valid_delivery(mode, Some(current.endpoint), now))
    {
        changes.delivery = Some(d.delivery);
        changes.digest_due_at = Some(d.digest_due_at);
        changes.digest_since = Some(d.digest_since);
    }
    if let Some(quiet) = patch.quiet_hours {
        changes.quiet_hours = errors.take(crate::valid_quiet_hours(quiet));
    }
    errors.finish()?;
    Ok(changes)
}

#[cfg(test)]
mod tests;
