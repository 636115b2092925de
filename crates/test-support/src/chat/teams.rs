//! A Microsoft Teams Workflows webhook (`POST /teams/{anything}`): a message with Adaptive Card
//! attachments, at most 28 KB.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{self, Check, Incoming, Reject, get_str};

/// The most bytes a Teams webhook takes.
const MAX_BYTES: usize = 28 * 1024;

/// Checks the message the way a Workflows webhook takes it.
pub(super) fn check(req: &Incoming) -> Check {
    if req.path.trim_start_matches("/teams").trim_matches('/').is_empty() {
        return Err(Reject::new(404, "no workflow at this URL"));
    }
    if req.method != "POST" {
        return Err(Reject::new(405, format!("{} is not allowed here", req.method)));
    }
    if req.body.len() > MAX_BYTES {
        return Err(Reject::new(413, format!("payload is {} bytes, at most {MAX_BYTES}", req.body.len())));
    }
    let fields = req.fields(false)?;
    if get_str(&fields, "type")? != Some("message") {
        return Err(Reject::bad("type: must be \"message\""));
    }
    let attachments = match fields.get("attachments") {
        Some(Value::Array(a)) if !a.is_empty() => a,
        _ => return Err(Reject::bad("attachments: must be a non-empty array")),
    };
    for (i, attachment) in attachments.iter().enumerate() {
        let at = format!("attachments[{i}]");
        let Value::Object(attachment) = attachment else {
            return Err(Reject::bad(format!("{at}: must be an object")));
        };
        if get_str(attachment, "contentType")? != Some("application/vnd.microsoft.card.adaptive") {
            return Err(Reject::bad(format!("{at}.contentType: must be \"application/vnd.microsoft.card.adaptive\"")));
        }
        let Some(Value::Object(card)) = attachment.get("content") else {
            return Err(Reject::bad(format!("{at}.content: must be an Adaptive Card object")));
        };
        if get_str(card, "type")? != Some("AdaptiveCard") {
            return Err(Reject::bad(format!("{at}.content.type: must be \"AdaptiveCard\"")));
        }
        let version = get_str(card, "version")?.unwrap_or("");
        let minor = version.strip_prefix("1.").and_then(|m| m.parse::<u8>().ok());
        if minor.is_none_or(|m| m > 6) {
            return Err(Reject::bad(format!("{at}.content.version: {version:?} is not 1.0 to 1.6")));
        }
        match card.get("body") {
            Some(Value::Array(body)) => elements(body, &format!("{at}.content.body"))?,
            _ => return Err(Reject::bad(format!("{at}.content.body: must be an array"))),
        }
        if let Some(actions) = card.get("actions") {
            let Value::Array(actions) = actions else {
                return Err(Reject::bad(format!("{at}.content.actions: must be an array")));
            };
            for (j, action) in actions.iter().enumerate() {
                if !action.get("type").and_then(Value::as_str).is_some_and(|t| t.starts_with("Action.")) {
                    return Err(Reject::bad(format!("{at}.content.actions[{j}].type: must be an Action.* type")));
                }
            }
        }
    }
    Ok(())
}

/// Checks that every element, containers' items included, has a type.
fn elements(body: &[Value], at: &str) -> Check {
    for (i, element) in body.iter().enumerate() {
        let at = format!("{at}[{i}]");
        if element.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(Reject::bad(format!("{at}.type: every element needs a type")));
        }
        if let Some(Value::Array(items)) = element.get("items") {
            elements(items, &format!("{at}.items"))?;
        }
        if let Some(Value::Array(columns)) = element.get("columns") {
            for (j, column) in columns.iter().enumerate() {
                if let Some(Value::Array(items)) = column.get("items") {
                    elements(items, &format!("{at}.columns[{j}].items"))?;
                }
            }
        }
    }
    Ok(())
}

/// 202 Accepted, no body.
pub(super) fn ok() -> Response {
    common::empty(202)
}

/// The error shape of a Workflows trigger.
pub(super) fn error(status: u16, reason: &str) -> Response {
    let code = if status == 400 { "InvalidRequestContent" } else { common::canonical(status) };
    common::json(status, json!({"error": {"code": code, "message": reason}}))
}

/// A Workflows 429 (the wait is in the `Retry-After` header only).
pub(super) fn rate_limited(secs: f64) -> Response {
    let message = format!("Rate limit is exceeded. Try again in {} seconds.", secs.ceil());
    common::json(429, json!({"error": {"code": "TooManyRequests", "message": message}}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: &Value) -> Incoming {
        let mut headers = axum::http::HeaderMap::new();
        headers.insert("content-type", "application/json".parse().expect("header"));
        Incoming {
            method: axum::http::Method::POST,
            path: "/teams/workflow-1".to_owned(),
            query: String::new(),
            headers,
            body: serde_json::to_vec(body).expect("json").into(),
        }
    }

    fn card(body: Value) -> Value {
        json!({"type": "message", "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": {"type": "AdaptiveCard", "version": "1.4", "body": body},
        }]})
    }

    #[test]
    fn the_shape_and_size_are_checked() {
        check(&post(&card(json!([{"type": "TextBlock", "text": "hi"}])))).expect("valid");
        let reason = |v: &Value| check(&post(v)).expect_err("rejected").reason;
        assert!(reason(&card(json!([{"text": "no type"}]))).contains("needs a type"));
        assert!(reason(&card(json!([{"type": "Container", "items": [{}]}]))).contains("items[0].type"));
        assert!(reason(&json!({"type": "message", "attachments": []})).contains("attachments"));
        assert!(reason(&json!({"text": "old connector card"})).contains("type"));
        let mut wrong = card(json!([]));
        wrong["attachments"][0]["content"]["version"] = json!("2.0");
        assert!(reason(&wrong).contains("version"));
        let big = card(json!([{"type": "TextBlock", "text": "x".repeat(MAX_BYTES)}]));
        assert_eq!(check(&post(&big)).expect_err("too big").status, 413);
    }
}
