//! What the provider stand-ins share: the request as it came, typed field access, answers.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse as _, Response};
use serde_json::{Map, Value};

/// One request as it came off the wire.
pub(super) struct Incoming {
    pub method: Method,
    /// The path as sent (percent-encoded), without the query.
    pub path: String,
    /// The query as sent, without `?`.
    pub query: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Incoming {
    /// The request of `parts` with its whole `body`.
    pub(super) fn new(parts: axum::http::request::Parts, body: Bytes) -> Incoming {
        Incoming {
            method: parts.method,
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().unwrap_or("").to_owned(),
            headers: parts.headers,
            body,
        }
    }

    /// A JSON POST to `path`, for the checks' own tests.
    #[cfg(test)]
    pub(super) fn json_post(path: &str, body: &serde_json::Value) -> Incoming {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", axum::http::HeaderValue::from_static("application/json"));
        Incoming {
            method: Method::POST,
            path: path.to_owned(),
            query: String::new(),
            headers,
            body: serde_json::to_vec(body).expect("json").into(),
        }
    }
}

/// Why a provider refuses a request: the status it answers and its reason.
#[derive(Debug)]
pub(super) struct Reject {
    pub status: u16,
    /// The provider's own error code, where it has one (Matrix's `errcode`).
    pub code: Option<&'static str>,
    pub reason: String,
}

impl Reject {
    /// A 400 Bad Request.
    pub fn bad(reason: impl Into<String>) -> Reject {
        Reject::new(400, reason)
    }

    /// Any status.
    pub fn new(status: u16, reason: impl Into<String>) -> Reject {
        Reject { status, code: None, reason: reason.into() }
    }

    /// With the provider's own error code.
    pub fn code(mut self, code: &'static str) -> Reject {
        self.code = Some(code);
        self
    }
}

/// A provider's verdict on a request.
pub(super) type Check = Result<(), Reject>;

/// A JSON object's fields.
pub(super) type Fields = Map<String, Value>;

impl Incoming {
    /// The header `name`, if it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The media type of the body, lower case, without parameters (`""` if none).
    pub fn mime(&self) -> String {
        let value = self.header("content-type").unwrap_or("");
        value.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
    }

    /// The query parameter `name`, decoded.
    pub fn query_param(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }

    /// The token of an `Authorization: Bearer` header.
    pub fn bearer(&self) -> Option<&str> {
        let value = self.header("authorization")?;
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    }

    /// The body's fields: a JSON object when the body says `application/json`, or (when
    /// `form_ok`) a form's fields as strings.
    pub fn fields(&self, form_ok: bool) -> Result<Fields, Reject> {
        match self.mime().as_str() {
            "application/json" => self.json_object(),
            "application/x-www-form-urlencoded" if form_ok => Ok(self.form()),
            other => {
                let wanted =
                    if form_ok { "application/json or application/x-www-form-urlencoded" } else { "application/json" };
                let had = if other.is_empty() { "none" } else { other };
                Err(Reject::new(415, format!("Content-Type is {had}, not {wanted}")))
            }
        }
    }

    /// The body as a JSON object, whatever its Content-Type says.
    pub fn json_object(&self) -> Result<Fields, Reject> {
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(Value::Object(fields)) => Ok(fields),
            Ok(_) => Err(Reject::bad("the body is JSON but not an object")),
            Err(e) => Err(Reject::bad(format!("the body is not JSON: {e}"))),
        }
    }

    /// A form body's fields, as strings.
    pub fn form(&self) -> Fields {
        form_urlencoded::parse(&self.body).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect()
    }

    /// The body as recorded: JSON if it parses, a form's fields if it is one.
    pub fn recorded_json(&self) -> Option<Value> {
        if let Ok(value) = serde_json::from_slice::<Value>(&self.body) {
            return Some(value);
        }
        (self.mime() == "application/x-www-form-urlencoded").then(|| Value::Object(self.form()))
    }
}

/// Characters (Unicode scalar values) in `s`.
pub(super) fn chars(s: &str) -> usize {
    s.chars().count()
}

/// The string field `key`; null counts as absent.
pub(super) fn get_str<'a>(fields: &'a Fields, key: &str) -> Result<Option<&'a str>, Reject> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Reject::bad(format!("{key}: must be a string, not {other}"))),
    }
}

/// The integer field `key`; `lenient` also takes a string of digits (form bodies, Pushover).
pub(super) fn get_int(fields: &Fields, key: &str, lenient: bool) -> Result<Option<i64>, Reject> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
        Some(Value::String(s)) if lenient => {
            s.trim().parse().map(Some).map_err(|_| Reject::bad(format!("{key}: {s:?} is not an integer")))
        }
        Some(other) => Err(Reject::bad(format!("{key}: must be an integer, not {other}"))),
    }
}

/// The boolean field `key`; `lenient` also takes `"true"`, `"false"`, `"1"`, `"0"`.
pub(super) fn get_bool(fields: &Fields, key: &str, lenient: bool) -> Result<Option<bool>, Reject> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) if lenient && matches!(s.as_str(), "true" | "1") => Ok(Some(true)),
        Some(Value::String(s)) if lenient && matches!(s.as_str(), "false" | "0") => Ok(Some(false)),
        Some(other) => Err(Reject::bad(format!("{key}: must be a boolean, not {other}"))),
    }
}

/// Refuses `s` when it has more than `max` characters.
pub(super) fn max_chars(what: &str, s: &str, max: usize) -> Check {
    let n = chars(s);
    if n > max { Err(Reject::bad(format!("{what}: {n} characters, at most {max}"))) } else { Ok(()) }
}

/// Whether `s` is an absolute http or https URL.
pub(super) fn is_http_url(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
}

/// A JSON answer.
pub(super) fn json(status: u16, value: Value) -> Response {
    (status_code(status), axum::Json(value)).into_response()
}

/// An answer without a body.
pub(super) fn empty(status: u16) -> Response {
    status_code(status).into_response()
}

/// A plain-text answer.
pub(super) fn text(status: u16, body: String) -> Response {
    (status_code(status), body).into_response()
}

/// `code` as a status (500 if it is none).
pub(super) fn status_code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The reason phrase of `code`.
pub(super) fn canonical(code: u16) -> &'static str {
    status_code(code).canonical_reason().unwrap_or("Error")
}

/// A number no other answer of this process used: message ids, event ids, request ids.
pub(super) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The Unix time now.
pub(super) fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}
