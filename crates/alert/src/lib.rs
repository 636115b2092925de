//! Deciding whether a change is worth an alert, and the versioned event payload.
//!
//! Pure: no IO, and time is passed in. The payload is serialised once here and the bytes are
//! stored in the outbox, so every attempt and redelivery sends exactly the same body.

use chrono::{DateTime, SecondsFormat, Utc};
use driftwatch_core::EventType;
use driftwatch_diff::TextChange;
use serde_json::json;

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

/// Whether a diff should raise an alert. Every real change does for now; noise rules (trigger
/// text, thresholds, masks) will narrow this.
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

/// The JSON body of a `change.detected` event:
/// `{"type", "timestamp", "data": {"event_id", "watch", "diff", "snapshots"}}`.
pub fn change_payload(
    event_id: &str,
    watch: WatchRef<'_>,
    change: &TextChange,
    snapshots: SnapshotPair<'_>,
    at: DateTime<Utc>,
) -> String {
    json!({
        "type": EventType::ChangeDetected,
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": {
            "event_id": event_id,
            "watch": {"id": watch.id, "name": watch.name, "url": watch.url},
            "diff": {
                "added": change.added,
                "removed": change.removed,
                "unified": change.unified,
                "hunks": change.hunks,
            },
            "snapshots": {"previous": snapshots.previous, "current": snapshots.current},
        }
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_has_the_documented_shape() {
        let change = driftwatch_diff::diff_texts("price 10\n", "price 12\n", "snp_a", "snp_b");
        assert!(is_alert(&change));
        let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("time");
        let body = change_payload(
            "evt_1",
            WatchRef {
                id: "wat_1",
                name: "Prices",
                url: "https://example.com/",
            },
            &change,
            SnapshotPair {
                previous: "snp_a",
                current: "snp_b",
            },
            at,
        );
        let v: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(v["type"], "change.detected");
        assert_eq!(v["timestamp"], "2026-12-02T12:00:00.000Z");
        assert_eq!(v["data"]["watch"]["id"], "wat_1");
        assert_eq!(v["data"]["diff"]["added"], 1);
        assert_eq!(v["data"]["diff"]["removed"], 1);
        assert!(
            v["data"]["diff"]["unified"]
                .as_str()
                .is_some_and(|u| u.contains("+price 12"))
        );
        assert_eq!(v["data"]["diff"]["hunks"][0]["lines"][0]["op"], "removed");
        assert_eq!(v["data"]["snapshots"]["current"], "snp_b");
        assert!(!is_alert(&driftwatch_diff::diff_texts(
            "same\n", "same\n", "a", "b"
        )));
    }
}
