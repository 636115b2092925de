//! Matrix's `PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}`.

use axum::response::Response;
use serde_json::json;

use super::common::{self, Check, Incoming, Reject, get_str};

/// The most bytes of an event's content a homeserver takes.
const MAX_EVENT: usize = 65_536;

/// The room, event type and transaction id of a send path.
fn route(path: &str) -> Option<(&str, &str, &str)> {
    let rest = path.strip_prefix("/_matrix/client/v3/rooms/")?;
    match rest.split('/').collect::<Vec<_>>().as_slice() {
        [room, "send", event_type, txn] if !room.is_empty() && !txn.is_empty() => Some((room, event_type, txn)),
        _ => None,
    }
}

/// The access token, from the header or the (deprecated) query parameter.
fn token(req: &Incoming) -> Option<String> {
    req.bearer().map(str::to_owned).or_else(|| req.query_param("access_token"))
}

/// What makes a send idempotent: the access token and the path's room and transaction id.
pub(super) fn transaction(req: &Incoming) -> Option<(String, String, String)> {
    let (room, _, txn) = route(&req.path)?;
    Some((token(req)?, room.to_owned(), txn.to_owned()))
}

/// Checks a message event the way a homeserver does; `expected` is the access token the test
/// configured.
pub(super) fn check(req: &Incoming, expected: Option<&str>) -> Check {
    let Some((room, event_type, _)) = route(&req.path) else {
        return Err(Reject::new(404, "Unrecognized request").code("M_UNRECOGNIZED"));
    };
    if req.method != "PUT" {
        return Err(Reject::new(405, "Unrecognized request: send takes PUT").code("M_UNRECOGNIZED"));
    }
    match (token(req), expected) {
        (None, _) => return Err(Reject::new(401, "Missing access token").code("M_MISSING_TOKEN")),
        (Some(given), Some(expected)) if given != expected => {
            return Err(Reject::new(401, "Unknown access token").code("M_UNKNOWN_TOKEN"));
        }
        _ => {}
    }
    let room = percent_decode(room);
    if !room.starts_with('!') {
        return Err(
            Reject::bad(format!("{room:?} is not a room ID (a room ID starts with '!')")).code("M_INVALID_PARAM")
        );
    }
    if event_type != "m.room.message" {
        return Err(Reject::bad(format!("this stand-in takes m.room.message, not {event_type}")).code("M_UNRECOGNIZED"));
    }
    if req.body.len() > MAX_EVENT {
        return Err(
            Reject::new(413, format!("event is {} bytes, at most {MAX_EVENT}", req.body.len())).code("M_TOO_LARGE")
        );
    }
    let fields = req.json_object().map_err(|e| Reject::bad(e.reason).code("M_NOT_JSON"))?;
    let bad = |reason: String| Reject::bad(reason).code("M_BAD_JSON");
    match get_str(&fields, "msgtype").map_err(|e| bad(e.reason))? {
        Some("m.text" | "m.notice") => {}
        other => return Err(bad(format!("msgtype: {other:?} is not m.text or m.notice"))),
    }
    if get_str(&fields, "body").map_err(|e| bad(e.reason))?.is_none() {
        return Err(bad("body: required".to_owned()));
    }
    let format = get_str(&fields, "format").map_err(|e| bad(e.reason))?;
    if format.is_some_and(|f| f != "org.matrix.custom.html") {
        return Err(bad(format!("format: {format:?} is not org.matrix.custom.html")));
    }
    if get_str(&fields, "formatted_body").map_err(|e| bad(e.reason))?.is_some() && format.is_none() {
        return Err(bad("formatted_body needs format".to_owned()));
    }
    Ok(())
}

/// A path segment, percent-decoded.
fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The event id for the event numbered `id`.
pub(super) fn event_id(id: u64) -> String {
    format!("$dw{id:010}:driftwatch.test")
}

/// `{"event_id": …}`.
pub(super) fn ok(id: u64) -> Response {
    common::json(200, json!({"event_id": event_id(id)}))
}

/// Matrix's error shape: an `errcode` and an `error`.
pub(super) fn error(status: u16, code: Option<&str>, reason: &str) -> Response {
    let code = code.unwrap_or(match status {
        400 => "M_BAD_JSON",
        401 => "M_UNKNOWN_TOKEN",
        403 => "M_FORBIDDEN",
        404 => "M_NOT_FOUND",
        _ => "M_UNKNOWN",
    });
    common::json(status, json!({"errcode": code, "error": reason}))
}

/// Matrix's 429: `M_LIMIT_EXCEEDED` with `retry_after_ms`.
pub(super) fn rate_limited(secs: f64) -> Response {
    let ms = (secs * 1000.0).round().max(0.0) as u64;
    common::json(429, json!({"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": ms}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn put(path: &str, body: &Value, token: Option<&str>) -> Incoming {
        let mut headers = axum::http::HeaderMap::new();
        if let Some(token) = token {
            headers.insert("authorization", format!("Bearer {token}").parse().expect("header"));
        }
        Incoming {
            method: axum::http::Method::PUT,
            path: path.to_owned(),
            query: String::new(),
            headers,
            body: serde_json::to_vec(body).expect("json").into(),
        }
    }

    #[test]
    fn the_event_and_token_are_checked() {
        let path = "/_matrix/client/v3/rooms/%21room%3Aexample.org/send/m.room.message/t1";
        let good =
            json!({"msgtype": "m.text", "body": "b", "format": "org.matrix.custom.html", "formatted_body": "<b>b</b>"});
        check(&put(path, &good, Some("tok")), Some("tok")).expect("valid");
        let missing = check(&put(path, &good, None), None).expect_err("no token");
        assert_eq!((missing.status, missing.code), (401, Some("M_MISSING_TOKEN")));
        let wrong = check(&put(path, &good, Some("x")), Some("tok")).expect_err("wrong token");
        assert_eq!(wrong.code, Some("M_UNKNOWN_TOKEN"));
        let reason = |v: Value| check(&put(path, &v, Some("tok")), None).expect_err("rejected").reason;
        assert!(reason(json!({"msgtype": "m.image", "body": "b"})).contains("msgtype"));
        assert!(reason(json!({"msgtype": "m.text"})).contains("body"));
        assert!(
            reason(json!({"msgtype": "m.text", "body": "b", "formatted_body": "<b>b</b>"})).contains("needs format")
        );
        let alias = "/_matrix/client/v3/rooms/%23alias%3Aexample.org/send/m.room.message/t1";
        assert!(check(&put(alias, &good, Some("tok")), None).expect_err("alias").reason.contains("room ID"));
    }
}
