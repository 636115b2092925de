//! Telegram's Bot API `sendMessage`, `POST /bot{token}/sendMessage`.

mod html;
mod markdown;

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{self, Check, Fields, Incoming, Reject, get_bool, get_str};

/// The bot token and API method of a `/bot{token}/{method}` path.
fn route(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix("/bot")?.split_once('/')
}

/// Checks a `sendMessage` call the way the Bot API does.
pub(super) fn check(req: &Incoming) -> Check {
    let Some((token, method)) = route(&req.path) else {
        return Err(Reject::new(404, "Not Found"));
    };
    let valid_token = token
        .split_once(':')
        .is_some_and(|(id, secret)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && !secret.is_empty());
    if !valid_token || method != "sendMessage" {
        return Err(Reject::new(404, "Not Found"));
    }
    if req.method != "POST" {
        return Err(Reject::new(405, "this stand-in takes sendMessage by POST only"));
    }
    let fields = req.fields(true)?;
    match fields.get("chat_id") {
        Some(Value::Number(n)) if n.is_i64() => {}
        Some(Value::String(s)) if !s.is_empty() => {}
        None | Some(Value::Null) => return Err(Reject::bad("chat_id is empty")),
        Some(other) => return Err(Reject::bad(format!("chat_id: {other} is neither an integer nor a string"))),
    }
    let visible = visible(&fields)?;
    if visible.trim().is_empty() {
        return Err(Reject::bad("message text is empty"));
    }
    let n = common::chars(&visible);
    if n > 4096 {
        return Err(Reject::bad(format!("message is too long: {n} characters after entities parsing, at most 4096")));
    }
    let form = req.mime() == "application/x-www-form-urlencoded";
    for key in ["disable_web_page_preview", "disable_notification", "protect_content"] {
        get_bool(&fields, key, form)?;
    }
    match fields.get("link_preview_options") {
        None | Some(Value::Null | Value::Object(_)) => {}
        Some(Value::String(s)) if form && serde_json::from_str::<Fields>(s).is_ok() => {}
        Some(other) => return Err(Reject::bad(format!("link_preview_options: {other} is not an object"))),
    }
    Ok(())
}

/// The text as the user sees it, after entities parsing.
fn visible(fields: &Fields) -> Result<String, Reject> {
    let Some(text) = get_str(fields, "text")? else {
        return Err(Reject::bad("message text is empty"));
    };
    let parsed = match get_str(fields, "parse_mode")? {
        None | Some("") => Ok(text.to_owned()),
        Some("HTML") => html::visible_text(text),
        Some("MarkdownV2") => markdown::visible_text(text),
        // The legacy mode is not parsed here: its text is counted as it is.
        Some("Markdown") => Ok(text.to_owned()),
        Some(other) => return Err(Reject::bad(format!("unsupported parse_mode \"{other}\""))),
    };
    parsed.map_err(|e| Reject::bad(format!("can't parse entities: {e}")))
}

/// The message the Bot API sent.
pub(super) fn ok(req: &Incoming, id: u64) -> Response {
    let fields = req.fields(true).unwrap_or_default();
    let bot_id: i64 = route(&req.path).and_then(|(t, _)| t.split(':').next()?.parse().ok()).unwrap_or(1);
    let chat_id = fields.get("chat_id").cloned().unwrap_or(Value::Null);
    let chat_type = if chat_id.as_i64().is_some_and(|id| id < 0) { "supergroup" } else { "private" };
    common::json(
        200,
        json!({
            "ok": true,
            "result": {
                "message_id": id,
                "from": {"id": bot_id, "is_bot": true, "first_name": "Driftwatch test", "username": "driftwatch_test_bot"},
                "chat": {"id": chat_id, "type": chat_type},
                "date": common::unix_now(),
                "text": visible(&fields).unwrap_or_default(),
            },
        }),
    )
}

/// The Bot API's error shape.
pub(super) fn error(status: u16, reason: &str) -> Response {
    let description = match status {
        400 => format!("Bad Request: {reason}"),
        401 => "Unauthorized".to_owned(),
        404 => "Not Found".to_owned(),
        _ => reason.to_owned(),
    };
    common::json(status, json!({"ok": false, "error_code": status, "description": description}))
}

/// The Bot API's 429: whole seconds in `parameters.retry_after`.
pub(super) fn rate_limited(secs: f64) -> Response {
    let n = secs.ceil().max(0.0) as u64;
    common::json(
        429,
        json!({
            "ok": false,
            "error_code": 429,
            "description": format!("Too Many Requests: retry after {n}"),
            "parameters": {"retry_after": n},
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: Value) -> Incoming {
        Incoming::json_post("/bot123456:ABC-def_ghi/sendMessage", &body)
    }

    fn reason(body: Value) -> String {
        check(&post(body)).expect_err("should be rejected").reason
    }

    #[test]
    fn the_limit_counts_what_shows_not_the_markup() {
        let at_limit = format!("<b>{}</b>&amp;", "x".repeat(4095));
        check(&post(json!({"chat_id": 1, "text": at_limit, "parse_mode": "HTML"}))).expect("4096 visible");
        let over = format!("<b>{}</b>", "x".repeat(4097));
        assert!(reason(json!({"chat_id": 1, "text": over, "parse_mode": "HTML"})).contains("too long"));
        assert!(reason(json!({"chat_id": 1, "text": "x".repeat(4097)})).contains("4097"));
        check(&post(json!({"chat_id": "@channel", "text": "é".repeat(4096)}))).expect("characters, not bytes");
    }

    #[test]
    fn markup_and_fields_are_checked() {
        assert!(reason(json!({"chat_id": 1, "text": "<div>x</div>", "parse_mode": "HTML"})).contains("\"div\""));
        assert!(reason(json!({"chat_id": 1, "text": "<b>x", "parse_mode": "HTML"})).contains("start tag \"b\""));
        assert!(reason(json!({"chat_id": 1, "text": "1.2", "parse_mode": "MarkdownV2"})).contains("reserved"));
        assert!(reason(json!({"text": "x"})).contains("chat_id is empty"));
        assert!(reason(json!({"chat_id": 1, "text": ""})).contains("text is empty"));
        assert!(reason(json!({"chat_id": 1, "text": "<b> </b>", "parse_mode": "HTML"})).contains("text is empty"));
        assert!(reason(json!({"chat_id": 1, "text": "x", "parse_mode": "html5"})).contains("parse_mode"));
        assert!(reason(json!({"chat_id": 1, "text": "x", "link_preview_options": true})).contains("link_preview"));
        let mut req = post(json!({"chat_id": 1, "text": "x"}));
        req.path = "/botnocolon/sendMessage".to_owned();
        assert_eq!(check(&req).expect_err("bad token").status, 404);
    }
}
