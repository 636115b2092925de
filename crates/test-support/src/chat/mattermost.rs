//! Mattermost's incoming webhooks, `POST /hooks/{id}`: a JSON body (or a form's `payload=`
//! field holding it) with `text` in Markdown, at most 16,383 characters, and the overrides
//! Mattermost documents (`channel`, `username`, `icon_url`, `icon_emoji`, `props`,
//! `attachments`, `priority`). Answers `ok` as plain text; errors as Mattermost's `AppError`.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{self, Check, Fields, Incoming, Reject, get_str, is_http_url};

/// Mattermost's most characters in a post.
const MAX_POST: usize = 16_383;

/// Whether `path` is a hook's path: `/hooks/{id}`, the id 26 lower-case letters and digits.
fn hook_path(path: &str) -> bool {
    path.strip_prefix("/hooks/")
        .is_some_and(|id| id.len() == 26 && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

/// The request's fields: the JSON body, or the JSON in a form's `payload`.
fn payload(req: &Incoming) -> Result<Fields, Reject> {
    if req.mime() == "application/x-www-form-urlencoded" {
        let form = req.form();
        let text = form.get("payload").and_then(Value::as_str).unwrap_or_default().to_owned();
        return match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(fields)) => Ok(fields),
            _ => Err(Reject::bad("Unable to parse incoming data").code("web.incoming_webhook.parse.app_error")),
        };
    }
    req.fields(false).map_err(|e| Reject::bad(e.reason).code("web.incoming_webhook.parse.app_error"))
}

/// Checks a hook execution the way Mattermost does.
pub(super) fn check(req: &Incoming) -> Check {
    if !hook_path(&req.path) {
        return Err(Reject::bad("Invalid webhook").code("web.incoming_webhook.invalid.app_error"));
    }
    if req.method != "POST" {
        return Err(Reject::new(405, format!("{} is not allowed here", req.method)));
    }
    let fields = payload(req)?;
    let text = get_str(&fields, "text")?.unwrap_or_default();
    let attachments = match fields.get("attachments") {
        None | Some(Value::Null) => 0,
        Some(Value::Array(items)) => items.len(),
        Some(_) => return Err(Reject::bad("attachments: must be an array")),
    };
    if text.trim().is_empty() && attachments == 0 {
        return Err(Reject::bad("No text specified").code("web.incoming_webhook.text.app_error"));
    }
    if common::chars(text) > MAX_POST {
        return Err(Reject::bad(format!("text: {} characters, at most {MAX_POST}", common::chars(text)))
            .code("web.incoming_webhook.text.length.app_error"));
    }
    if let Some(channel) = get_str(&fields, "channel")?
        && (channel.is_empty() || channel.len() > 64 || channel.contains(char::is_whitespace))
    {
        return Err(Reject::bad("Couldn't find the channel").code("web.incoming_webhook.channel.app_error"));
    }
    if let Some(username) = get_str(&fields, "username")?
        && (username.is_empty() || common::chars(username) > 64)
    {
        return Err(Reject::bad("username: 1 to 64 characters"));
    }
    if let Some(url) = get_str(&fields, "icon_url")?
        && !is_http_url(url)
    {
        return Err(Reject::bad(format!("icon_url: {url:?} is not an http(s) URL")));
    }
    match fields.get("props") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(Reject::bad(format!("props: {other} is not an object"))),
    }
}

/// Mattermost answers an accepted hook with `ok`.
pub(super) fn ok() -> Response {
    common::text(200, "ok".to_owned())
}

/// Mattermost's `AppError`.
pub(super) fn error(status: u16, code: Option<&str>, reason: &str) -> Response {
    let id = code.unwrap_or("web.incoming_webhook.app_error");
    common::json(
        status,
        json!({"id": id, "message": reason, "detailed_error": "", "request_id": "standin", "status_code": status}),
    )
}

/// Mattermost's rate limiter answers 429 in plain text (the wait is in `Retry-After`).
pub(super) fn rate_limited() -> Response {
    common::text(429, "limit exceeded\n".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOOK: &str = "/hooks/abcdefghijklmnopqrstuvwxyz";

    #[test]
    fn hooks_text_and_overrides_are_checked() {
        check(&Incoming::json_post(HOOK, &json!({"text": "#### Hi", "channel": "town-square", "username": "dw"})))
            .expect("valid");
        let reason = |path: &str, v: Value| check(&Incoming::json_post(path, &v)).expect_err("rejected").reason;
        assert!(reason("/hooks/short", json!({"text": "x"})).contains("Invalid webhook"));
        assert!(reason(HOOK, json!({"text": " "})).contains("No text"));
        assert!(reason(HOOK, json!({"text": "é".repeat(MAX_POST + 1)})).contains("at most 16383"));
        assert!(reason(HOOK, json!({"text": "x", "channel": "two words"})).contains("channel"));
        assert!(reason(HOOK, json!({"text": "x", "icon_url": "ftp://x"})).contains("icon_url"));
        check(&Incoming::json_post(HOOK, &json!({"attachments": [{"text": "a"}]}))).expect("attachments alone");
    }
}
