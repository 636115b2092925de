//! Pushover's message API, `POST /1/messages.json`, as JSON or as a form.

use axum::response::Response;
use serde_json::json;

use super::common::{self, Check, Incoming, Reject, get_int, get_str, max_chars};

/// Whether `key` is 30 letters and digits, as Pushover's application and user keys are.
fn valid_key(key: &str) -> bool {
    key.len() == 30 && key.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Checks a message the way Pushover does.
pub(super) fn check(req: &Incoming) -> Check {
    if req.path != "/1/messages.json" {
        return Err(Reject::new(404, "not found"));
    }
    if req.method != "POST" {
        return Err(Reject::new(405, format!("{} is not allowed here", req.method)));
    }
    let fields = req.fields(true)?;
    if !get_str(&fields, "token")?.is_some_and(valid_key) {
        return Err(Reject::bad("application token is invalid (30 letters and digits)"));
    }
    if !get_str(&fields, "user")?.is_some_and(valid_key) {
        return Err(Reject::bad("user identifier is not a valid user, group, or subscribed user key"));
    }
    match get_str(&fields, "message")? {
        None | Some("") => return Err(Reject::bad("message cannot be blank")),
        Some(message) => max_chars("message", message, 1024)?,
    }
    for (key, max) in [("title", 250), ("url", 512), ("url_title", 100)] {
        if let Some(value) = get_str(&fields, key)? {
            max_chars(key, value, max)?;
        }
    }
    let mut flags = 0;
    for key in ["html", "monospace"] {
        match get_int(&fields, key, true)? {
            None | Some(0) => {}
            Some(1) => flags += 1,
            Some(other) => return Err(Reject::bad(format!("{key}: {other} is not 0 or 1"))),
        }
    }
    if flags > 1 {
        return Err(Reject::bad("html and monospace are mutually exclusive"));
    }
    match get_int(&fields, "priority", true)? {
        None | Some(-2..=1) => {}
        Some(2) => {
            let retry = get_int(&fields, "retry", true)?;
            let expire = get_int(&fields, "expire", true)?;
            if retry.is_none_or(|r| r < 30) || expire.is_none_or(|e| !(1..=10_800).contains(&e)) {
                return Err(Reject::bad("priority 2 needs retry (at least 30) and expire (at most 10800)"));
            }
        }
        Some(other) => return Err(Reject::bad(format!("priority: {other} is not -2 to 2"))),
    }
    if get_int(&fields, "ttl", true)?.is_some_and(|t| t <= 0) {
        return Err(Reject::bad("ttl: must be a positive number of seconds"));
    }
    get_int(&fields, "timestamp", true)?;
    Ok(())
}

/// A request id the way Pushover shapes one.
fn request_id(id: u64) -> String {
    format!("00000000-0000-4000-8000-{id:012x}")
}

/// `{"status":1,"request":…}`.
pub(super) fn ok(id: u64) -> Response {
    common::json(200, json!({"status": 1, "request": request_id(id)}))
}

/// `{"status":0,"errors":[…],"request":…}`.
pub(super) fn error(status: u16, reason: &str) -> Response {
    common::json(status, json!({"status": 0, "errors": [reason], "request": request_id(common::next_id())}))
}

/// Pushover's 429: the application is over its message limit.
pub(super) fn rate_limited() -> Response {
    error(429, "application is over its message limit")
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "azGDORePK8gMaC0QOYAMyEEuzJnyUi";

    fn form(body: &str) -> Incoming {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("content-type", "application/x-www-form-urlencoded".parse().expect("header"));
        Incoming {
            method: axum::http::Method::POST,
            path: "/1/messages.json".to_owned(),
            query: String::new(),
            headers,
            body: body.to_owned().into(),
        }
    }

    #[test]
    fn keys_and_limits_are_checked() {
        check(&form(&format!("token={KEY}&user={KEY}&message=hi&html=1&priority=-1"))).expect("valid");
        let reason = |body: String| check(&form(&body)).expect_err("rejected").reason;
        assert!(reason(format!("token=short&user={KEY}&message=hi")).contains("token"));
        assert!(reason(format!("token={KEY}&user={KEY}")).contains("blank"));
        assert!(reason(format!("token={KEY}&user={KEY}&message={}", "m".repeat(1025))).contains("1025"));
        assert!(reason(format!("token={KEY}&user={KEY}&message=m&title={}", "t".repeat(251))).contains("title"));
        assert!(reason(format!("token={KEY}&user={KEY}&message=m&priority=3")).contains("priority"));
        assert!(reason(format!("token={KEY}&user={KEY}&message=m&priority=2")).contains("retry"));
        assert!(reason(format!("token={KEY}&user={KEY}&message=m&html=1&monospace=1")).contains("exclusive"));
    }
}
