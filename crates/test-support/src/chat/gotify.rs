//! Gotify's `POST /message`, the application token in `X-Gotify-Key` (or `?token=`).

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{self, Check, Incoming, Reject, get_int, get_str};

/// The token the request carries, wherever Gotify looks for it.
fn token(req: &Incoming) -> Option<String> {
    req.header("x-gotify-key")
        .map(str::to_owned)
        .or_else(|| req.query_param("token"))
        .or_else(|| req.bearer().map(str::to_owned))
}

/// Checks a message the way Gotify does; `expected` is the app token the test configured.
pub(super) fn check(req: &Incoming, expected: Option<&str>) -> Check {
    if req.method != "POST" {
        return Err(Reject::new(405, format!("{} is not allowed here", req.method)));
    }
    let unauthorized = "you need to provide a valid access token or user credentials to access this api";
    match (token(req), expected) {
        (None, _) => return Err(Reject::new(401, unauthorized)),
        (Some(given), Some(expected)) if given != expected => return Err(Reject::new(401, unauthorized)),
        _ => {}
    }
    let form = req.mime() == "application/x-www-form-urlencoded";
    let fields = req.fields(true)?;
    if get_str(&fields, "message")?.is_none_or(str::is_empty) {
        return Err(Reject::bad("Field 'message' is required"));
    }
    get_str(&fields, "title")?;
    get_int(&fields, "priority", form)?;
    match fields.get("extras") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(Reject::bad(format!("extras: {other} is not an object"))),
    }
}

/// The message Gotify stored.
pub(super) fn ok(req: &Incoming, id: u64) -> Response {
    let fields = req.fields(true).unwrap_or_default();
    let priority = get_int(&fields, "priority", true).ok().flatten().unwrap_or(0);
    let mut body = json!({
        "id": id,
        "appid": 1,
        "message": fields.get("message").cloned().unwrap_or(Value::Null),
        "title": fields.get("title").and_then(Value::as_str).unwrap_or("driftwatch"),
        "priority": priority,
        "date": chrono::Utc::now().to_rfc3339(),
    });
    if let Some(extras) = fields.get("extras").filter(|e| e.is_object()) {
        body["extras"] = extras.clone();
    }
    common::json(200, body)
}

/// Gotify's error shape.
pub(super) fn error(status: u16, reason: &str) -> Response {
    common::json(status, json!({"error": common::canonical(status), "errorCode": status, "errorDescription": reason}))
}

/// A 429 in Gotify's error shape (Gotify itself has no rate limit).
pub(super) fn rate_limited() -> Response {
    error(429, "too many requests")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &Value, key: Option<&str>) -> Incoming {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("content-type", "application/json".parse().expect("header"));
        if let Some(key) = key {
            headers.insert("x-gotify-key", key.parse().expect("header"));
        }
        Incoming {
            method: axum::http::Method::POST,
            path: "/message".to_owned(),
            query: String::new(),
            headers,
            body: serde_json::to_vec(body).expect("json").into(),
        }
    }

    #[test]
    fn token_and_message_are_checked() {
        let good = json!({"message": "m", "title": "t", "priority": 5, "extras": {"client::display": {"contentType": "text/markdown"}}});
        check(&post(&good, Some("app")), Some("app")).expect("valid");
        assert_eq!(check(&post(&good, None), None).expect_err("no token").status, 401);
        assert_eq!(check(&post(&good, Some("other")), Some("app")).expect_err("wrong").status, 401);
        let reason = |v: Value| check(&post(&v, Some("app")), None).expect_err("rejected").reason;
        assert!(reason(json!({"title": "t"})).contains("'message'"));
        assert!(reason(json!({"message": "m", "priority": "high"})).contains("priority"));
        assert!(reason(json!({"message": "m", "extras": []})).contains("extras"));
    }
}
