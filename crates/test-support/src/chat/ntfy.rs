//! ntfy's JSON publishing, `POST /` (or `PUT /`) with the topic in the body.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{self, Check, Incoming, Reject, get_bool, get_int, get_str, is_http_url};

/// Whether `topic` matches `^[-_A-Za-z0-9]{1,64}$`.
fn valid_topic(topic: &str) -> bool {
    (1..=64).contains(&topic.len()) && topic.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Checks a JSON publish the way ntfy does; `token` is the access token the test expects.
pub(super) fn check(req: &Incoming, token: Option<&str>) -> Check {
    if req.method != "POST" && req.method != "PUT" {
        return Err(Reject::new(405, format!("{} is not allowed here", req.method)));
    }
    if let Some(expected) = token
        && req.bearer() != Some(expected)
    {
        return Err(Reject::new(401, "unauthorized: wrong or missing Bearer token"));
    }
    let fields = req.json_object()?;
    let topic = get_str(&fields, "topic")?.unwrap_or("");
    if !valid_topic(topic) {
        return Err(Reject::bad(format!("invalid topic {topic:?}: must match ^[-_A-Za-z0-9]{{1,64}}$")));
    }
    if let Some(message) = get_str(&fields, "message")?
        && message.len() > 4096
    {
        return Err(Reject::bad(format!("message: {} bytes, at most 4096", message.len())));
    }
    get_str(&fields, "title")?;
    match fields.get("tags") {
        None | Some(Value::Null) => {}
        Some(Value::Array(tags)) if tags.iter().all(Value::is_string) => {}
        Some(other) => return Err(Reject::bad(format!("tags: {other} is not an array of strings"))),
    }
    if let Some(priority) = get_int(&fields, "priority", false)?
        && !(1..=5).contains(&priority)
    {
        return Err(Reject::bad(format!("priority: {priority} is not 1 to 5")));
    }
    for key in ["click", "icon", "attach"] {
        if let Some(url) = get_str(&fields, key)?
            && !is_http_url(url)
            && !(key == "click" && url.starts_with("mailto:"))
        {
            return Err(Reject::bad(format!("{key}: {url:?} is not a URL")));
        }
    }
    get_bool(&fields, "markdown", false)?;
    Ok(())
}

/// The message ntfy published.
pub(super) fn ok(req: &Incoming, id: u64) -> Response {
    let fields = req.json_object().unwrap_or_default();
    let now = common::unix_now();
    let mut body = json!({
        "id": format!("dw{id:010}"),
        "time": now,
        "expires": now + 43_200,
        "event": "message",
        "topic": fields.get("topic").cloned().unwrap_or(Value::Null),
        "message": fields.get("message").and_then(Value::as_str).filter(|m| !m.is_empty()).unwrap_or("triggered"),
    });
    for key in ["title", "tags", "priority", "click"] {
        if let Some(value) = fields.get(key).filter(|v| !v.is_null()) {
            body[key] = value.clone();
        }
    }
    if fields.get("markdown") == Some(&Value::Bool(true)) {
        body["content_type"] = json!("text/markdown");
    }
    common::json(200, body)
}

/// ntfy's error shape: `code` is the status times 100 plus a number.
pub(super) fn error(status: u16, reason: &str) -> Response {
    common::json(status, json!({"code": u32::from(status) * 100 + 1, "http": status, "error": reason}))
}

/// ntfy's 429.
pub(super) fn rate_limited() -> Response {
    common::json(429, json!({"code": 42901, "http": 429, "error": "limit reached: too many requests"}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &Value, auth: Option<&str>) -> Incoming {
        let mut headers = axum::http::HeaderMap::new();
        if let Some(auth) = auth {
            headers.insert("authorization", auth.parse().expect("header"));
        }
        Incoming {
            method: axum::http::Method::POST,
            path: "/".to_owned(),
            query: String::new(),
            headers,
            body: serde_json::to_vec(body).expect("json").into(),
        }
    }

    #[test]
    fn topic_fields_and_token_are_checked() {
        let good =
            json!({"topic": "drift_watch-1", "message": "m", "tags": ["x"], "priority": 5, "click": "https://x.test/"});
        check(&post(&good, None), None).expect("valid");
        let reason = |v: Value| check(&post(&v, None), None).expect_err("rejected").reason;
        assert!(reason(json!({"topic": "bad topic", "message": "m"})).contains("invalid topic"));
        assert!(reason(json!({"topic": "t".repeat(65)})).contains("invalid topic"));
        assert!(reason(json!({"topic": "t", "priority": 6})).contains("priority"));
        assert!(reason(json!({"topic": "t", "priority": "5"})).contains("priority"));
        assert!(reason(json!({"topic": "t", "message": "é".repeat(2049)})).contains("4098 bytes"));
        assert!(reason(json!({"topic": "t", "tags": "a,b"})).contains("tags"));
        assert_eq!(check(&post(&good, None), Some("tk")).expect_err("no token").status, 401);
        assert_eq!(check(&post(&good, Some("Bearer nope")), Some("tk")).expect_err("wrong").status, 401);
        check(&post(&good, Some("Bearer tk")), Some("tk")).expect("right token");
    }
}
