use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A stored enum value that is not one of the known variants.
#[derive(Debug, thiserror::Error)]
#[error("unknown {kind} `{value}`")]
pub struct ParseEnumError {
    kind: &'static str,
    value: String,
}

impl ParseEnumError {
    /// `value` is not a `kind` (an enum declared outside this crate, such as endpoint kinds).
    pub fn new(kind: &'static str, value: &str) -> ParseEnumError {
        ParseEnumError { kind, value: value.to_owned() }
    }
}

/// Declares a text-backed enum: stored and serialised as its snake_case name.
macro_rules! text_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored and serialised name.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        // By hand: utoipa's derive does not see `serde(rename)` values that come from a macro.
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::schema::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = ParseEnumError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($text => Ok($name::$variant),)+
                    _ => Err(ParseEnumError { kind: stringify!($name), value: s.to_owned() }),
                }
            }
        }
    };
}

text_enum! {
    /// Whether the runner schedules a watch.
    WatchState {
        /// Checked on its schedule.
        Active => "active",
        /// Not checked until resumed.
        Paused => "paused",
    }
}

text_enum! {
    /// Whether a watch's checks succeed.
    WatchHealth {
        /// The last check succeeded (or too few failed in a row to say otherwise).
        Ok => "ok",
        /// Several checks in a row failed.
        Failing => "failing",
        /// Several checks in a row found the page but not the selected element.
        SelectorMissing => "selector_missing",
        /// Several checks in a row read the page but not one of the watch's values.
        ValueMissing => "value_missing",
        /// The last check met a bot wall (a challenge, a CAPTCHA, a waiting room).
        Blocked => "blocked",
        /// The kept session is gone and the login steps could not sign in again.
        LoginRequired => "login_required",
    }
}

text_enum! {
    /// What one check of a watch found.
    RunOutcome {
        /// The first successful check: content recorded, nothing to compare against.
        Baseline => "baseline",
        /// The content is the same as the last snapshot.
        Unchanged => "unchanged",
        /// The content changed: a snapshot and an event were written.
        Changed => "changed",
        /// The check failed (fetch, HTTP status, extraction); the error is recorded.
        Failed => "failed",
        /// A bot wall answered instead of the page: nothing was compared or stored.
        Blocked => "blocked",
    }
}

text_enum! {
    /// Where a delivery stands in the outbox.
    DeliveryStatus {
        /// Waiting for its first attempt.
        Queued => "queued",
        /// Its last attempt failed; another is scheduled at `next_attempt_at`.
        Failed => "failed",
        /// A receiver answered 2xx.
        Sent => "sent",
        /// Given up (attempts exhausted or a permanent failure): in the dead-letter queue.
        Dead => "dead",
        /// Waiting for its endpoint's next digest (the endpoint gathers its events).
        Gathering => "gathering",
        /// Went out inside a digest (`digest_id` names the digest's delivery).
        Digested => "digested",
    }
}

text_enum! {
    /// Why an attempt was made.
    AttemptTrigger {
        /// By the worker, when due.
        Scheduled => "scheduled",
        /// By a person or agent asking for a redelivery.
        Manual => "manual",
    }
}

text_enum! {
    /// Why a delivery attempt failed, as stored in its attempt row.
    AttemptErrorKind {
        /// No complete answer within the request timeout.
        Timeout => "timeout",
        /// The connection was refused or could not be made.
        Connect => "connect",
        /// The host name did not resolve.
        Dns => "dns",
        /// The TLS handshake or certificate check failed.
        Tls => "tls",
        /// Any other transport failure.
        Request => "request",
        /// The receiver answered with a status outside 2xx and 3xx.
        Http => "http",
        /// The receiver answered 3xx (redirects are never followed).
        Redirect => "redirect",
        /// The target address is refused by policy (private, loopback, link-local).
        Blocked => "blocked",
        /// The endpoint's URL does not parse.
        Url => "url",
        /// The endpoint's secret cannot sign, or cannot be decrypted.
        Secret => "secret",
        /// The endpoint's template failed to render this event.
        Template => "template",
        /// The mail server refused the message, or SMTP failed.
        Smtp => "smtp",
    }
}

impl AttemptErrorKind {
    /// Whether the request was never sent: the endpoint's configuration is at fault, not the
    /// receiver, so the attempt says nothing about the receiver's health.
    pub const fn unsendable(self) -> bool {
        matches!(
            self,
            AttemptErrorKind::Blocked | AttemptErrorKind::Url | AttemptErrorKind::Secret | AttemptErrorKind::Template
        )
    }
}

text_enum! {
    /// Progress of a recovery (bulk re-queue).
    RecoveryState {
        /// Requested, not started.
        Pending => "pending",
        /// Pages are being processed.
        Running => "running",
        /// Every matching delivery was processed (or counted, for a dry run).
        Done => "done",
    }
}

text_enum! {
    /// The type of an event, as it appears in payloads and filters.
    EventType {
        /// A watched page's content changed.
        ChangeDetected => "change.detected",
        /// An endpoint was disabled automatically (410 Gone, or failing for too long).
        EndpointDisabled => "endpoint.disabled",
        /// A test event sent on request to one endpoint.
        EndpointTest => "endpoint.test",
        /// A watch's checks have failed several times in a row.
        CheckFailed => "check.failed",
        /// A watch's selector has matched nothing several times in a row.
        SelectorMissing => "check.selector_missing",
        /// One of a watch's values could not be read several checks in a row.
        ValueMissing => "check.value_missing",
        /// A failing, blocked or signed-out watch's check succeeded again.
        CheckRecovered => "check.recovered",
        /// A bot wall (a challenge, a CAPTCHA, a waiting room) answered a watch's check.
        CheckBlocked => "check.blocked",
        /// A watch's kept session is gone and its login steps could not sign in again.
        LoginRequired => "check.login_required",
        /// A watch's conditions hold (on the first check that finds them holding).
        ConditionMet => "condition.met",
        /// A watch's conditions stopped holding.
        ConditionCleared => "condition.cleared",
        /// A watch did not change (or its values broke what they must hold) by its deadline.
        ExpectationMissed => "expectation.missed",
        /// A watch whose expectation was missed changed again (or its values hold again).
        ExpectationMet => "expectation.met",
        /// An endpoint's digest: the events it gathered over one period, as one message.
        Digest => "digest",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_round_trips_through_text() {
        for s in DeliveryStatus::ALL {
            assert_eq!(s.as_str().parse::<DeliveryStatus>().ok(), Some(*s));
        }
        for s in RunOutcome::ALL {
            assert_eq!(s.as_str().parse::<RunOutcome>().ok(), Some(*s));
        }
        assert!("bogus".parse::<DeliveryStatus>().is_err());
        assert_eq!(serde_json::to_string(&EventType::ChangeDetected).ok().as_deref(), Some("\"change.detected\""));
    }
}
