//! A scripted stand-in for an OpenAI-compatible model server (Ollama, llama.cpp's server, vLLM,
//! LM Studio, OpenAI): `POST …/chat/completions` answers what the test queued, `GET …/models`
//! lists the models the test set, and every request is recorded.

mod reply;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::watch;

pub use reply::{DEFAULT_USAGE, Reply};

/// One request the stand-in received.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// Its method (`POST`, `GET`).
    pub method: String,
    /// Its path as sent, without the query (`/v1/chat/completions`).
    pub path: String,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body as JSON; `Null` when it is not JSON (or empty).
    pub body: Value,
}

impl ModelRequest {
    /// The header `name` (any case), when present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The `Authorization` header.
    pub fn authorization(&self) -> Option<&str> {
        self.header("authorization")
    }

    /// Whether it asked for a chat completion.
    pub fn is_chat(&self) -> bool {
        self.path.ends_with("/chat/completions")
    }

    /// The `model` the body names (`""` if none).
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or("")
    }

    /// The content of the user message(s), joined by a blank line (text parts of multi-part
    /// contents included).
    pub fn user_text(&self) -> String {
        self.text_of("user")
    }

    /// The content of the system message(s), joined by a blank line.
    pub fn system_text(&self) -> String {
        self.text_of("system")
    }

    fn text_of(&self, role: &str) -> String {
        let Some(messages) = self.body["messages"].as_array() else { return String::new() };
        let texts: Vec<String> = messages
            .iter()
            .filter(|m| m["role"] == role)
            .map(|m| match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
                _ => String::new(),
            })
            .collect();
        texts.join("\n\n")
    }
}

/// A rule consulted when the queue is empty.
type Rule = Arc<dyn Fn(&ModelRequest) -> Option<Reply> + Send + Sync>;

/// How to answer, set by the test.
struct Script {
    queue: VecDeque<Reply>,
    default: Reply,
    rule: Option<Rule>,
    models: Vec<String>,
}

/// What the handler and the handles share.
struct Shared {
    script: Mutex<Script>,
    requests: Mutex<Vec<ModelRequest>>,
    /// How many requests were recorded.
    recorded: watch::Sender<usize>,
    /// Turns true, for good, at [`ModelServer::release`].
    released: watch::Sender<bool>,
    /// Turns true when the last handle is dropped.
    stop: watch::Sender<bool>,
}

impl Shared {
    async fn handle(self: Arc<Self>, req: Request) -> Response {
        let (parts, body) = req.into_parts();
        let body = axum::body::to_bytes(body, 64 << 20).await.unwrap_or_default();
        let request = ModelRequest {
            method: parts.method.to_string(),
            path: parts.uri.path().to_owned(),
            headers: parts.headers,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        };
        // Decide the answer before anyone can see this request arrived.
        let chat = request.is_chat() && request.method == "POST";
        let models = request.path.ends_with("/models") && request.method == "GET";
        let mut reply = if chat {
            self.next_reply(&request)
        } else if models {
            self.rule_reply(&request)
        } else {
            None
        };
        let model = request.model().to_owned();
        let n = {
            let mut all = self.requests.lock().expect("lock");
            all.push(request.clone());
            all.len()
        };
        self.recorded.send_replace(n);
        loop {
            match reply {
                Some(Reply::Stall) => {
                    let _ = self.released.subscribe().wait_for(|released| *released).await;
                    reply = if models { self.rule_reply(&request) } else { Some(self.after_queue(&request)) };
                }
                Some(Reply::Delay(delay, inner)) => {
                    tokio::time::sleep(delay).await;
                    reply = Some(*inner);
                }
                _ => break,
            }
        }
        self.answer(reply, chat, models, &model)
    }

    fn answer(&self, reply: Option<Reply>, chat: bool, models: bool, model: &str) -> Response {
        match reply {
            None if models => reply::model_list(&self.script.lock().expect("lock").models),
            None => {
                let body = reply::error_body(
                    "Not found: the stand-in serves chat/completions and models",
                    "invalid_request_error",
                    None,
                );
                reply::json_response(StatusCode::NOT_FOUND, &body)
            }
            Some(reply) => match reply.completion() {
                Some(_) if models => reply::model_list(&self.script.lock().expect("lock").models),
                Some(c) if chat => {
                    reply::json_response(StatusCode::OK, &reply::chat_completion(model, &c.content, c.finish, c.usage))
                }
                _ => reply::transport(&reply),
            },
        }
    }

    /// The first queued reply, else what an empty queue answers.
    fn next_reply(&self, request: &ModelRequest) -> Option<Reply> {
        let queued = self.script.lock().expect("lock").queue.pop_front();
        Some(queued.unwrap_or_else(|| self.after_queue(request)))
    }

    /// The rule's reply, else the default.
    fn after_queue(&self, request: &ModelRequest) -> Reply {
        self.rule_reply(request).unwrap_or_else(|| self.script.lock().expect("lock").default.clone())
    }

    /// The rule's reply, when there is a rule and it answers.
    fn rule_reply(&self, request: &ModelRequest) -> Option<Reply> {
        let rule = self.script.lock().expect("lock").rule.clone();
        rule.and_then(|rule| rule(request))
    }
}

/// Stops the server when the last handle goes.
struct Running(Arc<Shared>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.stop.send_replace(true);
    }
}

/// An OpenAI-compatible model server on `127.0.0.1` and a port of its own, answering as the
/// test scripts it. Clones are handles on the same server, which runs until the last one is
/// dropped (then its port and every connection close, held ones included).
///
/// - `POST {base}/chat/completions` (any path ending so): the first queued reply
///   ([`ModelServer::push`]); with the queue empty, the rule's ([`ModelServer::set_rule`]) if it
///   gives one, else the default ([`ModelServer::set_default`], initially a "not important"
///   verdict). The completion names the model the request asked for.
/// - `GET {base}/models` (any path ending so): the rule's reply if it gives one (a content kind
///   still lists the models), else the models of [`ModelServer::set_models`] (initially
///   `test-model`). The queue is left alone.
/// - Anything else: 404 in OpenAI's error shape.
///
/// Every request is recorded as it arrives, before it is answered.
#[derive(Clone)]
pub struct ModelServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _running: Arc<Running>,
}

impl ModelServer {
    /// Starts it.
    pub async fn start() -> ModelServer {
        let shared = Arc::new(Shared {
            script: Mutex::new(Script {
                queue: VecDeque::new(),
                default: Reply::verdict(false, "The change does not concern the intent.", "Something changed."),
                rule: None,
                models: vec!["test-model".to_owned()],
            }),
            requests: Mutex::new(Vec::new()),
            recorded: watch::channel(0).0,
            released: watch::channel(false).0,
            stop: watch::channel(false).0,
        });
        let handler = Arc::clone(&shared);
        let app = axum::Router::new().fallback(move |req: Request| Arc::clone(&handler).handle(req));
        let addr = crate::chat::serve(app, shared.stop.subscribe()).await;
        let running = Arc::new(Running(Arc::clone(&shared)));
        ModelServer { addr, shared, _running: running }
    }

    /// `http://127.0.0.1:PORT/v1`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`: where paths other than `/v1/…` start.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues `reply`: chat requests take queued replies first, in order.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().expect("lock").queue.push_back(reply);
    }

    /// What a chat request gets when the queue is empty and no rule answers.
    pub fn set_default(&self, reply: Reply) {
        self.shared.script.lock().expect("lock").default = reply;
    }

    /// Consulted for a chat request when the queue is empty (before the default), and for every
    /// models request; `None` passes.
    pub fn set_rule(&self, rule: impl Fn(&ModelRequest) -> Option<Reply> + Send + Sync + 'static) {
        self.shared.script.lock().expect("lock").rule = Some(Arc::new(rule));
    }

    /// The models `GET …/models` lists, in this order.
    pub fn set_models(&self, names: &[&str]) {
        self.shared.script.lock().expect("lock").models = names.iter().map(|n| (*n).to_owned()).collect();
    }

    /// Every request received so far (chat, models and others), in order of arrival.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.shared.requests.lock().expect("lock").clone()
    }

    /// The chat completion requests received so far, in order.
    pub fn chat_requests(&self) -> Vec<ModelRequest> {
        self.requests().into_iter().filter(ModelRequest::is_chat).collect()
    }

    /// Waits until at least `n` requests arrived and returns them all; panics after `timeout`,
    /// saying how many came.
    pub async fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<ModelRequest> {
        let mut recorded = self.shared.recorded.subscribe();
        if tokio::time::timeout(timeout, recorded.wait_for(|got| *got >= n)).await.is_err() {
            let got: Vec<String> = self.requests().iter().map(|r| format!("{} {}", r.method, r.path)).collect();
            panic!("ModelServer: timed out after {timeout:?} waiting for {n} requests; got {}: {got:?}", got.len());
        }
        self.requests()
    }

    /// Ends every [`Reply::Stall`] now, and makes every later one answer at once: a released
    /// stall answers what an empty queue gives (the rule's reply, else the default; for a
    /// models request, the rule's or the list). There is no way back.
    pub fn release(&self) {
        self.shared.released.send_replace(true);
    }
}
