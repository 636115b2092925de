//! The OpenAPI 3.1 `webhooks` section: what driftwatch POSTs to a `webhook` endpoint, one entry
//! per event type. The bodies' schemas are derived from `driftwatch_alert::payload::v1`, the
//! types every body is built from, so the document describes exactly what is sent. utoipa 5 has
//! no `webhooks` field, so the section is added to the generated document here.

use driftwatch_alert::v1;
use driftwatch_core::EventType;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};

/// The data schema and a description of each event type's body.
fn about(event_type: EventType) -> (&'static str, &'static str) {
    match event_type {
        EventType::ChangeDetected => (
            "PayloadChangeDetected",
            "A watched page changed: the diff, the snapshots on both sides and, for a watch with \
             values, the values that moved. A watch with conditions sends it only while they hold, \
             and not for the change that makes them hold (told by `condition.met`) unless its \
             conditions' `alert_on` is `conditions_and_changes`.",
        ),
        EventType::ConditionMet => (
            "PayloadConditionEvent",
            "A watch's conditions started to hold (the first check that finds them holding \
             included). When that check found a change, the body carries it as `change.detected` \
             would: `diff`, `snapshots`, `render` and the moved `values`.",
        ),
        EventType::ConditionCleared => (
            "PayloadConditionEvent",
            "A watch's conditions stopped holding; the change that cleared them, if any, rides along.",
        ),
        EventType::CheckFailed => ("PayloadCheckEvent", "A watch's checks failed several times in a row."),
        EventType::SelectorMissing => {
            ("PayloadCheckEvent", "A watch's selector matched nothing several checks in a row.")
        }
        EventType::ValueMissing => {
            ("PayloadCheckEvent", "One of a watch's values could not be read several checks in a row.")
        }
        EventType::CheckRecovered => {
            ("PayloadCheckEvent", "A failing, blocked or signed-out watch's check succeeded again.")
        }
        EventType::CheckBlocked => (
            "PayloadCheckEvent",
            "A bot wall (a challenge, a CAPTCHA, a waiting room) answered a watch's check instead of \
             the page: `check.blocked_by` names who put it up. Sent once; no change is recorded while \
             it lasts, and `check.recovered` follows when a check gets through.",
        ),
        EventType::LoginRequired => (
            "PayloadCheckEvent",
            "A watch's kept session is gone and its login steps could not sign in again. Sent once; \
             `check.recovered` follows when a check signs in.",
        ),
        EventType::EndpointDisabled => (
            "PayloadEndpointEvent",
            "An endpoint was disabled automatically (410 Gone, or failing for too long), with the reason.",
        ),
        EventType::EndpointTest => ("PayloadEndpointEvent", "A test event, sent on request to one endpoint."),
        EventType::ExpectationMissed => (
            "PayloadExpectationEvent",
            "A watch did not do what it was expected to: it did not change by its deadline \
             (`options.expect.change_within` or a cron deadline), or its values broke the conditions \
             they must keep. Sent once; `expectation.met` follows when it holds again.",
        ),
        EventType::ExpectationMet => (
            "PayloadExpectationEvent",
            "A watch whose expectation was missed changed again, or its values meet their conditions again.",
        ),
        EventType::Digest => (
            "PayloadDigest",
            "The events an endpoint in digest mode gathered over one period (its `delivery.cron` or \
             `delivery.every`), oldest first, each as the body it would have had alone. One per \
             endpoint and period; an empty period sends nothing unless `delivery.send_empty`.",
        ),
    }
}

/// The payload types' schemas and every schema they refer to, by name.
fn payload_schemas() -> Vec<(String, RefOr<Schema>)> {
    let mut schemas = Vec::new();
    fn with<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        T::schemas(schemas);
        schemas.push((T::name().into_owned(), T::schema()));
    }
    with::<v1::ChangeDetected>(&mut schemas);
    with::<v1::ConditionEvent>(&mut schemas);
    with::<v1::CheckEvent>(&mut schemas);
    with::<v1::EndpointEvent>(&mut schemas);
    with::<v1::ExpectationEvent>(&mut schemas);
    with::<v1::Digest>(&mut schemas);
    schemas
}

/// The body of an `event_type` delivery: the v1 envelope around its data.
fn body_schema(event_type: EventType) -> Value {
    let (data, _) = about(event_type);
    json!({
        "type": "object",
        "required": ["type", "timestamp", "data"],
        "properties": {
            "type": {"type": "string", "const": event_type.as_str()},
            "timestamp": {
                "type": "string",
                "format": "date-time",
                "description": "When it happened: RFC 3339 in UTC, with milliseconds."
            },
            "data": {"$ref": format!("#/components/schemas/{data}")}
        }
    })
}

/// Adds the payload schemas to `doc`'s components and the `webhooks` section.
pub(super) fn add(doc: &mut Value) {
    if let Some(Value::Object(schemas)) = doc.pointer_mut("/components/schemas") {
        for (name, schema) in payload_schemas() {
            schemas.entry(name).or_insert_with(|| serde_json::to_value(schema).unwrap_or_else(|_| json!({})));
        }
    }
    let mut webhooks = Map::new();
    for &event_type in EventType::ALL {
        let (_, description) = about(event_type);
        let name = event_type.as_str();
        webhooks.insert(
            name.to_owned(),
            json!({"post": {
                "operationId": format!("webhook_{}", name.replace('.', "_")),
                "summary": format!("`{name}`"),
                "description": format!(
                    "{description} Sent to `webhook` endpoints as is, signed the Standard Webhooks way \
                     (`webhook-id`, `webhook-timestamp`, `webhook-signature`); other kinds send a \
                     message made from it. Keys are sorted; screenshot and diff links are API paths \
                     (`/api/v1/...`), fetched from the server with a token of the account."
                ),
                "tags": ["events"],
                "requestBody": {
                    "required": true,
                    "content": {"application/json": {"schema": body_schema(event_type)}}
                },
                "responses": {
                    "2XX": {"description": "Received. Any other answer is retried with backoff, then dead-lettered."}
                }
            }}),
        );
    }
    if let Value::Object(doc) = doc {
        doc.insert("webhooks".into(), Value::Object(webhooks));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_type_is_a_documented_webhook() {
        let doc = crate::api::document();
        for event_type in EventType::ALL {
            let schema =
                &doc["webhooks"][event_type.as_str()]["post"]["requestBody"]["content"]["application/json"]["schema"];
            let data = schema["properties"]["data"]["$ref"].as_str().expect("a data schema");
            let name = data.trim_start_matches("#/components/schemas/");
            assert!(doc["components"]["schemas"][name]["properties"].is_object(), "{event_type}: {name}");
        }
        let change = &doc["components"]["schemas"]["PayloadChangeDetected"]["properties"];
        assert!(change["values"]["items"]["$ref"].as_str().is_some_and(|r| r.ends_with("PayloadValueChange")));
        let condition = &doc["components"]["schemas"]["PayloadConditionEvent"]["properties"];
        assert_eq!(condition["values"]["items"], change["values"]["items"], "one shape of `values`");
    }
}
