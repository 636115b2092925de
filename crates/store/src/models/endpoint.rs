//! Endpoints, and the rules read off one: its circuit, the events it receives.

use chrono::NaiveDateTime;
use diesel::prelude::*;

use crate::schema::*;

/// Where an account's events go.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = endpoints)]
pub struct Endpoint {
    /// `end_...`
    pub id: String,
    /// Owner.
    pub account_id: String,
    /// The kind's stored name (`webhook`, `slack`, ...; `driftwatch_channels::EndpointKind`).
    pub kind: String,
    /// Receiver URL; for a kind whose URL is a credential, masked (what is shown), the real
    /// one in `url_secret`.
    pub url: String,
    /// A label.
    pub description: String,
    /// Signing secret (`whsec_...`). Never logged, shown once at creation.
    pub secret: String,
    /// Disabled endpoints get no new deliveries, and their queued ones wait.
    pub enabled: bool,
    /// When it was created.
    pub created_at: NaiveDateTime,
    /// Last change.
    pub updated_at: NaiveDateTime,
    /// The secret before the last rotation; still signs until `previous_secret_expires_at`.
    pub previous_secret: Option<String>,
    /// End of the rotation overlap.
    pub previous_secret_expires_at: Option<NaiveDateTime>,
    /// Retry schedule overriding the global one (`1m,5m,...`).
    pub retry_schedule: Option<String>,
    /// Attempt budget overriding the global one.
    pub max_attempts: Option<i32>,
    /// Most requests per second to this endpoint.
    pub rate_limit_per_second: Option<i32>,
    /// Most deliveries in flight to this endpoint (per node) overriding the global cap.
    pub max_in_flight: Option<i32>,
    /// Failed attempts in a row (any node).
    pub consecutive_failures: i32,
    /// Start of the current failure streak.
    pub failing_since: Option<NaiveDateTime>,
    /// While in the future the circuit is open: nothing is sent. Past it, one probe goes out
    /// (half-open) as long as `consecutive_failures` is at the threshold.
    pub circuit_open_until: Option<NaiveDateTime>,
    /// Why it was disabled (by a person, a 410, or a long failure streak).
    pub disabled_reason: Option<String>,
    /// The event types it receives, comma-separated; `None` for all of them.
    pub event_types: Option<String>,
    /// The kind's own settings, a JSON object (a chat id, an SMTP host, a topic...).
    pub settings: String,
    /// The kind's secrets (a bot token, a password...), a JSON object sealed with the server's
    /// key. Never logged, never shown again after it is set.
    pub secrets: Option<String>,
    /// A template for the message's title (subject), the kind's default when `None`.
    pub title_template: Option<String>,
    /// A template for the message's body (the whole body for `http`), the default when `None`.
    pub body_template: Option<String>,
    /// Watches with one of these tags (comma-separated) are routed here.
    pub route_tags: Option<String>,
    /// These watches (comma-separated ids) are routed here. With `route_tags` also `None`, every
    /// watch is.
    pub route_watches: Option<String>,
    /// The real URL when it is a credential (a chat webhook's URL carries its key), sealed
    /// like `secrets`; `url` then holds it masked. `None` when `url` is the real one.
    pub url_secret: Option<String>,
    /// How events go out: `None` at once, else a JSON `driftwatch_core::DeliveryMode` (a
    /// digest per period, with the event types that still go at once).
    pub delivery: Option<String>,
    /// Quiet hours (a JSON `driftwatch_core::QuietHours`); `None` follows the account's.
    pub quiet_hours: Option<String>,
    /// The end of the open digest period (`None` unless it gathers): when its digest is due.
    pub digest_due_at: Option<NaiveDateTime>,
    /// The start of the open digest period.
    pub digest_since: Option<NaiveDateTime>,
}

/// An endpoint's circuit breaker at a given moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Circuit {
    /// Deliveries flow.
    Closed,
    /// Holding deliveries until `circuit_open_until`.
    Open,
    /// Past its open period: one probe at a time decides whether it closes.
    HalfOpen,
}

impl Endpoint {
    /// Its circuit at `now`: the one rule the API's view and the UI's page both show.
    pub fn circuit(&self, now: NaiveDateTime) -> Circuit {
        match self.circuit_open_until {
            Some(until) if until > now => Circuit::Open,
            Some(_) => Circuit::HalfOpen,
            None => Circuit::Closed,
        }
    }

    /// Whether events of `event_type` are delivered here (a test event sent to it always is).
    pub fn receives(&self, event_type: &str) -> bool {
        receives(self.event_types.as_deref(), event_type)
    }
}

/// Whether a route (comma-separated tags and watch ids, both `None` for every watch) takes a
/// watch with `watch_id` and `tags` (comma-separated).
pub fn routes(route_tags: Option<&str>, route_watches: Option<&str>, watch_id: &str, tags: &str) -> bool {
    if route_tags.is_none() && route_watches.is_none() {
        return true;
    }
    route_watches.is_some_and(|ids| ids.split(',').any(|id| id == watch_id))
        || route_tags.is_some_and(|wanted| wanted.split(',').any(|t| tags.split(',').any(|have| have == t)))
}

/// Whether a subscription (comma-separated event types, `None` for all) takes `event_type`.
pub fn receives(event_types: Option<&str>, event_type: &str) -> bool {
    event_types.is_none_or(|types| types.split(',').any(|t| t == event_type))
}

impl Endpoint {
    /// The endpoint as stored, its secrets passed through `seal`: the signing secret (none, the
    /// empty string, for a kind that does not sign), the kind's secrets and a credential URL.
    pub fn sealed(&self, seal: impl Fn(&str) -> String) -> Endpoint {
        let mut stored = self.clone();
        if !stored.secret.is_empty() {
            stored.secret = seal(&stored.secret);
        }
        stored.secrets = stored.secrets.as_deref().map(&seal);
        stored.url_secret = stored.url_secret.as_deref().map(&seal);
        stored
    }

    /// A new enabled webhook endpoint with a fresh secret, healthy, with no overrides.
    pub fn webhook(account_id: &str, url: &str, now: NaiveDateTime) -> Endpoint {
        Endpoint {
            id: driftwatch_core::new_id(driftwatch_core::IdKind::Endpoint),
            account_id: account_id.to_owned(),
            kind: "webhook".to_owned(),
            url: url.to_owned(),
            description: String::new(),
            secret: driftwatch_core::new_webhook_secret(),
            enabled: true,
            created_at: now,
            updated_at: now,
            previous_secret: None,
            previous_secret_expires_at: None,
            retry_schedule: None,
            max_attempts: None,
            rate_limit_per_second: None,
            max_in_flight: None,
            consecutive_failures: 0,
            failing_since: None,
            circuit_open_until: None,
            disabled_reason: None,
            event_types: None,
            settings: "{}".to_owned(),
            secrets: None,
            title_template: None,
            body_template: None,
            route_tags: None,
            route_watches: None,
            url_secret: None,
            delivery: None,
            quiet_hours: None,
            digest_due_at: None,
            digest_since: None,
        }
    }
}
