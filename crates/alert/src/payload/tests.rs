//! The `change.detected` body with values and a render, pinned byte for byte.

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::{ChangeExtras, SnapshotPair, WatchRef, change_payload, change_payload_with, v1};

/// A change with values and a render, pinned byte for byte: the body the earlier
/// build-then-parse-then-rewrite path wrote (`with_value_changes`), now built in one pass.
#[test]
fn change_payloads_with_values_keep_their_bytes() {
    let change = driftwatch_diff::diff_texts("price 10\n", "price 12\n", "snp_a", "snp_b");
    let at = DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("time");
    let watch = WatchRef { id: "wat_1", name: "Espresso", url: "https://shop.example/e" };
    let pair = SnapshotPair { previous: "snp_a", current: "snp_b" };
    let render = || v1::Render {
        browser: true,
        screenshot: Some("/api/v1/watches/wat_1/snapshots/snp_b/screenshot".into()),
        previous_screenshot: None,
        visual_change_percent: Some(1.25),
    };
    let moved = vec![v1::ValueChange {
        name: "price".into(),
        from: json!(67.0),
        to: json!(45.0),
        currency: Some("EUR".into()),
        change_percent: Some(-32.84),
    }];
    let extras = ChangeExtras { render: Some(render()), values: moved.clone() };
    let body = change_payload_with("evt_1", watch, &change, pair, at, extras);
    // The earlier path: the body without values, parsed and written again with them.
    let bare = change_payload_with(
        "evt_1",
        watch,
        &change,
        pair,
        at,
        ChangeExtras { render: Some(render()), values: Vec::new() },
    );
    let mut envelope: v1::Envelope<v1::ChangeDetected> = serde_json::from_str(&bare).expect("json");
    envelope.data.values = moved;
    assert_eq!(body, serde_json::to_value(&envelope).expect("json").to_string());
    assert!(
        body.ends_with(concat!(
            r#""render":{"browser":true,"screenshot":"/api/v1/watches/wat_1/snapshots/snp_b/screenshot","#,
            r#""visual_change_percent":1.25},"snapshots":{"current":"snp_b","previous":"snp_a"},"#,
            r#""values":[{"change_percent":-32.84,"currency":"EUR","from":67.0,"name":"price","to":45.0}],"#,
            r#""watch":{"id":"wat_1","name":"Espresso","url":"https://shop.example/e"}},"#,
            r#""timestamp":"2026-12-02T12:00:00.000Z","type":"change.detected"}"#
        )),
        "{body}"
    );
    assert_eq!(
        change_payload_with("evt_1", watch, &change, pair, at, ChangeExtras::default()),
        change_payload("evt_1", watch, &change, pair, at)
    );
}
