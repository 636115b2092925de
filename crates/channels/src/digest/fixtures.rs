//! Events as the alert crate's builders make them, and digests of them, for tests.

use chrono::{DateTime, Utc};
use driftwatch_alert::{CheckRef, SnapshotPair, WatchRef, v1};
use driftwatch_core::EventType;
use serde_json::Value;

/// A time in UTC.
pub(crate) fn at(rfc3339: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(rfc3339).map(|t| t.to_utc()).unwrap_or_default()
}

/// The lamp's watch.
pub(crate) const LAMP: WatchRef<'static> = WatchRef { id: "wat_lamp", name: "Lamp", url: "https://shop.example/lamp" };

/// `change.detected` on the lamp, with a price that moved.
pub(crate) fn lamp_change() -> String {
    let change =
        driftwatch_diff::diff_texts("Lamp\nPrice 89.99\n", "Lamp\nPrice 67.00\nNew colours\n", "snp_1", "snp_2");
    let moved = v1::ValueChange {
        name: "price".into(),
        from: serde_json::json!(89.99),
        to: serde_json::json!(67.0),
        currency: Some("EUR".into()),
        change_percent: None,
    };
    driftwatch_alert::change_payload_with(
        "evt_c1",
        LAMP,
        &change,
        SnapshotPair { previous: "snp_1", current: "snp_2" },
        at("2026-12-07T09:00:00Z"),
        driftwatch_alert::ChangeExtras { render: None, values: vec![moved] },
    )
}

/// `condition.met` on the lamp.
pub(crate) fn lamp_condition() -> String {
    let data = v1::ConditionEvent {
        event_id: "evt_c2".into(),
        watch: LAMP.into(),
        holds: true,
        reasons: vec!["price 67.00 EUR is below 70".into()],
        readings: [("price".to_owned(), serde_json::json!(67.0))].into(),
        values: Vec::new(),
        snapshot: Some("snp_2".into()),
        diff: None,
        snapshots: None,
        render: None,
    };
    driftwatch_alert::condition_payload(EventType::ConditionMet, LAMP, data, at("2026-12-07T09:00:01Z"))
}

/// `check.failed` on a watch named `name`.
pub(crate) fn status_failed(name: &str) -> String {
    let watch = WatchRef { id: "wat_status", name, url: "https://status.example/" };
    let check = CheckRef {
        run_id: "run_1",
        http_status: Some(503),
        error: Some("HTTP 503"),
        consecutive_failures: 3,
        blocked_by: None,
    };
    driftwatch_alert::check_payload(EventType::CheckFailed, "evt_f1", watch, check, at("2026-12-07T12:00:00Z"))
}

/// An `expectation.*` body: the status page should change within 7 days.
pub(crate) fn expectation(event_type: EventType) -> String {
    let met = event_type == EventType::ExpectationMet;
    let data = v1::ExpectationEvent {
        event_id: "evt_x1".into(),
        watch: v1::Watch { id: "wat_status".into(), name: "Status page".into(), url: "https://status.example/".into() },
        expectation: v1::Expectation {
            kind: "change".into(),
            rule: "a change within 7 days".into(),
            holds: met,
            deadline: Some(if met { "2026-12-21T10:00:00Z" } else { "2026-12-14T10:00:00Z" }.into()),
            last_change: Some("2026-12-07T09:30:00Z".into()),
            reasons: vec!["no change since 7 Dec".into()],
            snapshot: None,
        },
    };
    let envelope = v1::Envelope { event_type, timestamp: "2026-12-14T10:00:00.000Z".into(), data };
    // As the alert crate writes bodies: through a `Value`, keys sorted.
    serde_json::to_value(&envelope).map(|v| v.to_string()).unwrap_or_default()
}

/// A digest of `events` (bodies; anything that is not JSON goes in as a string).
pub(crate) fn digest(events: &[String], count: usize, omitted: usize, summary: Option<&str>) -> String {
    let data = v1::Digest {
        event_id: "evt_d1".into(),
        endpoint: v1::Endpoint { id: "end_1".into(), url: "https://hooks.example/".into(), description: String::new() },
        period: v1::Period { start: "2026-12-07T08:00:00Z".into(), end: "2026-12-08T08:00:00Z".into() },
        count,
        events: events.iter().map(|e| serde_json::from_str(e).unwrap_or_else(|_| Value::String(e.clone()))).collect(),
        omitted,
        summary: summary.map(str::to_owned),
    };
    let envelope = v1::Envelope { event_type: EventType::Digest, timestamp: "2026-12-08T08:00:00.000Z".into(), data };
    // As the alert crate writes bodies: through a `Value`, keys sorted.
    serde_json::to_value(&envelope).map(|v| v.to_string()).unwrap_or_default()
}

/// Three events over two watches: the lamp's change, the status page's failure (the page named
/// `status`), the lamp's condition.
pub(crate) fn three_over_two(status: &str) -> String {
    digest(&[lamp_change(), status_failed(status), lamp_condition()], 3, 0, None)
}
