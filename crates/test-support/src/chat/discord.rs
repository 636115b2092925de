//! Discord's execute-webhook endpoint, `POST /api/webhooks/{id}/{token}`, with the limits its
//! documentation gives for messages and embeds.

use axum::response::Response;
use serde_json::{Value, json};

use super::common::{self, Check, Fields, Incoming, Reject, get_bool, get_str, is_http_url, max_chars};

/// The most characters all of a message's embeds may hold together.
const EMBED_TOTAL: usize = 6000;

/// Whether `path` is a webhook path: `/api[/vN]/webhooks/{id}/{token}`.
fn webhook_path(path: &str) -> bool {
    let mut parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if parts.first() != Some(&"api") {
        return false;
    }
    parts.remove(0);
    if parts.first().is_some_and(|v| v.len() > 1 && v.starts_with('v') && v[1..].bytes().all(|b| b.is_ascii_digit())) {
        parts.remove(0);
    }
    matches!(parts.as_slice(), ["webhooks", id, token]
        if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && !token.is_empty())
}

/// Checks a webhook execution the way Discord does.
pub(super) fn check(req: &Incoming) -> Check {
    if !webhook_path(&req.path) {
        return Err(Reject::new(404, "Unknown Webhook"));
    }
    if req.method != "POST" {
        return Err(Reject::new(405, format!("{} is not allowed here", req.method)));
    }
    let fields = req.fields(false)?;
    let content = get_str(&fields, "content")?;
    if let Some(content) = content {
        max_chars("content", content, 2000)?;
    }
    let embeds = match fields.get("embeds") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(embeds)) => embeds.as_slice(),
        Some(other) => return Err(Reject::bad(format!("embeds: must be an array, not {other}"))),
    };
    if embeds.len() > 10 {
        return Err(Reject::bad(format!("embeds: {} embeds, at most 10", embeds.len())));
    }
    if content.is_none_or(str::is_empty) && embeds.is_empty() {
        return Err(Reject::bad("Cannot send an empty message: neither content nor embeds"));
    }
    if let Some(username) = get_str(&fields, "username")? {
        if username.is_empty() {
            return Err(Reject::bad("username: must not be empty"));
        }
        max_chars("username", username, 80)?;
    }
    if let Some(url) = get_str(&fields, "avatar_url")?
        && !is_http_url(url)
    {
        return Err(Reject::bad(format!("avatar_url: {url:?} is not an http(s) URL")));
    }
    get_bool(&fields, "tts", false)?;
    let mut total = 0;
    for (i, embed) in embeds.iter().enumerate() {
        total += check_embed(i, embed)?;
    }
    if total > EMBED_TOTAL {
        return Err(Reject::bad(format!("embeds: {total} characters in all, at most {EMBED_TOTAL}")));
    }
    Ok(())
}

/// Checks one embed; returns how many characters it counts towards the message's total.
fn check_embed(i: usize, embed: &Value) -> Result<usize, Reject> {
    let Value::Object(embed) = embed else {
        return Err(Reject::bad(format!("embeds[{i}]: must be an object")));
    };
    let at = |field: &str| format!("embeds[{i}].{field}");
    let mut total = 0;
    let mut limited = |fields: &Fields, key: &str, what: String, max: usize| -> Result<Option<String>, Reject> {
        let Some(s) = get_str(fields, key).map_err(|e| Reject::bad(format!("{what}: {}", e.reason)))? else {
            return Ok(None);
        };
        max_chars(&what, s, max)?;
        total += common::chars(s);
        Ok(Some(s.to_owned()))
    };
    limited(embed, "title", at("title"), 256)?;
    limited(embed, "description", at("description"), 4096)?;
    if let Some(url) = get_str(embed, "url")?
        && !is_http_url(url)
    {
        return Err(Reject::bad(format!("{}: {url:?} is not an http(s) URL", at("url"))));
    }
    if let Some(stamp) = get_str(embed, "timestamp")?
        && chrono::DateTime::parse_from_rfc3339(stamp).is_err()
    {
        return Err(Reject::bad(format!("{}: {stamp:?} is not an ISO 8601 timestamp", at("timestamp"))));
    }
    match embed.get("color") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.as_u64().is_some_and(|c| c <= 0xFF_FFFF) => {}
        Some(other) => {
            return Err(Reject::bad(format!("{}: {other} is not an integer from 0 to 16777215", at("color"))));
        }
    }
    if let Some(footer) = object(embed, "footer", &at("footer"))? {
        if limited(footer, "text", at("footer.text"), 2048)?.is_none() {
            return Err(Reject::bad(format!("{}: required", at("footer.text"))));
        }
        url_field(footer, "icon_url", &at("footer.icon_url"))?;
    }
    if let Some(author) = object(embed, "author", &at("author"))? {
        if limited(author, "name", at("author.name"), 256)?.is_none() {
            return Err(Reject::bad(format!("{}: required", at("author.name"))));
        }
        url_field(author, "url", &at("author.url"))?;
        url_field(author, "icon_url", &at("author.icon_url"))?;
    }
    for media in ["image", "thumbnail"] {
        if let Some(media_object) = object(embed, media, &at(media))? {
            if get_str(media_object, "url")?.is_none() {
                return Err(Reject::bad(format!("{}.url: required", at(media))));
            }
            url_field(media_object, "url", &format!("{}.url", at(media)))?;
        }
    }
    let fields = match embed.get("fields") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(fields)) => fields.as_slice(),
        Some(_) => return Err(Reject::bad(format!("{}: must be an array", at("fields")))),
    };
    if fields.len() > 25 {
        return Err(Reject::bad(format!("{}: {} fields, at most 25", at("fields"), fields.len())));
    }
    for (j, field) in fields.iter().enumerate() {
        let Value::Object(field) = field else {
            return Err(Reject::bad(format!("{}[{j}]: must be an object", at("fields"))));
        };
        for (key, max) in [("name", 256), ("value", 1024)] {
            let what = format!("{}[{j}].{key}", at("fields"));
            match limited(field, key, what.clone(), max)? {
                Some(s) if !s.is_empty() => {}
                _ => return Err(Reject::bad(format!("{what}: required, at least 1 character"))),
            }
        }
        get_bool(field, "inline", false)?;
    }
    Ok(total)
}

/// The object field `key`, if present.
fn object<'a>(fields: &'a Fields, key: &str, what: &str) -> Result<Option<&'a Fields>, Reject> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(Reject::bad(format!("{what}: must be an object"))),
    }
}

/// Refuses a URL field that is neither http(s) nor an `attachment://` reference.
fn url_field(fields: &Fields, key: &str, what: &str) -> Check {
    match get_str(fields, key)? {
        Some(url) if !is_http_url(url) && !url.starts_with("attachment://") => {
            Err(Reject::bad(format!("{what}: {url:?} is not an http(s) URL")))
        }
        _ => Ok(()),
    }
}

/// 204 No Content, or with `?wait=true` the message Discord created.
pub(super) fn ok(req: &Incoming, id: u64) -> Response {
    if req.query_param("wait").as_deref() != Some("true") {
        return common::empty(204);
    }
    let fields = req.json_object().unwrap_or_default();
    let webhook_id = req.path.trim_end_matches('/').rsplit('/').nth(1).unwrap_or("0").to_owned();
    common::json(
        200,
        json!({
            "id": id.to_string(),
            "type": 0,
            "channel_id": "100000000000000001",
            "webhook_id": webhook_id,
            "content": fields.get("content").cloned().unwrap_or(json!("")),
            "embeds": fields.get("embeds").cloned().unwrap_or(json!([])),
            "timestamp": chrono::Utc::now().to_rfc3339(),
        }),
    )
}

/// Discord's error shapes: `Invalid Form Body` (50035) for a refused payload.
pub(super) fn error(status: u16, reason: &str) -> Response {
    let body = match status {
        400 => json!({
            "code": 50035,
            "message": "Invalid Form Body",
            "errors": {"_errors": [{"code": "BASE_TYPE_BAD_REQUEST", "message": reason}]},
        }),
        404 => json!({"code": 10015, "message": "Unknown Webhook"}),
        _ => json!({"code": 0, "message": format!("{status}: {reason}")}),
    };
    common::json(status, body)
}

/// Discord's 429: `retry_after` in seconds, as a float.
pub(super) fn rate_limited(secs: f64) -> Response {
    common::json(429, json!({"message": "You are being rate limited.", "retry_after": secs, "global": false}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(body: Value) -> Incoming {
        Incoming::json_post("/api/webhooks/123/abc", &body)
    }

    fn reason(body: Value) -> String {
        check(&post(body)).expect_err("should be rejected").reason
    }

    #[test]
    fn a_plain_message_and_a_full_embed_pass() {
        check(&post(json!({"content": "hello"}))).expect("plain");
        let embed = json!({
            "title": "t".repeat(256), "description": "d", "url": "https://example.com/a",
            "color": 0xFF_FFFF, "timestamp": "2026-01-02T03:04:05Z",
            "footer": {"text": "f"}, "author": {"name": "a", "url": "https://example.com"},
            "fields": [{"name": "n", "value": "v", "inline": true}],
        });
        check(&post(json!({"embeds": [embed]}))).expect("embed");
    }

    #[test]
    fn limits_bite() {
        assert!(reason(json!({"embeds": [{"title": "t".repeat(257)}]})).contains("embeds[0].title: 257"));
        assert!(reason(json!({"content": "c".repeat(2001)})).contains("content: 2001"));
        assert!(reason(json!({})).contains("empty message"));
        assert!(reason(json!({"content": "", "embeds": []})).contains("empty message"));
        assert!(reason(json!({"embeds": vec![json!({"title": "x"}); 11]})).contains("at most 10"));
        assert!(reason(json!({"embeds": [{"color": 0x100_0000}]})).contains("color"));
        assert!(reason(json!({"embeds": [{"color": -1}]})).contains("color"));
        assert!(reason(json!({"embeds": [{"url": "ftp://x"}]})).contains("url"));
        assert!(reason(json!({"embeds": [{"fields": [{"name": "n", "value": "v".repeat(1025)}]}]})).contains("value"));
        assert!(reason(json!({"embeds": [{"fields": vec![json!({"name": "n", "value": "v"}); 26]}]})).contains("26"));
        assert!(reason(json!({"embeds": [{"footer": {"text": "f".repeat(2049)}}]})).contains("footer"));
        // Each embed within its limits, together over 6000.
        let big = json!({"description": "d".repeat(4000)});
        assert!(reason(json!({"embeds": [big.clone(), big]})).contains("8000 characters in all"));
    }

    #[test]
    fn the_path_and_content_type_are_checked() {
        let mut req = post(json!({"content": "x"}));
        req.path = "/api/webhooks/abc/token".to_owned();
        assert_eq!(check(&req).expect_err("bad id").status, 404);
        req.path = "/api/v10/webhooks/1/token".to_owned();
        check(&req).expect("versioned path");
        req.headers.insert("content-type", "text/plain".parse().expect("header"));
        assert_eq!(check(&req).expect_err("not json").status, 415);
    }
}
