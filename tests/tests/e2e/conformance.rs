//! Checks answers against the OpenAPI document: every answer the tests receive through
//! [`crate::support::TestApp::call`] must have a documented status, a documented content type
//! and a body valid against the documented schema.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

/// The document, built from the code as the server serves it.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(driftwatch_web::openapi)
}

/// The documented template of `path` (relative to `/api/v1`, without its query): the one with
/// the most literal segments when several match.
pub fn template_of(path: &str) -> Option<&'static str> {
    let paths = document()["paths"].as_object().expect("paths");
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    paths
        .keys()
        .filter_map(|template| {
            let parts: Vec<&str> = template.trim_matches('/').split('/').collect();
            if parts.len() != segments.len() {
                return None;
            }
            let mut literal = 0;
            for (part, segment) in parts.iter().zip(&segments) {
                if part.starts_with('{') {
                    if segment.is_empty() {
                        return None;
                    }
                } else if part == segment {
                    literal += 1;
                } else {
                    return None;
                }
            }
            Some((literal, template.as_str()))
        })
        .max_by_key(|(literal, _)| *literal)
        .map(|(_, template)| template)
}

/// Follows a local `$ref` (`#/components/...`).
fn resolve(value: &Value) -> &Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => document().pointer(reference.trim_start_matches('#')).expect("a resolvable $ref"),
        None => value,
    }
}

type Validators = Mutex<HashMap<String, Arc<jsonschema::Validator>>>;

fn validator(key: &str, schema: &Value) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Validators> = OnceLock::new();
    let cache = CACHE.get_or_init(Validators::default);
    if let Some(v) = cache.lock().expect("cache").get(key) {
        return v.clone();
    }
    // The schema's `#/components/...` references resolve against a root holding the components.
    // Answers are held to their documented fields: an extra one (a leaked secret, a renamed
    // field) fails here, though the published document leaves objects open for new fields.
    let mut components = document()["components"].clone();
    if let Some(Value::Object(schemas)) = components.get_mut("schemas") {
        for (name, schema) in schemas.iter_mut() {
            // `TextChange` is one part of `Diff`'s `allOf`; closing it would refuse the other part.
            if name != "TextChange"
                && schema.get("properties").is_some()
                && schema.get("additionalProperties").is_none()
            {
                schema["additionalProperties"] = json!(false);
            }
        }
    }
    let root = json!({"allOf": [schema], "components": components});
    let compiled = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .unwrap_or_else(|e| panic!("the schema of {key} compiles: {e}"));
    let compiled = Arc::new(compiled);
    cache.lock().expect("cache").insert(key.to_owned(), compiled.clone());
    compiled
}

/// Panics unless the answer `status`, `content_type`, `body` to `method path` is what the
/// document says that operation answers.
pub fn check(method: &str, path: &str, status: u16, content_type: Option<&str>, body: &str) {
    let path = path.split('?').next().unwrap_or(path);
    let what = format!("{method} {path} -> {status}");
    let Some(template) = template_of(path) else {
        assert_eq!(status, 404, "{what}: an undocumented path must be a 404");
        return;
    };
    let Some(operation) = document()["paths"][template].get(method.to_ascii_lowercase()) else {
        assert_eq!(status, 405, "{what}: an undocumented method must be a 405");
        return;
    };
    let Some(response) = operation["responses"].get(status.to_string()) else {
        panic!("{what}: status {status} is not documented for {method} {template}");
    };
    let response = resolve(response);
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        assert!(body.is_empty(), "{what}: the document says no body, got {body}");
        return;
    };
    let media = content_type.and_then(|c| c.split(';').next()).map(str::trim).unwrap_or("");
    let Some(media_type) = content.get(media) else {
        panic!("{what}: content type {media:?} is not documented (documented: {:?})", content.keys());
    };
    let Some(schema) = media_type.get("schema") else { return };
    if !media.ends_with("json") {
        assert!(schema["type"] == "string", "{what}: a non-JSON body is documented as a string");
        return;
    }
    let instance: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{what}: the body is not JSON ({e})"));
    let key = format!("{method} {template} {status} {media}");
    let validator = validator(&key, schema);
    let errors: Vec<String> =
        validator.iter_errors(&instance).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{what}: the body does not match the documented schema: {errors:#?}\n{instance:#}");
}

/// Whether a webhook body is what the document's `webhooks` section says a delivery of its
/// `type` is; the error says why not. Installed on every receiver by [`crate::support::TestApp`],
/// so each body a `webhook` endpoint gets in this suite is checked.
pub fn check_webhook(body: &[u8]) -> Result<(), String> {
    let instance: Value = serde_json::from_slice(body).map_err(|e| format!("the body is not JSON ({e})"))?;
    let event_type = instance["type"].as_str().ok_or_else(|| format!("no `type`: {instance}"))?;
    let schema = document()["webhooks"][event_type]["post"]["requestBody"]["content"]["application/json"]
        .get("schema")
        .ok_or_else(|| format!("`{event_type}` is not a documented webhook"))?;
    let validator = validator(&format!("webhook {event_type}"), schema);
    let errors: Vec<String> =
        validator.iter_errors(&instance).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    match errors.is_empty() {
        true => Ok(()),
        false => Err(format!("a `{event_type}` body does not match its documented schema: {errors:#?}\n{instance:#}")),
    }
}

/// [`check_webhook`] for what a receiver got: every body that came with a `webhook-id` (what
/// a `webhook` endpoint sends; other kinds send messages of their own), except a body some
/// tests seed into the outbox themselves (`{"n": 1}`: neither `type` nor `data`, so no event).
pub fn check_received(received: &driftwatch_test_support::Received) -> Result<(), String> {
    let seeded = serde_json::from_slice::<Value>(&received.body)
        .is_ok_and(|b| b.is_object() && b.get("type").is_none() && b.get("data").is_none());
    match received.header("webhook-id") {
        "" => Ok(()),
        _ if seeded => Ok(()),
        _ => check_webhook(&received.body),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{check, check_webhook};

    /// Real bodies pass; a body with a field missing, of the wrong type, added, or of an
    /// undocumented type fails.
    #[test]
    fn webhook_bodies_are_held_to_their_documented_schema() {
        let change = driftwatch_diff::diff_texts("price 67\n", "price 45\n", "snp_1", "snp_2");
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-02T12:00:00Z").expect("time").to_utc();
        let watch = driftwatch_alert::WatchRef { id: "wat_1", name: "Espresso", url: "https://shop.example/e" };
        let pair = driftwatch_alert::SnapshotPair { previous: "snp_1", current: "snp_2" };
        let body = driftwatch_alert::change_payload("evt_1", watch, &change, pair, at);
        check_webhook(body.as_bytes()).expect("a real change.detected body");
        let endpoint = driftwatch_alert::EndpointRef { id: "end_1", url: "https://hooks.example/x", description: "" };
        let disabled = driftwatch_alert::endpoint_payload(
            driftwatch_core::EventType::EndpointDisabled,
            "evt_2",
            endpoint,
            Some("410"),
            at,
        );
        check_webhook(disabled.as_bytes()).expect("a real endpoint.disabled body");
        let good: serde_json::Value = serde_json::from_str(&body).expect("json");
        let doctored = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut bad = good.clone();
            edit(&mut bad);
            check_webhook(bad.to_string().as_bytes())
        };
        let missing = doctored(&|b| drop(b["data"].as_object_mut().and_then(|d| d.remove("diff"))));
        assert!(missing.as_ref().is_err_and(|e| e.contains("diff")), "{missing:?}");
        let wrong = doctored(&|b| b["data"]["diff"]["added"] = json!("one"));
        assert!(wrong.is_err(), "a count as text");
        let extra = doctored(&|b| b["data"]["secret"] = json!("whsec_x"));
        assert!(extra.is_err(), "an undocumented field");
        let time = doctored(&|b| b["timestamp"] = json!("yesterday"));
        assert!(time.is_err(), "not a date-time");
        let undocumented = doctored(&|b| b["type"] = json!("change.guessed"));
        assert!(undocumented.is_err_and(|e| e.contains("not a documented webhook")));
        let mismatched = doctored(&|b| b["type"] = json!("endpoint.test"));
        assert!(mismatched.is_err(), "a change's data under another type");
        assert!(check_webhook(b"not json").is_err());
    }

    #[test]
    fn a_conforming_answer_passes() {
        check("GET", "/watches?limit=2", 200, Some("application/json"), r#"{"items": [], "next_cursor": null}"#);
        check("DELETE", "/watches/wat_1", 204, None, "");
    }

    #[test]
    #[should_panic(expected = "does not match the documented schema")]
    fn a_body_that_breaks_the_schema_fails() {
        check("GET", "/watches", 200, Some("application/json"), r#"{"items": [{"id": 1}], "next_cursor": null}"#);
    }

    #[test]
    #[should_panic(expected = "does not match the documented schema")]
    fn an_extra_field_fails() {
        let token = r#"{"id": "tok_1", "name": "n", "prefix": "dwt_ab", "scopes": ["read"], "created_at": "2026-12-02T00:00:00Z",
            "last_used_at": null, "revoked_at": null, "token_hash": "leaked"}"#;
        check(
            "GET",
            "/tokens",
            200,
            Some("application/json"),
            &format!(r#"{{"items": [{token}], "next_cursor": null}}"#),
        );
    }

    #[test]
    #[should_panic(expected = "is not documented")]
    fn an_undocumented_status_fails() {
        check("GET", "/stats", 404, Some("application/problem+json"), "{}");
    }

    #[test]
    #[should_panic(expected = "content type")]
    fn an_undocumented_content_type_fails() {
        check("GET", "/stats", 200, Some("text/html"), "<p>");
    }

    #[test]
    #[should_panic(expected = "an undocumented method must be a 405")]
    fn an_undocumented_method_must_be_405() {
        check("PUT", "/watches", 200, Some("application/json"), "{}");
    }
}
