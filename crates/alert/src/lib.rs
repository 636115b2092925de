//! Deciding whether a change is worth an alert, and the versioned event payload.
//!
//! Pure: no IO, and time is passed in. The payload is serialised once here and the bytes are
//! stored in the outbox, so every attempt and redelivery sends exactly the same body.

use chrono::{DateTime, SecondsFormat, Utc};
use driftwatch_core::EventType;
use driftwatch_diff::TextChange;

mod noise;
pub mod payload;

pub use noise::{Noise, NoiseError, Quiet};
pub use payload::v1;

/// The watch an event is about, as it appears in payloads.
#[derive(Debug, Clone, Copy)]
pub struct WatchRef<'a> {
    /// The watch id.
    pub id: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its URL.
    pub url: &'a str,
}

/// Whether a diff is a change at all (some line added or removed). Whether a change is worth
/// an alert is then [`Noise::decide`]'s to say.
pub fn is_alert(change: &TextChange) -> bool {
    change.is_change()
}

/// Ids of the snapshots on both sides of a change.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotPair<'a> {
    /// Before.
    pub previous: &'a str,
    /// After.
    pub current: &'a str,
}

/// The JSON body of a `change.detected` event ([`v1::ChangeDetected`]).
pub fn change_payload(
    event_id: &str,
    watch: WatchRef<'_>,
    change: &TextChange,
    snapshots: SnapshotPair<'_>,
    at: DateTime<Utc>,
) -> String {
    change_payload_with(event_id, watch, change, snapshots, at, ChangeExtras::default())
}

/// What a `change.detected` event tells beside its diff: how the page was rendered (for a page
/// a browser rendered) and the watch's values that moved (for a watch with values).
#[derive(Debug, Clone, Default)]
pub struct ChangeExtras {
    /// Says the page was rendered, and links the screenshots.
    pub render: Option<v1::Render>,
    /// The values that moved, typed (left out of the body when none did).
    pub values: Vec<v1::ValueChange>,
}

/// [`change_payload`] with what a browser or the watch's values add, built typed in one pass.
pub fn change_payload_with(
    event_id: &str,
    watch: WatchRef<'_>,
    change: &TextChange,
    snapshots: SnapshotPair<'_>,
    at: DateTime<Utc>,
    extras: ChangeExtras,
) -> String {
    let full_diff = change
        .truncated
        .then(|| format!("/api/v1/watches/{}/diff?from={}&to={}", watch.id, snapshots.previous, snapshots.current));
    let data = v1::ChangeDetected {
        event_id: event_id.to_owned(),
        watch: watch.into(),
        diff: v1::Diff {
            added: change.added,
            removed: change.removed,
            unified: change.unified.clone(),
            hunks: change.hunks.clone(),
            truncated: change.truncated,
            full_diff,
        },
        snapshots: v1::Snapshots { previous: snapshots.previous.to_owned(), current: snapshots.current.to_owned() },
        render: extras.render,
        values: extras.values,
        ai: None,
    };
    body(EventType::ChangeDetected, at, data)
}

/// A stored `change.detected` body with the model's verdict `ai` added (or replaced), written
/// as every body is (keys sorted), everything else kept byte for byte in meaning. `None` when
/// `stored` is not a change body this crate wrote.
pub fn with_ai(stored: &str, ai: v1::Ai) -> Option<String> {
    let mut envelope: v1::Envelope<v1::ChangeDetected> = serde_json::from_str(stored).ok()?;
    if envelope.event_type != EventType::ChangeDetected {
        return None;
    }
    envelope.data.ai = Some(ai);
    serde_json::to_value(&envelope).ok().map(|body| body.to_string())
}

/// The JSON body of `condition.met` or `condition.cleared` ([`v1::ConditionEvent`]).
pub fn condition_payload(
    event_type: EventType,
    watch: WatchRef<'_>,
    data: v1::ConditionEvent,
    at: DateTime<Utc>,
) -> String {
    body(event_type, at, v1::ConditionEvent { watch: watch.into(), ..data })
}

/// The JSON body of `expectation.missed` or `expectation.met` ([`v1::ExpectationEvent`]).
pub fn expectation_payload(
    event_type: EventType,
    event_id: &str,
    watch: WatchRef<'_>,
    expectation: v1::Expectation,
    at: DateTime<Utc>,
) -> String {
    body(event_type, at, v1::ExpectationEvent { event_id: event_id.to_owned(), watch: watch.into(), expectation })
}

/// The JSON body of an endpoint event (`endpoint.disabled`, `endpoint.test`; [`v1::EndpointEvent`]).
pub fn endpoint_payload(
    event_type: EventType,
    event_id: &str,
    endpoint: EndpointRef<'_>,
    reason: Option<&str>,
    at: DateTime<Utc>,
) -> String {
    let data = v1::EndpointEvent {
        event_id: event_id.to_owned(),
        endpoint: v1::Endpoint {
            id: endpoint.id.to_owned(),
            url: endpoint.url.to_owned(),
            description: endpoint.description.to_owned(),
        },
        reason: reason.map(str::to_owned),
    };
    body(event_type, at, data)
}

/// Most bytes of gathered bodies a digest carries; the rest are counted in `omitted`.
pub const DIGEST_MAX_BYTES: usize = 1 << 20;

/// The JSON body of a `digest` ([`v1::Digest`]) for `endpoint`, covering `since` to `until`:
/// `count` events gathered, of which `events` (their stored bodies, oldest first) are carried
/// while they fit in [`DIGEST_MAX_BYTES`]; the rest, and any body this crate cannot read, are
/// counted as omitted. `summary` is a model's summary of the period, when one was asked for.
pub fn digest_payload(
    event_id: &str,
    endpoint: EndpointRef<'_>,
    (since, until): (DateTime<Utc>, DateTime<Utc>),
    count: usize,
    events: &[&str],
    summary: Option<String>,
    at: DateTime<Utc>,
) -> String {
    let mut carried = Vec::new();
    let mut bytes = 0;
    for stored in events {
        let Ok(body) = serde_json::from_str::<serde_json::Value>(stored) else { continue };
        if bytes + stored.len() > DIGEST_MAX_BYTES {
            break;
        }
        bytes += stored.len();
        carried.push(body);
    }
    let stamp = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
    let data = v1::Digest {
        event_id: event_id.to_owned(),
        endpoint: v1::Endpoint {
            id: endpoint.id.to_owned(),
            url: endpoint.url.to_owned(),
            description: endpoint.description.to_owned(),
        },
        period: v1::Period { start: stamp(since), end: stamp(until) },
        count,
        omitted: count.saturating_sub(carried.len()),
        events: carried,
        summary: summary.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()),
    };
    body(EventType::Digest, at, data)
}

/// What a health event says about the check that changed the watch's health.
#[derive(Debug, Clone, Copy)]
pub struct CheckRef<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The page's status, when it answered.
    pub http_status: Option<i32>,
    /// Why the check failed (absent on recovery).
    pub error: Option<&'a str>,
    /// Failed checks in a row.
    pub consecutive_failures: i32,
    /// Who put up a bot wall (`check.blocked`).
    pub blocked_by: Option<&'a str>,
}

/// The JSON body of a watch health event (`check.failed`, `check.selector_missing`,
/// `check.recovered`; [`v1::CheckEvent`]).
pub fn check_payload(
    event_type: EventType,
    event_id: &str,
    watch: WatchRef<'_>,
    check: CheckRef<'_>,
    at: DateTime<Utc>,
) -> String {
    let data = v1::CheckEvent {
        event_id: event_id.to_owned(),
        watch: watch.into(),
        check: v1::Check {
            run_id: check.run_id.to_owned(),
            http_status: check.http_status,
            error: check.error.map(str::to_owned),
            consecutive_failures: check.consecutive_failures,
            blocked_by: check.blocked_by.map(str::to_owned),
        },
    };
    body(event_type, at, data)
}

/// Serialises an event of `event_type` at `at` with its data: the bytes stored and sent.
fn body<D: serde::Serialize>(event_type: EventType, at: DateTime<Utc>, data: D) -> String {
    let envelope = v1::Envelope { event_type, timestamp: at.to_rfc3339_opts(SecondsFormat::Millis, true), data };
    // Through a `Value`, as the `json!` builders of earlier versions wrote bodies: keys sorted,
    // so a body is byte for byte what it always was. Plain structs of strings and numbers:
    // serialising them cannot fail.
    serde_json::to_value(&envelope).map(|body| body.to_string()).unwrap_or_default()
}

impl From<WatchRef<'_>> for v1::Watch {
    fn from(w: WatchRef<'_>) -> v1::Watch {
        v1::Watch { id: w.id.to_owned(), name: w.name.to_owned(), url: w.url.to_owned() }
    }
}

/// The endpoint an endpoint event is about.
#[derive(Debug, Clone, Copy)]
pub struct EndpointRef<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its URL.
    pub url: &'a str,
    /// Its description.
    pub description: &'a str,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn payload_has_the_documented_shape() {
        let change = driftwatch_diff::diff_texts("price 10\n", "price 12\n", "snp_a", "snp_b");
        assert!(is_alert(&change));
        let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
        let body = change_payload(
            "evt_1",
            WatchRef { id: "wat_1", name: "Prices", url: "https://example.com/" },
            &change,
            SnapshotPair { previous: "snp_a", current: "snp_b" },
            at,
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["type"], "change.detected");
        assert_eq!(v["timestamp"], "2026-12-02T12:00:00.000Z");
        assert_eq!(v["data"]["watch"]["id"], "wat_1");
        assert_eq!(v["data"]["diff"]["added"], 1);
        assert_eq!(v["data"]["diff"]["removed"], 1);
        assert!(v["data"]["diff"]["unified"].as_str().is_some_and(|u| u.contains("+price 12")));
        assert_eq!(v["data"]["diff"]["hunks"][0]["lines"][0]["op"], "removed");
        assert_eq!(v["data"]["snapshots"]["current"], "snp_b");
        assert!(!is_alert(&driftwatch_diff::diff_texts("same\n", "same\n", "a", "b")));
    }

    #[test]
    fn payloads_read_back_as_the_types_they_were_built_from() {
        let change = driftwatch_diff::diff_texts("price 10\n", "price 12\n", "snp_a", "snp_b");
        let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
        let watch = WatchRef { id: "wat_1", name: "Prices", url: "https://example.com/" };
        let body = change_payload("evt_1", watch, &change, SnapshotPair { previous: "snp_a", current: "snp_b" }, at);
        assert!(body.starts_with(r#"{"data":{"diff":{"added":1,"hunks":[{"lines":"#), "keys sorted: {body}");
        assert!(body.ends_with(r#""timestamp":"2026-12-02T12:00:00.000Z","type":"change.detected"}"#), "{body}");
        let Some(v1::Payload::Change(read)) = v1::Payload::parse(&body) else { panic!("a change: {body}") };
        assert_eq!(read.data.diff.hunks, change.hunks);
        assert_eq!(read.data.snapshots.current, "snp_b");
        let check = CheckRef {
            run_id: "run_1",
            http_status: None,
            error: Some("timeout"),
            consecutive_failures: 3,
            blocked_by: None,
        };
        let body = check_payload(EventType::CheckFailed, "evt_2", watch, check, at);
        assert!(
            body.contains(
                r#""check":{"consecutive_failures":3,"error":"timeout","http_status":null,"run_id":"run_1"}"#
            ),
            "{body}"
        );
        assert!(
            matches!(v1::Payload::parse(&body), Some(v1::Payload::Check(e)) if e.data.check.consecutive_failures == 3)
        );
        assert_eq!(v1::Payload::parse("{\"type\":\"nope\"}"), None);
    }

    /// The bodies built from `payload::v1` are byte for byte the bodies the `json!` builders of
    /// earlier versions wrote (stored bodies are re-sent, and receivers may hash them).
    #[test]
    fn typed_payloads_write_the_bytes_the_json_builders_wrote() {
        let change = driftwatch_diff::diff_texts("a\nprice 10\n", "a\nprice 12\n", "snp_a", "snp_b");
        let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
        let ts = at.to_rfc3339_opts(SecondsFormat::Millis, true);
        let watch = WatchRef { id: "wat_1", name: "Prices \"EU\"", url: "https://example.com/?a=1&b=<2>" };
        let old_change = json!({
            "type": EventType::ChangeDetected,
            "timestamp": ts,
            "data": {
                "event_id": "evt_1",
                "watch": {"id": watch.id, "name": watch.name, "url": watch.url},
                "diff": {"added": change.added, "removed": change.removed, "unified": change.unified, "hunks": change.hunks},
                "snapshots": {"previous": "snp_a", "current": "snp_b"},
            }
        })
        .to_string();
        let pair = SnapshotPair { previous: "snp_a", current: "snp_b" };
        assert_eq!(change_payload("evt_1", watch, &change, pair, at), old_change);
        let check = CheckRef {
            run_id: "run_1",
            http_status: Some(503),
            error: None,
            consecutive_failures: 0,
            blocked_by: None,
        };
        let old_check = json!({
            "type": EventType::CheckRecovered,
            "timestamp": ts,
            "data": {
                "event_id": "evt_2",
                "watch": {"id": watch.id, "name": watch.name, "url": watch.url},
                "check": {"run_id": "run_1", "http_status": 503, "error": null, "consecutive_failures": 0},
            }
        })
        .to_string();
        assert_eq!(check_payload(EventType::CheckRecovered, "evt_2", watch, check, at), old_check);
        let endpoint = EndpointRef { id: "end_1", url: "https://hooks.example/x", description: "ops" };
        for reason in [None, Some("410 Gone")] {
            let mut data = json!({
                "event_id": "evt_3",
                "endpoint": {"id": endpoint.id, "url": endpoint.url, "description": endpoint.description},
            });
            if let Some(reason) = reason {
                data["reason"] = json!(reason);
            }
            let old = json!({"type": EventType::EndpointDisabled, "timestamp": ts, "data": data}).to_string();
            assert_eq!(endpoint_payload(EventType::EndpointDisabled, "evt_3", endpoint, reason, at), old);
        }
    }

    /// The wire form of `condition.met` / `condition.cleared`, pinned byte for byte: the
    /// documented contract (keys sorted, `values` left out when nothing moved).
    ///
    /// Changed on purpose from the first form (`values` a map of every reading, the moved ones
    /// under `changes`): `data.values` is now the list of moved values in every event type, as
    /// `change.detected` has always written it, and the readings sit under `readings`.
    #[test]
    fn condition_payloads_keep_their_bytes() {
        let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
        let watch = WatchRef { id: "wat_1", name: "Espresso", url: "https://shop.example/e" };
        let placeholder = v1::Watch { id: String::new(), name: String::new(), url: String::new() };
        let data = |values| v1::ConditionEvent {
            event_id: "evt_1".into(),
            watch: placeholder.clone(),
            holds: true,
            reasons: vec!["price 45.00 EUR is below 50".into()],
            readings: [("price".to_owned(), json!(45.0)), ("stock".to_owned(), json!("in_stock"))].into(),
            values,
            snapshot: Some("snp_2".into()),
            diff: None,
            snapshots: None,
            render: None,
        };
        let moved = vec![v1::ValueChange {
            name: "price".into(),
            from: json!(67.0),
            to: json!(45.0),
            currency: Some("EUR".into()),
            change_percent: Some(-32.84),
        }];
        assert_eq!(
            condition_payload(EventType::ConditionMet, watch, data(moved.clone()), at),
            concat!(
                r#"{"data":{"event_id":"evt_1","holds":true,"#,
                r#""readings":{"price":45.0,"stock":"in_stock"},"reasons":["price 45.00 EUR is below 50"],"snapshot":"snp_2","#,
                r#""values":[{"change_percent":-32.84,"currency":"EUR","from":67.0,"name":"price","to":45.0}],"#,
                r#""watch":{"id":"wat_1","name":"Espresso","url":"https://shop.example/e"}},"#,
                r#""timestamp":"2026-12-02T12:00:00.000Z","type":"condition.met"}"#
            )
        );
        let quiet = condition_payload(EventType::ConditionCleared, watch, data(Vec::new()), at);
        assert!(quiet.contains(r#""snapshot":"snp_2","watch""#), "no `values` when none moved: {quiet}");
        assert!(matches!(v1::Payload::parse(&quiet), Some(v1::Payload::Condition(e)) if e.data.holds));
        // The same value list, in the same place, as a change's.
        let change = driftwatch_diff::diff_texts("price 67\n", "price 45\n", "snp_1", "snp_2");
        let pair = SnapshotPair { previous: "snp_1", current: "snp_2" };
        let extras = ChangeExtras { render: None, values: moved.clone() };
        let detected = change_payload_with("evt_0", watch, &change, pair, at, extras);
        let met = condition_payload(EventType::ConditionMet, watch, data(moved), at);
        let (detected, met): (serde_json::Value, serde_json::Value) =
            (serde_json::from_str(&detected).expect("json"), serde_json::from_str(&met).expect("json"));
        assert_eq!(detected["data"]["values"], met["data"]["values"]);
    }

    /// A crossing carries the change its check found, as `change.detected` tells it.
    #[test]
    fn a_crossing_carries_its_change() {
        let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
        let watch = WatchRef { id: "wat_1", name: "Espresso", url: "https://shop.example/e" };
        let change = driftwatch_diff::diff_texts("price 67\n", "price 45\n", "snp_1", "snp_2");
        let pair = SnapshotPair { previous: "snp_1", current: "snp_2" };
        let detected = change_payload("evt_0", watch, &change, pair, at);
        let Some(v1::Payload::Change(detected)) = v1::Payload::parse(&detected) else { panic!("a change") };
        let bare = v1::ConditionEvent {
            event_id: "evt_1".into(),
            watch: detected.data.watch.clone(),
            holds: true,
            reasons: Vec::new(),
            readings: std::collections::BTreeMap::new(),
            values: Vec::new(),
            snapshot: Some("snp_2".into()),
            diff: None,
            snapshots: None,
            render: None,
        };
        let met = condition_payload(EventType::ConditionMet, watch, bare.with_change(detected.data.clone()), at);
        let Some(v1::Payload::Condition(met)) = v1::Payload::parse(&met) else { panic!("a condition: {met}") };
        assert_eq!(met.data.diff, Some(detected.data.diff));
        assert_eq!(met.data.snapshots, Some(detected.data.snapshots));
    }

    /// A `condition.*` body stored before one shape of `values` (its readings as a map under
    /// `values`, no `readings`) still reads back, with no moved values.
    #[test]
    fn condition_bodies_of_the_old_shape_still_read() {
        let old = concat!(
            r#"{"data":{"event_id":"evt_1","holds":true,"reasons":["price 45.00 EUR is below 50"],"#,
            r#""snapshot":"snp_2","values":{"price":45.0},"#,
            r#""watch":{"id":"wat_1","name":"Espresso","url":"https://shop.example/e"}},"#,
            r#""timestamp":"2026-12-02T12:00:00.000Z","type":"condition.met"}"#
        );
        let Some(v1::Payload::Condition(met)) = v1::Payload::parse(old) else { panic!("an old condition body reads") };
        assert!(met.data.holds && met.data.values.is_empty() && met.data.readings.is_empty());
        assert_eq!(met.data.reasons, ["price 45.00 EUR is below 50"]);
    }

    #[test]
    fn endpoint_events_carry_the_endpoint_and_reason() {
        let endpoint = EndpointRef { id: "end_1", url: "https://hooks.example/x", description: "ops" };
        let body = endpoint_payload(EventType::EndpointDisabled, "evt_2", endpoint, Some("410 <Gone>"), Utc::now());
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["type"], "endpoint.disabled");
        assert_eq!(v["data"]["reason"], "410 <Gone>");
    }
}
