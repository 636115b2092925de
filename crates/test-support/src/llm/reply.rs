//! What the model stand-in answers: [`Reply`], and the HTTP answers it turns into.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use serde_json::{Value, json};

/// Tokens reported by every 200 answer that does not carry its own (`(prompt, completion)`).
pub const DEFAULT_USAGE: (u64, u64) = (100, 20);

/// How the stand-in answers one request. Content kinds ([`Reply::Verdict`], [`Reply::Fenced`],
/// [`Reply::Think`], [`Reply::Truncated`], [`Reply::Empty`], [`Reply::Content`],
/// [`Reply::NoUsage`]) answer a chat completion in OpenAI's shape (a `GET …/models` answered with
/// one of them lists the models); the others shape the HTTP answer itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A verdict, its content the compact JSON `{"important","reason","summary"}`, with this
    /// `usage` (`(prompt_tokens, completion_tokens)`).
    Verdict {
        /// Whether the change matters.
        important: bool,
        /// Why.
        reason: String,
        /// What changed.
        summary: String,
        /// `(prompt_tokens, completion_tokens)`.
        usage: (u64, u64),
    },
    /// The inner reply's content wrapped in "```json\n…\n```".
    Fenced(Box<Reply>),
    /// The inner reply's content after "<think>\nLet me reason...\n</think>\n\n".
    Think(Box<Reply>),
    /// `finish_reason: "length"`, its content an unfinished JSON prefix.
    Truncated,
    /// Content `""`.
    Empty,
    /// 429 with `Retry-After: retry_after_secs` and OpenAI's rate-limit error JSON.
    RateLimited {
        /// The `Retry-After` seconds.
        retry_after_secs: u64,
    },
    /// 500 with OpenAI's server error JSON.
    ServerError,
    /// This status and body (`application/json` when the body parses as JSON, else text).
    Status(u16, String),
    /// Holds the request open until [`super::ModelServer::release`] (then answers as an empty
    /// queue does), until the client gives up, or until the server is dropped.
    Stall,
    /// Waits this long, then answers the inner reply.
    Delay(Duration, Box<Reply>),
    /// This content string, whatever it is.
    Content(String),
    /// A 200 whose body is exactly this many bytes, sent in 64 KiB chunks: a chat completion
    /// whose content is `a`s when there is room for one, else spaces.
    Huge(usize),
    /// 307 to this absolute URL.
    Redirect(String),
    /// The inner (content) reply without a `usage` object.
    NoUsage(Box<Reply>),
}

impl Reply {
    /// A verdict with [`DEFAULT_USAGE`].
    pub fn verdict(important: bool, reason: &str, summary: &str) -> Reply {
        Reply::Verdict { important, reason: reason.to_owned(), summary: summary.to_owned(), usage: DEFAULT_USAGE }
    }

    /// A verdict with its own usage.
    pub fn verdict_with_usage(important: bool, reason: &str, summary: &str, usage: (u64, u64)) -> Reply {
        Reply::Verdict { important, reason: reason.to_owned(), summary: summary.to_owned(), usage }
    }

    /// This reply in a ```json fence.
    pub fn fenced(self) -> Reply {
        Reply::Fenced(Box::new(self))
    }

    /// This reply after a `<think>` block.
    pub fn think(self) -> Reply {
        Reply::Think(Box::new(self))
    }

    /// This reply after `delay`.
    pub fn delayed(self, delay: Duration) -> Reply {
        Reply::Delay(delay, Box::new(self))
    }

    /// Any content string.
    pub fn content(content: &str) -> Reply {
        Reply::Content(content.to_owned())
    }

    /// The message content, finish reason and usage of a content kind; `None` for the others.
    pub(super) fn completion(&self) -> Option<Completion> {
        let (content, finish, usage) = match self {
            Reply::Verdict { important, reason, summary, usage } => {
                let content = json!({"important": important, "reason": reason, "summary": summary}).to_string();
                (content, "stop", Some(*usage))
            }
            Reply::Fenced(inner) => {
                let Completion { content, finish, usage } = inner.completion()?;
                (format!("```json\n{content}\n```"), finish, usage)
            }
            Reply::Think(inner) => {
                let Completion { content, finish, usage } = inner.completion()?;
                (format!("<think>\nLet me reason...\n</think>\n\n{content}"), finish, usage)
            }
            Reply::Truncated => (
                r#"{"important": true, "reason": "The price dropped from 67 to 45 EU"#.to_owned(),
                "length",
                Some(DEFAULT_USAGE),
            ),
            Reply::Empty => (String::new(), "stop", Some(DEFAULT_USAGE)),
            Reply::Content(content) => (content.clone(), "stop", Some(DEFAULT_USAGE)),
            Reply::NoUsage(inner) => {
                let Completion { content, finish, .. } = inner.completion()?;
                (content, finish, None)
            }
            _ => return None,
        };
        Some(Completion { content, finish, usage })
    }
}

/// What a content kind answers.
pub(super) struct Completion {
    pub content: String,
    /// `stop` or `length`.
    pub finish: &'static str,
    /// `(prompt_tokens, completion_tokens)`, none to leave `usage` out.
    pub usage: Option<(u64, u64)>,
}

/// A chat completion in OpenAI's shape.
pub(super) fn chat_completion(model: &str, content: &str, finish: &str, usage: Option<(u64, u64)>) -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut body = json!({
        "id": format!("chatcmpl-standin-{n}"),
        "object": "chat.completion",
        "created": 1_767_225_600u64,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish,
        }],
    });
    if let Some((prompt, completion)) = usage {
        body["usage"] = json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        });
    }
    body
}

/// `GET /v1/models` in OpenAI's shape.
pub(super) fn model_list(names: &[String]) -> Response {
    let data: Vec<Value> = names
        .iter()
        .map(|id| json!({"id": id, "object": "model", "created": 1_767_225_600u64, "owned_by": "driftwatch"}))
        .collect();
    json_response(StatusCode::OK, &json!({"object": "list", "data": data}))
}

/// OpenAI's error object.
pub(super) fn error_body(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// A JSON answer.
pub(super) fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// The HTTP answer of a reply that is not a content kind, nor [`Reply::Stall`] or
/// [`Reply::Delay`] (the server resolves those first).
pub(super) fn transport(reply: &Reply) -> Response {
    match reply {
        Reply::RateLimited { retry_after_secs } => {
            let body = error_body(
                "Rate limit reached for requests. Please try again later.",
                "requests",
                Some("rate_limit_exceeded"),
            );
            let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, &body);
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            response
        }
        Reply::ServerError => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &error_body(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                None,
            ),
        ),
        Reply::Status(status, body) => {
            let status = StatusCode::from_u16(*status).expect("a valid HTTP status");
            let kind = if serde_json::from_str::<Value>(body).is_ok() { "application/json" } else { "text/plain" };
            (status, [(header::CONTENT_TYPE, kind)], body.clone()).into_response()
        }
        Reply::Huge(size) => huge(*size),
        Reply::Redirect(location) => {
            let location = HeaderValue::from_str(location).expect("a redirect URL fit for a header");
            (StatusCode::TEMPORARY_REDIRECT, [(header::LOCATION, location)]).into_response()
        }
        other => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &error_body(&format!("the stand-in cannot answer {other:?} here"), "server_error", None),
        ),
    }
}

/// A 200 of exactly `size` bytes, streamed.
fn huge(size: usize) -> Response {
    let head = r#"{"id":"chatcmpl-huge","object":"chat.completion","created":1767225600,"model":"huge","choices":[{"index":0,"message":{"role":"assistant","content":""#;
    let tail = r#""},"finish_reason":"stop"}]}"#;
    let (head, fill, tail) = if size >= head.len() + tail.len() { (head, b'a', tail) } else { ("", b' ', "") };
    let fill_len = size - head.len() - tail.len();
    let chunk = 64 << 10;
    let mut chunks: Vec<Result<Vec<u8>, std::convert::Infallible>> = vec![Ok(head.as_bytes().to_vec())];
    let mut left = fill_len;
    while left > 0 {
        let n = left.min(chunk);
        chunks.push(Ok(vec![fill; n]));
        left -= n;
    }
    chunks.push(Ok(tail.as_bytes().to_vec()));
    let body = axum::body::Body::from_stream(futures_util::stream::iter(chunks));
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
