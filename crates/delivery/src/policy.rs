//! What an attempt's outcome means for its delivery: sent, retried later, or dead.

use std::time::{Duration, Instant};

use driftwatch_core::{AttemptErrorKind, DeliveryStatus, parse_schedule};
use rand::RngExt as _;

/// When failed deliveries are tried again, and how often.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Delay after the 1st, 2nd, ... failed attempt; the last entry repeats.
    pub schedule: Vec<Duration>,
    /// Attempts before a delivery is dead.
    pub max_attempts: u32,
    /// Relative jitter applied to each delay (0.2 = +-20%).
    pub jitter: f64,
    /// Longest `Retry-After` honoured; longer ones are cut to this.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            schedule: parse_schedule("1m,5m,30m,2h,12h").unwrap_or_default(),
            max_attempts: 5,
            jitter: 0.2,
            max_retry_after: Duration::from_secs(6 * 3600),
        }
    }
}

/// What happened on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The receiver answered with this status.
    Status(u16),
    /// No usable answer (timeout, connection refused, DNS, TLS...): worth retrying.
    NetworkError,
    /// The SMTP server answered the message with this reply code: 2xx sent, 4xx (transient)
    /// retried, 5xx (permanent) dead.
    Smtp(u16),
    /// The request cannot succeed as configured (target refused by policy, invalid URL or
    /// secret): retrying would only repeat it.
    Unsendable,
}

/// The delivery's next state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// `sent`, `failed` (retry at `retry_in`) or `dead`.
    pub status: DeliveryStatus,
    /// Delay before the next attempt when `failed`.
    pub retry_in: Option<Duration>,
}

impl RetryPolicy {
    /// Decides after attempt number `attempt` (1-based) of at most `max_attempts`, with the
    /// endpoint's own schedule when it has one and the receiver's `Retry-After` if it sent one.
    ///
    /// | outcome | next |
    /// |---|---|
    /// | 2xx | sent |
    /// | 408, 425, 429, 5xx, network error | failed, retried after the schedule's delay (or `Retry-After` on 429 and 503, clamped); dead once attempts are used up |
    /// | any other status (3xx, other 4xx, 410), or a request that cannot be sent | dead at once |
    /// | SMTP 2xx / 4xx / 5xx | sent / retried / dead at once |
    pub fn decide(&self, outcome: Outcome, attempt: u32, max_attempts: u32) -> Decision {
        self.decide_with(outcome, attempt, max_attempts, None, None)
    }

    /// [`RetryPolicy::decide`] with an endpoint's schedule and a `Retry-After`.
    pub fn decide_with(
        &self,
        outcome: Outcome,
        attempt: u32,
        max_attempts: u32,
        schedule: Option<&[Duration]>,
        retry_after: Option<Duration>,
    ) -> Decision {
        let retryable = match outcome {
            Outcome::Status(code) if (200..300).contains(&code) => {
                return Decision { status: DeliveryStatus::Sent, retry_in: None };
            }
            Outcome::Status(code) => matches!(code, 408 | 425 | 429) || (500..600).contains(&code),
            Outcome::Smtp(code) if (200..300).contains(&code) => {
                return Decision { status: DeliveryStatus::Sent, retry_in: None };
            }
            Outcome::Smtp(code) => (400..500).contains(&code),
            Outcome::NetworkError => true,
            Outcome::Unsendable => false,
        };
        if !retryable || attempt >= max_attempts {
            return Decision { status: DeliveryStatus::Dead, retry_in: None };
        }
        let honour_retry_after = matches!(outcome, Outcome::Status(429 | 503));
        let delay = match retry_after.filter(|_| honour_retry_after) {
            Some(asked) => asked.min(self.max_retry_after),
            None => self.delay_in(schedule.unwrap_or(&self.schedule), attempt),
        };
        Decision { status: DeliveryStatus::Failed, retry_in: Some(delay) }
    }

    /// The jittered delay after failed attempt `attempt` (1-based).
    pub fn delay_after(&self, attempt: u32) -> Duration {
        self.delay_in(&self.schedule, attempt)
    }

    fn delay_in(&self, schedule: &[Duration], attempt: u32) -> Duration {
        let index = (attempt.max(1) as usize - 1).min(schedule.len().saturating_sub(1));
        let base = schedule.get(index).copied().unwrap_or(Duration::from_secs(60));
        if self.jitter <= 0.0 {
            return base;
        }
        let factor = rand::rng().random_range((1.0 - self.jitter)..=(1.0 + self.jitter));
        base.mul_f64(factor)
    }
}

/// What one attempt produced.
#[derive(Debug, Clone)]
pub struct SendResult {
    /// Status or network failure.
    pub outcome: Outcome,
    /// Why it failed; none on 2xx.
    pub error_kind: Option<AttemptErrorKind>,
    /// A readable reason, when not 2xx.
    pub error: Option<String>,
    /// The start of the response body.
    pub snippet: Option<String>,
    /// Time until the response head and body were read, or the failure.
    pub duration: Duration,
    /// The receiver's `Retry-After` (seconds or HTTP date), when it sent one.
    pub retry_after: Option<Duration>,
}

impl SendResult {
    /// The receiver's status code, when it answered.
    pub fn status_code(&self) -> Option<i32> {
        match self.outcome {
            Outcome::Status(code) => Some(i32::from(code)),
            _ => None,
        }
    }
}

/// An attempt that failed before any answer: unsendable when the endpoint's setup is at fault.
pub(crate) fn failed(kind: AttemptErrorKind, error: String, started: Instant) -> SendResult {
    SendResult {
        outcome: if kind.unsendable() { Outcome::Unsendable } else { Outcome::NetworkError },
        error_kind: Some(kind),
        error: Some(error),
        snippet: None,
        duration: started.elapsed(),
        retry_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            schedule: vec![Duration::from_secs(10), Duration::from_secs(20)],
            max_attempts: 3,
            jitter: 0.0,
            max_retry_after: Duration::from_secs(3600),
        }
    }

    #[test]
    fn classifies_outcomes() {
        let p = policy();
        let failed = |secs| Decision { status: DeliveryStatus::Failed, retry_in: Some(Duration::from_secs(secs)) };
        let dead = Decision { status: DeliveryStatus::Dead, retry_in: None };
        assert_eq!(p.decide(Outcome::Status(204), 1, 3).status, DeliveryStatus::Sent);
        assert_eq!(p.decide(Outcome::Status(500), 1, 3), failed(10));
        assert_eq!(p.decide(Outcome::Status(429), 2, 3), failed(20));
        assert_eq!(p.decide(Outcome::NetworkError, 2, 3), failed(20));
        assert_eq!(p.decide(Outcome::Status(503), 3, 3), dead);
        for permanent in [301, 400, 404, 410, 422] {
            assert_eq!(p.decide(Outcome::Status(permanent), 1, 3), dead, "{permanent}");
        }
        assert_eq!(p.delay_after(9), Duration::from_secs(20), "the last delay repeats");
    }

    #[test]
    fn retry_after_is_honoured_on_429_and_503_within_bounds() {
        let p = policy();
        let secs = |s| Some(Duration::from_secs(s));
        let own = [Duration::from_secs(1)];
        assert_eq!(p.decide_with(Outcome::Status(429), 1, 3, None, secs(2)).retry_in, secs(2));
        assert_eq!(p.decide_with(Outcome::Status(503), 1, 3, None, secs(99_999)).retry_in, secs(3600), "clamped");
        assert_eq!(p.decide_with(Outcome::Status(500), 1, 3, None, secs(2)).retry_in, secs(10), "ignored on 500");
        assert_eq!(p.decide_with(Outcome::Status(500), 2, 3, Some(&own), None).retry_in, secs(1), "endpoint schedule");
        assert_eq!(p.decide_with(Outcome::Status(429), 3, 3, None, secs(2)).status, DeliveryStatus::Dead);
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let p = RetryPolicy { jitter: 0.2, ..policy() };
        for _ in 0..200 {
            let d = p.delay_after(1);
            assert!(d >= Duration::from_secs(8) && d <= Duration::from_secs(12), "{d:?}");
        }
    }

    #[test]
    fn the_default_schedule_parses() {
        assert_eq!(RetryPolicy::default().schedule.len(), 5);
    }
}
