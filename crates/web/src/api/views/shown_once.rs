//! Answers that carry a secret shown this once (a signing secret, an API token): the view type
//! names those fields, and the answer carries the names to the idempotency layer, which stores
//! the answer for replays without them.

use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A view with fields shown once: they appear only in the answer that made the secret.
pub trait ShownOnce {
    /// The top-level fields holding a secret shown once.
    const SHOWN_ONCE: &'static [&'static str];
}

/// The fields an answer holds that are shown once, as a response extension: what a stored copy
/// of the answer (an idempotent replay) leaves out.
#[derive(Debug, Clone, Copy)]
pub struct ShownOnceFields(pub &'static [&'static str]);

/// A JSON answer whose view has fields shown once; the names ride along as [`ShownOnceFields`].
#[derive(Debug)]
pub struct Revealing<T>(pub T);

impl<T: Serialize + ShownOnce> IntoResponse for Revealing<T> {
    fn into_response(self) -> Response {
        let mut response = axum::Json(self.0).into_response();
        response.extensions_mut().insert(ShownOnceFields(T::SHOWN_ONCE));
        response
    }
}

/// `body` (a JSON answer) without `fields`; as it is when it is not a JSON object.
pub fn without_fields(body: &[u8], fields: &[&str]) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut object)) if fields.iter().any(|f| object.contains_key(*f)) => {
            for field in fields {
                object.remove(*field);
            }
            serde_json::to_vec(&object).unwrap_or_default()
        }
        _ => body.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_once_fields_are_left_out_and_the_rest_kept() {
        let body = br#"{"id":"end_1","secret":"whsec_x","url":"https://a.example/"}"#;
        let kept: serde_json::Value = serde_json::from_slice(&without_fields(body, &["secret"])).unwrap();
        assert_eq!(kept, serde_json::json!({"id": "end_1", "url": "https://a.example/"}));
        assert_eq!(without_fields(b"[1]", &["secret"]), b"[1]");
    }
}
